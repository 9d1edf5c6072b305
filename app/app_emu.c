/* app/app_emu.c - emulation managers (DOCA's emulation managers: here "local" or a QEMU reached
 * through its QMP socket) and the emulated functions (VUID + vfio-user socket) they own. */
#include "app/app_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>

struct app_manager *app_manager_find(struct app_target *t, const char *name)
{
	for (struct app_manager *m = t->managers; m; m = m->next)
		if (!strcmp(m->name, name))
			return m;
	return NULL;
}

static bool app_name_ok(const char *s, size_t max)
{
	size_t n = strlen(s);

	if (!n || n > max)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '-' || *s == '_' || *s == '.'))
			return false;
	return true;
}

static void app_manager_free(struct app_manager *m)
{
	free(m->name);
	free(m->qmp_socket);
	for (unsigned int i = 0; i < m->nr_ports; i++)
		free(m->ports[i]);
	free(m);
}

int app_manager_create(struct app_target *t, const char *name, const char *qmp_socket,
		       const char *const *ports, unsigned int nr_ports, char *err)
{
	struct app_manager *m, **tail;

	if (!app_name_ok(name, 63)) {
		snprintf(err, APP_ERR_LEN, "manager name must be 1..63 of [A-Za-z0-9._-]");
		return -EINVAL;
	}
	if (app_manager_find(t, name)) {
		snprintf(err, APP_ERR_LEN, "manager %s already exists", name);
		return -EEXIST;
	}
	if (qmp_socket && strlen(qmp_socket) >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
		snprintf(err, APP_ERR_LEN, "qmp_socket path too long");
		return -ENAMETOOLONG;
	}
	if (nr_ports > APP_MAX_PORTS) {
		snprintf(err, APP_ERR_LEN, "at most %d hotplug ports", APP_MAX_PORTS);
		return -EINVAL;
	}
	for (unsigned int i = 0; i < nr_ports; i++) {
		if (!app_name_ok(ports[i], 63)) {
			snprintf(err, APP_ERR_LEN, "bad hotplug port name '%.63s'", ports[i]);
			return -EINVAL;
		}
	}
	m = calloc(1, sizeof(*m));
	if (!m || !(m->name = strdup(name)) ||
	    (qmp_socket && !(m->qmp_socket = strdup(qmp_socket))))
		goto out_nomem;
	for (unsigned int i = 0; i < nr_ports; i++) {
		m->ports[i] = strdup(ports[i]);
		if (!m->ports[i])
			goto out_nomem;
		m->nr_ports = i + 1;
	}
	for (tail = &t->managers; *tail; tail = &(*tail)->next)
		;
	*tail = m;
	return 0;

out_nomem:
	if (m)
		app_manager_free(m);
	snprintf(err, APP_ERR_LEN, "out of memory");
	return -ENOMEM;
}

int app_manager_delete(struct app_target *t, const char *name, char *err)
{
	struct app_manager **pp, *m;

	for (pp = &t->managers; *pp && strcmp((*pp)->name, name); pp = &(*pp)->next)
		;
	m = *pp;
	if (!m) {
		snprintf(err, APP_ERR_LEN, "no manager %s", name);
		return -ENOENT;
	}
	if (!m->qmp_socket) {
		snprintf(err, APP_ERR_LEN, "the local manager cannot be deleted");
		return -EPERM;
	}
	for (struct app_function *fn = t->functions; fn; fn = fn->next) {
		if (fn->mgr == m) {
			snprintf(err, APP_ERR_LEN, "manager %s still has function %s", name,
				 fn->vuid);
			return -EBUSY;
		}
	}
	*pp = m->next;
	app_manager_free(m);
	return 0;
}

struct app_function *app_function_find(struct app_target *t, const char *vuid)
{
	for (struct app_function *fn = t->functions; fn; fn = fn->next)
		if (!strcmp(fn->vuid, vuid))
			return fn;
	return NULL;
}

struct app_function *app_function_find_socket(struct app_target *t, const char *path)
{
	for (struct app_function *fn = t->functions; fn; fn = fn->next)
		if (!strcmp(fn->socket_path, path))
			return fn;
	return NULL;
}

int app_function_create(struct app_target *t, struct app_manager *mgr, const char *vuid,
			const char *socket_path, bool implicit, struct app_function **out,
			char *err)
{
	struct app_function *fn, **tail;
	char genvuid[32], *gensock = NULL;

	if (!vuid) {
		/* Skip ids taken by functions created with an explicit VUID. */
		do
			snprintf(genvuid, sizeof(genvuid), "nvme-emu-%u", t->next_fn_id++);
		while (app_function_find(t, genvuid));
		vuid = genvuid;
	}
	if (!app_name_ok(vuid, 63)) {
		snprintf(err, APP_ERR_LEN, "VUID must be 1..63 of [A-Za-z0-9._-]");
		return -EINVAL;
	}
	if (app_function_find(t, vuid)) {
		snprintf(err, APP_ERR_LEN, "function %s already exists", vuid);
		return -EEXIST;
	}
	if (!socket_path) {
		if (asprintf(&gensock, "%s/%s.sock", t->run_dir, vuid) < 0) {
			snprintf(err, APP_ERR_LEN, "out of memory");
			return -ENOMEM;
		}
		socket_path = gensock;
	}
	if (strlen(socket_path) >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
		snprintf(err, APP_ERR_LEN, "socket path too long: %s", socket_path);
		free(gensock);
		return -ENAMETOOLONG;
	}
	if (app_function_find_socket(t, socket_path)) {
		snprintf(err, APP_ERR_LEN, "socket %s is already used by another function",
			 socket_path);
		free(gensock);
		return -EEXIST;
	}
	fn = calloc(1, sizeof(*fn));
	if (!fn || !(fn->vuid = strdup(vuid)) || !(fn->socket_path = strdup(socket_path))) {
		if (fn)
			free(fn->vuid);
		free(fn);
		free(gensock);
		snprintf(err, APP_ERR_LEN, "out of memory");
		return -ENOMEM;
	}
	free(gensock);
	fn->mgr = mgr;
	fn->implicit = implicit;
	for (tail = &t->functions; *tail; tail = &(*tail)->next)
		;
	*tail = fn;
	if (out)
		*out = fn;
	return 0;
}

int app_function_destroy(struct app_target *t, struct app_function *fn, char *err)
{
	struct app_function **pp;

	if (fn->listener) {
		snprintf(err, APP_ERR_LEN, "function %s is the listener of %s", fn->vuid,
			 fn->listener->s->nqn);
		return -EBUSY;
	}
	for (pp = &t->functions; *pp; pp = &(*pp)->next) {
		if (*pp == fn) {
			*pp = fn->next;
			break;
		}
	}
	free(fn->vuid);
	free(fn->socket_path);
	free(fn->bus);
	free(fn);
	return 0;
}
