/* controller/nvm/uncor.c - a namespace's uncorrectable logical blocks: marked by Write Uncorrectable
 * (NVM Command Set 3.3.7), failing reads until written again, reported by Get LBA Status.
 *
 * The set is a sorted array of disjoint, non-adjacent LBA ranges. Every queue of the namespace may
 * touch it, from any poll group, so it has a lock; the I/O path reads an atomic range count first
 * and takes the lock only when the namespace has uncorrectable blocks at all, which a namespace
 * nobody sent Write Uncorrectable to never has. The lock is held for a binary search or an array
 * edit, never across I/O. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "controller/nvm/uncor.h"

int ctrlr_uncor_init(struct ctrlr_uncor *u)
{
	memset(u, 0, sizeof(*u));
	return -pthread_mutex_init(&u->lock, NULL);
}

void ctrlr_uncor_fini(struct ctrlr_uncor *u)
{
	pthread_mutex_destroy(&u->lock);
	free(u->r);
	u->r = NULL;
}

uint32_t ctrlr_uncor_count(const struct ctrlr_uncor *u)
{
	return __atomic_load_n(&u->count, __ATOMIC_ACQUIRE);
}

/* First range whose end lies after slba (the only candidate to overlap or follow it). */
static uint32_t ctrlr_uncor_find(const struct ctrlr_uncor *u, uint64_t slba)
{
	uint32_t lo = 0, hi = u->count;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (u->r[mid].slba + u->r[mid].nlb <= slba)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int ctrlr_uncor_reserve(struct ctrlr_uncor *u, uint32_t n)
{
	struct ctrlr_lba_range *r;
	uint32_t cap;

	if (n <= u->cap)
		return 0;
	cap = u->cap ? u->cap * 2 : 16;
	while (cap < n)
		cap *= 2;
	r = realloc(u->r, cap * sizeof(*r));
	if (!r)
		return -ENOMEM;
	u->r = r;
	u->cap = cap;
	return 0;
}

static void ctrlr_uncor_publish(struct ctrlr_uncor *u, uint32_t count)
{
	__atomic_store_n(&u->count, count, __ATOMIC_RELEASE);
	u->gen++;
}

int ctrlr_uncor_add(struct ctrlr_uncor *u, uint64_t slba, uint64_t nlb)
{
	uint64_t end = slba + nlb;
	uint32_t i, j;
	int rc = 0;

	if (!nlb)
		return 0;
	pthread_mutex_lock(&u->lock);
	/* Ranges from i to j-1 overlap or touch [slba, end): they merge into one. */
	i = u->count ? ctrlr_uncor_find(u, slba ? slba - 1 : 0) : 0;
	if (i < u->count && u->r[i].slba + u->r[i].nlb < slba)
		i++;
	for (j = i; j < u->count && u->r[j].slba <= end; j++) {
		if (u->r[j].slba < slba)
			slba = u->r[j].slba;
		if (u->r[j].slba + u->r[j].nlb > end)
			end = u->r[j].slba + u->r[j].nlb;
	}
	if (j == i) {
		if (u->count >= CTRLR_UNCOR_MAX_RANGES) {
			rc = -ENOSPC;
			goto out;
		}
		rc = ctrlr_uncor_reserve(u, u->count + 1);
		if (rc)
			goto out;
		memmove(&u->r[i + 1], &u->r[i], (u->count - i) * sizeof(*u->r));
		u->r[i] = (struct ctrlr_lba_range){ slba, end - slba };
		ctrlr_uncor_publish(u, u->count + 1);
		goto out;
	}
	u->r[i] = (struct ctrlr_lba_range){ slba, end - slba };
	memmove(&u->r[i + 1], &u->r[j], (u->count - j) * sizeof(*u->r));
	ctrlr_uncor_publish(u, u->count - (j - i - 1));
out:
	pthread_mutex_unlock(&u->lock);
	return rc;
}

int ctrlr_uncor_clear(struct ctrlr_uncor *u, uint64_t slba, uint64_t nlb)
{
	uint64_t end = slba + nlb;
	uint32_t i, n;
	int rc = 0;

	if (!nlb || !ctrlr_uncor_count(u))
		return 0;
	pthread_mutex_lock(&u->lock);
	i = ctrlr_uncor_find(u, slba);
	n = u->count;
	while (i < n && u->r[i].slba < end) {
		struct ctrlr_lba_range *r = &u->r[i];
		uint64_t rend = r->slba + r->nlb;

		if (r->slba < slba && rend > end) {
			/* A hole in the middle: the range splits in two. A write never fails for
			 * lack of a slot, so the array may grow past the Write Uncorrectable limit
			 * here (bounded by the namespace size). */
			rc = ctrlr_uncor_reserve(u, n + 1);
			if (rc)
				break;
			r = &u->r[i];
			memmove(&u->r[i + 1], &u->r[i], (n - i) * sizeof(*u->r));
			u->r[i].nlb = slba - r->slba;
			u->r[i + 1] = (struct ctrlr_lba_range){ end, rend - end };
			n++;
			break;
		}
		if (r->slba < slba) {
			r->nlb = slba - r->slba; /* keeps its head */
			i++;
		} else if (rend > end) {
			r->nlb = rend - end; /* keeps its tail */
			r->slba = end;
			i++;
		} else {
			memmove(&u->r[i], &u->r[i + 1], (n - i - 1) * sizeof(*u->r));
			n--;
		}
	}
	ctrlr_uncor_publish(u, n);
	pthread_mutex_unlock(&u->lock);
	return rc;
}

void ctrlr_uncor_clear_all(struct ctrlr_uncor *u)
{
	pthread_mutex_lock(&u->lock);
	ctrlr_uncor_publish(u, 0);
	pthread_mutex_unlock(&u->lock);
}

bool ctrlr_uncor_overlaps(struct ctrlr_uncor *u, uint64_t slba, uint64_t nlb, uint64_t *first)
{
	bool hit = false;
	uint32_t i;

	if (!ctrlr_uncor_count(u))
		return false;
	pthread_mutex_lock(&u->lock);
	i = ctrlr_uncor_find(u, slba);
	if (i < u->count && u->r[i].slba < slba + nlb) {
		hit = true;
		if (first)
			*first = u->r[i].slba > slba ? u->r[i].slba : slba;
	}
	pthread_mutex_unlock(&u->lock);
	return hit;
}

uint32_t ctrlr_uncor_get(struct ctrlr_uncor *u, uint64_t slba, uint64_t nlb,
			 struct ctrlr_lba_range *out, uint32_t max, bool *more, uint16_t *gen)
{
	uint64_t end = nlb ? slba + nlb : UINT64_MAX;
	uint32_t n = 0, i;

	*more = false;
	pthread_mutex_lock(&u->lock);
	if (gen)
		*gen = u->gen;
	for (i = ctrlr_uncor_find(u, slba); i < u->count && u->r[i].slba < end; i++) {
		uint64_t s = u->r[i].slba > slba ? u->r[i].slba : slba;
		uint64_t e = u->r[i].slba + u->r[i].nlb < end ? u->r[i].slba + u->r[i].nlb : end;

		if (n == max) {
			*more = true;
			break;
		}
		out[n++] = (struct ctrlr_lba_range){ s, e - s };
	}
	pthread_mutex_unlock(&u->lock);
	return n;
}
