/* tests/integration/secondary_test.c - secondary controllers (issue 35) through the real daemon's
 * sockets: a primary controller (--secondaries) reports its flexible resources and secondaries
 * (Identify CNS 14h, 15h), takes every action of Virtualization Management and refuses every
 * hostile value with the specification's status, gives a secondary brought online a socket of
 * its own where a host attaches, enables it and uses as many I/O queue pairs and vectors as it
 * was assigned and not one more, takes it away when it goes offline, and keeps the assignment
 * (and the online state) across a SIGKILL of the daemon and a restart. */
#include "tests/integration/nvme_itest.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define CHECK ITEST_CHECK
#define BLK 512u
/* Generous, for a loaded machine: a socket that comes or goes after a command completed. */
#define WAIT_MS 20000

static const char *g_build;

/* A command's status without DNR. */
static int sc(int st)
{
	return st < 0 ? st : st & 0x7ff;
}

static int virt(struct nvme_host *h, uint8_t act, uint8_t rt, uint16_t cntlid, uint16_t nr,
		uint32_t *dw0)
{
	struct nvme_sqe sqe = { 0 };
	struct nvme_cqe cqe = { 0 };
	int st;

	sqe.cdw0.bits.opc = NVME_ADM_VIRT_MGMT;
	sqe.cdw10 = (uint32_t)cntlid << 16 | (uint32_t)(rt & 7) << 8 | (act & 0xf);
	sqe.cdw11 = nr;
	st = nvme_host_cmd(h, 0, &sqe, &cqe);
	if (dw0)
		*dw0 = cqe.dw0;
	return sc(st);
}

/* Identify with CDW10.CNTID (CNS 15h's first SCID). */
static int identify(struct nvme_host *h, uint8_t cns, uint16_t cntid, void *out)
{
	struct nvme_sqe sqe = { 0 };
	void *buf;
	uint64_t iova = nvme_host_alloc(h, 4096, &buf);
	int st;

	if (!iova)
		return -ENOMEM;
	sqe.cdw0.bits.opc = NVME_ADM_IDENTIFY;
	sqe.cdw10 = (uint32_t)cntid << 16 | cns;
	sqe.dptr.prp.prp1 = iova;
	st = nvme_host_cmd(h, 0, &sqe, NULL);
	if (!st)
		memcpy(out, buf, 4096);
	return sc(st);
}

static int get_num_queues(struct nvme_host *h, uint32_t *dw0)
{
	struct nvme_sqe sqe = { 0 };
	struct nvme_cqe cqe = { 0 };
	int st;

	sqe.cdw0.bits.opc = NVME_ADM_GET_FEATURES;
	sqe.cdw10 = NVME_FEAT_NUM_QUEUES;
	st = nvme_host_cmd(h, 0, &sqe, &cqe);
	*dw0 = cqe.dw0;
	return sc(st);
}

static uint16_t id_oacs(struct nvme_host *h, uint16_t *cntlid)
{
	struct nvme_id_ctrl id;

	if (identify(h, NVME_CNS_CTRL, 0, &id))
		return 0xffff;
	if (cntlid)
		*cntlid = id.cntlid;
	return id.oacs;
}

static bool wait_path(const char *path, bool present)
{
	struct stat st;

	for (int i = 0; i < WAIT_MS / 10; i++) {
		if ((stat(path, &st) == 0) == present)
			return true;
		usleep(10000);
	}
	return false;
}

/* A host on a secondary's socket: client, RAM, `vectors` MSI-X eventfds, controller enabled. */
static int sec_attach(struct nvme_itest *s, const struct nvme_itest *primary, uint16_t scid,
		      uint32_t vectors)
{
	int rc;

	memset(s, 0, sizeof(*s));
	s->pid = -1;
	/* The harness's sockets are short (/tmp/nvme-itest-XXXXXX/nvme.sock). */
	if (strlen(primary->sock) + 12 > sizeof(s->sock))
		return -ENAMETOOLONG;
	memcpy(s->sock, primary->sock, strlen(primary->sock) + 1);
	snprintf(s->sock + strlen(s->sock), 12, ".sec%u", scid);
	rc = nvme_itest_attach(s, vectors);
	if (!rc)
		rc = nvme_host_enable(&s->h, 32);
	return rc;
}

static bool daemon_up(struct nvme_itest *t, const char *const *args)
{
	return CHECK(nvme_itest_up(t, g_build, args, 4, 32) == 0);
}

/* SIGKILL: nothing of the daemon's own ending runs. Its sockets stay as files. */
static void daemon_kill(struct nvme_itest *t)
{
	char path[192];

	nvme_itest_detach(t);
	if (t->pid > 0) {
		kill(t->pid, SIGKILL);
		waitpid(t->pid, NULL, 0);
		t->pid = -1;
	}
	for (unsigned int id = 2; id < 8; id++) {
		snprintf(path, sizeof(path), "%s.sec%u", t->sock, id);
		unlink(path);
	}
	nvme_itest_stop(t, false);
}

