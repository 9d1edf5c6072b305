/* app/app_target.c - the target's lifetime and its one transport (PCIE_EMU): DPA instance and
 * poll groups, created by nvmf_create_transport and shared by every controller. */
#include "app/app_internal.h"
#include "app/qmp.h"
#include "backend/bdev.h"
#include "common/log.h"
#include "transport/pcie.h"
#include "dpa/dpa.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int app_target_init(struct app_target *t, struct evloop *loop, const char *run_dir)
{
	char err[APP_ERR_LEN];

	memset(t, 0, sizeof(*t));
	t->loop = loop;
	t->tr_defaults.num_poll_groups = 1;
	t->tr_defaults.db_mode = APP_DEFAULT_DB_MODE;
	t->tr_defaults.dpa_harts = APP_DEFAULT_DPA_HARTS;
	t->tr_defaults.profile = hw_profile_find("unlimited");
	t->next_serial = 1;
	t->run_dir = strdup(run_dir);
	if (!t->run_dir)
		return -ENOMEM;
	return app_manager_create(t, "local", NULL, NULL, 0, err);
}

/* "0-1,4" for the error messages. */
static void app_cpu_list(const cpu_set_t *set, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = 0;
	for (int c = 0; c < CPU_SETSIZE && off < len; c++) {
		int last = c;

		if (!CPU_ISSET(c, set))
			continue;
		while (last + 1 < CPU_SETSIZE && CPU_ISSET(last + 1, set))
			last++;
		off += (size_t)snprintf(buf + off, len - off, last > c ? "%s%d-%d" : "%s%d",
					off ? "," : "", c, last);
		c = last;
	}
}

/* The CPU of each poll group (o->num_poll_groups of them), checked against the CPUs this
 * process may run on (sched_getaffinity: taskset, cgroup cpusets): 0 or -errno with err set. */
static int app_pg_cpus(const struct app_transport_opts *o, unsigned int *cpus, char *err)
{
	cpu_set_t allowed;
	char list[128];
	unsigned int n = 0;

	if (sched_getaffinity(0, sizeof(allowed), &allowed)) {
		int rc = -errno;

		snprintf(err, APP_ERR_LEN, "cannot read the CPUs this process may run on: %s",
			 strerror(errno));
		return rc;
	}
	app_cpu_list(&allowed, list, sizeof(list));
	if (o->pg_cpumask) {
		unsigned int bits = (unsigned int)__builtin_popcountll(o->pg_cpumask);

		if (bits != o->num_poll_groups) {
			snprintf(err, APP_ERR_LEN,
				 "num_poll_groups %u differs from the cpumask 0x%llx (%u CPUs)",
				 o->num_poll_groups, (unsigned long long)o->pg_cpumask, bits);
			return -EINVAL;
		}
		for (unsigned int c = 0; c < 64; c++) {
			if (!(o->pg_cpumask >> c & 1))
				continue;
			if (!CPU_ISSET(c, &allowed)) {
				snprintf(err, APP_ERR_LEN,
					 "cpumask 0x%llx: CPU %u is not one this process may run on "
					 "(%s)", (unsigned long long)o->pg_cpumask, c, list);
				return -EINVAL;
			}
			cpus[n++] = c;
		}
		return 0;
	}
	for (unsigned int c = 0; c < CPU_SETSIZE && n < o->num_poll_groups; c++)
		if (CPU_ISSET(c, &allowed))
			cpus[n++] = c;
	if (n < o->num_poll_groups) {
		snprintf(err, APP_ERR_LEN,
			 "cannot pin %u poll groups to a CPU each: this process may run on %u CPU(s) "
			 "(%s)", o->num_poll_groups, n, list);
		return -EINVAL;
	}
	return 0;
}

