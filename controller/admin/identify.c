/* controller/admin/identify.c - Identify (NVMe Base 2.0 section 5.17): CNS 00h namespace, 01h
 * controller, 02h/07h active namespace lists, 03h namespace identification descriptors, 05h/06h
 * NVM command set specific namespace/controller, 08h command set independent namespace, 19h
 * endurance group list (endgrp.c: every namespace is in group 1), 14h/15h primary controller
 * capabilities and secondary controller list (virt/). */
#include <stdio.h>
#include <string.h>

#include "controller/admin/admin.h"
#include "controller/device/device.h"
#include "controller/nvm/pi.h"
#include "controller/nvm/nvm.h"
#include "controller/pool/pool.h"
#include "controller/virt/virt.h"
#include "controller/zns/zns.h"

#define CTRLR_RTD3E_US 1000000 /* resume/entry latency reported (1 s) */
#define CTRLR_WCTEMP_K 343
#define CTRLR_CCTEMP_K 358
#define CTRLR_PS0_CENTIWATTS 2500

static void ctrlr_identify_ctrl(struct ctrlr *ctrlr, struct nvme_id_ctrl *id)
{
	id->vid = ctrlr->cfg.pci_vid;
	id->ssvid = ctrlr->cfg.pci_ssvid;
	ctrlr_copy_padded(id->sn, ctrlr->serial, sizeof(id->sn));
	ctrlr_copy_padded(id->mn, ctrlr->model, sizeof(id->mn));
	ctrlr_copy_padded(id->fr, ctrlr->fwrev, sizeof(id->fr));
	id->rab = 6;
	/* IEEE OUI, least significant byte first: 02-4E-58 (locally administered). */
	id->ieee[0] = 0x58;
	id->ieee[1] = 0x4e;
	id->ieee[2] = 0x02;
	id->mdts = ctrlr->cfg.mdts;
	id->cntlid = ctrlr->cfg.cntlid;
	id->ver = ctrlr->vs;
	id->rtd3r = CTRLR_RTD3E_US;
	id->rtd3e = CTRLR_RTD3E_US;
	id->oaes = NVME_OAES_NS_ATTR | NVME_OAES_FW_ACT | NVME_OAES_TELEMETRY | NVME_OAES_ZDCN |
		   NVME_OAES_ENDGRP_EVENTS;
	id->cntrltype = NVME_CTRL_TYPE_IO;
	id->oacs = NVME_OACS_FORMAT | NVME_OACS_GET_LBA_STATUS | NVME_OACS_FW | NVME_OACS_SELF_TEST |
		   (ctrlr->cfg.no_dbbuf ? 0 : NVME_OACS_DBBUF);
	id->kas = ctrlr_kas();
	id->acl = CTRLR_ACL;
	id->aerl = CTRLR_AERL;
	id->frmw = NVME_FRMW_SLOT1_RO | NVME_FRMW_SLOTS(CTRLR_FW_SLOTS) | NVME_FRMW_ACT_NO_RESET;
	id->fwug = CTRLR_FW_GRAN / 4096;
	id->lpa = NVME_LPA_SMART_PER_NS | NVME_LPA_CMD_EFFECTS | NVME_LPA_EXT_DATA |
		  NVME_LPA_TELEMETRY | NVME_LPA_PEL;
	id->edstt = ctrlr_dst_edstt(ctrlr);
	id->dsto = NVME_DSTO_ONE_AT_A_TIME;
	id->sanicap = ctrlr_sanicap(ctrlr);
	id->pels = CTRLR_PEL_MAX_BYTES / 65536; /* in 64 KiB units */
	id->elpe = CTRLR_ERROR_LOG_ENTRIES - 1;
	id->npss = 0;
	id->wctemp = CTRLR_WCTEMP_K;
	id->cctemp = CTRLR_CCTEMP_K;
	id->sqes = (NVME_SQES_LOG2 << 4) | NVME_SQES_LOG2;
	id->cqes = (NVME_CQES_LOG2 << 4) | NVME_CQES_LOG2;
	id->nn = CTRLR_MAX_NAMESPACES;
	id->oncs = NVME_ONCS_COMPARE | NVME_ONCS_DSM | NVME_ONCS_WRITE_ZEROES |
		   NVME_ONCS_SAVE_SELECT | NVME_ONCS_TIMESTAMP | NVME_ONCS_VERIFY |
		   NVME_ONCS_WRITE_UNCOR | NVME_ONCS_COPY;
	/* Reservations (ONCS bit 5) and fused Compare and Write (FUSES bit 0); CMIC bit 1 when
	 * the subsystem has several controllers (io_resv.c). */
	id->oncs |= NVME_ONCS_RESERVATIONS;
	id->fuses = NVME_FUSES_COMPARE_WRITE;
	if (ctrlr->multi_ctrl)
		id->cmic |= NVME_CMIC_MULTI_CTRL;
	/* Copy descriptor formats 0h (no or 16b Guard protection) and 1h (64b Guard), and their
	 * cross-namespace twins 2h and 3h once Host Behavior Support's CDFE enables them (io_copy.c). */
	/* Cryptographic erase (SES 2h) as an erase of the user data itself: see admin_format.c. */
	id->fna = NVME_FNA_CRYPTO_ERASE;
	id->ocfs = NVME_OCFS_FORMAT0 | NVME_OCFS_FORMAT1 | NVME_OCFS_FORMAT2 | NVME_OCFS_FORMAT3;
	id->vwc = NVME_VWC_PRESENT | NVME_VWC_NSID_ALL_FLUSH;
	if (ctrlr->cfg.sgl)
		id->sgls = NVME_SGLS_SUPPORTED | NVME_SGLS_BIT_BUCKET | NVME_SGLS_EXCESS_LEN |
			   NVME_SGLS_MD_BYTE_ALIGNED | NVME_SGLS_MD_SGL;
	/* Extended LBA formats: the protection information format of each is in CNS 05h. */
	id->ctratt |= NVME_CTRATT_ELBAS;
	/* One endurance group (endgrp.c). */
	id->ctratt |= NVME_CTRATT_EGS;
	id->endgidmax = CTRLR_ENDGID;
	/* Flexible Data Placement and its directive (fdp.c). */
	if (ctrlr_fdp_supported(ctrlr)) {
		id->ctratt |= NVME_CTRATT_FDPS;
		id->oacs |= NVME_OACS_DIRECTIVES;
	}
	snprintf(id->subnqn, sizeof(id->subnqn), "%s", ctrlr->subnqn);
	id->psd[0].mp = CTRLR_PS0_CENTIWATTS;
	ctrlr_nsm_identify_ctrl(ctrlr, id);
	ctrlr_virt_identify_ctrl(ctrlr, id);
}