/* Without secondaries: no OACS bit 7, no CNS 14h/15h, no Virtualization Management. */
static void test_absent(const char *build)
{
	const char *args[] = { "--malloc", "1M", NULL };
	uint8_t buf[4096];
	struct nvme_itest t;

	(void)build;
	if (!daemon_up(&t, args))
		return;
	CHECK(!(id_oacs(&t.h, NULL) & NVME_OACS_VIRT_MGMT));
	CHECK(identify(&t.h, NVME_CNS_PRI_CTRL_CAP, 0, buf) == NVME_SC_INVALID_FIELD);
	CHECK(identify(&t.h, NVME_CNS_SEC_CTRL_LIST, 0, buf) == NVME_SC_INVALID_FIELD);
	CHECK(virt(&t.h, NVME_VIRT_ACT_SEC_ASSIGN, 0, 2, 2, NULL) == NVME_SC_INVALID_OPCODE);
	CHECK(nvme_itest_stop(&t, false) == 0);
}

/* The primary as configured: 16 I/O queue pairs and 17 vectors, 8 VQ and 4 VI flexible, at most
 * 4 VQ and 2 VI per secondary, two secondaries (CNTLIDs 2 and 3). */
static const char *const g_args[] = { "--malloc", "4M", "--io-queues", "16", "--secondaries",
				       "2:8:4:4:2", NULL };

static void test_caps(const char *build)
{
	struct nvme_pri_ctrl_cap cap;
	struct nvme_sec_ctrl_list list;
	struct nvme_itest t;
	uint16_t cntlid = 0;
	uint32_t dw0 = 0;

	(void)build;
	if (!daemon_up(&t, g_args))
		return;
	CHECK(id_oacs(&t.h, &cntlid) & NVME_OACS_VIRT_MGMT);
	CHECK(cntlid == 1);
	CHECK(identify(&t.h, NVME_CNS_PRI_CTRL_CAP, 0, &cap) == 0);
	CHECK(cap.cntlid == 1 && cap.portid == 0 && cap.crt == (NVME_CRT_VQ | NVME_CRT_VI));
	/* 17 VQ resources (16 I/O queue pairs and the admin queue), 8 of them flexible. */
	CHECK(cap.vqfrt == 8 && cap.vqrfa == 0 && cap.vqrfap == 0 && cap.vqprt == 9);
	CHECK(cap.vqfrsm == 4 && cap.vqgran == 1);
	CHECK(cap.vifrt == 4 && cap.virfa == 0 && cap.virfap == 0 && cap.viprt == 13);
	CHECK(cap.vifrsm == 2 && cap.vigran == 1);
	CHECK(identify(&t.h, NVME_CNS_SEC_CTRL_LIST, 0, &list) == 0);
	CHECK(list.num == 2);
	CHECK(list.e[0].scid == 2 && list.e[0].pcid == 1 && list.e[0].scs == 0 &&
	      list.e[0].vfn == 0 && list.e[0].nvq == 0 && list.e[0].nvi == 0);
	CHECK(list.e[1].scid == 3 && list.e[1].pcid == 1);
	/* CNTID: the entries from that SCID on. */
	CHECK(identify(&t.h, NVME_CNS_SEC_CTRL_LIST, 3, &list) == 0);
	CHECK(list.num == 1 && list.e[0].scid == 3);
	CHECK(identify(&t.h, NVME_CNS_SEC_CTRL_LIST, 4, &list) == 0);
	CHECK(list.num == 0);
	/* The primary has its private resources: 8 I/O queue pairs, 13 vectors. */
	CHECK(get_num_queues(&t.h, &dw0) == 0);
	CHECK(dw0 == (7u | 7u << 16));
	CHECK(nvme_host_set_num_queues(&t.h, 63, 63, &dw0) == 0);
	CHECK(dw0 == (7u | 7u << 16));
	CHECK(sc(nvme_host_create_io_queues(&t.h, 9, 16, true, 1)) == NVME_SC_QID_INVALID);
	CHECK(sc(nvme_host_create_io_queues(&t.h, 1, 16, true, 13)) == NVME_SC_INVALID_VECTOR);
	CHECK(sc(nvme_host_create_io_queues(&t.h, 8, 16, true, 12)) == 0);
	CHECK(nvme_itest_stop(&t, false) == 0);
}

