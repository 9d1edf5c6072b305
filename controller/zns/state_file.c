/* controller/zns/state_file.c - a zoned namespace's zone state file: the zone states, recorded
 * write pointers, attributes and descriptor extensions, so the zones survive a crash of the
 * daemon and a power loss (docs/durability.md).
 *
 * Two copies of the zones live in the file. The live words (one 64-bit word per zone) are in a
 * shared mapping of the file and change with the zones, under the zone lock, as one aligned
 * store each: a daemon killed at any point leaves them exact in the page cache, with no system
 * call on the I/O path. They are trusted only while the kernel that wrote them runs (its boot id
 * is in the header): after a power loss the page cache is gone and the kernel may have written
 * some of them back before the data they describe. Then the zones come from the newest of two
 * checkpoints: copies of the live words that zone_sync.c writes (and syncs) only after the data
 * they describe was flushed, at each Flush, FUA or write-through write, and zone management
 * change; a torn checkpoint leaves the other one.
 *
 * Layout (little endian, as the hosts we run on):
 *   [0, 4 KiB)       header: magic "NVMEZNS2", version 2, zone descriptor extension size, zone
 *                    size, zone capacity, zone count, a random image id, the CRC-32C of those
 *                    fields; the boot id of the live words' kernel and the image id again
 *                    once the data file carries it as its stamp (neither in the CRC)
 *   live words       at 4 KiB, nr_zones x 8 bytes, padded to 4 KiB
 *   extensions       nr_zones x ZDES x 64 bytes, padded to 4 KiB (a zone's bytes are valid while
 *                    its ZDEV bit is set)
 *   checkpoint 0, 1  each a 32-byte header (magic "NVMEZCK2", sequence, image id, zone count,
 *                    CRC-32C of the slot) and nr_zones words, padded to 4 KiB
 * A word: bit 63 valid, bit 60 ZDEV, bits 59:56 the zone state, bits 55:0 the write pointer.
 * The version 1 file (written whole at a clean stop) is read once and converted.
 *
 * The data's identity: when the zones' blocks are in a regular file (an aio or io_uring base),
 * the image id is also its extended attribute user.nvme_emu.zone_stamp; a state file whose data
 * file carries another stamp, or none once it was stamped, describes other data and is refused.
 * A copy of the state file alone cannot carry the stamp to another image. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "common/crc32c.h"
#include "common/file_replace.h"
#include "common/log.h"
#include "controller/core/core.h"
#include "controller/zns/zns.h"

#define ZNS_FILE_MAGIC "NVMEZNS2"
#define ZNS_FILE_VERSION 2u
#define ZNS_CKPT_MAGIC "NVMEZCK2"
#define ZNS_PAGE 4096u
#define ZNS_BOOT_ID_LEN 40

#define ZNS_W_VALID (1ull << 63)
#define ZNS_W_ZDEV (1ull << 60)
#define ZNS_W_STATE_SHIFT 56
#define ZNS_W_WP_MASK ((1ull << 56) - 1)

struct ctrlr_zns_file_hdr {
	char magic[8];
	uint32_t version;
	uint32_t zdes_bytes;
	uint64_t zsze;
	uint64_t zcap;
	uint32_t nr_zones;
	uint32_t crc; /* of the bytes before boot_id, this field zero */
	uint64_t image_id;
	char boot_id[ZNS_BOOT_ID_LEN];
	uint64_t stamped; /* image_id once the data file carries it (its stamp), else not */
} __attribute__((packed));
_Static_assert(sizeof(struct ctrlr_zns_file_hdr) <= ZNS_PAGE, "zone file header");

struct ctrlr_zns_ckpt_hdr {
	char magic[8];
	uint64_t seq;
	uint64_t image_id;
	uint32_t nr_zones;
	uint32_t crc; /* of the slot header (this field zero) and the words */
} __attribute__((packed));
_Static_assert(sizeof(struct ctrlr_zns_ckpt_hdr) == 32, "zone checkpoint header");

/* ---- version 1 (read once, converted) ---- */

#define ZNS_V1_MAGIC "NVMEZNS1"

