/* backend/bdev.h - block devices (malloc, null, aio) behind an ops table: registry, I/O channels,
 * asynchronous I/O submission and completion. */
#ifndef NVME_EMU_BACKEND_BDEV_H
#define NVME_EMU_BACKEND_BDEV_H

/*
 * Model (SPDK's bdev layer, reduced):
 *
 * - A bdev is a named block device created by a module (malloc, null, aio) and kept in a
 *   process-wide registry. Registry functions (create, delete, lookup, foreach, open/close,
 *   claim/release, set_write_cache) belong to the main thread: they are not thread-safe.
 * - A user (the controller's namespace) opens the bdev (bdev_open) and usually claims it
 *   (bdev_claim). A bdev that is open or claimed cannot be deleted (-EBUSY).
 * - Every thread that submits I/O creates its own channel on an open bdev (bdev_channel_create).
 *   A channel belongs to the thread that created it: submit, poll, get_fd and destroy are called on
 *   that thread only, and every completion callback runs on it, from bdev_channel_poll(). No
 *   locks are taken on the data path.
 * - struct bdev_io is allocated by the caller (preallocated per SQ slot), sizeof(struct bdev_io) +
 *   bdev_io_ctx_size(bdev) bytes, so the data path never allocates. The completion callback is
 *   never called from inside bdev_submit(): even an immediate result (a malloc copy, a
 *   validation error) is queued and delivered by the next bdev_channel_poll(). The channel's fd
 *   becomes readable whenever completions are waiting.
 *
 * Completion status domain (the `status` argument of bdev_io_cb):
 *   0        success
 *   -EINVAL  malformed request: unknown type, iovec total != num_blocks * block_size, no ranges
 *   -ERANGE  an LBA range falls outside the device (nothing was accessed)
 *   -ENOTSUP the bdev does not support this I/O type (see bdev_io_type_supported)
 *   -EIO     media/backing error (read or write failed, short transfer)
 *   -ENOSPC  the backing file system is full (write or allocate failed with ENOSPC)
 *   -ENOMEM  a bounce buffer could not be allocated (transient; may be retried)
 * Other negative errno values from the backing file may appear and are media errors to the caller.
 * BDEV_STATUS_NVME(sct, sc) carries an NVMe status chosen by the bdev (the error-injection bdev's
 * nvme_failure): the controller completes the command with exactly that status.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

/* An NVMe status (Status Code Type, Status Code) as a completion status: below every errno. */
#define BDEV_STATUS_NVME_BASE 0x100000
#define BDEV_STATUS_NVME(sct, sc) (-(BDEV_STATUS_NVME_BASE | (((sct) & 7) << 8) | ((sc) & 0xff)))
#define BDEV_STATUS_IS_NVME(st) ((st) <= -BDEV_STATUS_NVME_BASE && (st) > -BDEV_STATUS_NVME_BASE - 0x800)
/* The NVMe status word (SCT << 8 | SC) of a BDEV_STATUS_NVME status. */
#define BDEV_STATUS_NVME_CODE(st) ((uint16_t)((-(st)) & 0x7ff))
#define BDEV_NAME_MAX 63     /* longest bdev name, without the NUL */
#define BDEV_UUID_LEN 16     /* bytes in a binary UUID */
#define BDEV_UUID_STR_LEN 37 /* "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" + NUL */

struct bdev;
struct bdev_channel;

enum bdev_io_type {
	BDEV_IO_READ = 0,
	BDEV_IO_WRITE,
	BDEV_IO_FLUSH,	      /* make every completed write durable (fdatasync) */
	BDEV_IO_WRITE_ZEROES, /* offset_blocks/num_blocks read back as zeroes afterwards */
	BDEV_IO_UNMAP,	      /* deallocate `ranges`; they read back as zeroes afterwards */
	BDEV_IO_TYPE_COUNT,
};

/* io->flags */
#define BDEV_IO_F_FUA (1u << 0) /* WRITE/WRITE_ZEROES: durable before completion */

/* One range of an UNMAP request (NVMe Dataset Management deallocate). */
struct bdev_range {
	uint64_t offset_blocks;
	uint64_t num_blocks;
};

struct bdev_io;

/* Completion callback: runs on the channel's thread from bdev_channel_poll(), exactly once per
 * submitted io. `status` is in the domain documented at the top of this file. The io may be
 * reused or resubmitted from inside the callback; the channel must not be destroyed from it
 * (destroy after bdev_channel_poll returns). */
typedef void (*bdev_io_cb)(struct bdev_io *io, int status, void *cb_arg);

/*
 * One I/O request. The caller fills the fields of the first block before bdev_submit() and must
 * not touch the io (nor the memory its iov/ranges point to) until the callback ran.
 * Allocation size: sizeof(struct bdev_io) + bdev_io_ctx_size(bdev).
 */
