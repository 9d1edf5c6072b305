/* hw/pci_config.c - the emulated PCI Express config space: header type 0,
 * BAR sizing, PM / PCI Express / MSI-X capabilities, read-only masking. */
#include <string.h>

#include "hw/hw_internal.h"
#include "hw/pci_config.h"

#define HW_PCI_CAP_ID_PM 0x01u
#define HW_PCI_CAP_ID_EXP 0x10u
#define HW_PCI_CAP_ID_MSIX 0x11u

/* PMCSR: power state bits RW; No_Soft_Reset (bit 3) set as SPDK does, so
 * the host knows a D3->D0 transition keeps the function's state. */
#define HW_PCI_PM_CSR_STATE 0x0003u
#define HW_PCI_PM_CSR_NO_SOFT_RESET 0x0008u
/* DEVCTL power-on default (PCIe 4.0 7.5.3.4): relaxed ordering, no snoop,
 * MRRS 512 bytes. */
#define HW_PCI_EXP_DEVCTL_DEFAULT 0x2810u

static void hw_pci_config_put8(struct hw_pci_config *cfg, uint32_t off, uint8_t v)
{
	cfg->raw[off] = v;
}

static void hw_pci_config_put16(struct hw_pci_config *cfg, uint32_t off, uint16_t v)
{
	cfg->raw[off] = v & 0xff;
	cfg->raw[off + 1] = v >> 8;
}

static void hw_pci_config_put32(struct hw_pci_config *cfg, uint32_t off, uint32_t v)
{
	hw_pci_config_put16(cfg, off, v & 0xffff);
	hw_pci_config_put16(cfg, off + 2, v >> 16);
}

static void hw_pci_config_wmask16(struct hw_pci_config *cfg, uint32_t off, uint16_t m)
{
	cfg->wmask[off] = m & 0xff;
	cfg->wmask[off + 1] = m >> 8;
}

static void hw_pci_config_wmask32(struct hw_pci_config *cfg, uint32_t off, uint32_t m)
{
	hw_pci_config_wmask16(cfg, off, m & 0xffff);
	hw_pci_config_wmask16(cfg, off + 2, m >> 16);
}

uint16_t hw_pci_config_get16(const struct hw_pci_config *cfg, uint32_t offset)
{
	return (uint16_t)(cfg->raw[offset] | cfg->raw[offset + 1] << 8);
}

uint32_t hw_pci_config_get32(const struct hw_pci_config *cfg, uint32_t offset)
{
	return hw_pci_config_get16(cfg, offset) | (uint32_t)hw_pci_config_get16(cfg, offset + 2)
						      << 16;
}

/* BAR registers: the type bits are read-only, the address bits writable above
 * the size, so a sizing write of all ones reads back ~(size - 1) | type. */
static void hw_pci_config_init_bars(struct hw_pci_config *cfg, const struct hw_pci_type *type)
{
	for (unsigned int i = 0; i < HW_NUM_BARS; i++) {
		const struct hw_bar *bar = &type->bars[i];
		uint32_t off = HW_PCI_BAR0 + 4 * i;

		if (!bar->present)
			continue;
		if (bar->is_io) {
			hw_pci_config_put32(cfg, off, 0x1);
			hw_pci_config_wmask32(cfg, off, (uint32_t) ~(bar->size - 1) & ~0x3u);
			continue;
		}
		uint32_t lo = (uint32_t)bar->mem_type << 1 | (bar->prefetchable ? 0x8u : 0);
		uint64_t addr_mask = ~(bar->size - 1) & ~0xfull;

		hw_pci_config_put32(cfg, off, lo);
		hw_pci_config_wmask32(cfg, off, (uint32_t)addr_mask);
		if (bar->mem_type == HW_BAR_MEM_64 && i + 1 < HW_NUM_BARS)
			hw_pci_config_wmask32(cfg, off + 4, (uint32_t)(addr_mask >> 32));
	}
}

