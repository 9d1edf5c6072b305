/* tests/integration/rados/resv_host.h - one nvme-emu daemon exporting an RBD image as namespace 1
 * with shared_reservations, and the NVMe host driving it through its own socket: what the shared
 * reservation test (shared_resv_test.c) and the cluster bench (tests/perf/cluster_bench.c) run
 * several of against one cluster (CEPH_CONF). */
#ifndef NVME_EMU_TESTS_INTEGRATION_RADOS_RESV_HOST_H
#define NVME_EMU_TESTS_INTEGRATION_RADOS_RESV_HOST_H

#include <stdbool.h>
#include <stdint.h>

#include "tests/integration/nvme_itest.h"

#define RESV_HOST_NQN "nqn.2026-11.io.nvme-emu:shared-resv"

struct resv_host {
	struct nvme_itest t;
	char rpc[96], fn[120], perf_fn[120];
	uint8_t *buf; /* 4 KiB of the host's memory: keys at 0 and 1024, data at 2048 */
	uint64_t iova;
	uint64_t hostid;
};

uint64_t resv_host_now_us(void);
/* Starts daemon `name` (its controller CNTLID cntlid; 0: allocated through the cluster, as every
 * daemon exporting the shared namespace does with a range of 1..65519) on pool/image, attaches the host, sets its
 * 64-bit Host Identifier, and waits until the daemon read the shared record (a write goes
 * through). With perf, a second function of the subsystem is listened on at x->perf_fn (for
 * nvme-emu-perf). 0 or -errno, `why` says which step failed. */
int resv_host_up(struct resv_host *x, const char *build, const char *name, uint64_t hostid,
		 unsigned int cntlid, const char *pool, const char *image, bool perf,
		 const char **why);
/* The daemon's exit status (0: a clean stop). */
int resv_host_down(struct resv_host *x, bool show_log);
int resv_host_rpc(struct resv_host *x, const char *build, const char *const *args, char *out,
		  unsigned long cap);

/* NVMe commands on namespace 1 (statuses: SCT and SC, or -errno). */
int resv_host_resv(struct resv_host *x, uint8_t opc, uint32_t cdw10, uint64_t k1, uint64_t k2);
int resv_host_resv_submit(struct resv_host *x, uint8_t opc, uint32_t cdw10, uint64_t k1,
			  uint64_t k2);
int resv_host_wait(struct resv_host *x, int cid);
int resv_host_report(struct resv_host *x, uint32_t *gen, uint8_t *rtype, uint16_t *regctl);
int resv_host_write(struct resv_host *x, uint64_t lba, uint8_t fill);
int resv_host_read(struct resv_host *x, uint64_t lba);
int resv_host_resv_log(struct resv_host *x, uint8_t *type);

#endif
