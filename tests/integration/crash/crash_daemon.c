/* tests/integration/crash/crash_daemon.c - the daemon of the crash torture: its configuration,
 * start (and nbdkit's in the power-loss run), readiness, the kill or power cut, and the commands
 * the test host sends it. */
#include "tests/integration/crash/crash.h"

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

int ct_write_config(void)
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

uint64_t ct_now_us(void)
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

void ct_show_log(unsigned int round)
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
int ct_start(unsigned int round)
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

void ct_kill(void)
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

void ct_detach(void)
{
	if (ct.c)
		vfu_client_close(ct.c);
	ct.c = NULL;
}

/* ---- commands ---- */

/* A synchronous command on queue qid (verification). Status or -errno. */
int ct_cmd(uint16_t qid, struct nvme_sqe *sqe)
{
	return nvme_host_cmd(&ct.h, qid, sqe, NULL);
}

/* Reads nlb blocks of nsid at slba into ct.rbuf (CT_RBLOCKS at most). */
int ct_read(uint32_t nsid, uint64_t slba, uint32_t nlb)
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

