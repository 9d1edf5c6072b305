/* tests/unit/vfu/fake_dev.c - the fake 3-region device behind a vfu_endpoint,
 * on its own evloop thread (see fake_dev.h). */
#include "tests/unit/vfu/fake_dev.h"

#include "common/evloop.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

struct fake_dev {
	struct evloop *loop;
	pthread_t thread;
	struct vfu_endpoint *ep;
	int bar0_fd;
	uint8_t *bar0;
	uint8_t bar2[FAKE_BAR2_SIZE];
	uint8_t cfg[FAKE_CFG_SIZE];
	int msix_fds[FAKE_MSIX_COUNT];
	bool msix_masked[FAKE_MSIX_COUNT];
	int err_fd;
	bool async_reset, async_unmap, async_write;
	bool inline_resume; /* reset completes from inside the op */
	bool in_call;	    /* inside vfu_endpoint_resume / _dma_read / _dma_write */

	pthread_mutex_t lock; /* counts, and the cond below */
	pthread_cond_t cond;
	struct fake_dev_counts n;
};

static void fake_dev_changed(struct fake_dev *fd)
{
	pthread_cond_broadcast(&fd->cond);
	pthread_mutex_unlock(&fd->lock);
}

static void fake_dev_attach(void *arg)
{
	struct fake_dev *fd = arg;

	pthread_mutex_lock(&fd->lock);
	fd->n.attach++;
	fake_dev_changed(fd);
}

static void fake_dev_close_irqs(struct fake_dev *fd, int *fds, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		if (fds[i] >= 0) {
			close(fds[i]);
			fds[i] = -1;
			fd->n.fds_held--;
		}
	}
}

static int fake_dev_detach(void *arg)
{
	struct fake_dev *fd = arg;

	pthread_mutex_lock(&fd->lock);
	fake_dev_close_irqs(fd, fd->msix_fds, FAKE_MSIX_COUNT);
	fake_dev_close_irqs(fd, &fd->err_fd, 1);
	if (fd->in_call)
		fd->n.reentered++;
	fd->n.detach++;
	fd->n.async_pending = false;
	fake_dev_changed(fd);
	return 0;
}

static void fake_dev_device_info(void *arg, uint32_t *flags, uint32_t *num_regions,
				 uint32_t *num_irqs)
{
	struct fake_dev *fd = arg;

	pthread_mutex_lock(&fd->lock);
	fd->n.device_info++;
	fake_dev_changed(fd);
	*flags = VFIO_DEVICE_FLAGS_RESET | VFIO_DEVICE_FLAGS_PCI;
	*num_regions = VFIO_PCI_NUM_REGIONS;
	*num_irqs = VFIO_PCI_NUM_IRQS;
}

static int fake_dev_region_info(void *arg, uint32_t index, struct vfu_region_desc *d)
{
	struct fake_dev *fd = arg;

	switch (index) {
	case 0:
		d->size = FAKE_BAR0_SIZE;
		d->flags = VFIO_REGION_INFO_FLAG_READ | VFIO_REGION_INFO_FLAG_WRITE |
			   VFIO_REGION_INFO_FLAG_MMAP;
		d->mmap_fd = fd->bar0_fd;
		d->mmap_offset = 0;
		d->nr_sparse = 1;
		d->sparse[0].offset = 0x1000;
		d->sparse[0].size = 0x1000;
		break;
	case 2:
		d->size = FAKE_BAR2_SIZE;
		d->flags = VFIO_REGION_INFO_FLAG_READ | VFIO_REGION_INFO_FLAG_WRITE;
		break;
	case VFIO_PCI_CONFIG_REGION_INDEX:
		d->size = FAKE_CFG_SIZE;
		d->flags = VFIO_REGION_INFO_FLAG_READ | VFIO_REGION_INFO_FLAG_WRITE;
		break;
	default:
		break; /* absent: size 0 */
	}
	return 0;
}

