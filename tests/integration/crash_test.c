/* tests/integration/crash_test.c - the crash torture: the real daemon (target mode, configured
 * from a JSON file) on real files, driven through its socket by the test host with random zone
 * and data operations on two queues, killed with SIGKILL at a random point with commands in
 * flight, started again on the same files; every operation whose CQE the host saw (including
 * those the dead daemon had posted) must be there, and an operation in flight at the kill
 * either whole or absent, never half applied. One daemon life per round: it verifies what the
 * previous life left, then works, then dies.
 *
 * What it drives: a zoned namespace (aio file, zone_block with a state file; Write at the write
 * pointer with and without FUA, Zone Append several at once in a zone, Open, Close, Finish,
 * Reset, Flush) and a conventional namespace (aio file: writes, Flush). Every block written
 * carries its operation's tag, so a read tells which operation put it there. Beside them an
 * admin strand, one operation in flight at a time: Firmware Image Download and Commit (for the
 * next reset) with the controller's state file, Set Features with SV (Arbitration, Temperature
 * Threshold), Namespace Management create and delete, Attachment attach and detach and Format
 * NVM of the namespace pool's namespaces (a pool on a third file), Reservation Register (with
 * PTPL on), Unregister, Acquire and Release on the conventional namespace (a PTPL file). After
 * a restart the device's state read back (firmware slot log, Get Features current and saved,
 * Identify allocated and active lists and formats, Reservation Report) must be the acknowledged
 * one, or that with the operation in doubt whole; the event log file is kept across lives.
 *
 * The power-loss run does the same on NBD exports served by nbdkit's cache filter in writeback
 * mode, a real backend that keeps unflushed writes in its cache and loses them when it is killed:
 * each round kills nbdkit and the daemon together, as a power cut, and the zone state file is
 * told of a reboot (its boot id changes), so the zones come from their last checkpoint. Then
 * only what was made durable must be there: writes before an acknowledged Flush, writes with
 * FUA or with the volatile write cache off (and those before it was turned off), zone
 * management commands; what the zones claim must be written.
 * The start-up checks: after a short torture, each state file is cut short in turn (the zone
 * state file, the controller state file, the pool's bdev, the PTPL file) and the daemon must
 * refuse to start with a message naming it and why; the event log cut inside its last record
 * is repaired; everything put back, the device comes up with the state the torture left.
 * Built twice: nvme_crash_test runs the crash torture, nvme_powerloss_test the power-loss run
 * and the start-up checks (each within make test's time for one suite).
 * CRASH_ROUNDS (default 100; 60 on an ASan build), POWER_ROUNDS (default 40; 15), CRASH_SEED
 * (default: the time). A daemon started here dies with the test (PR_SET_PDEATHSIG), nbdkit
 * likewise (--exit-with-parent), whatever ends it. */
#include "tests/integration/nvme_itest.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <poll.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/xattr.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CHECK ITEST_CHECK

#define CT_BS 512u
#define CT_ZSZE 1024u
#define CT_ZCAP 1000u
#define CT_NZONES 16u
#define CT_ZBLOCKS (CT_ZSZE * CT_NZONES)
#define CT_DBLOCKS 8192u
#define CT_MAX_NLB 32u
#define CT_RBLOCKS 256u /* blocks per read when checking: 128 KiB, the daemon's MDTS */
#define CT_QUEUES 2u
#define CT_QD 32u
#define CT_SLOTS 48u /* operations in flight at once, at most */
#define CT_NQN "nqn.2026-11.io.nvme-emu:crash"

enum ct_kind { CT_ZWRITE, CT_APPEND, CT_ZMGMT, CT_DWRITE, CT_FLUSH };
enum ct_zs { CT_E, CT_IO, CT_EO, CT_C, CT_F };

struct ct_op {
	bool used, acked;
	enum ct_kind kind;
	uint16_t qid, cid, status;
	uint32_t nsid, zone, nlb;
	uint64_t slba, id, lba_done;
	uint8_t zsa;
	bool fua;
	bool durable;		/* power mode: durable once acknowledged (FUA, cache off) */
	uint64_t zsnap[CT_NZONES]; /* power mode: zone write pointers when it was submitted */
	uint32_t zgsnap[CT_NZONES]; /* ... and the zones' generations */
	uint64_t *dsnap;	/* power mode, Flush: the data namespace's tags when submitted */
	uint64_t iova;
	uint8_t *buf;
};

struct ct_zone {
	enum ct_zs st;
	uint32_t gen; /* resets acknowledged (power mode: a durable bound is per generation) */
	uint64_t wp; /* the data's write pointer (a finished zone keeps it) */
	uint32_t busy_mgmt, busy_write, busy_appends;
	uint64_t appends_reserved; /* blocks of appends in flight */
};

/* The device state the admin strand changes: firmware slots, features saved with SV, the
 * namespace pool's namespaces (nsid 3 up), the reservation of namespace 2 (PTPL). */
#define CT_MAXNS 16u
#define CT_POOL_BLOCKS (8u * 2048u) /* 8 MiB: the header's MiB and 7 namespaces of 1 MiB */
#define CT_HOSTID 0x6372617368000001ull

enum ct_akind {
	CT_A_FW, CT_A_FEAT, CT_A_CREATE, CT_A_DELETE, CT_A_ATTACH, CT_A_DETACH, CT_A_FORMAT,
	CT_A_REG, CT_A_UNREG, CT_A_ACQUIRE, CT_A_RELEASE, CT_A_NKINDS
};

struct ct_adm {
	char fw[2][9]; /* slots 2 and 3 */
	uint8_t fw_active, fw_next;
	uint32_t arb, tover;
	struct {
		bool alloc, att;
		uint8_t lbaf;
	} ns[CT_MAXNS + 1]; /* by nsid; 3 and up */
	bool reg, ptpl;
	uint64_t key;
	uint8_t rtype;
};

/* The one admin-strand operation at a time: state before (the model) and after it. */
struct ct_aop {
	bool busy;
	enum ct_akind kind;
	uint16_t qid, cid;
	struct ct_adm after;
	uint64_t iova;
	uint8_t *buf;
};

static struct {
	const char *build;
	char dir[64], sock[128], rpc[128], cfg[128], zimg[128], dimg[128], zstate[128];
	char pimg[128], cstate[128], pel[128], ptpl[128];
	struct ct_adm adm;
	struct ct_aop aop;
	uint16_t cntlid;
	uint64_t adm_acked[CT_A_NKINDS], adm_doubt_whole, adm_doubt_absent;
	pid_t pid;
	struct vfu_client *c;
	struct nvme_host h;
	uint64_t rng, next_id;
	struct ct_op ops[CT_SLOTS];
	struct ct_zone z[CT_NZONES];
	uint64_t ztag[CT_ZBLOCKS], dtag[CT_DBLOCKS];
	/* Power mode: what is durable (write pointers per zone, tags of the data namespace). */
	bool power, vwc_off;
	char zsock[128], dsock[128];
	pid_t nbd_pid[2];
	uint64_t zdur[CT_NZONES], ddur[CT_DBLOCKS];
	uint64_t lost; /* acknowledged writes a power loss took (allowed: never flushed) */
	/* Power mode: the event log. Each Set Features Volatile Write Cache carries a token in
	 * CDW15 (the Set Feature event keeps CDW10-CDW15); the last acknowledged one must be in
	 * the file after the power cut, which the fault layer (synced_watch.c) makes lose what
	 * was not synced. */
	uint32_t pel_token, pel_acked;
	uint64_t pel_cut, pel_cuts;
	/* figures: microseconds spent per phase of the rounds */
	uint64_t us_start, us_verify, us_work, us_kill;
	/* The daemon's NOTIFY_SOCKET: it says READY=1 there once it serves. */
	char notify[128];
	int notify_fd;
	/* Power mode: the data writes of this life (acknowledged or in doubt): what a block may
	 * hold after a power loss is any of them newer than its durable value (a Flush in doubt
	 * may have made one durable). */
	struct {
		uint64_t id, slba;
		uint32_t nlb;
	} dlog[4096];
	unsigned int ndlog;
	uint64_t rbuf_iova;
	uint8_t *rbuf;
	/* figures */
	uint64_t acked, in_doubt, whole, absent, checked_blocks, kills;
	bool failed, keep; /* keep: the files stay for the start-up checks */
} ct;

static uint64_t ct_rand(void)
{
	ct.rng ^= ct.rng << 13;
	ct.rng ^= ct.rng >> 7;
	ct.rng ^= ct.rng << 17;
	return ct.rng;
}

static uint64_t ct_below(uint64_t n)
{
	return n ? ct_rand() % n : 0;
}

/* ---- block contents: a tag (operation id << 16 | block index), then its pattern ---- */

static void ct_block_fill(uint8_t *b, uint64_t tag)
{
	uint64_t x = tag * 0x9e3779b97f4a7c15ull | 1;

	memcpy(b, &tag, 8);
	for (unsigned int i = 8; i < CT_BS; i += 8) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		memcpy(b + i, &x, 8);
	}
}

/* The tag a block holds: 0 for zeroes, ~0 for anything that is not a whole block of ours. */
static uint64_t ct_block_tag(const uint8_t *b)
{
	uint8_t want[CT_BS];
	uint64_t tag;

	memcpy(&tag, b, 8);
	if (!tag) {
		for (unsigned int i = 0; i < CT_BS; i++)
			if (b[i])
				return ~0ull;
		return 0;
	}
	ct_block_fill(want, tag);
	return memcmp(want, b, CT_BS) ? ~0ull : tag;
}

static void ct_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int ct_cmd(uint16_t qid, struct nvme_sqe *sqe);

/* ---- the daemon ---- */

/* The data bdev named name: an aio file, or in power mode an NBD export of nbdkit on sock. */
static void ct_config_bdev(FILE *f, const char *name, const char *file, const char *sock)
{
	if (ct.power)
		fprintf(f,
			"{\"method\":\"bdev_nbd_create\",\"params\":{\"name\":\"%s\",\"uri\":"
			"\"nbd+unix:///?socket=%s\",\"block_size\":512}},",
			name, sock);
	else
		fprintf(f,
			"{\"method\":\"bdev_aio_create\",\"params\":{\"name\":\"%s\",\"filename\":"
			"\"%s\",\"block_size\":512}},",
			name, file);
}

