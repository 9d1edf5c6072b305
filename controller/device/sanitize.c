/* controller/device/sanitize.c - Sanitize (NVMe Base 2.0 5.24 and 8.21) and the Sanitize Status
 * log (81h). Block Erase and Overwrite (pattern, 1 to 16 passes, inverted between passes if
 * asked) run in the background over every namespace through its bdev, advanced by the
 * completions of their own bdev requests (bg.c): first the commands already running on the
 * namespaces drain, then each namespace is erased (deallocated, or zeroed where the bdev cannot
 * deallocate or No-Deallocate After Sanitize was asked) or overwritten, then deallocated unless
 * No-Deallocate was asked. Crypto Erase is carried out as a block erase: nothing here encrypts
 * user data, so there is no key whose change would make it unrecoverable, and erasing the data
 * itself leaves the host the same result (no former data readable), only slower. While the
 * operation runs, I/O commands and the admin commands 8.21 does not list end with Sanitize In
 * Progress; a failed operation (a bdev error) leaves the controller in the sanitize failure
 * mode, where they end with Sanitize Failed until a sanitize succeeds or, if the failed one
 * allowed it (AUSE), Exit Failure Mode. The operation survives a Controller Level Reset: it goes
 * on when the controller is enabled again.
 *
 * Sanitize acts on the NVM subsystem (8.21): in a subsystem of several controllers the one that
 * received the command runs it over the namespaces and every other member follows it (its state,
 * phase and status mirrored, `runner` set): their I/O is refused too, the drain waits for their
 * commands as well, their Sanitize Status log reports the same operation, and the failure mode
 * and its exit are the subsystem's. All members share the admin thread. Admin thread unless said
 * otherwise. */
#include <inttypes.h>
#include <string.h>

#include "common/log.h"
#include "controller/device/device.h"

#define CTRLR_SAN_ERASE_BYTES (64ull << 20) /* per deallocate / write zeroes request */

uint32_t ctrlr_sanicap(const struct ctrlr *ctrlr)
{
	(void)ctrlr;
	/* Block Erase, Overwrite and Crypto Erase (as a block erase); with No-Deallocate the media
	 * is left as the operation wrote it (NODMMAS 01b). */
	return NVME_SANICAP_CES | NVME_SANICAP_BES | NVME_SANICAP_OWS |
	       NVME_SANICAP_NODMMAS_UNMODIFIED;
}

/* A controller's sanitize state, and with it the gate of its I/O commands (the gate first: a
 * command that sees it open ran before the operation and is covered by the drain's grace
 * period). */
static void ctrlr_san_set_state(struct ctrlr *ctrlr, uint32_t state)
{
	uint32_t gate = state == CTRLR_SAN_RUNNING  ? NVME_SC_SANITIZE_IN_PROGRESS
			: state == CTRLR_SAN_FAILED ? NVME_SC_SANITIZE_FAILED
						    : 0;

	__atomic_store_n(&ctrlr->io_gate, gate, __ATOMIC_SEQ_CST);
	__atomic_store_n(&ctrlr_dev(ctrlr)->san.state, state, __ATOMIC_SEQ_CST);
}

/* The controllers a sanitize operation covers: the subsystem's members, or ctrlr alone. */
static struct ctrlr *ctrlr_san_first(struct ctrlr *ctrlr)
{
	return ctrlr->subsys ? ctrlr_subsys_members(ctrlr->subsys) : ctrlr;
}

static struct ctrlr *ctrlr_san_next(struct ctrlr *ctrlr, struct ctrlr *it)
{
	return ctrlr->subsys ? it->subsys_next : NULL;
}

/* Gives every other member the runner's view: state (its store last, so a member that sees
 * RUNNING also sees the rest), phase, status, Global Data Erased, the failure mode's AUSE. */
