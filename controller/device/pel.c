/* controller/device/pel.c - the Persistent Event Log (NVMe Base 2.0 5.16.1.14): events encoded as the
 * log carries them (24-byte event header, then the type's data) in a buffer of at most
 * CTRLR_PEL_MAX_BYTES, the oldest dropped first (the header's generation number counts drops).
 * Events recorded (and advertised in the Supported Events Bitmap): SMART / Health Log Snapshot
 * (01h, when a critical warning appears), Firmware Commit (02h), Timestamp Change (03h),
 * Power-on or Reset (04h), NVM Subsystem Hardware Error (05h: Critical Warning Condition,
 * Unsafe Shutdown (with a state file), Controller Fatal Status, Media and Data Integrity
 * Status), Change Namespace (06h, Namespace Management create and delete), Format NVM Start and
 * Completion (07h, 08h), Sanitize Start and Completion (09h, 0Ah), Set Feature (0Bh), Telemetry
 * Log Create (0Ch), Thermal Excursion (0Dh).
 * A host reads it through a context (LSP 1 establishes it from the events so far, 0 reads it,
 * 2 releases it). With a state file (ctrlr_config.pel_file) each event is also appended to it
 * and the next controller created with that file starts from its events, so the log outlives a
 * daemon restart; an admin command completes only once the events added before its end are
 * synced (the syncer, one fdatasync for all that came meanwhile), so a host power loss keeps
 * every event a command the host saw complete logged. File
 * format: "NVMEPEL1", then the events as the log encodes them. Admin thread, except
 * ctrlr_pel_media_error_async. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/file_replace.h"
#include "common/log.h"
#include "controller/device/device.h"

#define CTRLR_PEL_HDR sizeof(struct nvme_pel_hdr)
#define CTRLR_PEL_EV sizeof(struct nvme_pel_event)
#define CTRLR_PEL_MAGIC "NVMEPEL1"
#define CTRLR_PEL_MAGIC_LEN 8
#define CTRLR_PEL_MEDIA_GAP_US 1000000u /* one media error event per second at most */

/* The Timestamp feature's value now (5.27.1.10): what the host set plus the time since, or the
 * time since the controller was created; milliseconds, 48 bits. */
static uint64_t ctrlr_pel_now_ms(const struct ctrlr *ctrlr)
{
	uint64_t now = evloop_now_us();

	if (ctrlr->feat.timestamp_set_us)
		return (ctrlr->feat.timestamp_ms + (now - ctrlr->feat.timestamp_set_us) / 1000) &
		       0xffffffffffffull;
	return ((now - ctrlr->created_us) / 1000) & 0xffffffffffffull;
}

/* ---- the state file ---- */

static void ctrlr_pel_file_failed(struct ctrlr_pel *p, const char *what, int err)
{
	if (!p->file_failed)
		LOG_ERR(CTRLR_LOG, "persistent event log %s: %s: %s (the log goes on in memory)",
			p->path, what, strerror(err));
	p->file_failed = true;
}

/* Replaces the state file with the whole log (magic, events) durably (file_replace: a
 * temporary file synced and renamed, the directory synced) and keeps it open for appends.
 * Start-up and teardown only: it blocks. 0 or -errno. */