static void ctrlr_le128_put(uint8_t *dst, uint64_t v)
{
	memset(dst, 0, 16);
	memcpy(dst, &v, 8);
}

/* The LBA formats (NVM Command Set 4.1.5.1): all of them, the current one (FLBAS), metadata
 * capabilities (both placements), protection types 1-3 with the tuple first or last. */
static void ctrlr_identify_lbafs(const struct ctrlr_ns *ns, struct nvme_id_ns *id)
{
	union ctrlr_ns_fmt f = {.raw = __atomic_load_n(&ns->fmt, __ATOMIC_ACQUIRE)};

	id->nlbaf = (uint8_t)(ns->nlbaf - 1); /* 0-based */
	id->flbas = (uint8_t)((f.f.lbaf & 0xf) | ((f.f.lbaf & 0x30) << 1) |
			      (f.f.ext ? NVME_FLBAS_EXTENDED : 0));
	id->mc = NVME_MC_EXTENDED | NVME_MC_SEPARATE;
	id->dpc = NVME_DPC_TYPE1 | NVME_DPC_TYPE2 | NVME_DPC_TYPE3 | NVME_DPC_FIRST | NVME_DPC_LAST;
	id->dps = (uint8_t)(f.f.pi | (f.f.pi_first ? NVME_DPS_FIRST : 0));
	for (uint8_t i = 0; i < ns->nlbaf; i++) {
		id->lbaf[i].ms = ns->lbafs[i].ms;
		id->lbaf[i].lbads = ns->lbafs[i].lbads;
		id->lbaf[i].rp = ns->lbafs[i].rp;
	}
}