static int fake_dev_region_access(void *arg, uint32_t index, uint64_t offset, void *buf,
				  uint32_t count, bool is_write)
{
	struct fake_dev *fd = arg;
	uint8_t *mem;

	switch (index) {
	case 0:
		mem = fd->bar0;
		break;
	case 2:
		mem = fd->bar2;
		break;
	case VFIO_PCI_CONFIG_REGION_INDEX:
		mem = fd->cfg;
		break;
	default:
		return -EINVAL;
	}
	if (!is_write) {
		memcpy(buf, mem + offset, count);
		return 0;
	}
	memcpy(mem + offset, buf, count);
	pthread_mutex_lock(&fd->lock);
	fd->n.writes++;
	if (fd->async_write)
		fd->n.async_pending = true;
	fake_dev_changed(fd);
	return fd->async_write ? VFU_ASYNC : 0;
}

static int fake_dev_irq_info(void *arg, uint32_t index, uint32_t *flags, uint32_t *count)
{
	switch (index) {
	case VFIO_PCI_MSIX_IRQ_INDEX:
		*flags = VFIO_IRQ_INFO_EVENTFD;
		*count = FAKE_MSIX_COUNT;
		break;
	case VFIO_PCI_ERR_IRQ_INDEX:
		*flags = VFIO_IRQ_INFO_EVENTFD;
		*count = 1;
		break;
	default:
		*flags = 0;
		*count = 0;
		break;
	}
	return 0;
}

static void fake_dev_signal(int efd)
{
	uint64_t one = 1;

	if (efd >= 0 && write(efd, &one, sizeof(one)) != sizeof(one))
		abort();
}

static int fake_dev_set_irqs(void *arg, uint32_t flags, uint32_t index, uint32_t start,
			     uint32_t count, int *fds, size_t nfds, const uint8_t *bools)
{
	struct fake_dev *fd = arg;
	int *slots = index == VFIO_PCI_MSIX_IRQ_INDEX ? fd->msix_fds : &fd->err_fd;
	uint32_t data = flags & VFIO_IRQ_SET_DATA_TYPE_MASK;
	uint32_t action = flags & VFIO_IRQ_SET_ACTION_TYPE_MASK;

	pthread_mutex_lock(&fd->lock);
	fd->n.set_irqs++;
	/* The endpoint validated index and range against irq_info. */
	if (action == VFIO_IRQ_SET_ACTION_TRIGGER && data == VFIO_IRQ_SET_DATA_EVENTFD) {
		fake_dev_close_irqs(fd, slots + start, count);
		for (size_t i = 0; i < nfds; i++) {
			slots[start + i] = fds[i];
			fd->n.fds_held++;
		}
	} else if (action == VFIO_IRQ_SET_ACTION_TRIGGER && data == VFIO_IRQ_SET_DATA_NONE) {
		if (!count)
			fake_dev_close_irqs(fd, slots,
					    index == VFIO_PCI_MSIX_IRQ_INDEX ? FAKE_MSIX_COUNT : 1);
		for (uint32_t i = 0; i < count; i++)
			fake_dev_signal(slots[start + i]);
	} else if (action == VFIO_IRQ_SET_ACTION_TRIGGER && data == VFIO_IRQ_SET_DATA_BOOL) {
		for (uint32_t i = 0; i < count; i++)
			if (bools[i])
				fake_dev_signal(slots[start + i]);
	} else if (index == VFIO_PCI_MSIX_IRQ_INDEX && data == VFIO_IRQ_SET_DATA_NONE) {
		for (uint32_t i = 0; i < count; i++)
			fd->msix_masked[start + i] = action == VFIO_IRQ_SET_ACTION_MASK;
	} else {
		fake_dev_changed(fd);
		for (size_t i = 0; i < nfds; i++)
			close(fds[i]);
		return -EINVAL;
	}
	fake_dev_changed(fd);
	return 0;
}

