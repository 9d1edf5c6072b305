/* dpa/db_comp.c - DB completion contexts and DB objects: trap-mode notify
 * hook, mmap-mode polling, bind/unbind, completion elements, ack, re-arm. */
#include "dpa/dpa_internal.h"
#include "hw/hw.h"
#include "common/log.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

/* The DB's value in the doorbell page: shared with the guest (mmap mode) or
 * hw/'s loop thread, so read it as a relaxed atomic (one untorn load). */
static inline uint32_t dpa_db_read(const struct dpa_db *db)
{
	return __atomic_load_n(db->value_ptr, __ATOMIC_RELAXED);
}

struct dpa_db_comp *dpa_db_comp_create(struct dpa_thread *thread)
{
	struct dpa_db_comp *comp;

	if (thread->comp) {
		errno = EEXIST;
		return NULL;
	}
	if (posix_memalign((void **)&comp, DPA_CACHELINE, sizeof(*comp))) {
		errno = ENOMEM;
		return NULL;
	}
	memset(comp, 0, sizeof(*comp));
	comp->thread = thread;
	atomic_init(&comp->stack, NULL);
	atomic_init(&comp->armed, true);
	thread->comp = comp;
	atomic_fetch_add(&thread->refs, 1);
	return comp;
}

int dpa_db_comp_destroy(struct dpa_db_comp *comp)
{
	if (!comp)
		return 0;
	if (atomic_load(&comp->n_dbs))
		return -EBUSY;
	comp->thread->comp = NULL;
	atomic_fetch_sub(&comp->thread->refs, 1);
	free(comp);
	return 0;
}

uint32_t dpa_db_comp_num_dbs(const struct dpa_db_comp *comp)
{
	return atomic_load(&((struct dpa_db_comp *)comp)->n_dbs);
}

struct dpa_thread *dpa_db_comp_thread(const struct dpa_db_comp *comp)
{
	return comp->thread;
}

/* Appends the run first..last (linked by next, last->next NULL) to the program's ready list.
 * The program's thread only. */
static void dpa_db_comp_ready_append(struct dpa_db_comp *comp, struct dpa_db *first,
				     struct dpa_db *last)
{
	if (comp->ready_tail)
		comp->ready_tail->next = first;
	else
		comp->ready_head = first;
	comp->ready_tail = last;
}

bool dpa_db_complete(struct dpa_db *db, uint32_t value, bool local)
{
	struct dpa_db_comp *comp = db->comp;
	struct dpa_db *head;
	int expected = DPA_DB_ARMED;

	/* One completion per arming: only the ARMED -> QUEUED winner pushes, so
	 * a DB is on the stack at most once. */
	if (atomic_load_explicit(&db->state, memory_order_relaxed) != DPA_DB_ARMED ||
	    !atomic_compare_exchange_strong(&db->state, &expected, DPA_DB_QUEUED))
		return false;
	db->comp_value = value;
	if (local) {
		/* The poller runs on the program's own OS thread (the hart, or the fused consumer),
		 * which owns the ready list: append there, no push on the shared stack. Taking the
		 * context's arming plainly may race a remote producer's exchange; both then wake
		 * the thread, one activation too many at worst. Nothing is lost: the program
		 * re-arms with a full barrier before it looks at the stack again. */
		db->next = NULL;
		dpa_db_comp_ready_append(comp, db, db);
		if (atomic_load_explicit(&comp->armed, memory_order_relaxed)) {
			atomic_store_explicit(&comp->armed, false, memory_order_relaxed);
			dpa_thread_wake(comp->thread, true);
		}
		return true;
	}
	head = atomic_load_explicit(&comp->stack, memory_order_relaxed);
	/* seq_cst CAS (release for comp_value and next; pairs with the acquire
	 * exchange in dpa_db_comp_grab) and, for the context's arming, with the
	 * program's store of `armed` followed by its load of the stack. */
	do {
		db->next = head;
	} while (!atomic_compare_exchange_weak(&comp->stack, &head, db));
	if (atomic_load(&comp->armed) && atomic_exchange(&comp->armed, false))
		dpa_thread_wake(comp->thread, local);
	return true;
}

/* hw/ notify hook: the device's loop thread, after the value was stored. */
static void dpa_db_hw_notify(struct hw_db *hw, uint32_t value, void *arg)
{
	struct dpa_db *db = arg;

	/* Full barrier: the value store (done by hw/ before calling us) must be
	 * visible before we read the state; pairs with the fence in
	 * dpa_db_get_value, between the program's re-arming and its read of the
	 * value. */
	atomic_thread_fence(memory_order_seq_cst);
	dpa_db_complete(db, value, false);
}

struct dpa_db *dpa_db_create(struct dpa_db_comp *comp, struct hw_dev *dev, uint32_t db_id)
{
	struct dpa_db *db;
	int err;

