/* tests/unit/dpa/msgq_test.c - message queues: ordering, full and empty,
 * wrap-around, completions, and SPSC under two threads with a checksum. */
#include "dpa/dpa.h"
#include "tests/unit/cunit_runner.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

struct test_msg {
	uint64_t seq;
	uint64_t payload[3];
};

static struct dpa_msgq *msgq_new(struct dpa *dpa, uint32_t depth)
{
	struct dpa_msgq_config cfg = {.msg_size = sizeof(struct test_msg), .depth = depth};

	return dpa_msgq_create(dpa, &cfg);
}

static bool fd_readable(int fd, int timeout_ms)
{
	struct pollfd pfd = {.fd = fd, .events = POLLIN};

	return poll(&pfd, 1, timeout_ms) == 1;
}

static void test_config_checks(void)
{
	struct dpa *dpa = dpa_create(0);
	struct dpa_msgq_config cfg = {.msg_size = 32, .depth = 3};

	CU_ASSERT_PTR_NOT_NULL_FATAL(dpa);
	CU_ASSERT_PTR_NULL(dpa_msgq_create(dpa, &cfg)); /* not a power of two */
	CU_ASSERT_EQUAL(errno, EINVAL);
	cfg.depth = 1;
	CU_ASSERT_PTR_NULL(dpa_msgq_create(dpa, &cfg));
	cfg.depth = 8;
	cfg.msg_size = 12; /* not a multiple of 8 */
	CU_ASSERT_PTR_NULL(dpa_msgq_create(dpa, &cfg));
	cfg.msg_size = DPA_MSGQ_MAX_MSG_SIZE + 8;
	CU_ASSERT_PTR_NULL(dpa_msgq_create(dpa, &cfg));
	cfg.msg_size = 4;
	CU_ASSERT_PTR_NULL(dpa_msgq_create(dpa, &cfg));
	cfg.msg_size = 64;
	cfg.depth = DPA_MSGQ_MAX_DEPTH * 2;
	CU_ASSERT_PTR_NULL(dpa_msgq_create(dpa, &cfg));
	CU_ASSERT_EQUAL(dpa_destroy(dpa), 0);
}

static void test_order_full_empty(void)
{
	struct dpa *dpa = dpa_create(0);
	struct dpa_msgq *q;
	struct test_msg m = {0}, r;
	uint64_t i;

	CU_ASSERT_PTR_NOT_NULL_FATAL(dpa);
	q = msgq_new(dpa, 8);
	CU_ASSERT_PTR_NOT_NULL_FATAL(q);
	CU_ASSERT_EQUAL(dpa_msgq_depth(q), 8);
	CU_ASSERT_EQUAL(dpa_msgq_msg_size(q), sizeof(m));
	CU_ASSERT_EQUAL(dpa_msgq_recv(q, &r), 0); /* empty */
	for (i = 0; i < 8; i++) {
		m.seq = i;
		m.payload[2] = ~i;
		CU_ASSERT_EQUAL(dpa_msgq_send(q, &m), 0);
	}
	m.seq = 99;
	CU_ASSERT_EQUAL(dpa_msgq_send(q, &m), -EAGAIN); /* full */
	for (i = 0; i < 8; i++) {
		CU_ASSERT_EQUAL(dpa_msgq_recv(q, &r), 1);
		CU_ASSERT_EQUAL(r.seq, i);
		CU_ASSERT_EQUAL(r.payload[2], ~i);
	}
	CU_ASSERT_EQUAL(dpa_msgq_recv(q, &r), 0);
	/* The destroy of an instance with a live queue is refused. */
	CU_ASSERT_EQUAL(dpa_destroy(dpa), -EBUSY);
	dpa_msgq_destroy(q);
	CU_ASSERT_EQUAL(dpa_destroy(dpa), 0);
}

