/* tests/integration/dpa_hw_test.c - dpa/ over the real hw/ device and the
 * vfio-user test client through the socket: doorbell -> DPA thread -> message
 * at a fake Arm consumer; message -> MSI-X -> the client's eventfd; and a
 * doorbell stress (final value of every DB seen, never a value not written),
 * for trap and mmap delivery, with a hart and fused. The device's loop runs
 * in a thread of this process; the client is the main thread. */
#include "dpa/nvme_dpa.h"
#include "hw/hw.h"
#include "common/evloop.h"
#include "common/log.h"
#include "tests/integration/itest.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#define DB_REGION 0x1000
#define NUM_DBS 32
#define NUM_MSIX 8
#define MSIX_CTRL 0x86 /* MSI-X message control in our config space */
#define STRESS_ROUNDS 500
#define CHAN_DEPTH 256

struct srv {
	struct evloop *loop;
	pthread_t tid;
	bool running;
	struct hw_pci_type *type;
	struct hw_dev *dev;
	struct dpa *dpa;
	struct dpa_nvme_chan *ch;
	struct dpa_db *db[NUM_DBS];
	struct hw_msix_vector *vec[NUM_MSIX];
	char dir[64], sock[128];
	unsigned int harts;
	_Atomic unsigned int flrs;
	int rc; /* result of the last call run on the loop thread */
};

static int srv_flr(struct hw_dev *dev, bool client_gone, void *arg)
{
	struct srv *s = arg;

	/* Everything is destroyed before the client closes; an FLR is counted
	 * so the test notices one it did not expect. */
	atomic_fetch_add(&s->flrs, 1);
	return 0;
}

static const struct hw_dev_ops srv_ops = {.flr = srv_flr};

static void *srv_loop_main(void *arg)
{
	struct srv *s = arg;

	evloop_run(s->loop);
	return NULL;
}

struct srv_call {
	struct srv *s;
	void (*fn)(struct srv *s);
	int efd;
};

static void srv_call_msg(void *arg)
{
	struct srv_call *c = arg;
	uint64_t one = 1;

	c->fn(c->s);
	if (write(c->efd, &one, sizeof(one)) != sizeof(one))
		abort();
}

/* Runs fn on the device's loop thread and waits for it (bounded). */
static bool srv_call(struct srv *s, void (*fn)(struct srv *s))
{
	struct srv_call c = {.s = s, .fn = fn, .efd = eventfd(0, 0)};
	struct pollfd pfd = {.fd = c.efd, .events = POLLIN};
	bool ok;

	if (c.efd < 0)
		return false;
	ok =
	    evloop_send_msg(s->loop, srv_call_msg, &c) == 0 && poll(&pfd, 1, ITEST_TIMEOUT_MS) == 1;
	if (!ok)
		abort(); /* the message would later touch a dead stack frame */
	close(c.efd);
	return ok;
}

static int srv_start(struct srv *s, enum hw_db_mode mode, unsigned int harts)
{
	struct hw_pci_ids ids = {.vendor_id = 0x1b36, .device_id = 0x0010, .class_code = 0x010802};
	struct hw_dev_config cfg = {.vuid = "dpa-itest-0", .db_mode = mode};
	char err[256];
	int rc = 0;

	memset(s, 0, sizeof(*s));
	s->harts = harts;
	snprintf(s->dir, sizeof(s->dir), "/tmp/dpa-itest-XXXXXX");
	if (!mkdtemp(s->dir))
		return -errno;
	snprintf(s->sock, sizeof(s->sock), "%s/sock", s->dir);
	cfg.socket_path = s->sock;
	s->loop = evloop_create();
	s->type = hw_pci_type_create("dpa-itest");
	if (!s->loop || !s->type)
		return -ENOMEM;
	/* The NVMe BAR0 layout (DESIGN.md section 6). */
	rc |= hw_pci_type_set_ids(s->type, &ids);
	rc |= hw_pci_type_set_memory_bar(s->type, 0, 14, HW_BAR_MEM_64, false);
	rc |= hw_pci_type_set_num_msix(s->type, NUM_MSIX);
	rc |= hw_pci_type_add_stateful_region(s->type, 0, 0, 0x100);
	rc |= hw_pci_type_add_db_by_offset_region(s->type, 0, DB_REGION, 0x1000, 2, 2);
	rc |= hw_pci_type_add_msix_table_region(s->type, 0, 0x2000, 0x1000);
	rc |= hw_pci_type_add_msix_pba_region(s->type, 0, 0x3000, 0x1000);
	if (rc)
		return rc;
	rc = hw_pci_type_start(s->type, hw_profile_find("unlimited"), err, sizeof(err));
	if (rc) {
		fprintf(stderr, "type: %s\n", err);
		return rc;
	}
	s->dev = hw_dev_create(s->type, s->loop, &cfg, &srv_ops, s);
	if (!s->dev)
		return -errno;
	rc = hw_dev_hotplug(s->dev);
	if (rc)
		return rc;
	s->dpa = dpa_create(harts);
	if (!s->dpa)
		return -errno;
	rc = pthread_create(&s->tid, NULL, srv_loop_main, s);
	if (rc)
		return -rc;
	s->running = true;
	return 0;
}

