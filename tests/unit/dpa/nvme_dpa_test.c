/* tests/unit/dpa/nvme_dpa_test.c - the NVMe DPA program with the fake hw:
 * bind / unbind / DB value / MSI-X flows, back-pressure from a full to-Arm
 * queue, and a stress test (a writer rings thousands of doorbells across
 * many DBs; the Arm side must see the final value of every DB and never a
 * value that was not written) for trap and mmap delivery, fused and harts. */
#include "dpa/nvme_dpa.h"
#include "tests/unit/cunit_runner.h"
#include "tests/unit/dpa/fake_hw.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#define WAIT_MS 5000

struct env {
	struct dpa *dpa;
	struct hw_dev *dev;
	struct dpa_nvme_chan *ch;
	bool fused;
};

static void env_setup(struct env *e, unsigned int harts, enum hw_db_mode mode, uint32_t depth)
{
	e->fused = harts == 0;
	e->dpa = dpa_create(harts);
	CU_ASSERT_PTR_NOT_NULL_FATAL(e->dpa);
	e->dev = fake_hw_dev_create(mode);
	CU_ASSERT_PTR_NOT_NULL_FATAL(e->dev);
	e->ch = dpa_nvme_chan_create(e->dpa, -1, depth);
	CU_ASSERT_PTR_NOT_NULL_FATAL(e->ch);
}

static void env_teardown(struct env *e)
{
	CU_ASSERT_EQUAL(dpa_nvme_chan_destroy(e->ch), 0);
	CU_ASSERT_EQUAL(dpa_destroy(e->dpa), 0);
	fake_hw_dev_destroy(e->dev);
}

/* Receives one message from the DPA: in fused mode by running the program,
 * with harts by sleeping on the channel's eventfd (bounded). */
static bool env_recv(struct env *e, struct dpa_nvme_msg *m)
{
	struct pollfd pfd = {.fd = dpa_nvme_chan_fd(e->ch), .events = POLLIN};
	int i;

	for (i = 0; i < 1000; i++) {
		if (dpa_nvme_chan_recv(e->ch, m) == 1)
			return true;
		if (e->fused) {
			if (dpa_nvme_chan_poll(e->ch) == 0 && i > 2)
				return false;
			continue;
		}
		if (dpa_nvme_chan_arm(e->ch) == 0 && poll(&pfd, 1, WAIT_MS) != 1)
			return false;
		dpa_msgq_fd_clear(pfd.fd);
	}
	return false;
}

static void env_pump(struct env *e)
{
	if (e->fused)
		while (dpa_nvme_chan_poll(e->ch) == 1)
			;
}

static struct dpa_db *bind_db(struct env *e, uint32_t id, uint64_t cookie)
{
	struct dpa_db *db = dpa_db_create(dpa_nvme_chan_db_comp(e->ch), e->dev, id);
	struct dpa_nvme_msg m;

	CU_ASSERT_PTR_NOT_NULL_FATAL(db);
	CU_ASSERT_EQUAL(dpa_nvme_chan_bind_db(e->ch, db, cookie), 0);
	env_pump(e);
	CU_ASSERT_TRUE_FATAL(env_recv(e, &m));
	CU_ASSERT_EQUAL(m.type, DPA_NVME_MSG_BIND_DONE);
	CU_ASSERT_EQUAL(m.status, 0);
	CU_ASSERT_EQUAL(m.bind.cookie, cookie);
	CU_ASSERT_EQUAL(m.bind.db_handle, dpa_db_get_handle(db));
	return db;
}

static void unbind_db(struct env *e, struct dpa_db *db, uint64_t cookie)
{
	struct dpa_nvme_msg m;

	CU_ASSERT_EQUAL(dpa_db_stop(db), 0);
	CU_ASSERT_EQUAL(dpa_nvme_chan_unbind_db(e->ch, db, cookie), 0);
	env_pump(e);
	/* DB values sent before the unbind may still be queued: skip them. */
	do {
		CU_ASSERT_TRUE_FATAL(env_recv(e, &m));
	} while (m.type == DPA_NVME_MSG_DB_VALUE);
	CU_ASSERT_EQUAL(m.type, DPA_NVME_MSG_UNBIND_DONE);
	CU_ASSERT_EQUAL(m.status, 0);
	CU_ASSERT_EQUAL(m.bind.cookie, cookie);
	CU_ASSERT_EQUAL(dpa_db_destroy(db), 0);
}