	db = calloc(1, sizeof(*db));
	if (!db) {
		errno = ENOMEM;
		return NULL;
	}
	db->magic = DPA_DB_MAGIC;
	db->comp = comp;
	db->db_id = db_id;
	atomic_init(&db->state, DPA_DB_IDLE);
	atomic_init(&db->bound, false);
	db->hw = hw_db_create(dev, db_id, dpa_db_hw_notify, db);
	if (!db->hw) {
		err = errno;
		free(db);
		errno = err;
		return NULL;
	}
	db->value_ptr = hw_db_value_ptr(db->hw);
	db->polled = hw_dev_db_mode(dev) == HW_DB_MODE_MMAP;
	db->last_seen = dpa_db_read(db);
	atomic_fetch_add(&comp->n_dbs, 1);
	LOG_DBG("dpa", "%s: DB %u watched by %s", hw_dev_vuid(dev), db_id,
		db->polled ? "polling (mmap)" : "notification (trap)");
	return db;
}

int dpa_db_start(struct dpa_db *db)
{
	int rc = hw_db_start(db->hw);

	if (rc)
		return rc;
	/* DOCA: starting a DB produces a completion at once, so the program
	 * picks up a value written while the DB was stopped. */
	atomic_thread_fence(memory_order_seq_cst);
	dpa_db_complete(db, dpa_db_read(db), false);
	return 0;
}

int dpa_db_stop(struct dpa_db *db)
{
	return hw_db_stop(db->hw);
}

int dpa_db_destroy(struct dpa_db *db)
{
	if (!db)
		return 0;
	if (atomic_load(&db->bound))
		return -EBUSY;
	hw_db_destroy(db->hw);
	atomic_fetch_sub(&db->comp->n_dbs, 1);
	db->magic = 0;
	free(db);
	return 0;
}

struct hw_db *dpa_db_hw(const struct dpa_db *db)
{
	return db->hw;
}

uint32_t dpa_db_id(const struct dpa_db *db)
{
	return db->db_id;
}

dpa_db_handle_t dpa_db_get_handle(const struct dpa_db *db)
{
	return (dpa_db_handle_t)(uintptr_t)db;
}

bool dpa_db_is_polled(const struct dpa_db *db)
{
	return db->polled;
}

/* The control plane is trusted: a handle is a pointer it got from
 * dpa_db_get_handle; the magic and owner checks catch mix-ups. */
static struct dpa_db *dpa_db_from_handle(struct dpa_db_comp *comp, dpa_db_handle_t handle)
{
	struct dpa_db *db = (struct dpa_db *)(uintptr_t)handle;

	if (!db || db->magic != DPA_DB_MAGIC || db->comp != comp)
		return NULL;
	return db;
}

/* Moves whatever producers pushed to the program's FIFO ready list. */
static void dpa_db_comp_grab(struct dpa_db_comp *comp)
{
	struct dpa_db *list, *rev = NULL, *last, *next;

	if (!atomic_load_explicit(&comp->stack, memory_order_relaxed))
		return;
	list = atomic_exchange_explicit(&comp->stack, NULL, memory_order_acquire);
	/* The stack's top, the newest push, ends the reversed run. */
	last = list;
	while (list) {
		next = list->next;
		list->next = rev;
		rev = list;
		list = next;
	}
	if (rev)
		dpa_db_comp_ready_append(comp, rev, last);
}

int dpa_db_comp_bind(struct dpa_db_comp *comp, dpa_db_handle_t handle, uint64_t user)
{
	struct dpa_db *db = dpa_db_from_handle(comp, handle);

	if (!db)
		return -EINVAL;
	if (atomic_load_explicit(&db->bound, memory_order_relaxed))
		return -EALREADY;
	db->user = user;
	db->last_seen = dpa_db_read(db);
	atomic_store(&db->bound, true);
	if (db->polled)
		dpa_poll_list_add(dpa_thread_poll_list(comp->thread), db);
	atomic_store(&db->state, DPA_DB_ARMED);
	return 0;
}

/* Takes db off the ready list. Returns true if it was there. */
static bool dpa_db_comp_unready(struct dpa_db_comp *comp, struct dpa_db *db)
{
	struct dpa_db *prev = NULL, *cur;

	for (cur = comp->ready_head; cur; prev = cur, cur = cur->next) {
		if (cur != db)
			continue;
		if (prev)
			prev->next = cur->next;
		else
			comp->ready_head = cur->next;
		if (comp->ready_tail == cur)
			comp->ready_tail = prev;
		cur->next = NULL;
		return true;
	}
	return false;
}

int dpa_db_comp_unbind(struct dpa_db_comp *comp, dpa_db_handle_t handle)
{
	struct dpa_db *db = dpa_db_from_handle(comp, handle);

	if (!db)
		return -EINVAL;
	if (!atomic_load_explicit(&db->bound, memory_order_relaxed))
		return -ENOENT;
	if (comp->unacked)
		return -EBUSY;
	if (atomic_exchange(&db->state, DPA_DB_IDLE) == DPA_DB_QUEUED) {
		/* Its completion is on the stack, the ready list, or being pushed
		 * by a producer that already won the state (only if the control
		 * plane did not stop the DB first): wait for the push to land. */
		for (;;) {
			dpa_db_comp_grab(comp);
			if (dpa_db_comp_unready(comp, db))
				break;
			sched_yield();
		}
	}
	if (db->polled)
		dpa_poll_list_del(dpa_thread_poll_list(comp->thread), db);
	atomic_store(&db->bound, false);
	return 0;
}

