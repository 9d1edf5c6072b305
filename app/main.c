/* app/main.c - the nvme-emu daemon: one NVMe controller, configured from the
 * command line, served over a vfio-user socket until SIGINT/SIGTERM; and
 * `nvme-emu caps`, the limits of the emulated platform (doca_caps). */
#include "backend/bdev.h"
#include "common/evloop.h"
#include "common/log.h"
#include "controller/pcie.h"
#include "dpa/dpa.h"
#include "hw/hw.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <unistd.h>

#define APP_LOG "app"
#define APP_VERSION "0.1.0"
#define APP_MAX_NS 16

enum app_ns_kind { APP_NS_MALLOC, APP_NS_NULL, APP_NS_AIO };

struct app_ns {
	enum app_ns_kind kind;
	const char *arg; /* size, or FILE[:size] */
};

struct app_opts {
	const char *socket_path;
	const char *profile;
	enum hw_db_mode db_mode;
	unsigned int poll_groups, dpa_harts;
	uint32_t block_size;
	struct app_ns ns[APP_MAX_NS];
	unsigned int nr_ns;
	struct ctrlr_config ctrlr;
	bool buffered;
};

static void app_usage(FILE *out)
{
	fprintf(out,
		"usage: nvme-emu [options]        serve one NVMe controller over vfio-user\n"
		"       nvme-emu caps [-p PROFILE] print the emulated platform's limits\n"
		"\n"
		"  -s, --socket PATH        vfio-user socket to create (required)\n"
		"      --malloc SIZE        namespace on a RAM bdev (e.g. 1G); repeatable\n"
		"      --null SIZE          namespace on a null bdev (reads zeroes, drops writes)\n"
		"      --aio FILE[:SIZE]    namespace on a file or block device through libaio\n"
		"                           (SIZE creates/extends the file)\n"
		"      --buffered           aio without O_DIRECT\n"
		"  -b, --block-size N       512 or 4096 (default 512)\n"
		"  -m, --poll-groups N      poll-group threads (default 1)\n"
		"      --dpa-harts N        DPA hart threads; 0 runs DPA threads inline (default 1)\n"
		"      --doorbells MODE     trap or mmap (default trap)\n"
		"  -p, --profile NAME       platform profile: unlimited or bf3 (default unlimited)\n"
		"  -q, --io-queues N        I/O queue pairs (default: what the profile allows)\n"
		"      --queue-entries N    CAP.MQES + 1 (default 1024)\n"
		"      --mdts N             max data transfer, 2^N pages (default 5)\n"
		"      --sgl                accept SGLs for I/O commands\n"
		"      --serial S, --model M controller identity\n"
		"  -l, --log-level L        10..70 or a name (default info)\n"
		"  -v, --version, -h, --help\n");
}

static int app_parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 0);
	unsigned int shift = 0;

	if (end == s)
		return -EINVAL;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	case 't': case 'T': shift = 40; end++; break;
	default: break;
	}
	if (*end == 'i' || *end == 'B')
		end++;
	if (*end || v == 0 || v > (UINT64_MAX >> shift))
		return -EINVAL;
	*out = (uint64_t)v << shift;
	return 0;
}

static int app_parse_uint(const char *s, unsigned int max, unsigned int *out)
{
	char *end;
	unsigned long v = strtoul(s, &end, 0);

	if (end == s || *end || v > max)
		return -EINVAL;
	*out = (unsigned int)v;
	return 0;
}

static int app_caps(int argc, char **argv)
{
	const char *names[] = { "bf3", "unlimited" };
	int opt;

	optind = 1;
	while ((opt = getopt(argc, argv, "p:")) != -1) {
		if (opt != 'p')
			return 2;
		names[0] = optarg;
		names[1] = NULL;
	}
	for (unsigned int i = 0; i < 2 && names[i]; i++) {
		const struct hw_profile *p = hw_profile_find(names[i]);

		if (!p) {
			fprintf(stderr, "nvme-emu: unknown profile '%s'\n", names[i]);
			return 2;
		}
		hw_profile_print(p, stdout);
		printf("nvme_max_msix %u\nnvme_max_io_queues %u\n\n", pcie_nvme_max_vectors(p),
		       pcie_nvme_max_vectors(p) - 1u);
	}
	return 0;
}

