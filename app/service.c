/* app/service.c - running under a service manager: READY=1 once the configuration is applied and
 * every listener is up, RELOADING=1 / READY=1 around a reload, STOPPING=1 at a clean stop, STATUS
 * lines, and the watchdog: WATCHDOG=1 from a timer of the main loop, so a main loop that stops
 * iterating stops it, sent only while every poll group answers a message too, so a hung poll
 * group stops it as well. Also the test-only faults that make the loops hang
 * (NVME_EMU_TEST_FAULTS=1), so that tests can see the manager restart the daemon. */
#include "app/app_internal.h"
#include "app/metrics_http.h"
#include "common/evloop.h"
#include "common/log.h"
#include "common/svc_notify.h"
#include "transport/pcie.h"

#include <errno.h>
#include <json-c/json.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void app_service_send(struct app_target *t, const char *text)
{
	int rc = svc_notify_send(t->svc.notify, text);

	if (rc)
		LOG_WARN(APP_LOG, "service manager notification '%.40s' lost: %s", text,
			 strerror(-rc));
}

/* ---- the watchdog ---- */

/* Poll group: the ping reached its loop. */
static void app_service_ping_msg(void *arg)
{
	struct app_svc_ping *p = arg;

	__atomic_store_n(&p->answered, p->sent, __ATOMIC_RELEASE);
	__atomic_store_n(&p->pending, false, __ATOMIC_RELEASE);
}

/* Whether every poll group answered the ping of the previous round; sends this round's. */
static bool app_service_pings(struct app_target *t)
{
	struct app_service *s = &t->svc;
	unsigned int n = t->has_transport ? pcie_poll_groups_count(t->pgs) : 0;
	bool all = true;

	if (n > APP_SVC_MAX_PINGS)
		n = APP_SVC_MAX_PINGS;
	for (unsigned int i = 0; i < n; i++) {
		struct app_svc_ping *p = &s->pings[i];
		uint64_t answered = __atomic_load_n(&p->answered, __ATOMIC_ACQUIRE);

		/* A ping sent a round ago and not answered: the group has not run its loop for
		 * a whole watchdog period at least. */
		if (p->sent && answered < p->sent && p->sent < s->round) {
			all = false;
			if (s->late_pg != i + 1) {
				s->late_pg = i + 1;
				LOG_CRIT(APP_LOG,
					 "poll group %u has not run its loop for %" PRIu64
					 " ms: the watchdog is no longer fed",
					 i, (s->round - p->sent) * s->watchdog_us / 2000);
			}
		}
		if (__atomic_load_n(&p->pending, __ATOMIC_ACQUIRE))
			continue; /* still queued: posting it again would corrupt the queue */
		p->sent = s->round;
		__atomic_store_n(&p->pending, true, __ATOMIC_RELEASE);
		evloop_post(pcie_poll_group_loop(t->pgs, i), &p->msg, app_service_ping_msg, p);
	}
	if (all && s->late_pg) {
		LOG_INFO(APP_LOG, "poll group %u answers again", s->late_pg - 1);
		s->late_pg = 0;
	}
	return all;
}

static void app_service_watchdog(void *arg)
{
	struct app_target *t = arg;
	struct app_service *s = &t->svc;

	s->watchdog = NULL;
	s->round++;
	if (app_service_pings(t))
		app_service_send(t, "WATCHDOG=1");
	/* Twice per period, as sd_watchdog_enabled(3) advises. This runs only when the main loop
	 * iterates: a loop that hangs stops feeding the watchdog. */
	s->watchdog = evloop_timer_add(t->loop, s->watchdog_us / 2, app_service_watchdog, t);
	if (!s->watchdog)
		LOG_CRIT(APP_LOG, "no memory for the watchdog timer: the service manager will "
				  "restart the daemon");
}

