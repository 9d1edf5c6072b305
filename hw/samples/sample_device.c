/* hw/samples/sample_device.c - hw-sample-device: a generic (non-NVMe)
 * emulated PCIe function built only from hw/hw.h, used by the integration
 * tests the way DOCA's DevEmu samples use a device.
 *
 * Usage: hw-sample-device --socket-dir DIR [--devices N] [--profile bf3|unlimited]
 *                         [--doorbells trap|mmap]
 * Devices "sample-<i>" listen on DIR/sample-<i>.sock (hot-plugged at start).
 *
 * Type: vendor 0x4e58, device 0x00a0, class 0xff0000, 8 MSI-X vectors,
 * BAR0 64-bit 32 KiB (fits bf3):
 *   0x0000-0x00ff stateful registers (below)
 *   0x1000-0x1fff DB by offset: 4-byte doorbells, stride 4, ids 0..15 created
 *   0x2000-0x2fff DB by data: 4-byte value, id in bytes 3..2 (value >> 16), ids 0..15
 *   0x3000        MSI-X table, 0x4000 PBA
 * Stateful registers (32-bit, little endian):
 *   0x00 MAGIC "SMPL" (type default)     0x04 SCRATCH: echoed into 0x08 ECHO
 *   0x0c DMA_CTRL: write 1 to copy LEN bytes host SRC -> device -> host DST
 *   0x10/0x14 DMA_SRC lo/hi  0x18/0x1c DMA_DST lo/hi  0x20 DMA_LEN (<= 64 KiB)
 *   0x24 DMA_STATUS 0 idle, 1 busy, 2 done, 3 error
 *   0x28 DB_COUNT  0x2c LAST_DB_ID  0x30 LAST_DB_VALUE  0x34 FLR_COUNT
 *   0x38 device default 0xd0d0d0d0   0x3c type default 0x7e7e7e7e
 * Every doorbell write raises MSI-X vector (db id % 8).
 *
 * Control: commands on stdin, one per line, answered on stdout:
 *   list                 -> "DEVICE <vuid> <socket> <state>" lines, then "OK"
 *   plug <i> / unplug <i> -> "OK" or "ERR <errno>"
 *   raise <i> <vector>   -> "RAISED <vuid> <vector> <rc>" (0 sent, 1 pended, <0 dropped)
 *   dbval <i> <id>       -> "DBVAL <vuid> <id> <value>" (DB by offset, polled value)
 *   quit
 * Events are printed as "EVENT <vuid> <what> ..." lines; logs go to stderr.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <sys/epoll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/evloop.h"
#include "common/log.h"
#include "hw/hw.h"

#define SAMPLE_NUM_MSIX 8
#define SAMPLE_NUM_DBS 16
#define SAMPLE_MAX_DEVICES 64
#define SAMPLE_DMA_MAX (64u << 10)

enum {
	SAMPLE_REG_MAGIC = 0x00,
	SAMPLE_REG_SCRATCH = 0x04,
	SAMPLE_REG_ECHO = 0x08,
	SAMPLE_REG_DMA_CTRL = 0x0c,
	SAMPLE_REG_DMA_SRC = 0x10,
	SAMPLE_REG_DMA_DST = 0x18,
	SAMPLE_REG_DMA_LEN = 0x20,
	SAMPLE_REG_DMA_STATUS = 0x24,
	SAMPLE_REG_DB_COUNT = 0x28,
	SAMPLE_REG_LAST_DB_ID = 0x2c,
	SAMPLE_REG_LAST_DB_VALUE = 0x30,
	SAMPLE_REG_FLR_COUNT = 0x34,
	SAMPLE_REG_DEV_DEFAULT = 0x38,
	SAMPLE_REG_TYPE_DEFAULT = 0x3c,
	SAMPLE_REGS_SIZE = 0x100,
};

#define SAMPLE_DB_OFFSET_REGION 0x1000
#define SAMPLE_DB_DATA_REGION 0x2000

enum { SAMPLE_DMA_IDLE, SAMPLE_DMA_BUSY, SAMPLE_DMA_DONE, SAMPLE_DMA_ERROR };

struct sample_dev {
	struct hw_dev *dev;
	struct hw_db *db_off[SAMPLE_NUM_DBS];
	struct hw_db *db_data[SAMPLE_NUM_DBS];
	struct hw_msix_vector *vec[SAMPLE_NUM_MSIX];
	struct hw_mmap *map;
	uint32_t scratch_seen;
	uint32_t db_count, flr_count;
	bool dma_busy;
	uint64_t dma_gen; /* bumped by FLR: completions of older copies are ignored */
};

