/* tools/nvme_emu_perf.c - nvme-emu-perf: a native NVMe host over vfio-user that measures a
 * server the way spdk_nvme_perf measures a drive. It connects to a function's socket, shares its
 * own memfd as guest memory, brings the controller up, creates I/O queue pairs and keeps a fixed
 * number of commands in flight on each, polling the completion queues (or sleeping on their
 * MSI-X eventfds), then prints IOPS, MiB/s, latency percentiles and the CPU time client and
 * server spent (the server's pid comes from the socket's SO_PEERCRED). With trapped doorbells,
 * --write-multi sends the doorbell writes of one poll round as one REGION_WRITE_MULTI. Works with
 * any vfio-user NVMe server. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/lat_hist.h"
#include "tools/cli_perf.h"
#include "host/nvme_host.h"

#define PERF_RAM_IOVA 0x100000000ull
#define PERF_MAX_QUEUES 32
#define PERF_MAX_DEPTH 1024
/* Latency histogram: common/lat_hist.h's buckets over the whole range, the ones the daemon's
 * per-namespace histograms use, so the two count the same latency in the same bucket. */
#define PERF_HIST_BUCKETS LAT_HIST_ALL

enum perf_workload { PERF_RANDREAD, PERF_RANDWRITE, PERF_READ, PERF_WRITE, PERF_RW };

struct perf_opts {
	const char *socket;
	uint32_t depth, io_size, seconds, queues, threads, mix, nsid;
	enum perf_workload workload;
	bool interrupts, verify, json, shadow, write_multi;
};

/* One command slot: its buffer (and PRP list), when it was submitted, what it carries. */
struct perf_slot {
	uint64_t iova, list_iova;
	uint8_t *buf;
	uint64_t *list;
	uint64_t lba;
	uint64_t t_submit;
	bool write, busy;
};

struct perf_queue {
	uint16_t qid;
	struct perf_slot *slots; /* depth of them, by cid % depth */
	uint64_t seq_lba, seq_end; /* sequential workloads: the queue's share of the namespace */
	bool filled;		   /* -V -w write: its share was written once */
};

struct perf_thread {
	pthread_t tid;
	struct perf_queue *q[PERF_MAX_QUEUES];
	unsigned int nq;
	uint64_t ios, bytes, errors, verify_errors;
	uint64_t irqs; /* MSI-X signals seen (interrupt mode, one queue per thread) */
	uint64_t hist[PERF_HIST_BUCKETS];
	uint64_t lat_sum_ns, lat_max_ns;
	uint32_t rand;
};

static struct perf_opts opts = {
    .depth = 32, .io_size = 4096, .seconds = 5, .queues = 1, .threads = 1, .mix = 50, .nsid = 1,
};
static struct nvme_host host;
static uint64_t ns_blocks, ns_block_size, deadline_ns;
static volatile int perf_failed;