static int ctrlr_pel_file_rewrite(struct ctrlr_pel *p)
{
	struct iovec iov[2] = {{.iov_base = CTRLR_PEL_MAGIC, .iov_len = CTRLR_PEL_MAGIC_LEN},
			       {.iov_base = p->buf, .iov_len = p->len}};
	int fd, rc;

	rc = file_replace(p->path, iov, p->len ? 2 : 1);
	if (rc)
		return rc;
	fd = open(p->path, O_WRONLY | O_APPEND | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (p->fd >= 0)
		close(p->fd);
	p->fd = fd;
	p->file_len = CTRLR_PEL_MAGIC_LEN + p->len;
	p->written = p->synced = p->added;
	p->replace_wanted = false;
	return 0;
}

/* Appends the newest n events of buf to the file (those added while it was being replaced).
 * False when the write fell short. */
static bool ctrlr_pel_file_write_newest(struct ctrlr_pel *p, uint64_t n)
{
	size_t off = 0;
	ssize_t w;

	if (n > p->count)
		n = p->count; /* the older ones left the log meanwhile */
	for (uint64_t skip = p->count - n; skip; skip--) {
		struct nvme_pel_event ev;

		memcpy(&ev, p->buf + off, sizeof(ev));
		off += CTRLR_PEL_EV + ev.el;
	}
	if (off == p->len)
		return true;
	w = write(p->fd, p->buf + off, p->len - off);
	if (w != (ssize_t)(p->len - off))
		return false;
	p->file_len += p->len - off;
	return true;
}

/* One event (already in buf at `off`) to the file: appended, unless the file must be replaced
 * first (it holds twice what the log does, or an append fell short and left a torn record):
 * the replacement (pel_sync_kick) carries it. */
static void ctrlr_pel_file_add(struct ctrlr_pel *p, size_t off, size_t len)
{
	ssize_t n;

	if (!p->path)
		return;
	p->added++;
	if (p->file_failed || p->replace_wanted || (p->busy && p->job.op == SYNCER_REPLACE))
		return;
	if (p->fd < 0 || p->file_len + len > 2 * (size_t)CTRLR_PEL_MAX_BYTES) {
		p->replace_wanted = true;
		return;
	}
	n = write(p->fd, p->buf + off, len);
	if (n != (ssize_t)len) {
		p->replace_wanted = true;
		return;
	}
	p->file_len += len;
	p->written = p->added;
}

/* ---- durability: an admin command ends once the events added before its end are synced ---- */

static void ctrlr_pel_sync_kick(struct ctrlr *ctrlr);

/* Admin thread: the syncer's job ended. */
static void ctrlr_pel_synced_msg(void *arg)
{
	struct ctrlr *ctrlr = arg;
	struct ctrlr_pel *p = &ctrlr_dev(ctrlr)->pel;
	struct ctrlr_req *done = NULL, **tail = &done, **pp;
	int rc = p->job.rc;

	p->busy = false;
	if (p->job.op == SYNCER_REPLACE) {
		free(p->snap);
		p->snap = NULL;
		if (!rc) {
			int fd = open(p->path, O_WRONLY | O_APPEND | O_CLOEXEC);

			if (fd < 0) {
				rc = -errno;
			} else {
				if (p->fd >= 0)
					close(p->fd);
				p->fd = fd;
				p->file_len = p->job_len;
				p->synced = p->job_mark;
				/* What came during the replacement, for the next sync. */
				if (ctrlr_pel_file_write_newest(p, p->added - p->job_mark))
					p->written = p->added;
				else
					p->replace_wanted = true;
			}
		}
	} else {
		close(p->job.fd);
		if (!rc)
			p->synced = p->job_mark;
	}
	if (rc)
		ctrlr_pel_file_failed(p, "cannot make durable", -rc);
	/* The completions whose events are durable now (all of them when the file failed: the
	 * log goes on in memory, the command did what it did). */
	for (pp = &p->wait_head; *pp;) {
		struct ctrlr_req *r = *pp;

		if (p->file_failed || r->hold.lba <= p->synced) {
			*pp = r->hold.next;
			r->hold.next = NULL;
			*tail = r;
			tail = &r->hold.next;
		} else {
			pp = &r->hold.next;
		}
	}
	p->wait_tail = NULL;
	for (struct ctrlr_req *r = p->wait_head; r; r = r->hold.next)
		p->wait_tail = r;
	ctrlr_pel_sync_kick(ctrlr);
	while (done) {
		struct ctrlr_req *r = done;

		done = r->hold.next;
		r->hold.next = NULL;
		ctrlr_req_complete(r, r->hold.status);
	}
}

/* Syncer thread. */
static void ctrlr_pel_synced(struct syncer_job *job, int rc)
{
	struct ctrlr *ctrlr = job->arg;

	(void)rc; /* in job->rc */
	ctrlr->ops->admin_post(ctrlr->tctx, &ctrlr_dev(ctrlr)->pel.msg, ctrlr_pel_synced_msg,
			       ctrlr);
}

/* Starts the syncer's next job if a completion waits and none runs: the file replaced whole
 * when it must be, else an fdatasync of what was appended. A job runs only while a completion
 * waits for it, so the admin queue is never idle (nor the controller destroyable) with a job
 * running. */
static void ctrlr_pel_sync_kick(struct ctrlr *ctrlr)
{
	struct ctrlr_pel *p = &ctrlr_dev(ctrlr)->pel;
	int rc;

	if (p->busy || !p->wait_head || p->file_failed)
		return;
	if (p->replace_wanted) {
		p->snap = malloc(CTRLR_PEL_MAGIC_LEN + p->len);
		if (!p->snap) {
			p->job = (struct syncer_job){.op = SYNCER_REPLACE, .rc = -ENOMEM};
			p->busy = true;
			return ctrlr_pel_synced_msg(ctrlr);
		}
		memcpy(p->snap, CTRLR_PEL_MAGIC, CTRLR_PEL_MAGIC_LEN);
		memcpy(p->snap + CTRLR_PEL_MAGIC_LEN, p->buf, p->len);
		p->job_len = CTRLR_PEL_MAGIC_LEN + p->len;
		p->iov[0] = (struct iovec){.iov_base = p->snap, .iov_len = p->job_len};
		p->job = (struct syncer_job){.op = SYNCER_REPLACE,
					     .path = p->path,
					     .iov = p->iov,
					     .iovcnt = 1,
					     .done = ctrlr_pel_synced,
					     .arg = ctrlr};
		p->job_mark = p->added;
		p->replace_wanted = false;
	} else if (p->synced < p->written) {
		/* A duplicate: the file may be replaced (and fd closed) while the job runs. */
		int fd = fcntl(p->fd, F_DUPFD_CLOEXEC, 0);

		p->job = (struct syncer_job){.op = SYNCER_FSYNC,
					     .fd = fd,
					     .done = ctrlr_pel_synced,
					     .arg = ctrlr};
		p->job_mark = p->written;
		if (fd < 0) {
			p->job.rc = -errno;
			p->busy = true;
			return ctrlr_pel_synced_msg(ctrlr);
		}
	} else {
		return;
	}
	p->busy = true;
	rc = syncer_submit(&p->job);
	if (rc) {
		p->job.rc = rc;
		ctrlr_pel_synced_msg(ctrlr);
	}
}

/* The core's end of an admin command (end_fn): held while an event added before it is not
 * durable. */
static bool ctrlr_pel_admin_end(struct ctrlr_req *req, uint16_t *status)
{
	struct ctrlr *ctrlr = req->sq->ctrlr;
	struct ctrlr_pel *p = &ctrlr_dev(ctrlr)->pel;

	if (!p->path || p->file_failed || p->synced >= p->added)
		return false;
	req->hold.status = *status;
	req->hold.lba = p->added;
	req->hold.next = NULL;
	if (p->wait_tail)
		p->wait_tail->hold.next = req;
	else
		p->wait_head = req;
	p->wait_tail = req;
	ctrlr_pel_sync_kick(ctrlr);
	return true;
}

void ctrlr_pel_admin_begin(struct ctrlr_req *req)
{
	if (ctrlr_dev(req->sq->ctrlr)->pel.path)
		req->end_fn = ctrlr_pel_admin_end;
}

/* Appends an encoded event (header + data) to buf, dropping the oldest to make room. */
static void ctrlr_pel_append(struct ctrlr_pel *p, const struct nvme_pel_event *ev,
			     const void *data)
{
	size_t need = CTRLR_PEL_EV + ev->el;

	while (p->len + need > CTRLR_PEL_MAX_BYTES) {
		struct nvme_pel_event old;

		memcpy(&old, p->buf, sizeof(old));
		memmove(p->buf, p->buf + CTRLR_PEL_EV + old.el, p->len - CTRLR_PEL_EV - old.el);
		p->len -= CTRLR_PEL_EV + old.el;
		p->count--;
		p->gen++;
	}
	memcpy(p->buf + p->len, ev, sizeof(*ev));
	if (ev->el)
		memcpy(p->buf + p->len + CTRLR_PEL_EV, data, ev->el);
	p->len += need;
	p->count++;
}

/* Reads the state file's events into the log (a missing or empty file is an empty log; a file
 * that is not an event log is refused, -EINVAL, never overwritten). Whatever does not parse
 * ends the reading (a torn last append): the events before it are kept and the file
 * is rewritten without the rest. The power cycle count goes on from the last Power-on event. */
static int ctrlr_pel_file_load(struct ctrlr_pel *p)
{
	size_t cap = CTRLR_PEL_MAGIC_LEN + 2 * (size_t)CTRLR_PEL_MAX_BYTES + 4096, len = 0, off;
	uint8_t *raw;
	uint32_t pc = 0;
	ssize_t n;
	int fd, rc;

	fd = open(p->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? ctrlr_pel_file_rewrite(p) : -errno;
	raw = malloc(cap);
	if (!raw) {
		close(fd);
		return -ENOMEM;
	}
	while (len < cap && (n = read(fd, raw + len, cap - len)) > 0)
		len += (size_t)n;
	rc = n < 0 ? -errno : 0;
	close(fd);
	if (rc)
		goto out;
	/* An empty file is a new log; anything else must be one of ours (never overwritten). */
	if (!len) {
		len = CTRLR_PEL_MAGIC_LEN;
		memcpy(raw, CTRLR_PEL_MAGIC, len);
	} else if (len < CTRLR_PEL_MAGIC_LEN || memcmp(raw, CTRLR_PEL_MAGIC, CTRLR_PEL_MAGIC_LEN)) {
		LOG_ERR(CTRLR_LOG, "persistent event log %s: not an event log file", p->path);
		rc = -EINVAL;
		goto out;
	}
	for (off = CTRLR_PEL_MAGIC_LEN; off + CTRLR_PEL_EV <= len;) {
		struct nvme_pel_event ev;

		memcpy(&ev, raw + off, sizeof(ev));
		if (!ev.etype || ev.ehl != CTRLR_PEL_EV - 3 ||
		    CTRLR_PEL_EV + ev.el > CTRLR_PEL_MAX_BYTES || off + CTRLR_PEL_EV + ev.el > len)
			break;
		if (ev.etype == NVME_PEL_POWER_ON_RESET && ev.el >= 28)
			memcpy(&pc, raw + off + CTRLR_PEL_EV + 24, 4);
		ctrlr_pel_append(p, &ev, raw + off + CTRLR_PEL_EV);
		off += CTRLR_PEL_EV + ev.el;
	}
	if (off != len)
		LOG_WARN(CTRLR_LOG, "persistent event log %s: %zu bytes after the last whole event "
				    "dropped", p->path, len - off);
	if (pc)
		p->power_cycles = (uint64_t)pc + 1;
	LOG_INFO(CTRLR_LOG, "persistent event log %s: %u event(s) read", p->path, p->count);
	rc = ctrlr_pel_file_rewrite(p);
out:
	free(raw);
	return rc;
}

int ctrlr_pel_init(struct ctrlr *ctrlr)
{
	struct ctrlr_pel *p = &ctrlr_dev(ctrlr)->pel;
	int rc;

	p->fd = -1;
	p->buf = malloc(CTRLR_PEL_MAX_BYTES);
	if (!p->buf)
		return -ENOMEM;
	p->power_cycles = 1;
	if (!ctrlr->cfg.pel_file)
		return 0;
	p->path = strdup(ctrlr->cfg.pel_file);
	if (!p->path)
		return -ENOMEM;
	ctrlr->cfg.pel_file = p->path;
	rc = ctrlr_pel_file_load(p);
	if (rc)
		LOG_ERR(CTRLR_LOG, "persistent event log %s: %s", p->path, strerror(-rc));
	return rc;
}

void ctrlr_pel_fini(struct ctrlr *ctrlr)
{
	struct ctrlr_pel *p = &ctrlr_dev(ctrlr)->pel;

	/* The controller goes (the daemon's power goes) after an enable without a shutdown
	 * notification since: an Unsafe Shutdown, which only a state file carries to the next
	 * life. */
	if (p->path && p->buf && p->enabled_once &&
	    CTRLR_LOAD(ctrlr->cnt.shutdowns) == p->shutdowns_at_enable)
		ctrlr_pel_hw_error(ctrlr, NVME_PEL_HWE_UNSAFE_SHUTDOWN, NULL, 0);
	/* What is not durable yet becomes so (teardown: the caller waits). No job runs: one runs
	 * only while an admin command waits, and the controller goes with its admin queue idle. */
	if (p->path && !p->file_failed && p->buf) {
		int rc = 0;

		if (p->replace_wanted || p->written < p->added)
			rc = ctrlr_pel_file_rewrite(p);
		else if (p->synced < p->written && fdatasync(p->fd))
			rc = -errno;
		if (rc)
			ctrlr_pel_file_failed(p, "cannot make durable", -rc);
	}
	/* The descriptor is only meaningful once a path was taken (init may have failed before). */
	if (p->path && p->fd >= 0)
		close(p->fd);
	free(p->snap);
	p->snap = NULL;
	p->fd = -1;
	free(p->buf);
	free(p->ctx);
	free(p->path);
	p->buf = NULL;
	p->ctx = NULL;
	p->path = NULL;
	ctrlr->cfg.pel_file = NULL;
}

void ctrlr_pel_add(struct ctrlr *ctrlr, uint8_t type, const void *data, uint16_t len)
{
	struct ctrlr_pel *p = &ctrlr_dev(ctrlr)->pel;
	uint8_t reset[44];
	struct nvme_pel_event ev;

	if (!p->buf)
		return;
	if (type == NVME_PEL_POWER_ON_RESET && !data) {
		/* Firmware revision, then one reset information descriptor (this controller):
		 * CNTLID, FA, operation in progress, reserved, controller power cycle, power on
		 * milliseconds, controller timestamp (36 bytes). */
		uint64_t ms = ctrlr_pel_now_ms(ctrlr), pon = (evloop_now_us() - ctrlr->created_us) /
								  1000;
		uint32_t pc = (uint32_t)p->power_cycles;

		memset(reset, 0, sizeof(reset));
		memcpy(reset, ctrlr->fwrev, strnlen(ctrlr->fwrev, 8));
		memcpy(reset + 8, &ctrlr->cfg.cntlid, 2);
		reset[10] = 0; /* no firmware activation in this reset */
		reset[11] = CTRLR_LOAD(ctrlr->cnt.resets) ? 0x2 : 0x0; /* reset : power on */
		memcpy(reset + 24, &pc, 4);
		memcpy(reset + 28, &pon, 8);
		memcpy(reset + 36, &ms, 8);
		data = reset;
		len = sizeof(reset);
	}
	if (CTRLR_PEL_EV + len > CTRLR_PEL_MAX_BYTES)
		return;
	memset(&ev, 0, sizeof(ev));
	ev.etype = type;
	ev.etype_rev = 1;
	ev.ehl = (uint8_t)(CTRLR_PEL_EV - 3);
	ev.cntlid = ctrlr->cfg.cntlid;
	ev.ets = ctrlr_pel_now_ms(ctrlr);
	ev.el = len;
	ctrlr_pel_append(p, &ev, data);
	ctrlr_pel_file_add(p, p->len - CTRLR_PEL_EV - len, CTRLR_PEL_EV + len);
}

static void ctrlr_pel_header(struct ctrlr *ctrlr, struct nvme_pel_hdr *h, size_t events_len,
			     uint32_t count)
{
	struct ctrlr_pel *p = &ctrlr_dev(ctrlr)->pel;
	uint64_t poh = (evloop_now_us() - ctrlr->created_us) / 3600000000ull;

	memset(h, 0, sizeof(*h));
	h->lid = NVME_LOG_PERSISTENT_EVENT;
	h->tnev = count;
	h->tll = CTRLR_PEL_HDR + events_len;
	h->rv = 1;
	h->lhl = (uint16_t)(CTRLR_PEL_HDR - 20); /* the header after its first 20 bytes */
	h->ts = ctrlr_pel_now_ms(ctrlr);
	memcpy(h->poh, &poh, 8);
	h->pcc = p->power_cycles;
	h->vid = ctrlr->cfg.pci_vid;
	h->ssvid = ctrlr->cfg.pci_ssvid;
	ctrlr_copy_padded(h->sn, ctrlr->serial, sizeof(h->sn));
	ctrlr_copy_padded(h->mn, ctrlr->model, sizeof(h->mn));
	snprintf(h->subnqn, sizeof(h->subnqn), "%s", ctrlr->subnqn);
	h->gen = p->gen;
	/* Supported Events Bitmap: bit n = event type n; every type 01h-0Dh is recorded. */
	for (uint8_t t = NVME_PEL_SMART; t <= NVME_PEL_THERMAL; t++)
		h->seb[t / 8] |= (uint8_t)(1u << (t % 8));
}

uint16_t ctrlr_log_pel(struct ctrlr_req *req, uint8_t **out, size_t *len)
{
	struct ctrlr *ctrlr = req->sq->ctrlr;
	struct ctrlr_pel *p = &ctrlr_dev(ctrlr)->pel;
	uint8_t action = (req->sqe.cdw10 >> 8) & 0x7f;
	uint8_t *buf;

	switch (action) {
	case NVME_PEL_ESTABLISH:
		/* A snapshot of the events so far: later events wait for the next context. */
		buf = malloc(CTRLR_PEL_HDR + p->len);
		if (!buf)
			return NVME_SC_INTERNAL;
		ctrlr_pel_header(ctrlr, (struct nvme_pel_hdr *)buf, p->len, p->count);
		memcpy(buf + CTRLR_PEL_HDR, p->buf, p->len);
		free(p->ctx);
		p->ctx = buf;
		p->ctx_len = CTRLR_PEL_HDR + p->len;
		/* fall through */
	case NVME_PEL_READ:
		if (!p->ctx)
			return NVME_SC_CMD_SEQ_ERROR;
		buf = malloc(p->ctx_len);
		if (!buf)
			return NVME_SC_INTERNAL;
		memcpy(buf, p->ctx, p->ctx_len);
		*out = buf;
		*len = p->ctx_len;
		return NVME_SC_SUCCESS;
	case NVME_PEL_RELEASE:
		free(p->ctx);
		p->ctx = NULL;
		p->ctx_len = 0;
		buf = calloc(1, CTRLR_PEL_HDR);
		if (!buf)
			return NVME_SC_INTERNAL;
		*out = buf;
		*len = 0;
		return NVME_SC_SUCCESS;
	default:
		req->error_loc = offsetof(struct nvme_sqe, cdw10) + 1;
		return NVME_SC_INVALID_FIELD;
	}
}

void ctrlr_pel_fw_commit(struct ctrlr *ctrlr, const char *rev, uint8_t ca, uint8_t fs)
{
	/* Old revision (running before), new revision (committed), commit action, slot, the
	 * commit's status (success) and a vendor result. */
	uint8_t ev[22];

	memset(ev, 0, sizeof(ev));
	memcpy(ev, ctrlr->fwrev, strnlen(ctrlr->fwrev, 8));
	memcpy(ev + 8, rev, strnlen(rev, 8));
	ev[16] = ca;
	ev[17] = fs;
	ctrlr_pel_add(ctrlr, NVME_PEL_FW_COMMIT, ev, sizeof(ev));
}

void ctrlr_pel_timestamp_change(struct ctrlr *ctrlr)
{
	/* Previous timestamp (0 if the host never set one), milliseconds since reset. */
	uint64_t ev[2];

	ev[0] = ctrlr->feat.timestamp_set_us ? ctrlr_pel_now_ms(ctrlr) : 0;
	ev[1] = (evloop_now_us() - ctrlr->created_us) / 1000;
	ctrlr_pel_add(ctrlr, NVME_PEL_TIMESTAMP, ev, sizeof(ev));
}

void ctrlr_pel_format(struct ctrlr *ctrlr, bool done, uint32_t nsid, uint32_t cdw10, uint16_t st)
{
	/* Start: NSID, the Format NVM Attributes we report (FNA 0), reserved, CDW10.
	 * Completion: NSID, smallest format progress indicator (not reported: 0), Format NVM
	 * Status (bit 0: failed), completion information, the completion's status field. */
	uint8_t ev[12];

	memset(ev, 0, sizeof(ev));
	memcpy(ev, &nsid, 4);
	if (!done) {
		memcpy(ev + 8, &cdw10, 4);
	} else {
		uint32_t sf = st;

		ev[5] = st ? 1 : 0;
		memcpy(ev + 8, &sf, 4);
	}
	ctrlr_pel_add(ctrlr, done ? NVME_PEL_FORMAT_DONE : NVME_PEL_FORMAT_START, ev, sizeof(ev));
}

void ctrlr_pel_thermal(struct ctrlr *ctrlr, uint16_t temp_k, uint16_t thresh_k)
{
	/* Thermal Excursion: degrees over the threshold, and the threshold (Celsius), each a
	 * byte (saturated). */
	uint8_t ev[2];
	int over = temp_k > thresh_k ? temp_k - thresh_k : 0;
	int thr_c = (int)thresh_k - 273;

	ev[0] = (uint8_t)(over > 255 ? 255 : over);
	ev[1] = (uint8_t)(thr_c < 0 ? 0 : thr_c > 255 ? 255 : thr_c);
	ctrlr_pel_add(ctrlr, NVME_PEL_THERMAL, ev, sizeof(ev));
}

void ctrlr_pel_change_ns(struct ctrlr *ctrlr, uint32_t cdw10, uint32_t nsid, uint64_t nsze,
			 uint8_t flbas, uint8_t dps, uint8_t nmic)
{
	/* Namespace Management CDW10, reserved, NSZE, NCAP (16 bytes; all of it is allocated
	 * here, so NSZE), FLBAS, DPS, NMIC, reserved, ANA Group (none), NVM Set (none),
	 * reserved, NSID. */
	uint8_t ev[48];

	memset(ev, 0, sizeof(ev));
	memcpy(ev, &cdw10, 4);
	memcpy(ev + 8, &nsze, 8);
	memcpy(ev + 16, &nsze, 8);
	ev[32] = flbas;
	ev[33] = dps;
	ev[34] = nmic;
	memcpy(ev + 44, &nsid, 4);
	ctrlr_pel_add(ctrlr, NVME_PEL_CHANGE_NS, ev, sizeof(ev));
}

void ctrlr_pel_set_feature(struct ctrlr *ctrlr, const struct nvme_sqe *sqe)
{
	/* Layout (Dword Count in bits 2:0, no memory buffer logged), then CDW10-CDW15. */
	uint32_t ev[1 + NVME_PEL_SETFEAT_DWORDS];

	ev[0] = NVME_PEL_SETFEAT_DWORDS;
	ev[1] = sqe->cdw10;
	ev[2] = sqe->cdw11;
	ev[3] = sqe->cdw12;
	ev[4] = sqe->cdw13;
	ev[5] = sqe->cdw14;
	ev[6] = sqe->cdw15;
	ctrlr_pel_add(ctrlr, NVME_PEL_SET_FEATURE, ev, sizeof(ev));
}

void ctrlr_pel_hw_error(struct ctrlr *ctrlr, uint16_t code, const void *info, uint16_t len)
{
	/* Event code, reserved, additional hardware error information. */
	uint8_t ev[4 + 32];

	if (len > sizeof(ev) - 4)
		len = sizeof(ev) - 4;
	memset(ev, 0, sizeof(ev));
	memcpy(ev, &code, 2);
	if (len)
		memcpy(ev + 4, info, len);
	ctrlr_pel_add(ctrlr, NVME_PEL_HW_ERROR, ev, (uint16_t)(4 + len));
}

/* Admin thread: the media errors counted since the last event, as one event (the last status
 * and the count), unless the last one is less than a second old: the count then waits for the
 * next error. */
static void ctrlr_pel_media_msg(void *arg)
{
	struct ctrlr *ctrlr = arg;
	struct ctrlr_pel *p = &ctrlr_dev(ctrlr)->pel;
	uint64_t now = evloop_now_us();
	uint32_t n;
	uint8_t info[8];
	uint16_t st;

	__atomic_store_n(&p->media_msg_queued, false, __ATOMIC_SEQ_CST);
	if (p->media_last_us && now - p->media_last_us < CTRLR_PEL_MEDIA_GAP_US)
		return;
	n = __atomic_exchange_n(&p->media_errors, 0, __ATOMIC_SEQ_CST);
	if (!n)
		return;
	st = (uint16_t)__atomic_load_n(&p->media_status, __ATOMIC_RELAXED);
	p->media_last_us = now;
	/* Additional information: the status field (SCT, SC) of the last such completion,
	 * reserved, how many completions it stands for. */
	memset(info, 0, sizeof(info));
	memcpy(info, &st, 2);
	memcpy(info + 4, &n, 4);
	ctrlr_pel_hw_error(ctrlr, NVME_PEL_HWE_MEDIA, info, sizeof(info));
}

void ctrlr_pel_media_error_async(struct ctrlr *ctrlr, uint16_t status)
{
	struct ctrlr_pel *p = &ctrlr_dev(ctrlr)->pel;

	__atomic_store_n(&p->media_status, status & 0x7ff, __ATOMIC_RELAXED);
	__atomic_fetch_add(&p->media_errors, 1, __ATOMIC_SEQ_CST);
	if (__atomic_exchange_n(&p->media_msg_queued, true, __ATOMIC_SEQ_CST))
		return;
	if (ctrlr->ops->admin_msg(ctrlr->tctx, ctrlr_pel_media_msg, ctrlr)) {
		__atomic_store_n(&p->media_msg_queued, false, __ATOMIC_SEQ_CST);
		CTRLR_STAT_ADD(ctrlr->cnt.lost_events, 1);
	}
}
