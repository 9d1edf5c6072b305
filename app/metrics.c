/* app/metrics.c - the target's metrics as a Prometheus text exposition, and the exporter's
 * lifetime (--metrics, nvmf_emu_metrics_start/stop). Everything is read on the main thread from
 * counters their owner threads keep (relaxed loads, readers' sums): rendering a scrape takes no
 * lock a poll group takes and sends no poll group a message. docs/service.md lists the metrics. */
#include "app/app_internal.h"
#include "app/metrics_http.h"
#include "app/prom_text.h"
#include "common/evloop.h"
#include "common/lat_hist.h"
#include "common/log.h"
#include "controller/ctrlr_iostat.h"
#include "transport/pcie.h"
#include "dpa/dpa.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define METRICS_PREFIX "nvme_emu_"

/* The exported histogram buckets: merged window buckets (lat_hist.h), per octave
 * `buckets_per_octave` of them (a divisor of 16), from 1.024 us up, then +Inf. */
struct metrics_buckets {
	unsigned int n;
	double le[LAT_HIST_WIN_BUCKETS];	/* seconds */
	unsigned char to[LAT_HIST_WIN_BUCKETS]; /* window bucket -> exported one */
};

static void metrics_buckets_init(struct metrics_buckets *b, unsigned int per_octave)
{
	unsigned int step = LAT_HIST_SUB / per_octave;

	b->n = 0;
	for (unsigned int w = 0; w < LAT_HIST_WIN_BUCKETS; w++) {
		bool edge;

		b->to[w] = (unsigned char)b->n;
		if (w == 0 || w == LAT_HIST_WIN_BUCKETS - 1) {
			edge = true;
		} else {
			unsigned int sub = (LAT_HIST_WIN_LO + w - 1) & (LAT_HIST_SUB - 1);

			edge = (sub + 1) % step == 0;
		}
		if (edge)
			b->le[b->n++] = lat_hist_win_upper_ns(w) / 1e9;
	}
}

/* One render: the families used and the labels of the object at hand. */
struct metrics_ctx {
	struct app_target *t;
	struct prom_doc *doc;
	struct metrics_buckets buckets;
	bool per_queue;
	/* The controller whose blocks ctrlr_iostat_foreach is walking. */
	const char *nqn;
	uint16_t cntlid;
	/* Without per_queue: its blocks summed by NSID. */
	struct ctrlr_iostat *by_ns[CTRLR_MAX_NAMESPACES + 1];
	int rc;
};

static struct prom_fam *metrics_fam(struct metrics_ctx *m, const char *name, enum prom_type type,
				    const char *help)
{
	char full[128];

	snprintf(full, sizeof(full), METRICS_PREFIX "%s", name);
	return prom_fam(m->doc, full, type, help);
}

static void metrics_u64(struct metrics_ctx *m, const char *name, enum prom_type type,
			const char *help, const struct prom_labels *l, uint64_t v)
{
	prom_u64(metrics_fam(m, name, type, help), l, v);
}

static void metrics_seconds(struct metrics_ctx *m, const char *name, const char *help,
			    const struct prom_labels *l, uint64_t us)
{
	prom_double(metrics_fam(m, name, PROM_COUNTER, help), l, (double)us / 1e6);
}

/* Counters and gauges of one object, as a table: the values come in the same order. */
struct metrics_def {
	const char *name;
	enum prom_type type;
	const char *help;
};

static void metrics_emit(struct metrics_ctx *m, const struct prom_labels *l,
			 const struct metrics_def *defs, const uint64_t *vals, size_t n)
{
	for (size_t i = 0; i < n; i++)
		metrics_u64(m, defs[i].name, defs[i].type, defs[i].help, l, vals[i]);
}

#define METRICS_N(a) (sizeof(a) / sizeof((a)[0]))

/* ---- the process ---- */

