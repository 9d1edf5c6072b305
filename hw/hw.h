/* hw/hw.h - generic emulated PCIe function, served to a host over vfio-user.
 *
 * The model is DOCA DevEmu PCI Generic: a PCI *type* declares IDs, class
 * code, BARs and BAR regions (stateful, doorbell by offset, doorbell by data,
 * MSI-X table, MSI-X PBA) and is validated against a *platform profile*
 * (`bf3`, `unlimited`); *devices* of a started type are hot-plugged: each
 * gets its own vfio-user socket that one client (QEMU, or the test client)
 * attaches to. Nothing here knows about NVMe.
 *
 * Threads: every function runs on the thread that runs the device's evloop
 * (the "main"/Arm-control thread) unless its comment says "any thread".
 * Callbacks in struct hw_dev_ops are called on that thread too.
 *
 * Errors: functions returning int give 0 or a negative errno; functions
 * returning a pointer give NULL and set errno.
 */
#ifndef NVME_EMU_HW_HW_H
#define NVME_EMU_HW_HW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/uio.h>

struct evloop;
struct hw_pci_type;
struct hw_dev;
struct hw_db;
struct hw_msix_vector;
struct hw_mmap;

/* ------------------------------------------------------------------------ */
/* Platform profile: the limits a type must fit (DOCA's doca_caps).         */

struct hw_profile {
	const char *name;
	uint32_t max_hotplug_devices; /* devices hot-plugged at once, all types */
	uint32_t max_bars;	      /* declared BARs (a 64-bit BAR counts once) */
	uint32_t log_min_bar_size, log_max_bar_size;
	bool bar_32bit_supported;
	bool bar_64bit_supported;
	bool io_bar_supported;
	uint32_t max_msix;
	uint32_t max_db; /* DB objects per device (checked by hw_db_create) */
	uint32_t log_min_db_size, log_max_db_size;
	uint32_t log_min_db_stride, log_max_db_stride;
	uint32_t max_regions_per_bar;
	uint32_t max_regions_per_type;
	uint32_t stateful_block_size, stateful_max_blocks, stateful_align;
	uint32_t max_stateful_regions_per_bar, max_stateful_regions_per_type;
	uint32_t db_block_size, db_max_blocks, db_align;
	uint32_t max_db_regions_per_bar, max_db_regions_per_type; /* both DB kinds */
	uint32_t msix_table_block_size, msix_table_max_blocks, msix_table_align;
	uint32_t msix_pba_block_size, msix_pba_max_blocks, msix_pba_align;
	/* Memory regions (device memory the client maps, e.g. an NVMe CMB or PMR): how many a
	 * type may have (0: none, DOCA DevEmu has no such region kind); always page aligned. */
	uint32_t max_mem_regions_per_type;
};

/* "bf3" or "unlimited"; NULL if unknown. The profile is static (never freed).
 * A type holds at most one MSI-X table and one PBA region whatever the
 * profile (the MSI-X capability points at exactly one of each). */
const struct hw_profile *hw_profile_find(const char *name);
/* Prints the profile as "key value" lines, keys named like doca_caps's. */
void hw_profile_print(const struct hw_profile *profile, FILE *out);

/* ------------------------------------------------------------------------ */
/* PCI type.                                                                */

enum hw_bar_mem_type {
	HW_BAR_MEM_32 = 0,
	HW_BAR_MEM_64 = 2, /* the next BAR becomes its upper half (size 0) */
};

enum hw_region_kind {
	HW_REGION_STATEFUL,
	HW_REGION_DB_BY_OFFSET,
	HW_REGION_DB_BY_DATA,
	HW_REGION_MSIX_TABLE,
	HW_REGION_MSIX_PBA,
	HW_REGION_MEMORY, /* device memory: offered to the client as a sparse-mmap area */
};

struct hw_pci_ids {
	uint16_t vendor_id, device_id;
	uint16_t subsys_vendor_id, subsys_id;
	uint8_t revision;
	uint32_t class_code; /* 24 bits: base << 16 | sub << 8 | prog-if */
};

/* Creates an empty type. */
struct hw_pci_type *hw_pci_type_create(const char *name);
void hw_pci_type_destroy(
    struct hw_pci_type *type); /* -EBUSY-safe: refuses (returns) if devices exist */