int app_service_init(struct app_target *t, char *err)
{
	struct app_service *s = &t->svc;
	const char *faults = getenv("NVME_EMU_TEST_FAULTS");
	int rc;

	rc = svc_notify_open(&s->notify);
	if (rc) {
		snprintf(err, APP_ERR_LEN, "NOTIFY_SOCKET=%s: %s", getenv("NOTIFY_SOCKET"),
			 strerror(-rc));
		return rc;
	}
	s->test_faults = faults && !strcmp(faults, "1");
	if (s->test_faults)
		LOG_WARN(APP_LOG,
			 "NVME_EMU_TEST_FAULTS=1: nvmf_emu_test_fault can hang this daemon "
			 "(for tests only)");
	s->watchdog_us = s->notify ? svc_notify_watchdog_usec() : 0;
	if (s->watchdog_us) {
		if (s->watchdog_us < 2000)
			s->watchdog_us = 2000;
		s->watchdog = evloop_timer_add(t->loop, 0, app_service_watchdog, t);
		if (!s->watchdog) {
			snprintf(err, APP_ERR_LEN, "no memory for the watchdog timer");
			return -ENOMEM;
		}
		LOG_INFO(APP_LOG, "watchdog: fed every %" PRIu64 " ms", s->watchdog_us / 2000);
	}
	return 0;
}

void app_service_fini(struct app_target *t)
{
	struct app_service *s = &t->svc;

	if (s->watchdog)
		evloop_timer_cancel(s->watchdog);
	s->watchdog = NULL;
	svc_notify_close(s->notify);
	s->notify = NULL;
	json_object_put(s->applied);
	s->applied = NULL;
}

/* ---- the service's state ---- */

static void app_service_status_line(struct app_target *t, char *buf, size_t len)
{
	unsigned int subs = 0, ctrls = 0;

	for (struct app_subsys *s = t->subsystems; s; s = s->next) {
		subs++;
		for (struct app_listener *l = s->listeners; l; l = l->next)
			ctrls += l->pc != NULL;
	}
	snprintf(buf, len, "%u subsystem(s), %u controller(s)%s%s", subs, ctrls,
		 t->metrics.http ? ", metrics on " : "",
		 t->metrics.http ? metrics_http_address(t->metrics.http) : "");
}

void app_service_ready(struct app_target *t)
{
	char msg[512], status[256];

	if (t->svc.ready)
		return;
	t->svc.ready = true;
	app_service_status_line(t, status, sizeof(status));
	snprintf(msg, sizeof(msg), "READY=1\nSTATUS=serving: %s", status);
	app_service_send(t, msg);
}