struct bdev_io {
	enum bdev_io_type type;
	uint32_t flags;		 /* BDEV_IO_F_* */
	uint64_t offset_blocks;	 /* READ, WRITE, WRITE_ZEROES */
	uint64_t num_blocks;	 /* READ, WRITE, WRITE_ZEROES; 0 is -EINVAL */
	const struct iovec *iov; /* READ, WRITE: total length must be num_blocks * block_size */
	int iovcnt;
	const struct bdev_range *ranges; /* UNMAP: nranges >= 1 ranges, each checked */
	uint32_t nranges;
	/* WRITE: the placement handle (reclaim unit handle) of a bdev with a placement geometry
	 * (bdev_get_placement); one past its handles means handle 0. Others ignore it. */
	uint16_t placement;
	bdev_io_cb cb;
	void *cb_arg;

	/* Owned by the bdev layer from bdev_submit() until the callback. */
	struct {
		struct bdev_channel *ch;
		struct bdev_io *next; /* deferred-completion queue link */
		int status;
		uint64_t bytes; /* for the counters */
	} internal;

	/* The backend's per-I/O context: bdev_io_ctx_size(bdev) bytes, max_align_t aligned. */
	_Alignas(16) unsigned char driver_ctx[];
};

/* A zoned bdev's geometry (bdev_zone_block_create): zone_size blocks per zone (a power of two),
 * the first zone_capacity of them writable; open and active zone limits (0: none); bytes of
 * zone descriptor extension per zone (NVMe ZNS ZDES x 64; 0: none). */
struct bdev_zone_geom {
	uint64_t zone_size;
	uint64_t zone_capacity;
	uint64_t num_zones;
	uint64_t optimal_open_zones;
	uint32_t max_open_zones;
	uint32_t max_active_zones;
	uint32_t zone_desc_ext_size;
	/* Where the controller keeps the zone states across restarts (owned by the bdev), or
	 * NULL: the zones start Empty each time. */
	const char *state_file;
	/* The file holding the zones' blocks when the base is an aio or io_uring bdev (its
	 * filename, valid while the bdev exists), else NULL: the state file's identity stamp goes
	 * there as an extended attribute (docs/durability.md). */
	const char *data_file;
};

/* A placement bdev's geometry (bdev_fdp_create): nruh reclaim unit handles, nru reclaim units of
 * ru_blocks blocks in the base, num_blocks exposed. */
#define BDEV_PLACEMENT_MAX_RUH 128
struct bdev_placement_geom {
	uint16_t nruh;
	uint64_t ru_blocks;
	uint64_t nru;
	uint64_t num_blocks;
};

/* Description of a bdev for bdev_get_bdevs-style listings. */
struct bdev_info {
	char name[BDEV_NAME_MAX + 1];
	const char *product_name; /* "Malloc disk", "Null disk", "AIO disk" (static string) */
	const char *module_name;  /* "malloc", "null", "aio" (static string) */
	uint32_t block_size;
	uint64_t num_blocks;
	uint8_t uuid[BDEV_UUID_LEN];
	bool claimed;
	char claimed_by[BDEV_NAME_MAX + 1]; /* owner string given to bdev_claim, "" if none */
	uint32_t open_count;
	uint32_t io_types;	  /* bit (1u << enum bdev_io_type) per supported type */
	bool write_cache;	  /* has a volatile write cache (NVMe Identify VWC present) */
	bool write_cache_enabled; /* ... and it is on (NVMe Set Features VWC) */
	const char *filename; /* aio: backing path; NULL otherwise (valid while the bdev exists) */
	const char *uri;      /* nbd: the export's URI; NULL otherwise (same lifetime) */
	uint32_t nbd_connections; /* nbd: connections asked for (num_connections) */
	uint32_t nbd_reconnect_timeout; /* nbd: seconds */
	uint32_t nbd_connected;	  /* nbd: connections up now */
	bool nbd_multi_conn;	  /* nbd: the server allows several connections */
	uint64_t nbd_disconnects; /* nbd: connections lost after their handshake */
	uint64_t nbd_reconnects;  /* nbd: ... and made again */
	const char *rbd_pool;	  /* rbd: pool, image, user (NULL: default) */
	const char *rbd_image;
	const char *rbd_user;
	const char *const *rbd_config; /* rbd: rbd_nconfig key, value pairs */
	unsigned int rbd_nconfig;
	const char *base_name;	  /* error, delay: the base bdev */
	uint64_t delay_us[4];	  /* delay: the latencies (enum bdev_delay_latency) */
	bool direct_io;	      /* aio: opened with O_DIRECT; false otherwise */
	bool uring_poll;      /* uring: reads and writes polled (option poll) */
	uint32_t uring_fixed_buffers; /* uring: guest memory chunks registered, all channels */
	uint64_t uring_fixed_ios;     /* uring: reads and writes done on registered buffers */
	bool zoned;		      /* zone_block: the geometry in zone */
	struct bdev_zone_geom zone;
	bool read_zeroes;	      /* null: reads return zeroes (option read_zeroes) */
	bool placement;		      /* fdp: the geometry in placement_geom */
	struct bdev_placement_geom placement_geom;
};