static void ctrlr_san_mirror_to(struct ctrlr *runner, struct ctrlr *m)
{
	const struct ctrlr_san *s = &ctrlr_dev(runner)->san;
	struct ctrlr_san *d = &ctrlr_dev(m)->san;
	uint32_t state = CTRLR_LOAD(s->state);

	d->phase = s->phase;
	d->cdw10 = s->cdw10;
	d->scdw10 = s->scdw10;
	d->sstat = s->sstat;
	d->gde = s->gde;
	d->writes_at_end = s->writes_at_end;
	d->ause = s->ause;
	d->gen++;
	d->runner = state == CTRLR_SAN_RUNNING ? runner : NULL;
	ctrlr_san_set_state(m, state);
}

static void ctrlr_san_mirror(struct ctrlr *runner)
{
	for (struct ctrlr *m = ctrlr_san_first(runner); m; m = ctrlr_san_next(runner, m))
		if (m != runner)
			ctrlr_san_mirror_to(runner, m);
}

void ctrlr_san_joined(struct ctrlr *ctrlr)
{
	for (struct ctrlr *m = ctrlr_san_first(ctrlr); m; m = ctrlr_san_next(ctrlr, m)) {
		struct ctrlr *runner = ctrlr_dev(m)->san.runner ? ctrlr_dev(m)->san.runner : m;

		if (m == ctrlr || CTRLR_LOAD(ctrlr_dev(runner)->san.state) == CTRLR_SAN_IDLE)
			continue;
		ctrlr_san_mirror_to(runner, ctrlr);
		return;
	}
}

void ctrlr_san_left(struct ctrlr *ctrlr, struct ctrlr_subsys *cs)
{
	struct ctrlr_san *s = &ctrlr_dev(ctrlr)->san;
	struct ctrlr *runner = s->runner;

	if (runner) {
		/* A follower left: its commands no longer hold the drain up. */
		s->runner = NULL;
		ctrlr_san_set_state(ctrlr, CTRLR_SAN_IDLE);
		ctrlr_bg_kick(runner);
		return;
	}
	if (CTRLR_LOAD(s->state) != CTRLR_SAN_RUNNING)
		return;
	/* The runner left with the operation unfinished: for the others it failed. */
	for (struct ctrlr *m = ctrlr_subsys_members(cs); m; m = m->subsys_next) {
		struct ctrlr_san *d = &ctrlr_dev(m)->san;

		d->runner = NULL;
		d->sstat = (uint16_t)((d->sstat & ~0x7u) | NVME_SSTAT_FAILED);
		d->ause = s->cdw10 & NVME_SAN_AUSE;
		ctrlr_san_set_state(m, CTRLR_SAN_FAILED);
		LOG_ERR(CTRLR_LOG, "%s: the controller running the sanitize operation went: failed",
			m->serial);
	}
}

/* Writes to every namespace's bdev so far (Global Data Erased compares against it). */
static uint64_t ctrlr_san_writes(struct ctrlr *ctrlr)
{
	uint64_t n = 0;

	for (uint32_t i = 0; i < CTRLR_MAX_NAMESPACES; i++) {
		struct bdev_stats bs;

		if (!ctrlr->ns[i])
			continue;
		bdev_get_stats(ctrlr->ns[i]->bdev, &bs);
		n += bs.write_ops + bs.write_zeroes_ops + bs.unmap_ops;
	}
	return n;
}

uint16_t ctrlr_san_admin_check(struct ctrlr_req *req)
{
	struct ctrlr *ctrlr = req->sq->ctrlr;
	uint32_t state = CTRLR_LOAD(ctrlr_dev(ctrlr)->san.state);
	uint8_t lid;

	if (state == CTRLR_SAN_IDLE)
		return 0;
	/* The commands a sanitize operation lets through (8.21.1): they touch no user data.
	 * Doorbell Buffer Config is the PCIe transport's own configuration. */
	switch (req->sqe.cdw0.bits.opc) {
	case NVME_ADM_ABORT:
	case NVME_ADM_ASYNC_EVENT:
	case NVME_ADM_CREATE_CQ:
	case NVME_ADM_CREATE_SQ:
	case NVME_ADM_DELETE_CQ:
	case NVME_ADM_DELETE_SQ:
	case NVME_ADM_IDENTIFY:
	case NVME_ADM_GET_FEATURES:
	case NVME_ADM_SET_FEATURES:
	case NVME_ADM_SANITIZE:
	case NVME_ADM_DBBUF:
	case NVME_ADM_KEEP_ALIVE:
		return 0;
	case NVME_ADM_GET_LOG_PAGE:
		lid = req->sqe.cdw10 & 0xff;
		if (lid == NVME_LOG_SUPPORTED || lid == NVME_LOG_ERROR || lid == NVME_LOG_SMART ||
		    lid == NVME_LOG_CMD_EFFECTS || lid == NVME_LOG_SANITIZE)
			return 0;
		break;
	default:
		break;
	}
	return state == CTRLR_SAN_RUNNING ? NVME_SC_SANITIZE_IN_PROGRESS : NVME_SC_SANITIZE_FAILED;
}

