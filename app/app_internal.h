/* app/app_internal.h - the target's state (transport, subsystems with namespaces and listeners,
 * emulation managers and functions) and the C operations the RPC methods and the command line
 * share. Everything runs on the main thread. Operations return 0 or -errno and leave a message
 * for people in `err` (APP_ERR_LEN bytes). */
#ifndef NVME_EMU_APP_INTERNAL_H
#define NVME_EMU_APP_INTERNAL_H

/* DPA threads run inline in the poll groups by default: `make bench` on a
 * 2-core host with a TCG guest measured that best (a separate hart adds a
 * thread hop per doorbell and per interrupt: about +15 us at QD1). */
#define APP_DEFAULT_DPA_HARTS 0
/* Doorbells in a page the guest writes directly, polled adaptively by the poll group itself:
 * `make bench` (2026-11-26, TCG guest) measured it best from QD8 up (1.35-1.39x QEMU's NVMe at
 * QD8-32, 1.01x for 128 KiB writes, against 0.64-0.82x with trapped doorbells) at 0.4-0.6 %% of
 * a core when idle; SPDK's vfio-user target maps BAR0 by default too. */
#define APP_DEFAULT_DB_MODE HW_DB_MODE_MMAP

#include <stdbool.h>
#include <stdint.h>

#include "backend/bdev.h"
#include "common/evloop.h"
#include "controller/ctrlr.h"
#include "hw/hw.h"

#define APP_VERSION "0.1.0"
#define APP_ERR_LEN 256
#define APP_LOG "app"
/* How long remove_listener waits for the guest to release a hot-plugged function. */
#define APP_HOTPLUG_TIMEOUT_US (60ull * 1000000)
#define APP_MAX_PORTS 32
/* CNTLIDs a subsystem's controllers take by default (FFF0h and up are reserved). */
#define APP_MIN_CNTLID 1
#define APP_MAX_CNTLID 0xffef
#define APP_TRTYPE "PCIE_EMU"

struct evloop;
struct json_object;
struct metrics_http;
struct rpc_server;
struct svc_notify;
struct dpa;
struct pcie_poll_groups;
struct pcie_ctrlr;
struct app_qmp_op;
struct rpc_waiter;

/* Result of an asynchronous operation: rc 0 or -errno with a message. */
typedef void (*app_done_fn)(void *arg, int rc, const char *message);

struct app_transport_opts {
	uint32_t max_queue_depth;	  /* CAP.MQES + 1; 0: 1024 */
	uint32_t max_io_qpairs_per_ctrlr; /* 0: what the profile allows */
	uint32_t max_io_size;		  /* bytes, 4096 << mdts; 0: 128 KiB */
	enum hw_db_mode db_mode;
	uint32_t dpa_harts;
	uint32_t num_poll_groups;
	/* Poll-group threads pinned, one CPU each: those of pg_cpumask (-m 0xMASK, SPDK's reactor
	 * mask; one poll group per bit, in bit order), or with pin_poll_groups (--pin-poll-groups)
	 * the first num_poll_groups CPUs the process may run on. Neither: not pinned. */
	uint64_t pg_cpumask;
	bool pin_poll_groups;
	const struct hw_profile *profile;
	bool sgl;
	/* What one client (VMM) may do to a function: DMA windows and bytes mapped at once (0:
	 * the defaults, 256 and 1 TiB), and whether fds other than tmpfs/hugetlbfs files are taken. */
	uint32_t max_dma_regions;
	uint64_t max_dma_bytes;
	bool allow_any_dma_fd;
	/* SPDK's options: the name the transport was created with (PCIE_EMU, VFIOUSER or DOCA,
	 * kept for nvmf_get_transports and save_config), no Doorbell Buffer Config
	 * (disable_shadow_doorbells), and sizes accepted and reported that have no effect on a
	 * PCIe function (in_capsule_data_size, io_unit_size: DOCA's "-c" and "-u"), max_aq_depth. */
	char trtype[16];
	bool no_dbbuf;
	/* The functions' PCI IDs (0: nvme-emu's defaults, see pcie_nvme_pci_ids). */
	uint16_t vendor_id, device_id, subsys_vendor_id, subsys_id;
	uint32_t in_capsule_data_size, io_unit_size, max_aq_depth;
};