/* Every action, and every hostile value refused with its status, the daemon serving on. */
static void test_hostile(const char *build)
{
	struct nvme_pri_ctrl_cap cap;
	struct nvme_sec_ctrl_list list;
	struct nvme_itest t;
	uint32_t dw0 = 0;

	(void)build;
	if (!daemon_up(&t, g_args))
		return;
	/* Reserved actions, resource types, CNTLIDs. */
	for (uint8_t act = 0; act < 16; act++) {
		if (act == 1 || act == 7 || act == 8 || act == 9)
			continue;
		CHECK(virt(&t.h, act, 0, 2, 1, NULL) == NVME_SC_INVALID_FIELD);
	}
	for (uint8_t rt = 2; rt < 8; rt++) {
		CHECK(virt(&t.h, NVME_VIRT_ACT_SEC_ASSIGN, rt, 2, 1, NULL) ==
		      NVME_SC_INVALID_RESOURCE_ID);
		CHECK(virt(&t.h, NVME_VIRT_ACT_PRI_FLEX_ALLOC, rt, 1, 1, NULL) ==
		      NVME_SC_INVALID_RESOURCE_ID);
	}
	for (uint8_t act = 7; act <= 9; act++) {
		CHECK(virt(&t.h, act, 0, 0, 1, NULL) == NVME_SC_INVALID_CTRL_ID);
		CHECK(virt(&t.h, act, 0, 4, 1, NULL) == NVME_SC_INVALID_CTRL_ID);
		CHECK(virt(&t.h, act, 0, 0xffff, 1, NULL) == NVME_SC_INVALID_CTRL_ID);
		/* The primary is not a secondary. */
		CHECK(virt(&t.h, act, 0, 1, 1, NULL) == NVME_SC_INVALID_CTRL_ID);
	}
	/* Primary Flexible Allocation names the primary. */
	CHECK(virt(&t.h, NVME_VIRT_ACT_PRI_FLEX_ALLOC, 0, 2, 1, NULL) == NVME_SC_INVALID_CTRL_ID);
	/* More than one secondary may have, more than there are. */
	CHECK(virt(&t.h, NVME_VIRT_ACT_SEC_ASSIGN, NVME_VIRT_RT_VQ, 2, 5, NULL) ==
	      NVME_SC_INVALID_NUM_CTRL_RES);
	CHECK(virt(&t.h, NVME_VIRT_ACT_SEC_ASSIGN, NVME_VIRT_RT_VI, 2, 3, NULL) ==
	      NVME_SC_INVALID_NUM_CTRL_RES);
	CHECK(virt(&t.h, NVME_VIRT_ACT_PRI_FLEX_ALLOC, NVME_VIRT_RT_VQ, 1, 9, NULL) ==
	      NVME_SC_INVALID_NUM_CTRL_RES);
	/* Online without resources, with one VQ (no I/O queue), without a VI. */
	CHECK(virt(&t.h, NVME_VIRT_ACT_SEC_ONLINE, 0, 2, 0, NULL) ==
	      NVME_SC_INVALID_SEC_CTRL_STATE);
	CHECK(virt(&t.h, NVME_VIRT_ACT_SEC_ASSIGN, NVME_VIRT_RT_VQ, 2, 1, &dw0) == 0 && dw0 == 1);
	CHECK(virt(&t.h, NVME_VIRT_ACT_SEC_ASSIGN, NVME_VIRT_RT_VI, 2, 1, &dw0) == 0 && dw0 == 1);
	CHECK(virt(&t.h, NVME_VIRT_ACT_SEC_ONLINE, 0, 2, 0, NULL) ==
	      NVME_SC_INVALID_SEC_CTRL_STATE);
	CHECK(virt(&t.h, NVME_VIRT_ACT_SEC_ASSIGN, NVME_VIRT_RT_VQ, 2, 4, &dw0) == 0 && dw0 == 4);
	CHECK(virt(&t.h, NVME_VIRT_ACT_SEC_ASSIGN, NVME_VIRT_RT_VI, 2, 0, &dw0) == 0 && dw0 == 0);
	CHECK(virt(&t.h, NVME_VIRT_ACT_SEC_ONLINE, 0, 2, 0, NULL) ==
	      NVME_SC_INVALID_SEC_CTRL_STATE);
	/* The pool: 8 VQ; secondary 2 has 4, the primary takes 3 (after its reset), so 1 is
	 * left for secondary 3. */
	CHECK(virt(&t.h, NVME_VIRT_ACT_PRI_FLEX_ALLOC, NVME_VIRT_RT_VQ, 1, 5, NULL) ==
	      NVME_SC_INVALID_NUM_CTRL_RES);
	CHECK(virt(&t.h, NVME_VIRT_ACT_PRI_FLEX_ALLOC, NVME_VIRT_RT_VQ, 1, 3, &dw0) == 0 &&
	      dw0 == 3);
	CHECK(virt(&t.h, NVME_VIRT_ACT_SEC_ASSIGN, NVME_VIRT_RT_VQ, 3, 2, NULL) ==
	      NVME_SC_INVALID_NUM_CTRL_RES);
	CHECK(virt(&t.h, NVME_VIRT_ACT_SEC_ASSIGN, NVME_VIRT_RT_VQ, 3, 1, NULL) == 0);
	CHECK(virt(&t.h, NVME_VIRT_ACT_SEC_ASSIGN, NVME_VIRT_RT_VQ, 3, 2, NULL) ==
	      NVME_SC_INVALID_NUM_CTRL_RES);
	/* Taken for the primary's next reset, not yet its own. */
	CHECK(identify(&t.h, NVME_CNS_PRI_CTRL_CAP, 0, &cap) == 0);
	CHECK(cap.vqrfap == 0 && cap.vqrfa == 5);
	/* Online, then no assignment while online; online again is no change. */
	CHECK(virt(&t.h, NVME_VIRT_ACT_SEC_ASSIGN, NVME_VIRT_RT_VI, 2, 2, NULL) == 0);
	CHECK(virt(&t.h, NVME_VIRT_ACT_SEC_ONLINE, 0, 2, 0, &dw0) == 0);
	CHECK(virt(&t.h, NVME_VIRT_ACT_SEC_ASSIGN, NVME_VIRT_RT_VQ, 2, 2, NULL) ==
	      NVME_SC_INVALID_SEC_CTRL_STATE);
	CHECK(virt(&t.h, NVME_VIRT_ACT_SEC_ASSIGN, NVME_VIRT_RT_VI, 2, 1, NULL) ==
	      NVME_SC_INVALID_SEC_CTRL_STATE);
	CHECK(virt(&t.h, NVME_VIRT_ACT_SEC_ONLINE, 0, 2, 0, NULL) == 0);
	CHECK(identify(&t.h, NVME_CNS_SEC_CTRL_LIST, 0, &list) == 0);
	CHECK(list.num == 2 && list.e[0].scs == 1 && list.e[0].nvq == 4 && list.e[0].nvi == 2);
	CHECK(list.e[1].scs == 0 && list.e[1].nvq == 1 && list.e[1].nvi == 0);
	/* Offline returns its resources to the pool; again is no change. */
	CHECK(virt(&t.h, NVME_VIRT_ACT_SEC_OFFLINE, 0, 2, 0, NULL) == 0);
	CHECK(virt(&t.h, NVME_VIRT_ACT_SEC_OFFLINE, 0, 2, 0, NULL) == 0);
	CHECK(identify(&t.h, NVME_CNS_SEC_CTRL_LIST, 0, &list) == 0);
	CHECK(list.e[0].scs == 0 && list.e[0].nvq == 0 && list.e[0].nvi == 0);
	CHECK(identify(&t.h, NVME_CNS_PRI_CTRL_CAP, 0, &cap) == 0);
	CHECK(cap.vqrfa == 1 && cap.virfa == 0);
	CHECK(virt(&t.h, NVME_VIRT_ACT_SEC_ASSIGN, NVME_VIRT_RT_VQ, 3, 4, NULL) == 0);
	/* A CLR makes the primary's allocation its own: 3 more I/O queue pairs. */
	CHECK(nvme_host_enable(&t.h, 32) == 0);
	CHECK(identify(&t.h, NVME_CNS_PRI_CTRL_CAP, 0, &cap) == 0);
	CHECK(cap.vqrfap == 3 && cap.vqrfa == 4);
	CHECK(get_num_queues(&t.h, &dw0) == 0);
	CHECK(dw0 == (10u | 10u << 16));
	/* The primary gives them back: the pool holds 1 again (4 + 3 + 1). */
	CHECK(virt(&t.h, NVME_VIRT_ACT_PRI_FLEX_ALLOC, NVME_VIRT_RT_VQ, 1, 0, NULL) == 0);
	CHECK(virt(&t.h, NVME_VIRT_ACT_SEC_ASSIGN, NVME_VIRT_RT_VQ, 2, 2, NULL) ==
	      NVME_SC_INVALID_NUM_CTRL_RES);
	CHECK(nvme_host_enable(&t.h, 32) == 0);
	CHECK(virt(&t.h, NVME_VIRT_ACT_SEC_ASSIGN, NVME_VIRT_RT_VQ, 2, 4, NULL) == 0);
	CHECK(identify(&t.h, NVME_CNS_PRI_CTRL_CAP, 0, &cap) == 0);
	CHECK(cap.vqrfap == 0 && cap.vqrfa == 8);
	CHECK(nvme_itest_alive(&t));
	CHECK(nvme_itest_stop(&t, false) == 0);
}