int app_transport_create(struct app_target *t, const struct app_transport_opts *o, char *err)
{
	bool pin = o->pg_cpumask || o->pin_poll_groups;
	unsigned int cpus[64];
	int rc;
	uint32_t mis = o->max_io_size;

	if (t->has_transport) {
		snprintf(err, APP_ERR_LEN, "transport %s already exists", APP_TRTYPE);
		return -EEXIST;
	}
	if (o->num_poll_groups < 1 || o->num_poll_groups > 64) {
		snprintf(err, APP_ERR_LEN, "num_poll_groups must be 1..64");
		return -EINVAL;
	}
	if (o->dpa_harts > DPA_MAX_HARTS) {
		snprintf(err, APP_ERR_LEN, "dpa_harts must be 0..%d", DPA_MAX_HARTS);
		return -EINVAL;
	}
	if (o->max_queue_depth &&
	    (o->max_queue_depth < 2 || o->max_queue_depth > CTRLR_MAX_QUEUE_ENTRIES)) {
		snprintf(err, APP_ERR_LEN, "max_queue_depth must be 2..%d",
			 CTRLR_MAX_QUEUE_ENTRIES);
		return -EINVAL;
	}
	if (o->max_io_qpairs_per_ctrlr > CTRLR_MAX_IO_QUEUES) {
		snprintf(err, APP_ERR_LEN, "max_io_qpairs_per_ctrlr must be 1..%d",
			 CTRLR_MAX_IO_QUEUES);
		return -EINVAL;
	}
	/* NVMe MDTS is a power of two of the 4 KiB minimum page: 8 KiB .. 4 MiB here. */
	if (mis && (mis < 8192 || mis > (4096u << 10) || (mis & (mis - 1)))) {
		snprintf(err, APP_ERR_LEN,
			 "max_io_size must be a power of two from 8192 to 4194304 bytes");
		return -EINVAL;
	}
	if (pin) {
		rc = app_pg_cpus(o, cpus, err);
		if (rc)
			return rc;
	}
	t->tr = *o;
	t->dpa = dpa_create(o->dpa_harts);
	if (!t->dpa) {
		rc = -errno;
		snprintf(err, APP_ERR_LEN, "cannot start %u DPA harts: %s", o->dpa_harts,
			 strerror(errno));
		return rc ? rc : -ENOMEM;
	}
	t->pgs = pcie_poll_groups_create(o->num_poll_groups, t->dpa);
	if (!t->pgs) {
		snprintf(err, APP_ERR_LEN, "cannot start %u poll groups", o->num_poll_groups);
		dpa_destroy(t->dpa);
		t->dpa = NULL;
		return -ENOMEM;
	}
	if (pin) {
		rc = pcie_poll_groups_pin(t->pgs, cpus);
		if (rc) {
			snprintf(err, APP_ERR_LEN, "cannot pin the poll groups: %s", strerror(-rc));
			pcie_poll_groups_destroy(t->pgs);
			t->pgs = NULL;
			dpa_destroy(t->dpa);
			t->dpa = NULL;
			return rc;
		}
		for (unsigned int i = 0; i < o->num_poll_groups; i++)
			LOG_INFO(APP_LOG, "poll group %u pinned to CPU %u", i, cpus[i]);
	}
	t->has_transport = true;
	LOG_INFO(APP_LOG,
		 "transport %s: %u poll group(s), %u DPA hart(s), %s doorbells, profile %s",
		 APP_TRTYPE, o->num_poll_groups, o->dpa_harts, hw_db_mode_name(o->db_mode),
		 o->profile->name);
	return 0;
}

uint16_t app_transport_io_queues(const struct app_target *t)
{
	/* Too many for the profile is refused when the controller is created. */
	if (t->tr.max_io_qpairs_per_ctrlr)
		return (uint16_t)t->tr.max_io_qpairs_per_ctrlr;
	return (uint16_t)(pcie_nvme_max_vectors(t->tr.profile) - 1u);
}

uint8_t app_transport_mdts(const struct app_target *t)
{
	uint8_t mdts = 0;

	if (!t->tr.max_io_size)
		return 0;
	while ((4096u << mdts) < t->tr.max_io_size)
		mdts++;
	return mdts;
}

