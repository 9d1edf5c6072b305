/* tests/integration/write_multi_test.c - batched submission through the real vfio-user socket of
 * the nvme-emu daemon with trapped doorbells:
 * - I/O driven only by REGION_WRITE_MULTI doorbells (the SQ tails and CQ heads of two queues per
 *   round in one message), data written and read back verified;
 * - 50 doorbell REGION_WRITEs queued in one send (the server parses many per recv), each one a
 *   tail step, then a register read: every command completes;
 * - hostile REGION_WRITE_MULTI messages and writes (sizes, counts, regions, offsets, fds) get
 *   EINVAL (nothing when posted), I/O on the same connection goes on, and a client that did not
 *   offer write_multiple gets ENOSYS; the daemon then serves another client;
 * - with mmap doorbells there is nothing to coalesce (the host refuses). */
#include "controller/nvme_spec.h"
#include "host/vfu_client.h"
#include "tests/integration/nvme_itest.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#define CHECK ITEST_CHECK
#define DEPTH 64
#define NBUF 16
#define BAR0 0u
#define DB_BASE 0x1000u
#define NVME_CSTS 0x1c

static const char *const wm_args[] = {"--malloc", "16M",	  "--doorbells", "trap",
				      "--serial", "ITEST-WMULTI", NULL};

struct wm {
	struct nvme_itest t;
	uint64_t iova[NBUF];
	uint8_t *buf[NBUF];
};

static bool wm_setup_host(struct wm *m)
{
	if (!CHECK(nvme_itest_attach(&m->t, 0) == 0) ||
	    !CHECK(nvme_host_enable(&m->t.h, 32) == 0) ||
	    !CHECK(nvme_host_create_io_queues(&m->t.h, 1, DEPTH, false, 0) == 0) ||
	    !CHECK(nvme_host_create_io_queues(&m->t.h, 2, DEPTH, false, 0) == 0))
		return false;
	for (int i = 0; i < NBUF; i++) {
		void *p;

		m->iova[i] = nvme_host_alloc(&m->t.h, 4096, &p);
		m->buf[i] = p;
		if (!CHECK(m->iova[i] != 0))
			return false;
	}
	return true;
}

static bool wm_setup(struct wm *m, const char *build, const char *const *args)
{
	memset(m, 0, sizeof(*m));
	if (!CHECK(nvme_itest_start(&m->t, build, args) == 0))
		return false;
	if (!wm_setup_host(m)) {
		nvme_itest_stop(&m->t, true);
		return false;
	}
	return true;
}

static void wm_teardown(struct wm *m)
{
	bool alive = nvme_itest_alive(&m->t);

	CHECK(alive);
	CHECK(nvme_itest_stop(&m->t, !alive || getenv("ITEST_SHOW_LOG")) == 0);
}

/* Submits opc of 4 KiB at slba with buffer i on qid (the doorbell held while coalescing). */
static int wm_submit(struct wm *m, uint16_t qid, uint8_t opc, uint64_t slba, int i)
{
	struct nvme_sqe sqe;

	nvme_host_rw_sqe(&sqe, opc, 1, slba, 8);
	if (nvme_host_build_prps(&m->t.h, &sqe, m->iova[i], 4096))
		return -EINVAL;
	return nvme_host_submit(&m->t.h, qid, &sqe, false);
}

/* Takes `want` completions over queues 1 and 2, ringing (coalesced) heads; counts failures. */
static int wm_reap(struct wm *m, int want)
{
	int got = 0, bad = 0;

	for (int spins = 0; got < want && spins < 20000; spins++) {
		for (uint16_t qid = 1; qid <= 2; qid++) {
			struct nvme_cqe cqe;
			bool took = false;

			while (nvme_host_cq_take(&m->t.h, qid, &cqe) == 1) {
				got++;
				took = true;
				bad += (cqe.status >> 1) != 0;
			}
			if (took)
				nvme_host_cq_ring(&m->t.h, qid);
		}
		if (nvme_host_db_flush(&m->t.h))
			return -EIO;
		if (got < want)
			vfu_client_serve(m->t.c, 1);
	}
	return got == want ? bad : -ETIMEDOUT;
}

/* Writes NBUF blocks through both queues and reads them back, every doorbell of a round in one
 * REGION_WRITE_MULTI. Returns true when every block came back right. */