static int ct_write_config(void)
{
	FILE *f = fopen(ct.cfg, "w");

	if (!f)
		return -errno;
	fprintf(f, "{\"subsystems\":[{\"subsystem\":\"bdev\",\"config\":[");
	ct_config_bdev(f, "zbase", ct.zimg, ct.zsock);
	ct_config_bdev(f, "d0", ct.dimg, ct.dsock);
	/* The namespace pool on a file of its own (its header is written with FUA). */
	fprintf(f,
		"{\"method\":\"bdev_aio_create\",\"params\":{\"name\":\"p0\",\"filename\":"
		"\"%s\",\"block_size\":512}},",
		ct.pimg);
	fprintf(f,
		"{\"method\":\"bdev_zone_block_create\",\"params\":{\"name\":\"z0\",\"base_bdev\":"
		"\"zbase\",\"zone_capacity\":%u,\"optimal_open_zones\":1,\"max_open_zones\":4,"
		"\"state_file\":\"%s\"}}]},"
		"{\"subsystem\":\"nvmf\",\"config\":["
		"{\"method\":\"nvmf_create_transport\",\"params\":{\"trtype\":\"PCIE_EMU\"}},"
		"{\"method\":\"nvmf_create_subsystem\",\"params\":{\"nqn\":\"%s\","
		"\"serial_number\":\"CRASH0001\",\"state_file\":\"%s\",\"event_log_file\":\"%s\"}},"
		"{\"method\":\"nvmf_subsystem_add_ns\",\"params\":{\"nqn\":\"%s\",\"namespace\":"
		"{\"bdev_name\":\"z0\",\"nsid\":1}}},"
		"{\"method\":\"nvmf_subsystem_add_ns\",\"params\":{\"nqn\":\"%s\",\"namespace\":"
		"{\"bdev_name\":\"d0\",\"nsid\":2,\"ptpl_file\":\"%s\"}}},"
		"{\"method\":\"nvmf_emu_ns_pool_create\",\"params\":{\"nqn\":\"%s\","
		"\"bdev_name\":\"p0\"}},"
		"{\"method\":\"nvmf_subsystem_add_listener\",\"params\":{\"nqn\":\"%s\","
		"\"listen_address\":{\"trtype\":\"PCIE_EMU\",\"traddr\":\"%s\"}}}]}]}\n",
		CT_ZCAP, ct.zstate, CT_NQN, ct.cstate, ct.pel, CT_NQN, CT_NQN, ct.ptpl, CT_NQN, CT_NQN,
		ct.sock);
	return fclose(f) ? -errno : 0;
}

static uint64_t ct_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static bool ct_alive(void)
{
	int status;

	if (ct.pid <= 0)
		return false;
	if (waitpid(ct.pid, &status, WNOHANG) == ct.pid) {
		fprintf(stderr, "  daemon exited (status 0x%x)\n", status);
		ct.pid = -1;
		return false;
	}
	return true;
}

static void ct_show_log(unsigned int round)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "tail -n 40 %s/daemon-%u.log >&2", ct.dir, round % 2);
	if (system(cmd) != 0)
		fprintf(stderr, "  (no log)\n");
}

/* Power mode: nbdkit's file plugin behind the cache filter in writeback mode on sock. */
static int ct_nbd_start(int i, const char *sock, const char *file)
{
	char log[128], arg[160];
	struct stat st;

	unlink(sock);
	snprintf(log, sizeof(log), "%s/nbdkit-%d.log", ct.dir, i);
	snprintf(arg, sizeof(arg), "file=%s", file);
	ct.nbd_pid[i] = fork();
	if (ct.nbd_pid[i] < 0)
		return -errno;
	if (ct.nbd_pid[i] == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0600);

		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execlp("nbdkit", "nbdkit", "--foreground", "--exit-with-parent", "-U", sock,
		       "--filter=cache", "file", arg, "cache=writeback", (char *)NULL);
		_exit(127);
	}
	for (int n = 0; n < 3000 && stat(sock, &st); n++) {
		if (waitpid(ct.nbd_pid[i], NULL, WNOHANG) == ct.nbd_pid[i]) {
			ct.nbd_pid[i] = -1;
			return -ESRCH;
		}
		usleep(10000);
	}
	return 0;
}

/* Waits for the daemon started as ct.pid: READY=1 on ct.notify_fd (0), or its death (-ESRCH,
 * reaped), or 30 s (-ETIMEDOUT). */
static int ct_wait_ready(void)
{
	int pfd = (int)syscall(SYS_pidfd_open, ct.pid, 0);
	uint64_t end = ct_now_us() + 30000000u;
	int rc = -ETIMEDOUT;

	if (pfd < 0)
		return -errno;
	while (ct_now_us() < end) {
		struct pollfd p[2] = {{.fd = ct.notify_fd, .events = POLLIN},
				      {.fd = pfd, .events = POLLIN}};
		char msg[512];
		ssize_t n;

		if (poll(p, 2, (int)((end - ct_now_us()) / 1000) + 1) < 0 && errno != EINTR) {
			rc = -errno;
			break;
		}
		if (p[0].revents & POLLIN) {
			n = recv(ct.notify_fd, msg, sizeof(msg) - 1, MSG_DONTWAIT);
			if (n > 0) {
				msg[n] = '\0';
				if (!strncmp(msg, "READY=1", 7) || strstr(msg, "\nREADY=1")) {
					rc = 0;
					break;
				}
			}
		}
		if (p[1].revents & POLLIN) {
			ct_alive(); /* reaps it, says how it ended */
			rc = -ESRCH;
			break;
		}
	}
	close(pfd);
	return rc;
}

/* Starts the daemon on the files and attaches the host: controller enabled with every command
 * set, CT_QUEUES I/O queue pairs. */
static int ct_start(unsigned int round)
{
	char log[128], prog[256];
	pid_t parent;
	int rc;

	unlink(ct.sock);
	unlink(ct.rpc);
	if (ct.power && ((rc = ct_nbd_start(0, ct.zsock, ct.zimg)) ||
			 (rc = ct_nbd_start(1, ct.dsock, ct.dimg))))
		return rc;
	snprintf(prog, sizeof(prog), "%s/bin/nvme-emu", ct.build);
	snprintf(log, sizeof(log), "%s/daemon-%u.log", ct.dir, round % 2);
	fflush(NULL);
	parent = getpid();
	ct.pid = fork();
	if (ct.pid < 0)
		return -errno;
	if (ct.pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		/* The daemon dies with the test, whatever ends it (a failed check, a timeout). */
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != parent)
			_exit(126);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		if (ct.power) {
			char so[4096], abs[4096];
			const char *asan = getenv("ASAN_OPTIONS");
			char aopt[1024];

			snprintf(so, sizeof(so), "%s/lib/nvme_synced_watch.so", ct.build);
			if (!realpath(so, abs))
				_exit(125);
			snprintf(aopt, sizeof(aopt), "%s%sverify_asan_link_order=0", asan ? asan : "",
				 asan && *asan ? ":" : "");
			setenv("LD_PRELOAD", abs, 1);
			setenv("ASAN_OPTIONS", aopt, 1);
			setenv("NVME_EMU_SYNCED_WATCH", ct.pel, 1);
		}
		setenv("NOTIFY_SOCKET", ct.notify, 1);
		execl(prog, prog, "-r", ct.rpc, "-c", ct.cfg, "-m", "2", (char *)NULL);
		_exit(127);
	}
	/* READY=1 on the notify socket once every listener is up, or the daemon's end (its pidfd):
	 * no polling; 30 s is a hang guard only. */
	rc = ct_wait_ready();
	if (rc)
		return rc;
	ct.c = vfu_client_connect(ct.sock, 10000);
	if (!ct.c)
		return -errno;
	rc = vfu_client_negotiate(ct.c);
	rc = rc ?: vfu_client_ram_create(ct.c, NVME_ITEST_RAM_IOVA, NVME_ITEST_RAM_SIZE);
	rc = rc ?: nvme_host_init(&ct.h, ct.c, NVME_ITEST_RAM_IOVA, NVME_ITEST_RAM_SIZE, 0);
	if (rc)
		return rc;
	ct.h.timeout_ms = 30000;
	ct.vwc_off = false; /* the default after a power cycle */
	rc = nvme_host_enable_css(&ct.h, 32, 6);
	for (uint16_t q = 1; !rc && q <= CT_QUEUES; q++)
		rc = nvme_host_create_io_queues(&ct.h, q, CT_QD, false, 0);
	if (rc)
		return rc < 0 ? rc : -EIO;
	ct.rbuf_iova = nvme_host_alloc(&ct.h, CT_RBLOCKS * CT_BS, (void **)&ct.rbuf);
	ct.aop.iova = nvme_host_alloc(&ct.h, 4096, (void **)&ct.aop.buf);
	if (!ct.rbuf_iova || !ct.aop.iova)
		return -ENOMEM;
	/* The host's identity (a PTPL registration is found by it after a restart). */
	{
		struct nvme_sqe sqe = {0};
		uint64_t hostid = CT_HOSTID;

		rc = nvme_host_identify(&ct.h, NVME_CNS_CTRL, 0, ct.rbuf);
		if (rc)
			return rc < 0 ? rc : -EIO;
		ct.cntlid = ((const struct nvme_id_ctrl *)ct.rbuf)->cntlid;
		memcpy(ct.aop.buf, &hostid, 8);
		sqe.cdw0.bits.opc = NVME_ADM_SET_FEATURES;
		sqe.cdw10 = NVME_FEAT_HOST_ID;
		sqe.dptr.prp.prp1 = ct.aop.iova;
		rc = ct_cmd(0, &sqe);
		if (rc)
			return rc < 0 ? rc : -EIO;
	}
	for (unsigned int i = 0; i < CT_SLOTS; i++)
		ct.ops[i].iova = nvme_host_alloc(&ct.h, CT_MAX_NLB * CT_BS, (void **)&ct.ops[i].buf);
	return ct.rbuf_iova ? 0 : -ENOMEM;
}

/* Power mode, the daemon dead: the event log loses what was not synced (the fault layer's
 * record), then must hold the last acknowledged Set Features' event. */
static void ct_pel_power_cut(void)
{
	char rec[160], line[64];
	unsigned long long ino = 0;
	long long keep = 0;
	uint32_t best = 0;
	struct stat st;
	FILE *f;
	uint8_t *raw;
	size_t off;

	snprintf(rec, sizeof(rec), "%s.synced", ct.pel);
	f = fopen(rec, "r");
	if (f) {
		if (!fgets(line, sizeof(line), f) || sscanf(line, "%llu %lld", &ino, &keep) != 2)
			ino = 0, keep = 0;
		fclose(f);
	}
	if (stat(ct.pel, &st))
		return;
	if (st.st_ino != ino)
		keep = 0; /* renamed into place and never synced since */
	if (st.st_size > keep) {
		if (truncate(ct.pel, keep)) {
			ct_fail("cannot cut %s: %s", ct.pel, strerror(errno));
			return;
		}
		ct.pel_cut += (uint64_t)(st.st_size - keep);
		ct.pel_cuts++;
	}
	if (!ct.pel_acked)
		return;
	raw = malloc((size_t)keep + 1);
	f = fopen(ct.pel, "r");
	if (!raw || !f || fread(raw, 1, (size_t)keep, f) != (size_t)keep) {
		ct_fail("cannot read %s", ct.pel);
		goto out;
	}
	/* "NVMEPEL1", then 24-byte event headers (type at 0, data length at 22) and data; a Set
	 * Feature's data: a dword count, then CDW10-CDW15. */
	for (off = 8; off + 24 <= (size_t)keep;) {
		uint16_t el;
		uint32_t cdw10, cdw15;

		memcpy(&el, raw + off + 22, 2);
		if (off + 24 + el > (size_t)keep)
			break;
		if (raw[off] == 0x0b && el >= 28) {
			memcpy(&cdw10, raw + off + 24 + 4, 4);
			memcpy(&cdw15, raw + off + 24 + 24, 4);
			if ((cdw10 & 0xff) == NVME_FEAT_VOLATILE_WC && cdw15 > best)
				best = cdw15;
		}
		off += 24 + el;
	}
	if (best < ct.pel_acked)
		ct_fail("event log after the power loss: the newest Set Features VWC event is token "
			"%u, %u was acknowledged", best, ct.pel_acked);
out:
	if (f)
		fclose(f);
	free(raw);
}