/* Counters per bdev, kept per channel by its owner thread and summed by bdev_get_stats. For
 * SMART / Get Log Page and bdev_get_iostat. */
struct bdev_stats {
	uint64_t read_ops;
	uint64_t write_ops;
	uint64_t bytes_read;
	uint64_t bytes_written;
	uint64_t flush_ops;
	uint64_t unmap_ops; /* UNMAP requests (not ranges) */
	uint64_t write_zeroes_ops;
	uint64_t errors; /* completions with a non-zero status */
};

/* ---- creation (main thread) ---- */

/*
 * Creates a RAM-backed bdev: `num_blocks` blocks of `block_size` (512 or 4096) bytes, zero-filled,
 * page aligned. `uuid` is BDEV_UUID_LEN bytes or NULL for a random (version 4) UUID.
 * On success stores the bdev in *out (may be NULL) and returns 0. Errors: -EINVAL (name empty or
 * longer than BDEV_NAME_MAX, bad block size, num_blocks 0 or too large), -EEXIST (name taken),
 * -ENOMEM. Main thread; does not block beyond allocating the memory.
 */
int bdev_malloc_create(const char *name, uint64_t num_blocks, uint32_t block_size,
		       const uint8_t *uuid, struct bdev **out);

/*
 * Creates a null bdev: writes, write zeroes and flush succeed and store nothing. Reads succeed and
 * leave the buffer as it is, or with read_zeroes fill it with zeroes, and then deallocation
 * (unmap) is offered too. Same parameters, errors and thread as bdev_malloc_create (no memory
 * per block). Buffers a reader allocates itself must therefore be initialised by it.
 */
int bdev_null_create(const char *name, uint64_t num_blocks, uint32_t block_size,
		     const uint8_t *uuid, bool read_zeroes, struct bdev **out);

/* Options of an aio bdev. Zero-initialise, then set what you need. */
/* Guest memory as the process maps it, for modules that register I/O buffers with the kernel
 * (io_uring fixed buffers). Set once by the application (nvme-emu: the vfio-user DMA windows).
 * get: the mapping holding [va, va + len), its base and size, and a reference that keeps it
 * mapped (NULL if none); removed: the owner unmapped it (let go); put: drops the reference. All
 * any thread; get may lock. */
struct bdev_mem_ops {
	void *(*get)(const void *va, size_t len, void **base, size_t *size);
	bool (*removed)(const void *ref);
	void (*put)(void *ref);
};
void bdev_set_mem_ops(const struct bdev_mem_ops *ops);
/* Memory given by bdev_mem_ops went away: modules holding references look again and let go of
 * the removed ones. Any thread. */
void bdev_mem_removed(void);

struct bdev_aio_opts {
	const char *filename; /* regular file or block device (required) */
	uint32_t block_size;  /* 512 or 4096 (0 = 512) */
	uint64_t create_size; /* if > 0: create the file if missing and extend it to this size
			       * (bytes, multiple of block_size); ignored for block devices */
	uint32_t queue_depth; /* io_setup depth per channel (0 = 128) */
	bool buffered;	      /* true: do not try O_DIRECT */
	bool poll;	      /* io_uring: reads and writes on a polled ring (IORING_SETUP_IOPOLL;
			       * needs O_DIRECT and a file system or device that polls) */
	const uint8_t *uuid;  /* BDEV_UUID_LEN bytes or NULL for random */
};

/*
 * Creates a bdev on a file or block device through libaio. O_DIRECT is used when the file system
 * accepts it and the bdev block size is a multiple of the device's logical block size; otherwise
 * the file is opened buffered and a log line says why. The size comes from st_size (files) or
 * BLKGETSIZE64 (block devices), rounded down to whole blocks. Flush and FUA are real (fdatasync /
 * RWF_DSYNC); unmap punches holes (falling back to writing zeroes). Write cache starts enabled.
 * Errors: -EINVAL (bad options, size smaller than one block), -EEXIST, -ENOENT/-EACCES/... from
 * open, -ENOMEM. Main thread; blocks on open/stat/ftruncate.
 */
int bdev_aio_create(const char *name, const struct bdev_aio_opts *opts, struct bdev **out);

/*
 * Creates a bdev on a file or block device through io_uring (one ring per channel, completions
 * on the channel's eventfd, flush/FUA/write zeroes/deallocate all asynchronous): the same options,
 * file rules and errors as bdev_aio_create; queue_depth is the ring's entries per channel
 * (0 = 128). Main thread.
 */
int bdev_uring_create(const char *name, const struct bdev_aio_opts *opts, struct bdev **out);

/* Module name of region bdevs (bdev_get_module_name). */
#define BDEV_REGION_MODULE "nspool_region"
/* The block size of a packed region: the byte grain the controller lays logical blocks of any
 * format out in (every data + metadata size it offers is a multiple of 8). */