static void ctrlr_san_drain_msg(void *arg)
{
	struct ctrlr *ctrlr = arg;

	__atomic_store_n(&ctrlr_dev(ctrlr)->san.drain_poked, 0, __ATOMIC_SEQ_CST);
	ctrlr_bg_kick(ctrlr_dev(ctrlr)->san.runner ? ctrlr_dev(ctrlr)->san.runner : ctrlr);
}

void ctrlr_san_ns_idle(struct ctrlr *ctrlr)
{
	struct ctrlr_san *s = &ctrlr_dev(ctrlr)->san;

	if (__atomic_exchange_n(&s->drain_poked, 1, __ATOMIC_SEQ_CST))
		return;
	ctrlr->ops->admin_post(ctrlr->tctx, &s->drain_msg, ctrlr_san_drain_msg, ctrlr);
}

bool ctrlr_san_draining(const struct ctrlr *ctrlr)
{
	return __atomic_load_n(&ctrlr_dev(ctrlr)->san.state, __ATOMIC_SEQ_CST) == CTRLR_SAN_RUNNING &&
	       ctrlr_dev(ctrlr)->san.phase == CTRLR_SAN_DRAIN;
}

static uint64_t ctrlr_san_total(struct ctrlr *ctrlr)
{
	struct ctrlr_san *s = &ctrlr_dev(ctrlr)->san;
	uint64_t blocks = 0;

	for (uint32_t i = 0; i < CTRLR_MAX_NAMESPACES; i++)
		if (ctrlr->ns[i])
			blocks += ctrlr->ns[i]->num_blocks;
	if (NVME_SANACT(s->cdw10) != NVME_SANACT_OVERWRITE)
		return blocks;
	return blocks * s->passes + ((s->cdw10 & NVME_SAN_NDAS) ? 0 : blocks);
}

static void ctrlr_san_end(struct ctrlr *ctrlr, uint16_t status)
{
	struct ctrlr_san *s = &ctrlr_dev(ctrlr)->san;
	uint8_t ev[8];

	s->gen++;
	s->sstat &= (uint16_t)~0x7;
	if (status) {
		s->sstat |= NVME_SSTAT_FAILED;
		s->ause = s->cdw10 & NVME_SAN_AUSE;
		ctrlr_san_set_state(ctrlr, CTRLR_SAN_FAILED);
		LOG_ERR(CTRLR_LOG, "%s: sanitize failed (status 0x%x): failure mode", ctrlr->serial,
			status);
	} else {
		s->sstat |= NVME_SSTAT_COMPLETED;
		/* What the modules knew of the erased blocks goes: media marks, and a zoned
		 * namespace's zones are Empty (ZNS 1.1: Sanitize resets every zone; Read Only and
		 * Offline stay). */
		for (uint32_t i = 0; i < CTRLR_MAX_NAMESPACES; i++)
			if (ctrlr->ns[i])
				ctrlr_ns_erased(ctrlr->ns[i]);
		s->gde = true;
		s->writes_at_end = ctrlr_san_writes(ctrlr);
		ctrlr_san_set_state(ctrlr, CTRLR_SAN_IDLE);
		LOG_INFO(CTRLR_LOG, "%s: sanitize completed", ctrlr->serial);
	}
	ctrlr_san_mirror(ctrlr);
	/* Persistent Event Log, Sanitize Completion: SANPROG, SSTAT, completion information. */
	memset(ev, 0, sizeof(ev));
	ev[0] = 0xff, ev[1] = 0xff;
	memcpy(&ev[2], &s->sstat, 2);
	ctrlr_pel_add(ctrlr, NVME_PEL_SANITIZE_DONE, ev, sizeof(ev));
	if (status)
		ctrlr_device_notable(ctrlr, "sanitize failed");
}

