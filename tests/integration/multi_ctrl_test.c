/* tests/integration/multi_ctrl_test.c - one NVM subsystem with several controllers, through the
 * real vfio-user sockets: the daemon's subsystem (from --socket) gets a second listener over
 * JSON-RPC, and two test hosts drive the two controllers at once, as two VMs sharing a disk do.
 *
 * It checks the identity the spec gives such a subsystem (NVMe Base 2.0 sections 2.4, 5.17.2:
 * one SUBNQN, serial and model, distinct CNTLIDs, CMIC bit 1, NMIC bit 0, the Controller Lists
 * of CNS 12h/13h), that the namespace is one medium (data and uncorrectable marks seen through
 * either controller), reservations between the two hosts (section 8.19: conflicts, preemption
 * and its notification log and event), the CNTLID range of nvmf_create_subsystem, and that a
 * listener comes and goes while the other controller's I/O goes on, that Format NVM through one
 * controller is the namespace's format for all, and that Sanitize started
 * through one controller holds the other's I/O (subsystem scope). */
#include "tests/integration/nvme_itest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CHECK ITEST_CHECK
#define ST_MASK 0x7ff
#define NQN "nqn.2026-11.io.nvme-emu:MULTI-1"
#define BLK 512u

static const char *g_build;

struct host {
	struct nvme_itest t; /* for B only c and h are used */
	uint8_t *buf;
	uint64_t iova;
};

struct pair {
	struct host a, b;
	char rpc[128], sock_b[160];
};

static int rpc(struct pair *p, const char *const *args, char *out, size_t cap)
{
	return nvme_itest_rpc(g_build, p->rpc, args, out, cap);
}

static bool add_listener(struct pair *p, const char *nqn, const char *sock)
{
	const char *args[] = { "nvmf_subsystem_add_listener", "--nqn", nqn,
			       "--listen_address.trtype", "PCIE_EMU", "--listen_address.traddr",
			       sock, NULL };

	return rpc(p, args, NULL, 0) == 0;
}

static bool remove_listener(struct pair *p, const char *nqn, const char *sock)
{
	const char *args[] = { "nvmf_subsystem_remove_listener", "--nqn", nqn,
			       "--listen_address.trtype", "PCIE_EMU", "--listen_address.traddr",
			       sock, NULL };

	return rpc(p, args, NULL, 0) == 0;
}

/* Connects a host to sock, enables its controller, one I/O queue pair. */
static bool host_up(struct host *h, const char *sock)
{
	if (sock) {
		memset(&h->t, 0, sizeof(h->t));
		h->t.pid = -1;
		snprintf(h->t.sock, sizeof(h->t.sock), "%s", sock);
	}
	if (!CHECK(nvme_itest_attach(&h->t, 2) == 0))
		return false;
	if (!CHECK(nvme_host_enable(&h->t.h, 32) == 0) ||
	    !CHECK(nvme_host_create_io_queues(&h->t.h, 1, 64, true, 1) == 0))
		return false;
	h->iova = nvme_host_alloc(&h->t.h, 4096, (void **)&h->buf);
	return true;
}

/* The daemon with subsystem NQN (namespace 1, 16 MiB) and its first listener, then a second
 * listener at sock_b over RPC; both hosts up. */
static bool pair_start(struct pair *p)
{
	static char rpc_path[128];
	const char *args[] = { "--malloc", "16M", "--serial", "MULTI-1", "-r", rpc_path, NULL };

	memset(p, 0, sizeof(*p));
	snprintf(rpc_path, sizeof(rpc_path), "/tmp/.multi-ctrl-%d-%ld.sock", getpid(),
		 (long)random());
	snprintf(p->rpc, sizeof(p->rpc), "%s", rpc_path);
	if (!CHECK(nvme_itest_start(&p->a.t, g_build, args) == 0))
		return false;
	snprintf(p->sock_b, sizeof(p->sock_b), "%s/b.sock", p->a.t.dir);
	if (!CHECK(add_listener(p, NQN, p->sock_b)) || !host_up(&p->a, NULL) ||
	    !host_up(&p->b, p->sock_b)) {
		nvme_itest_detach(&p->b.t);
		nvme_itest_stop(&p->a.t, true);
		unlink(p->rpc);
		return false;
	}
	return true;
}

