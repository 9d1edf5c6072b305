/* dpa/nvme_dpa.c - the NVMe DPA program (one per CQ) and its full-duplex
 * channel to the owning poll group. */
#include "dpa/nvme_dpa.h"
#include "common/log.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct dpa_nvme_slot {
	struct dpa_db *db; /* NULL: free */
	uint64_t cookie;
	bool dirty; /* its latest value still has to be sent */
};

/* The program's state: the DPA thread's argument block (DOCA copies the
 * argument block to DPA memory; the program owns it from then on). */
struct dpa_nvme_prog {
	struct dpa_db_comp *comp;
	struct dpa_msgq *to_dpa, *to_arm;
	struct dpa_nvme_slot slots[DPA_NVME_MAX_DBS];
	uint32_t n_dirty;
	struct dpa_nvme_msg held; /* a reply the full to-Arm queue refused */
	bool has_held;
	struct hw_msix_vector *msix[DPA_NVME_MAX_MSIX_COALESCE];
	uint32_t n_msix;
};

struct dpa_nvme_chan {
	struct dpa_thread *thread;
	struct dpa_db_comp *comp;
	struct dpa_msgq *to_dpa, *to_arm;
};

/* Sends the latest value of every dirty DB. Returns false if the to-Arm
 * queue filled up (the rest stay dirty). */
static bool dpa_nvme_flush_dirty(struct dpa_nvme_prog *p)
{
	struct dpa_nvme_msg m = {.type = DPA_NVME_MSG_DB_VALUE};
	struct dpa_nvme_slot *s;
	uint32_t i;

	for (i = 0; p->n_dirty && i < DPA_NVME_MAX_DBS; i++) {
		s = &p->slots[i];
		if (!s->dirty)
			continue;
		/* The DB was re-armed before this read (DOCA order), so a later
		 * write produces a new completion. */
		m.db.db_id = dpa_db_id(s->db);
		m.db.value = dpa_db_get_value(s->db);
		m.db.cookie = s->cookie;
		if (dpa_msgq_send(p->to_arm, &m))
			return false;
		s->dirty = false;
		p->n_dirty--;
	}
	return true;
}

static void dpa_nvme_raise_all(struct dpa_thread *thread, struct dpa_nvme_prog *p)
{
	uint32_t i;

	for (i = 0; i < p->n_msix; i++)
		dpa_msix_raise(thread, p->msix[i]);
	p->n_msix = 0;
}

/* Remembers a raise request: one raise per vector per activation. */
static void dpa_nvme_add_msix(struct dpa_thread *thread, struct dpa_nvme_prog *p,
			      struct hw_msix_vector *vec)
{
	uint32_t i;

	if (!vec)
		return;
	for (i = 0; i < p->n_msix; i++)
		if (p->msix[i] == vec)
			return;
	if (p->n_msix == DPA_NVME_MAX_MSIX_COALESCE)
		dpa_nvme_raise_all(thread, p);
	p->msix[p->n_msix++] = vec;
}

static void dpa_nvme_do_bind(struct dpa_nvme_prog *p, const struct dpa_nvme_msg *req,
			     struct dpa_nvme_msg *rep)
{
	uint32_t i;
	int rc;

	rep->type = DPA_NVME_MSG_BIND_DONE;
	for (i = 0; i < DPA_NVME_MAX_DBS && p->slots[i].db; i++)
		;
	if (i == DPA_NVME_MAX_DBS) {
		rep->status = -ENOSPC;
		return;
	}
	rc = dpa_db_comp_bind(p->comp, req->bind.db_handle, i);
	rep->status = rc;
	if (rc)
		return;
	p->slots[i].db = (struct dpa_db *)(uintptr_t)req->bind.db_handle;
	p->slots[i].cookie = req->bind.cookie;
	p->slots[i].dirty = false;
}

static void dpa_nvme_do_unbind(struct dpa_nvme_prog *p, const struct dpa_nvme_msg *req,
			       struct dpa_nvme_msg *rep)
{
	struct dpa_db *db = (struct dpa_db *)(uintptr_t)req->bind.db_handle;
	uint32_t i;
	int rc;

	rep->type = DPA_NVME_MSG_UNBIND_DONE;
	/* The program acks every completion as it fetches it, so none is
	 * outstanding here; unbind drops one not yet fetched. */
	rc = dpa_db_comp_unbind(p->comp, req->bind.db_handle);
	rep->status = rc;
	if (rc)
		return;
	for (i = 0; i < DPA_NVME_MAX_DBS; i++) {
		if (p->slots[i].db != db)
			continue;
		if (p->slots[i].dirty)
			p->n_dirty--;
		memset(&p->slots[i], 0, sizeof(p->slots[i]));
	}
}

/* Handles requests from the Arm until the queue is empty or a reply cannot
 * be sent. Returns false when blocked on the to-Arm queue. */
