/* host/vfu_client.c - the synchronous vfio-user test client: socket
 * and framing, negotiation, DMA windows, region info/access, interrupts. */
#include "host/vfu_client.h"

#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define VFU_CLIENT_MAX_WINDOWS 64
#define VFU_CLIENT_MAX_RX_FDS 32
/* Largest message we accept from a server: header + 16 + 64 MiB. */
#define VFU_CLIENT_MAX_MSG (32u + (64u << 20))

const char vfu_client_qemu_caps[] =
    "{\"capabilities\": {\"pgsizes\": 4096, \"max_msg_fds\": 16, \"max_dma_maps\": 65535, "
    "\"max_data_xfer_size\": 1048576, \"migration\": {\"max_bitmap_size\": 268435456, "
    "\"pgsize\": 4096}, \"write_multiple\": true}}";

struct vfu_client_window {
	uint64_t iova, size;
	uint32_t prot;
	uint8_t *local;
	int memfd; /* guest RAM: the memfd; -1 for a message-only window */
};

struct vfu_client {
	int sock;
	int timeout_ms;
	uint16_t next_id;
	uint32_t server_max_xfer;
	bool write_multi; /* both VERSION messages offered write_multiple */
	bool eof;
	struct vfu_client_window win[VFU_CLIENT_MAX_WINDOWS];
	int nwin;
	struct vfu_client_region regions[VFU_CLIENT_MAX_REGIONS];
	bool region_valid[VFU_CLIENT_MAX_REGIONS];
	int irq_fds[VFU_CLIENT_MAX_IRQS][VFU_CLIENT_MAX_VECTORS];
	struct vfu_client_stats st;
};

static int64_t vfu_client_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

struct vfu_client *vfu_client_connect(const char *path, int timeout_ms)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int64_t deadline = vfu_client_now_ms() + timeout_ms;
	struct vfu_client *c;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		errno = ENAMETOOLONG;
		return NULL;
	}
	strcpy(sa.sun_path, path);
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->timeout_ms = 5000;
	memset(c->irq_fds, -1, sizeof(c->irq_fds));
	for (int i = 0; i < VFU_CLIENT_MAX_REGIONS; i++)
		c->regions[i].fd = -1;
	for (;;) {
		int err;

		c->sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (c->sock < 0)
			break;
		if (!connect(c->sock, (struct sockaddr *)&sa, sizeof(sa)))
			return c;
		err = errno;
		close(c->sock);
		errno = err;
		/* The server may not have bound its socket yet. */
		if ((err != ENOENT && err != ECONNREFUSED) || vfu_client_now_ms() >= deadline)
			break;
		usleep(10000);
	}
	{
		int err = errno;

		free(c);
		errno = err;
	}
	return NULL;
}

static void vfu_client_region_drop(struct vfu_client_region *r)
{
	for (uint32_t i = 0; i < r->nr_areas; i++)
		if (r->areas[i].ptr)
			munmap(r->areas[i].ptr, r->areas[i].size);
	if (r->fd >= 0)
		close(r->fd);
	memset(r, 0, sizeof(*r));
	r->fd = -1;
}

static void vfu_client_window_drop(struct vfu_client_window *w)
{
	if (w->memfd >= 0) {
		munmap(w->local, w->size);
		close(w->memfd);
	} else {
		free(w->local);
	}
}

void vfu_client_close(struct vfu_client *c)
{
	if (!c)
		return;
	close(c->sock);
	for (int i = 0; i < c->nwin; i++)
		vfu_client_window_drop(&c->win[i]);
	for (int i = 0; i < VFU_CLIENT_MAX_REGIONS; i++)
		vfu_client_region_drop(&c->regions[i]);
	for (int i = 0; i < VFU_CLIENT_MAX_IRQS; i++)
		for (int v = 0; v < VFU_CLIENT_MAX_VECTORS; v++)
			if (c->irq_fds[i][v] >= 0)
				close(c->irq_fds[i][v]);
	free(c);
}

int vfu_client_fd(const struct vfu_client *c)
{
	return c->sock;
}

void vfu_client_set_timeout(struct vfu_client *c, int timeout_ms)
{
	c->timeout_ms = timeout_ms;
}

void vfu_client_get_stats(const struct vfu_client *c, struct vfu_client_stats *st)
{
	*st = c->st;
}

uint16_t vfu_client_next_id(const struct vfu_client *c)
{
	return c->next_id;
}

bool vfu_client_eof(const struct vfu_client *c)
{
	return c->eof;
}

uint32_t vfu_client_server_max_xfer(const struct vfu_client *c)
{
	return c->server_max_xfer;
}

/* ---------------------------------------------------------------------- */
/* Framing                                                                */

