/* controller/core/vendor.c - vendor-specific commands through a registration table (admin
 * 0xC0-0xFF, I/O 0x80-0xFF, ctrlr.h): registration, their effects, their dispatch. The helpers
 * their handlers use and the two shipped examples are admin/vendor_cmds.c. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "controller/core/core.h"

static const struct ctrlr_vendor_cmd *ctrlr_vendor_lookup(const struct ctrlr *ctrlr, bool io,
						   uint8_t opcode)
{
	struct ctrlr_vendor_entry *e = CTRLR_LOAD(ctrlr->vendor[io][opcode]);

	return e ? &e->cmd : NULL;
}

uint32_t ctrlr_vendor_effects(const struct ctrlr *ctrlr, bool io, uint8_t opcode)
{
	const struct ctrlr_vendor_cmd *v = ctrlr_vendor_lookup(ctrlr, io, opcode);

	return v ? v->effects | NVME_CMD_EFFECTS_CSUPP : 0;
}

int ctrlr_vendor_register(struct ctrlr *ctrlr, const struct ctrlr_vendor_cmd *cmd)
{
	struct ctrlr_vendor_entry *e;

	if (!cmd || !cmd->fn)
		return -EINVAL;
	if (cmd->opcode < (cmd->io ? NVME_CMD_VENDOR_FIRST : NVME_ADM_VENDOR_FIRST))
		return -EINVAL;
	if (ctrlr->vendor[cmd->io][cmd->opcode])
		return -EEXIST;
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->cmd = *cmd;
	CTRLR_STORE(ctrlr->vendor[cmd->io][cmd->opcode], e);
	return 0;
}

int ctrlr_vendor_unregister(struct ctrlr *ctrlr, bool io, uint8_t opcode)
{
	struct ctrlr_vendor_entry *e = ctrlr->vendor[io][opcode];

	if (!e)
		return -ENOENT;
	CTRLR_STORE(ctrlr->vendor[io][opcode], NULL);
	/* An owner thread may have looked it up just before: keep it until destroy. */
	e->dead_next = ctrlr->dead_vendor;
	ctrlr->dead_vendor = e;
	return 0;
}

void ctrlr_vendor_free_all(struct ctrlr *ctrlr)
{
	for (int io = 0; io < 2; io++)
		for (int op = 0; op < 256; op++) {
			free(ctrlr->vendor[io][op]);
			ctrlr->vendor[io][op] = NULL;
		}
	while (ctrlr->dead_vendor) {
		struct ctrlr_vendor_entry *e = ctrlr->dead_vendor;

		ctrlr->dead_vendor = e->dead_next;
		free(e);
	}
}

void ctrlr_vendor_dispatch(struct ctrlr_req *req, bool io)
{
	const struct ctrlr_vendor_cmd *v = ctrlr_vendor_lookup(req->sq->ctrlr, io,
							       req->sqe.cdw0.bits.opc);
	uint16_t st;

	if (!v)
		return ctrlr_req_complete_err(req, NVME_SC_INVALID_OPCODE, 0);
	st = v->needs_ns ? ctrlr_req_get_ns(req) : NVME_SC_SUCCESS;
	/* On an I/O queue: a reservation refuses writes if its effects say it changes the
	 * media, reads otherwise; then the gate, as for any I/O command (req.c). */
	if (io && !st && req->ns)
		st = ctrlr_req_check_access(req, (v->effects & NVME_CMD_EFFECTS_LBCC)
							 ? CTRLR_ACCESS_WRITE
							 : CTRLR_ACCESS_READ);
	if (io && !st)
		st = ctrlr_io_gate(req->sq->ctrlr);
	if (st)
		return ctrlr_req_complete(req, st);
	LOG_TRACE(CTRLR_LOG, "vendor %s command 0x%02x on qid %u", v->name ? v->name : "?",
		  v->opcode, req->sq->qid);
	v->fn(req, v->arg);
}

