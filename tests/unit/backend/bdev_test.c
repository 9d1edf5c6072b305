/* tests/unit/backend/bdev_test.c - bdev core: registry rules, open/claim, UUIDs, info, channel
 * lifetime, request validation, the completion queue and its eventfd, counters. */
#include "backend/bdev.h"
#include "backend/bdev_internal.h"
#include "tests/unit/backend/bdev_ut_util.h"
#include "tests/unit/cunit_runner.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static int bdev_ut_cleanup(void)
{
	return bdev_delete_all();
}

static void test_create_lookup_duplicate(void)
{
	struct bdev *a = NULL, *b = NULL;
	char longname[BDEV_NAME_MAX + 2];

	CU_ASSERT_EQUAL(bdev_malloc_create("m0", 16, 512, NULL, &a), 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(a);
	CU_ASSERT_PTR_EQUAL(bdev_lookup("m0"), a);
	CU_ASSERT_PTR_NULL(bdev_lookup("m1"));
	CU_ASSERT_PTR_NULL(bdev_lookup(NULL));
	/* Names are unique across modules. */
	CU_ASSERT_EQUAL(bdev_malloc_create("m0", 16, 512, NULL, &b), -EEXIST);
	CU_ASSERT_EQUAL(bdev_null_create("m0", 16, 512, NULL, false, &b), -EEXIST);
	CU_ASSERT_PTR_NULL(b);
	CU_ASSERT_EQUAL(bdev_null_create("n0", 16, 4096, NULL, false, &b), 0);
	CU_ASSERT_PTR_EQUAL(bdev_lookup("n0"), b);
	CU_ASSERT_STRING_EQUAL(bdev_get_name(b), "n0");
	CU_ASSERT_STRING_EQUAL(bdev_get_module_name(a), "malloc");
	CU_ASSERT_STRING_EQUAL(bdev_get_module_name(b), "null");
	CU_ASSERT_EQUAL(bdev_get_block_size(b), 4096);
	CU_ASSERT_EQUAL(bdev_get_num_blocks(a), 16);

	/* Bad parameters. */
	CU_ASSERT_EQUAL(bdev_malloc_create("", 16, 512, NULL, NULL), -EINVAL);
	CU_ASSERT_EQUAL(bdev_malloc_create(NULL, 16, 512, NULL, NULL), -EINVAL);
	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	CU_ASSERT_EQUAL(bdev_malloc_create(longname, 16, 512, NULL, NULL), -EINVAL);
	longname[BDEV_NAME_MAX] = '\0';
	CU_ASSERT_EQUAL(bdev_null_create(longname, 16, 512, NULL, false, NULL), 0);
	CU_ASSERT_EQUAL(bdev_malloc_create("bs", 16, 1024, NULL, NULL), -EINVAL);
	CU_ASSERT_EQUAL(bdev_malloc_create("bs", 16, 0, NULL, NULL), -EINVAL);
	CU_ASSERT_EQUAL(bdev_null_create("bs", 0, 512, NULL, false, NULL), -EINVAL);
	CU_ASSERT_EQUAL(bdev_null_create("bs", UINT64_MAX / 256, 512, NULL, false, NULL), -EINVAL);
	CU_ASSERT_PTR_NULL(bdev_lookup("bs"));

	CU_ASSERT_EQUAL(bdev_delete("m0"), 0);
	CU_ASSERT_PTR_NULL(bdev_lookup("m0"));
	CU_ASSERT_EQUAL(bdev_delete("m0"), -ENOENT);
	/* The name is free again. */
	CU_ASSERT_EQUAL(bdev_malloc_create("m0", 8, 512, NULL, NULL), 0);
	CU_ASSERT_EQUAL(bdev_delete_all(), 0);
	CU_ASSERT_PTR_NULL(bdev_lookup("n0"));
}

static void test_delete_busy(void)
{
	struct bdev *b;
	struct bdev_channel *ch;

	CU_ASSERT_EQUAL_FATAL(bdev_null_create("busy", 8, 512, NULL, false, &b), 0);
	CU_ASSERT_EQUAL(bdev_claim(b, "nqn.test:ns1"), 0);
	CU_ASSERT_EQUAL(bdev_claim(b, "other"), -EBUSY);
	CU_ASSERT_EQUAL(bdev_delete("busy"), -EBUSY);
	CU_ASSERT_EQUAL(bdev_delete_all(), 1);
	CU_ASSERT_PTR_EQUAL(bdev_lookup("busy"), b);
	bdev_release(b);

	/* A channel needs the bdev open. */
	CU_ASSERT_EQUAL(bdev_channel_create(b, &ch), -EINVAL);
	CU_ASSERT_EQUAL(bdev_open(b), 0);
	CU_ASSERT_EQUAL(bdev_delete("busy"), -EBUSY);
	CU_ASSERT_EQUAL_FATAL(bdev_channel_create(b, &ch), 0);
	bdev_close(b);
	/* Closed but a channel remains: still busy. */
	CU_ASSERT_EQUAL(bdev_delete("busy"), -EBUSY);
	CU_ASSERT_EQUAL(bdev_channel_destroy(ch), 0);
	CU_ASSERT_EQUAL(bdev_channel_destroy(NULL), 0);
	CU_ASSERT_EQUAL(bdev_delete("busy"), 0);
}

static int bdev_ut_collect(struct bdev *b, void *arg)
{
	char *out = arg;

	strcat(out, bdev_get_name(b));
	strcat(out, ",");
	return !strcmp(bdev_get_name(b), "stop") ? 7 : 0;
}

static void test_foreach(void)
{
	char seen[128] = "";

	CU_ASSERT_EQUAL(bdev_foreach(bdev_ut_collect, seen), 0);
	CU_ASSERT_STRING_EQUAL(seen, "");
	CU_ASSERT_EQUAL(bdev_null_create("c", 8, 512, NULL, false, NULL), 0);
	CU_ASSERT_EQUAL(bdev_malloc_create("a", 8, 512, NULL, NULL), 0);
	CU_ASSERT_EQUAL(bdev_null_create("stop", 8, 512, NULL, false, NULL), 0);
	CU_ASSERT_EQUAL(bdev_null_create("b", 8, 512, NULL, false, NULL), 0);
	CU_ASSERT_EQUAL(bdev_foreach(bdev_ut_collect, seen), 7);
	CU_ASSERT_STRING_EQUAL(seen, "c,a,stop,");
	CU_ASSERT_EQUAL(bdev_delete("a"), 0);
	seen[0] = '\0';
	CU_ASSERT_EQUAL(bdev_delete("stop"), 0);
	CU_ASSERT_EQUAL(bdev_foreach(bdev_ut_collect, seen), 0);
	CU_ASSERT_STRING_EQUAL(seen, "c,b,");
	CU_ASSERT_EQUAL(bdev_delete_all(), 0);
}

static void test_uuid(void)
{
	static const uint8_t given[BDEV_UUID_LEN] = {0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc,
						     0xde, 0xf0, 0x01, 0x23, 0x45, 0x67,
						     0x89, 0xab, 0xcd, 0xef};
	uint8_t u1[BDEV_UUID_LEN], u2[BDEV_UUID_LEN], parsed[BDEV_UUID_LEN];
	char text[BDEV_UUID_STR_LEN];
	struct bdev *a, *b, *c;

	CU_ASSERT_EQUAL_FATAL(bdev_null_create("u1", 8, 512, NULL, false, &a), 0);
	CU_ASSERT_EQUAL_FATAL(bdev_null_create("u2", 8, 512, NULL, false, &b), 0);
	CU_ASSERT_EQUAL_FATAL(bdev_malloc_create("u3", 8, 512, given, &c), 0);
	bdev_get_uuid(a, u1);
	bdev_get_uuid(b, u2);
	CU_ASSERT_NOT_EQUAL(memcmp(u1, u2, BDEV_UUID_LEN), 0);
	/* Version 4, RFC variant. */
	CU_ASSERT_EQUAL(u1[6] >> 4, 4);
	CU_ASSERT_EQUAL(u1[8] >> 6, 2);
	bdev_get_uuid(c, u1);
	CU_ASSERT_EQUAL(memcmp(u1, given, BDEV_UUID_LEN), 0);

	bdev_uuid_format(given, text);
	CU_ASSERT_STRING_EQUAL(text, "12345678-9abc-def0-0123-456789abcdef");
	CU_ASSERT_EQUAL(bdev_uuid_parse("12345678-9ABC-def0-0123-456789abcdef", parsed), 0);
	CU_ASSERT_EQUAL(memcmp(parsed, given, BDEV_UUID_LEN), 0);
	CU_ASSERT_EQUAL(bdev_uuid_parse("12345678-9abc-def0-0123-456789abcde", parsed), -EINVAL);
	CU_ASSERT_EQUAL(bdev_uuid_parse("12345678-9abc-def0-0123-456789abcdeg", parsed), -EINVAL);
	CU_ASSERT_EQUAL(bdev_uuid_parse("123456789-abc-def0-0123-456789abcdef", parsed), -EINVAL);
	CU_ASSERT_EQUAL(bdev_uuid_parse(NULL, parsed), -EINVAL);
	CU_ASSERT_EQUAL(bdev_delete_all(), 0);
}

static void test_info_and_write_cache(void)
{
	struct bdev_info info;
	struct bdev *b;

	CU_ASSERT_EQUAL_FATAL(bdev_malloc_create("info", 32, 4096, NULL, &b), 0);
	CU_ASSERT_EQUAL(bdev_open(b), 0);
	CU_ASSERT_EQUAL(bdev_claim(b, "owner-x"), 0);
	bdev_get_info(b, &info);
	CU_ASSERT_STRING_EQUAL(info.name, "info");
	CU_ASSERT_STRING_EQUAL(info.module_name, "malloc");
	CU_ASSERT_STRING_EQUAL(info.product_name, "Malloc disk");
	CU_ASSERT_EQUAL(info.block_size, 4096);
	CU_ASSERT_EQUAL(info.num_blocks, 32);
	CU_ASSERT_TRUE(info.claimed);
	CU_ASSERT_STRING_EQUAL(info.claimed_by, "owner-x");
	CU_ASSERT_EQUAL(info.open_count, 1);
	CU_ASSERT_EQUAL(info.io_types, (1u << BDEV_IO_TYPE_COUNT) - 1);
	CU_ASSERT_FALSE(info.write_cache);
	CU_ASSERT_FALSE(info.write_cache_enabled);
	CU_ASSERT_PTR_NULL(info.filename);
	CU_ASSERT_TRUE(bdev_io_type_supported(b, BDEV_IO_UNMAP));
	CU_ASSERT_FALSE(bdev_io_type_supported(b, BDEV_IO_TYPE_COUNT));
	CU_ASSERT_STRING_EQUAL(bdev_io_type_name(BDEV_IO_WRITE_ZEROES), "write_zeroes");
	CU_ASSERT_STRING_EQUAL(bdev_io_type_name(BDEV_IO_READ), "read");
	CU_ASSERT_PTR_NULL(bdev_io_type_name(BDEV_IO_TYPE_COUNT));
	/* RAM has no volatile cache to switch on. */
	CU_ASSERT_EQUAL(bdev_set_write_cache(b, true), -ENOTSUP);
	CU_ASSERT_EQUAL(bdev_set_write_cache(b, false), 0);
	CU_ASSERT_FALSE(bdev_has_write_cache(b));
	CU_ASSERT_FALSE(bdev_write_cache_enabled(b));
	CU_ASSERT_EQUAL(bdev_io_ctx_size(b) % 16, 0);
	CU_ASSERT_EQUAL(bdev_io_size(b), sizeof(struct bdev_io) + bdev_io_ctx_size(b));
	CU_ASSERT_TRUE(bdev_io_size(b) <= UT_IO_SIZE);
	bdev_release(b);
	bdev_close(b);
	bdev_get_info(b, &info);
	CU_ASSERT_FALSE(info.claimed);
	CU_ASSERT_STRING_EQUAL(info.claimed_by, "");
	CU_ASSERT_EQUAL(bdev_delete("info"), 0);
}

/* Opens a malloc bdev of 64 blocks of 512 bytes with a channel. */
static struct bdev *bdev_ut_setup(struct bdev_channel **ch)
{
	struct bdev *b;

	CU_ASSERT_EQUAL_FATAL(bdev_malloc_create("v", 64, 512, NULL, &b), 0);
	CU_ASSERT_EQUAL_FATAL(bdev_open(b), 0);
	CU_ASSERT_EQUAL_FATAL(bdev_channel_create(b, ch), 0);
	return b;
}

static void bdev_ut_teardown(struct bdev *b, struct bdev_channel *ch)
{
	CU_ASSERT_EQUAL(bdev_channel_destroy(ch), 0);
	bdev_close(b);
	CU_ASSERT_EQUAL(bdev_delete("v"), 0);
}

static void test_validation(void)
{
	struct bdev_channel *ch;
	struct bdev *b = bdev_ut_setup(&ch);
	struct bdev_io *io = ut_io_alloc(b);
	struct bdev_range ranges[2] = {{0, 4}, {60, 5}};
	struct ut_result res;
	uint8_t *buf = malloc(4096);
	struct iovec iov[2] = {{buf, 512}, {buf + 512, 512}};
	struct bdev_stats st;

	CU_ASSERT_PTR_NOT_NULL_FATAL(buf);
	memset(buf, 0xaa, 4096);
	CU_ASSERT_EQUAL(ut_rw_sync(ch, 512, BDEV_IO_WRITE, 0, 8, buf, NULL), 0);

	/* Out of range: past the end, straddling the end, offset overflow. Nothing is read. */
	memset(buf, 0x5c, 4096);
	ut_io_rw(io, BDEV_IO_READ, 64, 1, iov, 1, &res);
	CU_ASSERT_EQUAL(ut_submit_wait(ch, io, &res), -ERANGE);
	ut_io_rw(io, BDEV_IO_READ, 63, 2, iov, 2, &res);
	CU_ASSERT_EQUAL(ut_submit_wait(ch, io, &res), -ERANGE);
	ut_io_rw(io, BDEV_IO_READ, UINT64_MAX, 2, iov, 2, &res);
	CU_ASSERT_EQUAL(ut_submit_wait(ch, io, &res), -ERANGE);
	CU_ASSERT_EQUAL(buf[0], 0x5c);
	CU_ASSERT_EQUAL(buf[1023], 0x5c);
	ut_io_nodata(io, BDEV_IO_WRITE_ZEROES, 60, 5, &res);
	CU_ASSERT_EQUAL(ut_submit_wait(ch, io, &res), -ERANGE);

	/* Malformed: iovec total too short / too long, no blocks, no iovecs, bad type. */
	ut_io_rw(io, BDEV_IO_WRITE, 0, 3, iov, 2, &res);
	CU_ASSERT_EQUAL(ut_submit_wait(ch, io, &res), -EINVAL);
	ut_io_rw(io, BDEV_IO_WRITE, 0, 1, iov, 2, &res);
	CU_ASSERT_EQUAL(ut_submit_wait(ch, io, &res), -EINVAL);
	ut_io_rw(io, BDEV_IO_READ, 0, 0, iov, 1, &res);
	CU_ASSERT_EQUAL(ut_submit_wait(ch, io, &res), -EINVAL);
	ut_io_rw(io, BDEV_IO_READ, 0, 1, NULL, 0, &res);
	CU_ASSERT_EQUAL(ut_submit_wait(ch, io, &res), -EINVAL);
	ut_io_nodata(io, (enum bdev_io_type)99, 0, 1, &res);
	CU_ASSERT_EQUAL(ut_submit_wait(ch, io, &res), -EINVAL);
	ut_io_nodata(io, BDEV_IO_UNMAP, 0, 0, &res);
	CU_ASSERT_EQUAL(ut_submit_wait(ch, io, &res), -EINVAL);
	/* One bad range fails the whole unmap and nothing is deallocated. */
	CU_ASSERT_EQUAL(ut_unmap_sync(ch, ranges, 2), -ERANGE);
	CU_ASSERT_EQUAL(ut_rw_sync(ch, 512, BDEV_IO_READ, 0, 1, buf, NULL), 0);
	CU_ASSERT_EQUAL(buf[0], 0xaa);

	bdev_get_stats(b, &st);
	CU_ASSERT_EQUAL(st.errors, 11);
	CU_ASSERT_EQUAL(st.write_ops, 1);
	CU_ASSERT_EQUAL(st.read_ops, 1);
	CU_ASSERT_EQUAL(st.bytes_written, 4096);
	CU_ASSERT_EQUAL(st.bytes_read, 512);
	free(io);
	free(buf);
	bdev_ut_teardown(b, ch);
}

/* A second channel, on its own thread: writes `n` blocks one at a time, then destroys itself or
 * keeps the channel for the main thread to destroy after the thread ended. */
struct stats_thread {
	struct bdev *b;
	int n;
	bool destroy;
	struct bdev_channel *ch;
	int failures;
};

static void *stats_thread_main(void *arg)
{
	struct stats_thread *t = arg;
	uint8_t buf[512];
	int i;

	memset(buf, 0x3c, sizeof(buf));
	if (bdev_channel_create(t->b, &t->ch)) {
		t->failures++;
		return NULL;
	}
	for (i = 0; i < t->n; i++)
		if (ut_rw_sync(t->ch, 512, BDEV_IO_WRITE, (uint64_t)i % 64, 1, buf, NULL))
			t->failures++;
	if (t->destroy && bdev_channel_destroy(t->ch))
		t->failures++;
	return NULL;
}

/* Counters are kept per channel: the bdev's are the sum of every channel's, live or destroyed. */
static void test_stats_per_channel(void)
{
	struct bdev_channel *ch;
	struct bdev *b = bdev_ut_setup(&ch);
	struct stats_thread t1 = {.b = b, .n = 300, .destroy = true};
	struct stats_thread t2 = {.b = b, .n = 200, .destroy = false};
	pthread_t p1, p2;
	uint8_t buf[512];
	struct bdev_stats st;
	int i;

	for (i = 0; i < 5; i++)
		CU_ASSERT_EQUAL(ut_rw_sync(ch, 512, BDEV_IO_READ, (uint64_t)i, 1, buf, NULL), 0);
	CU_ASSERT_EQUAL_FATAL(pthread_create(&p1, NULL, stats_thread_main, &t1), 0);
	CU_ASSERT_EQUAL_FATAL(pthread_create(&p2, NULL, stats_thread_main, &t2), 0);
	pthread_join(p1, NULL);
	pthread_join(p2, NULL);
	CU_ASSERT_EQUAL(t1.failures, 0);
	CU_ASSERT_EQUAL(t2.failures, 0);
	bdev_get_stats(b, &st);
	CU_ASSERT_EQUAL(st.read_ops, 5);
	CU_ASSERT_EQUAL(st.bytes_read, 5 * 512);
	CU_ASSERT_EQUAL(st.write_ops, 500);
	CU_ASSERT_EQUAL(st.bytes_written, 500 * 512);
	CU_ASSERT_EQUAL(st.errors, 0);
	/* The thread that kept its channel is gone; its owner role passes to this thread for the
	 * destroy (the ios are all done). Its counts stay. */
	t2.ch->owner = pthread_self();
	CU_ASSERT_EQUAL(bdev_channel_destroy(t2.ch), 0);
	CU_ASSERT_EQUAL(ut_nodata_sync(ch, BDEV_IO_FLUSH, 0, 0, 0), 0);
	bdev_get_stats(b, &st);
	CU_ASSERT_EQUAL(st.write_ops, 500);
	CU_ASSERT_EQUAL(st.read_ops, 5);
	CU_ASSERT_EQUAL(st.flush_ops, 1);
	bdev_ut_teardown(b, ch);
}

static void test_completion_queue_and_fd(void)
{
	struct bdev_channel *ch;
	struct bdev *b = bdev_ut_setup(&ch);
	struct bdev_io *io = ut_io_alloc(b);
	struct ut_result res;
	int done = 0;

	/* Idle channel: fd not readable, poll finds nothing. */
	CU_ASSERT_FALSE(ut_fd_readable(ch, 0));
	CU_ASSERT_EQUAL(bdev_channel_poll(ch), 0);

	ut_io_nodata(io, BDEV_IO_FLUSH, 0, 0, &res);
	res.done_count = &done;
	bdev_submit(ch, io);
	CU_ASSERT_EQUAL(res.calls, 0);
	CU_ASSERT_EQUAL(bdev_channel_outstanding(ch), 1);
	/* Destroy refused while an io is outstanding. */
	CU_ASSERT_EQUAL(bdev_channel_destroy(ch), -EBUSY);
	CU_ASSERT_TRUE(ut_fd_readable(ch, 1000));
	CU_ASSERT_EQUAL(bdev_channel_poll(ch), 1);
	CU_ASSERT_EQUAL(res.calls, 1);
	CU_ASSERT_EQUAL(res.status, 0);
	CU_ASSERT_EQUAL(bdev_channel_outstanding(ch), 0);
	/* The poll reset the eventfd. */
	CU_ASSERT_FALSE(ut_fd_readable(ch, 0));
	CU_ASSERT_EQUAL(bdev_channel_poll(ch), 0);
	CU_ASSERT_EQUAL(res.calls, 1);
	free(io);
	bdev_ut_teardown(b, ch);
}

/* Held wake-ups: completions of the owner's own submissions do not write the eventfd while held
 * (the owner polls anyway), the release writes it once for what is still undelivered, and a
 * wake from elsewhere still makes the fd readable and is read by the next poll. */
static void test_held_wakeups(void)
{
	struct bdev_channel *ch;
	struct bdev *b = bdev_ut_setup(&ch);
	struct bdev_io *io = ut_io_alloc(b);
	struct ut_result res;
	int done = 0;

	ut_io_nodata(io, BDEV_IO_FLUSH, 0, 0, &res);
	res.done_count = &done;
	bdev_channel_hold_wakeups(ch);
	bdev_submit(ch, io);
	CU_ASSERT_FALSE(ut_fd_readable(ch, 0));
	CU_ASSERT_EQUAL(bdev_channel_poll(ch), 1);
	CU_ASSERT_EQUAL(res.calls, 1);
	/* Polled while held: nothing left, the release writes nothing. */
	bdev_channel_release_wakeups(ch);
	CU_ASSERT_FALSE(ut_fd_readable(ch, 0));

	/* Completed while held, not polled before the release: the release signals. */
	bdev_channel_hold_wakeups(ch);
	bdev_submit(ch, io);
	CU_ASSERT_FALSE(ut_fd_readable(ch, 0));
	bdev_channel_release_wakeups(ch);
	CU_ASSERT_TRUE(ut_fd_readable(ch, 0));
	CU_ASSERT_EQUAL(bdev_channel_poll(ch), 1);
	CU_ASSERT_EQUAL(res.calls, 2);
	CU_ASSERT_FALSE(ut_fd_readable(ch, 0));

	/* A wake (any thread) while held still signals, and the next poll reads it. */
	bdev_channel_hold_wakeups(ch);
	bdev_channel_wake(ch);
	CU_ASSERT_TRUE(ut_fd_readable(ch, 0));
	CU_ASSERT_EQUAL(bdev_channel_poll(ch), 0);
	CU_ASSERT_FALSE(ut_fd_readable(ch, 0));
	bdev_channel_release_wakeups(ch);
	CU_ASSERT_FALSE(ut_fd_readable(ch, 0));
	CU_ASSERT_EQUAL(bdev_channel_outstanding(ch), 0);
	free(io);
	bdev_ut_teardown(b, ch);
}

/* A library thread completing an io (bdev_io_complete_remote) must not touch the channel once the
 * owner can see the io: the owner may reap it and destroy the channel at once (a bdev going away
 * right after its last I/O). The owner here busy-polls and destroys the channel the moment the
 * callback ran; under ASan a late access by the completing thread is a heap-use-after-free. */
static void *remote_completer_main(void *arg)
{
	bdev_io_complete_remote(arg, 0);
	return NULL;
}

static void test_remote_completion_then_destroy(void)
{
	struct bdev *b;

	CU_ASSERT_EQUAL_FATAL(bdev_malloc_create("v", 64, 512, NULL, &b), 0);
	CU_ASSERT_EQUAL_FATAL(bdev_open(b), 0);
	for (int i = 0; i < 300; i++) {
		struct bdev_channel *ch;
		struct bdev_io *io = ut_io_alloc(b);
		struct ut_result res;
		int done = 0;
		pthread_t t;

		CU_ASSERT_EQUAL_FATAL(bdev_channel_create(b, &ch), 0);
		/* An io in flight on the channel, finished by another thread (as NBD's and RBD's are). */
		ut_io_nodata(io, BDEV_IO_FLUSH, 0, 0, &res);
		res.done_count = &done;
		io->internal.ch = ch;
		ch->outstanding++;
		CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, remote_completer_main, io), 0);
		while (!done)
			bdev_channel_poll(ch);
		CU_ASSERT_EQUAL(bdev_channel_destroy(ch), 0);
		pthread_join(t, NULL);
		free(io);
	}
	bdev_close(b);
	CU_ASSERT_EQUAL(bdev_delete("v"), 0);
}

