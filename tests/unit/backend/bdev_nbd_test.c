/* tests/unit/backend/bdev_nbd_test.c - the NBD bdev against real nbdkit servers started here (on
 * unix sockets in a temp directory): the random model workload on memory with multi-conn, flush
 * and FUA seen in the server's file, write zeroes and deallocation with and without the server's
 * WRITE_ZEROES, a server killed and restarted under writes (every write completes, every byte is
 * in the file), the reconnect timeout, TLS with a pre-shared key, and creation errors. As in the
 * daemon, the bdev's connections run on an event loop thread and the test thread is the
 * channel's thread. */
#include "backend/bdev.h"
#include "tests/unit/backend/bdev_ut_loop.h"
#include "tests/unit/backend/bdev_ut_util.h"
#include "tests/unit/cunit_runner.h"

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NUT_BS 512u

static char nut_dir[64];

static void nut_do_create(struct ut_loop_call *c)
{
	c->rc = bdev_nbd_create(c->name, c->opts, ut_loop(), ut_loop_created, c);
	if (c->rc)
		ut_loop_done(c);
}

/* Creates bdev `name` on `uri`; returns done's rc (or bdev_nbd_create's). */
static int nut_create(const char *name, const char *uri, uint32_t conns, uint32_t timeout,
		      struct bdev **out, char *msg, size_t msglen)
{
	struct bdev_nbd_opts o = {
	    .uri = uri, .block_size = NUT_BS, .num_connections = conns, .reconnect_timeout = timeout};
	struct ut_loop_call c = {.name = name, .opts = &o};

	ut_loop_call(&c, nut_do_create);
	if (msg)
		snprintf(msg, msglen, "%s", c.message);
	if (c.rc)
		return c.rc;
	if (out)
		*out = c.bdev;
	return c.create_rc;
}

#define nut_delete ut_loop_delete
#define nut_info ut_loop_info

/* ---- nbdkit ---- */

struct nut_server {
	pid_t pid;
	char sock[128];
	char uri[512];
};

/* Starts nbdkit with argv (after the common options) on a fresh socket; waits for the socket. */
/* True once a server listens on the unix socket at path (a probe connection, closed at once). */
static bool nut_server_ready(const char *path)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	bool ok;

	if (fd < 0)
		return false;
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	ok = connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
	close(fd);
	return ok;
}

static void nut_server_start(struct nut_server *s, const char *tag, const char *const *args)
{
	const char *argv[32];
	struct stat st;
	int n = 0;

	snprintf(s->sock, sizeof(s->sock), "%s/%s.sock", nut_dir, tag);
	unlink(s->sock);
	argv[n++] = "nbdkit";
	argv[n++] = "--foreground";
	argv[n++] = "--exit-with-parent";
	argv[n++] = "-U";
	argv[n++] = s->sock;
	for (; *args && n < 31; args++)
		argv[n++] = *args;
	argv[n] = NULL;
	s->pid = fork();
	CU_ASSERT_TRUE_FATAL(s->pid >= 0);
	if (s->pid == 0) {
		int devnull = open("/dev/null", O_WRONLY);

		if (devnull >= 0)
			dup2(devnull, STDOUT_FILENO);
		execvp("nbdkit", (char *const *)argv);
		_exit(127);
	}
	/* nbdkit binds the socket before it listens: the file alone is not a server that takes
	 * connections yet (a client in between is refused). Ready once a connection is taken. */
	for (int i = 0; i < 500 && !nut_server_ready(s->sock); i++)
		usleep(10000);
	CU_ASSERT_EQUAL_FATAL(stat(s->sock, &st), 0);
	CU_ASSERT_TRUE_FATAL(nut_server_ready(s->sock));
	snprintf(s->uri, sizeof(s->uri), "nbd+unix:///?socket=%s", s->sock);
}

