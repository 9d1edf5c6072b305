/* app/cli_nvme_emu.c - nvme-emu's options: what main.c parses, what --help prints and what
 * nvme-emu(8) lists (common/cli_opt.h). */
#include "app/cli_nvme_emu.h"

static const char *const app_cli_usage[] = {
    "[options]",
    "--socket PATH [options]",
    "caps [-p PROFILE]",
    NULL,
};

static const struct cli_opt app_cli_opts[] = {
    {NULL, 0, NULL, "Target (configured over JSON-RPC, SPDK's method names; see nvme-emu-rpc)", 0},
    {"rpc-socket", 'r', "PATH",
     "JSON-RPC socket (mode 0600); default $XDG_RUNTIME_DIR/nvme-emu.sock, or "
     "/run/nvme-emu/nvme-emu.sock in a 0700 directory. With --socket the daemon serves RPC too "
     "when this is given.",
     0},
    {"json", 'c', "FILE",
     "replay a configuration file (save_config's format) before serving; systemctl reload, "
     "SIGHUP and nvmf_emu_reload_config apply its later changes.",
     'j'},
    {"wait-for-rpc", APP_O_WAIT, NULL,
     "wait for framework_start_init before replaying -c and serving.", 0},
    {"metrics", APP_O_METRICS, "ADDR",
     "serve Prometheus metrics (text format 0.0.4) over HTTP at http://ADDR/metrics; ADDR is "
     "IP:PORT, [IPv6]:PORT, :PORT (every address) or localhost:PORT. The RPC "
     "nvmf_emu_metrics_start does the same from a configuration.",
     0},
    {NULL, 0, NULL, "One controller from the command line", 0},
    {"socket", 's', "PATH", "the vfio-user socket of the function to create (mode 0600).", 0},
    {"malloc", APP_O_MALLOC, "SIZE",
     "a namespace on a RAM bdev (SIZE like 1G); repeatable, as the other namespace options.", 0},
    {"null", APP_O_NULL, "SIZE",
     "a namespace on a null bdev (drops writes; reads leave the host's buffer as it is).", 0},
    {"read-zeroes", APP_O_READ_ZEROES, NULL,
     "null namespaces return zeroes on reads (and offer deallocation), as bdev_null_create "
     "read_zeroes.",
     0},
    {"aio", APP_O_AIO, "FILE[:SIZE]",
     "a namespace on a file or block device through libaio (SIZE creates or extends the file).", 0},
    {"uring", APP_O_URING, "FILE[:SIZE]", "a namespace on a file or block device through io_uring.",
     0},
    {"nbd", APP_O_NBD, "URI",
     "a namespace on an NBD export: nbd://HOST[:PORT]/EXPORT, nbd+unix:///EXPORT?socket=PATH, "
     "nbds://... for TLS.",
     0},
    {"rbd", APP_O_RBD, "POOL/IMAGE",
     "a namespace on a Ceph RBD image (the cluster from $CEPH_CONF or /etc/ceph/ceph.conf, user "
     "admin).",
     0},
    {"shared-reservations", APP_O_SHARED_RESV, NULL,
     "the --rbd namespace just before keeps its reservations in the Ceph cluster, one state "
     "for every daemon exporting the image (as nvmf_subsystem_add_ns shared_reservations); "
     "give every daemon the same --serial, so that they make one NVM subsystem.",
     0},
    {"buffered", APP_O_BUFFERED, NULL, "aio and io_uring namespaces without O_DIRECT.", 0},
    {"uring-poll", APP_O_URING_POLL, NULL,
     "io_uring reads and writes polled (IOPOLL; needs O_DIRECT).", 0},
    {"ns-pool", APP_O_NS_POOL, "SPEC",
     "a capacity pool, ram:SIZE or file:PATH[:SIZE], out of which the host creates namespaces "
     "(nvme create-ns, attach-ns); a file pool keeps them across restarts.",
     0},
    {"zoned", APP_O_ZONED, "ZCAP[:OPEN[:ACTIVE[:ZDES]]]",
     "the namespace given just before is zoned (ZNS): ZCAP writable blocks per zone (zone size: "
     "the next power of two), at most OPEN open and ACTIVE active zones (0 or absent: no limit), "
     "ZDES bytes of zone descriptor extension (a multiple of 64; 0: none).",
     0},
    {"block-size", 'b', "N", "logical block size, 512 or 4096 (default 512).", 0},
    {"serial", APP_O_SERIAL, "S", "the controller's serial number (default NVMEEMU0001).", 0},
    {"model", APP_O_MODEL, "M", "the controller's model number.", 0},
    {"event-log", APP_O_EVENT_LOG, "FILE",
     "keep the Persistent Event Log in FILE (read at start, appended to with each event).", 0},
    {"state-file", APP_O_STATE_FILE, "FILE",
     "keep the controller's firmware slots and the features saved with SV in FILE (read at "
     "start, written before each change completes).",
     0},
    {"cmb", APP_O_CMB, "SIZE",
     "a Controller Memory Buffer of SIZE (a power of two, 1M..1G; Linux needs 2M or more) in "
     "BAR2: queues, PRP lists and data may live in it.",
     0},
    {"pmr", APP_O_PMR, "FILE[:SIZE]",
     "a Persistent Memory Region in BAR4 kept in FILE (created or extended to SIZE, a power of "
     "two 1M..1G; without SIZE the file's size); what the host made persistent (PMRCTL.EN "
     "cleared, PMRSTS.NRDY set) survives a kill of the daemon.",
     0},
    {"secondaries", APP_O_SECONDARIES, "N[:VQ:VI[:MAXVQ:MAXVI]]",
     "the controller is a primary controller with N secondary controllers (CNTLIDs after its "
     "own), sharing VQ queue pairs and VI vectors of its own with them (flexible resources; "
     "default 4N and 2N, as far as its queues go), at most MAXVQ and MAXVI to one secondary "
     "(default VQ/N, VI/N); its host assigns them and brings secondaries online (nvme virt-mgmt), "
     "each then a function of its own at <socket>.sec<CNTLID>. Kept in --state-file.",
     0},
    {"secondary-dir", APP_O_SECONDARY_DIR, "DIR",
     "the secondary controllers' sockets are DIR/sec<CNTLID>.", 0},
    {"fdp", APP_O_FDP, "RUH[:RU_SIZE]",
     "Flexible Data Placement: RUH reclaim unit handles (1..128) in reclaim units of RU_SIZE "
     "(a multiple of 4K; default 16M), enabled from the start; every namespace is a placement "
     "bdev (bdev_fdp_create) over its storage, which keeps RU_SIZE x (RUH + 2) of it spare.",
     0},
    {NULL, 0, NULL, "Transport (nvmf_create_transport's defaults in target mode)", 0},
    {"poll-groups", 'm', "N|0xMASK",
     "poll-group threads owning the I/O queues (default 1), not pinned; a mask (0x6) makes one "
     "per CPU bit, each pinned to its CPU.",
     0},
    {"cpumask", 'm', "0xMASK", "the same as --poll-groups (SPDK's name).", 0},
    {"pin-poll-groups", APP_O_PIN_PG, NULL,
     "pin poll group i to the i-th CPU this process may run on (taskset, cpuset).", 0},
    {"dpa-harts", APP_O_HARTS, "N",
     "DPA hart threads; 0 (the default) runs the DPA threads inline in the poll groups.", 0},
    {"doorbells", APP_O_DB, "MODE", "doorbell delivery, mmap or trap (default mmap).", 0},
    {"profile", 'p', "NAME",
     "platform profile the PCI type must fit, unlimited or bf3 (default unlimited).", 0},
    {"io-queues", 'q', "N", "I/O queue pairs per controller (default: what the profile allows).",
     0},
    {"queue-entries", APP_O_QENT, "N", "CAP.MQES + 1 (default 1024).", 0},
    {"mdts", APP_O_MDTS, "N", "maximum data transfer, 2^N pages (default 5).", 0},
    {"sgl", APP_O_SGL, NULL, "accept SGLs for I/O commands (the default).", 0},
    {"no-sgl", APP_O_NO_SGL, NULL, "PRPs only: SGLS 0 in Identify Controller.", 0},
    {NULL, 0, NULL, "What a client (VMM) may do to a function", 0},
    {"max-dma-regions", APP_O_MAX_DMA_REGIONS, "N",
     "DMA windows mapped at once (default 256, at most 65535).", 0},
    {"max-dma-bytes", APP_O_MAX_DMA_BYTES, "SIZE",
     "bytes of guest memory mapped at once (default 1T).", 0},
    {"allow-any-dma-fd", APP_O_ANY_DMA_FD, NULL,
     "accept guest-memory fds other than files of tmpfs or hugetlbfs (memfd, /dev/shm, "
     "/dev/hugepages: always taken), e.g. files on disk, whose page faults wait for I/O: only for "
     "a VMM you trust.",
     0},
    {"allow-unsealed-dma", APP_O_ANY_DMA_FD, NULL, "the older name of --allow-any-dma-fd.", 0},
    {"pci-ids", APP_O_PCI_IDS, "VID:DID[:SVID:SSID]",
     "the functions' PCI IDs in hexadecimal (default fffe:00e1, a vendor ID assigned to nobody).",
     0},
    {NULL, 0, NULL, "Other", 0},
    {"log-level", 'l', "L",
     "10 disable .. 20 critical, 30 error, 40 warning, 50 info (default), 60 debug, 70 trace, or "
     "the name; also $NVME_EMU_LOG_LEVEL.",
     0},
    {"version", 'v', NULL, "print the version and exit.", 0},
    {"help", 'h', NULL, "print this help and exit.", 0},
};

const struct cli_prog app_cli_prog = {
    .name = "nvme-emu",
    .section = 8,
    .purpose = "an emulated NVMe PCIe function served to QEMU guests over vfio-user",
    .usage = app_cli_usage,
    .getopt_prefix = "",
    .opts = app_cli_opts,
    .nr_opts = sizeof(app_cli_opts) / sizeof(app_cli_opts[0]),
    .help_tail = "Without --socket nvme-emu is a long-running target configured over JSON-RPC "
		 "(and -c FILE);\n`nvme-emu caps` prints the limits of the emulated platform. "
		 "See nvme-emu(8).\n",
};