static void pair_stop(struct pair *p)
{
	bool alive = nvme_itest_alive(&p->a.t);

	nvme_itest_detach(&p->b.t);
	CHECK(alive);
	/* Exit status 0: a clean teardown of both controllers (and nothing for ASan). */
	CHECK(nvme_itest_stop(&p->a.t, !alive || getenv("ITEST_SHOW_LOG")) == 0);
	unlink(p->rpc);
}

static uint16_t st_of(int rc)
{
	return rc < 0 ? 0xffff : (uint16_t)(rc & ST_MASK);
}

/* One block of I/O at lba through h (data in h->buf): its status. */
static uint16_t io(struct host *h, uint8_t opc, uint64_t lba)
{
	return st_of(nvme_host_rw(&h->t.h, 1, opc, 1, lba, 1, h->iova, BLK));
}

static uint16_t write_uncor(struct host *h, uint64_t lba)
{
	struct nvme_sqe sqe;

	nvme_host_rw_sqe(&sqe, NVME_CMD_WRITE_UNCOR, 1, lba, 1);
	return st_of(nvme_host_cmd(&h->t.h, 1, &sqe, NULL));
}

/* Set Features Host Identifier (64-bit). */
static uint16_t set_hostid(struct host *h, uint64_t id)
{
	struct nvme_sqe sqe = {0};

	memcpy(h->buf, &id, 8);
	sqe.cdw0.bits.opc = NVME_ADM_SET_FEATURES;
	sqe.cdw10 = NVME_FEAT_HOST_ID;
	nvme_host_build_prps(&h->t.h, &sqe, h->iova, 8);
	return st_of(nvme_host_cmd(&h->t.h, 0, &sqe, NULL));
}

/* A reservation command with two 8-byte keys as its data (Register: CRKEY NRKEY; Acquire:
 * CRKEY PRKEY; Release: CRKEY). */
static uint16_t resv(struct host *h, uint8_t opc, uint32_t cdw10, uint64_t k1, uint64_t k2)
{
	struct nvme_sqe sqe = {0};

	memcpy(h->buf, &k1, 8);
	memcpy(h->buf + 8, &k2, 8);
	sqe.cdw0.bits.opc = opc;
	sqe.nsid = 1;
	sqe.cdw10 = cdw10;
	nvme_host_build_prps(&h->t.h, &sqe, h->iova, 16);
	return st_of(nvme_host_cmd(&h->t.h, 1, &sqe, NULL));
}

/* Get Log Page lid, len bytes into h->buf. */
static uint16_t get_log(struct host *h, uint8_t lid, uint32_t len)
{
	struct nvme_sqe sqe = {0};

	memset(h->buf, 0xee, len);
	sqe.cdw0.bits.opc = NVME_ADM_GET_LOG_PAGE;
	sqe.nsid = 0xffffffffu;
	sqe.cdw10 = lid | ((len / 4 - 1) << 16);
	nvme_host_build_prps(&h->t.h, &sqe, h->iova, len);
	return st_of(nvme_host_cmd(&h->t.h, 0, &sqe, NULL));
}

static uint16_t le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

/* Identify CNS 12h/13h: the Controller List as count + ids. */
static int ctrl_list(struct host *h, uint8_t cns, uint32_t nsid, uint16_t *ids, int max)
{
	uint8_t id[4096];
	int n;

	if (nvme_host_identify(&h->t.h, cns, nsid, id) != 0)
		return -1;
	n = le16(id);
	for (int i = 0; i < n && i < max; i++)
		ids[i] = le16(id + 2 + 2 * i);
	return n;
}

/* ---- cases ---- */

/* One subsystem, two controllers: same NQN, serial and model; CNTLIDs 1 and 2; CMIC bit 1; the
 * namespace may be shared (NMIC bit 0); CNS 13h and 12h list both, seen from either. */