static bool wm_verified_io(struct wm *m, uint32_t seed)
{
	bool ok = true;

	for (int i = 0; i < NBUF; i++)
		for (int b = 0; b < 4096; b += 4) {
			uint32_t v = seed ^ (uint32_t)(i * 4096 + b);

			memcpy(m->buf[i] + b, &v, 4);
		}
	for (int i = 0; i < NBUF; i++)
		ok &= CHECK(
		    wm_submit(m, (uint16_t)(1 + i % 2), NVME_CMD_WRITE, (uint64_t)i * 8, i) >= 0);
	ok &= CHECK(nvme_host_db_flush(&m->t.h) == 0);
	ok &= CHECK(wm_reap(m, NBUF) == 0);
	for (int i = 0; i < NBUF; i++)
		memset(m->buf[i], 0, 4096);
	/* Read each block through the other queue. */
	for (int i = 0; i < NBUF; i++)
		ok &= CHECK(
		    wm_submit(m, (uint16_t)(2 - i % 2), NVME_CMD_READ, (uint64_t)i * 8, i) >= 0);
	ok &= CHECK(nvme_host_db_flush(&m->t.h) == 0);
	ok &= CHECK(wm_reap(m, NBUF) == 0);
	for (int i = 0; i < NBUF && ok; i++)
		for (int b = 0; b < 4096; b += 4) {
			uint32_t v;

			memcpy(&v, m->buf[i] + b, 4);
			if (v != (seed ^ (uint32_t)(i * 4096 + b))) {
				ok = CHECK(!"data read back differs");
				break;
			}
		}
	return ok;
}

static void test_io_coalesced(const char *build)
{
	struct wm m;

	if (!wm_setup(&m, build, wm_args))
		return;
	CHECK(vfu_client_write_multi_ok(m.t.c));
	CHECK(nvme_host_db_coalesce(&m.t.h, true) == 0);
	for (uint32_t r = 0; r < 8; r++)
		if (!wm_verified_io(&m, 0x5eed0000u + r))
			break;
	/* 8 rounds x 2 phases: one message for the 16 tails, then heads batched per reap round. */
	printf("  %llu doorbell writes in %llu messages\n",
	       (unsigned long long)m.t.h.db_flushed_writes, (unsigned long long)m.t.h.db_flushes);
	CHECK(m.t.h.db_flushed_writes >= 8 * 2 * (NBUF + 2));
	CHECK(m.t.h.db_flushes * 4 <= m.t.h.db_flushed_writes);
	CHECK(nvme_host_db_coalesce(&m.t.h, false) == 0);
	CHECK(wm_verified_io(&m, 0xabcd0000u));
	wm_teardown(&m);
}

/* 50 SQ tail doorbell writes, each one step, queued in one send behind 50 submitted SQEs, then a
 * CSTS read: the server handles them all in order (and the read after them). */
