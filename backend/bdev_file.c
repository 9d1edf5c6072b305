/* backend/bdev_file.c - the file side of the file-backed bdevs (aio, io_uring): open and probe
 * O_DIRECT, size, flush, zeroing and hole punching with fallbacks, bounce buffers. */
#include "backend/bdev_file.h"
#include "common/log.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

bool bdev_file_cap(bool *flag)
{
	return __atomic_load_n(flag, __ATOMIC_RELAXED);
}

void bdev_file_cap_clear(bool *flag)
{
	__atomic_store_n(flag, false, __ATOMIC_RELAXED);
}

/* ---- bounce buffers ---- */

void *bdev_file_bounce_get(struct bdev_file_bounces *c, size_t len, size_t *got)
{
	unsigned int i, best = c->n;
	void *buf;

	/* Smallest cached buffer that fits. */
	for (i = 0; i < c->n; i++) {
		if (c->b[i].len >= len &&
		    (best == c->n || c->b[i].len < c->b[best].len))
			best = i;
	}
	if (best < c->n) {
		buf = c->b[best].buf;
		*got = c->b[best].len;
		c->b[best] = c->b[--c->n];
		return buf;
	}
	len = (len + BDEV_FILE_BOUNCE_ALIGN - 1) & ~(size_t)(BDEV_FILE_BOUNCE_ALIGN - 1);
	if (posix_memalign(&buf, BDEV_FILE_BOUNCE_ALIGN, len))
		return NULL;
	*got = len;
	return buf;
}

void bdev_file_bounce_put(struct bdev_file_bounces *c, void *buf, size_t len)
{
	unsigned int i, smallest = 0;

	if (c->n < BDEV_FILE_BOUNCE_CACHE) {
		c->b[c->n].buf = buf;
		c->b[c->n].len = len;
		c->n++;
		return;
	}
	/* Cache full: keep the larger buffers, they serve more requests. */
	for (i = 1; i < c->n; i++) {
		if (c->b[i].len < c->b[smallest].len)
			smallest = i;
	}
	if (c->b[smallest].len < len) {
		free(c->b[smallest].buf);
		c->b[smallest].buf = buf;
		c->b[smallest].len = len;
		return;
	}
	free(buf);
}

bool bdev_file_needs_bounce(const struct bdev_file *a, const struct bdev_io *io)
{
	int i;

	if (io->iovcnt > BDEV_FILE_MAX_IOV)
		return true;
	if (!a->direct)
		return false;
	for (i = 0; i < io->iovcnt; i++) {
		if ((uintptr_t)io->iov[i].iov_base % a->mem_align ||
		    io->iov[i].iov_len % a->len_align)
			return true;
	}
	return false;
}

void bdev_file_bounce_fini(struct bdev_file_bounces *c)
{
	for (unsigned int i = 0; i < c->n; i++)
		free(c->b[i].buf);
	c->n = 0;
}

/* ---- flush, zeroes, holes ---- */

int bdev_file_fdatasync(struct bdev_file *a)
{
	return fdatasync(a->fd) ? -errno : 0;
}

static int bdev_file_write_zeroes_buf(struct bdev_file *a, uint64_t off, uint64_t len)
{
	while (len > 0) {
		size_t n = len < BDEV_FILE_ZERO_BUF ? (size_t)len : BDEV_FILE_ZERO_BUF;
		ssize_t w = pwrite(a->fd, a->zero_buf, n, (off_t)off);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (w == 0)
			return -EIO;
		off += (uint64_t)w;
		len -= (uint64_t)w;
	}
	return 0;
}

/* EOPNOTSUPP/ENOSYS: the file system or device lacks the mode, so stop trying. EINVAL: this
 * range is not aligned to what the device accepts (a block device's logical block), so write
 * zeroes for this request only. */
static bool bdev_file_fallocate_unsupported(int err)
{
	return err == EOPNOTSUPP || err == ENOSYS;
}