#define BDEV_PACKED_BLOCK_SIZE 8
/*
 * Creates a region bdev: `num_blocks` blocks of `block_size` bytes starting at block
 * `offset_blocks` of `base`, stacked over it without copying. With a block size that is a multiple
 * of the base's, every io is one io of the base, shifted (deallocate ranges in batches). With
 * BDEV_PACKED_BLOCK_SIZE (a packed region) the window holds num_blocks * 8 bytes: an io whose
 * bytes start and end on base blocks is still one shifted io; a read that does not reads the
 * base blocks around it (the parts outside it into scratch); a write, write zeroes or deallocate
 * that does not read-modify-writes the base blocks it shares with its neighbours, holding them
 * against every other such io of the region on any channel (a FIFO of waiters, resumed on their
 * own channel's thread: nothing blocks), and writes or deallocates the whole base blocks
 * between them. A packed io of a read or write may have at most BDEV_REGION_MAX_IOV iovecs
 * unless it is aligned (-EINVAL). Supported I/O types and the write cache are the base's. The
 * base is held open until the region is deleted. Channels are created on the base on the same
 * thread and share its eventfd. Errors: -EINVAL (window outside the base, block size, the base's
 * per-I/O context too large), -EEXIST, -ENOMEM. Main thread.
 */
#define BDEV_REGION_MAX_IOV 16
int bdev_region_create(const char *name, struct bdev *base, uint64_t offset_blocks,
		       uint64_t num_blocks, uint32_t block_size, const uint8_t *uuid,
		       struct bdev **out);

/* Options of an NBD bdev. Zero-initialise, then set what you need. */
struct bdev_nbd_opts {
	const char *uri;	    /* an NBD URI as libnbd parses it: nbd://, nbds://, nbd+unix://,
				     * nbds+unix:// (TLS: tls-certificates=DIR or tls-psk-file=FILE
				     * in the query string) (required) */
	uint32_t block_size;	    /* 512 or 4096 (0 = 512); at least the server's minimum */
	uint32_t num_connections;   /* connections when the server allows multi-conn (0 = 4, max
				     * BDEV_NBD_MAX_CONNECTIONS); otherwise always 1 */
	uint32_t reconnect_timeout; /* seconds I/O waits for a lost server before it fails with
				     * -EIO (0 = 30); reconnection goes on after that */
	const uint8_t *uuid;	    /* BDEV_UUID_LEN bytes or NULL for random */
};
#define BDEV_NBD_MAX_CONNECTIONS 16
/* How an asynchronous creation ended: rc 0 and the registered bdev, or -errno and a message
 * (server unreachable, handshake refused, export too small, read-only export ...). Main thread. */
typedef void (*bdev_create_cb)(void *arg, int rc, const char *message, struct bdev *bdev);
struct evloop;
/*
 * Creates a bdev on an NBD export (libnbd). The connection is made asynchronously on `loop`, the
 * main thread's event loop, which then carries every NBD connection of the bdev (channels hand
 * their I/O to it and get completions back on their eventfd): done(arg, ...) runs once the
 * handshake is over and the bdev is registered, or it failed; never from inside this call.
 * Flush, FUA, write zeroes and deallocate map to NBD_CMD_FLUSH, the FUA flag and
 * NBD_CMD_WRITE_ZEROES (holes allowed) when the server offers them. A lost connection is
 * reconnected (backoff up to 2 s); I/O in flight is sent again, so no acknowledged write is lost.
 * Returns 0 (done will run), or -EINVAL (bad options or URI), -EEXIST (name taken or being
 * created), -ENOMEM, -ENOTSUP (libnbd cannot parse URIs), without calling done. Main thread.
 */
int bdev_nbd_create(const char *name, const struct bdev_nbd_opts *opts, struct evloop *loop,
		    bdev_create_cb done, void *arg);
/* Fails every NBD creation still connecting with -ECANCELED (their done runs now): process
 * teardown, before the loop stops. Main thread. */
void bdev_nbd_cancel_creates(void);

/* Options of an RBD bdev (SPDK's bdev_rbd_create). Zero-initialise, then set what you need. */
struct bdev_rbd_opts {
	const char *pool_name;	 /* required */
	const char *rbd_name;	 /* the image (required) */
	const char *user_id;	 /* Ceph user without "client." (NULL: librados' default, admin) */
	const char *const *config; /* nconfig key, value pairs for rados_conf_set; none: the
				    * configuration file ($CEPH_CONF or /etc/ceph/ceph.conf) */
	unsigned int nconfig;	 /* at most 32 */
	uint32_t block_size;	 /* 512 or 4096 (0 = 512) */
	const uint8_t *uuid;	 /* BDEV_UUID_LEN bytes or NULL for random */
};
/*
 * Creates a bdev on a Ceph RBD image (librbd). Connecting and opening are blocking in librados,
 * so they run on a thread of the bdev's own; done(arg, ...) runs on `loop` (the main thread's)
 * once the image is open and the bdev registered, or with the reason it failed. I/O goes through
 * librbd's AIO from the channels; flush and FUA (a flush after the write) are real; write zeroes
 * and deallocation are rbd write_zeroes (reads return zeroes afterwards). A resize of the image
 * (bdev_rbd_resize, or by anyone: the header is watched) changes the bdev's size and tells its
 * user (bdev_set_resize_cb). Operations fail after 30 s of an unresponsive cluster unless
 * rados_osd_op_timeout / rados_mon_op_timeout are configured. Returns 0 (done will run) or
 * -EINVAL, -E2BIG (too many config pairs), -EEXIST, -ENOMEM, -EAGAIN (no thread). Main thread.
 */
