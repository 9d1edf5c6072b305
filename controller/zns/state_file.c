/* controller/zns_state.c - a zoned namespace's zone state file: the zone states, write pointers,
 * attributes and descriptor extensions saved when the zone table goes away (namespace removed,
 * daemon stopped) and read back when it is made again, so the zones survive a restart. The
 * table changes on every write from every poll group, so it is not written as it changes: no
 * thread may block on a file there. A daemon killed without stopping keeps the state last saved.
 *
 * Layout (host byte order: little endian, as the hosts we run on): a 40-byte header (magic
 * "NVMEZNS1", version 1, the zone descriptor extension size, zone size, zone capacity, zone
 * count), then per zone 16 bytes (write pointer, state, attributes, 6 reserved), then the zone
 * descriptor extensions. Written to PATH.tmp, synced and renamed over PATH. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/file_replace.h"
#include "common/log.h"
#include "controller/core/core.h"
#include "controller/zns/zns.h"

#define ZNS_STATE_MAGIC "NVMEZNS1"
#define ZNS_STATE_VERSION 1u

struct ctrlr_zns_state_hdr {
	char magic[8];
	uint32_t version;
	uint32_t zdes_bytes;
	uint64_t zsze;
	uint64_t zcap;
	uint32_t nr_zones;
	uint32_t rsvd;
} __attribute__((packed));
_Static_assert(sizeof(struct ctrlr_zns_state_hdr) == 40, "zone state header");

struct ctrlr_zns_state_zone {
	uint64_t wp;
	uint8_t state;
	uint8_t za;
	uint8_t rsvd[6];
} __attribute__((packed));
_Static_assert(sizeof(struct ctrlr_zns_state_zone) == 16, "zone state entry");

static size_t ctrlr_zns_state_size(const struct ctrlr_zns *zns)
{
	return sizeof(struct ctrlr_zns_state_hdr) +
	       (size_t)zns->nr_zones * (sizeof(struct ctrlr_zns_state_zone) + zns->zdes_bytes);
}

int ctrlr_zns_state_save(struct ctrlr_zns *zns, const char *path)
{
	size_t size = ctrlr_zns_state_size(zns);
	struct ctrlr_zns_state_hdr *h;
	struct ctrlr_zns_state_zone *e;
	uint8_t *buf = calloc(1, size);
	struct iovec iov;
	int rc;

	if (!buf)
		return -ENOMEM;
	h = (struct ctrlr_zns_state_hdr *)buf;
	e = (struct ctrlr_zns_state_zone *)(h + 1);
	memcpy(h->magic, ZNS_STATE_MAGIC, sizeof(h->magic));
	h->version = ZNS_STATE_VERSION;
	h->zdes_bytes = zns->zdes_bytes;
	h->zsze = zns->zsze;
	h->zcap = zns->zcap;
	h->nr_zones = zns->nr_zones;
	/* A snapshot under the lock; the file is written without it. */
	pthread_mutex_lock(&zns->lock);
	for (uint32_t i = 0; i < zns->nr_zones; i++) {
		e[i].wp = zns->zones[i].wp;
		e[i].state = zns->zones[i].state;
		e[i].za = zns->zones[i].za;
	}
	if (zns->zdes_bytes)
		memcpy(e + zns->nr_zones, zns->zde, (size_t)zns->nr_zones * zns->zdes_bytes);
	pthread_mutex_unlock(&zns->lock);
	iov = (struct iovec){.iov_base = buf, .iov_len = size};
	rc = file_replace(path, &iov, 1);
	free(buf);
	return rc;
}

/* Reads exactly size bytes of path into a new buffer. -ENOENT (no file), -EINVAL (another
 * size), -errno. */
static int ctrlr_zns_state_read(const char *path, size_t size, uint8_t **out)
{
	struct stat st;
	uint8_t *buf;
	size_t got = 0;
	int fd, rc = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st)) {
		rc = -errno;
		goto out_close;
	}
	if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size != size) {
		rc = -EINVAL;
		goto out_close;
	}
	buf = malloc(size);
	if (!buf) {
		rc = -ENOMEM;
		goto out_close;
	}
	while (got < size) {
		ssize_t n = read(fd, buf + got, size - got);

		if (n <= 0) {
			rc = n < 0 ? -errno : -EINVAL;
			free(buf);
			goto out_close;
		}
		got += (size_t)n;
	}
	*out = buf;