static int app_parse(int argc, char **argv, struct app_opts *o)
{
	enum { O_MALLOC = 256, O_NULL, O_AIO, O_HARTS, O_DB, O_QENT, O_MDTS, O_SGL, O_SERIAL,
	       O_MODEL, O_BUFFERED };
	static const struct option longopts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "malloc", required_argument, NULL, O_MALLOC },
		{ "null", required_argument, NULL, O_NULL },
		{ "aio", required_argument, NULL, O_AIO },
		{ "buffered", no_argument, NULL, O_BUFFERED },
		{ "block-size", required_argument, NULL, 'b' },
		{ "poll-groups", required_argument, NULL, 'm' },
		{ "cpumask", required_argument, NULL, 'm' },
		{ "dpa-harts", required_argument, NULL, O_HARTS },
		{ "doorbells", required_argument, NULL, O_DB },
		{ "profile", required_argument, NULL, 'p' },
		{ "io-queues", required_argument, NULL, 'q' },
		{ "queue-entries", required_argument, NULL, O_QENT },
		{ "mdts", required_argument, NULL, O_MDTS },
		{ "sgl", no_argument, NULL, O_SGL },
		{ "serial", required_argument, NULL, O_SERIAL },
		{ "model", required_argument, NULL, O_MODEL },
		{ "log-level", required_argument, NULL, 'l' },
		{ "version", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	unsigned int u;
	int opt, lvl;

	while ((opt = getopt_long(argc, argv, "s:b:m:p:q:l:vh", longopts, NULL)) != -1) {
		switch (opt) {
		case 's':
			o->socket_path = optarg;
			break;
		case O_MALLOC:
		case O_NULL:
		case O_AIO:
			if (o->nr_ns == APP_MAX_NS) {
				fprintf(stderr, "nvme-emu: at most %d namespaces\n", APP_MAX_NS);
				return -EINVAL;
			}
			o->ns[o->nr_ns++] = (struct app_ns){
				.kind = opt == O_MALLOC ? APP_NS_MALLOC
					: opt == O_NULL ? APP_NS_NULL : APP_NS_AIO,
				.arg = optarg,
			};
			break;
		case O_BUFFERED:
			o->buffered = true;
			break;
		case 'b':
			if (app_parse_uint(optarg, 4096, &u) || (u != 512 && u != 4096)) {
				fprintf(stderr, "nvme-emu: block size must be 512 or 4096\n");
				return -EINVAL;
			}
			o->block_size = u;
			break;
		case 'm':
			if (app_parse_uint(optarg, 64, &u) || !u) {
				fprintf(stderr, "nvme-emu: poll groups must be 1..64\n");
				return -EINVAL;
			}
			o->poll_groups = u;
			break;
		case O_HARTS:
			if (app_parse_uint(optarg, DPA_MAX_HARTS, &u)) {
				fprintf(stderr, "nvme-emu: DPA harts must be 0..%d\n", DPA_MAX_HARTS);
				return -EINVAL;
			}
			o->dpa_harts = u;
			break;
		case O_DB:
			if (!strcmp(optarg, "trap")) {
				o->db_mode = HW_DB_MODE_TRAP;
			} else if (!strcmp(optarg, "mmap")) {
				o->db_mode = HW_DB_MODE_MMAP;
			} else {
				fprintf(stderr, "nvme-emu: doorbells must be trap or mmap\n");
				return -EINVAL;
			}
			break;
		case 'p':
			o->profile = optarg;
			break;
		case 'q':
			if (app_parse_uint(optarg, CTRLR_MAX_IO_QUEUES, &u) || !u) {
				fprintf(stderr, "nvme-emu: bad --io-queues\n");
				return -EINVAL;
			}
			o->ctrlr.max_io_queues = (uint16_t)u;
			break;
		case O_QENT:
			if (app_parse_uint(optarg, CTRLR_MAX_QUEUE_ENTRIES, &u) || u < 2) {
				fprintf(stderr, "nvme-emu: queue entries must be 2..%d\n",
					CTRLR_MAX_QUEUE_ENTRIES);
				return -EINVAL;
			}
			o->ctrlr.max_queue_entries = u;
			break;
		case O_MDTS:
			if (app_parse_uint(optarg, 10, &u) || !u) {
				fprintf(stderr, "nvme-emu: mdts must be 1..10\n");
				return -EINVAL;
			}
			o->ctrlr.mdts = (uint8_t)u;
			break;
		case O_SGL:
			o->ctrlr.sgl = true;
			break;
		case O_SERIAL:
			o->ctrlr.serial = optarg;
			break;
		case O_MODEL:
			o->ctrlr.model = optarg;
			break;
		case 'l':
			lvl = log_level_parse(optarg);
			if (lvl < 0) {
				fprintf(stderr, "nvme-emu: bad log level '%s'\n", optarg);
				return -EINVAL;
			}
			log_set_level(lvl);
			break;
		case 'v':
			printf("nvme-emu %s\n", APP_VERSION);
			exit(0);
		case 'h':
			app_usage(stdout);
			exit(0);
		default:
			app_usage(stderr);
			return -EINVAL;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "nvme-emu: unexpected argument '%s'\n", argv[optind]);
		return -EINVAL;
	}
	if (!o->socket_path) {
		fprintf(stderr, "nvme-emu: --socket is required\n");
		return -EINVAL;
	}
	if (!o->nr_ns) {
		fprintf(stderr, "nvme-emu: give at least one namespace (--malloc, --null or --aio)\n");
		return -EINVAL;
	}
	return 0;
}