static void nut_server_kill(struct nut_server *s)
{
	if (s->pid > 0) {
		kill(s->pid, SIGKILL);
		waitpid(s->pid, NULL, 0);
		s->pid = 0;
	}
	unlink(s->sock);
}

/* ---- channel helpers ---- */

static void nut_close(struct ut_dev *d, const char *name)
{
	ut_dev_close(d);
	CU_ASSERT_EQUAL(ut_loop_delete(name), 0);
}

static char *nut_file(const char *tag, size_t size)
{
	static char path[128];
	int fd;

	snprintf(path, sizeof(path), "%s/%s.img", nut_dir, tag);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	CU_ASSERT_TRUE_FATAL(fd >= 0);
	CU_ASSERT_EQUAL(ftruncate(fd, (off_t)size), 0);
	close(fd);
	return path;
}

static void nut_file_read(const char *path, uint64_t off, void *buf, size_t len)
{
	int fd = open(path, O_RDONLY);

	CU_ASSERT_TRUE_FATAL(fd >= 0);
	CU_ASSERT_EQUAL(pread(fd, buf, len, (off_t)off), (ssize_t)len);
	close(fd);
}

/* ---- tests ---- */

/* The random workload checked against a model, on a memory export with 4 connections. */
static void test_model_multi_conn(void)
{
	const char *args[] = {"memory", "size=16M", NULL};
	struct nut_server s;
	struct bdev_info info;
	struct ut_dev d;
	struct bdev *b = NULL;
	char msg[512];

	nut_server_start(&s, "mem", args);
	CU_ASSERT_EQUAL_FATAL(nut_create("nbd0", s.uri, 4, 0, &b, msg, sizeof(msg)), 0);
	CU_ASSERT_EQUAL(bdev_get_num_blocks(b), (16u << 20) / NUT_BS);
	CU_ASSERT_TRUE(bdev_io_size(b) <= UT_IO_SIZE);
	CU_ASSERT_TRUE(bdev_io_type_supported(b, BDEV_IO_UNMAP));
	CU_ASSERT_STRING_EQUAL(bdev_get_module_name(b), "nbd");
	ut_dev_open(&d, b);
	CU_ASSERT_EQUAL(ut_model_run(d.ch, NUT_BS, 4096, 7, 40, 32), 0);
	for (int i = 0; i < 200 && nut_info("nbd0").nbd_connected != 4; i++)
		usleep(10000);
	info = nut_info("nbd0");
	CU_ASSERT_TRUE(info.nbd_multi_conn);
	CU_ASSERT_EQUAL(info.nbd_connections, 4);
	CU_ASSERT_EQUAL(info.nbd_connected, 4);
	CU_ASSERT_STRING_EQUAL(info.uri, s.uri);
	nut_close(&d, "nbd0");
	nut_server_kill(&s);
}

/* Without multi-conn: one connection whatever was asked. */
static void test_single_conn(void)
{
	const char *args[] = {"--filter=multi-conn", "memory", "size=4M",
			      "multi-conn-mode=disable", NULL};
	struct nut_server s;
	struct bdev_info info;
	struct ut_dev d;
	struct bdev *b = NULL;

	nut_server_start(&s, "single", args);
	CU_ASSERT_EQUAL_FATAL(nut_create("nbd1", s.uri, 4, 0, &b, NULL, 0), 0);
	ut_dev_open(&d, b);
	CU_ASSERT_EQUAL(ut_model_run(d.ch, NUT_BS, 2048, 11, 10, 16), 0);
	info = nut_info("nbd1");
	CU_ASSERT_FALSE(info.nbd_multi_conn);
	CU_ASSERT_EQUAL(info.nbd_connected, 1);
	nut_close(&d, "nbd1");
	nut_server_kill(&s);
}

/* A file export: what a flushed and a FUA write leave in the file, vectored transfers, write
 * zeroes and deallocation read back through the file itself. */
