/* backend/bdev_file.h - what the file-backed bdevs (aio, io_uring) share: opening a file or block
 * device with O_DIRECT when its alignment rules can be met (buffered otherwise), its size, flush,
 * zeroing and hole punching with their fallbacks, and a per-channel cache of aligned bounce
 * buffers for I/O that O_DIRECT cannot take as it is. Internal to backend/. */
#ifndef NVME_EMU_BACKEND_BDEV_FILE_H
#define NVME_EMU_BACKEND_BDEV_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/bdev_internal.h"

#define BDEV_FILE_BOUNCE_CACHE 16
#define BDEV_FILE_BOUNCE_ALIGN 4096
#define BDEV_FILE_ZERO_BUF (128 * 1024)
/* Linux UIO_MAXIOV: longer iovec arrays are refused by the kernel, so they go through a bounce. */
#define BDEV_FILE_MAX_IOV 1024

struct bdev_file {
	int fd;
	char *filename;
	bool direct;
	bool is_blkdev;
	size_t mem_align; /* O_DIRECT: buffer address alignment */
	size_t len_align; /* O_DIRECT: segment length alignment */
	/* Learned at run time; read and cleared with __atomic by channel threads. */
	bool punch_ok;	    /* FALLOC_FL_PUNCH_HOLE supported */
	bool zero_range_ok; /* FALLOC_FL_ZERO_RANGE supported */
	void *zero_buf;	    /* BDEV_FILE_ZERO_BUF aligned zero bytes (fallback writes) */
};

/* Bounce buffers kept per channel for reuse, so unaligned I/O allocates only while warming up. */
struct bdev_file_bounces {
	struct {
		void *buf;
		size_t len;
	} b[BDEV_FILE_BOUNCE_CACHE];
	unsigned int n;
};

/*
 * Opens `filename` (created and extended to create_size bytes if create_size > 0 and it is
 * smaller; block devices are never resized), O_DIRECT unless `buffered` or impossible (then a log
 * line says why), and returns its size in *size. On failure f is left closed. *created tells
 * whether this call created the file (the caller removes it if it fails later). 0 or -errno.
 */
int bdev_file_open(struct bdev_file *f, const char *filename, uint32_t block_size, bool buffered,
		   uint64_t create_size, uint64_t *size, bool *created);
void bdev_file_close(struct bdev_file *f);

/*
 * What bdev_aio_create and bdev_uring_create share. setup checks the name (free, 1 to
 * BDEV_NAME_MAX bytes) and the options (block size 512 or 4096, create_size a multiple of it,
 * queue_depth at most max_qd) before touching the file, then opens it (bdev_file_open); the block
 * size in *bs. register makes and registers bdev `name` over it (ctx: the module's object,
 * freed by the caller on failure) and logs it as `what`; on failure it removes a file that
 * `created` says this create made. Both: 0 or -errno.
 */
int bdev_file_setup(struct bdev_file *f, const char *name, const struct bdev_aio_opts *opts,
		    uint32_t max_qd, uint32_t *bs, uint64_t *size, bool *created);
int bdev_file_register(const char *name, const struct bdev_module_ops *ops, struct bdev_file *f,
		       void *ctx, uint32_t bs, uint64_t size, const struct bdev_aio_opts *opts,
		       uint32_t qd, const char *what, bool created, struct bdev **out);

/* The learned capabilities (atomically: channels of several threads share them). */
bool bdev_file_cap(bool *flag);
void bdev_file_cap_clear(bool *flag);

int bdev_file_fdatasync(struct bdev_file *f);
/* Zeroes [off, +len): FALLOC_FL_ZERO_RANGE, or written zeroes. 0 or -errno. */
int bdev_file_zero_range(struct bdev_file *f, uint64_t off, uint64_t len);
/* Deallocates [off, +len): FALLOC_FL_PUNCH_HOLE, or zeroes. 0 or -errno. */
int bdev_file_punch(struct bdev_file *f, uint64_t off, uint64_t len);
/* True when the io's buffers break O_DIRECT's alignment or the kernel's iovec limit. */
bool bdev_file_needs_bounce(const struct bdev_file *f, const struct bdev_io *io);

/* A buffer of at least len bytes (BDEV_FILE_BOUNCE_ALIGN aligned), its size in *got; NULL when
 * out of memory. put gives it back to the cache (or frees it); fini frees the cache. */
void *bdev_file_bounce_get(struct bdev_file_bounces *c, size_t len, size_t *got);
void bdev_file_bounce_put(struct bdev_file_bounces *c, void *buf, size_t len);
void bdev_file_bounce_fini(struct bdev_file_bounces *c);

#endif
