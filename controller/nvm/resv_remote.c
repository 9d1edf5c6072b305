/* controller/nvm/resv_remote.c - reservations of a namespace shared with daemons on other hosts:
 * the state is a record in a store (ctrlr.h, struct ctrlr_resv_store_ops) that every daemon of
 * the namespace reads and changes; this daemon keeps a copy (sh->resv) from which the access
 * words of the I/O path are computed, as for a namespace of its own.
 *
 * A command: read the record, run the state machine on it, write it back only if nobody changed
 * it since the read (else start over on the newer one), apply the change here, then publish it
 * and complete once every other daemon applied it. Commands of one namespace run one at a time
 * (sh->resv_saving; the others wait in resv.c's queue).
 *
 * A refresh (the store's `changed`: another daemon's change, or the watch back): read, apply what
 * this daemon has not seen (the notifications owed to its hosts, Preempt and Abort's fences on
 * their commands), then acknowledge, so that the other daemon's command completes only once this
 * one stopped admitting what the change forbids. A refresh does not wait for a command of this
 * daemon (which may itself be waiting for the other daemon's acknowledgement): each copy taken
 * is newer than the one before (RADOS object versions only grow), an older read is dropped.
 * Admin thread. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "controller/nvm/nvm.h"

/* ---- taking a newer record ---- */

/* Applying the changes of a record this daemon has not seen: their effects one after the other,
 * then then(sh). */
struct ctrlr_remote_catchup {
	struct ctrlr_nvm_shared *sh;
	const struct ctrlr_resv_record *rec;
	uint32_t next; /* index in rec->changes */
	void (*then)(struct ctrlr_nvm_shared *sh);
};

static void ctrlr_remote_catchup_step(void *arg)
{
	struct ctrlr_remote_catchup *c = arg;
	struct ctrlr_nvm_shared *sh = c->sh;
	const struct ctrlr_resv_record *rec = c->rec;

	while (c->next < rec->nchanges && rec->changes[c->next].seq <= sh->store_seq)
		c->next++;
	if (c->next < rec->nchanges) {
		const struct ctrlr_resv_change *ch = &rec->changes[c->next++];

		sh->store_seq = ch->seq;
		return ctrlr_resv_effects(sh->store_ns, NULL, ch->abort, &ch->ev,
					  ctrlr_remote_catchup_step, c);
	}
	if (rec->seq > sh->store_seq)
		sh->store_seq = rec->seq;
	c->then(sh);
	free(c);
}

/* Whether the copy here may be behind the store (writes refused), said in the log when it turns:
 * an operator sees when and why a daemon refused its hosts' writes. */
static void ctrlr_remote_set_stale(struct ctrlr_nvm_shared *sh, bool stale, const char *why)
{
	if (stale && !sh->store_stale)
		LOG_WARN(CTRLR_LOG, "shared reservations: the state here may be stale (%s): writes "
			 "refused until the record is read", why);
	else if (!stale && sh->store_stale)
		LOG_INFO(CTRLR_LOG, "shared reservations: state current (record version %llu): "
			 "writes admitted", (unsigned long long)sh->store_version);
	sh->store_stale = stale;
}

/* rec was read at `version`. If it is newer than the copy here, it becomes the copy and the
 * changes this daemon has not seen take effect in order; then(sh) either way. */
