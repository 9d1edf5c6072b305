/* tests/unit/vfu/batch_test.c - the endpoint's batching through the real socket, against the
 * fake device: REGION_WRITE_MULTI (negotiation, writes applied in order exactly as the
 * REGION_WRITEs they stand for, replies, every malformed message and write, asynchronous
 * writes holding the rest) and batched socket reads (many queued messages per recv, fds kept
 * with the message they came with, garbage, partial and oversized messages in a batch). */
#include "common/evloop.h"
#include "host/vfu_client.h"
#include "tests/unit/cunit_runner.h"
#include "tests/unit/vfu/fake_dev.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#define BAR2 2u
#define HDR sizeof(struct vfio_user_header)
#define ACC sizeof(struct vfio_user_region_access)
#define ENTRY sizeof(struct vfio_user_write_multi_entry)

static char sock_path[108];
static struct fake_dev *dev;
static struct vfu_client *cl;
static int path_seq;

/* QEMU's capabilities without write_multiple (an older client). */
static const char caps_no_multi[] =
    "{\"capabilities\": {\"pgsizes\": 4096, \"max_msg_fds\": 16, \"max_dma_maps\": 65535, "
    "\"max_data_xfer_size\": 1048576}}";

static void connect_client(const char *caps)
{
	cl = vfu_client_connect(sock_path, 5000);
	CU_ASSERT_PTR_NOT_NULL_FATAL(cl);
	CU_ASSERT_EQUAL_FATAL(vfu_client_version(cl, 0, 0, caps, NULL, 0), 0);
}

static void setup_caps(const char *caps)
{
	snprintf(sock_path, sizeof(sock_path), "/tmp/vfu-batch-test-%d-%d.sock", (int)getpid(),
		 path_seq++);
	dev = fake_dev_start(sock_path);
	CU_ASSERT_PTR_NOT_NULL_FATAL(dev);
	connect_client(caps);
}

static void setup(void)
{
	setup_caps(vfu_client_qemu_caps);
	CU_ASSERT_TRUE(vfu_client_write_multi_ok(cl));
}

static void teardown(void)
{
	vfu_client_close(cl);
	cl = NULL;
	fake_dev_stop(dev);
	dev = NULL;
}

static bool pred_detach(const struct fake_dev_counts *n, void *arg)
{
	return n->detach >= (int)(long)arg;
}

static bool pred_writes(const struct fake_dev_counts *n, void *arg)
{
	return n->writes >= (int)(long)arg && n->async_pending;
}

/* Appends one message to buf at *off. */
static void put_msg(uint8_t *buf, size_t *off, uint16_t id, uint16_t cmd, uint32_t flags,
		    const void *payload, size_t len)
{
	struct vfio_user_header h = {
	    .msg_id = id, .command = cmd, .msg_size = (uint32_t)(HDR + len), .flags = flags};

	memcpy(buf + *off, &h, HDR);
	if (len)
		memcpy(buf + *off + HDR, payload, len);
	*off += HDR + len;
}

/* A posted 4-byte REGION_WRITE of v at off of region. */
static void put_write(uint8_t *buf, size_t *off, uint16_t id, uint32_t region, uint64_t at,
		      uint32_t v)
{
	uint8_t p[ACC + 4];
	struct vfio_user_region_access a = {.offset = at, .region = region, .count = 4};

	memcpy(p, &a, ACC);
	memcpy(p + ACC, &v, 4);
	put_msg(buf, off, id, VFIO_USER_REGION_WRITE, VFIO_USER_F_NO_REPLY, p, sizeof(p));
}

static void put_read(uint8_t *buf, size_t *off, uint16_t id, uint32_t region, uint64_t at,
		     uint32_t count)
{
	struct vfio_user_region_access a = {.offset = at, .region = region, .count = count};

	put_msg(buf, off, id, VFIO_USER_REGION_READ, 0, &a, ACC);
}

/* The next message must be the reply to id; returns its error (0 or errno) and copies up to cap
 * bytes of payload. -1 if no such reply came. */
static int expect_reply(uint16_t id, void *payload, size_t cap, size_t *plen)
{
	struct vfio_user_header h;
	size_t len = 0;

	if (vfu_client_recv_msg(cl, &h, payload, cap, &len, NULL, NULL, 5000))
		return -1;
	if (h.msg_id != id || (h.flags & VFIO_USER_F_TYPE_MASK) != VFIO_USER_F_TYPE_REPLY)
		return -1;
	if (plen)
		*plen = len;
	return h.flags & VFIO_USER_F_ERROR ? (int)h.error_no : 0;
}

