/* tests/unit/vfu/endpoint_test.c - the vfio-user endpoint driven by the test
 * client over a real socket, against the fake device on its loop thread:
 * negotiation, every command's success and error replies, NO_REPLY, region
 * info, SET_IRQS, DMA map/unmap, async hold/resume, server->client DMA,
 * disconnect and a second client. */
#include "common/evloop.h"
#include "host/vfu_client.h"
#include "tests/unit/cunit_runner.h"
#include "tests/unit/vfu/fake_dev.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

static char sock_path[108];
static struct fake_dev *dev;
static struct vfu_client *cl;
static int path_seq;

static void setup_raw(void)
{
	snprintf(sock_path, sizeof(sock_path), "/tmp/vfu-ep-test-%d-%d.sock", (int)getpid(),
		 path_seq++);
	dev = fake_dev_start(sock_path);
	CU_ASSERT_PTR_NOT_NULL_FATAL(dev);
	cl = vfu_client_connect(sock_path, 5000);
	CU_ASSERT_PTR_NOT_NULL_FATAL(cl);
}

static void setup(void)
{
	setup_raw();
	CU_ASSERT_EQUAL_FATAL(vfu_client_negotiate(cl), 0);
}

static void teardown(void)
{
	vfu_client_close(cl);
	cl = NULL;
	fake_dev_stop(dev);
	dev = NULL;
}

static bool pred_attach(const struct fake_dev_counts *n, void *arg)
{
	return n->attach >= (int)(long)arg;
}

static bool pred_detach(const struct fake_dev_counts *n, void *arg)
{
	return n->detach >= (int)(long)arg;
}

static bool pred_async(const struct fake_dev_counts *n, void *arg)
{
	return n->async_pending;
}

static bool pred_dma_done(const struct fake_dev_counts *n, void *arg)
{
	return n->dma_done >= (int)(long)arg;
}

/* A request with arbitrary payload; returns 0 or -errno of the reply. */
static int raw_request(uint16_t cmd, uint32_t flags, const void *p, size_t len, const int *fds,
		       size_t nfds)
{
	return vfu_client_request(cl, cmd, flags, p, len, fds, nfds, NULL, 0, NULL, NULL);
}

static int send_header(uint16_t id, uint16_t cmd, uint32_t size, uint32_t flags)
{
	struct vfio_user_header h = {
	    .msg_id = id, .command = cmd, .msg_size = size, .flags = flags};

	return vfu_client_send_raw(cl, &h, sizeof(h), NULL, 0);
}

/* ---------------------------------------------------------------------- */

static void test_negotiate_ok(void)
{
	char json[256];
	struct vfu_endpoint_stats st;

	setup_raw();
	CU_ASSERT_FALSE(fake_dev_attached(dev));
	CU_ASSERT_EQUAL(vfu_client_version(cl, 0, 0, vfu_client_qemu_caps, json, sizeof(json)), 0);
	CU_ASSERT_STRING_EQUAL(json, "{\"capabilities\":{\"max_msg_fds\":16,\"max_data_xfer_size\":"
				     "1048576,\"pgsizes\":4096,\"max_dma_maps\":256,"
				     "\"write_multiple\":true}}");
	CU_ASSERT_EQUAL(vfu_client_server_max_xfer(cl), 1u << 20);
	CU_ASSERT_TRUE(fake_dev_wait(dev, pred_attach, (void *)1, 5000));
	CU_ASSERT_TRUE(fake_dev_attached(dev));
	fake_dev_stats(dev, &st);
	CU_ASSERT_EQUAL(st.clients_attached, 1);
	CU_ASSERT_EQUAL(st.msgs_rx, 1);
	CU_ASSERT_EQUAL(st.msgs_tx, 1);
	teardown();
}

static void test_negotiate_bad(void)
{
	static const uint8_t no_nul[] = {0, 0, 0, 0, '{', '}'};
	struct vfio_user_device_info di = {.argsz = sizeof(di)};
	struct fake_dev_counts n;

	setup_raw();
	/* Anything before VERSION is refused. */
	CU_ASSERT_EQUAL(raw_request(VFIO_USER_DEVICE_GET_INFO, 0, &di, sizeof(di), NULL, 0),
			-EINVAL);
	CU_ASSERT_EQUAL(vfu_client_version(cl, 1, 0, vfu_client_qemu_caps, NULL, 0), -EINVAL);
	CU_ASSERT_EQUAL(vfu_client_version(cl, 0, 0, "{not json", NULL, 0), -EINVAL);
	CU_ASSERT_EQUAL(vfu_client_version(cl, 0, 0, "[1,2]", NULL, 0), -EINVAL);
	CU_ASSERT_EQUAL(vfu_client_version(cl, 0, 0, "{\"capabilities\":5}", NULL, 0), -EINVAL);
	CU_ASSERT_EQUAL(
	    vfu_client_version(cl, 0, 0, "{\"capabilities\":{\"max_msg_fds\":\"x\"}}", NULL, 0),
	    -EINVAL);
	CU_ASSERT_EQUAL(
	    vfu_client_version(cl, 0, 0, "{\"capabilities\":{\"pgsizes\":8192}}", NULL, 0),
	    -EINVAL);
	CU_ASSERT_EQUAL(
	    vfu_client_version(cl, 0, 0, "{\"capabilities\":{\"max_data_xfer_size\":0}}", NULL, 0),
	    -EINVAL);
	CU_ASSERT_EQUAL(raw_request(VFIO_USER_VERSION, 0, no_nul, sizeof(no_nul), NULL, 0),
			-EINVAL);
	CU_ASSERT_EQUAL(raw_request(VFIO_USER_VERSION, 0, no_nul, 2, NULL, 0), -EINVAL);
	fake_dev_counts(dev, &n);
	CU_ASSERT_EQUAL(n.attach, 0);
	/* Still usable: a good VERSION (minor 5 answered with 0), then no second. */
	CU_ASSERT_EQUAL(vfu_client_version(cl, 0, 5, "{}", NULL, 0), 0);
	CU_ASSERT_EQUAL(vfu_client_negotiate(cl), -EINVAL);
	CU_ASSERT_EQUAL(vfu_client_device_info(cl, &di), 0);
	teardown();
}

static void test_device_info(void)
{
	struct vfio_user_device_info di;
	uint32_t small[4] = {8, 0, 0, 0};

	setup();
	CU_ASSERT_EQUAL(vfu_client_device_info(cl, &di), 0);
	CU_ASSERT_EQUAL(di.argsz, 16);
	CU_ASSERT_EQUAL(di.flags, VFIO_DEVICE_FLAGS_RESET | VFIO_DEVICE_FLAGS_PCI);
	CU_ASSERT_EQUAL(di.num_regions, 9);
	CU_ASSERT_EQUAL(di.num_irqs, 5);
	CU_ASSERT_EQUAL(raw_request(VFIO_USER_DEVICE_GET_INFO, 0, small, sizeof(small), NULL, 0),
			-EINVAL);
	CU_ASSERT_EQUAL(raw_request(VFIO_USER_DEVICE_GET_INFO, 0, small, 8, NULL, 0), -EINVAL);
	teardown();
}