/* The usual process_* metrics, from /proc/self (Linux). */
static void metrics_process(struct metrics_ctx *m)
{
	unsigned long long utime, stime, start, vsize;
	long long rss;
	double ticks = (double)sysconf(_SC_CLK_TCK), btime = 0;
	char buf[1024], *p;
	FILE *f = fopen("/proc/self/stat", "re");
	struct rlimit rl;
	unsigned long fds = 0;
	DIR *d;

	if (f) {
		size_t n = fread(buf, 1, sizeof(buf) - 1, f);

		fclose(f);
		buf[n] = '\0';
		/* After "pid (comm)": comm may hold spaces and parentheses, the last ')' ends it.
		 */
		p = strrchr(buf, ')');
		if (p && sscanf(p + 2,
				"%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %*d %*d "
				"%*d %*d %*d %*d %llu %llu %lld",
				&utime, &stime, &start, &vsize, &rss) == 5) {
			FILE *s = fopen("/proc/stat", "re");

			while (s && fgets(buf, sizeof(buf), s))
				if (sscanf(buf, "btime %lf", &btime) == 1)
					break;
			if (s)
				fclose(s);
			prom_double(prom_fam(m->doc, "process_cpu_seconds_total", PROM_COUNTER,
					     "User and system CPU time spent in seconds."),
				    NULL, (double)(utime + stime) / ticks);
			prom_double(
			    prom_fam(m->doc, "process_start_time_seconds", PROM_GAUGE,
				     "Start time of the process since unix epoch in seconds."),
			    NULL, btime + (double)start / ticks);
			prom_u64(prom_fam(m->doc, "process_virtual_memory_bytes", PROM_GAUGE,
					  "Virtual memory size in bytes."),
				 NULL, vsize);
			prom_u64(prom_fam(m->doc, "process_resident_memory_bytes", PROM_GAUGE,
					  "Resident memory size in bytes."),
				 NULL,
				 (uint64_t)(rss > 0 ? rss : 0) * (uint64_t)sysconf(_SC_PAGESIZE));
		}
	}
	d = opendir("/proc/self/fd");
	if (d) {
		while (readdir(d))
			fds++;
		closedir(d);
		/* ".", ".." and the directory's own fd are not open files of ours. */
		prom_u64(prom_fam(m->doc, "process_open_fds", PROM_GAUGE,
				  "Number of open file descriptors."),
			 NULL, fds > 3 ? fds - 3 : 0);
	}
	if (!getrlimit(RLIMIT_NOFILE, &rl))
		prom_u64(prom_fam(m->doc, "process_max_fds", PROM_GAUGE,
				  "Maximum number of open file descriptors."),
			 NULL, rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX : rl.rlim_cur);
}

static const struct metrics_def metrics_http_defs[] = {
    {"metrics_http_connections_total", PROM_COUNTER,
     "Connections to the metrics endpoint: served."},
    {"metrics_http_rejected_connections_total", PROM_COUNTER,
     "Connections to the metrics endpoint closed at once (too many open)."},
    {"metrics_http_timeouts_total", PROM_COUNTER,
     "Metrics endpoint connections closed by a timeout (slow or idle clients)."},
};

static void metrics_daemon(struct metrics_ctx *m)
{
	struct app_target *t = m->t;
	struct prom_labels l;
	struct timespec ts;

	prom_labels_reset(&l);
	prom_label(&l, "version", APP_VERSION);
	metrics_u64(m, "build_info", PROM_GAUGE, "nvme-emu's version (always 1).", &l, 1);
	prom_labels_reset(&l);
	prom_label(&l, "result", "success");
	metrics_u64(
	    m, "config_reloads_total", PROM_COUNTER,
	    "Configuration reloads (systemctl reload, SIGHUP, nvmf_emu_reload_config), by result.",
	    &l, t->svc.reloads_ok);
	prom_labels_reset(&l);
	prom_label(&l, "result", "failure");
	metrics_u64(m, "config_reloads_total", PROM_COUNTER, "", &l, t->svc.reloads_failed);
	prom_labels_reset(&l);
	prom_label(&l, "thread", "main");
	if (!clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts))
		prom_double(
		    metrics_fam(
			m, "thread_cpu_seconds_total", PROM_COUNTER,
			"CPU time of the daemon's threads (busy time; a spinning poll group "
			"is busy too)."),
		    &l, (double)ts.tv_sec + (double)ts.tv_nsec / 1e9);
	metrics_seconds(m, "thread_sleep_seconds_total",
			"Time the threads spent asleep waiting for events (idle time).", &l,
			evloop_sleep_us(t->loop));
	if (t->metrics.http) {
		struct metrics_http_stats st;
		static const char *const classes[] = {NULL, NULL, "2xx", NULL, "4xx", "5xx"};

		metrics_http_get_stats(t->metrics.http, &st);
		prom_labels_reset(&l);
		metrics_emit(m, &l, metrics_http_defs,
			     (const uint64_t[]){st.connections, st.rejected, st.timeouts},
			     METRICS_N(metrics_http_defs));
		for (unsigned int c = 2; c < 6; c++) {
			if (!classes[c])
				continue;
			prom_labels_reset(&l);
			prom_label(&l, "code", classes[c]);
			metrics_u64(m, "metrics_http_responses_total", PROM_COUNTER,
				    "Metrics endpoint responses by status class.", &l,
				    st.responses[c]);
		}
	}
}