static void hw_pci_config_init_caps(struct hw_pci_config *cfg, const struct hw_pci_type *type)
{
	uint8_t exp_next = 0;

	hw_pci_config_put8(cfg, HW_PCI_CAP_PTR, HW_PCI_CAP_PM);

	/* Power management, PMC version 3 (PCI PM 1.2). */
	hw_pci_config_put8(cfg, HW_PCI_CAP_PM, HW_PCI_CAP_ID_PM);
	hw_pci_config_put8(cfg, HW_PCI_CAP_PM + 1, HW_PCI_CAP_EXP);
	hw_pci_config_put16(cfg, HW_PCI_CAP_PM + 2, 0x0003);
	hw_pci_config_put16(cfg, HW_PCI_PM_CSR, HW_PCI_PM_CSR_NO_SOFT_RESET);
	hw_pci_config_wmask16(cfg, HW_PCI_PM_CSR, HW_PCI_PM_CSR_STATE);

	if (cfg->has_msix)
		exp_next = HW_PCI_CAP_MSIX;
	/* PCI Express capability v2, endpoint (type 0); QEMU turns it into an
	 * RCiEP on q35's root bus. */
	hw_pci_config_put8(cfg, HW_PCI_CAP_EXP, HW_PCI_CAP_ID_EXP);
	hw_pci_config_put8(cfg, HW_PCI_CAP_EXP + 1, exp_next);
	hw_pci_config_put16(cfg, HW_PCI_CAP_EXP + 2, 0x0002);
	hw_pci_config_put32(cfg, HW_PCI_EXP_DEVCAP, HW_PCI_EXP_DEVCAP_FLR | HW_PCI_EXP_DEVCAP_RBER);
	hw_pci_config_put16(cfg, HW_PCI_EXP_DEVCTL, HW_PCI_EXP_DEVCTL_DEFAULT);
	/* Everything but the FLR bit is plain RW; FLR is handled in write. */
	hw_pci_config_wmask16(cfg, HW_PCI_EXP_DEVCTL, 0x7fff);
	/* Link: 2.5 GT/s x1 capable and negotiated. */
	hw_pci_config_put32(cfg, HW_PCI_CAP_EXP + 0x0c, 0x00000011);
	hw_pci_config_wmask16(cfg, HW_PCI_CAP_EXP + 0x10, 0x00c3);
	hw_pci_config_put16(cfg, HW_PCI_CAP_EXP + 0x12, 0x0011);
	/* DEVCTL2: completion timeout value/disable are RW. */
	hw_pci_config_wmask16(cfg, HW_PCI_CAP_EXP + 0x28, 0x001f);

	if (!cfg->has_msix)
		return;
	const struct hw_region *tbl = &type->regions[type->msix_table_idx];
	const struct hw_region *pba = &type->regions[type->msix_pba_idx];

	hw_pci_config_put8(cfg, HW_PCI_CAP_MSIX, HW_PCI_CAP_ID_MSIX);
	hw_pci_config_put8(cfg, HW_PCI_CAP_MSIX + 1, 0);
	hw_pci_config_put16(cfg, HW_PCI_MSIX_CTRL, (uint16_t)(type->num_msix - 1));
	hw_pci_config_wmask16(cfg, HW_PCI_MSIX_CTRL,
			      HW_PCI_MSIX_CTRL_MASK | HW_PCI_MSIX_CTRL_ENABLE);
	hw_pci_config_put32(cfg, HW_PCI_MSIX_TABLE, (uint32_t)tbl->start | tbl->bar_id);
	hw_pci_config_put32(cfg, HW_PCI_MSIX_PBA, (uint32_t)pba->start | pba->bar_id);
}