static uint32_t bar2_rd32(uint64_t at)
{
	uint32_t v = 0xffffffff;

	CU_ASSERT_EQUAL(vfu_client_region_read(cl, BAR2, at, &v, 4), 0);
	return v;
}

static struct vfu_client_write wr(uint32_t region, uint64_t at, uint32_t count, uint64_t v)
{
	struct vfu_client_write w = {.offset = at, .region = region, .count = count};

	memcpy(w.data, &v, sizeof(v));
	return w;
}

/* A WRITE_MULTI message with raw wr_cnt and n entries (hostile sizes). */
static int send_multi_raw(uint16_t id, uint32_t flags, uint64_t wr_cnt, size_t n, const int *fds,
			  size_t nfds)
{
	size_t len = 8 + n * ENTRY, off = 0;
	uint8_t *p = calloc(1, len), *buf = malloc(HDR + len);
	int rc;

	memcpy(p, &wr_cnt, 8);
	for (size_t i = 0; i < n; i++) {
		struct vfio_user_write_multi_entry e = {
		    .offset = 4 * i, .region = BAR2, .count = 4};

		memset(e.data, 0x5a, sizeof(e.data));
		memcpy(p + 8 + i * ENTRY, &e, ENTRY);
	}
	put_msg(buf, &off, id, VFIO_USER_REGION_WRITE_MULTI, flags, p, len);
	rc = vfu_client_send_raw(cl, buf, off, fds, nfds);
	free(p);
	free(buf);
	return rc;
}

/* ---------------------------------------------------------------------- */

static void test_version_offers_multi(void)
{
	char json[256];

	snprintf(sock_path, sizeof(sock_path), "/tmp/vfu-batch-test-%d-%d.sock", (int)getpid(),
		 path_seq++);
	dev = fake_dev_start(sock_path);
	CU_ASSERT_PTR_NOT_NULL_FATAL(dev);
	cl = vfu_client_connect(sock_path, 5000);
	CU_ASSERT_PTR_NOT_NULL_FATAL(cl);
	CU_ASSERT_EQUAL(vfu_client_version(cl, 0, 0, vfu_client_qemu_caps, json, sizeof(json)), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(json, "\"write_multiple\":true"));
	/* QEMU accepts a reply no larger than its own VERSION (214 bytes). */
	CU_ASSERT(4 + strlen(json) + 1 <= 214 - 16);
	teardown();
}

/* Writes of every size, in order (a later write to the same place wins), posted as QEMU sends
 * them; a read right behind sees them all. */
static void test_write_multi_posted(void)
{
	struct vfu_client_write w[6];
	struct vfu_endpoint_stats st;
	struct fake_dev_counts n;
	uint8_t b[8];

	setup();
	w[0] = wr(BAR2, 0x10, 4, 0x11111111);
	w[1] = wr(BAR2, 0x14, 4, 0x22222222);
	w[2] = wr(BAR2, 0x10, 4, 0x33333333); /* overwrites w[0]: order kept */
	w[3] = wr(BAR2, 0x20, 1, 0xab);
	w[4] = wr(BAR2, 0x22, 2, 0xcdef);
	w[5] = wr(BAR2, 0x28, 8, 0x0102030405060708ull);
	CU_ASSERT_EQUAL(vfu_client_region_write_multi(cl, w, 6, true), 0);
	CU_ASSERT_EQUAL(bar2_rd32(0x10), 0x33333333);
	CU_ASSERT_EQUAL(bar2_rd32(0x14), 0x22222222);
	CU_ASSERT_EQUAL(vfu_client_region_read(cl, BAR2, 0x20, b, 4), 0);
	CU_ASSERT_EQUAL(b[0], 0xab);
	CU_ASSERT_EQUAL(b[2] | b[3] << 8, 0xcdef);
	CU_ASSERT_EQUAL(vfu_client_region_read(cl, BAR2, 0x28, b, 8), 0);
	CU_ASSERT_EQUAL(b[0], 0x08);
	CU_ASSERT_EQUAL(b[7], 0x01);
	/* Other regions too: config space and the memfd-backed BAR0. */
	w[0] = wr(VFIO_PCI_CONFIG_REGION_INDEX, 0x40, 2, 0xbeef);
	w[1] = wr(0, 0x1008, 4, 0xfeedf00d);
	CU_ASSERT_EQUAL(vfu_client_region_write_multi(cl, w, 2, true), 0);
	CU_ASSERT_EQUAL(vfu_client_region_read(cl, VFIO_PCI_CONFIG_REGION_INDEX, 0x40, b, 2), 0);
	CU_ASSERT_EQUAL(b[0] | b[1] << 8, 0xbeef);
	CU_ASSERT_EQUAL(memcmp(fake_dev_bar0(dev) + 0x1008, &(uint32_t){0xfeedf00d}, 4), 0);
	fake_dev_counts(dev, &n);
	CU_ASSERT_EQUAL(n.writes, 8);
	fake_dev_stats(dev, &st);
	CU_ASSERT_EQUAL(st.write_multis, 2);
	CU_ASSERT_EQUAL(st.region_writes, 8);
	CU_ASSERT_EQUAL(st.posted_writes, 8);
	CU_ASSERT_EQUAL(st.errors_replied, 0);
	teardown();
}

