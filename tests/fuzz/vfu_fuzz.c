/* tests/fuzz/vfu_fuzz.c - feeds thousands of random and mutated vfio-user
 * messages to an endpoint (fake device, in-process loop thread): bit flips of
 * valid messages, random sizes, bogus fd counts, truncations, reconnects;
 * then checks the server still answers VERSION + GET_INFO on a fresh
 * connection, that its counters moved and that no fd leaked. */
#include "host/vfu_client.h"
#include "tests/unit/vfu/fake_dev.h"

#include "common/log.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define FUZZ_MAX_MSGS 150000
#define FUZZ_TIME_LIMIT 15 /* seconds */
#define FUZZ_MAX_LEN 512
#define FUZZ_FD_POOL 20

static int passed, failed;
static uint64_t rng_state;

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (cond) {                                                                        \
			passed++;                                                                  \
		} else {                                                                           \
			failed++;                                                                  \
			fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);            \
		}                                                                                  \
	} while (0)

static uint32_t fuzz_rand(void)
{
	/* xorshift64*: reproducible from the printed seed. */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return (uint32_t)((rng_state * 2685821657736338717ull) >> 32);
}

static uint32_t fuzz_below(uint32_t n)
{
	return n ? fuzz_rand() % n : 0;
}

/* Builds a well-formed request into buf; returns its length. */
static size_t fuzz_valid(uint8_t *buf, uint16_t id)
{
	struct vfio_user_header h = {.msg_id = id};
	uint8_t *p = buf + sizeof(h);
	size_t len = 0;

	switch (fuzz_below(11)) {
	case 0: {
		struct vfio_user_version v = {0, 0};
		size_t j = strlen(vfu_client_qemu_caps) + 1;

		h.command = VFIO_USER_VERSION;
		memcpy(p, &v, sizeof(v));
		memcpy(p + sizeof(v), vfu_client_qemu_caps, j);
		len = sizeof(v) + j;
		break;
	}
	case 1: {
		struct vfio_user_dma_map m = {
		    .argsz = sizeof(m),
		    .flags = 1 + fuzz_below(3),
		    .addr = (uint64_t)fuzz_below(64) << 12,
		    .size = (1 + fuzz_below(4)) << 12,
		};

		h.command = VFIO_USER_DMA_MAP;
		memcpy(p, &m, sizeof(m));
		len = sizeof(m);
		break;
	}
	case 2: {
		struct vfio_user_dma_unmap u = {
		    .argsz = sizeof(u),
		    .addr = (uint64_t)fuzz_below(64) << 12,
		    .size = (1 + fuzz_below(4)) << 12,
		};

		if (!fuzz_below(8)) {
			u.flags = VFIO_USER_DMA_UNMAP_ALL;
			u.addr = u.size = 0;
		}
		h.command = VFIO_USER_DMA_UNMAP;
		memcpy(p, &u, sizeof(u));
		len = sizeof(u);
		break;
	}
	case 3: {
		struct vfio_user_device_info d = {.argsz = sizeof(d)};

		h.command = VFIO_USER_DEVICE_GET_INFO;
		memcpy(p, &d, sizeof(d));
		len = sizeof(d);
		break;
	}
	case 4: {
		struct vfio_user_region_info r = {.argsz = fuzz_below(2) ? 32 : 64,
						  .index = fuzz_below(10)};

		h.command = VFIO_USER_DEVICE_GET_REGION_INFO;
		memcpy(p, &r, sizeof(r));
		len = sizeof(r);
		break;
	}
	case 5: {
		struct vfio_user_irq_info i = {.argsz = sizeof(i), .index = fuzz_below(6)};

		h.command = VFIO_USER_DEVICE_GET_IRQ_INFO;
		memcpy(p, &i, sizeof(i));
		len = sizeof(i);
		break;
	}
	case 6: {
		struct vfio_user_irq_set s = {
		    .argsz = sizeof(s),
		    .flags = (1u << fuzz_below(3)) | (8u << fuzz_below(3)),
		    .index = fuzz_below(5),
		    .start = fuzz_below(5),
		    .count = fuzz_below(3),
		};

		h.command = VFIO_USER_DEVICE_SET_IRQS;
		memcpy(p, &s, sizeof(s));
		len = sizeof(s);
		if (s.flags & VFIO_IRQ_SET_DATA_BOOL) {
			memset(p + len, 1, s.count);
			len += s.count;
		}
		break;
	}
	case 7:
	case 8: {
		static const uint32_t regions[] = {0, 2, 7};
		struct vfio_user_region_access a = {
		    .region = regions[fuzz_below(3)],
		    .offset = fuzz_below(0x100),
		    .count = 1u << fuzz_below(4),
		};

		h.command = fuzz_below(2) ? VFIO_USER_REGION_READ : VFIO_USER_REGION_WRITE;
		memcpy(p, &a, sizeof(a));
		len = sizeof(a);
		if (h.command == VFIO_USER_REGION_WRITE) {
			memset(p + len, 0xab, a.count);
			len += a.count;
			if (fuzz_below(2))
				h.flags |= VFIO_USER_F_NO_REPLY;
		}
		break;
	}
	case 9: {
		/* Up to 8 writes of 1, 2, 4 or 8 bytes (QEMU's posted batches). */
		static const uint32_t regions[] = {0, 2, 7};
		uint64_t cnt = 1 + fuzz_below(8);

		h.command = VFIO_USER_REGION_WRITE_MULTI;
		h.flags = fuzz_below(4) ? VFIO_USER_F_NO_REPLY : 0;
		memcpy(p, &cnt, sizeof(cnt));
		len = sizeof(cnt);
		for (uint64_t i = 0; i < cnt; i++) {
			struct vfio_user_write_multi_entry e = {
			    .region = regions[fuzz_below(3)],
			    .offset = fuzz_below(0x100),
			    .count = 1u << fuzz_below(4),
			};

			memset(e.data, 0xcd, sizeof(e.data));
			memcpy(p + len, &e, sizeof(e));
			len += sizeof(e);
		}
		break;
	}
	default:
		h.command = VFIO_USER_DEVICE_RESET;
		break;
	}
	h.msg_size = (uint32_t)(sizeof(h) + len);
	memcpy(buf, &h, sizeof(h));
	return sizeof(h) + len;
}