static void test_file_flush_fua_zeroes(void)
{
	char *path = strdup(nut_file("file", 4u << 20));
	char file_arg[160];
	const char *args[] = {"file", file_arg, NULL};
	size_t cuts[] = {100, 924, 0};
	unsigned char *buf = malloc(64 * NUT_BS), *back = malloc(64 * NUT_BS);
	struct bdev_range r = {.offset_blocks = 8, .num_blocks = 4};
	struct nut_server s;
	struct ut_dev d;
	struct bdev *b = NULL;

	snprintf(file_arg, sizeof(file_arg), "file=%s", path);
	nut_server_start(&s, "file", args);
	CU_ASSERT_EQUAL_FATAL(nut_create("nbd2", s.uri, 2, 0, &b, NULL, 0), 0);
	CU_ASSERT_TRUE(bdev_has_write_cache(b));
	ut_dev_open(&d, b);
	/* Write (two iovecs), flush, then the file has it. */
	ut_pattern(buf, 2 * NUT_BS, 1);
	CU_ASSERT_EQUAL(ut_rw_sync(d.ch, NUT_BS, BDEV_IO_WRITE, 0, 2, buf, cuts), 0);
	CU_ASSERT_EQUAL(ut_nodata_sync(d.ch, BDEV_IO_FLUSH, 0, 0, 0), 0);
	nut_file_read(path, 0, back, 2 * NUT_BS);
	CU_ASSERT_EQUAL(memcmp(buf, back, 2 * NUT_BS), 0);
	/* Read back through NBD, vectored. */
	memset(back, 0, 2 * NUT_BS);
	CU_ASSERT_EQUAL(ut_rw_sync(d.ch, NUT_BS, BDEV_IO_READ, 0, 2, back, cuts), 0);
	CU_ASSERT_EQUAL(memcmp(buf, back, 2 * NUT_BS), 0);
	/* Write zeroes and deallocate over written blocks. */
	ut_pattern(buf, 64 * NUT_BS, 2);
	CU_ASSERT_EQUAL(ut_rw_sync(d.ch, NUT_BS, BDEV_IO_WRITE, 0, 64, buf, NULL), 0);
	CU_ASSERT_EQUAL(ut_nodata_sync(d.ch, BDEV_IO_WRITE_ZEROES, 16, 8, BDEV_IO_F_FUA), 0);
	CU_ASSERT_EQUAL(ut_unmap_sync(d.ch, &r, 1), 0);
	CU_ASSERT_EQUAL(ut_nodata_sync(d.ch, BDEV_IO_FLUSH, 0, 0, 0), 0);
	nut_file_read(path, 0, back, 64 * NUT_BS);
	CU_ASSERT_TRUE(ut_is_zero(back + 16 * NUT_BS, 8 * NUT_BS));
	CU_ASSERT_TRUE(ut_is_zero(back + 8 * NUT_BS, 4 * NUT_BS));
	CU_ASSERT_EQUAL(memcmp(back, buf, 8 * NUT_BS), 0);
	CU_ASSERT_EQUAL(memcmp(back + 12 * NUT_BS, buf + 12 * NUT_BS, 4 * NUT_BS), 0);
	CU_ASSERT_EQUAL(memcmp(back + 24 * NUT_BS, buf + 24 * NUT_BS, 40 * NUT_BS), 0);
	/* With the write cache off, a plain write is FUA: in the file at completion. */
	CU_ASSERT_EQUAL(bdev_set_write_cache(b, false), 0);
	ut_pattern(buf, NUT_BS, 3);
	CU_ASSERT_EQUAL(ut_rw_sync(d.ch, NUT_BS, BDEV_IO_WRITE, 100, 1, buf, NULL), 0);
	nut_file_read(path, 100 * NUT_BS, back, NUT_BS);
	CU_ASSERT_EQUAL(memcmp(buf, back, NUT_BS), 0);
	/* Outside the export: refused before the server sees it. */
	CU_ASSERT_EQUAL(ut_rw_sync(d.ch, NUT_BS, BDEV_IO_READ, (4u << 20) / NUT_BS, 1, back, NULL),
			-ERANGE);
	nut_close(&d, "nbd2");
	nut_server_kill(&s);
	unlink(path);
	free(path);
	free(buf);
	free(back);
}