/* Loop thread: the control plane creates the channel, DBs and vectors. */
static void srv_acquire(struct srv *s)
{
	unsigned int i;

	s->rc = 0;
	s->ch = dpa_nvme_chan_create(s->dpa, -1, CHAN_DEPTH);
	if (!s->ch)
		goto out_err;
	for (i = 0; i < NUM_DBS; i++) {
		s->db[i] = dpa_db_create(dpa_nvme_chan_db_comp(s->ch), s->dev, i);
		if (!s->db[i])
			goto out_err;
	}
	for (i = 0; i < NUM_MSIX; i++) {
		s->vec[i] = hw_msix_vector_create(s->dev, (uint16_t)i);
		if (!s->vec[i])
			goto out_err;
	}
	return;
out_err:
	s->rc = -errno;
}

static void srv_start_dbs(struct srv *s)
{
	for (unsigned int i = 0; i < NUM_DBS; i++)
		s->rc |= dpa_db_start(s->db[i]);
}

static void srv_stop_dbs(struct srv *s)
{
	for (unsigned int i = 0; i < NUM_DBS; i++)
		if (s->db[i])
			dpa_db_stop(s->db[i]);
}

static void srv_release(struct srv *s)
{
	unsigned int i;

	s->rc = 0;
	for (i = 0; i < NUM_DBS; i++) {
		if (s->db[i])
			s->rc |= dpa_db_destroy(s->db[i]);
		s->db[i] = NULL;
	}
	if (s->ch)
		s->rc |= dpa_nvme_chan_destroy(s->ch);
	s->ch = NULL;
	for (i = 0; i < NUM_MSIX; i++) {
		hw_msix_vector_destroy(s->vec[i]);
		s->vec[i] = NULL;
	}
}

static void srv_db_mode(struct srv *s)
{
	s->rc = hw_dev_db_mode(s->dev);
}

static void srv_stop(struct srv *s)
{
	if (s->running) {
		srv_call(s, srv_release);
		evloop_stop(s->loop);
		pthread_join(s->tid, NULL);
	}
	if (s->dpa)
		ITEST_CHECK(dpa_destroy(s->dpa) == 0);
	/* Its FLR handler is synchronous: the unplug finishes at once. */
	if (s->dev && (hw_dev_hotunplug(s->dev) || hw_dev_destroy(s->dev)))
		ITEST_CHECK(!"device unplug/destroy");
	if (s->type)
		hw_pci_type_destroy(s->type);
	if (s->loop)
		evloop_destroy(s->loop);
	unlink(s->sock);
	rmdir(s->dir);
}

/* The Arm side (fake poll group): one message within the timeout. In fused
 * mode it runs the DPA program itself, waking on the thread's eventfd and,
 * for mmap DBs, every step. */
static bool arm_recv(struct srv *s, struct dpa_nvme_msg *m, int timeout_ms)
{
	struct pollfd pfd[2] = {
	    {.fd = dpa_nvme_chan_fd(s->ch), .events = POLLIN},
	    {.fd = s->harts ? -1 : dpa_thread_event_fd(dpa_nvme_chan_thread(s->ch)),
	     .events = POLLIN},
	};
	uint64_t deadline = evloop_now_us() + (uint64_t)timeout_ms * 1000;

	for (;;) {
		if (!s->harts)
			dpa_nvme_chan_poll(s->ch);
		if (dpa_nvme_chan_recv(s->ch, m) == 1)
			return true;
		if (evloop_now_us() > deadline)
			return false;
		if (dpa_nvme_chan_arm(s->ch))
			continue;
		poll(pfd, 2, s->harts ? timeout_ms : 1);
		dpa_msgq_fd_clear(pfd[0].fd);
	}
}

/* Binds every DB through the channel (BIND_DB -> BIND_DONE), then starts
 * them; each start delivers the current value (0). */
static bool arm_bind_all(struct srv *s)
{
	struct dpa_nvme_msg m;
	unsigned int i, started = 0;

	for (i = 0; i < NUM_DBS; i++) {
		if (!ITEST_CHECK(dpa_nvme_chan_bind_db(s->ch, s->db[i], 1000 + i) == 0))
			return false;
		if (!ITEST_CHECK(arm_recv(s, &m, ITEST_TIMEOUT_MS)) ||
		    !ITEST_CHECK(m.type == DPA_NVME_MSG_BIND_DONE && m.status == 0 &&
				 m.bind.cookie == 1000 + i))
			return false;
	}
	srv_call(s, srv_start_dbs);
	if (!ITEST_CHECK(s->rc == 0))
		return false;
	while (started < NUM_DBS && arm_recv(s, &m, ITEST_TIMEOUT_MS))
		started += m.type == DPA_NVME_MSG_DB_VALUE && m.db.value == 0;
	return ITEST_CHECK(started == NUM_DBS);
}

