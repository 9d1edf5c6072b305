/* backend/bdev_rbd.c - bdev on a Ceph RBD image through librbd's asynchronous I/O: channels
 * submit rbd_aio_* directly (librbd is thread-safe), completions arrive on librbd's threads and go
 * back through bdev_io_complete_remote. What librados/librbd only offer as blocking calls
 * (connect, open, resize, close, shutdown) runs on a job thread of the bdev's own, which reports
 * to the main loop by message: the main loop never waits for the cluster. */
#include "backend/bdev_internal.h"
#include "common/evloop.h"
#include "common/log.h"

#include <errno.h>
#include <inttypes.h>
#include <rados/librados.h>
#include <rbd/librbd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Operation timeouts given to librados unless the configuration sets them: a cluster that stops
 * answering fails I/O after this long instead of holding it (and a teardown) forever. */
#define BDEV_RBD_OP_TIMEOUT "30"
#define BDEV_RBD_MAX_CONFIG 32

struct bdev_rbd;
typedef void (*bdev_rbd_job_fn)(struct bdev_rbd *rbd);

struct bdev_rbd {
	struct bdev *bdev; /* NULL until registered */
	struct evloop *loop;
	char name[BDEV_NAME_MAX + 1];
	char *pool, *image, *user;
	char *config[2 * BDEV_RBD_MAX_CONFIG]; /* key, value, ... (owned) */
	unsigned int nconfig;
	uint32_t block_size;
	uint8_t uuid[BDEV_UUID_LEN];
	bool has_uuid;
	/* Cluster objects: made and destroyed by jobs, used by channels in between. */
	rados_t cluster;
	rados_ioctx_t ioctx;
	rbd_image_t img;
	uint64_t watch_handle;
	bool watching;
	uint64_t size;
	/* One job thread at a time; its end is a message to the loop, which joins it. */
	pthread_t job_thread;
	bool job_running;
	bdev_rbd_job_fn job_work, job_done;
	struct evloop_msg job_msg;
	int job_rc;
	char job_err[256];
	uint64_t job_size;
	/* Resize requests (bdev_rbd_resize, or the image's header changing). */
	uint64_t resize_to; /* bytes asked by bdev_rbd_resize; 0: only re-read the size */
	bool resize_pending, size_check_pending;
	bdev_rbd_resize_cb resize_done;
	void *resize_arg;
	struct evloop_msg watch_msg;
	int watch_posted; /* __atomic: a header-change message is on its way */
	bool deleting;
	/* Creation. */
	bdev_create_cb create_done;
	void *create_arg;
	struct bdev_rbd *next_pending;
};

/* Per-io context. The io may have several librbd requests in flight (UNMAP ranges). */
struct bdev_rbd_io {
	struct bdev_rbd *rbd;
	int pending; /* __atomic */
	int status;  /* __atomic: first error */
	bool flush_after;
};

static struct bdev_rbd *bdev_rbd_pending;
static struct bdev_rbd *bdev_rbd_dying; /* deleted, teardown job running (main thread) */

static struct bdev_rbd_io *bdev_rbd_io(struct bdev_io *io)
{
	return (struct bdev_rbd_io *)io->driver_ctx;
}

/* ---- jobs ---- */

static void bdev_rbd_job_end(void *arg)
{
	struct bdev_rbd *rbd = arg;

	pthread_join(rbd->job_thread, NULL); /* it has returned: its last act was posting this */
	rbd->job_running = false;
	rbd->job_done(rbd);
}

static void *bdev_rbd_job_main(void *arg)
{
	struct bdev_rbd *rbd = arg;

	rbd->job_work(rbd);
	evloop_post(rbd->loop, &rbd->job_msg, bdev_rbd_job_end, rbd);
	return NULL;
}

