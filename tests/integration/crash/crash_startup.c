/* tests/integration/crash/crash_startup.c - the start-up checks: state files cut short are
 * refused by name, the event log repaired, the device back with its state. */
#include "tests/integration/crash/crash.h"

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

/* The controller state file exists once something saved went into it: a torture whose admin
 * strand drew no firmware commit and no Set Features SV (a short one, on a loaded machine) left
 * none, so one saved Arbitration is set here, acknowledged and put in the model, before the
 * file is damaged (once the restart has settled what the last kill left in doubt). */
static void ct_saved_feature(void)
{
	struct stat st;
	struct nvme_sqe sqe = {0};
	uint32_t arb = 0x00010203u; /* HPW 0, MPW 1, LPW 2, AB 3 */

	if (stat(ct.cstate, &st) == 0 && st.st_size > 10)
		return;
	if (!CHECK(ct_start(1) == 0))
		goto out;
	ct_verify(); /* settles what was in doubt at the torture's last kill */
	sqe.cdw0.bits.opc = NVME_ADM_SET_FEATURES;
	sqe.cdw10 = NVME_FEAT_ARBITRATION | 1u << 31;
	sqe.cdw11 = arb;
	if (CHECK(ct_cmd(0, &sqe) == 0))
		ct.adm.arb = arb;
	fprintf(stderr, "  no saved controller state yet: Arbitration %#x set with SV\n", arb);
out:
	ct_kill();
	ct_detach();
}

/* The start-up checks: a short torture leaves state in every file, each is damaged in turn
 * and refused, then all put back the device comes up with exactly the state it had. */
void test_startup_checks(const char *build)
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
	ct_saved_feature();
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
