/* app/rpc.h - the JSON-RPC 2.0 server (SPDK's framing: JSON values back to back on a unix stream
 * socket), its method registry, request completion and parameter decoding.
 *
 * Threads: everything here runs on the main thread (the thread running the evloop given to
 * rpc_server_create); nothing blocks. Methods may complete their request later (asynchronously),
 * still on the main thread.
 */
#ifndef NVME_EMU_APP_RPC_H
#define NVME_EMU_APP_RPC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

struct evloop;
struct rpc_server;
struct rpc_request;

/* JSON-RPC 2.0 error codes. Method failures use -errno (SPDK's convention). */
#define RPC_ERR_PARSE (-32700)
#define RPC_ERR_INVALID_REQUEST (-32600)
#define RPC_ERR_METHOD_NOT_FOUND (-32601)
#define RPC_ERR_INVALID_PARAMS (-32602)
#define RPC_ERR_INTERNAL (-32603)

/* Largest request accepted on a connection; a longer one is answered with -32700 and the
 * connection is closed. */
#define RPC_MAX_REQUEST (4u << 20)
/* Connections served at once; more are accepted and closed at once. */
#define RPC_MAX_CLIENTS 64

/* When a method may be called (SPDK's SPDK_RPC_STARTUP / SPDK_RPC_RUNTIME). */
#define RPC_STARTUP (1u << 0) /* before framework_start_init (--wait-for-rpc) */
#define RPC_RUNTIME (1u << 1) /* after it */

/*
 * A method. `params` is the request's "params" (NULL when absent; may be any JSON type: check it),
 * owned by the request and valid until the request completes. The method must end, now or later
 * on the main thread, in exactly one rpc_request_result() or rpc_request_error().
 */
typedef void (*rpc_method_fn)(struct rpc_request *req, struct json_object *params, void *ctx);

struct rpc_method {
	const char *name;
	rpc_method_fn fn;
	unsigned int state_mask; /* RPC_STARTUP and/or RPC_RUNTIME */
	bool deprecated_alias;	 /* an alias (nvmf_doca_*): listed, not saved */
};

/* ---- server ---- */

/*
 * Creates a server listening on `path` (mode 0600). An existing socket file at `path` is replaced
 * unless a live server answers on it (-EADDRINUSE). `ctx` is passed to every method. The server
 * starts in the RPC_RUNTIME state. Returns 0 and the server in *out, -ENAMETOOLONG, -ENOMEM or the
 * socket's -errno. Main thread.
 */
int rpc_server_create(struct evloop *loop, const char *path, void *ctx, struct rpc_server **out);
/* Closes every connection (pending requests are dropped: their completion becomes a no-op),
 * unlinks the socket and frees. NULL is accepted. */
void rpc_server_destroy(struct rpc_server *srv);
/* Registers `n` methods (the table is kept, not copied: it must outlive the server).
 * Returns 0, -EEXIST (a name is taken) or -ENOMEM. */
int rpc_server_register(struct rpc_server *srv, const struct rpc_method *methods, size_t n);
/* RPC_STARTUP (only startup methods run) or RPC_RUNTIME. */
void rpc_server_set_state(struct rpc_server *srv, unsigned int state);
unsigned int rpc_server_get_state(const struct rpc_server *srv);
/* Calls fn(m, arg) for each registered method in registration order. */
void rpc_server_foreach_method(const struct rpc_server *srv,
			       void (*fn)(const struct rpc_method *m, void *arg), void *arg);
/* The registered method called `name`, or NULL. */
const struct rpc_method *rpc_server_find(const struct rpc_server *srv, const char *name);

/* Completion of an internal call: `result` (borrowed, may be NULL) on success, or `code` != 0 and
 * `message`. */
typedef void (*rpc_call_done)(void *arg, struct json_object *result, int code, const char *message);
/*
 * Runs `method` with `params` (a reference is taken) as if a client had sent it, and calls
 * done(arg, ...) when it completes, which may be before this returns. Used to replay a
 * configuration file. The state mask is checked as for clients. Returns 0 or -ENOMEM (done is not
 * called then).
 */