/* A secondary online: its own socket, a host on it, its queues and vectors as assigned; data
 * through it is the namespace's; offline takes it away. */
static void test_online_io(const char *build)
{
	struct nvme_pri_ctrl_cap cap;
	struct nvme_sec_ctrl_list list;
	struct nvme_itest t, s;
	struct stat st;
	char sock[192];
	uint32_t dw0 = 0, flags = 0, count = 0;
	uint16_t cntlid = 0;
	uint8_t *buf;
	uint64_t iova;

	(void)build;
	if (!daemon_up(&t, g_args))
		return;
	snprintf(sock, sizeof(sock), "%s.sec2", t.sock);
	CHECK(stat(sock, &st) != 0); /* no socket while offline */
	/* 3 VQ (the admin queue and 2 I/O queue pairs), 2 VI. */
	CHECK(virt(&t.h, NVME_VIRT_ACT_SEC_ASSIGN, NVME_VIRT_RT_VQ, 2, 3, NULL) == 0);
	CHECK(virt(&t.h, NVME_VIRT_ACT_SEC_ASSIGN, NVME_VIRT_RT_VI, 2, 2, NULL) == 0);
	CHECK(virt(&t.h, NVME_VIRT_ACT_SEC_ONLINE, 0, 2, 0, NULL) == 0);
	if (!CHECK(wait_path(sock, true)) || !CHECK(sec_attach(&s, &t, 2, 2) == 0)) {
		nvme_itest_stop(&t, true);
		return;
	}
	/* Its function has the vectors it was given. */
	CHECK(vfu_client_irq_info(s.c, VFIO_PCI_MSIX_IRQ_INDEX, &flags, &count) == 0 && count == 2);
	CHECK(!(id_oacs(&s.h, &cntlid) & NVME_OACS_VIRT_MGMT));
	CHECK(cntlid == 2);
	/* CNS 14h on a secondary: its own resources; it lists no secondaries. */
	CHECK(identify(&s.h, NVME_CNS_PRI_CTRL_CAP, 0, &cap) == 0);
	CHECK(cap.cntlid == 2 && cap.vqprt == 3 && cap.viprt == 2 && cap.vqfrt == 0);
	CHECK(identify(&s.h, NVME_CNS_SEC_CTRL_LIST, 0, &list) == 0 && list.num == 0);
	CHECK(virt(&s.h, NVME_VIRT_ACT_SEC_ASSIGN, 0, 3, 1, NULL) == NVME_SC_INVALID_OPCODE);
	/* Two I/O queue pairs, vectors 0 and 1: no third queue, no third vector. */
	CHECK(get_num_queues(&s.h, &dw0) == 0 && dw0 == (1u | 1u << 16));
	CHECK(nvme_host_set_num_queues(&s.h, 15, 15, &dw0) == 0 && dw0 == (1u | 1u << 16));
	CHECK(sc(nvme_host_create_io_queues(&s.h, 1, 16, true, 2)) == NVME_SC_INVALID_VECTOR);
	CHECK(nvme_host_create_io_queues(&s.h, 1, 16, true, 1) == 0);
	CHECK(nvme_host_create_io_queues(&s.h, 2, 16, true, 0) == 0);
	CHECK(sc(nvme_host_create_io_queues(&s.h, 3, 16, true, 1)) == NVME_SC_QID_INVALID);
	/* The namespace is the subsystem's: written through the secondary on both queues, read
	 * through the primary. */
	iova = nvme_host_alloc(&s.h, 4096, (void **)&buf);
	for (uint32_t i = 0; i < 4096; i++)
		buf[i] = (uint8_t)(i * 7 + 3);
	CHECK(nvme_host_rw(&s.h, 1, NVME_CMD_WRITE, 1, 16, 4, iova, 2048) == 0);
	CHECK(nvme_host_rw(&s.h, 2, NVME_CMD_WRITE, 1, 20, 4, iova + 2048, 2048) == 0);
	{
		uint8_t *pbuf;
		uint64_t piova = nvme_host_alloc(&t.h, 4096, (void **)&pbuf);

		CHECK(nvme_host_create_io_queues(&t.h, 1, 16, true, 1) == 0);
		memset(pbuf, 0, 4096);
		CHECK(nvme_host_rw(&t.h, 1, NVME_CMD_READ, 1, 16, 8, piova, 4096) == 0);
		CHECK(memcmp(pbuf, buf, 4096) == 0);
	}
	/* The primary's counts: 3 VQ and 2 VI with secondary 2. */
	CHECK(identify(&t.h, NVME_CNS_PRI_CTRL_CAP, 0, &cap) == 0);
	CHECK(cap.vqrfa == 3 && cap.virfa == 2);
	CHECK(identify(&t.h, NVME_CNS_SEC_CTRL_LIST, 0, &list) == 0);
	CHECK(list.e[0].scs == 1 && list.e[0].nvq == 3 && list.e[0].nvi == 2);
	/* Offline: the function goes (its host sees the device removed), the socket with it. */
	CHECK(virt(&t.h, NVME_VIRT_ACT_SEC_OFFLINE, 0, 2, 0, NULL) == 0);
	CHECK(wait_path(sock, false));
	CHECK(nvme_host_reg_read32(&s.h, NVME_REG_CSTS) == 0xffffffffu);
	nvme_itest_detach(&s);
	CHECK(identify(&t.h, NVME_CNS_SEC_CTRL_LIST, 0, &list) == 0);
	CHECK(list.e[0].scs == 0 && list.e[0].nvq == 0 && list.e[0].nvi == 0);
	/* And online again, with other resources. */
	CHECK(virt(&t.h, NVME_VIRT_ACT_SEC_ASSIGN, NVME_VIRT_RT_VQ, 2, 2, NULL) == 0);
	CHECK(virt(&t.h, NVME_VIRT_ACT_SEC_ASSIGN, NVME_VIRT_RT_VI, 2, 1, NULL) == 0);
	CHECK(virt(&t.h, NVME_VIRT_ACT_SEC_ONLINE, 0, 2, 0, NULL) == 0);
	if (CHECK(sec_attach(&s, &t, 2, 1) == 0)) {
		CHECK(get_num_queues(&s.h, &dw0) == 0 && dw0 == 0);
		CHECK(nvme_host_create_io_queues(&s.h, 1, 16, true, 0) == 0);
		CHECK(sc(nvme_host_create_io_queues(&s.h, 2, 16, true, 0)) == NVME_SC_QID_INVALID);
		CHECK(nvme_host_rw(&s.h, 1, NVME_CMD_READ, 1, 16, 4, iova, 2048) == 0);
		nvme_itest_detach(&s);
	}
	CHECK(nvme_itest_alive(&t));
	/* The daemon's end closes the secondary with its primary. */
	CHECK(nvme_itest_stop(&t, false) == 0);
	CHECK(wait_path(sock, false));
}