static void test_identity(const char *build)
{
	struct pair p;
	uint8_t ia[4096], ib[4096], ns[4096];
	uint16_t ids[4];

	(void)build;
	if (!pair_start(&p))
		return;
	CHECK(nvme_host_identify(&p.a.t.h, NVME_CNS_CTRL, 0, ia) == 0);
	CHECK(nvme_host_identify(&p.b.t.h, NVME_CNS_CTRL, 0, ib) == 0);
	CHECK(memcmp(ia + 768, NQN, sizeof(NQN)) == 0);
	CHECK(memcmp(ia + 768, ib + 768, 256) == 0); /* SUBNQN */
	CHECK(memcmp(ia + 4, ib + 4, 60) == 0);	     /* SN and MN */
	CHECK(le16(ia + 78) == 1);
	CHECK(le16(ib + 78) == 2);
	CHECK(ia[76] & 2); /* CMIC: two or more controllers */
	CHECK(ib[76] & 2);
	CHECK(nvme_host_identify(&p.b.t.h, NVME_CNS_NS, 1, ns) == 0);
	CHECK(ns[30] & 1); /* NMIC: may be attached to two or more controllers */
	CHECK(ctrl_list(&p.a, NVME_CNS_CTRL_LIST, 0, ids, 4) == 2 && ids[0] == 1 && ids[1] == 2);
	CHECK(ctrl_list(&p.b, NVME_CNS_NS_CTRL_LIST, 1, ids, 4) == 2 && ids[0] == 1 &&
	      ids[1] == 2);
	/* CDW10.CNTID: identifiers from it on. */
	{
		uint8_t id[4096];
		struct nvme_sqe sqe = {0};
		uint64_t iova;
		void *buf;

		iova = nvme_host_alloc(&p.b.t.h, 4096, &buf);
		sqe.cdw0.bits.opc = NVME_ADM_IDENTIFY;
		sqe.cdw10 = NVME_CNS_CTRL_LIST | 2u << 16;
		nvme_host_build_prps(&p.b.t.h, &sqe, iova, 4096);
		CHECK(nvme_host_cmd(&p.b.t.h, 0, &sqe, NULL) == 0);
		memcpy(id, buf, sizeof(id));
		CHECK(le16(id) == 1 && le16(id + 2) == 2);
	}
	/* The same medium: a write through A reads back through B, and back. */
	memset(p.a.buf, 0x5a, BLK);
	CHECK(io(&p.a, NVME_CMD_WRITE, 100) == 0);
	memset(p.b.buf, 0, BLK);
	CHECK(io(&p.b, NVME_CMD_READ, 100) == 0);
	CHECK(p.b.buf[0] == 0x5a && p.b.buf[BLK - 1] == 0x5a);
	pair_stop(&p);
}

/* An unreadable block is a property of the medium: Write Uncorrectable through A fails B's
 * read with Unrecovered Read Error, and a write through B makes it readable through A. */
static void test_uncorrectable_shared(const char *build)
{
	struct pair p;

	(void)build;
	if (!pair_start(&p))
		return;
	CHECK(write_uncor(&p.a, 200) == 0);
	CHECK(io(&p.b, NVME_CMD_READ, 200) == NVME_SC_UNRECOVERED_READ);
	CHECK(io(&p.a, NVME_CMD_READ, 200) == NVME_SC_UNRECOVERED_READ);
	memset(p.b.buf, 0x33, BLK);
	CHECK(io(&p.b, NVME_CMD_WRITE, 200) == 0);
	memset(p.a.buf, 0, BLK);
	CHECK(io(&p.a, NVME_CMD_READ, 200) == 0);
	CHECK(p.a.buf[7] == 0x33);
	pair_stop(&p);
}

#define KEY_A 0xa11a11a11ull
#define KEY_B 0xb22b22b22ull
#define RTYPE(t) ((uint32_t)(t) << 8)

/* Reservations between the two hosts (each controller has its own Host Identifier): A holds
 * Write Exclusive, B can read but not write; B registers and preempts A, which loses its
 * registration, gets a Registration Preempted entry in its log 80h, and can no longer write. */