/* Runs work() on a new thread, then done() on the loop. Main thread; one job at a time. */
static int bdev_rbd_job(struct bdev_rbd *rbd, bdev_rbd_job_fn work, bdev_rbd_job_fn done)
{
	int rc;

	if (rbd->job_running)
		return -EBUSY;
	rbd->job_work = work;
	rbd->job_done = done;
	rbd->job_rc = 0;
	rbd->job_err[0] = '\0';
	rc = pthread_create(&rbd->job_thread, NULL, bdev_rbd_job_main, rbd);
	if (rc)
		return -rc;
	rbd->job_running = true;
	return 0;
}

/* ---- I/O (channel threads and librbd's callback threads) ---- */

static void bdev_rbd_req_done(rbd_completion_t c, void *arg);

/* Starts one librbd request for io. Returns 0 or -errno (nothing in flight then). */
static int bdev_rbd_start(struct bdev_io *io, enum bdev_io_type type, uint64_t off, uint64_t len)
{
	struct bdev_rbd *rbd = bdev_rbd_io(io)->rbd;
	rbd_completion_t c;
	int rc;

	rc = rbd_aio_create_completion(io, bdev_rbd_req_done, &c);
	if (rc < 0)
		return rc;
	switch (type) {
	case BDEV_IO_READ:
		rc = rbd_aio_readv(rbd->img, io->iov, io->iovcnt, off, c);
		break;
	case BDEV_IO_WRITE:
		rc = rbd_aio_writev(rbd->img, io->iov, io->iovcnt, off, c);
		break;
	case BDEV_IO_FLUSH:
		rc = rbd_aio_flush(rbd->img, c);
		break;
	case BDEV_IO_WRITE_ZEROES:
	case BDEV_IO_UNMAP:
		/* Also deallocation: librbd's discard may skip partial objects (reads would not
		 * return zeroes), write_zeroes never does and frees whole objects. */
		rc = rbd_aio_write_zeroes(rbd->img, off, len, c, 0, 0);
		break;
	default:
		rc = -EINVAL;
		break;
	}
	if (rc < 0)
		rbd_aio_release(c);
	return rc;
}

static void bdev_rbd_fail(struct bdev_rbd_io *r, int rc)
{
	int zero = 0;

	__atomic_compare_exchange_n(&r->status, &zero, rc, false, __ATOMIC_ACQ_REL,
				    __ATOMIC_ACQUIRE);
}

/* One request of an io is over. The last one completes the io (or starts its FUA flush). */
static void bdev_rbd_req_end(struct bdev_io *io, int rc)
{
	struct bdev_rbd_io *r = bdev_rbd_io(io);
	int status;

	if (rc < 0)
		bdev_rbd_fail(r, rc == -ENOSPC ? -ENOSPC : -EIO);
	if (__atomic_sub_fetch(&r->pending, 1, __ATOMIC_ACQ_REL))
		return;
	status = __atomic_load_n(&r->status, __ATOMIC_ACQUIRE);
	if (!status && r->flush_after) {
		/* FUA: librbd's cache is write-back, so the write is made durable by a flush. */
		r->flush_after = false;
		r->pending = 1;
		rc = bdev_rbd_start(io, BDEV_IO_FLUSH, 0, 0);
		if (!rc)
			return;
		status = -EIO;
	}
	bdev_io_complete_remote(io, status);
}

static void bdev_rbd_req_done(rbd_completion_t c, void *arg)
{
	struct bdev_io *io = arg;
	ssize_t ret = rbd_aio_get_return_value(c);

	rbd_aio_release(c);
	if (ret >= 0 && io->type == BDEV_IO_READ && !bdev_rbd_io(io)->flush_after &&
	    (uint64_t)ret != io->num_blocks * io->internal.ch->bdev->block_size)
		ret = -EIO; /* a short read */
	if (ret < 0)
		LOG_ERR(BDEV_LOG, "%s: RBD request failed: %s", bdev_rbd_io(io)->rbd->name,
			strerror((int)-ret));
	bdev_rbd_req_end(io, ret < 0 ? (int)ret : 0);
}

