/* hw/profile.c - platform profiles: the limits a PCI type must fit, as
 * DOCA's doca_caps prints them for a device (bf3) or none (unlimited). */
#include <string.h>

#include "hw/hw.h"

/* BlueField-3, from the doca_caps output in the DOCA DevEmu PCI Generic
 * guide (Device Support section). */
static const struct hw_profile hw_profile_bf3 = {
    .name = "bf3",
    .max_hotplug_devices = 15,
    .max_bars = 2,
    .log_min_bar_size = 12,
    .log_max_bar_size = 30,
    .bar_32bit_supported = false,
    .bar_64bit_supported = true,
    .io_bar_supported = false,
    .max_msix = 11,
    .max_db = 64,
    .log_min_db_size = 1,
    .log_max_db_size = 2,
    .log_min_db_stride = 2,
    .log_max_db_stride = 12,
    .max_regions_per_bar = 12,
    .max_regions_per_type = 12,
    .stateful_block_size = 64,
    .stateful_max_blocks = 4,
    .stateful_align = 64,
    .max_stateful_regions_per_bar = 1,
    .max_stateful_regions_per_type = 1,
    .db_block_size = 4096,
    .db_max_blocks = 16,
    .db_align = 4096,
    .max_db_regions_per_bar = 2,
    .max_db_regions_per_type = 2,
    .msix_table_block_size = 4096,
    .msix_table_max_blocks = 1,
    .msix_table_align = 4096,
    .msix_pba_block_size = 4096,
    .msix_pba_max_blocks = 1,
    .msix_pba_align = 4096,
    .max_mem_regions_per_type = 0,
};

/* Only what PCI itself imposes: 6 BARs, memory BARs of at least 16 bytes,
 * 2048 MSI-X vectors, 8-byte aligned MSI-X structures (the low 3 bits of the
 * table/PBA offset hold the BIR). Doorbell values are at most 32 bits. */
static const struct hw_profile hw_profile_unlimited = {
    .name = "unlimited",
    .max_hotplug_devices = 1024,
    .max_bars = 6,
    .log_min_bar_size = 4,
    .log_max_bar_size = 40,
    .bar_32bit_supported = true,
    .bar_64bit_supported = true,
    .io_bar_supported = true,
    .max_msix = 2048,
    .max_db = 65536,
    .log_min_db_size = 0,
    .log_max_db_size = 2,
    .log_min_db_stride = 0,
    .log_max_db_stride = 20,
    .max_regions_per_bar = 64,
    .max_regions_per_type = 256,
    .stateful_block_size = 1,
    .stateful_max_blocks = 1u << 20,
    .stateful_align = 1,
    .max_stateful_regions_per_bar = 64,
    .max_stateful_regions_per_type = 256,
    .db_block_size = 1,
    .db_max_blocks = 1u << 24,
    .db_align = 1,
    .max_db_regions_per_bar = 64,
    .max_db_regions_per_type = 256,
    .msix_table_block_size = 1,
    .msix_table_max_blocks = 1u << 20,
    .msix_table_align = 8,
    .msix_pba_block_size = 1,
    .msix_pba_max_blocks = 1u << 20,
    .msix_pba_align = 8,
    .max_mem_regions_per_type = 64,
};

static const struct hw_profile *const hw_profiles[] = {
    &hw_profile_bf3,
    &hw_profile_unlimited,
};

const struct hw_profile *hw_profile_find(const char *name)
{
	if (!name)
		return NULL;
	for (size_t i = 0; i < sizeof(hw_profiles) / sizeof(hw_profiles[0]); i++)
		if (!strcmp(hw_profiles[i]->name, name))
			return hw_profiles[i];
	return NULL;
}

static const char *hw_profile_supported(bool b)
{
	return b ? "supported" : "unsupported";
}

void hw_profile_print(const struct hw_profile *p, FILE *out)
{
	fprintf(out, "profile %s\n", p->name);
	fprintf(out, "max_hotplug_devices %u\n", p->max_hotplug_devices);
	fprintf(out, "type_max_bars %u\n", p->max_bars);
	fprintf(out, "type_log_min_bar_size %u\n", p->log_min_bar_size);
	fprintf(out, "type_log_max_bar_size %u\n", p->log_max_bar_size);
	fprintf(out, "bar_is_32_bit_supported %s\n", hw_profile_supported(p->bar_32bit_supported));
	fprintf(out, "bar_is_64_bit_supported %s\n", hw_profile_supported(p->bar_64bit_supported));
	fprintf(out, "bar_is_io_supported %s\n", hw_profile_supported(p->io_bar_supported));
	fprintf(out, "type_max_num_msix %u\n", p->max_msix);
	fprintf(out, "type_max_num_db %u\n", p->max_db);
	fprintf(out, "type_log_min_db_size %u\n", p->log_min_db_size);
	fprintf(out, "type_log_max_db_size %u\n", p->log_max_db_size);
	fprintf(out, "type_log_min_db_stride_size %u\n", p->log_min_db_stride);
	fprintf(out, "type_log_max_db_stride_size %u\n", p->log_max_db_stride);
	fprintf(out, "bar_max_bar_regions %u\n", p->max_regions_per_bar);
	fprintf(out, "type_max_bar_regions %u\n", p->max_regions_per_type);
	fprintf(out, "bar_stateful_region_block_size %u\n", p->stateful_block_size);
	fprintf(out, "bar_stateful_region_max_num_region_blocks %u\n", p->stateful_max_blocks);
	fprintf(out, "bar_stateful_region_start_addr_alignment %u\n", p->stateful_align);
	fprintf(out, "bar_max_bar_stateful_regions %u\n", p->max_stateful_regions_per_bar);
	fprintf(out, "type_max_bar_stateful_regions %u\n", p->max_stateful_regions_per_type);
	fprintf(out, "bar_db_region_block_size %u\n", p->db_block_size);
	fprintf(out, "bar_db_region_max_num_region_blocks %u\n", p->db_max_blocks);
	fprintf(out, "bar_db_region_start_addr_alignment %u\n", p->db_align);
	fprintf(out, "bar_max_bar_db_regions %u\n", p->max_db_regions_per_bar);
	fprintf(out, "type_max_bar_db_regions %u\n", p->max_db_regions_per_type);
	fprintf(out, "bar_msix_table_region_block_size %u\n", p->msix_table_block_size);
	fprintf(out, "bar_msix_table_region_max_num_region_blocks %u\n", p->msix_table_max_blocks);
	fprintf(out, "bar_msix_table_region_start_addr_alignment %u\n", p->msix_table_align);
	fprintf(out, "bar_msix_pba_region_block_size %u\n", p->msix_pba_block_size);
	fprintf(out, "bar_msix_pba_region_max_num_region_blocks %u\n", p->msix_pba_max_blocks);
	fprintf(out, "bar_msix_pba_region_start_addr_alignment %u\n", p->msix_pba_align);
	fprintf(out, "type_max_bar_mem_regions %u\n", p->max_mem_regions_per_type);
}