/* ---- the transport: poll groups and DPA harts ---- */

static const struct metrics_def metrics_pg_defs[] = {
    {"poll_group_wakeups_total", PROM_COUNTER, "Poll group wake-ups by a queue's event fd."},
    {"poll_group_sqes_total", PROM_COUNTER, "Submission queue entries the poll group fetched."},
    {"poll_group_doorbell_messages_total", PROM_COUNTER,
     "Doorbell values the DPA threads handed to the poll group."},
    {"poll_group_backend_polls_total", PROM_COUNTER,
     "Polls of backend channels with I/O in flight."},
    {"poll_group_interrupt_requests_total", PROM_COUNTER,
     "Interrupts the poll group asked its DPA threads to raise."},
    {"poll_group_queues", PROM_GAUGE, "I/O submission and completion queues the poll group owns."},
};

static const struct metrics_def metrics_hart_defs[] = {
    {"dpa_hart_activations_total", PROM_COUNTER, "DPA program runs on the hart."},
    {"dpa_hart_doorbell_completions_total", PROM_COUNTER,
     "Doorbell completions the hart's programs fetched."},
    {"dpa_hart_msix_raised_total", PROM_COUNTER, "MSI-X interrupts the hart raised."},
};

static void metrics_transport(struct metrics_ctx *m)
{
	struct app_target *t = m->t;
	struct prom_labels l;

	if (!t->has_transport)
		return;
	prom_labels_reset(&l);
	prom_label(&l, "trtype", t->tr.trtype[0] ? t->tr.trtype : APP_TRTYPE);
	prom_label(&l, "doorbells", hw_db_mode_name(t->tr.db_mode));
	prom_label(&l, "dpa", dpa_num_harts(t->dpa) ? "harts" : "fused");
	prom_label(&l, "profile", t->tr.profile->name);
	metrics_u64(
	    m, "transport_info", PROM_GAUGE,
	    "The transport: doorbell delivery (mmap or trap), DPA threads fused into the poll "
	    "groups or on harts, platform profile (always 1).",
	    &l, 1);
	for (unsigned int i = 0; i < pcie_poll_groups_count(t->pgs); i++) {
		struct pcie_poll_group_stats st;
		char name[32];

		pcie_poll_group_get_stats(t->pgs, i, &st);
		snprintf(name, sizeof(name), "poll-group%u", i);
		prom_labels_reset(&l);
		prom_label(&l, "thread", name);
		prom_double(metrics_fam(m, "thread_cpu_seconds_total", PROM_COUNTER, ""), &l,
			    (double)st.cpu_us / 1e6);
		metrics_seconds(m, "thread_sleep_seconds_total", "", &l, st.sleep_us);
		prom_labels_reset(&l);
		prom_label_u64(&l, "poll_group", i);
		metrics_emit(m, &l, metrics_pg_defs,
			     (const uint64_t[]){st.wakeups, st.sqes, st.db_msgs, st.bdev_polls,
						st.irqs, st.sqs + st.cqs},
			     METRICS_N(metrics_pg_defs));
		if (dpa_num_harts(t->dpa) == 0)
			prom_double(
			    metrics_fam(m, "poll_group_poll_window_seconds", PROM_GAUGE,
					"The adaptive doorbell polling window (fused DPA)."),
			    &l, (double)st.poll_window_us / 1e6);
	}
	for (unsigned int i = 0; i < dpa_num_harts(t->dpa); i++) {
		struct dpa_stats st;

		if (dpa_hart_get_stats(t->dpa, i, &st))
			continue;
		prom_labels_reset(&l);
		prom_label_u64(&l, "hart", i);
		metrics_emit(m, &l, metrics_hart_defs,
			     (const uint64_t[]){st.activations, st.db_completions, st.msix_raised},
			     METRICS_N(metrics_hart_defs));
		metrics_seconds(m, "dpa_hart_sleep_seconds_total", "Time the hart spent asleep.",
				&l, st.asleep_us);
	}
	prom_labels_reset(&l);
	metrics_u64(m, "dpa_fused_eventfd_wakes_total", PROM_COUNTER,
		    "Fused DPA: thread wake-ups that went through an event fd.", &l,
		    dpa_fused_eventfd_wakes(t->dpa));
}