static void bdev_rbd_submit(struct bdev_channel *ch, struct bdev_io *io)
{
	struct bdev_rbd *rbd = ch->bdev->ctx;
	struct bdev_rbd_io *r = bdev_rbd_io(io);
	uint64_t bs = ch->bdev->block_size;
	uint32_t n = io->type == BDEV_IO_UNMAP ? io->nranges : 1, i;
	int rc;

	r->rbd = rbd;
	r->status = 0;
	r->flush_after = (io->flags & BDEV_IO_F_FUA) &&
			 (io->type == BDEV_IO_WRITE || io->type == BDEV_IO_WRITE_ZEROES ||
			  io->type == BDEV_IO_UNMAP);
	/* One extra count while starting, so no completion finishes the io before all started. */
	r->pending = (int)n + 1;
	for (i = 0; i < n; i++) {
		if (io->type == BDEV_IO_UNMAP)
			rc = bdev_rbd_start(io, io->type, io->ranges[i].offset_blocks * bs,
					    io->ranges[i].num_blocks * bs);
		else
			rc = bdev_rbd_start(io, io->type, io->offset_blocks * bs,
					    io->num_blocks * bs);
		if (rc < 0) {
			LOG_ERR(BDEV_LOG, "%s: RBD request refused: %s", rbd->name, strerror(-rc));
			bdev_rbd_fail(r, -EIO);
			/* The requests not started will never end: count them now. */
			__atomic_sub_fetch(&r->pending, (int)(n - i - 1), __ATOMIC_ACQ_REL);
			bdev_rbd_req_end(io, -EIO);
			return;
		}
	}
	bdev_rbd_req_end(io, 0);
}

/* ---- setup and teardown (job threads) ---- */

static void bdev_rbd_seterr(struct bdev_rbd *rbd, int rc, const char *what)
{
	rbd->job_rc = rc;
	snprintf(rbd->job_err, sizeof(rbd->job_err), "%s: %s", what, strerror(-rc));
}

static void bdev_rbd_header_changed(void *arg);

/* Blocking: connects, opens the image and learns its size. */
static void bdev_rbd_setup_work(struct bdev_rbd *rbd)
{
	bool op_timeout = false, mon_timeout = false;
	int rc;

	rc = rados_create(&rbd->cluster, rbd->user);
	if (rc < 0) {
		bdev_rbd_seterr(rbd, rc, "rados_create");
		rbd->cluster = NULL;
		return;
	}
	/* Without a configuration map, the usual file ($CEPH_CONF, /etc/ceph/ceph.conf). */
	if (!rbd->nconfig) {
		rc = rados_conf_read_file(rbd->cluster, NULL);
		if (rc < 0) {
			bdev_rbd_seterr(rbd, rc, "reading the Ceph configuration ($CEPH_CONF or "
						 "/etc/ceph/ceph.conf)");
			return;
		}
	}
	for (unsigned int i = 0; i < rbd->nconfig; i++) {
		const char *k = rbd->config[2 * i], *v = rbd->config[2 * i + 1];

		rc = rados_conf_set(rbd->cluster, k, v);
		if (rc < 0) {
			rbd->job_rc = rc;
			snprintf(rbd->job_err, sizeof(rbd->job_err),
				 "configuration %s=%s: %s", k, v, strerror(-rc));
			return;
		}
		op_timeout |= !strcmp(k, "rados_osd_op_timeout");
		mon_timeout |= !strcmp(k, "rados_mon_op_timeout");
	}
	if ((!op_timeout && rados_conf_set(rbd->cluster, "rados_osd_op_timeout",
					   BDEV_RBD_OP_TIMEOUT) < 0) ||
	    (!mon_timeout && rados_conf_set(rbd->cluster, "rados_mon_op_timeout",
					    BDEV_RBD_OP_TIMEOUT) < 0))
		LOG_WARN(BDEV_LOG, "%s: cannot set the RADOS operation timeouts", rbd->name);
	rc = rados_connect(rbd->cluster);
	if (rc < 0) {
		bdev_rbd_seterr(rbd, rc, "cannot connect to the Ceph cluster");
		return;
	}
	rc = rados_ioctx_create(rbd->cluster, rbd->pool, &rbd->ioctx);
	if (rc < 0) {
		rbd->ioctx = NULL;
		rbd->job_rc = rc;
		snprintf(rbd->job_err, sizeof(rbd->job_err), "pool %s: %s", rbd->pool,
			 strerror(-rc));
		return;
	}
	rc = rbd_open(rbd->ioctx, rbd->image, &rbd->img, NULL);
	if (rc < 0) {
		rbd->img = NULL;
		rbd->job_rc = rc;
		snprintf(rbd->job_err, sizeof(rbd->job_err), "image %s/%s: %s", rbd->pool,
			 rbd->image, strerror(-rc));
		return;
	}
	rc = rbd_get_size(rbd->img, &rbd->job_size);
	if (rc < 0) {
		bdev_rbd_seterr(rbd, rc, "rbd_get_size");
		return;
	}
	/* Header changes (a resize by anyone) are reported to the loop. */
	if (rbd_update_watch(rbd->img, &rbd->watch_handle, bdev_rbd_header_changed, rbd) == 0)
		rbd->watching = true;
	else
		LOG_WARN(BDEV_LOG, "%s: cannot watch the image header: resizes by others will "
				   "not be seen", rbd->name);
}