static void test_region_info(void)
{
	struct vfio_user_region_info ri = {.argsz = sizeof(ri), .index = 0}, rep;
	struct vfu_client_region r;
	size_t rlen;
	int fd;
	uint8_t *p;

	setup();
	/* Step one by hand: fixed part only, argsz = needed, no CAPS, no fd. */
	CU_ASSERT_EQUAL(vfu_client_request(cl, VFIO_USER_DEVICE_GET_REGION_INFO, 0, &ri, sizeof(ri),
					   NULL, 0, &rep, sizeof(rep), &rlen, &fd),
			0);
	CU_ASSERT_EQUAL(rlen, 32);
	CU_ASSERT_EQUAL(fd, -1);
	CU_ASSERT_EQUAL(rep.argsz, 64);
	CU_ASSERT_EQUAL(rep.size, FAKE_BAR0_SIZE);
	CU_ASSERT_FALSE(rep.flags & VFIO_REGION_INFO_FLAG_CAPS);
	CU_ASSERT_TRUE(rep.flags & VFIO_REGION_INFO_FLAG_MMAP);
	/* Both steps with the fd and the sparse area mapped. */
	CU_ASSERT_EQUAL(vfu_client_region_info(cl, 0, &r), 0);
	CU_ASSERT(r.fd >= 0);
	CU_ASSERT_TRUE(r.flags & VFIO_REGION_INFO_FLAG_CAPS);
	CU_ASSERT_EQUAL(r.nr_areas, 1);
	CU_ASSERT_EQUAL(r.areas[0].offset, 0x1000);
	CU_ASSERT_EQUAL(r.areas[0].size, 0x1000);
	p = vfu_client_region_ptr(cl, 0, 0x1004, 4);
	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	CU_ASSERT_PTR_NULL(vfu_client_region_ptr(cl, 0, 0xffc, 8));
	/* A store through the client's mapping lands in the device's memory. */
	p[0] = 0x5a;
	CU_ASSERT_EQUAL(fake_dev_bar0(dev)[0x1004], 0x5a);
	CU_ASSERT_EQUAL(vfu_client_region_info(cl, 7, &r), 0);
	CU_ASSERT_EQUAL(r.size, FAKE_CFG_SIZE);
	CU_ASSERT_EQUAL(r.fd, -1);
	CU_ASSERT_EQUAL(r.nr_areas, 0);
	CU_ASSERT_EQUAL(vfu_client_region_info(cl, 1, &r), 0);
	CU_ASSERT_EQUAL(r.size, 0);
	CU_ASSERT_EQUAL(vfu_client_region_info(cl, 9, &r), -EINVAL);
	ri.argsz = 16;
	CU_ASSERT_EQUAL(raw_request(VFIO_USER_DEVICE_GET_REGION_INFO, 0, &ri, sizeof(ri), NULL, 0),
			-EINVAL);
	CU_ASSERT_EQUAL(raw_request(VFIO_USER_DEVICE_GET_REGION_INFO, 0, &ri, 16, NULL, 0),
			-EINVAL);
	teardown();
}

static void test_region_rw(void)
{
	uint8_t *cfg = malloc(FAKE_CFG_SIZE), *big;
	uint32_t v = 0xdeadbeef, back = 0;
	bool ok = true;

	setup();
	CU_ASSERT_EQUAL(vfu_client_region_read(cl, 7, 0, cfg, FAKE_CFG_SIZE), 0);
	for (unsigned int i = 0; i < FAKE_CFG_SIZE; i++)
		ok &= cfg[i] == (uint8_t)i;
	CU_ASSERT_TRUE(ok);
	CU_ASSERT_EQUAL(vfu_client_region_write(cl, 2, 0xfc, &v, 4, false), 0);
	CU_ASSERT_EQUAL(vfu_client_region_read(cl, 2, 0xfc, &back, 4), 0);
	CU_ASSERT_EQUAL(back, 0xdeadbeef);
	CU_ASSERT_EQUAL(vfu_client_region_write(cl, 0, 0x10, &v, 4, false), 0);
	CU_ASSERT_EQUAL(memcmp(fake_dev_bar0(dev) + 0x10, &v, 4), 0);
	/* Bounds, absent regions, bad indices, zero and oversized counts. */
	CU_ASSERT_EQUAL(vfu_client_region_read(cl, 2, 0xfe, &back, 4), -EINVAL);
	CU_ASSERT_EQUAL(vfu_client_region_write(cl, 2, 0x100, &v, 1, false), -EINVAL);
	CU_ASSERT_EQUAL(vfu_client_region_read(cl, 2, UINT64_MAX - 1, &back, 4), -EINVAL);
	CU_ASSERT_EQUAL(vfu_client_region_read(cl, 1, 0, &back, 4), -EINVAL);
	CU_ASSERT_EQUAL(vfu_client_region_read(cl, 9, 0, &back, 4), -EINVAL);
	CU_ASSERT_EQUAL(vfu_client_region_read(cl, 0xffffffff, 0, &back, 4), -EINVAL);
	CU_ASSERT_EQUAL(vfu_client_region_read(cl, 2, 0, &back, 0), -EINVAL);
	big = calloc(1, (1u << 20) + 8);
	CU_ASSERT_EQUAL(vfu_client_region_read(cl, 7, 0, big, (1u << 20) + 8), -EINVAL);
	free(big);
	{
		/* Data shorter than count. */
		struct {
			struct vfio_user_region_access a;
			uint32_t d;
		} __attribute__((packed)) w = {{.offset = 0, .region = 2, .count = 8}, 1};

		CU_ASSERT_EQUAL(raw_request(VFIO_USER_REGION_WRITE, 0, &w, sizeof(w), NULL, 0),
				-EINVAL);
		CU_ASSERT_EQUAL(raw_request(VFIO_USER_REGION_READ, 0, &w, 8, NULL, 0), -EINVAL);
	}
	free(cfg);
	teardown();
}

static void test_no_reply(void)
{
	uint32_t v = 0x11223344, back = 0;
	struct vfio_user_device_info di = {.argsz = sizeof(di)};
	struct vfu_endpoint_stats st;

	setup();
	/* A posted write is applied before the read that follows it. */
	CU_ASSERT_EQUAL(vfu_client_region_write(cl, 2, 0x20, &v, 4, true), 0);
	CU_ASSERT_EQUAL(vfu_client_region_read(cl, 2, 0x20, &back, 4), 0);
	CU_ASSERT_EQUAL(back, v);
	/* Failing NO_REPLY requests get no error reply either: if they did,
	 * the next request would see a reply with the wrong id (-EPROTO). */
	CU_ASSERT_EQUAL(vfu_client_region_write(cl, 2, 0x200, &v, 4, true), 0);
	CU_ASSERT_EQUAL(raw_request(99, VFIO_USER_F_NO_REPLY, NULL, 0, NULL, 0), 0);
	CU_ASSERT_EQUAL(
	    raw_request(VFIO_USER_DEVICE_GET_INFO, VFIO_USER_F_NO_REPLY, &di, 4, NULL, 0), 0);
	CU_ASSERT_EQUAL(
	    raw_request(VFIO_USER_DEVICE_GET_INFO, VFIO_USER_F_NO_REPLY, &di, sizeof(di), NULL, 0),
	    0);
	CU_ASSERT_EQUAL(vfu_client_region_read(cl, 2, 0x20, &back, 4), 0);
	CU_ASSERT_EQUAL(vfu_client_device_info(cl, &di), 0);
	fake_dev_stats(dev, &st);
	CU_ASSERT_EQUAL(st.posted_writes, 1);
	CU_ASSERT_EQUAL(st.errors_replied, 3);
	CU_ASSERT_EQUAL(st.msgs_tx, 4); /* VERSION, 2 reads, GET_INFO */
	teardown();
}

