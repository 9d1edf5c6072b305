/* app/rpc_framework.c - framework methods: rpc_get_methods, versions, log levels,
 * framework_start_init / framework_wait_init (--wait-for-rpc), framework_get_config and
 * save_config. */
#include "app/app_internal.h"
#include "app/rpc.h"
#include "common/log.h"

#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

/* The SPDK release whose method names and parameters we follow. */
#define RPC_SPDK_MAJOR 24
#define RPC_SPDK_MINOR 1

struct rpc_waiter {
	struct rpc_request *req;
	struct rpc_waiter *next;
};

struct rpc_get_methods {
	bool current, include_aliases;
	struct json_object *list;
	unsigned int state;
};

static const struct rpc_decoder rpc_get_methods_dec[] = {
    RPC_DEC(rpc_get_methods, current, RPC_T_BOOL, true),
    RPC_DEC(rpc_get_methods, include_aliases, RPC_T_BOOL, true),
};

static void rpc_get_methods_one(const struct rpc_method *m, void *arg)
{
	struct rpc_get_methods *p = arg;

	if (p->current && !(m->state_mask & p->state))
		return;
	if (m->deprecated_alias && !p->include_aliases)
		return;
	json_object_array_add(p->list, json_object_new_string(m->name));
}

static void rpc_rpc_get_methods(struct rpc_request *req, struct json_object *params, void *ctx)
{
	struct rpc_get_methods p = {0};

	if (rpc_decode_params(req, params, rpc_get_methods_dec, RPC_N(rpc_get_methods_dec), &p))
		return;
	p.list = json_object_new_array();
	p.state = rpc_server_get_state(rpc_request_server(req));
	rpc_server_foreach_method(rpc_request_server(req), rpc_get_methods_one, &p);
	rpc_request_result(req, p.list);
}

static void rpc_spdk_get_version(struct rpc_request *req, struct json_object *params, void *ctx)
{
	struct json_object *o, *f;
	char text[64];

	if (rpc_decode_params(req, params, NULL, 0, NULL))
		return;
	o = json_object_new_object();
	f = json_object_new_object();
	snprintf(text, sizeof(text), "SPDK v%d.%02d compatible (nvme-emu %s)", RPC_SPDK_MAJOR,
		 RPC_SPDK_MINOR, APP_VERSION);
	json_object_object_add(o, "version", json_object_new_string(text));
	json_object_object_add(f, "major", json_object_new_int(RPC_SPDK_MAJOR));
	json_object_object_add(f, "minor", json_object_new_int(RPC_SPDK_MINOR));
	json_object_object_add(f, "patch", json_object_new_int(0));
	json_object_object_add(f, "suffix", json_object_new_string("-nvme-emu"));
	json_object_object_add(o, "fields", f);
	rpc_request_result(req, o);
}

static void rpc_nvme_emu_get_version(struct rpc_request *req, struct json_object *params, void *ctx)
{
	struct json_object *o;
	unsigned int major = 0, minor = 0, patch = 0;

	if (rpc_decode_params(req, params, NULL, 0, NULL))
		return;
	sscanf(APP_VERSION, "%u.%u.%u", &major, &minor, &patch);
	o = json_object_new_object();
	json_object_object_add(o, "version", json_object_new_string("nvme-emu " APP_VERSION));
	json_object_object_add(o, "major", json_object_new_int((int)major));
	json_object_object_add(o, "minor", json_object_new_int((int)minor));
	json_object_object_add(o, "patch", json_object_new_int((int)patch));
	rpc_request_result(req, o);
}

struct rpc_log_level {
	const char *level;
};

static const struct rpc_decoder rpc_log_level_dec[] = {
    RPC_DEC(rpc_log_level, level, RPC_T_STRING, false),
};