static void ct_kill(void)
{
	uint64_t t0 = ct_now_us();

	/* Power mode: the backend's cache goes with the power, before the daemon can do more. */
	for (int i = 0; ct.power && i < 2; i++) {
		if (ct.nbd_pid[i] > 0) {
			kill(ct.nbd_pid[i], SIGKILL);
			waitpid(ct.nbd_pid[i], NULL, 0);
			ct.nbd_pid[i] = -1;
		}
	}
	if (ct.pid > 0) {
		kill(ct.pid, SIGKILL);
		waitpid(ct.pid, NULL, 0);
		ct.pid = -1;
		ct.kills++;
	}
	if (ct.power && ct.kills)
		ct_pel_power_cut();
	if (ct.power) {
		/* The page cache went too: the zone state file was written by an earlier boot. */
		int fd = open(ct.zstate, O_WRONLY);

		if (fd >= 0) {
			if (pwrite(fd, "00000000-0000-0000-0000-000000000000", 36, 48) != 36)
				ct_fail("cannot mark the zone state file rebooted");
			close(fd);
		}
	}
	ct.us_kill += ct_now_us() - t0;
}

static void ct_detach(void)
{
	if (ct.c)
		vfu_client_close(ct.c);
	ct.c = NULL;
}

/* ---- commands ---- */

/* A synchronous command on queue qid (verification). Status or -errno. */
static int ct_cmd(uint16_t qid, struct nvme_sqe *sqe)
{
	return nvme_host_cmd(&ct.h, qid, sqe, NULL);
}

/* Reads nlb blocks of nsid at slba into ct.rbuf (CT_RBLOCKS at most). */
static int ct_read(uint32_t nsid, uint64_t slba, uint32_t nlb)
{
	struct nvme_sqe sqe = {0};

	nvme_host_rw_sqe(&sqe, NVME_CMD_READ, nsid, slba, nlb);
	sqe.dptr.prp.prp1 = ct.rbuf_iova;
	if (nlb * CT_BS > 4096) {
		uint64_t brk = ct.h.brk;
		int rc = nvme_host_build_prps(&ct.h, &sqe, ct.rbuf_iova, nlb * CT_BS);

		rc = rc ?: ct_cmd(1, &sqe);
		ct.h.brk = brk;
		return rc;
	}
	return ct_cmd(1, &sqe);
}

/* ---- the admin strand: device state other than data and zones ---- */

/* A command's CQE status (without the phase) and dw0, synchronously; -errno. */
static int ct_cmd_dw0(uint16_t qid, struct nvme_sqe *sqe, uint32_t *dw0)
{
	struct nvme_cqe cqe;
	int rc = nvme_host_cmd(&ct.h, qid, sqe, &cqe);

	if (!rc && dw0)
		*dw0 = cqe.dw0;
	return rc;
}

static void ct_fw_rev_str(char out[9], const char *frs)
{
	memcpy(out, frs, 8);
	out[8] = 0;
	for (int i = 7; i >= 0 && (out[i] == ' ' || !out[i]); i--)
		out[i] = 0;
}

/* What the device holds now, read back (after a restart). 0 or -1 (and a failure said). */
static int ct_adm_read(struct ct_adm *a)
{
	struct nvme_sqe sqe = {0};
	uint32_t list[1024], active[1024], dw0 = 0;
	int rc;

	memset(a, 0, sizeof(*a));
	/* Firmware Slot Information. */
	sqe.cdw0.bits.opc = NVME_ADM_GET_LOG_PAGE;
	sqe.cdw10 = NVME_LOG_FW_SLOT | (512 / 4 - 1) << 16;
	sqe.dptr.prp.prp1 = ct.rbuf_iova;
	if ((rc = ct_cmd(0, &sqe))) {
		ct_fail("Get Log Page firmware slots: %d", rc);
		return -1;
	}
	{
		const struct nvme_fw_slot_log *fw = (const void *)ct.rbuf;

		a->fw_active = fw->afi & 7;
		a->fw_next = (fw->afi >> 4) & 7;
		ct_fw_rev_str(a->fw[0], fw->frs[1]);
		ct_fw_rev_str(a->fw[1], fw->frs[2]);
	}
	/* Features: the current values, and the saved ones must be the same. */
	for (int sel = 0; sel <= 2; sel += 2) {
		uint32_t arb = 0, tover = 0;

		memset(&sqe, 0, sizeof(sqe));
		sqe.cdw0.bits.opc = NVME_ADM_GET_FEATURES;
		sqe.cdw10 = NVME_FEAT_ARBITRATION | (uint32_t)sel << 8;
		rc = ct_cmd_dw0(0, &sqe, &arb);
		sqe.cdw10 = NVME_FEAT_TEMP_THRESH | (uint32_t)sel << 8;
		sqe.cdw11 = 0;
		rc = rc ?: ct_cmd_dw0(0, &sqe, &tover);
		if (rc) {
			ct_fail("Get Features (select %d): %d", sel, rc);
			return -1;
		}
		if (sel == 0)
			a->arb = arb, a->tover = tover & 0xffff;
		else if (arb != a->arb || (tover & 0xffff) != a->tover) {
			ct_fail("features: current %#x/%#x, saved %#x/%#x", a->arb, a->tover, arb,
				tover & 0xffff);
			return -1;
		}
	}
	/* The pool's namespaces: allocated, attached, format. */
	if ((rc = nvme_host_identify(&ct.h, NVME_CNS_ALLOC_NS_LIST, 0, ct.rbuf))) {
		ct_fail("Identify allocated namespaces: %d", rc);
		return -1;
	}
	memcpy(list, ct.rbuf, sizeof(list));
	if ((rc = nvme_host_identify(&ct.h, NVME_CNS_ACTIVE_NS_LIST, 0, ct.rbuf))) {
		ct_fail("Identify active namespaces: %d", rc);
		return -1;
	}
	memcpy(active, ct.rbuf, sizeof(active));
	for (unsigned int i = 0; i < 1024 && list[i]; i++) {
		uint32_t nsid = list[i];

		if (nsid < 3)
			continue;
		if (nsid > CT_MAXNS) {
			ct_fail("namespace %u allocated: never created", nsid);
			return -1;
		}
		a->ns[nsid].alloc = true;
		if ((rc = nvme_host_identify(&ct.h, NVME_CNS_ALLOC_NS, nsid, ct.rbuf))) {
			ct_fail("Identify namespace %u: %d", nsid, rc);
			return -1;
		}
		a->ns[nsid].lbaf = ((const struct nvme_id_ns *)ct.rbuf)->flbas & 0xf;
	}
	for (unsigned int i = 0; i < 1024 && active[i]; i++) {
		if (active[i] < 3)
			continue;
		if (active[i] > CT_MAXNS || !a->ns[active[i]].alloc) {
			ct_fail("namespace %u active, not allocated", active[i]);
			return -1;
		}
		a->ns[active[i]].att = true;
	}
	/* The reservation of namespace 2. */
	memset(&sqe, 0, sizeof(sqe));
	sqe.cdw0.bits.opc = NVME_CMD_RESV_REPORT;
	sqe.nsid = 2;
	sqe.cdw10 = 4096 / 4 - 1;
	sqe.dptr.prp.prp1 = ct.rbuf_iova;
	if ((rc = ct_cmd_dw0(1, &sqe, &dw0))) {
		ct_fail("Reservation Report: %d", rc);
		return -1;
	}
	{
		const struct nvme_resv_status_hdr *hdr = (const void *)ct.rbuf;
		const struct nvme_resv_ctrl *rc0 = (const void *)(ct.rbuf + sizeof(*hdr));

		a->ptpl = hdr->ptpls & 1;
		a->rtype = hdr->rtype;
		if (hdr->regctl > 1 || (hdr->regctl && rc0->hostid != CT_HOSTID)) {
			ct_fail("reservation: %u registrants (host %#" PRIx64 ")", hdr->regctl,
				rc0->hostid);
			return -1;
		}
		a->reg = hdr->regctl == 1;
		a->key = a->reg ? rc0->rkey : 0;
		if (a->rtype && (!a->reg || !(rc0->rcsts & 1))) {
			ct_fail("reservation type %u held by no registrant of ours", a->rtype);
			return -1;
		}
	}
	return 0;
}

/* What a restart (a power cycle) makes of a state: the firmware committed for the next reset
 * runs. */
static void ct_adm_restart(struct ct_adm *a)
{
	if (a->fw_next)
		a->fw_active = a->fw_next;
	a->fw_next = 0;
}

static bool ct_adm_eq(const struct ct_adm *x, const struct ct_adm *y)
{
	if (strcmp(x->fw[0], y->fw[0]) || strcmp(x->fw[1], y->fw[1]) ||
	    x->fw_active != y->fw_active || x->fw_next != y->fw_next || x->arb != y->arb ||
	    x->tover != y->tover || x->reg != y->reg || x->ptpl != y->ptpl || x->key != y->key ||
	    x->rtype != y->rtype)
		return false;
	for (uint32_t n = 3; n <= CT_MAXNS; n++)
		if (x->ns[n].alloc != y->ns[n].alloc ||
		    (x->ns[n].alloc && (x->ns[n].att != y->ns[n].att || x->ns[n].lbaf != y->ns[n].lbaf)))
			return false;
	return true;
}

/* A created namespace's NSID is in its CQE: one in doubt may be at any free NSID. */
static bool ct_adm_eq_created(const struct ct_adm *obs, const struct ct_adm *before)
{
	struct ct_adm t = *before;

	for (uint32_t n = 3; n <= CT_MAXNS; n++) {
		if (obs->ns[n].alloc && !before->ns[n].alloc) {
			t.ns[n].alloc = true;
			t.ns[n].att = false;
			t.ns[n].lbaf = 0;
			return ct_adm_eq(obs, &t);
		}
	}
	return false;
}