/* ---- controllers ---- */

static void metrics_ctrl_labels(const struct metrics_ctx *m, struct prom_labels *l)
{
	prom_labels_reset(l);
	prom_label(l, "subsystem", m->nqn);
	prom_label_u64(l, "cntlid", m->cntlid);
}

static void metrics_iostat_emit(struct metrics_ctx *m, const struct prom_labels *base,
				const struct ctrlr_iostat *st)
{
	struct prom_labels l;
	uint64_t counts[LAT_HIST_WIN_BUCKETS];

	for (unsigned int c = 0; c < CTRLR_IO_NR_CLASSES; c++) {
		if (!st->cmds[c])
			continue;
		l = *base;
		prom_label(&l, "opclass", ctrlr_io_class_name(c));
		metrics_u64(
		    m, "io_commands_total", PROM_COUNTER,
		    "Commands completed (any status), by class: read, write (Write, Zone Append), "
		    "flush, other I/O, admin (NSID 0: no namespace).",
		    &l, st->cmds[c]);
	}
	if (st->cmds[CTRLR_IO_READ] || st->cmds[CTRLR_IO_WRITE]) {
		l = *base;
		prom_label(&l, "direction", "read");
		metrics_u64(m, "io_bytes_total", PROM_COUNTER,
			    "Data moved by successful reads and writes, in bytes.", &l,
			    st->bytes_read);
		l = *base;
		prom_label(&l, "direction", "write");
		metrics_u64(m, "io_bytes_total", PROM_COUNTER, "", &l, st->bytes_written);
	}
	for (unsigned int k = 0; k < CTRLR_ERR_NR; k++) {
		if (!st->errors[k])
			continue;
		l = *base;
		prom_label(&l, "status", ctrlr_err_kind_name(k));
		metrics_u64(m, "io_errors_total", PROM_COUNTER,
			    "Commands completed with an error, by NVMe status.", &l, st->errors[k]);
	}
	for (unsigned int c = 0; c < CTRLR_LAT_NR; c++) {
		uint64_t total = 0;

		memset(counts, 0, sizeof(counts));
		for (unsigned int w = 0; w < LAT_HIST_WIN_BUCKETS; w++) {
			counts[m->buckets.to[w]] += st->lat[c][w];
			total += st->lat[c][w];
		}
		if (!total)
			continue;
		l = *base;
		prom_label(&l, "opclass", ctrlr_lat_class_name(c));
		prom_histogram(
		    metrics_fam(m, "io_latency_seconds", PROM_HISTOGRAM,
				"Command latency in the device, from the poll round that "
				"fetched the command to the one that completed it, by class: "
				"read, write, other."),
		    &l, m->buckets.le, counts, m->buckets.n, (double)st->lat_sum_ns[c] / 1e9);
	}
}

static void metrics_iostat_add(struct ctrlr_iostat *sum, const struct ctrlr_iostat *st)
{
	uint64_t *d = (uint64_t *)sum;
	const uint64_t *s = (const uint64_t *)st;

	for (size_t i = 0; i < sizeof(*st) / sizeof(uint64_t); i++)
		d[i] += s[i];
}