/* The transport names nvme-emu answers to, canonical spelling: "PCIE_EMU", "VFIOUSER" (listener
 * traddr a directory, socket <traddr>/cntrl, as SPDK's vfio-user target) or "DOCA"; NULL for
 * anything else. Case-insensitive. */
const char *app_trtype_canonical(const char *trtype);

struct app_manager {
	char *name;
	char *qmp_socket; /* NULL: local (attach by hand) */
	char *ports[APP_MAX_PORTS];
	unsigned int nr_ports;
	struct app_manager *next;
};

struct app_subsys;
struct app_secondaries;
struct app_secondary;

/* A primary controller's secondary controllers (app_secondary.c): how many, the flexible
 * resources it shares with them (0: the defaults), where their sockets go. */
struct app_sec_opts {
	uint32_t count;		       /* 0: none; at most CTRLR_VIRT_MAX_SECONDARIES */
	uint32_t vq_flexible, vi_flexible; /* VQFRT, VIFRT */
	uint32_t max_vq, max_vi;	   /* VQFRSM, VIFRSM: most one secondary may have */
	const char *dir; /* the sockets DIR/sec<CNTLID> (NULL: <the primary's socket>.sec<CNTLID>) */
};

/* An emulated PCIe function: a VUID, its vfio-user socket, the manager that plugs it. */
struct app_function {
	char *vuid;
	char *socket_path;
	struct app_manager *mgr;
	bool implicit;		   /* created by add_listener for a path; goes with the listener */
	struct app_listener *listener; /* the listener serving it, or NULL */
	char *bus;		   /* the QEMU port it is plugged into, or NULL */
	struct app_function *next;
};

struct app_ns {
	uint32_t nsid;
	char *bdev_name;
	/* Reservations (controller/io_resv.c): the state the namespace keeps across listener
	 * changes, and its Persist Through Power Loss file (SPDK's ptpl_file; NULL: none). */
	char *ptpl_file;
	/* Reservations shared with every daemon exporting the same RBD image (app_shared_resv.c). */
	bool shared_resv;
	struct app_sr *resv_store; /* its store (freed with the shared namespace, not with this) */
	struct ctrlr_ns_shared *shared;
	bool has_uuid, has_nguid, has_eui64;
	uint8_t uuid[16], nguid[16], eui64[8];
};

enum app_listener_state {
	APP_LISTENER_NONE,
	APP_LISTENER_ATTACHING, /* device_add in flight */
	APP_LISTENER_LIVE,
	APP_LISTENER_DETACHING, /* device_del in flight, waiting for DEVICE_DELETED */
};

/* A listener: one controller (its own CNTLID) of a subsystem, served on a function's socket.
 * A subsystem has any number of them: several hosts (VMs), or one host with several paths. */
struct app_listener {
	struct app_subsys *s;
	uint16_t cntlid;
	enum app_listener_state state;
	struct app_function *fn;
	struct pcie_ctrlr *pc;
	struct app_qmp_op *qmp;
	app_done_fn done; /* of the operation in flight */
	void *done_arg;
	/* The controller's teardown runs asynchronously; then this continues the operation, with
	 * the status it will report. */
	void (*teardown_cont)(struct app_listener *l);
	int pending_rc;
	char pending_msg[APP_ERR_LEN];
	uint64_t shutdowns_at_detach; /* to tell whether the guest shut it down during device_del */
	/* As it was asked for (VFIOUSER's traddr is the directory of the socket). */
	char listen_trtype[16];
	char *listen_traddr;
	/* A primary controller's secondary controllers, or NULL (app_secondary.c). */
	struct app_secondaries *secs;
	/* A secondary controller's listener (made by Virtualization Management, not by RPC):
	 * its place among its primary's secondaries; NULL for the others. */
	struct app_secondary *sec;
	struct app_listener *next;
};