static void ctrlr_san_io_done(struct ctrlr *ctrlr, int status)
{
	struct ctrlr_san *s = &ctrlr_dev(ctrlr)->san;
	struct bdev_io *bio = ctrlr_dev(ctrlr)->bg.bio;
	uint64_t n;
	uint16_t st;

	if (ctrlr_dev(ctrlr)->bg.gen != s->gen || CTRLR_LOAD(s->state) != CTRLR_SAN_RUNNING)
		return;
	st = ctrlr_bdev_status(status, true);
	if (st)
		return ctrlr_san_end(ctrlr, st);
	n = bio->type == BDEV_IO_UNMAP ? bio->ranges[0].num_blocks : bio->num_blocks;
	s->lba += n;
	s->done += n;
}

/* The next namespace (from s->ns_next) with blocks left in this phase, or NULL. */
static struct ctrlr_ns *ctrlr_san_next_ns(struct ctrlr *ctrlr)
{
	struct ctrlr_san *s = &ctrlr_dev(ctrlr)->san;

	while (s->ns_next <= CTRLR_MAX_NAMESPACES) {
		struct ctrlr_ns *ns = ctrlr->ns[s->ns_next - 1];

		if (ns && s->lba < ns->num_blocks)
			return ns;
		s->ns_next++;
		s->lba = 0;
	}
	return NULL;
}

static void ctrlr_san_fill(struct ctrlr *ctrlr)
{
	struct ctrlr_san *s = &ctrlr_dev(ctrlr)->san;
	uint32_t pat = s->pattern, *w = ctrlr_dev(ctrlr)->bg.buf;

	/* Overwrite Invert Pattern Between Passes: every other pass writes the complement. */
	if ((s->cdw10 & NVME_SAN_OIPBP) && (s->pass & 1))
		pat = ~pat;
	for (size_t i = 0; i < CTRLR_CHUNK_BYTES / sizeof(*w); i++)
		w[i] = pat;
}

/* Moves to the next phase or pass once every namespace is done with this one. Returns false
 * when the operation ended. */
static bool ctrlr_san_next_phase(struct ctrlr *ctrlr)
{
	struct ctrlr_san *s = &ctrlr_dev(ctrlr)->san;

	s->ns_next = 1;
	s->lba = 0;
	switch (s->phase) {
	case CTRLR_SAN_DRAIN:
		s->phase = NVME_SANACT(s->cdw10) == NVME_SANACT_OVERWRITE ? CTRLR_SAN_OVERWRITE
									  : CTRLR_SAN_ERASE;
		s->pass = 0;
		ctrlr_san_mirror(ctrlr);
		return true;
	case CTRLR_SAN_OVERWRITE:
		s->pass++;
		s->sstat = (uint16_t)((s->sstat & 0x7) |
				      ((s->pass & 0x1f) << NVME_SSTAT_PASSES_SHIFT));
		if (s->pass < s->passes)
			return true;
		if (!(s->cdw10 & NVME_SAN_NDAS)) {
			s->phase = CTRLR_SAN_DEALLOC;
			ctrlr_san_mirror(ctrlr);
			return true;
		}
		break;
	default:
		break;
	}
	ctrlr_san_end(ctrlr, NVME_SC_SUCCESS);
	return false;
}

/* True while a command that took a namespace of a covered controller before the operation
 * started may still be running: its grace period (asked at the start) has not passed, or an
 * admin command holds a namespace. */
static bool ctrlr_san_busy(struct ctrlr *ctrlr)
{
	for (struct ctrlr *m = ctrlr_san_first(ctrlr); m; m = ctrlr_san_next(ctrlr, m))
		if (!ctrlr_ns_quiet(m))
			return true;
	return false;
}