struct ctrlr_zns_v1_hdr {
	char magic[8];
	uint32_t version;
	uint32_t zdes_bytes;
	uint64_t zsze;
	uint64_t zcap;
	uint32_t nr_zones;
	uint32_t rsvd;
} __attribute__((packed));
_Static_assert(sizeof(struct ctrlr_zns_v1_hdr) == 40, "zone state header v1");

struct ctrlr_zns_v1_zone {
	uint64_t wp;
	uint8_t state;
	uint8_t za;
	uint8_t rsvd[6];
} __attribute__((packed));
_Static_assert(sizeof(struct ctrlr_zns_v1_zone) == 16, "zone state entry v1");

/* ---- layout ---- */

static size_t zns_round_page(size_t n)
{
	return (n + ZNS_PAGE - 1) / ZNS_PAGE * ZNS_PAGE;
}

struct zns_layout {
	size_t live_off, zde_off, slot_len, slot_off[2], total;
};

static void zns_layout(const struct ctrlr_zns *zns, struct zns_layout *l)
{
	l->live_off = ZNS_PAGE;
	l->zde_off = l->live_off + zns_round_page((size_t)zns->nr_zones * 8);
	l->slot_len = zns_round_page(sizeof(struct ctrlr_zns_ckpt_hdr) + (size_t)zns->nr_zones * 8);
	l->slot_off[0] = l->zde_off + zns_round_page((size_t)zns->nr_zones * zns->zdes_bytes);
	l->slot_off[1] = l->slot_off[0] + l->slot_len;
	l->total = l->slot_off[1] + l->slot_len;
}

static uint64_t zns_zslba(const struct ctrlr_zns *zns, uint32_t zi)
{
	return (uint64_t)zi << zns->zshift;
}

static bool zns_state_valid(uint8_t s)
{
	return s == NVME_ZS_EMPTY || s == NVME_ZS_IMP_OPEN || s == NVME_ZS_EXP_OPEN ||
	       s == NVME_ZS_CLOSED || s == NVME_ZS_READ_ONLY || s == NVME_ZS_FULL ||
	       s == NVME_ZS_OFFLINE;
}

static uint64_t zns_word(uint64_t wp, uint8_t state, uint8_t za)
{
	return ZNS_W_VALID | ((za & NVME_ZA_ZDEV) ? ZNS_W_ZDEV : 0) |
	       (uint64_t)(state & 0xf) << ZNS_W_STATE_SHIFT | (wp & ZNS_W_WP_MASK);
}

/* The current kernel's boot id ("" when it cannot be read: then the live words are trusted, as
 * a missing /proc says nothing of a power loss). */
static void zns_boot_id(char out[ZNS_BOOT_ID_LEN])
{
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");

	memset(out, 0, ZNS_BOOT_ID_LEN);
	if (!f || !fgets(out, ZNS_BOOT_ID_LEN, f))
		LOG_WARN(CTRLR_LOG, "zone state: no boot id (/proc/sys/kernel/random/boot_id)");
	if (f)
		fclose(f);
	out[strcspn(out, "\n")] = '\0';
}

static uint32_t zns_hdr_crc(const struct ctrlr_zns_file_hdr *h)
{
	struct ctrlr_zns_file_hdr c = *h;

	c.crc = 0;
	return crc32c(0, &c, offsetof(struct ctrlr_zns_file_hdr, boot_id));
}

static uint32_t zns_ckpt_crc(const uint8_t *slot, uint32_t nr_zones)
{
	struct ctrlr_zns_ckpt_hdr h;
	uint32_t crc;

	memcpy(&h, slot, sizeof(h));
	h.crc = 0;
	crc = crc32c(0, &h, sizeof(h));
	return crc32c(crc, slot + sizeof(h), (size_t)nr_zones * 8);
}

/* ---- words <-> zones ---- */

/* The state a word records for zone z: Full only once the data reached the capacity (or the
 * host finished the zone); a zone Full by writes still running is recorded as open with the
 * write pointer of the writes that ended. */
