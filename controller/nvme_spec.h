/* controller/nvme_spec.h - NVMe Base / NVM command set wire layouts: registers, SQE, CQE, identify,
 * log pages, features and status codes (NVMe Base 2.0, NVM Command Set 1.0). */
#ifndef NVME_EMU_CONTROLLER_NVME_SPEC_H
#define NVME_EMU_CONTROLLER_NVME_SPEC_H

#include <stdbool.h>
#include <stdint.h>

#define NVME_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)

/* ---- Controller registers (NVMe Base 2.0 section 3.1.4) ---- */
enum nvme_reg_offset {
	NVME_REG_CAP = 0x00,
	NVME_REG_VS = 0x08,
	NVME_REG_INTMS = 0x0c,
	NVME_REG_INTMC = 0x10,
	NVME_REG_CC = 0x14,
	NVME_REG_CSTS = 0x1c,
	NVME_REG_NSSR = 0x20,
	NVME_REG_AQA = 0x24,
	NVME_REG_ASQ = 0x28,
	NVME_REG_ACQ = 0x30,
	NVME_REG_END = 0x38,
	/* NVMe over PCIe Transport 1.0 section 3.8: the Controller Memory Buffer and the
	 * Persistent Memory Region (transport/pcie_cmb.c, pcie_pmr.c). */
	NVME_REG_CMBLOC = 0x38,
	NVME_REG_CMBSZ = 0x3c,
	NVME_REG_CMBMSC = 0x50,
	NVME_REG_CMBSTS = 0x58,
	NVME_REG_CMB_END = 0x5c,
	NVME_REG_PMRCAP = 0xe00,
	NVME_REG_PMRCTL = 0xe04,
	NVME_REG_PMRSTS = 0xe08,
	NVME_REG_PMREBS = 0xe0c,
	NVME_REG_PMRSWTP = 0xe10,
	NVME_REG_PMRMSCL = 0xe14,
	NVME_REG_PMRMSCU = 0xe18,
	NVME_REG_PMR_END = 0xe1c,
	NVME_REG_DBS = 0x1000,
};

/* CMBLOC, CMBSZ (size = SZ units of 4 KiB << 4 * SZU), CMBMSC, CMBSTS. */
union nvme_cmbloc {
	uint32_t raw;
	struct {
		uint32_t bir : 3;
		uint32_t cqmms : 1;  /* CQ mixed memory support */
		uint32_t cqpds : 1;  /* CQ physically discontiguous support */
		uint32_t cdpmls : 1; /* data pointer mixed locations support */
		uint32_t cdpcils : 1; /* data pointer and command independent locations support */
		uint32_t cdmmms : 1; /* data and metadata mixed memory support */
		uint32_t cqda : 1;   /* CQ dword alignment */
		uint32_t rsvd9 : 3;
		uint32_t ofst : 20; /* in CMBSZ.SZU units */
	} bits;
};
NVME_STATIC_ASSERT(sizeof(union nvme_cmbloc) == 4, "CMBLOC");

union nvme_cmbsz {
	uint32_t raw;
	struct {
		uint32_t sqs : 1;   /* submission queues */
		uint32_t cqs : 1;   /* completion queues */
		uint32_t lists : 1; /* PRP lists and SGL segments */
		uint32_t rds : 1;   /* data of reads (the controller writes it) */
		uint32_t wds : 1;   /* data of writes */
		uint32_t rsvd5 : 3;
		uint32_t szu : 4; /* 0: 4 KiB, 1: 64 KiB, 2: 1 MiB, ... */
		uint32_t sz : 20;
	} bits;
};
NVME_STATIC_ASSERT(sizeof(union nvme_cmbsz) == 4, "CMBSZ");

#define NVME_CMBMSC_CRE (1ull << 0)  /* capabilities registers enabled */
#define NVME_CMBMSC_CMSE (1ull << 1) /* controller memory space enabled */
#define NVME_CMBMSC_CBA_MASK (~0xfffull)
#define NVME_CMBSTS_CBAI (1u << 0) /* controller base address invalid */

/* PMRCAP, PMRCTL, PMRSTS, PMREBS, PMRSWTP, PMRMSCL/U. */
union nvme_pmrcap {
	uint32_t raw;
	struct {
		uint32_t rsvd0 : 3;
		uint32_t rds : 1;
		uint32_t wds : 1;
		uint32_t bir : 3;
		uint32_t pmrtu : 2;  /* PMRTO units: 0 500 ms, 1 minutes */
		uint32_t pmrwbm : 4; /* write barrier mechanisms */
		uint32_t rsvd14 : 2;
		uint32_t pmrto : 8;
		uint32_t cmss : 1; /* controller memory space supported (PMRMSC) */
		uint32_t rsvd25 : 7;
	} bits;
};
NVME_STATIC_ASSERT(sizeof(union nvme_pmrcap) == 4, "PMRCAP");
/* PMRWBM bit 1: the completion of a read of PMRSTS makes earlier PMR writes persistent. */
#define NVME_PMRWBM_PMRSTS_READ 0x2

union nvme_pmrsts {
	uint32_t raw;
	struct {
		uint32_t err : 8;
		uint32_t nrdy : 1;
		uint32_t hsts : 3; /* 0 normal, 1 restore error, 2 read only, 3 unreliable */
		uint32_t cbai : 1;
		uint32_t rsvd13 : 19;
	} bits;
};
NVME_STATIC_ASSERT(sizeof(union nvme_pmrsts) == 4, "PMRSTS");
#define NVME_PMRCTL_EN (1u << 0)
#define NVME_PMRMSC_CMSE (1ull << 1)
#define NVME_PMRMSC_CBA_MASK (~0xfffull)

union nvme_cap {
	uint64_t raw;
	struct {
		uint64_t mqes : 16; /* max queue entries, 0-based */
		uint64_t cqr : 1;   /* contiguous queues required */
		uint64_t ams : 2;
		uint64_t rsvd19 : 5;
		uint64_t to : 8;    /* ready timeout, 500 ms units */
		uint64_t dstrd : 4; /* doorbell stride 4 << dstrd */
		uint64_t nssrs : 1;
		uint64_t css : 8; /* bit 0: NVM command set */
		uint64_t bps : 1;
		uint64_t cps : 2;
		uint64_t mpsmin : 4; /* 2 ^ (12 + mpsmin) */
		uint64_t mpsmax : 4;
		uint64_t pmrs : 1;
		uint64_t cmbs : 1;
		uint64_t nsss : 1;
		uint64_t crms : 2;
		uint64_t rsvd61 : 3;
	} bits;
};
NVME_STATIC_ASSERT(sizeof(union nvme_cap) == 8, "CAP");

union nvme_vs {
	uint32_t raw;
	struct {
		uint32_t ter : 8;
		uint32_t mnr : 8;
		uint32_t mjr : 16;
	} bits;
};
NVME_STATIC_ASSERT(sizeof(union nvme_vs) == 4, "VS");
#define NVME_VERSION(mjr, mnr, ter) (((uint32_t)(mjr) << 16) | ((uint32_t)(mnr) << 8) | (ter))

enum nvme_shn {
	NVME_SHN_NONE = 0,
	NVME_SHN_NORMAL = 1,
	NVME_SHN_ABRUPT = 2,
};

enum nvme_shst {
	NVME_SHST_NORMAL = 0,
	NVME_SHST_OCCURRING = 1,
	NVME_SHST_COMPLETE = 2,
};

union nvme_cc {
	uint32_t raw;
	struct {
		uint32_t en : 1;
		uint32_t rsvd1 : 3;
		uint32_t css : 3;
		uint32_t mps : 4;
		uint32_t ams : 3;
		uint32_t shn : 2;
		uint32_t iosqes : 4;
		uint32_t iocqes : 4;
		uint32_t crime : 1;
		uint32_t rsvd25 : 7;
	} bits;
};
NVME_STATIC_ASSERT(sizeof(union nvme_cc) == 4, "CC");

union nvme_csts {
	uint32_t raw;
	struct {
		uint32_t rdy : 1;
		uint32_t cfs : 1;
		uint32_t shst : 2;
		uint32_t nssro : 1;
		uint32_t pp : 1;
		uint32_t st : 1;
		uint32_t rsvd7 : 25;
	} bits;
};
NVME_STATIC_ASSERT(sizeof(union nvme_csts) == 4, "CSTS");

union nvme_aqa {
	uint32_t raw;
	struct {
		uint32_t asqs : 12; /* 0-based */
		uint32_t rsvd12 : 4;
		uint32_t acqs : 12; /* 0-based */
		uint32_t rsvd28 : 4;
	} bits;
};
NVME_STATIC_ASSERT(sizeof(union nvme_aqa) == 4, "AQA");

/* ---- Submission and completion queue entries (section 4.2, 4.6) ---- */
enum nvme_psdt {
	NVME_PSDT_PRP = 0,
	NVME_PSDT_SGL_MPTR_CONTIG = 1,
	NVME_PSDT_SGL_MPTR_SGL = 2,
};

/* SGL descriptor (section 4.1.1): type in the high nibble of the last byte. */
enum nvme_sgl_type {
	NVME_SGL_TYPE_DATA_BLOCK = 0x0,
	NVME_SGL_TYPE_BIT_BUCKET = 0x1,
	NVME_SGL_TYPE_SEGMENT = 0x2,
	NVME_SGL_TYPE_LAST_SEGMENT = 0x3,
	NVME_SGL_TYPE_KEYED_DATA_BLOCK = 0x4,
	NVME_SGL_TYPE_TRANSPORT_DATA_BLOCK = 0x5,
	NVME_SGL_TYPE_VENDOR = 0xf,
};
#define NVME_SGL_SUBTYPE_ADDRESS 0x0

struct nvme_sgl_desc {
	uint64_t addr;
	uint32_t length;
	uint8_t rsvd[3];
	uint8_t type; /* type << 4 | subtype */
} __attribute__((packed));
NVME_STATIC_ASSERT(sizeof(struct nvme_sgl_desc) == 16, "SGL descriptor");

union nvme_dptr {
	struct {
		uint64_t prp1;
		uint64_t prp2;
	} prp;
	struct nvme_sgl_desc sgl;
};
NVME_STATIC_ASSERT(sizeof(union nvme_dptr) == 16, "DPTR");

union nvme_cdw0 {
	uint32_t raw;
	struct {
		uint32_t opc : 8;
		uint32_t fuse : 2;
		uint32_t rsvd10 : 4;
		uint32_t psdt : 2;
		uint32_t cid : 16;
	} bits;
};
NVME_STATIC_ASSERT(sizeof(union nvme_cdw0) == 4, "CDW0");

