/* common/unix_socket.h - listening unix sockets created safely at paths other users may reach:
 * the vfio-user sockets of the functions and the JSON-RPC socket.
 *
 * A socket path is an entry in a directory: whoever may write that directory may race us
 * (replace our socket by a symlink between bind and chmod, squat the name before we bind,
 * remove ours and put theirs in place). So:
 * - the directory must belong to us or to root, and must not be writable by others unless it
 *   is sticky (like /tmp: then only an entry's owner may remove or rename it);
 * - an entry already there is replaced only when it is a socket that belongs to us (a stale
 *   one from an earlier run); anything else is refused, never removed;
 * - the socket gets its mode at bind time (umask), never by a chmod after bind, which would
 *   follow a symlink swapped in meanwhile.
 * Thread: one that no other thread creates files beside (the umask is process-wide): the main
 * thread. Errors: -errno, with a sentence for people in err (err_len bytes).
 */
#ifndef NVME_EMU_COMMON_UNIX_SOCKET_H
#define NVME_EMU_COMMON_UNIX_SOCKET_H

#include <stddef.h>
#include <sys/types.h>

/* Creates, binds (file mode `mode`, e.g. 0600) and listens on path; returns the socket
 * (non-blocking, close-on-exec) or -errno: -EEXIST (something else is there), -EADDRINUSE (a
 * live socket: somebody serves it), -EPERM (the directory is unsafe, or the entry is not ours),
 * -ENAMETOOLONG, or bind/listen's. */
int unix_socket_listen(const char *path, mode_t mode, int backlog, char *err, size_t err_len);

/* Removes path if it is a socket that belongs to us (our own, at teardown). 0 or -errno. */
int unix_socket_unlink(const char *path);

/* Makes dir (and no parent) with mode 0700 if it is missing; an existing one must be a
 * directory that belongs to us and is not writable by others. 0 or -errno (err says why). */
int unix_socket_private_dir(const char *dir, char *err, size_t err_len);

#endif
