/* app/main.c - the nvme-emu daemon: a long-running target configured over JSON-RPC (and -c
 * FILE), or, with --socket, one NVMe controller configured from the command line; served until
 * SIGINT/SIGTERM. Also `nvme-emu caps`, the limits of the emulated platform (doca_caps). */
#include "app/app_internal.h"
#include "app/cli_nvme_emu.h"
#include "app/rpc.h"
#include "backend/bdev.h"
#include "common/evloop.h"
#include "common/log.h"
#include "common/unix_socket.h"
#include "transport/pcie.h"
#include "dpa/dpa.h"
#include "hw/hw.h"

#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <unistd.h>

#define APP_MAX_NS 16
/* Where the default RPC socket lives without $XDG_RUNTIME_DIR (made 0700). */
#define APP_RUN_DIR "/run/nvme-emu"

enum app_ns_kind { APP_NS_MALLOC, APP_NS_NULL, APP_NS_AIO, APP_NS_URING, APP_NS_NBD, APP_NS_RBD };

struct app_opt_ns {
	enum app_ns_kind kind;
	const char *arg; /* size, FILE[:size], an NBD URI or POOL/IMAGE */
	/* --zoned: a zoned namespace (bdev_zone_block over the bdev); zone_capacity 0: not. */
	uint64_t zone_capacity;
	uint32_t max_open_zones, max_active_zones, zone_desc_ext_size;
	bool shared_resv; /* --shared-reservations (an --rbd namespace) */
};

struct app_opts {
	uint16_t pci_ids[4]; /* vendor, device, subsystem vendor, subsystem (0: defaults) */
	const char *socket_path;
	const char *profile;
	enum hw_db_mode db_mode;
	unsigned int poll_groups, dpa_harts;
	uint64_t pg_cpumask;  /* -m 0xMASK (0: a count) */
	bool pin_poll_groups; /* --pin-poll-groups */
	uint32_t block_size;
	struct app_opt_ns ns[APP_MAX_NS];
	unsigned int nr_ns;
	struct ctrlr_config ctrlr;
	bool buffered;
	bool read_zeroes; /* --read-zeroes */
	bool uring_poll; /* --uring-poll */
	const char *ns_pool; /* --ns-pool ram:SIZE | file:PATH[:SIZE] */
	uint32_t max_dma_regions;
	uint64_t max_dma_bytes;
	bool allow_any_dma_fd;
	/* RPC mode */
	const char *rpc_socket;
	const char *config_file;
	bool wait_for_rpc;
	const char *metrics_addr; /* --metrics */
	uint64_t cmb_size;	  /* --cmb */
	const char *pmr;	  /* --pmr FILE[:SIZE] */
	struct app_sec_opts sec;  /* --secondaries, --secondary-dir */
	unsigned int fdp_ruh;	  /* --fdp RUH[:RU_SIZE] (0: no FDP) */
	uint64_t fdp_ru_size;
};

static void app_usage(FILE *out)
{
	cli_opt_help(&app_cli_prog, out);
}

/* -m: a poll-group count (*mask 0), or SPDK's cpumask (0x...) with one poll group per bit set,
 * each pinned to its CPU (CPUs 0..63). */
static int app_parse_poll_groups(const char *s, unsigned int *out, uint64_t *mask)
{
	char *end;
	unsigned long long v;

	*mask = 0;
	if (!strncmp(s, "0x", 2) || !strncmp(s, "0X", 2)) {
		errno = 0;
		v = strtoull(s + 2, &end, 16);
		if (end == s + 2 || *end || !v || errno)
			return -EINVAL;
		*out = (unsigned int)__builtin_popcountll(v);
		*mask = v;
		return 0;
	}
	v = strtoull(s, &end, 10);
	if (end == s || *end || !v || v > 64)
		return -EINVAL;
	*out = (unsigned int)v;
	return 0;
}

/* "VID:DID[:SVID:SSID]" in hexadecimal; 0000 and ffff are not IDs (ffff reads as "no device"). */
static int app_parse_pci_ids(const char *text, uint16_t ids[4])
{
	unsigned int v[4] = { 0 };
	char tail;
	int n = sscanf(text, "%x:%x:%x:%x%c", &v[0], &v[1], &v[2], &v[3], &tail);

	if (n != 2 && n != 4)
		return -EINVAL;
	for (int i = 0; i < n; i++) {
		if (!v[i] || v[i] >= 0xffff)
			return -EINVAL;
		ids[i] = (uint16_t)v[i];
	}
	return 0;
}

static int app_parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 0);
	unsigned int shift = 0;

	if (end == s)
		return -EINVAL;
	switch (*end) {
	case 'k':
	case 'K':
		shift = 10;
		end++;
		break;
	case 'm':
	case 'M':
		shift = 20;
		end++;
		break;
	case 'g':
	case 'G':
		shift = 30;
		end++;
		break;
	case 't':
	case 'T':
		shift = 40;
		end++;
		break;
	default:
		break;
	}
	if (*end == 'i' || *end == 'B')
		end++;
	if (*end || v == 0 || v > (UINT64_MAX >> shift))
		return -EINVAL;
	*out = (uint64_t)v << shift;
	return 0;
}

/* --zoned ZCAP[:OPEN[:ACTIVE[:ZDES]]] (blocks, zones, bytes). The values are checked by the
 * bdev. */