static void flows(unsigned int harts)
{
	struct hw_msix_vector *v1, *v2;
	struct dpa_nvme_msg m;
	struct dpa_stats st;
	struct dpa_db *db;
	struct env e;

	env_setup(&e, harts, HW_DB_MODE_TRAP, 16);
	v1 = fake_hw_msix_create(1, 0);
	v2 = fake_hw_msix_create(2, 1);
	CU_ASSERT_PTR_NOT_NULL_FATAL(v1);
	CU_ASSERT_PTR_NOT_NULL_FATAL(v2);

	/* SQ create flow: bind -> BIND_DONE -> start -> first value. */
	db = bind_db(&e, 2, 0xc0ffee);
	fake_hw_db_write(e.dev, 2, 4);
	CU_ASSERT_EQUAL(dpa_db_start(db), 0);
	env_pump(&e);
	CU_ASSERT_TRUE_FATAL(env_recv(&e, &m));
	CU_ASSERT_EQUAL(m.type, DPA_NVME_MSG_DB_VALUE);
	CU_ASSERT_EQUAL(m.db.db_id, 2);
	CU_ASSERT_EQUAL(m.db.value, 4);
	CU_ASSERT_EQUAL(m.db.cookie, 0xc0ffee);
	fake_hw_db_write(e.dev, 2, 5);
	env_pump(&e);
	CU_ASSERT_TRUE_FATAL(env_recv(&e, &m));
	CU_ASSERT_EQUAL(m.type, DPA_NVME_MSG_DB_VALUE);
	CU_ASSERT_EQUAL(m.db.value, 5);

	/* Binding the same DB again is refused, reported in the reply. */
	CU_ASSERT_EQUAL(dpa_nvme_chan_bind_db(e.ch, db, 1), 0);
	env_pump(&e);
	CU_ASSERT_TRUE_FATAL(env_recv(&e, &m));
	CU_ASSERT_EQUAL(m.type, DPA_NVME_MSG_BIND_DONE);
	CU_ASSERT_EQUAL(m.status, -EALREADY);

	/* MSI-X: requests sent together are coalesced per vector. */
	CU_ASSERT_EQUAL(dpa_nvme_chan_raise_msix(e.ch, NULL), -EINVAL);
	if (e.fused) {
		CU_ASSERT_EQUAL(dpa_nvme_chan_raise_msix(e.ch, v1), 0);
		CU_ASSERT_EQUAL(dpa_nvme_chan_raise_msix(e.ch, v1), 0);
		CU_ASSERT_EQUAL(dpa_nvme_chan_raise_msix(e.ch, v2), 0);
		CU_ASSERT_EQUAL(dpa_nvme_chan_raise_msix(e.ch, v1), 0);
		env_pump(&e);
		CU_ASSERT_EQUAL(fake_hw_msix_raised(v1), 1);
		CU_ASSERT_EQUAL(fake_hw_msix_raised(v2), 1);
		dpa_thread_get_stats(dpa_nvme_chan_thread(e.ch), &st);
		CU_ASSERT_EQUAL(st.msix_raised, 1);
		CU_ASSERT_EQUAL(st.msix_pended, 1);
	} else {
		CU_ASSERT_EQUAL(dpa_nvme_chan_raise_msix(e.ch, v1), 0);
	}

	/* A request type that goes the other way is refused. */
	memset(&m, 0, sizeof(m));
	m.type = DPA_NVME_MSG_DB_VALUE;
	CU_ASSERT_EQUAL(dpa_nvme_chan_send(e.ch, &m), -EINVAL);

	/* Delete flow; the channel refuses to go while a DB exists. */
	CU_ASSERT_EQUAL(dpa_nvme_chan_destroy(e.ch), -EBUSY);
	unbind_db(&e, db, 0xc0ffee);
	if (!e.fused)
		CU_ASSERT_TRUE(fake_hw_msix_raised(v1) >= 1);
	dpa_thread_get_stats(dpa_nvme_chan_thread(e.ch), &st);
	CU_ASSERT_TRUE(st.msgs_received >= 4);
	CU_ASSERT_TRUE(st.msgs_sent >= 4);
	CU_ASSERT_TRUE(st.db_completions >= 2);
	env_teardown(&e);
	fake_hw_msix_free(v1);
	fake_hw_msix_free(v2);
}

static void test_flows_fused(void)
{
	flows(0);
}

static void test_flows_hart(void)
{
	flows(1);
}

