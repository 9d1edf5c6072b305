/* common/crc32c.h - CRC-32C (Castagnoli, reflected polynomial 82F63B78h), the checksum of the
 * namespace pool's header and of the vendor LBA checksum command. Pure: any thread. */
#ifndef NVME_EMU_COMMON_CRC32C_H
#define NVME_EMU_COMMON_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* The CRC-32C of buf, continuing from crc (0 to start): initial and final XOR all ones, as
 * iSCSI and NVMe define it. */
uint32_t crc32c(uint32_t crc, const void *buf, size_t len);

#endif
