/* tests/perf/cluster_bench.c - `make bench` part "cluster" (cluster-bench.sh starts the Ceph
 * cluster and the image): N nvme-emu daemons (N "hosts") export one RBD image with
 * shared_reservations, for N = 1 .. max. For each N:
 *  - the reservation change latency: host 0 replaces its key `changes` times, one at a time; each
 *    change completes once every other daemon applied it (median, p90, p99, max);
 *  - contended changes: every host replaces its key at once, round after round (changes per
 *    second over all hosts, and the time of a round);
 *  - aggregate I/O: nvme-emu-perf on a second function of every daemon at once, 4 KiB random
 *    reads, then writes, QD 32, `secs` seconds (IOPS summed).
 * Prints one JSON object per N (a line starting with "{") and a human line.
 * Usage: cluster_bench BUILD_DIR POOL/IMAGE MAX_DAEMONS CHANGES SECS */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "controller/nvme_spec.h"
#include "tests/integration/rados/resv_host.h"

#define MAX_DAEMONS 8

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static double pct(const uint64_t *v, unsigned int n, double p)
{
	unsigned int i = (unsigned int)(p * (n - 1) + 0.5);

	return n ? (double)v[i] : 0;
}

/* nvme-emu-perf against every daemon's second function at once; the IOPS summed (-1: failed). */
static double perf_all(const char *build, struct resv_host *h, unsigned int n, const char *wl,
		       unsigned int secs)
{
	pid_t pid[MAX_DAEMONS];
	char out[MAX_DAEMONS][64], prog[256], t[16];
	double sum = 0;
	bool ok = true;

	snprintf(prog, sizeof(prog), "%s/bin/nvme-emu-perf", build);
	snprintf(t, sizeof(t), "%u", secs);
	for (unsigned int i = 0; i < n; i++) {
		snprintf(out[i], sizeof(out[i]), "/tmp/.cluster-bench-%d-%u.json", (int)getpid(), i);
		pid[i] = fork();
		if (pid[i] == 0) {
			FILE *f = freopen(out[i], "w", stdout);

			if (!f)
				_exit(126);
			execl(prog, prog, "-s", h[i].perf_fn, "-w", wl, "-q", "32", "-o", "4096",
			      "-t", t, "-j", (char *)NULL);
			_exit(127);
		}
	}
	for (unsigned int i = 0; i < n; i++) {
		int st = 0;
		char buf[8192] = "", *p;
		FILE *f;

		if (pid[i] < 0 || waitpid(pid[i], &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st)) {
			ok = false;
			continue;
		}
		f = fopen(out[i], "r");
		if (!f) {
			ok = false;
			continue;
		}
		if (!fread(buf, 1, sizeof(buf) - 1, f))
			ok = false;
		fclose(f);
		unlink(out[i]);
		p = strstr(buf, "\"iops\":");
		if (!p) {
			ok = false;
			continue;
		}
		sum += strtod(p + 7, NULL);
	}
	return ok ? sum : -1;
}