static int fake_dev_reset(void *arg)
{
	struct fake_dev *fd = arg;

	if (fd->inline_resume) {
		/* Finished before even returning VFU_ASYNC. */
		vfu_endpoint_resume(fd->ep, 0);
		pthread_mutex_lock(&fd->lock);
		fd->n.resets++;
		fake_dev_changed(fd);
		return VFU_ASYNC;
	}
	pthread_mutex_lock(&fd->lock);
	fd->n.resets++;
	if (fd->async_reset)
		fd->n.async_pending = true;
	fake_dev_changed(fd);
	return fd->async_reset ? VFU_ASYNC : 0;
}

static int fake_dev_dma_unmap(void *arg, uint64_t iova, uint64_t len)
{
	struct fake_dev *fd = arg;

	pthread_mutex_lock(&fd->lock);
	fd->n.dma_unmaps++;
	fd->n.last_unmap_iova = iova;
	fd->n.last_unmap_len = len;
	if (fd->async_unmap)
		fd->n.async_pending = true;
	fake_dev_changed(fd);
	return fd->async_unmap ? VFU_ASYNC : 0;
}

static void fake_dev_dma_map(void *arg, uint64_t iova, uint64_t len, uint32_t prot)
{
	struct fake_dev *fd = arg;

	pthread_mutex_lock(&fd->lock);
	fd->n.dma_maps++;
	fake_dev_changed(fd);
}

const struct vfu_endpoint_ops fake_dev_ops = {
    .attach = fake_dev_attach,
    .detach = fake_dev_detach,
    .device_info = fake_dev_device_info,
    .region_info = fake_dev_region_info,
    .region_access = fake_dev_region_access,
    .irq_info = fake_dev_irq_info,
    .set_irqs = fake_dev_set_irqs,
    .reset = fake_dev_reset,
    .dma_unmap = fake_dev_dma_unmap,
    .dma_map = fake_dev_dma_map,
};

static void *fake_dev_thread(void *arg)
{
	struct fake_dev *fd = arg;

	evloop_run(fd->loop);
	return NULL;
}

/* Runs fn(fd, arg) on the loop thread and waits for it. */
struct fake_dev_call {
	struct fake_dev *fd;
	void (*fn)(struct fake_dev *fd, void *arg);
	void *arg;
	bool done;
};

static void fake_dev_call_msg(void *arg)
{
	struct fake_dev_call *call = arg;

	call->fn(call->fd, call->arg);
	pthread_mutex_lock(&call->fd->lock);
	call->done = true;
	fake_dev_changed(call->fd);
}

static void fake_dev_call(struct fake_dev *fd, void (*fn)(struct fake_dev *, void *), void *arg)
{
	struct fake_dev_call call = {.fd = fd, .fn = fn, .arg = arg};

	if (evloop_send_msg(fd->loop, fake_dev_call_msg, &call))
		abort();
	pthread_mutex_lock(&fd->lock);
	while (!call.done)
		pthread_cond_wait(&fd->cond, &fd->lock);
	pthread_mutex_unlock(&fd->lock);
}

struct fake_dev *fake_dev_start(const char *path)
{
	struct fake_dev *fd = calloc(1, sizeof(*fd));

	if (!fd)
		return NULL;
	pthread_mutex_init(&fd->lock, NULL);
	pthread_cond_init(&fd->cond, NULL);
	memset(fd->msix_fds, -1, sizeof(fd->msix_fds));
	fd->err_fd = -1;
	fd->bar0_fd = memfd_create("fake-bar0", MFD_CLOEXEC);
	if (fd->bar0_fd < 0 || ftruncate(fd->bar0_fd, FAKE_BAR0_SIZE) < 0)
		abort();
	fd->bar0 = mmap(NULL, FAKE_BAR0_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd->bar0_fd, 0);
	if (fd->bar0 == MAP_FAILED)
		abort();
	for (unsigned int i = 0; i < FAKE_CFG_SIZE; i++)
		fd->cfg[i] = (uint8_t)i;
	fd->loop = evloop_create();
	if (!fd->loop)
		abort();
	fd->ep = vfu_endpoint_create(fd->loop, path, NULL, &fake_dev_ops, fd);
	if (!fd->ep)
		abort();
	if (pthread_create(&fd->thread, NULL, fake_dev_thread, fd))
		abort();
	return fd;
}