static bool dpa_nvme_handle_requests(struct dpa_thread *thread, struct dpa_nvme_prog *p)
{
	struct dpa_nvme_msg req, rep;

	while (dpa_msgq_recv(p->to_dpa, &req) == 1) {
		memset(&rep, 0, sizeof(rep));
		switch (req.type) {
		case DPA_NVME_MSG_BIND_DB:
			dpa_nvme_do_bind(p, &req, &rep);
			break;
		case DPA_NVME_MSG_UNBIND_DB:
			dpa_nvme_do_unbind(p, &req, &rep);
			break;
		case DPA_NVME_MSG_RAISE_MSIX:
			dpa_nvme_add_msix(thread, p,
					  (struct hw_msix_vector *)(uintptr_t)req.msix.vec);
			continue;
		default:
			/* dpa_nvme_chan_send filters types: this is a bug. */
			LOG_ERR("dpa-nvme", "unknown request type %u", req.type);
			continue;
		}
		rep.bind = req.bind;
		/* Requests complete in order: raises asked for before this one
		 * are done when its reply leaves (the Arm may then destroy
		 * the vectors). */
		dpa_nvme_raise_all(thread, p);
		if (dpa_msgq_send(p->to_arm, &rep)) {
			p->held = rep;
			p->has_held = true;
			return false;
		}
	}
	return true;
}

/* Fetches DB completions in DOCA's order: get all, ack, re-arm the context,
 * then re-arm each DB; its latest value is read when it is sent. A DB that
 * completed is not re-armed before the loop ends, so it appears at most once
 * per call and a busy writer cannot keep the loop going. */
static void dpa_nvme_collect_dbs(struct dpa_nvme_prog *p)
{
	struct dpa_db *done[DPA_NVME_MAX_DBS];
	struct dpa_db_comp_elem e;
	uint32_t n = 0, i;

	while (n < DPA_NVME_MAX_DBS && dpa_db_comp_get_completion(p->comp, &e) == 1) {
		struct dpa_nvme_slot *s = &p->slots[e.user];

		done[n++] = e.db;
		if (!s->dirty) {
			s->dirty = true;
			p->n_dirty++;
		}
	}
	if (n)
		dpa_db_comp_ack(p->comp, n);
	dpa_db_comp_request_notification(p->comp);
	for (i = 0; i < n; i++)
		dpa_db_request_notification(done[i]);
}

static void dpa_nvme_prog_run(struct dpa_thread *thread, void *arg)
{
	struct dpa_nvme_prog *p = arg;
	bool blocked = false;

	/* A reply held back last time goes first: replies keep their order. */
	if (p->has_held) {
		if (dpa_msgq_send(p->to_arm, &p->held))
			blocked = true;
		else
			p->has_held = false;
	}
	if (!blocked)
		blocked = !dpa_nvme_handle_requests(thread, p);
	dpa_nvme_collect_dbs(p);
	if (!dpa_nvme_flush_dirty(p))
		blocked = true;
	dpa_nvme_raise_all(thread, p);

	if (blocked) {
		/* Resume when the Arm drained the to-Arm queue; if room appeared
		 * meanwhile, run again at once. */
		if (dpa_msgq_producer_arm(p->to_arm))
			dpa_thread_kick(thread);
		return;
	}
	if (dpa_msgq_consumer_arm(p->to_dpa))
		dpa_thread_kick(thread);
}

struct dpa_nvme_chan *dpa_nvme_chan_create(struct dpa *dpa, int hart, uint32_t depth)
{
	struct dpa_msgq_config qc = {.msg_size = sizeof(struct dpa_nvme_msg), .depth = depth};
	struct dpa_nvme_prog init = {0}, *p;
	struct dpa_nvme_chan *ch;
	int err, rc;

	ch = calloc(1, sizeof(*ch));
	if (!ch) {
		errno = ENOMEM;
		return NULL;
	}
	ch->thread = dpa_thread_create(dpa, dpa_nvme_prog_run, &init, sizeof(init));
	if (!ch->thread)
		goto out_free_ch;
	ch->comp = dpa_db_comp_create(ch->thread);
	if (!ch->comp)
		goto out_destroy_thread;
	/* Fused: the owner runs the program, so it is both ends of both queues. */
	qc.single_thread = dpa_num_harts(dpa) == 0;
	qc.consumer = ch->thread;
	ch->to_dpa = dpa_msgq_create(dpa, &qc);
	if (!ch->to_dpa)
		goto out_destroy_comp;
	qc.consumer = NULL;
	qc.producer = ch->thread;
	ch->to_arm = dpa_msgq_create(dpa, &qc);
	if (!ch->to_arm)
		goto out_destroy_to_dpa;
	/* Hand the resources to the program before it runs (DOCA: thread
	 * arguments are set before doca_dpa_thread_run). */
	p = dpa_thread_arg(ch->thread);
	p->comp = ch->comp;
	p->to_dpa = ch->to_dpa;
	p->to_arm = ch->to_arm;
	rc = dpa_thread_run(ch->thread, hart);
	if (rc) {
		errno = -rc;
		goto out_destroy_to_arm;
	}
	return ch;

out_destroy_to_arm:
	err = errno;
	dpa_msgq_destroy(ch->to_arm);
	errno = err;
out_destroy_to_dpa:
	err = errno;
	dpa_msgq_destroy(ch->to_dpa);
	errno = err;
out_destroy_comp:
	err = errno;
	dpa_db_comp_destroy(ch->comp);
	errno = err;
out_destroy_thread:
	err = errno;
	dpa_thread_destroy(ch->thread);
	errno = err;
out_free_ch:
	err = errno;
	free(ch);
	errno = err;
	return NULL;
}