bool ctrlr_san_bg_step(struct ctrlr *ctrlr)
{
	if (CTRLR_LOAD(ctrlr_dev(ctrlr)->san.state) != CTRLR_SAN_RUNNING)
		return false;
	ctrlr_san_step(ctrlr);
	return true;
}

void ctrlr_san_step(struct ctrlr *ctrlr)
{
	struct ctrlr_san *s = &ctrlr_dev(ctrlr)->san;

	if (s->runner) {
		/* A follower's kick (its drain poke, its enabling) is the runner's business. */
		ctrlr_bg_kick(s->runner);
		return;
	}
	while (CTRLR_LOAD(s->state) == CTRLR_SAN_RUNNING) {
		struct ctrlr_ns *ns;
		enum bdev_io_type type;
		uint64_t n, max;
		uint16_t st;

		if (s->phase == CTRLR_SAN_DRAIN) {
			/* Commands that took a namespace before the state changed run to their end
			 * first, on every covered controller; the last one's reference pokes us
			 * (ctrlr_san_ns_idle, through its controller). */
			if (ctrlr_san_busy(ctrlr))
				return;
			if (!ctrlr_san_next_phase(ctrlr))
				return;
			continue;
		}
		ns = ctrlr_san_next_ns(ctrlr);
		if (!ns) {
			if (!ctrlr_san_next_phase(ctrlr))
				return;
			continue;
		}
		if (s->phase == CTRLR_SAN_OVERWRITE) {
			type = BDEV_IO_WRITE;
			max = CTRLR_CHUNK_BYTES / ctrlr_ns_lbaf(ns)->stride;
			ctrlr_san_fill(ctrlr);
		} else {
			/* Block erase with No-Deallocate leaves the blocks mapped (zeroed). */
			bool zero = !ns->has_unmap ||
				    (s->phase == CTRLR_SAN_ERASE && (s->cdw10 & NVME_SAN_NDAS));

			type = zero ? BDEV_IO_WRITE_ZEROES : BDEV_IO_UNMAP;
			max = CTRLR_SAN_ERASE_BYTES / ctrlr_ns_lbaf(ns)->stride;
		}
		n = ns->num_blocks - s->lba;
		if (n > max)
			n = max;
		st = ctrlr_bg_submit(ctrlr, s->ns_next, type, s->lba, n, s->gen, ctrlr_san_io_done);
		if (st == NVME_SC_INVALID_NS) {
			/* Removed meanwhile: nothing of it is left to sanitize. */
			s->ns_next++;
			s->lba = 0;
			continue;
		}
		if (st)
			ctrlr_san_end(ctrlr, st);
		return;
	}
}