struct nvme_sqe {
	union nvme_cdw0 cdw0;
	uint32_t nsid;
	uint32_t cdw2;
	uint32_t cdw3;
	uint64_t mptr;
	union nvme_dptr dptr;
	uint32_t cdw10;
	uint32_t cdw11;
	uint32_t cdw12;
	uint32_t cdw13;
	uint32_t cdw14;
	uint32_t cdw15;
};
NVME_STATIC_ASSERT(sizeof(struct nvme_sqe) == 64, "SQE");
#define NVME_SQES_LOG2 6

/* Status field of a CQE without the phase bit: SC bits 0-7, SCT bits 8-10, CRD 11-12, M 13,
 * DNR 14. The CQE holds it shifted left by one, with the phase tag in bit 0. */
struct nvme_cqe {
	uint32_t dw0;
	uint32_t dw1;
	uint16_t sqhd;
	uint16_t sqid;
	uint16_t cid;
	uint16_t status; /* phase | status << 1 */
};
NVME_STATIC_ASSERT(sizeof(struct nvme_cqe) == 16, "CQE");
#define NVME_CQES_LOG2 4

/* ---- Status codes: SCT << 8 | SC, DNR as 0x4000 (section 4.6.1.2) ---- */
#define NVME_SCT_GENERIC 0x0
#define NVME_SCT_CMD_SPECIFIC 0x1
#define NVME_SCT_MEDIA 0x2
#define NVME_SCT_PATH 0x3
#define NVME_STATUS(sct, sc) ((uint16_t)(((sct) << 8) | (sc)))
#define NVME_DNR 0x4000
#define NVME_MORE 0x2000
#define NVME_STATUS_SCT(s) (((s) >> 8) & 0x7)
#define NVME_STATUS_SC(s) ((s)&0xff)

enum nvme_status {
	NVME_SC_SUCCESS = 0x0000,
	NVME_SC_INVALID_OPCODE = 0x0001,
	NVME_SC_INVALID_FIELD = 0x0002,
	NVME_SC_CID_CONFLICT = 0x0003,
	NVME_SC_DATA_XFER_ERROR = 0x0004,
	NVME_SC_POWER_LOSS_ABORT = 0x0005,
	NVME_SC_INTERNAL = 0x0006,
	NVME_SC_ABORT_REQ = 0x0007,
	NVME_SC_ABORT_SQ_DELETION = 0x0008,
	NVME_SC_FUSED_FAIL = 0x0009,
	NVME_SC_FUSED_MISSING = 0x000a,
	NVME_SC_INVALID_NS = 0x000b,
	NVME_SC_CMD_SEQ_ERROR = 0x000c,
	NVME_SC_SGL_INVALID_LAST = 0x000d,
	NVME_SC_SGL_INVALID_COUNT = 0x000e,
	NVME_SC_SGL_INVALID_DATA_LEN = 0x000f,
	NVME_SC_SGL_INVALID_MD_LEN = 0x0010,
	NVME_SC_SGL_INVALID_TYPE = 0x0011,
	NVME_SC_PRP_INVALID_OFFSET = 0x0013,
	NVME_SC_SGL_INVALID_OFFSET = 0x0016,
	NVME_SC_KEEP_ALIVE_EXPIRED = 0x0019, /* Keep Alive Timer Expired */
	NVME_SC_CMD_INTERRUPTED = 0x0021, /* retry: resources busy (Base 2.0 Figure 102) */
	NVME_SC_LBA_RANGE = 0x0080,
	NVME_SC_CAP_EXCEEDED = 0x0081,
	NVME_SC_NS_NOT_READY = 0x0082,

	NVME_SC_CQ_INVALID = 0x0100,
	NVME_SC_QID_INVALID = 0x0101,
	NVME_SC_QUEUE_SIZE = 0x0102,
	NVME_SC_ABORT_LIMIT = 0x0103,
	NVME_SC_ASYNC_LIMIT = 0x0105,
	NVME_SC_INVALID_FW_SLOT = 0x0106,
	NVME_SC_INVALID_FW_IMAGE = 0x0107,
	NVME_SC_FW_OVERLAPPING_RANGE = 0x0114,
	NVME_SC_INVALID_VECTOR = 0x0108,
	NVME_SC_INVALID_LOG_PAGE = 0x0109,
	NVME_SC_INVALID_FORMAT = 0x010a,
	NVME_SC_INVALID_QUEUE_DELETION = 0x010c,
	NVME_SC_FEATURE_NOT_SAVEABLE = 0x010d,
	NVME_SC_FEATURE_NOT_CHANGEABLE = 0x010e,
	NVME_SC_FEATURE_NOT_PER_NS = 0x010f,
	NVME_SC_INVALID_IOCS = 0x012c,
	/* NVM Command Set specific (SCT 1). */
	NVME_SC_CMD_SIZE_LIMIT = 0x0183, /* Copy: MSRC, MSSRL or MCL exceeded */
	/* Copy formats 2h/3h: a source namespace whose format the copy cannot convert. */
	NVME_SC_INCOMPATIBLE_NS = 0x0185,
	NVME_SC_FAST_COPY_NOT_POSSIBLE = 0x0186, /* a source range with SOPT.FCO */

	NVME_SC_WRITE_FAULT = 0x0280,
	NVME_SC_UNRECOVERED_READ = 0x0281,
	NVME_SC_COMPARE_FAILED = 0x0285,
};

/* ---- Opcodes ---- */
enum nvme_admin_opcode {
	NVME_ADM_DELETE_SQ = 0x00,
	NVME_ADM_CREATE_SQ = 0x01,
	NVME_ADM_GET_LOG_PAGE = 0x02,
	NVME_ADM_DELETE_CQ = 0x04,
	NVME_ADM_CREATE_CQ = 0x05,
	NVME_ADM_IDENTIFY = 0x06,
	NVME_ADM_ABORT = 0x08,
	NVME_ADM_SET_FEATURES = 0x09,
	NVME_ADM_GET_FEATURES = 0x0a,
	NVME_ADM_ASYNC_EVENT = 0x0c,
	NVME_ADM_FW_COMMIT = 0x10,
	NVME_ADM_FW_DOWNLOAD = 0x11,
	NVME_ADM_KEEP_ALIVE = 0x18,
	NVME_ADM_DBBUF = 0x7c,
	NVME_ADM_FORMAT_NVM = 0x80,
	NVME_ADM_GET_LBA_STATUS = 0x86,
	NVME_ADM_VENDOR_FIRST = 0xc0,
};

enum nvme_io_opcode {
	NVME_CMD_FLUSH = 0x00,
	NVME_CMD_WRITE = 0x01,
	NVME_CMD_READ = 0x02,
	NVME_CMD_WRITE_UNCOR = 0x04,
	NVME_CMD_COMPARE = 0x05,
	NVME_CMD_WRITE_ZEROES = 0x08,
	NVME_CMD_DSM = 0x09,
	NVME_CMD_VERIFY = 0x0c,
	NVME_CMD_COPY = 0x19,
	NVME_CMD_VENDOR_FIRST = 0x80,
};

/* Read/Write/Compare/Verify/Write Zeroes CDW12 bits. */
#define NVME_RW_NLB_MASK 0xffffu
#define NVME_RW_FUA (1u << 30)
#define NVME_RW_LR (1u << 31)
#define NVME_WZ_DEAC (1u << 25)

/* Dataset Management (NVM command set 3.2.3). */
#define NVME_DSM_NR_MASK 0xffu
#define NVME_DSM_AD (1u << 2)
/* Copy (NVM Command Set 3.3.1): CDW12 fields and the Source Range Entries of descriptor format
 * 0h (32 bytes each; the tag fields matter only with protection information). */
#define NVME_COPY_NR_MASK 0xffu
#define NVME_COPY_DESFMT(cdw12) (((cdw12) >> 8) & 0xfu)
struct nvme_copy_range_fmt0 {
	uint64_t rsvd0;
	uint64_t slba;
	uint16_t nlb; /* 0-based */
	uint16_t rsvd18;
	uint32_t rsvd20;
	uint32_t eilbrt; /* bytes 27:24 */
	uint16_t elbat;
	uint16_t elbatm;
};
NVME_STATIC_ASSERT(sizeof(struct nvme_copy_range_fmt0) == 32, "copy source range format 0");
NVME_STATIC_ASSERT(__builtin_offsetof(struct nvme_copy_range_fmt0, eilbrt) == 24, "EILBRT");
/* Format 1h (40 bytes), for the 32b and 64b Guard formats: the expected storage and initial
 * reference tag is one 80-bit big-endian field (with STS 0, the reference tag in its low 48 bits
 * for the 64b Guard). PRINFOR (source checks) is CDW12 bits 15:12. */
struct nvme_copy_range_fmt1 {
	uint64_t rsvd0;
	uint64_t slba;
	uint16_t nlb; /* 0-based */
	uint8_t rsvd18[8];
	uint8_t elbt[10];
	uint16_t elbat;
	uint16_t elbatm;
};
NVME_STATIC_ASSERT(sizeof(struct nvme_copy_range_fmt1) == 40, "copy source range format 1");
NVME_STATIC_ASSERT(__builtin_offsetof(struct nvme_copy_range_fmt1, elbt) == 26, "ELBT");
#define NVME_COPY_PRINFOR(cdw12) (((cdw12) >> 12) & 0xfu)
/* Formats 2h and 3h (NVM Command Set 1.1, cross-namespace copy): formats 0h and 1h with the
 * Source Namespace Identifier in bytes 03:00 and Source Options in bytes 23:22. */
struct nvme_copy_range_fmt2 {
	uint32_t snsid;
	uint32_t rsvd4;
	uint64_t slba;
	uint16_t nlb; /* 0-based */
	uint8_t cetype;
	uint8_t rsvd19;
	uint16_t cev;
	uint16_t sopt;
	uint32_t eilbrt;
	uint16_t elbat;
	uint16_t elbatm;
};
NVME_STATIC_ASSERT(sizeof(struct nvme_copy_range_fmt2) == 32, "copy source range format 2");
NVME_STATIC_ASSERT(__builtin_offsetof(struct nvme_copy_range_fmt2, sopt) == 22, "SOPT");
NVME_STATIC_ASSERT(__builtin_offsetof(struct nvme_copy_range_fmt2, eilbrt) == 24, "EILBRT");
struct nvme_copy_range_fmt3 {
	uint32_t snsid;
	uint32_t rsvd4;
	uint64_t slba;
	uint16_t nlb; /* 0-based */
	uint8_t cetype;
	uint8_t rsvd19;
	uint16_t cev;
	uint16_t sopt;
	uint16_t rsvd24;
	uint8_t elbt[10];
	uint16_t elbat;
	uint16_t elbatm;
};
NVME_STATIC_ASSERT(sizeof(struct nvme_copy_range_fmt3) == 40, "copy source range format 3");
NVME_STATIC_ASSERT(__builtin_offsetof(struct nvme_copy_range_fmt3, sopt) == 22, "SOPT");
NVME_STATIC_ASSERT(__builtin_offsetof(struct nvme_copy_range_fmt3, elbt) == 26, "ELBT");
#define NVME_COPY_SOPT_FCO (1u << 15) /* Fast Copy Only */

