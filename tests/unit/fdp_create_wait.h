/* tests/unit/fdp_create_wait.h - for unit tests of the placement bdev (backend/bdev_fdp.c) and
 * of FDP in the controller: bdev_fdp_create run to its report, and bdev_delete to its end, on an
 * event loop of the test's own (both are asynchronous: the owner thread loads the map, or drains
 * and exits, then reports on the loop the bdev was created with, which lives as long as the
 * test program). */
#ifndef NVME_EMU_TESTS_UNIT_FDP_CREATE_WAIT_H
#define NVME_EMU_TESTS_UNIT_FDP_CREATE_WAIT_H

#include <CUnit/CUnit.h>
#include <stdio.h>

#include "backend/bdev.h"
#include "common/evloop.h"

struct fdp_made {
	int rc; /* 1: not yet */
	struct bdev *bdev;
	char msg[256];
};

static void fdp_made_cb(void *arg, int rc, const char *message, struct bdev *bdev)
{
	struct fdp_made *m = arg;

	m->rc = rc;
	m->bdev = bdev;
	snprintf(m->msg, sizeof(m->msg), "%s", message ? message : "");
}

static struct evloop *fdp_test_loop(void)
{
	static struct evloop *l;

	if (!l)
		l = evloop_create();
	CU_ASSERT_PTR_NOT_NULL_FATAL(l);
	return l;
}

/* bdev_fdp_create, its loop run until done reports: the synchronous or reported rc. */
static int fdp_create_wait(const char *name, const char *base, const struct bdev_fdp_opts *o,
			   struct bdev **out, char *msg, size_t msglen)
{
	struct evloop *l = fdp_test_loop();
	struct fdp_made m = {.rc = 1};
	int rc;

	rc = bdev_fdp_create(name, base, o, NULL, l, fdp_made_cb, &m);
	while (!rc && m.rc == 1)
		evloop_run_once(l, 100);
	if (rc)
		return rc;
	if (out)
		*out = m.bdev;
	if (msg)
		snprintf(msg, msglen, "%s", m.msg);
	return m.rc;
}

static void fdp_deleted_cb(void *arg)
{
	*(bool *)arg = true;
}

/* bdev_delete_cb, the loop run until the teardown has ended: the synchronous rc. */
static __attribute__((unused)) int fdp_delete_wait(const char *name)
{
	bool done = false;
	int rc = bdev_delete_cb(name, fdp_deleted_cb, &done);

	while (!rc && !done)
		evloop_run_once(fdp_test_loop(), 100);
	return rc;
}

#endif