static void ctrlr_remote_take(struct ctrlr_nvm_shared *sh, const struct ctrlr_resv_record *rec,
			      uint64_t version, void (*then)(struct ctrlr_nvm_shared *sh))
{
	struct ctrlr_remote_catchup *c;

	if (sh->store_version && version <= sh->store_version) {
		/* Nothing newer than what is here; still current if watched. */
		if (sh->store_watched && sh->store_stale) {
			ctrlr_remote_set_stale(sh, false, NULL);
			ctrlr_resv_update_access(sh->store_ns);
		}
		return then(sh);
	}
	/* The first record this daemon reads is where it starts: the changes it lists happened
	 * before, to hosts this daemon did not serve then. */
	if (!sh->store_version)
		sh->store_seq = rec->seq;
	if (sh->store_seq && rec->nchanges && rec->changes[0].seq > sh->store_seq + 1)
		LOG_ERR(CTRLR_LOG,
			"shared reservations: changes %llu-%llu were missed, their notifications lost",
			(unsigned long long)sh->store_seq + 1,
			(unsigned long long)rec->changes[0].seq - 1);
	sh->resv = rec->r; /* ptpl_capable: true in every record read here (the store keeps all) */
	sh->store_version = version;
	/* Current until the next change, if the store will tell of it. */
	ctrlr_remote_set_stale(sh, !sh->store_watched, "not watching the record");
	ctrlr_resv_update_access(sh->store_ns);
	c = calloc(1, sizeof(*c));
	if (!c) {
		LOG_ERR(CTRLR_LOG, "shared reservations: no memory for the changes' notifications");
		if (rec->seq > sh->store_seq)
			sh->store_seq = rec->seq;
		return then(sh);
	}
	*c = (struct ctrlr_remote_catchup){.sh = sh, .rec = rec, .then = then};
	ctrlr_remote_catchup_step(c);
}

static int ctrlr_remote_decode(struct ctrlr_resv_record *rec, int rc, const void *data, size_t len)
{
	if (rc) {
		LOG_ERR(CTRLR_LOG, "cannot read the shared reservation record: %s", strerror(-rc));
		return rc;
	}
	rec->r.ptpl_capable = true;
	rc = ctrlr_resv_record_decode(rec, data, len);
	if (rc)
		LOG_ERR(CTRLR_LOG, "the shared reservation record (%zu bytes) is not valid", len);
	return rc;
}

/* ---- a command through the store ---- */

static void ctrlr_remote_read(struct ctrlr_nvm_shared *sh);

/* The command is an admin Set Features (Persist Through Power Loss), not a reservation command. */
static bool ctrlr_remote_is_ptpl(const struct ctrlr_req *req)
{
	return req->sq->qid == 0;
}

static bool ctrlr_remote_abort_of(const struct ctrlr_req *req)
{
	return !ctrlr_remote_is_ptpl(req) && req->sqe.cdw0.bits.opc == NVME_CMD_RESV_ACQUIRE &&
	       (req->sqe.cdw10 & 0x7) == NVME_RACQA_PREEMPT_ABORT;
}

static void ctrlr_remote_complete(struct ctrlr_nvm_shared *sh, uint16_t st)
{
	struct ctrlr_req *req = sh->store_req;

	sh->store_req = NULL;
	free(sh->store_rec);
	sh->store_rec = NULL;
	if (ctrlr_remote_is_ptpl(req)) {
		req->hold.cont(req, st);
	} else {
		/* The keys stayed for reruns; only a report's buffer is copied out. */
		if (req->sqe.cdw0.bits.opc != NVME_CMD_RESV_REPORT) {
			free(req->step.buf);
			req->step.buf = NULL;
		}
		ctrlr_resv_finish(req, st);
	}
	ctrlr_resv_saved_next(sh);
}

static void ctrlr_remote_published(void *arg, int rc)
{
	struct ctrlr_nvm_shared *sh = arg;

	if (rc)
		LOG_ERR(CTRLR_LOG, "shared reservations: not every daemon took the change: %s",
			strerror(-rc));
	/* The change is in the store and in effect here: the command succeeded either way. */
	ctrlr_remote_complete(sh, NVME_SC_SUCCESS);
}

static void ctrlr_remote_effects_done(void *arg)
{
	struct ctrlr_nvm_shared *sh = arg;
	int rc = sh->store->publish(sh->store_ctx, ctrlr_remote_published, sh);

	if (rc)
		ctrlr_remote_published(sh, rc);
}

static void ctrlr_remote_written(void *arg, int rc, uint64_t version)
{
	struct ctrlr_nvm_shared *sh = arg;
	struct ctrlr_req *req = sh->store_req;
	const struct ctrlr_resv_record *rec = sh->store_rec;
	const struct ctrlr_resv_change *ch;

	if (rc == -ECANCELED)
		return ctrlr_remote_read(sh); /* another daemon came first: again on its record */
	if (rc) {
		LOG_ERR(CTRLR_LOG, "ns %u: cannot write the shared reservation record: %s",
			req->ns->nsid, strerror(-rc));
		return ctrlr_remote_complete(sh, NVME_SC_INTERNAL);
	}
	/* In the store: now in effect here. A refresh that read an older record meanwhile is
	 * dropped by the version. */
	ch = &rec->changes[rec->nchanges - 1];
	sh->resv = rec->r;
	if (version > sh->store_version)
		sh->store_version = version;
	sh->store_seq = rec->seq;
	ctrlr_resv_effects(sh->store_ns, req, ch->abort, &ch->ev, ctrlr_remote_effects_done, sh);
}

