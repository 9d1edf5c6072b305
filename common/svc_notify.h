/* common/svc_notify.h - the service manager's notification protocol (systemd's sd_notify(3)):
 * datagrams of newline-separated "KEY=VALUE" assignments (READY=1, RELOADING=1, STOPPING=1,
 * STATUS=..., WATCHDOG=1, MONOTONIC_USEC=...) sent to the AF_UNIX datagram socket named by
 * $NOTIFY_SOCKET: a path, or an abstract name written with a leading '@'.
 *
 * Written here rather than linked from libsystemd: the protocol is one sendto(), and this one
 * never blocks (MSG_DONTWAIT: a manager that does not read its socket costs a lost notification,
 * never a stalled main loop), adds no runtime dependency, and behaves the same in containers
 * without libsystemd. The manager identifies the sender by the credentials the kernel attaches
 * (its PID), so any thread of the process may send. */
#ifndef NVME_EMU_COMMON_SVC_NOTIFY_H
#define NVME_EMU_COMMON_SVC_NOTIFY_H

#include <stdint.h>

struct svc_notify;

/*
 * Opens the channel named by $NOTIFY_SOCKET. Returns 0 with *out NULL when the variable is unset
 * or empty (no manager listens: every send is then a no-op), 0 with the channel, or -EINVAL (a
 * name that is neither a path nor '@'), -ENAMETOOLONG, -EAFNOSUPPORT (another address family,
 * e.g. vsock:) or the socket's -errno.
 */
int svc_notify_open(struct svc_notify **out);
/* Sends `text` (assignments separated by '\n') as one datagram. 0, or -errno (-EAGAIN: the
 * manager's queue is full, the notification is lost). NULL n: 0. Any thread. */
int svc_notify_send(struct svc_notify *n, const char *text);
void svc_notify_close(struct svc_notify *n);

/* The watchdog interval the manager asked for ($WATCHDOG_USEC), in microseconds, or 0: unset,
 * not a number, or $WATCHDOG_PID set to another process's PID. */
uint64_t svc_notify_watchdog_usec(void);

#endif