static uint8_t zns_recorded_state(const struct ctrlr_zns *zns, uint32_t zi)
{
	const struct ctrlr_zone *z = &zns->zones[zi];

	if (z->state == NVME_ZS_FULL && !z->finished &&
	    z->wp_done < zns_zslba(zns, zi) + zns->zcap)
		return NVME_ZS_IMP_OPEN;
	/* Opened by a write still running (and maybe closed since to make room): nothing of that
	 * write is recorded, not even the zone leaving Empty. */
	if ((z->state == NVME_ZS_IMP_OPEN || z->state == NVME_ZS_CLOSED) &&
	    z->wp_done == zns_zslba(zns, zi) && !z->za && !z->explicit)
		return NVME_ZS_EMPTY;
	return z->state;
}

void ctrlr_zns_file_record(struct ctrlr_zns *zns, uint32_t zi)
{
	struct ctrlr_zns_file *f = zns->file;

	if (!f)
		return;
	/* One aligned 8-byte store: a kill between two stores cannot tear a word. */
	__atomic_store_n(&f->live[zi],
			 zns_word(zns->zones[zi].wp_done, zns_recorded_state(zns, zi),
				  zns->zones[zi].za),
			 __ATOMIC_RELAXED);
}

/* Checks every word against the geometry before any is used: a bad file changes nothing. */
static int zns_words_check(const struct ctrlr_zns *zns, const uint64_t *w, const char *path,
			   const char *what)
{
	for (uint32_t i = 0; i < zns->nr_zones; i++) {
		uint64_t zslba = zns_zslba(zns, i), wp = w[i] & ZNS_W_WP_MASK;
		uint8_t s = (uint8_t)((w[i] >> ZNS_W_STATE_SHIFT) & 0xf);
		bool zdev = w[i] & ZNS_W_ZDEV;

		if (!(w[i] & ZNS_W_VALID) || (w[i] & ~(ZNS_W_VALID | ZNS_W_ZDEV | 0x0f00000000000000ull |
							ZNS_W_WP_MASK)) ||
		    !zns_state_valid(s) || (zdev && !zns->zdes_bytes) || wp < zslba ||
		    wp > zslba + zns->zcap || (s == NVME_ZS_EMPTY && (wp != zslba || zdev))) {
			LOG_ERR(CTRLR_LOG,
				"zone state file %s: %s: zone %u is inconsistent (word %016" PRIx64
				"): the file is damaged; refused (move it away to start with every "
				"zone empty)",
				path, what, i, w[i]);
			return -EINVAL;
		}
	}
	return 0;
}

/* Takes the zones from checked words: open zones do not outlive the controller that opened them
 * (Closed if they hold data or an extension, else Empty, as after a power cycle). */
static void zns_words_apply(struct ctrlr_zns *zns, const uint64_t *w)
{
	uint32_t active = 0;

	for (uint32_t i = 0; i < zns->nr_zones; i++) {
		uint64_t zslba = zns_zslba(zns, i), wp = w[i] & ZNS_W_WP_MASK;
		uint8_t s = (uint8_t)((w[i] >> ZNS_W_STATE_SHIFT) & 0xf);
		uint8_t za = (w[i] & ZNS_W_ZDEV) ? NVME_ZA_ZDEV : 0;
		struct ctrlr_zone *z = &zns->zones[i];

		if (s == NVME_ZS_IMP_OPEN || s == NVME_ZS_EXP_OPEN)
			s = (wp != zslba || za) ? NVME_ZS_CLOSED : NVME_ZS_EMPTY;
		active += s == NVME_ZS_CLOSED;
		z->wp = z->wp_done = wp;
		z->state = s;
		z->za = za;
		/* A Full zone below its capacity was finished by the host; a Closed one without
		 * data was opened by it. */
		z->finished = s == NVME_ZS_FULL && wp < zslba + zns->zcap;
		z->explicit = s == NVME_ZS_CLOSED && wp == zslba;
	}
	zns->nr_open = 0;
	zns->nr_active = active;
}

/* ---- version 1 ---- */