static uint64_t perf_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint32_t perf_rand(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

/* The pattern a block carries in --verify mode: its LBA, repeated. */
static void perf_fill(uint8_t *buf, uint64_t lba, uint32_t len)
{
	for (uint32_t off = 0; off + 8 <= len; off += 8) {
		uint64_t v = (lba + off / ns_block_size) * 0x9e3779b97f4a7c15ull;

		memcpy(buf + off, &v, 8);
	}
}

static bool perf_check(const uint8_t *buf, uint64_t lba, uint32_t len)
{
	for (uint32_t off = 0; off + 8 <= len; off += 8) {
		uint64_t v = (lba + off / ns_block_size) * 0x9e3779b97f4a7c15ull, got;

		memcpy(&got, buf + off, 8);
		if (got != v)
			return false;
	}
	return true;
}

static bool perf_is_write(struct perf_thread *t)
{
	switch (opts.workload) {
	case PERF_RANDWRITE:
	case PERF_WRITE:
		return true;
	case PERF_RW:
		return perf_rand(&t->rand) % 100 >= opts.mix;
	default:
		return false;
	}
}

static int perf_submit(struct perf_thread *t, struct perf_queue *q, uint16_t cid_slot, bool write,
		       uint64_t lba)
{
	struct perf_slot *s = &q->slots[cid_slot];
	uint32_t nlb = opts.io_size / (uint32_t)ns_block_size;
	struct nvme_sqe sqe;

	if (lba == UINT64_MAX)
		return 0; /* nothing left to write: the slot stays idle */

	nvme_host_rw_sqe(&sqe, write ? NVME_CMD_WRITE : NVME_CMD_READ, opts.nsid, lba, nlb);
	if (nvme_host_build_prps_list(&sqe, s->iova, opts.io_size, s->list, s->list_iova))
		return -EINVAL;
	sqe.cdw0.bits.cid = cid_slot;
	if (write && opts.verify)
		perf_fill(s->buf, lba, opts.io_size);
	s->write = write;
	s->lba = lba;
	s->busy = true;
	s->t_submit = perf_now_ns();
	return nvme_host_sq_put(&host, q->qid, &sqe);
}

static uint64_t perf_next_lba(struct perf_thread *t, struct perf_queue *q)
{
	uint64_t nlb = opts.io_size / ns_block_size, slots = ns_blocks / nlb;

	if (opts.workload == PERF_READ || opts.workload == PERF_WRITE) {
		uint64_t lba = q->seq_lba;

		/* Verifying writes fill the namespace once, each block exactly once. */
		if (opts.verify && opts.workload == PERF_WRITE) {
			if (lba >= q->seq_end) {
				q->filled = true;
				return UINT64_MAX;
			}
			q->seq_lba = lba + nlb;
			return lba;
		}
		q->seq_lba = (q->seq_lba + nlb) % (slots * nlb);
		return lba;
	}
	return (perf_rand(&t->rand) % slots) * nlb;
}

static void perf_complete(struct perf_thread *t, struct perf_queue *q, const struct nvme_cqe *cqe,
			  uint64_t now)
{
	struct perf_slot *s = &q->slots[cqe->cid % opts.depth];
	uint64_t lat = now - s->t_submit;

	s->busy = false;
	if (cqe->status >> 1) {
		t->errors++;
		return;
	}
	if (opts.verify && !s->write && !perf_check(s->buf, s->lba, opts.io_size))
		t->verify_errors++;
	t->ios++;
	t->bytes += opts.io_size;
	t->lat_sum_ns += lat;
	if (lat > t->lat_max_ns)
		t->lat_max_ns = lat;
	t->hist[lat_hist_index(lat)]++;
}

/* Keeps `depth` commands in flight on each of the thread's queues until the deadline, then
 * drains. */
static void *perf_thread_main(void *arg)
{
	struct perf_thread *t = arg;
	/* -V -w write fills the namespace once, however long that takes: no deadline. */
	bool fill = opts.verify && opts.workload == PERF_WRITE;
	bool running = true;
	uint64_t stop_ns = 0;

	for (unsigned int i = 0; i < t->nq; i++) {
		struct perf_queue *q = t->q[i];

		for (uint16_t c = 0; c < opts.depth; c++)
			if (perf_submit(t, q, c, perf_is_write(t), perf_next_lba(t, q)))
				perf_failed = 1;
		nvme_host_sq_ring(&host, q->qid);
	}
	if (nvme_host_db_flush(&host))
		perf_failed = 1;
	for (;;) {
		uint64_t now = perf_now_ns();
		unsigned int busy = 0;

		if (running && ((!fill && now >= deadline_ns) || perf_failed))
			running = false;
		if (running && fill) {
			bool all = true;

			for (unsigned int i = 0; i < t->nq; i++)
				all &= t->q[i]->filled;
			if (all)
				running = false;
		}
		if (!running && !stop_ns)
			stop_ns = now;
		for (unsigned int i = 0; i < t->nq; i++) {
			struct perf_queue *q = t->q[i];
			struct nvme_cqe cqe;
			bool submitted = false, reaped = false;

			while (nvme_host_cq_take(&host, q->qid, &cqe) == 1) {
				uint16_t slot = cqe.cid % opts.depth;

				reaped = true;
				perf_complete(t, q, &cqe, now);
				if (running) {
					if (perf_submit(t, q, slot, perf_is_write(t),
							perf_next_lba(t, q)))
						perf_failed = 1;
					submitted = true;
				}
			}
			if (reaped)
				nvme_host_cq_ring(&host, q->qid);
			if (submitted)
				nvme_host_sq_ring(&host, q->qid);
			for (uint16_t c = 0; c < opts.depth; c++)
				busy += q->slots[c].busy;
		}
		/* --write-multi: every doorbell of this round (CQ heads and SQ tails of all the
		 * thread's queues) in one message. */
		if (nvme_host_db_flush(&host))
			perf_failed = 1;
		if (!running && !busy)
			break;
		if (!running && now > stop_ns + 10ull * 1000000000ull) {
			fprintf(stderr, "nvme-emu-perf: %u commands never completed\n", busy);
			perf_failed = 1;
			break;
		}
		if (opts.interrupts && t->nq == 1) {
			int64_t n = vfu_client_irq_wait(host.c, VFIO_PCI_MSIX_IRQ_INDEX,
							t->q[0]->qid, 100);

			if (n > 0)
				t->irqs += (uint64_t)n;
		}
	}
	return NULL;
}

/* CPU seconds (user + system) of pid from /proc, or of this process when pid is 0. */
static double perf_cpu_seconds(pid_t pid)
{
	char path[64];
	unsigned long ut = 0, st = 0;
	FILE *f;
	int n;

	if (!pid) {
		struct rusage ru;

		getrusage(RUSAGE_SELF, &ru);
		return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec +
		       ru.ru_stime.tv_usec / 1e6;
	}
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	/* Fields 14 and 15, after the parenthesised command name (which may hold spaces). */
	n = fscanf(f, "%*d (%*[^)]) %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st);
	fclose(f);
	return n == 2 ? (double)(ut + st) / (double)sysconf(_SC_CLK_TCK) : -1;
}

static void perf_usage(FILE *out)
{
	cli_opt_help(&perf_cli_prog, out);
}

/* The options, by the table of cli_perf.c. */
static int perf_parse(int argc, char **argv)
{
	static const char *const names[] = {"randread", "randwrite", "read", "write", "rw"};
	struct cli_opt_tables tab;
	int c;

	if (cli_opt_getopt(&perf_cli_prog, &tab)) {
		fprintf(stderr, "nvme-emu-perf: too many options for the parser's table\n");
		return -E2BIG;
	}
	while ((c = getopt_long(argc, argv, tab.shortopts, tab.longopts, NULL)) != -1) {
		char *end = NULL;
		unsigned long v = optarg ? strtoul(optarg, &end, 0) : 0;
		bool num_ok = optarg && *optarg && end && !*end;

		switch (c) {
		case 's':
			opts.socket = optarg;
			break;
		case 'q':
		case 'o':
		case 'M':
		case 't':
		case 'n':
		case 'c':
		case 'N':
			if (!num_ok || v > UINT32_MAX) {
				fprintf(stderr, "nvme-emu-perf: -%c takes a number\n", c);
				return -EINVAL;
			}
			*(c == 'q'   ? &opts.depth
			  : c == 'o' ? &opts.io_size
			  : c == 'M' ? &opts.mix
			  : c == 't' ? &opts.seconds
			  : c == 'n' ? &opts.queues
			  : c == 'c' ? &opts.threads
				     : &opts.nsid) = (uint32_t)v;
			break;
		case 'w': {
			size_t i;

			for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
				if (!strcmp(optarg, names[i]))
					break;
			if (i == sizeof(names) / sizeof(names[0])) {
				fprintf(stderr, "nvme-emu-perf: unknown workload %s\n", optarg);
				return -EINVAL;
			}
			opts.workload = (enum perf_workload)i;
			break;
		}
		case 'I':
			opts.interrupts = true;
			break;
		case 'V':
			opts.verify = true;
			break;
		case 'S':
			opts.shadow = true;
			break;
		case 'W':
			opts.write_multi = true;
			break;
		case 'j':
			opts.json = true;
			break;
		case 'h':
			perf_usage(stdout);
			exit(0);
		default:
			perf_usage(stderr);
			return -EINVAL;
		}
	}
	if (!opts.socket || optind != argc) {
		perf_usage(stderr);
		return -EINVAL;
	}
	if (!opts.depth || opts.depth > PERF_MAX_DEPTH || !opts.queues ||
	    opts.queues > PERF_MAX_QUEUES || !opts.threads || opts.threads > opts.queues ||
	    !opts.seconds || opts.mix > 100 || !opts.io_size || opts.io_size % 512 ||
	    opts.io_size > (1u << 20)) {
		fprintf(stderr, "nvme-emu-perf: bad -q/-n/-c/-t/-M/-o (see --help)\n");
		return -EINVAL;
	}
	return 0;
}

/* The socket's server: its pid by SO_PEERCRED, for its CPU time. */
static pid_t perf_server_pid(void)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);

	if (getsockopt(vfu_client_fd(host.c), SOL_SOCKET, SO_PEERCRED, &cred, &len))
		return 0;
	return cred.pid;
}