struct sample {
	struct evloop *loop;
	struct hw_pci_type *type;
	struct sample_dev devs[SAMPLE_MAX_DEVICES];
	unsigned int nr_devs;
	char inbuf[512];
	size_t inlen;
};

static struct sample sample;

static void sample_out(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void sample_out(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

static uint32_t sample_reg(struct sample_dev *s, uint32_t off)
{
	uint32_t v = 0;

	hw_dev_stateful_query(s->dev, 0, off, &v, sizeof(v));
	return v;
}

static void sample_set_reg(struct sample_dev *s, uint32_t off, uint32_t v)
{
	hw_dev_stateful_modify(s->dev, 0, off, &v, sizeof(v));
}

/* ------------------------------------------------------------------------ */
/* Resources created while a client is attached (DOCA: after the device is
 * started) and destroyed on FLR / client gone, as the FLR contract asks.    */

static void sample_db_notify(struct hw_db *db, uint32_t value, void *arg)
{
	struct sample_dev *s = arg;
	bool by_data = false;
	int rc;

	for (unsigned int i = 0; i < SAMPLE_NUM_DBS; i++)
		by_data |= s->db_data[i] == db;
	s->db_count++;
	sample_set_reg(s, SAMPLE_REG_DB_COUNT, s->db_count);
	sample_set_reg(s, SAMPLE_REG_LAST_DB_ID, hw_db_id(db));
	sample_set_reg(s, SAMPLE_REG_LAST_DB_VALUE, value);
	rc = hw_msix_vector_raise(s->vec[hw_db_id(db) % SAMPLE_NUM_MSIX]);
	sample_out("EVENT %s db kind=%s id=%u value=0x%x msix=%d", hw_dev_vuid(s->dev),
		   by_data ? "data" : "offset", hw_db_id(db), value, rc);
}

static void sample_release(struct sample_dev *s)
{
	for (unsigned int i = 0; i < SAMPLE_NUM_DBS; i++) {
		hw_db_destroy(s->db_off[i]);
		hw_db_destroy(s->db_data[i]);
		s->db_off[i] = s->db_data[i] = NULL;
	}
	for (unsigned int i = 0; i < SAMPLE_NUM_MSIX; i++) {
		hw_msix_vector_destroy(s->vec[i]);
		s->vec[i] = NULL;
	}
	hw_mmap_destroy(s->map);
	s->map = NULL;
	s->dma_gen++;
	s->dma_busy = false;
}

static int sample_acquire(struct sample_dev *s)
{
	for (unsigned int i = 0; i < SAMPLE_NUM_DBS; i++) {
		s->db_off[i] =
		    hw_db_create_at(s->dev, 0, SAMPLE_DB_OFFSET_REGION, i, sample_db_notify, s);
		s->db_data[i] =
		    hw_db_create_at(s->dev, 0, SAMPLE_DB_DATA_REGION, i, sample_db_notify, s);
		if (!s->db_off[i] || !s->db_data[i])
			goto out_release;
		hw_db_start(s->db_off[i]);
		hw_db_start(s->db_data[i]);
	}
	for (unsigned int i = 0; i < SAMPLE_NUM_MSIX; i++) {
		s->vec[i] = hw_msix_vector_create(s->dev, (uint16_t)i);
		if (!s->vec[i])
			goto out_release;
	}
	/* The whole host address space; the DMA table bounds what is real. */
	s->map = hw_mmap_create(s->dev, 0, UINT64_MAX, HW_MMAP_READ | HW_MMAP_WRITE);
	if (!s->map)
		goto out_release;
	return 0;

out_release:;
	int rc = -errno;

	sample_release(s);
	return rc;
}

/* ------------------------------------------------------------------------ */
/* DMA: host SRC -> device buffer -> host DST. The context owns the buffer
 * until the last callback, even when an FLR made the copy stale (a DMA_READ
 * reply may still land in it).                                             */

struct sample_dma_ctx {
	struct sample_dev *s;
	uint64_t gen;
	uint64_t dst;
	uint32_t len;
	uint8_t buf[];
};

static void sample_dma_finish(struct sample_dma_ctx *c, int status)
{
	struct sample_dev *s = c->s;

	if (c->gen == s->dma_gen) {
		s->dma_busy = false;
		sample_set_reg(s, SAMPLE_REG_DMA_STATUS,
			       status ? SAMPLE_DMA_ERROR : SAMPLE_DMA_DONE);
		sample_out("EVENT %s dma status=%d", hw_dev_vuid(s->dev), status);
	}
	free(c);
}

static void sample_dma_written(int status, void *arg)
{
	sample_dma_finish(arg, status);
}

static void sample_dma_read_done(int status, void *arg)
{
	struct sample_dma_ctx *c = arg;
	struct sample_dev *s = c->s;
	int rc;

	if (status || c->gen != s->dma_gen || !s->map) {
		sample_dma_finish(c, status ? status : -ECANCELED);
		return;
	}
	rc = hw_mmap_write_async(s->map, c->dst, c->buf, c->len, sample_dma_written, c);
	if (rc)
		sample_dma_finish(c, rc);
}

static void sample_dma_start(struct sample_dev *s)
{
	uint64_t src = sample_reg(s, SAMPLE_REG_DMA_SRC) |
		       (uint64_t)sample_reg(s, SAMPLE_REG_DMA_SRC + 4) << 32;
	uint32_t len = sample_reg(s, SAMPLE_REG_DMA_LEN);
	struct sample_dma_ctx *c;
	int rc;

	sample_set_reg(s, SAMPLE_REG_DMA_CTRL, 0);
	if (s->dma_busy || !s->map || !len || len > SAMPLE_DMA_MAX) {
		sample_set_reg(s, SAMPLE_REG_DMA_STATUS, SAMPLE_DMA_ERROR);
		sample_out("EVENT %s dma status=%d", hw_dev_vuid(s->dev), -EINVAL);
		return;
	}
	c = malloc(sizeof(*c) + len);
	if (!c) {
		sample_set_reg(s, SAMPLE_REG_DMA_STATUS, SAMPLE_DMA_ERROR);
		return;
	}
	*c = (struct sample_dma_ctx){.s = s, .gen = s->dma_gen, .len = len};
	c->dst = sample_reg(s, SAMPLE_REG_DMA_DST) | (uint64_t)sample_reg(s, SAMPLE_REG_DMA_DST + 4)
							 << 32;
	s->dma_busy = true;
	sample_set_reg(s, SAMPLE_REG_DMA_STATUS, SAMPLE_DMA_BUSY);
	rc = hw_mmap_read_async(s->map, c->buf, src, len, sample_dma_read_done, c);
	if (rc)
		sample_dma_finish(c, rc);
}

/* ------------------------------------------------------------------------ */
/* Device events.                                                           */

static void sample_hotplug_changed(struct hw_dev *dev, enum hw_hotplug_state state, void *arg)
{
	struct sample_dev *s = arg;

	sample_out("EVENT %s hotplug %s", hw_dev_vuid(dev), hw_hotplug_state_name(state));
	if (state == HW_HOTPLUG_POWER_ON && sample_acquire(s))
		LOG_ERR("sample", "%s: cannot create doorbells/vectors/mmap", hw_dev_vuid(dev));
}

static void sample_stateful_write(struct hw_dev *dev, uint8_t bar_id, uint64_t region_start,
				  void *arg)
{
	struct sample_dev *s = arg;
	uint8_t regs[SAMPLE_REGS_SIZE];
	uint32_t scratch, ctrl;

	/* Query the whole region: this also marks the event handled. */
	hw_dev_stateful_query(dev, bar_id, region_start, regs, sizeof(regs));
	memcpy(&scratch, regs + SAMPLE_REG_SCRATCH, 4);
	memcpy(&ctrl, regs + SAMPLE_REG_DMA_CTRL, 4);
	if (scratch != s->scratch_seen) {
		s->scratch_seen = scratch;
		sample_set_reg(s, SAMPLE_REG_ECHO, scratch);
	}
	/* Printed after the echo, so a test seeing the event can read it. */
	sample_out("EVENT %s stateful bar=%u start=0x%llx scratch=0x%x", hw_dev_vuid(dev), bar_id,
		   (unsigned long long)region_start, scratch);
	if (ctrl == 1)
		sample_dma_start(s);
}

/* Runs after the reset that follows the FLR handler: the stateful registers
 * are back to defaults now, so the count written here sticks. */
static void sample_after_flr(void *arg)
{
	struct sample_dev *s = arg;

	sample_set_reg(s, SAMPLE_REG_FLR_COUNT, s->flr_count);
	s->scratch_seen = 0;
	s->db_count = 0; /* the register went back to 0 with the reset */
	if (hw_dev_get_hotplug_state(s->dev) == HW_HOTPLUG_POWER_ON && sample_acquire(s))
		LOG_ERR("sample", "%s: cannot re-create resources after FLR", hw_dev_vuid(s->dev));
}

static int sample_flr(struct hw_dev *dev, bool client_gone, void *arg)
{
	struct sample_dev *s = arg;

	s->flr_count++;
	sample_release(s);
	sample_out("EVENT %s flr client_gone=%d", hw_dev_vuid(dev), client_gone);
	if (evloop_defer(sample.loop, sample_after_flr, s))
		LOG_ERR("sample", "%s: cannot defer the post-FLR step", hw_dev_vuid(dev));
	return 0;
}

static void sample_msix_changed(struct hw_dev *dev, bool enabled, bool masked, void *arg)
{
	sample_out("EVENT %s msix enabled=%d masked=%d", hw_dev_vuid(dev), enabled, masked);
}

static const struct hw_dev_ops sample_ops = {
    .hotplug_state_changed = sample_hotplug_changed,
    .stateful_write = sample_stateful_write,
    .flr = sample_flr,
    .msix_state_changed = sample_msix_changed,
};

/* ------------------------------------------------------------------------ */
/* Setup.                                                                   */

static struct hw_pci_type *sample_type_create(const struct hw_profile *profile)
{
	struct hw_pci_ids ids = {.vendor_id = 0x4e58,
				 .device_id = 0x00a0,
				 .subsys_vendor_id = 0x4e58,
				 .subsys_id = 0x00a0,
				 .revision = 1,
				 .class_code = 0xff0000};
	struct hw_pci_type *t = hw_pci_type_create("sample");
	uint32_t magic = 0x4c504d53, type_def = 0x7e7e7e7e;
	char err[256] = "";
	int rc = 0;

	if (!t)
		return NULL;
	rc |= hw_pci_type_set_ids(t, &ids);
	rc |= hw_pci_type_set_memory_bar(t, 0, 15, HW_BAR_MEM_64, false);
	rc |= hw_pci_type_set_num_msix(t, SAMPLE_NUM_MSIX);
	rc |= hw_pci_type_add_stateful_region(t, 0, 0, SAMPLE_REGS_SIZE);
	rc |= hw_pci_type_add_db_by_offset_region(t, 0, SAMPLE_DB_OFFSET_REGION, 0x1000, 2, 2);
	rc |= hw_pci_type_add_db_by_data_region(t, 0, SAMPLE_DB_DATA_REGION, 0x1000, 2, 3, 2);
	rc |= hw_pci_type_add_msix_table_region(t, 0, 0x3000, 0x1000);
	rc |= hw_pci_type_add_msix_pba_region(t, 0, 0x4000, 0x1000);
	rc |= hw_pci_type_set_stateful_default(t, 0, SAMPLE_REG_MAGIC, &magic, 4);
	rc |= hw_pci_type_set_stateful_default(t, 0, SAMPLE_REG_TYPE_DEFAULT, &type_def, 4);
	if (!rc)
		rc = hw_pci_type_start(t, profile, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "hw-sample-device: type does not start: %s\n", err);
		hw_pci_type_destroy(t);
		return NULL;
	}
	return t;
}

static int sample_dev_create(unsigned int i, const char *dir, enum hw_db_mode mode)
{
	struct sample_dev *s = &sample.devs[i];
	char vuid[32], path[256];
	uint32_t dev_def = 0xd0d0d0d0;
	struct hw_dev_config cfg = {.vuid = vuid, .socket_path = path, .db_mode = mode};

	snprintf(vuid, sizeof(vuid), "sample-%u", i);
	snprintf(path, sizeof(path), "%s/sample-%u.sock", dir, i);
	s->dev = hw_dev_create(sample.type, sample.loop, &cfg, &sample_ops, s);
	if (!s->dev)
		return -errno;
	/* Takes effect at the hotplug below (DOCA: next FLR or hotplug). */
	return hw_dev_set_stateful_default(s->dev, 0, SAMPLE_REG_DEV_DEFAULT, &dev_def, 4);
}

static struct sample_dev *sample_pick(const char *arg)
{
	char *end;
	unsigned long i = strtoul(arg ? arg : "", &end, 10);

	if (!arg || *end || i >= sample.nr_devs)
		return NULL;
	return &sample.devs[i];
}

static void sample_command(char *line)
{
	char *cmd = strtok(line, " \t");
	char *a1 = strtok(NULL, " \t"), *a2 = strtok(NULL, " \t");
	struct sample_dev *s;
	int rc;

	if (!cmd)
		return;
	if (!strcmp(cmd, "quit")) {
		evloop_stop(sample.loop);
		return;
	}
	if (!strcmp(cmd, "list")) {
		for (unsigned int i = 0; i < sample.nr_devs; i++) {
			struct hw_dev *d = sample.devs[i].dev;

			sample_out("DEVICE %s %s %s", hw_dev_vuid(d), hw_dev_socket_path(d),
				   hw_hotplug_state_name(hw_dev_get_hotplug_state(d)));
		}
		sample_out("OK");
		return;
	}
	s = sample_pick(a1);
	if (!s) {
		sample_out("ERR bad command or device");
		return;
	}
	if (!strcmp(cmd, "plug") || !strcmp(cmd, "unplug")) {
		rc = !strcmp(cmd, "plug") ? hw_dev_hotplug(s->dev) : hw_dev_hotunplug(s->dev);
		if (rc)
			sample_out("ERR %d", rc);
		else
			sample_out("OK");
	} else if (!strcmp(cmd, "raise") && a2) {
		unsigned long v = strtoul(a2, NULL, 10);

		rc = v < SAMPLE_NUM_MSIX && s->vec[v] ? hw_msix_vector_raise(s->vec[v]) : -ENOENT;
		sample_out("RAISED %s %lu %d", hw_dev_vuid(s->dev), v, rc);
	} else if (!strcmp(cmd, "dbval") && a2) {
		unsigned long id = strtoul(a2, NULL, 10);

		if (id < SAMPLE_NUM_DBS && s->db_off[id])
			sample_out("DBVAL %s %lu %u", hw_dev_vuid(s->dev), id,
				   *hw_db_value_ptr(s->db_off[id]));
		else
			sample_out("ERR no such doorbell");
	} else {
		sample_out("ERR bad command");
	}
}

static void sample_stdin(int fd, uint32_t events, void *arg)
{
	ssize_t n = read(fd, sample.inbuf + sample.inlen, sizeof(sample.inbuf) - 1 - sample.inlen);
	char *nl;

	if (n <= 0) {
		evloop_stop(sample.loop); /* the controller went away */
		return;
	}
	sample.inlen += (size_t)n;
	sample.inbuf[sample.inlen] = '\0';
	while ((nl = strchr(sample.inbuf, '\n'))) {
		*nl = '\0';
		sample_command(sample.inbuf);
		sample.inlen -= (size_t)(nl + 1 - sample.inbuf);
		memmove(sample.inbuf, nl + 1, sample.inlen + 1);
	}
	if (sample.inlen == sizeof(sample.inbuf) - 1)
		sample.inlen = 0; /* an absurdly long line: drop it */
}

static void sample_usage(void)
{
	fprintf(stderr, "usage: hw-sample-device --socket-dir DIR [--devices N] "
			"[--profile bf3|unlimited] [--doorbells trap|mmap]\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"socket-dir", required_argument, NULL, 's'},
	    {"devices", required_argument, NULL, 'n'},
	    {"profile", required_argument, NULL, 'p'},
	    {"doorbells", required_argument, NULL, 'd'},
	    {NULL, 0, NULL, 0},
	};
	const char *dir = NULL, *profile_name = "bf3";
	enum hw_db_mode mode = HW_DB_MODE_TRAP;
	const struct hw_profile *profile;
	struct evloop_watch *w = NULL;
	unsigned long n = 1;
	int c, rc = 1;

	while ((c = getopt_long(argc, argv, "s:n:p:d:", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			dir = optarg;
			break;
		case 'n':
			n = strtoul(optarg, NULL, 10);
			break;
		case 'p':
			profile_name = optarg;
			break;
		case 'd':
			mode = !strcmp(optarg, "mmap") ? HW_DB_MODE_MMAP : HW_DB_MODE_TRAP;
			break;
		default:
			sample_usage();
			return 2;
		}
	}
	profile = hw_profile_find(profile_name);
	if (!dir || !profile || n < 1 || n > SAMPLE_MAX_DEVICES) {
		sample_usage();
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	sample.loop = evloop_create();
	if (!sample.loop)
		return 1;
	sample.type = sample_type_create(profile);
	if (!sample.type)
		goto out_loop;
	for (sample.nr_devs = 0; sample.nr_devs < n; sample.nr_devs++)
		if (sample_dev_create(sample.nr_devs, dir, mode))
			goto out_devs;
	for (unsigned int i = 0; i < sample.nr_devs; i++) {
		int prc = hw_dev_hotplug(sample.devs[i].dev);

		if (prc)
			sample_out("ERR hotplug %s %d", hw_dev_vuid(sample.devs[i].dev), prc);
	}
	w = evloop_watch_add(sample.loop, STDIN_FILENO, EPOLLIN, sample_stdin, NULL);
	if (!w)
		goto out_devs;
	sample_out("READY %u", sample.nr_devs);
	evloop_run(sample.loop);
	evloop_watch_remove(w);
	rc = 0;
out_devs:
	for (unsigned int i = 0; i < sample.nr_devs; i++) {
		sample_release(&sample.devs[i]);
		/* Its FLR handler is synchronous: the unplug finishes at once. */
		if (hw_dev_hotunplug(sample.devs[i].dev) || hw_dev_destroy(sample.devs[i].dev))
			LOG_ERR("sample", "device %u: unplug/destroy failed", i);
	}
	hw_pci_type_destroy(sample.type);
out_loop:
	evloop_destroy(sample.loop);
	return rc;
}
