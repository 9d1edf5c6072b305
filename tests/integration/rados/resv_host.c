/* tests/integration/rados/resv_host.c - a daemon with a shared-reservation namespace on an RBD
 * image and its NVMe host (resv_host.h). */
#include "tests/integration/rados/resv_host.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "controller/nvme_spec.h"

#define ST_MASK 0x7ff

uint64_t resv_host_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}


int resv_host_rpc(struct resv_host *x, const char *build, const char *const *args, char *out,
		  unsigned long cap)
{
	return nvme_itest_rpc(build, x->rpc, args, out, cap);
}

static int resv_host_hostid(struct resv_host *x)
{
	struct nvme_sqe sqe = {0};

	memcpy(x->buf, &x->hostid, 8);
	sqe.cdw0.bits.opc = NVME_ADM_SET_FEATURES;
	sqe.cdw10 = NVME_FEAT_HOST_ID;
	sqe.dptr.prp.prp1 = x->iova;
	return nvme_host_cmd(&x->t.h, 0, &sqe, NULL);
}

/* A reservation command on nsid 1 with two 8-byte keys as its data. */
int resv_host_resv(struct resv_host *x, uint8_t opc, uint32_t cdw10, uint64_t k1, uint64_t k2)
{
	struct nvme_sqe sqe = {0};
	int st;

	memcpy(x->buf, &k1, 8);
	memcpy(x->buf + 8, &k2, 8);
	sqe.cdw0.bits.opc = opc;
	sqe.nsid = 1;
	sqe.cdw10 = cdw10;
	sqe.dptr.prp.prp1 = x->iova;
	st = nvme_host_cmd(&x->t.h, 1, &sqe, NULL);
	return st < 0 ? st : st & ST_MASK;
}

/* A reservation command submitted without waiting (cid, or -errno); its status by host_wait. */
int resv_host_resv_submit(struct resv_host *x, uint8_t opc, uint32_t cdw10, uint64_t k1, uint64_t k2)
{
	struct nvme_sqe sqe = {0};

	memcpy(x->buf + 1024, &k1, 8);
	memcpy(x->buf + 1032, &k2, 8);
	sqe.cdw0.bits.opc = opc;
	sqe.nsid = 1;
	sqe.cdw10 = cdw10;
	sqe.dptr.prp.prp1 = x->iova + 1024;
	return nvme_host_submit(&x->t.h, 1, &sqe, false);
}

int resv_host_wait(struct resv_host *x, int cid)
{
	struct nvme_cqe cqe;

	if (cid < 0)
		return cid;
	for (uint64_t end = resv_host_now_us() + 30000000; resv_host_now_us() < end;) {
		if (nvme_host_reap(&x->t.h, 1, &cqe) == 1 && cqe.cid == cid)
			return (cqe.status >> 1) & ST_MASK;
		usleep(100);
	}
	return -ETIMEDOUT;
}

/* Reservation Report: generation, type and the number of registrants. */
int resv_host_report(struct resv_host *x, uint32_t *gen, uint8_t *rtype, uint16_t *regctl)
{
	struct nvme_sqe sqe = {0};
	int st;

	memset(x->buf, 0, 4096);
	sqe.cdw0.bits.opc = NVME_CMD_RESV_REPORT;
	sqe.nsid = 1;
	sqe.cdw10 = 4096 / 4 - 1;
	sqe.dptr.prp.prp1 = x->iova;
	st = nvme_host_cmd(&x->t.h, 1, &sqe, NULL);
	if (st)
		return st < 0 ? st : st & ST_MASK;
	memcpy(gen, x->buf, 4);
	*rtype = x->buf[4];
	memcpy(regctl, x->buf + 5, 2);
	return 0;
}

/* One block at `lba`: a write of `fill`, or a read into buf+2048. NVMe status. */
int resv_host_write(struct resv_host *x, uint64_t lba, uint8_t fill)
{
	memset(x->buf + 2048, fill, 512);
	return nvme_host_rw(&x->t.h, 1, NVME_CMD_WRITE, 1, lba, 1, x->iova + 2048, 512) & ST_MASK;
}

int resv_host_read(struct resv_host *x, uint64_t lba)
{
	return nvme_host_rw(&x->t.h, 1, NVME_CMD_READ, 1, lba, 1, x->iova + 2048, 512) & ST_MASK;
}

/* Log page 80h (Reservation Notification): its type (0: none). */
int resv_host_resv_log(struct resv_host *x, uint8_t *type)
{
	struct nvme_sqe sqe = {0};
	int st;

	memset(x->buf, 0, 64);
	sqe.cdw0.bits.opc = NVME_ADM_GET_LOG_PAGE;
	sqe.cdw10 = NVME_LOG_RESV_NOTIFY | ((64 / 4 - 1) << 16);
	sqe.dptr.prp.prp1 = x->iova;
	st = nvme_host_cmd(&x->t.h, 0, &sqe, NULL);
	*type = x->buf[8];
	return st;
}

