/* controller/nvm/pi.h - end-to-end data protection (NVM Command Set 1.0 section 5.2, 1.1 for the
 * Qualified Protection Information Format): the CRC-16 T10-DIF, CRC-32C and CRC-64 NVMe guards,
 * and generating and checking one logical block's protection information tuple (16b, 32b and 64b
 * Guard formats, Types 1-3, with or without a storage tag). Pure functions: any thread. */
#ifndef NVME_EMU_CONTROLLER_PI_H
#define NVME_EMU_CONTROLLER_PI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Protection Information Format (ELBAF bits 8:7; with 11b, Qualified Type, the format is the
 * Qualified Protection Information Format of bits 12:9). */
#define CTRLR_PIF_16 0
#define CTRLR_PIF_32 1
#define CTRLR_PIF_64 2
#define CTRLR_PIF_QUALIFIED 3
/* Storage Tag Check: CDW12 bit 24 of Read, Write, Compare, Verify, Write Zeroes (Copy: STCW,
 * for the destination); Copy's STCR (the sources) is bit 25. Ignored on formats without a
 * storage tag. */
#define CTRLR_STC (1u << 24)
#define CTRLR_COPY_STCR (1u << 25)
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
	uint8_t sts;	  /* storage tag bits (ELBAF STS): the top bits of the tags field */
	bool stc;	  /* the storage tag is checked (STC, with sts > 0) */
	uint64_t lbst;	  /* the storage tag written / expected (every block of a command) */
};

/* A tags field: the storage tag (sts bits) above the reference tag, 32 bits wide with the 16b
 * Guard, 48 with the 64b, 80 with the 32b. */
typedef unsigned __int128 ctrlr_pi_tags;

/* Size of the tuple: 8 bytes (16b Guard) or 16 (32b, 64b Guard). */
size_t ctrlr_pi_tuple_size(uint8_t pif);
/* Offset of the tuple in the metadata. */
size_t ctrlr_pi_tuple_off(const struct ctrlr_pi *pi);
/* Bits of the tags field of the format: 32, 80 or 48. */
unsigned int ctrlr_pi_tags_bits(uint8_t pif);
/* Mask of the reference tag bits: the field's bits below the storage tag (at most 64). */
uint64_t ctrlr_pi_ref_mask(const struct ctrlr_pi *pi);
/* The tags field of an I/O command (NVM Command Set 1.0 Figure 6x, "Expected/Initial Logical Block
 * Tags"): CDW14 (16b Guard); CDW3 bits 15:0 above CDW14 (64b); CDW2 bits 15:0, CDW3, CDW14 (32b). */
ctrlr_pi_tags ctrlr_pi_cmd_tags(uint8_t pif, uint32_t cdw2, uint32_t cdw3, uint32_t cdw14);
/* Takes the storage tag of a tags field into pi->lbst and returns its reference tag. */
uint64_t ctrlr_pi_split_tags(struct ctrlr_pi *pi, ctrlr_pi_tags tags);
/* The reference tag expected for the block after one with `ref` (Types 1/2 increment, wrapping
 * in the tag's width; Type 3 keeps it). */
uint64_t ctrlr_pi_ref_next(const struct ctrlr_pi *pi, uint64_t ref);
/* Writes the tuple of one block into md (ms bytes): the guard over data (and the metadata
 * before the tuple when it is last), the command's application tag, its storage tag and
 * reference tag `ref`. */
void ctrlr_pi_generate(const struct ctrlr_pi *pi, const uint8_t *data, uint8_t *md, uint64_t ref);
/* Checks one block's tuple against the command (section 5.2.1.2): nothing when the block's
 * application tag is FFFFh (Types 1/2) or it, the storage tag and the reference tag are all ones
 * (Type 3); otherwise the checks in prchk, and the storage tag when stc with prchk's reference
 * tag bit (the tags field's check). Type 3 has no reference tag check (its storage tag is).
 * Returns 0 or the NVMe status: End-to-end Guard (282h), Application Tag (283h), Reference Tag
 * (284h) or Storage Tag (288h) Check Error. */
uint16_t ctrlr_pi_check(const struct ctrlr_pi *pi, const uint8_t *data, const uint8_t *md,
			uint64_t ref);
/* Inverts the tuple in md (ms bytes) in place. Blocks are stored with the tuple inverted, so that
 * blocks the bdev zeroed read back as all-ones tuples, the escape that disables checking (as
 * DLFEAT 001b promises for deallocated blocks): applied before storing and after loading. */
void ctrlr_pi_flip(const struct ctrlr_pi *pi, uint8_t *md);
/* Type 1 with the reference tag check: the initial reference tag (ilbrt, the reference tag part
 * of the tags field) must be the low bits of the SLBA (section 5.2.1.2), else Invalid Protection
 * Information (181h). 0 otherwise. */
uint16_t ctrlr_pi_check_ilbrt(const struct ctrlr_pi *pi, uint64_t slba, uint64_t ilbrt);

#endif
