/* common/file_replace.h - replacing a small state file whole: the new content goes to
 * "<path>.tmp", is flushed (fdatasync) and renamed over path, and the directory is synced, so a
 * crash or a power loss leaves the old state or the new one, never half of either. Blocking file
 * I/O: call it from the syncer thread (common/syncer.h), or at start-up and teardown. */
#ifndef NVME_EMU_COMMON_FILE_REPLACE_H
#define NVME_EMU_COMMON_FILE_REPLACE_H

#include <stdint.h>
#include <sys/uio.h>

/* Writes the iovcnt pieces of iov, in order, as the new content of path (mode 0600 when it is
 * created). 0 or -errno (the temporary file removed; path untouched). */
int file_replace(const char *path, const struct iovec *iov, int iovcnt);
/* Makes the directory entries of path's directory durable (a rename or a creation in it). 0 or
 * -errno. */
int file_replace_sync_dir(const char *path);
/* Writes every byte of the iovcnt pieces of iov at off on, in order (short writes and EINTR
 * continued). 0 or -errno (-EIO for a write that wrote nothing). */
int file_pwrite_all(int fd, const struct iovec *iov, int iovcnt, uint64_t off);

#endif
