/* app/rpc_decode.c - table-driven decoding of JSON-RPC params into C structs (strict: unknown
 * members, wrong types and out-of-range numbers are refused). */
#include "app/rpc.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static const char *rpc_type_name(enum rpc_type t)
{
	switch (t) {
	case RPC_T_STRING:
		return "a string";
	case RPC_T_BOOL:
		return "a boolean";
	case RPC_T_U32:
		return "an integer 0..4294967295";
	case RPC_T_U64:
		return "a non-negative integer";
	case RPC_T_OBJECT:
		return "an object";
	case RPC_T_ARRAY:
		return "an array";
	case RPC_T_I64:
		return "an integer";
	}
	return "?";
}

/* Whether a compatibility parameter holds its "off/default" value (its type already checked). */
static bool rpc_decode_is_default(struct json_object *v, const struct rpc_decoder *d)
{
	switch (d->type) {
	case RPC_T_STRING:
		return !*json_object_get_string(v);
	case RPC_T_BOOL:
		return json_object_get_boolean(v) == (d->dflt != 0);
	case RPC_T_U32:
	case RPC_T_U64:
		return json_object_get_uint64(v) <= (uint64_t)INT64_MAX &&
		       json_object_get_int64(v) == d->dflt;
	case RPC_T_OBJECT:
		return json_object_object_length(v) == 0;
	case RPC_T_ARRAY:
		return json_object_array_length(v) == 0;
	case RPC_T_I64:
		return json_object_get_int64(v) == d->dflt;
	}
	return false;
}

/* Stores one value. Returns 0 or -EINVAL (wrong type or range). */
static int rpc_decode_one(struct json_object *v, const struct rpc_decoder *d, void *out)
{
	char scratch[sizeof(uint64_t)] __attribute__((aligned(8)));
	char *field = d->offset == RPC_NO_FIELD ? scratch : (char *)out + d->offset;
	int64_t i;

	switch (d->type) {
	case RPC_T_STRING:
		if (!json_object_is_type(v, json_type_string))
			return -EINVAL;
		*(const char **)field = json_object_get_string(v);
		return 0;
	case RPC_T_BOOL:
		if (!json_object_is_type(v, json_type_boolean))
			return -EINVAL;
		*(bool *)field = json_object_get_boolean(v);
		return 0;
	case RPC_T_U32:
	case RPC_T_U64:
		if (!json_object_is_type(v, json_type_int))
			return -EINVAL;
		/* Values above INT64_MAX parse as unsigned; get_int64 would clamp them. */
		if (json_object_get_uint64(v) > (uint64_t)INT64_MAX) {
			if (d->type == RPC_T_U32)
				return -EINVAL;
			*(uint64_t *)field = json_object_get_uint64(v);
			return 0;
		}
		i = json_object_get_int64(v);
		if (i < 0 || (d->type == RPC_T_U32 && i > UINT32_MAX))
			return -EINVAL;
		if (d->type == RPC_T_U32)
			*(uint32_t *)field = (uint32_t)i;
		else
			*(uint64_t *)field = (uint64_t)i;
		return 0;
	case RPC_T_OBJECT:
		if (!json_object_is_type(v, json_type_object))
			return -EINVAL;
		*(struct json_object **)field = v;
		return 0;
	case RPC_T_ARRAY:
		if (!json_object_is_type(v, json_type_array))
			return -EINVAL;
		*(struct json_object **)field = v;
		return 0;
	case RPC_T_I64:
		/* get_uint64 is 0 for negative values: only those above INT64_MAX are out. */
		if (!json_object_is_type(v, json_type_int) ||
		    json_object_get_uint64(v) > (uint64_t)INT64_MAX)
			return -EINVAL;
		*(int64_t *)field = json_object_get_int64(v);
		return 0;
	}
	return -EINVAL;
}

int rpc_decode_object(struct json_object *obj, const struct rpc_decoder *dec, size_t n, void *out,
		      char *err, size_t err_len)
{
	if (obj && !json_object_is_type(obj, json_type_object)) {
		snprintf(err, err_len, "params must be an object");
		return -EINVAL;
	}
	if (obj) {
		json_object_object_foreach(obj, key, val)
		{
			size_t i;

			for (i = 0; i < n; i++)
				if (!strcmp(dec[i].name, key))
					break;
			if (i == n) {
				snprintf(err, err_len, "unknown parameter '%s'", key);
				return -EINVAL;
			}
			if (rpc_decode_one(val, &dec[i], out)) {
				snprintf(err, err_len, "parameter '%s' must be %s", key,
					 rpc_type_name(dec[i].type));
				return -EINVAL;
			}
			if (dec[i].unsupported && !rpc_decode_is_default(val, &dec[i])) {
				snprintf(err, err_len, "parameter '%s' is not supported: %s", key,
					 dec[i].unsupported);
				return -EINVAL;
			}
		}
	}
	for (size_t i = 0; i < n; i++) {
		if (dec[i].optional || (obj && json_object_object_get_ex(obj, dec[i].name, NULL)))
			continue;
		snprintf(err, err_len, "missing parameter '%s'", dec[i].name);
		return -EINVAL;
	}
	return 0;
}

int rpc_decode_params(struct rpc_request *req, struct json_object *params,
		      const struct rpc_decoder *dec, size_t n, void *out)
{
	char err[256];

	if (rpc_decode_object(params, dec, n, out, err, sizeof(err))) {
		rpc_request_error(req, RPC_ERR_INVALID_PARAMS, "Invalid parameters: %s", err);
		return -EINVAL;
	}
	return 0;
}