int hw_pci_type_set_ids(struct hw_pci_type *type, const struct hw_pci_ids *ids);
int hw_pci_type_set_memory_bar(struct hw_pci_type *type, uint8_t bar_id, uint8_t log_size,
			       enum hw_bar_mem_type mem_type, bool prefetchable);
int hw_pci_type_set_io_bar(struct hw_pci_type *type, uint8_t bar_id, uint8_t log_size);
int hw_pci_type_set_num_msix(struct hw_pci_type *type, uint16_t num_msix);

/* Regions. start and size are byte offsets inside the BAR. */
int hw_pci_type_add_stateful_region(struct hw_pci_type *type, uint8_t bar_id, uint64_t start,
				    uint64_t size);
/* db_id = (offset - start) / (1 << log_stride); each doorbell is
 * (1 << log_db_size) bytes wide. */
int hw_pci_type_add_db_by_offset_region(struct hw_pci_type *type, uint8_t bar_id, uint64_t start,
					uint64_t size, uint8_t log_db_size, uint8_t log_stride);
/* db_id is taken from the written value's bytes db_id_msbyte..db_id_lsbyte:
 * little endian when msbyte > lsbyte, big endian otherwise (DOCA: writing
 * 0xCCDDEEFF with msbyte 3, lsbyte 1 gives db_id 0xCCDDEE). */
int hw_pci_type_add_db_by_data_region(struct hw_pci_type *type, uint8_t bar_id, uint64_t start,
				      uint64_t size, uint8_t log_db_size, uint8_t db_id_msbyte,
				      uint8_t db_id_lsbyte);
int hw_pci_type_add_msix_table_region(struct hw_pci_type *type, uint8_t bar_id, uint64_t start,
				      uint64_t size);
int hw_pci_type_add_msix_pba_region(struct hw_pci_type *type, uint8_t bar_id, uint64_t start,
				    uint64_t size);
/* Device memory (an NVMe Controller Memory Buffer or Persistent Memory Region): each device
 * gets its own sealed memfd of `size` bytes, zeroed at creation and kept until the device is
 * destroyed (client changes, FLRs and hotplugs leave it as it is). The client maps it as a
 * sparse-mmap area of the BAR in either doorbell mode, so its loads and stores reach the memory
 * with no message (with QEMU this turns posted writes off for the whole device); trapped
 * accesses read and write the same memory. start and size must be multiples of 4 KiB. */
int hw_pci_type_add_memory_region(struct hw_pci_type *type, uint8_t bar_id, uint64_t start,
				  uint64_t size);
/* Type-level default for bytes of a stateful region (read order: last
 * written, device default, type default, 0). -EINVAL unless [offset,
 * offset+len) lies in one stateful region added before; -EBUSY while devices
 * of the type exist (DOCA's rule). */
int hw_pci_type_set_stateful_default(struct hw_pci_type *type, uint8_t bar_id, uint64_t offset,
				     const void *data, size_t len);

/* Validates the type against `profile` and freezes it. On failure returns
 * -EINVAL and writes a sentence naming the violated limit into err. */
int hw_pci_type_start(struct hw_pci_type *type, const struct hw_profile *profile, char *err,
		      size_t err_len);
bool hw_pci_type_is_started(const struct hw_pci_type *type);

/* Pure helper, exposed for tests: extracts a DB id from a written value. */
uint32_t hw_db_id_from_data(uint64_t value, uint8_t msbyte, uint8_t lsbyte);

/* ------------------------------------------------------------------------ */
/* Device.                                                                  */

enum hw_hotplug_state {
	HW_HOTPLUG_POWER_OFF,	      /* no socket */
	HW_HOTPLUG_POWER_ON_PENDING,  /* socket listening, no client yet */
	HW_HOTPLUG_POWER_ON,	      /* a client negotiated and is attached */
	HW_HOTPLUG_POWER_OFF_PENDING, /* unplug requested, tearing down */
};
const char *hw_hotplug_state_name(enum hw_hotplug_state state);

/* Doorbell delivery (DESIGN.md section 7). */
enum hw_db_mode {
	HW_DB_MODE_TRAP, /* no mmap: every BAR write is a (posted) message */
	HW_DB_MODE_MMAP, /* DB-by-offset pages are a memfd offered as sparse mmap */
};
const char *hw_db_mode_name(enum hw_db_mode mode);

