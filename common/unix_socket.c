/* common/unix_socket.c - listening unix sockets created safely (see unix_socket.h). */
#include "common/unix_socket.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define US_ERR(...) snprintf(err, err_len, __VA_ARGS__)

/* The directory path lives in: ours or root's, and not open to others' writes unless sticky. */
static int unix_socket_check_dir(const char *path, char *err, size_t err_len)
{
	char *copy = strdup(path), *dir;
	struct stat st;
	int rc = 0;

	if (!copy) {
		US_ERR("out of memory");
		return -ENOMEM;
	}
	dir = dirname(copy);
	if (lstat(dir, &st) < 0) {
		rc = -errno;
		US_ERR("directory %s: %s", dir, strerror(errno));
	} else if (!S_ISDIR(st.st_mode)) {
		rc = -ENOTDIR;
		US_ERR("%s is not a directory", dir);
	} else if (st.st_uid != geteuid() && st.st_uid != 0) {
		rc = -EPERM;
		US_ERR("directory %s belongs to uid %u: it could replace the socket", dir,
		       (unsigned int)st.st_uid);
	} else if ((st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX)) {
		rc = -EPERM;
		US_ERR("directory %s is writable by others and not sticky: another user could "
		       "redirect the socket", dir);
	}
	free(copy);
	return rc;
}

/* A socket at path that somebody accepts on is live: not stale, not ours to replace. */
static bool unix_socket_live(const struct sockaddr_un *sa)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	bool live;

	if (fd < 0)
		return false;
	live = connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) == 0;
	close(fd);
	return live;
}

int unix_socket_listen(const char *path, mode_t mode, int backlog, char *err, size_t err_len)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct stat st;
	mode_t old;
	int fd, rc;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		US_ERR("socket path longer than %zu bytes", sizeof(sa.sun_path) - 1);
		return -ENAMETOOLONG;
	}
	strcpy(sa.sun_path, path);
	rc = unix_socket_check_dir(path, err, err_len);
	if (rc)
		return rc;
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			US_ERR("%s exists and is not a socket: left alone", path);
			return -EEXIST;
		}
		if (st.st_uid != geteuid()) {
			US_ERR("%s is a socket of uid %u: left alone", path, (unsigned int)st.st_uid);
			return -EPERM;
		}
		if (unix_socket_live(&sa)) {
			US_ERR("%s is served by another process", path);
			return -EADDRINUSE;
		}
		/* A stale socket of ours (a sticky directory lets only us remove it). */
		if (unlink(path) < 0 && errno != ENOENT) {
			rc = -errno;
			US_ERR("cannot remove the stale socket %s: %s", path, strerror(errno));
			return rc;
		}
	} else if (errno != ENOENT) {
		rc = -errno;
		US_ERR("%s: %s", path, strerror(errno));
		return rc;
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		rc = -errno;
		US_ERR("socket: %s", strerror(errno));
		return rc;
	}
	/* The mode is the file's from its creation: bind never follows a symlink (an entry
	 * that appeared meanwhile makes it fail with EADDRINUSE), a later chmod would. */
	old = umask(~mode & 0777);
	rc = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
	umask(old);
	if (rc < 0) {
		rc = -errno;
		US_ERR("bind %s: %s", path, strerror(errno));
		close(fd);
		return rc;
	}
	if (listen(fd, backlog) < 0) {
		rc = -errno;
		US_ERR("listen %s: %s", path, strerror(errno));
		unlink(path);
		close(fd);
		return rc;
	}
	return fd;
}

int unix_socket_unlink(const char *path)
{
	struct stat st;

	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISSOCK(st.st_mode) || st.st_uid != geteuid())
		return -EPERM;
	return unlink(path) < 0 ? -errno : 0;
}

int unix_socket_private_dir(const char *dir, char *err, size_t err_len)
{
	struct stat st;

	if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
		int rc = -errno;

		US_ERR("cannot create %s: %s", dir, strerror(errno));
		return rc;
	}
	if (lstat(dir, &st) < 0) {
		int rc = -errno;

		US_ERR("%s: %s", dir, strerror(errno));
		return rc;
	}
	if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH))) {
		US_ERR("%s must be a directory of ours that others cannot write", dir);
		return -EPERM;
	}
	return 0;
}
