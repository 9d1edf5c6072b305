/* transport/pcie.h - the PCIe-emulation transport: one NVMe controller served
 * as an emulated PCIe function (hw/) over vfio-user, its I/O queues spread
 * over poll-group threads, doorbells and MSI-X through the DPA model (dpa/).
 * This is the DOCA NVMe app's "transport" half; controller/ctrlr.h is the
 * core it drives.
 *
 * Threads: every function runs on the main thread (the thread running the
 * evloop given at creation); none blocks for long.
 */
#ifndef NVME_EMU_CONTROLLER_PCIE_H
#define NVME_EMU_CONTROLLER_PCIE_H

#include <stdbool.h>
#include <stdint.h>

#include "controller/ctrlr.h"
#include "hw/hw.h"

struct evloop;
struct dpa;
struct pcie_ctrlr;
struct pcie_poll_groups;

/* ---- Poll groups: shared by every controller of a process ---- */

/* Starts n poll-group threads (1..64), each sleeping on its own evloop until
 * work arrives. The DPA instance gives the channels' harts (or fused mode). */
struct pcie_poll_groups *pcie_poll_groups_create(unsigned int n, struct dpa *dpa);
/* Pins poll group i's thread (named "poll-group<i>") to CPU cpus[i], for every group. 0, or
 * the first failure's -errno (-EINVAL: a CPU the process may not use); the groups before it
 * stay pinned. */
int pcie_poll_groups_pin(struct pcie_poll_groups *pgs, const unsigned int *cpus);
/* Stops and joins the threads. Every controller must be destroyed first. */
void pcie_poll_groups_destroy(struct pcie_poll_groups *pgs);
unsigned int pcie_poll_groups_count(const struct pcie_poll_groups *pgs);
/* Poll group i's event loop, for messages to it (evloop_post: the service watchdog's liveness
 * check). NULL when there is no group i. Any thread. */
struct evloop *pcie_poll_group_loop(const struct pcie_poll_groups *pgs, unsigned int i);

struct pcie_poll_group_stats {
	uint64_t wakeups, db_msgs, sqes, bdev_polls, irqs;
	uint32_t sqs, cqs;
	/* Polling of mmap doorbells (fused DPA): the adaptive burst window now (us), and how the
	 * idle gaps ended: caught while spinning, or after a sleep; how the window adapted. */
	uint32_t poll_window_us;
	uint64_t poll_hits, poll_misses, poll_grows, poll_shrinks, poll_contended, poll_naps;
	uint32_t poll_irq_contended_pct; /* gaps of a host busy with interrupts: contended share */
	uint64_t poll_wait_naps;	  /* gaps of a waiting host slept at once */
	uint32_t poll_wait_contended_pct; /* gaps of a waiting host: contended share */
	/* The thread's time: asleep in its loop's waits, and on a CPU (its CPU clock). */
	uint64_t sleep_us, cpu_us;
};
/* Snapshot of group i's counters (approximate, relaxed reads). */
void pcie_poll_group_get_stats(const struct pcie_poll_groups *pgs, unsigned int i,
			       struct pcie_poll_group_stats *st);

/* ---- The NVMe PCI type ---- */

struct pcie_ctrlr_opts;
/* The function's PCI IDs: those of opts (0: the default), class 010802h. The default vendor ID
 * is 0xfffe, assigned by the PCI-SIG to nobody (README: "PCI identity"). */
void pcie_nvme_pci_ids(const struct pcie_ctrlr_opts *opts, struct hw_pci_ids *ids);
/* Builds and starts the NVMe PCI type of DESIGN.md section 6 (BAR0 16 KiB,
 * 64-bit: registers 0x0000 stateful, doorbells 0x1000 by offset with
 * CAP.DSTRD 0, MSI-X table 0x2000, PBA 0x3000; class 0x010802) with
 * `num_msix` vectors and `ids`, validated against `profile`; with cmb_size a Controller
 * Memory Buffer filling BAR2, with pmr_size a Persistent Memory Region filling BAR4 and its
 * registers at BAR0 0xE00 (both 64-bit prefetchable memory regions; 0: none). Returns NULL
 * with the reason in err. */
struct hw_pci_type *pcie_nvme_type_create(const struct hw_profile *profile, uint16_t num_msix,
					  const struct hw_pci_ids *ids, uint64_t cmb_size,
					  uint64_t pmr_size, char *err, size_t err_len);
/* Vectors the NVMe type may have under `profile` (64 at most by default:
 * Windows' driver fails with more). */
uint16_t pcie_nvme_max_vectors(const struct hw_profile *profile);

/* ---- Controllers ---- */

struct pcie_ctrlr_opts {
	const char *vuid;          /* e.g. "nvme-emu-0" */
	const char *socket_path;   /* vfio-user socket */
	enum hw_db_mode db_mode;   /* trap or mmap doorbells */
	const struct hw_profile *profile;
	/* serial, model, queues, MDTS ...; ctrlr.num_vectors: the function's MSI-X vectors (0:
	 * max_io_queues + 1, at most that). */
	struct ctrlr_config ctrlr;
	/* Per-client limits (0: defaults) and trust, see struct hw_dev_config. */
	uint32_t max_dma_regions;
	uint64_t max_dma_bytes;
	bool allow_any_dma_fd;
	/* PCI identity (0: the defaults, see pcie_nvme_pci_ids); Identify's VID/SSVID follow. */
	uint16_t vendor_id, device_id, subsys_vendor_id, subsys_id;
	/* A Controller Memory Buffer of cmb_size bytes in BAR2 (0: none): a power of two from
	 * PCIE_DEVMEM_MIN to PCIE_DEVMEM_MAX; SQs, CQs, PRP lists, SGL segments and data may live
	 * in it (transport/pcie_cmb.c). */
	uint64_t cmb_size;
	/* A Persistent Memory Region in BAR4 kept in the file pmr_file (NULL: none): created with
	 * pmr_size bytes when missing, extended to pmr_size when shorter; pmr_size 0 takes the
	 * file's size. Same size rule as the CMB (transport/pcie_pmr.c). */
	const char *pmr_file;
	uint64_t pmr_size;
};
/* Sizes a CMB or a PMR may have (powers of two). */
#define PCIE_DEVMEM_MIN (1ull << 20)
#define PCIE_DEVMEM_MAX (1ull << 30)

/* Creates the controller and its emulated function (powered off). */
int pcie_ctrlr_create(struct evloop *loop, struct pcie_poll_groups *pgs, struct dpa *dpa,
		      const struct pcie_ctrlr_opts *opts, struct pcie_ctrlr **out);
/* Hot-unplugs (the client, if any, sees a surprise removal; its reset runs
 * first), frees the controller and its function, then calls done(arg) on the
 * main thread, from a later loop iteration or from inside this call. Nothing
 * waits meanwhile: other controllers, the RPC server and the loop go on. */
void pcie_ctrlr_destroy(struct pcie_ctrlr *pc, void (*done)(void *arg), void *arg);
/* The controller core, for namespaces and stats (ctrlr.h). */
struct ctrlr *pcie_ctrlr_core(struct pcie_ctrlr *pc);
struct hw_dev *pcie_ctrlr_dev(struct pcie_ctrlr *pc);
/* Creates the vfio-user socket: a client (QEMU) may attach. */
int pcie_ctrlr_start(struct pcie_ctrlr *pc);

#endif