/* Result of an event handler that finishes later: the device holds back the
 * client's next message (and the reply, if any) until hw_dev_event_done(). */
#define HW_EVENT_ASYNC 1

struct hw_dev_ops {
	/* The hotplug state changed (client attached, detached, unplugged). */
	void (*hotplug_state_changed)(struct hw_dev *dev, enum hw_hotplug_state state, void *arg);
	/* The driver wrote into the stateful region starting at region_start of
	 * BAR bar_id (writes coalesce until the handler runs, on a later loop
	 * iteration). Re-raised after the handler returns if the handler did not
	 * query or modify the written bytes, at most 8 times, then dropped with a
	 * warning (a handler ignoring it must not spin the loop). */
	void (*stateful_write)(struct hw_dev *dev, uint8_t bar_id, uint64_t region_start,
			       void *arg);
	/* The driver reads [offset, offset+len) of BAR bar_id, inside a stateful region (a
	 * trapped access: the client waits for the data). 0: the values are read now;
	 * HW_EVENT_ASYNC: the read returns the values as they are when the handler calls
	 * hw_dev_read_done(), and the client's next message waits until then (a register read
	 * that is a barrier, e.g. an NVMe PMRSTS read). May be NULL. */
	int (*stateful_read)(struct hw_dev *dev, uint8_t bar_id, uint64_t offset, uint32_t len,
			     void *arg);
	/* Function level reset (PCIe FLR, vfio-user DEVICE_RESET, or the client
	 * going away with reason `client_gone`). The handler must stop using host
	 * memory, destroy its doorbells, MSI-X vectors and mmaps; it returns 0 when
	 * done or HW_EVENT_ASYNC and calls hw_dev_event_done() later. A client
	 * that went away keeps its memory mapped until then (no new client is
	 * accepted meanwhile), so the handler never needs to hurry. */
	int (*flr)(struct hw_dev *dev, bool client_gone, void *arg);
	/* The client unmapped [iova, iova+len): the range has already left the
	 * translations (hw_mmap_translate fails for it from now on) but stays
	 * mapped until the handler is done. The handler finishes every use of
	 * pointers it translated into the range (in-flight transfers), releases
	 * its pins in it (hw_mem_pin_put), and makes sure every thread that
	 * translated through the device's mmaps has passed a quiescent point
	 * (finished the work it was doing when the event began); then 0, or
	 * HW_EVENT_ASYNC and hw_dev_event_done() later: the client's reply waits.
	 * May be NULL only when nothing but the loop thread translates. */
	int (*dma_unmap)(struct hw_dev *dev, uint64_t iova, uint64_t len, void *arg);
	/* The client mapped [iova, iova+len) (e.g. memory a queue lived in came
	 * back after a guest reboot's remapping). May be NULL. */
	void (*dma_map)(struct hw_dev *dev, uint64_t iova, uint64_t len, void *arg);
	/* COMMAND Bus Master Enable changed (PCI 3.0 6.2.2): while it is clear the
	 * function must not touch host memory. On `enabled` false the handler
	 * stops every use of host memory as for an unmap of everything (in-flight
	 * transfers finish, pins released, nothing new translated) and returns 0
	 * or HW_EVENT_ASYNC and hw_dev_event_done() later: the config write's
	 * reply waits. On true it may resume; its return value is ignored. MSI-X
	 * messages are held pending by the device meanwhile. May be NULL. */
	int (*bus_master_changed)(struct hw_dev *dev, bool enabled, void *arg);
	/* The client enabled or disabled MSI-X, or masked/unmasked the function. */
	void (*msix_state_changed)(struct hw_dev *dev, bool enabled, bool function_masked,
				   void *arg);
	/* A trapped driver write reached slot `slot` of the DB-by-offset region
	 * starting at region_start of BAR bar_id, and no DB object owns that
	 * slot (the value is kept in the page and counted as an invalid write).
	 * Lets an upper layer report writes to doorbells of queues that do not
	 * exist. May be NULL. */
	void (*db_unowned_write)(struct hw_dev *dev, uint8_t bar_id, uint64_t region_start,
				 uint32_t slot, uint32_t value, void *arg);
};

