/* tests/unit/pcie/pcie_test.c - the PCIe-emulation transport (transport/pcie_*.c) in process:
 * controllers created, served and destroyed on a server thread, driven by the vfio-user test
 * client from the test thread.
 *
 * The server thread owns the main loop, the poll groups, the DPA and every bdev and controller, as
 * nvme-emu's main thread does; the test thread asks it for work by message and waits (bounded)
 * for the callback that says the work is done. Waiting is the test's business only: what is
 * checked is that the server finishes every operation by completion, with I/O in flight and a
 * client that does not cooperate, and that nothing leaks (ASan builds).
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CUnit/CUnit.h>

#include "backend/bdev.h"
#include "common/evloop.h"
#include "transport/pcie.h"
#include "dpa/dpa.h"
#include "host/nvme_host.h"
#include "tests/unit/cunit_runner.h"

#define PT_WAIT_MS 10000
#define PT_RAM_IOVA 0x100000ull
#define PT_RAM_SIZE (16ull << 20)
#define PT_BLOCKS 8192u
#define PT_PGS 2u

/* The server: its thread, loop and transport, plus one eventfd the server's callbacks signal. */
static struct {
	pthread_t thread;
	struct evloop *loop;
	struct dpa *dpa;
	struct pcie_poll_groups *pgs;
	int done_efd;
	char dir[64];
} srv;

/* One request to the server thread: fn runs there, reports rc and signals the eventfd when done
 * (immediately, or later from a completion callback). */
struct pt_call {
	void (*fn)(struct pt_call *call);
	int rc;
	struct pcie_ctrlr *pc;
	char sock[128];
	char bdev[16];
	uint32_t nsid;
	uint16_t vendor_id, device_id; /* PCI IDs asked for (0: defaults) */
	struct pcie_poll_group_stats st[PT_PGS];
};

static void pt_signal(void)
{
	uint64_t one = 1;

	if (write(srv.done_efd, &one, sizeof(one)) != sizeof(one))
		abort(); /* an eventfd write of 1 cannot fail short of a bug */
}

static void pt_run_call(void *arg)
{
	struct pt_call *call = arg;

	call->fn(call);
}

/* Waits up to PT_WAIT_MS for one signal; 0 or -ETIMEDOUT. */
static int pt_wait(void)
{
	struct pollfd p = { .fd = srv.done_efd, .events = POLLIN };
	uint64_t v;

	if (poll(&p, 1, PT_WAIT_MS) != 1)
		return -ETIMEDOUT;
	return read(srv.done_efd, &v, sizeof(v)) == sizeof(v) ? 0 : -EIO;
}

/* Runs fn on the server thread and waits for it to signal; returns the call's rc or -ETIMEDOUT. */
static int pt_call(struct pt_call *call, void (*fn)(struct pt_call *call))
{
	call->fn = fn;
	call->rc = -EINPROGRESS;
	if (evloop_send_msg(srv.loop, pt_run_call, call))
		return -ENOMEM;
	return pt_wait() ? -ETIMEDOUT : call->rc;
}

static void *pt_server_main(void *arg)
{
	(void)arg;
	evloop_run(srv.loop);
	return NULL;
}

static void pt_srv_setup(struct pt_call *call)
{
	srv.dpa = dpa_create(0);
	srv.pgs = srv.dpa ? pcie_poll_groups_create(PT_PGS, srv.dpa) : NULL;
	call->rc = srv.pgs ? 0 : -ENOMEM;
	pt_signal();
}

static void pt_srv_teardown(struct pt_call *call)
{
	call->rc = bdev_delete_all();
	if (srv.pgs)
		pcie_poll_groups_destroy(srv.pgs);
	if (srv.dpa && dpa_destroy(srv.dpa) && !call->rc)
		call->rc = -EBUSY;
	srv.pgs = NULL;
	srv.dpa = NULL;
	evloop_stop(srv.loop);
	pt_signal();
}