/* Reads a version 1 file (its whole size known to be right) into words and extensions. */
static int zns_v1_read(struct ctrlr_zns *zns, int fd, const char *path, uint64_t *w, uint8_t *zde)
{
	size_t len = sizeof(struct ctrlr_zns_v1_hdr) +
		     (size_t)zns->nr_zones * (sizeof(struct ctrlr_zns_v1_zone) + zns->zdes_bytes);
	struct ctrlr_zns_v1_hdr h;
	struct ctrlr_zns_v1_zone *e;
	uint8_t *buf = malloc(len);
	int rc = 0;

	if (!buf)
		return -ENOMEM;
	if (pread(fd, buf, len, 0) != (ssize_t)len) {
		LOG_ERR(CTRLR_LOG, "zone state file %s: not the size of this geometry's state", path);
		rc = -EINVAL;
		goto out;
	}
	memcpy(&h, buf, sizeof(h));
	if (h.version != 1 || h.zdes_bytes != zns->zdes_bytes || h.zsze != zns->zsze ||
	    h.zcap != zns->zcap || h.nr_zones != zns->nr_zones) {
		LOG_ERR(CTRLR_LOG, "zone state file %s: made for another zone geometry", path);
		rc = -EINVAL;
		goto out;
	}
	e = (struct ctrlr_zns_v1_zone *)(buf + sizeof(h));
	for (uint32_t i = 0; i < zns->nr_zones; i++) {
		if ((e[i].za & ~NVME_ZA_ZDEV) || !zns_state_valid(e[i].state)) {
			w[i] = 0; /* refused by the check */
			continue;
		}
		w[i] = zns_word(e[i].wp, e[i].state, e[i].za);
		if ((e[i].wp & ~ZNS_W_WP_MASK) || (e[i].state == NVME_ZS_EMPTY && e[i].za))
			w[i] = 0;
	}
	if (zns->zdes_bytes)
		memcpy(zde, e + zns->nr_zones, (size_t)zns->nr_zones * zns->zdes_bytes);
out:
	free(buf);
	return rc;
}

/* ---- open, create ---- */

/* Writes a new file holding the zones as they are now (every live word, the extensions, one
 * checkpoint), replacing path whole and durably. */
static int zns_file_create(struct ctrlr_zns *zns, const char *path, const struct zns_layout *l,
			   const uint8_t *zde, const char *boot_id)
{
	struct ctrlr_zns_file_hdr h = {.version = ZNS_FILE_VERSION,
				       .zdes_bytes = zns->zdes_bytes,
				       .zsze = zns->zsze,
				       .zcap = zns->zcap,
				       .nr_zones = zns->nr_zones};
	struct ctrlr_zns_ckpt_hdr ck = {.seq = 1, .nr_zones = zns->nr_zones};
	uint8_t *buf = calloc(1, l->total);
	uint64_t *live, *ckw;
	struct iovec iov;
	int rc;

	if (!buf)
		return -ENOMEM;
	memcpy(h.magic, ZNS_FILE_MAGIC, sizeof(h.magic));
	if (getrandom(&h.image_id, sizeof(h.image_id), 0) != (ssize_t)sizeof(h.image_id)) {
		free(buf);
		return -errno;
	}
	h.crc = zns_hdr_crc(&h);
	memcpy(h.boot_id, boot_id, ZNS_BOOT_ID_LEN);
	memcpy(buf, &h, sizeof(h));
	live = (uint64_t *)(buf + l->live_off);
	/* Checkpoint 1 goes to slot 1 (sequence numbers alternate the slots). */
	ckw = (uint64_t *)(buf + l->slot_off[1] + sizeof(ck));
	for (uint32_t i = 0; i < zns->nr_zones; i++)
		live[i] = ckw[i] = zns_word(zns->zones[i].wp_done, zns_recorded_state(zns, i),
					    zns->zones[i].za);
	if (zns->zdes_bytes && zde)
		memcpy(buf + l->zde_off, zde, (size_t)zns->nr_zones * zns->zdes_bytes);
	memcpy(ck.magic, ZNS_CKPT_MAGIC, sizeof(ck.magic));
	ck.image_id = h.image_id;
	memcpy(buf + l->slot_off[1], &ck, sizeof(ck));
	ck.crc = zns_ckpt_crc(buf + l->slot_off[1], zns->nr_zones);
	memcpy(buf + l->slot_off[1], &ck, sizeof(ck));
	iov = (struct iovec){.iov_base = buf, .iov_len = l->total};
	rc = file_replace(path, &iov, 1);
	free(buf);
	return rc;
}

