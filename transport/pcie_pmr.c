/* transport/pcie_pmr.c - the Persistent Memory Region (NVMe over PCIe Transport 1.0 section 3.8:
 * PMRCAP, PMRCTL, PMRSTS, PMREBS, PMRSWTP, PMRMSCL/U at BAR0 0xE00): BAR4 is memory the host
 * maps, kept in a file the operator names.
 *
 * What the host is promised, and how: the memory the client maps is the function's own sealed
 * memfd (hw/), never the operator's file, so a client cannot truncate the file under us nor
 * shrink it; the file is written from the memory by a flush (pwrite of the region, then
 * fdatasync) on a thread of its own, so the main loop and every other function go on. Two ways
 * tell the host its writes are persistent:
 * - PMRCAP.PMRWBM bit 1: a read of PMRSTS while the PMR is enabled completes once every byte
 *   written before it is in the file (the read is held: hw/'s stateful_read, vfu's held
 *   REGION_READ reply; only this client's vCPU waits). A load from a mapped page reaches nobody,
 *   so bit 0 (any PMR read is a barrier) cannot be offered.
 * - the register state machine: when the host clears PMRCTL.EN, PMRSTS.NRDY stays 0 until the
 *   flush asked at that moment is done, and becomes 1 then.
 * A failed flush sets PMRSTS.HSTS to 3 (unreliable) and ERR. An FLR and the function's destroy
 * disable the PMR the same way and wait for the flush. The file is read into the memory when the function is created, so a restarted
 * daemon offers what was last made persistent. Main thread unless noted. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/evloop.h"
#include "common/log.h"
#include "controller/nvme_spec.h"
#include "transport/pcie_internal.h"

/* PMRSTS.NRDY may take this long after PMRCTL.EN changes (PMRCAP.PMRTO, 500 ms units): a
 * flush of the largest region to a slow disk. */
#define PCIE_PMR_TIMEOUT 120
/* The region is compared with the file and written in pieces of this size: only pieces that
 * changed are written, so a host asking for barriers in a loop costs reads of the page cache,
 * not a rewrite of the whole region each time. */
#define PCIE_PMR_WRITE_CHUNK (64u << 10)

struct pcie_pmr {
	struct pcie_devmem m;
	struct pcie_ctrlr *pc;
	char *path;
	int fd;
	uint32_t cap, ctl, sts, ebs, swtp;
	uint64_t msc;
	/* Flushes: requests are numbered; `asked` the last, `running` the one the thread
	 * writes (0: none), `done` the last finished; `disable_req` the request a disable made:
	 * NRDY becomes 1 once done reaches it. */
	uint64_t asked, running, done, disable_req;
	int flush_rc; /* the thread's result, read after its message */
	struct evloop_msg done_msg;
	void (*waiter)(void *arg); /* pcie_pmr_quiesce's, once done reaches waiter_req */
	void *waiter_arg;
	uint64_t waiter_req;
	/* A PMRSTS read held as a write barrier (0: none): released once done reaches it. */
	uint64_t read_req;
};

void *pcie_pmr_map(struct pcie_ctrlr *pc, uint64_t addr, uint64_t len, bool *hit)
{
	return pc->pmr ? pcie_devmem_map(&pc->pmr->m, addr, len, hit) : NULL;
}

uint64_t pcie_pmr_size(const struct pcie_ctrlr *pc)
{
	return pc->pmr ? pc->pmr->m.size : 0;
}

int pcie_pmr_open(struct pcie_ctrlr *pc, const char *path, uint64_t size, char *err,
		  size_t err_len)
{
	struct pcie_pmr *pmr = calloc(1, sizeof(*pmr));
	struct stat st;
	int rc;

	if (!pmr || !(pmr->path = strdup(path))) {
		free(pmr);
		snprintf(err, err_len, "out of memory");
		return -ENOMEM;
	}
	pmr->pc = pc;
	pmr->fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (pmr->fd < 0 || fstat(pmr->fd, &st) < 0) {
		rc = -errno;
		snprintf(err, err_len, "PMR file %s: %s", path, strerror(errno));
		goto out_free;
	}
	rc = -EINVAL;
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, err_len, "PMR file %s: not a regular file", path);
		goto out_free;
	}
	if (!size)
		size = (uint64_t)st.st_size;
	if (size < PCIE_DEVMEM_MIN || size > PCIE_DEVMEM_MAX || (size & (size - 1))) {
		snprintf(err, err_len,
			 "PMR of %llu bytes: a power of two from 1 MiB to 1 GiB (the file's size "
			 "when none is given)",
			 (unsigned long long)size);
		goto out_free;
	}
	if ((uint64_t)st.st_size > size) {
		snprintf(err, err_len, "PMR file %s holds %lld bytes, more than the PMR's %llu",
			 path, (long long)st.st_size, (unsigned long long)size);
		goto out_free;
	}
	if ((uint64_t)st.st_size < size && ftruncate(pmr->fd, (off_t)size) < 0) {
		rc = -errno;
		snprintf(err, err_len, "PMR file %s: cannot extend it: %s", path, strerror(errno));
		goto out_free;
	}
	pmr->m.size = size;
	pc->pmr = pmr;
	return 0;