static void ct_adm_show(const char *what, const struct ct_adm *a)
{
	fprintf(stderr, "  %s: fw [%s|%s] active %u next %u, arb %#x tover %u, resv reg %d key %#" PRIx64
		" type %u ptpl %d, ns", what, a->fw[0], a->fw[1], a->fw_active, a->fw_next, a->arb,
		a->tover, a->reg, a->key, a->rtype, a->ptpl);
	for (uint32_t n = 3; n <= CT_MAXNS; n++)
		if (a->ns[n].alloc)
			fprintf(stderr, " %u%s/f%u", n, a->ns[n].att ? "a" : "", a->ns[n].lbaf);
	fprintf(stderr, "\n");
}

/* After a restart: the device's state is the model's, or, with an operation in doubt, the
 * model's with that operation whole; the model takes what was found. */
static void ct_adm_verify(void)
{
	struct ct_adm obs, before = ct.adm, after = ct.aop.after;

	if (ct_adm_read(&obs))
		return;
	ct_adm_restart(&before);
	ct_adm_restart(&after);
	if (ct_adm_eq(&obs, &before)) {
		ct.adm_doubt_absent += ct.aop.busy;
	} else if (ct.aop.busy && (ct.aop.kind == CT_A_CREATE ? ct_adm_eq_created(&obs, &before)
							 : ct_adm_eq(&obs, &after))) {
		ct.adm_doubt_whole++;
	} else {
		ct_fail("device state after the restart is neither the acknowledged one nor that with "
			"the operation in doubt (kind %d%s) whole", ct.aop.kind,
			ct.aop.busy ? "" : ", none in doubt");
		ct_adm_show("found", &obs);
		ct_adm_show("acknowledged", &before);
		if (ct.aop.busy)
			ct_adm_show("with the one in doubt", &after);
		return;
	}
	ct.adm = obs;
	ct.aop.busy = false;
}

/* Picks an admin-strand operation the model allows and submits it; false when none. */
static bool ct_adm_submit(void)
{
	struct ct_aop *op = &ct.aop;
	struct ct_adm *a = &op->after;
	struct nvme_sqe sqe = {0};
	uint32_t free_ns = 0, alloc_ns[CT_MAXNS + 1], nalloc = 0, att_ns[CT_MAXNS + 1], natt = 0;
	int cid;

	if (op->busy)
		return false;
	*a = ct.adm;
	for (uint32_t n = 3; n <= CT_MAXNS; n++) {
		if (!ct.adm.ns[n].alloc)
			free_ns++;
		else {
			alloc_ns[nalloc++] = n;
			if (ct.adm.ns[n].att)
				att_ns[natt++] = n;
		}
	}
	op->kind = (enum ct_akind)ct_below(CT_A_NKINDS);
	op->qid = 0;
	memset(op->buf, 0, 4096);
	switch (op->kind) {
	case CT_A_FW: {
		/* Download an image (its revision: 8 printable bytes), commit it to slot 2 or 3 to
		 * run at the next reset; or commit an existing slot for the next reset. */
		uint8_t slot = (uint8_t)(2 + ct_below(2));
		char rev[9];

		if (ct_below(3) || !ct.adm.fw[slot - 2][0]) {
			snprintf(rev, sizeof(rev), "C%07" PRIu64, ct_below(10000000));
			memset(op->buf, 0x5a, 4096);
			memcpy(op->buf, rev, 8);
			sqe.cdw0.bits.opc = NVME_ADM_FW_DOWNLOAD;
			sqe.cdw10 = 4096 / 4 - 1;
			sqe.dptr.prp.prp1 = op->iova;
			if (ct_cmd(0, &sqe)) {
				ct_fail("Firmware Image Download failed");
				return false;
			}
			memset(&sqe, 0, sizeof(sqe));
			sqe.cdw10 = slot | 1u << 3; /* CA 001b: replace, activate at the next reset */
			memcpy(a->fw[slot - 2], rev, 9);
		} else {
			sqe.cdw10 = slot | 2u << 3; /* CA 010b: activate the slot at the next reset */
		}
		sqe.cdw0.bits.opc = NVME_ADM_FW_COMMIT;
		a->fw_next = slot;
		break;
	}
	case CT_A_FEAT:
		sqe.cdw0.bits.opc = NVME_ADM_SET_FEATURES;
		if (ct_below(2)) {
			sqe.cdw10 = NVME_FEAT_ARBITRATION | 1u << 31;
			sqe.cdw11 = (uint32_t)ct_rand() & 0xffffff07u;
			a->arb = sqe.cdw11;
		} else {
			sqe.cdw10 = NVME_FEAT_TEMP_THRESH | 1u << 31;
			sqe.cdw11 = (uint32_t)(350 + ct_below(100)); /* Kelvin, over, composite */
			a->tover = sqe.cdw11;
		}
		break;
	case CT_A_CREATE: {
		struct nvme_id_ns *id = (struct nvme_id_ns *)op->buf;

		if (!free_ns || nalloc >= 7)
			return false;
		id->nsze = id->ncap = 2048; /* 1 MiB in format 0 */
		sqe.cdw0.bits.opc = NVME_ADM_NS_MGMT;
		sqe.cdw10 = NVME_NS_MGMT_SEL_CREATE;
		sqe.dptr.prp.prp1 = op->iova;
		break;
	}
	case CT_A_DELETE:
	case CT_A_ATTACH:
	case CT_A_DETACH:
	case CT_A_FORMAT: {
		uint32_t nsid;

		if (op->kind == CT_A_DELETE || op->kind == CT_A_ATTACH) {
			if (!nalloc)
				return false;
			nsid = alloc_ns[ct_below(nalloc)];
		} else {
			if (!natt)
				return false;
			nsid = att_ns[ct_below(natt)];
		}
		sqe.nsid = nsid;
		if (op->kind == CT_A_DELETE) {
			sqe.cdw0.bits.opc = NVME_ADM_NS_MGMT;
			sqe.cdw10 = NVME_NS_MGMT_SEL_DELETE;
			a->ns[nsid].alloc = a->ns[nsid].att = false;
			a->ns[nsid].lbaf = 0;
		} else if (op->kind == CT_A_FORMAT) {
			/* Format 0 or 1 (both offered on a 512-byte pool), no PI, no secure erase. */
			uint8_t lbaf = (uint8_t)ct_below(2);

			sqe.cdw0.bits.opc = NVME_ADM_FORMAT_NVM;
			sqe.cdw10 = lbaf;
			a->ns[nsid].lbaf = lbaf;
		} else {
			uint16_t *l = (uint16_t *)op->buf;

			if (op->kind == CT_A_ATTACH && ct.adm.ns[nsid].att)
				return false;
			l[0] = 1;
			l[1] = ct.cntlid;
			sqe.cdw0.bits.opc = NVME_ADM_NS_ATTACH;
			sqe.cdw10 = op->kind == CT_A_ATTACH ? NVME_NS_ATTACH_SEL_ATTACH
							    : NVME_NS_ATTACH_SEL_DETACH;
			sqe.dptr.prp.prp1 = op->iova;
			a->ns[nsid].att = op->kind == CT_A_ATTACH;
		}
		break;
	}
	case CT_A_REG:
	case CT_A_UNREG:
	case CT_A_ACQUIRE:
	case CT_A_RELEASE: {
		uint64_t nkey = 1 + ct_below(1u << 30), *d = (uint64_t *)op->buf;

		op->qid = 1;
		sqe.nsid = 2;
		sqe.dptr.prp.prp1 = op->iova;
		if (op->kind == CT_A_REG) {
			/* Register, or replace the key; Persist Through Power Loss on (CPTPL 11b). */
			sqe.cdw0.bits.opc = NVME_CMD_RESV_REGISTER;
			sqe.cdw10 = (ct.adm.reg ? 2u : 0u) | 3u << 30;
			d[0] = ct.adm.key;
			d[1] = nkey;
			a->reg = a->ptpl = true;
			a->key = nkey;
		} else if (op->kind == CT_A_UNREG) {
			if (!ct.adm.reg)
				return false;
			sqe.cdw0.bits.opc = NVME_CMD_RESV_REGISTER;
			sqe.cdw10 = 1u;
			d[0] = ct.adm.key;
			a->reg = false;
			a->key = 0;
			a->rtype = 0; /* the holder unregistered: the reservation is released */
		} else if (op->kind == CT_A_ACQUIRE) {
			if (!ct.adm.reg || ct.adm.rtype)
				return false;
			sqe.cdw0.bits.opc = NVME_CMD_RESV_ACQUIRE;
			a->rtype = (uint8_t)(NVME_RESV_WRITE_EXCLUSIVE + ct_below(2));
			sqe.cdw10 = (uint32_t)a->rtype << 8;
			d[0] = ct.adm.key;
		} else {
			if (!ct.adm.rtype)
				return false;
			sqe.cdw0.bits.opc = NVME_CMD_RESV_RELEASE;
			sqe.cdw10 = (uint32_t)ct.adm.rtype << 8;
			d[0] = ct.adm.key;
			a->rtype = 0;
		}
		break;
	}
	default:
		return false;
	}
	cid = nvme_host_submit(&ct.h, op->qid, &sqe, false);
	if (cid < 0)
		return false;
	op->cid = (uint16_t)cid;
	op->busy = true;
	return true;
}

/* The admin-strand operation's CQE: the model takes its effect. */
static void ct_adm_acked(const struct nvme_cqe *cqe)
{
	uint16_t st = (cqe->status >> 1) & 0x7ff;
	struct ct_aop *op = &ct.aop;

	op->busy = false;
	ct.acked++;
	if (st) {
		ct_fail("admin-strand operation (kind %d) failed: status %#x", op->kind, st);
		return;
	}
	if (op->kind == CT_A_CREATE) {
		uint32_t nsid = cqe->dw0;

		if (nsid < 3 || nsid > CT_MAXNS || ct.adm.ns[nsid].alloc) {
			ct_fail("Namespace Management created namespace %u", nsid);
			return;
		}
		op->after.ns[nsid].alloc = true;
		op->after.ns[nsid].att = false;
		op->after.ns[nsid].lbaf = 0;
	}
	ct.adm = op->after;
	ct.adm_acked[op->kind]++;
}

/* ---- the model ---- */

static uint64_t ct_zslba(uint32_t zi)
{
	return (uint64_t)zi * CT_ZSZE;
}

/* The state a zone is in after a restart: open zones are closed, or empty without data. */
static enum ct_zs ct_after_restart(enum ct_zs s, uint64_t wp, uint32_t zi)
{
	if (s == CT_IO || s == CT_EO)
		return wp > ct_zslba(zi) ? CT_C : CT_E;
	return s;
}

static uint8_t ct_nvme_state(enum ct_zs s)
{
	static const uint8_t m[] = {[CT_E] = NVME_ZS_EMPTY, [CT_IO] = NVME_ZS_IMP_OPEN,
				    [CT_EO] = NVME_ZS_EXP_OPEN, [CT_C] = NVME_ZS_CLOSED,
				    [CT_F] = NVME_ZS_FULL};

	return m[s];
}

