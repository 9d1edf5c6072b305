/* hw/pci_type.c - PCI type: IDs, BARs, BAR regions, stateful defaults, and
 * validation against a platform profile at start. */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "hw/hw_internal.h"

struct hw_pci_type *hw_pci_type_create(const char *name)
{
	struct hw_pci_type *type = calloc(1, sizeof(*type));

	if (!type)
		return NULL;
	snprintf(type->name, sizeof(type->name), "%s", name ? name : "");
	type->msix_table_idx = -1;
	type->msix_pba_idx = -1;
	return type;
}

void hw_pci_type_destroy(struct hw_pci_type *type)
{
	if (!type)
		return;
	if (type->nr_devices) {
		LOG_ERR(HW_LOG_COMP, "type %s: not destroyed, %u devices still exist", type->name,
			type->nr_devices);
		return;
	}
	for (unsigned int i = 0; i < type->nr_regions; i++) {
		free(type->regions[i].type_def);
		free(type->regions[i].type_def_mask);
	}
	free(type->regions);
	free(type);
}

bool hw_pci_type_is_started(const struct hw_pci_type *type)
{
	return type->started;
}

int hw_pci_type_set_ids(struct hw_pci_type *type, const struct hw_pci_ids *ids)
{
	if (type->started)
		return -EBUSY;
	if (ids->class_code > 0xffffff)
		return -EINVAL;
	type->ids = *ids;
	return 0;
}

static int hw_pci_type_set_bar(struct hw_pci_type *type, uint8_t bar_id, uint8_t log_size,
			       bool is_io, enum hw_bar_mem_type mem_type, bool prefetchable)
{
	if (type->started)
		return -EBUSY;
	if (bar_id >= HW_NUM_BARS || log_size >= 64)
		return -EINVAL;
	if (mem_type != HW_BAR_MEM_32 && mem_type != HW_BAR_MEM_64)
		return -EINVAL;
	type->bars[bar_id] = (struct hw_bar){
	    .present = true,
	    .is_io = is_io,
	    .prefetchable = prefetchable,
	    .mem_type = mem_type,
	    .log_size = log_size,
	    .size = 1ull << log_size,
	};
	return 0;
}

int hw_pci_type_set_memory_bar(struct hw_pci_type *type, uint8_t bar_id, uint8_t log_size,
			       enum hw_bar_mem_type mem_type, bool prefetchable)
{
	return hw_pci_type_set_bar(type, bar_id, log_size, false, mem_type, prefetchable);
}

int hw_pci_type_set_io_bar(struct hw_pci_type *type, uint8_t bar_id, uint8_t log_size)
{
	return hw_pci_type_set_bar(type, bar_id, log_size, true, HW_BAR_MEM_32, false);
}

int hw_pci_type_set_num_msix(struct hw_pci_type *type, uint16_t num_msix)
{
	if (type->started)
		return -EBUSY;
	if (num_msix > 2048) /* MSI-X table size field is 11 bits */
		return -EINVAL;
	type->num_msix = num_msix;
	return 0;
}

static struct hw_region *hw_pci_type_add_region(struct hw_pci_type *type, enum hw_region_kind kind,
						uint8_t bar_id, uint64_t start, uint64_t size)
{
	if (type->started) {
		errno = EBUSY;
		return NULL;
	}
	if (bar_id >= HW_NUM_BARS || size == 0 || start + size < start) {
		errno = EINVAL;
		return NULL;
	}
	if (type->nr_regions == type->cap_regions) {
		unsigned int cap = type->cap_regions ? type->cap_regions * 2 : 8;
		struct hw_region *r = realloc(type->regions, cap * sizeof(*r));

		if (!r)
			return NULL;
		type->regions = r;
		type->cap_regions = cap;
	}
	struct hw_region *r = &type->regions[type->nr_regions++];

	*r = (struct hw_region){.kind = kind, .bar_id = bar_id, .start = start, .size = size};
	return r;
}

int hw_pci_type_add_stateful_region(struct hw_pci_type *type, uint8_t bar_id, uint64_t start,
				    uint64_t size)
{
	struct hw_region *r;

	/* Stateful contents are kept in memory per device: bound them. */
	if (size > (64u << 20))
		return -EINVAL;
	r = hw_pci_type_add_region(type, HW_REGION_STATEFUL, bar_id, start, size);
	if (!r)
		return -errno;
	r->type_def = calloc(1, size);
	r->type_def_mask = calloc(1, size);
	if (!r->type_def || !r->type_def_mask) {
		free(r->type_def);
		free(r->type_def_mask);
		type->nr_regions--;
		return -ENOMEM;
	}
	return 0;
}