static int pt_suite_init(void)
{
	struct pt_call call = { 0 };

	snprintf(srv.dir, sizeof(srv.dir), "/tmp/pcie-test.XXXXXX");
	if (!mkdtemp(srv.dir))
		return -1;
	srv.done_efd = eventfd(0, EFD_CLOEXEC);
	srv.loop = evloop_create();
	if (srv.done_efd < 0 || !srv.loop)
		return -1;
	if (pthread_create(&srv.thread, NULL, pt_server_main, NULL))
		return -1;
	return pt_call(&call, pt_srv_setup) ? -1 : 0;
}

static int pt_suite_cleanup(void)
{
	struct pt_call call = { 0 };
	int rc = pt_call(&call, pt_srv_teardown);

	pthread_join(srv.thread, NULL);
	evloop_destroy(srv.loop);
	close(srv.done_efd);
	rmdir(srv.dir);
	return rc ? -1 : 0;
}

/* ---- server-side steps (server thread) ---- */

static void pt_srv_create(struct pt_call *call)
{
	static unsigned int seq;
	char vuid[32];
	struct bdev *bdev = NULL;
	struct pcie_ctrlr_opts po = {
	    .vuid = vuid,
	    .socket_path = call->sock,
	    .db_mode = HW_DB_MODE_TRAP,
	    .profile = hw_profile_find("unlimited"),
	    .ctrlr = { .serial = "PCIE-TEST", .model = "pcie transport test", .max_io_queues = 4 },
	    .vendor_id = call->vendor_id,
	    .device_id = call->device_id,
	};

	snprintf(vuid, sizeof(vuid), "pcie-test-%u", seq++);
	call->rc = bdev_malloc_create(call->bdev, PT_BLOCKS, 512, NULL, &bdev);
	if (!call->rc)
		call->rc = pcie_ctrlr_create(srv.loop, srv.pgs, srv.dpa, &po, &call->pc);
	if (!call->rc) {
		int nsid = ctrlr_ns_add(pcie_ctrlr_core(call->pc), 1, bdev, NULL);

		call->rc = nsid < 0 ? nsid : 0;
	}
	if (!call->rc)
		call->rc = pcie_ctrlr_start(call->pc);
	pt_signal();
}

static void pt_srv_destroy_done(void *arg)
{
	struct pt_call *call = arg;

	call->pc = NULL;
	call->rc = 0;
	pt_signal();
}

static void pt_srv_destroy(struct pt_call *call)
{
	pcie_ctrlr_destroy(call->pc, pt_srv_destroy_done, call);
}

static void pt_srv_bdev_delete(struct pt_call *call)
{
	call->rc = bdev_delete(call->bdev);
	pt_signal();
}

static void pt_srv_ns_remove(struct pt_call *call)
{
	call->rc = ctrlr_ns_remove(pcie_ctrlr_core(call->pc), call->nsid);
	pt_signal();
}

static void pt_srv_stats(struct pt_call *call)
{
	for (unsigned int i = 0; i < PT_PGS; i++)
		pcie_poll_group_get_stats(srv.pgs, i, &call->st[i]);
	call->rc = 0;
	pt_signal();
}

/* Creates malloc bdev `name` and a started controller on it (namespace 1) at a fresh socket. */
static int pt_create(struct pt_call *call, const char *name)
{
	memset(call, 0, sizeof(*call));
	snprintf(call->bdev, sizeof(call->bdev), "%s", name);
	snprintf(call->sock, sizeof(call->sock), "%s/%s.sock", srv.dir, name);
	return pt_call(call, pt_srv_create);
}

/* Destroys the controller and deletes its bdev, both bounded. */
static int pt_destroy(struct pt_call *call)
{
	int rc = pt_call(call, pt_srv_destroy);

	if (!rc)
		rc = pt_call(call, pt_srv_bdev_delete);
	return rc;
}

/* ---- client side (test thread) ---- */

struct pt_client {
	struct vfu_client *c;
	struct nvme_host h;
};

