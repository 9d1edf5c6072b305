/* transport/pcie_cmb.c - the Controller Memory Buffer (NVMe over PCIe Transport 1.0 section 3.8:
 * CMBLOC, CMBSZ, CMBMSC, CMBSTS): the function's BAR2 is device memory the host maps, and once the
 * host enabled Controller Memory Space with the bus address it sees the BAR at (CMBMSC.CMSE,
 * CBA), the controller takes addresses in [CBA, CBA + size) as its own memory: SQs and CQs,
 * PRP lists and SGL segments, data and metadata may live there, read and written locally, never
 * through a DMA window. The host may change the memory at any time; the core copies SQEs and
 * reads each PRP or SGL entry once before checking it, wherever they live. Main thread unless
 * noted. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "controller/nvme_spec.h"
#include "transport/pcie_internal.h"

struct pcie_cmb {
	struct pcie_devmem m;
	uint64_t msc;	/* CMBMSC as the host last set it (reserved bits cleared) */
	uint32_t sts;	/* CMBSTS */
	uint32_t loc, sz; /* CMBLOC and CMBSZ while CMBMSC.CRE is set */
};

char pcie_devmem_pin_tag;

int pcie_cmb_create(struct pcie_ctrlr *pc, uint64_t size)
{
	struct pcie_cmb *cmb = calloc(1, sizeof(*cmb));
	union nvme_cmbloc loc = {.raw = 0};
	union nvme_cmbsz sz = {.raw = 0};
	uint64_t got = 0;

	if (!cmb)
		return -ENOMEM;
	cmb->m.mem = hw_dev_memory(pc->dev, PCIE_CMB_BAR, 0, &got);
	if (!cmb->m.mem || got != size) {
		free(cmb);
		return -EINVAL;
	}
	cmb->m.size = size;
	/* The whole BAR from offset 0. A command may point at the CMB and host memory alike,
	 * for its data, its lists and its metadata (every address is translated on its own). */
	loc.bits.bir = PCIE_CMB_BAR;
	loc.bits.cdpmls = 1;
	loc.bits.cdpcils = 1;
	loc.bits.cdmmms = 1;
	sz.bits.sqs = 1;
	sz.bits.cqs = 1;
	sz.bits.lists = 1;
	sz.bits.rds = 1;
	sz.bits.wds = 1;
	sz.bits.szu = 2; /* 1 MiB */
	sz.bits.sz = (uint32_t)(size >> 20);
	cmb->loc = loc.raw;
	cmb->sz = sz.raw;
	pc->cmb = cmb;
	return 0;
}

void pcie_cmb_destroy(struct pcie_ctrlr *pc)
{
	free(pc->cmb);
	pc->cmb = NULL;
}

void *pcie_cmb_map(struct pcie_ctrlr *pc, uint64_t addr, uint64_t len, bool *hit)
{
	return pc->cmb ? pcie_devmem_map(&pc->cmb->m, addr, len, hit) : NULL;
}

/* CMBMSC changed: CRE shows CMBLOC and CMBSZ; CMSE with a valid CBA opens the window. A CBA
 * that is not aligned to the CMB's size (the BAR it names is) or whose window would wrap past
 * 2^64 is invalid: CMBSTS.CBAI, the window stays closed. */
static void pcie_cmb_msc_set(struct pcie_ctrlr *pc, uint64_t msc)
{
	struct pcie_cmb *cmb = pc->cmb;
	uint64_t cba = msc & NVME_CMBMSC_CBA_MASK, win = 0;

	cmb->msc = msc;
	if ((msc & NVME_CMBMSC_CRE) && (msc & NVME_CMBMSC_CMSE)) {
		if ((cba & (cmb->m.size - 1)) || cba + cmb->m.size < cba) {
			LOG_GUEST_ERR(PCIE_LOG, "%s: CMBMSC.CBA 0x%llx invalid for a %llu MiB CMB",
				      pc->vuid, (unsigned long long)cba,
				      (unsigned long long)(cmb->m.size >> 20));
			cmb->sts |= NVME_CMBSTS_CBAI;
		} else {
			cmb->sts &= ~NVME_CMBSTS_CBAI;
			win = cba | 1;
		}
	}
	__atomic_store_n(&cmb->m.win, win, __ATOMIC_RELEASE);
}

void pcie_cmb_regs_written(struct pcie_ctrlr *pc, const uint8_t *regs)
{
	uint8_t want[PCIE_REGS_SIZE - NVME_REG_END];
	struct pcie_cmb *cmb = pc->cmb;
	const uint8_t *have = regs + NVME_REG_END;
	uint64_t msc;
	int rc;

	/* Past ACQ everything is reserved or read-only but CMBMSC. */
	memset(want, 0, sizeof(want));
	if (cmb) {
		memcpy(&msc, regs + NVME_REG_CMBMSC, sizeof(msc));
		msc &= NVME_CMBMSC_CRE | NVME_CMBMSC_CMSE | NVME_CMBMSC_CBA_MASK;
		if (msc != cmb->msc)
			pcie_cmb_msc_set(pc, msc);
		if (cmb->msc & NVME_CMBMSC_CRE) {
			memcpy(want + NVME_REG_CMBLOC - NVME_REG_END, &cmb->loc, 4);
			memcpy(want + NVME_REG_CMBSZ - NVME_REG_END, &cmb->sz, 4);
		}
		memcpy(want + NVME_REG_CMBMSC - NVME_REG_END, &cmb->msc, 8);
		memcpy(want + NVME_REG_CMBSTS - NVME_REG_END, &cmb->sts, 4);
	}
	if (!memcmp(want, have, sizeof(want)))
		return;
	rc = hw_dev_stateful_modify(pc->dev, 0, PCIE_REGS_START + NVME_REG_END, want,
				    sizeof(want));
	if (rc)
		LOG_ERR(PCIE_LOG, "%s: register write-back after ACQ failed: %d", pc->vuid, rc);
}

void pcie_cmb_reset(struct pcie_ctrlr *pc)
{
	if (!pc->cmb)
		return;
	pc->cmb->sts = 0;
	pcie_cmb_msc_set(pc, 0);
}
