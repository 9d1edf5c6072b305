/* vfu/dma_fault.c - guest memory that vanishes under the device. A client can truncate the file
 * behind a DMA window after we mapped it (an unsealed memfd, a hugetlbfs or /dev/shm file); a
 * device access past the new end then raises SIGBUS in whichever thread made it. A SIGBUS
 * handler looks the address up among the watched mappings, replaces that mapping with anonymous
 * memory (the access is retried and lands there), marks it faulted and wakes the owner through
 * an eventfd, so the client is dropped from the owner's loop. Any other SIGBUS goes on to the
 * handler that was there before (the default: a core dump). The handler takes no lock: slots
 * are read under a sequence count, chunks of slots are only ever added. */
#include "vfu/vfu_internal.h"

#include "common/log.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

/* Slots come in chunks allocated as needed, never freed. The per-client window limits bound what
 * one client holds; the process-wide cap is far above any sum of them, so no client can use up
 * the slots another function needs. */
#define VFU_FAULT_CHUNK_SLOTS 1024u
#define VFU_FAULT_CHUNKS 1024u /* 1M watched mappings at once */

struct vfu_fault_slot {
	uint32_t seq; /* odd while being written; atomic */
	uintptr_t base;
	size_t len;
	int prot;
	struct vfu_dma_notifier *notifier;
	uint64_t iova, wlen; /* the window, for the owner's message */
	bool hit;      /* replaced after a fault; atomic */
	struct vfu_fault_slot *next_free; /* under vfu_fault_lock */
};

struct vfu_dma_notifier {
	int fd;		    /* eventfd the handler writes (async-signal-safe) */
	unsigned int refs;  /* atomic: the owner + every slot naming it */
	uint64_t hits;	    /* atomic: faults since the owner last looked */
	uint64_t hit_iova;  /* atomic: the last faulted window, for the message */
	uint64_t hit_len;
};

static struct vfu_fault_slot *vfu_fault_chunks[VFU_FAULT_CHUNKS]; /* atomic pointers */
static uint32_t vfu_fault_nchunks;		      /* under vfu_fault_lock */
static struct vfu_fault_slot *vfu_fault_free;	      /* under vfu_fault_lock */
static pthread_mutex_t vfu_fault_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t vfu_fault_once = PTHREAD_ONCE_INIT;
static struct sigaction vfu_fault_prev;
static int vfu_fault_install_err;
static uint64_t vfu_fault_total; /* atomic */

/* The access was not to a watched mapping: what was there before ours decides. */
static void vfu_fault_chain(int sig, siginfo_t *si, void *uc)
{
	if (vfu_fault_prev.sa_flags & SA_SIGINFO) {
		vfu_fault_prev.sa_sigaction(sig, si, uc);
		return;
	}
	if (vfu_fault_prev.sa_handler != SIG_DFL && vfu_fault_prev.sa_handler != SIG_IGN) {
		vfu_fault_prev.sa_handler(sig);
		return;
	}
	/* Default action: returning retries a faulting access, which faults again and dumps
	 * core where it happened; a signal that was sent is raised again (pending until this
	 * handler returns). */
	{
		struct sigaction dfl;

		memset(&dfl, 0, sizeof(dfl));
		dfl.sa_handler = SIG_DFL;
		sigemptyset(&dfl.sa_mask);
		sigaction(SIGBUS, &dfl, NULL);
		if (si->si_code <= 0)
			raise(SIGBUS);
	}
}

