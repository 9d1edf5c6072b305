/* tests/perf/dpa_bench_hw.c - dpa-bench-hw: the dpa bench over the real hw/
 * device served on a vfio-user socket (its loop in a thread of this process)
 * and driven by the test client: trap = posted REGION_WRITEs through the
 * socket, mmap = stores into the client's mapping of the doorbell page. */
#include "tests/perf/dpa_bench.h"
#include "common/evloop.h"
#include "common/log.h"
#include "host/vfu_client.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#define HWB_DB_REGION 0x1000
#define HWB_WAIT_MS 5000

struct hwb {
	struct evloop *loop;
	pthread_t tid;
	bool running;
	struct hw_pci_type *type;
	struct hw_dev *dev;
	struct vfu_client *client;
	volatile uint32_t *page;
	char dir[64], sock[128];
	int rc;
};

static struct hwb hwb_state;

static int hwb_flr(struct hw_dev *dev, bool client_gone, void *arg)
{
	return 0; /* everything is destroyed before the client closes */
}

static const struct hw_dev_ops hwb_ops = {.flr = hwb_flr};

static void *hwb_loop_main(void *arg)
{
	evloop_run(((struct hwb *)arg)->loop);
	return NULL;
}

struct hwb_call {
	struct bench *b;
	void (*fn)(struct bench *b);
	int efd;
};

static void hwb_call_msg(void *arg)
{
	struct hwb_call *c = arg;
	uint64_t one = 1;

	c->fn(c->b);
	if (write(c->efd, &one, sizeof(one)) != sizeof(one))
		abort();
}

/* Runs fn on the device's loop thread (the control plane) and waits. */
static void hwb_call(struct bench *b, void (*fn)(struct bench *b))
{
	struct hwb *h = b->priv;
	struct hwb_call c = {.b = b, .fn = fn, .efd = eventfd(0, 0)};
	struct pollfd pfd = {.fd = c.efd, .events = POLLIN};

	if (c.efd < 0 || evloop_send_msg(h->loop, hwb_call_msg, &c) ||
	    poll(&pfd, 1, HWB_WAIT_MS) != 1)
		abort(); /* a late message would touch a dead stack frame */
	close(c.efd);
}

static void hwb_acquire(struct bench *b)
{
	struct hwb *h = b->priv;
	unsigned int i;

	h->rc = 0;
	b->ch = dpa_nvme_chan_create(b->dpa, -1, 4096);
	if (!b->ch) {
		h->rc = -errno;
		return;
	}
	for (i = 0; i < BENCH_DBS; i++) {
		b->db[i] = dpa_db_create(dpa_nvme_chan_db_comp(b->ch), h->dev, i);
		if (!b->db[i]) {
			h->rc = -errno;
			return;
		}
	}
}

static void hwb_release(struct bench *b)
{
	for (unsigned int i = 0; i < BENCH_DBS; i++) {
		if (b->db[i])
			dpa_db_destroy(b->db[i]);
		b->db[i] = NULL;
	}
	if (b->ch)
		dpa_nvme_chan_destroy(b->ch);
	b->ch = NULL;
}