/* Asked for a reply: wr_cnt, the writes done. The biggest batch we accept works. */
static void test_write_multi_reply(void)
{
	struct vfu_client_write *w = calloc(VFU_WRITE_MULTI_MAX, sizeof(*w));
	bool ok = true;

	setup();
	CU_ASSERT_EQUAL(
	    vfu_client_region_write_multi(
		cl, (struct vfu_client_write[]){wr(BAR2, 0, 4, 7), wr(BAR2, 4, 4, 9)}, 2, false),
	    0);
	CU_ASSERT_EQUAL(bar2_rd32(0), 7);
	CU_ASSERT_EQUAL(bar2_rd32(4), 9);
	for (uint32_t i = 0; i < VFU_WRITE_MULTI_MAX; i++)
		w[i] = wr(BAR2, (i % 64) * 4, 4, i);
	CU_ASSERT_EQUAL(vfu_client_region_write_multi(cl, w, VFU_WRITE_MULTI_MAX, false), 0);
	for (uint32_t i = 0; i < 64; i++)
		ok &= bar2_rd32(i * 4) == VFU_WRITE_MULTI_MAX - 64 + i;
	CU_ASSERT_TRUE(ok);
	free(w);
	teardown();
}

/* Malformed messages: EINVAL (nothing written), never a reply when posted, never a drop. */
static void test_write_multi_bad_message(void)
{
	struct fake_dev_counts n;
	struct vfu_endpoint_stats st;
	uint64_t huge = (1ull << 63) + 1;
	uint8_t one[8] = {0};
	int efd = eventfd(0, EFD_CLOEXEC), before;
	uint16_t id;

	setup();
	before = fake_dev_count_fds();
	/* wr_cnt above what the message holds, below it, zero, above the limit, overflowing. */
	CU_ASSERT_EQUAL(send_multi_raw(1, 0, 3, 2, NULL, 0), 0);
	CU_ASSERT_EQUAL(expect_reply(1, NULL, 0, NULL), EINVAL);
	CU_ASSERT_EQUAL(send_multi_raw(2, 0, 1, 2, NULL, 0), 0);
	CU_ASSERT_EQUAL(expect_reply(2, NULL, 0, NULL), EINVAL);
	CU_ASSERT_EQUAL(send_multi_raw(3, 0, 0, 0, NULL, 0), 0);
	CU_ASSERT_EQUAL(expect_reply(3, NULL, 0, NULL), EINVAL);
	CU_ASSERT_EQUAL(
	    send_multi_raw(4, 0, VFU_WRITE_MULTI_MAX + 1, VFU_WRITE_MULTI_MAX + 1, NULL, 0), 0);
	CU_ASSERT_EQUAL(expect_reply(4, NULL, 0, NULL), EINVAL);
	CU_ASSERT_EQUAL(send_multi_raw(5, 0, huge, 2, NULL, 0), 0);
	CU_ASSERT_EQUAL(expect_reply(5, NULL, 0, NULL), EINVAL);
	/* Shorter than wr_cnt itself. */
	{
		uint8_t buf[HDR + 4];
		size_t off = 0;

		put_msg(buf, &off, 6, VFIO_USER_REGION_WRITE_MULTI, 0, one, 4);
		CU_ASSERT_EQUAL(vfu_client_send_raw(cl, buf, off, NULL, 0), 0);
		CU_ASSERT_EQUAL(expect_reply(6, NULL, 0, NULL), EINVAL);
	}
	/* fds on it: it takes none (closed, not kept). */
	CU_ASSERT_EQUAL(send_multi_raw(7, 0, 2, 2, &efd, 1), 0);
	CU_ASSERT_EQUAL(expect_reply(7, NULL, 0, NULL), EINVAL);
	/* The same, posted: no reply at all; the read behind them answers first. */
	id = vfu_client_next_id(cl);
	CU_ASSERT_EQUAL(send_multi_raw(id, VFIO_USER_F_NO_REPLY, 3, 2, NULL, 0), 0);
	CU_ASSERT_EQUAL(send_multi_raw(id, VFIO_USER_F_NO_REPLY, 0, 0, NULL, 0), 0);
	CU_ASSERT_EQUAL(send_multi_raw(id, VFIO_USER_F_NO_REPLY, 2, 2, &efd, 1), 0);
	CU_ASSERT_EQUAL(bar2_rd32(0), 0);
	fake_dev_counts(dev, &n);
	CU_ASSERT_EQUAL(n.writes, 0);
	fake_dev_stats(dev, &st);
	CU_ASSERT_EQUAL(st.bad_messages, 10);
	CU_ASSERT_EQUAL(st.disconnects, 0);
	close(efd);
	/* Both fds the server got were closed. */
	CU_ASSERT_EQUAL(fake_dev_fds_settle(before - 1), before - 1);
	/* Still served. */
	CU_ASSERT_EQUAL(vfu_client_region_write_multi(
			    cl, (struct vfu_client_write[]){wr(BAR2, 0, 4, 1)}, 1, false),
			0);
	CU_ASSERT_EQUAL(bar2_rd32(0), 1);
	teardown();
}