int rpc_server_call(struct rpc_server *srv, const char *method, struct json_object *params,
		    rpc_call_done done, void *arg);

/* ---- completing a request ---- */

/* Sends `result` (ownership taken; NULL sends JSON null) and frees the request. */
void rpc_request_result(struct rpc_request *req, struct json_object *result);
/* Sends {"code": code, "message": printf(fmt, ...)} and frees the request. */
void rpc_request_error(struct rpc_request *req, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Sends -errno `rc` (negative) with the message "<what>: <strerror>". */
void rpc_request_errno(struct rpc_request *req, int rc, const char *what);
/* The server a request came to. */
struct rpc_server *rpc_request_server(const struct rpc_request *req);

/* ---- decoding params (SPDK's spdk_json_decode_object) ---- */

enum rpc_type {
	RPC_T_STRING, /* const char *, borrowed from the params */
	RPC_T_BOOL,   /* bool */
	RPC_T_U32,    /* uint32_t, 0..UINT32_MAX integer */
	RPC_T_U64,    /* uint64_t, non-negative integer */
	RPC_T_OBJECT, /* struct json_object *, borrowed; must be an object */
	RPC_T_ARRAY,  /* struct json_object *, borrowed; must be an array */
	RPC_T_I64,    /* int64_t, any integer (e.g. numa_id -1) */
};

/* Where a parameter accepted for compatibility only goes: nowhere. */
#define RPC_NO_FIELD ((size_t)-1)

/*
 * One parameter. SPDK's rpc.py sends the default of every option it knows, so a method also lists
 * the SPDK parameters it does not act on (offset RPC_NO_FIELD):
 * - `unsupported` NULL: accepted with any value of the type and ignored (hints, tuning of
 *   buffers nvme-emu does not have);
 * - `unsupported` set: accepted only at the value meaning "off/default" (false, `dflt` for
 *   numbers, "" for strings, [] for arrays); any other value is refused with
 *   "parameter 'x' is not supported: <unsupported>".
 */
struct rpc_decoder {
	const char *name;
	enum rpc_type type;
	size_t offset; /* where the value goes in the output struct, or RPC_NO_FIELD */
	bool optional;
	const char *unsupported;
	int64_t dflt;
};

/* A parameter stored in field `name` of struct st. */
#define RPC_DEC(st, fname, ftype, opt)                                                             \
	{ .name = #fname, .type = (ftype), .offset = offsetof(struct st, fname), .optional = (opt) }
#define RPC_N(a) (sizeof(a) / sizeof((a)[0]))
/* An SPDK parameter accepted only at its default (see struct rpc_decoder). */
#define RPC_OFF(pname, ptype, pdflt, why)                                                          \
	{ .name = (pname), .type = (ptype), .offset = RPC_NO_FIELD, .optional = true,               \
	  .unsupported = (why), .dflt = (pdflt) }
/* An SPDK parameter accepted with any value and ignored. */
#define RPC_IGNORED(pname, ptype)                                                                  \
	{ .name = (pname), .type = (ptype), .offset = RPC_NO_FIELD, .optional = true }

/*
 * Decodes the object `obj` into `out` by the table: every member must be in the table with the
 * right type and range; every non-optional entry must be present. Optional absent members leave
 * *out untouched (fill defaults first). NULL `obj` is an empty object. Returns 0, or -EINVAL with a
 * message ("missing parameter 'x'", "parameter 'x' must be a string", "unknown parameter 'y'") in
 * err.
 */
int rpc_decode_object(struct json_object *obj, const struct rpc_decoder *dec, size_t n, void *out,
		      char *err, size_t err_len);
/*
 * rpc_decode_object, and on failure completes `req` with -32602 and the message. Returns 0 or
 * -EINVAL (the request is then complete).
 */
int rpc_decode_params(struct rpc_request *req, struct json_object *params,
		      const struct rpc_decoder *dec, size_t n, void *out);

#endif