static void test_unbind_unknown(void)
{
	struct dpa_nvme_msg m;
	struct dpa_db *db;
	struct env e;

	env_setup(&e, 0, HW_DB_MODE_TRAP, 4);
	db = dpa_db_create(dpa_nvme_chan_db_comp(e.ch), e.dev, 1);
	CU_ASSERT_PTR_NOT_NULL_FATAL(db);
	CU_ASSERT_EQUAL(dpa_nvme_chan_unbind_db(e.ch, db, 9), 0);
	env_pump(&e);
	CU_ASSERT_TRUE_FATAL(env_recv(&e, &m));
	CU_ASSERT_EQUAL(m.type, DPA_NVME_MSG_UNBIND_DONE);
	CU_ASSERT_EQUAL(m.status, -ENOENT);
	CU_ASSERT_EQUAL(dpa_db_destroy(db), 0);
	env_teardown(&e);
}

/* A to-Arm queue of 2 slots that the Arm does not drain: replies are held
 * in order, DB values stay dirty, and everything arrives once drained -
 * each DB's latest value, never one that was not written. */
static void test_backpressure(void)
{
	struct dpa_db *db[4];
	struct dpa_nvme_msg m;
	uint32_t last[4] = {0};
	int i, n_done = 0;
	struct env e;

	env_setup(&e, 0, HW_DB_MODE_TRAP, 2);
	for (i = 0; i < 4; i++) {
		db[i] = dpa_db_create(dpa_nvme_chan_db_comp(e.ch), e.dev, (uint32_t)i);
		CU_ASSERT_PTR_NOT_NULL_FATAL(db[i]);
	}
	/* Two binds fit the to-DPA queue; their replies fill the to-Arm one. */
	CU_ASSERT_EQUAL(dpa_nvme_chan_bind_db(e.ch, db[0], 0), 0);
	CU_ASSERT_EQUAL(dpa_nvme_chan_bind_db(e.ch, db[1], 1), 0);
	CU_ASSERT_EQUAL(dpa_nvme_chan_bind_db(e.ch, db[2], 2), -EAGAIN);
	env_pump(&e);
	CU_ASSERT_EQUAL(dpa_nvme_chan_bind_db(e.ch, db[2], 2), 0);
	CU_ASSERT_EQUAL(dpa_nvme_chan_bind_db(e.ch, db[3], 3), 0);
	env_pump(&e); /* the third reply is held */
	for (i = 0; i < 4; i++) {
		CU_ASSERT_TRUE_FATAL(env_recv(&e, &m));
		CU_ASSERT_EQUAL(m.type, DPA_NVME_MSG_BIND_DONE);
		CU_ASSERT_EQUAL(m.status, 0);
		CU_ASSERT_EQUAL(m.bind.cookie, (uint64_t)i); /* in order */
	}
	for (i = 0; i < 4; i++)
		CU_ASSERT_EQUAL(dpa_db_start(db[i]), 0);
	env_pump(&e);
	/* Many writes while the Arm does not drain. */
	for (uint32_t v = 1; v <= 100; v++) {
		fake_hw_db_write(e.dev, v % 4, v);
		env_pump(&e);
	}
	while (env_recv(&e, &m)) {
		CU_ASSERT_EQUAL_FATAL(m.type, DPA_NVME_MSG_DB_VALUE);
		/* A written value, or 0: the value before any write. */
		CU_ASSERT_TRUE(m.db.value == 0 || m.db.value % 4 == m.db.db_id);
		CU_ASSERT_TRUE(m.db.value >= last[m.db.db_id]);
		last[m.db.db_id] = m.db.value;
		env_pump(&e);
	}
	for (i = 0; i < 4; i++) {
		CU_ASSERT_EQUAL(last[i], (uint32_t)(i ? 96 + i : 100));
		n_done++;
	}
	CU_ASSERT_EQUAL(n_done, 4);
	for (i = 0; i < 4; i++)
		unbind_db(&e, db[i], (uint64_t)i);
	env_teardown(&e);
}

/* ------------------------------------------------------------------------ */
/* Stress.                                                                  */

#define STRESS_DBS 64
#define STRESS_ROUNDS 1000 /* writes per DB: 64,000 doorbells */
#define STRESS_PACE 20	   /* pause instructions between writes */

struct writer {
	struct hw_dev *dev;
	_Atomic bool done;
};

/* Value k of DB d: k << 8 | d, so any value names its DB and its round
 * (0 is the value before the first write, delivered when the DB starts). */
