/* tests/unit/dpa/db_comp_test.c - DB completion contexts in fused mode (the
 * test thread is the consumer, so it runs the program side too): bind and
 * unbind rules, completion / ack / notification semantics including a write
 * between ack and re-arm, trap and mmap delivery. */
#include "dpa/dpa.h"
#include "tests/unit/cunit_runner.h"
#include "tests/unit/dpa/fake_hw.h"

#include <errno.h>
#include <poll.h>

struct count_arg {
	unsigned int activations;
};

static void count_prog(struct dpa_thread *thread, void *arg)
{
	struct count_arg *a = arg;

	a->activations++;
}

struct fixture {
	struct dpa *dpa;
	struct hw_dev *dev;
	struct dpa_thread *thread;
	struct dpa_db_comp *comp;
	struct count_arg *arg;
};

static void fixture_setup(struct fixture *f, enum hw_db_mode mode)
{
	struct count_arg a = {0};

	f->dpa = dpa_create(0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(f->dpa);
	f->dev = fake_hw_dev_create(mode);
	CU_ASSERT_PTR_NOT_NULL_FATAL(f->dev);
	f->thread = dpa_thread_create(f->dpa, count_prog, &a, sizeof(a));
	CU_ASSERT_PTR_NOT_NULL_FATAL(f->thread);
	f->arg = dpa_thread_arg(f->thread);
	f->comp = dpa_db_comp_create(f->thread);
	CU_ASSERT_PTR_NOT_NULL_FATAL(f->comp);
	CU_ASSERT_EQUAL_FATAL(dpa_thread_run(f->thread, -1), 0);
	/* The first activation that dpa_thread_run queues. */
	CU_ASSERT_EQUAL(dpa_thread_poll(f->thread), 1);
	CU_ASSERT_EQUAL(f->arg->activations, 1);
}

static void fixture_teardown(struct fixture *f)
{
	CU_ASSERT_EQUAL(dpa_db_comp_destroy(f->comp), 0);
	CU_ASSERT_EQUAL(dpa_thread_destroy(f->thread), 0);
	CU_ASSERT_EQUAL(dpa_destroy(f->dpa), 0);
	fake_hw_dev_destroy(f->dev);
}

static bool readable(int fd)
{
	struct pollfd pfd = {.fd = fd, .events = POLLIN};

	return poll(&pfd, 1, 0) == 1;
}

static void test_bind_unbind_rules(void)
{
	struct fixture f;
	struct dpa_thread *other;
	struct dpa_db_comp *other_comp;
	struct dpa_db *db, *foreign;
	struct dpa_db_comp_elem e;

	fixture_setup(&f, HW_DB_MODE_TRAP);
	CU_ASSERT_PTR_NULL(dpa_db_comp_create(f.thread)); /* one per thread */
	CU_ASSERT_EQUAL(errno, EEXIST);
	other = dpa_thread_create(f.dpa, count_prog, NULL, 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(other);
	other_comp = dpa_db_comp_create(other);
	CU_ASSERT_PTR_NOT_NULL_FATAL(other_comp);

	db = dpa_db_create(f.comp, f.dev, 3);
	CU_ASSERT_PTR_NOT_NULL_FATAL(db);
	CU_ASSERT_PTR_NULL(dpa_db_create(f.comp, f.dev, 3)); /* hw refuses twice */
	CU_ASSERT_EQUAL(errno, EEXIST);
	foreign = dpa_db_create(other_comp, f.dev, 4);
	CU_ASSERT_PTR_NOT_NULL_FATAL(foreign);
	CU_ASSERT_EQUAL(dpa_db_id(db), 3);
	CU_ASSERT_FALSE(dpa_db_is_polled(db));
	CU_ASSERT_PTR_NOT_NULL(dpa_db_hw(db));

	CU_ASSERT_EQUAL(dpa_db_comp_bind(f.comp, 0, 0), -EINVAL);
	CU_ASSERT_EQUAL(dpa_db_comp_bind(f.comp, dpa_db_get_handle(foreign), 0), -EINVAL);
	CU_ASSERT_EQUAL(dpa_db_comp_unbind(f.comp, dpa_db_get_handle(db)), -ENOENT);
	CU_ASSERT_EQUAL(dpa_db_comp_bind(f.comp, dpa_db_get_handle(db), 7), 0);
	CU_ASSERT_EQUAL(dpa_db_comp_bind(f.comp, dpa_db_get_handle(db), 7), -EALREADY);
	CU_ASSERT_EQUAL(dpa_db_destroy(db), -EBUSY);	       /* still bound */
	CU_ASSERT_EQUAL(dpa_db_comp_destroy(f.comp), -EBUSY);  /* DBs exist */
	CU_ASSERT_EQUAL(dpa_thread_destroy(f.thread), -EBUSY); /* has a context */

	/* Fetched but unacked completions block the unbind (DOCA: ack first). */
	CU_ASSERT_EQUAL(dpa_db_start(db), 0);
	CU_ASSERT_EQUAL(dpa_db_comp_get_completion(f.comp, &e), 1);
	CU_ASSERT_EQUAL(e.user, 7);
	CU_ASSERT_EQUAL(dpa_db_comp_unbind(f.comp, dpa_db_get_handle(db)), -EBUSY);
	CU_ASSERT_EQUAL(dpa_db_comp_ack(f.comp, 2), -EINVAL); /* more than fetched */
	CU_ASSERT_EQUAL(dpa_db_comp_ack(f.comp, 1), 0);
	CU_ASSERT_EQUAL(dpa_db_stop(db), 0);
	CU_ASSERT_EQUAL(dpa_db_comp_unbind(f.comp, dpa_db_get_handle(db)), 0);
	CU_ASSERT_EQUAL(dpa_db_comp_unbind(f.comp, dpa_db_get_handle(db)), -ENOENT);
	CU_ASSERT_EQUAL(dpa_db_comp_num_dbs(f.comp), 1);
	CU_ASSERT_EQUAL(dpa_db_destroy(db), 0);
	CU_ASSERT_EQUAL(dpa_db_comp_num_dbs(f.comp), 0);
	CU_ASSERT_EQUAL(dpa_db_destroy(foreign), 0);
	CU_ASSERT_EQUAL(dpa_db_comp_destroy(other_comp), 0);
	CU_ASSERT_EQUAL(dpa_thread_destroy(other), 0);
	fixture_teardown(&f);
}

static void test_trap_completion_semantics(void)
{
	struct fixture f;
	struct dpa_db_comp_elem e;
	struct dpa_db *db;
	struct dpa_stats st;
	int efd;

	fixture_setup(&f, HW_DB_MODE_TRAP);
	efd = dpa_thread_event_fd(f.thread);
	CU_ASSERT_TRUE_FATAL(efd >= 0);
	db = dpa_db_create(f.comp, f.dev, 1);
	CU_ASSERT_PTR_NOT_NULL_FATAL(db);
	fake_hw_db_write(f.dev, 1, 5); /* stopped and unbound: stored only */
	CU_ASSERT_EQUAL(fake_hw_notifies(f.dev), 0);
	CU_ASSERT_EQUAL(dpa_db_comp_bind(f.comp, dpa_db_get_handle(db), 0), 0);
	CU_ASSERT_FALSE(readable(efd));
	CU_ASSERT_EQUAL(dpa_thread_poll(f.thread), 0);

	/* Start produces a completion at once with the current value. */
	CU_ASSERT_EQUAL(dpa_db_start(db), 0);
	CU_ASSERT_TRUE(readable(efd));
	CU_ASSERT_EQUAL(dpa_thread_poll(f.thread), 1);
	CU_ASSERT_EQUAL(f.arg->activations, 2);
	CU_ASSERT_FALSE(readable(efd));
	CU_ASSERT_EQUAL_FATAL(dpa_db_comp_get_completion(f.comp, &e), 1);
	CU_ASSERT_PTR_EQUAL(e.db, db);
	CU_ASSERT_EQUAL(e.db_id, 1);
	CU_ASSERT_EQUAL(e.value, 5);
	CU_ASSERT_EQUAL(dpa_db_comp_get_completion(f.comp, &e), 0);

	/* Not re-armed: writes are stored, no completion, no activation. */
	fake_hw_db_write(f.dev, 1, 6);
	fake_hw_db_write(f.dev, 1, 7);
	CU_ASSERT_EQUAL(dpa_db_comp_get_completion(f.comp, &e), 0);
	CU_ASSERT_EQUAL(dpa_db_comp_ack(f.comp, 1), 0);

	/* The context is disarmed too: re-arm it, then the DB, then read. */
	dpa_db_comp_request_notification(f.comp);
	CU_ASSERT_FALSE(readable(efd));
	dpa_db_request_notification(db);
	CU_ASSERT_EQUAL(dpa_db_get_value(db), 7);
	fake_hw_db_write(f.dev, 1, 8);
	CU_ASSERT_TRUE(readable(efd));
	CU_ASSERT_EQUAL(dpa_thread_poll(f.thread), 1);
	CU_ASSERT_EQUAL(dpa_db_comp_get_completion(f.comp, &e), 1);
	CU_ASSERT_EQUAL(e.value, 8);
	CU_ASSERT_EQUAL(dpa_db_comp_ack(f.comp, 1), 0);

	dpa_thread_get_stats(f.thread, &st);
	CU_ASSERT_EQUAL(st.db_completions, 2);
	CU_ASSERT_EQUAL(st.activations, 3);

	CU_ASSERT_EQUAL(dpa_db_stop(db), 0);
	CU_ASSERT_EQUAL(dpa_db_comp_unbind(f.comp, dpa_db_get_handle(db)), 0);
	CU_ASSERT_EQUAL(dpa_db_destroy(db), 0);
	fixture_teardown(&f);
}

/* The race of the issue: the driver writes after the program acked but
 * before it re-armed. The write finds the DB disarmed (no completion), and
 * the read after re-arming returns it: nothing is lost. A write after the
 * re-arm completes again. The same holds for the context's arming. */
static void test_write_between_ack_and_rearm(void)
{
	struct fixture f;
	struct dpa_db_comp_elem e;
	struct dpa_db *a, *b;
	int efd;

	fixture_setup(&f, HW_DB_MODE_TRAP);
	efd = dpa_thread_event_fd(f.thread);
	a = dpa_db_create(f.comp, f.dev, 10);
	b = dpa_db_create(f.comp, f.dev, 11);
	CU_ASSERT_PTR_NOT_NULL_FATAL(a);
	CU_ASSERT_PTR_NOT_NULL_FATAL(b);
	CU_ASSERT_EQUAL(dpa_db_comp_bind(f.comp, dpa_db_get_handle(a), 0), 0);
	CU_ASSERT_EQUAL(dpa_db_comp_bind(f.comp, dpa_db_get_handle(b), 1), 0);
	CU_ASSERT_EQUAL(dpa_db_start(a), 0);
	CU_ASSERT_EQUAL(dpa_db_start(b), 0);
	CU_ASSERT_EQUAL(dpa_thread_poll(f.thread), 1);
	CU_ASSERT_EQUAL(dpa_db_comp_get_completion(f.comp, &e), 1);
	CU_ASSERT_EQUAL(dpa_db_comp_get_completion(f.comp, &e), 1);
	CU_ASSERT_EQUAL(dpa_db_comp_ack(f.comp, 2), 0);

	/* A write lands after the ack, before any re-arm. */
	fake_hw_db_write(f.dev, 10, 42);
	CU_ASSERT_FALSE(readable(efd));
	dpa_db_comp_request_notification(f.comp);
	dpa_db_request_notification(a);
	CU_ASSERT_EQUAL(dpa_db_get_value(a), 42); /* seen by the read */
	dpa_db_request_notification(b);
	CU_ASSERT_EQUAL(dpa_db_get_value(b), 0);

	/* Context race: a completion produced while the context is disarmed
	 * (the program is still working) kicks at once when it re-arms. */
	fake_hw_db_write(f.dev, 11, 9);
	CU_ASSERT_TRUE(readable(efd)); /* context was armed: kicked */
	CU_ASSERT_EQUAL(dpa_thread_poll(f.thread), 1);
	fake_hw_db_write(f.dev, 10, 43); /* the context is now disarmed */
	CU_ASSERT_FALSE(readable(efd));
	dpa_db_comp_request_notification(f.comp); /* re-check after arming */
	CU_ASSERT_EQUAL(dpa_thread_poll(f.thread), 1);
	CU_ASSERT_EQUAL(dpa_db_comp_get_completion(f.comp, &e), 1);
	CU_ASSERT_EQUAL(e.db_id, 11);
	CU_ASSERT_EQUAL(dpa_db_comp_get_completion(f.comp, &e), 1);
	CU_ASSERT_EQUAL(e.db_id, 10);
	CU_ASSERT_EQUAL(e.value, 43);
	CU_ASSERT_EQUAL(dpa_db_comp_get_completion(f.comp, &e), 0);
	CU_ASSERT_EQUAL(dpa_db_comp_ack(f.comp, 2), 0);

	dpa_db_stop(a);
	dpa_db_stop(b);
	CU_ASSERT_EQUAL(dpa_db_comp_unbind(f.comp, dpa_db_get_handle(a)), 0);
	CU_ASSERT_EQUAL(dpa_db_comp_unbind(f.comp, dpa_db_get_handle(b)), 0);
	dpa_db_destroy(a);
	dpa_db_destroy(b);
	fixture_teardown(&f);
}

static void test_unbind_drops_pending(void)
{
	struct fixture f;
	struct dpa_db_comp_elem e;
	struct dpa_db *db;

	fixture_setup(&f, HW_DB_MODE_TRAP);
	db = dpa_db_create(f.comp, f.dev, 2);
	CU_ASSERT_PTR_NOT_NULL_FATAL(db);
	CU_ASSERT_EQUAL(dpa_db_comp_bind(f.comp, dpa_db_get_handle(db), 0), 0);
	CU_ASSERT_EQUAL(dpa_db_start(db), 0); /* one completion, not fetched */
	CU_ASSERT_EQUAL(dpa_db_stop(db), 0);
	CU_ASSERT_EQUAL(dpa_db_comp_unbind(f.comp, dpa_db_get_handle(db)), 0);
	CU_ASSERT_EQUAL(dpa_db_comp_get_completion(f.comp, &e), 0);
	/* Rebinding works and starts clean. */
	CU_ASSERT_EQUAL(dpa_db_comp_bind(f.comp, dpa_db_get_handle(db), 0), 0);
	CU_ASSERT_EQUAL(dpa_db_comp_get_completion(f.comp, &e), 0);
	CU_ASSERT_EQUAL(dpa_db_start(db), 0);
	CU_ASSERT_EQUAL(dpa_db_comp_get_completion(f.comp, &e), 1);
	CU_ASSERT_EQUAL(dpa_db_comp_ack(f.comp, 1), 0);
	dpa_db_stop(db);
	CU_ASSERT_EQUAL(dpa_db_comp_unbind(f.comp, dpa_db_get_handle(db)), 0);
	CU_ASSERT_EQUAL(dpa_db_destroy(db), 0);
	CU_ASSERT_EQUAL(dpa_thread_poll(f.thread), 1); /* the start's kick */
	fixture_teardown(&f);
}

static void test_mmap_polling(void)
{
	struct fixture f;
	struct dpa_db_comp_elem e;
	struct dpa_db *db;

	fixture_setup(&f, HW_DB_MODE_MMAP);
	db = dpa_db_create(f.comp, f.dev, 5);
	CU_ASSERT_PTR_NOT_NULL_FATAL(db);
	CU_ASSERT_TRUE(dpa_db_is_polled(db));
	CU_ASSERT_FALSE(dpa_thread_has_polled_dbs(f.thread));
	CU_ASSERT_EQUAL(dpa_db_comp_bind(f.comp, dpa_db_get_handle(db), 0), 0);
	CU_ASSERT_TRUE(dpa_thread_has_polled_dbs(f.thread));
	CU_ASSERT_EQUAL(dpa_db_start(db), 0);
	CU_ASSERT_EQUAL(dpa_thread_poll(f.thread), 1);
	CU_ASSERT_EQUAL(dpa_db_comp_get_completion(f.comp, &e), 1);
	CU_ASSERT_EQUAL(dpa_db_comp_ack(f.comp, 1), 0);
	dpa_db_comp_request_notification(f.comp);
	dpa_db_request_notification(db);
	CU_ASSERT_EQUAL(dpa_db_get_value(db), 0);
	/* Nothing changed: polling finds nothing. */
	CU_ASSERT_EQUAL(dpa_thread_poll(f.thread), 0);
	/* Guest stores (no notify in mmap mode): the poll sees the last one. */
	fake_hw_db_write(f.dev, 5, 1);
	fake_hw_db_write(f.dev, 5, 2);
	CU_ASSERT_EQUAL(fake_hw_notifies(f.dev), 0);
	CU_ASSERT_EQUAL(dpa_thread_poll(f.thread), 1);
	CU_ASSERT_EQUAL(dpa_db_comp_get_completion(f.comp, &e), 1);
	CU_ASSERT_EQUAL(e.value, 2);
	CU_ASSERT_EQUAL(dpa_db_comp_ack(f.comp, 1), 0);
	/* Written between ack and re-arm: the read after re-arm has it. */
	fake_hw_db_write(f.dev, 5, 3);
	CU_ASSERT_EQUAL(dpa_thread_poll(f.thread), 0); /* disarmed */
	dpa_db_comp_request_notification(f.comp);
	dpa_db_request_notification(db);
	CU_ASSERT_EQUAL(dpa_db_get_value(db), 3);
	CU_ASSERT_EQUAL(dpa_thread_poll(f.thread), 0); /* already read */
	CU_ASSERT_EQUAL(dpa_db_comp_unbind(f.comp, dpa_db_get_handle(db)), 0);
	CU_ASSERT_FALSE(dpa_thread_has_polled_dbs(f.thread));
	CU_ASSERT_EQUAL(dpa_db_destroy(db), 0);
	fixture_teardown(&f);
}

static void test_fused_kick_and_stop(void)
{
	struct fixture f;
	int efd;

	fixture_setup(&f, HW_DB_MODE_TRAP);
	efd = dpa_thread_event_fd(f.thread);
	CU_ASSERT_EQUAL(dpa_thread_hart(f.thread), -1);
	CU_ASSERT_EQUAL(dpa_thread_run(f.thread, -1), -EALREADY);
	dpa_thread_kick(f.thread);
	dpa_thread_kick(f.thread); /* coalesces into one activation */
	CU_ASSERT_TRUE(readable(efd));
	CU_ASSERT_EQUAL(dpa_thread_poll(f.thread), 1);
	CU_ASSERT_EQUAL(dpa_thread_poll(f.thread), 0);
	CU_ASSERT_FALSE(readable(efd));
	CU_ASSERT_EQUAL(f.arg->activations, 2);
	dpa_thread_stop(f.thread);
	dpa_thread_kick(f.thread);
	CU_ASSERT_EQUAL(dpa_thread_poll(f.thread), -EINVAL);
	CU_ASSERT_EQUAL(f.arg->activations, 2);
	fixture_teardown(&f);
}

CUNIT_SUITE(dpa_db_comp, NULL, NULL, {"bind_unbind_rules", test_bind_unbind_rules},
	    {"trap_completion_semantics", test_trap_completion_semantics},
	    {"write_between_ack_and_rearm", test_write_between_ack_and_rearm},
	    {"unbind_drops_pending", test_unbind_drops_pending},
	    {"mmap_polling", test_mmap_polling}, {"fused_kick_and_stop", test_fused_kick_and_stop})