struct nvme_dsm_range {
	uint32_t cattr;
	uint32_t nlb;
	uint64_t slba;
};
NVME_STATIC_ASSERT(sizeof(struct nvme_dsm_range) == 16, "DSM range");

/* ---- Queue creation (section 5.4, 5.5) ---- */
#define NVME_QUEUE_PC (1u << 0)
#define NVME_CQ_IEN (1u << 1)

/* ---- Identify (section 5.17) ---- */
enum nvme_cns {
	NVME_CNS_NS = 0x00,
	NVME_CNS_CTRL = 0x01,
	NVME_CNS_ACTIVE_NS_LIST = 0x02,
	NVME_CNS_NS_DESC_LIST = 0x03,
	NVME_CNS_CS_NS = 0x05,
	NVME_CNS_CS_CTRL = 0x06,
	NVME_CNS_CS_ACTIVE_NS_LIST = 0x07,
	NVME_CNS_CS_INDEP_NS = 0x08,
};
#define NVME_CSI_NVM 0x00
#define NVME_IDENTIFY_SIZE 4096

struct nvme_power_state {
	uint16_t mp; /* centiwatts */
	uint8_t rsvd2;
	uint8_t flags;
	uint32_t enlat;
	uint32_t exlat;
	uint8_t rrt;
	uint8_t rrl;
	uint8_t rwt;
	uint8_t rwl;
	uint16_t idlp;
	uint8_t ips;
	uint8_t rsvd19;
	uint16_t actp;
	uint8_t apw_aps;
	uint8_t rsvd23[9];
} __attribute__((packed));
NVME_STATIC_ASSERT(sizeof(struct nvme_power_state) == 32, "power state");

struct nvme_id_ctrl {
	uint16_t vid;
	uint16_t ssvid;
	char sn[20];
	char mn[40];
	char fr[8];
	uint8_t rab;
	uint8_t ieee[3];
	uint8_t cmic;
	uint8_t mdts;
	uint16_t cntlid;
	uint32_t ver;
	uint32_t rtd3r;
	uint32_t rtd3e;
	uint32_t oaes;
	uint32_t ctratt;
	uint16_t rrls;
	uint8_t rsvd102[9];
	uint8_t cntrltype;
	uint8_t fguid[16];
	uint16_t crdt[3];
	uint8_t rsvd134[119];
	uint8_t nvmsr;
	uint8_t vwci;
	uint8_t mec;
	uint16_t oacs;
	uint8_t acl;
	uint8_t aerl;
	uint8_t frmw;
	uint8_t lpa;
	uint8_t elpe;
	uint8_t npss;
	uint8_t avscc;
	uint8_t apsta;
	uint16_t wctemp;
	uint16_t cctemp;
	uint16_t mtfa;
	uint32_t hmpre;
	uint32_t hmmin;
	uint8_t tnvmcap[16];
	uint8_t unvmcap[16];
	uint32_t rpmbs;
	uint16_t edstt;
	uint8_t dsto;
	uint8_t fwug;
	uint16_t kas;
	uint16_t hctma;
	uint16_t mntmt;
	uint16_t mxtmt;
	uint32_t sanicap;
	uint32_t hmminds;
	uint16_t hmmaxd;
	uint16_t nsetidmax;
	uint16_t endgidmax;
	uint8_t anatt;
	uint8_t anacap;
	uint32_t anagrpmax;
	uint32_t nanagrpid;
	uint32_t pels;
	uint16_t domainid;
	uint8_t rsvd358[10];
	uint8_t megcap[16];
	uint8_t rsvd384[128];
	uint8_t sqes;
	uint8_t cqes;
	uint16_t maxcmd;
	uint32_t nn;
	uint16_t oncs;
	uint16_t fuses;
	uint8_t fna;
	uint8_t vwc;
	uint16_t awun;
	uint16_t awupf;
	uint8_t icsvscc;
	uint8_t nwpc;
	uint16_t acwu;
	uint16_t ocfs;
	uint32_t sgls;
	uint32_t mnan;
	uint8_t maxdna[16];
	uint32_t maxcna;
	uint8_t rsvd564[204];
	char subnqn[256];
	uint8_t rsvd1024[768];
	uint8_t nvmeof[256];
	struct nvme_power_state psd[32];
	uint8_t vs[1024];
} __attribute__((packed));
NVME_STATIC_ASSERT(sizeof(struct nvme_id_ctrl) == 4096, "identify controller");
NVME_STATIC_ASSERT(__builtin_offsetof(struct nvme_id_ctrl, oacs) == 256, "OACS offset");
NVME_STATIC_ASSERT(__builtin_offsetof(struct nvme_id_ctrl, sqes) == 512, "SQES offset");
NVME_STATIC_ASSERT(__builtin_offsetof(struct nvme_id_ctrl, sgls) == 536, "SGLS offset");
NVME_STATIC_ASSERT(__builtin_offsetof(struct nvme_id_ctrl, subnqn) == 768, "SUBNQN offset");

/* Identify controller bits. */
#define NVME_OACS_FORMAT (1u << 1)
#define NVME_OACS_DBBUF (1u << 8)
#define NVME_ONCS_COMPARE (1u << 0)
#define NVME_ONCS_WRITE_UNCOR (1u << 1)
#define NVME_ONCS_DSM (1u << 2)
#define NVME_ONCS_WRITE_ZEROES (1u << 3)
#define NVME_ONCS_SAVE_SELECT (1u << 4)
#define NVME_ONCS_TIMESTAMP (1u << 6)
#define NVME_ONCS_VERIFY (1u << 7)
#define NVME_ONCS_COPY (1u << 8)
#define NVME_OCFS_FORMAT0 (1u << 0)
#define NVME_OCFS_FORMAT1 (1u << 1)
#define NVME_OCFS_FORMAT2 (1u << 2)
#define NVME_OCFS_FORMAT3 (1u << 3)
#define NVME_OACS_GET_LBA_STATUS (1u << 9)
#define NVME_LPA_SMART_PER_NS (1u << 0)
#define NVME_LPA_CMD_EFFECTS (1u << 1)
#define NVME_LPA_EXT_DATA (1u << 2)
#define NVME_OAES_NS_ATTR (1u << 8)
#define NVME_VWC_PRESENT (1u << 0)
#define NVME_VWC_NSID_ALL_FLUSH (3u << 1)
#define NVME_FRMW_SLOT1_RO (1u << 0)
#define NVME_FRMW_SLOTS(n) ((uint8_t)((n) << 1))
#define NVME_FRMW_ACT_NO_RESET (1u << 4)
#define NVME_OACS_FW (1u << 2)
#define NVME_OAES_FW_ACT (1u << 9)
#define NVME_SGLS_SUPPORTED (1u << 0)
#define NVME_SGLS_BIT_BUCKET (1u << 16)
#define NVME_SGLS_EXCESS_LEN (1u << 18)
#define NVME_FNA_FORMAT_ALL (1u << 0)
#define NVME_FNA_CRYPTO_ERASE (1u << 2) /* Format NVM SES 2h supported */
#define NVME_CTRL_TYPE_IO 1

struct nvme_lbaf {
	uint16_t ms;
	uint8_t lbads;
	uint8_t rp;
} __attribute__((packed));
NVME_STATIC_ASSERT(sizeof(struct nvme_lbaf) == 4, "LBA format");

struct nvme_id_ns {
	uint64_t nsze;
	uint64_t ncap;
	uint64_t nuse;
	uint8_t nsfeat;
	uint8_t nlbaf;
	uint8_t flbas;
	uint8_t mc;
	uint8_t dpc;
	uint8_t dps;
	uint8_t nmic;
	uint8_t rescap;
	uint8_t fpi;
	uint8_t dlfeat;
	uint16_t nawun;
	uint16_t nawupf;
	uint16_t nacwu;
	uint16_t nabsn;
	uint16_t nabo;
	uint16_t nabspf;
	uint16_t noiob;
	uint8_t nvmcap[16];
	uint16_t npwg;
	uint16_t npwa;
	uint16_t npdg;
	uint16_t npda;
	uint16_t nows;
	uint16_t mssrl;
	uint32_t mcl;
	uint8_t msrc;
	uint8_t rsvd81;
	uint8_t nulbaf;
	uint8_t rsvd83[9];
	uint32_t anagrpid;
	uint8_t rsvd96[3];
	uint8_t nsattr;
	uint16_t nvmsetid;
	uint16_t endgid;
	uint8_t nguid[16];
	uint8_t eui64[8];
	struct nvme_lbaf lbaf[64];
	uint8_t vs[3712];
} __attribute__((packed));
NVME_STATIC_ASSERT(sizeof(struct nvme_id_ns) == 4096, "identify namespace");
NVME_STATIC_ASSERT(__builtin_offsetof(struct nvme_id_ns, nguid) == 104, "NGUID offset");
NVME_STATIC_ASSERT(__builtin_offsetof(struct nvme_id_ns, lbaf) == 128, "LBAF offset");

#define NVME_NSFEAT_THIN (1u << 0)
#define NVME_NSFEAT_DEALLOC_ERR (1u << 2)
#define NVME_DLFEAT_READ_ZEROES 0x1
#define NVME_DLFEAT_WZ_DEAC (1u << 3)

/* CNS 06h, CSI NVM: I/O command set specific identify controller (NVM command set 4.1.5.2). */
struct nvme_id_ctrl_nvm {
	uint8_t vsl;
	uint8_t wzsl;
	uint8_t wusl;
	uint8_t dmrl;
	uint32_t dmrsl;
	uint64_t dmsl;
	uint8_t rsvd16[4080];
} __attribute__((packed));
NVME_STATIC_ASSERT(sizeof(struct nvme_id_ctrl_nvm) == 4096, "identify controller NVM");