/* A bad write fails alone, as the REGION_WRITE it stands for would: the good ones around it are
 * done, the reply (if asked for) is the first error. */
static void test_write_multi_bad_writes(void)
{
	struct vfu_client_write w[10];
	struct vfu_endpoint_stats st;
	struct fake_dev_counts n;

	setup();
	w[0] = wr(BAR2, 0x00, 4, 0xa0);
	w[1] = wr(BAR2, 0x04, 0, 0xa1);		  /* count 0 */
	w[2] = wr(BAR2, 0x08, 9, 0xa2);		  /* count above 8 */
	w[3] = wr(9, 0x0c, 4, 0xa3);		  /* no such region index */
	w[4] = wr(0xffffffff, 0x0c, 4, 0xa3);	  /* no such region index */
	w[5] = wr(1, 0, 4, 0xa5);		  /* absent region */
	w[6] = wr(BAR2, 0xfe, 4, 0xa6);		  /* straddles the end */
	w[7] = wr(BAR2, UINT64_MAX - 1, 4, 0xa7); /* offset + count wraps */
	w[8] = wr(BAR2, 0x100, 1, 0xa8);	  /* just past the end */
	w[9] = wr(BAR2, 0x0c, 4, 0xa9);
	CU_ASSERT_EQUAL(vfu_client_region_write_multi(cl, w, 10, false), -EINVAL);
	CU_ASSERT_EQUAL(bar2_rd32(0x00), 0xa0);
	CU_ASSERT_EQUAL(bar2_rd32(0x04), 0);
	CU_ASSERT_EQUAL(bar2_rd32(0x08), 0);
	CU_ASSERT_EQUAL(bar2_rd32(0x0c), 0xa9);
	CU_ASSERT_EQUAL(bar2_rd32(0xfc), 0);
	fake_dev_counts(dev, &n);
	CU_ASSERT_EQUAL(n.writes, 2);
	fake_dev_stats(dev, &st);
	CU_ASSERT_EQUAL(st.bad_messages, 8);
	CU_ASSERT_EQUAL(st.errors_replied, 8);
	CU_ASSERT_EQUAL(st.region_writes, 2);
	/* Posted: the same, without a reply. */
	w[0] = wr(BAR2, 0x00, 4, 0xb0);
	w[9] = wr(BAR2, 0x0c, 4, 0xb9);
	CU_ASSERT_EQUAL(vfu_client_region_write_multi(cl, w, 10, true), 0);
	CU_ASSERT_EQUAL(bar2_rd32(0x00), 0xb0);
	CU_ASSERT_EQUAL(bar2_rd32(0x0c), 0xb9);
	fake_dev_stats(dev, &st);
	CU_ASSERT_EQUAL(st.bad_messages, 16);
	CU_ASSERT_EQUAL(st.disconnects, 0);
	teardown();
}