int bdev_rbd_create(const char *name, const struct bdev_rbd_opts *opts, struct evloop *loop,
		    bdev_create_cb done, void *arg);
/* The RADOS client (rados_t) and pool I/O context (rados_ioctx_t) an RBD bdev reaches its image
 * through, and the image's id (unique in its pool, the same for every client), for what daemons
 * sharing the image keep beside it (cluster/). The handles live as long as the bdev. 0, -ENOTSUP
 * (not an RBD bdev), -ENAMETOOLONG. Main thread. */
int bdev_rbd_rados(const struct bdev *bdev, void **cluster, void **ioctx, char *image_id,
		   size_t len);
/* Result of bdev_rbd_resize: rc 0, or -errno with a message. Main thread. */
typedef void (*bdev_rbd_resize_cb)(void *arg, int rc, const char *message);
/* Grows the RBD bdev `name`'s image to new_size bytes (rbd_resize on the bdev's thread), then
 * its size. Returns 0 (done will run), -ENODEV (no such RBD bdev), -EINVAL (smaller than now:
 * shrinking a live namespace is refused, or not a multiple of the block size), -EBUSY (a resize
 * is under way). Main thread. */
int bdev_rbd_resize(const char *name, uint64_t new_size, bdev_rbd_resize_cb done, void *arg);
/* Fails RBD creations still connecting with -ECANCELED (done runs now; their connection is
 * closed when it is made). Main thread, process teardown. */
void bdev_rbd_cancel_creates(void);
/* Returns 0 when no RBD bdev is connecting or closing; else -EINPROGRESS, and cb(arg) runs on
 * the loop when the last one is done (after its threads were joined). Process teardown. */
int bdev_rbd_when_idle(void (*cb)(void *arg), void *arg);

/* Error injection (SPDK's bdev_error): EE_<base> over a base bdev. */
enum bdev_error_type {
	BDEV_ERROR_NONE = 0,
	BDEV_ERROR_FAILURE, /* completes with -EIO (a media error to the host) */
	BDEV_ERROR_NVME,    /* completes with the NVMe status nvme_sct/nvme_sc */
	BDEV_ERROR_PENDING, /* held, never sent, until bdev_error_resume_pending */
	BDEV_ERROR_CORRUPT, /* data byte corrupt_offset XOR corrupt_value (writes on the way
			     * down, reads on the way up) */
	BDEV_ERROR_NOMEM,   /* completes with -ENOMEM */
};
struct bdev_error_injection {
	enum bdev_error_type type;
	uint32_t num;	      /* how many commands (>= 1); the injection ends after them */
	uint32_t queue_depth; /* only while this many ios are outstanding on the channel (0: any) */
	uint8_t nvme_sct, nvme_sc;
	uint64_t corrupt_offset;
	uint8_t corrupt_value; /* 1..255 */
};
/* io_type for bdev_error_inject besides enum bdev_io_type: every type, or clear them all. */
#define BDEV_ERROR_IO_ALL (-1)
#define BDEV_ERROR_IO_CLEAR (-2)
/* Creates EE_<base_name> over base_name (opened and claimed). 0, -ENODEV (no base), -EBUSY
 * (base claimed), -EEXIST, -EINVAL, -ENOMEM. Main thread. */
int bdev_error_create(const char *base_name, const uint8_t *uuid, struct bdev **out);
/* Sets the injection for one I/O type, all (BDEV_ERROR_IO_ALL) or clears every one
 * (BDEV_ERROR_IO_CLEAR; inj ignored). 0, -ENODEV (no such error bdev), -EINVAL. Main thread. */
int bdev_error_inject(const char *name, int io_type, const struct bdev_error_injection *inj);
/* Sends every held (pending) io of every channel. 0 or -ENODEV. Main thread. */
int bdev_error_resume_pending(const char *name);
/* Delay (SPDK's bdev_delay): reads and writes (and write zeroes) complete after an average
 * latency, one in a hundred after the p99 one; flush and deallocate pass through. */
enum bdev_delay_latency { BDEV_DELAY_AVG_READ, BDEV_DELAY_P99_READ, BDEV_DELAY_AVG_WRITE,
			  BDEV_DELAY_P99_WRITE, BDEV_DELAY_NR };
