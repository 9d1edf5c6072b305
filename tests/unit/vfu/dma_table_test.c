/* tests/unit/vfu/dma_table_test.c - the DMA window table: overlaps,
 * adjacency, boundaries, wrap-around, permissions, fd mapping, iovecs. */
#include "vfu/vfu.h"
#include "vfu/vfu_internal.h"
#include "tests/unit/cunit_runner.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define R VFIO_USER_DMA_READ_PROT
#define W VFIO_USER_DMA_WRITE_PROT

static void test_add_overlap(void)
{
	struct vfu_dma_table *t = vfu_dma_table_create(16);
	uint64_t gen;

	CU_ASSERT_PTR_NOT_NULL_FATAL(t);
	gen = vfu_dma_table_generation(t);
	CU_ASSERT_EQUAL(vfu_dma_table_add(t, 0x10000, 0x1000, R | W, -1, 0), 0);
	CU_ASSERT_NOT_EQUAL(vfu_dma_table_generation(t), gen);
	/* Any byte in common is an overlap. */
	CU_ASSERT_EQUAL(vfu_dma_table_add(t, 0x10000, 0x1000, R, -1, 0), -EEXIST);
	CU_ASSERT_EQUAL(vfu_dma_table_add(t, 0xf000, 0x1001, R, -1, 0), -EEXIST);
	CU_ASSERT_EQUAL(vfu_dma_table_add(t, 0x10fff, 0x1, R, -1, 0), -EEXIST);
	CU_ASSERT_EQUAL(vfu_dma_table_add(t, 0x8000, 0x10000, R, -1, 0), -EEXIST);
	CU_ASSERT_EQUAL(vfu_dma_table_add(t, 0x10800, 0x100, R, -1, 0), -EEXIST);
	/* Touching on either side is not. */
	CU_ASSERT_EQUAL(vfu_dma_table_add(t, 0xf000, 0x1000, R, -1, 0), 0);
	CU_ASSERT_EQUAL(vfu_dma_table_add(t, 0x11000, 0x1000, R, -1, 0), 0);
	CU_ASSERT_EQUAL(vfu_dma_table_count(t), 3);
	vfu_dma_table_destroy(t);
}

static void test_add_invalid(void)
{
	struct vfu_dma_table *t = vfu_dma_table_create(2);

	CU_ASSERT_EQUAL(vfu_dma_table_add(t, 0x1000, 0, R, -1, 0), -EINVAL);
	CU_ASSERT_EQUAL(vfu_dma_table_add(t, UINT64_MAX - 0xfff, 0x2000, R, -1, 0), -EINVAL);
	CU_ASSERT_EQUAL(vfu_dma_table_add(t, 0x1000, 0x1000, 0x4, -1, 0), -EINVAL);
	/* The very top of the address space is fine. */
	CU_ASSERT_EQUAL(vfu_dma_table_add(t, UINT64_MAX - 0xfff, 0x1000, R, -1, 0), 0);
	CU_ASSERT_EQUAL(vfu_dma_table_add(t, 0, 0x1000, R, -1, 0), 0);
	CU_ASSERT_EQUAL(vfu_dma_table_add(t, 0x5000, 0x1000, R, -1, 0), -ENOSPC);
	CU_ASSERT_EQUAL(vfu_dma_table_count(t), 2);
	vfu_dma_table_destroy(t);
}

static void test_remove_exact(void)
{
	struct vfu_dma_table *t = vfu_dma_table_create(16);
	struct vfu_dma_window w;

	CU_ASSERT_EQUAL(vfu_dma_table_add(t, 0x10000, 0x2000, R, -1, 0), 0);
	CU_ASSERT_EQUAL(vfu_dma_table_remove(t, 0x10000, 0x1000), -ENOENT);
	CU_ASSERT_EQUAL(vfu_dma_table_remove(t, 0x11000, 0x1000), -ENOENT);
	CU_ASSERT_EQUAL(vfu_dma_table_remove(t, 0x10000, 0x3000), -ENOENT);
	CU_ASSERT_EQUAL(vfu_dma_table_remove(t, 0x10000, 0), -ENOENT);
	CU_ASSERT_EQUAL(vfu_dma_table_remove(t, 0x10000, 0x2000), 0);
	CU_ASSERT_EQUAL(vfu_dma_table_remove(t, 0x10000, 0x2000), -ENOENT);
	CU_ASSERT_EQUAL(vfu_dma_table_find(t, 0x10000, 1, &w), -EFAULT);
	CU_ASSERT_EQUAL(vfu_dma_table_count(t), 0);
	vfu_dma_table_destroy(t);
}