/* Reads and discards whatever the server sent so far. */
static bool fuzz_drain(int sock)
{
	uint8_t junk[4096];
	struct pollfd p = {.fd = sock, .events = POLLIN};

	while (poll(&p, 1, 0) > 0) {
		ssize_t n = recv(sock, junk, sizeof(junk), MSG_DONTWAIT);

		if (n <= 0)
			return n < 0 && errno == EAGAIN;
	}
	return !(p.revents & (POLLHUP | POLLERR));
}

int main(int argc, char **argv)
{
	char path[108];
	struct fake_dev *dev;
	struct vfu_client *c = NULL;
	struct vfu_endpoint_stats st;
	int pool[FUZZ_FD_POOL], base = fake_dev_count_fds(), msgs = 0, conns = 0;
	time_t start = time(NULL);
	uint64_t seed = argc > 2 ? strtoull(argv[2], NULL, 0) : 0x5eed1234abcdull;

	/* Thousands of guest errors are expected: keep the log readable. */
	log_set_level(LOG_LEVEL_ERROR);
	rng_state = seed;
	printf("vfu_fuzz: seed %#llx\n", (unsigned long long)seed);
	snprintf(path, sizeof(path), "/tmp/vfu-fuzz-%d.sock", (int)getpid());
	dev = fake_dev_start(path);
	if (!dev) {
		printf("0 passed, 1 failed\n");
		return 1;
	}
	for (int i = 0; i < FUZZ_FD_POOL; i++) {
		pool[i] = i % 2 ? eventfd(0, EFD_CLOEXEC) : memfd_create("fuzz", MFD_CLOEXEC);
		if (!(i % 2) && ftruncate(pool[i], 0x10000) < 0)
			return 1;
	}

	while (msgs < FUZZ_MAX_MSGS && time(NULL) - start < FUZZ_TIME_LIMIT) {
		uint8_t buf[FUZZ_MAX_LEN + 64];
		size_t len = 0;
		int nfds = 0, sock;
		bool alive, last = false;

		if (!c) {
			if (!fake_dev_wait_disconnects(dev, (uint64_t)conns, 5000))
				break;
			c = vfu_client_connect(path, 5000);
			if (!c)
				break;
			conns++;
			/* Mostly negotiated sessions, so commands get past VERSION. */
			if (fuzz_below(10) < 8 && vfu_client_negotiate(c)) {
				vfu_client_close(c);
				c = NULL;
				continue;
			}
		}
		sock = vfu_client_fd(c);
		switch (fuzz_below(8)) {
		case 0: /* valid */
		case 1:
			len = fuzz_valid(buf, (uint16_t)msgs);
			break;
		case 2: /* bit flips of a valid message */
		case 3:
			len = fuzz_valid(buf, (uint16_t)msgs);
			for (uint32_t k = 1 + fuzz_below(8); k; k--)
				buf[fuzz_below((uint32_t)len)] ^= (uint8_t)(1u << fuzz_below(8));
			break;
		/* The next three break the framing; the rest of the connection would
		 * only be read as their body, so each ends its connection. */
		case 4: /* random bytes, random size */
			last = true;
			len = fuzz_below(FUZZ_MAX_LEN);
			for (size_t k = 0; k < len; k++)
				buf[k] = (uint8_t)fuzz_rand();
			break;
		case 5: { /* valid header, random size field, random body length */
			struct vfio_user_header h;

			last = true;
			len = fuzz_valid(buf, (uint16_t)msgs);
			memcpy(&h, buf, sizeof(h));
			h.msg_size = fuzz_below(4) ? 16 + fuzz_below(128) : fuzz_rand();
			if (!fuzz_below(4))
				h.flags = fuzz_rand();
			memcpy(buf, &h, sizeof(h));
			break;
		}
		case 6: /* truncated, then the connection goes away */
			last = true;
			len = fuzz_valid(buf, (uint16_t)msgs);
			len = fuzz_below((uint32_t)len);
			break;
		default: /* valid message with a bogus number of fds */
			len = fuzz_valid(buf, (uint16_t)msgs);
			nfds = (int)fuzz_below(FUZZ_FD_POOL + 1);
			break;
		}
		msgs++;
		alive = !vfu_client_send_raw(c, buf, len, nfds ? pool : NULL, (size_t)nfds) &&
			fuzz_drain(sock);
		if (!alive || last || fuzz_below(40) == 0) {
			vfu_client_close(c);
			c = NULL;
		}
	}
	vfu_client_close(c);
	CHECK(fake_dev_wait_disconnects(dev, (uint64_t)conns, 5000));
	printf("vfu_fuzz: %d messages over %d connections in %lds\n", msgs, conns,
	       (long)(time(NULL) - start));
	CHECK(msgs >= 1000);

	/* A fresh, well-formed session still works. */
	{
		struct vfio_user_device_info di;
		int rc = -1;

		c = vfu_client_connect(path, 5000);
		rc = c ? vfu_client_negotiate(c) : -1;
		CHECK(rc == 0);
		if (c) {
			CHECK(vfu_client_device_info(c, &di) == 0);
			CHECK(di.num_regions == 9 && di.num_irqs == 5);
			vfu_client_close(c);
		}
	}
	fake_dev_stats(dev, &st);
	printf("vfu_fuzz: rx %llu tx %llu errors %llu bad %llu disconnects %llu attached %llu\n",
	       (unsigned long long)st.msgs_rx, (unsigned long long)st.msgs_tx,
	       (unsigned long long)st.errors_replied, (unsigned long long)st.bad_messages,
	       (unsigned long long)st.disconnects, (unsigned long long)st.clients_attached);
	CHECK(st.msgs_rx > 1000);
	CHECK(st.errors_replied > 100);
	CHECK(st.bad_messages > 100);
	CHECK(st.disconnects >= (uint64_t)conns);
	CHECK(st.clients_attached > 10);
	CHECK(st.dma_maps > 0);
	CHECK(st.region_writes > 0);

	fake_dev_stop(dev);
	for (int i = 0; i < FUZZ_FD_POOL; i++)
		close(pool[i]);
	/* Everything the server took (mapped fds, eventfds, sockets) is closed. */
	CHECK(fake_dev_count_fds() == base);
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