struct app_subsys {
	struct app_target *t;
	char *nqn, *serial, *model;
	uint32_t max_namespaces;
	bool allow_any_host;
	/* The CNTLIDs its controllers take (SPDK's min_cntlid/max_cntlid; default 1..0xffef). */
	uint16_t min_cntlid, max_cntlid;
	struct app_ns *ns[CTRLR_MAX_NAMESPACES]; /* by nsid - 1 */
	struct app_listener *listeners;		 /* in the order they were added */
	struct ctrlr_subsys *cs;		 /* the controllers' member list */
	/* nvmf_delete_subsystem in progress: listeners detach one by one, then it goes. */
	bool deleting;
	app_done_fn del_done;
	void *del_arg;
	int del_rc;
	char del_msg[APP_ERR_LEN];
	/* Host NQNs allowed (nvmf_subsystem_add_host): kept and reported. A PCIe function has no
	 * host NQN to check them against; the VMM that owns the socket is the host. */
	char **hosts;
	unsigned int nr_hosts;
	/* Namespace Management capacity pool (rpc_ns_pool.c), or NULL; pool_creating while its
	 * header is being read. A subsystem with a pool has one controller at most. */
	struct ctrlr_ns_pool *pool;
	bool pool_creating;
	/* The controller's Persistent Event Log state file (controller/pel.c), or NULL. */
	char *event_log_file;
	char *state_file; /* the controllers' state files (FILE, FILE.<cntlid>), or NULL */
	/* Each controller's Controller Memory Buffer (bytes, 0: none) and Persistent Memory
	 * Region file (NULL: none; FILE.<cntlid> for all but the first CNTLID) and size (0: the
	 * file's). */
	uint64_t cmb_size;
	char *pmr_file;
	uint64_t pmr_size;
	/* Flexible Data Placement: the endurance group's reclaim unit handles (0: no FDP) and
	 * reclaim unit size in bytes (0: 16 MiB); namespaces need bdev_fdp_create bdevs of that
	 * geometry while the host has FDP enabled. */
	uint16_t fdp_ruh;
	uint64_t fdp_ru_size;
	/* CNTLID claims and releases in the cluster under way (app_cluster_cntlid.c): the
	 * subsystem is busy until they end. */
	uint32_t cntlid_claims;
	struct app_subsys *next;
};

/* Histogram buckets per power of two in the metrics, by default (docs/service.md). */
#define APP_METRICS_BUCKETS_PER_OCTAVE 4

/* The metrics exporter (metrics.c). */
struct app_metrics {
	struct metrics_http *http; /* NULL: not serving */
	unsigned int buckets_per_octave; /* 0: APP_METRICS_BUCKETS_PER_OCTAVE */
	bool per_queue;			 /* I/O statistics by queue too (a qid label) */
	bool from_cmdline; /* --metrics: a command-line setting, not in save_config nor reloads */
};

/* The watchdog's liveness check of one poll group: a message it answers from its loop. */
struct app_svc_ping {
	struct evloop_msg msg;
	uint64_t answered; /* __atomic: the round it answered last (the poll group writes) */
	uint64_t sent;	   /* the round of the message in flight (main thread) */
	bool pending;	   /* __atomic: posted and not run yet */
};
#define APP_SVC_MAX_PINGS 64

/* Running under a service manager (service.c): its notification socket, the watchdog, the
 * reloads, and the test-only faults. Main thread. */
struct app_service {
	struct svc_notify *notify;	/* NULL: no manager listens */
	uint64_t watchdog_us;		/* WATCHDOG_USEC, 0: off */
	struct evloop_timer *watchdog;	/* the next WATCHDOG=1 */
	uint64_t round;			/* watchdog rounds so far */
	struct app_svc_ping pings[APP_SVC_MAX_PINGS];
	unsigned int late_pg;		/* 1 + the poll group reported late, 0: none */
	bool test_faults;		/* NVME_EMU_TEST_FAULTS=1: nvmf_emu_test_fault works */
	bool ready;			/* READY=1 sent */
	bool reloading;
	uint64_t reloads_ok, reloads_failed;
	/* The configuration file last applied (-c, a reload), for the methods save_config does
	 * not write back: a reload runs those again only when they changed. */
	struct json_object *applied;
};

