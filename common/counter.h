/* common/counter.h - counters with one writer each, summed by readers on any thread.
 *
 * A counter that only its owner thread bumps needs no locked read-modify-write: a relaxed load
 * and store do (counter_add_owned), and a reader on another thread still reads whole values. A
 * locked instruction per command would wait for the store buffer to drain, which after an I/O
 * is full of its data.
 *
 * A counter block is such an owner's run of uint64_t counters (a bdev channel's, an SQ's). While
 * the owner lives its block is on a list (counter_block_join); counter_sum adds every block of
 * the list to the list's `retired` counters, which hold what blocks that left
 * (counter_block_leave) counted. One process-wide lock covers the lists: join, leave and sum take
 * it, a bump never does. */
#ifndef NVME_EMU_COMMON_COUNTER_H
#define NVME_EMU_COMMON_COUNTER_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* Bumps a counter only the calling thread writes. */
static inline void counter_add_owned(uint64_t *counter, uint64_t n)
{
	__atomic_store_n(counter, __atomic_load_n(counter, __ATOMIC_RELAXED) + n, __ATOMIC_RELAXED);
}

/* The same for a counter declared _Atomic (C11 operations: clang takes no __atomic builtin on
 * an _Atomic object). */
static inline void counter_add_owned_atomic(_Atomic uint64_t *counter, uint64_t n)
{
	atomic_store_explicit(counter, atomic_load_explicit(counter, memory_order_relaxed) + n,
			      memory_order_relaxed);
}

struct counter_block {
	const uint64_t *vals;
	struct counter_block *next;
	struct counter_block **pprev; /* NULL: on no list */
};

/* Puts the block of counters `vals` on `list`. Any thread. */
void counter_block_join(struct counter_block **list, struct counter_block *b,
			const uint64_t *vals);
/* Takes the block off its list and adds its n counters to `retired` (atomically: other threads
 * may bump those too). Idempotent. Any thread, once the owner stopped bumping. */
void counter_block_leave(struct counter_block *b, uint64_t *retired, size_t n);
/* out[i] = retired[i] + the i-th counter of every block on `list`, for i < n. Any thread. */
void counter_sum(struct counter_block *const *list, const uint64_t *retired, uint64_t *out,
		 size_t n);
/* Calls fn(vals, arg) for every block on `list`, under the readers' lock (fn must not join or
 * leave a list). Any thread. */
void counter_foreach_block(struct counter_block *const *list,
			   void (*fn)(const uint64_t *vals, void *arg), void *arg);

#endif