/* A client that did not offer write_multiple gets what any unsupported command gets. */
static void test_write_multi_not_negotiated(void)
{
	struct fake_dev_counts n;
	uint64_t one = 0;

	setup_caps(caps_no_multi);
	CU_ASSERT_FALSE(vfu_client_write_multi_ok(cl));
	CU_ASSERT_EQUAL(send_multi_raw(1, 0, 1, 1, NULL, 0), 0);
	CU_ASSERT_EQUAL(expect_reply(1, NULL, 0, NULL), ENOSYS);
	CU_ASSERT_EQUAL(send_multi_raw(2, VFIO_USER_F_NO_REPLY, 1, 1, NULL, 0), 0);
	CU_ASSERT_EQUAL(
	    vfu_client_request(cl, 16, 0, &one, sizeof(one), NULL, 0, NULL, 0, NULL, NULL),
	    -ENOSYS);
	CU_ASSERT_EQUAL(bar2_rd32(0), 0);
	fake_dev_counts(dev, &n);
	CU_ASSERT_EQUAL(n.writes, 0);
	vfu_client_close(cl);
	CU_ASSERT_TRUE(fake_dev_wait(dev, pred_detach, (void *)1, 5000));
	/* "write_multiple": false is the same; a value that is not a boolean is refused. */
	connect_client("{\"capabilities\": {\"write_multiple\": false}}");
	CU_ASSERT_FALSE(vfu_client_write_multi_ok(cl));
	CU_ASSERT_EQUAL(send_multi_raw(3, 0, 1, 1, NULL, 0), 0);
	CU_ASSERT_EQUAL(expect_reply(3, NULL, 0, NULL), ENOSYS);
	vfu_client_close(cl);
	CU_ASSERT_TRUE(fake_dev_wait(dev, pred_detach, (void *)2, 5000));
	cl = vfu_client_connect(sock_path, 5000);
	CU_ASSERT_PTR_NOT_NULL_FATAL(cl);
	CU_ASSERT_EQUAL(
	    vfu_client_version(cl, 0, 0, "{\"capabilities\": {\"write_multiple\": 1}}", NULL, 0),
	    -EINVAL);
	CU_ASSERT_EQUAL(vfu_client_negotiate(cl), 0);
	CU_ASSERT_TRUE(vfu_client_write_multi_ok(cl));
	teardown();
}

/* An asynchronous write holds the rest of the batch and every message behind it (already in the
 * server's buffer: sent in the same send) until resumed; then they go on in order. */
static void test_write_multi_async(void)
{
	uint8_t buf[512], rd[ACC + 4];
	size_t off = 0, len;
	uint8_t p[8 + 3 * ENTRY];
	uint64_t cnt = 3;
	struct fake_dev_counts n;
	uint32_t v;

	setup();
	fake_dev_set_async(dev, false, false, true);
	memcpy(p, &cnt, 8);
	for (uint32_t i = 0; i < 3; i++) {
		struct vfio_user_write_multi_entry e = {.offset = 0x40, .region = BAR2, .count = 4};

		v = 0x100 + i;
		memset(e.data, 0, sizeof(e.data));
		memcpy(e.data, &v, 4);
		memcpy(p + 8 + i * ENTRY, &e, ENTRY);
	}
	put_msg(buf, &off, 1, VFIO_USER_REGION_WRITE_MULTI, VFIO_USER_F_NO_REPLY, p, sizeof(p));
	put_read(buf, &off, 2, BAR2, 0x40, 4);
	CU_ASSERT_EQUAL(vfu_client_send_raw(cl, buf, off, NULL, 0), 0);
	for (int i = 1; i <= 3; i++) {
		CU_ASSERT_TRUE(fake_dev_wait(dev, pred_writes, (void *)(long)i, 5000));
		fake_dev_counts(dev, &n);
		CU_ASSERT_EQUAL(n.writes, i);
		/* Nothing answered while a write is held. */
		CU_ASSERT_EQUAL(vfu_client_recv_msg(cl, &(struct vfio_user_header){0}, NULL, 0,
						    &len, NULL, NULL, 50),
				-ETIMEDOUT);
		fake_dev_resume(dev, i == 2 ? -EIO : 0);
	}
	CU_ASSERT_EQUAL(expect_reply(2, rd, sizeof(rd), &len), 0);
	memcpy(&v, rd + ACC, 4);
	CU_ASSERT_EQUAL(v, 0x102);
	{
		struct vfu_endpoint_stats st;

		fake_dev_stats(dev, &st);
		CU_ASSERT_EQUAL(st.errors_replied, 1); /* the write resumed with -EIO */
	}
	/* Asked for a reply: it carries the first error. */
	fake_dev_set_async(dev, false, false, false);
	CU_ASSERT_EQUAL(
	    vfu_client_region_write_multi(
		cl, (struct vfu_client_write[]){wr(BAR2, 0, 4, 1), wr(BAR2, 4, 4, 2)}, 2, false),
	    0);
	teardown();
}

/* 50 posted REGION_WRITEs and a read in one send: a few recv calls, not two per message, and
 * every write applied before the read. */