int dpa_nvme_chan_destroy(struct dpa_nvme_chan *ch)
{
	if (!ch)
		return 0;
	if (dpa_db_comp_num_dbs(ch->comp))
		return -EBUSY;
	/* No activation may run while its resources go away. */
	dpa_thread_stop(ch->thread);
	dpa_msgq_destroy(ch->to_arm);
	dpa_msgq_destroy(ch->to_dpa);
	dpa_db_comp_destroy(ch->comp);
	dpa_thread_destroy(ch->thread);
	free(ch);
	return 0;
}

struct dpa_db_comp *dpa_nvme_chan_db_comp(const struct dpa_nvme_chan *ch)
{
	return ch->comp;
}

struct dpa_thread *dpa_nvme_chan_thread(const struct dpa_nvme_chan *ch)
{
	return ch->thread;
}

int dpa_nvme_chan_send(struct dpa_nvme_chan *ch, const struct dpa_nvme_msg *msg)
{
	switch (msg->type) {
	case DPA_NVME_MSG_BIND_DB:
	case DPA_NVME_MSG_UNBIND_DB:
	case DPA_NVME_MSG_RAISE_MSIX:
		return dpa_msgq_send(ch->to_dpa, msg);
	default:
		return -EINVAL;
	}
}

static int dpa_nvme_chan_send_bind(struct dpa_nvme_chan *ch, uint16_t type, struct dpa_db *db,
				   uint64_t cookie)
{
	struct dpa_nvme_msg m = {.type = type};

	if (!db)
		return -EINVAL;
	m.bind.db_handle = dpa_db_get_handle(db);
	m.bind.cookie = cookie;
	return dpa_msgq_send(ch->to_dpa, &m);
}

int dpa_nvme_chan_bind_db(struct dpa_nvme_chan *ch, struct dpa_db *db, uint64_t cookie)
{
	return dpa_nvme_chan_send_bind(ch, DPA_NVME_MSG_BIND_DB, db, cookie);
}

int dpa_nvme_chan_unbind_db(struct dpa_nvme_chan *ch, struct dpa_db *db, uint64_t cookie)
{
	return dpa_nvme_chan_send_bind(ch, DPA_NVME_MSG_UNBIND_DB, db, cookie);
}

static int dpa_nvme_chan_send_raise(struct dpa_nvme_chan *ch, struct hw_msix_vector *vec,
				    bool polled)
{
	struct dpa_nvme_msg m = {.type = DPA_NVME_MSG_RAISE_MSIX};

	if (!vec)
		return -EINVAL;
	m.msix.vec = (uint64_t)(uintptr_t)vec;
	return polled ? dpa_msgq_send_polled(ch->to_dpa, &m) : dpa_msgq_send(ch->to_dpa, &m);
}

int dpa_nvme_chan_raise_msix(struct dpa_nvme_chan *ch, struct hw_msix_vector *vec)
{
	return dpa_nvme_chan_send_raise(ch, vec, false);
}

int dpa_nvme_chan_raise_msix_polled(struct dpa_nvme_chan *ch, struct hw_msix_vector *vec)
{
	return dpa_nvme_chan_send_raise(ch, vec, true);
}

int dpa_nvme_chan_recv(struct dpa_nvme_chan *ch, struct dpa_nvme_msg *msg)
{
	return dpa_msgq_recv(ch->to_arm, msg);
}

int dpa_nvme_chan_arm(struct dpa_nvme_chan *ch)
{
	return dpa_msgq_consumer_arm(ch->to_arm);
}

int dpa_nvme_chan_fd(const struct dpa_nvme_chan *ch)
{
	return dpa_msgq_consumer_fd(ch->to_arm);
}

int dpa_nvme_chan_send_arm(struct dpa_nvme_chan *ch)
{
	return dpa_msgq_producer_arm(ch->to_dpa);
}

int dpa_nvme_chan_send_fd(const struct dpa_nvme_chan *ch)
{
	return dpa_msgq_producer_fd(ch->to_dpa);
}

int dpa_nvme_chan_poll(struct dpa_nvme_chan *ch)
{
	return dpa_thread_poll(ch->thread);
}
