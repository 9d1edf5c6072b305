/* dpa/dpa.c - the DPA instance: harts, polling parameters, counters, MSI-X raise. */
#include "dpa/dpa_internal.h"
#include "hw/hw.h"

#include <errno.h>
#include <stdlib.h>

#define DPA_DEFAULT_BURST_US 50
#define DPA_DEFAULT_BURST_MAX_US 200
#define DPA_DEFAULT_SLEEP_STEP_US 30
#define DPA_DEFAULT_BACKOFF_AFTER_US 10000
#define DPA_DEFAULT_MAX_STEP_US 2000
#define DPA_MAX_POLL_PARAM_US 1000000

struct dpa *dpa_create(unsigned int n_harts)
{
	struct dpa *dpa;
	unsigned int i;
	int rc;

	if (n_harts > DPA_MAX_HARTS) {
		errno = EINVAL;
		return NULL;
	}
	dpa = calloc(1, sizeof(*dpa));
	if (!dpa)
		goto out_nomem;
	atomic_init(&dpa->burst_us, DPA_DEFAULT_BURST_US);
	atomic_init(&dpa->burst_max_us, DPA_DEFAULT_BURST_MAX_US);
	atomic_init(&dpa->sleep_step_us, DPA_DEFAULT_SLEEP_STEP_US);
	atomic_init(&dpa->backoff_after_us, DPA_DEFAULT_BACKOFF_AFTER_US);
	atomic_init(&dpa->max_step_us, DPA_DEFAULT_MAX_STEP_US);
	if (n_harts) {
		/* Harts hold cache-line aligned members: allocate aligned. */
		if (posix_memalign((void **)&dpa->harts, DPA_CACHELINE,
				   n_harts * sizeof(*dpa->harts)))
			goto out_free_dpa;
	}
	for (i = 0; i < n_harts; i++) {
		rc = dpa_hart_start(dpa, &dpa->harts[i], i);
		if (rc) {
			errno = -rc;
			goto out_stop_harts;
		}
		dpa->n_harts++;
	}
	return dpa;

out_stop_harts:
	rc = errno;
	for (i = 0; i < dpa->n_harts; i++)
		dpa_hart_stop(&dpa->harts[i]);
	free(dpa->harts);
	free(dpa);
	errno = rc;
	return NULL;
out_free_dpa:
	free(dpa);
out_nomem:
	errno = ENOMEM;
	return NULL;
}

int dpa_destroy(struct dpa *dpa)
{
	unsigned int i;

	if (!dpa)
		return 0;
	if (atomic_load(&dpa->n_objects))
		return -EBUSY;
	for (i = 0; i < dpa->n_harts; i++)
		dpa_hart_stop(&dpa->harts[i]);
	free(dpa->harts);
	free(dpa);
	return 0;
}

unsigned int dpa_num_harts(const struct dpa *dpa)
{
	return dpa->n_harts;
}

int dpa_set_poll_params(struct dpa *dpa, uint32_t burst_us, uint32_t sleep_step_us)
{
	if (burst_us > DPA_MAX_POLL_PARAM_US || !sleep_step_us ||
	    sleep_step_us > DPA_MAX_POLL_PARAM_US)
		return -EINVAL;
	atomic_store_explicit(&dpa->burst_us, burst_us, memory_order_relaxed);
	atomic_store_explicit(&dpa->sleep_step_us, sleep_step_us, memory_order_relaxed);
	return 0;
}

int dpa_set_poll_backoff(struct dpa *dpa, uint32_t idle_after_us, uint32_t max_step_us)
{
	if (!max_step_us || max_step_us > DPA_MAX_POLL_PARAM_US)
		return -EINVAL;
	atomic_store_explicit(&dpa->backoff_after_us, idle_after_us, memory_order_relaxed);
	atomic_store_explicit(&dpa->max_step_us, max_step_us, memory_order_relaxed);
	return 0;
}

int dpa_set_poll_window_max(struct dpa *dpa, uint32_t max_us)
{
	if (max_us > DPA_MAX_POLL_PARAM_US)
		return -EINVAL;
	atomic_store_explicit(&dpa->burst_max_us, max_us, memory_order_relaxed);
	return 0;
}

uint32_t dpa_poll_window_max_us(const struct dpa *dpa)
{
	return atomic_load_explicit(&((struct dpa *)dpa)->burst_max_us, memory_order_relaxed);
}

uint32_t dpa_poll_step_us(const struct dpa *dpa, uint64_t idle_us)
{
	struct dpa *d = (struct dpa *)dpa;
	uint64_t step = atomic_load_explicit(&d->sleep_step_us, memory_order_relaxed);
	uint64_t after = atomic_load_explicit(&d->backoff_after_us, memory_order_relaxed);
	uint64_t max = atomic_load_explicit(&d->max_step_us, memory_order_relaxed);
	uint64_t doublings;

	if (idle_us < after || step >= max)
		return (uint32_t)step;
	/* One doubling per `after` of further idle: a ramp, not a cliff. */
	doublings = after ? (idle_us - after) / after + 1 : 32;
	while (doublings-- && step < max)
		step *= 2;
	return (uint32_t)(step < max ? step : max);
}

void dpa_counters_snapshot(const struct dpa_counters *c, struct dpa_stats *s)
{
#define DPA_SNAP(f) s->f = atomic_load_explicit(&c->f, memory_order_relaxed)
	DPA_SNAP(activations);
	DPA_SNAP(kicks);
	s->kicks += atomic_load_explicit(&c->kicks_local, memory_order_relaxed);
	DPA_SNAP(db_completions);
	DPA_SNAP(msgs_sent);
	DPA_SNAP(msgs_received);
	DPA_SNAP(msix_raised);
	DPA_SNAP(msix_pended);
	DPA_SNAP(msix_dropped);
	DPA_SNAP(polls);
	DPA_SNAP(sleeps);
	DPA_SNAP(asleep_us);
#undef DPA_SNAP
}

uint64_t dpa_fused_eventfd_wakes(const struct dpa *dpa)
{
	return atomic_load_explicit(&dpa->fused_eventfd_wakes, memory_order_relaxed);
}

void dpa_thread_get_stats(const struct dpa_thread *thread, struct dpa_stats *stats)
{
	dpa_counters_snapshot(&thread->counters, stats);
}

int dpa_hart_get_stats(const struct dpa *dpa, unsigned int hart, struct dpa_stats *stats)
{
	if (hart >= dpa->n_harts)
		return -EINVAL;
	dpa_counters_snapshot(&dpa->harts[hart].counters, stats);
	return 0;
}

int dpa_msix_raise(struct dpa_thread *thread, struct hw_msix_vector *vec)
{
	int rc = hw_msix_vector_raise(vec);

	if (rc == 0)
		DPA_COUNT(thread, msix_raised, 1);
	else if (rc > 0)
		DPA_COUNT(thread, msix_pended, 1);
	else
		DPA_COUNT(thread, msix_dropped, 1);
	return rc;
}