/* Blocking: closes and disconnects. Also after a failed setup (whatever exists). */
static void bdev_rbd_teardown_work(struct bdev_rbd *rbd)
{
	if (rbd->watching) {
		rbd_update_unwatch(rbd->img, rbd->watch_handle);
		rbd->watching = false;
	}
	if (rbd->img) {
		rbd_close(rbd->img);
		rbd->img = NULL;
	}
	if (rbd->ioctx) {
		rados_ioctx_destroy(rbd->ioctx);
		rbd->ioctx = NULL;
	}
	if (rbd->cluster) {
		rados_shutdown(rbd->cluster);
		rbd->cluster = NULL;
	}
}

static void bdev_rbd_free(struct bdev_rbd *rbd)
{
	for (unsigned int i = 0; i < 2 * rbd->nconfig; i++)
		free(rbd->config[i]);
	free(rbd->pool);
	free(rbd->image);
	free(rbd->user);
	free(rbd);
}

static void bdev_rbd_unlink(struct bdev_rbd **list, struct bdev_rbd *rbd)
{
	for (struct bdev_rbd **pp = list; *pp; pp = &(*pp)->next_pending) {
		if (*pp == rbd) {
			*pp = rbd->next_pending;
			return;
		}
	}
}

static void (*bdev_rbd_idle_cb)(void *arg);
static void *bdev_rbd_idle_arg;

static void bdev_rbd_teardown_done(struct bdev_rbd *rbd)
{
	void (*cb)(void *arg) = bdev_rbd_idle_cb;

	bdev_rbd_unlink(&bdev_rbd_dying, rbd);
	bdev_rbd_free(rbd);
	if (cb && !bdev_rbd_dying && !bdev_rbd_pending) {
		bdev_rbd_idle_cb = NULL;
		cb(bdev_rbd_idle_arg);
	}
}

/* Starts the teardown; the object is freed when it ends. */
static void bdev_rbd_teardown(struct bdev_rbd *rbd)
{
	rbd->deleting = true;
	rbd->next_pending = bdev_rbd_dying;
	bdev_rbd_dying = rbd;
	if (rbd->job_running)
		return; /* the running job's end starts it */
	if (bdev_rbd_job(rbd, bdev_rbd_teardown_work, bdev_rbd_teardown_done)) {
		/* No thread: do it here rather than leak a connected cluster. */
		LOG_WARN(BDEV_LOG, "%s: no thread for the RBD teardown: closing inline",
			 rbd->name);
		bdev_rbd_teardown_work(rbd);
		bdev_rbd_teardown_done(rbd);
	}
}