/* Replaces slot s's mapping if addr is in it; true when the access can be retried. */
static bool vfu_fault_try_slot(struct vfu_fault_slot *s, uintptr_t addr)
{
	uint32_t q = __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE);
	uintptr_t base;
	size_t len;
	int prot;
	bool hit;
	struct vfu_dma_notifier *n;
	uint64_t iova, wlen, one = 1;
	void *p;

	if (q & 1)
		return false;
	base = __atomic_load_n(&s->base, __ATOMIC_RELAXED);
	len = __atomic_load_n(&s->len, __ATOMIC_RELAXED);
	prot = __atomic_load_n(&s->prot, __ATOMIC_RELAXED);
	n = __atomic_load_n(&s->notifier, __ATOMIC_RELAXED);
	iova = __atomic_load_n(&s->iova, __ATOMIC_RELAXED);
	wlen = __atomic_load_n(&s->wlen, __ATOMIC_RELAXED);
	hit = __atomic_load_n(&s->hit, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	if (__atomic_load_n(&s->seq, __ATOMIC_RELAXED) != q || !len || addr - base >= len)
		return false;
	/* Two threads faulted on it: the first one's replacement serves the second. */
	if (hit)
		return true;
	/* Anonymous, private, not accounted: guest memory gone, the device reads zeroes and
	 * writes into nothing until its client is dropped. mmap is a bare system call. */
	p = mmap((void *)base, len, prot, MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		 -1, 0);
	if (p == MAP_FAILED)
		return false;
	__atomic_store_n(&s->hit, true, __ATOMIC_RELEASE);
	__atomic_add_fetch(&vfu_fault_total, 1, __ATOMIC_RELAXED);
	if (n) {
		__atomic_store_n(&n->hit_iova, iova, __ATOMIC_RELAXED);
		__atomic_store_n(&n->hit_len, wlen, __ATOMIC_RELAXED);
		__atomic_add_fetch(&n->hits, 1, __ATOMIC_RELEASE);
		/* Only EAGAIN can fail (the counter is full), and then the owner is woken already;
		 * nothing else could be done about it in a signal handler. */
		if (write(n->fd, &one, sizeof(one)) < 0)
			return true;
	}
	return true;
}

static void vfu_fault_handler(int sig, siginfo_t *si, void *uc)
{
	uintptr_t addr = (uintptr_t)si->si_addr;
	int saved_errno = errno;

	/* Only a fault names an address: a SIGBUS sent with kill() or sigqueue() (si_code <= 0)
	 * must not take a window away. */
	for (uint32_t c = 0; si->si_code > 0 && c < VFU_FAULT_CHUNKS; c++) {
		struct vfu_fault_slot *chunk = __atomic_load_n(&vfu_fault_chunks[c], __ATOMIC_ACQUIRE);

		if (!chunk)
			break;
		for (uint32_t i = 0; i < VFU_FAULT_CHUNK_SLOTS; i++)
			if (vfu_fault_try_slot(&chunk[i], addr)) {
				errno = saved_errno;
				return;
			}
	}
	errno = saved_errno;
	vfu_fault_chain(sig, si, uc);
}

static void vfu_fault_install(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = vfu_fault_handler;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGBUS, &sa, &vfu_fault_prev) < 0)
		vfu_fault_install_err = -errno;
}

int vfu_dma_notifier_create(struct vfu_dma_notifier **out)
{
	struct vfu_dma_notifier *n;

	pthread_once(&vfu_fault_once, vfu_fault_install);
	if (vfu_fault_install_err)
		return vfu_fault_install_err;
	n = calloc(1, sizeof(*n));
	if (!n)
		return -ENOMEM;
	n->fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (n->fd < 0) {
		int rc = -errno;

		free(n);
		return rc;
	}
	n->refs = 1;
	*out = n;
	return 0;
}

static void vfu_dma_notifier_get(struct vfu_dma_notifier *n)
{
	__atomic_add_fetch(&n->refs, 1, __ATOMIC_RELAXED);
}

void vfu_dma_notifier_put(struct vfu_dma_notifier *n)
{
	if (n && __atomic_sub_fetch(&n->refs, 1, __ATOMIC_ACQ_REL) == 0) {
		close(n->fd);
		free(n);
	}
}

int vfu_dma_notifier_fd(const struct vfu_dma_notifier *n)
{
	return n->fd;
}