/* A zone management action that succeeded, applied to a zone of the model. */
static void ct_apply_mgmt(struct ct_zone *z, uint32_t zi, uint8_t zsa)
{
	switch (zsa) {
	case NVME_ZSA_OPEN:
		z->st = CT_EO;
		break;
	case NVME_ZSA_CLOSE:
		z->st = CT_C;
		break;
	case NVME_ZSA_FINISH:
		z->st = CT_F;
		break;
	case NVME_ZSA_RESET:
		z->st = CT_E;
		z->wp = ct_zslba(zi);
		z->gen++;
		memset(&ct.ztag[ct_zslba(zi)], 0, CT_ZSZE * sizeof(ct.ztag[0]));
		break;
	}
}

static void ct_apply_write(struct ct_zone *z, uint32_t zi, uint64_t lba, uint32_t nlb,
			   uint64_t id)
{
	for (uint32_t i = 0; i < nlb; i++)
		ct.ztag[lba + i] = id << 16 | i;
	if (lba + nlb > z->wp)
		z->wp = lba + nlb;
	if (z->st != CT_EO)
		z->st = CT_IO;
	if (z->wp == ct_zslba(zi) + CT_ZCAP)
		z->st = CT_F;
}

/* ---- verification of what the last life left ---- */

/* Forgets an operation, keeping its slot's data buffer. */
static void ct_op_clear(struct ct_op *o)
{
	uint64_t iova = o->iova;
	uint8_t *buf = o->buf;

	free(o->dsnap);
	memset(o, 0, sizeof(*o));
	o->iova = iova;
	o->buf = buf;
}

static void ct_fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "  FAIL: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	ct.failed = true;
}

/* The operation in doubt (in flight at the kill, no CQE seen) with this id, or NULL. */
static struct ct_op *ct_doubt(uint64_t id)
{
	for (unsigned int i = 0; i < CT_SLOTS; i++)
		if (ct.ops[i].used && !ct.ops[i].acked && ct.ops[i].id == id)
			return &ct.ops[i];
	return NULL;
}

/* Blocks [from, to) of zone zi that the model does not know must be whole writes in doubt of
 * that zone, each one entirely there, in order. Returns false (and says why) otherwise. */
static bool ct_doubt_runs(uint32_t zi, const uint64_t *seen, uint64_t from, uint64_t to)
{
	uint64_t zslba = ct_zslba(zi);

	for (uint64_t lba = from; lba < to;) {
		uint64_t tag = seen[lba - zslba];
		struct ct_op *o;

		if (ct.ztag[lba]) { /* known block */
			lba++;
			continue;
		}
		o = tag ? ct_doubt(tag >> 16) : NULL;
		if (!o || o->zone != zi || (o->kind != CT_ZWRITE && o->kind != CT_APPEND) ||
		    (tag & 0xffff) != 0 || (o->kind == CT_ZWRITE && o->slba != lba) ||
		    lba + o->nlb > to) {
			ct_fail("zone %u: block %" PRIu64 " holds %" PRIx64
				", which no operation in doubt explains as its first block",
				zi, lba, tag);
			return false;
		}
		for (uint32_t i = 0; i < o->nlb; i++) {
			if (seen[lba + i - zslba] != (o->id << 16 | i)) {
				ct_fail("zone %u: operation %" PRIu64 " half applied at %" PRIu64, zi,
					o->id, lba + i);
				return false;
			}
		}
		o->lba_done = lba;
		lba += o->nlb;
	}
	return true;
}

/* Counts the operations in doubt of zone zi, found whole (lba_done set) or absent. */
static void ct_count_doubt(uint32_t zi)
{
	for (unsigned int i = 0; i < CT_SLOTS; i++) {
		struct ct_op *o = &ct.ops[i];

		if (o->used && !o->acked && o->zone == zi && o->nsid == 1 && o->kind != CT_ZMGMT) {
			if (o->lba_done != UINT64_MAX)
				ct.whole++;
			else
				ct.absent++;
		}
	}
}

/* After a power loss: every block below the recorded write pointer is written (an acknowledged
 * write's, or one in doubt, whole); the write pointer is at least where the last durable point
 * left it; acknowledged writes past it were never made durable and are gone. */
static void ct_verify_zone_power(uint32_t zi, const struct nvme_zone_desc *d, const uint64_t *seen,
				 uint64_t dwp, const struct ct_op *mgmt)
{
	struct ct_zone *z = &ct.z[zi];
	uint64_t zslba = ct_zslba(zi);
	bool reset = mgmt && mgmt->zsa == NVME_ZSA_RESET && dwp == zslba;
	uint8_t obs = d->zs >> 4;

	for (uint64_t lba = zslba; !reset && lba < dwp; lba++) {
		if (ct.ztag[lba] && ct.ztag[lba] != seen[lba - zslba]) {
			ct_fail("zone %u: block %" PRIu64 " holds %" PRIx64 ", acknowledged %" PRIx64, zi,
				lba, seen[lba - zslba], ct.ztag[lba]);
			return;
		}
	}
	if (!reset && !ct_doubt_runs(zi, seen, zslba, dwp))
		return;
	if (!reset && dwp < ct.zdur[zi]) {
		ct_fail("zone %u: write pointer %" PRIu64 " after the power loss, below %" PRIu64
			", made durable before it",
			zi, dwp, ct.zdur[zi]);
		return;
	}
	for (uint64_t lba = dwp; lba < zslba + CT_ZCAP; lba++)
		ct.lost += ct.ztag[lba] != 0;
	ct_count_doubt(zi);
	if (mgmt)
		ct.whole += reset, ct.absent += !reset;
	z->st = obs == NVME_ZS_FULL ? CT_F : obs == NVME_ZS_CLOSED ? CT_C : CT_E;
	z->wp = dwp;
	ct.zdur[zi] = dwp;
	for (uint64_t lba = zslba; lba < zslba + CT_ZCAP; lba++)
		ct.ztag[lba] = seen[lba - zslba];
}

/* One zone: its reported state and write pointer and its blocks, against the model and the
 * operations in doubt; then the model takes what was found. */
static void ct_verify_zone(uint32_t zi, const struct nvme_zone_desc *d)
{
	static uint64_t seen[CT_ZCAP];
	struct ct_zone *z = &ct.z[zi], alt;
	uint64_t zslba = ct_zslba(zi), dwp = zslba, doubt_blocks = 0;
	uint8_t obs = d->zs >> 4, base_st, alt_st = 0;
	struct ct_op *mgmt = NULL;
	bool base_ok, alt_ok = false;

	for (unsigned int i = 0; i < CT_SLOTS; i++) {
		struct ct_op *o = &ct.ops[i];

		if (!o->used || o->acked || o->zone != zi || o->nsid != 1)
			continue;
		if (o->kind == CT_ZMGMT)
			mgmt = o;
		else if (o->kind == CT_ZWRITE || o->kind == CT_APPEND)
			doubt_blocks += o->nlb;
	}
	for (uint64_t off = 0; off < CT_ZCAP; off += CT_RBLOCKS) {
		uint32_t n = CT_ZCAP - off < CT_RBLOCKS ? (uint32_t)(CT_ZCAP - off) : CT_RBLOCKS;

		if (ct_read(1, zslba + off, n)) {
			ct_fail("zone %u: read failed", zi);
			return;
		}
		for (uint32_t b = 0; b < n; b++) {
			seen[off + b] = ct_block_tag(ct.rbuf + b * CT_BS);
			if (seen[off + b] == ~0ull) {
				ct_fail("zone %u: block %" PRIu64 " is not a whole block of ours", zi,
					zslba + off + b);
				return;
			}
			if (seen[off + b])
				dwp = zslba + off + b + 1;
		}
	}
	ct.checked_blocks += CT_ZCAP;
	/* Blocks read back zero from the data write pointer on (never written, or past it). */
	if (obs != NVME_ZS_FULL && d->wp != dwp) {
		/* Below the reported write pointer every block is written (ours are never zero). */
		ct_fail("zone %u: write pointer %" PRIu64 ", data up to %" PRIu64, zi, d->wp, dwp);
		return;
	}
	if (ct.power)
		return ct_verify_zone_power(zi, d, seen, dwp, mgmt);
	/* Without the operation in doubt: the model, plus writes in doubt that landed whole. */
	base_st = ct_nvme_state(ct_after_restart(z->st, z->wp, zi));
	base_ok = dwp >= z->wp && dwp <= z->wp + doubt_blocks;
	if (base_ok && dwp > z->wp)
		base_st = dwp == zslba + CT_ZCAP ? NVME_ZS_FULL : NVME_ZS_CLOSED;
	base_ok = base_ok && obs == base_st;
	for (uint64_t lba = zslba; base_ok && lba < zslba + CT_ZCAP; lba++) {
		if (ct.ztag[lba] && ct.ztag[lba] != seen[lba - zslba])
			base_ok = false;
	}
	if (base_ok && !ct_doubt_runs(zi, seen, z->wp, dwp))
		return;
	/* With it (a management action in doubt: the zone has nothing else in flight). */
	if (mgmt) {
		alt = *z;
		if (mgmt->zsa == NVME_ZSA_RESET) {
			alt_ok = dwp == zslba;
			alt.wp = zslba;
			alt.st = CT_E;
		} else {
			alt_ok = dwp == z->wp;
			for (uint64_t lba = zslba; alt_ok && lba < z->wp; lba++)
				alt_ok = ct.ztag[lba] == seen[lba - zslba];
			if (mgmt->zsa == NVME_ZSA_OPEN)
				alt.st = CT_EO;
			else if (mgmt->zsa == NVME_ZSA_CLOSE)
				alt.st = CT_C;
			else
				alt.st = CT_F;
		}
		alt_st = ct_nvme_state(ct_after_restart(alt.st, alt.wp, zi));
		alt_ok = alt_ok && obs == alt_st;
		/* Close on an Empty zone fails: then only the model's state can be. */
		if (mgmt->zsa == NVME_ZSA_CLOSE && z->st == CT_E)
			alt_ok = false;
	}
	if (!base_ok && !alt_ok) {
		ct_fail("zone %u: state %x, data up to %" PRIu64 "; expected state %x up to %" PRIu64
			" (+%" PRIu64 " in doubt)%s",
			zi, obs, dwp, base_st, z->wp, doubt_blocks,
			mgmt ? " or the management action in doubt applied" : "");
		return;
	}
	if (mgmt) {
		ct.whole += alt_ok && !base_ok;
		ct.absent += base_ok;
	}
	ct_count_doubt(zi);
	/* The model takes the zone as found. */
	z->st = obs == NVME_ZS_FULL ? CT_F : obs == NVME_ZS_CLOSED ? CT_C : CT_E;
	z->wp = dwp;
	for (uint64_t lba = zslba; lba < zslba + CT_ZCAP; lba++)
		ct.ztag[lba] = seen[lba - zslba];
}