/* The assignment is the device's: SIGKILL and a restart keep it, the secondary comes back
 * online at its socket, and the primary's allocation made for after its reset is its own
 * (a power cycle is a reset). Offline is kept too. A state file that does not fit is refused. */
static void test_persist(const char *build)
{
	char dir[] = "/tmp/nvme-sec-XXXXXX", state[64], sock[192];
	const char *args[] = { "--malloc", "4M", "--io-queues", "16", "--secondaries", "2:8:4:4:2",
			       "--state-file", state, NULL };
	struct nvme_pri_ctrl_cap cap;
	struct nvme_sec_ctrl_list list;
	struct nvme_itest t, s;
	struct stat st;
	uint32_t dw0;

	(void)build;
	if (!CHECK(mkdtemp(dir) != NULL))
		return;
	snprintf(state, sizeof(state), "%s/ctrl.state", dir);
	if (!daemon_up(&t, args))
		goto out;
	CHECK(virt(&t.h, NVME_VIRT_ACT_SEC_ASSIGN, NVME_VIRT_RT_VQ, 3, 3, NULL) == 0);
	CHECK(virt(&t.h, NVME_VIRT_ACT_SEC_ASSIGN, NVME_VIRT_RT_VI, 3, 2, NULL) == 0);
	CHECK(virt(&t.h, NVME_VIRT_ACT_SEC_ONLINE, 0, 3, 0, NULL) == 0);
	CHECK(virt(&t.h, NVME_VIRT_ACT_SEC_ASSIGN, NVME_VIRT_RT_VQ, 2, 2, NULL) == 0);
	CHECK(virt(&t.h, NVME_VIRT_ACT_PRI_FLEX_ALLOC, NVME_VIRT_RT_VQ, 1, 2, NULL) == 0);
	CHECK(virt(&t.h, NVME_VIRT_ACT_PRI_FLEX_ALLOC, NVME_VIRT_RT_VI, 1, 1, NULL) == 0);
	daemon_kill(&t);

	if (!daemon_up(&t, args))
		goto out;
	CHECK(identify(&t.h, NVME_CNS_PRI_CTRL_CAP, 0, &cap) == 0);
	CHECK(cap.vqrfap == 2 && cap.virfap == 1 && cap.vqrfa == 5 && cap.virfa == 2);
	CHECK(get_num_queues(&t.h, &dw0) == 0 && dw0 == (9u | 9u << 16));
	CHECK(identify(&t.h, NVME_CNS_SEC_CTRL_LIST, 0, &list) == 0);
	CHECK(list.num == 2 && list.e[0].scs == 0 && list.e[0].nvq == 2 && list.e[0].nvi == 0);
	CHECK(list.e[1].scs == 1 && list.e[1].nvq == 3 && list.e[1].nvi == 2);
	/* Back online at its socket next to the new primary's. */
	snprintf(sock, sizeof(sock), "%s.sec3", t.sock);
	CHECK(wait_path(sock, true));
	if (CHECK(sec_attach(&s, &t, 3, 2) == 0)) {
		CHECK(get_num_queues(&s.h, &dw0) == 0 && dw0 == (1u | 1u << 16));
		nvme_itest_detach(&s);
	}
	CHECK(virt(&t.h, NVME_VIRT_ACT_SEC_OFFLINE, 0, 3, 0, NULL) == 0);
	daemon_kill(&t);

	if (!daemon_up(&t, args))
		goto out;
	CHECK(identify(&t.h, NVME_CNS_SEC_CTRL_LIST, 0, &list) == 0);
	CHECK(list.e[1].scs == 0 && list.e[1].nvq == 0 && list.e[1].nvi == 0);
	CHECK(list.e[0].nvq == 2);
	snprintf(sock, sizeof(sock), "%s.sec3", t.sock);
	CHECK(stat(sock, &st) != 0);
	CHECK(nvme_itest_stop(&t, false) == 0);

	/* A state file for another configuration (fewer flexible resources than it assigns) is
	 * refused with its reason; the daemon does not serve. */
	{
		const char *small[] = { "--malloc", "4M", "--io-queues", "16", "--secondaries",
					"2:2:4", "--state-file", state, NULL };
		FILE *f;

		CHECK(nvme_itest_start(&t, g_build, small) != 0);
		/* Sections a hostile or stale file could hold, each refused. */
		static const char *const bad[] = {
		    /* a CNTLID that is no secondary's */
		    "{\"vq_primary\": 0, \"vi_primary\": 0, \"secondaries\": [{\"cntlid\": 9, "
		    "\"nvq\": 2, \"nvi\": 1, \"online\": true}]}",
		    /* the primary's CNTLID */
		    "{\"vq_primary\": 0, \"vi_primary\": 0, \"secondaries\": [{\"cntlid\": 1, "
		    "\"nvq\": 2, \"nvi\": 1, \"online\": false}]}",
		    /* twice the same secondary */
		    "{\"vq_primary\": 0, \"vi_primary\": 0, \"secondaries\": [{\"cntlid\": 2, "
		    "\"nvq\": 2, \"nvi\": 1, \"online\": false}, {\"cntlid\": 2, \"nvq\": 1, "
		    "\"nvi\": 1, \"online\": false}]}",
		    /* more than one secondary may have */
		    "{\"vq_primary\": 0, \"vi_primary\": 0, \"secondaries\": [{\"cntlid\": 2, "
		    "\"nvq\": 5, \"nvi\": 1, \"online\": false}]}",
		    /* online without an I/O queue */
		    "{\"vq_primary\": 0, \"vi_primary\": 0, \"secondaries\": [{\"cntlid\": 2, "
		    "\"nvq\": 1, \"nvi\": 1, \"online\": true}]}",
		    /* the primary's and the secondaries' together more than there are */
		    "{\"vq_primary\": 6, \"vi_primary\": 0, \"secondaries\": [{\"cntlid\": 2, "
		    "\"nvq\": 3, \"nvi\": 1, \"online\": false}]}",
		    /* out of range, of the wrong type, missing */
		    "{\"vq_primary\": 9, \"vi_primary\": 0, \"secondaries\": []}",
		    "{\"vq_primary\": -1, \"vi_primary\": 0, \"secondaries\": []}",
		    "{\"vq_primary\": \"2\", \"vi_primary\": 0, \"secondaries\": []}",
		    "{\"vq_primary\": 0, \"secondaries\": []}",
		    "{\"vq_primary\": 0, \"vi_primary\": 0, \"secondaries\": {}}",
		    "{\"vq_primary\": 0, \"vi_primary\": 0, \"secondaries\": [{\"cntlid\": 2, "
		    "\"nvq\": 2, \"nvi\": 1, \"online\": 1}]}",
		    "{\"vq_primary\": 0, \"vi_primary\": 0, \"secondaries\": [1, 2, 3]}",
		    "[]",
		};

		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			f = fopen(state, "w");
			if (!CHECK(f != NULL))
				break;
			fprintf(f, "{\"version\": 1, \"virtualization\": %s}\n", bad[i]);
			fclose(f);
			if (!CHECK(nvme_itest_start(&t, g_build, args) != 0))
				fprintf(stderr, "  taken: %s\n", bad[i]);
		}
		/* And a good one, written by hand: taken. */
		f = fopen(state, "w");
		if (CHECK(f != NULL)) {
			fputs("{\"version\": 1, \"virtualization\": {\"vq_primary\": 1, "
			      "\"vi_primary\": 0, \"secondaries\": [{\"cntlid\": 3, \"nvq\": 4, "
			      "\"nvi\": 2, \"online\": false}]}}\n",
			      f);
			fclose(f);
		}
		if (daemon_up(&t, args)) {
			CHECK(identify(&t.h, NVME_CNS_PRI_CTRL_CAP, 0, &cap) == 0);
			CHECK(cap.vqrfap == 1 && cap.vqrfa == 4 && cap.virfa == 2);
			CHECK(nvme_itest_stop(&t, false) == 0);
		}
	}