static void test_batched_reads(void)
{
	enum { N = 50 };
	uint8_t buf[(N + 1) * (HDR + ACC + 4)], rd[ACC + 4];
	struct vfu_endpoint_stats before, after;
	size_t off = 0, len;
	uint32_t v;

	setup();
	fake_dev_stats(dev, &before);
	for (uint32_t i = 0; i < N; i++)
		put_write(buf, &off, (uint16_t)(100 + i), BAR2, (i % 16) * 4, 1000 + i);
	put_read(buf, &off, 200, BAR2, 15 * 4, 4);
	CU_ASSERT_EQUAL(vfu_client_send_raw(cl, buf, off, NULL, 0), 0);
	CU_ASSERT_EQUAL(expect_reply(200, rd, sizeof(rd), &len), 0);
	memcpy(&v, rd + ACC, 4);
	CU_ASSERT_EQUAL(v, 1000 + 47);
	CU_ASSERT_EQUAL(bar2_rd32(0), 1000 + 48);
	fake_dev_stats(dev, &after);
	CU_ASSERT_EQUAL(after.msgs_rx - before.msgs_rx, N + 2);
	CU_ASSERT_EQUAL(after.posted_writes - before.posted_writes, N);
	printf("(%llu recv calls for %d messages) ",
	       (unsigned long long)(after.socket_reads - before.socket_reads), N + 2);
	/* One per message (or two) would be the unbatched reader. */
	CU_ASSERT(after.socket_reads - before.socket_reads <= 8);
	teardown();
}

static int sealed_memfd(size_t size)
{
	int fd = memfd_create("batch-test", MFD_CLOEXEC | MFD_ALLOW_SEALING);

	if (fd < 0 || ftruncate(fd, (off_t)size) || fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK)) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

/* Messages with fds among fd-less ones, each its own sendmsg, all queued before the server
 * reads: each message gets exactly its own fds, whatever the reads were. A posted write that
 * carries an fd is refused alone (the fd closed), the writes around it still apply. */
static void test_batched_fds(void)
{
	struct vfio_user_irq_set set = {.argsz = sizeof(set),
					.flags =
					    VFIO_IRQ_SET_DATA_EVENTFD | VFIO_IRQ_SET_ACTION_TRIGGER,
					.index = VFIO_PCI_MSIX_IRQ_INDEX,
					.start = 1,
					.count = 1};
	struct vfio_user_dma_map map = {.argsz = sizeof(map),
					.flags = VFIO_USER_DMA_READ_PROT | VFIO_USER_DMA_WRITE_PROT,
					.addr = 0x100000,
					.size = 0x10000};
	uint8_t buf[4096];
	int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK), mfd = sealed_memfd(0x10000), stray,
	    before;
	struct fake_dev_counts n;
	struct vfu_endpoint_stats st;
	uint64_t cnt = 0;
	size_t off;

	setup();
	CU_ASSERT_FATAL(efd >= 0 && mfd >= 0);
	stray = eventfd(0, EFD_CLOEXEC);
	before = fake_dev_count_fds();
	for (int round = 0; round < 3; round++) {
		off = 0;
		for (uint32_t i = 0; i < 10; i++)
			put_write(buf, &off, 0, BAR2, i * 4, round * 100 + i);
		CU_ASSERT_EQUAL(vfu_client_send_raw(cl, buf, off, NULL, 0), 0);
		off = 0;
		put_msg(buf, &off, (uint16_t)(10 * round + 1), VFIO_USER_DEVICE_SET_IRQS, 0, &set,
			sizeof(set));
		CU_ASSERT_EQUAL(vfu_client_send_raw(cl, buf, off, &efd, 1), 0);
		off = 0;
		put_write(buf, &off, 0, BAR2, 0x80, 0xdead); /* carries an fd: refused */
		CU_ASSERT_EQUAL(vfu_client_send_raw(cl, buf, off, &stray, 1), 0);
		off = 0;
		for (uint32_t i = 0; i < 5; i++)
			put_write(buf, &off, 0, BAR2, 0x40 + i * 4, round * 100 + 50 + i);
		CU_ASSERT_EQUAL(vfu_client_send_raw(cl, buf, off, NULL, 0), 0);
		off = 0;
		map.addr = 0x100000 + round * 0x100000ull;
		put_msg(buf, &off, (uint16_t)(10 * round + 2), VFIO_USER_DMA_MAP, 0, &map,
			sizeof(map));
		CU_ASSERT_EQUAL(vfu_client_send_raw(cl, buf, off, &mfd, 1), 0);
		off = 0;
		put_read(buf, &off, (uint16_t)(10 * round + 3), BAR2, 0x40 + 16, 4);
		CU_ASSERT_EQUAL(vfu_client_send_raw(cl, buf, off, NULL, 0), 0);
	}
	for (int round = 0; round < 3; round++) {
		uint8_t rd[ACC + 4];
		uint32_t v;

		CU_ASSERT_EQUAL(expect_reply((uint16_t)(10 * round + 1), NULL, 0, NULL), 0);
		CU_ASSERT_EQUAL(expect_reply((uint16_t)(10 * round + 2), NULL, 0, NULL), 0);
		CU_ASSERT_EQUAL(expect_reply((uint16_t)(10 * round + 3), rd, sizeof(rd), NULL), 0);
		memcpy(&v, rd + ACC, 4);
		CU_ASSERT_EQUAL(v, round * 100 + 54);
	}
	CU_ASSERT_EQUAL(bar2_rd32(0x24), 209);
	CU_ASSERT_EQUAL(bar2_rd32(0x80), 0);
	CU_ASSERT_EQUAL(fake_dev_dma_windows(dev), 3);
	fake_dev_counts(dev, &n);
	CU_ASSERT_EQUAL(n.set_irqs, 3);
	CU_ASSERT_EQUAL(n.fds_held, 1);
	/* The eventfd that SET_IRQS carried is the vector's. */
	CU_ASSERT_TRUE(fake_dev_trigger(dev, VFIO_PCI_MSIX_IRQ_INDEX, 1));
	CU_ASSERT_EQUAL(read(efd, &cnt, sizeof(cnt)), (ssize_t)sizeof(cnt));
	CU_ASSERT_EQUAL(cnt, 1);
	fake_dev_stats(dev, &st);
	CU_ASSERT_EQUAL(st.bad_messages, 3);
	CU_ASSERT_EQUAL(st.disconnects, 0);
	/* The vector's eventfd is the one fd kept; the stray ones were closed. */
	CU_ASSERT_EQUAL(fake_dev_fds_settle(before + 1), before + 1);
	close(efd);
	close(mfd);
	close(stray);
	teardown();
}