static void fake_dev_stop_msg(struct fake_dev *fd, void *arg)
{
	/* The fake's detach is synchronous: the endpoint is idle right after. */
	vfu_endpoint_disconnect(fd->ep);
	if (vfu_endpoint_destroy(fd->ep))
		abort();
	fd->ep = NULL;
	evloop_stop(fd->loop);
}

void fake_dev_stop(struct fake_dev *fd)
{
	if (!fd)
		return;
	fake_dev_call(fd, fake_dev_stop_msg, NULL);
	pthread_join(fd->thread, NULL);
	evloop_destroy(fd->loop);
	fake_dev_close_irqs(fd, fd->msix_fds, FAKE_MSIX_COUNT);
	fake_dev_close_irqs(fd, &fd->err_fd, 1);
	munmap(fd->bar0, FAKE_BAR0_SIZE);
	close(fd->bar0_fd);
	pthread_cond_destroy(&fd->cond);
	pthread_mutex_destroy(&fd->lock);
	free(fd);
}

struct fake_dev_async_arg {
	bool reset, unmap, write;
};

static void fake_dev_set_async_msg(struct fake_dev *fd, void *arg)
{
	struct fake_dev_async_arg *a = arg;

	fd->async_reset = a->reset;
	fd->async_unmap = a->unmap;
	fd->async_write = a->write;
}

void fake_dev_set_async(struct fake_dev *fd, bool reset, bool unmap, bool write)
{
	struct fake_dev_async_arg a = {reset, unmap, write};

	fake_dev_call(fd, fake_dev_set_async_msg, &a);
}

static void fake_dev_inline_msg(struct fake_dev *fd, void *arg)
{
	fd->inline_resume = *(bool *)arg;
}

void fake_dev_set_inline_resume(struct fake_dev *fd, bool on)
{
	fake_dev_call(fd, fake_dev_inline_msg, &on);
}

static void fake_dev_resume_msg(struct fake_dev *fd, void *arg)
{
	pthread_mutex_lock(&fd->lock);
	fd->n.async_pending = false;
	pthread_mutex_unlock(&fd->lock);
	fd->in_call = true;
	vfu_endpoint_resume(fd->ep, *(int *)arg);
	fd->in_call = false;
}

void fake_dev_resume(struct fake_dev *fd, int status)
{
	fake_dev_call(fd, fake_dev_resume_msg, &status);
}

void fake_dev_counts(struct fake_dev *fd, struct fake_dev_counts *out)
{
	pthread_mutex_lock(&fd->lock);
	*out = fd->n;
	pthread_mutex_unlock(&fd->lock);
}

static void fake_dev_stats_msg(struct fake_dev *fd, void *arg)
{
	vfu_endpoint_get_stats(fd->ep, arg);
}

void fake_dev_stats(struct fake_dev *fd, struct vfu_endpoint_stats *st)
{
	fake_dev_call(fd, fake_dev_stats_msg, st);
}

static void fake_dev_windows_msg(struct fake_dev *fd, void *arg)
{
	*(uint32_t *)arg = vfu_dma_table_count(vfu_endpoint_dma(fd->ep));
}

uint32_t fake_dev_dma_windows(struct fake_dev *fd)
{
	uint32_t n;

	fake_dev_call(fd, fake_dev_windows_msg, &n);
	return n;
}

static void fake_dev_attached_msg(struct fake_dev *fd, void *arg)
{
	*(bool *)arg = vfu_endpoint_attached(fd->ep);
}

bool fake_dev_attached(struct fake_dev *fd)
{
	bool a;

	fake_dev_call(fd, fake_dev_attached_msg, &a);
	return a;
}