int dpa_db_comp_get_completion(struct dpa_db_comp *comp, struct dpa_db_comp_elem *elem)
{
	struct dpa_db *db;

	if (!comp->ready_head)
		dpa_db_comp_grab(comp);
	db = comp->ready_head;
	if (!db)
		return 0;
	comp->ready_head = db->next;
	if (!comp->ready_head)
		comp->ready_tail = NULL;
	db->next = NULL;
	elem->db = db;
	elem->db_id = db->db_id;
	elem->value = db->comp_value;
	elem->user = db->user;
	/* Fetched: the DB stays quiet until the program re-arms it. */
	atomic_store_explicit(&db->state, DPA_DB_IDLE, memory_order_relaxed);
	comp->unacked++;
	DPA_COUNT(comp->thread, db_completions, 1);
	return 1;
}

int dpa_db_comp_ack(struct dpa_db_comp *comp, uint32_t n)
{
	if (n > comp->unacked)
		return -EINVAL;
	comp->unacked -= n;
	return 0;
}

void dpa_db_comp_request_notification(struct dpa_db_comp *comp)
{
	if (atomic_load_explicit(&comp->armed, memory_order_relaxed))
		return;
	/* seq_cst store then load: pairs with the producer's CAS on the stack
	 * followed by its load of `armed`. Completions already waiting (pushed
	 * or not yet fetched) kick the thread at once. */
	atomic_store(&comp->armed, true);
	if ((atomic_load(&comp->stack) || comp->ready_head) && atomic_exchange(&comp->armed, false))
		dpa_thread_wake(comp->thread, true);
}

void dpa_db_request_notification(struct dpa_db *db)
{
	if (!atomic_load_explicit(&db->bound, memory_order_relaxed))
		return;
	/* Only the program's thread moves a DB out of IDLE (producers act on ARMED; bind, unbind
	 * and the fetch run here too), so no compare-and-swap. Release: a producer that sees ARMED
	 * (its CAS acquires) writes the DB's link after our last use of it. */
	if (atomic_load_explicit(&db->state, memory_order_relaxed) == DPA_DB_IDLE)
		atomic_store_explicit(&db->state, DPA_DB_ARMED, memory_order_release);
}

uint32_t dpa_db_get_value(struct dpa_db *db)
{
	/* Pairs with the fence in dpa_db_hw_notify: a write whose notify found the DB not yet
	 * armed is visible to this read. A polled DB needs none: a value this read misses differs
	 * from last_seen, and the next poll pass produces its completion. */
	if (!db->polled)
		atomic_thread_fence(memory_order_seq_cst);
	db->last_seen = dpa_db_read(db);
	return db->last_seen;
}

void dpa_poll_list_add(struct dpa_poll_list *list, struct dpa_db *db)
{
	db->poll_prev = NULL;
	db->poll_next = list->first;
	if (list->first)
		list->first->poll_prev = db;
	list->first = db;
	/* Relaxed atomic: dpa_thread_has_polled_dbs reads it from other threads. */
	__atomic_store_n(&list->count, list->count + 1, __ATOMIC_RELAXED);
}

void dpa_poll_list_del(struct dpa_poll_list *list, struct dpa_db *db)
{
	if (db->poll_prev)
		db->poll_prev->poll_next = db->poll_next;
	else
		list->first = db->poll_next;
	if (db->poll_next)
		db->poll_next->poll_prev = db->poll_prev;
	db->poll_next = db->poll_prev = NULL;
	__atomic_store_n(&list->count, list->count - 1, __ATOMIC_RELAXED);
}

uint32_t dpa_poll_list_scan(struct dpa_poll_list *list)
{
	struct dpa_db *db;
	uint32_t n = 0, v;

	for (db = list->first; db; db = db->poll_next) {
		if (atomic_load_explicit(&db->state, memory_order_relaxed) != DPA_DB_ARMED)
			continue;
		/* The guest's store lands in the shared page with no exit. A
		 * changed value versus what the program last read is a write;
		 * the program re-reads the latest value, so only the final one
		 * of a run of writes matters (intermediate ones may coalesce). */
		v = dpa_db_read(db);
		if (v == db->last_seen)
			continue;
		/* Acquire: what the guest wrote before the doorbell (SQEs) is
		 * read after it; pairs with the host driver's wmb before its
		 * doorbell store. */
		atomic_thread_fence(memory_order_acquire);
		if (dpa_db_complete(db, v, true))
			n++;
	}
	return n;
}