static void test_irq_info(void)
{
	uint32_t flags, count;

	setup();
	CU_ASSERT_EQUAL(vfu_client_irq_info(cl, VFIO_PCI_MSIX_IRQ_INDEX, &flags, &count), 0);
	CU_ASSERT_EQUAL(flags, VFIO_IRQ_INFO_EVENTFD);
	CU_ASSERT_EQUAL(count, FAKE_MSIX_COUNT);
	CU_ASSERT_EQUAL(vfu_client_irq_info(cl, VFIO_PCI_ERR_IRQ_INDEX, &flags, &count), 0);
	CU_ASSERT_EQUAL(count, 1);
	CU_ASSERT_EQUAL(vfu_client_irq_info(cl, VFIO_PCI_INTX_IRQ_INDEX, &flags, &count), 0);
	CU_ASSERT_EQUAL(count, 0);
	CU_ASSERT_EQUAL(vfu_client_irq_info(cl, 5, &flags, &count), -EINVAL);
	teardown();
}

static void test_set_irqs(void)
{
	struct fake_dev_counts n;
	uint8_t bools[2] = {1, 0};

	setup();
	CU_ASSERT_EQUAL(vfu_client_irq_eventfds(cl, VFIO_PCI_MSIX_IRQ_INDEX, 0, FAKE_MSIX_COUNT),
			0);
	CU_ASSERT_EQUAL(vfu_client_irq_eventfds(cl, VFIO_PCI_ERR_IRQ_INDEX, 0, 1), 0);
	fake_dev_counts(dev, &n);
	CU_ASSERT_EQUAL(n.fds_held, FAKE_MSIX_COUNT + 1);
	/* Device raises vector 1: the client's eventfd fires. */
	CU_ASSERT_TRUE(fake_dev_trigger(dev, VFIO_PCI_MSIX_IRQ_INDEX, 1));
	CU_ASSERT_EQUAL(vfu_client_irq_wait(cl, VFIO_PCI_MSIX_IRQ_INDEX, 1, 5000), 1);
	CU_ASSERT_TRUE(fake_dev_trigger(dev, VFIO_PCI_ERR_IRQ_INDEX, 0));
	CU_ASSERT_EQUAL(vfu_client_irq_wait(cl, VFIO_PCI_ERR_IRQ_INDEX, 0, 5000), 1);
	/* Client-side trigger with DATA_NONE and DATA_BOOL. */
	CU_ASSERT_EQUAL(vfu_client_set_irqs(cl,
					    VFIO_IRQ_SET_DATA_NONE | VFIO_IRQ_SET_ACTION_TRIGGER,
					    VFIO_PCI_MSIX_IRQ_INDEX, 3, 1, NULL, 0, NULL),
			0);
	CU_ASSERT_EQUAL(vfu_client_irq_wait(cl, VFIO_PCI_MSIX_IRQ_INDEX, 3, 5000), 1);
	CU_ASSERT_EQUAL(vfu_client_set_irqs(cl,
					    VFIO_IRQ_SET_DATA_BOOL | VFIO_IRQ_SET_ACTION_TRIGGER,
					    VFIO_PCI_MSIX_IRQ_INDEX, 0, 2, NULL, 0, bools),
			0);
	CU_ASSERT_EQUAL(vfu_client_irq_wait(cl, VFIO_PCI_MSIX_IRQ_INDEX, 0, 5000), 1);
	CU_ASSERT_EQUAL(vfu_client_irq_wait(cl, VFIO_PCI_MSIX_IRQ_INDEX, 1, 0), 0);
	/* Mask / unmask. */
	CU_ASSERT_EQUAL(vfu_client_irq_mask(cl, VFIO_PCI_MSIX_IRQ_INDEX, 2, 1, true), 0);
	CU_ASSERT_FALSE(fake_dev_trigger(dev, VFIO_PCI_MSIX_IRQ_INDEX, 2));
	CU_ASSERT_EQUAL(vfu_client_irq_mask(cl, VFIO_PCI_MSIX_IRQ_INDEX, 2, 1, false), 0);
	CU_ASSERT_TRUE(fake_dev_trigger(dev, VFIO_PCI_MSIX_IRQ_INDEX, 2));
	CU_ASSERT_EQUAL(vfu_client_irq_wait(cl, VFIO_PCI_MSIX_IRQ_INDEX, 2, 5000), 1);
	/* QEMU's "enable with no vectors": 0x24 with no fd de-assigns. */
	CU_ASSERT_EQUAL(vfu_client_set_irqs(cl,
					    VFIO_IRQ_SET_DATA_EVENTFD | VFIO_IRQ_SET_ACTION_TRIGGER,
					    VFIO_PCI_MSIX_IRQ_INDEX, 0, 1, NULL, 0, NULL),
			0);
	fake_dev_counts(dev, &n);
	CU_ASSERT_EQUAL(n.fds_held, FAKE_MSIX_COUNT);
	/* Disable the index: 0x21 count 0. */
	CU_ASSERT_EQUAL(vfu_client_set_irqs(cl,
					    VFIO_IRQ_SET_DATA_NONE | VFIO_IRQ_SET_ACTION_TRIGGER,
					    VFIO_PCI_MSIX_IRQ_INDEX, 0, 0, NULL, 0, NULL),
			0);
	fake_dev_counts(dev, &n);
	CU_ASSERT_EQUAL(n.fds_held, 1);
	CU_ASSERT_FALSE(fake_dev_trigger(dev, VFIO_PCI_MSIX_IRQ_INDEX, 1));
	teardown();
}

static void test_set_irqs_invalid(void)
{
	uint32_t base = VFIO_IRQ_SET_ACTION_TRIGGER;
	uint8_t bools[4] = {0};
	struct vfio_user_device_info di = {.argsz = sizeof(di)};
	struct fake_dev_counts n;
	int efd[3], before;

	setup();
	for (int i = 0; i < 3; i++)
		efd[i] = eventfd(0, EFD_CLOEXEC);
	before = fake_dev_count_fds();
#define SET(flags, idx, start, count, fds, nfds, b)                                                \
	vfu_client_set_irqs(cl, flags, idx, start, count, fds, nfds, b)
	CU_ASSERT_EQUAL(
	    SET(VFIO_IRQ_SET_DATA_NONE | VFIO_IRQ_SET_DATA_BOOL | base, 2, 0, 1, NULL, 0, bools),
	    -EINVAL);
	CU_ASSERT_EQUAL(SET(VFIO_IRQ_SET_DATA_NONE, 2, 0, 1, NULL, 0, NULL), -EINVAL);
	CU_ASSERT_EQUAL(
	    SET(VFIO_IRQ_SET_DATA_NONE | base | VFIO_IRQ_SET_ACTION_MASK, 2, 0, 1, NULL, 0, NULL),
	    -EINVAL);
	CU_ASSERT_EQUAL(SET(VFIO_IRQ_SET_DATA_NONE | base | 0x40, 2, 0, 1, NULL, 0, NULL), -EINVAL);
	CU_ASSERT_EQUAL(SET(VFIO_IRQ_SET_DATA_NONE | base, 5, 0, 0, NULL, 0, NULL), -EINVAL);
	CU_ASSERT_EQUAL(SET(VFIO_IRQ_SET_DATA_NONE | base, 0, 0, 1, NULL, 0, NULL), -EINVAL);
	CU_ASSERT_EQUAL(SET(VFIO_IRQ_SET_DATA_NONE | base, 2, 3, 2, NULL, 0, NULL), -EINVAL);
	CU_ASSERT_EQUAL(SET(VFIO_IRQ_SET_DATA_NONE | base, 2, UINT32_MAX, 2, NULL, 0, NULL),
			-EINVAL);
	/* fd count must equal count (or be 0) for DATA_EVENTFD, and 0 otherwise. */
	CU_ASSERT_EQUAL(SET(VFIO_IRQ_SET_DATA_EVENTFD | base, 2, 0, 3, efd, 2, NULL), -EINVAL);
	CU_ASSERT_EQUAL(SET(VFIO_IRQ_SET_DATA_EVENTFD | base, 2, 0, 1, efd, 2, NULL), -EINVAL);
	CU_ASSERT_EQUAL(SET(VFIO_IRQ_SET_DATA_NONE | base, 2, 0, 1, efd, 1, NULL), -EINVAL);
	CU_ASSERT_EQUAL(SET(VFIO_IRQ_SET_DATA_EVENTFD | base, 2, 2, 3, efd, 3, NULL), -EINVAL);
	/* DATA_BOOL without its bytes. */
	CU_ASSERT_EQUAL(SET(VFIO_IRQ_SET_DATA_BOOL | base, 2, 0, 4, NULL, 0, NULL), -EINVAL);
	/* fds on commands that take none. */
	CU_ASSERT_EQUAL(raw_request(VFIO_USER_DEVICE_GET_INFO, 0, &di, sizeof(di), efd, 2),
			-EINVAL);
	CU_ASSERT_EQUAL(raw_request(VFIO_USER_DEVICE_RESET, 0, NULL, 0, efd, 1), -EINVAL);
	{
		struct vfio_user_irq_set s = {
		    .argsz = 8, .flags = VFIO_IRQ_SET_DATA_NONE | base, .index = 2, .count = 1};

		CU_ASSERT_EQUAL(raw_request(VFIO_USER_DEVICE_SET_IRQS, 0, &s, sizeof(s), NULL, 0),
				-EINVAL);
		CU_ASSERT_EQUAL(raw_request(VFIO_USER_DEVICE_SET_IRQS, 0, &s, 12, NULL, 0),
				-EINVAL);
	}
#undef SET
	/* One more round trip so the server has closed the last message's fds. */
	CU_ASSERT_EQUAL(vfu_client_device_info(cl, &di), 0);
	CU_ASSERT_EQUAL(fake_dev_fds_settle(before), before);
	fake_dev_counts(dev, &n);
	CU_ASSERT_EQUAL(n.set_irqs, 0);
	CU_ASSERT_EQUAL(n.fds_held, 0);
	/* A valid one passes ownership: the fake holds 2 fds, ours stay open. */
	CU_ASSERT_EQUAL(
	    vfu_client_set_irqs(cl, VFIO_IRQ_SET_DATA_EVENTFD | base, 2, 1, 2, efd, 2, NULL), 0);
	fake_dev_counts(dev, &n);
	CU_ASSERT_EQUAL(n.fds_held, 2);
	CU_ASSERT_EQUAL(fake_dev_fds_settle(before + 2), before + 2);
	for (int i = 0; i < 3; i++)
		close(efd[i]);
	teardown();
}