struct app_target {
	struct evloop *loop;
	struct rpc_server *rpc;
	char *run_dir; /* where functions' default sockets go */
	/* transport */
	bool has_transport;
	struct app_transport_opts tr;
	struct dpa *dpa;
	struct pcie_poll_groups *pgs;
	/* command-line defaults for nvmf_create_transport */
	struct app_transport_opts tr_defaults;
	struct app_subsys *subsystems;
	struct app_manager *managers; /* "local" first */
	struct app_function *functions;
	unsigned int next_fn_id;
	unsigned int next_serial; /* default serial numbers NVMEEMU0001, ... */
	bool initialized;		 /* framework_start_init done */
	const char *config_file;	 /* -c: replayed at framework init */
	struct rpc_waiter *init_waiters; /* framework_wait_init calls held until then */
	bool shutting_down;
	/* app_target_fini in progress: steps re-run as deletions finish. */
	void (*fini_done)(void *arg);
	void *fini_arg;
	bool fini_stepping, fini_again, fini_finished;
	/* CNTLID table operations (app_cluster_cntlid.c) whose RADOS object is not closed yet:
	 * the RBD bdevs they go through stay until then. */
	uint32_t cntlid_ops;
	int setup_rc; /* --socket setup's listener result */
	struct app_metrics metrics;
	struct app_service svc;
};

/* ---- target (app_target.c) ---- */

int app_target_init(struct app_target *t, struct evloop *loop, const char *run_dir);
/* Cancels hotplug operations, destroys controllers (asynchronously: the loop must keep running),
 * the transport, bdevs; frees everything; then done(arg) on the loop thread, maybe from inside. */
void app_target_fini(struct app_target *t, void (*done)(void *arg), void *arg);
/* Re-runs the teardown after an asynchronous deletion finished (no-op before app_target_fini). */
void app_target_fini_step(struct app_target *t);
int app_transport_create(struct app_target *t, const struct app_transport_opts *o, char *err);
/* I/O queue pairs a controller gets under the transport's options. */
uint16_t app_transport_io_queues(const struct app_target *t);
/* mdts for the transport's max_io_size. */
uint8_t app_transport_mdts(const struct app_target *t);

/* ---- subsystems, namespaces, listeners (app_nvmf.c) ---- */

struct app_subsys *app_subsys_find(struct app_target *t, const char *nqn);
/* min_cntlid/max_cntlid 0: 1 and 0xffef. */
/* The Persistent Event Log state file of the subsystem's controller (before its listener is
 * added). 0 or -ENOMEM (err set). */
/* Sets one of a subsystem's file paths (event_log_file, state_file) to a copy of path. */
int app_subsys_set_path(char **slot, const char *path, char *err);
/* Its controllers' CMB size and PMR file and size (before a listener is added): 0, or -EINVAL
 * (a size that is not a power of two from 1 MiB to 1 GiB), -EBUSY (a listener exists),
 * -ENOMEM, with err. */
int app_subsys_set_devmem(struct app_subsys *s, uint64_t cmb_size, const char *pmr_file,
			  uint64_t pmr_size, char *err);
/* The same checks alone (nothing set). */
int app_devmem_check(uint64_t cmb_size, const char *pmr_file, uint64_t pmr_size, char *err);
int app_subsys_create(struct app_target *t, const char *nqn, const char *serial, const char *model,
		      uint32_t max_namespaces, bool allow_any_host, uint32_t min_cntlid,
		      uint32_t max_cntlid, char *err);
/* A listener of s is being plugged or unplugged (or s is being deleted). */
bool app_subsys_busy(const struct app_subsys *s);
/* The controller of s's first listener that has one, or NULL. */
struct ctrlr *app_subsys_first_ctrl(const struct app_subsys *s);
/* The controller with that CNTLID, or NULL. */
struct app_listener *app_subsys_listener_by_cntlid(const struct app_subsys *s, uint16_t cntlid);
/* Deletes a subsystem, unplugging its listener first (asynchronously with a QEMU manager).
 * done runs once, maybe before this returns. */
void app_subsys_delete(struct app_target *t, struct app_subsys *s, app_done_fn done, void *arg);

struct app_ns_opts {
	const char *bdev_name;
	uint32_t nsid;			  /* 0: lowest free */
	const char *uuid, *nguid, *eui64; /* text or NULL */
	const char *ptpl_file;		  /* reservation state file or NULL */
	bool shared_resv;		  /* reservations kept in RADOS beside the RBD image */
};
/* Binds ns's reservations to a RADOS object beside its RBD image, shared by every daemon that
 * exports the image (app_shared_resv.c); the namespace's identifiers, unless given, are derived
 * from the image so every host sees the same. 0 or -errno with err. */