static void test_batched_doorbells(const char *build)
{
	enum { N = 50 };
	size_t one = sizeof(struct vfio_user_header) + sizeof(struct vfio_user_region_access) + 4;
	uint8_t *msgs = malloc((N + 1) * one);
	struct vfio_user_header h;
	uint32_t csts = 0;
	uint8_t rd[sizeof(struct vfio_user_region_access) + 4];
	uint16_t tail0;
	size_t off = 0, len;
	struct wm m;

	if (!wm_setup(&m, build, wm_args)) {
		free(msgs);
		return;
	}
	tail0 = m.t.h.q[1].sq_tail;
	for (int i = 0; i < N; i++) {
		struct nvme_sqe sqe;

		nvme_host_rw_sqe(&sqe, NVME_CMD_READ, 1, (uint64_t)(i % NBUF) * 8, 8);
		CHECK(nvme_host_build_prps(&m.t.h, &sqe, m.iova[i % NBUF], 4096) == 0);
		CHECK(nvme_host_submit(&m.t.h, 1, &sqe, true) >= 0);
	}
	for (int i = 0; i < N; i++) {
		/* SQ 1's tail doorbell (NVMe Base 3.1.2.1: 0x1000 + 2 * qid * stride). */
		struct vfio_user_region_access a = {
		    .offset = DB_BASE + 2u * (4u << m.t.h.dstrd), .region = BAR0, .count = 4};
		uint32_t tail = (tail0 + i + 1u) % DEPTH;

		h = (struct vfio_user_header){.msg_id = (uint16_t)(1000 + i),
					      .command = VFIO_USER_REGION_WRITE,
					      .msg_size = (uint32_t)one,
					      .flags = VFIO_USER_F_NO_REPLY};
		memcpy(msgs + off, &h, sizeof(h));
		memcpy(msgs + off + sizeof(h), &a, sizeof(a));
		memcpy(msgs + off + sizeof(h) + sizeof(a), &tail, 4);
		off += one;
	}
	{
		struct vfio_user_region_access a = {
		    .offset = NVME_CSTS, .region = BAR0, .count = 4};

		h = (struct vfio_user_header){.msg_id = 2000,
					      .command = VFIO_USER_REGION_READ,
					      .msg_size = sizeof(h) + sizeof(a)};
		memcpy(msgs + off, &h, sizeof(h));
		memcpy(msgs + off + sizeof(h), &a, sizeof(a));
		off += sizeof(h) + sizeof(a);
	}
	CHECK(vfu_client_send_raw(m.t.c, msgs, off, NULL, 0) == 0);
	/* Posted writes get no reply: the read's is the next message. */
	CHECK(vfu_client_recv_msg(m.t.c, &h, rd, sizeof(rd), &len, NULL, NULL, 5000) == 0);
	CHECK(h.msg_id == 2000 && !(h.flags & VFIO_USER_F_ERROR) && len == sizeof(rd));
	memcpy(&csts, rd + sizeof(struct vfio_user_region_access), 4);
	CHECK((csts & 1) == 1); /* RDY */
	CHECK(wm_reap(&m, N) == 0);
	/* The connection and the queue go on. */
	CHECK(wm_verified_io(&m, 0x77));
	free(msgs);
	wm_teardown(&m);
}

static int wm_raw_multi(struct vfu_client *c, uint16_t id, uint32_t flags, uint64_t wr_cnt,
			const struct vfio_user_write_multi_entry *e, size_t n, const int *fds,
			size_t nfds)
{
	size_t len = 8 + n * sizeof(*e);
	uint8_t *buf = malloc(sizeof(struct vfio_user_header) + len);
	struct vfio_user_header h = {.msg_id = id,
				     .command = VFIO_USER_REGION_WRITE_MULTI,
				     .msg_size = (uint32_t)(sizeof(h) + len),
				     .flags = flags};
	int rc;

	memcpy(buf, &h, sizeof(h));
	memcpy(buf + sizeof(h), &wr_cnt, 8);
	if (n)
		memcpy(buf + sizeof(h) + 8, e, n * sizeof(*e));
	rc = vfu_client_send_raw(c, buf, sizeof(h) + len, fds, nfds);
	free(buf);
	return rc;
}

/* The reply to id: its errno (0 for success), -1 when something else came. */
static int wm_reply(struct vfu_client *c, uint16_t id)
{
	struct vfio_user_header h;
	size_t len;

	if (vfu_client_recv_msg(c, &h, NULL, 0, &len, NULL, NULL, 5000) || h.msg_id != id)
		return -1;
	return h.flags & VFIO_USER_F_ERROR ? (int)h.error_no : 0;
}

