/* app/rpc_cli.c - nvme-emu-rpc: sends one JSON-RPC request to a running nvme-emu (or any SPDK-style
 * server), prints the result as JSON, exits non-zero with the error message on failure. */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "app/cli_rpc.h"
#include "common/file_replace.h"

#define CLI_NAME "nvme-emu-rpc"

static void cli_usage(FILE *out)
{
	cli_opt_help(&cli_rpc_prog, out);
}

static double cli_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A command-line value: JSON when it parses as JSON, a string otherwise. */
static struct json_object *cli_value(const char *text)
{
	struct json_tokener *tok = json_tokener_new();
	struct json_object *v;
	size_t len = strlen(text);

	if (!tok)
		return NULL;
	/* A complete JSON text, parsed to its end with nothing left over; the NUL is fed too so
	 * that a number at the very end is complete. */
	v = json_tokener_parse_ex(tok, text, (int)len + 1);
	if (!v && json_tokener_get_error(tok) == json_tokener_success) {
		json_tokener_free(tok);
		return NULL; /* "null" */
	}
	if (json_tokener_get_error(tok) != json_tokener_success ||
	    json_tokener_get_parse_end(tok) < len) {
		json_object_put(v);
		v = json_object_new_string(text);
	}
	json_tokener_free(tok);
	return v;
}

/* Sets params[a][b]... = value for key "a.b" (dashes to underscores). Returns 0 or -EINVAL. */
static int cli_set(struct json_object *params, const char *key, struct json_object *value)
{
	char *copy = strdup(key), *part, *save = NULL, *next;
	struct json_object *obj = params;

	if (!copy)
		return -ENOMEM;
	for (char *p = copy; *p; p++)
		if (*p == '-')
			*p = '_';
	part = strtok_r(copy, ".", &save);
	while (part) {
		next = strtok_r(NULL, ".", &save);
		if (!next) {
			json_object_object_add(obj, part, value);
			free(copy);
			return 0;
		}
		{
			struct json_object *child;

			if (!json_object_object_get_ex(obj, part, &child)) {
				child = json_object_new_object();
				json_object_object_add(obj, part, child);
			} else if (!json_object_is_type(child, json_type_object)) {
				free(copy);
				return -EINVAL;
			}
			obj = child;
		}
		part = next;
	}
	free(copy);
	return -EINVAL;
}