int bdev_file_zero_range(struct bdev_file *a, uint64_t off, uint64_t len)
{
	if (bdev_file_cap(&a->zero_range_ok)) {
		if (!fallocate(a->fd, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE, (off_t)off,
			       (off_t)len))
			return 0;
		if (bdev_file_fallocate_unsupported(errno)) {
			LOG_INFO(BDEV_LOG,
				 "%s: no FALLOC_FL_ZERO_RANGE (%m): writing zeroes instead",
				 a->filename);
			bdev_file_cap_clear(&a->zero_range_ok);
		} else if (errno != EINVAL) {
			return -errno;
		}
	}
	return bdev_file_write_zeroes_buf(a, off, len);
}

int bdev_file_punch(struct bdev_file *a, uint64_t off, uint64_t len)
{
	if (len == 0)
		return 0;
	if (bdev_file_cap(&a->punch_ok)) {
		if (!fallocate(a->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)off,
			       (off_t)len))
			return 0;
		if (bdev_file_fallocate_unsupported(errno)) {
			LOG_INFO(BDEV_LOG, "%s: no FALLOC_FL_PUNCH_HOLE (%m): zeroing instead",
				 a->filename);
			bdev_file_cap_clear(&a->punch_ok);
		} else if (errno != EINVAL) {
			return -errno;
		}
	}
	return bdev_file_zero_range(a, off, len);
}

/* ---- open ---- */

static void bdev_file_go_buffered(struct bdev_file *a, const char *why)
{
	int fl = fcntl(a->fd, F_GETFL);

	LOG_WARN(BDEV_LOG, "%s: %s: using buffered I/O", a->filename, why);
	if (fl >= 0)
		fcntl(a->fd, F_SETFL, fl & ~O_DIRECT);
	a->direct = false;
}

/* Learns the O_DIRECT alignment rules; falls back to buffered I/O where they cannot be met. */
static void bdev_file_probe_direct(struct bdev_file *a, uint32_t block_size)
{
	struct statx stx;
	int lbs;

	a->mem_align = 512;
	a->len_align = 512;
	if (a->is_blkdev) {
		if (!ioctl(a->fd, BLKSSZGET, &lbs) && lbs > 0)
			a->len_align = a->mem_align = (size_t)lbs;
	} else if (!statx(a->fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &stx) &&
		   (stx.stx_mask & STATX_DIOALIGN)) {
		if (!stx.stx_dio_offset_align) {
			bdev_file_go_buffered(a, "file system reports no direct I/O");
			return;
		}
		a->len_align = stx.stx_dio_offset_align;
		a->mem_align = stx.stx_dio_mem_align ? stx.stx_dio_mem_align : 1;
	}
	if (block_size % a->len_align) {
		bdev_file_go_buffered(a, "block size below the device's direct I/O alignment");
		return;
	}
}

/* Some file systems accept an O_DIRECT open and refuse the I/O itself: try one aligned read. */
static void bdev_file_probe_read(struct bdev_file *a, uint32_t block_size)
{
	if (pread(a->fd, a->zero_buf, block_size, 0) < 0 && errno == EINVAL)
		bdev_file_go_buffered(a, "direct read refused");
	/* The probe read into the zero buffer: restore what the fallback writes rely on. */
	memset(a->zero_buf, 0, block_size);
}

static int bdev_file_open_fd(struct bdev_file *a, const char *filename, bool buffered, bool create)
{
	int flags = O_RDWR | O_CLOEXEC;

	if (create)
		flags |= O_CREAT;
	a->direct = !buffered;
	a->fd = open(filename, flags | (a->direct ? O_DIRECT : 0), 0600);
	if (a->fd < 0 && a->direct && errno == EINVAL) {
		LOG_WARN(BDEV_LOG, "%s: O_DIRECT refused by the file system: using buffered I/O",
			 filename);
		a->direct = false;
		a->fd = open(filename, flags, 0600);
	}
	if (a->fd < 0) {
		int rc = -errno;

		LOG_ERR(BDEV_LOG, "%s: open: %m", filename);
		return rc;
	}
	return 0;
}