int app_ns_share_resv(struct app_target *t, struct app_ns *ns, char *err);
/* Test fault: the namespace's watch on its record breaks for hold_ms (-ENOENT: not watching). */
int app_ns_shared_resv_lose_watch(struct app_ns *ns, uint32_t hold_ms);
/* 64-bit FNV-1a of text from basis (0xcbf29ce484222325: the standard offset basis): names the
 * cluster objects and identifiers derived from text. */
uint64_t app_fnv1a64(const char *text, uint64_t basis);
/* Test fault: the next `count` reads of the record fail with -EIO (and are tried again). */
int app_ns_shared_resv_fail_reads(struct app_ns *ns, uint32_t count);
/* Returns the nsid (> 0) or -errno. */
int app_subsys_add_ns(struct app_target *t, struct app_subsys *s, const struct app_ns_opts *o,
		      char *err);
int app_subsys_remove_ns(struct app_target *t, struct app_subsys *s, uint32_t nsid, char *err);
/* The subsystem whose namespace uses bdev `name`, or NULL. */
struct app_subsys *app_bdev_user(struct app_target *t, const char *name);

/* The subsystem's list of allowed host NQNs (reported and saved; see struct app_subsys).
 * 0, -EINVAL, -EEXIST / -ENOENT, -ENOMEM with err. */
int app_subsys_add_host(struct app_subsys *s, const char *host, char *err);
int app_subsys_remove_host(struct app_subsys *s, const char *host, char *err);
/* Adds a listener, a controller with the lowest free CNTLID: `traddr` is a function's VUID or a
 * vfio-user socket path (a function is then created on `manager`, default "local"); `bus` picks
 * the QEMU port (NULL: the manager's first free one). With a QEMU manager the function is
 * hot-plugged (device_add) before done runs. */
void app_listener_add(struct app_target *t, struct app_subsys *s, const char *trtype,
		      const char *traddr, const char *manager, const char *bus,
		      const struct app_sec_opts *sec, app_done_fn done, void *arg);
/* A secondary controller going online: a listener with its CNTLID and resources on a new
 * function at its socket (the primary's manager; hot-plugged when that has a QMP socket).
 * done once it is live, or with the error after its teardown. */
void app_listener_add_secondary(struct app_target *t, struct app_listener *primary,
				struct app_secondary *sec, const char *socket, app_done_fn done,
				void *arg);
/* Unplugs and closes a live listener (device_del first with a QEMU manager); done runs once,
 * after its teardown. */
void app_listener_detach(struct app_target *t, struct app_listener *l, app_done_fn done,
			 void *arg);
/* Removes the listener at traddr (its VUID, socket path or the traddr it was added with; NULL:
 * the first one): device_del and wait for DEVICE_DELETED with a QEMU manager, then closes the
 * endpoint. */
void app_listener_remove(struct app_target *t, struct app_subsys *s, const char *traddr,
			 app_done_fn done, void *arg);

/* ---- secondary controllers (app_secondary.c) ---- */

/* Checks o against the transport and s, and picks the secondaries' CNTLIDs: the lowest free ones
 * of s's range after the primary's (primary_cntlid). *out NULL when o asks for none. 0, or
 * -EINVAL/-ENOSPC/-ENOMEM with err. */
int app_secondaries_create(struct app_target *t, struct app_subsys *s, uint16_t primary_cntlid,
			   const struct app_sec_opts *o, struct app_secondaries **out, char *err);
void app_secondaries_free(struct app_secondaries *secs);
/* True when a primary of s keeps CNTLID id for a secondary. */
bool app_secondaries_cntlid_taken(const struct app_subsys *s, uint16_t id);
/* The primary l's controller is made: it becomes the primary (the state file's assignment read).
 * 0 or -errno with err. */
int app_secondaries_bind(struct app_listener *l, char *err);
/* The primary l is live: the secondaries its state says are online come online again. */
void app_secondaries_resume(struct app_listener *l);
/* l is going: its live secondaries go first (unplugged, closed; their state kept). true when
 * that is under way: app_listener_detach(t, l, done, arg) runs again once they are gone. */
bool app_secondaries_close(struct app_listener *l, app_done_fn done, void *arg);
/* A secondary's controller config (queues and vectors from its resources) / its controller is
 * made (CNS 14h on it) / its listener is gone. */