void hw_pci_config_init(struct hw_pci_config *cfg, const struct hw_pci_type *type)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->has_msix = type->num_msix > 0 && type->msix_table_idx >= 0 && type->msix_pba_idx >= 0;

	hw_pci_config_put16(cfg, HW_PCI_VENDOR_ID, type->ids.vendor_id);
	hw_pci_config_put16(cfg, HW_PCI_DEVICE_ID, type->ids.device_id);
	hw_pci_config_wmask16(cfg, HW_PCI_COMMAND,
			      HW_PCI_COMMAND_IO | HW_PCI_COMMAND_MEM | HW_PCI_COMMAND_MASTER |
				  HW_PCI_COMMAND_SERR | HW_PCI_COMMAND_INTX_DISABLE);
	hw_pci_config_put16(cfg, HW_PCI_STATUS, HW_PCI_STATUS_CAP_LIST);
	hw_pci_config_put8(cfg, HW_PCI_REVISION, type->ids.revision);
	hw_pci_config_put8(cfg, HW_PCI_CLASS_PROG, type->ids.class_code & 0xff);
	hw_pci_config_put8(cfg, HW_PCI_CLASS_PROG + 1, (type->ids.class_code >> 8) & 0xff);
	hw_pci_config_put8(cfg, HW_PCI_CLASS_PROG + 2, (type->ids.class_code >> 16) & 0xff);
	cfg->wmask[0x0c] = 0xff; /* cache line size: storage only */
	hw_pci_config_init_bars(cfg, type);
	hw_pci_config_put16(cfg, HW_PCI_SUBSYS_VENDOR_ID, type->ids.subsys_vendor_id);
	hw_pci_config_put16(cfg, HW_PCI_SUBSYS_ID, type->ids.subsys_id);
	/* ROM (0x30) stays 0 and read-only: QEMU then registers no ROM. The
	 * interrupt pin stays 0: INTx would make QEMU drop every BAR mmap. */
	cfg->wmask[HW_PCI_INT_LINE] = 0xff;
	hw_pci_config_init_caps(cfg, type);
}

void hw_pci_config_read(const struct hw_pci_config *cfg, uint32_t offset, void *buf, uint32_t len)
{
	memcpy(buf, &cfg->raw[offset], len);
}

unsigned int hw_pci_config_write(struct hw_pci_config *cfg, uint32_t offset, const void *buf,
				 uint32_t len)
{
	const uint8_t *src = buf;
	uint16_t msix_before = cfg->has_msix ? hw_pci_config_get16(cfg, HW_PCI_MSIX_CTRL) : 0;
	bool master_before = hw_pci_config_bus_master(cfg);
	unsigned int events = 0;

	for (uint32_t i = 0; i < len; i++) {
		uint32_t off = offset + i;

		if (off >= sizeof(cfg->wmask))
			break; /* extended space: no extended caps, all read-only 0 */
		cfg->raw[off] =
		    (uint8_t)((cfg->raw[off] & ~cfg->wmask[off]) | (src[i] & cfg->wmask[off]));
		/* DEVCTL bit 15 (initiate FLR) is write-only: it reads 0. */
		if (off == HW_PCI_EXP_DEVCTL + 1 && (src[i] & 0x80))
			events |= HW_PCI_CFG_EV_FLR;
	}
	if (cfg->has_msix && hw_pci_config_get16(cfg, HW_PCI_MSIX_CTRL) != msix_before)
		events |= HW_PCI_CFG_EV_MSIX;
	if (hw_pci_config_bus_master(cfg) != master_before)
		events |= HW_PCI_CFG_EV_MASTER;
	return events;
}

bool hw_pci_config_msix_enabled(const struct hw_pci_config *cfg)
{
	return cfg->has_msix &&
	       (hw_pci_config_get16(cfg, HW_PCI_MSIX_CTRL) & HW_PCI_MSIX_CTRL_ENABLE);
}

bool hw_pci_config_msix_masked(const struct hw_pci_config *cfg)
{
	return cfg->has_msix &&
	       (hw_pci_config_get16(cfg, HW_PCI_MSIX_CTRL) & HW_PCI_MSIX_CTRL_MASK);
}

bool hw_pci_config_mem_enabled(const struct hw_pci_config *cfg)
{
	return hw_pci_config_get16(cfg, HW_PCI_COMMAND) & HW_PCI_COMMAND_MEM;
}

bool hw_pci_config_io_enabled(const struct hw_pci_config *cfg)
{
	return hw_pci_config_get16(cfg, HW_PCI_COMMAND) & HW_PCI_COMMAND_IO;
}

bool hw_pci_config_bus_master(const struct hw_pci_config *cfg)
{
	return hw_pci_config_get16(cfg, HW_PCI_COMMAND) & HW_PCI_COMMAND_MASTER;
}