static void ctrlr_identify_common_lbafs(const struct ctrlr *ctrlr, struct nvme_id_ns *id)
{
	struct ctrlr_lbaf lbafs[CTRLR_MAX_LBAF];
	/* The formats a namespace can be created in: a pool region's (packed), else 512-byte. */
	uint32_t n = ctrlr_lbafs_for(ctrlr_pool_of(ctrlr) ? CTRLR_POOL_REGION_BS : 512, lbafs);

	id->nlbaf = (uint8_t)(n - 1);
	id->mc = NVME_MC_EXTENDED | NVME_MC_SEPARATE;
	id->dpc = NVME_DPC_TYPE1 | NVME_DPC_TYPE2 | NVME_DPC_TYPE3 | NVME_DPC_FIRST | NVME_DPC_LAST;
	for (uint32_t i = 0; i < n; i++) {
		id->lbaf[i].ms = lbafs[i].ms;
		id->lbaf[i].lbads = lbafs[i].lbads;
		id->lbaf[i].rp = lbafs[i].rp;
	}
}

/* CNS 05h, CSI NVM (NVM Command Set 4.1.5.2): each format's guard and storage tag size, the
 * Qualified Type ones with their QPIF; storage tags on 16b Guard formats, checked in Reads too,
 * every bit of them (no masking: LBSTM all ones). */
static void ctrlr_identify_ns_nvm(const struct ctrlr_ns *ns, struct nvme_id_ns_nvm *id)
{
	id->lbstm = UINT64_MAX;
	id->pic = NVME_PIC_16B_STS | NVME_PIC_STCRS | NVME_PIC_QPIFS;
	id->pifa = NVME_PIFA_STMLA_NONE;
	for (uint8_t i = 0; i < ns->nlbaf; i++) {
		const struct ctrlr_lbaf *l = &ns->lbafs[i];

		if (!l->ms)
			id->elbaf[i] = 0;
		else if (l->qual)
			id->elbaf[i] =
			    NVME_ELBAF(l->sts, CTRLR_PIF_QUALIFIED) | NVME_ELBAF_QPIF(l->pif);
		else
			id->elbaf[i] = NVME_ELBAF(l->sts, l->pif);
	}
}

static void ctrlr_identify_ns(const struct ctrlr_ns *ns, struct nvme_id_ns *id)
{
	uint64_t nvmcap;

	id->nsze = ns->num_blocks;
	id->ncap = ns->num_blocks;
	id->nuse = ns->num_blocks;
	id->nsfeat = ns->has_unmap ? NVME_NSFEAT_THIN : 0;
	id->nmic = ns->nmic;
	ctrlr_identify_lbafs(ns, id);
	/* Deallocated blocks read back as zeroes; Write Zeroes may deallocate. */
	if (ns->has_unmap)
		id->dlfeat = NVME_DLFEAT_READ_ZEROES | NVME_DLFEAT_WZ_DEAC;
	/* NVMCAP (Base 2.0 Figure 276): the NVM allocated to the namespace, data and metadata:
	 * its pool extent, or its whole bdev. */
	if (!ctrlr_nsm_ns_nvmcap(ns->ctrlr, ns->nsid, &nvmcap))
		nvmcap = bdev_get_num_blocks(ns->bdev) * bdev_get_block_size(ns->bdev);
	ctrlr_le128_put(id->nvmcap, nvmcap);
	memcpy(id->nguid, ns->nguid, sizeof(id->nguid));
	memcpy(id->eui64, ns->eui64, sizeof(id->eui64));
	/* Reservations: every type, IEKEY as NVMe 1.3+, PTPL with a state file; NMIC bit 0 when
	 * other controllers may attach the namespace. */
	id->rescap = NVME_RESCAP_ALL_TYPES | NVME_RESCAP_IEKEY |
		     (ns->shared && ctrlr_resv_ptpl_capable(ns) ? NVME_RESCAP_PTPL : 0);
	/* Copy limits (MSRC is 0-based). */
	id->mssrl = CTRLR_COPY_MSSRL;
	id->mcl = CTRLR_COPY_MCL;
	id->msrc = CTRLR_COPY_MAX_RANGES - 1;
	id->endgid = CTRLR_ENDGID;
}

/* Active NSIDs greater than `after`, ascending, up to 1024 entries. */
static void ctrlr_identify_ns_list(struct ctrlr *ctrlr, uint32_t after, uint32_t *list)
{
	uint32_t n = 0;

	for (uint32_t nsid = after + 1; nsid <= CTRLR_MAX_NAMESPACES && n < 1024; nsid++)
		if (ctrlr->ns[nsid - 1])
			list[n++] = nsid;
}

static size_t ctrlr_desc_add(uint8_t *buf, size_t off, uint8_t nidt, const void *v, uint8_t len)
{
	struct nvme_ns_id_desc d = {.nidt = nidt, .nidl = len};

	memcpy(buf + off, &d, sizeof(d));
	memcpy(buf + off + sizeof(d), v, len);
	return off + sizeof(d) + len;
}