static int cli_connect(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		fprintf(stderr, CLI_NAME ": socket path too long\n");
		return -1;
	}
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		fprintf(stderr, CLI_NAME ": cannot connect to %s: %s\n", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

/* Sends the request and returns the response with id 1, or NULL (message printed). */
static struct json_object *cli_call(int fd, const char *method, struct json_object *params,
				    double timeout)
{
	struct json_object *req = json_object_new_object(), *resp = NULL;
	struct json_tokener *tok = json_tokener_new();
	double deadline = cli_now() + timeout;
	const char *text;
	size_t len;

	json_object_object_add(req, "jsonrpc", json_object_new_string("2.0"));
	json_object_object_add(req, "method", json_object_new_string(method));
	json_object_object_add(req, "id", json_object_new_int(1));
	if (params)
		json_object_object_add(req, "params", json_object_get(params));
	text = json_object_to_json_string_length(req, JSON_C_TO_STRING_PLAIN, &len);
	while (len) {
		ssize_t n = send(fd, text, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			fprintf(stderr, CLI_NAME ": cannot send: %s\n", strerror(errno));
			goto out;
		}
		text += n;
		len -= (size_t)n;
	}
	for (;;) {
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		double left = deadline - cli_now();
		char buf[65536];
		ssize_t n;
		size_t off = 0;

		if (left <= 0 || poll(&pfd, 1, (int)(left * 1000) + 1) == 0) {
			fprintf(stderr, CLI_NAME ": no answer within %.0f s\n", timeout);
			goto out;
		}
		n = recv(fd, buf, sizeof(buf), 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			fprintf(stderr, CLI_NAME ": the server closed the connection\n");
			goto out;
		}
		while (off < (size_t)n) {
			struct json_object *v, *id;
			enum json_tokener_error jerr;

			v = json_tokener_parse_ex(tok, buf + off, (int)((size_t)n - off));
			jerr = json_tokener_get_error(tok);
			if (jerr == json_tokener_continue)
				break;
			if (jerr != json_tokener_success) {
				fprintf(stderr, CLI_NAME ": unparsable response: %s\n",
					json_tokener_error_desc(jerr));
				goto out;
			}
			off += json_tokener_get_parse_end(tok);
			json_tokener_reset(tok);
			/* Our id, or an error about the request itself (id null). */
			if (json_object_object_get_ex(v, "id", &id) &&
			    (!id || json_object_get_int(id) == 1)) {
				resp = v;
				goto out;
			}
			json_object_put(v);
		}
	}
out:
	json_tokener_free(tok);
	json_object_put(req);
	return resp;
}

/* Prints the result, or writes it to `out` (replaced whole and durably: a configuration file
 * must never be half written). 0, or 1 with the reason on stderr. */
static int cli_print(struct json_object *result, bool raw, const char *out)
{
	const char *text = !raw && json_object_is_type(result, json_type_string)
				   ? json_object_get_string(result)
				   : json_object_to_json_string_ext(
					 result, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
						     JSON_C_TO_STRING_NOSLASHESCAPE);
	struct iovec iov[2] = {{.iov_base = (void *)text, .iov_len = strlen(text)},
			       {.iov_base = "\n", .iov_len = 1}};
	int rc;

	if (!out) {
		printf("%s\n", text);
		return 0;
	}
	rc = file_replace(out, iov, 2);
	if (rc)
		fprintf(stderr, CLI_NAME ": %s: %s\n", out, strerror(-rc));
	return rc ? 1 : 0;
}

/* --help: the server's methods, one a line. */
static int cli_list_methods(int fd, double timeout)
{
	struct json_object *resp = cli_call(fd, "rpc_get_methods", NULL, timeout), *result;

	cli_usage(stdout);
	if (!resp || !json_object_object_get_ex(resp, "result", &result) ||
	    !json_object_is_type(result, json_type_array)) {
		json_object_put(resp);
		return 1;
	}
	printf("\nmethods of the server:\n");
	for (size_t i = 0; i < json_object_array_length(result); i++)
		printf("  %s\n", json_object_get_string(json_object_array_get_idx(result, i)));
	json_object_put(resp);
	return 0;
}

int main(int argc, char **argv)
{
	struct json_object *params = NULL, *resp, *v;
	struct cli_opt_tables tab;
	char defpath[4096];
	const char *path = NULL, *method, *out_file = NULL;
	double timeout = 120;
	bool help = false, raw = false;
	int opt, fd = -1, rc = 1;

	if (cli_opt_getopt(&cli_rpc_prog, &tab)) {
		fprintf(stderr, CLI_NAME ": too many options for the parser's table\n");
		return 2;
	}
	/* '+' (the table's prefix): stop at the method; what follows are its parameters. */
	while ((opt = getopt_long(argc, argv, tab.shortopts, tab.longopts, NULL)) != -1) {
		switch (opt) {
		case 's':
			path = optarg;
			break;
		case 't':
			timeout = atof(optarg);
			if (timeout <= 0) {
				fprintf(stderr, CLI_NAME ": bad timeout\n");
				return 2;
			}
			break;
		case 'r':
			raw = true;
			break;
		case 'o':
			out_file = optarg;
			break;
		case 'h':
			help = true;
			break;
		default:
			cli_usage(stderr);
			return 2;
		}
	}
	if (!path) {
		const char *dir = getenv("XDG_RUNTIME_DIR");

		snprintf(defpath, sizeof(defpath), "%s/nvme-emu.sock",
			 dir && *dir ? dir : "/run/nvme-emu");
		path = defpath;
	}
	if (!help && optind >= argc) {
		cli_usage(stderr);
		return 2;
	}
	if (help) {
		fd = cli_connect(path);
		if (fd < 0)
			cli_usage(stdout);
		rc = fd < 0 ? 0 : cli_list_methods(fd, timeout);
		if (fd >= 0)
			close(fd);
		return rc;
	}
	method = argv[optind++];
	if (optind < argc && (argv[optind][0] == '{' || argv[optind][0] == '[')) {
		params = json_tokener_parse(argv[optind]);
		if (!params || optind + 1 != argc) {
			fprintf(stderr, CLI_NAME ": the params argument is not valid JSON (or more "
						 "arguments follow it)\n");
			goto out;
		}
	} else if (optind < argc) {
		params = json_object_new_object();
		while (optind < argc) {
			const char *key = argv[optind++];
			struct json_object *val;

			if (strncmp(key, "--", 2) || !key[2]) {
				fprintf(stderr, CLI_NAME ": expected --name, got '%s'\n", key);
				goto out;
			}
			if (optind < argc && strncmp(argv[optind], "--", 2))
				val = cli_value(argv[optind++]);
			else
				val = json_object_new_boolean(true);
			if (cli_set(params, key + 2, val)) {
				json_object_put(val);
				fprintf(stderr,
					CLI_NAME ": '%s' conflicts with an earlier parameter\n",
					key);
				goto out;
			}
		}
	}
	fd = cli_connect(path);
	if (fd < 0) {
		rc = 2;
		goto out;
	}
	resp = cli_call(fd, method, params, timeout);
	close(fd);
	if (!resp)
		goto out;
	if (json_object_object_get_ex(resp, "error", &v)) {
		struct json_object *code = NULL, *msg = NULL;

		json_object_object_get_ex(v, "code", &code);
		json_object_object_get_ex(v, "message", &msg);
		fprintf(stderr, CLI_NAME ": %s: %s (code %d)\n", method,
			msg ? json_object_get_string(msg) : "error",
			code ? json_object_get_int(code) : 0);
	} else if (json_object_object_get_ex(resp, "result", &v)) {
		rc = cli_print(v, raw, out_file);
	} else {
		fprintf(stderr, CLI_NAME ": a response with neither result nor error\n");
	}
	json_object_put(resp);
out:
	json_object_put(params);
	return rc;
}