/* A server without WRITE_ZEROES: Write Zeroes becomes written zeroes, deallocation is not
 * offered. */
static void test_no_zero_server(void)
{
	const char *args[] = {"--filter=nozero", "memory", "size=8M", NULL};
	unsigned char *buf = malloc(600 * NUT_BS), *back = malloc(600 * NUT_BS);
	struct nut_server s;
	struct ut_dev d;
	struct bdev *b = NULL;

	nut_server_start(&s, "nozero", args);
	CU_ASSERT_EQUAL_FATAL(nut_create("nbd3", s.uri, 1, 0, &b, NULL, 0), 0);
	CU_ASSERT_FALSE(bdev_io_type_supported(b, BDEV_IO_UNMAP));
	CU_ASSERT_TRUE(bdev_io_type_supported(b, BDEV_IO_WRITE_ZEROES));
	ut_dev_open(&d, b);
	ut_pattern(buf, 600 * NUT_BS, 4);
	CU_ASSERT_EQUAL(ut_rw_sync(d.ch, NUT_BS, BDEV_IO_WRITE, 0, 600, buf, NULL), 0);
	/* 300 blocks = 150 KiB: more than one zero buffer. */
	CU_ASSERT_EQUAL(ut_nodata_sync(d.ch, BDEV_IO_WRITE_ZEROES, 200, 300, 0), 0);
	CU_ASSERT_EQUAL(ut_rw_sync(d.ch, NUT_BS, BDEV_IO_READ, 0, 600, back, NULL), 0);
	CU_ASSERT_EQUAL(memcmp(back, buf, 200 * NUT_BS), 0);
	CU_ASSERT_TRUE(ut_is_zero(back + 200 * NUT_BS, 300 * NUT_BS));
	CU_ASSERT_EQUAL(memcmp(back + 500 * NUT_BS, buf + 500 * NUT_BS, 100 * NUT_BS), 0);
	nut_close(&d, "nbd3");
	nut_server_kill(&s);
	free(buf);
	free(back);
}

/* The server dies under a stream of writes and comes back on the same socket: every write
 * completes successfully and the file holds every one of them. With several connections, all
 * die at once and each one's commands move to whichever comes back first. */