static void rpc_log_set_level(struct rpc_request *req, struct json_object *params, void *ctx)
{
	struct rpc_log_level p = {0};
	int level;

	if (rpc_decode_params(req, params, rpc_log_level_dec, 1, &p))
		return;
	/* SPDK's NOTICE has no equivalent here: the nearest is info. */
	level = !strcasecmp(p.level, "notice") ? LOG_LEVEL_INFO : log_level_parse(p.level);
	if (level < 0) {
		rpc_request_error(req, RPC_ERR_INVALID_PARAMS,
				  "Invalid parameters: level must be error, warning, notice, "
				  "info, debug, trace or 10..70");
		return;
	}
	log_set_level(level);
	rpc_request_result(req, json_object_new_boolean(true));
}

static void rpc_log_get_level(struct rpc_request *req, struct json_object *params, void *ctx)
{
	if (rpc_decode_params(req, params, NULL, 0, NULL))
		return;
	rpc_request_result(req, json_object_new_string(log_level_name(log_get_level())));
}

/* ---- --wait-for-rpc ---- */

void rpc_framework_init_done(struct app_target *t)
{
	t->initialized = true;
	rpc_server_set_state(t->rpc, RPC_RUNTIME);
	app_service_ready(t);
	while (t->init_waiters) {
		struct rpc_waiter *w = t->init_waiters;

		t->init_waiters = w->next;
		rpc_request_result(w->req, json_object_new_boolean(true));
		free(w);
	}
}

void rpc_framework_cancel_waiters(struct app_target *t)
{
	while (t->init_waiters) {
		struct rpc_waiter *w = t->init_waiters;

		t->init_waiters = w->next;
		rpc_request_error(w->req, -ECANCELED, "shutting down");
		free(w);
	}
}

struct rpc_start_init {
	struct app_target *t;
	struct rpc_request *req;
};

static void rpc_framework_start_done(void *arg, int rc, const char *message)
{
	struct rpc_start_init *si = arg;
	struct rpc_request *req = si->req;

	/* Initialized even when the file failed part-way, as SPDK: what loaded stays. */
	rpc_framework_init_done(si->t);
	free(si);
	if (rc)
		rpc_request_error(req, rc, "%s", message);
	else
		rpc_request_result(req, json_object_new_boolean(true));
}

static void rpc_framework_start_init(struct rpc_request *req, struct json_object *params, void *ctx)
{
	struct app_target *t = ctx;
	struct rpc_start_init *si;
	int rc;

	if (rpc_decode_params(req, params, NULL, 0, NULL))
		return;
	if (t->initialized) {
		rpc_request_error(req, -EALREADY, "framework already initialized");
		return;
	}
	si = calloc(1, sizeof(*si));
	if (!si) {
		rpc_request_errno(req, -ENOMEM, "framework_start_init");
		return;
	}
	si->t = t;
	si->req = req;
	/* The configuration file's runtime methods run now, before the waiters are told. */
	rpc_server_set_state(t->rpc, RPC_RUNTIME);
	if (!t->config_file) {
		rpc_framework_start_done(si, 0, NULL);
		return;
	}
	rc = rpc_config_load(t, t->config_file, rpc_framework_start_done, si);
	if (rc)
		rpc_framework_start_done(si, rc, "cannot load the configuration file");
}

static void rpc_framework_wait_init(struct rpc_request *req, struct json_object *params, void *ctx)
{
	struct app_target *t = ctx;
	struct rpc_waiter *w;

	if (rpc_decode_params(req, params, NULL, 0, NULL))
		return;
	if (t->initialized) {
		rpc_request_result(req, json_object_new_boolean(true));
		return;
	}
	w = calloc(1, sizeof(*w));
	if (!w) {
		rpc_request_errno(req, -ENOMEM, "framework_wait_init");
		return;
	}
	w->req = req;
	w->next = t->init_waiters;
	t->init_waiters = w;
}

/* ---- configuration ---- */

struct rpc_config_name {
	const char *name;
};