/* The record is current here: run the command on it. */
static void ctrlr_remote_run(struct ctrlr_nvm_shared *sh)
{
	struct ctrlr_req *req = sh->store_req;
	struct ctrlr_resv_record *rec = sh->store_rec;
	struct ctrlr_resv_events ev = {0};
	bool persist = false;
	uint16_t st;
	char *text;
	int rc;

	/* The record was read with its version: the write must find that version. */
	if (ctrlr_remote_is_ptpl(req)) {
		if ((bool)req->hold.lba == rec->r.ptpl)
			return ctrlr_remote_complete(sh, NVME_SC_SUCCESS);
		rec->r.ptpl = req->hold.lba;
	} else {
		/* The report's buffer (req->step.buf) goes back with the completion. */
		if (req->sqe.cdw0.bits.opc == NVME_CMD_RESV_REPORT)
			return ctrlr_remote_complete(sh, ctrlr_resv_report(req));
		st = ctrlr_resv_change(&rec->r, req, &ev, &persist);
		if (st)
			return ctrlr_remote_complete(sh, st);
		if (!persist && !ev.n)
			return ctrlr_remote_complete(sh, NVME_SC_SUCCESS); /* nothing changed */
	}
	ctrlr_resv_record_add(rec, ctrlr_remote_abort_of(req), &ev);
	text = ctrlr_resv_record_encode(rec);
	if (!text)
		return ctrlr_remote_complete(sh, NVME_SC_INTERNAL);
	rc = sh->store->write(sh->store_ctx, sh->cmd_version, text, strlen(text),
			      ctrlr_remote_written, sh);
	free(text);
	if (rc)
		ctrlr_remote_written(sh, rc, 0);
}

static void ctrlr_remote_read_done(void *arg, int rc, const void *data, size_t len,
				   uint64_t version)
{
	struct ctrlr_nvm_shared *sh = arg;

	if (ctrlr_remote_decode(sh->store_rec, rc, data, len))
		return ctrlr_remote_complete(sh, NVME_SC_INTERNAL);
	sh->cmd_version = version;
	/* What others changed takes effect here first (their notifications, in order); the
	 * command then runs on the record as read. */
	ctrlr_remote_take(sh, sh->store_rec, version, ctrlr_remote_run);
}

static void ctrlr_remote_read(struct ctrlr_nvm_shared *sh)
{
	int rc = sh->store->read(sh->store_ctx, ctrlr_remote_read_done, sh);

	if (rc)
		ctrlr_remote_read_done(sh, rc, NULL, 0, 0);
}

void ctrlr_resv_remote_exec(struct ctrlr_req *req)
{
	struct ctrlr_nvm_shared *sh = ctrlr_nvm_ns(req->ns)->sh;

	sh->resv_saving = true;
	sh->store_req = req;
	sh->store_rec = calloc(1, sizeof(*sh->store_rec));
	if (!sh->store_rec)
		return ctrlr_remote_complete(sh, NVME_SC_INTERNAL);
	ctrlr_remote_read(sh);
}

/* ---- a refresh ---- */

static void ctrlr_remote_refresh(struct ctrlr_nvm_shared *sh);

/* Applied: the changes told before the read started are acknowledged. */
static void ctrlr_remote_refreshed(struct ctrlr_nvm_shared *sh)
{
	uint32_t n = sh->store_tokens_upto;

	if (n) {
		for (uint32_t i = 0; i < n; i++)
			sh->store->ack(sh->store_ctx, sh->store_tokens[i]);
		memmove(sh->store_tokens, sh->store_tokens + n,
			(sh->store_ntokens - n) * sizeof(*sh->store_tokens));
		sh->store_ntokens -= n;
	}
	sh->store_tokens_upto = 0;
	free(sh->refresh_rec);
	sh->refresh_rec = NULL;
	sh->store_refreshing = false;
	if (sh->store_refresh) {
		sh->store_refresh = false;
		ctrlr_remote_refresh(sh);
	}
}

