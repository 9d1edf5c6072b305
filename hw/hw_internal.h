/* hw/hw_internal.h - private types shared by the device-model files of hw/
 * (type, device, config space, BAR regions, doorbells, MSI-X, host memory). */
#ifndef NVME_EMU_HW_HW_INTERNAL_H
#define NVME_EMU_HW_HW_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "hw/hw.h"
#include "hw/pci_config.h"
#include "vfu/vfu.h"

#define HW_NUM_BARS 6
#define HW_LOG_COMP "hw"
#define HW_PAGE_SIZE 4096u

/* ------------------------------------------------------------------------ */
/* Type.                                                                    */

struct hw_bar {
	bool present;	 /* declared by set_memory_bar / set_io_bar */
	bool upper_half; /* the high dword of the 64-bit BAR below it */
	bool is_io;
	bool prefetchable;
	enum hw_bar_mem_type mem_type;
	uint8_t log_size;
	uint64_t size; /* 0 when absent or an upper half */
};

struct hw_region {
	enum hw_region_kind kind;
	uint8_t bar_id;
	uint64_t start, size;
	uint8_t log_db_size;		   /* DB kinds */
	uint8_t log_stride;		   /* DB by offset */
	uint8_t db_msbyte, db_lsbyte;	   /* DB by data */
	uint8_t *type_def, *type_def_mask; /* stateful: type-level defaults (size bytes each) */
};

struct hw_pci_type {
	char name[64];
	struct hw_pci_ids ids;
	struct hw_bar bars[HW_NUM_BARS];
	uint16_t num_msix;
	struct hw_region *regions;
	unsigned int nr_regions, cap_regions;
	bool started;
	const struct hw_profile *profile;
	unsigned int nr_devices;
	int msix_table_idx, msix_pba_idx; /* region indices, -1 if none (set at start) */
};

/* Region index holding [offset, offset+len) of BAR bar_id wholly, or -1. */
int hw_pci_type_find_region(const struct hw_pci_type *type, uint8_t bar_id, uint64_t offset,
			    uint64_t len);

/* ------------------------------------------------------------------------ */
/* MSI-X state (msix.c). Raise is lock-free; everything else loop thread.   */

struct hw_msix_vec_state {
	_Atomic int fd;		    /* client eventfd or -1 */
	_Atomic unsigned int users; /* raisers between reading fd and write() */
	_Atomic uint32_t ctrl;	    /* vector control dword from the table (bit 0 mask) */
	uint32_t addr_lo, addr_hi, data;
	struct hw_msix_vector *obj;
};

/* Replaced eventfds a raiser may still be writing are closed later, once no
 * raiser of their vector is inside hw_msix_signal (never waited for). At
 * most this many wait before a new assignment is refused (de-assignments
 * always succeed: each vector has at most one fd to give up). */
#define HW_MSIX_GRAVEYARD 64

struct hw_msix_grave {
	int fd;
	uint16_t vec;
};

struct hw_msix {
	uint16_t nr_vectors;
	struct hw_msix_grave *grave;
	unsigned int nr_grave, cap_grave;
	_Atomic bool enabled;
	_Atomic bool function_masked;
	struct hw_msix_vec_state *vec;
	_Atomic uint64_t *pba; /* (nr_vectors + 63) / 64 words */
	_Atomic uint64_t raised, pended, dropped;
};

int hw_msix_init(struct hw_msix *m, uint16_t nr_vectors);
void hw_msix_fini(struct hw_msix *m);
/* New enable / function-mask state; delivers pending vectors that became
 * unmasked. */
void hw_msix_set_state(struct hw_msix *m, bool enabled, bool function_masked);
/* Installs fd (ownership taken, also on error; -1 to de-assign) for vector v;
 * the previous one is closed once no raiser uses it. 0, or -EBUSY when too
 * many replaced fds are still in use (fd closed, nothing changed). */
int hw_msix_set_fd(struct hw_msix *m, uint16_t v, int fd);
void hw_msix_close_fds(struct hw_msix *m);
/* 0 signalled, 1 pended, -ENODEV dropped. Any thread. */
int hw_msix_raise_num(struct hw_msix *m, uint16_t v);
/* Table (16 B per entry) and PBA accesses at offset inside the region. */
int hw_msix_table_access(struct hw_msix *m, uint64_t offset, void *buf, uint32_t len,
			 bool is_write);
int hw_msix_pba_access(struct hw_msix *m, uint64_t offset, void *buf, uint32_t len, bool is_write);
bool hw_msix_pending(const struct hw_msix *m, uint16_t v);
/* FLR: disabled, unmasked function, table entries cleared, PBA cleared. */
void hw_msix_reset(struct hw_msix *m);

/* ------------------------------------------------------------------------ */
/* Device.                                                                  */