static int app_parse_zoned(const char *s, struct app_opt_ns *ns)
{
	unsigned long long v[4] = {0, 0, 0, 0};
	char *end;

	for (int i = 0; i < 4; i++) {
		errno = 0;
		v[i] = strtoull(s, &end, 0);
		if (errno || end == s || *s == '-')
			return -EINVAL;
		if (!*end)
			break;
		if (*end != ':' || i == 3)
			return -EINVAL;
		s = end + 1;
	}
	if (!v[0] || v[1] > UINT32_MAX || v[2] > UINT32_MAX || v[3] > UINT32_MAX)
		return -EINVAL;
	ns->zone_capacity = v[0];
	ns->max_open_zones = (uint32_t)v[1];
	ns->max_active_zones = (uint32_t)v[2];
	ns->zone_desc_ext_size = (uint32_t)v[3];
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
	const char *names[] = {"bf3", "unlimited"};
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
		printf("nvme_max_msix %u\nnvme_max_io_queues %u\n", pcie_nvme_max_vectors(p),
		       pcie_nvme_max_vectors(p) - 1u);
		/* Secondary controllers (issue 35): per primary (each online one is a function:
		 * with the primary, at most the functions the profile plugs at once), and the
		 * flexible resources it may share (it keeps its admin queue, one I/O queue pair
		 * and one vector); a secondary needs 2 VQ (admin and one I/O queue pair) and 1 VI
		 * to go online. */
		printf("nvme_max_secondaries %u\nnvme_max_vq_flexible %u\n"
		       "nvme_max_vi_flexible %u\nnvme_secondary_min_vq 2\n"
		       "nvme_secondary_min_vi 1\n\n",
		       p->max_hotplug_devices - 1u < CTRLR_VIRT_MAX_SECONDARIES
			   ? p->max_hotplug_devices - 1u
			   : CTRLR_VIRT_MAX_SECONDARIES,
		       pcie_nvme_max_vectors(p) - 2u, pcie_nvme_max_vectors(p) - 1u);
		/* Flexible Data Placement (--fdp, nvmf_create_subsystem fdp_ruh): one
		 * configuration, one reclaim group. */
		printf("fdp_max_ruh %u\nfdp_max_configs 1\n\n", CTRLR_FDP_MAX_RUH);
	}
	return 0;
}

/* --secondaries N[:VQ:VI[:MAXVQ:MAXVI]]: how many, the flexible VQ and VI resources, the most
 * one secondary may have (0 or absent: the defaults). */
static int app_parse_secondaries(const char *s, struct app_sec_opts *o)
{
	uint32_t *f[] = {&o->count, &o->vq_flexible, &o->vi_flexible, &o->max_vq, &o->max_vi};
	unsigned int n = 0;

	while (n < 5) {
		char *end;
		unsigned long v;

		if (*s < '0' || *s > '9')
			return -EINVAL;
		v = strtoul(s, &end, 10);
		if (v > 65535)
			return -EINVAL;
		*f[n++] = (uint32_t)v;
		if (!*end)
			break;
		if (*end != ':')
			return -EINVAL;
		s = end + 1;
	}
	/* N, N:VQ:VI or all five; at least one secondary. */
	if ((n != 1 && n != 3 && n != 5) || !o->count)
		return -EINVAL;
	return 0;
}