static void test_reservations(const char *build)
{
	struct pair p;
	uint8_t rep[4096];

	(void)build;
	if (!pair_start(&p))
		return;
	CHECK(set_hostid(&p.a, 0x1111222233334444ull) == 0);
	CHECK(set_hostid(&p.b, 0x5555666677778888ull) == 0);
	CHECK(resv(&p.a, NVME_CMD_RESV_REGISTER, 0, 0, KEY_A) == 0);
	CHECK(resv(&p.a, NVME_CMD_RESV_ACQUIRE, RTYPE(NVME_RESV_WRITE_EXCLUSIVE), KEY_A, 0) == 0);
	memset(p.a.buf, 0x44, BLK);
	CHECK(io(&p.a, NVME_CMD_WRITE, 300) == 0);
	CHECK(io(&p.b, NVME_CMD_READ, 300) == 0);
	CHECK(p.b.buf[0] == 0x44);
	CHECK(io(&p.b, NVME_CMD_WRITE, 300) == NVME_SC_RESV_CONFLICT);
	/* Report through B (the 64-bit Host Identifier format): one registrant, A's controller,
	 * holding the reservation. */
	{
		struct nvme_sqe sqe = {0};

		sqe.cdw0.bits.opc = NVME_CMD_RESV_REPORT;
		sqe.nsid = 1;
		sqe.cdw10 = 4096 / 4 - 1;
		nvme_host_build_prps(&p.b.t.h, &sqe, p.b.iova, 4096);
		CHECK(st_of(nvme_host_cmd(&p.b.t.h, 1, &sqe, NULL)) == 0);
		memcpy(rep, p.b.buf, sizeof(rep));
		CHECK(rep[4] == NVME_RESV_WRITE_EXCLUSIVE); /* RTYPE */
		CHECK(le16(rep + 5) == 1);		    /* REGCTL */
		/* Registrant 0 at byte 24: CNTLID, RCSTS (holder), HOSTID, RKEY. */
		CHECK(le16(rep + 24) == 1);
		CHECK(rep[26] & 1);
		CHECK(rep[32] == 0x44 && rep[39] == 0x11); /* A's host ID, little-endian */
	}
	CHECK(resv(&p.b, NVME_CMD_RESV_REGISTER, 0, 0, KEY_B) == 0);
	/* Preempt (RACQA 1) A's reservation and registration with A's key. */
	CHECK(resv(&p.b, NVME_CMD_RESV_ACQUIRE, 1 | RTYPE(NVME_RESV_WRITE_EXCLUSIVE), KEY_B,
		   KEY_A) == 0);
	memset(p.b.buf, 0x55, BLK);
	CHECK(io(&p.b, NVME_CMD_WRITE, 300) == 0);
	CHECK(io(&p.a, NVME_CMD_WRITE, 300) == NVME_SC_RESV_CONFLICT);
	/* A's notification log: Registration Preempted on namespace 1. */
	CHECK(get_log(&p.a, NVME_LOG_RESV_NOTIFY, 64) == 0);
	CHECK(p.a.buf[8] == NVME_RESV_NOTIFY_REG_PREEMPTED);
	CHECK(p.a.buf[12] == 1 && p.a.buf[13] == 0);
	/* B's log has nothing for it. */
	CHECK(get_log(&p.b, NVME_LOG_RESV_NOTIFY, 64) == 0);
	CHECK(p.b.buf[8] == NVME_RESV_NOTIFY_EMPTY);
	/* B releases: with no reservation the namespace is writable by everyone again. */
	CHECK(resv(&p.b, NVME_CMD_RESV_RELEASE, RTYPE(NVME_RESV_WRITE_EXCLUSIVE), KEY_B, 0) == 0);
	CHECK(io(&p.a, NVME_CMD_WRITE, 300) == 0);
	pair_stop(&p);
}

/* The second listener goes and comes back while A keeps writing: A's I/O is never refused, the
 * new controller takes the lowest free CNTLID (2 again) and sees A's data; a third listener gets
 * 3; the RPC reports each listener with its CNTLID. */