/* Per-region runtime state of a device, parallel to type->regions. */
struct hw_dev_region {
	uint8_t *mem;	     /* stateful values, the DB-by-offset doorbell slots, device memory */
	bool mem_in_bar_map; /* mem points into the BAR's memfd mapping */
	/* DB by offset: created DB objects by slot. */
	struct hw_db **slots;
	uint32_t nr_slots;
	/* stateful */
	uint8_t *dev_def, *dev_def_mask;
	bool ev_pending, ev_touched;
	uint64_t wr_lo, wr_hi; /* bytes written since the event was last handled */
	unsigned int reraises;
};

enum hw_dev_event {
	HW_DEV_EV_NONE,
	HW_DEV_EV_FLR,	    /* config FLR or DEVICE_RESET: reply held */
	HW_DEV_EV_FLR_GONE, /* client went away: no reply */
	HW_DEV_EV_UNMAP,    /* DMA_UNMAP: reply held */
	HW_DEV_EV_MASTER_OFF, /* COMMAND Bus Master Enable cleared: config write reply held */
};

struct hw_dev {
	struct hw_pci_type *type;
	struct evloop *loop;
	char vuid[64];
	char *socket_path;
	struct vfu_endpoint_config ep_cfg;
	enum hw_db_mode db_mode;
	const struct hw_dev_ops *ops;
	void *arg;

	struct vfu_endpoint *ep;
	struct vfu_dma_table *dma; /* the endpoint's, while hot-plugged */
	enum hw_hotplug_state state;
	_Atomic uint64_t client_gen; /* bumped when a client goes: older mmaps are dead */

	struct hw_pci_config cfg;
	struct hw_msix msix;
	int err_fd;

	struct hw_dev_region *rs;
	int bar_memfd[HW_NUM_BARS];
	uint8_t *bar_map[HW_NUM_BARS];
	bool db_mapped; /* a doorbell page is offered as a sparse-mmap area (mmap mode) */
	/* A driver read of a stateful region held by ops->stateful_read: where the data goes (the
	 * endpoint's held reply, valid until the client goes: detach clears `held`). */
	struct {
		bool held;
		int ridx;
		uint64_t rel;
		void *buf;
		uint32_t len;
	} rd;

	struct hw_db **by_data; /* DB objects of by-data ids */
	unsigned int nr_by_data, cap_by_data;
	unsigned int nr_dbs;

	struct evloop_timer *stateful_timer; /* queued stateful_write dispatch */
	enum hw_dev_event pending_ev;
	bool in_event;	    /* inside an flr/dma_unmap handler */
	bool ev_done_early; /* hw_dev_event_done called from inside it */
	bool gone_deferred; /* client left while an event was pending */
	bool unplug_defer;  /* hw_dev_unplug_continue queued on the loop */

	uint64_t db_writes, db_invalid_writes;
	uint64_t bar_disabled_accesses; /* BAR accesses while COMMAND did not decode them */
};

/* bar_regions.c: BAR backing and dispatch. */
int hw_bars_init(struct hw_dev *dev);
void hw_bars_fini(struct hw_dev *dev);
int hw_bar_access(struct hw_dev *dev, uint8_t bar_id, uint64_t offset, void *buf, uint32_t len,
		  bool is_write);
/* Fills size/flags/mmap for BAR region index bar_id (vfu region_info). */
struct vfu_region_desc;
void hw_bar_region_desc(struct hw_dev *dev, uint8_t bar_id, struct vfu_region_desc *desc);
/* A region the client may map: a page-aligned DB-by-offset region in mmap mode, device memory
 * always. */
bool hw_region_mappable(const struct hw_dev *dev, const struct hw_region *r);
/* FLR: doorbell slots back to 0 (device memory is left as it is). */
void hw_bars_reset(struct hw_dev *dev);

/* stateful.c */
int hw_stateful_init(struct hw_dev *dev);
void hw_stateful_fini(struct hw_dev *dev);
/* Values back to defaults: device default > type default > 0. */
void hw_stateful_reset(struct hw_dev *dev);
int hw_stateful_guest_access(struct hw_dev *dev, int ridx, uint64_t offset, void *buf, uint32_t len,
			     bool is_write);

/* db.c */
int hw_db_guest_write(struct hw_dev *dev, int ridx, uint64_t offset, const void *buf, uint32_t len);
void hw_dbs_fini(struct hw_dev *dev);

/* pci_dev.c: runs the FLR flow (ops->flr, then the reset). Returns 0 when
 * done or HW_EVENT_ASYNC when the handler finishes later. */
int hw_dev_flr_start(struct hw_dev *dev, enum hw_dev_event ev);
/* pci_dev.c: the vfu endpoint callbacks (exposed for unit tests). */
extern const struct vfu_endpoint_ops hw_dev_ep_ops;

#endif
