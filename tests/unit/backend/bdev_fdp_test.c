/* tests/unit/backend/bdev_fdp_test.c - the placement bdev (bdev_fdp.c) over an aio file: each
 * handle's data in reclaim units of its own (read from the base file through the map on it),
 * writes split at a reclaim unit boundary, RUH Update, the random model workload, garbage
 * collection under overwrite (every block still right afterwards, MBMW above what the host
 * wrote), the map found again by a new bdev on the same file, a layout of other options
 * refused, and writes from channels on two threads at once. */
#include "backend/bdev.h"
#include "common/evloop.h"
#include "tests/unit/backend/bdev_ut_util.h"
#include "tests/unit/cunit_runner.h"
#include "tests/unit/fdp_create_wait.h"

#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BS 512u
#define RUB 64u		       /* blocks per reclaim unit */
#define BASE_BYTES (1u << 20) /* 2048 blocks: ~29 reclaim units */

struct layout {
	uint64_t ru_blocks, nru, num_blocks, map_off, data_off;
};

static void read_layout(const char *path, struct layout *l)
{
	uint8_t sb[BS];
	int fd = open(path, O_RDONLY);

	CU_ASSERT_TRUE_FATAL(fd >= 0);
	CU_ASSERT_EQUAL_FATAL(pread(fd, sb, BS, 0), (ssize_t)BS);
	close(fd);
	CU_ASSERT_EQUAL(memcmp(sb, "NVMEEMU-FDP-MAP1", 16), 0);
	memcpy(&l->ru_blocks, sb + 32, 8);
	memcpy(&l->nru, sb + 40, 8);
	memcpy(&l->num_blocks, sb + 48, 8);
	memcpy(&l->map_off, sb + 56, 8);
	memcpy(&l->data_off, sb + 72, 8);
}

/* Where the map on the base file puts lba (physical block + 1, 0 unmapped). */
static uint64_t file_map(const char *path, const struct layout *l, uint64_t lba)
{
	uint64_t e = 0;
	int fd = open(path, O_RDONLY);

	CU_ASSERT_TRUE_FATAL(fd >= 0);
	CU_ASSERT_EQUAL(pread(fd, &e, 8, (off_t)(l->map_off * BS + lba * 8)), 8);
	close(fd);
	return e;
}

static int file_block_is(const char *path, const struct layout *l, uint64_t phys,
			 const void *want)
{
	uint8_t buf[BS];
	int fd = open(path, O_RDONLY);

	CU_ASSERT_TRUE_FATAL(fd >= 0);
	CU_ASSERT_EQUAL(pread(fd, buf, BS, (off_t)((l->data_off + phys) * BS)), (ssize_t)BS);
	close(fd);
	return !memcmp(buf, want, BS);
}

static int pwrite_h(struct bdev_channel *ch, uint16_t h, uint64_t lba, uint64_t n, void *buf,
		    uint32_t flags)
{
	struct bdev_io *io = ut_io_alloc_size(UT_IO_SIZE);
	struct iovec iov = {.iov_base = buf, .iov_len = n * BS};
	struct ut_result res = {0};
	int rc;

	ut_io_rw(io, BDEV_IO_WRITE, lba, n, &iov, 1, &res);
	io->placement = h;
	io->flags = flags;
	rc = ut_submit_wait(ch, io, &res);
	free(io);
	return rc;
}

