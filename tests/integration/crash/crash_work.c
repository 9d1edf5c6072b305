/* tests/integration/crash/crash_work.c - one life of the crash torture: random operations on
 * two queues until the kill; and the rounds of lives. */
#include "tests/integration/crash/crash.h"

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
void ct_run(const char *build, bool power, const char *rounds_env, unsigned int dflt)
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

void test_crash_torture(const char *build)
{
	ct_run(build, false, "CRASH_ROUNDS", strstr(build, "asan") ? 60 : 100);
}

void test_power_loss(const char *build)
{
	ct_run(build, true, "POWER_ROUNDS", strstr(build, "asan") ? 15 : 40);
}

/* Reads a whole file into *buf. Its length, or -1. */