/* CNS 08h: I/O command set independent identify namespace (Base 2.0 5.17.2.9). */
struct nvme_id_ns_indep {
	uint8_t nsfeat;
	uint8_t nmic;
	uint8_t rescap;
	uint8_t fpi;
	uint32_t anagrpid;
	uint8_t nsattr;
	uint8_t rsvd9;
	uint16_t nvmsetid;
	uint16_t endgid;
	uint8_t nstat;
	uint8_t rsvd15[4081];
} __attribute__((packed));
NVME_STATIC_ASSERT(sizeof(struct nvme_id_ns_indep) == 4096, "identify ns independent");
#define NVME_NSTAT_READY 0x1

/* CNS 03h descriptors. */
enum nvme_nidt {
	NVME_NIDT_EUI64 = 1,
	NVME_NIDT_NGUID = 2,
	NVME_NIDT_UUID = 3,
	NVME_NIDT_CSI = 4,
};
struct nvme_ns_id_desc {
	uint8_t nidt;
	uint8_t nidl;
	uint16_t rsvd;
} __attribute__((packed));
NVME_STATIC_ASSERT(sizeof(struct nvme_ns_id_desc) == 4, "ns id descriptor header");

/* ---- Log pages (section 5.16) ---- */
enum nvme_log_id {
	NVME_LOG_SUPPORTED = 0x00,
	NVME_LOG_ERROR = 0x01,
	NVME_LOG_SMART = 0x02,
	NVME_LOG_FW_SLOT = 0x03,
	NVME_LOG_CHANGED_NS = 0x04,
	NVME_LOG_CMD_EFFECTS = 0x05,
	NVME_LOG_LBA_STATUS = 0x0e,
};

/* LBA Status Information log (Base 2.0 5.16.1.16): header, then per namespace an element with
 * its LBA range descriptors. */
struct nvme_lba_status_log_hdr {
	uint32_t lslplen; /* bytes of the whole log */
	uint32_t nlslne;  /* namespace elements */
	uint32_t estulb;  /* estimated unrecoverable blocks */
	uint16_t rsvd12;
	uint16_t lsgc; /* generation counter */
};
NVME_STATIC_ASSERT(sizeof(struct nvme_lba_status_log_hdr) == 16, "LBA status log header");
struct nvme_lba_status_ns_elem {
	uint32_t neid; /* nsid */
	uint32_t nlrd; /* range descriptors that follow */
	uint8_t ratype; /* recommended action type for Get LBA Status */
	uint8_t rsvd9[7];
};
NVME_STATIC_ASSERT(sizeof(struct nvme_lba_status_ns_elem) == 16, "LBA status ns element");
struct nvme_lba_range_desc {
	uint64_t rslba;
	uint32_t rnlb;
	uint32_t rsvd12;
};
NVME_STATIC_ASSERT(sizeof(struct nvme_lba_range_desc) == 16, "LBA range descriptor");

/* Get LBA Status (Base 2.0 5.9): CDW13 ATYPE, the returned list and its descriptors. */
#define NVME_LBAS_ATYPE_UNTRACKED 0x10 /* scan, then untracked and tracked */
#define NVME_LBAS_ATYPE_TRACKED 0x11   /* tracked potentially unrecoverable LBAs */
#define NVME_LBAS_CMPC_MORE 1	       /* more descriptors are available */
#define NVME_LBAS_CMPC_COMPLETE 2      /* the whole range was reported */
struct nvme_lba_status_hdr {
	uint32_t nlsd; /* descriptors that follow */
	uint8_t cmpc;
	uint8_t rsvd5[3];
};
NVME_STATIC_ASSERT(sizeof(struct nvme_lba_status_hdr) == 8, "LBA status list header");
struct nvme_lba_status_desc {
	uint64_t dslba;
	uint32_t nlb;
	uint8_t rsvd12;
	uint8_t status;
	uint8_t rsvd14[2];
};
NVME_STATIC_ASSERT(sizeof(struct nvme_lba_status_desc) == 16, "LBA status descriptor");

struct nvme_error_log_entry {
	uint64_t error_count;
	uint16_t sqid;
	uint16_t cid;
	uint16_t status; /* status field as in a CQE, phase tag included */
	uint16_t param_error_location;
	uint64_t lba;
	uint32_t nsid;
	uint8_t vs;
	uint8_t trtype;
	uint8_t rsvd30[2];
	uint64_t cs;
	uint16_t trtype_spec;
	uint8_t rsvd42[22];
} __attribute__((packed));
NVME_STATIC_ASSERT(sizeof(struct nvme_error_log_entry) == 64, "error log entry");

struct nvme_smart_log {
	uint8_t critical_warning;
	uint16_t temperature; /* Kelvin */
	uint8_t avail_spare;
	uint8_t spare_thresh;
	uint8_t percent_used;
	uint8_t endu_grp_crit;
	uint8_t rsvd7[25];
	uint8_t data_units_read[16];
	uint8_t data_units_written[16];
	uint8_t host_reads[16];
	uint8_t host_writes[16];
	uint8_t ctrl_busy_time[16];
	uint8_t power_cycles[16];
	uint8_t power_on_hours[16];
	uint8_t unsafe_shutdowns[16];
	uint8_t media_errors[16];
	uint8_t num_err_log_entries[16];
	uint32_t warning_temp_time;
	uint32_t critical_comp_time;
	uint16_t temp_sensor[8];
	uint32_t thm_temp_trans_count[2];
	uint32_t thm_temp_total_time[2];
	uint8_t rsvd232[280];
} __attribute__((packed));
NVME_STATIC_ASSERT(sizeof(struct nvme_smart_log) == 512, "SMART log");
NVME_STATIC_ASSERT(__builtin_offsetof(struct nvme_smart_log, data_units_read) == 32, "DUR");
#define NVME_SMART_CRIT_SPARE (1u << 0)
#define NVME_SMART_CRIT_TEMPERATURE (1u << 1)
#define NVME_SMART_CRIT_RELIABILITY (1u << 2)

struct nvme_fw_slot_log {
	uint8_t afi;
	uint8_t rsvd1[7];
	char frs[7][8];
	uint8_t rsvd64[448];
} __attribute__((packed));
NVME_STATIC_ASSERT(sizeof(struct nvme_fw_slot_log) == 512, "firmware slot log");

struct nvme_effects_log {
	uint32_t acs[256];
	uint32_t iocs[256];
	uint8_t rsvd2048[2048];
};
NVME_STATIC_ASSERT(sizeof(struct nvme_effects_log) == 4096, "effects log");

#define NVME_CMD_EFFECTS_CSUPP (1u << 0)
#define NVME_CMD_EFFECTS_LBCC (1u << 1)
#define NVME_CMD_EFFECTS_NCC (1u << 2)
#define NVME_CMD_EFFECTS_NIC (1u << 3)
#define NVME_CMD_EFFECTS_CCC (1u << 4)
#define NVME_CMD_EFFECTS_CSE_NS (1u << 16)
#define NVME_CMD_EFFECTS_CSE_CTRL (1u << 17)

#define NVME_LOG_SUPPORTED_LSUPP (1u << 0)
/* Feature Identifiers Supported and Effects (log 12h, NVMe Base 2.0 section 5.16.1.17): one
 * dword per FID: FSUPP, the effects of a Set Features (UDCC, NCC, NIC, CCC), UUID selection,
 * and the scope of the feature (FSP, bits 31:20). */
#define NVME_LOG_FID_EFFECTS 0x12
#define NVME_FID_EFFECTS_FSUPP (1u << 0)
#define NVME_FID_EFFECTS_SCOPE_NS (1u << 20)
#define NVME_FID_EFFECTS_SCOPE_CTRL (1u << 21)
#define NVME_FID_EFFECTS_SCOPE_ENDGRP (1u << 23)
#define NVME_FID_EFFECTS_SCOPE_NSS (1u << 25)
#define NVME_CHANGED_NS_MAX 1024
#define NVME_CHANGED_NS_OVERFLOW 0xffffffffu

/* ---- Features (section 5.27.1) ---- */
enum nvme_feature_id {
	NVME_FEAT_ARBITRATION = 0x01,
	NVME_FEAT_POWER_MGMT = 0x02,
	NVME_FEAT_TEMP_THRESH = 0x04,
	NVME_FEAT_ERR_RECOVERY = 0x05,
	NVME_FEAT_VOLATILE_WC = 0x06,
	NVME_FEAT_NUM_QUEUES = 0x07,
	NVME_FEAT_IRQ_COALESCE = 0x08,
	NVME_FEAT_IRQ_CONFIG = 0x09,
	NVME_FEAT_WRITE_ATOMIC = 0x0a,
	NVME_FEAT_ASYNC_EVENT = 0x0b,
	NVME_FEAT_AUTO_PST = 0x0c,
	NVME_FEAT_TIMESTAMP = 0x0e,
	NVME_FEAT_KATO = 0x0f, /* Keep Alive Timer */
	NVME_FEAT_HOST_BEHAVIOR = 0x16,
};
/* Host Behavior Support (FID 16h, NVMe Base 2.1), 512 bytes: ACRE byte 0, ETDAS byte 1,
 * LBAFEE byte 2, CDFE bytes 05:04 (bit n enables Copy descriptor format n, n = 2, 3). */
#define NVME_HBS_DATA_SIZE 512
#define NVME_HBS_ACRE 0
#define NVME_HBS_ETDAS 1
#define NVME_HBS_LBAFEE 2
#define NVME_HBS_CDFE 4

enum nvme_feat_sel {
	NVME_SEL_CURRENT = 0,
	NVME_SEL_DEFAULT = 1,
	NVME_SEL_SAVED = 2,
	NVME_SEL_SUPPORTED = 3,
};
#define NVME_FEAT_CAP_SAVE (1u << 0)
#define NVME_FEAT_CAP_NS (1u << 1)
#define NVME_FEAT_CAP_CHANGE (1u << 2)
#define NVME_SET_FEAT_SV (1u << 31)
#define NVME_IRQ_CONFIG_CD (1u << 16)
#define NVME_APST_DATA_SIZE 256
#define NVME_TIMESTAMP_DATA_SIZE 8

/* ---- Asynchronous events (section 5.2) ---- */
enum nvme_aer_type {
	NVME_AER_TYPE_ERROR = 0,
	NVME_AER_TYPE_SMART = 1,
	NVME_AER_TYPE_NOTICE = 2,
};
enum nvme_aer_info {
	NVME_AER_ERR_INVALID_DB_REG = 0x00,
	NVME_AER_ERR_INVALID_DB_VALUE = 0x01,
	NVME_AER_SMART_RELIABILITY = 0x00,
	NVME_AER_SMART_TEMP_THRESH = 0x01,
	NVME_AER_SMART_SPARE = 0x02,
	NVME_AER_NOTICE_NS_CHANGED = 0x00,
	NVME_AER_NOTICE_FW_ACT_START = 0x01,
};
#define NVME_AEC_SMART_MASK 0xffu
#define NVME_AEC_NS_ATTR (1u << 8)
#define NVME_AEC_FW_ACT (1u << 9)
#define NVME_AER_DW0(type, info, lid)                                                              \
	((uint32_t)(type) | ((uint32_t)(info) << 8) | ((uint32_t)(lid) << 16))

