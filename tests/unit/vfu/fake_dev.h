/* tests/unit/vfu/fake_dev.h - a small fake device behind a vfu_endpoint,
 * run on its own evloop thread, for the protocol tests and the fuzzer:
 * BAR0 (0x2000, memfd-backed, sparse-mmap area [0x1000, 0x2000)), BAR2
 * (0x100, trapped) and config space (4 KiB); MSI-X (4 vectors) and ERR. */
#ifndef NVME_EMU_TESTS_UNIT_VFU_FAKE_DEV_H
#define NVME_EMU_TESTS_UNIT_VFU_FAKE_DEV_H

#include <stdbool.h>
#include <stdint.h>

#include "vfu/vfu.h"

#define FAKE_BAR0_SIZE 0x2000u
#define FAKE_BAR2_SIZE 0x100u
#define FAKE_CFG_SIZE 4096u
#define FAKE_MSIX_COUNT 4u

struct fake_dev_counts {
	int attach, detach, device_info, resets, dma_maps, dma_unmaps, set_irqs, writes;
	int fds_held;	    /* eventfds the fake currently owns */
	int dma_done;	    /* server->client DMA callbacks seen */
	int dma_status;	    /* status of the last one */
	bool async_pending; /* an op returned VFU_ASYNC, not yet resumed */
	int reentered;	    /* detach or a DMA callback ran inside resume/dma calls */
	uint64_t last_unmap_iova, last_unmap_len;
};

struct fake_dev;

/* The fake's ops (their arg is a struct fake_dev *). */
extern const struct vfu_endpoint_ops fake_dev_ops;

/* Creates the endpoint at path and runs its loop on a new thread. */
struct fake_dev *fake_dev_start(const char *path);
/* Stops the thread, destroys the endpoint and frees everything. */
void fake_dev_stop(struct fake_dev *fd);
/* Makes reset / dma_unmap / region writes return VFU_ASYNC. */
void fake_dev_set_async(struct fake_dev *fd, bool reset, bool unmap, bool write);
/* Makes reset call vfu_endpoint_resume(0) itself before returning
 * VFU_ASYNC. */
void fake_dev_set_inline_resume(struct fake_dev *fd, bool on);
/* vfu_endpoint_resume(status) on the loop thread. */
void fake_dev_resume(struct fake_dev *fd, int status);
void fake_dev_counts(struct fake_dev *fd, struct fake_dev_counts *out);
void fake_dev_stats(struct fake_dev *fd, struct vfu_endpoint_stats *st);
uint32_t fake_dev_dma_windows(struct fake_dev *fd);
bool fake_dev_attached(struct fake_dev *fd);
/* The fake's BAR0 memory (the memfd mapping). */
uint8_t *fake_dev_bar0(struct fake_dev *fd);
/* Starts a server->client DMA on the loop thread; returns the submit result.
 * Completion is counted in dma_done / dma_status. */
int fake_dev_dma(struct fake_dev *fd, bool is_write, uint64_t iova, void *buf, uint64_t len);
/* Waits until the counts satisfy pred (checked under the fake's lock) or
 * timeout_ms passed. Returns true if satisfied. */
bool fake_dev_wait(struct fake_dev *fd, bool (*pred)(const struct fake_dev_counts *, void *),
		   void *arg, int timeout_ms);
/* Signals MSI-X vector v (index 2) or ERR (index 3, v 0) from the loop thread;
 * false if no eventfd is assigned or it is masked. */
bool fake_dev_trigger(struct fake_dev *fd, uint32_t index, uint32_t v);
/* Waits up to timeout_ms until the endpoint counted at least n disconnects
 * (a client the endpoint never attached counts too). Each check is a round
 * trip through the loop thread. */
bool fake_dev_wait_disconnects(struct fake_dev *fd, uint64_t n, int timeout_ms);
/* Number of fds open in this process (for leak checks). */
int fake_dev_count_fds(void);
/* The count once it is `expect` (polled for up to 2 s): the server closes the fds of a message after
 * its reply has gone out, so a client may count before that. A leaked fd never settles. */
int fake_dev_fds_settle(int expect);
/* Disconnects the client from the device side. */
void fake_dev_disconnect(struct fake_dev *fd);

#endif
