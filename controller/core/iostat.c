/* controller/core/iostat.c - per queue and namespace I/O statistics (ctrlr_iostat.h): the
 * blocks' lifetime (admin thread), the completion's bumps (the queue's owner thread) and their
 * readers. A command's class comes from its module's table (struct ctrlr_cmd.stat): the core
 * names no opcode. */
#include "common/counter.h"
#include "common/evloop.h"
#include "common/log.h"
#include "controller/core/core.h"
#include "controller/ctrlr_iostat.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* One queue's blocks, by NSID ([0]: no attached namespace, always there). The admin thread
 * publishes a block with a release store before any command of its namespace can reach the
 * queue's owner; the owner loads it with acquire. Freed with the controller. */
struct ctrlr_iostat_q {
	struct ctrlr_iostat *ns[CTRLR_MAX_NAMESPACES + 1];
};

static const char *const ctrlr_io_class_names[CTRLR_IO_NR_CLASSES] = {
    [CTRLR_IO_READ] = "read",	[CTRLR_IO_WRITE] = "write", [CTRLR_IO_FLUSH] = "flush",
    [CTRLR_IO_OTHER] = "other", [CTRLR_IO_ADMIN] = "admin",
};

static const char *const ctrlr_lat_class_names[CTRLR_LAT_NR] = {
    [CTRLR_LAT_READ] = "read",
    [CTRLR_LAT_WRITE] = "write",
    [CTRLR_LAT_OTHER] = "other",
};

static const char *const ctrlr_err_kind_names[CTRLR_ERR_NR] = {
    [CTRLR_ERR_INVALID_OPCODE] = "invalid_opcode",
    [CTRLR_ERR_INVALID_FIELD] = "invalid_field",
    [CTRLR_ERR_DATA_TRANSFER] = "data_transfer_error",
    [CTRLR_ERR_INTERNAL] = "internal_error",
    [CTRLR_ERR_ABORTED] = "aborted",
    [CTRLR_ERR_INVALID_NS] = "invalid_namespace",
    [CTRLR_ERR_LBA_RANGE] = "lba_out_of_range",
    [CTRLR_ERR_NS_NOT_READY] = "namespace_not_ready",
    [CTRLR_ERR_RESV_CONFLICT] = "reservation_conflict",
    [CTRLR_ERR_GENERIC_OTHER] = "generic_other",
    [CTRLR_ERR_COMMAND_SPECIFIC] = "command_specific",
    [CTRLR_ERR_MEDIA] = "media_error",
    [CTRLR_ERR_PATH] = "path_error",
    [CTRLR_ERR_VENDOR] = "vendor",
};

const char *ctrlr_io_class_name(enum ctrlr_io_class c)
{
	return (unsigned int)c < CTRLR_IO_NR_CLASSES ? ctrlr_io_class_names[c] : "?";
}

const char *ctrlr_lat_class_name(enum ctrlr_lat_class c)
{
	return (unsigned int)c < CTRLR_LAT_NR ? ctrlr_lat_class_names[c] : "?";
}

const char *ctrlr_err_kind_name(enum ctrlr_err_kind k)
{
	return (unsigned int)k < CTRLR_ERR_NR ? ctrlr_err_kind_names[k] : "?";
}

