/* dpa/msgq.c - fixed-size message queues: a single-producer/single-consumer
 * lock-free ring with a consumer completion and a producer completion. */
#include "dpa/dpa_internal.h"
#include "common/log.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

struct dpa_msgq {
	struct dpa *dpa;
	uint32_t msg_size, depth, mask;
	struct dpa_thread *producer, *consumer; /* NULL: the Arm side */
	bool single_thread;			/* see dpa_msgq_config */
	int prod_fd, cons_fd;			/* Arm sides only, else -1 */
	uint8_t *slots;
	/* Producer-owned line: tail is published, head_cache private. */
	_Alignas(DPA_CACHELINE) _Atomic uint32_t tail;
	uint32_t head_cache;
	_Atomic bool prod_armed;
	/* Consumer-owned line. */
	_Alignas(DPA_CACHELINE) _Atomic uint32_t head;
	uint32_t tail_cache;
	_Atomic bool cons_armed;
};

struct dpa_msgq *dpa_msgq_create(struct dpa *dpa, const struct dpa_msgq_config *cfg)
{
	struct dpa_msgq *q;

	if (!dpa || !cfg || cfg->msg_size < DPA_MSGQ_MIN_MSG_SIZE ||
	    cfg->msg_size > DPA_MSGQ_MAX_MSG_SIZE || cfg->msg_size % 8 || cfg->depth < 2 ||
	    cfg->depth > DPA_MSGQ_MAX_DEPTH || (cfg->depth & (cfg->depth - 1)) ||
	    (cfg->producer && cfg->producer->dpa != dpa) ||
	    (cfg->consumer && cfg->consumer->dpa != dpa)) {
		errno = EINVAL;
		return NULL;
	}
	if (posix_memalign((void **)&q, DPA_CACHELINE, sizeof(*q)))
		goto out_nomem;
	memset(q, 0, sizeof(*q));
	q->dpa = dpa;
	q->msg_size = cfg->msg_size;
	q->depth = cfg->depth;
	q->mask = cfg->depth - 1;
	q->producer = cfg->producer;
	q->consumer = cfg->consumer;
	q->single_thread = cfg->single_thread;
	q->prod_fd = q->cons_fd = -1;
	atomic_init(&q->prod_armed, true);
	atomic_init(&q->cons_armed, true);
	q->slots = calloc(cfg->depth, cfg->msg_size);
	if (!q->slots)
		goto out_free_q;
	if (!q->producer) {
		q->prod_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (q->prod_fd < 0)
			goto out_free_slots;
	}
	if (!q->consumer) {
		q->cons_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (q->cons_fd < 0)
			goto out_close_prod;
	}
	if (q->producer)
		atomic_fetch_add(&q->producer->refs, 1);
	if (q->consumer)
		atomic_fetch_add(&q->consumer->refs, 1);
	atomic_fetch_add(&dpa->n_objects, 1);
	return q;

out_close_prod:
	if (q->prod_fd >= 0)
		close(q->prod_fd);
out_free_slots:
	free(q->slots);
out_free_q:
	free(q);
out_nomem:
	errno = ENOMEM;
	return NULL;
}

void dpa_msgq_destroy(struct dpa_msgq *q)
{
	if (!q)
		return;
	if (q->producer)
		atomic_fetch_sub(&q->producer->refs, 1);
	if (q->consumer)
		atomic_fetch_sub(&q->consumer->refs, 1);
	if (q->prod_fd >= 0)
		close(q->prod_fd);
	if (q->cons_fd >= 0)
		close(q->cons_fd);
	atomic_fetch_sub(&q->dpa->n_objects, 1);
	free(q->slots);
	free(q);
}

uint32_t dpa_msgq_msg_size(const struct dpa_msgq *q)
{
	return q->msg_size;
}

uint32_t dpa_msgq_depth(const struct dpa_msgq *q)
{
	return q->depth;
}