/* Size in bytes of the (possibly new) backing file or device. */
static int bdev_file_size(struct bdev_file *a, uint64_t create_size, uint64_t *size)
{
	struct stat st;

	if (fstat(a->fd, &st))
		return -errno;
	if (S_ISBLK(st.st_mode)) {
		a->is_blkdev = true;
		return ioctl(a->fd, BLKGETSIZE64, size) ? -errno : 0;
	}
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	if (create_size && (uint64_t)st.st_size < create_size) {
		if (create_size > (uint64_t)INT64_MAX)
			return -EINVAL;
		if (ftruncate(a->fd, (off_t)create_size))
			return -errno;
		st.st_size = (off_t)create_size;
	}
	*size = (uint64_t)st.st_size;
	return 0;
}

int bdev_file_open(struct bdev_file *f, const char *filename, uint32_t block_size, bool buffered,
		   uint64_t create_size, uint64_t *size, bool *created)
{
	int rc;

	f->fd = -1;
	f->punch_ok = f->zero_range_ok = true;
	*created = create_size && access(filename, F_OK) && errno == ENOENT;
	f->filename = strdup(filename);
	if (!f->filename || posix_memalign(&f->zero_buf, BDEV_FILE_BOUNCE_ALIGN, BDEV_FILE_ZERO_BUF)) {
		f->zero_buf = NULL;
		rc = -ENOMEM;
		goto out;
	}
	memset(f->zero_buf, 0, BDEV_FILE_ZERO_BUF);
	rc = bdev_file_open_fd(f, filename, buffered, create_size != 0);
	if (rc)
		goto out;
	rc = bdev_file_size(f, create_size, size);
	if (rc)
		goto out;
	if (f->direct)
		bdev_file_probe_direct(f, block_size);
	if (f->direct && *size >= block_size)
		bdev_file_probe_read(f, block_size);
	return 0;

out:
	if (*created && f->fd >= 0)
		unlink(filename);
	bdev_file_close(f);
	return rc;
}

void bdev_file_close(struct bdev_file *f)
{
	if (f->fd >= 0)
		close(f->fd);
	f->fd = -1;
	free(f->zero_buf);
	f->zero_buf = NULL;
	free(f->filename);
	f->filename = NULL;
}

int bdev_file_setup(struct bdev_file *f, const char *name, const struct bdev_aio_opts *opts,
		    uint32_t max_qd, uint32_t *bs, uint64_t *size, bool *created)
{
	*bs = opts && opts->block_size ? opts->block_size : 512;
	if (!opts || !opts->filename || !opts->filename[0] || (*bs != 512 && *bs != 4096))
		return -EINVAL;
	if (opts->create_size % *bs || opts->queue_depth > max_qd)
		return -EINVAL;
	/* Refuse a bad or taken name before touching (or creating) the file. */
	if (!name || !name[0] || strlen(name) > BDEV_NAME_MAX)
		return -EINVAL;
	if (bdev_lookup(name))
		return -EEXIST;
	return bdev_file_open(f, opts->filename, *bs, opts->buffered, opts->create_size, size,
			      created);
}

int bdev_file_register(const char *name, const struct bdev_module_ops *ops, struct bdev_file *f,
		       void *ctx, uint32_t bs, uint64_t size, const struct bdev_aio_opts *opts,
		       uint32_t qd, const char *what, bool created, struct bdev **out)
{
	struct bdev *b;
	int rc = bdev_alloc(name, ops, bs, size / bs, opts->uuid, &b);

	if (!rc) {
		b->ctx = ctx;
		rc = bdev_register(b);
		if (rc)
			bdev_free(b);
	}
	if (rc) {
		/* Do not leave behind a file that this failed call created. */
		if (created)
			unlink(f->filename);
		return rc;
	}
	LOG_INFO(BDEV_LOG, "%s: %s on %s, %s I/O, queue depth %u", name, what, f->filename,
		 f->direct ? "direct" : "buffered", qd);
	if (out)
		*out = b;
	return 0;
}