enum ctrlr_err_kind ctrlr_err_kind_of(uint16_t status)
{
	switch (NVME_STATUS_SCT(status)) {
	case NVME_SCT_GENERIC:
		break;
	case NVME_SCT_CMD_SPECIFIC:
		return CTRLR_ERR_COMMAND_SPECIFIC;
	case NVME_SCT_MEDIA:
		return CTRLR_ERR_MEDIA;
	case NVME_SCT_PATH:
		return CTRLR_ERR_PATH;
	default:
		return CTRLR_ERR_VENDOR;
	}
	switch (NVME_STATUS_SC(status)) {
	case NVME_SC_INVALID_OPCODE:
		return CTRLR_ERR_INVALID_OPCODE;
	case NVME_SC_INVALID_FIELD:
		return CTRLR_ERR_INVALID_FIELD;
	case NVME_SC_DATA_XFER_ERROR:
		return CTRLR_ERR_DATA_TRANSFER;
	case NVME_SC_INTERNAL:
		return CTRLR_ERR_INTERNAL;
	case NVME_SC_ABORT_REQ:
	case NVME_SC_ABORT_SQ_DELETION:
	case NVME_SC_PREEMPT_ABORT:
		return CTRLR_ERR_ABORTED;
	case NVME_SC_INVALID_NS:
		return CTRLR_ERR_INVALID_NS;
	case NVME_SC_LBA_RANGE:
	case NVME_SC_CAP_EXCEEDED:
		return CTRLR_ERR_LBA_RANGE;
	case NVME_SC_NS_NOT_READY:
		return CTRLR_ERR_NS_NOT_READY;
	case NVME_SC_RESV_CONFLICT:
		return CTRLR_ERR_RESV_CONFLICT;
	default:
		return CTRLR_ERR_GENERIC_OTHER;
	}
}

struct ctrlr_iostat_q *ctrlr_iostat_queue(struct ctrlr *ctrlr, uint16_t qid)
{
	struct ctrlr_iostat_q *q;

	if (qid >= ctrlr->num_queues)
		return NULL;
	if (!ctrlr->iostat) {
		ctrlr->iostat = calloc(ctrlr->num_queues, sizeof(*ctrlr->iostat));
		if (!ctrlr->iostat)
			return NULL;
	}
	if (ctrlr->iostat[qid])
		return ctrlr->iostat[qid];
	q = calloc(1, sizeof(*q));
	if (!q)
		return NULL;
	q->ns[0] = calloc(1, sizeof(*q->ns[0]));
	if (!q->ns[0]) {
		free(q);
		return NULL;
	}
	/* The namespaces attached now; later ones come with ctrlr_iostat_ns_added. Without memory
	 * for one, its commands count under NSID 0 (said in the log). */
	for (uint32_t nsid = 1; nsid <= CTRLR_MAX_NAMESPACES; nsid++) {
		if (!ctrlr->ns[nsid - 1])
			continue;
		q->ns[nsid] = calloc(1, sizeof(*q->ns[nsid]));
		if (!q->ns[nsid])
			LOG_ERR(CTRLR_LOG,
				"queue %u: no memory for namespace %u's statistics: they "
				"count under NSID 0",
				qid, nsid);
	}
	ctrlr->iostat[qid] = q;
	return q;
}

void ctrlr_iostat_ns_added(struct ctrlr *ctrlr, uint32_t nsid)
{
	if (!ctrlr->iostat || !nsid || nsid > CTRLR_MAX_NAMESPACES)
		return;
	for (uint32_t qid = 0; qid < ctrlr->num_queues; qid++) {
		struct ctrlr_iostat_q *q = ctrlr->iostat[qid];
		struct ctrlr_iostat *b;

		/* A namespace attached again keeps counting in the block it had. */
		if (!q || q->ns[nsid])
			continue;
		b = calloc(1, sizeof(*b));
		if (!b) {
			LOG_ERR(CTRLR_LOG,
				"queue %u: no memory for namespace %u's statistics: they "
				"count under NSID 0",
				qid, nsid);
			continue;
		}
		__atomic_store_n(&q->ns[nsid], b, __ATOMIC_RELEASE);
	}
}

void ctrlr_iostat_fini(struct ctrlr *ctrlr)
{
	if (!ctrlr->iostat)
		return;
	for (uint32_t qid = 0; qid < ctrlr->num_queues; qid++) {
		struct ctrlr_iostat_q *q = ctrlr->iostat[qid];

		if (!q)
			continue;
		for (uint32_t nsid = 0; nsid <= CTRLR_MAX_NAMESPACES; nsid++)
			free(q->ns[nsid]);
		free(q);
	}
	free(ctrlr->iostat);
	ctrlr->iostat = NULL;
}

