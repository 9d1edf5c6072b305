/* common/svc_notify.c - sending service manager notifications (see svc_notify.h). */
#include "common/svc_notify.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

struct svc_notify {
	int fd;
	struct sockaddr_un addr;
	socklen_t addr_len;
};

int svc_notify_open(struct svc_notify **out)
{
	const char *name = getenv("NOTIFY_SOCKET");
	struct svc_notify *n;
	size_t len;

	*out = NULL;
	if (!name || !*name)
		return 0;
	if (name[0] != '/' && name[0] != '@')
		return strchr(name, ':') ? -EAFNOSUPPORT : -EINVAL;
	len = strlen(name);
	if (len >= sizeof(n->addr.sun_path))
		return -ENAMETOOLONG;
	n = calloc(1, sizeof(*n));
	if (!n)
		return -ENOMEM;
	n->addr.sun_family = AF_UNIX;
	memcpy(n->addr.sun_path, name, len);
	if (name[0] == '@') {
		/* Abstract: a leading NUL, and the length says where the name ends. */
		n->addr.sun_path[0] = '\0';
		n->addr_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len);
	} else {
		n->addr_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len + 1);
	}
	n->fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (n->fd < 0) {
		int rc = -errno;

		free(n);
		return rc;
	}
	*out = n;
	return 0;
}

int svc_notify_send(struct svc_notify *n, const char *text)
{
	size_t len;
	ssize_t sent;

	if (!n)
		return 0;
	len = strlen(text);
	do {
		sent = sendto(n->fd, text, len, MSG_NOSIGNAL | MSG_DONTWAIT,
			      (const struct sockaddr *)&n->addr, n->addr_len);
	} while (sent < 0 && errno == EINTR);
	if (sent < 0)
		return -errno;
	return (size_t)sent == len ? 0 : -EMSGSIZE;
}

void svc_notify_close(struct svc_notify *n)
{
	if (!n)
		return;
	close(n->fd);
	free(n);
}

uint64_t svc_notify_watchdog_usec(void)
{
	const char *usec = getenv("WATCHDOG_USEC"), *pid = getenv("WATCHDOG_PID");
	unsigned long long v;
	char *end;

	if (!usec || !*usec)
		return 0;
	if (pid && *pid) {
		unsigned long long p = strtoull(pid, &end, 10);

		if (*end || p != (unsigned long long)getpid())
			return 0;
	}
	errno = 0;
	v = strtoull(usec, &end, 10);
	if (errno || *end || *usec == '-')
		return 0;
	return v;
}