static const struct rpc_decoder rpc_config_name_dec[] = {
    RPC_DEC(rpc_config_name, name, RPC_T_STRING, false),
    /* Batched config entries are an output format of SPDK's; ours are one call each. */
    RPC_IGNORED("with_batches", RPC_T_BOOL),
};

static void rpc_framework_get_config(struct rpc_request *req, struct json_object *params, void *ctx)
{
	struct rpc_config_name p = {0};
	struct json_object *all, *subs, *found = NULL;

	if (rpc_decode_params(req, params, rpc_config_name_dec, RPC_N(rpc_config_name_dec), &p))
		return;
	all = rpc_config_build(ctx);
	json_object_object_get_ex(all, "subsystems", &subs);
	for (size_t i = 0; i < json_object_array_length(subs); i++) {
		struct json_object *s = json_object_array_get_idx(subs, i), *name, *config;

		json_object_object_get_ex(s, "subsystem", &name);
		if (!strcmp(json_object_get_string(name), p.name) &&
		    json_object_object_get_ex(s, "config", &config))
			found = json_object_get(config);
	}
	json_object_put(all);
	if (!found)
		rpc_request_error(req, -ENOENT, "no subsystem %s (emu, bdev, nvmf)", p.name);
	else
		rpc_request_result(req, found);
}

/* SPDK's rpc.py save_config walks these, in this order, asking framework_get_config for each;
 * load_config replays them in the same order (functions and managers, bdevs, then nvmf). */
static void rpc_framework_get_subsystems(struct rpc_request *req, struct json_object *params,
					 void *ctx)
{
	static const char *const names[][2] = { {"emu", NULL}, {"bdev", NULL}, {"nvmf", "bdev"} };
	struct json_object *list;

	if (rpc_decode_params(req, params, NULL, 0, NULL))
		return;
	list = json_object_new_array();
	for (size_t i = 0; i < RPC_N(names); i++) {
		struct json_object *o = json_object_new_object(), *deps = json_object_new_array();

		json_object_object_add(o, "subsystem", json_object_new_string(names[i][0]));
		if (names[i][1]) {
			json_object_array_add(deps, json_object_new_string(names[i][1]));
			json_object_array_add(deps, json_object_new_string("emu"));
		}
		json_object_object_add(o, "depends_on", deps);
		json_object_array_add(list, o);
	}
	rpc_request_result(req, list);
}

struct rpc_log_flag {
	const char *flag;
};

static const struct rpc_decoder rpc_log_flag_dec[] = {
    RPC_DEC(rpc_log_flag, flag, RPC_T_STRING, false),
};

static void rpc_log_flag_change(struct rpc_request *req, struct json_object *params, bool on)
{
	struct rpc_log_flag p = {0};
	unsigned int n;
	const char *const *names = log_flag_names(&n);
	int rc = 0;

	if (rpc_decode_params(req, params, rpc_log_flag_dec, RPC_N(rpc_log_flag_dec), &p))
		return;
	if (!strcmp(p.flag, "all")) {
		for (unsigned int i = 0; i < n; i++)
			log_flag_set(names[i], on);
	} else {
		rc = log_flag_set(p.flag, on);
	}
	if (rc) {
		rpc_request_error(req, RPC_ERR_INVALID_PARAMS,
				  "Invalid parameters: no log flag %s (see log_get_flags, or all)",
				  p.flag);
		return;
	}
	rpc_request_result(req, json_object_new_boolean(true));
}

static void rpc_log_set_flag(struct rpc_request *req, struct json_object *params, void *ctx)
{
	rpc_log_flag_change(req, params, true);
}

static void rpc_log_clear_flag(struct rpc_request *req, struct json_object *params, void *ctx)
{
	rpc_log_flag_change(req, params, false);
}

static void rpc_log_get_flags(struct rpc_request *req, struct json_object *params, void *ctx)
{
	struct json_object *o;
	unsigned int n;
	const char *const *names = log_flag_names(&n);

	if (rpc_decode_params(req, params, NULL, 0, NULL))
		return;
	o = json_object_new_object();
	for (unsigned int i = 0; i < n; i++)
		json_object_object_add(o, names[i], json_object_new_boolean(log_flag_get(names[i])));
	rpc_request_result(req, o);
}

