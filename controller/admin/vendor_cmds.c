/* controller/admin/vendor_cmds.c - what a vendor-specific command's handler may call
 * (ctrlr_vendor.h), and the two shipped examples, registered on every controller by the admin
 * module: admin 0xC0 returns a controller-info blob (CDW0 = namespace count) and I/O 0x80 returns
 * the CRC-32C of an LBA range. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/crc32c.h"
#include "controller/admin/admin.h"
#include "controller/ctrlr_vendor.h"
#include "controller/nvm/nvm.h"

#define CTRLR_VS_ADMIN_INFO 0xc0
#define CTRLR_VS_IO_CHECKSUM 0x80
#define CTRLR_VS_INFO_SIZE 4096
#define CTRLR_VS_INFO_MAGIC "NVMEEMU1"

/* ---- handler helpers (ctrlr_vendor.h) ---- */

const struct nvme_sqe *ctrlr_req_sqe(const struct ctrlr_req *req)
{
	return &req->sqe;
}

struct ctrlr *ctrlr_req_ctrlr(const struct ctrlr_req *req)
{
	return req->sq->ctrlr;
}

void ctrlr_req_set_cdw0(struct ctrlr_req *req, uint32_t cdw0)
{
	req->cdw0 = cdw0;
}

uint32_t ctrlr_req_ns_block_size(const struct ctrlr_req *req)
{
	return req->ns ? req->lbaf->ds : 0;
}

uint64_t ctrlr_req_ns_num_blocks(const struct ctrlr_req *req)
{
	return req->ns ? __atomic_load_n(&req->ns->num_blocks, __ATOMIC_RELAXED) : 0;
}

uint16_t ctrlr_req_read_lbas(struct ctrlr_req *req, uint64_t slba, uint64_t nlb,
			     void (*chunk_fn)(struct ctrlr_req *req, const void *data, size_t len),
			     void (*done)(struct ctrlr_req *req, uint16_t status))
{
	if (!req->ns)
		return NVME_SC_INVALID_NS;
	return ctrlr_io_read_range(req, slba, nlb, chunk_fn, done);
}

/* ---- admin 0xC0: controller info ---- */

struct ctrlr_vendor_info {
	char magic[8];
	uint32_t version;
	uint32_t num_namespaces;
	uint32_t max_io_queues;
	uint32_t io_sqs;
	uint32_t io_cqs;
	uint32_t max_queue_entries;
	uint32_t mdts;
	uint32_t page_size;
	uint64_t admin_cmds;
	uint64_t io_cmds;
	uint64_t errors;
	uint64_t invalid_db_writes;
	char serial[20];
	char model[40];
	char firmware_rev[8];
	struct {
		uint32_t nsid;
		uint32_t block_size;
		uint64_t num_blocks;
	} ns[CTRLR_MAX_NAMESPACES];
};
_Static_assert(sizeof(struct ctrlr_vendor_info) <= CTRLR_VS_INFO_SIZE, "vendor info blob");

/* CDW10: bytes to return (multiple of 4, at most 4096; 0 = 4096). CDW0: namespace count. */
static void ctrlr_vendor_info_cmd(struct ctrlr_req *req, void *arg)
{
	struct ctrlr *ctrlr = req->sq->ctrlr;
	uint32_t len = req->sqe.cdw10 ? req->sqe.cdw10 : CTRLR_VS_INFO_SIZE;
	struct ctrlr_vendor_info *info;
	struct ctrlr_stats st;
	uint32_t n = 0;

	if (len > CTRLR_VS_INFO_SIZE || (len & 3))
		return ctrlr_req_complete_err(req, NVME_SC_INVALID_FIELD,
					      offsetof(struct nvme_sqe, cdw10));
	info = calloc(1, CTRLR_VS_INFO_SIZE);
	if (!info)
		return ctrlr_req_complete(req, NVME_SC_INTERNAL);
	ctrlr_get_stats(ctrlr, &st);
	memcpy(info->magic, CTRLR_VS_INFO_MAGIC, sizeof(info->magic));
	info->version = 1;
	info->max_io_queues = ctrlr->cfg.max_io_queues;
	info->io_sqs = st.io_sqs;
	info->io_cqs = st.io_cqs;
	info->max_queue_entries = ctrlr->cfg.max_queue_entries;
	info->mdts = ctrlr->cfg.mdts;
	info->page_size = ctrlr->page_size;
	info->admin_cmds = st.admin_cmds;
	info->io_cmds = st.io_cmds;
	info->errors = st.errors;
	info->invalid_db_writes = st.invalid_db_writes;
	ctrlr_copy_padded(info->serial, ctrlr->serial, sizeof(info->serial));
	ctrlr_copy_padded(info->model, ctrlr->model, sizeof(info->model));
	ctrlr_copy_padded(info->firmware_rev, ctrlr->fwrev, sizeof(info->firmware_rev));
	for (uint32_t i = 0; i < CTRLR_MAX_NAMESPACES; i++) {
		struct ctrlr_ns *ns = ctrlr->ns[i];

		if (!ns)
			continue;
		info->ns[n].nsid = ns->nsid;
		info->ns[n].block_size = ns->block_size;
		info->ns[n].num_blocks = ns->num_blocks;
		n++;
	}
	info->num_namespaces = n;
	req->cdw0 = n;
	ctrlr_req_complete(req, ctrlr_req_copy_to_host(req, info, len));
	free(info);
}

/* ---- I/O 0x80: CRC-32C of LBAs [CDW10-11, + CDW12[15:0] + 1) ---- */

static void ctrlr_vendor_checksum_chunk(struct ctrlr_req *req, const void *data, size_t len)
{
	req->step.crc = crc32c(req->step.crc, data, len);
}

static void ctrlr_vendor_checksum_done(struct ctrlr_req *req, uint16_t status)
{
	if (!status)
		req->cdw0 = req->step.crc;
	ctrlr_req_complete(req, status);
}

static void ctrlr_vendor_checksum_cmd(struct ctrlr_req *req, void *arg)
{
	uint64_t nlb = (req->sqe.cdw12 & NVME_RW_NLB_MASK) + 1;
	uint16_t st;

	req->step.crc = 0;
	st = ctrlr_req_read_lbas(req, ctrlr_sqe_slba(&req->sqe), nlb, ctrlr_vendor_checksum_chunk,
				 ctrlr_vendor_checksum_done);
	if (st)
		ctrlr_req_complete(req, st);
}

int ctrlr_vendor_register_defaults(struct ctrlr *ctrlr)
{
	static const struct ctrlr_vendor_cmd info = {
	    .opcode = CTRLR_VS_ADMIN_INFO,
	    .io = false,
	    .name = "controller-info",
	    .fn = ctrlr_vendor_info_cmd,
	};
	static const struct ctrlr_vendor_cmd checksum = {
	    .opcode = CTRLR_VS_IO_CHECKSUM,
	    .io = true,
	    .needs_ns = true,
	    .name = "lba-checksum",
	    .fn = ctrlr_vendor_checksum_cmd,
	};
	int ret;

	ret = ctrlr_vendor_register(ctrlr, &info);
	if (ret)
		return ret;
	return ctrlr_vendor_register(ctrlr, &checksum);
}