/* Power mode: whether tag is a write of this life to block lba no older than its durable value. */
static bool ct_dlog_has(uint64_t lba, uint64_t tag)
{
	if (!tag || (tag >> 16) < (ct.ddur[lba] >> 16))
		return false;
	for (unsigned int i = 0; i < ct.ndlog; i++)
		if (ct.dlog[i].id == tag >> 16 && lba == ct.dlog[i].slba + (tag & 0xffff) &&
		    (tag & 0xffff) < ct.dlog[i].nlb)
			return true;
	return false;
}

/* The conventional namespace: every block holds what the model says, or, inside a write in
 * doubt, that write's block (one block is the unit of atomicity: AWUPF 0). */
static void ct_verify_data(void)
{
	for (uint64_t off = 0; off < CT_DBLOCKS; off += CT_RBLOCKS) {
		if (ct_read(2, off, CT_RBLOCKS)) {
			ct_fail("data namespace: read failed");
			return;
		}
		for (uint32_t b = 0; b < CT_RBLOCKS; b++) {
			uint64_t lba = off + b, tag = ct_block_tag(ct.rbuf + b * CT_BS);
			/* After a power loss: what was durable, or anything written since. */
			bool ok = tag == ct.dtag[lba] || (ct.power && tag == ct.ddur[lba]) ||
				  (ct.power && ct_dlog_has(lba, tag));

			for (unsigned int i = 0; !ok && i < CT_SLOTS; i++) {
				struct ct_op *o = &ct.ops[i];

				ok = o->used && !o->acked && o->kind == CT_DWRITE && lba >= o->slba &&
				     lba < o->slba + o->nlb && tag == (o->id << 16 | (lba - o->slba));
			}
			if (!ok) {
				ct_fail("data namespace: block %" PRIu64 " holds %" PRIx64
					", expected %" PRIx64,
					lba, tag, ct.dtag[lba]);
				return;
			}
			if (ct.power && tag != ct.dtag[lba] && ct.dtag[lba] &&
			    !ct_doubt(ct.dtag[lba] >> 16))
				ct.lost++;
			ct.dtag[lba] = ct.ddur[lba] = tag;
		}
	}
	ct.checked_blocks += CT_DBLOCKS;
	ct.ndlog = 0;
}

static void ct_verify(void)
{
	struct nvme_sqe sqe = {0};
	const struct nvme_zone_desc *d;
	uint64_t brk = ct.h.brk;

	for (unsigned int i = 0; i < CT_SLOTS; i++)
		ct.ops[i].lba_done = UINT64_MAX;
	sqe.cdw0.bits.opc = NVME_CMD_ZONE_MGMT_RECV;
	sqe.nsid = 1;
	sqe.cdw12 = 64 * 1024 / 4 - 1;
	sqe.cdw13 = NVME_ZRA_REPORT;
	if (nvme_host_build_prps(&ct.h, &sqe, ct.rbuf_iova, 64 * 1024) || ct_cmd(1, &sqe)) {
		ct.h.brk = brk;
		ct_fail("Report Zones failed");
		return;
	}
	ct.h.brk = brk;
	{
		static uint8_t rep[64 * 1024];

		memcpy(rep, ct.rbuf, sizeof(rep));
		if (((struct nvme_zone_report_hdr *)rep)->nr_zones != CT_NZONES) {
			ct_fail("Report Zones: %" PRIu64 " zones",
				((struct nvme_zone_report_hdr *)rep)->nr_zones);
			return;
		}
		d = (const struct nvme_zone_desc *)(rep + 64);
		for (uint32_t zi = 0; zi < CT_NZONES && !ct.failed; zi++)
			ct_verify_zone(zi, &d[zi]);
	}
	if (!ct.failed)
		ct_verify_data();
	for (unsigned int i = 0; i < CT_SLOTS; i++)
		if (ct.ops[i].used && !ct.ops[i].acked && ct.ops[i].kind == CT_DWRITE)
			ct.in_doubt++;
	for (unsigned int i = 0; i < CT_SLOTS; i++)
		if (ct.ops[i].used && !ct.ops[i].acked && ct.ops[i].kind != CT_DWRITE &&
		    ct.ops[i].kind != CT_FLUSH)
			ct.in_doubt++;
	for (unsigned int i = 0; i < CT_SLOTS; i++)
		ct_op_clear(&ct.ops[i]);
	if (!ct.failed)
		ct_adm_verify();
}

/* ---- the work of one life ---- */

static struct ct_op *ct_slot(void)
{
	for (unsigned int i = 0; i < CT_SLOTS; i++)
		if (!ct.ops[i].used)
			return &ct.ops[i];
	return NULL;
}

/* Power mode: a zone round (Flush, a durable zone write, a zone management command) made every
 * zone durable as it was when o was submitted (the round's capture came later). */
static void ct_durable_zones(const struct ct_op *o)
{
	for (uint32_t i = 0; i < CT_NZONES; i++)
		if (o->zgsnap[i] == ct.z[i].gen && o->zsnap[i] > ct.zdur[i])
			ct.zdur[i] = o->zsnap[i];
}

/* Power mode: a data block's durable tag moves forward only (writes of a block never overlap). */
static void ct_durable_block(uint64_t lba, uint64_t tag)
{
	if ((tag >> 16) > (ct.ddur[lba] >> 16))
		ct.ddur[lba] = tag;
}

/* Power mode: what an acknowledged operation made durable. */
static void ct_acked_power(struct ct_op *o, const struct nvme_cqe *cqe)
{
	struct ct_zone *z = &ct.z[o->zone];
	uint64_t end;

	switch (o->kind) {
	case CT_FLUSH:
		if (o->nsid != 2)
			ct_durable_zones(o);
		for (uint32_t b = 0; o->nsid != 1 && o->dsnap && b < CT_DBLOCKS; b++)
			ct_durable_block(b, o->dsnap[b]);
		break;
	case CT_ZMGMT:
		ct_durable_zones(o);
		ct.zdur[o->zone] = o->zsa == NVME_ZSA_RESET ? z->wp :
			ct.zdur[o->zone] > z->wp ? ct.zdur[o->zone] : z->wp;
		break;
	case CT_ZWRITE:
	case CT_APPEND:
		if (!o->durable)
			break;
		ct_durable_zones(o);
		end = (o->kind == CT_APPEND ? ((uint64_t)cqe->dw1 << 32 | cqe->dw0) : o->slba) + o->nlb;
		if (end > ct.zdur[o->zone])
			ct.zdur[o->zone] = end;
		break;
	case CT_DWRITE:
		for (uint32_t i = 0; o->durable && i < o->nlb; i++)
			ct_durable_block(o->slba + i, o->id << 16 | i);
		break;
	}
}

/* The op's effect on the model once its CQE was seen. */
static void ct_acked(struct ct_op *o, const struct nvme_cqe *cqe)
{
	uint16_t st = (cqe->status >> 1) & 0x7ff;
	struct ct_zone *z = o->nsid == 1 && o->kind != CT_FLUSH ? &ct.z[o->zone] : NULL;

	o->acked = true;
	o->status = st;
	ct.acked++;
	switch (o->kind) {
	case CT_ZWRITE:
		z->busy_write--;
		if (!st)
			ct_apply_write(z, o->zone, o->slba, o->nlb, o->id);
		break;
	case CT_APPEND:
		z->busy_appends--;
		z->appends_reserved -= o->nlb;
		if (!st)
			ct_apply_write(z, o->zone, (uint64_t)cqe->dw1 << 32 | cqe->dw0, o->nlb, o->id);
		break;
	case CT_ZMGMT:
		z->busy_mgmt--;
		if (!st)
			ct_apply_mgmt(z, o->zone, o->zsa);
		break;
	case CT_DWRITE:
		if (!st)
			for (uint32_t i = 0; i < o->nlb; i++)
				ct.dtag[o->slba + i] = o->id << 16 | i;
		break;
	case CT_FLUSH:
		break;
	}
	if (!st && ct.power)
		ct_acked_power(o, cqe);
	if (st && o->kind != CT_ZMGMT && o->kind != CT_ZWRITE && o->kind != CT_APPEND) {
		ct_fail("operation %" PRIu64 " (kind %d) failed: status %#x", o->id, o->kind, st);
	}
	/* Writes the model chose are valid: only the zone's limits may refuse them (Too Many
	 * Open Zones when explicitly opened zones hold every open resource). */
	if (st && (o->kind == CT_ZWRITE || o->kind == CT_APPEND) && st != NVME_SC_TOO_MANY_OPEN_ZONES)
		ct_fail("zone write %" PRIu64 " failed: status %#x", o->id, st);
	o->used = false;
}

/* Takes every CQE present on every queue. */
static int ct_reap(void)
{
	struct nvme_cqe cqe;
	int n = 0;

	for (uint16_t q = 0; q <= CT_QUEUES; q++) {
		while (nvme_host_reap(&ct.h, q, &cqe) == 1) {
			if (ct.aop.busy && ct.aop.qid == q && ct.aop.cid == cqe.cid) {
				ct_adm_acked(&cqe);
				n++;
				continue;
			}
			for (unsigned int i = 0; i < CT_SLOTS; i++) {
				struct ct_op *o = &ct.ops[i];

				if (o->used && !o->acked && o->qid == q && o->cid == cqe.cid) {
					ct_acked(o, &cqe);
					break;
				}
			}
			n++;
		}
	}
	return n;
}

/* Whether a conventional write of [slba, +nlb) overlaps one in flight. */
static bool ct_dwrite_busy(uint64_t slba, uint32_t nlb)
{
	for (unsigned int i = 0; i < CT_SLOTS; i++) {
		struct ct_op *o = &ct.ops[i];

		if (o->used && o->kind == CT_DWRITE && slba < o->slba + o->nlb &&
		    o->slba < slba + nlb)
			return true;
	}
	return false;
}

