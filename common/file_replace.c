/* common/file_replace.c - see file_replace.h. */
#include "common/file_replace.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int file_pwrite_all(int fd, const struct iovec *iov, int iovcnt, uint64_t off)
{
	for (int i = 0; i < iovcnt; i++) {
		const char *p = iov[i].iov_base;
		size_t left = iov[i].iov_len;

		while (left) {
			ssize_t n = pwrite(fd, p, left, (off_t)off);

			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				return n < 0 ? -errno : -EIO;
			p += n;
			left -= (size_t)n;
			off += (uint64_t)n;
		}
	}
	return 0;
}

int file_replace_sync_dir(const char *path)
{
	char *copy = strdup(path);
	int fd, rc = 0;

	if (!copy)
		return -ENOMEM;
	fd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		rc = -errno;
	else if (fsync(fd))
		rc = -errno;
	if (fd >= 0)
		close(fd);
	free(copy);
	return rc;
}

int file_replace(const char *path, const struct iovec *iov, int iovcnt)
{
	size_t tlen = strlen(path) + sizeof(".tmp");
	char *tmp = malloc(tlen);
	int fd, rc;

	if (!tmp)
		return -ENOMEM;
	snprintf(tmp, tlen, "%s.tmp", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		rc = -errno;
		free(tmp);
		return rc;
	}
	rc = file_pwrite_all(fd, iov, iovcnt, 0);
	if (!rc && fdatasync(fd))
		rc = -errno;
	if (close(fd) && !rc)
		rc = -errno;
	if (!rc && rename(tmp, path))
		rc = -errno;
	if (rc)
		unlink(tmp);
	/* The rename is durable only once the directory entry is. */
	if (!rc)
		rc = file_replace_sync_dir(path);
	free(tmp);
	return rc;
}