static void nut_server_restart(uint32_t conns)
{
	enum { NIO = 16, ROUNDS = 40 };
	char *path = strdup(nut_file("restart", 4u << 20));
	char file_arg[160];
	/* Writes held 20 ms in the server, so the kill finds some in flight. */
	const char *args[] = {"--filter=delay", "file", file_arg, "delay-write=20ms", NULL};
	struct bdev_io *ios[NIO];
	struct ut_result res[NIO];
	struct iovec iov[NIO];
	unsigned char *data = malloc((size_t)NIO * ROUNDS * 4096), *back = malloc(4096);
	struct nut_server s;
	struct ut_dev d;
	struct bdev *b = NULL;
	int done = 0, bad = 0;

	snprintf(file_arg, sizeof(file_arg), "file=%s", path);
	nut_server_start(&s, "restart", args);
	CU_ASSERT_EQUAL_FATAL(nut_create("nbd4", s.uri, conns, 0, &b, NULL, 0), 0);
	/* The creation completes on the first connection; the others follow. */
	for (int i = 0; i < 200 && nut_info("nbd4").nbd_connected != conns; i++)
		usleep(10000);
	CU_ASSERT_EQUAL(nut_info("nbd4").nbd_connected, conns);
	ut_dev_open(&d, b);
	for (int i = 0; i < NIO; i++)
		ios[i] = ut_io_alloc(b);
	ut_pattern(data, (size_t)NIO * ROUNDS * 4096, 5);
	for (int round = 0; round < ROUNDS; round++) {
		int want = done + NIO;

		for (int i = 0; i < NIO; i++) {
			uint64_t blk = (uint64_t)(round * NIO + i) * 8;

			iov[i].iov_base = data + (size_t)(round * NIO + i) * 4096;
			iov[i].iov_len = 4096;
			ut_io_rw(ios[i], BDEV_IO_WRITE, blk, 8, &iov[i], 1, &res[i]);
			res[i].done_count = &done;
			ios[i]->flags = BDEV_IO_F_FUA;
			bdev_submit(d.ch, ios[i]);
		}
		if (round == ROUNDS / 2) {
			/* Killed with writes in flight, back 300 ms later. */
			nut_server_kill(&s);
			usleep(300000);
			nut_server_start(&s, "restart", args);
		}
		CU_ASSERT_EQUAL_FATAL(ut_wait(d.ch, &done, want, 30000), 0);
		for (int i = 0; i < NIO; i++) {
			if (res[i].status || res[i].calls != 1)
				bad++;
		}
	}
	CU_ASSERT_EQUAL(bad, 0);
	/* Every acknowledged (FUA) write is in the file. */
	for (int k = 0; k < NIO * ROUNDS; k++) {
		nut_file_read(path, (uint64_t)k * 4096, back, 4096);
		if (memcmp(back, data + (size_t)k * 4096, 4096))
			bad++;
	}
	CU_ASSERT_EQUAL(bad, 0);
	for (int i = 0; i < NIO; i++)
		free(ios[i]);
	nut_close(&d, "nbd4");
	nut_server_kill(&s);
	unlink(path);
	free(path);
	free(data);
	free(back);
}

static void test_server_restart(void)
{
	nut_server_restart(1);
}

static void test_server_restart_multi_conn(void)
{
	nut_server_restart(4);
}

/* Past the reconnect timeout I/O fails with -EIO; when the server returns, I/O works again. */
static void test_reconnect_timeout(void)
{
	const char *args[] = {"memory", "size=1M", NULL};
	unsigned char buf[NUT_BS];
	struct nut_server s;
	struct ut_dev d;
	struct bdev *b = NULL;
	time_t t0;

	nut_server_start(&s, "timeout", args);
	CU_ASSERT_EQUAL_FATAL(nut_create("nbd5", s.uri, 1, 1, &b, NULL, 0), 0);
	ut_dev_open(&d, b);
	CU_ASSERT_EQUAL(ut_rw_sync(d.ch, NUT_BS, BDEV_IO_READ, 0, 1, buf, NULL), 0);
	nut_server_kill(&s);
	t0 = time(NULL);
	/* The loss is seen by the next command (or the socket's hang-up): fails within ~1 s. */
	CU_ASSERT_EQUAL(ut_rw_sync(d.ch, NUT_BS, BDEV_IO_READ, 0, 1, buf, NULL), -EIO);
	CU_ASSERT_TRUE(time(NULL) - t0 <= 10);
	CU_ASSERT_EQUAL(ut_rw_sync(d.ch, NUT_BS, BDEV_IO_READ, 0, 1, buf, NULL), -EIO);
	nut_server_start(&s, "timeout", args);
	/* Reconnection goes on after the timeout (backoff at most 2 s). */
	for (int i = 0; i < 100; i++) {
		if (ut_rw_sync(d.ch, NUT_BS, BDEV_IO_READ, 0, 1, buf, NULL) == 0)
			break;
		usleep(100000);
	}
	CU_ASSERT_EQUAL(ut_rw_sync(d.ch, NUT_BS, BDEV_IO_READ, 0, 1, buf, NULL), 0);
	nut_close(&d, "nbd5");
	nut_server_kill(&s);
}