void app_secondary_config(const struct app_listener *l, struct ctrlr_config *c);
int app_secondary_started(struct app_listener *l, char *err);
void app_secondary_gone(struct app_listener *l);
/* The primary CNTLID of a secondary's listener; a secondary's CNTLID. */
uint16_t app_secondary_pcid(const struct app_listener *l);
uint16_t app_secondary_scid(const struct app_secondary *sec);
/* The options a primary was added with (save_config, nvmf_get_subsystems), and its secondaries'
 * state. */
void app_secondaries_opts(const struct app_listener *l, struct app_sec_opts *o);
struct json_object *app_secondaries_describe(const struct app_listener *l);
/* ---- CNTLIDs allocated through the cluster (app_cluster_cntlid.c) ---- */

/* A subsystem with a namespace of shared_reservations spans the daemons exporting the image: its
 * CNTLIDs come from the cluster. */
bool app_subsys_cluster_cntlid(const struct app_subsys *s);
/* done(arg, 0, cntlid, NULL) or done(arg, -errno, 0, message), on the main loop. */
typedef void (*app_cc_done_fn)(void *arg, int rc, uint16_t cntlid, const char *err);
/* Claims a CNTLID of s's range for the listener at traddr (the one it held before, when this
 * host's listener at traddr had one). 0 (done will run) or -errno with err. */
int app_cluster_cntlid_claim(struct app_target *t, struct app_subsys *s, const char *traddr,
			     app_cc_done_fn done, void *arg, char *err);
/* Releases cntlid held by this host's listener at traddr (done as for a claim). 0 (done will
 * run) or -errno with err. */
int app_cluster_cntlid_release(struct app_target *t, struct app_subsys *s, const char *traddr,
			       uint16_t cntlid, app_cc_done_fn done, void *arg, char *err);

/* ---- managers and functions (app_emu.c) ---- */

struct app_manager *app_manager_find(struct app_target *t, const char *name);
int app_manager_create(struct app_target *t, const char *name, const char *qmp_socket,
		       const char *const *ports, unsigned int nr_ports, char *err);
int app_manager_delete(struct app_target *t, const char *name, char *err);
struct app_function *app_function_find(struct app_target *t, const char *vuid);
struct app_function *app_function_find_socket(struct app_target *t, const char *path);
/* vuid/socket NULL: generated. */
int app_function_create(struct app_target *t, struct app_manager *mgr, const char *vuid,
			const char *socket_path, bool implicit, struct app_function **out,
			char *err);
int app_function_destroy(struct app_target *t, struct app_function *fn, char *err);

/* ---- Namespace Management capacity pools (rpc_ns_pool.c) ---- */

struct app_ns_pool_opts {
	const char *bdev_name;
	bool format; /* use a bdev holding data but no pool header (overwritten) */
	/* Namespaces to lay out again on a blank bdev (from a saved configuration). */
	const struct ctrlr_ns_pool_ns_info *ns;
	uint32_t num_ns;
};
/* Makes bdev o->bdev_name the capacity pool of s (its live controller, if any, is bound at
 * once); done(arg, rc, msg) runs once the pool's header was read, never from inside this call
 * unless the request is refused at once. */
void app_ns_pool_create(struct app_target *t, struct app_subsys *s,
			const struct app_ns_pool_opts *o, app_done_fn done, void *arg);
/* Frees s's pool (not its bdev): -EBUSY with a listener, -ENOENT without a pool. */
int app_ns_pool_delete(struct app_subsys *s, char *err);

/* ---- RPC method tables (rpc_*.c) ---- */

int rpc_bdev_register(struct rpc_server *srv);
/* bdev_delay_create's four latencies, bdev_rbd_create's config map, as parameters of o (for
 * bdev_get_bdevs' driver_specific and save_config alike). */