/* A client that packs two messages and fds into one sendmsg (QEMU never does): the fds go to
 * the last message that begins in the read (DESIGN.md), here a posted write, which refuses them;
 * the SET_IRQS before it has none (a de-assign). Nothing leaks, the connection goes on. */
static void test_batched_fds_packed(void)
{
	struct vfio_user_irq_set set = {.argsz = sizeof(set),
					.flags =
					    VFIO_IRQ_SET_DATA_EVENTFD | VFIO_IRQ_SET_ACTION_TRIGGER,
					.index = VFIO_PCI_MSIX_IRQ_INDEX,
					.start = 0,
					.count = 1};
	int efd = eventfd(0, EFD_CLOEXEC), before;
	struct vfu_endpoint_stats st;
	struct fake_dev_counts n;
	uint8_t buf[256];
	size_t off = 0;

	setup();
	before = fake_dev_count_fds();
	put_msg(buf, &off, 1, VFIO_USER_DEVICE_SET_IRQS, 0, &set, sizeof(set));
	put_write(buf, &off, 2, BAR2, 0x10, 0x5555);
	CU_ASSERT_EQUAL(vfu_client_send_raw(cl, buf, off, &efd, 1), 0);
	CU_ASSERT_EQUAL(expect_reply(1, NULL, 0, NULL), 0);
	CU_ASSERT_EQUAL(bar2_rd32(0x10), 0);
	fake_dev_counts(dev, &n);
	CU_ASSERT_EQUAL(n.fds_held, 0);
	fake_dev_stats(dev, &st);
	CU_ASSERT_EQUAL(st.bad_messages, 1);
	CU_ASSERT_EQUAL(st.disconnects, 0);
	CU_ASSERT_EQUAL(fake_dev_fds_settle(before), before);
	close(efd);
	teardown();
}

/* Hostile framing inside a batch: the complete messages before the bad one are handled, then
 * the client is dropped, and the next client is served. */
static void expect_batch_drop(const uint8_t *bad, size_t bad_len, bool close_after)
{
	uint8_t buf[4096];
	size_t off = 0;
	struct vfio_user_header h;
	size_t plen;

	for (uint32_t i = 0; i < 8; i++)
		put_write(buf, &off, 0, BAR2, i * 4, 0x700 + i);
	memcpy(buf + off, bad, bad_len);
	off += bad_len;
	CU_ASSERT_EQUAL(vfu_client_send_raw(cl, buf, off, NULL, 0), 0);
	if (close_after) {
		vfu_client_close(cl);
		cl = NULL;
	} else {
		CU_ASSERT_EQUAL(vfu_client_recv_msg(cl, &h, NULL, 0, &plen, NULL, NULL, 5000),
				-ECONNRESET);
		vfu_client_close(cl);
	}
	CU_ASSERT_TRUE(fake_dev_wait_disconnects(dev, 1, 5000));
	connect_client(vfu_client_qemu_caps);
	/* The writes before the bad message were applied. */
	CU_ASSERT_EQUAL(bar2_rd32(7 * 4), 0x707);
}