static void dpa_msgq_efd_signal(int fd)
{
	uint64_t one = 1;

	if (write(fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		LOG_ERR("dpa", "eventfd write: %s", strerror(errno));
}

void dpa_msgq_fd_clear(int fd)
{
	uint64_t v;

	if (read(fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		LOG_ERR("dpa", "eventfd read: %s", strerror(errno));
}

/* Fires a completion: wakes the DPA thread on that side or signals the
 * Arm side's eventfd. */
/* The full barrier between one side's store and its load of the other side's word: not needed
 * when one thread plays both sides. */
static void dpa_msgq_fence(const struct dpa_msgq *q)
{
	if (!q->single_thread)
		atomic_thread_fence(memory_order_seq_cst);
}

/* Arms a completion: a plain store for a single-thread queue, else sequentially consistent (it
 * pairs with the other side's fence). */
static void dpa_msgq_set_armed(const struct dpa_msgq *q, _Atomic bool *armed)
{
	if (q->single_thread)
		atomic_store_explicit(armed, true, memory_order_relaxed);
	else
		atomic_store(armed, true);
}

/* Takes an armed completion (true: it fires, and is disarmed). A single-thread queue has no
 * other side to race with, so no locked exchange. */
static bool dpa_msgq_take_armed(const struct dpa_msgq *q, _Atomic bool *armed)
{
	if (!atomic_load_explicit(armed, memory_order_relaxed))
		return false;
	if (q->single_thread) {
		atomic_store_explicit(armed, false, memory_order_relaxed);
		return true;
	}
	return atomic_exchange(armed, false);
}

static void dpa_msgq_fire(struct dpa_thread *thread, int fd)
{
	if (thread)
		dpa_thread_kick(thread);
	else
		dpa_msgq_efd_signal(fd);
}

static int dpa_msgq_send_common(struct dpa_msgq *q, const void *msg, bool polled)
{
	uint32_t tail = atomic_load_explicit(&q->tail, memory_order_relaxed);

	if (tail - q->head_cache == q->depth) {
		/* Acquire: pairs with the consumer's release store of head, so
		 * the slot it freed is no longer being read. */
		q->head_cache = atomic_load_explicit(&q->head, memory_order_acquire);
		if (tail - q->head_cache == q->depth)
			return -EAGAIN;
	}
	memcpy(q->slots + (size_t)(tail & q->mask) * q->msg_size, msg, q->msg_size);
	/* Release: the message bytes are visible before the new tail; pairs
	 * with the consumer's acquire load of tail in dpa_msgq_recv. */
	atomic_store_explicit(&q->tail, tail + 1, memory_order_release);
	if (q->producer)
		DPA_COUNT(q->producer, msgs_sent, 1);
	/* Full barrier between publishing the tail and reading cons_armed:
	 * pairs with the one in dpa_msgq_consumer_arm (store armed, load tail). */
	dpa_msgq_fence(q);
	if (dpa_msgq_take_armed(q, &q->cons_armed)) {
		if (polled)
			dpa_thread_wake(q->consumer, true);
		else
			dpa_msgq_fire(q->consumer, q->cons_fd);
	}
	return 0;
}

int dpa_msgq_send(struct dpa_msgq *q, const void *msg)
{
	return dpa_msgq_send_common(q, msg, false);
}

int dpa_msgq_send_polled(struct dpa_msgq *q, const void *msg)
{
	/* Only a fused consumer is run by the sender's own loop; a hart would never be woken. */
	if (!q->single_thread || !q->consumer || q->dpa->n_harts)
		return -EINVAL;
	return dpa_msgq_send_common(q, msg, true);
}

int dpa_msgq_recv(struct dpa_msgq *q, void *msg)
{
	uint32_t head = atomic_load_explicit(&q->head, memory_order_relaxed);

	if (head == q->tail_cache) {
		/* Acquire: pairs with the producer's release store of tail. */
		q->tail_cache = atomic_load_explicit(&q->tail, memory_order_acquire);
		if (head == q->tail_cache)
			return 0;
	}
	memcpy(msg, q->slots + (size_t)(head & q->mask) * q->msg_size, q->msg_size);
	/* Release: we are done reading the slot before the producer may reuse
	 * it; pairs with the producer's acquire load of head. */
	atomic_store_explicit(&q->head, head + 1, memory_order_release);
	if (q->consumer)
		DPA_COUNT(q->consumer, msgs_received, 1);
	/* The producer completion only matters to a producer that found the
	 * ring full and armed: read prod_armed after a full barrier that pairs
	 * with the one in dpa_msgq_producer_arm (store armed, load head). */
	dpa_msgq_fence(q);
	if (dpa_msgq_take_armed(q, &q->prod_armed))
		dpa_msgq_fire(q->producer, q->prod_fd);
	return 1;
}

int dpa_msgq_consumer_arm(struct dpa_msgq *q)
{
	uint32_t head = atomic_load_explicit(&q->head, memory_order_relaxed);

	dpa_msgq_set_armed(q, &q->cons_armed);
	dpa_msgq_fence(q);
	q->tail_cache = atomic_load_explicit(&q->tail, memory_order_acquire);
	return head == q->tail_cache ? 0 : -EAGAIN;
}

int dpa_msgq_producer_arm(struct dpa_msgq *q)
{
	uint32_t tail = atomic_load_explicit(&q->tail, memory_order_relaxed);

	dpa_msgq_set_armed(q, &q->prod_armed);
	dpa_msgq_fence(q);
	q->head_cache = atomic_load_explicit(&q->head, memory_order_acquire);
	return tail - q->head_cache == q->depth ? 0 : -EAGAIN;
}

int dpa_msgq_consumer_fd(const struct dpa_msgq *q)
{
	return q->cons_fd >= 0 ? q->cons_fd : -EINVAL;
}

int dpa_msgq_producer_fd(const struct dpa_msgq *q)
{
	return q->prod_fd >= 0 ? q->prod_fd : -EINVAL;
}