static void test_dma_map_unmap(void)
{
	struct fake_dev_counts n;
	int fd = memfd_create("x", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	char path[] = "/var/tmp/endpoint-test-XXXXXX";
	int disk = mkstemp(path);
	struct vfio_user_dma_unmap u = {
	    .argsz = sizeof(u), .flags = VFIO_USER_DMA_UNMAP_ALL, .addr = 0x1000};

	setup();
	CU_ASSERT_FATAL(fd >= 0 && !ftruncate(fd, 0x2000) &&
			!fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW));
	CU_ASSERT_FATAL(disk >= 0 && !unlink(path) && !ftruncate(disk, 0x2000));
	/* A file on disk (page faults would wait for its I/O in a device thread): refused. */
	CU_ASSERT_EQUAL(vfu_client_dma_map(cl, 0x200000, 0x2000, 3, disk, 0), -EPERM);
	close(disk);
	CU_ASSERT_EQUAL(vfu_client_ram_create(cl, 0, 1u << 20), 0);
	CU_ASSERT_EQUAL(vfu_client_map_msg_window(cl, 0x100000, 0x1000, 3), 0);
	CU_ASSERT_EQUAL(fake_dev_dma_windows(dev), 2);
	CU_ASSERT_EQUAL(vfu_client_dma_map(cl, 0xff000, 0x2000, 3, -1, 0), -EEXIST);
	CU_ASSERT_EQUAL(vfu_client_dma_map(cl, 0x200000, 0, 3, -1, 0), -EINVAL);
	CU_ASSERT_EQUAL(vfu_client_dma_map(cl, UINT64_MAX - 0xfff, 0x2000, 3, -1, 0), -EINVAL);
	CU_ASSERT_EQUAL(vfu_client_dma_map(cl, 0x200000, 0x1000, 0x7, -1, 0), -EINVAL);
	CU_ASSERT_EQUAL(vfu_client_dma_map(cl, 0x200000, 0x4000, 3, fd, 0), -EINVAL);
	{
		struct vfio_user_dma_map m = {
		    .argsz = sizeof(m), .flags = 3, .addr = 0x300000, .size = 0x1000};
		int two[2] = {fd, fd};

		CU_ASSERT_EQUAL(raw_request(VFIO_USER_DMA_MAP, 0, &m, sizeof(m), two, 2), -EINVAL);
		m.argsz = 16;
		CU_ASSERT_EQUAL(raw_request(VFIO_USER_DMA_MAP, 0, &m, sizeof(m), NULL, 0), -EINVAL);
		CU_ASSERT_EQUAL(raw_request(VFIO_USER_DMA_MAP, 0, &m, 20, NULL, 0), -EINVAL);
	}
	CU_ASSERT_EQUAL(vfu_client_dma_map(cl, 0x200000, 0x2000, 1, fd, 0), 0);
	CU_ASSERT_EQUAL(fake_dev_dma_windows(dev), 3);
	fake_dev_counts(dev, &n);
	CU_ASSERT_EQUAL(n.dma_maps, 3);
	/* Unmap must match exactly. */
	CU_ASSERT_EQUAL(vfu_client_dma_unmap(cl, 0x200000, 0x1000, 0), -ENOENT);
	CU_ASSERT_EQUAL(vfu_client_dma_unmap(cl, 0x201000, 0x1000, 0), -ENOENT);
	CU_ASSERT_EQUAL(vfu_client_dma_unmap(cl, 0x200000, 0x2000, 0x1), -EINVAL);
	{
		/* With the fd it was mapped with, as SPDK's vfio-user host sends it: taken and
		 * closed (no fd is kept); two fds are malformed. */
		struct vfio_user_dma_unmap one = {
		    .argsz = sizeof(one), .addr = 0x200000, .size = 0x2000};
		int two[2] = {fd, fd}, fds_before = fake_dev_count_fds();

		CU_ASSERT_EQUAL(raw_request(VFIO_USER_DMA_UNMAP, 0, &one, sizeof(one), two, 2),
				-EINVAL);
		CU_ASSERT_EQUAL(raw_request(VFIO_USER_DMA_UNMAP, 0, &one, sizeof(one), &fd, 1), 0);
		CU_ASSERT_EQUAL(vfu_client_dma_map(cl, 0x200000, 0x2000, 1, fd, 0), 0);
		CU_ASSERT_EQUAL(fake_dev_fds_settle(fds_before), fds_before);
	}
	CU_ASSERT_EQUAL(vfu_client_dma_unmap(cl, 0x200000, 0x2000, 0), 0);
	CU_ASSERT_EQUAL(vfu_client_dma_unmap(cl, 0x200000, 0x2000, 0), -ENOENT);
	fake_dev_counts(dev, &n);
	CU_ASSERT_EQUAL(n.dma_unmaps, 2);
	CU_ASSERT_EQUAL(n.last_unmap_iova, 0x200000);
	CU_ASSERT_EQUAL(n.last_unmap_len, 0x2000);
	/* UNMAP_ALL with a range is malformed; without, it empties the table. */
	CU_ASSERT_EQUAL(raw_request(VFIO_USER_DMA_UNMAP, 0, &u, sizeof(u), NULL, 0), -EINVAL);
	CU_ASSERT_EQUAL(vfu_client_dma_unmap(cl, 0, 0, VFIO_USER_DMA_UNMAP_ALL), 0);
	CU_ASSERT_EQUAL(fake_dev_dma_windows(dev), 0);
	fake_dev_counts(dev, &n);
	CU_ASSERT_EQUAL(n.dma_unmaps, 4);
	CU_ASSERT_PTR_NULL(vfu_client_ram_ptr(cl, 0, 1));
	close(fd);
	teardown();
}