/* Picks and submits one random operation the model allows. false when none was found. */
static bool ct_submit_one(void)
{
	struct ct_op *o = ct_slot();
	struct nvme_sqe sqe = {0};
	uint32_t r = (uint32_t)ct_below(100), zi = (uint32_t)ct_below(CT_NZONES);
	struct ct_zone *z = &ct.z[zi];
	uint64_t zend = ct_zslba(zi) + CT_ZCAP;
	int cid;

	if (!o)
		return false;
	ct_op_clear(o);
	o->id = ++ct.next_id;
	o->zone = zi;
	o->nsid = 1;
	o->qid = (uint16_t)(1 + ct_below(CT_QUEUES));
	if (r < 30) {
		/* A write at the write pointer: alone in its zone. */
		if (z->busy_mgmt || z->busy_write || z->busy_appends || z->st == CT_F)
			return false;
		o->kind = CT_ZWRITE;
		o->slba = z->wp;
		o->nlb = (uint32_t)(1 + ct_below(CT_MAX_NLB));
		if (o->slba + o->nlb > zend)
			o->nlb = (uint32_t)(zend - o->slba);
		z->busy_write++;
	} else if (r < 55) {
		/* Appends: several at once in a zone. */
		uint64_t room = zend - z->wp - z->appends_reserved;

		if (z->busy_mgmt || z->busy_write || z->st == CT_F || !room)
			return false;
		o->kind = CT_APPEND;
		o->slba = ct_zslba(zi);
		o->nlb = (uint32_t)(1 + ct_below(room < CT_MAX_NLB ? room : CT_MAX_NLB));
		z->busy_appends++;
		z->appends_reserved += o->nlb;
	} else if (r < 70) {
		static const uint8_t acts[] = {NVME_ZSA_OPEN, NVME_ZSA_CLOSE, NVME_ZSA_FINISH,
					       NVME_ZSA_RESET, NVME_ZSA_RESET};

		if (z->busy_mgmt || z->busy_write || z->busy_appends)
			return false;
		o->kind = CT_ZMGMT;
		o->zsa = acts[ct_below(sizeof(acts))];
		o->slba = ct_zslba(zi);
		z->busy_mgmt++;
	} else if (r < 84) {
		/* The admin strand: firmware, saved features, pool namespaces, reservations. */
		return ct_adm_submit();
	} else if (r < 92) {
		o->kind = CT_DWRITE;
		o->nsid = 2;
		o->nlb = (uint32_t)(1 + ct_below(CT_MAX_NLB));
		o->slba = ct_below(CT_DBLOCKS - o->nlb);
		if (ct_dwrite_busy(o->slba, o->nlb))
			return false;
	} else if (ct.power && r >= 97 && !(ct.aop.busy && ct.aop.qid == 0)) {
		/* The volatile write cache turned off (flushing it) or on again, synchronously. */
		sqe.cdw0.bits.opc = NVME_ADM_SET_FEATURES;
		sqe.cdw10 = NVME_FEAT_VOLATILE_WC;
		sqe.cdw11 = ct.vwc_off ? 1 : 0;
		sqe.cdw15 = ++ct.pel_token;
		if (ct_cmd(0, &sqe)) {
			ct_fail("Set Features Volatile Write Cache %u failed", sqe.cdw11);
			return false;
		}
		ct.pel_acked = sqe.cdw15;
		if (!ct.vwc_off) {
			/* Everything acknowledged before is durable now, zones included. */
			for (uint32_t b = 0; b < CT_DBLOCKS; b++)
				ct_durable_block(b, ct.dtag[b]);
			for (uint32_t i = 0; i < CT_NZONES; i++)
				if (ct.z[i].wp > ct.zdur[i])
					ct.zdur[i] = ct.z[i].wp;
		}
		/* A write in flight may run after the cache is on again: only FUA is sure. */
		for (unsigned int i = 0; ct.vwc_off && i < CT_SLOTS; i++)
			ct.ops[i].durable = ct.ops[i].fua;
		ct.vwc_off = !ct.vwc_off;
		return false;
	} else {
		o->kind = CT_FLUSH;
		o->nsid = ct_below(3) == 0 ? NVME_NSID_ALL : (uint32_t)(1 + ct_below(2));
	}
	switch (o->kind) {
	case CT_ZWRITE:
	case CT_APPEND:
	case CT_DWRITE:
		nvme_host_rw_sqe(&sqe, o->kind == CT_APPEND ? NVME_CMD_ZONE_APPEND : NVME_CMD_WRITE,
				 o->nsid, o->slba, o->nlb);
		for (uint32_t i = 0; i < o->nlb; i++)
			ct_block_fill(o->buf + i * CT_BS, o->id << 16 | i);
		if (nvme_host_build_prps(&ct.h, &sqe, o->iova, o->nlb * CT_BS)) {
			ct_fail("PRPs");
			return false;
		}
		if (ct_below(4) == 0) {
			sqe.cdw12 |= NVME_RW_FUA;
			o->fua = o->durable = true;
		}
		/* With the cache off every write is durable when acknowledged. */
		o->durable |= ct.vwc_off;
		break;
	case CT_ZMGMT:
		sqe.cdw0.bits.opc = NVME_CMD_ZONE_MGMT_SEND;
		sqe.nsid = 1;
		sqe.cdw10 = (uint32_t)o->slba;
		sqe.cdw11 = (uint32_t)(o->slba >> 32);
		sqe.cdw13 = o->zsa;
		break;
	case CT_FLUSH:
		sqe.cdw0.bits.opc = NVME_CMD_FLUSH;
		sqe.nsid = o->nsid;
		break;
	}
	if (ct.power) {
		for (uint32_t i = 0; i < CT_NZONES; i++) {
			o->zsnap[i] = ct.z[i].wp;
			o->zgsnap[i] = ct.z[i].gen;
		}
		if (o->kind == CT_FLUSH && o->nsid != 1) {
			o->dsnap = malloc(sizeof(ct.dtag));
			if (o->dsnap)
				memcpy(o->dsnap, ct.dtag, sizeof(ct.dtag));
		}
	}
	cid = nvme_host_submit(&ct.h, o->qid, &sqe, false);
	if (cid >= 0 && o->kind == CT_DWRITE && ct.ndlog < sizeof(ct.dlog) / sizeof(ct.dlog[0])) {
		ct.dlog[ct.ndlog].id = o->id;
		ct.dlog[ct.ndlog].slba = o->slba;
		ct.dlog[ct.ndlog++].nlb = o->nlb;
	}
	if (cid < 0) {
		/* The queue is full: undo the model's bookkeeping. */
		if (o->kind == CT_ZWRITE)
			z->busy_write--;
		else if (o->kind == CT_APPEND) {
			z->busy_appends--;
			z->appends_reserved -= o->nlb;
		} else if (o->kind == CT_ZMGMT)
			z->busy_mgmt--;
		return false;
	}
	o->cid = (uint16_t)cid;
	o->used = true;
	return true;
}

/* Works with up to depth operations in flight; submits `kill_at` of them, then kills the
 * daemon a few microseconds later, and takes the CQEs it had posted. */
static void ct_work(unsigned int kill_at, unsigned int depth)
{
	unsigned int submitted = 0, tries = 0;

	while (submitted < kill_at && tries < 100000) {
		unsigned int inflight = 0;

		tries++;
		for (unsigned int i = 0; i < CT_SLOTS; i++)
			inflight += ct.ops[i].used;
		if (inflight < depth && ct_submit_one())
			submitted++;
		else if (!ct_reap())
			usleep(20);
		if (ct.failed)
			return;
	}
	usleep((useconds_t)ct_below(300));
	ct_kill();
	/* What the daemon posted before it died was seen by the host: those CQEs count. */
	ct_reap();
	for (uint32_t zi = 0; zi < CT_NZONES; zi++)
		ct.z[zi].busy_mgmt = ct.z[zi].busy_write = ct.z[zi].busy_appends = 0,
		ct.z[zi].appends_reserved = 0;
}

/* One run: rounds daemon lives on fresh files; power: on nbdkit's writeback cache, each kill a
 * power cut. */
