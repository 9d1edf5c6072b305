/* tests/unit/app/rpc_decode_test.c - the JSON-RPC params decoder: every type, null and mistyped
 * values, ranges, unknown, missing and optional members, params that are not an object. */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include <CUnit/CUnit.h>

#include "app/rpc.h"
#include "tests/unit/cunit_runner.h"

struct rd_out {
	const char *name;
	bool flag;
	uint32_t u32;
	uint64_t u64;
	struct json_object *obj, *arr;
};

static const struct rpc_decoder rd_dec[] = {
    RPC_DEC(rd_out, name, RPC_T_STRING, false), RPC_DEC(rd_out, flag, RPC_T_BOOL, true),
    RPC_DEC(rd_out, u32, RPC_T_U32, true),	RPC_DEC(rd_out, u64, RPC_T_U64, true),
    RPC_DEC(rd_out, obj, RPC_T_OBJECT, true),	RPC_DEC(rd_out, arr, RPC_T_ARRAY, true),
};

/* SPDK-compatibility entries: accepted at "off" only, or ignored whatever their value. */
static const struct rpc_decoder rd_compat_dec[] = {
    RPC_DEC(rd_out, name, RPC_T_STRING, false),
    RPC_OFF("zcopy", RPC_T_BOOL, 0, "no zero-copy here"),
    RPC_OFF("c2h_success", RPC_T_BOOL, 1, "a TCP option"),
    RPC_OFF("md_size", RPC_T_U32, 0, "no metadata"),
    RPC_OFF("sock_impl", RPC_T_STRING, 0, "no sockets"),
    RPC_OFF("masked_oncs", RPC_T_ARRAY, 0, "no masks"),
    RPC_IGNORED("numa_id", RPC_T_I64),
    RPC_IGNORED("hint", RPC_T_U32),
};

static char rd_err[256];

/* Decodes `json` (NULL: no params) into *out, u32 defaulting to 7; the decoder's result. */
static int rd_decode(const char *json, struct rd_out *out)
{
	struct json_object *o = json ? json_tokener_parse(json) : NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	out->u32 = 7;
	rd_err[0] = 0;
	rc = rpc_decode_object(o, rd_dec, sizeof(rd_dec) / sizeof(rd_dec[0]), out, rd_err,
			       sizeof(rd_err));
	/* Borrowed members (name, obj, arr) die with the params: callers look only at numbers,
	 * flags and the error; test_all_types keeps its params alive to check the rest. */
	if (o)
		json_object_put(o);
	return rc;
}

static void test_all_types(void)
{
	struct rd_out out;
	struct json_object *o = json_tokener_parse(
	    "{\"name\": \"x\", \"flag\": true, \"u32\": 4294967295, \"u64\": 18446744073709551615,"
	    " \"obj\": {\"a\": 1}, \"arr\": [1, 2]}");

	memset(&out, 0, sizeof(out));
	CU_ASSERT_EQUAL(rpc_decode_object(o, rd_dec, 6, &out, rd_err, sizeof(rd_err)), 0);
	CU_ASSERT_STRING_EQUAL(out.name, "x");
	CU_ASSERT_TRUE(out.flag);
	CU_ASSERT_EQUAL(out.u32, UINT32_MAX);
	CU_ASSERT_EQUAL(out.u64, UINT64_MAX);
	CU_ASSERT_TRUE(json_object_is_type(out.obj, json_type_object));
	CU_ASSERT_EQUAL(json_object_array_length(out.arr), 2);
	json_object_put(o);
}

static void test_optional_defaults(void)
{
	struct rd_out out;

	CU_ASSERT_EQUAL(rd_decode("{\"name\": \"y\"}", &out), 0);
	CU_ASSERT_EQUAL(out.u32, 7); /* untouched */
	CU_ASSERT_FALSE(out.flag);
}

/* Every wrong type, null included, is refused with the parameter's name and the type wanted. */
static void test_wrong_types(void)
{
	static const char *const cases[][2] = {
	    {"{\"name\": null}", "'name' must be a string"},
	    {"{\"name\": 5}", "'name' must be a string"},
	    {"{\"name\": \"a\", \"flag\": \"true\"}", "'flag' must be a boolean"},
	    {"{\"name\": \"a\", \"flag\": null}", "'flag' must be a boolean"},
	    {"{\"name\": \"a\", \"flag\": 1}", "'flag' must be a boolean"},
	    {"{\"name\": \"a\", \"u32\": \"5\"}", "'u32' must be an integer"},
	    {"{\"name\": \"a\", \"u32\": 1.5}", "'u32' must be an integer"},
	    {"{\"name\": \"a\", \"u32\": null}", "'u32' must be an integer"},
	    {"{\"name\": \"a\", \"u64\": true}", "'u64' must be a non-negative"},
	    {"{\"name\": \"a\", \"obj\": []}", "'obj' must be an object"},
	    {"{\"name\": \"a\", \"obj\": null}", "'obj' must be an object"},
	    {"{\"name\": \"a\", \"arr\": {}}", "'arr' must be an array"},
	    {"{\"name\": \"a\", \"arr\": \"[]\"}", "'arr' must be an array"},
	};
	struct rd_out out;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		CU_ASSERT_EQUAL(rd_decode(cases[i][0], &out), -EINVAL);
		CU_ASSERT_PTR_NOT_NULL(strstr(rd_err, cases[i][1]));
	}
}