/* The options, by the table of cli_nvme_emu.c. */
static int app_parse(int argc, char **argv, struct app_opts *o)
{
	struct cli_opt_tables tab;
	unsigned int u;
	int opt, lvl;

	if (cli_opt_getopt(&app_cli_prog, &tab)) {
		fprintf(stderr, "nvme-emu: too many options for the parser's table\n");
		return -E2BIG;
	}
	while ((opt = getopt_long(argc, argv, tab.shortopts, tab.longopts, NULL)) != -1) {
		switch (opt) {
		case 's':
			o->socket_path = optarg;
			break;
		case APP_O_MALLOC:
		case APP_O_NULL:
		case APP_O_AIO:
		case APP_O_URING:
		case APP_O_NBD:
		case APP_O_RBD:
			if (o->nr_ns == APP_MAX_NS) {
				fprintf(stderr, "nvme-emu: at most %d namespaces\n", APP_MAX_NS);
				return -EINVAL;
			}
			o->ns[o->nr_ns++] = (struct app_opt_ns){
			    .kind = opt == APP_O_MALLOC  ? APP_NS_MALLOC
				    : opt == APP_O_NULL  ? APP_NS_NULL
				    : opt == APP_O_URING ? APP_NS_URING
				    : opt == APP_O_NBD   ? APP_NS_NBD
				    : opt == APP_O_RBD   ? APP_NS_RBD
						     : APP_NS_AIO,
			    .arg = optarg,
			};
			break;
		case APP_O_BUFFERED:
			o->buffered = true;
			break;
		case APP_O_READ_ZEROES:
			o->read_zeroes = true;
			break;
		case APP_O_URING_POLL:
			o->uring_poll = true;
			break;
		case APP_O_NS_POOL:
			if (strncmp(optarg, "ram:", 4) && strncmp(optarg, "file:", 5)) {
				fprintf(stderr, "nvme-emu: --ns-pool ram:SIZE or file:PATH[:SIZE]\n");
				return -EINVAL;
			}
			o->ns_pool = optarg;
			break;
		case APP_O_SHARED_RESV:
			if (!o->nr_ns || o->ns[o->nr_ns - 1].kind != APP_NS_RBD) {
				fprintf(stderr, "nvme-emu: --shared-reservations follows an --rbd "
						"namespace (the cluster keeps the shared state)\n");
				return -EINVAL;
			}
			o->ns[o->nr_ns - 1].shared_resv = true;
			break;
		case APP_O_ZONED:
			if (!o->nr_ns || app_parse_zoned(optarg, &o->ns[o->nr_ns - 1])) {
				fprintf(stderr, "nvme-emu: --zoned ZCAP[:OPEN[:ACTIVE[:ZDES]]] follows a "
						"namespace flag (bad '%s')\n", optarg);
				return -EINVAL;
			}
			break;
		case 'b':
			if (app_parse_uint(optarg, 4096, &u) || (u != 512 && u != 4096)) {
				fprintf(stderr, "nvme-emu: block size must be 512 or 4096\n");
				return -EINVAL;
			}
			o->block_size = u;
			break;
		case 'r':
			o->rpc_socket = optarg;
			break;
		case 'c':
		case 'j':
			o->config_file = optarg;
			break;
		case APP_O_WAIT:
			o->wait_for_rpc = true;
			break;
		case APP_O_METRICS:
			o->metrics_addr = optarg;
			break;
		case 'm':
			if (app_parse_poll_groups(optarg, &u, &o->pg_cpumask) || u > 64) {
				fprintf(stderr, "nvme-emu: -m takes a poll-group count 1..64 or a "
						"cpumask 0x1..0xffffffffffffffff (CPUs 0-63)\n");
				return -EINVAL;
			}
			o->poll_groups = u;
			break;
		case APP_O_PIN_PG:
			o->pin_poll_groups = true;
			break;
		case APP_O_HARTS:
			if (app_parse_uint(optarg, DPA_MAX_HARTS, &u)) {
				fprintf(stderr, "nvme-emu: DPA harts must be 0..%d\n",
					DPA_MAX_HARTS);
				return -EINVAL;
			}
			o->dpa_harts = u;
			break;
		case APP_O_DB:
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
		case APP_O_QENT:
			if (app_parse_uint(optarg, CTRLR_MAX_QUEUE_ENTRIES, &u) || u < 2) {
				fprintf(stderr, "nvme-emu: queue entries must be 2..%d\n",
					CTRLR_MAX_QUEUE_ENTRIES);
				return -EINVAL;
			}
			o->ctrlr.max_queue_entries = u;
			break;
		case APP_O_MDTS:
			if (app_parse_uint(optarg, 10, &u) || !u) {
				fprintf(stderr, "nvme-emu: mdts must be 1..10\n");
				return -EINVAL;
			}
			o->ctrlr.mdts = (uint8_t)u;
			break;
		case APP_O_SGL:
			o->ctrlr.sgl = true;
			break;
		case APP_O_NO_SGL:
			o->ctrlr.sgl = false;
			break;
		case APP_O_MAX_DMA_REGIONS:
			if (app_parse_uint(optarg, 65535, &u) || !u) {
				fprintf(stderr, "nvme-emu: --max-dma-regions must be 1..65535\n");
				return -EINVAL;
			}
			o->max_dma_regions = u;
			break;
		case APP_O_MAX_DMA_BYTES:
			if (app_parse_size(optarg, &o->max_dma_bytes)) {
				fprintf(stderr, "nvme-emu: bad --max-dma-bytes '%s'\n", optarg);
				return -EINVAL;
			}
			break;
		case APP_O_ANY_DMA_FD:
			o->allow_any_dma_fd = true;
			break;
		case APP_O_PCI_IDS:
			if (app_parse_pci_ids(optarg, o->pci_ids)) {
				fprintf(stderr,
					"nvme-emu: bad --pci-ids '%s' (VID:DID[:SVID:SSID], hex, "
					"none 0 or ffff)\n",
					optarg);
				return -EINVAL;
			}
			break;
		case APP_O_SERIAL:
			o->ctrlr.serial = optarg;
			break;
		case APP_O_EVENT_LOG:
			if (!*optarg) {
				fprintf(stderr, "nvme-emu: --event-log needs a file\n");
				return -EINVAL;
			}
			o->ctrlr.pel_file = optarg;
			break;
		case APP_O_STATE_FILE:
			if (!*optarg) {
				fprintf(stderr, "nvme-emu: --state-file needs a file\n");
				return -EINVAL;
			}
			o->ctrlr.state_file = optarg;
			break;
		case APP_O_MODEL:
			o->ctrlr.model = optarg;
			break;
		case APP_O_CMB:
			if (app_parse_size(optarg, &o->cmb_size)) {
				fprintf(stderr, "nvme-emu: bad --cmb '%s'\n", optarg);
				return -EINVAL;
			}
			break;
		case APP_O_SECONDARIES:
			if (app_parse_secondaries(optarg, &o->sec)) {
				fprintf(stderr, "nvme-emu: bad --secondaries '%s' (N[:VQ:VI[:MAXVQ:"
						"MAXVI]])\n",
					optarg);
				return -EINVAL;
			}
			break;
		case APP_O_SECONDARY_DIR:
			if (!*optarg) {
				fprintf(stderr, "nvme-emu: --secondary-dir needs a directory\n");
				return -EINVAL;
			}
			o->sec.dir = optarg;
			break;
		case APP_O_FDP: {
			char ruh[16], *colon;

			snprintf(ruh, sizeof(ruh), "%s", optarg);
			colon = strchr(ruh, ':');
			if (colon)
				*colon = '\0';
			o->fdp_ru_size = 16ull << 20;
			if (app_parse_uint(ruh, CTRLR_FDP_MAX_RUH, &o->fdp_ruh) || !o->fdp_ruh ||
			    (colon && app_parse_size(strchr(optarg, ':') + 1, &o->fdp_ru_size)) ||
			    o->fdp_ru_size % 4096) {
				fprintf(stderr, "nvme-emu: bad --fdp '%s' (RUH 1..%u, RU_SIZE a "
						"multiple of 4K)\n",
					optarg, CTRLR_FDP_MAX_RUH);
				return -EINVAL;
			}
			break;
		}
		case APP_O_PMR:
			if (!*optarg || *optarg == ':') {
				fprintf(stderr, "nvme-emu: --pmr needs a file\n");
				return -EINVAL;
			}
			o->pmr = optarg;
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
		/* Target mode: configured over RPC; the controller flags make no sense. */
		if (o->nr_ns || o->ns_pool || o->ctrlr.pel_file || o->ctrlr.state_file ||
		    o->cmb_size || o->pmr || o->sec.count || o->sec.dir || o->fdp_ruh) {
			fprintf(stderr,
				"nvme-emu: --malloc/--null/--aio/--uring/--nbd/--rbd/--ns-pool/"
				"--event-log/--state-file/--cmb/--pmr/--secondaries/--fdp need --socket "
				"(over RPC: nvmf_create_subsystem's event_log_file, state_file, "
				"cmb_size_mib, pmr_file, fdp_ruh; nvmf_subsystem_add_listener's "
				"secondaries)\n");
			return -EINVAL;
		}
		return 0;
	}
	if (o->config_file || o->wait_for_rpc) {
		fprintf(stderr,
			"nvme-emu: -c and --wait-for-rpc are for target mode (no --socket)\n");
		return -EINVAL;
	}
	if (!o->nr_ns && !o->ns_pool) {
		fprintf(stderr,
			"nvme-emu: give at least one namespace (--malloc, --null, --aio, "
			"--uring, --nbd or --rbd) or a pool (--ns-pool)\n");
		return -EINVAL;
	}
	return 0;
}

static int app_create_bdev(const struct app_opts *o, unsigned int i, struct bdev **out)
{
	const struct app_opt_ns *ns = &o->ns[i];
	char name[32];
	uint64_t size = 0;
	int rc;

	snprintf(name, sizeof(name), "%s%u",
		 ns->kind == APP_NS_MALLOC  ? "Malloc"
		 : ns->kind == APP_NS_NULL  ? "Null"
		 : ns->kind == APP_NS_URING ? "Uring"
		 : ns->kind == APP_NS_NBD   ? "NBD"
		 : ns->kind == APP_NS_RBD   ? "Ceph"
					    : "AIO",
		 i);
	if (ns->kind == APP_NS_AIO || ns->kind == APP_NS_URING) {
		struct bdev_aio_opts ao = {.block_size = o->block_size,
					   .buffered = o->buffered,
					   .poll = ns->kind == APP_NS_URING && o->uring_poll};
		char *file = strdup(ns->arg), *colon;

		if (!file)
			return -ENOMEM;
		colon = strrchr(file, ':');
		if (colon) {
			*colon = '\0';
			if (app_parse_size(colon + 1, &size) || size % o->block_size) {
				fprintf(stderr, "nvme-emu: bad size in --%s %s\n",
					ns->kind == APP_NS_URING ? "uring" : "aio", ns->arg);
				free(file);
				return -EINVAL;
			}
			ao.create_size = size;
		}
		ao.filename = file;
		rc = ns->kind == APP_NS_URING ? bdev_uring_create(name, &ao, out)
					      : bdev_aio_create(name, &ao, out);
		free(file);
	} else {
		if (app_parse_size(ns->arg, &size) || size % o->block_size) {
			fprintf(stderr, "nvme-emu: bad size '%s' (a multiple of %u bytes)\n",
				ns->arg, o->block_size);
			return -EINVAL;
		}
		rc = ns->kind == APP_NS_MALLOC
			 ? bdev_malloc_create(name, size / o->block_size, o->block_size, NULL, out)
			 : bdev_null_create(name, size / o->block_size, o->block_size, NULL,
					    o->read_zeroes, out);
	}
	if (rc)
		fprintf(stderr, "nvme-emu: cannot create bdev for '%s': %s\n", ns->arg,
			strerror(-rc));
	return rc;
}

static void app_reload_signal_done(void *arg, int rc, const char *message)
{
	if (rc)
		LOG_ERR(APP_LOG, "SIGHUP: reload failed: %s", message ? message : strerror(-rc));
	else
		LOG_INFO(APP_LOG, "SIGHUP: configuration reloaded");
}

/* SIGHUP reloads the -c file; SIGINT and SIGTERM stop the daemon cleanly. */
static void app_signal(int fd, uint32_t events, void *arg)
{
	struct app_target *t = arg;
	struct signalfd_siginfo si;
	char err[APP_ERR_LEN];

	if (read(fd, &si, sizeof(si)) != (ssize_t)sizeof(si))
		return;
	if (si.ssi_signo == SIGHUP) {
		if (app_service_reload(t, NULL, app_reload_signal_done, NULL, err))
			LOG_ERR(APP_LOG, "SIGHUP: no reload: %s", err);
		return;
	}
	LOG_INFO(APP_LOG, "signal %u: shutting down", si.ssi_signo);
	app_service_stopping(t);
	evloop_stop(t->loop);
}

static void app_transport_defaults(const struct app_opts *o, const struct hw_profile *profile,
				   struct app_transport_opts *tr)
{
	*tr = (struct app_transport_opts){
	    .max_queue_depth = o->ctrlr.max_queue_entries,
	    .max_io_qpairs_per_ctrlr = o->ctrlr.max_io_queues,
	    .max_io_size = o->ctrlr.mdts ? 4096u << o->ctrlr.mdts : 0,
	    .db_mode = o->db_mode,
	    .dpa_harts = o->dpa_harts,
	    .num_poll_groups = o->poll_groups,
	    .pg_cpumask = o->pg_cpumask,
	    .pin_poll_groups = o->pin_poll_groups,
	    .profile = profile,
	    .sgl = o->ctrlr.sgl,
	    .max_dma_regions = o->max_dma_regions,
	    .max_dma_bytes = o->max_dma_bytes,
	    .allow_any_dma_fd = o->allow_any_dma_fd,
	    .vendor_id = o->pci_ids[0],
	    .device_id = o->pci_ids[1],
	    .subsys_vendor_id = o->pci_ids[2],
	    .subsys_id = o->pci_ids[3],
	};
}

/* The --socket listener's result, kept in the target: a failure is reported after the
 * listener's asynchronous teardown, when app_setup_one has returned. */
/* --socket setup, as a chain: an NBD or RBD namespace's bdev is created asynchronously (NBD's
 * handshake runs on the loop, RBD's connect on a thread), so the chain pauses there and goes on
 * from the creation's callback. */
struct app_setup {
	struct app_target *t;
	const struct app_opts *o;
	struct app_subsys *s;
	unsigned int next_ns;
	char nqn[128];
	char rbd_pool[256];
	bool pool_sync; /* inside app_ns_pool_create: a refusal comes back at once */
	int pool_rc;
	/* The listener waits for its CNTLID from the cluster (a shared namespace): the daemon is
	 * ready when it is added. */
	bool listener_async;
};

static int app_setup_continue(struct app_setup *st);
static void app_setup_abort(struct app_target *t);

static void app_setup_ready(struct app_setup *st)
{
	struct app_target *t = st->t;
	const struct app_opts *o = st->o;

	t->initialized = true;
	app_service_ready(t);
	LOG_INFO(APP_LOG,
		 "nvme-emu %s ready: socket %s, %u namespace(s), %u poll group(s), "
		 "%u DPA hart(s), %s doorbells, profile %s",
		 APP_VERSION, o->socket_path, o->nr_ns, o->poll_groups, o->dpa_harts,
		 hw_db_mode_name(o->db_mode), t->tr_defaults.profile->name);
}

static void app_setup_done(void *arg, int rc, const char *message)
{
	struct app_setup *st = arg;
	struct app_target *t = st->t;

	t->setup_rc = rc;
	if (rc)
		fprintf(stderr, "nvme-emu: %s\n", message);
	if (!st->listener_async || t->shutting_down)
		return;
	if (rc)
		app_setup_abort(t);
	else
		app_setup_ready(st);
}

/* A setup that fails after the loop started stops the daemon (exit status 1). */
static void app_setup_abort(struct app_target *t)
{
	t->shutting_down = true;
	evloop_stop(t->loop);
}

/* The namespace of bdev in the subsystem. */
static int app_setup_ns_in(struct app_setup *st, struct bdev *bdev)
{
	const struct app_opt_ns *ns = &st->o->ns[st->next_ns];
	struct app_ns_opts no = {.nsid = st->next_ns + 1};
	char err[APP_ERR_LEN];
	int rc;

	no.bdev_name = bdev_get_name(bdev);
	no.shared_resv = ns->shared_resv;
	rc = app_subsys_add_ns(st->t, st->s, &no, err);
	if (rc < 0) {
		fprintf(stderr, "nvme-emu: %s\n", err);
		return rc;
	}
	st->next_ns++;
	return 0;
}

static void app_setup_fdp_done(void *arg, int rc, const char *message, struct bdev *bdev);

/* Adds the namespace over bdev (a zone block or placement bdev over it first, as asked).
 * Returns 0 (added), 1 (paused: a placement bdev loading), or -errno. */
static int app_setup_add_ns(struct app_setup *st, struct bdev *bdev)
{
	const struct app_opt_ns *ns = &st->o->ns[st->next_ns];
	int rc;

	if (ns->zone_capacity) {
		/* --zoned: a zone block bdev over it, as bdev_zone_block_create would make. */
		struct bdev_zone_block_opts zo = {
		    .zone_capacity = ns->zone_capacity,
		    .optimal_open_zones = ns->max_open_zones ? ns->max_open_zones : 1,
		    .max_open_zones = ns->max_open_zones,
		    .max_active_zones = ns->max_active_zones,
		    .zone_desc_ext_size = ns->zone_desc_ext_size,
		};
		char name[32];

		snprintf(name, sizeof(name), "Zoned%u", st->next_ns);
		rc = bdev_zone_block_create(name, bdev_get_name(bdev), &zo, NULL, &bdev);
		if (rc) {
			fprintf(stderr, "nvme-emu: --zoned %llu:%u:%u:%u on %s: %s\n",
				(unsigned long long)ns->zone_capacity, ns->max_open_zones,
				ns->max_active_zones, ns->zone_desc_ext_size, ns->arg,
				rc == -EINVAL ? "bad zone capacity, limits or extension size for "
						"this size"
					      : strerror(-rc));
			return rc;
		}
	}
	if (st->o->fdp_ruh) {
		/* --fdp: a placement bdev over it, as bdev_fdp_create would make; its layout is
		 * loaded on its own thread: the chain goes on from app_setup_fdp_done. */
		struct bdev_fdp_opts fo = {
		    .nruh = (uint16_t)st->o->fdp_ruh,
		    .ru_blocks = st->o->fdp_ru_size / bdev_get_block_size(bdev),
		};
		char name[32];

		snprintf(name, sizeof(name), "Fdp%u", st->next_ns);
		rc = bdev_fdp_create(name, bdev_get_name(bdev), &fo, NULL, st->t->loop,
				     app_setup_fdp_done, st);
		if (rc) {
			fprintf(stderr, "nvme-emu: --fdp %u:%llu on %s: %s\n", st->o->fdp_ruh,
				(unsigned long long)st->o->fdp_ru_size, ns->arg,
				rc == -EINVAL ? "fewer than RUH + 3 reclaim units" : strerror(-rc));
			return rc;
		}
		return 1;
	}
	return app_setup_ns_in(st, bdev);
}

/* --fdp's placement bdev is loaded (or not): its namespace in, then the next ones. */
static void app_setup_fdp_done(void *arg, int rc, const char *message, struct bdev *bdev)
{
	struct app_setup *st = arg;

	if (st->t->shutting_down)
		return;
	if (rc) {
		fprintf(stderr, "nvme-emu: --fdp %u:%llu on %s: %s\n", st->o->fdp_ruh,
			(unsigned long long)st->o->fdp_ru_size, st->o->ns[st->next_ns].arg,
			message);
		app_setup_abort(st->t);
		return;
	}
	if (app_setup_ns_in(st, bdev) || app_setup_continue(st))
		app_setup_abort(st->t);
}

static void app_setup_async_done(void *arg, int rc, const char *message, struct bdev *bdev)
{
	struct app_setup *st = arg;
	const struct app_opt_ns *ns = &st->o->ns[st->next_ns];

	/* Cancelled by a shutdown: the target's teardown deletes what was made. */
	if (st->t->shutting_down)
		return;
	if (rc) {
		fprintf(stderr, "nvme-emu: --%s %s: %s\n", ns->kind == APP_NS_NBD ? "nbd" : "rbd",
			ns->arg, message);
		app_setup_abort(st->t);
		return;
	}
	rc = app_setup_add_ns(st, bdev);
	if (rc < 0 || (!rc && app_setup_continue(st)))
		app_setup_abort(st->t);
}

/* The function and its listener, once every namespace is in. */
static int app_setup_finish(struct app_setup *st)
{
	struct app_target *t = st->t;
	const struct app_opts *o = st->o;
	char err[APP_ERR_LEN];
	struct app_function *fn;
	int rc;

	rc = app_function_create(t, app_manager_find(t, "local"), "nvme-emu-0", o->socket_path,
				 false, &fn, err);
	if (rc) {
		fprintf(stderr, "nvme-emu: %s\n", err);
		return rc;
	}
	/* A local manager completes at once when it works; a failure is reported once the
	 * listener is torn down (still pending here: -EINPROGRESS). */
	t->setup_rc = -EINPROGRESS;
	app_listener_add(t, st->s, APP_TRTYPE, fn->vuid, NULL, NULL, &o->sec, app_setup_done, st);
	if (t->setup_rc == -EINPROGRESS && app_subsys_cluster_cntlid(st->s)) {
		st->listener_async = true; /* app_setup_done goes on */
		return 0;
	}
	if (t->setup_rc)
		return t->setup_rc;
	app_setup_ready(st);
	return 0;
}

/* --ns-pool's pool is loaded: the listener next. */
static void app_setup_pool_done(void *arg, int rc, const char *message)
{
	struct app_setup *st = arg;

	if (st->t->shutting_down)
		return;
	if (rc) {
		fprintf(stderr, "nvme-emu: --ns-pool %s: %s\n", st->o->ns_pool, message);
		if (st->pool_sync) {
			st->pool_rc = rc;
			return;
		}
		app_setup_abort(st->t);
		return;
	}
	if (app_setup_finish(st))
		app_setup_abort(st->t);
}

/* --ns-pool: a RAM (malloc) or file (aio) bdev NsPool0 made the subsystem's capacity pool, then
 * the listener (from app_setup_pool_done). 0 when under way. */
static int app_setup_pool(struct app_setup *st)
{
	const char *spec = st->o->ns_pool;
	struct app_ns_pool_opts po = {.bdev_name = "NsPool0"};
	struct bdev *bdev;
	uint64_t size = 0;
	int rc;

	if (!strncmp(spec, "ram:", 4)) {
		if (app_parse_size(spec + 4, &size) || !size || size % 512) {
			fprintf(stderr, "nvme-emu: bad size in --ns-pool %s\n", spec);
			return -EINVAL;
		}
		rc = bdev_malloc_create(po.bdev_name, size / 512, 512, NULL, &bdev);
	} else {
		struct bdev_aio_opts ao = {.block_size = 512, .buffered = st->o->buffered};
		char *file = strdup(spec + 5), *colon;

		if (!file)
			return -ENOMEM;
		colon = strrchr(file, ':');
		if (colon) {
			*colon = '\0';
			if (app_parse_size(colon + 1, &size) || size % 512) {
				fprintf(stderr, "nvme-emu: bad size in --ns-pool %s\n", spec);
				free(file);
				return -EINVAL;
			}
			ao.create_size = size;
		}
		ao.filename = file;
		rc = bdev_aio_create(po.bdev_name, &ao, &bdev);
		free(file);
	}
	if (rc) {
		fprintf(stderr, "nvme-emu: --ns-pool %s: cannot create the bdev: %s\n", spec,
			strerror(-rc));
		return rc;
	}
	/* A refusal completes at once (pool_rc); the load later, on the loop. */
	st->pool_sync = true;
	st->pool_rc = 0;
	app_ns_pool_create(st->t, st->s, &po, app_setup_pool_done, st);
	st->pool_sync = false;
	return st->pool_rc;
}

/* Adds the namespaces from next_ns on; returns 0 when done or paused on an NBD creation. */
static int app_setup_continue(struct app_setup *st)
{
	const struct app_opts *o = st->o;
	struct bdev *bdev;
	int rc;

	while (st->next_ns < o->nr_ns) {
		const struct app_opt_ns *ns = &o->ns[st->next_ns];

		if (ns->kind == APP_NS_NBD) {
			struct bdev_nbd_opts no = {.uri = ns->arg, .block_size = o->block_size};
			char name[32];

			snprintf(name, sizeof(name), "NBD%u", st->next_ns);
			rc = bdev_nbd_create(name, &no, st->t->loop, app_setup_async_done, st);
			if (rc)
				fprintf(stderr, "nvme-emu: --nbd %s: %s\n", ns->arg,
					rc == -EINVAL ? "not an NBD URI, or bad options"
						      : strerror(-rc));
			return rc;
		}
		if (ns->kind == APP_NS_RBD) {
			struct bdev_rbd_opts ro = {.block_size = o->block_size};
			const char *slash = strchr(ns->arg, '/');
			char name[32];

			if (!slash || slash == ns->arg || !slash[1] || strchr(slash + 1, '/') ||
			    (size_t)(slash - ns->arg) >= sizeof(st->rbd_pool)) {
				fprintf(stderr, "nvme-emu: --rbd %s: give POOL/IMAGE\n", ns->arg);
				return -EINVAL;
			}
			snprintf(st->rbd_pool, sizeof(st->rbd_pool), "%.*s",
				 (int)(slash - ns->arg), ns->arg);
			ro.pool_name = st->rbd_pool;
			ro.rbd_name = slash + 1;
			snprintf(name, sizeof(name), "Ceph%u", st->next_ns);
			rc = bdev_rbd_create(name, &ro, st->t->loop, app_setup_async_done, st);
			if (rc)
				fprintf(stderr, "nvme-emu: --rbd %s: %s\n", ns->arg, strerror(-rc));
			return rc;
		}
		rc = app_create_bdev(o, st->next_ns, &bdev);
		if (rc)
			return rc;
		rc = app_setup_add_ns(st, bdev);
		if (rc)
			return rc < 0 ? rc : 0; /* 1: paused on a placement bdev's load */
	}
	if (st->o->ns_pool && !st->s->pool)
		return app_setup_pool(st);
	return app_setup_finish(st);
}

/* --socket: the transport, the namespaces' bdevs, one subsystem and a local listener, built
 * through the same operations as the RPC methods. Returns 0 when done or under way (an NBD
 * namespace connecting: a later failure stops the loop). */
static int app_setup_one(struct app_target *t, const struct app_opts *o, struct app_setup *st)
{
	char err[APP_ERR_LEN];
	int rc;

	*st = (struct app_setup){.t = t, .o = o};
	rc = app_transport_create(t, &t->tr_defaults, err);
	if (rc)
		goto out_err;
	snprintf(st->nqn, sizeof(st->nqn), "nqn.2026-11.io.nvme-emu:%s", o->ctrlr.serial);
	rc = app_subsys_create(t, st->nqn, o->ctrlr.serial, o->ctrlr.model, 0, true, 0, 0, err);
	if (rc)
		goto out_err;
	st->s = app_subsys_find(t, st->nqn);
	if (o->ctrlr.pel_file &&
	    (rc = app_subsys_set_path(&st->s->event_log_file, o->ctrlr.pel_file, err)))
		goto out_err;
	if (o->ctrlr.state_file &&
	    (rc = app_subsys_set_path(&st->s->state_file, o->ctrlr.state_file, err)))
		goto out_err;
	if (o->cmb_size || o->pmr) {
		char file[PATH_MAX], *colon;
		uint64_t pmr_size = 0;

		snprintf(file, sizeof(file), "%s", o->pmr ? o->pmr : "");
		colon = strrchr(file, ':');
		if (colon && app_parse_size(colon + 1, &pmr_size) == 0)
			*colon = '\0';
		rc = app_subsys_set_devmem(st->s, o->cmb_size, o->pmr ? file : NULL, pmr_size, err);
		if (rc)
			goto out_err;
	}
	st->s->fdp_ruh = (uint16_t)o->fdp_ruh;
	st->s->fdp_ru_size = o->fdp_ru_size;
	return app_setup_continue(st);

out_err:
	fprintf(stderr, "nvme-emu: %s\n", err);
	return rc;
}

static int app_rpc_register(struct rpc_server *srv)
{
	int rc = rpc_framework_register(srv);

	if (!rc)
		rc = rpc_bdev_register(srv);
	if (!rc)
		rc = rpc_nvmf_register(srv);
	if (!rc)
		rc = rpc_emu_register(srv);
	if (!rc)
		rc = rpc_health_register(srv);
	if (!rc)
		rc = rpc_ns_pool_register(srv);
	if (!rc)
		rc = rpc_zns_register(srv);
	if (!rc)
		rc = rpc_service_register(srv);
	return rc;
}

static void app_config_loaded(void *arg, int rc, const char *message)
{
	struct app_target *t = arg;

	if (rc) {
		LOG_ERR(APP_LOG, "configuration %s failed: %s", t->config_file, message);
		/* As SPDK: a target that cannot load its configuration does not run. */
		evloop_stop(t->loop);
		t->shutting_down = true;
		return;
	}
	rpc_framework_init_done(t);
	LOG_INFO(APP_LOG, "configuration %s loaded", t->config_file);
}

static void app_fini_done(void *arg)
{
	evloop_stop(arg);
}

/* The default RPC socket: $XDG_RUNTIME_DIR/nvme-emu.sock (the user's private runtime directory),
 * else /run/nvme-emu/nvme-emu.sock in a 0700 directory made here: never a name in a directory
 * every user can write, where another user could squat it first. NULL (with the reason on
 * stderr) when the directory cannot be made or is not safe. */
static const char *app_default_rpc_socket(char *buf, size_t len)
{
	const char *dir = getenv("XDG_RUNTIME_DIR");
	char err[256];

	if (dir && *dir) {
		snprintf(buf, len, "%s/nvme-emu.sock", dir);
		return buf;
	}
	if (unix_socket_private_dir(APP_RUN_DIR, err, sizeof(err))) {
		fprintf(stderr, "nvme-emu: %s; give the RPC socket with -r PATH\n", err);
		return NULL;
	}
	snprintf(buf, len, "%s/nvme-emu.sock", APP_RUN_DIR);
	return buf;
}

/* Guest memory for the bdevs that register it with the kernel (io_uring fixed buffers): the
 * vfio-user clients' DMA windows as hw/ maps them. */
static const struct bdev_mem_ops app_bdev_mem_ops = {
    .get = hw_mem_local_get,
    .removed = hw_mem_removed,
    .put = hw_mem_put,
};

int main(int argc, char **argv)
{
	struct app_opts o = {
	    .profile = "unlimited",
	    .poll_groups = 1,
	    .dpa_harts = APP_DEFAULT_DPA_HARTS,
	    .db_mode = APP_DEFAULT_DB_MODE,
	    .block_size = 512,
	    /* SGLs for I/O commands by default, as SPDK's target, QEMU's NVMe and SSDs offer them:
	     * SPDK's host then sends a 128 KiB buffer as one descriptor instead of a 32-entry PRP
	     * list (nvme-emu's 128 KiB writes with spdk_nvme_perf: 0.6M IOPS with PRPs, 1.0M). */
	    .ctrlr = {.serial = "NVMEEMU0001", .sgl = true},
	};
	char rpc_path[PATH_MAX], *dir_copy = NULL, err[APP_ERR_LEN];
	const struct hw_profile *profile;
	struct evloop_watch *sigw = NULL;
	struct evloop *loop = NULL;
	struct rpc_server *srv = NULL;
	struct app_target t;
	struct app_setup setup;
	bool target_up = false;
	sigset_t mask;
	int sfd = -1, rc = 1;

	if (argc > 1 && !strcmp(argv[1], "caps"))
		return app_caps(argc - 1, argv + 1);
	if (app_parse(argc, argv, &o))
		return 2;
	bdev_set_mem_ops(&app_bdev_mem_ops);
	hw_mem_set_removed_cb(bdev_mem_removed);
	profile = hw_profile_find(o.profile);
	if (!profile) {
		fprintf(stderr, "nvme-emu: unknown profile '%s' (bf3, unlimited)\n", o.profile);
		return 2;
	}
	if (!o.socket_path && !o.rpc_socket) {
		o.rpc_socket = app_default_rpc_socket(rpc_path, sizeof(rpc_path));
		if (!o.rpc_socket)
			return 1;
	}

	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	/* Blocked before any thread starts, so only the signalfd sees them. */
	pthread_sigmask(SIG_BLOCK, &mask, NULL);

	loop = evloop_create();
	if (!loop)
		goto out;
	sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd < 0 || !(sigw = evloop_watch_add(loop, sfd, EPOLLIN, app_signal, &t)))
		goto out;
	/* Functions created without a socket path get one beside the RPC socket. */
	dir_copy = strdup(o.rpc_socket ? o.rpc_socket : o.socket_path);
	if (!dir_copy || app_target_init(&t, loop, dirname(dir_copy)))
		goto out;
	target_up = true;
	if (app_service_init(&t, err)) {
		fprintf(stderr, "nvme-emu: %s\n", err);
		goto out;
	}
	app_transport_defaults(&o, profile, &t.tr_defaults);
	t.config_file = o.config_file;
	if (o.rpc_socket) {
		int src = rpc_server_create(loop, o.rpc_socket, &t, &srv);

		if (src) {
			fprintf(stderr, "nvme-emu: cannot serve JSON-RPC on %s: %s\n", o.rpc_socket,
				src == -EADDRINUSE ? "another nvme-emu is serving it"
						   : strerror(-src));
			goto out;
		}
		t.rpc = srv;
		if (app_rpc_register(srv))
			goto out;
	}
	/* Before the configuration: READY=1 promises every listener, this one included. */
	if (o.metrics_addr) {
		if (app_metrics_start(&t, o.metrics_addr, 0, false, err)) {
			fprintf(stderr, "nvme-emu: --metrics: %s\n", err);
			goto out;
		}
		t.metrics.from_cmdline = true;
	}
	if (o.socket_path) {
		if (app_setup_one(&t, &o, &setup))
			goto out;
	} else if (o.wait_for_rpc) {
		rpc_server_set_state(srv, RPC_STARTUP);
		LOG_INFO(APP_LOG, "nvme-emu %s waiting for framework_start_init on %s", APP_VERSION,
			 o.rpc_socket);
	} else if (o.config_file) {
		if (rpc_config_load(&t, o.config_file, app_config_loaded, &t))
			goto out;
		if (t.shutting_down)
			goto out;
	} else {
		rpc_framework_init_done(&t);
		LOG_INFO(APP_LOG, "nvme-emu %s ready: JSON-RPC on %s", APP_VERSION, o.rpc_socket);
	}
	evloop_run(loop);
	rc = t.shutting_down ? 1 : 0;

out:
	if (srv) {
		/* No request may start while the target is torn down. */
		rpc_server_set_state(srv, 0);
		rpc_framework_cancel_waiters(&t);
	}
	if (target_up) {
		/* The teardown is asynchronous (controllers reset through their poll groups):
		 * the loop runs on until it is over. A second signal stops it early. */
		app_metrics_stop(&t);
		app_target_fini(&t, app_fini_done, loop);
		if (!t.fini_finished)
			evloop_run(loop);
		app_service_fini(&t);
	}
	rpc_server_destroy(srv);
	free(dir_copy);
	if (sigw)
		evloop_watch_remove(sigw);
	if (sfd >= 0)
		close(sfd);
	evloop_destroy(loop);
	return rc;
}
