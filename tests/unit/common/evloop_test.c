/* tests/unit/common/evloop_test.c - fd watches, deferred calls, timers and
 * cross-thread messages. */
#include "common/evloop.h"
#include "tests/unit/cunit_runner.h"

#include <pthread.h>
#include <sys/epoll.h>
#include <unistd.h>

static int order[16], norder;

static void record(void *arg)
{
	if (norder < 16)
		order[norder++] = (int)(long)arg;
}

static void on_readable(int fd, uint32_t events, void *arg)
{
	struct evloop *loop = arg;
	char c;

	CU_ASSERT_TRUE(events & EPOLLIN);
	CU_ASSERT_EQUAL(read(fd, &c, 1), 1);
	record((void *)(long)c);
	/* A call deferred from a callback runs before the loop sleeps again. */
	evloop_defer(loop, record, (void *)8);
}

static void test_watch_and_defer(void)
{
	struct evloop *loop = evloop_create();
	struct evloop_watch *w;
	int p[2];

	CU_ASSERT_PTR_NOT_NULL_FATAL(loop);
	CU_ASSERT_EQUAL_FATAL(pipe(p), 0);
	norder = 0;
	w = evloop_watch_add(loop, p[0], EPOLLIN, on_readable, loop);
	CU_ASSERT_PTR_NOT_NULL_FATAL(w);
	CU_ASSERT_EQUAL(evloop_run_once(loop, 0), 0);
	CU_ASSERT_EQUAL(write(p[1], "\3", 1), 1);
	CU_ASSERT_EQUAL(evloop_run_once(loop, 1000), 2);
	CU_ASSERT_EQUAL(norder, 2);
	CU_ASSERT_EQUAL(order[0], 3);
	CU_ASSERT_EQUAL(order[1], 8);
	evloop_watch_remove(w);
	CU_ASSERT_EQUAL(write(p[1], "\4", 1), 1);
	CU_ASSERT_EQUAL(evloop_run_once(loop, 10), 0);
	CU_ASSERT_EQUAL(norder, 2);
	close(p[0]);
	close(p[1]);
	evloop_destroy(loop);
}

static void *sender(void *arg)
{
	struct evloop *loop = arg;

	for (long i = 1; i <= 5; i++)
		evloop_send_msg(loop, record, (void *)i);
	return NULL;
}

static void test_messages_in_order(void)
{
	struct evloop *loop = evloop_create();
	pthread_t t;

	norder = 0;
	CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, sender, loop), 0);
	pthread_join(t, NULL);
	while (norder < 5 && evloop_run_once(loop, 1000) > 0)
		;
	CU_ASSERT_EQUAL(norder, 5);
	for (int i = 0; i < 5 && i < norder; i++)
		CU_ASSERT_EQUAL(order[i], i + 1);
	evloop_destroy(loop);
}

/* Posted nodes belong to the sender: they interleave in order with allocated messages, and a
 * node may be posted again from inside its own call (a flow's next hop). */
struct post_ctx {
	struct evloop *loop;
	struct evloop_msg node;
	int hops;
};

static void post_hop(void *arg)
{
	struct post_ctx *p = arg;

	order[norder++] = 100 + p->hops;
	if (++p->hops < 3)
		evloop_post(p->loop, &p->node, post_hop, p);
}

static void *poster(void *arg)
{
	struct post_ctx *p = arg;

	evloop_send_msg(p->loop, record, (void *)1);
	evloop_post(p->loop, &p->node, post_hop, p);
	evloop_send_msg(p->loop, record, (void *)2);
	return NULL;
}