static void test_find_boundaries(void)
{
	struct vfu_dma_table *t = vfu_dma_table_create(16);
	struct vfu_dma_window w;

	CU_ASSERT_EQUAL(vfu_dma_table_add(t, 0x10000, 0x1000, R | W, -1, 0), 0);
	CU_ASSERT_EQUAL(vfu_dma_table_add(t, 0x11000, 0x1000, R, -1, 0), 0);
	CU_ASSERT_EQUAL(vfu_dma_table_add(t, 0x30000, 0x1000, W, -1, 0), 0);
	CU_ASSERT_EQUAL(vfu_dma_table_find(t, 0x10000, 0x1000, &w), 0);
	CU_ASSERT_EQUAL(w.iova, 0x10000);
	CU_ASSERT_EQUAL(w.len, 0x1000);
	CU_ASSERT_EQUAL(w.prot, R | W);
	CU_ASSERT_PTR_NULL(w.local);
	CU_ASSERT_EQUAL(vfu_dma_table_find(t, 0x10fff, 1, &w), 0);
	CU_ASSERT_EQUAL(w.iova, 0x10000);
	CU_ASSERT_EQUAL(vfu_dma_table_find(t, 0x11000, 1, &w), 0);
	CU_ASSERT_EQUAL(w.iova, 0x11000);
	/* find needs one window: adjacency does not help. */
	CU_ASSERT_EQUAL(vfu_dma_table_find(t, 0x10fff, 2, &w), -EFAULT);
	CU_ASSERT_EQUAL(vfu_dma_table_find(t, 0xffff, 1, &w), -EFAULT);
	CU_ASSERT_EQUAL(vfu_dma_table_find(t, 0x12000, 1, &w), -EFAULT);
	CU_ASSERT_EQUAL(vfu_dma_table_find(t, 0x2ffff, 2, &w), -EFAULT);
	CU_ASSERT_EQUAL(vfu_dma_table_find(t, 0x30fff, 1, &w), 0);
	CU_ASSERT_EQUAL(vfu_dma_table_find(t, UINT64_MAX, 2, &w), -EFAULT);
	vfu_dma_table_destroy(t);
}

/* A thread remembers the window it found last: a window removed or replaced, or another table,
 * must never answer from that memory. */
static void test_find_after_change(void)
{
	struct vfu_dma_table *t = vfu_dma_table_create(16), *other = vfu_dma_table_create(16);
	struct vfu_dma_window w;

	CU_ASSERT_EQUAL(vfu_dma_table_add(t, 0x10000, 0x2000, R | W, -1, 0), 0);
	CU_ASSERT_EQUAL(vfu_dma_table_find(t, 0x10000, 0x1000, &w), 0);
	CU_ASSERT_EQUAL(vfu_dma_table_find(t, 0x11000, 0x1000, &w), 0);
	CU_ASSERT_EQUAL(w.prot, R | W);
	/* Another table with nothing there. */
	CU_ASSERT_EQUAL(vfu_dma_table_find(other, 0x11000, 0x1000, &w), -EFAULT);
	CU_ASSERT_EQUAL(vfu_dma_table_find(t, 0x11000, 0x1000, &w), 0);
	/* Removed, then mapped again smaller and read-only. */
	CU_ASSERT_EQUAL(vfu_dma_table_remove(t, 0x10000, 0x2000), 0);
	CU_ASSERT_EQUAL(vfu_dma_table_find(t, 0x11000, 0x1000, &w), -EFAULT);
	CU_ASSERT_EQUAL(vfu_dma_table_add(t, 0x10000, 0x1000, R, -1, 0), 0);
	CU_ASSERT_EQUAL(vfu_dma_table_find(t, 0x10000, 0x1000, &w), 0);
	CU_ASSERT_EQUAL(w.prot, R);
	CU_ASSERT_EQUAL(w.len, 0x1000);
	CU_ASSERT_EQUAL(vfu_dma_table_find(t, 0x11000, 0x1000, &w), -EFAULT);
	/* A window added beside it leaves the remembered one valid and is found too. */
	CU_ASSERT_EQUAL(vfu_dma_table_add(t, 0x20000, 0x1000, W, -1, 0), 0);
	CU_ASSERT_EQUAL(vfu_dma_table_find(t, 0x20000, 0x1000, &w), 0);
	CU_ASSERT_EQUAL(w.prot, W);
	CU_ASSERT_EQUAL(vfu_dma_table_find(t, 0x10000, 0x1000, &w), 0);
	CU_ASSERT_EQUAL(w.prot, R);
	vfu_dma_table_destroy(other);
	vfu_dma_table_destroy(t);
}