int main(int argc, char **argv)
{
	static struct perf_thread threads[PERF_MAX_QUEUES];
	static struct perf_queue queues[PERF_MAX_QUEUES];
	static uint8_t idns[4096];
	uint64_t ram, ios = 0, bytes = 0, errors = 0, verrs = 0, irqs = 0, lat_sum = 0, lat_max = 0;
	uint64_t hist[PERF_HIST_BUCKETS] = {0};
	double cli0, srv0, cli1, srv1, secs;
	struct vfu_client *c;
	uint64_t t0, t1;
	pid_t server;
	int rc;

	if (perf_parse(argc, argv))
		return 2;
	/* Per slot: the data and a PRP list page; plus queues and the host's own pages. */
	ram = (uint64_t)opts.queues * opts.depth * ((opts.io_size + 4095) / 4096 + 1) * 4096 +
	      (uint64_t)opts.queues * 2 * 65536 + (8u << 20);
	c = vfu_client_connect(opts.socket, 5000);
	if (!c) {
		fprintf(stderr, "nvme-emu-perf: cannot connect to %s: %s\n", opts.socket,
			strerror(errno));
		return 1;
	}
	rc = vfu_client_negotiate(c);
	if (!rc)
		rc = vfu_client_ram_create(c, PERF_RAM_IOVA, ram);
	if (!rc)
		/* Vector 0 (the admin CQ's, always interrupt-enabled) gets an eventfd even when
		 * polled, as SPDK's host gives it: a server has somewhere to signal it. */
		rc = nvme_host_init(&host, c, PERF_RAM_IOVA, ram,
				    opts.interrupts ? opts.queues + 1 : 1);
	if (rc) {
		fprintf(stderr, "nvme-emu-perf: vfio-user setup: %s\n", strerror(-rc));
		return 1;
	}
	host.posted = true; /* doorbells as QEMU writes them: no reply awaited */
	if (opts.threads > 1 && !host.db_page) {
		fprintf(stderr, "nvme-emu-perf: -c %u needs mmap doorbells (the server traps them: "
				"every thread would share the socket)\n",
			opts.threads);
		return 2;
	}
	rc = nvme_host_enable(&host, 32);
	if (!rc)
		rc = nvme_host_identify(&host, NVME_CNS_NS, opts.nsid, idns);
	if (rc) {
		fprintf(stderr, "nvme-emu-perf: controller bring-up: %s\n",
			rc < 0 ? strerror(-rc) : "NVMe error");
		return 1;
	}
	{
		const struct nvme_id_ns *id = (const void *)idns;
		uint8_t fmt = id->flbas & 0xf;

		ns_blocks = id->nsze;
		ns_block_size = 1ull << id->lbaf[fmt].lbads;
	}
	if (!ns_blocks || opts.io_size % ns_block_size || opts.io_size > ns_blocks * ns_block_size) {
		fprintf(stderr, "nvme-emu-perf: namespace %u: %" PRIu64 " blocks of %" PRIu64
				": -o %u does not fit\n",
			opts.nsid, ns_blocks, ns_block_size, opts.io_size);
		return 1;
	}
	for (uint32_t i = 0; i < opts.queues; i++) {
		struct perf_queue *q = &queues[i];

		q->qid = (uint16_t)(i + 1);
		rc = nvme_host_create_io_queues(&host, q->qid, (uint16_t)(opts.depth + 1),
						opts.interrupts, (uint16_t)(i + 1));
		if (rc) {
			fprintf(stderr, "nvme-emu-perf: create I/O queue %u: %s\n", q->qid,
				rc < 0 ? strerror(-rc) : "NVMe error (fewer queues or a smaller depth?)");
			return 1;
		}
		q->slots = calloc(opts.depth, sizeof(*q->slots));
		if (!q->slots)
			return 1;
		for (uint32_t s = 0; s < opts.depth; s++) {
			void *p;

			q->slots[s].iova = nvme_host_alloc(&host, opts.io_size, &p);
			q->slots[s].buf = p;
			q->slots[s].list_iova = nvme_host_alloc(&host, 4096, &p);
			q->slots[s].list = p;
			if (!q->slots[s].iova || !q->slots[s].list_iova) {
				fprintf(stderr, "nvme-emu-perf: out of guest memory\n");
				return 1;
			}
		}
		{
			uint64_t nlb = opts.io_size / ns_block_size, per = ns_blocks / nlb / opts.queues;

			q->seq_lba = per * i * nlb;
			q->seq_end = i + 1 == opts.queues ? ns_blocks / nlb * nlb : per * (i + 1) * nlb;
		}
		threads[i % opts.threads].q[threads[i % opts.threads].nq++] = q;
	}
	if (opts.write_multi) {
		rc = nvme_host_db_coalesce(&host, true);
		if (rc) {
			fprintf(stderr, "nvme-emu-perf: --write-multi needs trapped doorbells "
					"and a server offering write_multiple\n");
			return 2;
		}
	}
	if (opts.shadow) {
		rc = nvme_host_dbbuf_enable(&host);
		if (rc) {
			fprintf(stderr, "nvme-emu-perf: Doorbell Buffer Config: %s\n",
				rc < 0 ? strerror(-rc) : "NVMe error (not supported?)");
			return 1;
		}
	}
	server = perf_server_pid();
	cli0 = perf_cpu_seconds(0);
	srv0 = server ? perf_cpu_seconds(server) : -1;
	t0 = perf_now_ns();
	deadline_ns = t0 + (uint64_t)opts.seconds * 1000000000ull;
	for (uint32_t i = 0; i < opts.threads; i++) {
		threads[i].rand = 2463534242u + i * 7919u;
		if (pthread_create(&threads[i].tid, NULL, perf_thread_main, &threads[i]))
			return 1;
	}
	for (uint32_t i = 0; i < opts.threads; i++)
		pthread_join(threads[i].tid, NULL);
	t1 = perf_now_ns();
	cli1 = perf_cpu_seconds(0);
	srv1 = server ? perf_cpu_seconds(server) : -1;
	for (uint32_t i = 0; i < opts.threads; i++) {
		ios += threads[i].ios;
		bytes += threads[i].bytes;
		errors += threads[i].errors;
		verrs += threads[i].verify_errors;
		irqs += threads[i].irqs;
		lat_sum += threads[i].lat_sum_ns;
		if (threads[i].lat_max_ns > lat_max)
			lat_max = threads[i].lat_max_ns;
		for (unsigned int b = 0; b < PERF_HIST_BUCKETS; b++)
			hist[b] += threads[i].hist[b];
	}
	secs = (t1 - t0) / 1e9;
	{
		static const char *const names[] = {"randread", "randwrite", "read", "write", "rw"};
		double iops = ios / secs, mibs = bytes / secs / 1048576.0;
		double mean = ios ? lat_sum / (double)ios / 1000.0 : 0;
		double p50 = lat_hist_quantile_ns(hist, PERF_HIST_BUCKETS, ios, 0.50) / 1000.0;
		double p90 = lat_hist_quantile_ns(hist, PERF_HIST_BUCKETS, ios, 0.90) / 1000.0;
		double p99 = lat_hist_quantile_ns(hist, PERF_HIST_BUCKETS, ios, 0.99) / 1000.0;
		double p999 = lat_hist_quantile_ns(hist, PERF_HIST_BUCKETS, ios, 0.999) / 1000.0;
		double srv_cpu = srv0 >= 0 && srv1 >= 0 ? srv1 - srv0 : -1, cli_cpu = cli1 - cli0;

		if (opts.json) {
			printf("{\"workload\": \"%s\", \"io_size\": %u, \"depth\": %u, \"queues\": %u, "
			       "\"threads\": %u, \"interrupts\": %s, \"doorbells\": \"%s\", "
			       "\"seconds\": %.3f, \"ios\": %" PRIu64 ", \"iops\": %.0f, "
			       "\"mib_s\": %.1f, \"lat_us\": {\"mean\": %.2f, \"p50\": %.2f, "
			       "\"p90\": %.2f, \"p99\": %.2f, \"p99_9\": %.2f, \"max\": %.2f}, "
			       "\"errors\": %" PRIu64
			       ", \"verify_errors\": %" PRIu64 ", \"client_cpu_s\": %.3f, "
			       "\"server_cpu_s\": %.3f, \"server_pid\": %d, "
			       "\"iops_per_server_cpu_s\": %.0f, \"shadow_doorbells\": %s, "
			       "\"irqs\": %" PRIu64 ", \"irqs_per_io\": %.4f, \"write_multi\": %s, "
			       "\"db_writes_coalesced\": %" PRIu64 ", "
			       "\"db_messages\": %" PRIu64 "}\n",
			       names[opts.workload], opts.io_size, opts.depth, opts.queues,
			       opts.threads, opts.interrupts ? "true" : "false",
			       host.db_page ? "mmap" : "trap", secs, ios, iops, mibs, mean, p50,
			       p90, p99, p999, lat_max / 1000.0, errors, verrs, cli_cpu, srv_cpu,
			       (int)server,
			       srv_cpu > 0 ? ios / srv_cpu : 0, opts.shadow ? "true" : "false", irqs,
			       ios ? (double)irqs / (double)ios : 0,
			       opts.write_multi ? "true" : "false", host.db_flushed_writes,
			       host.db_flushes);
		} else {
			printf("nvme-emu-perf: %s %u B, QD %u x %u queue(s), %u thread(s), %s, %s "
			       "doorbells%s%s, %.1f s\n",
			       names[opts.workload], opts.io_size, opts.depth, opts.queues,
			       opts.threads, opts.interrupts ? "interrupts" : "polled",
			       host.db_page ? "mmap" : "trapped", opts.shadow ? " + shadow" : "",
			       opts.write_multi ? " + write_multi" : "", secs);
			printf("  IOPS %.0f  %.1f MiB/s\n", iops, mibs);
			printf("  latency us: mean %.2f  p50 %.2f  p90 %.2f  p99 %.2f  p99.9 %.2f  "
			       "max %.2f\n",
			       mean, p50, p90, p99, p999, lat_max / 1000.0);
			printf("  CPU s: client %.2f  server %.2f (pid %d)  IOPS per server CPU-s %.0f\n",
			       cli_cpu, srv_cpu, (int)server, srv_cpu > 0 ? ios / srv_cpu : 0);
			if (opts.interrupts)
				printf("  interrupts %" PRIu64 "  (%.3f per I/O)\n", irqs,
				       ios ? (double)irqs / (double)ios : 0);
			if (opts.write_multi)
				printf("  doorbells: %" PRIu64 " writes in %" PRIu64 " messages\n",
				       host.db_flushed_writes, host.db_flushes);
			printf("  errors %" PRIu64 "  verify errors %" PRIu64 "\n", errors, verrs);
		}
	}
	nvme_host_shutdown(&host);
	vfu_client_close(c);
	return perf_failed || errors || verrs ? 1 : 0;
}