int vfu_client_send_raw(struct vfu_client *c, const void *buf, size_t len, const int *fds,
			size_t nfds)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * VFU_CLIENT_MAX_RX_FDS)];
		struct cmsghdr align;
	} ctl;
	size_t sent = 0;

	if (nfds > VFU_CLIENT_MAX_RX_FDS)
		return -EINVAL;
	while (sent < len || (len == 0 && nfds)) {
		struct iovec iov = {.iov_base = (uint8_t *)buf + sent, .iov_len = len - sent};
		struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
		ssize_t n;

		/* The fds ride on the first byte, as QEMU sends them. */
		if (!sent && nfds) {
			struct cmsghdr *cm;

			memset(&ctl, 0, sizeof(ctl));
			msg.msg_control = ctl.buf;
			msg.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
			cm = CMSG_FIRSTHDR(&msg);
			cm->cmsg_level = SOL_SOCKET;
			cm->cmsg_type = SCM_RIGHTS;
			cm->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
			memcpy(CMSG_DATA(cm), fds, sizeof(int) * nfds);
		}
		n = sendmsg(c->sock, &msg, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EPIPE || errno == ECONNRESET)
				c->eof = true;
			return -errno;
		}
		sent += (size_t)n;
		if (!len)
			break;
	}
	return 0;
}

/* Reads exactly len bytes before deadline, collecting fds. */
static int vfu_client_read_full(struct vfu_client *c, void *buf, size_t len, int *fds, size_t *nfds,
				int64_t deadline)
{
	size_t got = 0;

	while (got < len) {
		union {
			char buf[CMSG_SPACE(sizeof(int) * VFU_CLIENT_MAX_RX_FDS)];
			struct cmsghdr align;
		} ctl;
		struct iovec iov = {.iov_base = (uint8_t *)buf + got, .iov_len = len - got};
		struct msghdr msg = {
		    .msg_iov = &iov,
		    .msg_iovlen = 1,
		    .msg_control = ctl.buf,
		    .msg_controllen = sizeof(ctl.buf),
		};
		struct pollfd pfd = {.fd = c->sock, .events = POLLIN};
		int64_t left = deadline - vfu_client_now_ms();
		ssize_t n;
		int rc;

		if (left < 0)
			left = 0;
		rc = poll(&pfd, 1, (int)left);
		if (rc < 0 && errno == EINTR)
			continue;
		if (rc < 0)
			return -errno;
		if (rc == 0)
			return -ETIMEDOUT;
		n = recvmsg(c->sock, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				continue;
			if (errno == ECONNRESET)
				c->eof = true;
			return -errno;
		}
		for (struct cmsghdr *cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm)) {
			size_t k;

			if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
				continue;
			k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
			for (size_t i = 0; i < k; i++) {
				int f;

				memcpy(&f, CMSG_DATA(cm) + i * sizeof(int), sizeof(f));
				if (*nfds < VFU_CLIENT_MAX_RX_FDS)
					fds[(*nfds)++] = f;
				else
					close(f);
			}
		}
		if (n == 0) {
			c->eof = true;
			return -ECONNRESET;
		}
		got += (size_t)n;
	}
	return 0;
}

/* One whole message; *body is malloc'ed (caller frees). */
static int vfu_client_recv(struct vfu_client *c, struct vfio_user_header *hdr, uint8_t **body,
			   int *fds, size_t *nfds, int timeout_ms)
{
	int64_t deadline = vfu_client_now_ms() + timeout_ms;
	size_t len;
	int rc;

	*body = NULL;
	*nfds = 0;
	rc = vfu_client_read_full(c, hdr, sizeof(*hdr), fds, nfds, deadline);
	if (rc)
		goto out_fds;
	if (hdr->msg_size < sizeof(*hdr) || hdr->msg_size > VFU_CLIENT_MAX_MSG) {
		rc = -EPROTO;
		goto out_fds;
	}
	len = hdr->msg_size - sizeof(*hdr);
	*body = malloc(len ? len : 1);
	if (!*body) {
		rc = -ENOMEM;
		goto out_fds;
	}
	rc = vfu_client_read_full(c, *body, len, fds, nfds, deadline);
	if (rc)
		goto out_body;
	return 0;

out_body:
	free(*body);
	*body = NULL;
out_fds:
	for (size_t i = 0; i < *nfds; i++)
		close(fds[i]);
	*nfds = 0;
	return rc;
}

