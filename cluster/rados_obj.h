/* cluster/rados_obj.h - one small RADOS object shared by many daemons as a versioned register.
 *
 * Read: the object's bytes with the version RADOS keeps for it. Write: the whole object replaced
 * only if nobody wrote it since the version the writer read (compare-and-swap on the object
 * version, checked by the OSD in the same operation as the write), so daemons on different hosts
 * changing it at once never lose an update: the loser gets -ECANCELED, reads again and retries.
 * Watch: every daemon that opened the object hears of each change through a notify, acts on it
 * and acknowledges it; the writer's notify completes once every watcher acknowledged or timed
 * out, and lists the ones that timed out (the daemons a fence must stop another way).
 *
 * This is what a namespace shared across hosts stands on (cluster-wide reservations, controller
 * ID allocation). It knows nothing of NVMe.
 *
 * Threads: a rados_obj belongs to the thread running its loop; every call is made there and every
 * callback runs there. librados's threads only post messages to it. The cluster handle and I/O
 * context stay the caller's and must outlive the object (until close's callback).
 */
#ifndef NVME_EMU_CLUSTER_RADOS_OBJ_H
#define NVME_EMU_CLUSTER_RADOS_OBJ_H

#include <rados/librados.h>
#include <stddef.h>
#include <stdint.h>

struct evloop;
struct rados_obj;

/* Bytes an object may hold (a read of a larger one fails with -EFBIG). */
#define RADOS_OBJ_MAX_SIZE (256u * 1024)

struct rados_obj_ops {
	/* A notify arrived: some daemon (maybe this one) changed the object. The owner reads it,
	 * acts on the change, then calls rados_obj_ack(o, notify_id): the writer waits for that.
	 * notifier_gid is the writing client's global id (rados_get_instance_id). */
	void (*changed)(void *arg, uint64_t notify_id, uint64_t notifier_gid);
	/* The watch broke (err: -ENOTCONN after a lost session, -EBLOCKLISTED (-108) once this
	 * client was fenced). Changes may be missed until `rewatched`: the owner must stop trusting
	 * what it read. The object re-establishes the watch by itself, except when fenced. */
	void (*watch_lost)(void *arg, int err);
	/* The watch is up again: the owner reads the object (what it held may be stale). */
	void (*rewatched)(void *arg);
};

/* What a notify learned: how many watchers acknowledged, and the global ids of those that did
 * not answer within the timeout (at most RADOS_OBJ_MAX_TIMEOUTS listed; ntimeouts counts all). */
#define RADOS_OBJ_MAX_TIMEOUTS 16
struct rados_obj_notify_result {
	uint32_t nacks;
	uint32_t ntimeouts;
	uint64_t timeout_gid[RADOS_OBJ_MAX_TIMEOUTS];
};

typedef void (*rados_obj_open_cb)(void *arg, struct rados_obj *o, int rc);
typedef void (*rados_obj_read_cb)(void *arg, int rc, const void *data, size_t len,
				  uint64_t version);
typedef void (*rados_obj_write_cb)(void *arg, int rc, uint64_t version);
typedef void (*rados_obj_notify_cb)(void *arg, int rc, const struct rados_obj_notify_result *res);
typedef void (*rados_obj_done_cb)(void *arg);

/* Opens object `oid` of `io` and watches it (watch_timeout_s: how long the OSD keeps the watch of
 * a client it lost). done(arg, o, 0) on the loop once the watch is up; done(arg, NULL, -errno)
 * when it cannot be (then nothing is left to close). Returns 0 or -errno (then no callback). */
int rados_obj_open(struct evloop *loop, rados_t cluster, rados_ioctx_t io, const char *oid,
		   uint32_t watch_timeout_s, const struct rados_obj_ops *ops, void *arg,
		   rados_obj_open_cb done, void *done_arg);

/* Reads the object: cb(arg, 0, data, len, version) (data valid during the call only), or
 * cb(arg, -ENOENT, NULL, 0, 0) when it does not exist, or another -errno. Returns 0 or -errno
 * (then no callback). */
int rados_obj_read(struct rados_obj *o, rados_obj_read_cb cb, void *arg);

/* Replaces the object with data if its version is still `version` (0: only if it does not exist
 * yet). cb(arg, 0, new_version), cb(arg, -ECANCELED, 0) when another write came first, or another
 * -errno. data is copied. Returns 0 or -errno (then no callback). */
int rados_obj_write(struct rados_obj *o, uint64_t version, const void *data, size_t len,
		    rados_obj_write_cb cb, void *arg);

/* Notifies every watcher (this daemon's own watch too) and waits up to timeout_ms for their
 * acknowledgements: cb(arg, rc, res) with rc 0 when all answered, -ETIMEDOUT when some did not
 * (res lists them), another -errno when the notify could not be sent (res counts nothing).
 * Returns 0 or -errno (then no callback). */
int rados_obj_notify(struct rados_obj *o, uint64_t timeout_ms, rados_obj_notify_cb cb, void *arg);

/* A directory kept beside the register (the object's omap): set `key` to `value`, or read the
 * value of `key` (cb(arg, 0, value) with a NUL-terminated copy valid during the call; -ENOENT).
 * A set moves the object's version too (a concurrent write then retries). Returns 0 or -errno
 * (then no callback). */
typedef void (*rados_obj_get_cb)(void *arg, int rc, const char *value);
int rados_obj_dir_set(struct rados_obj *o, const char *key, const char *value,
		      rados_obj_write_cb cb, void *arg);
int rados_obj_dir_get(struct rados_obj *o, const char *key, rados_obj_get_cb cb, void *arg);

/* Fences the client at `addr` (as rados_getaddrs gives it): Ceph's OSD blocklist, for `expire_s`
 * seconds, so no operation of it lands any more. The monitor command is a blocking call in
 * librados: it runs on a thread of its own, done(arg, rc) on the loop. Returns 0 or -errno. */
int rados_obj_blocklist(struct rados_obj *o, const char *addr, uint32_t expire_s,
			void (*done)(void *arg, int rc), void *arg);

/* Acknowledges notify_id (from ops->changed). Fire and forget: the OSD relays it. */
void rados_obj_ack(struct rados_obj *o, uint64_t notify_id);

/* For tests (the daemon's test faults): as if librados reported err on the watch; the watch is
 * re-established after hold_ms (0: at once), as after a real loss. */
void rados_obj_inject_watch_error(struct rados_obj *o, int err, uint32_t hold_ms);

/* This client's global id (what other daemons' notify results name). */
uint64_t rados_obj_gid(const struct rados_obj *o);

/* Ends the watch; once librados is done with every operation and callback of the object, it is
 * freed and done(arg) runs on the loop. Callbacks of operations still in flight are not called
 * after this. */
void rados_obj_close(struct rados_obj *o, rados_obj_done_cb done, void *arg);

#endif