struct bdev_info;
struct json_object;
void rpc_bdev_add_latencies(struct json_object *o, const struct bdev_info *info);
void rpc_bdev_add_rbd_config(struct json_object *o, const struct bdev_info *info);
int rpc_nvmf_register(struct rpc_server *srv);
int rpc_emu_register(struct rpc_server *srv);
int rpc_health_register(struct rpc_server *srv);
int rpc_framework_register(struct rpc_server *srv);
int rpc_ns_pool_register(struct rpc_server *srv);
int rpc_zns_register(struct rpc_server *srv);
/* The pool part of save_config: nvmf_emu_ns_pool_create of s, or NULL without a pool. */
struct json_object *rpc_ns_pool_config(struct app_subsys *s);
/* The whole configuration as save_config writes it ({"subsystems": [...]}). */
struct json_object *rpc_config_build(struct app_target *t);
/* Replays a save_config file through the server; done(arg, rc, msg) at the end. The file, once
 * applied, is kept as t->svc.applied. 0, or -EINVAL (not a configuration), -ENOMEM (done is not
 * called then). */
int rpc_config_load(struct app_target *t, const char *path, app_done_fn done, void *arg);
/* Replays a configuration already parsed (a reference is taken); `record`: keep it as
 * t->svc.applied when it worked; busy_retry_us: a call refused with -EBUSY is tried again every
 * 100 ms for that long (0: it fails the replay). Same results. */
int rpc_config_run(struct app_target *t, struct json_object *root, bool record,
		   uint64_t busy_retry_us, app_done_fn done, void *arg);
int rpc_service_register(struct rpc_server *srv);

/* ---- the metrics exporter (metrics.c) ---- */

/* The exposition text of the target's metrics (malloc'ed). 0 or -ENOMEM. */
int app_metrics_render(struct app_target *t, char **text, size_t *len);
/* Serves them on `addr` (metrics_http.h's forms). buckets_per_octave 0: the default; else 1, 2,
 * 4, 8 or 16. The same address again only updates the options. 0, -EINVAL, -EEXIST (serving on
 * another address) or the socket's -errno, with err. */
int app_metrics_start(struct app_target *t, const char *addr, unsigned int buckets_per_octave,
		      bool per_queue, char *err);
void app_metrics_stop(struct app_target *t);

/* ---- running as a service (service.c) ---- */

/* Opens $NOTIFY_SOCKET, arms the watchdog ($WATCHDOG_USEC), reads $NVME_EMU_TEST_FAULTS. 0 or
 * -errno with err (a $NOTIFY_SOCKET that cannot be used). */
int app_service_init(struct app_target *t, char *err);
/* READY=1: the configuration is applied and every listener is up. Once. */
void app_service_ready(struct app_target *t);
/* RELOADING=1 before a reload, READY=1 (and the result in STATUS) after it. */
void app_service_reload_begin(struct app_target *t);
void app_service_reload_end(struct app_target *t, int rc, const char *msg);
/* Reloads configuration file `path` (NULL: the -c one) between RELOADING=1 and READY=1;
 * done(arg, rc, msg) at the end. 0, or -ENOENT (no file), -EBUSY (one is running, or the target
 * is starting), -ENOMEM with err, done not called then. */
int app_service_reload(struct app_target *t, const char *path, app_done_fn done, void *arg,
		       char *err);
/* STOPPING=1: the clean shutdown has begun. */
void app_service_stopping(struct app_target *t);
void app_service_fini(struct app_target *t);
/* Test-only faults (NVME_EMU_TEST_FAULTS=1): "hang_main_loop", "hang_poll_group" (group pg),
 * "lose_cluster_watch" (shared-reservation namespaces lose their RADOS watch for hold_ms),
 * "fail_cluster_reads" (their next `count` reads of the reservation record fail with -EIO).
 * 0, -EPERM (not enabled), -EINVAL, -ENOENT with err. */
int app_service_test_fault(struct app_target *t, const char *fault, unsigned int pg,
			   uint32_t hold_ms, uint32_t count, char *err);

/* ---- reloading the configuration (config_reload.c) ---- */

/* Brings the running target to what configuration file `path` says, changing only what differs
 * (guests attached to unchanged listeners stay attached); refuses, changing nothing, what only a
 * restart can change (the transport, a subsystem's parameters, a capacity pool). done(arg, rc,
 * msg) once, maybe before this returns. */
void app_config_reload(struct app_target *t, const char *path, app_done_fn done, void *arg);
/* Marks the framework initialized (RPC_RUNTIME) and answers held framework_wait_init calls. */
void rpc_framework_init_done(struct app_target *t);
/* Fails held framework_wait_init calls (shutdown). */
void rpc_framework_cancel_waiters(struct app_target *t);

#endif