/* Resubmits its io from inside the callback until `left` reaches 0. */
struct bdev_ut_chain {
	struct bdev_channel *ch;
	int left;
	int calls;
};

static void bdev_ut_chain_cb(struct bdev_io *io, int status, void *cb_arg)
{
	struct bdev_ut_chain *c = cb_arg;

	CU_ASSERT_EQUAL(status, 0);
	c->calls++;
	if (c->left-- > 0)
		bdev_submit(c->ch, io);
}

static void test_resubmit_from_callback(void)
{
	struct bdev_channel *ch;
	struct bdev *b = bdev_ut_setup(&ch);
	struct bdev_io *io = ut_io_alloc(b);
	struct bdev_ut_chain chain = {.ch = ch, .left = 3};

	io->type = BDEV_IO_FLUSH;
	io->cb = bdev_ut_chain_cb;
	io->cb_arg = &chain;
	bdev_submit(ch, io);
	/* Each poll runs exactly one callback: the resubmission completes in a later poll. */
	CU_ASSERT_EQUAL(bdev_channel_poll(ch), 1);
	CU_ASSERT_EQUAL(chain.calls, 1);
	CU_ASSERT_TRUE(ut_fd_readable(ch, 1000));
	CU_ASSERT_EQUAL(bdev_channel_poll(ch), 1);
	CU_ASSERT_EQUAL(bdev_channel_poll(ch), 1);
	CU_ASSERT_EQUAL(bdev_channel_poll(ch), 1);
	CU_ASSERT_EQUAL(chain.calls, 4);
	CU_ASSERT_EQUAL(bdev_channel_poll(ch), 0);
	CU_ASSERT_EQUAL(bdev_channel_outstanding(ch), 0);
	free(io);
	bdev_ut_teardown(b, ch);
}

CUNIT_SUITE(bdev_core, NULL, bdev_ut_cleanup,
	    {"create_lookup_duplicate", test_create_lookup_duplicate},
	    {"delete_busy", test_delete_busy}, {"foreach", test_foreach}, {"uuid", test_uuid},
	    {"info_and_write_cache", test_info_and_write_cache}, {"validation", test_validation},
	    {"completion_queue_and_fd", test_completion_queue_and_fd},
	    {"resubmit_from_callback", test_resubmit_from_callback},
	    {"held_wakeups", test_held_wakeups},
	    {"remote_completion_then_destroy", test_remote_completion_then_destroy},
	    {"stats_per_channel", test_stats_per_channel})