out_free:
	if (pmr->fd >= 0)
		close(pmr->fd);
	free(pmr->path);
	free(pmr);
	return rc;
}

/* The PMR register block as the host reads it. */
static void pcie_pmr_image(const struct pcie_pmr *pmr, uint8_t *img)
{
	uint32_t mscl = (uint32_t)pmr->msc, mscu = (uint32_t)(pmr->msc >> 32);

	memset(img, 0, PCIE_PMR_REGS_SIZE);
	memcpy(img + NVME_REG_PMRCAP - PCIE_PMR_REGS_START, &pmr->cap, 4);
	memcpy(img + NVME_REG_PMRCTL - PCIE_PMR_REGS_START, &pmr->ctl, 4);
	memcpy(img + NVME_REG_PMRSTS - PCIE_PMR_REGS_START, &pmr->sts, 4);
	memcpy(img + NVME_REG_PMREBS - PCIE_PMR_REGS_START, &pmr->ebs, 4);
	memcpy(img + NVME_REG_PMRSWTP - PCIE_PMR_REGS_START, &pmr->swtp, 4);
	memcpy(img + NVME_REG_PMRMSCL - PCIE_PMR_REGS_START, &mscl, 4);
	memcpy(img + NVME_REG_PMRMSCU - PCIE_PMR_REGS_START, &mscu, 4);
}

static void pcie_pmr_write_back(struct pcie_pmr *pmr, const uint8_t *have)
{
	uint8_t img[PCIE_PMR_REGS_SIZE];
	int rc;

	pcie_pmr_image(pmr, img);
	if (have && !memcmp(img, have, sizeof(img)))
		return;
	rc = hw_dev_stateful_modify(pmr->pc->dev, 0, PCIE_PMR_REGS_START, img, sizeof(img));
	if (rc)
		LOG_ERR(PCIE_LOG, "%s: PMR register write-back failed: %d", pmr->pc->vuid, rc);
}

int pcie_pmr_attach(struct pcie_ctrlr *pc)
{
	struct pcie_pmr *pmr = pc->pmr;
	union nvme_pmrcap cap = {.raw = 0};
	union nvme_pmrsts sts = {.raw = 0};
	uint8_t img[PCIE_PMR_REGS_SIZE];
	uint64_t got = 0, off = 0;

	pmr->m.mem = hw_dev_memory(pc->dev, PCIE_PMR_BAR, 0, &got);
	if (!pmr->m.mem || got != pmr->m.size)
		return -EINVAL;
	/* What was made persistent last time (a file extended just now reads as zeroes). */
	while (off < pmr->m.size) {
		ssize_t n = pread(pmr->fd, pmr->m.mem + off, pmr->m.size - off, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			int rc = n < 0 ? -errno : -EIO;

			LOG_ERR(PCIE_LOG, "%s: reading PMR file %s: %s", pc->vuid, pmr->path,
				strerror(-rc));
			return rc;
		}
		off += (uint64_t)n;
	}
	cap.bits.rds = 1;
	cap.bits.wds = 1;
	cap.bits.bir = PCIE_PMR_BAR;
	cap.bits.pmrtu = 0;
	cap.bits.pmrwbm = NVME_PMRWBM_PMRSTS_READ;
	cap.bits.pmrto = PCIE_PMR_TIMEOUT;
	cap.bits.cmss = 1;
	pmr->cap = cap.raw;
	sts.bits.nrdy = 1; /* disabled at power-on */
	pmr->sts = sts.raw;
	/* The elasticity buffer is the whole region (nothing is persistent before a flush),
	 * in MiB; the sustained write throughput is memory's, reported as 1 GiB/s. */
	pmr->ebs = 2u | (uint32_t)(pmr->m.size >> 20) << 8;
	pmr->swtp = 2u | 1024u << 8;
	pcie_pmr_image(pmr, img);
	return hw_dev_set_stateful_default(pc->dev, 0, PCIE_PMR_REGS_START, img, sizeof(img));
}