struct rpc_kill {
	const char *sig_name;
};

static const struct rpc_decoder rpc_kill_dec[] = {
    RPC_DEC(rpc_kill, sig_name, RPC_T_STRING, false),
};

/* SIGINT and SIGTERM stop the daemon as a signal would (cleanly, after this reply); SIGKILL
 * ends it at once. */
static void rpc_spdk_kill_instance(struct rpc_request *req, struct json_object *params, void *ctx)
{
	static const struct {
		const char *name;
		int sig;
	} sigs[] = { {"SIGINT", SIGINT}, {"SIGTERM", SIGTERM}, {"SIGKILL", SIGKILL} };
	struct rpc_kill p = {0};
	int sig = 0;

	if (rpc_decode_params(req, params, rpc_kill_dec, RPC_N(rpc_kill_dec), &p))
		return;
	for (size_t i = 0; i < RPC_N(sigs); i++) {
		if (!strcasecmp(p.sig_name, sigs[i].name) ||
		    !strcasecmp(p.sig_name, sigs[i].name + 3) || atoi(p.sig_name) == sigs[i].sig)
			sig = sigs[i].sig;
	}
	if (!sig) {
		rpc_request_error(req, RPC_ERR_INVALID_PARAMS,
				  "Invalid parameters: sig_name must be SIGINT, SIGTERM or SIGKILL");
		return;
	}
	rpc_request_result(req, json_object_new_boolean(true));
	/* The signalfd of main picks it up on the next loop turn: the reply goes first. */
	if (kill(getpid(), sig))
		LOG_ERR(APP_LOG, "spdk_kill_instance: kill: %s", strerror(errno));
}

static void rpc_save_config(struct rpc_request *req, struct json_object *params, void *ctx)
{
	if (rpc_decode_params(req, params, NULL, 0, NULL))
		return;
	rpc_request_result(req, rpc_config_build(ctx));
}

static const struct rpc_method rpc_framework_methods[] = {
    {"rpc_get_methods", rpc_rpc_get_methods, RPC_STARTUP | RPC_RUNTIME, false},
    {"spdk_get_version", rpc_spdk_get_version, RPC_STARTUP | RPC_RUNTIME, false},
    {"nvme_emu_get_version", rpc_nvme_emu_get_version, RPC_STARTUP | RPC_RUNTIME, false},
    {"log_set_level", rpc_log_set_level, RPC_STARTUP | RPC_RUNTIME, false},
    {"log_get_level", rpc_log_get_level, RPC_STARTUP | RPC_RUNTIME, false},
    {"framework_start_init", rpc_framework_start_init, RPC_STARTUP, false},
    {"framework_wait_init", rpc_framework_wait_init, RPC_STARTUP | RPC_RUNTIME, false},
    {"framework_get_config", rpc_framework_get_config, RPC_RUNTIME, false},
    {"save_config", rpc_save_config, RPC_RUNTIME, false},
    {"framework_get_subsystems", rpc_framework_get_subsystems, RPC_STARTUP | RPC_RUNTIME, false},
    {"log_set_flag", rpc_log_set_flag, RPC_STARTUP | RPC_RUNTIME, false},
    {"log_clear_flag", rpc_log_clear_flag, RPC_STARTUP | RPC_RUNTIME, false},
    {"log_get_flags", rpc_log_get_flags, RPC_STARTUP | RPC_RUNTIME, false},
    {"spdk_kill_instance", rpc_spdk_kill_instance, RPC_STARTUP | RPC_RUNTIME, false},
};

int rpc_framework_register(struct rpc_server *srv)
{
	return rpc_server_register(srv, rpc_framework_methods, RPC_N(rpc_framework_methods));
}
