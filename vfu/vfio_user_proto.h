/* vfu/vfio_user_proto.h - vfio-user wire format (QEMU docs/interop/vfio-user.rst),
 * shared by the server in vfu/ and the test client in host/. All
 * integers little endian; layouts written from the specification. */
#ifndef NVME_EMU_VFU_VFIO_USER_PROTO_H
#define NVME_EMU_VFU_VFIO_USER_PROTO_H

#include <assert.h>
#include <stdint.h>

enum vfio_user_command {
	VFIO_USER_VERSION = 1,
	VFIO_USER_DMA_MAP = 2,
	VFIO_USER_DMA_UNMAP = 3,
	VFIO_USER_DEVICE_GET_INFO = 4,
	VFIO_USER_DEVICE_GET_REGION_INFO = 5,
	VFIO_USER_DEVICE_GET_REGION_IO_FDS = 6,
	VFIO_USER_DEVICE_GET_IRQ_INFO = 7,
	VFIO_USER_DEVICE_SET_IRQS = 8,
	VFIO_USER_REGION_READ = 9,
	VFIO_USER_REGION_WRITE = 10,
	VFIO_USER_DMA_READ = 11,
	VFIO_USER_DMA_WRITE = 12,
	VFIO_USER_DEVICE_RESET = 13,
	VFIO_USER_DIRTY_PAGES = 14,
	VFIO_USER_REGION_WRITE_MULTI = 15,
	VFIO_USER_DEVICE_FEATURE = 16,
	VFIO_USER_MIG_DATA_READ = 17,
	VFIO_USER_MIG_DATA_WRITE = 18,
	VFIO_USER_MAX_COMMAND,
};

#define VFIO_USER_F_TYPE_MASK    0xfu
#define VFIO_USER_F_TYPE_COMMAND 0x0u
#define VFIO_USER_F_TYPE_REPLY   0x1u
#define VFIO_USER_F_NO_REPLY     0x10u
#define VFIO_USER_F_ERROR        0x20u

struct vfio_user_header {
	uint16_t msg_id;
	uint16_t command;
	uint32_t msg_size; /* whole message, header included */
	uint32_t flags;
	uint32_t error_no; /* positive errno in error replies */
} __attribute__((packed));
static_assert(sizeof(struct vfio_user_header) == 16, "vfio-user header");

struct vfio_user_version {
	uint16_t major, minor;
	/* NUL-terminated JSON follows */
} __attribute__((packed));

/* DMA_MAP / DMA_UNMAP */
#define VFIO_USER_DMA_READ_PROT  0x1u
#define VFIO_USER_DMA_WRITE_PROT 0x2u
#define VFIO_USER_DMA_UNMAP_ALL  0x2u
struct vfio_user_dma_map {
	uint32_t argsz, flags;
	uint64_t offset, addr, size;
} __attribute__((packed));
static_assert(sizeof(struct vfio_user_dma_map) == 32, "dma_map");
struct vfio_user_dma_unmap {
	uint32_t argsz, flags;
	uint64_t addr, size;
} __attribute__((packed));
static_assert(sizeof(struct vfio_user_dma_unmap) == 24, "dma_unmap");

/* DEVICE_GET_INFO */
#define VFIO_DEVICE_FLAGS_RESET 0x1u
#define VFIO_DEVICE_FLAGS_PCI   0x2u
struct vfio_user_device_info {
	uint32_t argsz, flags, num_regions, num_irqs;
} __attribute__((packed));
static_assert(sizeof(struct vfio_user_device_info) == 16, "device_info");

/* DEVICE_GET_REGION_INFO */
enum vfio_pci_region_index {
	VFIO_PCI_BAR0_REGION_INDEX = 0,
	VFIO_PCI_BAR5_REGION_INDEX = 5,
	VFIO_PCI_ROM_REGION_INDEX = 6,
	VFIO_PCI_CONFIG_REGION_INDEX = 7,
	VFIO_PCI_VGA_REGION_INDEX = 8,
	VFIO_PCI_NUM_REGIONS = 9,
};
#define VFIO_REGION_INFO_FLAG_READ  0x1u
#define VFIO_REGION_INFO_FLAG_WRITE 0x2u
#define VFIO_REGION_INFO_FLAG_MMAP  0x4u
#define VFIO_REGION_INFO_FLAG_CAPS  0x8u
struct vfio_user_region_info {
	uint32_t argsz, flags, index, cap_offset;
	uint64_t size, offset;
} __attribute__((packed));
static_assert(sizeof(struct vfio_user_region_info) == 32, "region_info");