int resv_host_up(struct resv_host *x, const char *build, const char *name, uint64_t hostid,
		 unsigned int cntlid, const char *pool, const char *image, bool perf,
		 const char **why)
{
	const char *args[] = {"--malloc", "1M", "--serial", name, "-r", x->rpc, NULL};
	char id[16], pool_s[64], image_s[128];
	int rc;

	memset(x, 0, sizeof(*x));
	snprintf(x->rpc, sizeof(x->rpc), "/tmp/.shared-resv-%s-%d.sock", name, (int)getpid());
	x->hostid = hostid;
	*why = "the daemon starts";
	rc = nvme_itest_start(&x->t, build, args);
	if (rc)
		return rc;
	/* The functions' sockets keep their paths across a restart of daemon `name`: they name its
	 * controllers' CNTLIDs in the cluster, which a restarted daemon takes back. */
	snprintf(x->fn, sizeof(x->fn), "/tmp/.shared-resv-%s-%d.fn", name, (int)getpid());
	snprintf(x->perf_fn, sizeof(x->perf_fn), "/tmp/.shared-resv-%s-%d.perf", name, (int)getpid());
	unlink(x->fn);
	unlink(x->perf_fn);
	snprintf(id, sizeof(id), "%u", cntlid ? cntlid : 1);
	snprintf(pool_s, sizeof(pool_s), "%s", pool);
	snprintf(image_s, sizeof(image_s), "%s", image);
	{
		const char *m1[] = {"bdev_rbd_create", "--name", "R0", "--pool_name", pool_s,
				    "--rbd_name", image_s, "--block_size", "512", NULL};
		const char *m2[] = {"nvmf_create_subsystem", "--nqn", RESV_HOST_NQN,
				    "--serial_number", "\"SHARED-1\"", "--min_cntlid", id,
				    "--max_cntlid", perf || !cntlid ? "65519" : id, NULL};
		const char *m3[] = {"nvmf_subsystem_add_ns", "--nqn", RESV_HOST_NQN,
				    "--namespace.bdev_name", "R0", "--namespace.nsid", "1",
				    "--namespace.shared_reservations", "true", NULL};
		const char *m4[] = {"nvmf_subsystem_add_listener", "--nqn", RESV_HOST_NQN,
				    "--listen_address.trtype", "PCIE_EMU",
				    "--listen_address.traddr", x->fn, NULL};
		const char *m5[] = {"nvmf_subsystem_add_listener", "--nqn", RESV_HOST_NQN,
				    "--listen_address.trtype", "PCIE_EMU",
				    "--listen_address.traddr", x->perf_fn, NULL};

		*why = "bdev_rbd_create, nvmf_create_subsystem, nvmf_subsystem_add_ns (shared), "
		       "nvmf_subsystem_add_listener";
		if (resv_host_rpc(x, build, m1, NULL, 0) || resv_host_rpc(x, build, m2, NULL, 0) ||
		    resv_host_rpc(x, build, m3, NULL, 0) || resv_host_rpc(x, build, m4, NULL, 0) ||
		    (perf && resv_host_rpc(x, build, m5, NULL, 0)))
			return -EIO;
	}
	snprintf(x->t.sock, sizeof(x->t.sock), "%s", x->fn);
	*why = "the host attaches, enables the controller, creates its queues";
	if (nvme_itest_attach(&x->t, 2) || nvme_host_enable(&x->t.h, 32) ||
	    nvme_host_create_io_queues(&x->t.h, 1, 32, true, 1))
		return -EIO;
	x->iova = nvme_host_alloc(&x->t.h, 4096, (void **)&x->buf);
	*why = "Set Features Host Identifier";
	if (resv_host_hostid(x))
		return -EIO;
	/* Until the daemon has read the shared record it refuses writes: wait until its log says
	 * it admits them (a write may still conflict: another host may hold the reservation). */
	*why = "the shared record was read: writes admitted";
	{
		char cmd[256];

		snprintf(cmd, sizeof(cmd), "grep -q 'state current .*writes admitted' %s", x->t.log);
		for (uint64_t end = resv_host_now_us() + 20000000; resv_host_now_us() < end;) {
			if (system(cmd) == 0)
				return 0;
			usleep(50000);
		}
	}
	return -ETIMEDOUT;
}

/* The daemon's exit status (0: a clean stop; under ASan, nothing leaked). */
int resv_host_down(struct resv_host *x, bool show_log)
{
	int rc;

	nvme_itest_detach(&x->t);
	rc = nvme_itest_stop(&x->t, show_log);
	unlink(x->rpc);
	unlink(x->fn);
	unlink(x->perf_fn);
	return rc;
}