out:
	unlink(state);
	rmdir(dir);
}

/* Over JSON-RPC: the listener's parameters, their refusals, what nvmf_get_subsystems shows and
 * save_config keeps (the primary with its parameters, not the secondaries' listeners). */
static void test_rpc(const char *build)
{
	char rpc[128], out[16384], sock2[192], dir[160];
	const char *args[] = { "--malloc", "4M", "--io-queues", "16", "--secondaries", "2:8:4:4:2",
			       "-r", rpc, NULL };
	struct nvme_itest t;
	struct stat st;

	(void)build;
	snprintf(rpc, sizeof(rpc), "/tmp/nvme-sec-rpc-%d.sock", getpid());
	if (!daemon_up(&t, args))
		return;
	snprintf(sock2, sizeof(sock2), "%s/two.sock", t.dir);
	snprintf(dir, sizeof(dir), "%s/secs", t.dir);
	CHECK(mkdir(dir, 0700) == 0);
	{
		const char *bad[][16] = {
		    { "--secondaries", "128" },
		    { "--secondaries", "1", "--vq_flexible", "16" },
		    { "--secondaries", "1", "--vi_flexible", "17" },
		    { "--secondaries", "1", "--vq_flexible", "4", "--max_vq_per_secondary", "5" },
		    { "--secondaries", "1", "--max_vi_per_secondary", "0", "--vi_flexible", "0",
		      "--vq_flexible", "1" },
		    { "--vq_flexible", "4" },
		    { "--secondaries", "1", "--secondary_dir", "/nonexistent-dir" },
		    { "--secondaries", "20000" },
		};

		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			const char *a[24] = { "nvmf_subsystem_add_listener", "--nqn",
					      "nqn.2026-11.io.nvme-emu:NVMEEMU0001",
					      "--listen_address.trtype", "PCIE_EMU",
					      "--listen_address.traddr", sock2 };
			int n = 7;

			for (int k = 0; bad[i][k]; k++)
				a[n++] = bad[i][k];
			a[n] = NULL;
			CHECK(nvme_itest_rpc(g_build, rpc, a, NULL, 0) != 0);
			CHECK(stat(sock2, &st) != 0);
		}
	}
	{
		/* A second primary, its one secondary's socket in a directory. */
		const char *a[] = { "nvmf_subsystem_add_listener", "--nqn",
				    "nqn.2026-11.io.nvme-emu:NVMEEMU0001", "--listen_address.trtype",
				    "PCIE_EMU", "--listen_address.traddr", sock2, "--secondaries", "1",
				    "--secondary_dir", dir, NULL };
		const char *get[] = { "nvmf_get_subsystems", NULL };
		const char *save[] = { "save_config", NULL };

		CHECK(nvme_itest_rpc(g_build, rpc, a, NULL, 0) == 0);
		CHECK(nvme_itest_rpc(g_build, rpc, get, out, sizeof(out)) == 0);
		/* CNTLIDs: primary 1 (secondaries 2, 3), primary 4 (secondary 5). */
		CHECK(strstr(out, "\"vq_flexible\": 8") != NULL);
		CHECK(strstr(out, "/secs/sec5") != NULL);
		CHECK(nvme_itest_rpc(g_build, rpc, save, out, sizeof(out)) == 0);
		CHECK(strstr(out, "\"secondaries\": 2") != NULL);
		CHECK(strstr(out, "\"secondaries\": 1") != NULL);
		CHECK(strstr(out, "\"secondary_dir\"") != NULL);
	}
	/* A secondary online is a listener the RPC lists and will not remove. */
	CHECK(virt(&t.h, NVME_VIRT_ACT_SEC_ASSIGN, NVME_VIRT_RT_VQ, 2, 2, NULL) == 0);
	CHECK(virt(&t.h, NVME_VIRT_ACT_SEC_ASSIGN, NVME_VIRT_RT_VI, 2, 1, NULL) == 0);
	CHECK(virt(&t.h, NVME_VIRT_ACT_SEC_ONLINE, 0, 2, 0, NULL) == 0);
	{
		char sec[200];
		const char *get[] = { "nvmf_get_subsystems", NULL };
		const char *save[] = { "save_config", NULL };
		const char *rm[] = { "nvmf_subsystem_remove_listener", "--nqn",
				     "nqn.2026-11.io.nvme-emu:NVMEEMU0001", "--listen_address.trtype",
				     "PCIE_EMU", "--listen_address.traddr", sec, NULL };

		snprintf(sec, sizeof(sec), "%s.sec2", t.sock);
		CHECK(nvme_itest_rpc(g_build, rpc, get, out, sizeof(out)) == 0);
		CHECK(strstr(out, "\"primary_cntlid\": 1") != NULL);
		CHECK(nvme_itest_rpc(g_build, rpc, save, out, sizeof(out)) == 0);
		CHECK(strstr(out, sec) == NULL);
		CHECK(nvme_itest_rpc(g_build, rpc, rm, NULL, 0) != 0);
		CHECK(stat(sec, &st) == 0);
	}
	{
		/* The second primary goes with its (offline) secondary's slot. */
		const char *rm[] = { "nvmf_subsystem_remove_listener", "--nqn",
				     "nqn.2026-11.io.nvme-emu:NVMEEMU0001", "--listen_address.trtype",
				     "PCIE_EMU", "--listen_address.traddr", sock2, NULL };

		CHECK(nvme_itest_rpc(g_build, rpc, rm, NULL, 0) == 0);
		CHECK(stat(sock2, &st) != 0);
	}
	CHECK(nvme_itest_stop(&t, false) == 0);
	rmdir(dir);
	unlink(rpc);
}

