/* app/rpc_bdev.c - bdev methods with SPDK's names and parameters: bdev_malloc_create/delete,
 * bdev_null_create/delete, bdev_aio_create/delete, bdev_uring_create/delete, bdev_get_bdevs; and
 * bdev_nbd_create/delete (an NBD export behind a namespace), bdev_rbd_create/delete/resize (a
 * Ceph RBD image): both created asynchronously. */
#include "app/app_internal.h"
#include "app/rpc.h"
#include "common/evloop.h"

#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

struct rpc_bdev_create {
	const char *name;
	uint64_t num_blocks;
	uint32_t block_size;
	const char *uuid;
	const char *filename;
	bool poll; /* bdev_uring_create: polled reads and writes (nvme-emu's own parameter) */
	bool read_zeroes; /* bdev_null_create: reads return zeroes (nvme-emu's own parameter) */
};

/* What SPDK's rpc.py (current and earlier LTS releases) may send beside the parameters used:
 * metadata and protection information are refused until nvme-emu namespaces have them; layout
 * hints are accepted and ignored (README: "SPDK's rpc.py"). */
#define RPC_BDEV_NO_MD "nvme-emu bdevs have no metadata or protection information"
#define RPC_BDEV_MD_COMPAT                                                                         \
	RPC_OFF("md_size", RPC_T_U32, 0, RPC_BDEV_NO_MD),                                          \
	    RPC_OFF("md_interleave", RPC_T_BOOL, 0, RPC_BDEV_NO_MD),                               \
	    RPC_OFF("dif_type", RPC_T_U32, 0, RPC_BDEV_NO_MD),                                     \
	    RPC_OFF("dif_is_head_of_md", RPC_T_BOOL, 0, RPC_BDEV_NO_MD),                           \
	    RPC_OFF("dif_pi_format", RPC_T_U32, 0, RPC_BDEV_NO_MD),                                \
	    RPC_IGNORED("physical_block_size", RPC_T_U32), RPC_IGNORED("numa_id", RPC_T_I64)

#define RPC_BDEV_MEM_PARAMS                                                                        \
	RPC_DEC(rpc_bdev_create, name, RPC_T_STRING, true),                                        \
	    RPC_DEC(rpc_bdev_create, num_blocks, RPC_T_U64, false),                                \
	    RPC_DEC(rpc_bdev_create, block_size, RPC_T_U32, false),                                \
	    RPC_DEC(rpc_bdev_create, uuid, RPC_T_STRING, true), RPC_BDEV_MD_COMPAT,                \
	    RPC_IGNORED("optimal_io_boundary", RPC_T_U32),                                         \
	    /* bdev_null_create's write/unmap hints. */                                            \
	    RPC_IGNORED("preferred_write_alignment", RPC_T_U32),                                   \
	    RPC_IGNORED("preferred_write_granularity", RPC_T_U32),                                 \
	    RPC_IGNORED("optimal_write_size", RPC_T_U32),                                          \
	    RPC_IGNORED("preferred_unmap_alignment", RPC_T_U32),                                   \
	    RPC_IGNORED("preferred_unmap_granularity", RPC_T_U32)

static const struct rpc_decoder rpc_bdev_mem_dec[] = {RPC_BDEV_MEM_PARAMS};

/* SPDK's null bdev leaves read buffers alone; read_zeroes is QEMU's null-co read-zeroes. */
static const struct rpc_decoder rpc_bdev_null_dec[] = {
    RPC_BDEV_MEM_PARAMS,
    RPC_DEC(rpc_bdev_create, read_zeroes, RPC_T_BOOL, true),
};

static const struct rpc_decoder rpc_bdev_aio_dec[] = {
    RPC_DEC(rpc_bdev_create, name, RPC_T_STRING, false),
    RPC_DEC(rpc_bdev_create, filename, RPC_T_STRING, false),
    RPC_DEC(rpc_bdev_create, block_size, RPC_T_U32, true),
    RPC_DEC(rpc_bdev_create, uuid, RPC_T_STRING, true),
    RPC_OFF("readonly", RPC_T_BOOL, 0, "aio bdevs are read-write"),
    /* Unmap and write zeroes punch holes whenever the file system can: always on here. */
    RPC_IGNORED("fallocate", RPC_T_BOOL),
    /* RWF_NOWAIT is an optimisation of SPDK's reactor model; submission here never blocks the
     * poll group for other reasons. */
    RPC_IGNORED("nowait", RPC_T_BOOL),
};

struct rpc_bdev_name {
	const char *name;
};

static const struct rpc_decoder rpc_bdev_name_dec[] = {
    RPC_DEC(rpc_bdev_name, name, RPC_T_STRING, false),
};

static const struct rpc_decoder rpc_bdev_get_dec[] = {
    RPC_DEC(rpc_bdev_name, name, RPC_T_STRING, true),
    /* Waiting for a bdev to appear: bdevs here exist once their create returned. */
    RPC_IGNORED("timeout", RPC_T_U32),
};

/* Completes a create: the bdev's name, or the error explained. */
static void rpc_bdev_created(struct rpc_request *req, int rc, const char *name, uint32_t bs)
{
	switch (rc) {
	case 0:
		rpc_request_result(req, json_object_new_string(name));
		return;
	case -EEXIST:
		rpc_request_error(req, rc, "bdev %s already exists", name);
		return;
	case -EINVAL:
		rpc_request_error(req, rc,
				  "cannot create bdev %s: bad name, block_size (%u: 512 or 4096) "
				  "or size",
				  name, bs);
		return;
	default:
		rpc_request_errno(req, rc, "cannot create the bdev");
	}
}

static int rpc_bdev_uuid(struct rpc_request *req, const char *text, uint8_t *uuid)
{
	if (text && bdev_uuid_parse(text, uuid)) {
		rpc_request_error(req, RPC_ERR_INVALID_PARAMS, "Invalid parameters: bad uuid '%s'",
				  text);
		return -EINVAL;
	}
	return 0;
}

/* bdev_malloc_create and bdev_null_create. */
static void rpc_bdev_mem_create(struct rpc_request *req, struct json_object *params, bool null)
{
	struct rpc_bdev_create p = {0};
	uint8_t uuid[BDEV_UUID_LEN];
	char name[BDEV_NAME_MAX + 1];
	int rc;

	if ((null ? rpc_decode_params(req, params, rpc_bdev_null_dec, RPC_N(rpc_bdev_null_dec), &p)
		  : rpc_decode_params(req, params, rpc_bdev_mem_dec, RPC_N(rpc_bdev_mem_dec), &p)) ||
	    rpc_bdev_uuid(req, p.uuid, uuid))
		return;
	if (p.name) {
		snprintf(name, sizeof(name), "%s", p.name);
	} else {
		/* SPDK names them Malloc0, Malloc1 ... : the first free one. */
		for (unsigned int i = 0;; i++) {
			snprintf(name, sizeof(name), "%s%u", null ? "Null" : "Malloc", i);
			if (!bdev_lookup(name))
				break;
		}
	}
	if (p.name && strlen(p.name) > BDEV_NAME_MAX) {
		rpc_request_error(req, -EINVAL, "bdev name longer than %d characters",
				  BDEV_NAME_MAX);
		return;
	}
	rc = null
		 ? bdev_null_create(name, p.num_blocks, p.block_size, p.uuid ? uuid : NULL,
				    p.read_zeroes, NULL)
		 : bdev_malloc_create(name, p.num_blocks, p.block_size, p.uuid ? uuid : NULL, NULL);
	rpc_bdev_created(req, rc, name, p.block_size);
}