static int app_create_bdev(const struct app_opts *o, unsigned int i, struct bdev **out)
{
	const struct app_ns *ns = &o->ns[i];
	char name[32];
	uint64_t size = 0;
	int rc;

	snprintf(name, sizeof(name), "%s%u",
		 ns->kind == APP_NS_MALLOC ? "Malloc" : ns->kind == APP_NS_NULL ? "Null" : "AIO", i);
	if (ns->kind == APP_NS_AIO) {
		struct bdev_aio_opts ao = { .block_size = o->block_size, .buffered = o->buffered };
		char *file = strdup(ns->arg), *colon;

		if (!file)
			return -ENOMEM;
		colon = strrchr(file, ':');
		if (colon) {
			*colon = '\0';
			if (app_parse_size(colon + 1, &size) || size % o->block_size) {
				fprintf(stderr, "nvme-emu: bad size in --aio %s\n", ns->arg);
				free(file);
				return -EINVAL;
			}
			ao.create_size = size;
		}
		ao.filename = file;
		rc = bdev_aio_create(name, &ao, out);
		free(file);
	} else {
		if (app_parse_size(ns->arg, &size) || size % o->block_size) {
			fprintf(stderr, "nvme-emu: bad size '%s' (a multiple of %u bytes)\n", ns->arg,
				o->block_size);
			return -EINVAL;
		}
		rc = ns->kind == APP_NS_MALLOC
			     ? bdev_malloc_create(name, size / o->block_size, o->block_size, NULL, out)
			     : bdev_null_create(name, size / o->block_size, o->block_size, NULL, out);
	}
	if (rc)
		fprintf(stderr, "nvme-emu: cannot create bdev for '%s': %s\n", ns->arg,
			strerror(-rc));
	return rc;
}

static void app_signal(int fd, uint32_t events, void *arg)
{
	struct signalfd_siginfo si;

	if (read(fd, &si, sizeof(si)) == (ssize_t)sizeof(si))
		LOG_INFO(APP_LOG, "signal %u: shutting down", si.ssi_signo);
	evloop_stop(arg);
}

int main(int argc, char **argv)
{
	struct app_opts o = {
		.profile = "unlimited",
		.poll_groups = 1,
		.dpa_harts = 1,
		.block_size = 512,
		.ctrlr = { .serial = "NVMEEMU0001" },
	};
	const struct hw_profile *profile;
	struct pcie_poll_groups *pgs = NULL;
	struct pcie_ctrlr *pc = NULL;
	struct evloop_watch *sigw = NULL;
	struct evloop *loop = NULL;
	struct dpa *dpa = NULL;
	sigset_t mask;
	int sfd = -1, rc = 1;

	if (argc > 1 && !strcmp(argv[1], "caps"))
		return app_caps(argc - 1, argv + 1);
	if (app_parse(argc, argv, &o))
		return 2;
	profile = hw_profile_find(o.profile);
	if (!profile) {
		fprintf(stderr, "nvme-emu: unknown profile '%s' (bf3, unlimited)\n", o.profile);
		return 2;
	}

	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	/* Blocked before any thread starts, so only the signalfd sees them. */
	pthread_sigmask(SIG_BLOCK, &mask, NULL);

	loop = evloop_create();
	if (!loop)
		goto out;
	sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd < 0 || !(sigw = evloop_watch_add(loop, sfd, EPOLLIN, app_signal, loop)))
		goto out;
	dpa = dpa_create(o.dpa_harts);
	if (!dpa) {
		fprintf(stderr, "nvme-emu: cannot start %u DPA harts: %s\n", o.dpa_harts,
			strerror(errno));
		goto out;
	}
	pgs = pcie_poll_groups_create(o.poll_groups, dpa);
	if (!pgs)
		goto out;
	{
		struct pcie_ctrlr_opts po = {
			.vuid = "nvme-emu-0",
			.socket_path = o.socket_path,
			.db_mode = o.db_mode,
			.profile = profile,
			.ctrlr = o.ctrlr,
		};

		if (pcie_ctrlr_create(loop, pgs, dpa, &po, &pc)) {
			fprintf(stderr, "nvme-emu: cannot create the controller (see log)\n");
			goto out;
		}
	}
	for (unsigned int i = 0; i < o.nr_ns; i++) {
		struct bdev *bdev;

		if (app_create_bdev(&o, i, &bdev))
			goto out;
		rc = ctrlr_ns_add(pcie_ctrlr_core(pc), i + 1, bdev, NULL);
		if (rc < 0) {
			fprintf(stderr, "nvme-emu: cannot attach namespace %u: %s\n", i + 1,
				strerror(-rc));
			rc = 1;
			goto out;
		}
	}
	if (pcie_ctrlr_start(pc))
		goto out;
	LOG_INFO(APP_LOG, "nvme-emu %s ready: socket %s, %u namespace(s), %u poll group(s), "
		 "%u DPA hart(s), %s doorbells, profile %s", APP_VERSION, o.socket_path, o.nr_ns,
		 o.poll_groups, o.dpa_harts, hw_db_mode_name(o.db_mode), profile->name);
	rc = evloop_run(loop) ? 1 : 0;

out:
	pcie_ctrlr_destroy(pc);
	pcie_poll_groups_destroy(pgs);
	if (dpa && dpa_destroy(dpa))
		LOG_ERR(APP_LOG, "DPA resources still in use at exit");
	bdev_delete_all();
	if (sigw)
		evloop_watch_remove(sigw);
	if (sfd >= 0)
		close(sfd);
	evloop_destroy(loop);
	return rc;
}