static void ctrlr_identify_descs(const struct ctrlr_ns *ns, uint8_t *buf)
{
	uint8_t csi = ns->csi;
	size_t off = 0;

	off = ctrlr_desc_add(buf, off, NVME_NIDT_EUI64, ns->eui64, 8);
	off = ctrlr_desc_add(buf, off, NVME_NIDT_NGUID, ns->nguid, 16);
	off = ctrlr_desc_add(buf, off, NVME_NIDT_UUID, ns->uuid, 16);
	ctrlr_desc_add(buf, off, NVME_NIDT_CSI, &csi, 1);
}

static void ctrlr_identify_ns_indep(const struct ctrlr_ns *ns, struct nvme_id_ns_indep *id)
{
	id->nsfeat = ns->has_unmap ? NVME_NSFEAT_THIN : 0;
	id->nmic = ns->nmic;
	id->nstat = NVME_NSTAT_READY;
	id->endgid = CTRLR_ENDGID;
}

/* CNS 10h allocated NSIDs, 11h Identify Namespace of an allocated NSID (attached or not): only
 * with Namespace Management (OACS bit 3). 12h controllers attached to NSID, 13h controllers of the
 * subsystem (Base 2.0 5.17.2.x): with a pool, or in a subsystem of several controllers. */
static uint16_t ctrlr_identify_nsm(struct ctrlr *ctrlr, uint8_t cns, uint32_t nsid,
				   uint16_t cntid, uint8_t *buf)
{
	struct ctrlr_ns snap, *ns;

	if (!ctrlr_pool_of(ctrlr) && !(ctrlr->subsys && (cns == NVME_CNS_NS_CTRL_LIST ||
						cns == NVME_CNS_CTRL_LIST)))
		return NVME_SC_INVALID_FIELD;
	switch (cns) {
	case NVME_CNS_ALLOC_NS_LIST:
		if (nsid >= 0xfffffffeu)
			return NVME_SC_INVALID_NS;
		ctrlr_nsm_allocated_list(ctrlr, nsid, (uint32_t *)buf);
		return NVME_SC_SUCCESS;
	case NVME_CNS_ALLOC_NS:
		if (nsid == 0 || nsid > CTRLR_MAX_NAMESPACES)
			return NVME_SC_INVALID_NS;
		if (ctrlr_nsm_ns_snapshot(ctrlr, nsid, &snap)) {
			ctrlr_identify_ns(&snap, (struct nvme_id_ns *)buf);
		} else if ((ns = ctrlr_ns_get(ctrlr, nsid))) {
			ctrlr_identify_ns(ns, (struct nvme_id_ns *)buf);
			ctrlr_ns_put(ns);
		}
		/* An unallocated NSID reads as zeroes. */
		return NVME_SC_SUCCESS;
	case NVME_CNS_NS_CTRL_LIST:
		if (nsid == 0 || nsid > CTRLR_MAX_NAMESPACES)
			return NVME_SC_INVALID_NS;
		ctrlr_subsys_ctrl_list(ctrlr, nsid, cntid, (uint16_t *)buf);
		return NVME_SC_SUCCESS;
	default:
		ctrlr_subsys_ctrl_list(ctrlr, 0, cntid, (uint16_t *)buf);
		return NVME_SC_SUCCESS;
	}
}