static void test_many_sorted(void)
{
	struct vfu_dma_table *t = vfu_dma_table_create(1000);
	struct vfu_dma_window w;

	/* Inserted out of order: lookups must still find each one. */
	for (uint64_t i = 0; i < 500; i++)
		CU_ASSERT_EQUAL(vfu_dma_table_add(t, ((i * 7919) % 500) * 0x2000, 0x1000, R, -1, 0),
				0);
	CU_ASSERT_EQUAL(vfu_dma_table_count(t), 500);
	for (uint64_t i = 0; i < 500; i++) {
		CU_ASSERT_EQUAL(vfu_dma_table_find(t, i * 0x2000 + 0x800, 0x10, &w), 0);
		CU_ASSERT_EQUAL(w.iova, i * 0x2000);
		CU_ASSERT_EQUAL(vfu_dma_table_find(t, i * 0x2000 + 0x1000, 1, &w), -EFAULT);
	}
	for (uint64_t i = 0; i < 500; i += 2)
		CU_ASSERT_EQUAL(vfu_dma_table_remove(t, i * 0x2000, 0x1000), 0);
	CU_ASSERT_EQUAL(vfu_dma_table_count(t), 250);
	CU_ASSERT_EQUAL(vfu_dma_table_find(t, 0x2000, 1, &w), 0);
	CU_ASSERT_EQUAL(vfu_dma_table_find(t, 0x4000, 1, &w), -EFAULT);
	vfu_dma_table_clear(t);
	CU_ASSERT_EQUAL(vfu_dma_table_count(t), 0);
	vfu_dma_table_destroy(t);
}

static int make_memfd(size_t size, uint8_t fill)
{
	int fd = memfd_create("dma-test", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	uint8_t *p;

	if (fd < 0 || ftruncate(fd, (off_t)size) < 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) < 0)
		return -1;
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return -1;
	for (size_t i = 0; i < size; i++)
		p[i] = (uint8_t)(fill + i / 4096);
	munmap(p, size);
	return fd;
}