/* The newest whole checkpoint: its sequence number in *seq and, when w, its words. 0 or -EINVAL
 * (none is whole; logged when w is asked for). */
static int zns_ckpt_pick(struct ctrlr_zns *zns, int fd, const char *path,
			 const struct zns_layout *l, uint64_t image_id, uint64_t *w, uint64_t *seq)
{
	uint8_t *slot = malloc(l->slot_len);
	uint64_t best = 0;
	int rc = -EINVAL;

	if (!slot)
		return -ENOMEM;
	for (int s = 0; s < 2; s++) {
		struct ctrlr_zns_ckpt_hdr h;

		if (pread(fd, slot, l->slot_len, (off_t)l->slot_off[s]) != (ssize_t)l->slot_len)
			continue;
		memcpy(&h, slot, sizeof(h));
		if (memcmp(h.magic, ZNS_CKPT_MAGIC, sizeof(h.magic)) || h.image_id != image_id ||
		    h.nr_zones != zns->nr_zones || !h.seq || h.seq <= best ||
		    zns_ckpt_crc(slot, zns->nr_zones) != h.crc)
			continue;
		best = h.seq;
		if (w)
			memcpy(w, slot + sizeof(h), (size_t)zns->nr_zones * 8);
		rc = 0;
	}
	free(slot);
	if (rc && w)
		LOG_ERR(CTRLR_LOG,
			"zone state file %s: written by an earlier boot (a power loss or a reboot "
			"since) and no checkpoint in it is whole: the zones cannot be known; refused "
			"(move it away to start with every zone empty)",
			path);
	*seq = best;
	return rc;
}

#define ZNS_STAMP_XATTR "user.nvme_emu.zone_stamp"

/* The data file's stamp: 0, -ENODATA (none), or another -errno (-ENOTSUP: the file system keeps
 * no user extended attributes). */
static int zns_stamp_read(const char *data_file, uint64_t *stamp)
{
	char v[24];
	ssize_t n = getxattr(data_file, ZNS_STAMP_XATTR, v, sizeof(v) - 1);
	char *end;

	if (n < 0)
		return -errno;
	v[n] = '\0';
	*stamp = strtoull(v, &end, 16);
	if (n != 16 || *end)
		*stamp = 0; /* not one of ours: another image's all the same */
	return 0;
}

/* Ties the state file to its data (the header h, `fresh`: made by this start, so a stamp the
 * data file has belongs to a state file moved away). Sets h->stamped once the data file carries
 * the image id. 0, or -EINVAL with the reason logged: the state file describes other data. */
static int zns_stamp_check(const char *path, const char *data_file,
			   struct ctrlr_zns_file_hdr *h, bool fresh)
{
	bool was_stamped = h->stamped == h->image_id;
	struct stat st;
	uint64_t stamp = 0;
	char v[24];
	int rc;

