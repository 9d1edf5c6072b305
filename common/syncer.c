/* common/syncer.c - see syncer.h. One worker thread, started at the first job and kept for the
 * life of the process (it sleeps on a condition variable when there is nothing to do). */
#include "common/syncer.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "common/file_replace.h"
#include "common/log.h"

static struct {
	pthread_mutex_t lock;
	pthread_cond_t work;  /* the worker waits for jobs */
	pthread_cond_t ended; /* syncer_drain waits for jobs to end */
	bool started;
	struct syncer_job *head, *tail;
	uint64_t submitted, ended_count;
} syncer = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .work = PTHREAD_COND_INITIALIZER,
    .ended = PTHREAD_COND_INITIALIZER,
};

static int syncer_fdatasync(int fd)
{
	return fdatasync(fd) ? -errno : 0;
}

/* The job's writes, without its sync (the caller decides when to sync). */
static int syncer_write_part(const struct syncer_job *job)
{
	switch (job->op) {
	case SYNCER_REPLACE:
		return file_replace(job->path, job->iov, job->iovcnt);
	case SYNCER_PWRITE:
		return file_pwrite_all(job->fd, job->iov, job->iovcnt, job->off);
	case SYNCER_FSYNC:
		return 0;
	}
	return -EINVAL;
}

static bool syncer_wants_sync(const struct syncer_job *job)
{
	return job->op == SYNCER_FSYNC || (job->op == SYNCER_PWRITE && job->sync);
}

int syncer_run_now(const struct syncer_job *job)
{
	int rc = syncer_write_part(job);

	if (!rc && syncer_wants_sync(job))
		rc = syncer_fdatasync(job->fd);
	return rc;
}

/* Runs a batch in order. A run of consecutive jobs syncing the same fd is written first, then
 * synced once for all of them (their writes all precede the one fdatasync). */
static void syncer_run_batch(struct syncer_job *job)
{
	while (job) {
		struct syncer_job *run_end = job, *next;
		int sync_rc = 0;

		if (syncer_wants_sync(job)) {
			while (run_end->next && syncer_wants_sync(run_end->next) &&
			       run_end->next->fd == job->fd)
				run_end = run_end->next;
		}
		for (struct syncer_job *j = job;; j = j->next) {
			j->rc = syncer_write_part(j);
			if (j == run_end)
				break;
		}
		if (syncer_wants_sync(job))
			sync_rc = syncer_fdatasync(job->fd);
		next = run_end->next;
		for (struct syncer_job *j = job, *jn;; j = jn) {
			bool last = j == run_end;

			jn = j->next;
			if (!j->rc)
				j->rc = sync_rc;
			j->next = NULL;
			j->done(j, j->rc);
			pthread_mutex_lock(&syncer.lock);
			syncer.ended_count++;
			pthread_cond_broadcast(&syncer.ended);
			pthread_mutex_unlock(&syncer.lock);
			if (last)
				break;
		}
		job = next;
	}
}

static void *syncer_main(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "syncer");
	for (;;) {
		struct syncer_job *batch;

		pthread_mutex_lock(&syncer.lock);
		while (!syncer.head)
			pthread_cond_wait(&syncer.work, &syncer.lock);
		batch = syncer.head;
		syncer.head = syncer.tail = NULL;
		pthread_mutex_unlock(&syncer.lock);
		syncer_run_batch(batch);
	}
	return NULL;
}

/* Lock held. The worker blocks every signal: the daemon's signalfd must see them. */
static int syncer_start_locked(void)
{
	pthread_attr_t attr;
	sigset_t all, old;
	pthread_t t;
	int rc;

	if (syncer.started)
		return 0;
	if (pthread_attr_init(&attr))
		return -ENOMEM;
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&t, &attr, syncer_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	if (rc) {
		LOG_ERR("common", "cannot start the syncer thread: %s", strerror(rc));
		return -rc;
	}
	syncer.started = true;
	return 0;
}

int syncer_submit(struct syncer_job *job)
{
	int rc;

	job->next = NULL;
	job->rc = 0;
	pthread_mutex_lock(&syncer.lock);
	rc = syncer_start_locked();
	if (!rc) {
		if (syncer.tail)
			syncer.tail->next = job;
		else
			syncer.head = job;
		syncer.tail = job;
		syncer.submitted++;
		pthread_cond_signal(&syncer.work);
	}
	pthread_mutex_unlock(&syncer.lock);
	return rc;
}

void syncer_drain(void)
{
	pthread_mutex_lock(&syncer.lock);
	uint64_t want = syncer.submitted;

	while (syncer.ended_count < want)
		pthread_cond_wait(&syncer.ended, &syncer.lock);
	pthread_mutex_unlock(&syncer.lock);
}

uint64_t syncer_jobs_done(void)
{
	uint64_t n;

	pthread_mutex_lock(&syncer.lock);
	n = syncer.ended_count;
	pthread_mutex_unlock(&syncer.lock);
	return n;
}