static void metrics_iostat_one(void *arg, uint16_t qid, uint32_t nsid,
			       const struct ctrlr_iostat *st)
{
	struct metrics_ctx *m = arg;
	struct prom_labels l;

	if (m->per_queue) {
		metrics_ctrl_labels(m, &l);
		prom_label_u64(&l, "nsid", nsid);
		prom_label_u64(&l, "qid", qid);
		metrics_iostat_emit(m, &l, st);
		return;
	}
	if (!m->by_ns[nsid]) {
		m->by_ns[nsid] = calloc(1, sizeof(*m->by_ns[nsid]));
		if (!m->by_ns[nsid]) {
			m->rc = -ENOMEM;
			return;
		}
	}
	metrics_iostat_add(m->by_ns[nsid], st);
}

static const struct metrics_def metrics_ctrl_defs[] = {
    {"controller_enabled", PROM_GAUGE, "CSTS.RDY: the host enabled the controller."},
    {"controller_io_queues", PROM_GAUGE, "I/O submission queues the host created."},
    {"interrupts_raised_total", PROM_COUNTER, "MSI-X interrupts the controller raised."},
    {"interrupts_coalesced_total", PROM_COUNTER,
     "Completions that raised no interrupt of their own: they shared one with others, or the "
     "host took them before one was due."},
    {"interrupt_depth_waits_total", PROM_COUNTER,
     "Interrupts held while the host kept submitting up to its queue depth."},
    {"completion_queue_full_holds_total", PROM_COUNTER,
     "Completions held back by a full completion queue."},
    {"invalid_doorbell_writes_total", PROM_COUNTER,
     "Doorbell writes with an invalid queue or value."},
    {"async_events_total", PROM_COUNTER, "Asynchronous events reported to the host."},
    {"media_errors_total", PROM_COUNTER,
     "Media and data integrity errors (the SMART log's count)."},
};

/* The function's side: what its client (the VMM) did over the socket. */
static const struct metrics_def metrics_vfu_defs[] = {
    {"vfio_user_clients_attached_total", PROM_COUNTER,
     "vfio-user clients (VMMs) that attached to the function."},
    {"vfio_user_disconnects_total", PROM_COUNTER, "vfio-user clients that went away."},
    {"vfio_user_bad_messages_total", PROM_COUNTER, "vfio-user messages refused as malformed."},
    {"vfio_user_dma_maps_total", PROM_COUNTER, "DMA windows the client mapped."},
    {"vfio_user_dma_unmaps_total", PROM_COUNTER, "DMA windows the client unmapped."},
    {"dma_faults_total", PROM_COUNTER,
     "Guest memory windows that lost their memory under an access (the client was dropped)."},
    {"doorbell_writes_trapped_total", PROM_COUNTER,
     "Doorbell writes that reached the daemon as vfio-user messages (trapped doorbells)."},
};