static void test_wrap_around(void)
{
	struct dpa *dpa = dpa_create(0);
	struct dpa_msgq *q;
	struct test_msg m = {0}, r;
	uint64_t sent = 0, got = 0;
	int round, k;

	CU_ASSERT_PTR_NOT_NULL_FATAL(dpa);
	q = msgq_new(dpa, 4);
	CU_ASSERT_PTR_NOT_NULL_FATAL(q);
	/* Uneven batches walk the indices around the ring many times. */
	for (round = 0; round < 1000; round++) {
		for (k = 0; k < 1 + round % 4; k++) {
			m.seq = sent;
			if (dpa_msgq_send(q, &m) == 0)
				sent++;
		}
		for (k = 0; k < 1 + (round + 1) % 3; k++) {
			if (dpa_msgq_recv(q, &r) == 1) {
				CU_ASSERT_EQUAL_FATAL(r.seq, got);
				got++;
			}
		}
	}
	while (dpa_msgq_recv(q, &r) == 1) {
		CU_ASSERT_EQUAL_FATAL(r.seq, got);
		got++;
	}
	CU_ASSERT_EQUAL(got, sent);
	CU_ASSERT_TRUE(sent > 1000);
	dpa_msgq_destroy(q);
	CU_ASSERT_EQUAL(dpa_destroy(dpa), 0);
}

/* The arming and firing rules, the same whether the two sides are two threads or one (fused
 * mode's single_thread queues, which leave the barriers out). */
static void arm_side_completions(bool single_thread)
{
	struct dpa *dpa = dpa_create(0);
	struct dpa_msgq_config cfg = {.msg_size = sizeof(struct test_msg), .depth = 2,
				      .single_thread = single_thread};
	struct dpa_msgq *q;
	struct test_msg m = {0}, r;
	int cfd, pfd;

	CU_ASSERT_PTR_NOT_NULL_FATAL(dpa);
	q = dpa_msgq_create(dpa, &cfg);
	CU_ASSERT_PTR_NOT_NULL_FATAL(q);
	cfd = dpa_msgq_consumer_fd(q);
	pfd = dpa_msgq_producer_fd(q);
	CU_ASSERT_TRUE_FATAL(cfd >= 0 && pfd >= 0);
	CU_ASSERT_FALSE(fd_readable(cfd, 0));
	/* Armed at creation: the first send signals the consumer once. */
	CU_ASSERT_EQUAL(dpa_msgq_send(q, &m), 0);
	CU_ASSERT_TRUE(fd_readable(cfd, 0));
	dpa_msgq_fd_clear(cfd);
	CU_ASSERT_EQUAL(dpa_msgq_send(q, &m), 0);
	CU_ASSERT_FALSE(fd_readable(cfd, 0)); /* not re-armed */
	/* Arming with messages waiting says "do not sleep". */
	CU_ASSERT_EQUAL(dpa_msgq_consumer_arm(q), -EAGAIN);
	/* Full: the producer arms and is woken by the next recv. */
	CU_ASSERT_EQUAL(dpa_msgq_send(q, &m), -EAGAIN);
	CU_ASSERT_EQUAL(dpa_msgq_recv(q, &r), 1); /* fires the initial arming */
	dpa_msgq_fd_clear(pfd);
	CU_ASSERT_EQUAL(dpa_msgq_producer_arm(q), -EAGAIN); /* room already */
	CU_ASSERT_EQUAL(dpa_msgq_send(q, &m), 0);
	CU_ASSERT_EQUAL(dpa_msgq_producer_arm(q), 0); /* full: safe to wait */
	CU_ASSERT_FALSE(fd_readable(pfd, 0));
	CU_ASSERT_EQUAL(dpa_msgq_recv(q, &r), 1);
	CU_ASSERT_TRUE(fd_readable(pfd, 0));
	dpa_msgq_fd_clear(pfd);
	CU_ASSERT_EQUAL(dpa_msgq_recv(q, &r), 1);
	CU_ASSERT_EQUAL(dpa_msgq_recv(q, &r), 0);
	CU_ASSERT_EQUAL(dpa_msgq_consumer_arm(q), 0); /* empty: safe to sleep */
	dpa_msgq_fd_clear(cfd);
	CU_ASSERT_EQUAL(dpa_msgq_send(q, &m), 0);
	CU_ASSERT_TRUE(fd_readable(cfd, 0));
	dpa_msgq_destroy(q);
	CU_ASSERT_EQUAL(dpa_destroy(dpa), 0);
}