static void test_listener_churn(const char *build)
{
	struct pair p;
	char out[8192], sock_c[192];
	uint8_t id[4096];
	const char *get[] = { "nvmf_get_subsystems", NULL };
	const char *ctrls[] = { "nvmf_subsystem_get_controllers", "--nqn", NQN, NULL };
	struct host c;

	(void)build;
	if (!pair_start(&p))
		return;
	snprintf(sock_c, sizeof(sock_c), "%s/c.sock", p.a.t.dir);
	CHECK(rpc(&p, get, out, sizeof(out)) == 0);
	CHECK(strstr(out, "\"cntlid\": 1") && strstr(out, "\"cntlid\": 2"));
	CHECK(rpc(&p, ctrls, out, sizeof(out)) == 0);
	CHECK(strstr(out, "\"cntlid\": 1") && strstr(out, "\"cntlid\": 2"));
	for (int round = 0; round < 3; round++) {
		nvme_itest_detach(&p.b.t);
		CHECK(remove_listener(&p, NQN, p.sock_b));
		memset(p.a.buf, 0x60 + round, BLK);
		CHECK(io(&p.a, NVME_CMD_WRITE, 400 + (uint64_t)round) == 0);
		/* Gone: CNS 13h from A lists only A. */
		{
			uint16_t ids[4];

			CHECK(ctrl_list(&p.a, NVME_CNS_CTRL_LIST, 0, ids, 4) == 1 && ids[0] == 1);
		}
		CHECK(add_listener(&p, NQN, p.sock_b));
		if (!host_up(&p.b, p.sock_b))
			break;
		CHECK(nvme_host_identify(&p.b.t.h, NVME_CNS_CTRL, 0, id) == 0);
		CHECK(le16(id + 78) == 2);
		CHECK(io(&p.b, NVME_CMD_READ, 400 + (uint64_t)round) == 0);
		CHECK(p.b.buf[0] == 0x60 + round);
	}
	/* A third controller. */
	CHECK(add_listener(&p, NQN, sock_c));
	if (host_up(&c, sock_c)) {
		uint16_t ids[4];

		CHECK(nvme_host_identify(&c.t.h, NVME_CNS_CTRL, 0, id) == 0);
		CHECK(le16(id + 78) == 3);
		CHECK(ctrl_list(&p.a, NVME_CNS_CTRL_LIST, 0, ids, 4) == 3 && ids[2] == 3);
		/* The same socket twice is refused. */
		CHECK(!add_listener(&p, NQN, sock_c));
	}
	nvme_itest_detach(&c.t);
	/* Stopping the daemon tears three controllers down (pair_stop checks exit 0). */
	pair_stop(&p);
}

/* nvmf_create_subsystem's min_cntlid/max_cntlid: the controllers take ids from the range, one
 * past it is refused, a bad range is refused, and save_config keeps it. */
static void test_cntlid_range(const char *build)
{
	struct pair p;
	char out[16384], s1[192], s2[192];
	const char *mk[] = { "nvmf_create_subsystem", "--nqn", "nqn.2026-11.io.test:range",
			     "--min_cntlid", "7", "--max_cntlid", "7", NULL };
	const char *bad[] = { "nvmf_create_subsystem", "--nqn", "nqn.2026-11.io.test:bad",
			      "--min_cntlid", "9", "--max_cntlid", "8", NULL };
	const char *reserved[] = { "nvmf_create_subsystem", "--nqn", "nqn.2026-11.io.test:rsv",
				   "--min_cntlid", "65520", NULL };
	const char *save[] = { "save_config", NULL };
	const char *del[] = { "nvmf_delete_subsystem", "--nqn", "nqn.2026-11.io.test:range", NULL };
	struct host h;
	uint8_t id[4096];

	(void)build;
	if (!pair_start(&p))
		return;
	snprintf(s1, sizeof(s1), "%s/r1.sock", p.a.t.dir);
	snprintf(s2, sizeof(s2), "%s/r2.sock", p.a.t.dir);
	CHECK(rpc(&p, mk, NULL, 0) == 0);
	CHECK(rpc(&p, bad, NULL, 0) != 0);
	CHECK(rpc(&p, reserved, NULL, 0) != 0);
	CHECK(add_listener(&p, "nqn.2026-11.io.test:range", s1));
	CHECK(!add_listener(&p, "nqn.2026-11.io.test:range", s2)); /* 7..7 is used up */
	if (host_up(&h, s1)) {
		CHECK(nvme_host_identify(&h.t.h, NVME_CNS_CTRL, 0, id) == 0);
		CHECK(le16(id + 78) == 7);
	}
	nvme_itest_detach(&h.t);
	CHECK(rpc(&p, save, out, sizeof(out)) == 0);
	CHECK(strstr(out, "\"min_cntlid\": 7") != NULL);
	/* Deleting a subsystem detaches its listener first. */
	CHECK(rpc(&p, del, NULL, 0) == 0);
	pair_stop(&p);
}

