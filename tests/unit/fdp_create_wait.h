/* tests/unit/fdp_create_wait.h - for unit tests of the placement bdev (backend/bdev_fdp.c) and
 * of FDP in the controller: bdev_fdp_create run to its report on an event loop of the test's
 * own (the creation is asynchronous: the owner thread loads the map, then reports on the loop). */
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

/* bdev_fdp_create, its loop run until done reports: the synchronous or reported rc. */
static int fdp_create_wait(const char *name, const char *base, const struct bdev_fdp_opts *o,
			   struct bdev **out, char *msg, size_t msglen)
{
	struct evloop *l = evloop_create();
	struct fdp_made m = {.rc = 1};
	int rc;

	CU_ASSERT_PTR_NOT_NULL_FATAL(l);
	rc = bdev_fdp_create(name, base, o, NULL, l, fdp_made_cb, &m);
	while (!rc && m.rc == 1)
		evloop_run_once(l, 100);
	evloop_destroy(l);
	if (rc)
		return rc;
	if (out)
		*out = m.bdev;
	if (msg)
		snprintf(msg, msglen, "%s", m.msg);
	return m.rc;
}

#endif