static void rpc_bdev_malloc_create(struct rpc_request *req, struct json_object *params, void *ctx)
{
	rpc_bdev_mem_create(req, params, false);
}

static void rpc_bdev_null_create(struct rpc_request *req, struct json_object *params, void *ctx)
{
	rpc_bdev_mem_create(req, params, true);
}

/* bdev_aio_create and bdev_uring_create: a file or block device, the same parameters. */
static void rpc_bdev_file_create(struct rpc_request *req, struct json_object *params,
				 const struct rpc_decoder *dec, size_t n,
				 int (*create)(const char *, const struct bdev_aio_opts *,
					       struct bdev **))
{
	struct rpc_bdev_create p = {.block_size = 512};
	struct bdev_aio_opts o = {0};
	uint8_t uuid[BDEV_UUID_LEN];
	int rc;

	if (rpc_decode_params(req, params, dec, n, &p) || rpc_bdev_uuid(req, p.uuid, uuid))
		return;
	o.filename = p.filename;
	o.block_size = p.block_size;
	o.uuid = p.uuid ? uuid : NULL;
	o.poll = p.poll;
	rc = create(p.name, &o, NULL);
	if (p.poll && (rc == -EINVAL || rc == -EOPNOTSUPP) && (p.block_size == 512 ||
							       p.block_size == 4096)) {
		rpc_request_error(req, rc,
				  "cannot poll %s: polled I/O needs O_DIRECT on a file system or "
				  "device that supports it (see the daemon's log)",
				  p.filename);
		return;
	}
	if (rc && rc != -EEXIST && rc != -EINVAL) {
		rpc_request_error(req, rc, "cannot open %s: %s", p.filename, strerror(-rc));
		return;
	}
	rpc_bdev_created(req, rc, p.name, p.block_size);
}

static void rpc_bdev_aio_create(struct rpc_request *req, struct json_object *params, void *ctx)
{
	rpc_bdev_file_create(req, params, rpc_bdev_aio_dec, RPC_N(rpc_bdev_aio_dec),
			     bdev_aio_create);
}

/* SPDK's bdev_uring_create: filename, name, block_size, uuid; and nvme-emu's poll. */
static const struct rpc_decoder rpc_bdev_uring_dec[] = {
    RPC_DEC(rpc_bdev_create, name, RPC_T_STRING, false),
    RPC_DEC(rpc_bdev_create, filename, RPC_T_STRING, false),
    RPC_DEC(rpc_bdev_create, block_size, RPC_T_U32, true),
    RPC_DEC(rpc_bdev_create, uuid, RPC_T_STRING, true),
    RPC_DEC(rpc_bdev_create, poll, RPC_T_BOOL, true),
};

static void rpc_bdev_uring_create(struct rpc_request *req, struct json_object *params, void *ctx)
{
	rpc_bdev_file_create(req, params, rpc_bdev_uring_dec, RPC_N(rpc_bdev_uring_dec),
			     bdev_uring_create);
}

/* bdev_nbd_create: name, uri (libnbd's syntax), block_size, uuid, num_connections (used when
 * the server allows multi-conn), reconnect_timeout_sec. Answered once the handshake is over. */
struct rpc_bdev_nbd_create {
	const char *name;
	const char *uri;
	uint32_t block_size;
	const char *uuid;
	uint32_t num_connections;
	uint32_t reconnect_timeout_sec;
};

static const struct rpc_decoder rpc_bdev_nbd_dec[] = {
    RPC_DEC(rpc_bdev_nbd_create, name, RPC_T_STRING, false),
    RPC_DEC(rpc_bdev_nbd_create, uri, RPC_T_STRING, false),
    RPC_DEC(rpc_bdev_nbd_create, block_size, RPC_T_U32, true),
    RPC_DEC(rpc_bdev_nbd_create, uuid, RPC_T_STRING, true),
    RPC_DEC(rpc_bdev_nbd_create, num_connections, RPC_T_U32, true),
    RPC_DEC(rpc_bdev_nbd_create, reconnect_timeout_sec, RPC_T_U32, true),
};

static void rpc_bdev_nbd_created(void *arg, int rc, const char *message, struct bdev *bdev)
{
	struct rpc_request *req = arg;

	if (rc)
		rpc_request_error(req, rc, "%s", message);
	else
		rpc_request_result(req, json_object_new_string(bdev_get_name(bdev)));
}

static void rpc_bdev_nbd_create(struct rpc_request *req, struct json_object *params, void *ctx)
{
	struct rpc_bdev_nbd_create p = {.block_size = 512};
	struct bdev_nbd_opts o = {0};
	struct app_target *t = ctx;
	uint8_t uuid[BDEV_UUID_LEN];
	int rc;

	if (rpc_decode_params(req, params, rpc_bdev_nbd_dec, RPC_N(rpc_bdev_nbd_dec), &p) ||
	    rpc_bdev_uuid(req, p.uuid, uuid))
		return;
	o.uri = p.uri;
	o.block_size = p.block_size;
	o.uuid = p.uuid ? uuid : NULL;
	o.num_connections = p.num_connections;
	o.reconnect_timeout = p.reconnect_timeout_sec;
	rc = bdev_nbd_create(p.name, &o, t->loop, rpc_bdev_nbd_created, req);
	if (rc == -EINVAL && p.num_connections > BDEV_NBD_MAX_CONNECTIONS)
		rpc_request_error(req, rc, "num_connections %u: at most %d", p.num_connections,
				  BDEV_NBD_MAX_CONNECTIONS);
	else if (rc == -EINVAL && strncmp(p.uri, "nbd", 3))
		rpc_request_error(req, rc,
				  "uri '%s' is not an NBD URI (nbd://, nbds://, nbd+unix://, "
				  "nbds+unix://)",
				  p.uri);
	else if (rc)
		rpc_bdev_created(req, rc, p.name, p.block_size);
}

/* bdev_rbd_create with SPDK's parameters: name (default Ceph<N>), user_id, config (a map for
 * rados_conf_set; without it the configuration file), pool_name, rbd_name, block_size, uuid.
 * Answered once the image is open. */
struct rpc_bdev_rbd_create {
	const char *name;
	const char *user_id;
	struct json_object *config;
	const char *pool_name;
	const char *rbd_name;
	uint32_t block_size;
	const char *uuid;
};