static void test_arm_side_completions(void)
{
	arm_side_completions(false);
}

static void test_arm_side_completions_single_thread(void)
{
	arm_side_completions(true);
}

/* The program of send_polled's DPA thread: takes every message, then arms its completion. */
struct polled_prog {
	struct dpa_msgq *q;
	unsigned int runs, got;
};

static void polled_prog_run(struct dpa_thread *thread, void *arg)
{
	struct polled_prog *p = arg;
	struct test_msg r;

	p->runs++;
	while (dpa_msgq_recv(p->q, &r) == 1)
		p->got++;
	if (dpa_msgq_consumer_arm(p->q))
		dpa_thread_kick(thread);
}

/* A queue made with cfg takes no dpa_msgq_send_polled. */
static void send_polled_refused(struct dpa *dpa, const struct dpa_msgq_config *cfg)
{
	struct dpa_msgq *q = dpa_msgq_create(dpa, cfg);
	struct test_msg m = {0};

	CU_ASSERT_PTR_NOT_NULL_FATAL(q);
	CU_ASSERT_EQUAL(dpa_msgq_send_polled(q, &m), -EINVAL);
	dpa_msgq_destroy(q);
}

/* dpa_msgq_send_polled: the fused consumer's owner sends to it and runs it itself, with no
 * eventfd signal (a plain send signals one); refused where nobody would run the consumer. */
static void test_send_polled(void)
{
	struct dpa *dpa = dpa_create(0), *harts = dpa_create(1);
	struct dpa_msgq_config cfg = {.msg_size = sizeof(struct test_msg), .depth = 4,
				      .single_thread = true};
	struct polled_prog init = {0}, *p;
	struct dpa_thread *t, *ht;
	struct dpa_msgq *q;
	struct test_msg m = {0};
	uint64_t wakes;
	int efd;

	CU_ASSERT_PTR_NOT_NULL_FATAL(dpa);
	CU_ASSERT_PTR_NOT_NULL_FATAL(harts);
	t = dpa_thread_create(dpa, polled_prog_run, &init, sizeof(init));
	CU_ASSERT_PTR_NOT_NULL_FATAL(t);
	cfg.consumer = t;
	q = dpa_msgq_create(dpa, &cfg);
	CU_ASSERT_PTR_NOT_NULL_FATAL(q);
	p = dpa_thread_arg(t);
	p->q = q;
	efd = dpa_thread_event_fd(t);
	CU_ASSERT_TRUE_FATAL(efd >= 0);
	CU_ASSERT_EQUAL_FATAL(dpa_thread_run(t, -1), 0);
	CU_ASSERT_EQUAL(dpa_thread_poll(t), 1); /* the first activation, which arms */
	CU_ASSERT_EQUAL(dpa_thread_poll(t), 0);
	CU_ASSERT_FALSE(fd_readable(efd, 0));
	wakes = dpa_fused_eventfd_wakes(dpa);

	CU_ASSERT_EQUAL(dpa_msgq_send_polled(q, &m), 0);
	CU_ASSERT_EQUAL(dpa_msgq_send_polled(q, &m), 0); /* not re-armed: no second wake */
	CU_ASSERT_FALSE(fd_readable(efd, 0));
	CU_ASSERT_EQUAL(dpa_fused_eventfd_wakes(dpa), wakes);
	CU_ASSERT_EQUAL(dpa_thread_poll(t), 1);
	CU_ASSERT_EQUAL(p->got, 2);
	CU_ASSERT_EQUAL(dpa_thread_poll(t), 0);

	/* A plain send from elsewhere goes through the eventfd. */
	CU_ASSERT_EQUAL(dpa_msgq_send(q, &m), 0);
	CU_ASSERT_TRUE(fd_readable(efd, 0));
	CU_ASSERT_EQUAL(dpa_fused_eventfd_wakes(dpa), wakes + 1);
	CU_ASSERT_EQUAL(dpa_thread_poll(t), 1);
	CU_ASSERT_EQUAL(p->got, 3);
	CU_ASSERT_FALSE(fd_readable(efd, 0));

	/* Refused: a queue of two threads, a queue to the Arm side, an instance with harts. */
	cfg.single_thread = false;
	send_polled_refused(dpa, &cfg);
	cfg.single_thread = true;
	cfg.consumer = NULL;
	send_polled_refused(dpa, &cfg);
	ht = dpa_thread_create(harts, polled_prog_run, &init, sizeof(init));
	CU_ASSERT_PTR_NOT_NULL_FATAL(ht);
	cfg.consumer = ht;
	send_polled_refused(harts, &cfg);
	CU_ASSERT_EQUAL(dpa_thread_destroy(ht), 0);

	dpa_thread_stop(t);
	dpa_msgq_destroy(q);
	CU_ASSERT_EQUAL(dpa_thread_destroy(t), 0);
	CU_ASSERT_EQUAL(dpa_destroy(harts), 0);
	CU_ASSERT_EQUAL(dpa_destroy(dpa), 0);
}