static void metrics_controller(struct metrics_ctx *m, struct app_subsys *s, struct app_listener *ln)
{
	struct ctrlr *c = pcie_ctrlr_core(ln->pc);
	struct hw_dev_stats hs;
	struct ctrlr_stats st;
	struct prom_labels l;
	uint16_t qids[1024];
	int nq;

	m->nqn = s->nqn;
	m->cntlid = ln->cntlid;
	ctrlr_get_stats(c, &st);
	hw_dev_get_stats(pcie_ctrlr_dev(ln->pc), &hs);
	metrics_ctrl_labels(m, &l);
	prom_label(&l, "function", ln->fn->vuid);
	prom_label(&l, "socket", ln->fn->socket_path ? ln->fn->socket_path : "");
	prom_label(&l, "serial", s->serial);
	metrics_u64(m, "controller_info", PROM_GAUGE,
		    "A controller (one per listener: a function's vfio-user socket) (always 1).",
		    &l, 1);
	metrics_ctrl_labels(m, &l);
	metrics_emit(
	    m, &l, metrics_ctrl_defs,
	    (const uint64_t[]){st.enabled, st.io_sqs, st.irqs_raised,
			       st.irq_cqes > st.irqs_raised ? st.irq_cqes - st.irqs_raised : 0,
			       st.irq_depth_waits, st.cq_full_holds, st.invalid_db_writes,
			       st.aer_sent, st.media_errors},
	    METRICS_N(metrics_ctrl_defs));
	{
		static const char *const kinds[] = {"reset", "shutdown", "flr"};
		uint64_t v[] = {st.resets > st.flrs ? st.resets - st.flrs : 0, st.shutdowns,
				st.flrs};

		for (unsigned int k = 0; k < 3; k++) {
			metrics_ctrl_labels(m, &l);
			prom_label(&l, "kind", kinds[k]);
			metrics_u64(
			    m, "controller_resets_total", PROM_COUNTER,
			    "Controller resets (CC.EN cleared), shutdowns (CC.SHN) and function "
			    "level resets.",
			    &l, v[k]);
		}
	}
	metrics_ctrl_labels(m, &l);
	metrics_emit(m, &l, metrics_vfu_defs,
		     (const uint64_t[]){hs.clients_attached, hs.disconnects, hs.bad_messages,
					hs.dma_maps, hs.dma_unmaps, hs.dma_faults, hs.db_writes},
		     METRICS_N(metrics_vfu_defs));
	nq = ctrlr_get_sq_ids(c, qids, (int)(sizeof(qids) / sizeof(qids[0])));
	for (int i = 0; i < nq; i++) {
		uint32_t out;

		if (ctrlr_get_sq_outstanding(c, qids[i], &out))
			continue;
		metrics_ctrl_labels(m, &l);
		prom_label_u64(&l, "qid", qids[i]);
		metrics_u64(m, "queue_outstanding_commands", PROM_GAUGE,
			    "Commands fetched from the submission queue and not completed yet.", &l,
			    out);
	}
	memset(m->by_ns, 0, sizeof(m->by_ns));
	if (ctrlr_iostat_foreach(c, metrics_iostat_one, m))
		m->rc = -ENOMEM;
	for (uint32_t nsid = 0; nsid <= CTRLR_MAX_NAMESPACES; nsid++) {
		if (!m->by_ns[nsid])
			continue;
		metrics_ctrl_labels(m, &l);
		prom_label_u64(&l, "nsid", nsid);
		metrics_iostat_emit(m, &l, m->by_ns[nsid]);
		free(m->by_ns[nsid]);
		m->by_ns[nsid] = NULL;
	}
}

static void metrics_namespaces(struct metrics_ctx *m, struct app_subsys *s)
{
	for (unsigned int i = 0; i < CTRLR_MAX_NAMESPACES; i++) {
		struct app_ns *ns = s->ns[i];
		struct bdev *b = ns ? bdev_lookup(ns->bdev_name) : NULL;
		struct bdev_info info;
		struct prom_labels l;

		if (!b)
			continue;
		bdev_get_info(b, &info);
		prom_labels_reset(&l);
		prom_label(&l, "subsystem", s->nqn);
		prom_label_u64(&l, "nsid", ns->nsid);
		metrics_u64(m, "namespace_size_bytes", PROM_GAUGE, "A namespace's capacity.", &l,
			    info.num_blocks * info.block_size);
		prom_label(&l, "bdev", ns->bdev_name);
		metrics_u64(m, "namespace_info", PROM_GAUGE,
			    "A namespace and its block device (always 1).", &l, 1);
	}
}

/* ---- block devices ---- */

static const struct metrics_def metrics_nbd_defs[] = {
    {"bdev_nbd_connections", PROM_GAUGE, "NBD connections up."},
    {"bdev_nbd_disconnects_total", PROM_COUNTER, "NBD connections lost after their handshake."},
    {"bdev_nbd_reconnects_total", PROM_COUNTER, "NBD connections made again after a loss."},
};

