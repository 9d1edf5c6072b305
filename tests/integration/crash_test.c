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
 * carries its operation's tag, so a read tells which operation put it there.
 *
 * The power-loss run does the same on NBD exports served by nbdkit's cache filter in writeback
 * mode, a real backend that keeps unflushed writes in its cache and loses them when it is killed:
 * each round kills nbdkit and the daemon together, as a power cut, and the zone state file is
 * told of a reboot (its boot id changes), so the zones come from their last checkpoint. Then
 * only what was made durable must be there: writes before an acknowledged Flush, writes with
 * FUA or with the volatile write cache off (and those before it was turned off), zone
 * management commands; what the zones claim must be written.
 * CRASH_ROUNDS (default 100; 40 on an ASan build), POWER_ROUNDS (default 40; 15), CRASH_SEED
 * (default: the time). */
#include "tests/integration/nvme_itest.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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

static struct {
	const char *build;
	char dir[64], sock[128], rpc[128], cfg[128], zimg[128], dimg[128], zstate[128];
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
	uint64_t rbuf_iova;
	uint8_t *rbuf;
	/* figures */
	uint64_t acked, in_doubt, whole, absent, checked_blocks, kills;
	bool failed;
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
	fprintf(f,
		"{\"method\":\"bdev_zone_block_create\",\"params\":{\"name\":\"z0\",\"base_bdev\":"
		"\"zbase\",\"zone_capacity\":%u,\"optimal_open_zones\":1,\"max_open_zones\":4,"
		"\"state_file\":\"%s\"}}]},"
		"{\"subsystem\":\"nvmf\",\"config\":["
		"{\"method\":\"nvmf_create_transport\",\"params\":{\"trtype\":\"PCIE_EMU\"}},"
		"{\"method\":\"nvmf_create_subsystem\",\"params\":{\"nqn\":\"%s\","
		"\"serial_number\":\"CRASH0001\"}},"
		"{\"method\":\"nvmf_subsystem_add_ns\",\"params\":{\"nqn\":\"%s\",\"namespace\":"
		"{\"bdev_name\":\"z0\",\"nsid\":1}}},"
		"{\"method\":\"nvmf_subsystem_add_ns\",\"params\":{\"nqn\":\"%s\",\"namespace\":"
		"{\"bdev_name\":\"d0\",\"nsid\":2}}},"
		"{\"method\":\"nvmf_subsystem_add_listener\",\"params\":{\"nqn\":\"%s\","
		"\"listen_address\":{\"trtype\":\"PCIE_EMU\",\"traddr\":\"%s\"}}}]}]}\n",
		CT_ZCAP, ct.zstate, CT_NQN, CT_NQN, CT_NQN, CT_NQN, ct.sock);
	return fclose(f) ? -errno : 0;
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

/* Starts the daemon on the files and attaches the host: controller enabled with every command
 * set, CT_QUEUES I/O queue pairs. */
static int ct_start(unsigned int round)
{
	char log[128], prog[256];
	struct stat st;
	int rc;

	unlink(ct.sock);
	unlink(ct.rpc);
	if (ct.power && ((rc = ct_nbd_start(0, ct.zsock, ct.zimg)) ||
			 (rc = ct_nbd_start(1, ct.dsock, ct.dimg))))
		return rc;
	snprintf(prog, sizeof(prog), "%s/bin/nvme-emu", ct.build);
	snprintf(log, sizeof(log), "%s/daemon-%u.log", ct.dir, round % 2);
	ct.pid = fork();
	if (ct.pid < 0)
		return -errno;
	if (ct.pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execl(prog, prog, "-r", ct.rpc, "-c", ct.cfg, "-m", "2", (char *)NULL);
		_exit(127);
	}
	/* A hang guard only: the daemon normally listens within a second. */
	for (int i = 0; i < 3000 && stat(ct.sock, &st); i++) {
		if (!ct_alive())
			return -ESRCH;
		usleep(10000);
	}
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
	ct.rbuf_iova = nvme_host_alloc(&ct.h, 64 * 1024, (void **)&ct.rbuf);
	for (unsigned int i = 0; i < CT_SLOTS; i++)
		ct.ops[i].iova = nvme_host_alloc(&ct.h, CT_MAX_NLB * CT_BS, (void **)&ct.ops[i].buf);
	return ct.rbuf_iova ? 0 : -ENOMEM;
}

static void ct_kill(void)
{
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
	if (ct.power) {
		/* The page cache went too: the zone state file was written by an earlier boot. */
		int fd = open(ct.zstate, O_WRONLY);

		if (fd >= 0) {
			if (pwrite(fd, "00000000-0000-0000-0000-000000000000", 36, 48) != 36)
				ct_fail("cannot mark the zone state file rebooted");
			close(fd);
		}
	}
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

/* Reads nlb blocks of nsid at slba into ct.rbuf (64 KiB at most). */
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
	for (uint64_t off = 0; off < CT_ZCAP; off += 128) {
		uint32_t n = CT_ZCAP - off < 128 ? (uint32_t)(CT_ZCAP - off) : 128;

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

/* The conventional namespace: every block holds what the model says, or, inside a write in
 * doubt, that write's block (one block is the unit of atomicity: AWUPF 0). */
static void ct_verify_data(void)
{
	for (uint64_t off = 0; off < CT_DBLOCKS; off += 128) {
		if (ct_read(2, off, 128)) {
			ct_fail("data namespace: read failed");
			return;
		}
		for (uint32_t b = 0; b < 128; b++) {
			uint64_t lba = off + b, tag = ct_block_tag(ct.rbuf + b * CT_BS);
			/* After a power loss: what was durable, or anything acknowledged since. */
			bool ok = tag == ct.dtag[lba] || (ct.power && tag == ct.ddur[lba]);

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

	for (uint16_t q = 1; q <= CT_QUEUES; q++) {
		while (nvme_host_reap(&ct.h, q, &cqe) == 1) {
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
	} else if (r < 92) {
		o->kind = CT_DWRITE;
		o->nsid = 2;
		o->nlb = (uint32_t)(1 + ct_below(CT_MAX_NLB));
		o->slba = ct_below(CT_DBLOCKS - o->nlb);
		if (ct_dwrite_busy(o->slba, o->nlb))
			return false;
	} else if (ct.power && r >= 97) {
		/* The volatile write cache turned off (flushing it) or on again, synchronously. */
		sqe.cdw0.bits.opc = NVME_ADM_SET_FEATURES;
		sqe.cdw10 = NVME_FEAT_VOLATILE_WC;
		sqe.cdw11 = ct.vwc_off ? 1 : 0;
		if (ct_cmd(0, &sqe)) {
			ct_fail("Set Features Volatile Write Cache %u failed", sqe.cdw11);
			return false;
		}
		if (!ct.vwc_off) {
			/* Everything acknowledged before is durable now, zones included. */
			for (uint32_t b = 0; b < CT_DBLOCKS; b++)
				ct_durable_block(b, ct.dtag[b]);
			for (uint32_t i = 0; i < CT_NZONES; i++)
				if (ct.z[i].wp > ct.zdur[i])
					ct.zdur[i] = ct.z[i].wp;
		}
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
			o->durable = true;
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

	for (unsigned int i = 0; i < CT_SLOTS; i++)
		ct_op_clear(&ct.ops[i]);
	memset(&ct, 0, sizeof(ct));
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
		int rc = ct_start(round);

		if (rc) {
			ct_fail("round %u: the daemon did not come up: %s", round, strerror(-rc));
			ct_show_log(round);
			break;
		}
		if (round)
			ct_verify();
		if (ct.failed) {
			fprintf(stderr, "  round %u (seed %" PRIu64 ")\n", round, seed);
			ct_show_log(round);
			ct_show_log(round + 1);
			break;
		}
		ct_work((unsigned int)(1 + ct_below(60)), (unsigned int)(1 + ct_below(CT_SLOTS)));
		ct_detach();
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
	fprintf(stderr, "\n");
	/* The backend really loses what was not flushed: else this run proves nothing. */
	if (power && rounds >= 5 && !ct.failed && !CHECK(ct.lost > 0))
		fprintf(stderr, "  nbdkit's writeback cache lost nothing: no power loss was simulated\n");
	CHECK(!ct.failed);
	if (!ct.failed) {
		char cmd[128];

		snprintf(cmd, sizeof(cmd), "rm -rf %s", ct.dir);
		if (system(cmd) != 0)
			fprintf(stderr, "  cannot remove %s\n", ct.dir);
	}
}

static void test_crash_torture(const char *build)
{
	ct_run(build, false, "CRASH_ROUNDS", strstr(build, "asan") ? 40 : 100);
}

static void test_power_loss(const char *build)
{
	ct_run(build, true, "POWER_ROUNDS", strstr(build, "asan") ? 15 : 40);
}

int main(int argc, char **argv)
{
	const char *build = argc > 1 ? argv[1] : "build";

	itest_run("crash_torture", test_crash_torture, build);
	itest_run("power_loss", test_power_loss, build);
	return itest_summary();
}