static void bdev_rbd_destruct(struct bdev *bdev);
static void bdev_rbd_get_info(const struct bdev *bdev, struct bdev_info *info);

static const struct bdev_module_ops bdev_rbd_ops = {
    .module_name = "rbd",
    .product_name = "Ceph Rbd Disk",
    .io_ctx_size = sizeof(struct bdev_rbd_io),
    .io_types = (1u << BDEV_IO_READ) | (1u << BDEV_IO_WRITE) | (1u << BDEV_IO_FLUSH) |
		(1u << BDEV_IO_WRITE_ZEROES) | (1u << BDEV_IO_UNMAP),
    .has_write_cache = true,
    .destruct = bdev_rbd_destruct,
    .submit = bdev_rbd_submit,
    .get_info = bdev_rbd_get_info,
};

static void bdev_rbd_setup_done(struct bdev_rbd *rbd)
{
	bdev_create_cb done = rbd->create_done;
	char msg[400];
	struct bdev *b = NULL;
	int rc = rbd->job_rc;

	bdev_rbd_unlink(&bdev_rbd_pending, rbd);
	rbd->create_done = NULL;
	if (rbd->deleting) {
		/* Cancelled while connecting: its requester was answered then. */
		bdev_rbd_unlink(&bdev_rbd_dying, rbd);
		rbd->deleting = false;
		bdev_rbd_teardown(rbd);
		return;
	}
	if (!rc && rbd->job_size < rbd->block_size) {
		rc = -EINVAL;
		snprintf(rbd->job_err, sizeof(rbd->job_err),
			 "the image holds %" PRIu64 " bytes, less than one block", rbd->job_size);
	}
	if (!rc) {
		rbd->size = rbd->job_size;
		rc = bdev_alloc(rbd->name, &bdev_rbd_ops, rbd->block_size,
				rbd->size / rbd->block_size, rbd->has_uuid ? rbd->uuid : NULL, &b);
		if (!rc) {
			b->ctx = rbd;
			rc = bdev_register(b);
			if (rc)
				bdev_free(b);
		}
		if (rc)
			snprintf(rbd->job_err, sizeof(rbd->job_err), "%s",
				 rc == -EEXIST ? "a bdev of that name exists" : strerror(-rc));
	}
	if (rc) {
		snprintf(msg, sizeof(msg), "RBD image %s/%s: %s", rbd->pool, rbd->image,
			 rbd->job_err);
		LOG_ERR(BDEV_LOG, "%s: %s", rbd->name, msg);
		done(rbd->create_arg, rc, msg, NULL);
		bdev_rbd_teardown(rbd);
		return;
	}
	rbd->bdev = b;
	LOG_INFO(BDEV_LOG, "%s: RBD image %s/%s, %" PRIu64 " bytes", rbd->name, rbd->pool,
		 rbd->image, rbd->size);
	done(rbd->create_arg, 0, NULL, b);
}

static void bdev_rbd_destruct(struct bdev *bdev)
{
	bdev_rbd_teardown(bdev->ctx);
}

static void bdev_rbd_get_info(const struct bdev *bdev, struct bdev_info *info)
{
	const struct bdev_rbd *rbd = bdev->ctx;

	info->rbd_pool = rbd->pool;
	info->rbd_image = rbd->image;
	info->rbd_user = rbd->user;
	info->rbd_config = (const char *const *)rbd->config;
	info->rbd_nconfig = rbd->nconfig;
}

int bdev_rbd_rados(const struct bdev *bdev, void **cluster, void **ioctx, char *image_id,
		   size_t len)
{
	const struct bdev_rbd *rbd;
	int rc;

	if (bdev->ops != &bdev_rbd_ops)
		return -ENOTSUP;
	rbd = bdev->ctx;
	/* The id is the open image's, in memory: no round trip. */
	rc = rbd_get_id(rbd->img, image_id, len);
	if (rc)
		return rc == -ERANGE ? -ENAMETOOLONG : rc;
	*cluster = rbd->cluster;
	*ioctx = rbd->ioctx;
	return 0;
}

