/* tests/unit/common/syncer_test.c - the syncer thread: jobs run in order off the caller's thread,
 * files replaced whole, writes at an offset with and without a sync, errors reported, drain. */
#include "common/syncer.h"
#include "tests/unit/cunit_runner.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static pthread_t st_caller;
static int st_order[8], st_n, st_rc[8];
static bool st_other_thread = true;

static void st_done(struct syncer_job *job, int rc)
{
	int i = (int)(long)job->arg;

	if (pthread_equal(pthread_self(), st_caller))
		st_other_thread = false;
	if (st_n < 8) {
		st_rc[st_n] = rc;
		st_order[st_n++] = i;
	}
}

static void st_read(const char *path, char *buf, size_t cap)
{
	FILE *f = fopen(path, "rb");
	size_t n = 0;

	if (f) {
		n = fread(buf, 1, cap - 1, f);
		fclose(f);
	}
	buf[n] = '\0';
}

static void test_jobs(void)
{
	char dir[] = "/tmp/syncer-test-XXXXXX", path[64], path2[64], buf[64];
	struct iovec a[2] = {{.iov_base = "hello ", .iov_len = 6}, {.iov_base = "world", .iov_len = 5}};
	struct iovec b = {.iov_base = "WOR", .iov_len = 3};
	struct syncer_job jobs[5];
	uint64_t before = syncer_jobs_done();
	int fd;

	CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/state", dir);
	snprintf(path2, sizeof(path2), "%s/nodir/state", dir);
	st_caller = pthread_self();
	st_n = 0;
	memset(jobs, 0, sizeof(jobs));
	jobs[0] = (struct syncer_job){.op = SYNCER_REPLACE, .path = path, .iov = a, .iovcnt = 2,
				      .done = st_done, .arg = (void *)0};
	CU_ASSERT_EQUAL(syncer_submit(&jobs[0]), 0);
	syncer_drain();
	st_read(path, buf, sizeof(buf));
	CU_ASSERT_STRING_EQUAL(buf, "hello world");
	fd = open(path, O_RDWR);
	CU_ASSERT_FATAL(fd >= 0);
	/* Two writes of the same file with a sync each, then a lone sync: in order, one result each. */
	jobs[1] = (struct syncer_job){.op = SYNCER_PWRITE, .fd = fd, .iov = &b, .iovcnt = 1,
				      .off = 6, .sync = true, .done = st_done, .arg = (void *)1};
	jobs[2] = (struct syncer_job){.op = SYNCER_PWRITE, .fd = fd, .iov = &b, .iovcnt = 1,
				      .off = 0, .sync = true, .done = st_done, .arg = (void *)2};
	jobs[3] = (struct syncer_job){.op = SYNCER_FSYNC, .fd = fd, .done = st_done, .arg = (void *)3};
	/* A replace whose directory does not exist fails, alone. */
	jobs[4] = (struct syncer_job){.op = SYNCER_REPLACE, .path = path2, .iov = a, .iovcnt = 1,
				      .done = st_done, .arg = (void *)4};
	for (int i = 1; i < 5; i++)
		CU_ASSERT_EQUAL(syncer_submit(&jobs[i]), 0);
	syncer_drain();
	CU_ASSERT_EQUAL(st_n, 5);
	for (int i = 0; i < 5; i++)
		CU_ASSERT_EQUAL(st_order[i], i);
	CU_ASSERT_EQUAL(st_rc[1], 0);
	CU_ASSERT_EQUAL(st_rc[2], 0);
	CU_ASSERT_EQUAL(st_rc[3], 0);
	CU_ASSERT_EQUAL(st_rc[4], -ENOENT);
	CU_ASSERT_TRUE(st_other_thread);
	CU_ASSERT_EQUAL(syncer_jobs_done() - before, 5);
	st_read(path, buf, sizeof(buf));
	CU_ASSERT_STRING_EQUAL(buf, "WORlo WORld");
	/* A sync of a closed descriptor reports its error. */
	close(fd);
	jobs[0] = (struct syncer_job){.op = SYNCER_FSYNC, .fd = fd, .done = st_done, .arg = (void *)5};
	st_n = 0;
	CU_ASSERT_EQUAL(syncer_submit(&jobs[0]), 0);
	syncer_drain();
	CU_ASSERT_EQUAL(st_n, 1);
	CU_ASSERT_EQUAL(st_rc[0], -EBADF);
	/* The blocking form, for start-up. */
	CU_ASSERT_EQUAL(syncer_run_now(&(struct syncer_job){.op = SYNCER_REPLACE, .path = path,
							    .iov = &b, .iovcnt = 1}), 0);
	st_read(path, buf, sizeof(buf));
	CU_ASSERT_STRING_EQUAL(buf, "WOR");
	/* No temporary file is left behind. */
	snprintf(path2, sizeof(path2), "%s/state.tmp", dir);
	CU_ASSERT_EQUAL(access(path2, F_OK), -1);
	unlink(path);
	rmdir(dir);
}

CUNIT_SUITE(syncer, NULL, NULL, {"jobs", test_jobs})