/* Creates `name` over base_name with latencies in microseconds (BDEV_DELAY_NR of them). Errors
 * as bdev_error_create. Main thread. */
int bdev_delay_create(const char *name, const char *base_name, const uint8_t *uuid,
		      const uint64_t *latency_us, struct bdev **out);
/* Changes one latency for ios completing from now on. 0, -ENODEV, -EINVAL. Main thread. */
int bdev_delay_update_latency(const char *name, enum bdev_delay_latency which, uint64_t us);

/* Zoned block device (SPDK's bdev_zone_block) over base_name (opened and claimed): zones of
 * zone_capacity rounded up to a power of two, as many as fit in the base. */
struct bdev_zone_block_opts {
	uint64_t zone_capacity;	     /* writable blocks per zone, 1..2^32 (required) */
	uint64_t optimal_open_zones; /* 1..zones (required; a hint to the host) */
	uint32_t max_open_zones;     /* 0: no limit; at most max_active_zones when that is set */
	uint32_t max_active_zones;   /* 0: no limit */
	/* Zone descriptor extension bytes per zone: 0 (none) or a multiple of 64 up to
	 * BDEV_ZONE_DESC_EXT_MAX, all zones' together at most BDEV_ZONE_DESC_EXT_TOTAL_MAX. */
	uint32_t zone_desc_ext_size;
	/* A file for the zone states (write pointers, states, extensions), or NULL; copied. */
	const char *state_file;
};
#define BDEV_ZONE_DESC_EXT_MAX (255u * 64)	     /* ZDES is one byte of 64-byte units */
#define BDEV_ZONE_DESC_EXT_TOTAL_MAX (64ull << 20) /* kept in memory by the controller */
/* 0, -ENODEV (no base), -EBUSY (base claimed), -EEXIST, -EINVAL (bad options, no whole zone in
 * the base), -ENOMEM. Delete with bdev_delete. Main thread. */
int bdev_zone_block_create(const char *name, const char *base_name,
			   const struct bdev_zone_block_opts *opts, const uint8_t *uuid,
			   struct bdev **out);
/* True if bdev is a zoned bdev, its geometry in *geom (may be NULL). Any thread. */
bool bdev_get_zone_geom(const struct bdev *bdev, struct bdev_zone_geom *geom);

/* Flexible Data Placement bdev (backend/bdev_fdp.c) over base_name (opened and claimed): the base
 * holds a superblock, a persistent LBA map and reclaim units of ru_blocks blocks; a write goes to
 * the current reclaim unit of its placement handle (io->placement), reads through the map;
 * garbage collection copies the valid blocks of a closed unit when free ones run low. nruh + 2
 * units of the base are not exposed (spares). The layout on a base that has one is kept (the
 * same options are required). */
struct bdev_fdp_opts {
	uint16_t nruh;	    /* reclaim unit handles, 1..BDEV_PLACEMENT_MAX_RUH */
	uint64_t ru_blocks; /* blocks per reclaim unit (base blocks) */
};
/* Returns 0 (done will run), or without calling done -ENODEV (no base), -EBUSY (base claimed),
 * -EEXIST (name taken or being created), -EINVAL (bad options, fewer than nruh + 3 reclaim units
 * in the base), -ENOMEM, -EAGAIN (no thread). The bdev's owner thread makes its channel on the
 * base and loads the layout there (superblock and map, or a new one written) with asynchronous
 * ios; done(arg, ...) runs on `loop` (the calling thread's) once the bdev is registered, or with
 * -errno and the reason (-EINVAL: a layout of other options on the base or a corrupt map; -EIO
 * or the base's error: an io failed; -ENOMEM); a failed creation frees all it took and its
 * thread has exited. Never blocks. Delete with bdev_delete. Main thread. */
int bdev_fdp_create(const char *name, const char *base_name, const struct bdev_fdp_opts *opts,
		    const uint8_t *uuid, struct evloop *loop, bdev_create_cb done, void *arg);
/* Fails every placement bdev creation still loading with -ECANCELED (their done runs now; the
 * owner is stopped once its load ends): process teardown. Main thread. */
void bdev_fdp_cancel_creates(void);
/* The placement geometry of bdev, or NULL for a bdev that places nothing. Any thread. */
const struct bdev_placement_geom *bdev_get_placement(const struct bdev *bdev);
/* Blocks still writable in handle ruh's current reclaim unit (RUAMW); 0 for a bad handle. Any
 * thread. */
uint64_t bdev_placement_ruamw(const struct bdev *bdev, uint16_t ruh);
/* Moves handle ruh to a fresh reclaim unit (RUH Update; nothing if its unit is empty): a write
 * submitted after this returns goes to the new one. 0 or -EINVAL. Any thread. */