void ctrlr_admin_sanitize(struct ctrlr_req *req)
{
	struct ctrlr *ctrlr = req->sq->ctrlr;
	struct ctrlr_san *s = &ctrlr_dev(ctrlr)->san;
	uint32_t cdw10 = req->sqe.cdw10, state = CTRLR_LOAD(s->state);
	uint8_t act = NVME_SANACT(cdw10), ev[12];
	uint32_t cap;

	if (state == CTRLR_SAN_RUNNING)
		return ctrlr_req_complete(req, NVME_SC_SANITIZE_IN_PROGRESS);
	if (act == NVME_SANACT_EXIT_FAILURE) {
		/* Restricted completion (AUSE 0): only a successful sanitize leaves failure mode. */
		if (state == CTRLR_SAN_FAILED && !s->ause)
			return ctrlr_req_complete(req, NVME_SC_CMD_SEQ_ERROR);
		ctrlr_san_set_state(ctrlr, CTRLR_SAN_IDLE);
		ctrlr_san_mirror(ctrlr); /* the failure mode is the subsystem's */
		return ctrlr_req_complete(req, NVME_SC_SUCCESS);
	}
	if (act != NVME_SANACT_BLOCK_ERASE && act != NVME_SANACT_OVERWRITE &&
	    act != NVME_SANACT_CRYPTO_ERASE)
		return ctrlr_req_complete_err(req, NVME_SC_INVALID_FIELD,
					      offsetof(struct nvme_sqe, cdw10));
	if (cdw10 & ~0x3ffu)
		return ctrlr_req_complete_err(req, NVME_SC_INVALID_FIELD,
					      offsetof(struct nvme_sqe, cdw10) + 1);
	/* A self-test in progress is aborted (8.11), on every covered controller. */
	for (struct ctrlr *m = ctrlr_san_first(ctrlr); m; m = ctrlr_san_next(ctrlr, m))
		ctrlr_dst_abort(m, NVME_DST_RES_ABORTED_SANITIZE);
	s->cdw10 = cdw10;
	s->scdw10 = cdw10;
	s->pattern = req->sqe.cdw11;
	s->passes = act == NVME_SANACT_OVERWRITE ? (NVME_SAN_OWPASS(cdw10) ? NVME_SAN_OWPASS(cdw10)
									    : 16)
						 : 0;
	s->pass = 0;
	s->phase = CTRLR_SAN_DRAIN;
	s->ns_next = 1;
	s->lba = 0;
	s->done = 0;
	s->total = ctrlr_san_total(ctrlr);
	s->sstat = NVME_SSTAT_IN_PROGRESS;
	s->gde = false;
	s->gen++;
	/* From here new I/O is refused, on every covered controller; commands already running
	 * drain before any erase. */
	s->runner = NULL;
	ctrlr_san_set_state(ctrlr, CTRLR_SAN_RUNNING);
	ctrlr_san_mirror(ctrlr);
	/* Commands that read the state before it changed end within a namespace grace period. */
	for (struct ctrlr *m = ctrlr_san_first(ctrlr); m; m = ctrlr_san_next(ctrlr, m))
		ctrlr_ns_grace_ask(m);
	LOG_INFO(CTRLR_LOG, "%s: sanitize %s started (cdw10 0x%x, %" PRIu64 " blocks)",
		 ctrlr->serial,
		 act == NVME_SANACT_OVERWRITE	? "overwrite"
		 : act == NVME_SANACT_CRYPTO_ERASE ? "crypto erase (as a block erase)"
						   : "block erase",
		 cdw10,
		 s->total);
	/* Persistent Event Log, Sanitize Start: SANICAP, SCDW10, SCDW11. */
	cap = ctrlr_sanicap(ctrlr);
	memcpy(ev, &cap, 4);
	memcpy(ev + 4, &cdw10, 4);
	memcpy(ev + 8, &req->sqe.cdw11, 4);
	ctrlr_pel_add(ctrlr, NVME_PEL_SANITIZE_START, ev, sizeof(ev));
	ctrlr_req_complete(req, NVME_SC_SUCCESS);
	ctrlr_bg_kick(ctrlr);
}

size_t ctrlr_log_sanitize(struct ctrlr *ctrlr, uint8_t *buf)
{
	struct nvme_sanitize_log *log = (struct nvme_sanitize_log *)buf;
	struct ctrlr_san *s = &ctrlr_dev(ctrlr)->san;
	/* A follower reports the runner's progress (same thread). */
	const struct ctrlr_san *r = s->runner ? &ctrlr_dev(s->runner)->san : s;

	if (CTRLR_LOAD(s->state) == CTRLR_SAN_RUNNING) {
		uint64_t p = r->total ? r->done * 65536 / r->total : 0;

		log->sprog = (uint16_t)(p > 0xffff ? 0xffff : p);
	} else {
		log->sprog = 0xffff;
	}
	/* Global Data Erased: nothing written to any namespace since the last success. */
	if (s->gde && ctrlr_san_writes(ctrlr) != s->writes_at_end)
		s->gde = false;
	log->sstat = (uint16_t)(s->sstat | (s->gde ? NVME_SSTAT_GDE : 0));
	log->scdw10 = s->scdw10;
	/* No estimates (FFFFFFFFh). */
	log->eto = log->etbe = log->etond = log->etbend = 0xffffffffu;
	log->etce = log->etcend = 0xffffffffu;
	return sizeof(*log);
}