/* Daemon options refused before anything is served. */
static void test_bad_options(const char *build)
{
	const char *bad[][8] = {
	    { "--malloc", "1M", "--secondaries", "0", NULL },
	    { "--malloc", "1M", "--secondaries", "2:8", NULL },
	    { "--malloc", "1M", "--secondaries", "x", NULL },
	    { "--malloc", "1M", "--secondaries", "200", NULL },
	    { "--malloc", "1M", "--io-queues", "4", "--secondaries", "1:4:1", NULL },
	    { "--malloc", "1M", "--secondaries", "1", "--secondary-dir", "/nonexistent", NULL },
	};

	(void)build;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct nvme_itest t;

		CHECK(nvme_itest_start(&t, g_build, bad[i]) != 0);
	}
}

static void tests_io(const char *build)
{
	itest_run("online_io", test_online_io, build);
}

int main(int argc, char **argv)
{
	g_build = argc > 1 ? argv[1] : "build";
	itest_run("absent", test_absent, g_build);
	itest_run("bad_options", test_bad_options, g_build);
	itest_run("caps", test_caps, g_build);
	itest_run("hostile", test_hostile, g_build);
	itest_run("persist", test_persist, g_build);
	itest_run("rpc", test_rpc, g_build);
	nvme_itest_each_mode(g_build, tests_io);
	return itest_summary();
}
