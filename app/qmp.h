/* app/qmp.h - an asynchronous QMP (QEMU Machine Protocol) client on the main evloop: connect,
 * greeting, qmp_capabilities, one command, and optionally wait for the DEVICE_DELETED event of a
 * device. Asynchronous because QEMU's device_add/device_del talk to our own vfio-user sockets,
 * which are served by the same thread. */
#ifndef NVME_EMU_APP_QMP_H
#define NVME_EMU_APP_QMP_H

#include <stdint.h>

#include <json-c/json.h>

struct evloop;
struct app_qmp_op;

/* rc 0, or -errno with a message: the QMP error's "desc", or what failed. Runs on the main
 * thread, once; the op is freed after it returns. */
typedef void (*app_qmp_done)(void *arg, int rc, const char *message);

/*
 * Connects to `qmp_socket` (blocking connect on a unix socket, immediate), then asynchronously runs
 * `cmd` (a {"execute": ..., "arguments": ...} object; ownership taken). When `wait_device` is not
 * NULL, completes only after the DEVICE_DELETED event for that device id. The whole exchange is
 * bounded by `timeout_us` (-ETIMEDOUT). Returns 0 (done will be called) or -errno with nothing
 * started (connect failed: -ENOENT, -ECONNREFUSED...). *out may be NULL.
 */
int app_qmp_run(struct evloop *loop, const char *qmp_socket, struct json_object *cmd,
		const char *wait_device, uint64_t timeout_us, app_qmp_done done, void *arg,
		struct app_qmp_op **out);

/* Ends an op now: done(arg, -ECANCELED, ...) is called before this returns. */
void app_qmp_cancel(struct app_qmp_op *op);

#endif