static void test_batched_hostile(void)
{
	struct vfio_user_header h = {.msg_id = 1, .command = VFIO_USER_DEVICE_GET_INFO};
	uint8_t bad[64] = {0};
	struct vfu_endpoint_stats st;

	/* Garbage after valid messages: a header too small. */
	setup();
	h.msg_size = 8;
	memcpy(bad, &h, sizeof(h));
	expect_batch_drop(bad, sizeof(h), false);
	fake_dev_stats(dev, &st);
	CU_ASSERT_EQUAL(st.bad_messages, 1);
	teardown();
	/* An oversized header. */
	setup();
	h.msg_size = VFU_MAX_MSG_SIZE + 1;
	memcpy(bad, &h, sizeof(h));
	expect_batch_drop(bad, sizeof(h), false);
	teardown();
	/* Neither command nor reply. */
	setup();
	h.msg_size = sizeof(h);
	h.flags = 7;
	memcpy(bad, &h, sizeof(h));
	expect_batch_drop(bad, sizeof(h), false);
	teardown();
	/* Half a header, then the client closes: a short read. */
	setup();
	expect_batch_drop(bad, 7, true);
	fake_dev_stats(dev, &st);
	CU_ASSERT_EQUAL(st.bad_messages, 1);
	teardown();
	/* A header whose body never comes, then the client closes. */
	setup();
	h.flags = 0;
	h.msg_size = 100;
	memcpy(bad, &h, sizeof(h));
	expect_batch_drop(bad, sizeof(h) + 20, true);
	fake_dev_stats(dev, &st);
	CU_ASSERT_EQUAL(st.bad_messages, 1);
	teardown();
}

/* A message larger than the receive chunk, sitting unaligned behind a small one, in one send
 * with more behind it: read whole (the buffer grows, then shrinks back), answered, and the
 * batch goes on. */
static void test_batched_large(void)
{
	size_t big = 200000, off = 0;
	uint8_t *buf = calloc(1, big + 4096), *p = calloc(1, ACC + big);
	struct vfio_user_region_access a = {.offset = 0, .region = BAR2, .count = (uint32_t)big};
	uint8_t cfg[ACC + 64];

	setup();
	put_write(buf, &off, 0, BAR2, 0, 0x1234); /* 36 bytes: what follows is unaligned */
	memcpy(p, &a, ACC);
	put_msg(buf, &off, 1, VFIO_USER_REGION_WRITE, 0, p, ACC + big); /* beyond BAR2 */
	a = (struct vfio_user_region_access){.offset = 0x40, .region = 7, .count = 64};
	memcpy(p, &a, ACC);
	memset(p + ACC, 0x77, 64);
	put_msg(buf, &off, 2, VFIO_USER_REGION_WRITE, 0, p, ACC + 64);
	put_read(buf, &off, 3, 7, 0x40, 64);
	CU_ASSERT_EQUAL(vfu_client_send_raw(cl, buf, off, NULL, 0), 0);
	CU_ASSERT_EQUAL(expect_reply(1, NULL, 0, NULL), EINVAL);
	CU_ASSERT_EQUAL(expect_reply(2, NULL, 0, NULL), 0);
	CU_ASSERT_EQUAL(expect_reply(3, cfg, sizeof(cfg), NULL), 0);
	CU_ASSERT_EQUAL(cfg[ACC], 0x77);
	CU_ASSERT_EQUAL(cfg[ACC + 63], 0x77);
	CU_ASSERT_EQUAL(bar2_rd32(0), 0x1234);
	free(buf);
	free(p);
	teardown();
}

CUNIT_SUITE(vfu_batch, NULL, NULL, {"version_offers_multi", test_version_offers_multi},
	    {"write_multi_posted", test_write_multi_posted},
	    {"write_multi_reply", test_write_multi_reply},
	    {"write_multi_bad_message", test_write_multi_bad_message},
	    {"write_multi_bad_writes", test_write_multi_bad_writes},
	    {"write_multi_not_negotiated", test_write_multi_not_negotiated},
	    {"write_multi_async", test_write_multi_async}, {"batched_reads", test_batched_reads},
	    {"batched_fds", test_batched_fds}, {"batched_fds_packed", test_batched_fds_packed},
	    {"batched_hostile", test_batched_hostile}, {"batched_large", test_batched_large})