static int metrics_bdev(struct bdev *b, void *arg)
{
	struct metrics_ctx *m = arg;
	static const char *const ops[] = {"read", "write", "flush", "unmap", "write_zeroes"};
	struct bdev_stats st;
	struct bdev_info info;
	struct prom_labels l, base;
	uint64_t v[5];

	bdev_get_info(b, &info);
	bdev_get_stats(b, &st);
	prom_labels_reset(&base);
	prom_label(&base, "bdev", info.name);
	l = base;
	prom_label(&l, "module", info.module_name);
	metrics_u64(m, "bdev_info", PROM_GAUGE, "A block device and its module (always 1).", &l, 1);
	v[0] = st.read_ops;
	v[1] = st.write_ops;
	v[2] = st.flush_ops;
	v[3] = st.unmap_ops;
	v[4] = st.write_zeroes_ops;
	for (unsigned int i = 0; i < 5; i++) {
		l = base;
		prom_label(&l, "op", ops[i]);
		metrics_u64(m, "bdev_ops_total", PROM_COUNTER, "Block device operations completed.",
			    &l, v[i]);
	}
	l = base;
	prom_label(&l, "direction", "read");
	metrics_u64(m, "bdev_bytes_total", PROM_COUNTER,
		    "Bytes read and written on the block device.", &l, st.bytes_read);
	l = base;
	prom_label(&l, "direction", "write");
	metrics_u64(m, "bdev_bytes_total", PROM_COUNTER, "", &l, st.bytes_written);
	metrics_u64(m, "bdev_errors_total", PROM_COUNTER, "Block device operations that failed.",
		    &base, st.errors);
	metrics_u64(
	    m, "bdev_ops_in_flight", PROM_GAUGE,
	    "Operations submitted to the block device and not completed (RBD: librbd AIO in "
	    "flight).",
	    &base, bdev_get_outstanding(b));
	if (info.uri)
		metrics_emit(m, &base, metrics_nbd_defs,
			     (const uint64_t[]){info.nbd_connected, info.nbd_disconnects,
						info.nbd_reconnects},
			     METRICS_N(metrics_nbd_defs));
	return 0;
}

int app_metrics_render(struct app_target *t, char **text, size_t *len)
{
	struct metrics_ctx *m = calloc(1, sizeof(*m));
	int rc;

	if (!m)
		return -ENOMEM;
	m->t = t;
	m->per_queue = t->metrics.per_queue;
	metrics_buckets_init(&m->buckets, t->metrics.buckets_per_octave
					      ? t->metrics.buckets_per_octave
					      : APP_METRICS_BUCKETS_PER_OCTAVE);
	m->doc = prom_doc_create();
	if (!m->doc) {
		free(m);
		return -ENOMEM;
	}
	metrics_daemon(m);
	metrics_process(m);
	metrics_transport(m);
	for (struct app_subsys *s = t->subsystems; s; s = s->next) {
		metrics_namespaces(m, s);
		for (struct app_listener *ln = s->listeners; ln; ln = ln->next)
			if (ln->pc && ln->fn)
				metrics_controller(m, s, ln);
	}
	bdev_foreach(metrics_bdev, m);
	rc = m->rc ? m->rc : prom_doc_render(m->doc, text, len);
	prom_doc_destroy(m->doc);
	free(m);
	return rc;
}

/* ---- the exporter ---- */

static int app_metrics_http_render(void *arg, char **body, size_t *len)
{
	return app_metrics_render(arg, body, len);
}

int app_metrics_start(struct app_target *t, const char *addr, unsigned int buckets_per_octave,
		      bool per_queue, char *err)
{
	int rc;

	if (buckets_per_octave &&
	    (buckets_per_octave > LAT_HIST_SUB || LAT_HIST_SUB % buckets_per_octave)) {
		snprintf(err, APP_ERR_LEN, "buckets_per_octave must be 1, 2, 4, 8 or 16");
		return -EINVAL;
	}
	if (t->metrics.http) {
		/* The same request again (a configuration replayed, --metrics and the file
		 * agreeing) is no change. */
		if (!strcmp(metrics_http_requested(t->metrics.http), addr) ||
		    !strcmp(metrics_http_address(t->metrics.http), addr)) {
			t->metrics.buckets_per_octave = buckets_per_octave;
			t->metrics.per_queue = per_queue;
			return 0;
		}
		snprintf(err, APP_ERR_LEN, "the metrics are served on %s already (stop it first)",
			 metrics_http_address(t->metrics.http));
		return -EEXIST;
	}
	rc = metrics_http_create(t->loop, addr, app_metrics_http_render, t, &t->metrics.http, err,
				 APP_ERR_LEN);
	if (rc)
		return rc;
	t->metrics.buckets_per_octave = buckets_per_octave;
	t->metrics.per_queue = per_queue;
	LOG_INFO(APP_LOG, "metrics on http://%s/metrics", metrics_http_address(t->metrics.http));
	return 0;
}

void app_metrics_stop(struct app_target *t)
{
	if (!t->metrics.http)
		return;
	LOG_INFO(APP_LOG, "metrics on %s stopped", metrics_http_address(t->metrics.http));
	metrics_http_destroy(t->metrics.http);
	t->metrics.http = NULL;
}