int main(int argc, char **argv)
{
	static struct resv_host h[MAX_DAEMONS];
	const char *build, *slash;
	char pool[64], image[128];
	unsigned int max, changes, secs;
	int failed = 0, passed = 0;

	if (argc < 6 || !(slash = strchr(argv[2], '/')) || slash - argv[2] >= (long)sizeof(pool)) {
		fprintf(stderr, "usage: cluster_bench BUILD_DIR POOL/IMAGE MAX_DAEMONS CHANGES SECS\n");
		return 2;
	}
	build = argv[1];
	memcpy(pool, argv[2], (size_t)(slash - argv[2]));
	pool[slash - argv[2]] = 0;
	snprintf(image, sizeof(image), "%s", slash + 1);
	max = (unsigned int)atoi(argv[3]);
	changes = (unsigned int)atoi(argv[4]);
	secs = (unsigned int)atoi(argv[5]);
	if (!max || max > MAX_DAEMONS || changes < 2 || !secs) {
		fprintf(stderr, "cluster_bench: 1 <= MAX_DAEMONS <= %d, CHANGES >= 2, SECS >= 1\n",
			MAX_DAEMONS);
		return 2;
	}
	for (unsigned int n = 1; n <= max; n++) {
		uint64_t *lat = calloc(changes, sizeof(*lat)), key, t0, rounds_us;
		unsigned int rounds = changes / n > 0 ? changes / n : 1, up = 0;
		double rd, wr;
		bool ok = lat != NULL;

		/* N daemons, CNTLIDs 1, 3, 5...: each a host of its own (its Host Identifier). */
		for (up = 0; ok && up < n; up++) {
			char name[16];
			const char *why = "";
			int rc;

			snprintf(name, sizeof(name), "H%u", up);
			rc = resv_host_up(&h[up], build, name, 0x1000 + up, 1 + 2 * up, pool, image,
					  true, &why);
			if (rc) {
				fprintf(stderr, "cluster_bench: daemon %u: %s: %s\n", up, why,
					strerror(-rc));
				resv_host_down(&h[up], true);
				ok = false;
				break;
			}
		}
		for (unsigned int i = 0; ok && i < n; i++)
			ok = resv_host_resv(&h[i], NVME_CMD_RESV_REGISTER, NVME_RREGA_REGISTER, 0,
					    0x100 * (i + 1)) == 0;
		/* 1. One host's changes, one at a time. */
		key = 0x100;
		for (unsigned int c = 0; ok && c < changes; c++) {
			t0 = resv_host_now_us();
			ok = resv_host_resv(&h[0], NVME_CMD_RESV_REGISTER, NVME_RREGA_REPLACE, key,
					    key + 0x10000) == 0;
			lat[c] = resv_host_now_us() - t0;
			key += 0x10000;
		}
		/* 2. Every host at once. */
		t0 = resv_host_now_us();
		for (unsigned int r = 0; ok && r < rounds; r++) {
			int cid[MAX_DAEMONS];

			for (unsigned int i = 0; i < n; i++) {
				uint64_t k = i ? 0x100 * (i + 1) + (uint64_t)r * 0x10000 : key;

				cid[i] = resv_host_resv_submit(&h[i], NVME_CMD_RESV_REGISTER,
							       NVME_RREGA_REPLACE, k, k + 0x10000);
			}
			for (unsigned int i = 0; i < n; i++)
				ok &= resv_host_wait(&h[i], cid[i]) == 0;
			key += 0x10000;
		}
		rounds_us = resv_host_now_us() - t0;
		/* 3. I/O from every daemon's second function. */
		rd = ok ? perf_all(build, h, n, "randread", secs) : -1;
		wr = ok ? perf_all(build, h, n, "randwrite", secs) : -1;
		if (ok && rd >= 0 && wr >= 0) {
			double load[3] = {0};

			qsort(lat, changes, sizeof(*lat), cmp_u64);
			if (getloadavg(load, 3) < 0)
				load[0] = -1;
			printf("{\"daemons\": %u, \"changes\": %u, \"lat_us_p50\": %.0f, "
			       "\"lat_us_p90\": %.0f, \"lat_us_p99\": %.0f, \"lat_us_max\": %.0f, "
			       "\"contended_changes_per_s\": %.1f, \"contended_round_ms\": %.2f, "
			       "\"randread_iops\": %.0f, \"randwrite_iops\": %.0f, \"load\": %.2f}\n",
			       n, changes, pct(lat, changes, 0.5), pct(lat, changes, 0.9),
			       pct(lat, changes, 0.99), (double)lat[changes - 1],
			       rounds * n / (rounds_us / 1e6), rounds_us / 1e3 / rounds, rd, wr,
			       load[0]);
			printf("ok - %u daemon(s): a change seen by all in %.2f ms (p50), %.2f ms "
			       "(p99); %.0f contended changes/s; 4 KiB QD32 %.0f read, %.0f write "
			       "IOPS summed\n",
			       n, pct(lat, changes, 0.5) / 1e3, pct(lat, changes, 0.99) / 1e3,
			       rounds * n / (rounds_us / 1e6), rd, wr);
			passed++;
		} else {
			printf("not ok - %u daemon(s): a step failed (see above)\n", n);
			failed++;
		}
		fflush(stdout);
		for (unsigned int i = 0; i < up; i++) {
			resv_host_resv(&h[i], NVME_CMD_RESV_REGISTER, NVME_RREGA_UNREGISTER | NVME_RESV_IEKEY,
				       0, 0); /* IEKEY: whatever its key is now */
			resv_host_down(&h[i], false);
		}
		free(lat);
	}
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