static bool arm_unbind_all(struct srv *s)
{
	struct dpa_nvme_msg m;
	bool ok = true;

	srv_call(s, srv_stop_dbs);
	for (unsigned int i = 0; i < NUM_DBS; i++) {
		ok &= ITEST_CHECK(dpa_nvme_chan_unbind_db(s->ch, s->db[i], 1000 + i) == 0);
		do {
			ok &= ITEST_CHECK(arm_recv(s, &m, ITEST_TIMEOUT_MS));
		} while (ok && m.type == DPA_NVME_MSG_DB_VALUE);
		ok &= ITEST_CHECK(m.type == DPA_NVME_MSG_UNBIND_DONE && m.status == 0);
	}
	return ok;
}

struct client {
	struct vfu_client *c;
	volatile uint32_t *page; /* mmap mode: the doorbell page */
};

static bool client_attach(struct srv *s, struct client *cl, enum hw_db_mode mode)
{
	struct vfu_client_region r;

	memset(cl, 0, sizeof(*cl));
	cl->c = vfu_client_connect(s->sock, ITEST_TIMEOUT_MS);
	if (!ITEST_CHECK(cl->c != NULL) || !ITEST_CHECK(vfu_client_negotiate(cl->c) == 0) ||
	    !ITEST_CHECK(vfu_client_region_info(cl->c, 0, &r) == 0))
		return false;
	if (mode == HW_DB_MODE_MMAP) {
		cl->page = vfu_client_region_ptr(cl->c, 0, DB_REGION, 0x1000);
		if (!ITEST_CHECK(cl->page != NULL))
			return false;
	}
	srv_call(s, srv_db_mode);
	if (!ITEST_CHECK(s->rc == (int)mode))
		return false;
	return ITEST_CHECK(vfu_client_irq_eventfds(cl->c, VFIO_PCI_MSIX_IRQ_INDEX, 0, NUM_MSIX) ==
			   0) &&
	       ITEST_CHECK(itest_enable(cl->c) == 0) &&
	       ITEST_CHECK(itest_cfg_wr(cl->c, MSIX_CTRL, 0x8000, 2) == 0);
}

/* A driver doorbell write: a posted REGION_WRITE (trap) or a store into the
 * mapped page (mmap). */
static void client_ring(struct client *cl, uint32_t id, uint32_t value)
{
	if (cl->page) {
		cl->page[id] = value;
		/* Pacing (not synchronisation): a store costs nanoseconds, a
		 * guest's doorbell comes after building SQEs; without it the
		 * hart would only ever see final values. */
		for (int i = 0; i < 200; i++)
			__builtin_ia32_pause();
	} else
		vfu_client_region_write(cl->c, 0, DB_REGION + 4 * id, &value, 4, true);
}

static void flows(enum hw_db_mode mode, unsigned int harts)
{
	struct dpa_nvme_msg m;
	struct dpa_stats st;
	struct client cl = {0};
	struct srv s;

	if (!ITEST_CHECK(srv_start(&s, mode, harts) == 0))
		goto out;
	if (!client_attach(&s, &cl, mode))
		goto out;
	srv_call(&s, srv_acquire);
	if (!ITEST_CHECK(s.rc == 0) || !arm_bind_all(&s))
		goto out;

	/* Doorbell -> DPA thread -> {db id, value} at the Arm. */
	client_ring(&cl, 7, 0x1234);
	ITEST_CHECK(arm_recv(&s, &m, ITEST_TIMEOUT_MS));
	ITEST_CHECK(m.type == DPA_NVME_MSG_DB_VALUE && m.db.db_id == 7 && m.db.value == 0x1234 &&
		    m.db.cookie == 1007);

	/* Message -> MSI-X -> the client's eventfd. */
	ITEST_CHECK(dpa_nvme_chan_raise_msix(s.ch, s.vec[3]) == 0);
	if (!harts)
		for (int i = 0; i < 3; i++)
			dpa_nvme_chan_poll(s.ch);
	ITEST_CHECK(vfu_client_irq_wait(cl.c, VFIO_PCI_MSIX_IRQ_INDEX, 3, ITEST_TIMEOUT_MS) >= 1);
	ITEST_CHECK(vfu_client_irq_wait(cl.c, VFIO_PCI_MSIX_IRQ_INDEX, 2, 0) == 0);

	/* The unbind replies come after the raise was counted (requests
	 * complete in order). */
	arm_unbind_all(&s);
	dpa_thread_get_stats(dpa_nvme_chan_thread(s.ch), &st);
	ITEST_CHECK(st.msix_raised == 1);
	ITEST_CHECK(st.db_completions >= NUM_DBS + 1);
out:
	if (s.running)
		srv_call(&s, srv_release);
	ITEST_CHECK(s.rc == 0);
	vfu_client_close(cl.c);
	srv_stop(&s);
	ITEST_CHECK(atomic_load(&s.flrs) <= 1); /* at most the client-gone one */
}