void app_service_reload_begin(struct app_target *t)
{
	struct timespec ts;
	char msg[128];

	t->svc.reloading = true;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	/* MONOTONIC_USEC: the manager's way to tell this reload from an earlier one (systemd
	 * 253's Type=notify-reload needs it; older managers ignore it). */
	snprintf(msg, sizeof(msg),
		 "RELOADING=1\nSTATUS=reloading the configuration\n"
		 "MONOTONIC_USEC=%" PRIu64,
		 (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u);
	app_service_send(t, msg);
}

void app_service_reload_end(struct app_target *t, int rc, const char *msg)
{
	char text[512], status[256];

	t->svc.reloading = false;
	if (rc)
		t->svc.reloads_failed++;
	else
		t->svc.reloads_ok++;
	app_service_status_line(t, status, sizeof(status));
	if (rc)
		snprintf(text, sizeof(text),
			 "READY=1\nSTATUS=serving: %s (last reload failed: %.200s)", status,
			 msg ? msg : strerror(-rc));
	else
		snprintf(text, sizeof(text), "READY=1\nSTATUS=serving: %s", status);
	app_service_send(t, text);
}

void app_service_stopping(struct app_target *t)
{
	app_service_send(t, "STOPPING=1\nSTATUS=stopping: controllers are shut down, state files "
			    "written");
}

/* ---- test-only faults ---- */

/* The calling loop stops for good: only a signal that kills the process (the watchdog's SIGABRT,
 * SIGKILL) ends it; SIGTERM and SIGINT are blocked (signalfd), so a clean stop cannot happen. */
static void app_service_hang(void *arg)
{
	LOG_CRIT(APP_LOG, "test fault: the %s loop hangs now (NVME_EMU_TEST_FAULTS=1)",
		 (const char *)arg);
	for (;;)
		pause();
}

int app_service_test_fault(struct app_target *t, const char *fault, unsigned int pg,
			   uint32_t hold_ms, uint32_t count, char *err)
{
	static struct evloop_msg hang_msg;
	static char pg_name[32];

	if (!t->svc.test_faults) {
		snprintf(err, APP_ERR_LEN,
			 "test faults are off: they exist for tests only, and a "
			 "daemon started with NVME_EMU_TEST_FAULTS=1 takes them");
		return -EPERM;
	}
	if (!strcmp(fault, "hang_main_loop")) {
		/* From a timer, after this request's answer went out. */
		if (!evloop_timer_add(t->loop, 0, app_service_hang, "main")) {
			snprintf(err, APP_ERR_LEN, "out of memory");
			return -ENOMEM;
		}
		return 0;
	}
	if (!strcmp(fault, "hang_poll_group")) {
		if (!t->has_transport || pg >= pcie_poll_groups_count(t->pgs)) {
			snprintf(err, APP_ERR_LEN, "no poll group %u", pg);
			return -ENOENT;
		}
		/* One message, posted once: a poll group that hangs never gives it back. */
		if (pg_name[0]) {
			snprintf(err, APP_ERR_LEN, "%s hangs already", pg_name);
			return -EBUSY;
		}
		snprintf(pg_name, sizeof(pg_name), "poll group %u", pg);
		evloop_post(pcie_poll_group_loop(t->pgs, pg), &hang_msg, app_service_hang, pg_name);
		return 0;
	}
	if (!strcmp(fault, "lose_cluster_watch") || !strcmp(fault, "fail_cluster_reads")) {
		/* Every shared-reservation namespace loses its watch for hold_ms, or fails its
		 * next `count` reads of the record. */
		bool lose = !strcmp(fault, "lose_cluster_watch");
		unsigned int n = 0;

		for (struct app_subsys *s = t->subsystems; s; s = s->next)
			for (unsigned int i = 0; i < CTRLR_MAX_NAMESPACES; i++)
				if (s->ns[i] && s->ns[i]->shared_resv)
					n += (lose ? app_ns_shared_resv_lose_watch(s->ns[i], hold_ms)
						   : app_ns_shared_resv_fail_reads(s->ns[i], count)) == 0;
		if (!n) {
			snprintf(err, APP_ERR_LEN, "no namespace with shared_reservations is watching");
			return -ENOENT;
		}
		return 0;
	}
	snprintf(err, APP_ERR_LEN,
		 "unknown fault '%s' (hang_main_loop, hang_poll_group, lose_cluster_watch, "
		 "fail_cluster_reads)", fault);
	return -EINVAL;
}

/* ---- reloads ---- */

struct app_service_reload_op {
	struct app_target *t;
	app_done_fn done;
	void *arg;
};

static void app_service_reload_done(void *arg, int rc, const char *msg)
{
	struct app_service_reload_op *op = arg;
	app_done_fn done = op->done;
	void *done_arg = op->arg;

	app_service_reload_end(op->t, rc, msg);
	free(op);
	done(done_arg, rc, msg);
}

int app_service_reload(struct app_target *t, const char *path, app_done_fn done, void *arg,
		       char *err)
{
	struct app_service_reload_op *op;

	if (!path)
		path = t->config_file;
	if (!path) {
		snprintf(err, APP_ERR_LEN,
			 "no configuration file to reload: the daemon was started "
			 "without -c/--json (give one)");
		return -ENOENT;
	}
	if (t->shutting_down) {
		snprintf(err, APP_ERR_LEN, "the daemon is stopping");
		return -ECANCELED;
	}
	if (t->svc.reloading || !t->initialized) {
		snprintf(err, APP_ERR_LEN, "%s",
			 t->svc.reloading ? "a reload is running already"
					  : "the target is still starting");
		return -EBUSY;
	}
	op = calloc(1, sizeof(*op));
	if (!op) {
		snprintf(err, APP_ERR_LEN, "out of memory");
		return -ENOMEM;
	}
	op->t = t;
	op->done = done;
	op->arg = arg;
	app_service_reload_begin(t);
	app_config_reload(t, path, app_service_reload_done, op);
	return 0;
}