/* ---- resize ---- */

static void bdev_rbd_next_size_job(struct bdev_rbd *rbd);

static void bdev_rbd_size_work(struct bdev_rbd *rbd)
{
	int rc;

	if (rbd->resize_to) {
		rc = rbd_resize(rbd->img, rbd->resize_to);
		if (rc < 0) {
			bdev_rbd_seterr(rbd, rc, "rbd_resize");
			return;
		}
	}
	rc = rbd_get_size(rbd->img, &rbd->job_size);
	if (rc < 0)
		bdev_rbd_seterr(rbd, rc, "rbd_get_size");
}

static void bdev_rbd_size_done(struct bdev_rbd *rbd)
{
	bdev_rbd_resize_cb done = rbd->resize_to ? rbd->resize_done : NULL;
	void *arg = rbd->resize_arg;
	int rc = rbd->job_rc;

	if (rbd->resize_to)
		rbd->resize_pending = false;
	rbd->resize_to = 0;
	rbd->resize_done = NULL;
	if (rbd->deleting) {
		if (done)
			done(arg, -ECANCELED, "bdev deleted");
		bdev_rbd_unlink(&bdev_rbd_dying, rbd);
		rbd->deleting = false;
		bdev_rbd_teardown(rbd);
		return;
	}
	if (!rc && rbd->job_size != rbd->size) {
		uint64_t blocks = rbd->job_size / rbd->block_size;

		LOG_INFO(BDEV_LOG, "%s: RBD image %s/%s resized from %" PRIu64 " to %" PRIu64
				   " bytes",
			 rbd->name, rbd->pool, rbd->image, rbd->size, rbd->job_size);
		rbd->size = rbd->job_size;
		if (blocks)
			bdev_notify_resize(rbd->bdev, blocks);
	}
	if (done)
		done(arg, rc, rc ? rbd->job_err : NULL);
	bdev_rbd_next_size_job(rbd);
}

static void bdev_rbd_next_size_job(struct bdev_rbd *rbd)
{
	if (rbd->job_running || rbd->deleting)
		return;
	if (rbd->resize_pending && !rbd->resize_to) {
		/* resize_to was consumed: nothing more. */
		rbd->resize_pending = false;
	}
	if (!rbd->size_check_pending && !rbd->resize_pending)
		return;
	rbd->size_check_pending = false;
	if (bdev_rbd_job(rbd, bdev_rbd_size_work, bdev_rbd_size_done)) {
		LOG_ERR(BDEV_LOG, "%s: no thread to read the image size", rbd->name);
		if (rbd->resize_done)
			rbd->resize_done(rbd->resize_arg, -EAGAIN, "no thread for the resize");
		rbd->resize_done = NULL;
		rbd->resize_to = 0;
		rbd->resize_pending = false;
	}
}

/* Loop thread: the image header changed (possibly its size). */
static void bdev_rbd_header_msg(void *arg)
{
	struct bdev_rbd *rbd = arg;

	__atomic_store_n(&rbd->watch_posted, 0, __ATOMIC_RELEASE);
	if (!rbd->bdev || rbd->deleting)
		return;
	rbd->size_check_pending = true;
	bdev_rbd_next_size_job(rbd);
}

/* librbd's thread. */
static void bdev_rbd_header_changed(void *arg)
{
	struct bdev_rbd *rbd = arg;

	if (__atomic_exchange_n(&rbd->watch_posted, 1, __ATOMIC_ACQ_REL))
		return;
	evloop_post(rbd->loop, &rbd->watch_msg, bdev_rbd_header_msg, rbd);
}