static const struct rpc_decoder rpc_bdev_rbd_dec[] = {
    RPC_DEC(rpc_bdev_rbd_create, name, RPC_T_STRING, true),
    RPC_DEC(rpc_bdev_rbd_create, user_id, RPC_T_STRING, true),
    RPC_DEC(rpc_bdev_rbd_create, config, RPC_T_OBJECT, true),
    RPC_DEC(rpc_bdev_rbd_create, pool_name, RPC_T_STRING, false),
    RPC_DEC(rpc_bdev_rbd_create, rbd_name, RPC_T_STRING, false),
    RPC_DEC(rpc_bdev_rbd_create, block_size, RPC_T_U32, false),
    RPC_DEC(rpc_bdev_rbd_create, uuid, RPC_T_STRING, true),
    RPC_OFF("cluster_name", RPC_T_STRING, 0,
	    "shared clusters (bdev_rbd_register_cluster) are not implemented: give user_id and "
	    "config"),
    RPC_OFF("read_only", RPC_T_BOOL, 0, "read-only RBD bdevs are not implemented"),
};

static void rpc_bdev_rbd_created(void *arg, int rc, const char *message, struct bdev *bdev)
{
	struct rpc_request *req = arg;

	if (rc)
		rpc_request_error(req, rc, "%s", message);
	else
		rpc_request_result(req, json_object_new_string(bdev_get_name(bdev)));
}

static void rpc_bdev_rbd_create(struct rpc_request *req, struct json_object *params, void *ctx)
{
	struct rpc_bdev_rbd_create p = {0};
	struct bdev_rbd_opts o = {0};
	struct app_target *t = ctx;
	const char *config[64];
	uint8_t uuid[BDEV_UUID_LEN];
	char name[BDEV_NAME_MAX + 1];
	unsigned int n = 0;
	int rc;

	if (rpc_decode_params(req, params, rpc_bdev_rbd_dec, RPC_N(rpc_bdev_rbd_dec), &p) ||
	    rpc_bdev_uuid(req, p.uuid, uuid))
		return;
	if (p.config) {
		json_object_object_foreach(p.config, key, val)
		{
			if (!json_object_is_type(val, json_type_string)) {
				rpc_request_error(req, RPC_ERR_INVALID_PARAMS,
						  "Invalid parameters: config value of '%s' is not a "
						  "string",
						  key);
				return;
			}
			if (n == 64) {
				rpc_request_error(req, -E2BIG, "config: at most 32 entries");
				return;
			}
			config[n++] = key;
			config[n++] = json_object_get_string(val);
		}
	}
	if (p.name) {
		snprintf(name, sizeof(name), "%s", p.name);
	} else {
		for (unsigned int i = 0;; i++) {
			snprintf(name, sizeof(name), "Ceph%u", i);
			if (!bdev_lookup(name))
				break;
		}
	}
	o.pool_name = p.pool_name;
	o.rbd_name = p.rbd_name;
	o.user_id = p.user_id;
	o.config = config;
	o.nconfig = n / 2;
	o.block_size = p.block_size;
	o.uuid = p.uuid ? uuid : NULL;
	rc = bdev_rbd_create(name, &o, t->loop, rpc_bdev_rbd_created, req);
	if (rc)
		rpc_bdev_created(req, rc, name, p.block_size);
}

struct rpc_bdev_rbd_resize {
	const char *name;
	uint64_t new_size;
};

static const struct rpc_decoder rpc_bdev_rbd_resize_dec[] = {
    RPC_DEC(rpc_bdev_rbd_resize, name, RPC_T_STRING, false),
    RPC_DEC(rpc_bdev_rbd_resize, new_size, RPC_T_U64, false),
};

static void rpc_bdev_rbd_resized(void *arg, int rc, const char *message)
{
	struct rpc_request *req = arg;

	if (rc)
		rpc_request_error(req, rc, "%s", message);
	else
		rpc_request_result(req, json_object_new_boolean(true));
}

/* bdev_rbd_resize: new_size in MiB (SPDK's unit); growing only. */
static void rpc_bdev_rbd_resize(struct rpc_request *req, struct json_object *params, void *ctx)
{
	struct rpc_bdev_rbd_resize p = {0};
	int rc;

	if (rpc_decode_params(req, params, rpc_bdev_rbd_resize_dec,
			      RPC_N(rpc_bdev_rbd_resize_dec), &p))
		return;
	if (p.new_size > (UINT64_MAX >> 20)) {
		rpc_request_error(req, -EINVAL, "new_size %" PRIu64 " MiB is too large", p.new_size);
		return;
	}
	rc = bdev_rbd_resize(p.name, p.new_size << 20, rpc_bdev_rbd_resized, req);
	if (rc == -ENODEV)
		rpc_request_error(req, rc, "no rbd bdev %s", p.name);
	else if (rc == -EINVAL)
		rpc_request_error(req, rc,
				  "new_size %" PRIu64 " MiB: smaller than the image (shrinking a "
				  "live namespace is refused) or not whole blocks",
				  p.new_size);
	else if (rc == -EBUSY)
		rpc_request_error(req, rc, "a resize of %s is under way", p.name);
	else if (rc)
		rpc_request_errno(req, rc, "bdev_rbd_resize");
}

/* bdev_error_create (SPDK's): EE_<base_name> over base_name. Answers true. */
struct rpc_bdev_error_create {
	const char *base_name;
	const char *uuid;
};

static const struct rpc_decoder rpc_bdev_error_create_dec[] = {
    RPC_DEC(rpc_bdev_error_create, base_name, RPC_T_STRING, false),
    RPC_DEC(rpc_bdev_error_create, uuid, RPC_T_STRING, true),
};

/* The reason a stacked bdev cannot be made over `base`. */
static void rpc_bdev_stack_error(struct rpc_request *req, int rc, const char *name,
				 const char *base)
{
	if (rc == -ENODEV)
		rpc_request_error(req, rc, "base bdev %s does not exist", base);
	else if (rc == -EBUSY)
		rpc_request_error(req, rc, "base bdev %s is claimed (a namespace or another bdev)",
				  base);
	else if (rc == -EEXIST)
		rpc_request_error(req, rc, "bdev %s already exists", name);
	else
		rpc_request_errno(req, rc, "cannot create the bdev");
}

static void rpc_bdev_error_create(struct rpc_request *req, struct json_object *params, void *ctx)
{
	struct rpc_bdev_error_create p = {0};
	uint8_t uuid[BDEV_UUID_LEN];
	char name[BDEV_NAME_MAX + 8];
	int rc;

	if (rpc_decode_params(req, params, rpc_bdev_error_create_dec,
			      RPC_N(rpc_bdev_error_create_dec), &p) ||
	    rpc_bdev_uuid(req, p.uuid, uuid))
		return;
	snprintf(name, sizeof(name), "EE_%s", p.base_name);
	rc = bdev_error_create(p.base_name, p.uuid ? uuid : NULL, NULL);
	if (rc)
		rpc_bdev_stack_error(req, rc, name, p.base_name);
	else
		rpc_request_result(req, json_object_new_boolean(true));
}

