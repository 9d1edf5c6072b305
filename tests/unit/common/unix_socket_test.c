/* tests/unit/common/unix_socket_test.c - sockets created safely: the mode from the start, stale
 * sockets of ours replaced, live ones and anything else left alone, unsafe directories refused,
 * symlinks never followed. */
#include "common/unix_socket.h"
#include "tests/unit/cunit_runner.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

static char dir[64], path[128], err[256];

static void us_setup(mode_t dir_mode)
{
	snprintf(dir, sizeof(dir), "/tmp/unix-socket-test-XXXXXX");
	CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
	CU_ASSERT_EQUAL_FATAL(chmod(dir, dir_mode), 0);
	snprintf(path, sizeof(path), "%s/s.sock", dir);
}

static void us_teardown(void)
{
	char cmd[160];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	CU_ASSERT_EQUAL(system(cmd), 0);
}

static void test_mode_and_stale(void)
{
	struct stat st;
	int fd, fd2;

	us_setup(0700);
	fd = unix_socket_listen(path, 0600, 4, err, sizeof(err));
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_EQUAL(lstat(path, &st), 0);
	CU_ASSERT_TRUE(S_ISSOCK(st.st_mode));
	CU_ASSERT_EQUAL(st.st_mode & 0777, 0600);
	/* Live: somebody serves it. */
	CU_ASSERT_EQUAL(unix_socket_listen(path, 0600, 4, err, sizeof(err)), -EADDRINUSE);
	close(fd);
	/* Stale (nobody listens any more): replaced, with the new mode. */
	fd2 = unix_socket_listen(path, 0660, 4, err, sizeof(err));
	CU_ASSERT(fd2 >= 0);
	CU_ASSERT_EQUAL(lstat(path, &st), 0);
	CU_ASSERT_EQUAL(st.st_mode & 0777, 0660);
	close(fd2);
	CU_ASSERT_EQUAL(unix_socket_unlink(path), 0);
	CU_ASSERT_EQUAL(lstat(path, &st), -1);
	us_teardown();
}

static void test_not_ours_left_alone(void)
{
	char target[160];
	struct stat st;
	int f;

	us_setup(0700);
	/* A regular file: refused and kept. */
	f = open(path, O_CREAT | O_WRONLY, 0644);
	CU_ASSERT(f >= 0);
	close(f);
	CU_ASSERT_EQUAL(unix_socket_listen(path, 0600, 4, err, sizeof(err)), -EEXIST);
	CU_ASSERT_EQUAL(lstat(path, &st), 0);
	CU_ASSERT_TRUE(S_ISREG(st.st_mode));
	CU_ASSERT_EQUAL(unix_socket_unlink(path), -EPERM);
	CU_ASSERT_EQUAL(unlink(path), 0);
	/* A symlink (to a file we would otherwise chmod): never followed, never removed. */
	snprintf(target, sizeof(target), "%s/target", dir);
	f = open(target, O_CREAT | O_WRONLY, 0644);
	close(f);
	CU_ASSERT_EQUAL(symlink(target, path), 0);
	CU_ASSERT_EQUAL(unix_socket_listen(path, 0600, 4, err, sizeof(err)), -EEXIST);
	CU_ASSERT_EQUAL(stat(target, &st), 0);
	CU_ASSERT_EQUAL(st.st_mode & 0777, 0644);
	CU_ASSERT_EQUAL(lstat(path, &st), 0);
	CU_ASSERT_TRUE(S_ISLNK(st.st_mode));
	us_teardown();
}

static void test_unsafe_directories(void)
{
	struct sockaddr_un sa;
	int fd;

	/* Writable by others and not sticky: another user could swap the socket. */
	us_setup(0777);
	CU_ASSERT_EQUAL(unix_socket_listen(path, 0600, 4, err, sizeof(err)), -EPERM);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "not sticky"));
	us_teardown();
	/* Sticky (like /tmp): fine, but an entry of another user is theirs. */
	us_setup(01777);
	fd = unix_socket_listen(path, 0600, 4, err, sizeof(err));
	CU_ASSERT(fd >= 0);
	close(fd);
	if (geteuid() == 0) {
		CU_ASSERT_EQUAL(lchown(path, 65534, 65534), 0);
		CU_ASSERT_EQUAL(unix_socket_listen(path, 0600, 4, err, sizeof(err)), -EPERM);
		CU_ASSERT_EQUAL(unix_socket_unlink(path), -EPERM);
	}
	us_teardown();
	/* Too long for sun_path. */
	{
		char longp[sizeof(sa.sun_path) + 16];

		memset(longp, 'a', sizeof(longp) - 1);
		longp[sizeof(longp) - 1] = 0;
		CU_ASSERT_EQUAL(unix_socket_listen(longp, 0600, 4, err, sizeof(err)),
				-ENAMETOOLONG);
	}
}

static void test_private_dir(void)
{
	char sub[128];
	struct stat st;

	us_setup(0700);
	snprintf(sub, sizeof(sub), "%s/run", dir);
	CU_ASSERT_EQUAL(unix_socket_private_dir(sub, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(stat(sub, &st), 0);
	CU_ASSERT_EQUAL(st.st_mode & 0777, 0700);
	CU_ASSERT_EQUAL(unix_socket_private_dir(sub, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(chmod(sub, 0777), 0);
	CU_ASSERT_EQUAL(unix_socket_private_dir(sub, err, sizeof(err)), -EPERM);
	us_teardown();
}

CUNIT_SUITE(unix_socket, NULL, NULL, {"mode_and_stale", test_mode_and_stale},
	    {"not_ours_left_alone", test_not_ours_left_alone},
	    {"unsafe_directories", test_unsafe_directories}, {"private_dir", test_private_dir})
