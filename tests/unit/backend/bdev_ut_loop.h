/* tests/unit/backend/bdev_ut_loop.h - the daemon's main loop on a thread, for tests of bdevs that
 * are created asynchronously on it (NBD, RBD): the test thread plays a poll group (it owns the
 * channels) and asks the loop thread for registry operations. */
#ifndef NVME_EMU_TESTS_UNIT_BACKEND_BDEV_UT_LOOP_H
#define NVME_EMU_TESTS_UNIT_BACKEND_BDEV_UT_LOOP_H

#include "backend/bdev.h"

#include <semaphore.h>

struct evloop;

/* A call into the loop thread; fn ends it (now or from a later callback) with ut_loop_done. */
struct ut_loop_call {
	void (*fn)(struct ut_loop_call *c);
	sem_t done;
	const char *name;
	const void *opts; /* what a create needs */
	uint64_t u64;
	int rc;	       /* the call's immediate result */
	int create_rc; /* an asynchronous completion's */
	char message[512];
	struct bdev *bdev;
	struct bdev_info info;
};

/* Starts / stops the loop thread (suite init / cleanup). 0 or -1. */
int ut_loop_start(void);
int ut_loop_stop(void);
struct evloop *ut_loop(void);

/* Runs fn(c) on the loop thread and waits (60 s at most: a CUnit fatal failure) for ut_loop_done. */
void ut_loop_call(struct ut_loop_call *c, void (*fn)(struct ut_loop_call *c));
void ut_loop_done(struct ut_loop_call *c);
/* A bdev_create_cb for c (arg): records rc, message and bdev, then ut_loop_done. */
void ut_loop_created(void *arg, int rc, const char *message, struct bdev *bdev);

/* bdev_delete and bdev_get_info on the loop thread. */
int ut_loop_delete(const char *name);
struct bdev_info ut_loop_info(const char *name);

#endif