static void test_ranges(void)
{
	struct rd_out out;

	CU_ASSERT_EQUAL(rd_decode("{\"name\": \"a\", \"u32\": 4294967296}", &out), -EINVAL);
	CU_ASSERT_EQUAL(rd_decode("{\"name\": \"a\", \"u32\": -1}", &out), -EINVAL);
	CU_ASSERT_EQUAL(rd_decode("{\"name\": \"a\", \"u64\": -1}", &out), -EINVAL);
	CU_ASSERT_EQUAL(rd_decode("{\"name\": \"a\", \"u64\": 18446744073709551615}", &out), 0);
	CU_ASSERT_EQUAL(out.u64, UINT64_MAX);
	CU_ASSERT_EQUAL(rd_decode("{\"name\": \"a\", \"u32\": 0}", &out), 0);
	CU_ASSERT_EQUAL(out.u32, 0);
}

static void test_members(void)
{
	struct rd_out out;

	CU_ASSERT_EQUAL(rd_decode("{\"name\": \"a\", \"bogus\": 1}", &out), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(rd_err, "unknown parameter 'bogus'"));
	CU_ASSERT_EQUAL(rd_decode("{\"flag\": true}", &out), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(rd_err, "missing parameter 'name'"));
	/* No params at all is an empty object: the required member is missing. */
	CU_ASSERT_EQUAL(rd_decode(NULL, &out), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(rd_err, "missing parameter 'name'"));
	/* Params that are not an object. */
	CU_ASSERT_EQUAL(rd_decode("[\"a\"]", &out), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(rd_err, "params must be an object"));
	CU_ASSERT_EQUAL(rd_decode("\"a\"", &out), -EINVAL);
	CU_ASSERT_EQUAL(rd_decode("17", &out), -EINVAL);
}

static int rd_compat(const char *json)
{
	struct json_object *o = json_tokener_parse(json);
	struct rd_out out = { 0 };
	int rc = rpc_decode_object(o, rd_compat_dec, RPC_N(rd_compat_dec), &out, rd_err,
				   sizeof(rd_err));

	json_object_put(o);
	return rc;
}

static void test_compat_params(void)
{
	/* Defaults, as SPDK's rpc.py sends them: accepted silently. */
	CU_ASSERT_EQUAL(rd_compat("{\"name\": \"a\", \"zcopy\": false, \"c2h_success\": true, "
				  "\"md_size\": 0, \"sock_impl\": \"\", \"masked_oncs\": [], "
				  "\"numa_id\": -1, \"hint\": 4096}"),
			0);
	/* Asking for what is not there: refused, naming the parameter and the reason. */
	CU_ASSERT_EQUAL(rd_compat("{\"name\": \"a\", \"zcopy\": true}"), -EINVAL);
	CU_ASSERT_STRING_EQUAL(rd_err, "parameter 'zcopy' is not supported: no zero-copy here");
	CU_ASSERT_EQUAL(rd_compat("{\"name\": \"a\", \"c2h_success\": false}"), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(rd_err, "a TCP option"));
	CU_ASSERT_EQUAL(rd_compat("{\"name\": \"a\", \"md_size\": 8}"), -EINVAL);
	CU_ASSERT_EQUAL(rd_compat("{\"name\": \"a\", \"sock_impl\": \"posix\"}"), -EINVAL);
	CU_ASSERT_EQUAL(rd_compat("{\"name\": \"a\", \"masked_oncs\": [\"nvmcpys\"]}"), -EINVAL);
	/* Their types are still checked. */
	CU_ASSERT_EQUAL(rd_compat("{\"name\": \"a\", \"zcopy\": 0}"), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(rd_err, "must be a boolean"));
	CU_ASSERT_EQUAL(rd_compat("{\"name\": \"a\", \"numa_id\": \"0\"}"), -EINVAL);
	CU_ASSERT_EQUAL(rd_compat("{\"name\": \"a\", \"numa_id\": 18446744073709551615}"),
			-EINVAL);
	/* Unknown ones stay unknown. */
	CU_ASSERT_EQUAL(rd_compat("{\"name\": \"a\", \"zcopy2\": false}"), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(rd_err, "unknown parameter 'zcopy2'"));
}

CUNIT_SUITE(rpc_decode, NULL, NULL, {"compat_params", test_compat_params}, {"all_types", test_all_types},
	    {"optional_defaults", test_optional_defaults}, {"wrong_types", test_wrong_types},
	    {"ranges", test_ranges}, {"members", test_members})