static void ctrlr_remote_refresh_read(void *arg, int rc, const void *data, size_t len,
				      uint64_t version)
{
	struct ctrlr_nvm_shared *sh = arg;

	if (ctrlr_remote_decode(sh->refresh_rec, rc, data, len)) {
		/* Not acknowledged: still stale for what it does not know; the next change or
		 * watch reads again. */
		sh->store_tokens_upto = 0;
		free(sh->refresh_rec);
		sh->refresh_rec = NULL;
		sh->store_refreshing = false;
		ctrlr_remote_set_stale(sh, true, "the record could not be read");
		ctrlr_resv_update_access(sh->store_ns);
		if (sh->store_refresh) {
			sh->store_refresh = false;
			ctrlr_remote_refresh(sh);
		}
		return;
	}
	ctrlr_remote_take(sh, sh->refresh_rec, version, ctrlr_remote_refreshed);
}

static void ctrlr_remote_refresh(struct ctrlr_nvm_shared *sh)
{
	int rc;

	if (sh->store_refreshing) {
		sh->store_refresh = true;
		return;
	}
	sh->refresh_rec = calloc(1, sizeof(*sh->refresh_rec));
	if (!sh->refresh_rec) {
		LOG_ERR(CTRLR_LOG, "shared reservations: no memory to read the record");
		return;
	}
	sh->store_refreshing = true;
	sh->store_tokens_upto = sh->store_ntokens;
	rc = sh->store->read(sh->store_ctx, ctrlr_remote_refresh_read, sh);
	if (rc)
		ctrlr_remote_refresh_read(sh, rc, NULL, 0, 0);
}

/* ---- the store's events and binding ---- */

void ctrlr_ns_shared_set_resv_store(struct ctrlr_ns_shared *s, const struct ctrlr_resv_store_ops *ops,
				    void *ctx)
{
	struct ctrlr_nvm_shared *sh = ctrlr_nvm_shared(s);

	sh->store = ops;
	sh->store_ctx = ctx;
	sh->store_ns = s;
	sh->store_stale = true;
	sh->store_watched = false;
	sh->resv.ptpl_capable = true; /* the store keeps everything */
	ctrlr_resv_update_access(s);
}

void ctrlr_resv_store_changed(struct ctrlr_ns_shared *s, uint64_t token)
{
	struct ctrlr_nvm_shared *sh = ctrlr_nvm_shared(s);

	if (!sh->store)
		return;
	sh->store_watched = true;
	if (token) {
		if (sh->store_ntokens == sh->store_tokens_cap) {
			uint32_t cap = sh->store_tokens_cap ? 2 * sh->store_tokens_cap : 8;
			uint64_t *t = realloc(sh->store_tokens, cap * sizeof(*t));

			/* Not acknowledged, the writer counts this daemon as one that did not
			 * answer: the safe side of a fence. */
			if (!t) {
				LOG_ERR(CTRLR_LOG, "shared reservations: no memory to acknowledge");
				return ctrlr_remote_refresh(sh);
			}
			sh->store_tokens = t;
			sh->store_tokens_cap = cap;
		}
		sh->store_tokens[sh->store_ntokens++] = token;
	}
	ctrlr_remote_refresh(sh);
}

void ctrlr_resv_store_stale(struct ctrlr_ns_shared *s)
{
	struct ctrlr_nvm_shared *sh = ctrlr_nvm_shared(s);

	if (!sh->store)
		return;
	sh->store_watched = false;
	ctrlr_remote_set_stale(sh, true, "the watch on the record is lost");
	ctrlr_resv_update_access(s);
}

void ctrlr_resv_remote_fini(struct ctrlr_nvm_shared *sh)
{
	if (!sh->store)
		return;
	/* No callback of the store comes after release: what is in flight is dropped. */
	sh->store->release(sh->store_ctx);
	sh->store = NULL;
	free(sh->store_rec);
	sh->store_rec = NULL;
	free(sh->refresh_rec);
	sh->refresh_rec = NULL;
	free(sh->store_tokens);
	sh->store_tokens = NULL;
}
