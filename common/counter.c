/* common/counter.c - the lists of counter blocks and their sums (see counter.h). */
#include "common/counter.h"

#include <pthread.h>

static pthread_mutex_t counter_lock = PTHREAD_MUTEX_INITIALIZER;

void counter_block_join(struct counter_block **list, struct counter_block *b,
			const uint64_t *vals)
{
	b->vals = vals;
	pthread_mutex_lock(&counter_lock);
	b->next = *list;
	if (b->next)
		b->next->pprev = &b->next;
	b->pprev = list;
	*list = b;
	pthread_mutex_unlock(&counter_lock);
}

void counter_block_leave(struct counter_block *b, uint64_t *retired, size_t n)
{
	pthread_mutex_lock(&counter_lock);
	if (b->pprev) {
		*b->pprev = b->next;
		if (b->next)
			b->next->pprev = b->pprev;
		b->pprev = NULL;
		for (size_t i = 0; i < n; i++)
			__atomic_fetch_add(&retired[i], __atomic_load_n(&b->vals[i], __ATOMIC_RELAXED),
					   __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&counter_lock);
}

void counter_sum(struct counter_block *const *list, const uint64_t *retired, uint64_t *out,
		 size_t n)
{
	const struct counter_block *b;

	pthread_mutex_lock(&counter_lock);
	for (size_t i = 0; i < n; i++)
		out[i] = __atomic_load_n(&retired[i], __ATOMIC_RELAXED);
	for (b = *list; b; b = b->next)
		for (size_t i = 0; i < n; i++)
			out[i] += __atomic_load_n(&b->vals[i], __ATOMIC_RELAXED);
	pthread_mutex_unlock(&counter_lock);
}

void counter_foreach_block(struct counter_block *const *list,
			   void (*fn)(const uint64_t *vals, void *arg), void *arg)
{
	const struct counter_block *b;

	/* A block leaves its list under this lock before its owner frees it: each one seen here
	 * is alive until the unlock. */
	pthread_mutex_lock(&counter_lock);
	for (b = *list; b; b = b->next)
		fn(b->vals, arg);
	pthread_mutex_unlock(&counter_lock);
}