int bdev_placement_ruh_update(struct bdev *bdev, uint16_t ruh);
/* What the placement bdev wrote: host bytes, media bytes (host + garbage collection), bytes
 * of reclaim units handed out again (erased), GC copies. Any thread. */
struct bdev_placement_stats {
	uint64_t host_bytes;
	uint64_t media_bytes;
	uint64_t erased_bytes;
	uint64_t gc_bytes;
	uint64_t gc_runs;
	uint64_t ru_opened;
	uint64_t ruh_updates;
};
void bdev_placement_get_stats(const struct bdev *bdev, struct bdev_placement_stats *st);
/* A reclaim unit garbage collection emptied: nlbam blocks moved (the first one lba, of handle
 * ruh: the handle that wrote the unit), at time_us (CLOCK_MONOTONIC microseconds). */
struct bdev_placement_event {
	uint64_t time_us;
	uint64_t lba;
	uint64_t nlbam;
	uint16_t ruh;
};
#define BDEV_PLACEMENT_EVENTS 64
/* The newest events (up to max, oldest first) into out; their count. Any thread (a lock the
 * owner takes once per reclaimed unit, not per io). */
unsigned int bdev_placement_get_events(const struct bdev *bdev, struct bdev_placement_event *out,
				       unsigned int max);

/* ---- registry (main thread) ---- */

/* Returns the bdev called `name`, or NULL. */
struct bdev *bdev_lookup(const char *name);

/*
 * Calls fn(bdev, arg) for each bdev in creation order; stops early and returns fn's value when it
 * returns non-zero, else returns 0. fn must not create or delete bdevs.
 */
int bdev_foreach(int (*fn)(struct bdev *bdev, void *arg), void *arg);

/*
 * Deletes the bdev called `name` and frees its resources (closes the backing file; the file itself
 * is kept). Returns 0, -ENOENT (no such bdev) or -EBUSY (claimed or open). The name is free at
 * once; a bdev with a thread of its own (placement) ends its teardown later, and keeps what it
 * claimed (its base) until then. Main thread.
 */
int bdev_delete(const char *name);
/* bdev_delete, and done(arg) on the main thread once the teardown has ended (before this
 * returns for most modules, later for a placement bdev). done runs only when 0 is returned. */
int bdev_delete_cb(const char *name, void (*done)(void *arg), void *arg);
/* 0 when no bdev's teardown is running; else -EINPROGRESS, and cb(arg) runs on the main thread
 * when the last one has ended (process teardown: then bdev_delete_all again for their bases). */
int bdev_when_destroyed(void (*cb)(void *arg), void *arg);

/* Deletes every bdev that is neither open nor claimed (process teardown). Returns the number of
 * bdevs left behind because they are busy (or claimed by one whose teardown runs: see
 * bdev_when_destroyed). */
int bdev_delete_all(void);

/* Opens / closes a bdev: while open it cannot be deleted. Channels may only exist while the bdev is
 * open. bdev_open returns 0; bdev_close must be called once per successful open, after every
 * channel on the bdev was destroyed. */
int bdev_open(struct bdev *bdev);
void bdev_close(struct bdev *bdev);

/* Size changes (an RBD image grown): cb(bdev, num_blocks, arg) runs on the main thread after
 * the bdev's size changed. One callback per bdev (its user's); NULL removes it. Main thread. */
typedef void (*bdev_resize_cb)(struct bdev *bdev, uint64_t num_blocks, void *arg);
void bdev_set_resize_cb(struct bdev *bdev, bdev_resize_cb cb, void *arg);
/* Claims a bdev for exclusive use by `owner` (e.g. "nqn...:ns1"; copied, truncated to
 * BDEV_NAME_MAX). Returns 0 or -EBUSY when already claimed. bdev_release drops the claim. */
int bdev_claim(struct bdev *bdev, const char *owner);
void bdev_release(struct bdev *bdev);

/*
 * Enables or disables the volatile write cache. Disabled: every WRITE and WRITE_ZEROES is made
 * durable before it completes, as if BDEV_IO_F_FUA were set (NVMe Volatile Write Cache feature).
 * Takes effect for I/O submitted afterwards on any channel. Returns 0. malloc and null bdevs have
 * no volatile cache (writes are final when they complete): disabling returns 0, enabling -ENOTSUP.
 */
int bdev_set_write_cache(struct bdev *bdev, bool enable);

/* ---- properties (any thread, while the bdev exists; non-blocking) ---- */

const char *bdev_get_name(const struct bdev *bdev);
const char *bdev_get_module_name(const struct bdev *bdev);
uint32_t bdev_get_block_size(const struct bdev *bdev);
uint64_t bdev_get_num_blocks(const struct bdev *bdev);
/* Copies the UUID (BDEV_UUID_LEN bytes) into out. */
void bdev_get_uuid(const struct bdev *bdev, uint8_t *out);
bool bdev_io_type_supported(const struct bdev *bdev, enum bdev_io_type type);
/* True when the bdev has a volatile write cache that FLUSH/FUA act on (aio): what Identify reports
 * as VWC present. Fixed for the life of the bdev. */