struct hw_dev_config {
	const char *vuid;	  /* unique id, e.g. "nvme-emu-0" */
	const char *socket_path;  /* the vfio-user socket to create at hotplug */
	unsigned int socket_mode; /* 0 means 0600 */
	enum hw_db_mode db_mode;
	/* Per-client limits (0: the vfu defaults, 256 windows, 1 TiB) and trust:
	 * whether guest-memory fds other than files of tmpfs or hugetlbfs are
	 * accepted (only for a VMM the operator trusts, see vfu.h). */
	uint32_t max_dma_regions;
	uint64_t max_dma_bytes;
	bool allow_any_dma_fd;
};

/* Creates a device of a started type, powered off. NULL with errno EINVAL
 * (type not started, missing vuid/socket_path) or ENOMEM. */
struct hw_dev *hw_dev_create(struct hw_pci_type *type, struct evloop *loop,
			     const struct hw_dev_config *config, const struct hw_dev_ops *ops,
			     void *arg);
/* Frees a device that is powered off (hw_dev_hotunplug finished), with any
 * DB objects and MSI-X vector objects still alive. 0, or -EBUSY (nothing
 * done) while it is plugged. Not from inside one of the device's callbacks. */
int hw_dev_destroy(struct hw_dev *dev);

/* Creates the socket and listens: POWER_OFF -> POWER_ON_PENDING; a client
 * that negotiates moves it to POWER_ON. A client that disconnects returns it
 * to POWER_ON_PENDING (device state reset, resources freed, a new client may
 * attach). Config space, MSI-X and stateful regions are reset to power-on
 * values first (device defaults take effect). -EBUSY if not powered off,
 * -ENOSPC when the profile's max_hotplug_devices are plugged, or the
 * endpoint's -errno. */
int hw_dev_hotplug(struct hw_dev *dev);
/* Closes the client (running the client-gone flr handler) and the socket:
 * -> POWER_OFF_PENDING -> POWER_OFF. 0 when off at return (also when off
 * already), or HW_EVENT_ASYNC while the flr handler finishes: the move to
 * POWER_OFF is then reported through hotplug_state_changed, from a later
 * loop iteration. */
int hw_dev_hotunplug(struct hw_dev *dev);
enum hw_hotplug_state hw_dev_get_hotplug_state(const struct hw_dev *dev);

const char *hw_dev_vuid(const struct hw_dev *dev);
const char *hw_dev_socket_path(const struct hw_dev *dev);
struct hw_pci_type *hw_dev_type(const struct hw_dev *dev);
/* HW_DB_MODE_MMAP when a client is attached and the device offers a
 * doorbell page as a sparse mmap (mmap mode and a page-aligned DB-by-offset
 * region); TRAP otherwise. Whether the client really mapped it cannot be
 * seen from here: trapped doorbell writes are handled in either mode. */
enum hw_db_mode hw_dev_db_mode(const struct hw_dev *dev);

/* Finishes an event handled asynchronously (HW_EVENT_ASYNC): completes the
 * reset after an flr, then sends the held reply. May also be called from
 * inside the handler before it returns HW_EVENT_ASYNC. */
void hw_dev_event_done(struct hw_dev *dev);

/* Ends a read held by stateful_read (HW_EVENT_ASYNC): the client gets the region's values now.
 * Nothing happens when none is held (the client went away meanwhile). */
void hw_dev_read_done(struct hw_dev *dev);

/* Stateful region access. offset is inside the BAR and [offset, offset+len)
 * must lie in one stateful region (-EINVAL otherwise). A query or modify
 * that overlaps the bytes of a pending driver write marks it handled.
 * Modify raises no event. */
int hw_dev_stateful_query(struct hw_dev *dev, uint8_t bar_id, uint64_t offset, void *buf,
			  size_t len);
int hw_dev_stateful_modify(struct hw_dev *dev, uint8_t bar_id, uint64_t offset, const void *buf,
			   size_t len);
/* Device-level default; takes effect at the next FLR or hotplug. */
int hw_dev_set_stateful_default(struct hw_dev *dev, uint8_t bar_id, uint64_t offset,
				const void *data, size_t len);

/* The local mapping of the memory region starting at region_start of BAR bar_id (its size in
 * *size), or NULL with errno EINVAL when there is none. Valid until hw_dev_destroy; the client
 * may change the bytes at any time (copy before validating). Any thread. */