/* bdev_error_inject_error (SPDK's): name, io_type (read, write, unmap, flush, all, clear),
 * error_type (failure, nvme_failure, pending, corrupt_data, nomem), num (1), queue_depth,
 * nvme_sct, nvme_sc, corrupt_offset, corrupt_value. */
struct rpc_bdev_error_inject {
	const char *name;
	const char *io_type;
	const char *error_type;
	uint32_t num;
	uint32_t queue_depth;
	uint32_t nvme_sct, nvme_sc;
	uint64_t corrupt_offset;
	uint32_t corrupt_value;
};

static const struct rpc_decoder rpc_bdev_error_inject_dec[] = {
    RPC_DEC(rpc_bdev_error_inject, name, RPC_T_STRING, false),
    RPC_DEC(rpc_bdev_error_inject, io_type, RPC_T_STRING, false),
    RPC_DEC(rpc_bdev_error_inject, error_type, RPC_T_STRING, false),
    RPC_DEC(rpc_bdev_error_inject, num, RPC_T_U32, true),
    RPC_DEC(rpc_bdev_error_inject, queue_depth, RPC_T_U32, true),
    RPC_DEC(rpc_bdev_error_inject, nvme_sct, RPC_T_U32, true),
    RPC_DEC(rpc_bdev_error_inject, nvme_sc, RPC_T_U32, true),
    RPC_DEC(rpc_bdev_error_inject, corrupt_offset, RPC_T_U64, true),
    RPC_DEC(rpc_bdev_error_inject, corrupt_value, RPC_T_U32, true),
};

static void rpc_bdev_error_inject(struct rpc_request *req, struct json_object *params, void *ctx)
{
	static const struct {
		const char *name;
		int type;
	} io_types[] = {{"read", BDEV_IO_READ},		 {"write", BDEV_IO_WRITE},
			{"unmap", BDEV_IO_UNMAP},	 {"flush", BDEV_IO_FLUSH},
			{"write_zeroes", BDEV_IO_WRITE_ZEROES}, {"all", BDEV_ERROR_IO_ALL},
			{"clear", BDEV_ERROR_IO_CLEAR}};
	static const struct {
		const char *name;
		enum bdev_error_type type;
	} err_types[] = {{"failure", BDEV_ERROR_FAILURE},	 {"nvme_failure", BDEV_ERROR_NVME},
			 {"pending", BDEV_ERROR_PENDING},	 {"corrupt_data", BDEV_ERROR_CORRUPT},
			 {"nomem", BDEV_ERROR_NOMEM}};
	struct rpc_bdev_error_inject p = {.num = 1};
	struct bdev_error_injection inj = {0};
	int io_type = -100, rc;

	if (rpc_decode_params(req, params, rpc_bdev_error_inject_dec,
			      RPC_N(rpc_bdev_error_inject_dec), &p))
		return;
	for (size_t i = 0; i < RPC_N(io_types); i++)
		if (!strcmp(p.io_type, io_types[i].name))
			io_type = io_types[i].type;
	for (size_t i = 0; i < RPC_N(err_types); i++)
		if (!strcmp(p.error_type, err_types[i].name))
			inj.type = err_types[i].type;
	if (io_type == -100) {
		rpc_request_error(req, -EINVAL,
				  "io_type '%s': read, write, unmap, flush, write_zeroes, all or "
				  "clear",
				  p.io_type);
		return;
	}
	if (!inj.type) {
		rpc_request_error(req, -EINVAL,
				  "error_type '%s': failure, nvme_failure, pending, corrupt_data "
				  "or nomem",
				  p.error_type);
		return;
	}
	if (p.nvme_sct > 7 || p.nvme_sc > 255 || p.corrupt_value > 255) {
		rpc_request_error(req, -EINVAL, "nvme_sct 0..7, nvme_sc 0..255, corrupt_value 1..255");
		return;
	}
	if (inj.type == BDEV_ERROR_CORRUPT && !p.corrupt_value) {
		rpc_request_error(req, -EINVAL, "corrupt_data needs corrupt_value 1..255");
		return;
	}
	if (!p.num && io_type != BDEV_ERROR_IO_CLEAR) {
		rpc_request_error(req, -EINVAL, "num must be at least 1");
		return;
	}
	inj.num = p.num;
	inj.queue_depth = p.queue_depth;
	inj.nvme_sct = (uint8_t)p.nvme_sct;
	inj.nvme_sc = (uint8_t)p.nvme_sc;
	inj.corrupt_offset = p.corrupt_offset;
	inj.corrupt_value = (uint8_t)p.corrupt_value;
	rc = bdev_error_inject(p.name, io_type, &inj);
	if (rc == -ENODEV)
		rpc_request_error(req, rc, "no error bdev %s", p.name);
	else if (rc)
		rpc_request_errno(req, rc, "bdev_error_inject_error");
	else
		rpc_request_result(req, json_object_new_boolean(true));
}

static void rpc_bdev_error_resume(struct rpc_request *req, struct json_object *params, void *ctx)
{
	struct rpc_bdev_name p = {0};
	int rc;

	if (rpc_decode_params(req, params, rpc_bdev_name_dec, 1, &p))
		return;
	rc = bdev_error_resume_pending(p.name);
	if (rc)
		rpc_request_error(req, rc, "no error bdev %s", p.name);
	else
		rpc_request_result(req, json_object_new_boolean(true));
}

/* bdev_delay_create (SPDK's): base_bdev_name, name, uuid and the four latencies in
 * microseconds. Answers the name. */
struct rpc_bdev_delay_create {
	const char *base_bdev_name;
	const char *name;
	const char *uuid;
	uint64_t lat[BDEV_DELAY_NR];
};

static const struct rpc_decoder rpc_bdev_delay_create_dec[] = {
    RPC_DEC(rpc_bdev_delay_create, base_bdev_name, RPC_T_STRING, false),
    RPC_DEC(rpc_bdev_delay_create, name, RPC_T_STRING, false),
    RPC_DEC(rpc_bdev_delay_create, uuid, RPC_T_STRING, true),
    {.name = "avg_read_latency", .type = RPC_T_U64,
     .offset = offsetof(struct rpc_bdev_delay_create, lat[BDEV_DELAY_AVG_READ])},
    {.name = "p99_read_latency", .type = RPC_T_U64,
     .offset = offsetof(struct rpc_bdev_delay_create, lat[BDEV_DELAY_P99_READ])},
    {.name = "avg_write_latency", .type = RPC_T_U64,
     .offset = offsetof(struct rpc_bdev_delay_create, lat[BDEV_DELAY_AVG_WRITE])},
    {.name = "p99_write_latency", .type = RPC_T_U64,
     .offset = offsetof(struct rpc_bdev_delay_create, lat[BDEV_DELAY_P99_WRITE])},
};