/* Connects, enables the controller and creates I/O queue pairs 1..nq, queue q on vector q. */
static int pt_attach(struct pt_client *cl, const char *sock, uint16_t nq)
{
	int rc;

	memset(cl, 0, sizeof(*cl));
	cl->c = vfu_client_connect(sock, 5000);
	if (!cl->c)
		return -errno;
	rc = vfu_client_negotiate(cl->c);
	if (!rc)
		rc = vfu_client_ram_create(cl->c, PT_RAM_IOVA, PT_RAM_SIZE);
	if (!rc)
		rc = nvme_host_init(&cl->h, cl->c, PT_RAM_IOVA, PT_RAM_SIZE, nq + 1u);
	if (!rc)
		rc = nvme_host_enable(&cl->h, 32);
	for (uint16_t q = 1; !rc && q <= nq; q++)
		rc = nvme_host_create_io_queues(&cl->h, q, 64, true, q);
	return rc;
}

static void pt_detach(struct pt_client *cl)
{
	if (cl->c)
		vfu_client_close(cl->c);
	cl->c = NULL;
}

/* Submits n 4 KiB writes on queue q of namespace nsid without waiting. Returns n or -errno. */
static int pt_submit_writes(struct pt_client *cl, uint16_t q, uint32_t nsid, int n)
{
	for (int i = 0; i < n; i++) {
		struct nvme_sqe sqe = { 0 };
		void *buf;
		uint64_t iova = nvme_host_alloc(&cl->h, 4096, &buf);
		int rc;

		if (!iova)
			return -ENOMEM;
		memset(buf, 0x40 + q, 4096);
		sqe.cdw0.bits.opc = NVME_CMD_WRITE;
		sqe.nsid = nsid;
		sqe.cdw10 = (uint32_t)(q * 1024 + i * 8);
		sqe.cdw12 = 7; /* 8 blocks of 512 */
		rc = nvme_host_build_prps(&cl->h, &sqe, iova, 4096);
		if (rc)
			return rc;
		rc = nvme_host_submit(&cl->h, q, &sqe, false);
		if (rc < 0)
			return rc;
	}
	return n;
}

/* Reaps n completions of queue q within the wait bound; returns how many had status `want`. */
static int pt_reap(struct pt_client *cl, uint16_t q, int n, uint16_t want, int *other)
{
	int got = 0, match = 0;

	*other = 0;
	for (int spins = 0; got < n && spins < PT_WAIT_MS; spins++) {
		struct nvme_cqe cqe;
		int rc = nvme_host_reap(&cl->h, q, &cqe);

		if (rc < 0)
			break;
		if (rc == 0) {
			vfu_client_irq_wait(cl->c, VFIO_PCI_MSIX_IRQ_INDEX, q, 1);
			continue;
		}
		got++;
		/* Status code and type; DNR, More and CRD aside. */
		if (((cqe.status >> 1) & 0x7ff) == want)
			match++;
		else {
			(*other)++;
			fprintf(stderr, "  queue %u: cid %u status 0x%x (expected 0x%x)\n", q, cqe.cid,
				cqe.status >> 1, want);
		}
	}
	return match;
}

/* ---- tests ---- */

/* A controller nobody connected to: destroy completes, the socket goes, the path can be reused. */
static void test_destroy_idle(void)
{
	struct pt_call call;
	struct stat st;

	for (int round = 0; round < 2; round++) {
		CU_ASSERT_EQUAL_FATAL(pt_create(&call, "idle"), 0);
		CU_ASSERT_EQUAL(stat(call.sock, &st), 0);
		CU_ASSERT_EQUAL(pt_destroy(&call), 0);
		CU_ASSERT_PTR_NULL(call.pc);
		CU_ASSERT_NOT_EQUAL(stat(call.sock, &st), 0);
	}
}

/* Two controllers may not share a socket: the second's start fails and its destroy still runs to
 * completion, leaving the first one serving. */