static void app_target_fini_sub_done(void *arg, int rc, const char *message)
{
	struct app_target *t = arg;

	if (rc)
		LOG_INFO(APP_LOG, "at exit: %s", message);
	app_target_fini_step(t);
}

/* The last step: every bdev is closed. */
static void app_target_fini_end(void *arg)
{
	struct app_target *t = arg;
	void (*done)(void *arg) = t->fini_done;

	free(t->run_dir);
	t->run_dir = NULL;
	t->fini_finished = true;
	t->fini_done = NULL;
	if (done)
		done(t->fini_arg);
}

/* The bdevs: every one not in use deleted; a placement bdev's teardown ends later (its owner
 * thread drains first), and its base is deleted on the pass that follows it. */
static void app_target_fini_bdevs(void *arg)
{
	struct app_target *t = arg;
	int left = bdev_delete_all();

	if (bdev_when_destroyed(app_target_fini_bdevs, t) == -EINPROGRESS)
		return;
	if (left)
		LOG_ERR(APP_LOG, "bdevs still in use at exit");
	/* RBD images close on their own threads: the end waits for them. */
	if (bdev_rbd_when_idle(app_target_fini_end, t) == 0)
		app_target_fini_end(t);
}

/* Every subsystem is gone: the rest goes at once (but for placement bdevs draining and RBD
 * images closing). */
static void app_target_fini_rest(struct app_target *t)
{
	while (t->functions) {
		struct app_function *fn = t->functions;
		char err[APP_ERR_LEN];

		if (app_function_destroy(t, fn, err)) {
			LOG_ERR(APP_LOG, "at exit: %s", err);
			break;
		}
	}
	while (t->managers) {
		struct app_manager *m = t->managers;

		t->managers = m->next;
		free(m->name);
		free(m->qmp_socket);
		for (unsigned int i = 0; i < m->nr_ports; i++)
			free(m->ports[i]);
		free(m);
	}
	if (t->has_transport) {
		pcie_poll_groups_destroy(t->pgs);
		if (dpa_destroy(t->dpa))
			LOG_ERR(APP_LOG, "DPA resources still in use at exit");
		t->has_transport = false;
	}
	app_target_fini_bdevs(t);
}

void app_target_fini_step(struct app_target *t)
{
	if (!t->fini_done || t->fini_finished)
		return;
	/* Deletions may finish inside the calls below: they ask for another round. */
	if (t->fini_stepping) {
		t->fini_again = true;
		return;
	}
	t->fini_stepping = true;
	do {
		struct app_subsys *s, *next;

		t->fini_again = false;
		/* Listeners first (a hot-plug in flight is cancelled: the guest sees a surprise
		 * removal), then the subsystems, functions and managers. */
		for (s = t->subsystems; s && !t->fini_again; s = next) {
			struct app_listener *l;

			next = s->next;
			for (l = s->listeners; l && !l->qmp; l = l->next)
				;
			if (l) {
				/* Its callback tears the listener down. */
				app_qmp_cancel(l->qmp);
				t->fini_again = true;
			} else if (app_subsys_busy(s) || s->pool_creating) {
				continue; /* a teardown or pool load runs: its end steps again */
			} else {
				/* Frees s now, or starts its listener's teardown (DETACHING). */
				app_subsys_delete(t, s, app_target_fini_sub_done, t);
			}
		}
	} while (t->fini_again);
	t->fini_stepping = false;
	/* The RBD bdevs go after the CNTLID table operations' objects are closed. */
	if (!t->subsystems && !t->cntlid_ops)
		app_target_fini_rest(t);
}

void app_target_fini(struct app_target *t, void (*done)(void *arg), void *arg)
{
	t->shutting_down = true;
	/* NBD and RBD bdevs still connecting, placement bdevs loading: their requesters hear -ECANCELED now. */
	bdev_nbd_cancel_creates();
	bdev_rbd_cancel_creates();
	bdev_fdp_cancel_creates();
	t->fini_done = done;
	t->fini_arg = arg;
	t->fini_finished = false;
	app_target_fini_step(t);
}
