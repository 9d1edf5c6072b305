/* controller/nvm/uncor.h - a namespace's unreadable blocks (Write Uncorrectable, injected media
 * errors): disjoint sorted LBA ranges, read by every poll group, kept in the namespace's shared
 * state so that all controllers of a subsystem see the same marks. */
#ifndef NVME_EMU_CONTROLLER_NS_UNCOR_H
#define NVME_EMU_CONTROLLER_NS_UNCOR_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

/* A namespace's uncorrectable blocks (ns_uncor.c): disjoint sorted LBA ranges. */
struct ctrlr_lba_range {
	uint64_t slba;
	uint64_t nlb;
};
#define CTRLR_UNCOR_MAX_RANGES 4096 /* Write Uncorrectable past it: Capacity Exceeded */
struct ctrlr_uncor {
	pthread_mutex_t lock; /* any poll group; only taken while count > 0 or to change it */
	uint32_t count;	      /* atomic */
	uint32_t cap;
	uint16_t gen; /* bumped on every change (LBA Status log generation) */
	struct ctrlr_lba_range *r;
};
int ctrlr_uncor_init(struct ctrlr_uncor *u);
void ctrlr_uncor_fini(struct ctrlr_uncor *u);
uint32_t ctrlr_uncor_count(const struct ctrlr_uncor *u);
/* Marks [slba, +nlb): 0, -ENOSPC (CTRLR_UNCOR_MAX_RANGES ranges) or -ENOMEM. */
int ctrlr_uncor_add(struct ctrlr_uncor *u, uint64_t slba, uint64_t nlb);
/* Unmarks [slba, +nlb) (the blocks were written): 0 or -ENOMEM (a split without memory). */
int ctrlr_uncor_clear(struct ctrlr_uncor *u, uint64_t slba, uint64_t nlb);
void ctrlr_uncor_clear_all(struct ctrlr_uncor *u);
/* True if [slba, +nlb) holds an uncorrectable block; the first one in *first. */
bool ctrlr_uncor_overlaps(struct ctrlr_uncor *u, uint64_t slba, uint64_t nlb, uint64_t *first);
/* Up to max ranges clipped to [slba, +nlb) (nlb 0: to the end); *more if some were left out. */
uint32_t ctrlr_uncor_get(struct ctrlr_uncor *u, uint64_t slba, uint64_t nlb,
			 struct ctrlr_lba_range *out, uint32_t max, bool *more, uint16_t *gen);

#endif