static void rpc_bdev_delay_create(struct rpc_request *req, struct json_object *params, void *ctx)
{
	struct rpc_bdev_delay_create p = {0};
	uint8_t uuid[BDEV_UUID_LEN];
	int rc;

	if (rpc_decode_params(req, params, rpc_bdev_delay_create_dec,
			      RPC_N(rpc_bdev_delay_create_dec), &p) ||
	    rpc_bdev_uuid(req, p.uuid, uuid))
		return;
	rc = bdev_delay_create(p.name, p.base_bdev_name, p.uuid ? uuid : NULL, p.lat, NULL);
	if (rc == -EINVAL)
		rpc_request_error(req, rc, "bad name, or a latency above an hour");
	else if (rc)
		rpc_bdev_stack_error(req, rc, p.name, p.base_bdev_name);
	else
		rpc_request_result(req, json_object_new_string(p.name));
}

/* bdev_zone_block_create (SPDK's): name, base_bdev, zone_capacity, optimal_open_zones; ours
 * besides: max_open_zones, max_active_zones (0: no limit), zone_desc_ext_size (bytes; 0: no
 * zone descriptor extensions), state_file (the zone states across restarts), uuid. Answers the
 * name. */
struct rpc_bdev_zone_block_create {
	const char *name;
	const char *base_bdev;
	const char *uuid;
	struct bdev_zone_block_opts o;
};

static const struct rpc_decoder rpc_bdev_zone_block_create_dec[] = {
    RPC_DEC(rpc_bdev_zone_block_create, name, RPC_T_STRING, false),
    RPC_DEC(rpc_bdev_zone_block_create, base_bdev, RPC_T_STRING, false),
    RPC_DEC(rpc_bdev_zone_block_create, uuid, RPC_T_STRING, true),
    {.name = "zone_capacity", .type = RPC_T_U64,
     .offset = offsetof(struct rpc_bdev_zone_block_create, o.zone_capacity)},
    {.name = "optimal_open_zones", .type = RPC_T_U64,
     .offset = offsetof(struct rpc_bdev_zone_block_create, o.optimal_open_zones)},
    {.name = "max_open_zones", .type = RPC_T_U32, .optional = true,
     .offset = offsetof(struct rpc_bdev_zone_block_create, o.max_open_zones)},
    {.name = "max_active_zones", .type = RPC_T_U32, .optional = true,
     .offset = offsetof(struct rpc_bdev_zone_block_create, o.max_active_zones)},
    {.name = "zone_desc_ext_size", .type = RPC_T_U32, .optional = true,
     .offset = offsetof(struct rpc_bdev_zone_block_create, o.zone_desc_ext_size)},
    {.name = "state_file", .type = RPC_T_STRING, .optional = true,
     .offset = offsetof(struct rpc_bdev_zone_block_create, o.state_file)},
};

static void rpc_bdev_zone_block_create(struct rpc_request *req, struct json_object *params,
				       void *ctx)
{
	struct rpc_bdev_zone_block_create p = {0};
	uint8_t uuid[BDEV_UUID_LEN];
	int rc;

	if (rpc_decode_params(req, params, rpc_bdev_zone_block_create_dec,
			      RPC_N(rpc_bdev_zone_block_create_dec), &p) ||
	    rpc_bdev_uuid(req, p.uuid, uuid))
		return;
	rc = bdev_zone_block_create(p.name, p.base_bdev, &p.o, p.uuid ? uuid : NULL, NULL);
	if (rc == -EINVAL)
		rpc_request_error(req, rc,
				  "bad name, zone_capacity (1..2^32), zone limits (optimal and "
				  "max open zones at most max active, all at most the zones in "
				  "the base), zone_desc_ext_size (a multiple of 64 up to 16320, "
				  "64 MiB for all zones) or an empty state_file");
	else if (rc)
		rpc_bdev_stack_error(req, rc, p.name, p.base_bdev);
	else
		rpc_request_result(req, json_object_new_string(p.name));
}

/* bdev_fdp_create (ours): name, base_bdev, num_ruh (reclaim unit handles), ru_size (bytes per
 * reclaim unit, a multiple of the base's block size), uuid. Answers the name once the layout
 * is loaded (or the reason it could not be). */
struct rpc_bdev_fdp_create {
	const char *name;
	const char *base_bdev;
	const char *uuid;
	uint32_t num_ruh;
	uint64_t ru_size;
};

static const struct rpc_decoder rpc_bdev_fdp_create_dec[] = {
    RPC_DEC(rpc_bdev_fdp_create, name, RPC_T_STRING, false),
    RPC_DEC(rpc_bdev_fdp_create, base_bdev, RPC_T_STRING, false),
    RPC_DEC(rpc_bdev_fdp_create, uuid, RPC_T_STRING, true),
    RPC_DEC(rpc_bdev_fdp_create, num_ruh, RPC_T_U32, false),
    RPC_DEC(rpc_bdev_fdp_create, ru_size, RPC_T_U64, false),
};

static void rpc_bdev_fdp_created(void *arg, int rc, const char *message, struct bdev *bdev)
{
	struct rpc_request *req = arg;

	if (rc)
		rpc_request_error(req, rc, "%s", message);
	else
		rpc_request_result(req, json_object_new_string(bdev_get_name(bdev)));
}

static void rpc_bdev_fdp_create(struct rpc_request *req, struct json_object *params, void *ctx)
{
	struct rpc_bdev_fdp_create p = {0};
	struct bdev_fdp_opts o = {0};
	struct app_target *t = ctx;
	uint8_t uuid[BDEV_UUID_LEN];
	struct bdev *base;
	int rc;

	if (rpc_decode_params(req, params, rpc_bdev_fdp_create_dec,
			      RPC_N(rpc_bdev_fdp_create_dec), &p) ||
	    rpc_bdev_uuid(req, p.uuid, uuid))
		return;
	base = bdev_lookup(p.base_bdev);
	if (!base) {
		rpc_bdev_stack_error(req, -ENODEV, p.name, p.base_bdev);
		return;
	}
	if (!p.num_ruh || p.num_ruh > BDEV_PLACEMENT_MAX_RUH || !p.ru_size ||
	    p.ru_size % bdev_get_block_size(base)) {
		rpc_request_error(req, -EINVAL,
				  "num_ruh must be 1..%u and ru_size a non-zero multiple of %s's "
				  "block size (%u)",
				  BDEV_PLACEMENT_MAX_RUH, p.base_bdev, bdev_get_block_size(base));
		return;
	}
	o.nruh = (uint16_t)p.num_ruh;
	o.ru_blocks = p.ru_size / bdev_get_block_size(base);
	/* Answered when the owner thread has loaded the layout (rpc_bdev_fdp_created). */
	rc = bdev_fdp_create(p.name, p.base_bdev, &o, p.uuid ? uuid : NULL, t->loop,
			     rpc_bdev_fdp_created, req);
	if (rc == -EINVAL)
		rpc_request_error(req, rc, "bad name, or fewer than num_ruh + 3 reclaim units in %s",
				  p.base_bdev);
	else if (rc)
		rpc_bdev_stack_error(req, rc, p.name, p.base_bdev);
}