/* TLS with a pre-shared key: nbds+unix with tls-psk-file; without TLS the server refuses. */
static void test_tls_psk(void)
{
	char psk[160], tls_psk[192], uri[512];
	const char *args[] = {"--tls=require", tls_psk, "memory", "size=1M", NULL};
	unsigned char buf[NUT_BS], back[NUT_BS];
	struct nut_server s;
	struct ut_dev d;
	struct bdev *b = NULL;
	char msg[512];
	FILE *f;

	snprintf(psk, sizeof(psk), "%s/keys.psk", nut_dir);
	f = fopen(psk, "w");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fprintf(f, "alice:0123456789abcdef0123456789abcdef\n");
	fclose(f);
	snprintf(tls_psk, sizeof(tls_psk), "--tls-psk=%s", psk);
	nut_server_start(&s, "tls", args);
	/* Plain NBD to a TLS-only server: the creation fails, with the reason. */
	CU_ASSERT_NOT_EQUAL(nut_create("nbd6", s.uri, 1, 0, &b, msg, sizeof(msg)), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(msg, "NBD export"));
	snprintf(uri, sizeof(uri), "nbds+unix://alice@/?socket=%s&tls-psk-file=%s", s.sock, psk);
	CU_ASSERT_EQUAL_FATAL(nut_create("nbd6", uri, 1, 0, &b, msg, sizeof(msg)), 0);
	ut_dev_open(&d, b);
	ut_pattern(buf, NUT_BS, 6);
	CU_ASSERT_EQUAL(ut_rw_sync(d.ch, NUT_BS, BDEV_IO_WRITE, 3, 1, buf, NULL), 0);
	CU_ASSERT_EQUAL(ut_rw_sync(d.ch, NUT_BS, BDEV_IO_READ, 3, 1, back, NULL), 0);
	CU_ASSERT_EQUAL(memcmp(buf, back, NUT_BS), 0);
	nut_close(&d, "nbd6");
	nut_server_kill(&s);
	unlink(psk);
}

static void test_create_errors(void)
{
	const char *ro_args[] = {"-r", "memory", "size=1M", NULL};
	const char *small_args[] = {"memory", "size=100", NULL};
	const char *ok_args[] = {"memory", "size=1M", NULL};
	struct nut_server s;
	struct bdev *b = NULL;
	char msg[512], uri[256];
	struct bdev_nbd_opts bad = {.uri = "nbd+unix:///?socket=/none", .block_size = 1000};
	struct ut_loop_call c = {.name = "x", .opts = &bad};

	/* Nothing listening: -ECONNREFUSED, with the URI in the message. */
	snprintf(uri, sizeof(uri), "nbd+unix:///?socket=%s/none.sock", nut_dir);
	CU_ASSERT_EQUAL(nut_create("nbd7", uri, 1, 0, &b, msg, sizeof(msg)), -ECONNREFUSED);
	CU_ASSERT_PTR_NOT_NULL(strstr(msg, uri));
	/* Not an NBD URI, bad sizes: refused at once. */
	CU_ASSERT_EQUAL(nut_create("nbd7", "http://example/", 1, 0, &b, NULL, 0), -EINVAL);
	ut_loop_call(&c, nut_do_create);
	CU_ASSERT_EQUAL(c.rc, -EINVAL);
	CU_ASSERT_EQUAL(nut_create("nbd7", uri, BDEV_NBD_MAX_CONNECTIONS + 1, 0, &b, NULL, 0),
			-EINVAL);
	CU_ASSERT_EQUAL(nut_create("", uri, 1, 0, &b, NULL, 0), -EINVAL);
	/* A read-only export. */
	nut_server_start(&s, "ro", ro_args);
	CU_ASSERT_EQUAL(nut_create("nbd7", s.uri, 1, 0, &b, msg, sizeof(msg)), -EROFS);
	nut_server_kill(&s);
	/* Smaller than one block. */
	nut_server_start(&s, "small", small_args);
	CU_ASSERT_EQUAL(nut_create("nbd7", s.uri, 1, 0, &b, msg, sizeof(msg)), -EINVAL);
	nut_server_kill(&s);
	/* A name taken. */
	nut_server_start(&s, "ok", ok_args);
	CU_ASSERT_EQUAL_FATAL(nut_create("nbd7", s.uri, 1, 0, &b, NULL, 0), 0);
	CU_ASSERT_EQUAL(nut_create("nbd7", s.uri, 1, 0, &b, NULL, 0), -EEXIST);
	CU_ASSERT_EQUAL(nut_delete("nbd7"), 0);
	nut_server_kill(&s);
}

