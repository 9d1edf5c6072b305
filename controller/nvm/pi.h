/* controller/nvm/pi.h - end-to-end data protection (NVM Command Set 1.0 section 5.2): the CRC-16
 * T10-DIF and CRC-64 NVMe guards, and generating and checking one logical block's protection
 * information tuple (16b and 64b Guard formats, Types 1-3). Pure functions: any thread. */
#ifndef NVME_EMU_CONTROLLER_PI_H
#define NVME_EMU_CONTROLLER_PI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Protection Information Format (ELBAF bits 8:7). 32b Guard (01b) is not offered. */
#define CTRLR_PIF_16 0
#define CTRLR_PIF_64 2
/* PRINFO (CDW12 bits 29:26 of Read, Write, Compare, Verify, Write Zeroes). */
#define CTRLR_PRINFO(cdw12) (((cdw12) >> 26) & 0xf)
#define CTRLR_PRINFO_PRACT 0x8
#define CTRLR_PRCHK_GUARD 0x4
#define CTRLR_PRCHK_APP 0x2
#define CTRLR_PRCHK_REF 0x1

/* CRC-16 T10-DIF: polynomial 8BB7h, initial 0, not reflected, no final XOR. Pass the previous
 * result as crc (0 to start) to continue over more bytes. */
uint16_t ctrlr_crc16_t10dif(uint16_t crc, const void *buf, size_t len);
/* CRC-64 NVMe: polynomial AD93D23594C93659h reflected, initial and final XOR all ones. Pass the
 * previous result (0 to start) to continue over more bytes. */
uint64_t ctrlr_crc64_nvme(uint64_t crc, const void *buf, size_t len);

/* How a namespace's blocks are protected, and what one command asks for. */
struct ctrlr_pi {
	uint8_t type;	  /* 1, 2 or 3 (DPS bits 2:0) */
	uint8_t pif;	  /* CTRLR_PIF_16 or CTRLR_PIF_64 */
	bool first;	  /* the tuple is the first bytes of the metadata (DPS bit 3), else last */
	uint32_t ds;	  /* data bytes per block */
	uint16_t ms;	  /* metadata bytes per block (at least the tuple's size) */
	uint8_t prchk;	  /* CTRLR_PRCHK_* of the command */
	uint16_t apptag;  /* LBAT: the application tag written / expected */
	uint16_t appmask; /* LBATM: the bits of the application tag checked */
};

/* Size of the tuple: 8 bytes (16b Guard) or 16 (64b Guard). */
size_t ctrlr_pi_tuple_size(uint8_t pif);
/* Offset of the tuple in the metadata. */
size_t ctrlr_pi_tuple_off(const struct ctrlr_pi *pi);
/* Mask of the reference tag bits: 32 (16b Guard) or 48 (64b Guard, no storage tag). */
uint64_t ctrlr_pi_ref_mask(uint8_t pif);
/* The reference tag expected for the block after one with `ref` (Types 1/2 increment, wrapping
 * in the tag's width; Type 3 keeps it). */
uint64_t ctrlr_pi_ref_next(const struct ctrlr_pi *pi, uint64_t ref);
/* Writes the tuple of one block into md (ms bytes): the guard over data (and the metadata
 * before the tuple when it is last), the command's application tag, reference tag `ref`. */
void ctrlr_pi_generate(const struct ctrlr_pi *pi, const uint8_t *data, uint8_t *md, uint64_t ref);
/* Checks one block's tuple against the command (section 5.2.1.2): nothing when the block's
 * application tag is FFFFh (Types 1/2) or it and the reference tag are all ones (Type 3);
 * otherwise the checks in prchk. Type 3 has no reference tag check. Returns 0 or the NVMe
 * status: End-to-end Guard (282h), Application Tag (283h) or Reference Tag (284h) Check Error. */
uint16_t ctrlr_pi_check(const struct ctrlr_pi *pi, const uint8_t *data, const uint8_t *md,
			uint64_t ref);
/* Inverts the tuple in md (ms bytes) in place. Blocks are stored with the tuple inverted, so that
 * blocks the bdev zeroed read back as all-ones tuples, the escape that disables checking (as
 * DLFEAT 001b promises for deallocated blocks): applied before storing and after loading. */
void ctrlr_pi_flip(const struct ctrlr_pi *pi, uint8_t *md);
/* Type 1 with the reference tag check: ILBRT must be the low bits of the SLBA (section 5.2.1.2),
 * else Invalid Protection Information (181h). 0 otherwise. */
uint16_t ctrlr_pi_check_ilbrt(const struct ctrlr_pi *pi, uint64_t slba, uint64_t ilbrt);

#endif