/* ------------------------------------------------------------------------ */

struct consumer {
	struct srv *s;
	uint32_t last[NUM_DBS];
	unsigned int final_seen, bad, msgs;
};

/* The fake poll group: consumes until every DB showed its final value (or
 * nothing arrives for the timeout), checking every value was written. */
static void *consumer_main(void *arg)
{
	struct consumer *k = arg;
	struct dpa_nvme_msg m;
	uint32_t id, round;

	while (k->final_seen < NUM_DBS && arm_recv(k->s, &m, ITEST_TIMEOUT_MS)) {
		id = m.db.db_id;
		round = m.db.value >> 8;
		if (m.type != DPA_NVME_MSG_DB_VALUE || id >= NUM_DBS || m.db.cookie != 1000 + id ||
		    (m.db.value & 0xff) != id || round > STRESS_ROUNDS || round == 0 ||
		    m.db.value < k->last[id]) {
			k->bad++;
			continue;
		}
		k->msgs++;
		k->last[id] = m.db.value;
		if (round == STRESS_ROUNDS)
			k->final_seen++;
	}
	return NULL;
}

static void stress(enum hw_db_mode mode, unsigned int harts)
{
	struct consumer k = {0};
	struct client cl = {0};
	pthread_t tid;
	struct srv s;
	uint32_t r, id;

	if (!ITEST_CHECK(srv_start(&s, mode, harts) == 0))
		goto out;
	if (!client_attach(&s, &cl, mode))
		goto out;
	srv_call(&s, srv_acquire);
	if (!ITEST_CHECK(s.rc == 0) || !arm_bind_all(&s))
		goto out;
	k.s = &s;
	if (!ITEST_CHECK(pthread_create(&tid, NULL, consumer_main, &k) == 0))
		goto out;
	/* Value r << 8 | id: it names its DB and its round. */
	for (r = 1; r <= STRESS_ROUNDS; r++)
		for (id = 0; id < NUM_DBS; id++)
			client_ring(&cl, id, r << 8 | id);
	pthread_join(tid, NULL);
	printf("    %s, %s: %u doorbells, %u DB values delivered\n", hw_db_mode_name(mode),
	       harts ? "1 hart" : "fused", STRESS_ROUNDS * NUM_DBS, k.msgs);
	ITEST_CHECK(k.bad == 0);
	ITEST_CHECK(k.final_seen == NUM_DBS);
	arm_unbind_all(&s);
out:
	if (s.running)
		srv_call(&s, srv_release);
	ITEST_CHECK(s.rc == 0);
	vfu_client_close(cl.c);
	srv_stop(&s);
}

static void test_flows_trap_hart(const char *build)
{
	flows(HW_DB_MODE_TRAP, 1);
}

static void test_flows_mmap_hart(const char *build)
{
	flows(HW_DB_MODE_MMAP, 1);
}

static void test_flows_trap_fused(const char *build)
{
	flows(HW_DB_MODE_TRAP, 0);
}

static void test_stress_trap_hart(const char *build)
{
	stress(HW_DB_MODE_TRAP, 1);
}

static void test_stress_mmap_hart(const char *build)
{
	stress(HW_DB_MODE_MMAP, 1);
}

static void test_stress_trap_fused(const char *build)
{
	stress(HW_DB_MODE_TRAP, 0);
}

static void test_stress_mmap_fused(const char *build)
{
	stress(HW_DB_MODE_MMAP, 0);
}

int main(int argc, char **argv)
{
	const char *build = argc > 1 ? argv[1] : "build";

	/* hw/ logs every hotplug step at INFO: keep the output to the cases. */
	log_set_level(LOG_LEVEL_WARN);

	itest_run("flows_trap_hart", test_flows_trap_hart, build);
	itest_run("flows_mmap_hart", test_flows_mmap_hart, build);
	itest_run("flows_trap_fused", test_flows_trap_fused, build);
	itest_run("stress_trap_hart", test_stress_trap_hart, build);
	itest_run("stress_mmap_hart", test_stress_mmap_hart, build);
	itest_run("stress_trap_fused", test_stress_trap_fused, build);
	itest_run("stress_mmap_fused", test_stress_mmap_fused, build);
	return itest_summary();
}
