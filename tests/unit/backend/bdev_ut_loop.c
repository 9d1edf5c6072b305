/* tests/unit/backend/bdev_ut_loop.c - the main loop on a thread for asynchronous bdev tests. */
#include "tests/unit/backend/bdev_ut_loop.h"
#include "common/evloop.h"
#include "tests/unit/cunit_runner.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <time.h>

static struct evloop *ut_loop_obj;
static pthread_t ut_loop_thread;

static void *ut_loop_main(void *arg)
{
	evloop_run(ut_loop_obj);
	return NULL;
}

int ut_loop_start(void)
{
	ut_loop_obj = evloop_create();
	if (!ut_loop_obj)
		return -1;
	return pthread_create(&ut_loop_thread, NULL, ut_loop_main, NULL) ? -1 : 0;
}

int ut_loop_stop(void)
{
	evloop_stop(ut_loop_obj);
	pthread_join(ut_loop_thread, NULL);
	evloop_destroy(ut_loop_obj);
	return 0;
}

struct evloop *ut_loop(void)
{
	return ut_loop_obj;
}

static void ut_loop_run(void *arg)
{
	struct ut_loop_call *c = arg;

	c->fn(c);
}

void ut_loop_call(struct ut_loop_call *c, void (*fn)(struct ut_loop_call *c))
{
	struct timespec ts;

	c->fn = fn;
	sem_init(&c->done, 0, 0);
	CU_ASSERT_EQUAL_FATAL(evloop_send_msg(ut_loop_obj, ut_loop_run, c), 0);
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 60;
	CU_ASSERT_EQUAL_FATAL(sem_timedwait(&c->done, &ts), 0);
	sem_destroy(&c->done);
}

void ut_loop_done(struct ut_loop_call *c)
{
	sem_post(&c->done);
}

void ut_loop_created(void *arg, int rc, const char *message, struct bdev *bdev)
{
	struct ut_loop_call *c = arg;

	c->create_rc = rc;
	snprintf(c->message, sizeof(c->message), "%s", message ? message : "");
	c->bdev = bdev;
	ut_loop_done(c);
}

static void ut_loop_do_delete(struct ut_loop_call *c)
{
	c->rc = bdev_delete(c->name);
	ut_loop_done(c);
}

static void ut_loop_do_info(struct ut_loop_call *c)
{
	struct bdev *b = bdev_lookup(c->name);

	c->rc = b ? 0 : -ENOENT;
	if (b)
		bdev_get_info(b, &c->info);
	ut_loop_done(c);
}

int ut_loop_delete(const char *name)
{
	struct ut_loop_call c = {.name = name};

	ut_loop_call(&c, ut_loop_do_delete);
	return c.rc;
}

struct bdev_info ut_loop_info(const char *name)
{
	struct ut_loop_call c = {.name = name};

	ut_loop_call(&c, ut_loop_do_info);
	CU_ASSERT_EQUAL(c.rc, 0);
	return c.info;
}