static void test_fd_mapping(void)
{
	struct vfu_dma_table *t = vfu_dma_table_create(16);
	int fd = make_memfd(0x4000, 0x40);
	struct vfu_dma_window w;

	CU_ASSERT_FATAL(fd >= 0);
	/* Window at fd offset 0x1000: page 1 of the file. */
	CU_ASSERT_EQUAL(vfu_dma_table_add(t, 0x100000, 0x2000, R | W, fd, 0x1000), 0);
	CU_ASSERT_EQUAL(vfu_dma_table_find(t, 0x100000, 0x2000, &w), 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(w.local);
	CU_ASSERT_EQUAL(((uint8_t *)w.local)[0], 0x41);
	CU_ASSERT_EQUAL(((uint8_t *)w.local)[0x1000], 0x42);
	/* Writes go to the shared file. */
	((uint8_t *)w.local)[5] = 0xee;
	{
		uint8_t b = 0;

		CU_ASSERT_EQUAL(pread(fd, &b, 1, 0x1005), 1);
		CU_ASSERT_EQUAL(b, 0xee);
	}
	/* Unaligned fd offset: mapped by rounding down, pointer adjusted. */
	CU_ASSERT_EQUAL(vfu_dma_table_add(t, 0x200000, 0x100, R, fd, 0x2010), 0);
	CU_ASSERT_EQUAL(vfu_dma_table_find(t, 0x200000, 1, &w), 0);
	CU_ASSERT_EQUAL(((uint8_t *)w.local)[0], 0x42);
	/* Beyond the end of the file would SIGBUS later: refused now. */
	CU_ASSERT_EQUAL(vfu_dma_table_add(t, 0x300000, 0x2000, R, fd, 0x3000), -EINVAL);
	CU_ASSERT_EQUAL(vfu_dma_table_add(t, 0x300000, 0x1000, R, fd, 0x10000), -EINVAL);
	CU_ASSERT_EQUAL(vfu_dma_table_add(t, 0x300000, 0x1000, R, fd, UINT64_MAX - 0x10), -EINVAL);
	/* Not an fd at all. */
	CU_ASSERT(vfu_dma_table_add(t, 0x300000, 0x1000, R, 1000000, 0) < 0);
	CU_ASSERT_EQUAL(vfu_dma_table_count(t), 2);
	close(fd); /* the table keeps its mapping, not the fd */
	CU_ASSERT_EQUAL(vfu_dma_table_find(t, 0x100000, 1, &w), 0);
	CU_ASSERT_EQUAL(((uint8_t *)w.local)[5], 0xee);
	vfu_dma_table_destroy(t);
}

static void test_iov(void)
{
	struct vfu_dma_table *t = vfu_dma_table_create(16);
	int fd = make_memfd(0x4000, 0x10);
	struct iovec iov[4];

	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_EQUAL(vfu_dma_table_add(t, 0x10000, 0x1000, R | W, fd, 0), 0);
	CU_ASSERT_EQUAL(vfu_dma_table_add(t, 0x11000, 0x1000, R | W, fd, 0x2000), 0);
	CU_ASSERT_EQUAL(vfu_dma_table_add(t, 0x12000, 0x1000, R, fd, 0x1000), 0);
	CU_ASSERT_EQUAL(vfu_dma_table_add(t, 0x14000, 0x1000, R | W, -1, 0), 0);
	CU_ASSERT_EQUAL(vfu_dma_table_add(t, 0x13000, 0x1000, R | W, -1, 0), 0);

	/* Inside one window. */
	CU_ASSERT_EQUAL(vfu_dma_table_iov(t, 0x10100, 0x100, R | W, iov, 4), 1);
	CU_ASSERT_EQUAL(iov[0].iov_len, 0x100);
	CU_ASSERT_EQUAL(((uint8_t *)iov[0].iov_base)[0], 0x10);
	/* Across two adjacent windows with different backing. */
	CU_ASSERT_EQUAL(vfu_dma_table_iov(t, 0x10f00, 0x200, R | W, iov, 4), 2);
	CU_ASSERT_EQUAL(iov[0].iov_len, 0x100);
	CU_ASSERT_EQUAL(iov[1].iov_len, 0x100);
	CU_ASSERT_EQUAL(((uint8_t *)iov[1].iov_base)[0], 0x12);
	/* Three windows, read only needed. */
	CU_ASSERT_EQUAL(vfu_dma_table_iov(t, 0x10000, 0x3000, R, iov, 4), 3);
	CU_ASSERT_EQUAL(((uint8_t *)iov[2].iov_base)[0], 0x11);
	/* Not enough entries. */
	CU_ASSERT_EQUAL(vfu_dma_table_iov(t, 0x10000, 0x3000, R, iov, 2), -E2BIG);
	/* Write into a read-only window. */
	CU_ASSERT_EQUAL(vfu_dma_table_iov(t, 0x11f00, 0x200, W, iov, 4), -EPERM);
	/* Into a message-only window: no local memory. */
	CU_ASSERT_EQUAL(vfu_dma_table_iov(t, 0x12f00, 0x200, R, iov, 4), -EFAULT);
	/* A hole, before the first, wrap, zero length. */
	CU_ASSERT_EQUAL(vfu_dma_table_iov(t, 0xff00, 0x200, R, iov, 4), -EFAULT);
	CU_ASSERT_EQUAL(vfu_dma_table_iov(t, UINT64_MAX, 2, R, iov, 4), -EFAULT);
	CU_ASSERT_EQUAL(vfu_dma_table_iov(t, 0x10000, 0, R, iov, 4), -EFAULT);
	CU_ASSERT_EQUAL(vfu_dma_table_remove(t, 0x11000, 0x1000), 0);
	CU_ASSERT_EQUAL(vfu_dma_table_iov(t, 0x10f00, 0x200, R, iov, 4), -EFAULT);
	close(fd);
	vfu_dma_table_destroy(t);
}

static void test_read_only_mapping(void)
{
	struct vfu_dma_table *t = vfu_dma_table_create(4);
	int fd = make_memfd(0x1000, 0x33);
	struct vfu_dma_window w;

	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_EQUAL(vfu_dma_table_add(t, 0x1000, 0x1000, R, fd, 0), 0);
	CU_ASSERT_EQUAL(vfu_dma_table_find(t, 0x1000, 1, &w), 0);
	CU_ASSERT_EQUAL(w.prot, R);
	CU_ASSERT_EQUAL(((uint8_t *)w.local)[0], 0x33);
	close(fd);
	vfu_dma_table_destroy(t);
}

struct reader_arg {
	struct vfu_dma_table *t;
	bool stop;    /* atomic */
	long lookups; /* atomic */
	long bad;
};

/* Looks up the stable window while the writer reshapes the table. */
static void *reader(void *arg)
{
	struct reader_arg *a = arg;

	while (!__atomic_load_n(&a->stop, __ATOMIC_ACQUIRE)) {
		struct vfu_dma_window w;
		struct iovec iov[2];

		if (vfu_dma_table_find(a->t, 0x800, 0x10, &w) ||
		    ((uint8_t *)w.local)[0x800] != 0x55)
			a->bad++;
		if (vfu_dma_table_iov(a->t, 0x100, 0x100, R, iov, 2) != 1)
			a->bad++;
		/* A quiescent point: nothing of the lookups above is used any more. */
		__atomic_add_fetch(&a->lookups, 1, __ATOMIC_RELEASE);
	}
	return NULL;
}

/* The writer's side of the quiescent-point protocol: once each reader finished a lookup that
 * began after the changes, the old snapshots can go. */
static void readers_quiesce(struct vfu_dma_table *t, struct reader_arg *a, int n)
{
	for (int i = 0; i < n; i++) {
		long seen = __atomic_load_n(&a[i].lookups, __ATOMIC_ACQUIRE);

		while (__atomic_load_n(&a[i].lookups, __ATOMIC_ACQUIRE) == seen &&
		       !__atomic_load_n(&a[i].stop, __ATOMIC_ACQUIRE))
			sched_yield();
	}
	vfu_dma_table_quiesce(t);
}

static bool readers_done(struct reader_arg *a, int n, long want)
{
	for (int i = 0; i < n; i++)
		if (__atomic_load_n(&a[i].lookups, __ATOMIC_RELAXED) < want)
			return false;
	return true;
}

static void test_concurrent_readers(void)
{
	struct vfu_dma_table *t = vfu_dma_table_create(1024);
	int fd = make_memfd(0x1000, 0x55);
	struct reader_arg a[2] = {{.t = t}, {.t = t}};
	pthread_t th[2];
	uint64_t gen = vfu_dma_table_generation(t);
	int rounds = 0;

	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_EQUAL(vfu_dma_table_add(t, 0, 0x1000, R, fd, 0), 0);
	for (int i = 0; i < 2; i++)
		CU_ASSERT_EQUAL_FATAL(pthread_create(&th[i], NULL, reader, &a[i]), 0);
	/* New snapshots published under readers (the array reshaped 600 times a round), old ones
	 * freed at each round's quiescent point, until both did many lookups (bounded). */
	while (rounds < 20 || (!readers_done(a, 2, 10000) && rounds < 20000)) {
		for (uint64_t i = 1; i <= 300; i++)
			CU_ASSERT_EQUAL(vfu_dma_table_add(t, i * 0x10000, 0x1000, R, -1, 0), 0);
		for (uint64_t i = 1; i <= 300; i++)
			CU_ASSERT_EQUAL(vfu_dma_table_remove(t, i * 0x10000, 0x1000), 0);
		readers_quiesce(t, a, 2);
		rounds++;
	}
	for (int i = 0; i < 2; i++) {
		__atomic_store_n(&a[i].stop, true, __ATOMIC_RELEASE);
		pthread_join(th[i], NULL);
		CU_ASSERT_EQUAL(a[i].bad, 0);
	}
	CU_ASSERT_TRUE(readers_done(a, 2, 10000));
	CU_ASSERT_EQUAL(vfu_dma_table_generation(t), gen + 1 + (uint64_t)rounds * 600);
	close(fd);
	vfu_dma_table_destroy(t);
}

/* Files of tmpfs and hugetlbfs are taken, sealed or not; files of other file systems (their page
 * faults wait for I/O) and device nodes only when the operator trusts the client. */
static void test_fd_policy(void)
{
	struct vfu_dma_table *t = vfu_dma_table_create(16);
	int sealed = make_memfd(0x4000, 1);
	int plain = memfd_create("dma-plain", MFD_CLOEXEC);
	int file_fd, dev_fd = open("/dev/zero", O_RDWR | O_CLOEXEC);
	char path[] = "/var/tmp/dma-table-test-XXXXXX";

	CU_ASSERT_FATAL(t && sealed >= 0 && plain >= 0 && dev_fd >= 0);
	CU_ASSERT_EQUAL_FATAL(ftruncate(plain, 0x4000), 0);
	file_fd = mkstemp(path);
	CU_ASSERT_FATAL(file_fd >= 0);
	unlink(path);
	CU_ASSERT_EQUAL_FATAL(ftruncate(file_fd, 0x4000), 0);
	CU_ASSERT_EQUAL(vfu_dma_table_add(t, 0x100000, 0x4000, R | W, file_fd, 0), -EPERM);
	CU_ASSERT_EQUAL(vfu_dma_table_add(t, 0x100000, 0x4000, R | W, dev_fd, 0), -EPERM);
	CU_ASSERT_EQUAL(vfu_dma_table_add(t, 0x100000, 0x4000, R | W, sealed, 0), 0);
	CU_ASSERT_EQUAL(vfu_dma_table_add(t, 0x200000, 0x4000, R | W, plain, 0), 0);
	/* The seal holds: that client cannot shrink it any more. */
	CU_ASSERT_EQUAL(ftruncate(sealed, 0x1000), -1);
	CU_ASSERT_EQUAL(errno, EPERM);
	vfu_dma_table_set_policy(t, 0, true);
	CU_ASSERT_EQUAL(vfu_dma_table_add(t, 0x300000, 0x4000, R | W, file_fd, 0), 0);
	CU_ASSERT_EQUAL(vfu_dma_table_add(t, 0x400000, 0x4000, R | W, dev_fd, 0), 0);
	vfu_dma_table_destroy(t);
	close(sealed);
	close(plain);
	close(file_fd);
	close(dev_fd);
}

/* The client truncates the file behind a window: an access past the new end (SIGBUS) turns the
 * window into anonymous memory and reports the fault once, through the eventfd; the other window
 * keeps its memory. */
static void test_truncated_window(void)
{
	struct vfu_dma_table *t = vfu_dma_table_create(16);
	int fd = memfd_create("dma-shrunk", MFD_CLOEXEC), keep = make_memfd(0x2000, 0x21);
	struct vfu_dma_window w, wk;
	struct pollfd pfd;
	uint64_t iova = 0, len = 0, before = vfu_dma_fault_count();
	volatile uint8_t *p;

	CU_ASSERT_FATAL(t && fd >= 0 && keep >= 0 && !ftruncate(fd, 0x4000));
	CU_ASSERT_EQUAL_FATAL(vfu_dma_table_add(t, 0x100000, 0x4000, R | W, fd, 0), 0);
	CU_ASSERT_EQUAL_FATAL(vfu_dma_table_add(t, 0x200000, 0x2000, R | W, keep, 0), 0);
	CU_ASSERT_EQUAL_FATAL(vfu_dma_table_find(t, 0x100000, 1, &w), 0);
	CU_ASSERT_EQUAL_FATAL(vfu_dma_table_find(t, 0x200000, 1, &wk), 0);
	p = w.local;
	p[0] = 0x11;
	p[0x1000] = 0x5a;
	CU_ASSERT_EQUAL(p[0x1000], 0x5a);
	pfd = (struct pollfd){.fd = vfu_dma_table_fault_fd(t), .events = POLLIN};
	CU_ASSERT_EQUAL(poll(&pfd, 1, 0), 0);
	CU_ASSERT_EQUAL_FATAL(ftruncate(fd, 0x1000), 0);
	/* Below the new end too: the whole window was replaced. */
	CU_ASSERT_EQUAL(p[0x2000], 0);
	CU_ASSERT_EQUAL(p[0], 0);
	CU_ASSERT_EQUAL(p[0x1000], 0);
	p[0x3fff] = 7;
	CU_ASSERT_EQUAL(p[0x3fff], 7);
	CU_ASSERT_EQUAL(((volatile uint8_t *)wk.local)[0x1000], 0x22);
	CU_ASSERT_EQUAL(vfu_dma_fault_count(), before + 1);
	CU_ASSERT_EQUAL(poll(&pfd, 1, 0), 1);
	CU_ASSERT_EQUAL(vfu_dma_table_faults(t, &iova, &len), 1);
	CU_ASSERT_EQUAL(iova, 0x100000);
	CU_ASSERT_EQUAL(len, 0x4000);
	CU_ASSERT_EQUAL(poll(&pfd, 1, 0), 0);
	CU_ASSERT_EQUAL(vfu_dma_table_faults(t, &iova, &len), 0);
	/* The replaced window is unmapped like any other. */
	CU_ASSERT_EQUAL(vfu_dma_table_remove(t, 0x100000, 0x4000), 0);
	vfu_dma_table_destroy(t);
	close(fd);
	close(keep);
}

/* Thousands of watched windows (slots past the first chunk of 1024), in two rounds (the second
 * reuses freed slots): a fault in the last one is found and reported with its window. */
static void test_many_watched_windows(void)
{
	enum { N = 3000 };
	int fd = memfd_create("dma-many", MFD_CLOEXEC);
	uint64_t iova, len;

	CU_ASSERT_FATAL(fd >= 0 && !ftruncate(fd, (off_t)N * 4096));
	for (int round = 0; round < 2; round++) {
		struct vfu_dma_table *t = vfu_dma_table_create(4096);
		struct vfu_dma_window w;
		int added = 0;

		CU_ASSERT_PTR_NOT_NULL_FATAL(t);
		for (int i = 0; i < N; i++)
			added += !vfu_dma_table_add(t, 0x100000000ull + (uint64_t)i * 0x10000, 4096,
						    R | W, fd, (uint64_t)i * 4096);
		CU_ASSERT_EQUAL_FATAL(added, N);
		CU_ASSERT_EQUAL_FATAL(vfu_dma_table_find(t, 0x100000000ull + (N - 1) * 0x10000ull,
							  1, &w), 0);
		CU_ASSERT_EQUAL(ftruncate(fd, 4096), 0);
		CU_ASSERT_EQUAL(((volatile uint8_t *)w.local)[0], 0);
		CU_ASSERT_EQUAL(vfu_dma_table_faults(t, &iova, &len), 1);
		CU_ASSERT_EQUAL(iova, 0x100000000ull + (N - 1) * 0x10000ull);
		CU_ASSERT_EQUAL(len, 4096);
		CU_ASSERT_EQUAL(ftruncate(fd, (off_t)N * 4096), 0);
		vfu_dma_table_destroy(t);
	}
	close(fd);
}

/* A SIGBUS outside every window, or one that was sent, is not ours to hide: the process still
 * dies of it (or, under ASan, reports it and exits non-zero). */
static void test_foreign_sigbus_kills(void)
{
	struct vfu_dma_table *t = vfu_dma_table_create(16);
	int status = 0;
	pid_t pid;

	CU_ASSERT_PTR_NOT_NULL_FATAL(t); /* the handler is installed */
	pid = fork();
	CU_ASSERT_FATAL(pid >= 0);
	if (pid == 0) {
		int fd = memfd_create("foreign", MFD_CLOEXEC);
		volatile uint8_t *p;

		if (fd < 0 || ftruncate(fd, 0x2000) < 0)
			_exit(2);
		p = mmap(NULL, 0x2000, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (p == MAP_FAILED || ftruncate(fd, 0) < 0)
			_exit(2);
		p[0] = 1;
		_exit(0);
	}
	CU_ASSERT_EQUAL(waitpid(pid, &status, 0), pid);
	CU_ASSERT((WIFSIGNALED(status) && WTERMSIG(status) == SIGBUS) ||
		  (WIFEXITED(status) && WEXITSTATUS(status) != 0 && WEXITSTATUS(status) != 2));
	/* Nor a SIGBUS someone sent (no address), even with a window mapped. */
	pid = fork();
	CU_ASSERT_FATAL(pid >= 0);
	if (pid == 0) {
		int fd = memfd_create("sent", MFD_CLOEXEC);

		if (fd < 0 || ftruncate(fd, 0x2000) < 0 ||
		    vfu_dma_table_add(t, 0x100000, 0x2000, R | W, fd, 0))
			_exit(2);
		raise(SIGBUS);
		_exit(0);
	}
	CU_ASSERT_EQUAL(waitpid(pid, &status, 0), pid);
	CU_ASSERT((WIFSIGNALED(status) && WTERMSIG(status) == SIGBUS) ||
		  (WIFEXITED(status) && WEXITSTATUS(status) != 0 && WEXITSTATUS(status) != 2));
	vfu_dma_table_destroy(t);
}

static void test_byte_limit(void)
{
	struct vfu_dma_table *t = vfu_dma_table_create(16);
	int fd = make_memfd(0x8000, 1);

	CU_ASSERT_FATAL(t && fd >= 0);
	vfu_dma_table_set_policy(t, 0x6000, false);
	CU_ASSERT_EQUAL(vfu_dma_table_add(t, 0x100000, 0x4000, R, fd, 0), 0);
	CU_ASSERT_EQUAL(vfu_dma_table_add(t, 0x200000, 0x4000, R, fd, 0x4000), -ENOSPC);
	/* fd-less windows map nothing: not counted. */
	CU_ASSERT_EQUAL(vfu_dma_table_add(t, 0x300000, 0x100000, R, -1, 0), 0);
	CU_ASSERT_EQUAL(vfu_dma_table_remove(t, 0x100000, 0x4000), 0);
	CU_ASSERT_EQUAL(vfu_dma_table_add(t, 0x200000, 0x4000, R, fd, 0x4000), 0);
	vfu_dma_table_destroy(t);
	close(fd);
}

/* A removed window leaves the lookups at once, stays mapped until the quiescent point, and a
 * pinned one until the pin is put, whatever happens to the table. */
static void test_pins_and_quiesce(void)
{
	struct vfu_dma_table *t = vfu_dma_table_create(16);
	struct vfu_dma_region *pin;
	struct vfu_dma_window w;
	int fd = make_memfd(0x4000, 0x30);
	uint8_t *looked, *pinned;
	void *p = NULL;

	CU_ASSERT_FATAL(t && fd >= 0);
	CU_ASSERT_EQUAL(vfu_dma_table_add(t, 0x100000, 0x2000, R | W, fd, 0), 0);
	CU_ASSERT_EQUAL(vfu_dma_table_add(t, 0x200000, 0x2000, R | W, fd, 0x2000), 0);
	CU_ASSERT_PTR_NULL(vfu_dma_table_pin(t, 0x101000, 0x2000, R, &p)); /* crosses the end */
	CU_ASSERT_EQUAL(errno, EFAULT);
	CU_ASSERT_PTR_NULL(vfu_dma_table_pin(t, 0x300000, 0x10, R, &p));
	pin = vfu_dma_table_pin(t, 0x201000, 0x1000, R | W, &p);
	CU_ASSERT_PTR_NOT_NULL_FATAL(pin);
	pinned = p;
	CU_ASSERT_EQUAL(pinned[0], 0x33);
	CU_ASSERT_EQUAL(vfu_dma_table_find(t, 0x100000, 1, &w), 0);
	looked = w.local;
	/* Both leave the lookups; neither is unmapped yet. */
	CU_ASSERT_EQUAL(vfu_dma_table_remove(t, 0x100000, 0x2000), 0);
	CU_ASSERT_EQUAL(vfu_dma_table_remove(t, 0x200000, 0x2000), 0);
	CU_ASSERT_EQUAL(vfu_dma_table_find(t, 0x100000, 1, &w), -EFAULT);
	CU_ASSERT_EQUAL(vfu_dma_table_count(t), 0);
	CU_ASSERT_EQUAL(looked[0], 0x30);
	CU_ASSERT_EQUAL(pinned[0], 0x33);
	/* Quiescent point: the unpinned one goes (mincore says unmapped), the pinned stays. */
	vfu_dma_table_quiesce(t);
	{
		unsigned char vec;
		uintptr_t page = (uintptr_t)looked & ~(uintptr_t)4095;

		CU_ASSERT_EQUAL(mincore((void *)page, 4096, &vec), -1);
		CU_ASSERT_EQUAL(errno, ENOMEM);
	}
	pinned[1] = 0x77;
	/* The table may go too: the pin keeps its window alive. */
	vfu_dma_table_destroy(t);
	CU_ASSERT_EQUAL(pinned[0], 0x33);
	CU_ASSERT_EQUAL(pinned[1], 0x77);
	vfu_dma_region_put(pin);
	close(fd);
}

CUNIT_SUITE(vfu_dma_table, NULL, NULL, {"add_overlap", test_add_overlap},
	    {"add_invalid", test_add_invalid}, {"remove_exact", test_remove_exact},
	    {"find_boundaries", test_find_boundaries}, {"find_after_change", test_find_after_change},
	    {"many_sorted", test_many_sorted},
	    {"fd_mapping", test_fd_mapping}, {"iov", test_iov},
	    {"read_only_mapping", test_read_only_mapping},
	    {"concurrent_readers", test_concurrent_readers},
	    {"fd_policy", test_fd_policy},
	    {"truncated_window", test_truncated_window},
	    {"foreign_sigbus_kills", test_foreign_sigbus_kills},
	    {"many_watched_windows", test_many_watched_windows}, {"byte_limit", test_byte_limit},
	    {"pins_and_quiesce", test_pins_and_quiesce})