int bdev_rbd_resize(const char *name, uint64_t new_size_bytes, bdev_rbd_resize_cb done,
		    void *arg)
{
	struct bdev *b = bdev_lookup(name);
	struct bdev_rbd *rbd;

	if (!b || strcmp(b->ops->module_name, "rbd"))
		return -ENODEV;
	rbd = b->ctx;
	if (new_size_bytes < rbd->size)
		return -EINVAL; /* shrinking would cut data off a live namespace */
	if (new_size_bytes % rbd->block_size)
		return -EINVAL;
	if (rbd->resize_pending)
		return -EBUSY;
	rbd->resize_pending = true;
	rbd->resize_to = new_size_bytes;
	rbd->resize_done = done;
	rbd->resize_arg = arg;
	bdev_rbd_next_size_job(rbd);
	return 0;
}

/* ---- creation ---- */

int bdev_rbd_create(const char *name, const struct bdev_rbd_opts *opts, struct evloop *loop,
		    bdev_create_cb done, void *arg)
{
	struct bdev_rbd *rbd, *p;
	size_t len;
	int rc;

	if (!name || !opts || !opts->pool_name || !opts->rbd_name || !loop || !done)
		return -EINVAL;
	len = strlen(name);
	if (len == 0 || len > BDEV_NAME_MAX || !*opts->pool_name || !*opts->rbd_name)
		return -EINVAL;
	if (opts->block_size && opts->block_size != 512 && opts->block_size != 4096)
		return -EINVAL;
	if (opts->nconfig > BDEV_RBD_MAX_CONFIG)
		return -E2BIG;
	if (bdev_lookup(name))
		return -EEXIST;
	for (p = bdev_rbd_pending; p; p = p->next_pending)
		if (!strcmp(p->name, name))
			return -EEXIST;
	rbd = calloc(1, sizeof(*rbd));
	if (!rbd)
		return -ENOMEM;
	memcpy(rbd->name, name, len + 1);
	rbd->loop = loop;
	rbd->block_size = opts->block_size ? opts->block_size : 512;
	rbd->pool = strdup(opts->pool_name);
	rbd->image = strdup(opts->rbd_name);
	rbd->user = opts->user_id ? strdup(opts->user_id) : NULL;
	if (!rbd->pool || !rbd->image || (opts->user_id && !rbd->user))
		goto nomem;
	for (unsigned int i = 0; i < 2 * opts->nconfig; i++) {
		rbd->config[i] = strdup(opts->config[i]);
		if (!rbd->config[i])
			goto nomem;
		rbd->nconfig = (i + 2) / 2;
	}
	rbd->nconfig = opts->nconfig;
	if (opts->uuid) {
		memcpy(rbd->uuid, opts->uuid, BDEV_UUID_LEN);
		rbd->has_uuid = true;
	}
	rbd->create_done = done;
	rbd->create_arg = arg;
	rc = bdev_rbd_job(rbd, bdev_rbd_setup_work, bdev_rbd_setup_done);
	if (rc) {
		bdev_rbd_free(rbd);
		return rc;
	}
	rbd->next_pending = bdev_rbd_pending;
	bdev_rbd_pending = rbd;
	return 0;

nomem:
	bdev_rbd_free(rbd);
	return -ENOMEM;
}

void bdev_rbd_cancel_creates(void)
{
	while (bdev_rbd_pending) {
		struct bdev_rbd *rbd = bdev_rbd_pending;
		bdev_create_cb done = rbd->create_done;

		bdev_rbd_pending = rbd->next_pending;
		rbd->create_done = NULL;
		/* The setup job's end sees `deleting` and tears down. */
		rbd->deleting = true;
		rbd->next_pending = bdev_rbd_dying;
		bdev_rbd_dying = rbd;
		if (done)
			done(rbd->create_arg, -ECANCELED, "creation cancelled", NULL);
	}
}

int bdev_rbd_when_idle(void (*cb)(void *arg), void *arg)
{
	if (!bdev_rbd_pending && !bdev_rbd_dying)
		return 0;
	bdev_rbd_idle_cb = cb;
	bdev_rbd_idle_arg = arg;
	return -EINPROGRESS;
}