/* ---- Format NVM (section 5.23) ---- */
#define NVME_FORMAT_LBAF(cdw10) (((cdw10)&0xf) | (((cdw10) >> 8) & 0x30))
#define NVME_FORMAT_MSET(cdw10) (((cdw10) >> 4) & 0x1)
#define NVME_FORMAT_PI(cdw10) (((cdw10) >> 5) & 0x7)
#define NVME_FORMAT_SES(cdw10) (((cdw10) >> 9) & 0x7)

#define NVME_NSID_ALL 0xffffffffu

/* ---- Doorbells (sections 3.1.4.23/24) ---- */
/* Index of queue qid's SQ tail (cq false) or CQ head doorbell, counted in strides of
 * 4 << CAP.DSTRD from NVME_REG_DBS; the shadow doorbell and event index buffers of Doorbell
 * Buffer Config are indexed the same way (section 5.8). */
static inline uint32_t nvme_db_index(uint16_t qid, bool cq)
{
	return 2u * qid + (cq ? 1u : 0u);
}

static inline uint16_t nvme_db_qid(uint32_t index)
{
	return (uint16_t)(index / 2);
}

static inline bool nvme_db_is_cq(uint32_t index)
{
	return index & 1;
}

/* ---- Reservations (Base 2.0 sections 7.2-7.5 and 8.19), Host Identifier and reservation
 * features (5.27.1.25-27), Reservation Notification log (5.16.1.24), fused operations (3.4.2).
 * Values as the specification's figures; one block so parallel edits of this file stay apart. */
enum nvme_resv_opcode {
	NVME_CMD_RESV_REGISTER = 0x0d,
	NVME_CMD_RESV_REPORT = 0x0e,
	NVME_CMD_RESV_ACQUIRE = 0x11,
	NVME_CMD_RESV_RELEASE = 0x15,
};
enum nvme_resv_status {
	NVME_SC_HOSTID_INCONSISTENT = 0x0018, /* Host Identifier Inconsistent Format */
	NVME_SC_PREEMPT_ABORT = 0x001b,	      /* Command Aborted due to Preempt and Abort */
	NVME_SC_RESV_CONFLICT = 0x0083,	      /* Reservation Conflict (NVM command set) */
};
enum nvme_resv_type {
	NVME_RESV_NONE = 0,
	NVME_RESV_WRITE_EXCLUSIVE = 1,
	NVME_RESV_EXCLUSIVE_ACCESS = 2,
	NVME_RESV_WE_REG_ONLY = 3,
	NVME_RESV_EA_REG_ONLY = 4,
	NVME_RESV_WE_ALL_REGS = 5,
	NVME_RESV_EA_ALL_REGS = 6,
};
/* CDW10 of Register / Acquire / Release. */
#define NVME_RESV_ACTION(cdw10) ((cdw10)&0x7u)  /* RREGA / RACQA / RRELA */
#define NVME_RESV_IEKEY (1u << 3)		/* ignore existing key */
#define NVME_RESV_RTYPE(cdw10) (((cdw10) >> 8) & 0xffu)
#define NVME_RESV_CPTPL(cdw10) ((cdw10) >> 30) /* change persist through power loss state */
enum nvme_resv_register_action { NVME_RREGA_REGISTER = 0, NVME_RREGA_UNREGISTER = 1,
				 NVME_RREGA_REPLACE = 2 };
enum nvme_resv_acquire_action { NVME_RACQA_ACQUIRE = 0, NVME_RACQA_PREEMPT = 1,
				NVME_RACQA_PREEMPT_ABORT = 2 };
enum nvme_resv_release_action { NVME_RRELA_RELEASE = 0, NVME_RRELA_CLEAR = 1 };
enum nvme_resv_cptpl { NVME_CPTPL_NO_CHANGE = 0, NVME_CPTPL_CLEAR = 2, NVME_CPTPL_SET = 3 };
#define NVME_RESV_REPORT_EDS (1u << 0) /* CDW11: extended data structure */
/* Reservation Status data structure (Figure "Reservation Status Data Structure"): a 24-byte
 * header (64 with EDS) then one entry per registered controller, 24 bytes (64 with EDS). */
struct nvme_resv_status_hdr {
	uint32_t gen;
	uint8_t rtype;
	uint16_t regctl;
	uint16_t rsvd7;
	uint8_t ptpls;
	uint8_t rsvd10[14];
} __attribute__((packed));
NVME_STATIC_ASSERT(sizeof(struct nvme_resv_status_hdr) == 24, "reservation status header");
struct nvme_resv_ctrl {
	uint16_t cntlid;
	uint8_t rcsts; /* bit 0: holds the reservation */
	uint8_t rsvd3[5];
	uint64_t hostid;
	uint64_t rkey;
} __attribute__((packed));
NVME_STATIC_ASSERT(sizeof(struct nvme_resv_ctrl) == 24, "registered controller");
struct nvme_resv_ctrl_ext {
	uint16_t cntlid;
	uint8_t rcsts;
	uint8_t rsvd3[5];
	uint64_t rkey;
	uint8_t hostid[16];
	uint8_t rsvd32[32];
} __attribute__((packed));
NVME_STATIC_ASSERT(sizeof(struct nvme_resv_ctrl_ext) == 64, "registered controller, extended");
#define NVME_RESV_EXT_HDR_SIZE 64
#define NVME_RESV_CNTLID_UNKNOWN 0xffffu /* a registrant with no controller (restored by PTPL) */
/* Features. */
enum nvme_resv_feature_id {
	NVME_FEAT_HOST_ID = 0x81,
	NVME_FEAT_RESV_MASK = 0x82,
	NVME_FEAT_RESV_PERSIST = 0x83,
};
#define NVME_HOST_ID_EXHID (1u << 0) /* CDW11: 128-bit host identifier */
#define NVME_RESV_MASK_REGPRE (1u << 1)
#define NVME_RESV_MASK_RESREL (1u << 2)
#define NVME_RESV_MASK_RESPRE (1u << 3)
#define NVME_RESV_MASK_ALL (NVME_RESV_MASK_REGPRE | NVME_RESV_MASK_RESREL | NVME_RESV_MASK_RESPRE)
#define NVME_RESV_PTPL (1u << 0) /* Reservation Persistence CDW11 / CDW0 */
/* Reservation Notification log page. */
#define NVME_LOG_RESV_NOTIFY 0x80
enum nvme_resv_notify_type {
	NVME_RESV_NOTIFY_EMPTY = 0,
	NVME_RESV_NOTIFY_REG_PREEMPTED = 1,
	NVME_RESV_NOTIFY_RELEASED = 2,
	NVME_RESV_NOTIFY_PREEMPTED = 3,
};
struct nvme_resv_notify_log {
	uint64_t count; /* log page count */
	uint8_t type;
	uint8_t nr_avail; /* further pages available */
	uint8_t rsvd10[2];
	uint32_t nsid;
	uint8_t rsvd16[48];
} __attribute__((packed));
NVME_STATIC_ASSERT(sizeof(struct nvme_resv_notify_log) == 64, "reservation notification log");
#define NVME_AER_TYPE_IO_SPECIFIC 6
#define NVME_AER_IO_RESV_LOG 0 /* Reservation Log Page Available */
/* Identify: ONCS bit 5 (reservations), FUSES bit 0 (Compare and Write), CMIC bit 1 (several
 * controllers), NMIC bit 0 (namespace may be shared), RESCAP bits (Identify Namespace). */
#define NVME_ONCS_RESERVATIONS (1u << 5)
#define NVME_FUSES_COMPARE_WRITE (1u << 0)
#define NVME_CMIC_MULTI_CTRL (1u << 1)
#define NVME_NMIC_SHARED (1u << 0)
#define NVME_RESCAP_PTPL (1u << 0)
#define NVME_RESCAP_ALL_TYPES 0x7eu /* types 1..6: bits 1-6 */
#define NVME_RESCAP_IEKEY (1u << 7)
/* CDW0 FUSE field. */
enum nvme_fuse { NVME_FUSE_NONE = 0, NVME_FUSE_FIRST = 1, NVME_FUSE_SECOND = 2 };
/* ---- Namespace Management and Attachment (Base 2.0 sections 5.22, 5.23, 8.11) ---- */
#define NVME_ADM_NS_MGMT 0x0d
#define NVME_ADM_NS_ATTACH 0x15
#define NVME_OACS_NS_MGMT (1u << 3)
#define NVME_NS_MGMT_SEL_CREATE 0x0
#define NVME_NS_MGMT_SEL_DELETE 0x1
#define NVME_NS_ATTACH_SEL_ATTACH 0x0
#define NVME_NS_ATTACH_SEL_DETACH 0x1
#define NVME_CNS_ALLOC_NS_LIST 0x10
#define NVME_CNS_ALLOC_NS 0x11
#define NVME_CNS_NS_CTRL_LIST 0x12
#define NVME_CNS_CTRL_LIST 0x13
#define NVME_CTRL_LIST_MAX 2047 /* identifiers in a Controller List (Figure 137) */
/* Command specific status values (SCT 1h) of Namespace Management / Attachment. */
#define NVME_SC_NS_INSUFFICIENT_CAP 0x0115
#define NVME_SC_NS_ID_UNAVAILABLE 0x0116
#define NVME_SC_NS_ALREADY_ATTACHED 0x0118
#define NVME_SC_NS_IS_PRIVATE 0x0119
#define NVME_SC_NS_NOT_ATTACHED 0x011a
#define NVME_SC_THIN_PROV_NOT_SUPP 0x011b
#define NVME_SC_CTRL_LIST_INVALID 0x011c
#define NVME_SC_ANA_GROUP_ID_INVALID 0x0124
#define NVME_SC_IOCS_NOT_SUPPORTED 0x0129
/* ---- Device Self-test, Sanitize, Telemetry, Persistent Event Log (Base 2.0 5.14, 5.24,
 * 5.16.1.7/8/14/23, 8.11, 8.21) ---- */