static void test_start_on_taken_path(void)
{
	struct pt_call a, b;
	struct pt_client cl;

	CU_ASSERT_EQUAL_FATAL(pt_create(&a, "first"), 0);
	memset(&b, 0, sizeof(b));
	snprintf(b.bdev, sizeof(b.bdev), "second");
	snprintf(b.sock, sizeof(b.sock), "%s", a.sock);
	CU_ASSERT_NOT_EQUAL(pt_call(&b, pt_srv_create), 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(b.pc);
	CU_ASSERT_EQUAL(pt_destroy(&b), 0);
	CU_ASSERT_EQUAL(pt_attach(&cl, a.sock, 1), 0);
	CU_ASSERT_EQUAL(nvme_host_rw(&cl.h, 1, NVME_CMD_READ, 1, 0, 8, PT_RAM_IOVA + (8u << 20),
				     4096),
			0);
	pt_detach(&cl);
	CU_ASSERT_EQUAL(pt_destroy(&a), 0);
}

/* Per-queue vectors land on different poll groups, and each group raises its own queue's
 * interrupt. */
static void test_vectors_on_two_pgs(void)
{
	struct pt_call call, stats;
	struct pt_client cl;
	int other;

	CU_ASSERT_EQUAL_FATAL(pt_create(&call, "vec"), 0);
	CU_ASSERT_EQUAL_FATAL(pt_attach(&cl, call.sock, 2), 0);
	CU_ASSERT_EQUAL(pt_call(&stats, pt_srv_stats), 0);
	CU_ASSERT_EQUAL(stats.st[0].cqs, 1);
	CU_ASSERT_EQUAL(stats.st[1].cqs, 1);
	for (uint16_t q = 1; q <= 2; q++) {
		CU_ASSERT_EQUAL(pt_submit_writes(&cl, q, 1, 1), 1);
		/* The vector's eventfd fires: the completion was signalled, not only posted. */
		CU_ASSERT_TRUE(vfu_client_irq_wait(cl.c, VFIO_PCI_MSIX_IRQ_INDEX, q, PT_WAIT_MS) > 0);
		CU_ASSERT_EQUAL(pt_reap(&cl, q, 1, NVME_SC_SUCCESS, &other), 1);
	}
	CU_ASSERT_EQUAL(pt_call(&stats, pt_srv_stats), 0);
	CU_ASSERT_TRUE(stats.st[0].irqs >= 1);
	CU_ASSERT_TRUE(stats.st[1].irqs >= 1);
	pt_detach(&cl);
	CU_ASSERT_EQUAL(pt_destroy(&call), 0);
}

/* Removing a namespace whose bdev has channels on two poll groups, with writes in flight on both:
 * every in-flight write completes, new ones get Invalid Namespace, and the bdev is released by
 * both groups (bdev_delete succeeds) without the test thread doing anything. */
static void test_ns_remove_two_pgs(void)
{
	struct pt_call call, del;
	struct pt_client cl;
	int other, ok;

	CU_ASSERT_EQUAL_FATAL(pt_create(&call, "nsrm"), 0);
	CU_ASSERT_EQUAL_FATAL(pt_attach(&cl, call.sock, 2), 0);
	/* Channels on both groups: one write each first. */
	for (uint16_t q = 1; q <= 2; q++) {
		CU_ASSERT_EQUAL(pt_submit_writes(&cl, q, 1, 1), 1);
		CU_ASSERT_EQUAL(pt_reap(&cl, q, 1, NVME_SC_SUCCESS, &other), 1);
	}
	CU_ASSERT_EQUAL(pt_submit_writes(&cl, 1, 1, 24), 24);
	CU_ASSERT_EQUAL(pt_submit_writes(&cl, 2, 1, 24), 24);
	call.nsid = 1;
	CU_ASSERT_EQUAL(pt_call(&call, pt_srv_ns_remove), 0);
	for (uint16_t q = 1; q <= 2; q++) {
		ok = pt_reap(&cl, q, 24, NVME_SC_SUCCESS, &other);
		/* Those the core saw before the removal succeed, later ones find no namespace. */
		CU_ASSERT_EQUAL(ok + other, 24);
	}
	for (uint16_t q = 1; q <= 2; q++) {
		CU_ASSERT_EQUAL(pt_submit_writes(&cl, q, 1, 1), 1);
		CU_ASSERT_EQUAL(pt_reap(&cl, q, 1, NVME_SC_INVALID_NS, &other), 1);
	}
	/* Release is asynchronous (a message to each group): bdev_delete is -EBUSY until then. */
	memcpy(&del, &call, sizeof(del));
	int rc = -EBUSY;
	for (int i = 0; i < 500 && rc == -EBUSY; i++) {
		rc = pt_call(&del, pt_srv_bdev_delete);
		if (rc == -EBUSY)
			usleep(10000);
	}
	CU_ASSERT_EQUAL(rc, 0);
	pt_detach(&cl);
	CU_ASSERT_EQUAL(pt_call(&call, pt_srv_destroy), 0);
}

/* Destroying a controller under a client that keeps writes in flight on two poll groups and
 * never answers: the destroy completes by itself, and the client finds the connection gone. */
static void test_destroy_under_io(void)
{
	struct pt_call call;
	struct pt_client cl;
	struct vfio_user_device_info info;

	CU_ASSERT_EQUAL_FATAL(pt_create(&call, "busy"), 0);
	CU_ASSERT_EQUAL_FATAL(pt_attach(&cl, call.sock, 2), 0);
	CU_ASSERT_EQUAL(pt_submit_writes(&cl, 1, 1, 32), 32);
	CU_ASSERT_EQUAL(pt_submit_writes(&cl, 2, 1, 32), 32);
	CU_ASSERT_EQUAL(pt_destroy(&call), 0);
	vfu_client_set_timeout(cl.c, 2000);
	CU_ASSERT_NOT_EQUAL(vfu_client_device_info(cl.c, &info), 0);
	pt_detach(&cl);
}

/* Config space and Identify agree on the function's identity: by default a vendor ID assigned to
 * nobody (0xfffe), else what the operator set; the class is always NVMe's. */
static void test_pci_ids(void)
{
	static const struct {
		uint16_t vid, did, want_vid, want_did;
	} cases[] = { {0, 0, 0xfffe, 0x00e1}, {0x1af4, 0x1234, 0x1af4, 0x1234} };

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct pt_call call;
		struct pt_client cl;
		uint32_t id, class_rev, subsys;
		static struct nvme_id_ctrl idc;

		memset(&call, 0, sizeof(call));
		snprintf(call.bdev, sizeof(call.bdev), "ids%zu", i);
		snprintf(call.sock, sizeof(call.sock), "%s/ids%zu.sock", srv.dir, i);
		call.vendor_id = cases[i].vid;
		call.device_id = cases[i].did;
		CU_ASSERT_EQUAL_FATAL(pt_call(&call, pt_srv_create), 0);
		CU_ASSERT_EQUAL_FATAL(pt_attach(&cl, call.sock, 1), 0);
		CU_ASSERT_EQUAL(vfu_client_region_read(cl.c, VFIO_PCI_CONFIG_REGION_INDEX, 0, &id, 4),
				0);
		CU_ASSERT_EQUAL(vfu_client_region_read(cl.c, VFIO_PCI_CONFIG_REGION_INDEX, 8,
						       &class_rev, 4),
				0);
		CU_ASSERT_EQUAL(vfu_client_region_read(cl.c, VFIO_PCI_CONFIG_REGION_INDEX, 0x2c,
						       &subsys, 4),
				0);
		CU_ASSERT_EQUAL(id, (uint32_t)cases[i].want_did << 16 | cases[i].want_vid);
		CU_ASSERT_EQUAL(subsys, id);
		CU_ASSERT_EQUAL(class_rev >> 8, 0x010802);
		CU_ASSERT_EQUAL(nvme_host_identify(&cl.h, NVME_CNS_CTRL, 0, &idc), 0);
		CU_ASSERT_EQUAL(idc.vid, cases[i].want_vid);
		CU_ASSERT_EQUAL(idc.ssvid, cases[i].want_vid);
		pt_detach(&cl);
		CU_ASSERT_EQUAL(pt_destroy(&call), 0);
	}
}

CUNIT_SUITE(pcie_transport, pt_suite_init, pt_suite_cleanup, {"pci_ids", test_pci_ids},
	    {"destroy_idle", test_destroy_idle}, {"start_on_taken_path", test_start_on_taken_path},
	    {"vectors_on_two_pgs", test_vectors_on_two_pgs},
	    {"ns_remove_two_pgs", test_ns_remove_two_pgs},
	    {"destroy_under_io", test_destroy_under_io})