void *hw_dev_memory(struct hw_dev *dev, uint8_t bar_id, uint64_t region_start, uint64_t *size);

/* Counters of the vfio-user endpoint and the BAR, for stats and tests; read on the device's thread. */
struct hw_dev_stats {
	uint64_t msgs_rx, msgs_tx, errors_replied, bad_messages, disconnects;
	uint64_t region_reads, region_writes, posted_writes;
	uint64_t db_writes, db_invalid_writes, msix_raised, msix_pended;
	uint64_t dma_maps, dma_unmaps;
	uint64_t clients_attached;
	uint64_t bar_disabled_accesses; /* BAR accesses with COMMAND memory/I/O space off */
	uint64_t socket_reads; /* recv calls that returned data: msgs_rx / socket_reads is the batching */
	uint64_t write_multis; /* REGION_WRITE_MULTI messages (their writes are in region_writes) */
	uint64_t dma_faults;   /* windows that lost their memory under an access (truncated fd) */
};
void hw_dev_get_stats(const struct hw_dev *dev, struct hw_dev_stats *stats);

/* ------------------------------------------------------------------------ */
/* Doorbells.                                                               */

/* Called on the device's loop thread when the driver's write reached the
 * server as a message (always in trap mode; in mmap mode only when the
 * client did not map the page) or hw_db_modify_value ran, and the DB is
 * started. Guest stores into an mmap'd doorbell page call nothing: the
 * consumer polls hw_db_value_ptr(). */
typedef void (*hw_db_notify_fn)(struct hw_db *db, uint32_t value, void *arg);

/* Creates DB object db_id, stopped. db_id must be a slot of a DB-by-offset
 * region (size >> log_stride slots, counted from the first such region) or,
 * if the type has a DB-by-data region, any id. NULL with errno EINVAL (no such
 * slot), EEXIST (already created), ENOSPC (profile max_db objects reached). */
struct hw_db *hw_db_create(struct hw_dev *dev, uint32_t db_id, hw_db_notify_fn notify, void *arg);
/* Like hw_db_create but in the DB region starting at region_start of BAR
 * bar_id (as DOCA's db_create takes bar id and region start): by offset,
 * db_id is the slot inside that region; by data, any id. Needed when a type
 * has both kinds (plain hw_db_create gives ids below the by-offset slot count
 * to the by-offset regions). Same errors. */
struct hw_db *hw_db_create_at(struct hw_dev *dev, uint8_t bar_id, uint64_t region_start,
			      uint32_t db_id, hw_db_notify_fn notify, void *arg);
int hw_db_start(struct hw_db *db); /* writes now notify */
int hw_db_stop(struct hw_db *db);  /* writes are stored, not notified */
void hw_db_destroy(struct hw_db *db);
uint32_t hw_db_id(const struct hw_db *db);
/* Latest value. Any thread. */
uint32_t hw_db_query_value(const struct hw_db *db);
/* Same effect as a driver write (stores, then notifies if started). */
int hw_db_modify_value(struct hw_db *db, uint32_t value);
/* Where the value lives (in the shared doorbell page for by-offset DBs); the
 * consumer may poll it from any thread. Never NULL for a created DB. */
volatile const uint32_t *hw_db_value_ptr(const struct hw_db *db);

/* ------------------------------------------------------------------------ */
/* MSI-X.                                                                   */

/* MSI-X vector object for `vector` (< the type's num_msix). NULL with errno
 * EINVAL (out of range) or EEXIST. The vector-control mask bit seen by raise
 * is the one the client wrote into the table region; QEMU emulates the
 * table itself and never forwards those writes, so with QEMU only the
 * function mask (config space) pends vectors here and QEMU latches the rest. */
struct hw_msix_vector *hw_msix_vector_create(struct hw_dev *dev, uint16_t vector);
void hw_msix_vector_destroy(struct hw_msix_vector *vec);
uint16_t hw_msix_vector_num(const struct hw_msix_vector *vec);
/* Raises the interrupt: signals the client's eventfd, or sets the PBA bit if
 * the vector or the function is masked (delivered on unmask), or drops it if
 * MSI-X is disabled / no eventfd is set. Any thread, never blocks.
 * Returns 0 if signalled, 1 if pended, -ENODEV if dropped. */
int hw_msix_vector_raise(struct hw_msix_vector *vec);