static void test_post(void)
{
	struct post_ctx p = { .loop = evloop_create() };
	pthread_t t;

	norder = 0;
	CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, poster, &p), 0);
	pthread_join(t, NULL);
	while (norder < 5 && evloop_run_once(p.loop, 1000) > 0)
		;
	CU_ASSERT_EQUAL(norder, 5);
	CU_ASSERT_EQUAL(order[0], 1);
	CU_ASSERT_EQUAL(order[1], 100);
	CU_ASSERT_EQUAL(order[2], 2);
	CU_ASSERT_EQUAL(order[3], 101);
	CU_ASSERT_EQUAL(order[4], 102);
	/* A posted node still queued at destroy is not freed by the loop (ASan would see). */
	evloop_post(p.loop, &p.node, post_hop, &p);
	evloop_destroy(p.loop);
}

static void test_timers(void)
{
	struct evloop *loop = evloop_create();
	struct evloop_timer *cancelled;
	uint64_t start = evloop_now_us();

	norder = 0;
	evloop_timer_add(loop, 20000, record, (void *)2);
	evloop_timer_add(loop, 5000, record, (void *)1);
	cancelled = evloop_timer_add(loop, 10000, record, (void *)9);
	evloop_timer_cancel(cancelled);
	while (norder < 2 && evloop_now_us() - start < 2000000)
		evloop_run_once(loop, 100);
	CU_ASSERT_EQUAL(norder, 2);
	CU_ASSERT_EQUAL(order[0], 1);
	CU_ASSERT_EQUAL(order[1], 2);
	CU_ASSERT_TRUE(evloop_now_us() - start >= 20000);
	evloop_destroy(loop);
}

struct poller_state {
	struct evloop *loop;
	int calls;
	int64_t advice;
};

static int64_t poller(void *arg)
{
	struct poller_state *ps = arg;

	ps->calls++;
	return ps->advice;
}

static void test_poller(void)
{
	struct poller_state ps = { .loop = evloop_create(), .advice = 0 };
	struct evloop_watch *w;
	uint64_t t0;
	int p[2], rounds;

	CU_ASSERT_PTR_NOT_NULL_FATAL(ps.loop);
	CU_ASSERT_EQUAL_FATAL(pipe(p), 0);
	norder = 0;
	w = evloop_watch_add(ps.loop, p[0], EPOLLIN, on_readable, ps.loop);
	CU_ASSERT_PTR_NOT_NULL_FATAL(w);
	evloop_set_poller(ps.loop, poller, &ps);
	/* Spinning (advice 0): the poller runs every round; fds are still looked at within a few
	 * dozen rounds, and a round never sleeps although the caller allows a second. */
	CU_ASSERT_EQUAL(write(p[1], "\5", 1), 1);
	t0 = evloop_now_us();
	for (rounds = 0; rounds < 1000 && norder == 0; rounds++)
		evloop_run_once(ps.loop, 1000);
	CU_ASSERT_EQUAL(norder, 2);
	CU_ASSERT_TRUE(rounds > 1 && rounds <= 64);
	CU_ASSERT_EQUAL(ps.calls, rounds);
	CU_ASSERT_TRUE(evloop_now_us() - t0 < 500000);
	/* A sleep advice bounds the wait below the caller's timeout, at microsecond precision. */
	ps.advice = 300;
	t0 = evloop_now_us();
	evloop_run_once(ps.loop, 1000);
	CU_ASSERT_TRUE(evloop_now_us() - t0 >= 300);
	CU_ASSERT_TRUE(evloop_now_us() - t0 < 500000);
	/* Removed: the loop sleeps the caller's timeout and the poller is not called. */
	evloop_set_poller(ps.loop, NULL, NULL);
	ps.calls = 0;
	t0 = evloop_now_us();
	evloop_run_once(ps.loop, 20);
	CU_ASSERT_EQUAL(ps.calls, 0);
	CU_ASSERT_TRUE(evloop_now_us() - t0 >= 19000);
	evloop_watch_remove(w);
	close(p[0]);
	close(p[1]);
	evloop_destroy(ps.loop);
}

CUNIT_SUITE(evloop, NULL, NULL,
	{ "watch_and_defer", test_watch_and_defer },
	{ "messages_in_order", test_messages_in_order },
	{ "timers", test_timers },
	{ "post", test_post },
	{ "poller", test_poller })