static void test_async_reset(void)
{
	struct vfio_user_header h;
	struct fake_dev_counts n, m;
	struct vfio_user_device_info di = {.argsz = sizeof(di)};
	uint8_t msg[sizeof(h) + sizeof(di)];
	uint16_t id;
	size_t len;

	setup();
	fake_dev_set_async(dev, true, false, false);
	id = vfu_client_next_id(cl);
	/* RESET then GET_INFO pipelined, as QEMU may do. */
	CU_ASSERT_EQUAL(send_header(id, VFIO_USER_DEVICE_RESET, sizeof(h), 0), 0);
	h = (struct vfio_user_header){.msg_id = (uint16_t)(id + 1),
				      .command = VFIO_USER_DEVICE_GET_INFO,
				      .msg_size = sizeof(msg)};
	memcpy(msg, &h, sizeof(h));
	memcpy(msg + sizeof(h), &di, sizeof(di));
	CU_ASSERT_EQUAL(vfu_client_send_raw(cl, msg, sizeof(msg), NULL, 0), 0);
	CU_ASSERT_TRUE(fake_dev_wait(dev, pred_async, NULL, 5000));
	fake_dev_counts(dev, &n);
	/* Held: no reply, and the GET_INFO behind it is not handled. */
	CU_ASSERT_EQUAL(vfu_client_recv_msg(cl, &h, NULL, 0, &len, NULL, NULL, 200), -ETIMEDOUT);
	fake_dev_counts(dev, &m);
	CU_ASSERT_EQUAL(m.device_info, n.device_info);
	fake_dev_resume(dev, 0);
	CU_ASSERT_EQUAL(vfu_client_recv_msg(cl, &h, NULL, 0, &len, NULL, NULL, 5000), 0);
	CU_ASSERT_EQUAL(h.msg_id, id);
	CU_ASSERT_EQUAL(h.command, VFIO_USER_DEVICE_RESET);
	CU_ASSERT_EQUAL(h.flags, VFIO_USER_F_TYPE_REPLY);
	CU_ASSERT_EQUAL(h.msg_size, 16);
	CU_ASSERT_EQUAL(vfu_client_recv_msg(cl, &h, &di, sizeof(di), &len, NULL, NULL, 5000), 0);
	CU_ASSERT_EQUAL(h.msg_id, (uint16_t)(id + 1));
	CU_ASSERT_EQUAL(di.num_regions, 9);
	/* Completion with an error gives an error reply. */
	CU_ASSERT_EQUAL(send_header(0x7000, VFIO_USER_DEVICE_RESET, sizeof(h), 0), 0);
	CU_ASSERT_TRUE(fake_dev_wait(dev, pred_async, NULL, 5000));
	fake_dev_resume(dev, -EIO);
	CU_ASSERT_EQUAL(vfu_client_recv_msg(cl, &h, NULL, 0, &len, NULL, NULL, 5000), 0);
	CU_ASSERT_EQUAL(h.msg_id, 0x7000);
	CU_ASSERT_EQUAL(h.flags, VFIO_USER_F_TYPE_REPLY | VFIO_USER_F_ERROR);
	CU_ASSERT_EQUAL(h.error_no, EIO);
	/* A resume with nothing held is ignored. */
	fake_dev_resume(dev, 0);
	fake_dev_set_async(dev, false, false, false);
	CU_ASSERT_EQUAL(vfu_client_reset(cl), 0);
	/* Completed from inside the op, before it returned VFU_ASYNC. */
	fake_dev_set_inline_resume(dev, true);
	CU_ASSERT_EQUAL(vfu_client_reset(cl), 0);
	CU_ASSERT_EQUAL(vfu_client_device_info(cl, &di), 0);
	teardown();
}

static void test_async_unmap(void)
{
	struct vfio_user_dma_unmap u = {.argsz = sizeof(u), .addr = 0x10000, .size = 0x1000};
	uint8_t msg[sizeof(struct vfio_user_header) + sizeof(u)];
	struct vfio_user_header h = {
	    .msg_id = 0x100, .command = VFIO_USER_DMA_UNMAP, .msg_size = sizeof(msg)};
	size_t len;

	setup();
	CU_ASSERT_EQUAL(vfu_client_map_msg_window(cl, 0x10000, 0x1000, 3), 0);
	CU_ASSERT_EQUAL(vfu_client_map_msg_window(cl, 0x20000, 0x1000, 3), 0);
	CU_ASSERT_EQUAL(vfu_client_ram_create(cl, 0x40000, 0x4000), 0);
	fake_dev_set_async(dev, false, true, false);
	memcpy(msg, &h, sizeof(h));
	memcpy(msg + sizeof(h), &u, sizeof(u));
	CU_ASSERT_EQUAL(vfu_client_send_raw(cl, msg, sizeof(msg), NULL, 0), 0);
	CU_ASSERT_TRUE(fake_dev_wait(dev, pred_async, NULL, 5000));
	/* Out of the lookups at once (it stays mapped until the device is done); the reply
	 * waits for the device. */
	CU_ASSERT_EQUAL(fake_dev_dma_windows(dev), 2);
	CU_ASSERT_EQUAL(vfu_client_recv_msg(cl, &h, NULL, 0, &len, NULL, NULL, 100), -ETIMEDOUT);
	fake_dev_resume(dev, 0);
	CU_ASSERT_EQUAL(vfu_client_recv_msg(cl, &h, NULL, 0, &len, NULL, NULL, 5000), 0);
	CU_ASSERT_EQUAL(h.msg_id, 0x100);
	CU_ASSERT_EQUAL(h.flags, VFIO_USER_F_TYPE_REPLY);
	CU_ASSERT_EQUAL(fake_dev_dma_windows(dev), 2);
	/* UNMAP_ALL: one async step per window. */
	u = (struct vfio_user_dma_unmap){.argsz = sizeof(u), .flags = VFIO_USER_DMA_UNMAP_ALL};
	h = (struct vfio_user_header){
	    .msg_id = 0x101, .command = VFIO_USER_DMA_UNMAP, .msg_size = sizeof(msg)};
	memcpy(msg, &h, sizeof(h));
	memcpy(msg + sizeof(h), &u, sizeof(u));
	CU_ASSERT_EQUAL(vfu_client_send_raw(cl, msg, sizeof(msg), NULL, 0), 0);
	for (int i = 0; i < 2; i++) {
		CU_ASSERT_TRUE(fake_dev_wait(dev, pred_async, NULL, 5000));
		/* The window being unmapped has already left the lookups. */
		CU_ASSERT_EQUAL(fake_dev_dma_windows(dev), (uint32_t)(1 - i));
		fake_dev_resume(dev, 0);
	}
	CU_ASSERT_EQUAL(vfu_client_recv_msg(cl, &h, NULL, 0, &len, NULL, NULL, 5000), 0);
	CU_ASSERT_EQUAL(h.msg_id, 0x101);
	CU_ASSERT_EQUAL(h.flags, VFIO_USER_F_TYPE_REPLY);
	CU_ASSERT_EQUAL(fake_dev_dma_windows(dev), 0);
	teardown();
}