#define VFIO_REGION_INFO_CAP_SPARSE_MMAP 1
struct vfio_user_cap_header {
	uint16_t id, version;
	uint32_t next;
} __attribute__((packed));
struct vfio_user_sparse_mmap_area {
	uint64_t offset, size;
} __attribute__((packed));
struct vfio_user_region_info_cap_sparse_mmap {
	struct vfio_user_cap_header header;
	uint32_t nr_areas, reserved;
	/* nr_areas x struct vfio_user_sparse_mmap_area follow */
} __attribute__((packed));
static_assert(sizeof(struct vfio_user_region_info_cap_sparse_mmap) == 16, "sparse cap");

/* DEVICE_GET_IRQ_INFO / DEVICE_SET_IRQS */
enum vfio_pci_irq_index {
	VFIO_PCI_INTX_IRQ_INDEX = 0,
	VFIO_PCI_MSI_IRQ_INDEX = 1,
	VFIO_PCI_MSIX_IRQ_INDEX = 2,
	VFIO_PCI_ERR_IRQ_INDEX = 3,
	VFIO_PCI_REQ_IRQ_INDEX = 4,
	VFIO_PCI_NUM_IRQS = 5,
};
#define VFIO_IRQ_INFO_EVENTFD    0x1u
#define VFIO_IRQ_INFO_MASKABLE   0x2u
#define VFIO_IRQ_INFO_AUTOMASKED 0x4u
#define VFIO_IRQ_INFO_NORESIZE   0x8u
struct vfio_user_irq_info {
	uint32_t argsz, flags, index, count;
} __attribute__((packed));
static_assert(sizeof(struct vfio_user_irq_info) == 16, "irq_info");

#define VFIO_IRQ_SET_DATA_NONE      0x01u
#define VFIO_IRQ_SET_DATA_BOOL      0x02u
#define VFIO_IRQ_SET_DATA_EVENTFD   0x04u
#define VFIO_IRQ_SET_ACTION_MASK    0x08u
#define VFIO_IRQ_SET_ACTION_UNMASK  0x10u
#define VFIO_IRQ_SET_ACTION_TRIGGER 0x20u
#define VFIO_IRQ_SET_DATA_TYPE_MASK   0x07u
#define VFIO_IRQ_SET_ACTION_TYPE_MASK 0x38u
struct vfio_user_irq_set {
	uint32_t argsz, flags, index, start, count;
	/* DATA_BOOL: count bytes follow; DATA_EVENTFD: fds as SCM_RIGHTS */
} __attribute__((packed));
static_assert(sizeof(struct vfio_user_irq_set) == 20, "irq_set");

/* REGION_READ / REGION_WRITE */
struct vfio_user_region_access {
	uint64_t offset;
	uint32_t region, count;
	/* data follows (write request, read reply) */
} __attribute__((packed));
static_assert(sizeof(struct vfio_user_region_access) == 16, "region_access");

/* REGION_WRITE_MULTI (spec "VFIO_USER_REGION_WRITE_MULTI"): u64 wr_cnt, then
 * wr_cnt entries, each one REGION_WRITE of count (1..8) bytes. The reply, when
 * one is asked for, is u64 wr_cnt: the writes done. */
#define VFIO_USER_WRITE_MULTI_DATA 8u
struct vfio_user_write_multi_entry {
	uint64_t offset;
	uint32_t region, count;
	uint8_t data[VFIO_USER_WRITE_MULTI_DATA];
} __attribute__((packed));
static_assert(sizeof(struct vfio_user_write_multi_entry) == 24, "write_multi entry");

/* DMA_READ / DMA_WRITE (server -> client), spec layout: u64 addr, u64 count */
struct vfio_user_dma_rw {
	uint64_t addr, count;
	/* data follows (write request, read reply) */
} __attribute__((packed));
static_assert(sizeof(struct vfio_user_dma_rw) == 16, "dma_rw");

/* What this server advertises. */
#define VFU_MAX_MSG_FDS        16
#define VFU_MAX_DATA_XFER_SIZE (1u << 20)
#define VFU_PGSIZE             4096u
#define VFU_MAX_DMA_MAPS       65535u
/* Most writes one REGION_WRITE_MULTI may carry (QEMU sends at most 200). */
#define VFU_WRITE_MULTI_MAX 1024u
/* Largest message the server accepts: header + fixed part + data. */
#define VFU_MAX_MSG_SIZE (16u + 16u + VFU_MAX_DATA_XFER_SIZE)

#endif