/* ------------------------------------------------------------------------ */
/* Host (guest) memory.                                                     */

enum hw_mmap_perm {
	HW_MMAP_READ = 1,  /* device reads host memory */
	HW_MMAP_WRITE = 2, /* device writes host memory */
};

/* A view of host memory the device may access: the range
 * [base, base+len) of host addresses with permissions `perm`. Accesses
 * outside it, or outside what the client DMA-mapped with a matching
 * READ/WRITE protection, are refused. NULL with errno EINVAL, or ENODEV when
 * the device is not hot-plugged. The mmap dies with the client: once the
 * client has gone (a new one may have attached), every access fails with
 * EFAULT; destroy it in the flr handler. */
struct hw_mmap *hw_mmap_create(struct hw_dev *dev, uint64_t base, uint64_t len, unsigned int perm);
void hw_mmap_destroy(struct hw_mmap *map);

/* Translates [addr, addr+len) to a local pointer if it lies wholly in one
 * fd-backed DMA window with the needed permission and inside the mmap's range.
 * Returns NULL otherwise (errno EFAULT / EPERM / ENOENT for fd-less windows).
 * Any thread; the pointer stays valid until the dma_unmap or flr event for
 * that range has been handled. */
void *hw_mmap_translate(struct hw_mmap *map, uint64_t addr, uint64_t len, unsigned int perm);
/* Fills iov with the local pieces of [addr, addr+len) (it may span adjacent
 * windows). Returns the number of entries used, or -EFAULT/-EPERM/-E2BIG. */
int hw_mmap_iov(struct hw_mmap *map, uint64_t addr, uint64_t len, unsigned int perm,
		struct iovec *iov, int max_iov);
/* A pinned piece of host memory (queue rings, shadow doorbell pages): its
 * pointer stays valid, even after the client unmaps the memory or goes away,
 * until the pin is put. Pins are how a user keeps a translation across
 * commands; plain translations are only valid until the next unmap event. */
struct hw_mem_pin;
/* Pins [addr, addr+len), which must lie wholly in one fd-backed DMA window
 * with `perm` and inside the mmap's range; *ptr gets the local pointer. NULL
 * with errno EFAULT / EPERM. Loop thread (pins never race with unmaps). */
struct hw_mem_pin *hw_mmap_pin(struct hw_mmap *map, uint64_t addr, uint64_t len, unsigned int perm,
			       void **ptr);
/* Releases a pin; NULL is fine. Any thread. */
void hw_mem_pin_put(struct hw_mem_pin *pin);
/* True if the pinned window overlaps [iova, iova+len). Any thread. */
bool hw_mem_pin_overlaps(const struct hw_mem_pin *pin, uint64_t iova, uint64_t len);

/* Host memory by local address, for I/O layers that register it with the kernel (io_uring fixed
 * buffers): a reference keeping the mapping that holds [va, va + len) (of any device's client),
 * with the mapping's base and size; NULL when none. hw_mem_removed tells whether the client has
 * unmapped it since (then let go); hw_mem_put drops the reference. cb runs whenever a client's
 * windows go away. Any thread (get locks: not for every I/O). */
void *hw_mem_local_get(const void *va, size_t len, void **base, size_t *size);
bool hw_mem_removed(const void *ref);
void hw_mem_put(void *ref);
void hw_mem_set_removed_cb(void (*cb)(void));

/* Synchronous copies through translation. Any thread. 0 or -errno. */
int hw_mmap_copy_from_host(struct hw_mmap *map, void *dst, uint64_t addr, uint64_t len);
int hw_mmap_copy_to_host(struct hw_mmap *map, uint64_t addr, const void *src, uint64_t len);

/* Copies for windows the client mapped without an fd: served by DMA_READ /
 * DMA_WRITE messages to the client. Asynchronous; cb runs on the loop
 * thread with 0 or -errno. Also works for fd-backed windows (done at once,
 * cb deferred). */
typedef void (*hw_dma_done_fn)(int status, void *arg);
int hw_mmap_read_async(struct hw_mmap *map, void *dst, uint64_t addr, uint64_t len,
		       hw_dma_done_fn cb, void *arg);
int hw_mmap_write_async(struct hw_mmap *map, uint64_t addr, const void *src, uint64_t len,
			hw_dma_done_fn cb, void *arg);

#endif