static void test_async_posted_write(void)
{
	uint32_t v = 0xa5a5a5a5, back = 0;
	size_t len;
	struct vfio_user_header h;

	setup();
	fake_dev_set_async(dev, false, false, true);
	CU_ASSERT_EQUAL(vfu_client_region_write(cl, 2, 0x40, &v, 4, true), 0);
	CU_ASSERT_TRUE(fake_dev_wait(dev, pred_async, NULL, 5000));
	fake_dev_set_async(dev, false, false, false);
	fake_dev_resume(dev, 0);
	/* Still no reply for the posted write: the next message is the read's. */
	CU_ASSERT_EQUAL(vfu_client_region_read(cl, 2, 0x40, &back, 4), 0);
	CU_ASSERT_EQUAL(back, v);
	CU_ASSERT_EQUAL(vfu_client_recv_msg(cl, &h, NULL, 0, &len, NULL, NULL, 0), -ETIMEDOUT);
	teardown();
}

/* Serves the server's DMA requests until `want` completions were seen. */
static bool serve_until(int want)
{
	struct fake_dev_counts n;

	for (int i = 0; i < 200; i++) {
		fake_dev_counts(dev, &n);
		if (n.dma_done >= want)
			return true;
		if (vfu_client_serve(cl, 50) < 0)
			return false;
	}
	return false;
}

static void test_server_dma(void)
{
	uint8_t *win, *buf = malloc(0x2000);
	struct fake_dev_counts n;
	struct vfu_client_stats cst;

	setup_raw();
	/* A small max_data_xfer_size makes the server chunk its requests. */
	CU_ASSERT_EQUAL_FATAL(vfu_client_version(cl, 0, 0,
						 "{\"capabilities\":{\"max_data_xfer_size\":4096}}",
						 NULL, 0),
			      0);
	CU_ASSERT_EQUAL(vfu_client_map_msg_window(cl, 0x100000, 0x3000, 3), 0);
	CU_ASSERT_EQUAL(vfu_client_map_msg_window(cl, 0x200000, 0x1000, 1), 0);
	win = vfu_client_ram_ptr(cl, 0x100000, 0x3000);
	CU_ASSERT_PTR_NOT_NULL_FATAL(win);
	for (int i = 0; i < 0x3000; i++)
		win[i] = (uint8_t)(i * 7);
	CU_ASSERT_EQUAL(fake_dev_dma(dev, false, 0x100010, buf, 0x2000), 0);
	CU_ASSERT_TRUE(serve_until(1));
	fake_dev_counts(dev, &n);
	CU_ASSERT_EQUAL(n.dma_status, 0);
	CU_ASSERT_EQUAL(memcmp(buf, win + 0x10, 0x2000), 0);
	vfu_client_get_stats(cl, &cst);
	CU_ASSERT_EQUAL(cst.dma_reads_served, 2); /* 0x2000 in chunks of 4 KiB */

	memset(buf, 0x3c, 0x1800);
	CU_ASSERT_EQUAL(fake_dev_dma(dev, true, 0x101100, buf, 0x1800), 0);
	CU_ASSERT_TRUE(serve_until(2));
	fake_dev_counts(dev, &n);
	CU_ASSERT_EQUAL(n.dma_status, 0);
	CU_ASSERT_EQUAL(memcmp(win + 0x1100, buf, 0x1800), 0);
	CU_ASSERT_EQUAL(win[0x10ff], (uint8_t)(0x10ff * 7));
	CU_ASSERT_EQUAL(win[0x2900], (uint8_t)(0x2900 * 7));

	/* Checked on submit: outside any window, permissions, zero length. */
	CU_ASSERT_EQUAL(fake_dev_dma(dev, false, 0x300000, buf, 16), -EFAULT);
	CU_ASSERT_EQUAL(fake_dev_dma(dev, false, 0x102ff0, buf, 0x20), -EFAULT);
	CU_ASSERT_EQUAL(fake_dev_dma(dev, true, 0x200000, buf, 16), -EPERM);
	CU_ASSERT_EQUAL(fake_dev_dma(dev, false, 0x200000, buf, 0), -EINVAL);
	/* The client refusing it (a window it does not know) -> -error. */
	CU_ASSERT_EQUAL(vfu_client_dma_map(cl, 0x400000, 0x1000, 3, -1, 0), 0);
	CU_ASSERT_EQUAL(fake_dev_dma(dev, false, 0x400000, buf, 16), 0);
	CU_ASSERT_TRUE(serve_until(3));
	fake_dev_counts(dev, &n);
	CU_ASSERT_EQUAL(n.dma_status, -ENODEV);
	/* Replies interleaved with the client's own requests are fine. */
	CU_ASSERT_EQUAL(fake_dev_dma(dev, false, 0x100000, buf, 0x100), 0);
	{
		struct vfio_user_device_info di;

		CU_ASSERT_EQUAL(vfu_client_device_info(cl, &di), 0);
	}
	CU_ASSERT_TRUE(serve_until(4));
	fake_dev_counts(dev, &n);
	CU_ASSERT_EQUAL(n.dma_status, 0);
	free(buf);
	teardown();
}

static void test_dma_fail_on_disconnect(void)
{
	uint8_t buf[64];
	struct fake_dev_counts n;

	setup();
	CU_ASSERT_EQUAL(vfu_client_map_msg_window(cl, 0x1000, 0x1000, 3), 0);
	CU_ASSERT_EQUAL(fake_dev_dma(dev, false, 0x1000, buf, sizeof(buf)), 0);
	vfu_client_close(cl);
	cl = NULL;
	CU_ASSERT_TRUE(fake_dev_wait(dev, pred_dma_done, (void *)1, 5000));
	fake_dev_counts(dev, &n);
	CU_ASSERT_EQUAL(n.dma_status, -ECONNRESET);
	CU_ASSERT_EQUAL(fake_dev_dma(dev, false, 0x1000, buf, sizeof(buf)), -ENOTCONN);
	teardown();
}

static void test_disconnect_and_reattach(void)
{
	struct fake_dev_counts n;
	struct vfu_endpoint_stats st;
	struct vfio_user_device_info di;
	int before;

	setup();
	before = fake_dev_count_fds();
	CU_ASSERT_EQUAL(vfu_client_ram_create(cl, 0, 0x10000), 0);
	CU_ASSERT_EQUAL(vfu_client_map_msg_window(cl, 0x100000, 0x1000, 3), 0);
	CU_ASSERT_EQUAL(vfu_client_irq_eventfds(cl, VFIO_PCI_MSIX_IRQ_INDEX, 0, 2), 0);
	CU_ASSERT_EQUAL(vfu_client_region_info(cl, 0, NULL), 0);
	vfu_client_close(cl);
	cl = NULL;
	CU_ASSERT_TRUE(fake_dev_wait(dev, pred_detach, (void *)1, 5000));
	CU_ASSERT_EQUAL(fake_dev_dma_windows(dev), 0);
	CU_ASSERT_FALSE(fake_dev_attached(dev));
	fake_dev_counts(dev, &n);
	CU_ASSERT_EQUAL(n.fds_held, 0);
	/* Every fd of the session is gone, with both ends of the socket. */
	CU_ASSERT_EQUAL(fake_dev_fds_settle(before - 2), before - 2);
	/* A new client attaches with a fresh handshake. */
	cl = vfu_client_connect(sock_path, 5000);
	CU_ASSERT_PTR_NOT_NULL_FATAL(cl);
	CU_ASSERT_EQUAL(vfu_client_device_info(cl, &di), -EINVAL); /* not negotiated yet */
	CU_ASSERT_EQUAL(vfu_client_negotiate(cl), 0);
	CU_ASSERT_EQUAL(vfu_client_device_info(cl, &di), 0);
	CU_ASSERT_TRUE(fake_dev_wait(dev, pred_attach, (void *)2, 5000));
	/* Device-side disconnect: the client sees EOF. */
	fake_dev_disconnect(dev);
	CU_ASSERT_TRUE(fake_dev_wait(dev, pred_detach, (void *)2, 5000));
	CU_ASSERT(vfu_client_device_info(cl, &di) < 0);
	fake_dev_stats(dev, &st);
	CU_ASSERT_EQUAL(st.disconnects, 2);
	CU_ASSERT_EQUAL(st.clients_attached, 2);
	teardown();
}