	if (!data_file || stat(data_file, &st) || !S_ISREG(st.st_mode))
		return 0; /* a block device, NBD, RBD: no place for a stamp (durability.md) */
	rc = zns_stamp_read(data_file, &stamp);
	if (!rc && stamp == h->image_id) {
		h->stamped = h->image_id;
		return 0;
	}
	if (!rc && (was_stamped || !fresh)) {
		LOG_ERR(CTRLR_LOG,
			"zone state file %s: made for another image: %s carries the stamp of "
			"another zone state file (%s %016" PRIx64 ", this file's image %016" PRIx64
			"): refused (put the image's own state file back, or move this one away to "
			"start with every zone empty)",
			path, data_file, ZNS_STAMP_XATTR, stamp, h->image_id);
		return -EINVAL;
	}
	if (rc == -ENODATA && was_stamped) {
		LOG_ERR(CTRLR_LOG,
			"zone state file %s: made for another image: %s carries no stamp (%s), the "
			"image this file describes did (another image, or a copy made without its "
			"extended attributes): refused (move this file away to start with every zone "
			"empty, or copy the image with its attributes: cp --preserve=xattr, rsync -X)",
			path, data_file, ZNS_STAMP_XATTR);
		return -EINVAL;
	}
	if (rc && rc != -ENODATA) {
		LOG_WARN(CTRLR_LOG, "zone state file %s: cannot read the stamp of %s: %s (the data's "
				    "identity is not checked)", path, data_file, strerror(-rc));
		return 0;
	}
	/* Not stamped yet (a new state file, or one from before stamps): the data is stamped. */
	snprintf(v, sizeof(v), "%016" PRIx64, h->image_id);
	if (setxattr(data_file, ZNS_STAMP_XATTR, v, 16, 0)) {
		LOG_WARN(CTRLR_LOG, "zone state file %s: cannot stamp %s: %s (the data's identity "
				    "is not checked)", path, data_file, strerror(errno));
		return 0;
	}
	h->stamped = h->image_id;
	return 0;
}

/* Maps the file and makes the zones and the live words one: the words as the zones are now, the
 * boot id ours (and `stamped`), a checkpoint of it written and everything synced. */
static int zns_file_map(struct ctrlr_zns *zns, struct ctrlr_zns_file *f, const struct zns_layout *l,
			const char *boot_id, uint64_t stamped)
{
	struct ctrlr_zns_file_hdr h;
	struct syncer_job job;
	int rc;

	f->map = mmap(NULL, l->total, PROT_READ | PROT_WRITE, MAP_SHARED, f->fd, 0);
	if (f->map == MAP_FAILED) {
		f->map = NULL;
		return -errno;
	}
	f->map_len = l->total;
	f->live = (volatile uint64_t *)(f->map + l->live_off);
	f->slot_len = l->slot_len;
	f->slot_off[0] = l->slot_off[0];
	f->slot_off[1] = l->slot_off[1];
	zns->zde = zns->zdes_bytes ? f->map + l->zde_off : NULL;
	for (uint32_t i = 0; i < zns->nr_zones; i++) {
		ctrlr_zns_file_record(zns, i);
		/* Extension bytes of a zone without ZDEV are not the zone's. */
		if (zns->zdes_bytes && !(zns->zones[i].za & NVME_ZA_ZDEV))
			memset(zns->zde + (size_t)i * zns->zdes_bytes, 0, zns->zdes_bytes);
	}
	memcpy(&h, f->map, sizeof(h));
	memcpy(h.boot_id, boot_id, ZNS_BOOT_ID_LEN);
	h.stamped = stamped;
	memcpy(f->map, &h, sizeof(h));
	/* A checkpoint of the zones as loaded: the state the next boot falls back to is this one
	 * (data written before this start is on disk or not, as the last life left it). */
	ctrlr_zns_file_capture(zns);
	job = (struct syncer_job){.op = SYNCER_PWRITE,
				  .fd = f->fd,
				  .iov = &(struct iovec){.iov_base = f->snap, .iov_len = f->slot_len},
				  .iovcnt = 1,
				  .off = f->slot_off[(f->seq + 1) & 1],
				  .sync = true};
	rc = syncer_run_now(&job);
	if (rc)
		return rc;
	f->seq++;
	return 0;
}