#define NVME_ADM_SELF_TEST 0x14
#define NVME_ADM_SANITIZE 0x84
#define NVME_LOG_SELF_TEST 0x06
#define NVME_LOG_TELEMETRY_HOST 0x07
#define NVME_LOG_TELEMETRY_CTRL 0x08
#define NVME_LOG_PERSISTENT_EVENT 0x0d
#define NVME_LOG_SANITIZE 0x81
#define NVME_SC_SANITIZE_FAILED 0x001c
#define NVME_SC_SANITIZE_IN_PROGRESS 0x001d
#define NVME_SC_SELF_TEST_IN_PROGRESS 0x011d
#define NVME_OACS_SELF_TEST (1u << 4)
#define NVME_LPA_TELEMETRY (1u << 3)
#define NVME_LPA_PEL (1u << 4)
#define NVME_OAES_TELEMETRY (1u << 10)
#define NVME_AEC_TELEMETRY (1u << 10)
#define NVME_AER_NOTICE_TELEMETRY 0x02
#define NVME_DSTO_ONE_AT_A_TIME (1u << 0)
#define NVME_SANICAP_CES (1u << 0)
#define NVME_SANICAP_BES (1u << 1)
#define NVME_SANICAP_OWS (1u << 2)
#define NVME_SANICAP_NODMMAS_UNMODIFIED (1u << 30) /* 01b: No-Deallocate leaves media as is */

/* Device Self-test: CDW10 STC, the log's result codes (Figure 'Self-test Result Data'). */
#define NVME_DST_SHORT 0x1
#define NVME_DST_EXTENDED 0x2
#define NVME_DST_ABORT 0xf
enum nvme_dst_res {
	NVME_DST_RES_OK = 0x0,
	NVME_DST_RES_ABORTED_CMD = 0x1,
	NVME_DST_RES_ABORTED_RESET = 0x2,
	NVME_DST_RES_ABORTED_NS_REMOVED = 0x3,
	NVME_DST_RES_ABORTED_FORMAT = 0x4,
	NVME_DST_RES_FATAL = 0x5,
	NVME_DST_RES_UNKNOWN_SEGMENT = 0x6,
	NVME_DST_RES_FAILED_SEGMENT = 0x7,
	NVME_DST_RES_ABORTED_UNKNOWN = 0x8,
	NVME_DST_RES_ABORTED_SANITIZE = 0x9,
	NVME_DST_RES_UNUSED = 0xf,
};
#define NVME_DST_VALID_NSID (1u << 0)
#define NVME_DST_VALID_FLBA (1u << 1)
#define NVME_DST_VALID_SCT (1u << 2)
#define NVME_DST_VALID_SC (1u << 3)
#define NVME_DST_LOG_ENTRIES 20
struct nvme_dst_result {
	uint8_t status; /* STC << 4 | result */
	uint8_t segment;
	uint8_t valid;
	uint8_t rsvd3;
	uint64_t poh;
	uint32_t nsid;
	uint64_t flba;
	uint8_t sct;
	uint8_t sc;
	uint8_t vs[2];
} __attribute__((packed));
NVME_STATIC_ASSERT(sizeof(struct nvme_dst_result) == 28, "self-test result");
struct nvme_dst_log {
	uint8_t current_op;	 /* STC of the operation in progress, 0: none */
	uint8_t current_percent; /* bits 6:0 */
	uint8_t rsvd2[2];
	struct nvme_dst_result result[NVME_DST_LOG_ENTRIES];
} __attribute__((packed));
NVME_STATIC_ASSERT(sizeof(struct nvme_dst_log) == 564, "self-test log");

/* Sanitize: CDW10 fields, the Sanitize Status log. */
#define NVME_SANACT(cdw10) ((cdw10)&0x7)
#define NVME_SANACT_EXIT_FAILURE 0x1
#define NVME_SANACT_BLOCK_ERASE 0x2
#define NVME_SANACT_OVERWRITE 0x3
#define NVME_SANACT_CRYPTO_ERASE 0x4
#define NVME_SAN_AUSE (1u << 3)
#define NVME_SAN_OWPASS(cdw10) (((cdw10) >> 4) & 0xf)
#define NVME_SAN_OIPBP (1u << 8)
#define NVME_SAN_NDAS (1u << 9)
enum nvme_sstat {
	NVME_SSTAT_NEVER = 0x0,
	NVME_SSTAT_COMPLETED = 0x1,
	NVME_SSTAT_IN_PROGRESS = 0x2,
	NVME_SSTAT_FAILED = 0x3,
	NVME_SSTAT_COMPLETED_NDAS = 0x4,
};
#define NVME_SSTAT_PASSES_SHIFT 3
#define NVME_SSTAT_GDE (1u << 8)
struct nvme_sanitize_log {
	uint16_t sprog; /* progress, n / 65536; FFFFh when not in progress */
	uint16_t sstat;
	uint32_t scdw10;
	uint32_t eto;	 /* estimated seconds: overwrite */
	uint32_t etbe;	 /* block erase */
	uint32_t etce;	 /* crypto erase */
	uint32_t etond;	 /* overwrite, No-Deallocate */
	uint32_t etbend; /* block erase, No-Deallocate */
	uint32_t etcend; /* crypto erase, No-Deallocate */
	uint8_t rsvd32[480];
};
NVME_STATIC_ASSERT(sizeof(struct nvme_sanitize_log) == 512, "sanitize status log");

/* Telemetry Host-Initiated (07h) / Controller-Initiated (08h) header; data in 512-byte blocks. */
#define NVME_TELEMETRY_BLOCK 512
#define NVME_TELEMETRY_LSP_CREATE 0x1
struct nvme_telemetry_hdr {
	uint8_t lid;
	uint8_t rsvd1[4];
	uint8_t ieee[3];
	uint16_t da1lb;
	uint16_t da2lb;
	uint16_t da3lb;
	uint8_t rsvd14[2];
	uint32_t da4lb;
	uint8_t rsvd20[361];
	uint8_t host_gen;   /* 07h only */
	uint8_t ctrl_avail; /* controller-initiated data available */
	uint8_t ctrl_gen;
	uint8_t reason[128];
} __attribute__((packed));
NVME_STATIC_ASSERT(sizeof(struct nvme_telemetry_hdr) == 512, "telemetry header");

/* Persistent Event Log (0Dh): LSP action, header, event header, event types. */
#define NVME_PEL_READ 0x0
#define NVME_PEL_ESTABLISH 0x1
#define NVME_PEL_RELEASE 0x2
struct nvme_pel_hdr {
	uint8_t lid;
	uint8_t rsvd1[3];
	uint32_t tnev;
	uint64_t tll;
	uint8_t rv;
	uint8_t rsvd17;
	uint16_t lhl;
	uint64_t ts;
	uint8_t poh[16];
	uint64_t pcc;
	uint16_t vid;
	uint16_t ssvid;
	char sn[20];
	char mn[40];
	char subnqn[256];
	uint16_t gen;
	uint32_t rci;
	uint8_t rsvd378[102];
	uint8_t seb[32]; /* supported events bitmap */
} __attribute__((packed));
NVME_STATIC_ASSERT(sizeof(struct nvme_pel_hdr) == 512, "persistent event log header");
struct nvme_pel_event {
	uint8_t etype;
	uint8_t etype_rev;
	uint8_t ehl; /* header bytes after this field (21) */
	uint8_t ehai;
	uint16_t cntlid;
	uint64_t ets; /* timestamp, as the Timestamp feature */
	uint16_t pelpid;
	uint8_t rsvd16[4];
	uint16_t vsil;
	uint16_t el; /* bytes after the header */
} __attribute__((packed));
NVME_STATIC_ASSERT(sizeof(struct nvme_pel_event) == 24, "persistent event header");
enum nvme_pel_type {
	NVME_PEL_SMART = 0x01,
	NVME_PEL_FW_COMMIT = 0x02,
	NVME_PEL_TIMESTAMP = 0x03,
	NVME_PEL_POWER_ON_RESET = 0x04,
	NVME_PEL_HW_ERROR = 0x05,
	NVME_PEL_CHANGE_NS = 0x06,
	NVME_PEL_FORMAT_START = 0x07,
	NVME_PEL_FORMAT_DONE = 0x08,
	NVME_PEL_SANITIZE_START = 0x09,
	NVME_PEL_SANITIZE_DONE = 0x0a,
	NVME_PEL_SET_FEATURE = 0x0b,
	NVME_PEL_TELEMETRY = 0x0c,
	NVME_PEL_THERMAL = 0x0d,
};
/* NVM Subsystem Hardware Error Event codes (event type 05h, Base 2.0). */
#define NVME_PEL_HWE_CRIT_WARN 0x0006	 /* Critical Warning Condition */
#define NVME_PEL_HWE_UNSAFE_SHUTDOWN 0x0008 /* Unsafe Shutdown */
#define NVME_PEL_HWE_CTRL_FATAL 0x0009	 /* Controller Fatal Status */
#define NVME_PEL_HWE_MEDIA 0x000a	 /* Media and Data Integrity Status */
/* Set Feature event layout (event type 0Bh): command dwords logged (CDW10 up), bits 2:0. */
#define NVME_PEL_SETFEAT_DWORDS 6u
/* ---- Zoned Namespace Command Set (NVMe ZNS 1.1, CSI 2h) and I/O command set selection
 * (Base 2.0 3.1.3.1 CAP.CSS, 3.1.3.5 CC.CSS, 5.17.2.21 Identify CNS 1Ch, 5.27.1.21 FID 19h) ---- */
#define NVME_CSI_ZNS 0x02
#define NVME_CAP_CSS_NVM (1u << 0)
#define NVME_CAP_CSS_IOCS (1u << 6)   /* one or more I/O command sets */
#define NVME_CC_CSS_NVM 0x0
#define NVME_CC_CSS_IOCS 0x6	      /* all supported I/O command sets */
#define NVME_CNS_IOCS 0x1c	      /* Identify I/O Command Set data structure */
#define NVME_FEAT_IOCS_PROFILE 0x19
#define NVME_IOCS_VECTOR_NVM (1ull << 0)
#define NVME_IOCS_VECTOR_ZNS (1ull << 2)
#define NVME_SC_IOCS_COMBINATION_REJECTED 0x012b /* Set Features FID 19h */

enum nvme_zns_opcode {
	NVME_CMD_ZONE_MGMT_SEND = 0x79,
	NVME_CMD_ZONE_MGMT_RECV = 0x7a,
	NVME_CMD_ZONE_APPEND = 0x7d,
};

/* Command specific statuses (SCT 1h) of the ZNS command set (ZNS 1.1 Figure 25). */
#define NVME_SC_ZONE_BOUNDARY_ERROR 0x01b8
#define NVME_SC_ZONE_IS_FULL 0x01b9
#define NVME_SC_ZONE_IS_READ_ONLY 0x01ba
#define NVME_SC_ZONE_IS_OFFLINE 0x01bb
#define NVME_SC_ZONE_INVALID_WRITE 0x01bc
#define NVME_SC_TOO_MANY_ACTIVE_ZONES 0x01bd
#define NVME_SC_TOO_MANY_OPEN_ZONES 0x01be
#define NVME_SC_ZONE_INVALID_TRANSITION 0x01bf