/* The LBA format is the namespace's: Format NVM through A (4096-byte blocks, format 6) is what B
 * and a controller added afterwards see (FLBAS, NSZE), B's host is told (Changed Namespace List),
 * and a 4 KiB block written through B reads back through A. */
static void test_format_shared(const char *build)
{
	struct pair p;
	struct nvme_sqe sqe = {0};
	uint8_t id[4096];
	uint64_t nsze = 0;
	char sock_c[192];
	struct host c;

	(void)build;
	if (!pair_start(&p))
		return;
	sqe.cdw0.bits.opc = NVME_ADM_FORMAT_NVM;
	sqe.nsid = 1;
	sqe.cdw10 = 6; /* LBAF 6: 4096 bytes, no metadata; SES 0 */
	CHECK(st_of(nvme_host_cmd(&p.a.t.h, 0, &sqe, NULL)) == 0);
	CHECK(nvme_host_identify(&p.b.t.h, NVME_CNS_NS, 1, id) == 0);
	memcpy(&nsze, id, 8);
	CHECK((id[26] & 0xf) == 6);
	CHECK(nsze == (16u << 20) / 4096);
	CHECK(get_log(&p.b, NVME_LOG_CHANGED_NS, 64) == 0);
	CHECK(p.b.buf[0] == 1 && p.b.buf[1] == 0 && p.b.buf[4] == 0);
	memset(p.b.buf, 0x77, 4096);
	CHECK(st_of(nvme_host_rw(&p.b.t.h, 1, NVME_CMD_WRITE, 1, 3, 1, p.b.iova, 4096)) == 0);
	memset(p.a.buf, 0, 4096);
	CHECK(st_of(nvme_host_rw(&p.a.t.h, 1, NVME_CMD_READ, 1, 3, 1, p.a.iova, 4096)) == 0);
	CHECK(p.a.buf[0] == 0x77 && p.a.buf[4095] == 0x77);
	/* A controller added now starts in the namespace's format. */
	snprintf(sock_c, sizeof(sock_c), "%s/c.sock", p.a.t.dir);
	CHECK(add_listener(&p, NQN, sock_c));
	if (host_up(&c, sock_c)) {
		CHECK(nvme_host_identify(&c.t.h, NVME_CNS_NS, 1, id) == 0);
		CHECK((id[26] & 0xf) == 6);
		memset(c.buf, 0, 4096);
		CHECK(st_of(nvme_host_rw(&c.t.h, 1, NVME_CMD_READ, 1, 3, 1, c.iova, 4096)) == 0);
		CHECK(c.buf[100] == 0x77);
	}
	nvme_itest_detach(&c.t);
	pair_stop(&p);
}

/* Sanitize is the NVM subsystem's (Base 2.0 8.21): started through A, it refuses B's I/O and a
 * second Sanitize through B with Sanitize In Progress, B's Sanitize Status log shows it running
 * then completed, and B reads the overwrite pattern. Writes take 20 ms (bdev_delay), so the
 * 1-pass overwrite of 8 MiB lasts over a second. */