uint64_t vfu_dma_notifier_take(struct vfu_dma_notifier *n, uint64_t *iova, uint64_t *len)
{
	uint64_t buf, hits;

	/* Empty the eventfd first: a fault after this read writes it again. An eventfd read fails
	 * only when it is empty (EAGAIN); the count below is what matters either way. */
	if (read(n->fd, &buf, sizeof(buf)) < 0 && errno != EAGAIN)
		LOG_ERR(VFU_COMP, "reading the DMA fault eventfd: %s", strerror(errno));
	hits = __atomic_exchange_n(&n->hits, 0, __ATOMIC_ACQ_REL);
	*iova = __atomic_load_n(&n->hit_iova, __ATOMIC_RELAXED);
	*len = __atomic_load_n(&n->hit_len, __ATOMIC_RELAXED);
	return hits;
}

/* A free slot (a new chunk when none is left); NULL at the cap or without memory. Under the
 * lock; O(1), so mapping a window costs the same however many others are watched. */
static struct vfu_fault_slot *vfu_fault_slot_alloc(void)
{
	struct vfu_fault_slot *s;

	if (!vfu_fault_free && vfu_fault_nchunks < VFU_FAULT_CHUNKS) {
		struct vfu_fault_slot *chunk = calloc(VFU_FAULT_CHUNK_SLOTS, sizeof(*chunk));

		if (!chunk)
			return NULL;
		for (uint32_t i = VFU_FAULT_CHUNK_SLOTS; i-- > 0;) {
			chunk[i].next_free = vfu_fault_free;
			vfu_fault_free = &chunk[i];
		}
		/* Published whole (every slot's len 0: skipped) for the handler to scan. */
		__atomic_store_n(&vfu_fault_chunks[vfu_fault_nchunks++], chunk, __ATOMIC_RELEASE);
	}
	s = vfu_fault_free;
	if (s)
		vfu_fault_free = s->next_free;
	return s;
}

int vfu_dma_fault_watch(struct vfu_dma_notifier *n, void *base, size_t len, int prot,
			uint64_t iova, uint64_t wlen, struct vfu_fault_slot **out)
{
	struct vfu_fault_slot *s;

	pthread_mutex_lock(&vfu_fault_lock);
	s = vfu_fault_slot_alloc();
	if (!s) {
		int rc = vfu_fault_nchunks == VFU_FAULT_CHUNKS ? -ENOSPC : -ENOMEM;

		pthread_mutex_unlock(&vfu_fault_lock);
		return rc;
	}
	vfu_dma_notifier_get(n);
	/* Odd while the fields change: the handler skips the slot. */
	__atomic_add_fetch(&s->seq, 1, __ATOMIC_ACQ_REL);
	__atomic_store_n(&s->base, (uintptr_t)base, __ATOMIC_RELAXED);
	__atomic_store_n(&s->len, len, __ATOMIC_RELAXED);
	__atomic_store_n(&s->prot, prot, __ATOMIC_RELAXED);
	__atomic_store_n(&s->notifier, n, __ATOMIC_RELAXED);
	__atomic_store_n(&s->iova, iova, __ATOMIC_RELAXED);
	__atomic_store_n(&s->wlen, wlen, __ATOMIC_RELAXED);
	__atomic_store_n(&s->hit, false, __ATOMIC_RELAXED);
	__atomic_add_fetch(&s->seq, 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&vfu_fault_lock);
	*out = s;
	return 0;
}

void vfu_dma_fault_unwatch(struct vfu_fault_slot *s)
{
	struct vfu_dma_notifier *n;

	if (!s)
		return;
	pthread_mutex_lock(&vfu_fault_lock);
	n = s->notifier;
	__atomic_add_fetch(&s->seq, 1, __ATOMIC_ACQ_REL);
	__atomic_store_n(&s->len, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&s->notifier, NULL, __ATOMIC_RELAXED);
	__atomic_add_fetch(&s->seq, 1, __ATOMIC_RELEASE);
	s->next_free = vfu_fault_free;
	vfu_fault_free = s;
	pthread_mutex_unlock(&vfu_fault_lock);
	vfu_dma_notifier_put(n);
}

uint64_t vfu_dma_fault_count(void)
{
	return __atomic_load_n(&vfu_fault_total, __ATOMIC_RELAXED);
}