static void pcie_pmr_flush_done_msg(void *arg);

/* Flush thread: every piece of the region that differs from the file is written to it, then
 * fdatasync. It touches nothing of the PMR after posting its message. */
static int pcie_pmr_flush_piece(struct pcie_pmr *pmr, uint8_t *old, uint64_t off, size_t len)
{
	const uint8_t *now = pmr->m.mem + off;
	size_t done = 0;
	ssize_t n;

	while (done < len) {
		n = pread(pmr->fd, old + done, len - done, (off_t)(off + done));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO; /* the file is never shorter than the PMR */
		done += (size_t)n;
	}
	if (!memcmp(old, now, len))
		return 0;
	for (done = 0; done < len;) {
		n = pwrite(pmr->fd, now + done, len - done, (off_t)(off + done));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		done += (size_t)n;
	}
	return 0;
}

static void *pcie_pmr_flush_main(void *arg)
{
	struct pcie_pmr *pmr = arg;
	uint8_t *old = malloc(PCIE_PMR_WRITE_CHUNK);
	uint64_t off;
	int rc = old ? 0 : -ENOMEM;

	for (off = 0; !rc && off < pmr->m.size; off += PCIE_PMR_WRITE_CHUNK)
		rc = pcie_pmr_flush_piece(pmr, old, off, PCIE_PMR_WRITE_CHUNK);
	free(old);
	if (!rc && fdatasync(pmr->fd) < 0)
		rc = -errno;
	pmr->flush_rc = rc;
	evloop_post(pmr->pc->loop, &pmr->done_msg, pcie_pmr_flush_done_msg, pmr);
	return NULL;
}

static void pcie_pmr_flush_start(struct pcie_pmr *pmr)
{
	pthread_attr_t attr;
	pthread_t tid;
	int rc;

	if (pmr->running || pmr->done == pmr->asked)
		return;
	pmr->running = pmr->asked;
	rc = pthread_attr_init(&attr);
	if (!rc) {
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		rc = pthread_create(&tid, &attr, pcie_pmr_flush_main, pmr);
		pthread_attr_destroy(&attr);
	}
	if (rc) {
		/* No thread: the flush fails as a write would (reported through PMRSTS). */
		pmr->flush_rc = -rc;
		evloop_post(pmr->pc->loop, &pmr->done_msg, pcie_pmr_flush_done_msg, pmr);
	}
}

/* Asks for a flush of everything the memory holds now; returns its number. */
static uint64_t pcie_pmr_flush_ask(struct pcie_pmr *pmr)
{
	pmr->asked++;
	pcie_pmr_flush_start(pmr);
	return pmr->asked;
}

static void pcie_pmr_flush_done_msg(void *arg)
{
	struct pcie_pmr *pmr = arg;
	union nvme_pmrsts sts = {.raw = pmr->sts};

	EVLOOP_ASSERT_OWNER(pmr->pc->loop);
	pmr->done = pmr->running;
	pmr->running = 0;
	if (pmr->flush_rc) {
		LOG_ERR(PCIE_LOG, "%s: PMR flush to %s failed: %s", pmr->pc->vuid, pmr->path,
			strerror(-pmr->flush_rc));
		sts.bits.hsts = 3; /* unreliable */
		sts.bits.err = 1;
	}
	if (!(pmr->ctl & NVME_PMRCTL_EN) && pmr->disable_req && pmr->done >= pmr->disable_req)
		sts.bits.nrdy = 1;
	if (sts.raw != pmr->sts) {
		pmr->sts = sts.raw;
		pcie_pmr_write_back(pmr, NULL);
	}
	pcie_pmr_flush_start(pmr); /* asked again meanwhile */
	if (pmr->read_req && pmr->done >= pmr->read_req) {
		pmr->read_req = 0;
		hw_dev_read_done(pmr->pc->dev);
	}
	if (pmr->waiter && pmr->done >= pmr->waiter_req) {
		void (*fn)(void *arg) = pmr->waiter;

		pmr->waiter = NULL;
		fn(pmr->waiter_arg);
	}
}

/* The window the controller decodes: enabled, CMSE set, CBA valid. */
static void pcie_pmr_window(struct pcie_pmr *pmr)
{
	uint64_t cba = pmr->msc & NVME_PMRMSC_CBA_MASK, win = 0;
	union nvme_pmrsts sts = {.raw = pmr->sts};

	sts.bits.cbai = 0;
	if (pmr->msc & NVME_PMRMSC_CMSE) {
		if ((cba & (pmr->m.size - 1)) || cba + pmr->m.size < cba) {
			LOG_GUEST_ERR(PCIE_LOG, "%s: PMRMSC.CBA 0x%llx invalid for a %llu MiB PMR",
				      pmr->pc->vuid, (unsigned long long)cba,
				      (unsigned long long)(pmr->m.size >> 20));
			sts.bits.cbai = 1;
		} else if (pmr->ctl & NVME_PMRCTL_EN) {
			win = cba | 1;
		}
	}
	pmr->sts = sts.raw;
	__atomic_store_n(&pmr->m.win, win, __ATOMIC_RELEASE);
}