static int hwb_create(struct bench *b)
{
	struct hw_pci_ids ids = {.vendor_id = 0x1b36, .device_id = 0x0010, .class_code = 0x010802};
	struct hw_dev_config cfg = {.vuid = "dpa-bench-0", .db_mode = b->mode};
	struct hwb *h = &hwb_state;
	struct vfu_client_region r;
	char err[256];
	int rc = 0;

	memset(h, 0, sizeof(*h));
	b->priv = h;
	snprintf(h->dir, sizeof(h->dir), "/tmp/dpa-bench-XXXXXX");
	if (!mkdtemp(h->dir))
		return -errno;
	snprintf(h->sock, sizeof(h->sock), "%.63s/sock", h->dir);
	cfg.socket_path = h->sock;
	h->loop = evloop_create();
	h->type = hw_pci_type_create("dpa-bench");
	if (!h->loop || !h->type)
		return -ENOMEM;
	rc |= hw_pci_type_set_ids(h->type, &ids);
	rc |= hw_pci_type_set_memory_bar(h->type, 0, 14, HW_BAR_MEM_64, false);
	rc |= hw_pci_type_set_num_msix(h->type, 8);
	rc |= hw_pci_type_add_stateful_region(h->type, 0, 0, 0x100);
	rc |= hw_pci_type_add_db_by_offset_region(h->type, 0, HWB_DB_REGION, 0x1000, 2, 2);
	rc |= hw_pci_type_add_msix_table_region(h->type, 0, 0x2000, 0x1000);
	rc |= hw_pci_type_add_msix_pba_region(h->type, 0, 0x3000, 0x1000);
	if (rc || hw_pci_type_start(h->type, hw_profile_find("unlimited"), err, sizeof(err)))
		return -EINVAL;
	h->dev = hw_dev_create(h->type, h->loop, &cfg, &hwb_ops, h);
	if (!h->dev || hw_dev_hotplug(h->dev))
		return -EIO;
	b->dpa = dpa_create(b->harts);
	if (!b->dpa)
		return -errno;
	if (pthread_create(&h->tid, NULL, hwb_loop_main, h))
		return -EAGAIN;
	h->running = true;
	h->client = vfu_client_connect(h->sock, HWB_WAIT_MS);
	if (!h->client || vfu_client_negotiate(h->client) ||
	    vfu_client_region_info(h->client, 0, &r))
		return -EIO;
	/* COMMAND: memory space and bus master, as a driver enables the function; without
	 * them the BAR (trapped doorbell writes included) is not decoded. */
	{
		uint16_t cmd = 0x6;

		if (vfu_client_region_write(h->client, VFIO_PCI_CONFIG_REGION_INDEX, 0x4, &cmd, 2,
					    false))
			return -EIO;
	}
	if (b->mode == HW_DB_MODE_MMAP) {
		h->page = vfu_client_region_ptr(h->client, 0, HWB_DB_REGION, 0x1000);
		if (!h->page)
			return -EIO;
	}
	hwb_call(b, hwb_acquire);
	return h->rc;
}

static void hwb_start_dbs_loop(struct bench *b)
{
	for (unsigned int i = 0; i < BENCH_DBS; i++)
		dpa_db_start(b->db[i]);
}

static void hwb_stop_dbs_loop(struct bench *b)
{
	for (unsigned int i = 0; i < BENCH_DBS; i++)
		if (b->db[i])
			dpa_db_stop(b->db[i]);
}

static void hwb_start_dbs(struct bench *b)
{
	hwb_call(b, hwb_start_dbs_loop);
}

static void hwb_stop_dbs(struct bench *b)
{
	hwb_call(b, hwb_stop_dbs_loop);
}

static void hwb_destroy(struct bench *b)
{
	struct hwb *h = b->priv;

	if (h->running) {
		hwb_call(b, hwb_release);
		vfu_client_close(h->client);
		evloop_stop(h->loop);
		pthread_join(h->tid, NULL);
	}
	if (b->dpa)
		dpa_destroy(b->dpa);
	/* Its FLR handler is synchronous: the unplug finishes at once. */
	if (h->dev && (hw_dev_hotunplug(h->dev) || hw_dev_destroy(h->dev)))
		fprintf(stderr, "dpa-bench-hw: device unplug/destroy failed\n");
	if (h->type)
		hw_pci_type_destroy(h->type);
	if (h->loop)
		evloop_destroy(h->loop);
	unlink(h->sock);
	rmdir(h->dir);
}

static void hwb_ring(struct bench *b, uint32_t id, uint32_t value)
{
	struct hwb *h = b->priv;

	if (h->page)
		h->page[id] = value;
	else
		vfu_client_region_write(h->client, 0, HWB_DB_REGION + 4 * id, &value, 4, true);
}

static const struct bench_env hw_env = {
    .name = "dpa-bench-hw",
    .description = "hw = the real hw/ device on a vfio-user socket, driven by the test "
		   "client: trap = posted REGION_WRITEs handled by the device loop thread; "
		   "mmap = stores into the client's mapping of the doorbell page.",
    .create = hwb_create,
    .start_dbs = hwb_start_dbs,
    .stop_dbs = hwb_stop_dbs,
    .destroy = hwb_destroy,
    .ring = hwb_ring,
};

int main(int argc, char **argv)
{
	log_set_level(LOG_LEVEL_WARN);
	return bench_main(&hw_env, argc, argv);
}
