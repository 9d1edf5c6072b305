/* hw/pci_config.h - private: the emulated 4 KiB PCI Express config space of a
 * device (header type 0, PM, PCI Express v2 and MSI-X capabilities). Pure
 * state, no I/O: pci_dev.c acts on the events a write reports. */
#ifndef NVME_EMU_HW_PCI_CONFIG_H
#define NVME_EMU_HW_PCI_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

struct hw_pci_type;

#define HW_PCI_CONFIG_SIZE 4096u

/* Where the capabilities live (fixed layout, VFIO-USER.md section 8). */
#define HW_PCI_CAP_PM 0x40u
#define HW_PCI_CAP_EXP 0x48u
#define HW_PCI_CAP_EXP_SIZE 0x3cu
#define HW_PCI_CAP_MSIX 0x84u

/* Standard offsets used by the emulation and the tests. */
#define HW_PCI_VENDOR_ID 0x00u
#define HW_PCI_DEVICE_ID 0x02u
#define HW_PCI_COMMAND 0x04u
#define HW_PCI_STATUS 0x06u
#define HW_PCI_REVISION 0x08u
#define HW_PCI_CLASS_PROG 0x09u
#define HW_PCI_HEADER_TYPE 0x0eu
#define HW_PCI_BAR0 0x10u
#define HW_PCI_SUBSYS_VENDOR_ID 0x2cu
#define HW_PCI_SUBSYS_ID 0x2eu
#define HW_PCI_ROM 0x30u
#define HW_PCI_CAP_PTR 0x34u
#define HW_PCI_INT_LINE 0x3cu
#define HW_PCI_INT_PIN 0x3du
#define HW_PCI_PM_CSR (HW_PCI_CAP_PM + 4u)
#define HW_PCI_EXP_DEVCAP (HW_PCI_CAP_EXP + 4u)
#define HW_PCI_EXP_DEVCTL (HW_PCI_CAP_EXP + 8u)
#define HW_PCI_MSIX_CTRL (HW_PCI_CAP_MSIX + 2u)
#define HW_PCI_MSIX_TABLE (HW_PCI_CAP_MSIX + 4u)
#define HW_PCI_MSIX_PBA (HW_PCI_CAP_MSIX + 8u)

#define HW_PCI_COMMAND_IO 0x0001u
#define HW_PCI_COMMAND_MEM 0x0002u
#define HW_PCI_COMMAND_MASTER 0x0004u
#define HW_PCI_COMMAND_SERR 0x0100u
#define HW_PCI_COMMAND_INTX_DISABLE 0x0400u
#define HW_PCI_STATUS_CAP_LIST 0x0010u
#define HW_PCI_EXP_DEVCAP_RBER (1u << 15)
#define HW_PCI_EXP_DEVCAP_FLR (1u << 28)
#define HW_PCI_EXP_DEVCTL_FLR (1u << 15)
#define HW_PCI_MSIX_CTRL_MASK (1u << 14)
#define HW_PCI_MSIX_CTRL_ENABLE (1u << 15)

/* What a config write changed, for the device to act on. */
#define HW_PCI_CFG_EV_FLR 0x1u	/* DEVCTL initiate-FLR written as 1 */
#define HW_PCI_CFG_EV_MSIX 0x2u /* MSI-X enable or function mask changed */
#define HW_PCI_CFG_EV_MASTER 0x4u /* COMMAND Bus Master Enable changed */

struct hw_pci_config {
	uint8_t raw[HW_PCI_CONFIG_SIZE];
	uint8_t wmask[256]; /* writable bits of the legacy 256 bytes; the rest is RO 0 */
	bool has_msix;
};

/* Builds the power-on image from a started type. */
void hw_pci_config_init(struct hw_pci_config *cfg, const struct hw_pci_type *type);
/* Reads len bytes at offset (bounds checked by the caller: offset + len <=
 * HW_PCI_CONFIG_SIZE). */
void hw_pci_config_read(const struct hw_pci_config *cfg, uint32_t offset, void *buf, uint32_t len);
/* Applies a write of any size at any offset, keeping read-only bits. Returns
 * HW_PCI_CFG_EV_* flags. The FLR bit never sticks. */
unsigned int hw_pci_config_write(struct hw_pci_config *cfg, uint32_t offset, const void *buf,
				 uint32_t len);
uint16_t hw_pci_config_get16(const struct hw_pci_config *cfg, uint32_t offset);
uint32_t hw_pci_config_get32(const struct hw_pci_config *cfg, uint32_t offset);
bool hw_pci_config_msix_enabled(const struct hw_pci_config *cfg);
bool hw_pci_config_msix_masked(const struct hw_pci_config *cfg);
/* COMMAND Memory Space / I/O Space / Bus Master Enable (PCI 3.0 6.2.2). */
bool hw_pci_config_mem_enabled(const struct hw_pci_config *cfg);
bool hw_pci_config_io_enabled(const struct hw_pci_config *cfg);
bool hw_pci_config_bus_master(const struct hw_pci_config *cfg);

#endif