/* One client at a time: a second one waits in the backlog, unserved, without disturbing the
 * first; it is served as soon as the first has gone (a VMM reconnecting right after a hang-up
 * must not be refused because the server had not read the old socket's EOF yet). */
static void test_second_client_waits(void)
{
	struct vfu_client *c2;
	struct vfio_user_device_info di;

	setup();
	c2 = vfu_client_connect(sock_path, 5000);
	CU_ASSERT_PTR_NOT_NULL_FATAL(c2);
	vfu_client_set_timeout(c2, 200);
	CU_ASSERT_EQUAL(vfu_client_negotiate(c2), -ETIMEDOUT);
	CU_ASSERT_FALSE(vfu_client_eof(c2));
	CU_ASSERT_EQUAL(vfu_client_device_info(cl, &di), 0);
	CU_ASSERT_TRUE(fake_dev_attached(dev));
	vfu_client_close(c2);
	/* The first leaves: the next one is served. */
	vfu_client_close(cl);
	cl = vfu_client_connect(sock_path, 5000);
	CU_ASSERT_PTR_NOT_NULL_FATAL(cl);
	CU_ASSERT_EQUAL(vfu_client_negotiate(cl), 0);
	CU_ASSERT_EQUAL(vfu_client_device_info(cl, &di), 0);
	teardown();
}

static void test_unsupported_commands(void)
{
	/* 15 (REGION_WRITE_MULTI) is supported once negotiated: batch_test.c. */
	static const uint16_t cmds[] = {6, 11, 12, 14, 16, 17, 18, 99, 0, 0xffff};

	setup();
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		CU_ASSERT_EQUAL(raw_request(cmds[i], 0, "abcd", 4, NULL, 0), -ENOSYS);
	CU_ASSERT_EQUAL(vfu_client_reset(cl), 0);
	teardown();
}

/* Sends bytes that must make the server drop us; checks it did. */
static void expect_drop(const void *bytes, size_t len)
{
	struct vfio_user_header h;
	size_t plen;
	struct vfu_endpoint_stats before, after;

	setup();
	fake_dev_stats(dev, &before);
	CU_ASSERT_EQUAL(vfu_client_send_raw(cl, bytes, len, NULL, 0), 0);
	CU_ASSERT_EQUAL(vfu_client_recv_msg(cl, &h, NULL, 0, &plen, NULL, NULL, 5000), -ECONNRESET);
	CU_ASSERT_TRUE(fake_dev_wait(dev, pred_detach, (void *)1, 5000));
	fake_dev_stats(dev, &after);
	CU_ASSERT_EQUAL(after.bad_messages, before.bad_messages + 1);
	CU_ASSERT_EQUAL(after.disconnects, before.disconnects + 1);
	teardown();
}

static void test_framing_drops(void)
{
	struct vfio_user_header h = {.msg_id = 1, .command = VFIO_USER_DEVICE_GET_INFO};
	uint8_t part[sizeof(h) + 4] = {0};

	h.msg_size = 8;
	expect_drop(&h, sizeof(h));
	h.msg_size = VFU_MAX_MSG_SIZE + 1;
	expect_drop(&h, sizeof(h));
	/* A reply to nothing we sent. */
	h.msg_size = sizeof(h);
	h.flags = VFIO_USER_F_TYPE_REPLY;
	expect_drop(&h, sizeof(h));
	/* Neither command nor reply. */
	h.flags = 2;
	expect_drop(&h, sizeof(h));
	/* Short read: the body never comes, the client closes. */
	setup();
	h.flags = 0;
	h.msg_size = 100;
	memcpy(part, &h, sizeof(h));
	CU_ASSERT_EQUAL(vfu_client_send_raw(cl, part, sizeof(part), NULL, 0), 0);
	vfu_client_close(cl);
	cl = NULL;
	CU_ASSERT_TRUE(fake_dev_wait(dev, pred_detach, (void *)1, 5000));
	{
		struct vfu_endpoint_stats st;

		fake_dev_stats(dev, &st);
		CU_ASSERT_EQUAL(st.bad_messages, 1);
	}
	teardown();
}

static void test_partial_messages(void)
{
	struct vfio_user_device_info di = {.argsz = sizeof(di)};
	struct vfio_user_header h = {.msg_id = 0x42,
				     .command = VFIO_USER_DEVICE_GET_INFO,
				     .msg_size = sizeof(h) + sizeof(di)};
	uint8_t msg[sizeof(h) + sizeof(di)];
	size_t len;

	setup();
	memcpy(msg, &h, sizeof(h));
	memcpy(msg + sizeof(h), &di, sizeof(di));
	/* Byte by byte: the server buffers across wakeups. */
	for (size_t i = 0; i < sizeof(msg); i++)
		CU_ASSERT_EQUAL(vfu_client_send_raw(cl, msg + i, 1, NULL, 0), 0);
	memset(&di, 0, sizeof(di));
	CU_ASSERT_EQUAL(vfu_client_recv_msg(cl, &h, &di, sizeof(di), &len, NULL, NULL, 5000), 0);
	CU_ASSERT_EQUAL(h.msg_id, 0x42);
	CU_ASSERT_EQUAL(len, sizeof(di));
	CU_ASSERT_EQUAL(di.num_regions, 9);
	teardown();
}

static void test_too_many_fds(void)
{
	struct vfio_user_irq_set set = {.argsz = sizeof(set),
					.flags =
					    VFIO_IRQ_SET_DATA_EVENTFD | VFIO_IRQ_SET_ACTION_TRIGGER,
					.index = 2,
					.count = 17};
	uint8_t msg[sizeof(struct vfio_user_header) + sizeof(set)];
	struct vfio_user_header h = {
	    .msg_id = 9, .command = VFIO_USER_DEVICE_SET_IRQS, .msg_size = sizeof(msg)};
	struct vfu_endpoint_stats st;
	int fds[17], before;
	size_t len;

	setup();
	before = fake_dev_count_fds();
	for (int i = 0; i < 17; i++)
		fds[i] = eventfd(0, EFD_CLOEXEC);
	memcpy(msg, &h, sizeof(h));
	memcpy(msg + sizeof(h), &set, sizeof(set));
	/* More than max_msg_fds: the kernel truncates, the server drops us. */
	CU_ASSERT_EQUAL(vfu_client_send_raw(cl, msg, sizeof(msg), fds, 17), 0);
	CU_ASSERT_EQUAL(vfu_client_recv_msg(cl, &h, NULL, 0, &len, NULL, NULL, 5000), -ECONNRESET);
	CU_ASSERT_TRUE(fake_dev_wait(dev, pred_detach, (void *)1, 5000));
	fake_dev_stats(dev, &st);
	CU_ASSERT_EQUAL(st.bad_messages, 1);
	for (int i = 0; i < 17; i++)
		close(fds[i]);
	/* Nothing kept on the server side; our end of the socket is still open. */
	CU_ASSERT_EQUAL(fake_dev_fds_settle(before - 1), before - 1);
	teardown();
}

/* Many big replies the client does not read at first: the server queues
 * what the socket does not take, stops reading at its high-water mark and
 * flushes on EPOLLOUT; every reply arrives whole and in order. */