static enum ctrlr_io_class ctrlr_iostat_class(const struct ctrlr_req *req)
{
	if (!req->sq->qid)
		return CTRLR_IO_ADMIN;
	/* The table the command was dispatched by; an opcode nobody implements is "other". */
	const struct ctrlr_cmd *cmd = req->sq->ctrlr->io_cmd[req->sqe.cdw0.bits.opc];

	return cmd ? (enum ctrlr_io_class)cmd->stat : CTRLR_IO_OTHER;
}

void ctrlr_iostat_complete(struct ctrlr_req *req, uint16_t status)
{
	struct ctrlr_iostat_q *q = req->sq->iostat;
	uint32_t nsid = req->sqe.nsid;
	struct ctrlr_iostat *b = NULL;
	enum ctrlr_io_class c;
	enum ctrlr_lat_class lc;
	uint64_t now = evloop_clock_ns(), lat;

	if (!q)
		return;
	if (nsid && nsid <= CTRLR_MAX_NAMESPACES)
		b = __atomic_load_n(&q->ns[nsid], __ATOMIC_ACQUIRE);
	if (!b)
		b = q->ns[0];
	c = ctrlr_iostat_class(req);
	counter_add_owned(&b->cmds[c], 1);
	if (status) {
		counter_add_owned(&b->errors[ctrlr_err_kind_of(status)], 1);
	} else if (c == CTRLR_IO_READ) {
		counter_add_owned(&b->bytes_read, req->data_len);
	} else if (c == CTRLR_IO_WRITE) {
		counter_add_owned(&b->bytes_written, req->data_len);
	}
	lc = c == CTRLR_IO_READ	   ? CTRLR_LAT_READ
	     : c == CTRLR_IO_WRITE ? CTRLR_LAT_WRITE
				   : CTRLR_LAT_OTHER;
	/* Both stamps are round times of this thread (the owner fetched and completes); a request
	 * stamped on another loop's clock would at worst read as 0. */
	lat = now > req->t_start_ns ? now - req->t_start_ns : 0;
	counter_add_owned(&b->lat[lc][lat_hist_win_index(lat)], 1);
	counter_add_owned(&b->lat_sum_ns[lc], lat);
}

/* A copy of a block with each counter read atomically (the owner may be bumping it). */
static void ctrlr_iostat_copy(struct ctrlr_iostat *dst, const struct ctrlr_iostat *src)
{
	const uint64_t *s = (const uint64_t *)src;
	uint64_t *d = (uint64_t *)dst;

	for (size_t i = 0; i < sizeof(*src) / sizeof(uint64_t); i++)
		d[i] = __atomic_load_n(&s[i], __ATOMIC_RELAXED);
}
_Static_assert(sizeof(struct ctrlr_iostat) % sizeof(uint64_t) == 0,
	       "struct ctrlr_iostat is a run of uint64_t counters");

int ctrlr_iostat_foreach(const struct ctrlr *ctrlr, ctrlr_iostat_fn fn, void *arg)
{
	struct ctrlr_iostat *copy;

	if (!ctrlr->iostat)
		return 0;
	copy = malloc(sizeof(*copy));
	if (!copy)
		return -ENOMEM;
	for (uint32_t qid = 0; qid < ctrlr->num_queues; qid++) {
		const struct ctrlr_iostat_q *q = ctrlr->iostat[qid];

		if (!q)
			continue;
		for (uint32_t nsid = 0; nsid <= CTRLR_MAX_NAMESPACES; nsid++) {
			if (!q->ns[nsid])
				continue;
			ctrlr_iostat_copy(copy, q->ns[nsid]);
			fn(arg, (uint16_t)qid, nsid, copy);
		}
	}
	free(copy);
	return 0;
}

int ctrlr_get_sq_outstanding(const struct ctrlr *ctrlr, uint16_t qid, uint32_t *outstanding)
{
	const struct ctrlr_sq *sq = qid < ctrlr->num_queues ? ctrlr->sqs[qid] : NULL;

	if (!sq)
		return -ENOENT;
	*outstanding = __atomic_load_n(&sq->inflight, __ATOMIC_RELAXED);
	return 0;
}