static uint32_t stress_value(uint32_t d, uint32_t k)
{
	return k << 8 | d;
}

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	uint32_t k, d;

	/* Plays the device loop thread (trap) or the guest's stores (mmap). */
	for (k = 1; k <= STRESS_ROUNDS; k++) {
		for (d = 0; d < STRESS_DBS; d++) {
			fake_hw_db_write(w->dev, d, stress_value(d, k));
			/* Pacing (not synchronisation): lets deliveries interleave
			 * with writes instead of coalescing them all. */
			for (int p = 0; p < STRESS_PACE; p++)
				__builtin_ia32_pause();
		}
	}
	atomic_store(&w->done, true);
	return NULL;
}

static void stress(unsigned int harts, enum hw_db_mode mode)
{
	struct dpa_db *db[STRESS_DBS];
	uint32_t last[STRESS_DBS] = {0};
	struct writer w = {0};
	struct dpa_nvme_msg m;
	int i, bad = 0, final_seen = 0, idle = 0, n_msgs = 0;
	struct pollfd pfd[2];
	pthread_t tid;
	struct env e;

	env_setup(&e, harts, mode, 64);
	for (i = 0; i < STRESS_DBS; i++)
		db[i] = bind_db(&e, (uint32_t)i, (uint64_t)i);
	for (i = 0; i < STRESS_DBS; i++)
		CU_ASSERT_EQUAL(dpa_db_start(db[i]), 0);
	w.dev = e.dev;
	CU_ASSERT_EQUAL_FATAL(pthread_create(&tid, NULL, writer_main, &w), 0);
	pfd[0].fd = dpa_nvme_chan_fd(e.ch);
	pfd[0].events = POLLIN;
	pfd[1].fd = e.fused ? dpa_thread_event_fd(dpa_nvme_chan_thread(e.ch)) : -1;
	pfd[1].events = POLLIN;
	/* The Arm side: consume until every DB showed its final value. The wait
	 * is bounded: `idle` counts empty 1 ms waits after the writer ended. */
	while (final_seen < STRESS_DBS && idle < WAIT_MS) {
		if (e.fused)
			dpa_nvme_chan_poll(e.ch);
		if (dpa_nvme_chan_recv(e.ch, &m) != 1) {
			if (dpa_nvme_chan_arm(e.ch) == 0)
				poll(pfd, 2, 1);
			dpa_msgq_fd_clear(pfd[0].fd);
			if (atomic_load(&w.done))
				idle++;
			continue;
		}
		if (m.type != DPA_NVME_MSG_DB_VALUE || m.db.db_id >= STRESS_DBS ||
		    m.db.cookie != m.db.db_id ||
		    (m.db.value && (m.db.value & 0xff) != m.db.db_id) ||
		    (m.db.value >> 8) > STRESS_ROUNDS || m.db.value < last[m.db.db_id]) {
			bad++;
			continue;
		}
		last[m.db.db_id] = m.db.value;
		n_msgs++;
		if (m.db.value == stress_value(m.db.db_id, STRESS_ROUNDS))
			final_seen++;
	}
	pthread_join(tid, NULL);
	CU_ASSERT_EQUAL(bad, 0);
	CU_ASSERT_EQUAL(final_seen, STRESS_DBS);
	CU_ASSERT_TRUE(n_msgs >= STRESS_DBS);
	{
		/* Every wake is counted, the fused poller's own (mmap) ones too: each activation
		 * but the first (a thread starts scheduled) follows a kick. */
		struct dpa_stats st;

		dpa_thread_get_stats(dpa_nvme_chan_thread(e.ch), &st);
		CU_ASSERT_TRUE(st.activations >= 1);
		CU_ASSERT_TRUE(st.kicks + 1 >= st.activations);
	}
	printf("(%d DB values) ", n_msgs);
	for (i = 0; i < STRESS_DBS; i++)
		unbind_db(&e, db[i], (uint64_t)i);
	env_teardown(&e);
}

static void test_stress_trap_fused(void)
{
	stress(0, HW_DB_MODE_TRAP);
}

static void test_stress_mmap_fused(void)
{
	stress(0, HW_DB_MODE_MMAP);
}

static void test_stress_trap_hart(void)
{
	stress(1, HW_DB_MODE_TRAP);
}

static void test_stress_mmap_hart(void)
{
	stress(1, HW_DB_MODE_MMAP);
}

CUNIT_SUITE(dpa_nvme, NULL, NULL, {"flows_fused", test_flows_fused},
	    {"flows_hart", test_flows_hart}, {"unbind_unknown", test_unbind_unknown},
	    {"backpressure", test_backpressure}, {"stress_trap_fused", test_stress_trap_fused},
	    {"stress_mmap_fused", test_stress_mmap_fused},
	    {"stress_trap_hart", test_stress_trap_hart},
	    {"stress_mmap_hart", test_stress_mmap_hart})