int ctrlr_zns_file_open(struct ctrlr_zns *zns, const char *path, const char *data_file)
{
	bool fresh = false;
	struct ctrlr_zns_file *f = calloc(1, sizeof(*f));
	char boot_id[ZNS_BOOT_ID_LEN];
	struct ctrlr_zns_file_hdr h;
	struct zns_layout l;
	uint64_t *w = NULL;
	uint8_t *zde_v1 = NULL;
	struct stat st;
	int rc;

	if (!f)
		return -ENOMEM;
	f->fd = -1;
	f->path = strdup(path);
	zns_layout(zns, &l);
	f->snap = aligned_alloc(ZNS_PAGE, l.slot_len);
	w = calloc(zns->nr_zones, sizeof(*w));
	if (!f->path || !f->snap || !w) {
		rc = -ENOMEM;
		goto out_free;
	}
	zns_boot_id(boot_id);
	f->fd = open(path, O_RDWR | O_CLOEXEC);
	if (f->fd < 0 && errno == ENOENT) {
		/* A first start: every zone Empty (as made). */
		fresh = true;
		rc = zns_file_create(zns, path, &l, NULL, boot_id);
		if (rc) {
			LOG_ERR(CTRLR_LOG, "zone state file %s: cannot create it: %s", path,
				strerror(-rc));
			goto out_free;
		}
		f->fd = open(path, O_RDWR | O_CLOEXEC);
	}
	if (f->fd < 0) {
		rc = -errno;
		LOG_ERR(CTRLR_LOG, "zone state file %s: %s", path, strerror(-rc));
		goto out_free;
	}
	if (fstat(f->fd, &st)) {
		rc = -errno;
		goto out_free;
	}
	if (!S_ISREG(st.st_mode) || pread(f->fd, &h, sizeof(h), 0) < 8) {
		LOG_ERR(CTRLR_LOG, "zone state file %s: not a zone state file", path);
		rc = -EINVAL;
		goto out_free;
	}
	if (!memcmp(h.magic, ZNS_V1_MAGIC, 8)) {
		/* The old format, written whole at a clean stop: read it, write the new one. */
		zde_v1 = zns->zdes_bytes ? calloc(zns->nr_zones, zns->zdes_bytes) : NULL;
		if (zns->zdes_bytes && !zde_v1) {
			rc = -ENOMEM;
			goto out_free;
		}
		rc = zns_v1_read(zns, f->fd, path, w, zde_v1);
		if (!rc)
			rc = zns_words_check(zns, w, path, "version 1");
		if (rc)
			goto out_free;
		zns_words_apply(zns, w);
		rc = zns_file_create(zns, path, &l, zde_v1, boot_id);
		if (rc) {
			LOG_ERR(CTRLR_LOG, "zone state file %s: cannot convert it: %s", path,
				strerror(-rc));
			goto out_free;
		}
		LOG_INFO(CTRLR_LOG, "zone state file %s: converted to version %u", path,
			 ZNS_FILE_VERSION);
		close(f->fd);
		f->fd = open(path, O_RDWR | O_CLOEXEC);
		if (f->fd < 0 || pread(f->fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h)) {
			rc = f->fd < 0 ? -errno : -EIO;
			goto out_free;
		}
		f->seq = 1;
		fresh = true;
		goto out_map;
	}
	if (memcmp(h.magic, ZNS_FILE_MAGIC, 8) || h.version != ZNS_FILE_VERSION ||
	    h.crc != zns_hdr_crc(&h)) {
		LOG_ERR(CTRLR_LOG, "zone state file %s: not a zone state file (or its header is "
				   "damaged)", path);
		rc = -EINVAL;
		goto out_free;
	}
	if (h.zdes_bytes != zns->zdes_bytes || h.zsze != zns->zsze || h.zcap != zns->zcap ||
	    h.nr_zones != zns->nr_zones) {
		LOG_ERR(CTRLR_LOG,
			"zone state file %s: made for another zone geometry (%u zones of %" PRIu64
			" blocks, capacity %" PRIu64 ", extensions of %u bytes)",
			path, h.nr_zones, h.zsze, h.zcap, h.zdes_bytes);
		rc = -EINVAL;
		goto out_free;
	}
	if ((uint64_t)st.st_size != l.total) {
		LOG_ERR(CTRLR_LOG,
			"zone state file %s: %" PRIu64 " bytes where its geometry needs %zu (cut "
			"short, by a full disk?): refused",
			path, (uint64_t)st.st_size, l.total);
		rc = -EINVAL;
		goto out_free;
	}
	if (!boot_id[0] || !strncmp(h.boot_id, boot_id, ZNS_BOOT_ID_LEN)) {
		/* The kernel that holds the live words' page cache still runs: they are exact.
		 * The checkpoints only tell which slot the next one goes to. */
		if (pread(f->fd, w, (size_t)zns->nr_zones * 8, (off_t)l.live_off) !=
		    (ssize_t)zns->nr_zones * 8) {
			rc = -EIO;
			goto out_free;
		}
		rc = zns_words_check(zns, w, path, "live words");
		zns_ckpt_pick(zns, f->fd, path, &l, h.image_id, NULL, &f->seq);
	} else {
		LOG_INFO(CTRLR_LOG, "zone state file %s: written before a reboot: zones from the "
				    "last checkpoint", path);
		rc = zns_ckpt_pick(zns, f->fd, path, &l, h.image_id, w, &f->seq);
		if (!rc)
			rc = zns_words_check(zns, w, path, "checkpoint");
	}
	if (rc)
		goto out_free;
	zns_words_apply(zns, w);
out_map:
	rc = zns_stamp_check(path, data_file, &h, fresh);
	if (rc)
		goto out_free;
	f->image_id = h.image_id;
	zns->file = f;
	rc = zns_file_map(zns, f, &l, boot_id, h.stamped);
	if (rc) {
		LOG_ERR(CTRLR_LOG, "zone state file %s: cannot map and sync it: %s", path,
			strerror(-rc));
		zns->file = NULL;
		zns->zde = NULL;
		goto out_free;
	}
	if (zns->max_active && zns->nr_active > zns->max_active)
		LOG_WARN(CTRLR_LOG, "zone state file %s: %u active zones, above the limit of %u",
			 path, zns->nr_active, zns->max_active);
	free(zde_v1);
	free(w);
	return 0;

out_free:
	if (f->map)
		munmap(f->map, f->map_len);
	if (f->fd >= 0)
		close(f->fd);
	free(zde_v1);
	free(w);
	free(f->snap);
	free(f->path);
	free(f);
	return rc;
}