struct rpc_bdev_delay_update {
	const char *delay_bdev_name;
	const char *latency_type;
	uint64_t latency_us;
};

static const struct rpc_decoder rpc_bdev_delay_update_dec[] = {
    RPC_DEC(rpc_bdev_delay_update, delay_bdev_name, RPC_T_STRING, false),
    RPC_DEC(rpc_bdev_delay_update, latency_type, RPC_T_STRING, false),
    RPC_DEC(rpc_bdev_delay_update, latency_us, RPC_T_U64, false),
};

static void rpc_bdev_delay_update(struct rpc_request *req, struct json_object *params, void *ctx)
{
	static const char *const types[BDEV_DELAY_NR] = {"avg_read", "p99_read", "avg_write",
							 "p99_write"};
	struct rpc_bdev_delay_update p = {0};
	int which = -1, rc;

	if (rpc_decode_params(req, params, rpc_bdev_delay_update_dec,
			      RPC_N(rpc_bdev_delay_update_dec), &p))
		return;
	for (int i = 0; i < BDEV_DELAY_NR; i++)
		if (!strcmp(p.latency_type, types[i]))
			which = i;
	if (which < 0) {
		rpc_request_error(req, -EINVAL,
				  "latency_type '%s': avg_read, p99_read, avg_write or p99_write",
				  p.latency_type);
		return;
	}
	rc = bdev_delay_update_latency(p.delay_bdev_name, which, p.latency_us);
	if (rc == -ENODEV)
		rpc_request_error(req, rc, "no delay bdev %s", p.delay_bdev_name);
	else if (rc)
		rpc_request_error(req, rc, "latency_us %" PRIu64 ": at most an hour", p.latency_us);
	else
		rpc_request_result(req, json_object_new_boolean(true));
}

static void rpc_bdev_deleted(void *arg)
{
	rpc_request_result(arg, json_object_new_boolean(true));
}

/* bdev_*_delete: the module must match, as in SPDK. Answered once the bdev's teardown has
 * ended (a placement bdev's owner thread has drained and exited, its base released). */
static void rpc_bdev_delete(struct rpc_request *req, struct json_object *params,
			    struct app_target *t, const char *module)
{
	struct rpc_bdev_name p = {0};
	struct app_subsys *user;
	struct bdev *bdev;
	int rc;

	if (rpc_decode_params(req, params, rpc_bdev_name_dec, 1, &p))
		return;
	bdev = bdev_lookup(p.name);
	if (!bdev || strcmp(bdev_get_module_name(bdev), module)) {
		rpc_request_error(req, -ENODEV, "no %s bdev %s", module, p.name);
		return;
	}
	user = app_bdev_user(t, p.name);
	if (user) {
		rpc_request_error(req, -EBUSY, "bdev %s is in use: a namespace of %s", p.name,
				  user->nqn);
		return;
	}
	rc = bdev_delete_cb(p.name, rpc_bdev_deleted, req);
	if (rc == -EBUSY)
		rpc_request_error(req, rc, "bdev %s is in use (open or claimed)", p.name);
	else if (rc)
		rpc_request_errno(req, rc, "bdev_delete");
}

static void rpc_bdev_malloc_delete(struct rpc_request *req, struct json_object *params, void *ctx)
{
	rpc_bdev_delete(req, params, ctx, "malloc");
}

static void rpc_bdev_null_delete(struct rpc_request *req, struct json_object *params, void *ctx)
{
	rpc_bdev_delete(req, params, ctx, "null");
}

static void rpc_bdev_aio_delete(struct rpc_request *req, struct json_object *params, void *ctx)
{
	rpc_bdev_delete(req, params, ctx, "aio");
}

static void rpc_bdev_uring_delete(struct rpc_request *req, struct json_object *params, void *ctx)
{
	rpc_bdev_delete(req, params, ctx, "uring");
}

static void rpc_bdev_nbd_delete(struct rpc_request *req, struct json_object *params, void *ctx)
{
	rpc_bdev_delete(req, params, ctx, "nbd");
}

static void rpc_bdev_rbd_delete(struct rpc_request *req, struct json_object *params, void *ctx)
{
	rpc_bdev_delete(req, params, ctx, "rbd");
}

static void rpc_bdev_error_delete(struct rpc_request *req, struct json_object *params, void *ctx)
{
	rpc_bdev_delete(req, params, ctx, "error");
}

static void rpc_bdev_delay_delete(struct rpc_request *req, struct json_object *params, void *ctx)
{
	rpc_bdev_delete(req, params, ctx, "delay");
}

static void rpc_bdev_zone_block_delete(struct rpc_request *req, struct json_object *params,
				       void *ctx)
{
	rpc_bdev_delete(req, params, ctx, "zone_block");
}

static void rpc_bdev_fdp_delete(struct rpc_request *req, struct json_object *params, void *ctx)
{
	rpc_bdev_delete(req, params, ctx, "fdp");
}

void rpc_bdev_add_latencies(struct json_object *o, const struct bdev_info *info)
{
	static const char *const keys[BDEV_DELAY_NR] = {"avg_read_latency", "p99_read_latency",
							"avg_write_latency", "p99_write_latency"};

	for (int i = 0; i < BDEV_DELAY_NR; i++)
		json_object_object_add(o, keys[i], json_object_new_int64((int64_t)info->delay_us[i]));
}

void rpc_bdev_add_rbd_config(struct json_object *o, const struct bdev_info *info)
{
	struct json_object *cfg;

	if (!info->rbd_nconfig)
		return;
	cfg = json_object_new_object();
	for (unsigned int i = 0; i < info->rbd_nconfig; i++)
		json_object_object_add(cfg, info->rbd_config[2 * i],
				       json_object_new_string(info->rbd_config[2 * i + 1]));
	json_object_object_add(o, "config", cfg);
}

static struct json_object *rpc_bdev_describe(struct bdev *bdev)
{
	struct json_object *o = json_object_new_object(), *types = json_object_new_object();
	struct bdev_info info;
	char uuid[BDEV_UUID_STR_LEN];

