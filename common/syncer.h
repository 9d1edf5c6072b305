/* common/syncer.h - durable writes of state files off the event loops. One worker thread of the
 * process ("syncer") takes jobs from any thread and does their blocking part (write, fdatasync,
 * rename and the directory's fsync), so no poll group or main loop ever waits for a disk. A job
 * ends by its done callback, called on the worker thread: it must only hand the result back to
 * its owner (a message to the owner's loop: evloop_post, the controller's admin_post/io_post) and
 * return. Jobs run in the order they were submitted; consecutive jobs that sync the same file
 * share one fdatasync (group commit). */
#ifndef NVME_EMU_COMMON_SYNCER_H
#define NVME_EMU_COMMON_SYNCER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

enum syncer_op {
	SYNCER_REPLACE, /* path's content becomes iov, whole (common/file_replace.h) */
	SYNCER_PWRITE,	/* iov written at off of fd; then fdatasync(fd) when sync */
	SYNCER_FSYNC,	/* fdatasync(fd) */
};

struct syncer_job;
/* Worker thread: rc is 0 or -errno of the first step that failed. The job is the caller's again. */
typedef void (*syncer_done_fn)(struct syncer_job *job, int rc);

/* A job, in storage the caller provides (embedded in the object it is about, so submitting
 * cannot fail for want of memory); iov and what it points to, and path, stay valid until done. */
struct syncer_job {
	enum syncer_op op;
	const char *path;	 /* SYNCER_REPLACE */
	int fd;			 /* SYNCER_PWRITE, SYNCER_FSYNC */
	const struct iovec *iov; /* SYNCER_REPLACE, SYNCER_PWRITE */
	int iovcnt;
	uint64_t off; /* SYNCER_PWRITE */
	bool sync;    /* SYNCER_PWRITE */
	syncer_done_fn done;
	void *arg;
	/* The syncer's. */
	struct syncer_job *next;
	int rc;
};

/* Queues a job (any thread; never blocks on I/O). The worker starts at the first call. 0, or
 * -errno when the worker cannot be started (nothing queued, done not called). */
int syncer_submit(struct syncer_job *job);

/* The blocking part of a job, on the calling thread (start-up and teardown, where the caller
 * waits anyway). 0 or -errno; done is not called. */
int syncer_run_now(const struct syncer_job *job);

/* Waits until every job submitted before the call has ended (its done returned). For the end of
 * the process and for tests: it blocks the caller. */
void syncer_drain(void);

/* Jobs ended since the process started (tests count them). Any thread. */
uint64_t syncer_jobs_done(void);

#endif