static void ct_run(const char *build, bool power, const char *rounds_env, unsigned int dflt)
{
	const char *env_rounds = getenv(rounds_env), *env_seed = getenv("CRASH_SEED");
	unsigned int rounds = env_rounds ? (unsigned int)atoi(env_rounds) : dflt;
	uint64_t seed = env_seed ? strtoull(env_seed, NULL, 0) : (uint64_t)time(NULL);
	int fd;

	bool keep = ct.keep;

	for (unsigned int i = 0; i < CT_SLOTS; i++)
		ct_op_clear(&ct.ops[i]);
	if (ct.notify_fd > 2)
		close(ct.notify_fd); /* a kept run's (the start-up checks used it) */
	memset(&ct, 0, sizeof(ct));
	ct.keep = keep;
	ct.build = build;
	ct.power = power;
	ct.pid = ct.nbd_pid[0] = ct.nbd_pid[1] = -1;
	ct.rng = seed * 2654435761u + 1;
	fprintf(stderr, "  %s: %u rounds, seed %" PRIu64 "\n", power ? "power loss" : "crash torture",
		rounds, seed);
	snprintf(ct.dir, sizeof(ct.dir), "/tmp/nvme-crash-XXXXXX");
	if (!CHECK(mkdtemp(ct.dir) != NULL))
		return;
	snprintf(ct.sock, sizeof(ct.sock), "%s/cntrl.sock", ct.dir);
	snprintf(ct.rpc, sizeof(ct.rpc), "%s/rpc.sock", ct.dir);
	snprintf(ct.cfg, sizeof(ct.cfg), "%s/config.json", ct.dir);
	snprintf(ct.zimg, sizeof(ct.zimg), "%s/zoned.img", ct.dir);
	snprintf(ct.dimg, sizeof(ct.dimg), "%s/data.img", ct.dir);
	snprintf(ct.zstate, sizeof(ct.zstate), "%s/zoned.state", ct.dir);
	snprintf(ct.zsock, sizeof(ct.zsock), "%s/zoned.nbd", ct.dir);
	snprintf(ct.dsock, sizeof(ct.dsock), "%s/data.nbd", ct.dir);
	snprintf(ct.pimg, sizeof(ct.pimg), "%s/pool.img", ct.dir);
	snprintf(ct.cstate, sizeof(ct.cstate), "%s/ctrlr.state", ct.dir);
	snprintf(ct.pel, sizeof(ct.pel), "%s/event.log", ct.dir);
	snprintf(ct.notify, sizeof(ct.notify), "%s/notify.sock", ct.dir);
	ct.notify_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	{
		struct sockaddr_un sa = {.sun_family = AF_UNIX};

		if (!CHECK(strlen(ct.notify) < sizeof(sa.sun_path)))
			return;
		memcpy(sa.sun_path, ct.notify, strlen(ct.notify) + 1);
		if (!CHECK(ct.notify_fd >= 0 &&
			   bind(ct.notify_fd, (struct sockaddr *)&sa, sizeof(sa)) == 0))
			return;
	}
	snprintf(ct.ptpl, sizeof(ct.ptpl), "%s/ns2.ptpl", ct.dir);
	fd = open(ct.pimg, O_CREAT | O_WRONLY, 0600);
	CHECK(fd >= 0 && ftruncate(fd, (off_t)CT_POOL_BLOCKS * 512) == 0);
	close(fd);
	fd = open(ct.zimg, O_CREAT | O_WRONLY, 0600);
	CHECK(fd >= 0 && ftruncate(fd, (off_t)CT_ZBLOCKS * CT_BS) == 0);
	close(fd);
	fd = open(ct.dimg, O_CREAT | O_WRONLY, 0600);
	CHECK(fd >= 0 && ftruncate(fd, (off_t)CT_DBLOCKS * CT_BS) == 0);
	close(fd);
	if (!CHECK(ct_write_config() == 0))
		return;
	for (uint32_t zi = 0; zi < CT_NZONES; zi++) {
		ct.z[zi] = (struct ct_zone){.st = CT_E, .wp = ct_zslba(zi)};
		ct.zdur[zi] = ct_zslba(zi);
	}
	for (unsigned int round = 0; round < rounds && !ct.failed; round++) {
		uint64_t t0 = ct_now_us(), t1;
		int rc = ct_start(round);

		t1 = ct_now_us();
		ct.us_start += t1 - t0;

		if (rc) {
			ct_fail("round %u: the daemon did not come up: %s", round, strerror(-rc));
			ct_show_log(round);
			break;
		}
		if (round)
			ct_verify();
		else if (ct_adm_read(&ct.adm) == 0)
			ct_adm_show("the device's state when new", &ct.adm);
		t0 = ct_now_us();
		ct.us_verify += t0 - t1;
		if (ct.failed) {
			fprintf(stderr, "  round %u (seed %" PRIu64 ")\n", round, seed);
			ct_show_log(round);
			ct_show_log(round + 1);
			break;
		}
		ct_work((unsigned int)(1 + ct_below(60)), (unsigned int)(1 + ct_below(CT_SLOTS)));
		ct_detach();
		ct.us_work += ct_now_us() - t0;
	}
	ct_kill();
	ct_detach();
	fprintf(stderr,
		"  %u rounds, %" PRIu64 " kills, %" PRIu64 " operations acknowledged and checked, %" PRIu64
		" in doubt at a kill (%" PRIu64 " zone operations found whole, %" PRIu64
		" absent, none half), %" PRIu64 " blocks read back",
		rounds, ct.kills, ct.acked, ct.in_doubt, ct.whole, ct.absent, ct.checked_blocks);
	if (power)
		fprintf(stderr, ", %" PRIu64 " acknowledged blocks never flushed and lost", ct.lost);
	if (power)
		fprintf(stderr, ", event log: %" PRIu64 " unsynced bytes lost in %" PRIu64
			" cuts, last Set Features token acknowledged %u", ct.pel_cut, ct.pel_cuts,
			ct.pel_acked);
	fprintf(stderr, "\n  time per round: %" PRIu64 " us starting the daemon and attaching, %" PRIu64
		" us checking, %" PRIu64 " us working (%" PRIu64 " us of it killing the daemon)",
		ct.us_start / (rounds ? rounds : 1), ct.us_verify / (rounds ? rounds : 1),
		ct.us_work / (rounds ? rounds : 1), ct.us_kill / (rounds ? rounds : 1));
	fprintf(stderr, "\n  admin strand acknowledged: %" PRIu64 " firmware commits, %" PRIu64
		" Set Features SV, %" PRIu64 " namespace creates, %" PRIu64 " deletes, %" PRIu64
		" attaches, %" PRIu64 " detaches, %" PRIu64 " Formats, %" PRIu64
		" reservation registers (PTPL), %" PRIu64 " unregisters, %" PRIu64 " acquires, %" PRIu64
		" releases; in doubt at a kill: %" PRIu64 " found whole, %" PRIu64 " absent\n",
		ct.adm_acked[CT_A_FW], ct.adm_acked[CT_A_FEAT], ct.adm_acked[CT_A_CREATE],
		ct.adm_acked[CT_A_DELETE], ct.adm_acked[CT_A_ATTACH], ct.adm_acked[CT_A_DETACH],
		ct.adm_acked[CT_A_FORMAT], ct.adm_acked[CT_A_REG], ct.adm_acked[CT_A_UNREG],
		ct.adm_acked[CT_A_ACQUIRE], ct.adm_acked[CT_A_RELEASE], ct.adm_doubt_whole,
		ct.adm_doubt_absent);
	/* The backend really loses what was not flushed: else this run proves nothing. */
	if (power && rounds >= 5 && !ct.failed && !CHECK(ct.lost > 0))
		fprintf(stderr, "  nbdkit's writeback cache lost nothing: no power loss was simulated\n");
	CHECK(!ct.failed);
	if (!ct.keep) {
		close(ct.notify_fd);
		ct.notify_fd = -1;
	}
	if (!ct.failed && !ct.keep) {
		char cmd[128];

		snprintf(cmd, sizeof(cmd), "rm -rf %s", ct.dir);
		if (system(cmd) != 0)
			fprintf(stderr, "  cannot remove %s\n", ct.dir);
	}
}

static void test_crash_torture(const char *build)
{
	ct_run(build, false, "CRASH_ROUNDS", strstr(build, "asan") ? 60 : 100);
}

static void test_power_loss(const char *build)
{
	ct_run(build, true, "POWER_ROUNDS", strstr(build, "asan") ? 15 : 40);
}

/* Reads a whole file into *buf. Its length, or -1. */
static ssize_t ct_slurp(const char *path, char **buf)
{
	struct stat st;
	ssize_t n = -1;
	int fd = open(path, O_RDONLY);

	*buf = NULL;
	if (fd < 0)
		return -1;
	if (!fstat(fd, &st) && (*buf = malloc((size_t)st.st_size + 1)))
		n = pread(fd, *buf, (size_t)st.st_size, 0);
	close(fd);
	return n;
}

static bool ct_spew(const char *path, const char *buf, size_t len)
{
	int fd = open(path, O_WRONLY | O_TRUNC);
	bool ok = fd >= 0 && write(fd, buf, len) == (ssize_t)len;

	if (fd >= 0)
		close(fd);
	return ok;
}

/* Something was done to the files (what): the daemon must refuse to start, with a message naming
 * file and saying why (expect). */
static void ct_expect_refusal(const char *what, const char *file, const char *expect)
{
	char *log = NULL, logpath[160];
	ssize_t ln;
	int rc;

	rc = ct_start(0);
	snprintf(logpath, sizeof(logpath), "%s/daemon-0.log", ct.dir);
	ln = ct_slurp(logpath, &log);
	if (log && ln >= 0)
		log[ln] = 0;
	fprintf(stderr, "  %s: %s\n", what,
		rc == -ESRCH ? "the daemon refused to start" : "the daemon started");
	/* The message names the file (a pool: its bdev, whose file the log names). */
	if (!CHECK(rc == -ESRCH) || !CHECK(log && strstr(log, file) && strstr(log, expect))) {
		fprintf(stderr, "  expected a refusal naming %s: %s\n", file, expect);
		ct_show_log(0);
	} else {
		const char *l = strstr(log, expect);

		while (l > log && l[-1] != '\n')
			l--;
		fprintf(stderr, "  %.*s\n", (int)(strchrnul(l, '\n') - l), l);
	}
	ct_kill();
	ct_detach();
	free(log);
}

/* The zone state file belongs to its image: the data file carries the state file's image id as
 * a stamp (an extended attribute); with another stamp (the state file put next to another image
 * of the same geometry), or none (an image copied without its attributes), it is refused. */
static void ct_stamp_checks(void)
{
	static const char name[] = "user.nvme_emu.zone_stamp";
	char keep[32], what[200];
	ssize_t kn = getxattr(ct.zimg, name, keep, sizeof(keep));

	if (!CHECK(kn == 16)) {
		fprintf(stderr, "  %s: no zone stamp (%s)\n", ct.zimg, kn < 0 ? strerror(errno) : "");
		return;
	}
	fprintf(stderr, "  %s carries %s %.16s\n", ct.zimg, name, keep);
	if (CHECK(setxattr(ct.zimg, name, "0123456789abcdef", 16, 0) == 0)) {
		snprintf(what, sizeof(what), "%s stamped by another state file", ct.zimg);
		ct_expect_refusal(what, ct.zstate, "made for another image");
	}
	if (CHECK(removexattr(ct.zimg, name) == 0)) {
		snprintf(what, sizeof(what), "%s without its stamp", ct.zimg);
		ct_expect_refusal(what, ct.zstate, "carries no stamp");
	}
	CHECK(setxattr(ct.zimg, name, keep, 16, 0) == 0);
}

/* A state file cut to len bytes (a full disk): the daemon must refuse to start, with a message
 * naming the file and saying why (expect); the file put back, it starts again. */
static void ct_refused(const char *file, off_t len, const char *expect)
{
	char *keep = NULL, what[200];
	ssize_t n = ct_slurp(file, &keep);

	if (!CHECK(n > len))
		goto out;
	if (!CHECK(truncate(file, len) == 0))
		goto out;
	snprintf(what, sizeof(what), "%s cut to %lld bytes", file, (long long)len);
	ct_expect_refusal(what, file, expect);
	CHECK(ct_spew(file, keep, (size_t)n));
out:
	free(keep);
}

/* The start-up checks: a short torture leaves state in every file, each is damaged in turn
 * and refused, then all put back the device comes up with exactly the state it had. */
static void test_startup_checks(const char *build)
{
	const char *env_rounds = getenv("STARTUP_ROUNDS");
	char cmd[160];

	if (env_rounds && atoi(env_rounds) < 2) {
		fprintf(stderr, "  STARTUP_ROUNDS below 2: no state to damage, skipped\n");
		return;
	}
	ct.keep = true;
	ct_run(build, false, "STARTUP_ROUNDS", 12);
	ct.keep = false;
	if (ct.failed)
		return;
	ct_refused(ct.zstate, 100, "zone state file");
	ct_refused(ct.zstate, 8192, "zone state file");
	ct_stamp_checks();
	ct_refused(ct.cstate, 10, "controller state file");
	ct_refused(ct.pimg, 4u << 20, "namespace pool header is for 7340032 bytes");
	if (access(ct.ptpl, F_OK) == 0)
		ct_refused(ct.ptpl, 5, "not a reservation state");
	/* The event log is a journal: a torn last record is dropped, the daemon starts. */
	{
		struct stat st;

		if (CHECK(stat(ct.pel, &st) == 0 && st.st_size > 8 + 24) &&
		    CHECK(truncate(ct.pel, st.st_size - 3) == 0)) {
			CHECK(ct_start(1) == 0);
			fprintf(stderr, "  %s cut by 3 bytes: the daemon started\n", ct.pel);
			ct_kill();
			ct_detach();
		}
	}
	/* Everything back: the state the torture left, whole. */
	if (CHECK(ct_start(1) == 0))
		ct_verify();
	ct_kill();
	ct_detach();
	CHECK(!ct.failed);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", ct.dir);
	if (!ct.failed && system(cmd) != 0)
		fprintf(stderr, "  cannot remove %s\n", ct.dir);
}

/* Two programs of this file, each within make test's time for a suite: nvme_crash_test runs
 * the crash torture, nvme_powerloss_test the power-loss run and the start-up checks. */
int main(int argc, char **argv)
{
	const char *build = argc > 1 ? argv[1] : "build";
	const char *me = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];

	if (strstr(me, "powerloss")) {
		itest_run("power_loss", test_power_loss, build);
		itest_run("startup_checks", test_startup_checks, build);
	} else {
		itest_run("crash_torture", test_crash_torture, build);
	}
	return itest_summary();
}