/* Threads of this process now. */
static int nthreads(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int n = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

static struct bdev *make(const char *path, const char *aio, uint16_t nruh, uint64_t rub)
{
	struct bdev_fdp_opts o = {.nruh = nruh, .ru_blocks = rub};
	struct bdev *b = NULL;

	(void)path;
	CU_ASSERT_EQUAL_FATAL(fdp_create_wait("Fdp0", aio, &o, &b, NULL, 0), 0);
	return b;
}

static void test_placement(void)
{
	char path[64];
	struct bdev *base = ut_aio_temp_create("FdpBase", BASE_BYTES, path), *b;
	struct ut_dev d;
	struct layout l;
	uint8_t a[4][BS], back[BS * 4];
	uint64_t p[4];
	const struct bdev_placement_geom *g;

	(void)base;
	b = make(path, "FdpBase", 2, RUB);
	g = bdev_get_placement(b);
	CU_ASSERT_PTR_NOT_NULL_FATAL(g);
	CU_ASSERT_PTR_NULL(bdev_get_placement(base));
	CU_ASSERT_EQUAL(g->nruh, 2);
	CU_ASSERT_EQUAL(g->ru_blocks, RUB);
	/* nruh + 2 reclaim units are spare. */
	CU_ASSERT_EQUAL(bdev_get_num_blocks(b), (g->nru - 4) * RUB);
	CU_ASSERT_TRUE(bdev_get_num_blocks(b) < bdev_get_num_blocks(base));
	read_layout(path, &l);
	CU_ASSERT_EQUAL(l.nru, g->nru);
	ut_dev_open(&d, b);
	for (int i = 0; i < 4; i++)
		ut_pattern(a[i], BS, 100 + i);
	/* Handle 0 at LBA 10, handle 1 at LBA 500, handle 0 at LBA 11, handle 1 at 501. */
	CU_ASSERT_EQUAL(pwrite_h(d.ch, 0, 10, 1, a[0], 0), 0);
	CU_ASSERT_EQUAL(pwrite_h(d.ch, 1, 500, 1, a[1], 0), 0);
	CU_ASSERT_EQUAL(pwrite_h(d.ch, 0, 11, 1, a[2], 0), 0);
	CU_ASSERT_EQUAL(pwrite_h(d.ch, 1, 501, 1, a[3], BDEV_IO_F_FUA), 0);
	CU_ASSERT_EQUAL(ut_nodata_sync(d.ch, BDEV_IO_FLUSH, 0, 0, 0), 0);
	p[0] = file_map(path, &l, 10);
	p[1] = file_map(path, &l, 500);
	p[2] = file_map(path, &l, 11);
	p[3] = file_map(path, &l, 501);
	for (int i = 0; i < 4; i++) {
		CU_ASSERT_NOT_EQUAL_FATAL(p[i], 0);
		CU_ASSERT_TRUE(file_block_is(path, &l, p[i] - 1, a[i]));
	}
	/* Each handle's blocks one after the other in its unit; the two units differ. */
	CU_ASSERT_EQUAL((p[0] - 1) / RUB, (p[2] - 1) / RUB);
	CU_ASSERT_EQUAL(p[2], p[0] + 1);
	CU_ASSERT_EQUAL((p[1] - 1) / RUB, (p[3] - 1) / RUB);
	CU_ASSERT_NOT_EQUAL((p[0] - 1) / RUB, (p[1] - 1) / RUB);
	CU_ASSERT_EQUAL(bdev_placement_ruamw(b, 0), RUB - 2);
	CU_ASSERT_EQUAL(bdev_placement_ruamw(b, 2), 0); /* no such handle */
	/* A placement past the handles is handle 0. */
	CU_ASSERT_EQUAL(pwrite_h(d.ch, 7, 12, 1, a[0], 0), 0);
	CU_ASSERT_EQUAL(bdev_placement_ruamw(b, 0), RUB - 3);
	/* A write bigger than what is left is split at the unit's end: RUB blocks from handle 1
	 * (RUB - 2 left) fill its unit and start the next. */
	{
		uint8_t *big = malloc(RUB * BS), *rb = malloc(RUB * BS);
		uint64_t first, last;

		for (uint32_t i = 0; i < RUB; i++)
			ut_pattern(big + i * BS, BS, 1000 + i);
		CU_ASSERT_EQUAL(pwrite_h(d.ch, 1, 1000, RUB, big, BDEV_IO_F_FUA), 0);
		first = file_map(path, &l, 1000);
		last = file_map(path, &l, 1000 + RUB - 1);
		CU_ASSERT_EQUAL((first - 1) / RUB, (p[1] - 1) / RUB);
		CU_ASSERT_NOT_EQUAL((last - 1) / RUB, (first - 1) / RUB);
		CU_ASSERT_EQUAL((file_map(path, &l, 1000 + RUB - 3) - 1) % RUB, RUB - 1);
		CU_ASSERT_EQUAL((file_map(path, &l, 1000 + RUB - 2) - 1) % RUB, 0);
		CU_ASSERT_EQUAL(bdev_placement_ruamw(b, 1), RUB - 2);
		CU_ASSERT_EQUAL(ut_rw_sync(d.ch, BS, BDEV_IO_READ, 1000, RUB, rb, NULL), 0);
		CU_ASSERT_EQUAL(memcmp(big, rb, RUB * BS), 0);
		free(big);
		free(rb);
	}
	/* RUH Update: handle 0 goes to a fresh unit. */
	CU_ASSERT_EQUAL(bdev_placement_ruh_update(b, 0), 0);
	CU_ASSERT_EQUAL(bdev_placement_ruh_update(b, 2), -EINVAL);
	CU_ASSERT_EQUAL(bdev_placement_ruamw(b, 0), RUB);
	CU_ASSERT_EQUAL(pwrite_h(d.ch, 0, 13, 1, a[1], BDEV_IO_F_FUA), 0);
	CU_ASSERT_EQUAL(bdev_placement_ruamw(b, 0), RUB - 1);
	CU_ASSERT_NOT_EQUAL((file_map(path, &l, 13) - 1) / RUB, (p[0] - 1) / RUB);
	/* Reads through the map; unmapped reads zeroes; deallocate and write zeroes unmap. */
	CU_ASSERT_EQUAL(ut_rw_sync(d.ch, BS, BDEV_IO_READ, 10, 2, back, NULL), 0);
	CU_ASSERT_EQUAL(memcmp(back, a[0], BS), 0);
	CU_ASSERT_EQUAL(memcmp(back + BS, a[2], BS), 0);
	CU_ASSERT_EQUAL(ut_rw_sync(d.ch, BS, BDEV_IO_READ, 499, 3, back, NULL), 0);
	CU_ASSERT_TRUE(ut_is_zero(back, BS));
	CU_ASSERT_EQUAL(memcmp(back + BS, a[1], BS), 0);
	CU_ASSERT_EQUAL(memcmp(back + 2 * BS, a[3], BS), 0);
	{
		struct bdev_range r = {.offset_blocks = 500, .num_blocks = 1};

		CU_ASSERT_EQUAL(ut_unmap_sync(d.ch, &r, 1), 0);
	}
	CU_ASSERT_EQUAL(ut_nodata_sync(d.ch, BDEV_IO_WRITE_ZEROES, 11, 1, BDEV_IO_F_FUA), 0);
	CU_ASSERT_EQUAL(ut_nodata_sync(d.ch, BDEV_IO_FLUSH, 0, 0, 0), 0);
	CU_ASSERT_EQUAL(ut_rw_sync(d.ch, BS, BDEV_IO_READ, 10, 2, back, NULL), 0);
	CU_ASSERT_TRUE(ut_is_zero(back + BS, BS));
	CU_ASSERT_EQUAL(file_map(path, &l, 11), 0);
	CU_ASSERT_EQUAL(file_map(path, &l, 500), 0);
	{
		struct bdev_placement_stats st;

		bdev_placement_get_stats(b, &st);
		CU_ASSERT_EQUAL(st.host_bytes, (6 + RUB) * BS);
		CU_ASSERT_EQUAL(st.media_bytes, st.host_bytes);
		CU_ASSERT_EQUAL(st.erased_bytes, 4 * RUB * BS); /* units handed out */
		CU_ASSERT_EQUAL(st.ruh_updates, 1);
	}
	ut_dev_close(&d);
	/* Deleting never waits for the owner thread: the name is free at once; the base stays
	 * claimed until the owner has drained, exited and reported on the loop, which ends the
	 * deletion (the thread joined, the base released). */
	{
		int threads = nthreads();
		bool gone = false;

		CU_ASSERT_EQUAL(bdev_delete_cb("Fdp0", fdp_deleted_cb, &gone), 0);
		CU_ASSERT_PTR_NULL(bdev_lookup("Fdp0"));
		CU_ASSERT_FALSE(gone);
		CU_ASSERT_EQUAL(bdev_delete("FdpBase"), -EBUSY);
		CU_ASSERT_EQUAL(bdev_when_destroyed(NULL, NULL), -EINPROGRESS);
		while (!gone)
			evloop_run_once(fdp_test_loop(), 100);
		CU_ASSERT_EQUAL(bdev_when_destroyed(NULL, NULL), 0);
		CU_ASSERT_EQUAL(nthreads(), threads - 1);
	}
	/* The same file again: the map is found, the data read back through it. */
	{
		struct bdev_fdp_opts o = {.nruh = 3, .ru_blocks = RUB};
		struct bdev *nb = NULL;
		char msg[256] = "";
		int threads = nthreads();

		/* A layout of other handles on the base: reported by the owner thread after its
		 * superblock read, no bdev left, the thread gone, the base free again. */
		CU_ASSERT_EQUAL(fdp_create_wait("Fdp0", "FdpBase", &o, &nb, msg, sizeof(msg)),
				-EINVAL);
		CU_ASSERT_PTR_NOT_NULL(strstr(msg, "placement layout of other parameters (2 handles"));
		CU_ASSERT_PTR_NULL(nb);
		CU_ASSERT_PTR_NULL(bdev_lookup("Fdp0"));
		CU_ASSERT_EQUAL(nthreads(), threads);
		o.nruh = 2;
		o.ru_blocks = RUB * 2; /* other unit size */
		CU_ASSERT_EQUAL(fdp_create_wait("Fdp0", "FdpBase", &o, NULL, msg, sizeof(msg)),
				-EINVAL);
		CU_ASSERT_PTR_NOT_NULL(strstr(msg, "reclaim units of 64 blocks"));
		CU_ASSERT_PTR_NULL(bdev_lookup("Fdp0"));
		CU_ASSERT_EQUAL(nthreads(), threads);
		o.nruh = 0;
		o.ru_blocks = RUB;
		CU_ASSERT_EQUAL(fdp_create_wait("Fdp0", "FdpBase", &o, NULL, NULL, 0), -EINVAL);
		o.nruh = 2;
		o.ru_blocks = 0;
		CU_ASSERT_EQUAL(fdp_create_wait("Fdp0", "FdpBase", &o, NULL, NULL, 0), -EINVAL);
		o.ru_blocks = BASE_BYTES / BS / 4; /* too few units */
		CU_ASSERT_EQUAL(fdp_create_wait("Fdp0", "FdpBase", &o, NULL, NULL, 0), -EINVAL);
		o.ru_blocks = RUB;
		CU_ASSERT_EQUAL(fdp_create_wait("Fdp0", "nope", &o, NULL, NULL, 0), -ENODEV);
		CU_ASSERT_EQUAL(nthreads(), threads);
	}
	b = make(path, "FdpBase", 2, RUB);
	{
		/* The statistics go on from the last Flush's (kept in the superblock). */
		struct bdev_placement_stats st;

		bdev_placement_get_stats(b, &st);
		CU_ASSERT_EQUAL(st.host_bytes, (6 + RUB) * BS);
		CU_ASSERT_EQUAL(st.media_bytes, st.host_bytes);
		CU_ASSERT_EQUAL(st.erased_bytes, 4 * RUB * BS);
	}
	CU_ASSERT_EQUAL(bdev_delete("FdpBase"), -EBUSY);
	ut_dev_open(&d, b);
	CU_ASSERT_EQUAL(ut_rw_sync(d.ch, BS, BDEV_IO_READ, 10, 1, back, NULL), 0);
	CU_ASSERT_EQUAL(memcmp(back, a[0], BS), 0);
	CU_ASSERT_EQUAL(ut_rw_sync(d.ch, BS, BDEV_IO_READ, 501, 1, back, NULL), 0);
	CU_ASSERT_EQUAL(memcmp(back, a[3], BS), 0);
	CU_ASSERT_EQUAL(ut_rw_sync(d.ch, BS, BDEV_IO_READ, 13, 1, back, NULL), 0);
	CU_ASSERT_EQUAL(memcmp(back, a[1], BS), 0);
	CU_ASSERT_EQUAL(ut_rw_sync(d.ch, BS, BDEV_IO_READ, 11, 1, back, NULL), 0);
	CU_ASSERT_TRUE(ut_is_zero(back, BS));
	/* After a restart each handle starts in a fresh unit. */
	CU_ASSERT_EQUAL(bdev_placement_ruamw(b, 0), RUB);
	ut_dev_close(&d);
	CU_ASSERT_EQUAL(fdp_delete_wait("Fdp0"), 0);
	ut_aio_temp_delete("FdpBase", path);
}

static void test_model(void)
{
	char path[64];
	struct bdev *b;
	struct ut_dev d;

	ut_aio_temp_create("FdpBase", BASE_BYTES, path);
	b = make(path, "FdpBase", 4, 32);
	ut_dev_open(&d, b);
	CU_ASSERT_EQUAL(ut_model_run(d.ch, BS, bdev_get_num_blocks(b), 7, 200, 8), 0);
	ut_dev_close(&d);
	CU_ASSERT_EQUAL(fdp_delete_wait("Fdp0"), 0);
	ut_aio_temp_delete("FdpBase", path);
}

/* The whole exposed space overwritten several times by two handles in turn: GC must run
 * (there are only nruh + 2 spare units), and every block reads back its last write, also
 * after the bdev was made again on the file. */
static void test_gc(void)
{
	char path[64];
	struct bdev *b;
	struct ut_dev d;
	uint64_t n;
	uint8_t *buf = malloc(8 * BS), *back = malloc(8 * BS);
	struct bdev_placement_stats st;
	uint32_t *gen;
	unsigned int seed = 5;

	ut_aio_temp_create("FdpBase", BASE_BYTES, path);
	b = make(path, "FdpBase", 2, RUB);
	n = bdev_get_num_blocks(b);
	gen = calloc(n, sizeof(*gen));
	ut_dev_open(&d, b);
	for (int pass = 0; pass < 6; pass++) {
		for (uint64_t lba = 0; lba + 8 <= n; lba += 8) {
			/* Random-ish order: a stride through the space. */
			uint64_t at = ((lba / 8 * 37 + (uint64_t)pass * 11) % (n / 8)) * 8;
			uint32_t cnt = 1 + (uint32_t)(rand_r(&seed) % 8);

			for (uint32_t i = 0; i < cnt; i++) {
				gen[at + i]++;
				ut_pattern(buf + i * BS, BS, (unsigned int)((at + i) * 131 + gen[at + i]));
			}
			CU_ASSERT_EQUAL_FATAL(pwrite_h(d.ch, (uint16_t)(at / 8 % 2), at, cnt, buf, 0), 0);
		}
	}
	bdev_placement_get_stats(b, &st);
	CU_ASSERT_TRUE(st.gc_runs > 0);
	CU_ASSERT_TRUE(st.gc_bytes > 0);
	CU_ASSERT_EQUAL(st.media_bytes, st.host_bytes + st.gc_bytes);
	CU_ASSERT_TRUE(st.erased_bytes > n * BS);
	{
		struct bdev_placement_event ev[BDEV_PLACEMENT_EVENTS];
		unsigned int k = bdev_placement_get_events(b, ev, BDEV_PLACEMENT_EVENTS);
		uint64_t moved = 0;

		/* A reclaimed unit each: blocks moved, the first LBA, the handle that wrote it. */
		CU_ASSERT_TRUE(k > 0);
		for (unsigned int i = 0; i < k; i++) {
			CU_ASSERT_TRUE(ev[i].nlbam > 0 && ev[i].nlbam <= RUB);
			CU_ASSERT_TRUE(ev[i].lba < n);
			CU_ASSERT_TRUE(ev[i].ruh <= 2); /* 2: a unit the GC itself wrote */
			CU_ASSERT_TRUE(!i || ev[i].time_us >= ev[i - 1].time_us);
			moved += ev[i].nlbam;
		}
		CU_ASSERT_TRUE(moved * BS <= st.gc_bytes);
	}
	for (int round = 0; round < 2; round++) {
		for (uint64_t lba = 0; lba < n; lba++) {
			CU_ASSERT_EQUAL_FATAL(ut_rw_sync(d.ch, BS, BDEV_IO_READ, lba, 1, back, NULL), 0);
			if (!gen[lba]) {
				CU_ASSERT_TRUE(ut_is_zero(back, BS));
				continue;
			}
			ut_pattern(buf, BS, (unsigned int)(lba * 131 + gen[lba]));
			CU_ASSERT_EQUAL_FATAL(memcmp(buf, back, BS), 0);
		}
		if (round)
			break;
		CU_ASSERT_EQUAL(ut_nodata_sync(d.ch, BDEV_IO_FLUSH, 0, 0, 0), 0);
		ut_dev_close(&d);
		CU_ASSERT_EQUAL(fdp_delete_wait("Fdp0"), 0);
		b = make(path, "FdpBase", 2, RUB);
		ut_dev_open(&d, b);
	}
	ut_dev_close(&d);
	CU_ASSERT_EQUAL(fdp_delete_wait("Fdp0"), 0);
	ut_aio_temp_delete("FdpBase", path);
	free(gen);
	free(buf);
	free(back);
}

/* Channels on two threads writing (and reading back) disjoint halves at once. */
struct writer {
	struct bdev *b;
	uint64_t start, n;
	uint16_t h;
	int bad;
};

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	struct bdev_channel *ch;
	uint8_t buf[BS], back[BS];

	if (bdev_channel_create(w->b, &ch)) {
		w->bad = 1;
		return NULL;
	}
	for (int pass = 0; pass < 3; pass++)
		for (uint64_t i = 0; i < w->n; i++) {
			struct bdev_io *io = ut_io_alloc_size(UT_IO_SIZE);
			struct iovec iov = {.iov_base = buf, .iov_len = BS};
			struct ut_result res = {0};
			int done = 0;

			ut_pattern(buf, BS, (unsigned int)(w->start + i + pass));
			ut_io_rw(io, BDEV_IO_WRITE, w->start + i, 1, &iov, 1, &res);
			res.done_count = &done;
			io->placement = w->h;
			bdev_submit(ch, io);
			if (ut_wait(ch, &done, 1, 5000) || res.status)
				w->bad++;
			free(io);
		}
	for (uint64_t i = 0; i < w->n; i++) {
		struct bdev_io *io = ut_io_alloc_size(UT_IO_SIZE);
		struct iovec iov = {.iov_base = back, .iov_len = BS};
		struct ut_result res = {0};
		int done = 0;

		ut_io_rw(io, BDEV_IO_READ, w->start + i, 1, &iov, 1, &res);
		res.done_count = &done;
		bdev_submit(ch, io);
		if (ut_wait(ch, &done, 1, 5000) || res.status)
			w->bad++;
		ut_pattern(buf, BS, (unsigned int)(w->start + i + 2));
		if (memcmp(buf, back, BS))
			w->bad++;
		free(io);
	}
	bdev_channel_destroy(ch);
	return NULL;
}

static void test_threads(void)
{
	char path[64];
	struct bdev *b;
	struct writer w[2];
	pthread_t t[2];

	ut_aio_temp_create("FdpBase", BASE_BYTES, path);
	b = make(path, "FdpBase", 2, RUB);
	CU_ASSERT_EQUAL_FATAL(bdev_open(b), 0);
	for (int i = 0; i < 2; i++) {
		w[i] = (struct writer){.b = b, .start = (uint64_t)i * 600, .n = 500, .h = (uint16_t)i};
		CU_ASSERT_EQUAL_FATAL(pthread_create(&t[i], NULL, writer_main, &w[i]), 0);
	}
	for (int i = 0; i < 2; i++) {
		pthread_join(t[i], NULL);
		CU_ASSERT_EQUAL(w[i].bad, 0);
	}
	bdev_close(b);
	CU_ASSERT_EQUAL(fdp_delete_wait("Fdp0"), 0);
	ut_aio_temp_delete("FdpBase", path);
}

CUNIT_SUITE(bdev_fdp, NULL, NULL, {"placement", test_placement}, {"model", test_model},
	    {"gc", test_gc}, {"threads", test_threads})