	bdev_get_info(bdev, &info);
	bdev_uuid_format(info.uuid, uuid);
	json_object_object_add(o, "name", json_object_new_string(info.name));
	json_object_object_add(o, "aliases", json_object_new_array());
	json_object_object_add(o, "product_name", json_object_new_string(info.product_name));
	json_object_object_add(o, "block_size", json_object_new_int64(info.block_size));
	json_object_object_add(o, "num_blocks", json_object_new_int64((int64_t)info.num_blocks));
	json_object_object_add(o, "uuid", json_object_new_string(uuid));
	json_object_object_add(o, "claimed", json_object_new_boolean(info.claimed));
	if (info.claimed)
		json_object_object_add(o, "claimed_by", json_object_new_string(info.claimed_by));
	json_object_object_add(o, "open_count", json_object_new_int64(info.open_count));
	for (int i = 0; i < BDEV_IO_TYPE_COUNT; i++)
		json_object_object_add(types, bdev_io_type_name(i),
				       json_object_new_boolean(info.io_types & (1u << i)));
	json_object_object_add(o, "supported_io_types", types);
	json_object_object_add(o, "write_cache", json_object_new_boolean(info.write_cache_enabled));
	json_object_object_add(o, "module", json_object_new_string(info.module_name));
	if (info.filename) {
		struct json_object *ds = json_object_new_object(), *aio = json_object_new_object();

		json_object_object_add(aio, "filename", json_object_new_string(info.filename));
		json_object_object_add(aio, "direct_io", json_object_new_boolean(info.direct_io));
		if (!strcmp(info.module_name, "uring")) {
			json_object_object_add(aio, "poll", json_object_new_boolean(info.uring_poll));
			json_object_object_add(aio, "fixed_buffers",
					       json_object_new_int64(info.uring_fixed_buffers));
			json_object_object_add(aio, "fixed_ios",
					       json_object_new_int64((int64_t)info.uring_fixed_ios));
		}
		json_object_object_add(ds, info.module_name, aio);
		json_object_object_add(o, "driver_specific", ds);
	}
	if (info.uri) {
		struct json_object *ds = json_object_new_object(), *nbd = json_object_new_object();

		json_object_object_add(nbd, "uri", json_object_new_string(info.uri));
		json_object_object_add(nbd, "num_connections",
				       json_object_new_int64(info.nbd_connections));
		json_object_object_add(nbd, "connected", json_object_new_int64(info.nbd_connected));
		json_object_object_add(nbd, "multi_conn", json_object_new_boolean(info.nbd_multi_conn));
		json_object_object_add(nbd, "reconnect_timeout_sec",
				       json_object_new_int64(info.nbd_reconnect_timeout));
		json_object_object_add(ds, "nbd", nbd);
		json_object_object_add(o, "driver_specific", ds);
	}
	if (info.base_name) {
		struct json_object *ds = json_object_new_object(), *v = json_object_new_object();

		json_object_object_add(v, "base_bdev_name", json_object_new_string(info.base_name));
		if (!strcmp(info.module_name, "delay"))
			rpc_bdev_add_latencies(v, &info);
		json_object_object_add(ds, info.module_name, v);
		json_object_object_add(o, "driver_specific", ds);
	}
	if (info.zoned) {
		/* SPDK's bdev_get_bdevs keys for a zoned bdev, and ours for the rest of it. */
		json_object_object_add(o, "zoned", json_object_new_boolean(true));
		json_object_object_add(o, "zone_size",
				       json_object_new_int64((int64_t)info.zone.zone_size));
		json_object_object_add(o, "zone_capacity",
				       json_object_new_int64((int64_t)info.zone.zone_capacity));
		json_object_object_add(o, "optimal_open_zones",
				       json_object_new_int64((int64_t)info.zone.optimal_open_zones));
		json_object_object_add(o, "max_open_zones",
				       json_object_new_int64(info.zone.max_open_zones));
		json_object_object_add(o, "max_active_zones",
				       json_object_new_int64(info.zone.max_active_zones));
		json_object_object_add(o, "zone_desc_ext_size",
				       json_object_new_int64(info.zone.zone_desc_ext_size));
		if (info.zone.state_file)
			json_object_object_add(o, "state_file",
					       json_object_new_string(info.zone.state_file));
	}
	if (info.placement) {
		struct json_object *pl = json_object_new_object();
		struct bdev_placement_stats st;

		bdev_placement_get_stats(bdev, &st);
		json_object_object_add(pl, "num_ruh",
				       json_object_new_int64(info.placement_geom.nruh));
		json_object_object_add(pl, "ru_size",
				       json_object_new_int64((int64_t)(info.placement_geom.ru_blocks *
								       info.block_size)));
		json_object_object_add(pl, "reclaim_units",
				       json_object_new_int64((int64_t)info.placement_geom.nru));
		json_object_object_add(pl, "host_bytes_written",
				       json_object_new_int64((int64_t)st.host_bytes));
		json_object_object_add(pl, "media_bytes_written",
				       json_object_new_int64((int64_t)st.media_bytes));
		json_object_object_add(pl, "media_bytes_erased",
				       json_object_new_int64((int64_t)st.erased_bytes));
		json_object_object_add(pl, "gc_bytes", json_object_new_int64((int64_t)st.gc_bytes));
		json_object_object_add(pl, "gc_runs", json_object_new_int64((int64_t)st.gc_runs));
		json_object_object_add(o, "placement", pl);
	}
	if (info.rbd_pool) {
		struct json_object *ds = json_object_new_object(), *rbd = json_object_new_object();

		json_object_object_add(rbd, "pool_name", json_object_new_string(info.rbd_pool));
		json_object_object_add(rbd, "rbd_name", json_object_new_string(info.rbd_image));
		if (info.rbd_user)
			json_object_object_add(rbd, "user_id", json_object_new_string(info.rbd_user));
		rpc_bdev_add_rbd_config(rbd, &info);
		json_object_object_add(ds, "rbd", rbd);
		json_object_object_add(o, "driver_specific", ds);
	}
	return o;
}

static int rpc_bdev_list_one(struct bdev *bdev, void *arg)
{
	json_object_array_add(arg, rpc_bdev_describe(bdev));
	return 0;
}

static void rpc_bdev_get_bdevs(struct rpc_request *req, struct json_object *params, void *ctx)
{
	struct rpc_bdev_name p = {0};
	struct json_object *list;

	if (rpc_decode_params(req, params, rpc_bdev_get_dec, RPC_N(rpc_bdev_get_dec), &p))
		return;
	list = json_object_new_array();
	if (p.name) {
		struct bdev *bdev = bdev_lookup(p.name);

		if (!bdev) {
			json_object_put(list);
			rpc_request_error(req, -ENODEV, "no bdev %s", p.name);
			return;
		}
		json_object_array_add(list, rpc_bdev_describe(bdev));
	} else {
		bdev_foreach(rpc_bdev_list_one, list);
	}
	rpc_request_result(req, list);
}

/* ---- statistics, examine ---- */

struct rpc_iostat {
	const char *name, *reset_mode;
	struct json_object *names;
};

static const struct rpc_decoder rpc_iostat_dec[] = {
    RPC_DEC(rpc_iostat, name, RPC_T_STRING, true),
    RPC_DEC(rpc_iostat, names, RPC_T_ARRAY, true),
    RPC_DEC(rpc_iostat, reset_mode, RPC_T_STRING, true),
    RPC_OFF("per_channel", RPC_T_BOOL, 0, "counters are kept per bdev, not per channel"),
};