static void test_hostile(const char *build)
{
	static const char caps_old[] =
	    "{\"capabilities\": {\"pgsizes\": 4096, \"max_msg_fds\": 16, \"max_dma_maps\": 65535, "
	    "\"max_data_xfer_size\": 1048576}}";
	struct vfio_user_write_multi_entry e[4],
	    good = {.offset = NVME_CSTS, .region = BAR0, .count = 4};
	struct vfio_user_write_multi_entry *many;
	int efd = eventfd(0, EFD_CLOEXEC);
	struct vfu_client *c;
	struct wm m;

	if (!wm_setup(&m, build, wm_args)) {
		close(efd);
		return;
	}
	c = m.t.c;
	/* Whole-message errors: size against wr_cnt (both ways), wr_cnt 0, above the limit,
	 * wrapping when multiplied, fds on it. */
	CHECK(wm_raw_multi(c, 1, 0, 2, &good, 1, NULL, 0) == 0 && wm_reply(c, 1) == EINVAL);
	e[0] = e[1] = good;
	CHECK(wm_raw_multi(c, 2, 0, 1, e, 2, NULL, 0) == 0 && wm_reply(c, 2) == EINVAL);
	CHECK(wm_raw_multi(c, 3, 0, 0, NULL, 0, NULL, 0) == 0 && wm_reply(c, 3) == EINVAL);
	many = calloc(VFU_WRITE_MULTI_MAX + 1, sizeof(*many));
	for (unsigned int i = 0; i <= VFU_WRITE_MULTI_MAX; i++)
		many[i] = good;
	CHECK(wm_raw_multi(c, 4, 0, VFU_WRITE_MULTI_MAX + 1, many, VFU_WRITE_MULTI_MAX + 1, NULL,
			   0) == 0 &&
	      wm_reply(c, 4) == EINVAL);
	free(many);
	CHECK(wm_raw_multi(c, 5, 0, (1ull << 62) + 1, e, 1, NULL, 0) == 0 &&
	      wm_reply(c, 5) == EINVAL);
	CHECK(wm_raw_multi(c, 6, 0, 1, &good, 1, &efd, 1) == 0 && wm_reply(c, 6) == EINVAL);
	/* Bad writes: count 0 and 9, region 9 and absent region 1, offset past BAR0, wrapping. */
	e[0] = good;
	e[0].count = 0;
	e[1] = good;
	e[1].count = 9;
	e[2] = good;
	e[2].region = 9;
	e[3] = good;
	e[3].region = 1;
	CHECK(wm_raw_multi(c, 7, 0, 4, e, 4, NULL, 0) == 0 && wm_reply(c, 7) == EINVAL);
	e[0] = good;
	e[0].offset = 0x4000;
	e[1] = good;
	e[1].offset = UINT64_MAX - 2;
	e[2] = good;
	e[2].region = 0xffffffff;
	CHECK(wm_raw_multi(c, 8, 0, 3, e, 3, NULL, 0) == 0 && wm_reply(c, 8) == EINVAL);
	/* The same posted: no reply at all (the next reply is the read's). */
	CHECK(wm_raw_multi(c, 9, VFIO_USER_F_NO_REPLY, 2, &good, 1, NULL, 0) == 0);
	CHECK(wm_raw_multi(c, 9, VFIO_USER_F_NO_REPLY, 3, e, 3, NULL, 0) == 0);
	CHECK(nvme_host_reg_read32(&m.t.h, NVME_CSTS) & 1);
	/* I/O on the same connection still works, coalesced. */
	CHECK(nvme_host_db_coalesce(&m.t.h, true) == 0);
	CHECK(wm_verified_io(&m, 0x1234));
	close(efd);
	/* A client that did not offer write_multiple: ENOSYS, as any unsupported command. */
	nvme_itest_detach(&m.t);
	c = vfu_client_connect(m.t.sock, 5000);
	CHECK(c != NULL);
	if (c) {
		CHECK(vfu_client_version(c, 0, 0, caps_old, NULL, 0) == 0);
		CHECK(!vfu_client_write_multi_ok(c));
		CHECK(wm_raw_multi(c, 1, 0, 1, &good, 1, NULL, 0) == 0 && wm_reply(c, 1) == ENOSYS);
		CHECK(wm_raw_multi(c, 2, VFIO_USER_F_NO_REPLY, 1, &good, 1, NULL, 0) == 0);
		{
			struct vfio_user_device_info di;

			CHECK(vfu_client_device_info(c, &di) == 0);
		}
		vfu_client_close(c);
	}
	/* And the daemon serves the next client: verified I/O again. */
	CHECK(wm_setup_host(&m));
	CHECK(nvme_host_db_coalesce(&m.t.h, true) == 0);
	CHECK(wm_verified_io(&m, 0x4321));
	wm_teardown(&m);
}

static void test_mmap_refused(const char *build)
{
	static const char *const mmap_args[] = {"--malloc", "16M", "--doorbells", "mmap", NULL};
	struct wm m;

	if (!wm_setup(&m, build, mmap_args))
		return;
	CHECK(m.t.h.db_page != NULL);
	CHECK(nvme_host_db_coalesce(&m.t.h, true) == -EOPNOTSUPP);
	CHECK(wm_verified_io(&m, 0x99));
	wm_teardown(&m);
}

int main(int argc, char **argv)
{
	const char *build = argc > 1 ? argv[1] : "build";

	itest_run("io_coalesced", test_io_coalesced, build);
	itest_run("batched_doorbells", test_batched_doorbells, build);
	itest_run("hostile", test_hostile, build);
	itest_run("mmap_refused", test_mmap_refused, build);
	return itest_summary();
}