bool bdev_has_write_cache(const struct bdev *bdev);
/* True while that cache is enabled (bdev_set_write_cache); false for bdevs without one. */
bool bdev_write_cache_enabled(const struct bdev *bdev);
/* Lowercase name of an I/O type as SPDK's bdev_get_bdevs "supported_io_types" spells it ("read",
 * "write", "flush", "write_zeroes", "unmap"); NULL for an unknown type. */
const char *bdev_io_type_name(enum bdev_io_type type);
/* Fills *info (see struct bdev_info). */
void bdev_get_info(const struct bdev *bdev, struct bdev_info *info);
/* Snapshot of the counters: every channel's, live or destroyed, summed (each counter read
 * atomically, the set not as one). Any thread; takes a lock that only readers and channel
 * creation and destruction take, never the I/O path. */
void bdev_get_stats(const struct bdev *bdev, struct bdev_stats *stats);
/* I/O submitted on the bdev's channels and not completed yet (every live channel's count, read
 * relaxed). Any thread; takes the same readers' lock as bdev_get_stats. */
uint64_t bdev_get_outstanding(const struct bdev *bdev);

/* Bytes of backend context needed after each struct bdev_io for this bdev (a multiple of 16,
 * possibly 0). */
size_t bdev_io_ctx_size(const struct bdev *bdev);
/* sizeof(struct bdev_io) + bdev_io_ctx_size(bdev): what to allocate per preallocated io. */
size_t bdev_io_size(const struct bdev *bdev);

/* Formats a UUID as 36 lowercase characters + NUL into out (BDEV_UUID_STR_LEN bytes). */
void bdev_uuid_format(const uint8_t *uuid, char *out);
/* Parses "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" (either case). Returns 0 or -EINVAL. */
int bdev_uuid_parse(const char *text, uint8_t *uuid);

/* ---- I/O channels (the creating thread only) ---- */

/*
 * Creates an I/O channel on an open bdev for the calling thread (aio: io_setup with the bdev's
 * queue depth). Stores it in *out and returns 0, or -EINVAL (bdev not open), -ENOMEM, -EAGAIN
 * (aio context limit, /proc/sys/fs/aio-max-nr), or another -errno. Does not block.
 */
int bdev_channel_create(struct bdev *bdev, struct bdev_channel **out);

/*
 * Destroys a channel. Every submitted io must have completed (its callback ran); returns -EBUSY
 * and destroys nothing otherwise, 0 on success. NULL is accepted (returns 0).
 */
int bdev_channel_destroy(struct bdev_channel *ch);

/*
 * Returns an eventfd (non-blocking) that becomes readable when completions are waiting; the poll
 * group epolls it (EPOLLIN) and then calls bdev_channel_poll(). The fd stays owned by the channel:
 * do not read or close it. Valid until bdev_channel_destroy.
 */
int bdev_channel_get_fd(const struct bdev_channel *ch);

/*
 * Submits an io on the channel's thread. Always succeeds from the caller's point of view: the
 * result, including validation errors (-EINVAL, -ERANGE, -ENOTSUP), arrives through io->cb from a
 * later bdev_channel_poll(), never from inside this call. aio batches: up to 16 prepared iocbs
 * wait in the channel (its eventfd is signalled) and go to io_submit together at the next poll;
 * so does I/O beyond the queue depth. When the write cache is disabled, WRITE and WRITE_ZEROES
 * get BDEV_IO_F_FUA added to io->flags. Does not block,
 * except aio operations without an asynchronous form (hole punching, buffered fallback writes of
 * zeroes), which run synchronously here and complete through the queue.
 */
void bdev_submit(struct bdev_channel *ch, struct bdev_io *io);

/*
 * Reaps finished I/O and calls their callbacks (on this thread), issues queued I/O, and resets the
 * channel's eventfd. Returns the number of callbacks run (>= 0). Never blocks. Callbacks may
 * submit more I/O; those complete in a later poll.
 */
int bdev_channel_poll(struct bdev_channel *ch);

/* Number of submitted ios whose callback has not run yet. */
uint32_t bdev_channel_outstanding(const struct bdev_channel *ch);

/* Defers the channel's wake-ups while its thread is about to poll it anyway: between
 * bdev_channel_hold_wakeups() and bdev_channel_release_wakeups(), completions queued on the
 * channel's own thread (null and malloc complete at once, on submission) do not write the
 * channel's eventfd, and bdev_channel_poll() reads it only when someone did; the release writes
 * it once if a completion is still undelivered. For a thread that submits and then polls its
 * channels in a loop (a poll group settling a batch): the eventfd write and read per batch go.
 * Completions from other threads signal as before. Channel thread. */
void bdev_channel_hold_wakeups(struct bdev_channel *ch);
void bdev_channel_release_wakeups(struct bdev_channel *ch);

#endif