static void test_sanitize_subsystem(const char *build)
{
	struct pair p;
	struct host a, b;
	char s1[192], s2[192];
	const char *nqn = "nqn.2026-11.io.test:san";
	const char *m1[] = { "bdev_malloc_create", "--name", "SM", "--num_blocks", "16384",
			     "--block_size", "512", NULL };
	const char *m2[] = { "bdev_delay_create", "--base_bdev_name", "SM", "--name", "SD",
			     "--avg_read_latency", "0", "--p99_read_latency", "0",
			     "--avg_write_latency", "20000", "--p99_write_latency", "20000", NULL };
	const char *m3[] = { "nvmf_create_subsystem", "--nqn", nqn, NULL };
	const char *m4[] = { "nvmf_subsystem_add_ns", "--nqn", nqn, "--namespace.bdev_name", "SD",
			     NULL };
	struct nvme_sqe sqe = {0};
	uint16_t sstat = 0;

	(void)build;
	if (!pair_start(&p))
		return;
	snprintf(s1, sizeof(s1), "%s/s1.sock", p.a.t.dir);
	snprintf(s2, sizeof(s2), "%s/s2.sock", p.a.t.dir);
	if (!CHECK(rpc(&p, m1, NULL, 0) == 0) || !CHECK(rpc(&p, m2, NULL, 0) == 0) ||
	    !CHECK(rpc(&p, m3, NULL, 0) == 0) || !CHECK(rpc(&p, m4, NULL, 0) == 0) ||
	    !CHECK(add_listener(&p, nqn, s1)) || !CHECK(add_listener(&p, nqn, s2)) ||
	    !host_up(&a, s1) || !host_up(&b, s2)) {
		pair_stop(&p);
		return;
	}
	/* Overwrite, one pass (OWPASS 1), No-Deallocate, pattern 0x5ac0ffee. */
	sqe.cdw0.bits.opc = NVME_ADM_SANITIZE;
	sqe.cdw10 = NVME_SANACT_OVERWRITE | 1u << 4 | NVME_SAN_NDAS;
	sqe.cdw11 = 0x5ac0ffee;
	CHECK(st_of(nvme_host_cmd(&a.t.h, 0, &sqe, NULL)) == 0);
	CHECK(io(&b, NVME_CMD_READ, 10) == NVME_SC_SANITIZE_IN_PROGRESS);
	CHECK(io(&a, NVME_CMD_READ, 10) == NVME_SC_SANITIZE_IN_PROGRESS);
	CHECK(st_of(nvme_host_cmd(&b.t.h, 0, &sqe, NULL)) == NVME_SC_SANITIZE_IN_PROGRESS);
	CHECK(get_log(&b, NVME_LOG_SANITIZE, 512) == 0);
	memcpy(&sstat, b.buf + 2, 2);
	CHECK((sstat & 7) == NVME_SSTAT_IN_PROGRESS);
	/* Until it completes, as B's log says (bounded: 60 s). */
	for (int i = 0; i < 600 && (sstat & 7) == NVME_SSTAT_IN_PROGRESS; i++) {
		usleep(100000);
		if (get_log(&b, NVME_LOG_SANITIZE, 512) != 0)
			break;
		memcpy(&sstat, b.buf + 2, 2);
	}
	CHECK((sstat & 7) == NVME_SSTAT_COMPLETED);
	memset(b.buf, 0, BLK);
	CHECK(io(&b, NVME_CMD_READ, 10) == 0);
	CHECK(b.buf[0] == 0xee && b.buf[1] == 0xff && b.buf[2] == 0xc0 && b.buf[3] == 0x5a);
	CHECK(io(&a, NVME_CMD_READ, 10) == 0);
	/* The other subsystem was never blocked. */
	CHECK(io(&p.b, NVME_CMD_READ, 10) == 0);
	nvme_itest_detach(&a.t);
	nvme_itest_detach(&b.t);
	pair_stop(&p);
}

int main(int argc, char **argv)
{
	static const char *const trap[] = { "--doorbells", "trap", NULL };
	static const char *const mmap_2pg[] = { "--doorbells", "mmap", "-m", "2", NULL };
	const char *const *modes[] = { trap, mmap_2pg };
	const char *labels[] = { "trap doorbells", "mmap doorbells, 2 poll groups" };

	g_build = argc > 1 ? argv[1] : "build";
	srandom((unsigned int)getpid());
	for (int m = 0; m < 2; m++) {
		unsigned int i = 0;

		printf("== %s\n", labels[m]);
		for (; modes[m][i] && i < 15; i++)
			nvme_itest_mode_args[i] = modes[m][i];
		nvme_itest_mode_args[i] = NULL;
		itest_run("identity", test_identity, g_build);
		itest_run("uncorrectable_shared", test_uncorrectable_shared, g_build);
		itest_run("reservations", test_reservations, g_build);
		itest_run("format_shared", test_format_shared, g_build);
		if (m == 0) {
			itest_run("listener_churn", test_listener_churn, g_build);
			itest_run("cntlid_range", test_cntlid_range, g_build);
			itest_run("sanitize_subsystem", test_sanitize_subsystem, g_build);
		}
	}
	return itest_summary();
}