int vfu_client_recv_msg(struct vfu_client *c, struct vfio_user_header *hdr, void *payload,
			size_t cap, size_t *plen, int *fds, size_t *nfds, int timeout_ms)
{
	int rfds[VFU_CLIENT_MAX_RX_FDS];
	size_t rn, len, keep = 0;
	uint8_t *body;
	int rc = vfu_client_recv(c, hdr, &body, rfds, &rn, timeout_ms);

	if (rc)
		return rc;
	len = hdr->msg_size - sizeof(*hdr);
	if (payload)
		memcpy(payload, body, len < cap ? len : cap);
	if (plen)
		*plen = len;
	if (fds && nfds) {
		keep = rn < *nfds ? rn : *nfds;
		memcpy(fds, rfds, keep * sizeof(int));
		*nfds = keep;
	}
	for (size_t i = keep; i < rn; i++)
		close(rfds[i]);
	free(body);
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Serving the server's DMA_READ / DMA_WRITE                              */

static struct vfu_client_window *vfu_client_window_find(struct vfu_client *c, uint64_t iova,
							uint64_t len)
{
	for (int i = 0; i < c->nwin; i++) {
		struct vfu_client_window *w = &c->win[i];

		if (iova >= w->iova && len <= w->size && iova - w->iova <= w->size - len)
			return w;
	}
	return NULL;
}

static int vfu_client_send_msg(struct vfu_client *c, uint16_t id, uint16_t command, uint32_t flags,
			       uint32_t error_no, const void *payload, size_t len, const int *fds,
			       size_t nfds)
{
	struct vfio_user_header h = {
	    .msg_id = id,
	    .command = command,
	    .msg_size = (uint32_t)(sizeof(h) + len),
	    .flags = flags,
	    .error_no = error_no,
	};
	uint8_t *buf = malloc(sizeof(h) + len);
	int rc;

	if (!buf)
		return -ENOMEM;
	memcpy(buf, &h, sizeof(h));
	if (len)
		memcpy(buf + sizeof(h), payload, len);
	rc = vfu_client_send_raw(c, buf, sizeof(h) + len, fds, nfds);
	free(buf);
	return rc;
}

/* Answers one server command (as QEMU's main loop would). */
static int vfu_client_serve_one(struct vfu_client *c, const struct vfio_user_header *h,
				const uint8_t *body, size_t nfds)
{
	size_t len = h->msg_size - sizeof(*h);
	struct vfio_user_dma_rw rw;
	struct vfu_client_window *w;
	uint32_t err = 0;
	int rc;

	if (h->command != VFIO_USER_DMA_READ && h->command != VFIO_USER_DMA_WRITE) {
		err = ENOSYS;
		goto out_err;
	}
	if (len < sizeof(rw) || nfds) {
		err = EINVAL;
		goto out_err;
	}
	memcpy(&rw, body, sizeof(rw));
	if (h->command == VFIO_USER_DMA_WRITE && len - sizeof(rw) != rw.count) {
		err = EINVAL;
		goto out_err;
	}
	if (rw.count > (64u << 20)) {
		err = E2BIG;
		goto out_err;
	}
	w = vfu_client_window_find(c, rw.addr, rw.count);
	if (!w) {
		err = ENODEV;
		goto out_err;
	}
	if (h->command == VFIO_USER_DMA_WRITE) {
		if (!(w->prot & VFIO_USER_DMA_WRITE_PROT)) {
			err = EPERM;
			goto out_err;
		}
		memcpy(w->local + (rw.addr - w->iova), body + sizeof(rw), rw.count);
		c->st.dma_writes_served++;
		if (h->flags & VFIO_USER_F_NO_REPLY)
			return 0;
		return vfu_client_send_msg(c, h->msg_id, h->command, VFIO_USER_F_TYPE_REPLY, 0, &rw,
					   sizeof(rw), NULL, 0);
	}
	if (!(w->prot & VFIO_USER_DMA_READ_PROT)) {
		err = EPERM;
		goto out_err;
	}
	{
		uint8_t *reply = malloc(sizeof(rw) + rw.count);

		if (!reply)
			return -ENOMEM;
		memcpy(reply, &rw, sizeof(rw));
		memcpy(reply + sizeof(rw), w->local + (rw.addr - w->iova), rw.count);
		c->st.dma_reads_served++;
		rc = 0;
		if (!(h->flags & VFIO_USER_F_NO_REPLY))
			rc = vfu_client_send_msg(c, h->msg_id, h->command, VFIO_USER_F_TYPE_REPLY,
						 0, reply, sizeof(rw) + rw.count, NULL, 0);
		free(reply);
		return rc;
	}
out_err:
	c->st.dma_errors_replied++;
	if (h->flags & VFIO_USER_F_NO_REPLY)
		return 0;
	return vfu_client_send_msg(c, h->msg_id, h->command,
				   VFIO_USER_F_TYPE_REPLY | VFIO_USER_F_ERROR, err, NULL, 0, NULL,
				   0);
}

int vfu_client_serve(struct vfu_client *c, int timeout_ms)
{
	int fds[VFU_CLIENT_MAX_RX_FDS];
	struct vfio_user_header h;
	uint8_t *body;
	size_t nfds;
	int rc = vfu_client_recv(c, &h, &body, fds, &nfds, timeout_ms);

	if (rc == -ETIMEDOUT)
		return 0;
	if (rc)
		return rc;
	if ((h.flags & VFIO_USER_F_TYPE_MASK) == VFIO_USER_F_TYPE_COMMAND)
		rc = vfu_client_serve_one(c, &h, body, nfds);
	else
		rc = -EPROTO;
	for (size_t i = 0; i < nfds; i++)
		close(fds[i]);
	free(body);
	return rc ? rc : 1;
}

/* ---------------------------------------------------------------------- */
/* Requests                                                               */

int vfu_client_request(struct vfu_client *c, uint16_t command, uint32_t flags, const void *payload,
		       size_t len, const int *fds, size_t nfds, void *reply, size_t reply_cap,
		       size_t *reply_len, int *reply_fd)
{
	int64_t deadline = vfu_client_now_ms() + c->timeout_ms;
	uint16_t id = c->next_id++;
	int rc;

	if (reply_fd)
		*reply_fd = -1;
	if (reply_len)
		*reply_len = 0;
	rc = vfu_client_send_msg(c, id, command, flags & ~VFIO_USER_F_TYPE_MASK, 0, payload, len,
				 fds, nfds);
	if (rc || (flags & VFIO_USER_F_NO_REPLY))
		return rc;
	for (;;) {
		int rfds[VFU_CLIENT_MAX_RX_FDS];
		struct vfio_user_header h;
		int64_t left = deadline - vfu_client_now_ms();
		uint8_t *body;
		size_t rn, blen;

		rc = vfu_client_recv(c, &h, &body, rfds, &rn, left > 0 ? (int)left : 0);
		if (rc)
			return rc;
		blen = h.msg_size - sizeof(h);
		if ((h.flags & VFIO_USER_F_TYPE_MASK) == VFIO_USER_F_TYPE_COMMAND) {
			/* The server's DMA request, interleaved with our reply. */
			rc = vfu_client_serve_one(c, &h, body, rn);
			for (size_t i = 0; i < rn; i++)
				close(rfds[i]);
			free(body);
			if (rc)
				return rc;
			continue;
		}
		if ((h.flags & VFIO_USER_F_TYPE_MASK) != VFIO_USER_F_TYPE_REPLY || h.msg_id != id ||
		    h.command != command) {
			rc = -EPROTO;
		} else if (h.flags & VFIO_USER_F_ERROR) {
			rc = h.error_no ? -(int)h.error_no : -EIO;
		} else {
			if (reply && reply_cap)
				memcpy(reply, body, blen < reply_cap ? blen : reply_cap);
			if (reply_len)
				*reply_len = blen;
		}
		for (size_t i = 0; i < rn; i++) {
			if (!rc && reply_fd && *reply_fd < 0)
				*reply_fd = rfds[i];
			else
				close(rfds[i]);
		}
		free(body);
		return rc;
	}
}

/* True if a VERSION JSON object offers "write_multiple": true. */
static bool vfu_client_json_multi(struct json_object *root)
{
	struct json_object *caps, *x;

	return json_object_object_get_ex(root, "capabilities", &caps) &&
	       json_object_object_get_ex(caps, "write_multiple", &x) &&
	       json_object_is_type(x, json_type_boolean) && json_object_get_boolean(x);
}

static bool vfu_client_json_multi_str(const char *json)
{
	struct json_object *root = json_tokener_parse(json);
	bool multi = root && vfu_client_json_multi(root);

	json_object_put(root);
	return multi;
}

int vfu_client_version(struct vfu_client *c, uint16_t major, uint16_t minor, const char *json,
		       char *reply_json, size_t reply_cap)
{
	size_t jlen = json ? strlen(json) + 1 : 0, rlen;
	struct vfio_user_version v = {.major = major, .minor = minor};
	uint8_t *msg = malloc(sizeof(v) + jlen), reply[4096];
	struct json_object *root = NULL, *caps, *x;
	int rc;

	if (!msg)
		return -ENOMEM;
	memcpy(msg, &v, sizeof(v));
	if (jlen)
		memcpy(msg + sizeof(v), json, jlen);
	rc = vfu_client_request(c, VFIO_USER_VERSION, 0, msg, sizeof(v) + jlen, NULL, 0, reply,
				sizeof(reply) - 1, &rlen, NULL);
	free(msg);
	if (rc)
		return rc;
	/* The reply must be 0.x with a NUL-terminated JSON object (QEMU's
	 * "corrupt version reply" checks). */
	if (rlen < sizeof(v) + 2 || rlen > sizeof(reply) - 1 || reply[rlen - 1] != 0)
		return -EPROTO;
	memcpy(&v, reply, sizeof(v));
	if (v.major != 0 || v.minor > minor)
		return -EPROTO;
	root = json_tokener_parse((const char *)reply + sizeof(v));
	if (!root || !json_object_is_type(root, json_type_object)) {
		rc = -EPROTO;
		goto out_put;
	}
	c->server_max_xfer = 1u << 20;
	if (json_object_object_get_ex(root, "capabilities", &caps) &&
	    json_object_object_get_ex(caps, "max_data_xfer_size", &x))
		c->server_max_xfer = (uint32_t)json_object_get_int64(x);
	c->write_multi = vfu_client_json_multi(root) && json && vfu_client_json_multi_str(json);
	if (reply_json && reply_cap) {
		size_t n = strlen((const char *)reply + sizeof(v));

		if (n >= reply_cap)
			n = reply_cap - 1;
		memcpy(reply_json, reply + sizeof(v), n);
		reply_json[n] = 0;
	}
out_put:
	json_object_put(root);
	return rc;
}

int vfu_client_negotiate(struct vfu_client *c)
{
	return vfu_client_version(c, 0, 0, vfu_client_qemu_caps, NULL, 0);
}

/* ---------------------------------------------------------------------- */
/* DMA windows                                                            */

int vfu_client_dma_map(struct vfu_client *c, uint64_t iova, uint64_t size, uint32_t prot, int fd,
		       uint64_t offset)
{
	struct vfio_user_dma_map m = {
	    .argsz = sizeof(m),
	    .flags = prot,
	    .offset = offset,
	    .addr = iova,
	    .size = size,
	};

	return vfu_client_request(c, VFIO_USER_DMA_MAP, 0, &m, sizeof(m), fd >= 0 ? &fd : NULL,
				  fd >= 0 ? 1 : 0, NULL, 0, NULL, NULL);
}

int vfu_client_ram_create(struct vfu_client *c, uint64_t iova, uint64_t size)
{
	struct vfu_client_window *w;
	int rc;

	if (c->nwin == VFU_CLIENT_MAX_WINDOWS)
		return -ENOSPC;
	w = &c->win[c->nwin];
	w->memfd = memfd_create("vfu-client-ram", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (w->memfd < 0)
		return -errno;
	/* Sealed against resizing, as QEMU's memory-backend-memfd does: servers refuse
	 * guest memory they could lose under their mappings. */
	if (ftruncate(w->memfd, (off_t)size) < 0 ||
	    fcntl(w->memfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) < 0) {
		rc = -errno;
		goto out_close;
	}
	w->local = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, w->memfd, 0);
	if (w->local == MAP_FAILED) {
		rc = -errno;
		goto out_close;
	}
	w->iova = iova;
	w->size = size;
	w->prot = VFIO_USER_DMA_READ_PROT | VFIO_USER_DMA_WRITE_PROT;
	rc = vfu_client_dma_map(c, iova, size, w->prot, w->memfd, 0);
	if (rc)
		goto out_unmap;
	c->nwin++;
	return 0;

out_unmap:
	munmap(w->local, size);
out_close:
	close(w->memfd);
	return rc;
}

int vfu_client_map_msg_window(struct vfu_client *c, uint64_t iova, uint64_t size, uint32_t prot)
{
	struct vfu_client_window *w;
	int rc;

	if (c->nwin == VFU_CLIENT_MAX_WINDOWS)
		return -ENOSPC;
	w = &c->win[c->nwin];
	w->local = calloc(1, size ? size : 1);
	if (!w->local)
		return -ENOMEM;
	w->memfd = -1;
	w->iova = iova;
	w->size = size;
	w->prot = prot;
	rc = vfu_client_dma_map(c, iova, size, prot, -1, 0);
	if (rc) {
		free(w->local);
		return rc;
	}
	c->nwin++;
	return 0;
}

void *vfu_client_ram_ptr(struct vfu_client *c, uint64_t iova, uint64_t len)
{
	struct vfu_client_window *w = vfu_client_window_find(c, iova, len);

	return w ? w->local + (iova - w->iova) : NULL;
}

int vfu_client_dma_unmap(struct vfu_client *c, uint64_t iova, uint64_t size, uint32_t flags)
{
	struct vfio_user_dma_unmap u = {
	    .argsz = sizeof(u),
	    .flags = flags,
	    .addr = iova,
	    .size = size,
	};
	int rc = vfu_client_request(c, VFIO_USER_DMA_UNMAP, 0, &u, sizeof(u), NULL, 0, NULL, 0,
				    NULL, NULL);

	if (rc)
		return rc;
	for (int i = 0; i < c->nwin;) {
		struct vfu_client_window *w = &c->win[i];

		if ((flags & VFIO_USER_DMA_UNMAP_ALL) || (w->iova == iova && w->size == size)) {
			vfu_client_window_drop(w);
			*w = c->win[--c->nwin];
		} else {
			i++;
		}
	}
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Device, regions, interrupts                                            */

int vfu_client_device_info(struct vfu_client *c, struct vfio_user_device_info *out)
{
	struct vfio_user_device_info d = {.argsz = sizeof(d)};
	size_t rlen;
	int rc = vfu_client_request(c, VFIO_USER_DEVICE_GET_INFO, 0, &d, sizeof(d), NULL, 0, out,
				    sizeof(*out), &rlen, NULL);

	if (!rc && rlen != sizeof(*out))
		rc = -EPROTO;
	return rc;
}

/* Parses the capability chain of a full region-info reply into r. */
static int vfu_client_parse_caps(struct vfu_client_region *r, const uint8_t *buf, size_t len,
				 uint32_t cap_offset)
{
	for (int hops = 0; cap_offset && hops < 16; hops++) {
		struct vfio_user_region_info_cap_sparse_mmap cap;

		if (cap_offset < sizeof(struct vfio_user_region_info) || cap_offset > len ||
		    len - cap_offset < sizeof(struct vfio_user_cap_header))
			return -EPROTO;
		memset(&cap, 0, sizeof(cap));
		memcpy(&cap.header, buf + cap_offset, sizeof(cap.header));
		if (cap.header.id == VFIO_REGION_INFO_CAP_SPARSE_MMAP) {
			if (len - cap_offset < sizeof(cap))
				return -EPROTO;
			memcpy(&cap, buf + cap_offset, sizeof(cap));
			if (cap.nr_areas > VFU_CLIENT_MAX_AREAS ||
			    (len - cap_offset - sizeof(cap)) /
				    sizeof(struct vfio_user_sparse_mmap_area) <
				cap.nr_areas)
				return -EPROTO;
			for (uint32_t i = 0; i < cap.nr_areas; i++) {
				struct vfio_user_sparse_mmap_area a;

				memcpy(&a, buf + cap_offset + sizeof(cap) + i * sizeof(a),
				       sizeof(a));
				r->areas[i].offset = a.offset;
				r->areas[i].size = a.size;
			}
			r->nr_areas = cap.nr_areas;
		}
		cap_offset = cap.header.next;
	}
	return 0;
}

int vfu_client_region_info(struct vfu_client *c, uint32_t index, struct vfu_client_region *out)
{
	uint8_t buf[sizeof(struct vfio_user_region_info) + 1024];
	struct vfio_user_region_info ri = {.argsz = sizeof(ri), .index = index};
	struct vfu_client_region r = {.index = index, .fd = -1};
	size_t rlen;
	int rc, fd = -1;

	if (index >= VFU_CLIENT_MAX_REGIONS)
		return -EINVAL;
	rc = vfu_client_request(c, VFIO_USER_DEVICE_GET_REGION_INFO, 0, &ri, sizeof(ri), NULL, 0,
				buf, sizeof(buf), &rlen, &fd);
	if (rc)
		return rc;
	if (rlen < sizeof(ri) || rlen > sizeof(buf))
		goto out_proto;
	memcpy(&ri, buf, sizeof(ri));
	if (ri.argsz > sizeof(ri)) {
		/* Step two: ask again with room for the capabilities. */
		struct vfio_user_region_info again = {.argsz = ri.argsz, .index = index};

		if (fd >= 0 || ri.argsz > sizeof(buf) || rlen != sizeof(ri))
			goto out_proto;
		rc = vfu_client_request(c, VFIO_USER_DEVICE_GET_REGION_INFO, 0, &again,
					sizeof(again), NULL, 0, buf, sizeof(buf), &rlen, &fd);
		if (rc)
			return rc;
		if (rlen < sizeof(ri) || rlen > sizeof(buf))
			goto out_proto;
		memcpy(&ri, buf, sizeof(ri));
		if (ri.argsz != rlen)
			goto out_proto;
	}
	r.flags = ri.flags;
	r.size = ri.size;
	r.offset = ri.offset;
	r.fd = fd;
	if ((ri.flags & VFIO_REGION_INFO_FLAG_CAPS) &&
	    vfu_client_parse_caps(&r, buf, rlen, ri.cap_offset))
		goto out_proto;
	if ((ri.flags & VFIO_REGION_INFO_FLAG_MMAP) && fd >= 0 && !r.nr_areas) {
		r.nr_areas = 1;
		r.areas[0].offset = 0;
		r.areas[0].size = ri.size;
	}
	if (fd >= 0 && (ri.flags & VFIO_REGION_INFO_FLAG_MMAP)) {
		int prot = ((ri.flags & VFIO_REGION_INFO_FLAG_READ) ? PROT_READ : 0) |
			   ((ri.flags & VFIO_REGION_INFO_FLAG_WRITE) ? PROT_WRITE : 0);

		for (uint32_t i = 0; i < r.nr_areas; i++) {
			void *p;

			if (!r.areas[i].size)
				continue;
			p = mmap(NULL, r.areas[i].size, prot, MAP_SHARED, fd,
				 (off_t)(ri.offset + r.areas[i].offset));
			if (p == MAP_FAILED) {
				rc = -errno;
				vfu_client_region_drop(&r);
				return rc;
			}
			r.areas[i].ptr = p;
		}
	}
	vfu_client_region_drop(&c->regions[index]);
	c->regions[index] = r;
	c->region_valid[index] = true;
	if (out)
		*out = r;
	return 0;

out_proto:
	if (fd >= 0)
		close(fd);
	return -EPROTO;
}

void *vfu_client_region_ptr(struct vfu_client *c, uint32_t index, uint64_t offset, uint64_t len)
{
	struct vfu_client_region *r;

	if (index >= VFU_CLIENT_MAX_REGIONS || !c->region_valid[index])
		return NULL;
	r = &c->regions[index];
	for (uint32_t i = 0; i < r->nr_areas; i++) {
		uint64_t ao = r->areas[i].offset, as = r->areas[i].size;

		if (r->areas[i].ptr && offset >= ao && len <= as && offset - ao <= as - len)
			return (uint8_t *)r->areas[i].ptr + (offset - ao);
	}
	return NULL;
}

int vfu_client_region_read(struct vfu_client *c, uint32_t index, uint64_t offset, void *buf,
			   uint32_t count)
{
	struct vfio_user_region_access a = {.offset = offset, .region = index, .count = count};
	uint8_t *reply = malloc(sizeof(a) + count);
	size_t rlen;
	int rc;

	if (!reply)
		return -ENOMEM;
	rc = vfu_client_request(c, VFIO_USER_REGION_READ, 0, &a, sizeof(a), NULL, 0, reply,
				sizeof(a) + count, &rlen, NULL);
	if (!rc) {
		struct vfio_user_region_access echo = {0};

		memcpy(&echo, reply, sizeof(echo) <= rlen ? sizeof(echo) : 0);
		if (rlen != sizeof(a) + count || echo.offset != offset || echo.region != index ||
		    echo.count != count)
			rc = -EPROTO;
		else
			memcpy(buf, reply + sizeof(a), count);
	}
	free(reply);
	return rc;
}

int vfu_client_region_write(struct vfu_client *c, uint32_t index, uint64_t offset, const void *buf,
			    uint32_t count, bool posted)
{
	struct vfio_user_region_access a = {.offset = offset, .region = index, .count = count};
	uint8_t *msg = malloc(sizeof(a) + count);
	size_t rlen;
	int rc;

	if (!msg)
		return -ENOMEM;
	memcpy(msg, &a, sizeof(a));
	memcpy(msg + sizeof(a), buf, count);
	rc = vfu_client_request(c, VFIO_USER_REGION_WRITE, posted ? VFIO_USER_F_NO_REPLY : 0, msg,
				sizeof(a) + count, NULL, 0, &a, sizeof(a), &rlen, NULL);
	free(msg);
	if (!rc && !posted && (rlen != sizeof(a) || a.count != count || a.offset != offset))
		rc = -EPROTO;
	return rc;
}

bool vfu_client_write_multi_ok(const struct vfu_client *c)
{
	return c->write_multi;
}

int vfu_client_region_write_multi(struct vfu_client *c, const struct vfu_client_write *w, size_t n,
				  bool posted)
{
	uint64_t cnt = n, done = 0;
	uint8_t *msg;
	size_t len, rlen;
	int rc;

	if (!n || n > VFU_WRITE_MULTI_MAX)
		return -EINVAL;
	len = sizeof(cnt) + n * sizeof(struct vfio_user_write_multi_entry);
	msg = malloc(len);
	if (!msg)
		return -ENOMEM;
	memcpy(msg, &cnt, sizeof(cnt));
	for (size_t i = 0; i < n; i++) {
		struct vfio_user_write_multi_entry e = {
		    .offset = w[i].offset, .region = w[i].region, .count = w[i].count};

		/* The count is sent as given (hostile tests use bad ones); the data field
		 * always carries 8 bytes. */
		memcpy(e.data, w[i].data, sizeof(e.data));
		memcpy(msg + sizeof(cnt) + i * sizeof(e), &e, sizeof(e));
	}
	rc = vfu_client_request(c, VFIO_USER_REGION_WRITE_MULTI, posted ? VFIO_USER_F_NO_REPLY : 0,
				msg, len, NULL, 0, &done, sizeof(done), &rlen, NULL);
	free(msg);
	if (!rc && !posted && (rlen != sizeof(done) || done != n))
		rc = -EPROTO;
	return rc;
}

int vfu_client_irq_info(struct vfu_client *c, uint32_t index, uint32_t *flags, uint32_t *count)
{
	struct vfio_user_irq_info ii = {.argsz = sizeof(ii), .index = index};
	size_t rlen;
	int rc = vfu_client_request(c, VFIO_USER_DEVICE_GET_IRQ_INFO, 0, &ii, sizeof(ii), NULL, 0,
				    &ii, sizeof(ii), &rlen, NULL);

	if (rc)
		return rc;
	if (rlen != sizeof(ii) || ii.index != index)
		return -EPROTO;
	*flags = ii.flags;
	*count = ii.count;
	return 0;
}

int vfu_client_set_irqs(struct vfu_client *c, uint32_t flags, uint32_t index, uint32_t start,
			uint32_t count, const int *fds, size_t nfds, const uint8_t *bools)
{
	size_t blen = (flags & VFIO_IRQ_SET_DATA_BOOL) && bools ? count : 0;
	struct vfio_user_irq_set s = {
	    .argsz = (uint32_t)(sizeof(s) + blen),
	    .flags = flags,
	    .index = index,
	    .start = start,
	    .count = count,
	};
	uint8_t *msg = malloc(sizeof(s) + blen);
	int rc;

	if (!msg)
		return -ENOMEM;
	memcpy(msg, &s, sizeof(s));
	if (blen)
		memcpy(msg + sizeof(s), bools, blen);
	rc = vfu_client_request(c, VFIO_USER_DEVICE_SET_IRQS, 0, msg, sizeof(s) + blen, fds, nfds,
				NULL, 0, NULL, NULL);
	free(msg);
	return rc;
}

int vfu_client_irq_eventfds(struct vfu_client *c, uint32_t index, uint32_t start, uint32_t count)
{
	int fds[VFU_MAX_MSG_FDS] = {0};
	int rc;

	if (index >= VFU_CLIENT_MAX_IRQS || count > VFU_MAX_MSG_FDS ||
	    start + count > VFU_CLIENT_MAX_VECTORS || start + count < start)
		return -EINVAL;
	for (uint32_t i = 0; i < count; i++) {
		fds[i] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (fds[i] < 0) {
			rc = -errno;
			while (i--)
				close(fds[i]);
			return rc;
		}
	}
	rc = vfu_client_set_irqs(c, VFIO_IRQ_SET_DATA_EVENTFD | VFIO_IRQ_SET_ACTION_TRIGGER, index,
				 start, count, fds, count, NULL);
	for (uint32_t i = 0; i < count; i++) {
		int *slot = &c->irq_fds[index][start + i];

		if (rc) {
			close(fds[i]);
			continue;
		}
		if (*slot >= 0)
			close(*slot);
		*slot = fds[i];
	}
	return rc;
}

int vfu_client_irq_fd(const struct vfu_client *c, uint32_t index, uint32_t vector)
{
	if (index >= VFU_CLIENT_MAX_IRQS || vector >= VFU_CLIENT_MAX_VECTORS)
		return -1;
	return c->irq_fds[index][vector];
}

int64_t vfu_client_irq_wait(struct vfu_client *c, uint32_t index, uint32_t vector, int timeout_ms)
{
	int fd = vfu_client_irq_fd(c, index, vector);
	int64_t deadline = vfu_client_now_ms() + timeout_ms;

	if (fd < 0)
		return -EINVAL;
	for (;;) {
		struct pollfd p[2] = {{.fd = fd, .events = POLLIN},
				      {.fd = c->sock, .events = POLLIN}};
		int64_t left = deadline - vfu_client_now_ms();
		uint64_t v;
		int rc;

		if (left < 0)
			left = 0;
		rc = poll(p, c->eof ? 1 : 2, (int)left);
		if (rc < 0 && errno == EINTR)
			continue;
		if (rc < 0)
			return -errno;
		if (rc == 0)
			return 0;
		if (p[0].revents & POLLIN) {
			if (read(fd, &v, sizeof(v)) == sizeof(v))
				return (int64_t)v;
			continue;
		}
		if (p[1].revents) {
			rc = vfu_client_serve(c, c->timeout_ms);
			if (rc < 0)
				return rc;
		}
	}
}

int vfu_client_irq_mask(struct vfu_client *c, uint32_t index, uint32_t start, uint32_t count,
			bool mask)
{
	return vfu_client_set_irqs(
	    c,
	    VFIO_IRQ_SET_DATA_NONE | (mask ? VFIO_IRQ_SET_ACTION_MASK : VFIO_IRQ_SET_ACTION_UNMASK),
	    index, start, count, NULL, 0, NULL);
}

int vfu_client_reset(struct vfu_client *c)
{
	return vfu_client_request(c, VFIO_USER_DEVICE_RESET, 0, NULL, 0, NULL, 0, NULL, 0, NULL,
				  NULL);
}
