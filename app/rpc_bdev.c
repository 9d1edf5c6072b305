/* app/rpc_bdev.c - bdev methods with SPDK's names and parameters: bdev_malloc_create/delete,
 * bdev_null_create/delete, bdev_aio_create/delete, bdev_get_bdevs. */
#include "app/app_internal.h"
#include "app/rpc.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

struct rpc_bdev_create {
	const char *name;
	uint64_t num_blocks;
	uint32_t block_size;
	const char *uuid;
	const char *filename;
};

static const struct rpc_decoder rpc_bdev_mem_dec[] = {
    {"name", RPC_T_STRING, offsetof(struct rpc_bdev_create, name), true},
    {"num_blocks", RPC_T_U64, offsetof(struct rpc_bdev_create, num_blocks), false},
    {"block_size", RPC_T_U32, offsetof(struct rpc_bdev_create, block_size), false},
    {"uuid", RPC_T_STRING, offsetof(struct rpc_bdev_create, uuid), true},
};

static const struct rpc_decoder rpc_bdev_aio_dec[] = {
    {"name", RPC_T_STRING, offsetof(struct rpc_bdev_create, name), false},
    {"filename", RPC_T_STRING, offsetof(struct rpc_bdev_create, filename), false},
    {"block_size", RPC_T_U32, offsetof(struct rpc_bdev_create, block_size), true},
    {"uuid", RPC_T_STRING, offsetof(struct rpc_bdev_create, uuid), true},
};

struct rpc_bdev_name {
	const char *name;
};

static const struct rpc_decoder rpc_bdev_name_dec[] = {
    {"name", RPC_T_STRING, offsetof(struct rpc_bdev_name, name), false},
};

static const struct rpc_decoder rpc_bdev_get_dec[] = {
    {"name", RPC_T_STRING, offsetof(struct rpc_bdev_name, name), true},
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

	if (rpc_decode_params(req, params, rpc_bdev_mem_dec, 4, &p) ||
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
		 ? bdev_null_create(name, p.num_blocks, p.block_size, p.uuid ? uuid : NULL, NULL)
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

static void rpc_bdev_aio_create(struct rpc_request *req, struct json_object *params, void *ctx)
{
	struct rpc_bdev_create p = {.block_size = 512};
	struct bdev_aio_opts o = {0};
	uint8_t uuid[BDEV_UUID_LEN];
	int rc;

	if (rpc_decode_params(req, params, rpc_bdev_aio_dec, 4, &p) ||
	    rpc_bdev_uuid(req, p.uuid, uuid))
		return;
	o.filename = p.filename;
	o.block_size = p.block_size;
	o.uuid = p.uuid ? uuid : NULL;
	rc = bdev_aio_create(p.name, &o, NULL);
	if (rc && rc != -EEXIST && rc != -EINVAL) {
		rpc_request_error(req, rc, "cannot open %s: %s", p.filename, strerror(-rc));
		return;
	}
	rpc_bdev_created(req, rc, p.name, p.block_size);
}

/* bdev_*_delete: the module must match, as in SPDK. */
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
	rc = bdev_delete(p.name);
	if (rc == -EBUSY)
		rpc_request_error(req, rc, "bdev %s is in use (open or claimed)", p.name);
	else if (rc)
		rpc_request_errno(req, rc, "bdev_delete");
	else
		rpc_request_result(req, json_object_new_boolean(true));
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
		json_object_object_add(ds, "aio", aio);
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

	if (rpc_decode_params(req, params, rpc_bdev_get_dec, 1, &p))
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

static const struct rpc_method rpc_bdev_methods[] = {
    {"bdev_malloc_create", rpc_bdev_malloc_create, RPC_RUNTIME, false},
    {"bdev_malloc_delete", rpc_bdev_malloc_delete, RPC_RUNTIME, false},
    {"bdev_null_create", rpc_bdev_null_create, RPC_RUNTIME, false},
    {"bdev_null_delete", rpc_bdev_null_delete, RPC_RUNTIME, false},
    {"bdev_aio_create", rpc_bdev_aio_create, RPC_RUNTIME, false},
    {"bdev_aio_delete", rpc_bdev_aio_delete, RPC_RUNTIME, false},
    {"bdev_get_bdevs", rpc_bdev_get_bdevs, RPC_RUNTIME, false},
};

int rpc_bdev_register(struct rpc_server *srv)
{
	return rpc_server_register(srv, rpc_bdev_methods,
				   sizeof(rpc_bdev_methods) / sizeof(rpc_bdev_methods[0]));
}