#define SPSC_COUNT 2000000ULL

struct spsc_ctx {
	struct dpa_msgq *q;
	uint64_t sum;
};

/* The producer: sends SPSC_COUNT messages, sleeping on the producer
 * completion when the ring is full. */
static void *spsc_producer(void *arg)
{
	struct spsc_ctx *c = arg;
	struct test_msg m;
	int pfd = dpa_msgq_producer_fd(c->q);
	uint64_t i;

	for (i = 1; i <= SPSC_COUNT; i++) {
		m.seq = i;
		m.payload[0] = i * 2654435761ULL;
		m.payload[1] = i ^ 0x5555;
		m.payload[2] = ~i;
		while (dpa_msgq_send(c->q, &m) == -EAGAIN) {
			if (dpa_msgq_producer_arm(c->q) == 0)
				fd_readable(pfd, 1000);
			dpa_msgq_fd_clear(pfd);
		}
		c->sum += m.payload[0] + m.payload[1];
	}
	return NULL;
}

static void test_spsc_two_threads(void)
{
	struct dpa *dpa = dpa_create(0);
	struct spsc_ctx c = {0};
	struct test_msg r;
	pthread_t tid;
	uint64_t expect = 1, sum = 0;
	int cfd, bad = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(dpa);
	c.q = msgq_new(dpa, 64);
	CU_ASSERT_PTR_NOT_NULL_FATAL(c.q);
	cfd = dpa_msgq_consumer_fd(c.q);
	CU_ASSERT_EQUAL_FATAL(pthread_create(&tid, NULL, spsc_producer, &c), 0);
	while (expect <= SPSC_COUNT) {
		if (dpa_msgq_recv(c.q, &r) == 0) {
			/* Sleep on the consumer completion (bounded). */
			if (dpa_msgq_consumer_arm(c.q) == 0)
				fd_readable(cfd, 1000);
			dpa_msgq_fd_clear(cfd);
			continue;
		}
		if (r.seq != expect || r.payload[2] != ~expect ||
		    r.payload[0] != expect * 2654435761ULL)
			bad++;
		sum += r.payload[0] + r.payload[1];
		expect++;
	}
	pthread_join(tid, NULL);
	CU_ASSERT_EQUAL(bad, 0);
	CU_ASSERT_EQUAL(sum, c.sum);
	CU_ASSERT_EQUAL(dpa_msgq_recv(c.q, &r), 0);
	dpa_msgq_destroy(c.q);
	CU_ASSERT_EQUAL(dpa_destroy(dpa), 0);
}

CUNIT_SUITE(dpa_msgq, NULL, NULL, {"config_checks", test_config_checks},
	    {"order_full_empty", test_order_full_empty}, {"wrap_around", test_wrap_around},
	    {"arm_side_completions", test_arm_side_completions},
	    {"arm_side_completions_single_thread", test_arm_side_completions_single_thread},
	    {"send_polled", test_send_polled},
	    {"spsc_two_threads", test_spsc_two_threads})