int hw_pci_type_add_db_by_offset_region(struct hw_pci_type *type, uint8_t bar_id, uint64_t start,
					uint64_t size, uint8_t log_db_size, uint8_t log_stride)
{
	struct hw_region *r;

	if (log_db_size > 2 || log_stride > 30 || log_stride < log_db_size)
		return -EINVAL;
	r = hw_pci_type_add_region(type, HW_REGION_DB_BY_OFFSET, bar_id, start, size);
	if (!r)
		return -errno;
	r->log_db_size = log_db_size;
	r->log_stride = log_stride;
	return 0;
}

int hw_pci_type_add_db_by_data_region(struct hw_pci_type *type, uint8_t bar_id, uint64_t start,
				      uint64_t size, uint8_t log_db_size, uint8_t db_id_msbyte,
				      uint8_t db_id_lsbyte)
{
	struct hw_region *r;

	if (log_db_size > 2 || db_id_msbyte >= (1u << log_db_size) ||
	    db_id_lsbyte >= (1u << log_db_size))
		return -EINVAL;
	r = hw_pci_type_add_region(type, HW_REGION_DB_BY_DATA, bar_id, start, size);
	if (!r)
		return -errno;
	r->log_db_size = log_db_size;
	r->db_msbyte = db_id_msbyte;
	r->db_lsbyte = db_id_lsbyte;
	return 0;
}

int hw_pci_type_add_msix_table_region(struct hw_pci_type *type, uint8_t bar_id, uint64_t start,
				      uint64_t size)
{
	return hw_pci_type_add_region(type, HW_REGION_MSIX_TABLE, bar_id, start, size) ? 0 : -errno;
}

int hw_pci_type_add_msix_pba_region(struct hw_pci_type *type, uint8_t bar_id, uint64_t start,
				    uint64_t size)
{
	return hw_pci_type_add_region(type, HW_REGION_MSIX_PBA, bar_id, start, size) ? 0 : -errno;
}

int hw_pci_type_add_memory_region(struct hw_pci_type *type, uint8_t bar_id, uint64_t start,
				  uint64_t size)
{
	/* QEMU maps sparse areas with page granularity. */
	if ((start | size) % HW_PAGE_SIZE)
		return -EINVAL;
	return hw_pci_type_add_region(type, HW_REGION_MEMORY, bar_id, start, size) ? 0 : -errno;
}

int hw_pci_type_find_region(const struct hw_pci_type *type, uint8_t bar_id, uint64_t offset,
			    uint64_t len)
{
	for (unsigned int i = 0; i < type->nr_regions; i++) {
		const struct hw_region *r = &type->regions[i];

		if (r->bar_id == bar_id && offset >= r->start && offset - r->start < r->size &&
		    len <= r->size - (offset - r->start))
			return (int)i;
	}
	return -1;
}

int hw_pci_type_set_stateful_default(struct hw_pci_type *type, uint8_t bar_id, uint64_t offset,
				     const void *data, size_t len)
{
	int idx;

	/* DOCA: type defaults can be set only while no device exists. */
	if (type->nr_devices)
		return -EBUSY;
	if (!len)
		return -EINVAL;
	idx = hw_pci_type_find_region(type, bar_id, offset, len);
	if (idx < 0 || type->regions[idx].kind != HW_REGION_STATEFUL)
		return -EINVAL;
	struct hw_region *r = &type->regions[idx];

	memcpy(r->type_def + (offset - r->start), data, len);
	memset(r->type_def_mask + (offset - r->start), 0xff, len);
	return 0;
}

/* ------------------------------------------------------------------------ */
/* Validation.                                                              */

struct hw_type_check {
	const struct hw_pci_type *type;
	const struct hw_profile *p;
	char *err;
	size_t err_len;
};