/* Zone states (the ZS field's upper nibble, ZNS 1.1 Figure 37). */
enum nvme_zone_state {
	NVME_ZS_EMPTY = 0x1,
	NVME_ZS_IMP_OPEN = 0x2,
	NVME_ZS_EXP_OPEN = 0x3,
	NVME_ZS_CLOSED = 0x4,
	NVME_ZS_READ_ONLY = 0xd,
	NVME_ZS_FULL = 0xe,
	NVME_ZS_OFFLINE = 0xf,
};
#define NVME_ZONE_TYPE_SEQ_WRITE 0x2

/* Zone Management Send CDW13: action and Select All (ZNS 1.1 3.4.3). */
enum nvme_zone_send_action {
	NVME_ZSA_CLOSE = 0x01,
	NVME_ZSA_FINISH = 0x02,
	NVME_ZSA_OPEN = 0x03,
	NVME_ZSA_RESET = 0x04,
	NVME_ZSA_OFFLINE = 0x05,
	NVME_ZSA_SET_ZDE = 0x10,
};
#define NVME_ZMS_SELECT_ALL (1u << 8)
/* Zone Management Receive CDW13: action, reporting options filter, partial report (3.4.2). */
#define NVME_ZRA_REPORT 0x00
#define NVME_ZRA_EXT_REPORT 0x01
enum nvme_zone_report_filter {
	NVME_ZRASF_ALL = 0x0,
	NVME_ZRASF_EMPTY = 0x1,
	NVME_ZRASF_IMP_OPEN = 0x2,
	NVME_ZRASF_EXP_OPEN = 0x3,
	NVME_ZRASF_CLOSED = 0x4,
	NVME_ZRASF_FULL = 0x5,
	NVME_ZRASF_READ_ONLY = 0x6,
	NVME_ZRASF_OFFLINE = 0x7,
};
#define NVME_ZMR_PARTIAL (1u << 16)

struct nvme_zone_report_hdr {
	uint64_t nr_zones;
	uint8_t rsvd8[56];
} __attribute__((packed));
NVME_STATIC_ASSERT(sizeof(struct nvme_zone_report_hdr) == 64, "zone report header");

struct nvme_zone_desc {
	uint8_t zt;
	uint8_t zs; /* state << 4 */
	uint8_t za;
	uint8_t zai;
	uint8_t rsvd4[4];
	uint64_t zcap;
	uint64_t zslba;
	uint64_t wp;
	uint8_t rsvd32[32];
} __attribute__((packed));
NVME_STATIC_ASSERT(sizeof(struct nvme_zone_desc) == 64, "zone descriptor");
#define NVME_ZA_ZDEV (1u << 7) /* zone descriptor extension valid */

/* Changed Zone List log page (ZNS 1.1 "Changed Zone List", LID BFh, CSI 2h, per namespace): the
 * zones whose descriptor the controller changed on its own (a zone went Read Only or Offline)
 * since the log was last read; FFFFh zone identifiers: more than 511 (the list is then empty).
 * Reported by the Zone Descriptor Changed notice (Asynchronous Event Information EFh), enabled
 * by Asynchronous Event Configuration bit 27 (ZDCN) and advertised in OAES bit 27. */
#define NVME_LOG_ZNS_CHANGED_ZONES 0xbf
#define NVME_AER_NOTICE_ZONE_CHANGED 0xef
#define NVME_AEC_ZDCN (1u << 27)
#define NVME_OAES_ZDCN (1u << 27)
#define NVME_ZNS_CHANGED_MAX 511
#define NVME_ZNS_CHANGED_OVERFLOW 0xffff
struct nvme_zns_changed_zone_log {
	uint16_t nrzid;
	uint8_t rsvd2[6];
	uint64_t zid[NVME_ZNS_CHANGED_MAX]; /* the zones' first LBAs */
} __attribute__((packed));
NVME_STATIC_ASSERT(sizeof(struct nvme_zns_changed_zone_log) == 4096, "changed zone list");

/* CNS 05h, CSI 2h: ZNS Identify Namespace (ZNS 1.1 Figure 45). */
struct nvme_zns_lbafe {
	uint64_t zsze;
	uint8_t zdes; /* zone descriptor extension size, 64-byte units */
	uint8_t rsvd9[7];
} __attribute__((packed));
struct nvme_id_ns_zns {
	uint16_t zoc;
	uint16_t ozcs;
	uint32_t mar; /* 0-based; FFFFFFFFh: no limit */
	uint32_t mor;
	uint32_t rrl;
	uint32_t frl;
	uint32_t rrl1, rrl2, rrl3;
	uint32_t frl1, frl2, frl3;
	uint32_t numzrwa;
	uint16_t zrwafg;
	uint16_t zrwasz;
	uint8_t zrwacap;
	uint8_t rsvd53[2763];
	struct nvme_zns_lbafe lbafe[64];
	uint8_t vs[256];
} __attribute__((packed));
NVME_STATIC_ASSERT(sizeof(struct nvme_id_ns_zns) == 4096, "identify namespace ZNS");
NVME_STATIC_ASSERT(__builtin_offsetof(struct nvme_id_ns_zns, lbafe) == 2816, "LBAFE offset");
#define NVME_ZNS_NO_LIMIT 0xffffffffu

/* CNS 06h, CSI 2h: ZNS Identify Controller. */
struct nvme_id_ctrl_zns {
	uint8_t zasl; /* zone append size limit, 2^n min pages; 0: MDTS */
	uint8_t rsvd1[4095];
} __attribute__((packed));
NVME_STATIC_ASSERT(sizeof(struct nvme_id_ctrl_zns) == 4096, "identify controller ZNS");

/* ---- LBA formats, metadata, end-to-end protection (NVM Command Set 1.0 sections 4.1.5.1,
 * 5.2; Base 2.0 5.17.2.1, 5.23) ---- */
#define NVME_SC_INVALID_PI 0x0181   /* Invalid Protection Information (NVM command set) */
#define NVME_SC_GUARD_CHECK 0x0282  /* End-to-end Guard Check Error */
#define NVME_SC_APPTAG_CHECK 0x0283 /* End-to-end Application Tag Check Error */
#define NVME_SC_REFTAG_CHECK 0x0284 /* End-to-end Reference Tag Check Error */
#define NVME_SC_STORAGE_TAG_CHECK 0x0288 /* End-to-end Storage Tag Check Error */
#define NVME_FLBAS_EXTENDED (1u << 4)    /* metadata at the end of each block's data */
#define NVME_FLBAS_INDEX(flbas) (((flbas)&0xf) | (((flbas) >> 1) & 0x30))
#define NVME_MC_EXTENDED (1u << 0)       /* metadata in extended LBAs supported */
#define NVME_MC_SEPARATE (1u << 1)       /* metadata in a separate buffer (MPTR) supported */
#define NVME_DPC_TYPE1 (1u << 0)
#define NVME_DPC_TYPE2 (1u << 1)
#define NVME_DPC_TYPE3 (1u << 2)
#define NVME_DPC_FIRST (1u << 3)
#define NVME_DPC_LAST (1u << 4)
#define NVME_DPS_FIRST (1u << 3)         /* protection information in the first metadata bytes */
#define NVME_FORMAT_PIL(cdw10) (((cdw10) >> 8) & 0x1)
#define NVME_CTRATT_ELBAS (1u << 15)     /* Extended LBA Formats (ELBAF) supported */
#define NVME_SGLS_MD_BYTE_ALIGNED (1u << 17) /* MPTR byte aligned contiguous buffer */
#define NVME_SGLS_MD_SGL (1u << 19)      /* MPTR holding an SGL descriptor (PSDT 10b) */
#define NVME_ELBAF(sts, pif) ((uint32_t)(sts) | ((uint32_t)(pif) << 7))
#define NVME_ELBAF_QPIF(qpif) ((uint32_t)(qpif) << 9) /* with PIF 11b (Qualified Type) */
#define NVME_PIC_16B_STS (1u << 0) /* 16b Guard formats may have a storage tag */
#define NVME_PIC_STCRS (1u << 2)   /* Storage Tag Check in Read commands */
#define NVME_PIC_QPIFS (1u << 3)   /* Qualified Protection Information Format */
#define NVME_PIFA_STMLA_NONE 2u    /* storage tag masking not supported: every bit checked */

/* CNS 05h, CSI NVM: I/O command set specific identify namespace (NVM command set 4.1.5.2). */
struct nvme_id_ns_nvm {
	uint64_t lbstm; /* logical block storage tag mask */
	uint8_t pic;	/* protection information capabilities */
	uint8_t pifa;	/* protection information format attribute: STMLA bits 3:0 */
	uint8_t rsvd10[2];
	uint32_t elbaf[64]; /* extended LBA formats: STS bits 6:0, PIF bits 8:7 */
	uint8_t rsvd268[3828];
} __attribute__((packed));
NVME_STATIC_ASSERT(sizeof(struct nvme_id_ns_nvm) == 4096, "identify namespace NVM");
NVME_STATIC_ASSERT(__builtin_offsetof(struct nvme_id_ns_nvm, elbaf) == 12, "ELBAF offset");


/* ---- Endurance Groups (Base 2.0 sections 3.2.3, 5.16.1.10, 5.16.1.15, 5.17.2.20, 5.27.1.16) ---- */
#define NVME_CTRATT_EGS (1u << 4)	  /* Endurance Groups supported */
#define NVME_CNS_ENDGRP_LIST 0x19
#define NVME_ENDGRP_LIST_MAX 2047	  /* identifiers in an Endurance Group List */
#define NVME_LOG_ENDGRP 0x09		  /* Endurance Group Information, LSI = ENDGID */
#define NVME_LOG_ENDGRP_EVENTS 0x0f	  /* Endurance Group Event Aggregate */
#define NVME_FEAT_ENDGRP_EVENT 0x18	  /* Endurance Group Event Configuration */
#define NVME_OAES_ENDGRP_EVENTS (1u << 14) /* EG Event Aggregate Log Change notices */
#define NVME_AEC_ENDGRP_EVENTS (1u << 14)
#define NVME_AER_NOTICE_ENDGRP_EVENTS 0x06
/* Endurance Group Critical Warning bits (log 09h byte 0, SMART byte 6 as a summary). */
#define NVME_EGCW_SPARE (1u << 0)
#define NVME_EGCW_RELIABILITY (1u << 2)
#define NVME_EGCW_READ_ONLY (1u << 3)
#define NVME_EGCW_ALL (NVME_EGCW_SPARE | NVME_EGCW_RELIABILITY | NVME_EGCW_READ_ONLY)