void ctrlr_admin_identify(struct ctrlr_req *req)
{
	struct ctrlr *ctrlr = req->sq->ctrlr;
	uint8_t cns = req->sqe.cdw10 & 0xff;
	uint8_t csi = req->sqe.cdw11 >> 24;
	uint32_t nsid = req->sqe.nsid;
	union {
		uint8_t raw[NVME_IDENTIFY_SIZE];
		uint32_t list[1024];
		struct nvme_id_ctrl ctrl;
		struct nvme_id_ns ns;
		struct nvme_id_ctrl_nvm ctrl_nvm;
		struct nvme_id_ns_indep indep;
		struct nvme_id_ns_nvm ns_nvm;
	} buf;
	struct ctrlr_ns *ns = NULL;
	uint16_t st = NVME_SC_SUCCESS;

	memset(&buf, 0, sizeof(buf));
	/* Zoned Namespace data (CNS 05h/06h CSI 2h), lists per CSI (07h), I/O command sets (1Ch). */
	if (ctrlr_zns_identify(req, cns, csi, buf.raw, &st))
		cns = 0xff; /* answered */
	switch (cns) {
	case 0xff:
		break;
	case NVME_CNS_CTRL:
		ctrlr_identify_ctrl(ctrlr, &buf.ctrl);
		break;
	case NVME_CNS_CS_CTRL:
		/* NVM command set specific controller data: no limits beyond MDTS (all zero). */
		if (csi != NVME_CSI_NVM)
			st = NVME_SC_INVALID_FIELD;
		break;
	case NVME_CNS_CS_ACTIVE_NS_LIST:
		if (csi != NVME_CSI_NVM) {
			st = NVME_SC_INVALID_FIELD;
			break;
		}
		/* fall through */
	case NVME_CNS_ACTIVE_NS_LIST:
		if (nsid >= 0xfffffffeu) {
			st = NVME_SC_INVALID_NS;
			break;
		}
		ctrlr_identify_ns_list(ctrlr, nsid, buf.list);
		break;
	case NVME_CNS_NS:
	case NVME_CNS_NS_DESC_LIST:
	case NVME_CNS_CS_NS:
	case NVME_CNS_CS_INDEP_NS:
		if (cns == NVME_CNS_CS_NS && csi != NVME_CSI_NVM) {
			st = NVME_SC_INVALID_FIELD;
			break;
		}
		/* FFFFFFFFh (capabilities common to all namespaces) only with Namespace
		 * Management (Base 2.x, CNS 00h): without it, Invalid Namespace or Format. */
		if (nsid == 0 || (nsid > CTRLR_MAX_NAMESPACES && nsid != NVME_NSID_ALL) ||
		    (nsid == NVME_NSID_ALL && (cns != NVME_CNS_NS || !ctrlr_pool_of(ctrlr)))) {
			st = NVME_SC_INVALID_NS;
			break;
		}
		if (nsid == NVME_NSID_ALL) {
			/* Capabilities common to all namespaces: the LBA formats Namespace
			 * Management creates namespaces in (FLBAS/DPS of its host data pick one). */
			ctrlr_identify_common_lbafs(ctrlr, &buf.ns);
			break;
		}
		ns = ctrlr_ns_get(ctrlr, nsid);
		if (!ns) {
			/* An allocated-but-inactive id reads as zeroes for CNS 00h/05h/08h. */
			if (cns == NVME_CNS_NS_DESC_LIST)
				st = NVME_SC_INVALID_NS;
			break;
		}
		if (cns == NVME_CNS_NS)
			ctrlr_identify_ns(ns, &buf.ns);
		else if (cns == NVME_CNS_NS_DESC_LIST)
			ctrlr_identify_descs(ns, buf.raw);
		else if (cns == NVME_CNS_CS_INDEP_NS)
			ctrlr_identify_ns_indep(ns, &buf.indep);
		else if (cns == NVME_CNS_CS_NS)
			ctrlr_identify_ns_nvm(ns, &buf.ns_nvm);
		ctrlr_ns_put(ns);
		break;
	case NVME_CNS_ALLOC_NS_LIST: /* CNS 10h-13h: Namespace Management (admin_ns_mgmt.c) */
	case NVME_CNS_ALLOC_NS:
	case NVME_CNS_NS_CTRL_LIST:
	case NVME_CNS_CTRL_LIST:
		st = ctrlr_identify_nsm(ctrlr, cns, nsid, req->sqe.cdw10 >> 16, buf.raw);
		break;
	case NVME_CNS_PRI_CTRL_CAP: /* CNS 14h, 15h: secondary controllers (virt/) */
	case NVME_CNS_SEC_CTRL_LIST:
		st = ctrlr_virt_identify(ctrlr, cns, req->sqe.cdw10 >> 16, buf.raw);
		break;
	case NVME_CNS_ENDGRP_LIST:
		/* Groups from CDW11's CNS Specific Identifier on (an ENDGID, bits 15:0). */
		ctrlr_identify_endgrp_list(ctrlr, req->sqe.cdw11 & 0xffff, (uint16_t *)buf.raw);
		break;
	default:
		st = NVME_SC_INVALID_FIELD;
		break;
	}
	if (st)
		return ctrlr_req_complete_err(req, st,
					      st == NVME_SC_INVALID_NS
						  ? offsetof(struct nvme_sqe, nsid)
						  : offsetof(struct nvme_sqe, cdw10));
	ctrlr_req_complete(req, ctrlr_req_copy_to_host(req, buf.raw, sizeof(buf)));
}