static struct json_object *rpc_bdev_iostat(struct bdev *bdev)
{
	struct json_object *o = json_object_new_object();
	struct bdev_stats st;

	bdev_get_stats(bdev, &st);
	json_object_object_add(o, "name", json_object_new_string(bdev_get_name(bdev)));
	json_object_object_add(o, "bytes_read", json_object_new_int64((int64_t)st.bytes_read));
	json_object_object_add(o, "num_read_ops", json_object_new_int64((int64_t)st.read_ops));
	json_object_object_add(o, "bytes_written",
			       json_object_new_int64((int64_t)st.bytes_written));
	json_object_object_add(o, "num_write_ops", json_object_new_int64((int64_t)st.write_ops));
	json_object_object_add(o, "num_unmap_ops", json_object_new_int64((int64_t)st.unmap_ops));
	json_object_object_add(o, "num_write_zeroes_ops",
			       json_object_new_int64((int64_t)st.write_zeroes_ops));
	json_object_object_add(o, "num_flush_ops", json_object_new_int64((int64_t)st.flush_ops));
	json_object_object_add(o, "io_error", json_object_new_int64((int64_t)st.errors));
	return o;
}

static int rpc_bdev_iostat_one(struct bdev *bdev, void *arg)
{
	json_object_array_add(arg, rpc_bdev_iostat(bdev));
	return 0;
}

/* SPDK's shape: {"tick_rate", "ticks", "bdevs": [...]}, one entry per bdev asked for (name,
 * names) or all of them. */
static void rpc_bdev_get_iostat(struct rpc_request *req, struct json_object *params, void *ctx)
{
	struct rpc_iostat p = {0};
	struct json_object *o, *list;
	size_t n;

	if (rpc_decode_params(req, params, rpc_iostat_dec, RPC_N(rpc_iostat_dec), &p))
		return;
	if (p.reset_mode && strcmp(p.reset_mode, "none")) {
		rpc_request_error(req, RPC_ERR_INVALID_PARAMS,
				  "Invalid parameters: parameter 'reset_mode' is not supported: "
				  "counters are not reset (none only)");
		return;
	}
	list = json_object_new_array();
	n = p.names ? json_object_array_length(p.names) : 0;
	for (size_t i = 0; i < n + (p.name ? 1 : 0); i++) {
		struct json_object *v = i < n ? json_object_array_get_idx(p.names, i) : NULL;
		const char *name = i < n ? json_object_get_string(v) : p.name;
		struct bdev *bdev;

		if (i < n && !json_object_is_type(v, json_type_string)) {
			json_object_put(list);
			rpc_request_error(req, RPC_ERR_INVALID_PARAMS,
					  "Invalid parameters: names must be strings");
			return;
		}
		bdev = bdev_lookup(name);
		if (!bdev) {
			json_object_put(list);
			rpc_request_error(req, -ENODEV, "no bdev %s", name);
			return;
		}
		json_object_array_add(list, rpc_bdev_iostat(bdev));
	}
	if (!p.name && !p.names)
		bdev_foreach(rpc_bdev_iostat_one, list);
	o = json_object_new_object();
	json_object_object_add(o, "tick_rate", json_object_new_int64(1000000));
	json_object_object_add(o, "ticks", json_object_new_int64((int64_t)evloop_now_us()));
	json_object_object_add(o, "bdevs", list);
	rpc_request_result(req, o);
}

/* A bdev here is whole once its create returned: there is no examine to wait for. */
static void rpc_bdev_wait_for_examine(struct rpc_request *req, struct json_object *params,
				      void *ctx)
{
	if (rpc_decode_params(req, params, NULL, 0, NULL))
		return;
	rpc_request_result(req, json_object_new_boolean(true));
}

static const struct rpc_method rpc_bdev_methods[] = {
    {"bdev_get_iostat", rpc_bdev_get_iostat, RPC_RUNTIME, false},
    {"bdev_wait_for_examine", rpc_bdev_wait_for_examine, RPC_STARTUP | RPC_RUNTIME, false},
    {"bdev_malloc_create", rpc_bdev_malloc_create, RPC_RUNTIME, false},
    {"bdev_malloc_delete", rpc_bdev_malloc_delete, RPC_RUNTIME, false},
    {"bdev_null_create", rpc_bdev_null_create, RPC_RUNTIME, false},
    {"bdev_null_delete", rpc_bdev_null_delete, RPC_RUNTIME, false},
    {"bdev_aio_create", rpc_bdev_aio_create, RPC_RUNTIME, false},
    {"bdev_aio_delete", rpc_bdev_aio_delete, RPC_RUNTIME, false},
    {"bdev_uring_create", rpc_bdev_uring_create, RPC_RUNTIME, false},
    {"bdev_uring_delete", rpc_bdev_uring_delete, RPC_RUNTIME, false},
    {"bdev_nbd_create", rpc_bdev_nbd_create, RPC_RUNTIME, false},
    {"bdev_nbd_delete", rpc_bdev_nbd_delete, RPC_RUNTIME, false},
    {"bdev_rbd_create", rpc_bdev_rbd_create, RPC_RUNTIME, false},
    {"bdev_rbd_delete", rpc_bdev_rbd_delete, RPC_RUNTIME, false},
    {"bdev_rbd_resize", rpc_bdev_rbd_resize, RPC_RUNTIME, false},
    {"bdev_error_create", rpc_bdev_error_create, RPC_RUNTIME, false},
    {"bdev_error_delete", rpc_bdev_error_delete, RPC_RUNTIME, false},
    {"bdev_error_inject_error", rpc_bdev_error_inject, RPC_RUNTIME, false},
    {"bdev_error_resume_pending", rpc_bdev_error_resume, RPC_RUNTIME, false},
    {"bdev_delay_create", rpc_bdev_delay_create, RPC_RUNTIME, false},
    {"bdev_delay_delete", rpc_bdev_delay_delete, RPC_RUNTIME, false},
    {"bdev_delay_update_latency", rpc_bdev_delay_update, RPC_RUNTIME, false},
    {"bdev_zone_block_create", rpc_bdev_zone_block_create, RPC_RUNTIME, false},
    {"bdev_zone_block_delete", rpc_bdev_zone_block_delete, RPC_RUNTIME, false},
    {"bdev_fdp_create", rpc_bdev_fdp_create, RPC_RUNTIME, false},
    {"bdev_fdp_delete", rpc_bdev_fdp_delete, RPC_RUNTIME, false},
    {"bdev_get_bdevs", rpc_bdev_get_bdevs, RPC_RUNTIME, false},
};

int rpc_bdev_register(struct rpc_server *srv)
{
	return rpc_server_register(srv, rpc_bdev_methods,
				   sizeof(rpc_bdev_methods) / sizeof(rpc_bdev_methods[0]));
}