static void test_backpressure(void)
{
	enum { N = 3000 };
	struct vfio_user_region_access a = {.offset = 0, .region = 7, .count = FAKE_CFG_SIZE};
	size_t one = sizeof(struct vfio_user_header) + sizeof(a);
	uint8_t *msgs = malloc(N * one), *data = malloc(sizeof(a) + FAKE_CFG_SIZE);
	struct vfio_user_header h;
	int bad = 0;

	setup();
	for (int i = 0; i < N; i++) {
		h = (struct vfio_user_header){
		    .msg_id = (uint16_t)i, .command = VFIO_USER_REGION_READ, .msg_size = one};
		memcpy(msgs + i * one, &h, sizeof(h));
		memcpy(msgs + i * one + sizeof(h), &a, sizeof(a));
	}
	/* One write of all requests (96 KB) fits the socket without blocking,
	 * while the 12 MB of replies do not. */
	CU_ASSERT_EQUAL_FATAL(vfu_client_send_raw(cl, msgs, N * one, NULL, 0), 0);
	for (int i = 0; i < N; i++) {
		size_t len;

		if (vfu_client_recv_msg(cl, &h, data, sizeof(a) + FAKE_CFG_SIZE, &len, NULL, NULL,
					5000) ||
		    h.msg_id != (uint16_t)i || len != sizeof(a) + FAKE_CFG_SIZE ||
		    data[sizeof(a) + 100] != 100)
			bad++;
	}
	CU_ASSERT_EQUAL(bad, 0);
	free(msgs);
	free(data);
	teardown();
}

/* A send that fails inside vfu_endpoint_resume or _dma_read (the client shut
 * its reading side) drops the client later, from the loop: detach and the
 * DMA callback never run inside the device's own call. */
static void test_drop_not_reentrant(void)
{
	struct fake_dev_counts n;
	uint8_t buf[16];

	setup();
	fake_dev_set_async(dev, true, false, false);
	CU_ASSERT_EQUAL(send_header(5, VFIO_USER_DEVICE_RESET, sizeof(struct vfio_user_header), 0),
			0);
	CU_ASSERT_TRUE(fake_dev_wait(dev, pred_async, NULL, 5000));
	CU_ASSERT_EQUAL(shutdown(vfu_client_fd(cl), SHUT_RD), 0);
	fake_dev_resume(dev, 0);
	CU_ASSERT_TRUE(fake_dev_wait(dev, pred_detach, (void *)1, 5000));
	fake_dev_counts(dev, &n);
	CU_ASSERT_EQUAL(n.reentered, 0);
	vfu_client_close(cl);

	cl = vfu_client_connect(sock_path, 5000);
	CU_ASSERT_PTR_NOT_NULL_FATAL(cl);
	CU_ASSERT_EQUAL_FATAL(vfu_client_negotiate(cl), 0);
	CU_ASSERT_EQUAL(vfu_client_map_msg_window(cl, 0x1000, 0x1000, 3), 0);
	CU_ASSERT_EQUAL(shutdown(vfu_client_fd(cl), SHUT_RD), 0);
	CU_ASSERT_EQUAL(fake_dev_dma(dev, false, 0x1000, buf, sizeof(buf)), 0);
	CU_ASSERT_TRUE(fake_dev_wait(dev, pred_dma_done, (void *)1, 5000));
	CU_ASSERT_TRUE(fake_dev_wait(dev, pred_detach, (void *)2, 5000));
	fake_dev_counts(dev, &n);
	CU_ASSERT_EQUAL(n.dma_status, -ECONNRESET);
	CU_ASSERT_EQUAL(n.reentered, 0);
	teardown();
}

static const struct vfu_endpoint_ops null_ops;

static void test_socket_file(void)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct evloop *loop = evloop_create();
	struct vfu_endpoint *ep;
	struct stat st;
	int s, f;

	CU_ASSERT_PTR_NOT_NULL_FATAL(loop);
	snprintf(sock_path, sizeof(sock_path), "/tmp/vfu-ep-test-%d-file.sock", (int)getpid());
	/* A leftover socket file is replaced. */
	strcpy(sa.sun_path, sock_path);
	s = socket(AF_UNIX, SOCK_STREAM, 0);
	CU_ASSERT_EQUAL(bind(s, (struct sockaddr *)&sa, sizeof(sa)), 0);
	close(s);
	dev = fake_dev_start(sock_path);
	CU_ASSERT_PTR_NOT_NULL_FATAL(dev);
	CU_ASSERT_EQUAL(stat(sock_path, &st), 0);
	CU_ASSERT_EQUAL(st.st_mode & 0777, 0600);
	fake_dev_stop(dev);
	dev = NULL;
	CU_ASSERT_EQUAL(stat(sock_path, &st), -1); /* unlinked on destroy */
	/* Anything else at the path is left alone. */
	f = open(sock_path, O_CREAT | O_WRONLY, 0644);
	CU_ASSERT(f >= 0);
	close(f);
	errno = 0;
	CU_ASSERT_PTR_NULL(vfu_endpoint_create(loop, sock_path, NULL, &fake_dev_ops, NULL));
	CU_ASSERT_EQUAL(errno, EEXIST);
	CU_ASSERT_EQUAL(stat(sock_path, &st), 0);
	CU_ASSERT_TRUE(S_ISREG(st.st_mode));
	unlink(sock_path);
	/* Required ops missing; a path too long for sun_path. */
	errno = 0;
	CU_ASSERT_PTR_NULL(vfu_endpoint_create(loop, sock_path, NULL, &null_ops, NULL));
	CU_ASSERT_EQUAL(errno, EINVAL);
	{
		char longp[200];

		memset(longp, 'a', sizeof(longp) - 1);
		longp[sizeof(longp) - 1] = 0;
		CU_ASSERT_PTR_NULL(vfu_endpoint_create(loop, longp, NULL, &fake_dev_ops, NULL));
		CU_ASSERT_EQUAL(errno, ENAMETOOLONG);
	}
	/* A custom mode is applied. */
	ep = vfu_endpoint_create(loop, sock_path, &(struct vfu_endpoint_config){.mode = 0660},
				 &fake_dev_ops, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(ep);
	CU_ASSERT_EQUAL(stat(sock_path, &st), 0);
	CU_ASSERT_EQUAL(st.st_mode & 0777, 0660);
	vfu_endpoint_destroy(ep);
	evloop_destroy(loop);
}

CUNIT_SUITE(vfu_endpoint, NULL, NULL, {"negotiate_ok", test_negotiate_ok},
	    {"negotiate_bad", test_negotiate_bad}, {"device_info", test_device_info},
	    {"region_info", test_region_info}, {"region_rw", test_region_rw},
	    {"no_reply", test_no_reply}, {"irq_info", test_irq_info}, {"set_irqs", test_set_irqs},
	    {"set_irqs_invalid", test_set_irqs_invalid}, {"dma_map_unmap", test_dma_map_unmap},
	    {"async_reset", test_async_reset}, {"async_unmap", test_async_unmap},
	    {"async_posted_write", test_async_posted_write}, {"server_dma", test_server_dma},
	    {"dma_fail_on_disconnect", test_dma_fail_on_disconnect},
	    {"disconnect_and_reattach", test_disconnect_and_reattach},
	    {"second_client_waits", test_second_client_waits},
	    {"unsupported_commands", test_unsupported_commands},
	    {"framing_drops", test_framing_drops}, {"partial_messages", test_partial_messages},
	    {"too_many_fds", test_too_many_fds}, {"backpressure", test_backpressure},
	    {"drop_not_reentrant", test_drop_not_reentrant}, {"socket_file", test_socket_file})