uint8_t *fake_dev_bar0(struct fake_dev *fd)
{
	return fd->bar0;
}

struct fake_dev_dma_arg {
	bool is_write;
	uint64_t iova, len;
	void *buf;
	int rc;
};

static void fake_dev_dma_done(int status, void *arg)
{
	struct fake_dev *fd = arg;

	pthread_mutex_lock(&fd->lock);
	if (fd->in_call)
		fd->n.reentered++;
	fd->n.dma_done++;
	fd->n.dma_status = status;
	fake_dev_changed(fd);
}

static void fake_dev_dma_msg(struct fake_dev *fd, void *arg)
{
	struct fake_dev_dma_arg *a = arg;

	fd->in_call = true;
	if (a->is_write)
		a->rc =
		    vfu_endpoint_dma_write(fd->ep, a->iova, a->buf, a->len, fake_dev_dma_done, fd);
	else
		a->rc =
		    vfu_endpoint_dma_read(fd->ep, a->iova, a->buf, a->len, fake_dev_dma_done, fd);
	fd->in_call = false;
}

int fake_dev_dma(struct fake_dev *fd, bool is_write, uint64_t iova, void *buf, uint64_t len)
{
	struct fake_dev_dma_arg a = {.is_write = is_write, .iova = iova, .len = len, .buf = buf};

	fake_dev_call(fd, fake_dev_dma_msg, &a);
	return a.rc;
}

bool fake_dev_wait(struct fake_dev *fd, bool (*pred)(const struct fake_dev_counts *, void *),
		   void *arg, int timeout_ms)
{
	struct timespec ts;
	bool ok;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += timeout_ms / 1000;
	ts.tv_nsec += (long)(timeout_ms % 1000) * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&fd->lock);
	while (!(ok = pred(&fd->n, arg)))
		if (pthread_cond_timedwait(&fd->cond, &fd->lock, &ts))
			break;
	ok = pred(&fd->n, arg);
	pthread_mutex_unlock(&fd->lock);
	return ok;
}

struct fake_dev_trigger_arg {
	uint32_t index, v;
	bool ok;
};

static void fake_dev_trigger_msg(struct fake_dev *fd, void *arg)
{
	struct fake_dev_trigger_arg *t = arg;
	int efd = -1;

	if (t->index == VFIO_PCI_MSIX_IRQ_INDEX && t->v < FAKE_MSIX_COUNT && !fd->msix_masked[t->v])
		efd = fd->msix_fds[t->v];
	else if (t->index == VFIO_PCI_ERR_IRQ_INDEX && t->v == 0)
		efd = fd->err_fd;
	t->ok = efd >= 0;
	fake_dev_signal(efd);
}

bool fake_dev_trigger(struct fake_dev *fd, uint32_t index, uint32_t v)
{
	struct fake_dev_trigger_arg t = {.index = index, .v = v};

	fake_dev_call(fd, fake_dev_trigger_msg, &t);
	return t.ok;
}

bool fake_dev_wait_disconnects(struct fake_dev *fd, uint64_t n, int timeout_ms)
{
	struct vfu_endpoint_stats st;
	struct timespec start, now;

	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		fake_dev_stats(fd, &st);
		if (st.disconnects >= n)
			return true;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if ((now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000 >
		    timeout_ms)
			return false;
	}
}

int fake_dev_count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	if (!d)
		return -1;
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

int fake_dev_fds_settle(int expect)
{
	int n = fake_dev_count_fds();

	for (int i = 0; i < 200 && n != expect; i++) {
		usleep(10000);
		n = fake_dev_count_fds();
	}
	return n;
}

static void fake_dev_disconnect_msg(struct fake_dev *fd, void *arg)
{
	vfu_endpoint_disconnect(fd->ep);
}

void fake_dev_disconnect(struct fake_dev *fd)
{
	fake_dev_call(fd, fake_dev_disconnect_msg, NULL);
}