void ctrlr_zns_file_close(struct ctrlr_zns *zns)
{
	struct ctrlr_zns_file *f = zns->file;

	if (!f)
		return;
	/* The live words stay in the page cache; the kernel writes them back. */
	munmap(f->map, f->map_len);
	close(f->fd);
	free(f->snap);
	free(f->path);
	free(f);
	zns->file = NULL;
	zns->zde = NULL;
}

/* ---- checkpoints ---- */

void ctrlr_zns_file_capture(struct ctrlr_zns *zns)
{
	struct ctrlr_zns_file *f = zns->file;
	struct ctrlr_zns_ckpt_hdr h = {.seq = f->seq + 1,
				       .image_id = f->image_id,
				       .nr_zones = zns->nr_zones};

	memcpy(h.magic, ZNS_CKPT_MAGIC, sizeof(h.magic));
	memset(f->snap, 0, f->slot_len);
	memcpy(f->snap, &h, sizeof(h));
	for (uint32_t i = 0; i < zns->nr_zones; i++) {
		uint64_t v = __atomic_load_n(&f->live[i], __ATOMIC_RELAXED);

		memcpy(f->snap + sizeof(h) + (size_t)i * 8, &v, 8);
	}
	h.crc = zns_ckpt_crc(f->snap, zns->nr_zones);
	memcpy(f->snap, &h, sizeof(h));
}

int ctrlr_zns_file_write(struct ctrlr_zns *zns, syncer_done_fn done)
{
	struct ctrlr_zns_file *f = zns->file;
	struct ctrlr_zns_ckpt_hdr h;

	memcpy(&h, f->snap, sizeof(h));
	zns->round_iov = (struct iovec){.iov_base = f->snap, .iov_len = f->slot_len};
	/* The slots alternate: a write torn by a power loss leaves the other checkpoint. The
	 * extensions and the live words share the file, so the sync takes them along. */
	zns->round_job = (struct syncer_job){.op = SYNCER_PWRITE,
					     .fd = f->fd,
					     .iov = &zns->round_iov,
					     .iovcnt = 1,
					     .off = f->slot_off[h.seq & 1],
					     .sync = true,
					     .done = done,
					     .arg = zns};
	return syncer_submit(&zns->round_job);
}