/* PMRCTL.EN 1 -> 0: the controller stops decoding; NRDY once the flush asked now is done. */
static void pcie_pmr_disable(struct pcie_pmr *pmr)
{
	pmr->ctl &= ~NVME_PMRCTL_EN;
	pcie_pmr_window(pmr);
	pmr->disable_req = pcie_pmr_flush_ask(pmr);
}

void pcie_pmr_regs_written(struct pcie_ctrlr *pc)
{
	struct pcie_pmr *pmr = pc->pmr;
	uint8_t regs[PCIE_PMR_REGS_SIZE];
	uint32_t ctl, mscl, mscu;
	uint64_t msc;
	int rc;

	if (!pmr)
		return;
	rc = hw_dev_stateful_query(pc->dev, 0, PCIE_PMR_REGS_START, regs, sizeof(regs));
	if (rc) {
		LOG_ERR(PCIE_LOG, "%s: PMR register query failed: %d", pc->vuid, rc);
		return;
	}
	memcpy(&ctl, regs + NVME_REG_PMRCTL - PCIE_PMR_REGS_START, 4);
	memcpy(&mscl, regs + NVME_REG_PMRMSCL - PCIE_PMR_REGS_START, 4);
	memcpy(&mscu, regs + NVME_REG_PMRMSCU - PCIE_PMR_REGS_START, 4);
	ctl &= NVME_PMRCTL_EN;
	msc = ((uint64_t)mscu << 32 | mscl) & (NVME_PMRMSC_CMSE | NVME_PMRMSC_CBA_MASK);
	if (ctl != (pmr->ctl & NVME_PMRCTL_EN)) {
		if (ctl) {
			union nvme_pmrsts sts = {.raw = pmr->sts};

			/* Ready at once: the memory is there. */
			pmr->ctl = ctl;
			sts.bits.nrdy = 0;
			pmr->sts = sts.raw;
		} else {
			pcie_pmr_disable(pmr);
		}
	}
	pmr->msc = msc;
	pcie_pmr_window(pmr);
	pcie_pmr_write_back(pmr, regs);
}

int pcie_pmr_read(struct pcie_ctrlr *pc, uint64_t offset, uint32_t len)
{
	struct pcie_pmr *pmr = pc->pmr;

	/* Only a read that covers PMRSTS, of an enabled PMR, is a barrier (PMRWBM bit 1). */
	if (!pmr || !(pmr->ctl & NVME_PMRCTL_EN) || offset >= NVME_REG_PMRSTS + 4 ||
	    offset + len <= NVME_REG_PMRSTS)
		return 0;
	pmr->read_req = pcie_pmr_flush_ask(pmr);
	return HW_EVENT_ASYNC;
}

void pcie_pmr_quiesce(struct pcie_ctrlr *pc, void (*done)(void *arg), void *arg)
{
	struct pcie_pmr *pmr = pc->pmr;
	union nvme_pmrsts sts;

	if (!pmr) {
		done(arg);
		return;
	}
	/* The register file goes back to its defaults (FLR) or away: the state follows. */
	pmr->ctl = 0;
	pmr->msc = 0;
	pcie_pmr_window(pmr);
	sts.raw = pmr->sts;
	sts.bits.nrdy = 1;
	sts.bits.cbai = 0;
	pmr->sts = sts.raw;
	pmr->disable_req = 0;
	pmr->waiter = done;
	pmr->waiter_arg = arg;
	pmr->waiter_req = pcie_pmr_flush_ask(pmr);
}

void pcie_pmr_close(struct pcie_ctrlr *pc)
{
	struct pcie_pmr *pmr = pc->pmr;

	if (!pmr)
		return;
	/* pcie_pmr_quiesce ran to its end: no thread holds the PMR. One still running would
	 * write into freed memory: kept (leaked) rather than freed under it. */
	if (pmr->running) {
		LOG_ERR(PCIE_LOG, "%s: PMR closed with a flush running: not freed", pc->vuid);
		pc->pmr = NULL;
		return;
	}
	close(pmr->fd);
	free(pmr->path);
	free(pmr);
	pc->pmr = NULL;
}
