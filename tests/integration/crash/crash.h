/* tests/integration/crash/crash.h - the crash torture: the real daemon (target mode, configured
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
#ifndef NVME_EMU_TESTS_INTEGRATION_CRASH_CRASH_H
#define NVME_EMU_TESTS_INTEGRATION_CRASH_CRASH_H

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

/* The whole run's state (crash_main.c), shared by the files of the test. */
struct ct_state {
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
};
extern struct ct_state ct;

/* crash_main.c: random numbers, block contents, main */
uint64_t ct_below(uint64_t n);
void ct_block_fill(uint8_t *b, uint64_t tag);
uint64_t ct_block_tag(const uint8_t *b);
uint64_t ct_rand(void);

/* crash_daemon.c: the daemon (and nbdkit) started, killed, restarted; commands */
int ct_cmd(uint16_t qid, struct nvme_sqe *sqe);
void ct_detach(void);
void ct_kill(void);
uint64_t ct_now_us(void);
int ct_read(uint32_t nsid, uint64_t slba, uint32_t nlb);
void ct_show_log(unsigned int round);
int ct_start(unsigned int round);
int ct_write_config(void);

/* crash_admin.c: the admin strand (firmware, features, namespaces, reservations) */
void ct_adm_acked(const struct nvme_cqe *cqe);
int ct_adm_read(struct ct_adm *a);
void ct_adm_show(const char *what, const struct ct_adm *a);
bool ct_adm_submit(void);
void ct_adm_verify(void);

/* crash_verify.c: the model of the zones, and the verification of what a life left */
void ct_apply_mgmt(struct ct_zone *z, uint32_t zi, uint8_t zsa);
void ct_apply_write(struct ct_zone *z, uint32_t zi, uint64_t lba, uint32_t nlb,
		    uint64_t id);
void ct_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void ct_op_clear(struct ct_op *o);
void ct_verify(void);
uint64_t ct_zslba(uint32_t zi);

/* crash_work.c: the work of one life, and the rounds */
void ct_run(const char *build, bool power, const char *rounds_env, unsigned int dflt);
void test_crash_torture(const char *build);
void test_power_loss(const char *build);

/* crash_startup.c: the start-up checks */
void test_startup_checks(const char *build);

#endif