static int hw_type_fail(struct hw_type_check *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static int hw_type_fail(struct hw_type_check *c, const char *fmt, ...)
{
	va_list ap;

	if (c->err && c->err_len) {
		va_start(ap, fmt);
		vsnprintf(c->err, c->err_len, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

static int hw_type_check_bars(struct hw_type_check *c)
{
	const struct hw_pci_type *t = c->type;
	const struct hw_profile *p = c->p;
	unsigned int nr_bars = 0;

	for (unsigned int i = 0; i < HW_NUM_BARS; i++) {
		const struct hw_bar *b = &t->bars[i];

		if (!b->present)
			continue;
		nr_bars++;
		if (b->is_io) {
			if (!p->io_bar_supported)
				return hw_type_fail(
				    c, "BAR %u: I/O BARs unsupported (bar_is_io_supported)", i);
			/* PCI: I/O BARs decode at most 256 bytes, at least 4. */
			if (b->log_size < 2 || b->log_size > 8)
				return hw_type_fail(c, "BAR %u: I/O BAR log size %u outside 2..8",
						    i, b->log_size);
			continue;
		}
		if (b->mem_type == HW_BAR_MEM_32 && !p->bar_32bit_supported)
			return hw_type_fail(
			    c, "BAR %u: 32-bit BARs unsupported (bar_is_32_bit_supported)", i);
		if (b->mem_type == HW_BAR_MEM_64 && !p->bar_64bit_supported)
			return hw_type_fail(
			    c, "BAR %u: 64-bit BARs unsupported (bar_is_64_bit_supported)", i);
		if (b->log_size < p->log_min_bar_size)
			return hw_type_fail(c, "BAR %u: log size %u below type_log_min_bar_size %u",
					    i, b->log_size, p->log_min_bar_size);
		if (b->log_size > p->log_max_bar_size)
			return hw_type_fail(c, "BAR %u: log size %u above type_log_max_bar_size %u",
					    i, b->log_size, p->log_max_bar_size);
		if (b->mem_type == HW_BAR_MEM_32 && b->log_size > 31)
			return hw_type_fail(c, "BAR %u: a 32-bit BAR cannot be 2^%u bytes", i,
					    b->log_size);
		if (b->mem_type == HW_BAR_MEM_64) {
			if (i + 1 >= HW_NUM_BARS)
				return hw_type_fail(
				    c, "BAR %u: a 64-bit BAR needs BAR %u for its upper half", i,
				    i + 1);
			if (t->bars[i + 1].present)
				return hw_type_fail(c, "BAR %u: is the upper half of 64-bit BAR %u",
						    i + 1, i);
		}
	}
	if (nr_bars > p->max_bars)
		return hw_type_fail(c, "%u BARs above type_max_bars %u", nr_bars, p->max_bars);
	return 0;
}

/* Block size, block count and start alignment of one region kind. */
static int hw_type_check_blocks(struct hw_type_check *c, const struct hw_region *r,
				const char *what, uint32_t block, uint32_t max_blocks,
				uint32_t align)
{
	if (r->size % block)
		return hw_type_fail(c,
				    "%s region at BAR %u 0x%llx: size 0x%llx not a multiple of "
				    "bar_%s_region_block_size %u",
				    what, r->bar_id, (unsigned long long)r->start,
				    (unsigned long long)r->size, what, block);
	if (r->size / block > max_blocks)
		return hw_type_fail(c,
				    "%s region at BAR %u 0x%llx: %llu blocks above "
				    "bar_%s_region_max_num_region_blocks %u",
				    what, r->bar_id, (unsigned long long)r->start,
				    (unsigned long long)(r->size / block), what, max_blocks);
	if (r->start % align)
		return hw_type_fail(c,
				    "%s region at BAR %u 0x%llx: start not aligned to "
				    "bar_%s_region_start_addr_alignment %u",
				    what, r->bar_id, (unsigned long long)r->start, what, align);
	return 0;
}

static int hw_type_check_db(struct hw_type_check *c, const struct hw_region *r)
{
	const struct hw_profile *p = c->p;

	if (r->log_db_size < p->log_min_db_size || r->log_db_size > p->log_max_db_size)
		return hw_type_fail(c,
				    "DB region at BAR %u 0x%llx: DB log size %u outside "
				    "type_log_min_db_size %u .. type_log_max_db_size %u",
				    r->bar_id, (unsigned long long)r->start, r->log_db_size,
				    p->log_min_db_size, p->log_max_db_size);
	if (r->kind == HW_REGION_DB_BY_OFFSET &&
	    (r->log_stride < p->log_min_db_stride || r->log_stride > p->log_max_db_stride))
		return hw_type_fail(
		    c,
		    "DB region at BAR %u 0x%llx: stride log %u outside type_log_min_db_stride_size "
		    "%u .. type_log_max_db_stride_size %u",
		    r->bar_id, (unsigned long long)r->start, r->log_stride, p->log_min_db_stride,
		    p->log_max_db_stride);
	return hw_type_check_blocks(c, r, "db", p->db_block_size, p->db_max_blocks, p->db_align);
}

static int hw_type_check_region(struct hw_type_check *c, unsigned int idx)
{
	const struct hw_pci_type *t = c->type;
	const struct hw_profile *p = c->p;
	const struct hw_region *r = &t->regions[idx];
	const struct hw_bar *b = &t->bars[r->bar_id];

	if (!b->present)
		return hw_type_fail(c, "region at BAR %u 0x%llx: BAR %u not declared", r->bar_id,
				    (unsigned long long)r->start, r->bar_id);
	if (r->start >= b->size || r->size > b->size - r->start)
		return hw_type_fail(
		    c, "region at BAR %u 0x%llx size 0x%llx: outside the BAR size 0x%llx",
		    r->bar_id, (unsigned long long)r->start, (unsigned long long)r->size,
		    (unsigned long long)b->size);
	for (unsigned int j = 0; j < idx; j++) {
		const struct hw_region *o = &t->regions[j];

		if (o->bar_id == r->bar_id && r->start < o->start + o->size &&
		    o->start < r->start + r->size)
			return hw_type_fail(
			    c, "region at BAR %u 0x%llx overlaps the region at 0x%llx", r->bar_id,
			    (unsigned long long)r->start, (unsigned long long)o->start);
	}
	switch (r->kind) {
	case HW_REGION_STATEFUL:
		return hw_type_check_blocks(c, r, "stateful", p->stateful_block_size,
					    p->stateful_max_blocks, p->stateful_align);
	case HW_REGION_DB_BY_OFFSET:
	case HW_REGION_DB_BY_DATA:
		return hw_type_check_db(c, r);
	case HW_REGION_MSIX_TABLE:
		return hw_type_check_blocks(c, r, "msix_table", p->msix_table_block_size,
					    p->msix_table_max_blocks, p->msix_table_align);
	case HW_REGION_MSIX_PBA:
		return hw_type_check_blocks(c, r, "msix_pba", p->msix_pba_block_size,
					    p->msix_pba_max_blocks, p->msix_pba_align);
	case HW_REGION_MEMORY:
		/* Page aligned by construction: never inside an I/O BAR (256 bytes at most). */
		return 0;
	}
	return hw_type_fail(c, "region %u: unknown kind", idx);
}

/* Region counts per BAR and per type (checked before the regions themselves
 * so each count limit is reported as such), and the MSI-X structures. */
static int hw_type_check_counts(struct hw_type_check *c, int *table_idx, int *pba_idx)
{
	const struct hw_pci_type *t = c->type;
	const struct hw_profile *p = c->p;
	unsigned int all[HW_NUM_BARS] = {0}, st[HW_NUM_BARS] = {0}, db[HW_NUM_BARS] = {0};
	unsigned int st_total = 0, db_total = 0, mem_total = 0, tables = 0, pbas = 0;

	for (unsigned int i = 0; i < t->nr_regions; i++) {
		const struct hw_region *r = &t->regions[i];
		bool is_st = r->kind == HW_REGION_STATEFUL;
		bool is_db = r->kind == HW_REGION_DB_BY_OFFSET || r->kind == HW_REGION_DB_BY_DATA;

		all[r->bar_id]++;
		st[r->bar_id] += is_st;
		db[r->bar_id] += is_db;
		st_total += is_st;
		db_total += is_db;
		mem_total += r->kind == HW_REGION_MEMORY;
		if (r->kind == HW_REGION_MSIX_TABLE) {
			tables++;
			*table_idx = (int)i;
		}
		if (r->kind == HW_REGION_MSIX_PBA) {
			pbas++;
			*pba_idx = (int)i;
		}
	}
	for (unsigned int b = 0; b < HW_NUM_BARS; b++)
		if (all[b] > p->max_regions_per_bar)
			return hw_type_fail(c, "BAR %u: %u regions above bar_max_bar_regions %u", b,
					    all[b], p->max_regions_per_bar);
	if (t->nr_regions > p->max_regions_per_type)
		return hw_type_fail(c, "%u regions above type_max_bar_regions %u", t->nr_regions,
				    p->max_regions_per_type);
	for (unsigned int b = 0; b < HW_NUM_BARS; b++)
		if (st[b] > p->max_stateful_regions_per_bar)
			return hw_type_fail(
			    c, "BAR %u: %u stateful regions above bar_max_bar_stateful_regions %u",
			    b, st[b], p->max_stateful_regions_per_bar);
	if (st_total > p->max_stateful_regions_per_type)
		return hw_type_fail(c, "%u stateful regions above type_max_bar_stateful_regions %u",
				    st_total, p->max_stateful_regions_per_type);
	for (unsigned int b = 0; b < HW_NUM_BARS; b++)
		if (db[b] > p->max_db_regions_per_bar)
			return hw_type_fail(c,
					    "BAR %u: %u DB regions above bar_max_bar_db_regions %u",
					    b, db[b], p->max_db_regions_per_bar);
	if (db_total > p->max_db_regions_per_type)
		return hw_type_fail(c, "%u DB regions above type_max_bar_db_regions %u", db_total,
				    p->max_db_regions_per_type);
	if (mem_total > p->max_mem_regions_per_type)
		return hw_type_fail(c, "%u memory regions above type_max_bar_mem_regions %u",
				    mem_total, p->max_mem_regions_per_type);
	if (tables > 1 || pbas > 1)
		return hw_type_fail(
		    c,
		    "more than one MSI-X table or PBA region (type_max_bar_msix_table_regions 1)");
	return 0;
}

static int hw_type_check_msix(struct hw_type_check *c, int table_idx, int pba_idx)
{
	const struct hw_pci_type *t = c->type;

	if (t->num_msix > c->p->max_msix)
		return hw_type_fail(c, "%u MSI-X vectors above type_max_num_msix %u", t->num_msix,
				    c->p->max_msix);
	if (!t->num_msix) {
		if (table_idx >= 0 || pba_idx >= 0)
			return hw_type_fail(c, "MSI-X table/PBA regions without MSI-X vectors");
		return 0;
	}
	if (table_idx < 0 || pba_idx < 0)
		return hw_type_fail(c, "%u MSI-X vectors need an MSI-X table and a PBA region",
				    t->num_msix);
	const struct hw_region *tbl = &t->regions[table_idx];
	const struct hw_region *pba = &t->regions[pba_idx];

	if (tbl->size < 16ull * t->num_msix)
		return hw_type_fail(
		    c, "MSI-X table of 0x%llx bytes too small for %u vectors (16 bytes each)",
		    (unsigned long long)tbl->size, t->num_msix);
	if (pba->size < 8ull * ((t->num_msix + 63u) / 64u))
		return hw_type_fail(c, "MSI-X PBA of 0x%llx bytes too small for %u pending bits",
				    (unsigned long long)pba->size, t->num_msix);
	/* The capability holds offset | BIR in 32 bits, offset 8-byte aligned. */
	if ((tbl->start | pba->start) & 7 || tbl->start > UINT32_MAX || pba->start > UINT32_MAX)
		return hw_type_fail(
		    c, "MSI-X table/PBA offsets must be 8-byte aligned and below 4 GiB");
	return 0;
}

int hw_pci_type_start(struct hw_pci_type *type, const struct hw_profile *profile, char *err,
		      size_t err_len)
{
	struct hw_type_check c = {.type = type, .p = profile, .err = err, .err_len = err_len};
	int table_idx = -1, pba_idx = -1;
	int rc;

	if (err && err_len)
		err[0] = '\0';
	if (type->started)
		return -EBUSY;
	if (!profile)
		return hw_type_fail(&c, "no platform profile");
	rc = hw_type_check_bars(&c);
	if (!rc)
		rc = hw_type_check_counts(&c, &table_idx, &pba_idx);
	for (unsigned int i = 0; !rc && i < type->nr_regions; i++)
		rc = hw_type_check_region(&c, i);
	if (!rc)
		rc = hw_type_check_msix(&c, table_idx, pba_idx);
	if (rc) {
		LOG_ERR(HW_LOG_COMP, "type %s does not fit profile %s: %s", type->name,
			profile ? profile->name : "-", err ? err : "");
		return rc;
	}
	for (unsigned int i = 0; i < HW_NUM_BARS; i++) {
		struct hw_bar *b = &type->bars[i];

		if (b->present && !b->is_io && b->mem_type == HW_BAR_MEM_64)
			type->bars[i + 1] = (struct hw_bar){.upper_half = true};
	}
	type->msix_table_idx = table_idx;
	type->msix_pba_idx = pba_idx;
	type->profile = profile;
	type->started = true;
	return 0;
}