struct nvme_endgrp_log {
	uint8_t critical_warning;
	uint8_t rsvd1[2];
	uint8_t avail_spare;
	uint8_t spare_thresh;
	uint8_t percent_used;
	uint8_t rsvd6[26];
	uint8_t endurance_estimate[16]; /* units of 1,000,000,000 bytes */
	uint8_t data_units_read[16];	/* units of 1,000,000,000 bytes, rounded up */
	uint8_t data_units_written[16];
	uint8_t media_units_written[16];
	uint8_t host_reads[16];
	uint8_t host_writes[16];
	uint8_t media_errors[16];
	uint8_t num_err_log_entries[16];
	uint8_t tegcap[16]; /* bytes */
	uint8_t uegcap[16];
	uint8_t rsvd192[320];
} __attribute__((packed));
NVME_STATIC_ASSERT(sizeof(struct nvme_endgrp_log) == 512, "endurance group log");
NVME_STATIC_ASSERT(__builtin_offsetof(struct nvme_endgrp_log, endurance_estimate) == 32, "EE");
NVME_STATIC_ASSERT(__builtin_offsetof(struct nvme_endgrp_log, tegcap) == 160, "TEGCAP");

/* ---- Virtualization Enhancements (Base 2.0 sections 5.26 (Virtualization Management), 5.17.2.14
 * and 5.17.2.15 (Identify CNS 14h/15h), 8.26): secondary controllers and flexible resources ---- */
#define NVME_ADM_VIRT_MGMT 0x1c
#define NVME_OACS_VIRT_MGMT (1u << 7)	   /* Virtualization Management supported */
#define NVME_CNS_PRI_CTRL_CAP 0x14	   /* Primary Controller Capabilities */
#define NVME_CNS_SEC_CTRL_LIST 0x15	   /* Secondary Controller List */
#define NVME_SEC_CTRL_LIST_MAX 127	   /* entries a Secondary Controller List holds */
/* Virtualization Management CDW10: action (bits 3:0), resource type (10:8), CNTLID (31:16). */
#define NVME_VIRT_ACT_PRI_FLEX_ALLOC 0x1  /* Primary Controller Flexible Allocation */
#define NVME_VIRT_ACT_SEC_OFFLINE 0x7	  /* Secondary Controller Offline */
#define NVME_VIRT_ACT_SEC_ASSIGN 0x8	  /* Secondary Controller Assign */
#define NVME_VIRT_ACT_SEC_ONLINE 0x9	  /* Secondary Controller Online */
#define NVME_VIRT_RT_VQ 0x0		  /* VQ resources: a submission and completion queue pair */
#define NVME_VIRT_RT_VI 0x1		  /* VI resources: an interrupt vector */
#define NVME_CRT_VQ (1u << 0)		  /* Controller Resource Types (CNS 14h byte 4) */
#define NVME_CRT_VI (1u << 1)
#define NVME_SC_INVALID_CTRL_ID 0x011f	  /* Invalid Controller Identifier */
#define NVME_SC_INVALID_SEC_CTRL_STATE 0x0120 /* Invalid Secondary Controller State */
#define NVME_SC_INVALID_NUM_CTRL_RES 0x0121   /* Invalid Number of Controller Resources */
#define NVME_SC_INVALID_RESOURCE_ID 0x0122    /* Invalid Resource Identifier */

/* CNS 14h: Primary Controller Capabilities. */
struct nvme_pri_ctrl_cap {
	uint16_t cntlid;
	uint16_t portid;
	uint8_t crt;
	uint8_t rsvd5[27];
	uint32_t vqfrt;	 /* VQ Resources Flexible Total */
	uint32_t vqrfa;	 /* VQ Resources Flexible Assigned (to secondary controllers) */
	uint16_t vqrfap; /* VQ Resources Flexible Allocated to Primary */
	uint16_t vqprt;	 /* VQ Resources Private Total */
	uint16_t vqfrsm; /* VQ Resources Flexible Secondary Maximum */
	uint16_t vqgran; /* VQ Flexible Resource Preferred Granularity */
	uint8_t rsvd48[16];
	uint32_t vifrt;
	uint32_t virfa;
	uint16_t virfap;
	uint16_t viprt;
	uint16_t vifrsm;
	uint16_t vigran;
	uint8_t rsvd80[4016];
} __attribute__((packed));
NVME_STATIC_ASSERT(sizeof(struct nvme_pri_ctrl_cap) == 4096, "primary controller capabilities");
NVME_STATIC_ASSERT(__builtin_offsetof(struct nvme_pri_ctrl_cap, vqfrt) == 32, "VQFRT");
NVME_STATIC_ASSERT(__builtin_offsetof(struct nvme_pri_ctrl_cap, vifrt) == 64, "VIFRT");

/* CNS 15h: a Secondary Controller Entry, and the list (entries from CDW10.CNTID up). */
struct nvme_sec_ctrl_entry {
	uint16_t scid; /* Secondary Controller Identifier */
	uint16_t pcid; /* Primary Controller Identifier */
	uint8_t scs;   /* Secondary Controller State: bit 0 online */
	uint8_t rsvd5[3];
	uint16_t vfn; /* Virtual Function Number (0: not an SR-IOV VF) */
	uint16_t nvq; /* VQ flexible resources assigned */
	uint16_t nvi; /* VI flexible resources assigned */
	uint8_t rsvd14[18];
} __attribute__((packed));
struct nvme_sec_ctrl_list {
	uint8_t num;
	uint8_t rsvd1[31];
	struct nvme_sec_ctrl_entry e[NVME_SEC_CTRL_LIST_MAX];
} __attribute__((packed));
NVME_STATIC_ASSERT(sizeof(struct nvme_sec_ctrl_entry) == 32, "secondary controller entry");
NVME_STATIC_ASSERT(sizeof(struct nvme_sec_ctrl_list) == 4096, "secondary controller list");

/* ---- Flexible Data Placement (NVMe Base 2.1: TP4146; directives 8.1.x, I/O Management) ---- */
#define NVME_CTRATT_FDPS (1u << 19)	/* Flexible Data Placement supported */
#define NVME_OACS_DIRECTIVES (1u << 5)
#define NVME_ADM_DIRECTIVE_SEND 0x19
#define NVME_ADM_DIRECTIVE_RECV 0x1a
#define NVME_CMD_IO_MGMT_RECV 0x12
#define NVME_CMD_IO_MGMT_SEND 0x1d
#define NVME_DTYPE_IDENTIFY 0x00
#define NVME_DTYPE_DATA_PLACEMENT 0x02
#define NVME_DOPER_ID_RETURN_PARAMS 0x01 /* Directive Receive, Identify */
#define NVME_DOPER_ID_ENABLE 0x01	  /* Directive Send, Identify: Enable Directive */
#define NVME_RW_DTYPE(cdw12) (((cdw12) >> 20) & 0xf)
#define NVME_RW_DSPEC(cdw13) ((uint16_t)((cdw13) >> 16))
#define NVME_IOM_RUH_STATUS 0x01 /* I/O Management Receive MO */
#define NVME_IOM_RUH_UPDATE 0x01 /* I/O Management Send MO */
#define NVME_LOG_FDP_CONFIGS 0x20
#define NVME_LOG_FDP_RUH_USAGE 0x21
#define NVME_LOG_FDP_STATS 0x22
#define NVME_LOG_FDP_EVENTS 0x23
#define NVME_FEAT_FDP 0x1d
#define NVME_FEAT_FDP_EVENTS 0x1e
#define NVME_RUHT_INITIALLY_ISOLATED 0x01
#define NVME_RUHA_UNUSED 0x00
#define NVME_RUHA_HOST 0x01
#define NVME_FDPA_VALID (1u << 7)
/* FDP event types: host events, then controller events. */
#define NVME_FDPE_RU_NOT_FULLY_WRITTEN 0x00
#define NVME_FDPE_RU_TIME_LIMIT 0x01
#define NVME_FDPE_CTRL_RESET_RUH 0x02
#define NVME_FDPE_INVALID_PID 0x03
#define NVME_FDPE_MEDIA_REALLOC 0x80
#define NVME_FDPE_IMPLICIT_RUH 0x81

struct nvme_fdp_config_hdr {
	uint16_t numfdpc; /* 0-based */
	uint8_t ver;
	uint8_t rsvd3;
	uint32_t sze;
	uint8_t rsvd8[8];
} __attribute__((packed));
NVME_STATIC_ASSERT(sizeof(struct nvme_fdp_config_hdr) == 16, "FDP configurations header");

struct nvme_fdp_config_desc {
	uint16_t dsze;
	uint8_t fdpatt; /* bits 3:0 RGIF, bit 4 FDPVWC, bit 7 valid */
	uint8_t vss;
	uint32_t nrg;
	uint16_t nruh;
	uint16_t maxpids; /* 0-based */
	uint32_t nnss;
	uint64_t runs; /* bytes */
	uint32_t erutl;
	uint8_t rsvd28[36];
} __attribute__((packed));
NVME_STATIC_ASSERT(sizeof(struct nvme_fdp_config_desc) == 64, "FDP configuration descriptor");

struct nvme_fdp_stats_log {
	uint8_t hbmw[16];
	uint8_t mbmw[16];
	uint8_t mbe[16];
	uint8_t rsvd48[16];
} __attribute__((packed));
NVME_STATIC_ASSERT(sizeof(struct nvme_fdp_stats_log) == 64, "FDP statistics");

struct nvme_fdp_event {
	uint8_t type;
	uint8_t flags; /* bit 0 PID valid, bit 1 NSID valid, bit 2 location valid */
	uint16_t pid;
	uint64_t timestamp; /* milliseconds, as the Timestamp feature */
	uint32_t nsid;
	uint8_t type_specific[16];
	uint16_t rgid;
	uint8_t ruhid;
	uint8_t rsvd35[5];
	uint8_t vs[24];
} __attribute__((packed));
NVME_STATIC_ASSERT(sizeof(struct nvme_fdp_event) == 64, "FDP event");
#define NVME_FDPEF_PIV (1u << 0)
#define NVME_FDPEF_NSIDV (1u << 1)

struct nvme_ruh_status_desc {
	uint16_t pid;
	uint16_t ruhid;
	uint32_t earutr;
	uint64_t ruamw; /* logical blocks */
	uint8_t rsvd16[16];
} __attribute__((packed));
NVME_STATIC_ASSERT(sizeof(struct nvme_ruh_status_desc) == 32, "RUH status descriptor");

#endif