out_close:
	close(fd);
	return rc;
}

static bool ctrlr_zns_state_valid(uint8_t s)
{
	return s == NVME_ZS_EMPTY || s == NVME_ZS_IMP_OPEN || s == NVME_ZS_EXP_OPEN ||
	       s == NVME_ZS_CLOSED || s == NVME_ZS_READ_ONLY || s == NVME_ZS_FULL ||
	       s == NVME_ZS_OFFLINE;
}

int ctrlr_zns_state_load(struct ctrlr_zns *zns, const char *path)
{
	const struct ctrlr_zns_state_hdr *h;
	const struct ctrlr_zns_state_zone *e;
	uint32_t active = 0;
	uint8_t *buf = NULL;
	int rc;

	rc = ctrlr_zns_state_read(path, ctrlr_zns_state_size(zns), &buf);
	if (rc == -ENOENT)
		return 0; /* a first start: every zone Empty */
	if (rc) {
		LOG_ERR(CTRLR_LOG, "zone state file %s: %s", path,
			rc == -EINVAL ? "not the size of this geometry's state" : strerror(-rc));
		return rc;
	}
	h = (const struct ctrlr_zns_state_hdr *)buf;
	e = (const struct ctrlr_zns_state_zone *)(h + 1);
	if (memcmp(h->magic, ZNS_STATE_MAGIC, sizeof(h->magic)) || h->version != ZNS_STATE_VERSION ||
	    h->zdes_bytes != zns->zdes_bytes || h->zsze != zns->zsze || h->zcap != zns->zcap ||
	    h->nr_zones != zns->nr_zones) {
		LOG_ERR(CTRLR_LOG, "zone state file %s: made for another zone geometry", path);
		rc = -EINVAL;
		goto out;
	}
	/* Every field is checked before any is used: a bad file changes nothing. */
	for (uint32_t i = 0; i < zns->nr_zones; i++) {
		uint64_t zslba = (uint64_t)i << zns->zshift;

		if (!ctrlr_zns_state_valid(e[i].state) || (e[i].za & ~NVME_ZA_ZDEV) ||
		    ((e[i].za & NVME_ZA_ZDEV) && !zns->zdes_bytes) || e[i].wp < zslba ||
		    e[i].wp > zslba + zns->zcap ||
		    (e[i].state == NVME_ZS_EMPTY && (e[i].wp != zslba || e[i].za))) {
			LOG_ERR(CTRLR_LOG, "zone state file %s: zone %u is inconsistent", path, i);
			rc = -EINVAL;
			goto out;
		}
	}
	for (uint32_t i = 0; i < zns->nr_zones; i++) {
		uint64_t zslba = (uint64_t)i << zns->zshift;
		uint8_t s = e[i].state;

		/* Open zones do not outlive the controller that opened them: Closed if they hold
		 * data or an extension, else Empty (as after a power cycle). */
		if (s == NVME_ZS_IMP_OPEN || s == NVME_ZS_EXP_OPEN)
			s = (e[i].wp != zslba || e[i].za) ? NVME_ZS_CLOSED : NVME_ZS_EMPTY;
		active += s == NVME_ZS_CLOSED;
		zns->zones[i].wp = e[i].wp;
		zns->zones[i].state = s;
		zns->zones[i].za = e[i].za;
	}
	if (zns->zdes_bytes)
		memcpy(zns->zde, e + zns->nr_zones, (size_t)zns->nr_zones * zns->zdes_bytes);
	zns->nr_open = 0;
	zns->nr_active = active;
	/* Within MAR as saved; a file edited past it keeps its zones, and no zone can open until
	 * enough are finished or reset. */
	if (zns->max_active && active > zns->max_active)
		LOG_WARN(CTRLR_LOG, "zone state file %s: %u active zones, above the limit of %u",
			 path, active, zns->max_active);
out:
	free(buf);
	return rc;
}