static int nut_init(void)
{
	snprintf(nut_dir, sizeof(nut_dir), "/tmp/nbd_ut.XXXXXX");
	if (!mkdtemp(nut_dir))
		return -1;
	signal(SIGPIPE, SIG_IGN);
	return ut_loop_start();
}

static int nut_cleanup(void)
{
	ut_loop_stop();
	rmdir(nut_dir);
	return 0;
}

/* A server that offers no flush (nbdkit's eval plugin with no flush method: it writes through):
 * the bdev reports no volatile write cache (Identify VWC 0), its cache cannot be turned on, and
 * an acknowledged write is in the file at once. */
static void test_no_flush_server(void)
{
	char *path = strdup(nut_file("noflush", 1u << 20));
	char size_arg[64], pread_arg[256], pwrite_arg[256];
	const char *args[] = {"eval", size_arg, pread_arg, pwrite_arg, NULL};
	unsigned char *buf = malloc(4 * NUT_BS), *back = malloc(4 * NUT_BS);
	struct nut_server s;
	struct ut_dev d;
	struct bdev *b = NULL;

	snprintf(size_arg, sizeof(size_arg), "get_size=echo %u", 1u << 20);
	snprintf(pread_arg, sizeof(pread_arg),
		 "pread=dd if=%s skip=$4 count=$3 iflag=skip_bytes,count_bytes status=none", path);
	snprintf(pwrite_arg, sizeof(pwrite_arg),
		 "pwrite=dd of=%s seek=$4 oflag=seek_bytes conv=notrunc status=none", path);
	nut_server_start(&s, "noflush", args);
	CU_ASSERT_EQUAL_FATAL(nut_create("nbd9", s.uri, 1, 0, &b, NULL, 0), 0);
	CU_ASSERT_FALSE(bdev_has_write_cache(b));
	CU_ASSERT_FALSE(bdev_write_cache_enabled(b));
	CU_ASSERT_NOT_EQUAL(bdev_set_write_cache(b, true), 0);
	CU_ASSERT_FALSE(bdev_write_cache_enabled(b));
	ut_dev_open(&d, b);
	ut_pattern(buf, 4 * NUT_BS, 9);
	CU_ASSERT_EQUAL(ut_rw_sync(d.ch, NUT_BS, BDEV_IO_WRITE, 8, 4, buf, NULL), 0);
	nut_file_read(path, 8 * NUT_BS, back, 4 * NUT_BS);
	CU_ASSERT_EQUAL(memcmp(buf, back, 4 * NUT_BS), 0);
	nut_close(&d, "nbd9");
	nut_server_kill(&s);
	unlink(path);
	free(path);
	free(buf);
	free(back);
}

CUNIT_SUITE(bdev_nbd, nut_init, nut_cleanup, {"model_multi_conn", test_model_multi_conn},
	    {"single_conn", test_single_conn}, {"file_flush_fua_zeroes", test_file_flush_fua_zeroes},
	    {"no_zero_server", test_no_zero_server}, {"server_restart", test_server_restart},
	    {"server_restart_multi_conn", test_server_restart_multi_conn},
	    {"reconnect_timeout", test_reconnect_timeout}, {"tls_psk", test_tls_psk},
	    {"create_errors", test_create_errors}, {"no_flush_server", test_no_flush_server})
