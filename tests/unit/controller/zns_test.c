/* tests/unit/controller/zns_test.c - Zoned Namespaces: the zone state machine on its own (every
 * transition, the open/active limits, each ZNS status, report filters) and the commands end to
 * end through the loopback transport on a zone_block bdev over a malloc bdev. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend/bdev.h"
#include "controller/core/core.h"
#include "controller/zns/zns.h"
#include "tests/unit/controller/loopback.h"
#include "tests/unit/cunit_runner.h"

#define ZT_ZSZE 16u
#define ZT_ZCAP 12u
#define ZT_ZONES 8u
#define ZT_SC(st) ((st) & 0x7ffu)

static struct ctrlr_zns *zt_new(uint32_t max_open, uint32_t max_active)
{
	struct bdev_zone_geom g = {.zone_size = ZT_ZSZE,
				   .zone_capacity = ZT_ZCAP,
				   .num_zones = ZT_ZONES,
				   .optimal_open_zones = 1,
				   .max_open_zones = max_open,
				   .max_active_zones = max_active};
	struct ctrlr_zns *zns = NULL;

	CU_ASSERT_EQUAL_FATAL(ctrlr_zns_create(&g, &zns), 0);
	return zns;
}

static uint8_t zt_state(struct ctrlr_zns *zns, uint32_t zi)
{
	return zns->zones[zi].state;
}

static uint32_t zt_gen;

/* Reserves a write (it has not ended). */
static uint16_t zt_reserve(struct ctrlr_zns *zns, uint64_t slba, uint64_t nlb)
{
	uint64_t lba = ~0ull;
	uint16_t st = ctrlr_zns_write_prep(zns, slba, nlb, false, &lba, &zt_gen);

	if (!st)
		CU_ASSERT_EQUAL(lba, slba);
	return st;
}

/* The write reserved at lba ended (ok or failed); returns whether it may complete. */
static bool zt_end(struct ctrlr_zns *zns, struct ctrlr_req *req, uint64_t lba, uint64_t nlb,
		   bool ok, struct ctrlr_req **ready)
{
	struct ctrlr_req *none;

	return ctrlr_zns_write_end(zns, req, lba, nlb, zt_gen, ok, ready ? ready : &none);
}

/* A write that was reserved and ended. */
static uint16_t zt_write(struct ctrlr_zns *zns, uint64_t slba, uint64_t nlb)
{
	struct ctrlr_req req;
	uint16_t st = zt_reserve(zns, slba, nlb);

	if (!st)
		CU_ASSERT_TRUE(zt_end(zns, &req, slba, nlb, true, NULL));
	return st;
}

/* ctrlr_zns_fail_zone, checking that it says whether the zone changed. */
static int zt_fail(struct ctrlr_zns *zns, uint64_t slba, bool offline, bool expect_changed)
{
	bool changed = !expect_changed;
	struct ctrlr_req *ready;
	int rc = ctrlr_zns_fail_zone(zns, slba, offline, &changed, &ready);

	CU_ASSERT_PTR_NULL(ready);

	CU_ASSERT_EQUAL(changed, expect_changed);
	return rc;
}

static void test_geometry(void)
{
	struct bdev_zone_geom g = {.zone_size = 12, .zone_capacity = 12, .num_zones = 2};
	struct ctrlr_zns *zns = NULL;

	CU_ASSERT_EQUAL(ctrlr_zns_create(&g, &zns), -EINVAL); /* not a power of two */
	g.zone_size = 8;
	CU_ASSERT_EQUAL(ctrlr_zns_create(&g, &zns), -EINVAL); /* ZCAP > ZSZE */
	g.zone_size = 16;
	CU_ASSERT_EQUAL(ctrlr_zns_create(&g, &zns), 0);
	CU_ASSERT_EQUAL(zns->zshift, 4);
	CU_ASSERT_EQUAL(zt_state(zns, 1), NVME_ZS_EMPTY);
	CU_ASSERT_EQUAL(zns->zones[1].wp, 16);
	ctrlr_zns_destroy(zns);
}

/* Writes: implicit open, the write pointer, capacity, Full. */
static void test_write_rules(void)
{
	struct ctrlr_zns *zns = zt_new(0, 0);
	uint64_t lba;

	CU_ASSERT_EQUAL(zt_write(zns, 0, 4), 0);
	CU_ASSERT_EQUAL(zt_state(zns, 0), NVME_ZS_IMP_OPEN);
	CU_ASSERT_EQUAL(zns->nr_open, 1);
	CU_ASSERT_EQUAL(zns->nr_active, 1);
	CU_ASSERT_EQUAL(ZT_SC(zt_write(zns, 2, 1)), NVME_SC_ZONE_INVALID_WRITE);
	CU_ASSERT_EQUAL(ZT_SC(zt_write(zns, 5, 1)), NVME_SC_ZONE_INVALID_WRITE);
	CU_ASSERT_EQUAL(ZT_SC(zt_write(zns, 4, 9)), NVME_SC_ZONE_BOUNDARY_ERROR);
	/* Append goes to the write pointer; it names the zone by its start. */
	CU_ASSERT_EQUAL(ctrlr_zns_write_prep(zns, 0, 2, true, &lba, &zt_gen), 0);
	CU_ASSERT_EQUAL(lba, 4);
	CU_ASSERT_EQUAL(ZT_SC(ctrlr_zns_write_prep(zns, 1, 2, true, &lba, &zt_gen)), NVME_SC_INVALID_FIELD);
	CU_ASSERT_EQUAL(ZT_SC(ctrlr_zns_write_prep(zns, 0, 7, true, &lba, &zt_gen)),
			NVME_SC_ZONE_BOUNDARY_ERROR);
	CU_ASSERT_EQUAL(ctrlr_zns_write_prep(zns, 0, 6, true, &lba, &zt_gen), 0);
	CU_ASSERT_EQUAL(lba, 6);
	/* At the capacity the zone is Full and gives its resources back. */
	CU_ASSERT_EQUAL(zt_state(zns, 0), NVME_ZS_FULL);
	CU_ASSERT_EQUAL(zns->nr_open, 0);
	CU_ASSERT_EQUAL(zns->nr_active, 0);
	CU_ASSERT_EQUAL(ZT_SC(zt_write(zns, 12, 1)), NVME_SC_ZONE_IS_FULL);
	CU_ASSERT_EQUAL(ZT_SC(ctrlr_zns_write_prep(zns, 0, 1, true, &lba, &zt_gen)), NVME_SC_ZONE_IS_FULL);
	/* A write into a Closed zone reopens it implicitly. */
	CU_ASSERT_EQUAL(zt_write(zns, 16, 1), 0);
	CU_ASSERT_EQUAL(ctrlr_zns_send(zns, 16, NVME_ZSA_CLOSE, false, NULL), 0);
	CU_ASSERT_EQUAL(zt_state(zns, 1), NVME_ZS_CLOSED);
	CU_ASSERT_EQUAL(zns->nr_open, 0);
	CU_ASSERT_EQUAL(zns->nr_active, 1);
	CU_ASSERT_EQUAL(zt_write(zns, 17, 1), 0);
	CU_ASSERT_EQUAL(zt_state(zns, 1), NVME_ZS_IMP_OPEN);
	/* A failed write: only the last one reserved gives its range back. */
	CU_ASSERT_EQUAL(zt_reserve(zns, 18, 1), 0);
	CU_ASSERT_EQUAL(zt_reserve(zns, 19, 2), 0);
	CU_ASSERT_TRUE(zt_end(zns, &(struct ctrlr_req){0}, 18, 1, false, NULL));
	CU_ASSERT_EQUAL(zns->zones[1].wp, 21);
	CU_ASSERT_EQUAL(zns->zones[1].wp_done, 19); /* its blocks count as written */
	CU_ASSERT_TRUE(zt_end(zns, &(struct ctrlr_req){0}, 19, 2, false, NULL));
	CU_ASSERT_EQUAL(zns->zones[1].wp, 19);
	CU_ASSERT_EQUAL(zns->zones[1].wp_done, 19);
	ctrlr_zns_destroy(zns);
}

/* Writes end in zone order: one above a running write is held, and released by it; a reset
 * releases what it holds; an end from before the reset changes nothing. */
static void test_end_order(void)
{
	struct ctrlr_zns *zns = zt_new(0, 0);
	struct ctrlr_req a = {0}, b = {0}, c = {0}, *ready;
	uint32_t gen_before;

	CU_ASSERT_EQUAL(zt_reserve(zns, 0, 2), 0);
	CU_ASSERT_EQUAL(zt_reserve(zns, 2, 2), 0);
	CU_ASSERT_EQUAL(zt_reserve(zns, 4, 3), 0);
	CU_ASSERT_FALSE(zt_end(zns, &c, 4, 3, true, &ready));
	CU_ASSERT_PTR_NULL(ready);
	CU_ASSERT_FALSE(zt_end(zns, &b, 2, 2, false, &ready)); /* a failure waits its turn too */
	CU_ASSERT_EQUAL(zns->zones[0].wp_done, 0);
	CU_ASSERT_TRUE(zt_end(zns, &a, 0, 2, true, &ready));
	CU_ASSERT_EQUAL(zns->zones[0].wp_done, 7);
	CU_ASSERT_PTR_NOT_NULL_FATAL(ready);
	CU_ASSERT_TRUE((ready == &b && b.hold.next == &c) || (ready == &c && c.hold.next == &b));
	CU_ASSERT_PTR_NULL(zns->zones[0].held);
	/* Held in a zone that is reset: released; the end of a write reserved before the reset
	 * does not move the new write pointer. */
	CU_ASSERT_EQUAL(zt_reserve(zns, 7, 1), 0);
	CU_ASSERT_EQUAL(zt_reserve(zns, 8, 1), 0);
	gen_before = zt_gen;
	CU_ASSERT_FALSE(zt_end(zns, &b, 8, 1, true, &ready));
	CU_ASSERT_EQUAL(ctrlr_zns_send(zns, 0, NVME_ZSA_RESET, false, &ready), 0);
	CU_ASSERT_PTR_EQUAL(ready, &b);
	zt_gen = gen_before;
	CU_ASSERT_TRUE(zt_end(zns, &a, 7, 1, true, &ready));
	CU_ASSERT_EQUAL(zns->zones[0].wp, 0);
	CU_ASSERT_EQUAL(zns->zones[0].wp_done, 0);
	CU_ASSERT_EQUAL(zt_state(zns, 0), NVME_ZS_EMPTY);
	ctrlr_zns_destroy(zns);
}

/* MOR / MAR: implicit close of an implicitly opened zone, Too Many Open / Active Zones. */
static void test_limits(void)
{
	struct ctrlr_zns *zns = zt_new(2, 3);
	uint64_t lba;

	CU_ASSERT_EQUAL(zt_write(zns, 16, 1), 0);
	CU_ASSERT_EQUAL(zt_write(zns, 32, 1), 0);
	CU_ASSERT_EQUAL(zns->nr_open, 2);
	/* A third write: zone 1 (implicitly opened) is closed to make room. */
	CU_ASSERT_EQUAL(zt_write(zns, 48, 1), 0);
	CU_ASSERT_EQUAL(zt_state(zns, 1), NVME_ZS_CLOSED);
	CU_ASSERT_EQUAL(zt_state(zns, 3), NVME_ZS_IMP_OPEN);
	CU_ASSERT_EQUAL(zns->nr_open, 2);
	CU_ASSERT_EQUAL(zns->nr_active, 3);
	/* Every active resource is taken: an Empty zone cannot open. */
	CU_ASSERT_EQUAL(ZT_SC(zt_write(zns, 64, 1)), NVME_SC_TOO_MANY_ACTIVE_ZONES);
	CU_ASSERT_EQUAL(ZT_SC(ctrlr_zns_send(zns, 64, NVME_ZSA_OPEN, false, NULL)),
			NVME_SC_TOO_MANY_ACTIVE_ZONES);
	CU_ASSERT_EQUAL(ZT_SC(ctrlr_zns_send(zns, 64, NVME_ZSA_FINISH, false, NULL)),
			NVME_SC_TOO_MANY_ACTIVE_ZONES);
	CU_ASSERT_EQUAL(zt_state(zns, 4), NVME_ZS_EMPTY);
	/* Explicitly opened zones are never closed by the controller. */
	CU_ASSERT_EQUAL(ctrlr_zns_send(zns, 32, NVME_ZSA_OPEN, false, NULL), 0);
	CU_ASSERT_EQUAL(ctrlr_zns_send(zns, 48, NVME_ZSA_OPEN, false, NULL), 0);
	CU_ASSERT_EQUAL(zt_state(zns, 2), NVME_ZS_EXP_OPEN);
	CU_ASSERT_EQUAL(ZT_SC(zt_write(zns, 17, 1)), NVME_SC_TOO_MANY_OPEN_ZONES);
	CU_ASSERT_EQUAL(ZT_SC(ctrlr_zns_send(zns, 16, NVME_ZSA_OPEN, false, NULL)),
			NVME_SC_TOO_MANY_OPEN_ZONES);
	CU_ASSERT_EQUAL(zt_state(zns, 1), NVME_ZS_CLOSED);
	/* Open all: the closed zones do not fit. */
	CU_ASSERT_EQUAL(ZT_SC(ctrlr_zns_send(zns, 0, NVME_ZSA_OPEN, true, NULL)),
			NVME_SC_TOO_MANY_OPEN_ZONES);
	CU_ASSERT_EQUAL(zt_state(zns, 1), NVME_ZS_CLOSED);
	/* Finishing one frees both kinds of resources. */
	CU_ASSERT_EQUAL(ctrlr_zns_send(zns, 32, NVME_ZSA_FINISH, false, NULL), 0);
	CU_ASSERT_EQUAL(zns->nr_open, 1);
	CU_ASSERT_EQUAL(zns->nr_active, 2);
	CU_ASSERT_EQUAL(ctrlr_zns_send(zns, 0, NVME_ZSA_OPEN, true, NULL), 0);
	CU_ASSERT_EQUAL(zt_state(zns, 1), NVME_ZS_EXP_OPEN);
	CU_ASSERT_EQUAL(ctrlr_zns_write_prep(zns, 64, 1, true, &lba, &zt_gen) & 0x7ff,
			NVME_SC_TOO_MANY_OPEN_ZONES);
	/* Reset all gives everything back. */
	CU_ASSERT_EQUAL(ctrlr_zns_send(zns, 0, NVME_ZSA_RESET, true, NULL), 0);
	CU_ASSERT_EQUAL(zns->nr_open, 0);
	CU_ASSERT_EQUAL(zns->nr_active, 0);
	for (uint32_t i = 0; i < ZT_ZONES; i++) {
		CU_ASSERT_EQUAL(zt_state(zns, i), NVME_ZS_EMPTY);
		CU_ASSERT_EQUAL(zns->zones[i].wp, i * ZT_ZSZE);
	}
	ctrlr_zns_destroy(zns);
}

/* Every Zone Management Send action from every state it is defined for. */
static void test_transitions(void)
{
	struct ctrlr_zns *zns = zt_new(0, 0);

	/* Close: open -> closed, closed stays, others refuse. */
	CU_ASSERT_EQUAL(ZT_SC(ctrlr_zns_send(zns, 0, NVME_ZSA_CLOSE, false, NULL)),
			NVME_SC_ZONE_INVALID_TRANSITION);
	CU_ASSERT_EQUAL(ctrlr_zns_send(zns, 0, NVME_ZSA_OPEN, false, NULL), 0);
	CU_ASSERT_EQUAL(zt_state(zns, 0), NVME_ZS_EXP_OPEN);
	CU_ASSERT_EQUAL(ctrlr_zns_send(zns, 0, NVME_ZSA_OPEN, false, NULL), 0);
	CU_ASSERT_EQUAL(ctrlr_zns_send(zns, 0, NVME_ZSA_CLOSE, false, NULL), 0);
	CU_ASSERT_EQUAL(zt_state(zns, 0), NVME_ZS_CLOSED);
	CU_ASSERT_EQUAL(ctrlr_zns_send(zns, 0, NVME_ZSA_CLOSE, false, NULL), 0);
	/* Open from implicitly opened and closed. */
	CU_ASSERT_EQUAL(zt_write(zns, 16, 1), 0);
	CU_ASSERT_EQUAL(ctrlr_zns_send(zns, 16, NVME_ZSA_OPEN, false, NULL), 0);
	CU_ASSERT_EQUAL(zt_state(zns, 1), NVME_ZS_EXP_OPEN);
	CU_ASSERT_EQUAL(ctrlr_zns_send(zns, 0, NVME_ZSA_OPEN, false, NULL), 0);
	CU_ASSERT_EQUAL(zt_state(zns, 0), NVME_ZS_EXP_OPEN);
	/* Finish: open, closed and empty become Full; Full stays. */
	CU_ASSERT_EQUAL(ctrlr_zns_send(zns, 16, NVME_ZSA_FINISH, false, NULL), 0);
	CU_ASSERT_EQUAL(zt_state(zns, 1), NVME_ZS_FULL);
	CU_ASSERT_EQUAL(ctrlr_zns_send(zns, 16, NVME_ZSA_FINISH, false, NULL), 0);
	CU_ASSERT_EQUAL(ctrlr_zns_send(zns, 32, NVME_ZSA_FINISH, false, NULL), 0);
	CU_ASSERT_EQUAL(zt_state(zns, 2), NVME_ZS_FULL);
	CU_ASSERT_EQUAL(ZT_SC(ctrlr_zns_send(zns, 32, NVME_ZSA_OPEN, false, NULL)),
			NVME_SC_ZONE_INVALID_TRANSITION);
	CU_ASSERT_EQUAL(ZT_SC(ctrlr_zns_send(zns, 32, NVME_ZSA_CLOSE, false, NULL)),
			NVME_SC_ZONE_INVALID_TRANSITION);
	/* Reset: Full and open to Empty; Empty stays. */
	CU_ASSERT_EQUAL(ctrlr_zns_send(zns, 32, NVME_ZSA_RESET, false, NULL), 0);
	CU_ASSERT_EQUAL(zt_state(zns, 2), NVME_ZS_EMPTY);
	CU_ASSERT_EQUAL(ctrlr_zns_send(zns, 32, NVME_ZSA_RESET, false, NULL), 0);
	CU_ASSERT_EQUAL(ctrlr_zns_send(zns, 0, NVME_ZSA_RESET, false, NULL), 0);
	CU_ASSERT_EQUAL(zt_state(zns, 0), NVME_ZS_EMPTY);
	/* Offline only from Read Only; Read Only and Offline refuse the rest. */
	CU_ASSERT_EQUAL(ZT_SC(ctrlr_zns_send(zns, 48, NVME_ZSA_OFFLINE, false, NULL)),
			NVME_SC_ZONE_INVALID_TRANSITION);
	CU_ASSERT_EQUAL(zt_write(zns, 48, 3), 0);
	CU_ASSERT_EQUAL(zt_fail(zns, 48, false, true), 0);
	CU_ASSERT_EQUAL(zt_fail(zns, 48, false, false), 0); /* already */
	CU_ASSERT_EQUAL(zt_state(zns, 3), NVME_ZS_READ_ONLY);
	CU_ASSERT_EQUAL(zns->nr_active, 0);
	CU_ASSERT_EQUAL(ZT_SC(zt_write(zns, 51, 1)), NVME_SC_ZONE_IS_READ_ONLY);
	CU_ASSERT_EQUAL(ctrlr_zns_read_check(zns, 48, 3), 0);
	for (uint8_t a = NVME_ZSA_CLOSE; a <= NVME_ZSA_RESET; a++)
		CU_ASSERT_EQUAL(ZT_SC(ctrlr_zns_send(zns, 48, a, false, NULL)),
				NVME_SC_ZONE_INVALID_TRANSITION);
	CU_ASSERT_EQUAL(ctrlr_zns_send(zns, 48, NVME_ZSA_OFFLINE, false, NULL), 0);
	CU_ASSERT_EQUAL(zt_state(zns, 3), NVME_ZS_OFFLINE);
	CU_ASSERT_EQUAL(ctrlr_zns_send(zns, 48, NVME_ZSA_OFFLINE, false, NULL), 0);
	CU_ASSERT_EQUAL(ZT_SC(zt_write(zns, 51, 1)), NVME_SC_ZONE_IS_OFFLINE);
	CU_ASSERT_EQUAL(ZT_SC(ctrlr_zns_read_check(zns, 48, 1)), NVME_SC_ZONE_IS_OFFLINE);
	CU_ASSERT_EQUAL(ZT_SC(ctrlr_zns_send(zns, 48, NVME_ZSA_RESET, false, NULL)),
			NVME_SC_ZONE_INVALID_TRANSITION);
	CU_ASSERT_EQUAL(zt_fail(zns, 48, false, false), -EINVAL);
	CU_ASSERT_EQUAL(zt_fail(zns, 48, true, false), 0);
	CU_ASSERT_EQUAL(zt_fail(zns, 49, true, false), -EINVAL); /* not a zone start */
	CU_ASSERT_EQUAL(zt_fail(zns, ZT_ZONES * ZT_ZSZE, true, false), -EINVAL);
	/* Bad actions, not a zone start, Set Zone Descriptor Extension without ZDES. */
	CU_ASSERT_EQUAL(ZT_SC(ctrlr_zns_send(zns, 1, NVME_ZSA_OPEN, false, NULL)), NVME_SC_INVALID_FIELD);
	CU_ASSERT_EQUAL(ZT_SC(ctrlr_zns_send(zns, 0, 0x06, false, NULL)), NVME_SC_INVALID_FIELD);
	CU_ASSERT_EQUAL(ZT_SC(ctrlr_zns_send(zns, 0, NVME_ZSA_SET_ZDE, false, NULL)),
			NVME_SC_INVALID_FIELD);
	/* Select All applies to the zones in the states the action leaves, skips the rest. */
	CU_ASSERT_EQUAL(zt_state(zns, 1), NVME_ZS_FULL);
	CU_ASSERT_EQUAL(zt_write(zns, 0, 1), 0);
	CU_ASSERT_EQUAL(ctrlr_zns_send(zns, 32, NVME_ZSA_OPEN, false, NULL), 0);
	CU_ASSERT_EQUAL(ctrlr_zns_send(zns, 0, NVME_ZSA_CLOSE, true, NULL), 0);
	CU_ASSERT_EQUAL(zt_state(zns, 0), NVME_ZS_CLOSED);
	CU_ASSERT_EQUAL(zt_state(zns, 2), NVME_ZS_CLOSED);
	CU_ASSERT_EQUAL(zt_state(zns, 1), NVME_ZS_FULL);
	CU_ASSERT_EQUAL(zt_state(zns, 5), NVME_ZS_EMPTY);
	CU_ASSERT_EQUAL(ctrlr_zns_send(zns, 0, NVME_ZSA_OPEN, true, NULL), 0);
	CU_ASSERT_EQUAL(zt_state(zns, 0), NVME_ZS_EXP_OPEN);
	CU_ASSERT_EQUAL(zt_state(zns, 2), NVME_ZS_EXP_OPEN);
	CU_ASSERT_EQUAL(zt_state(zns, 5), NVME_ZS_EMPTY);
	CU_ASSERT_EQUAL(ctrlr_zns_send(zns, 0, NVME_ZSA_FINISH, true, NULL), 0);
	CU_ASSERT_EQUAL(zt_state(zns, 0), NVME_ZS_FULL);
	CU_ASSERT_EQUAL(zt_state(zns, 2), NVME_ZS_FULL);
	CU_ASSERT_EQUAL(zt_state(zns, 5), NVME_ZS_EMPTY);
	CU_ASSERT_EQUAL(zns->nr_open, 0);
	CU_ASSERT_EQUAL(zns->nr_active, 0);
	CU_ASSERT_EQUAL(zt_fail(zns, 64, false, true), 0);
	CU_ASSERT_EQUAL(ctrlr_zns_send(zns, 0, NVME_ZSA_OFFLINE, true, NULL), 0);
	CU_ASSERT_EQUAL(zt_state(zns, 4), NVME_ZS_OFFLINE);
	CU_ASSERT_EQUAL(ctrlr_zns_send(zns, 0, NVME_ZSA_RESET, true, NULL), 0);
	CU_ASSERT_EQUAL(zt_state(zns, 0), NVME_ZS_EMPTY);
	CU_ASSERT_EQUAL(zt_state(zns, 3), NVME_ZS_OFFLINE);
	CU_ASSERT_EQUAL(zt_state(zns, 4), NVME_ZS_OFFLINE);
	ctrlr_zns_destroy(zns);
}

/* Reads: zone boundaries, zeroes past the write pointer (also of a finished zone). */
static void test_reads(void)
{
	struct ctrlr_zns *zns = zt_new(0, 0);
	uint8_t buf[20 * 512];
	struct iovec iov[2] = {{buf, 7 * 512}, {buf + 7 * 512, 13 * 512}};

	CU_ASSERT_EQUAL(ctrlr_zns_read_check(zns, 0, 16), 0);
	CU_ASSERT_EQUAL(ZT_SC(ctrlr_zns_read_check(zns, 8, 9)), NVME_SC_ZONE_BOUNDARY_ERROR);
	CU_ASSERT_EQUAL(zt_write(zns, 16, 5), 0);
	memset(buf, 0xab, sizeof(buf));
	/* Blocks 12..31: zone 0 is empty (8 blocks), zone 1 holds 5 of its 12. */
	CU_ASSERT_EQUAL(ctrlr_zns_read_fixup(zns, 12, 20, 512, iov, 2), 0);
	for (uint32_t b = 0; b < 20; b++)
		CU_ASSERT_EQUAL(buf[b * 512 + 100], (b >= 4 && b < 9) ? 0xab : 0);
	CU_ASSERT_EQUAL(ctrlr_zns_send(zns, 16, NVME_ZSA_FINISH, false, NULL), 0);
	memset(buf, 0xab, sizeof(buf));
	CU_ASSERT_EQUAL(ctrlr_zns_read_fixup(zns, 12, 20, 512, iov, 2), 0);
	CU_ASSERT_EQUAL(buf[4 * 512], 0xab);
	CU_ASSERT_EQUAL(buf[9 * 512], 0);
	ctrlr_zns_destroy(zns);
}

static uint64_t zt_report(struct ctrlr_zns *zns, uint64_t slba, uint8_t filter, bool partial,
			  struct nvme_zone_desc *d, uint64_t max)
{
	return ctrlr_zns_report(zns, slba, filter, partial, false, d, max);
}

static void test_report(void)
{
	struct ctrlr_zns *zns = zt_new(0, 0);
	struct nvme_zone_desc d[ZT_ZONES];

	CU_ASSERT_EQUAL(zt_write(zns, 0, 3), 0);				 /* 0: imp open */
	CU_ASSERT_EQUAL(ctrlr_zns_send(zns, 16, NVME_ZSA_OPEN, false, NULL), 0);	 /* 1: exp */
	CU_ASSERT_EQUAL(zt_write(zns, 32, 1), 0);				 /* 2: closed */
	CU_ASSERT_EQUAL(ctrlr_zns_send(zns, 32, NVME_ZSA_CLOSE, false, NULL), 0);
	CU_ASSERT_EQUAL(ctrlr_zns_send(zns, 48, NVME_ZSA_FINISH, false, NULL), 0); /* 3: full */
	CU_ASSERT_EQUAL(zt_fail(zns, 64, false, true), 0);		 /* 4: RO */
	CU_ASSERT_EQUAL(zt_fail(zns, 80, true, true), 0);		 /* 5: offline */
	CU_ASSERT_EQUAL(zt_report(zns, 0, NVME_ZRASF_ALL, false, d, ZT_ZONES), ZT_ZONES);
	CU_ASSERT_EQUAL(d[0].zt, NVME_ZONE_TYPE_SEQ_WRITE);
	CU_ASSERT_EQUAL(d[0].zs, NVME_ZS_IMP_OPEN << 4);
	CU_ASSERT_EQUAL(d[0].wp, 3);
	CU_ASSERT_EQUAL(d[0].zcap, ZT_ZCAP);
	CU_ASSERT_EQUAL(d[1].zs, NVME_ZS_EXP_OPEN << 4);
	CU_ASSERT_EQUAL(d[1].zslba, 16);
	CU_ASSERT_EQUAL(d[2].zs, NVME_ZS_CLOSED << 4);
	CU_ASSERT_EQUAL(d[2].wp, 33);
	CU_ASSERT_EQUAL(d[3].zs, NVME_ZS_FULL << 4);
	CU_ASSERT_EQUAL(d[3].wp, 48 + ZT_ZCAP);
	CU_ASSERT_EQUAL(d[4].zs, NVME_ZS_READ_ONLY << 4);
	CU_ASSERT_EQUAL(d[5].zs, NVME_ZS_OFFLINE << 4);
	CU_ASSERT_EQUAL(d[6].zs, NVME_ZS_EMPTY << 4);
	CU_ASSERT_EQUAL(d[7].wp, 7 * ZT_ZSZE);
	static const uint8_t filters[] = {NVME_ZRASF_EMPTY,	  NVME_ZRASF_IMP_OPEN,
					  NVME_ZRASF_EXP_OPEN,	  NVME_ZRASF_CLOSED,
					  NVME_ZRASF_FULL,	  NVME_ZRASF_READ_ONLY,
					  NVME_ZRASF_OFFLINE};
	static const uint64_t first[] = {96, 0, 16, 32, 48, 64, 80};
	for (size_t i = 0; i < sizeof(filters); i++) {
		CU_ASSERT_EQUAL(zt_report(zns, 0, filters[i], false, d, ZT_ZONES),
				filters[i] == NVME_ZRASF_EMPTY ? 2u : 1u);
		CU_ASSERT_EQUAL(d[0].zslba, first[i]);
	}
	/* From the zone holding SLBA; room for 2: NZ counts all matches unless partial. */
	CU_ASSERT_EQUAL(zt_report(zns, 37, NVME_ZRASF_ALL, false, d, 2), 6);
	CU_ASSERT_EQUAL(d[0].zslba, 32);
	CU_ASSERT_EQUAL(d[1].zslba, 48);
	CU_ASSERT_EQUAL(zt_report(zns, 37, NVME_ZRASF_ALL, true, d, 2), 2);
	CU_ASSERT_EQUAL(zt_report(zns, 0, NVME_ZRASF_EMPTY, true, d, 0), 0);
	CU_ASSERT_EQUAL(zt_report(zns, 0, NVME_ZRASF_EMPTY, false, d, 0), 2);
	ctrlr_zns_destroy(zns);
}

/* Zone descriptor extensions: Set Zone Descriptor Extension, the extended report, Reset. */
static void test_zde(void)
{
	struct bdev_zone_geom g = {.zone_size = ZT_ZSZE,
				   .zone_capacity = ZT_ZCAP,
				   .num_zones = ZT_ZONES,
				   .optimal_open_zones = 1,
				   .max_active_zones = 2,
				   .zone_desc_ext_size = 65};
	struct ctrlr_zns *zns = NULL;
	uint8_t ext[64], rep[ZT_ZONES * 128];
	struct nvme_zone_desc *d;

	CU_ASSERT_EQUAL(ctrlr_zns_create(&g, &zns), -EINVAL); /* not in 64-byte units */
	g.zone_desc_ext_size = 256 * 64;
	CU_ASSERT_EQUAL(ctrlr_zns_create(&g, &zns), -EINVAL); /* ZDES is one byte */
	g.zone_desc_ext_size = 64;
	CU_ASSERT_EQUAL_FATAL(ctrlr_zns_create(&g, &zns), 0);
	memset(ext, 0xa5, sizeof(ext));
	/* An Empty zone takes it and becomes Closed, holding an active resource. */
	CU_ASSERT_EQUAL(ctrlr_zns_set_zde(zns, 16, ext), 0);
	CU_ASSERT_EQUAL(zt_state(zns, 1), NVME_ZS_CLOSED);
	CU_ASSERT_EQUAL(zns->nr_active, 1);
	CU_ASSERT_EQUAL(zns->nr_open, 0);
	CU_ASSERT_EQUAL(ZT_SC(ctrlr_zns_set_zde(zns, 16, ext)), NVME_SC_ZONE_INVALID_TRANSITION);
	CU_ASSERT_EQUAL(ZT_SC(ctrlr_zns_set_zde(zns, 17, ext)), NVME_SC_INVALID_FIELD);
	CU_ASSERT_EQUAL(ZT_SC(ctrlr_zns_set_zde(zns, ZT_ZONES * ZT_ZSZE, ext)), NVME_SC_LBA_RANGE);
	ext[0] = 0x5a;
	CU_ASSERT_EQUAL(ctrlr_zns_set_zde(zns, 48, ext), 0);
	CU_ASSERT_EQUAL(ZT_SC(ctrlr_zns_set_zde(zns, 64, ext)), NVME_SC_TOO_MANY_ACTIVE_ZONES);
	CU_ASSERT_EQUAL(zt_state(zns, 4), NVME_ZS_EMPTY);
	/* Extended report: descriptor then 64 bytes; ZDEV set, zeroes where it is clear. */
	memset(rep, 0xee, sizeof(rep));
	CU_ASSERT_EQUAL(ctrlr_zns_report(zns, 0, NVME_ZRASF_ALL, false, true, rep, 4), ZT_ZONES);
	d = (struct nvme_zone_desc *)rep;
	CU_ASSERT_EQUAL(d->za, 0);
	CU_ASSERT_EQUAL(rep[64], 0);
	CU_ASSERT_EQUAL(rep[127], 0);
	d = (struct nvme_zone_desc *)(rep + 128);
	CU_ASSERT_EQUAL(d->zslba, 16);
	CU_ASSERT_EQUAL(d->zs, NVME_ZS_CLOSED << 4);
	CU_ASSERT_EQUAL(d->za, NVME_ZA_ZDEV);
	CU_ASSERT_EQUAL(d->wp, 16);
	CU_ASSERT_EQUAL(rep[128 + 64], 0xa5);
	CU_ASSERT_EQUAL(rep[128 + 127], 0xa5);
	CU_ASSERT_EQUAL(rep[3 * 128 + 64], 0x5a);
	CU_ASSERT_EQUAL(rep[3 * 128 + 65], 0xa5);
	CU_ASSERT_EQUAL(rep[4 * 128], 0xee); /* room for 4 only */
	/* The plain report shows ZDEV too. */
	CU_ASSERT_EQUAL(ctrlr_zns_report(zns, 16, NVME_ZRASF_CLOSED, true, false, rep, 1), 1);
	CU_ASSERT_EQUAL(((struct nvme_zone_desc *)rep)->za, NVME_ZA_ZDEV);
	/* The zone is written like any Closed zone; Reset takes the extension away. */
	CU_ASSERT_EQUAL(zt_write(zns, 16, 2), 0);
	CU_ASSERT_EQUAL(zt_state(zns, 1), NVME_ZS_IMP_OPEN);
	CU_ASSERT_EQUAL(ctrlr_zns_send(zns, 16, NVME_ZSA_RESET, false, NULL), 0);
	CU_ASSERT_EQUAL(zns->nr_active, 1);
	CU_ASSERT_EQUAL(ctrlr_zns_report(zns, 16, NVME_ZRASF_ALL, true, true, rep, 1), 1);
	CU_ASSERT_EQUAL(((struct nvme_zone_desc *)rep)->za, 0);
	CU_ASSERT_EQUAL(((struct nvme_zone_desc *)rep)->zs, NVME_ZS_EMPTY << 4);
	CU_ASSERT_EQUAL(rep[64], 0);
	/* Reset all (also Format and Sanitize) empties the Closed zone with an extension. */
	CU_ASSERT_EQUAL(ctrlr_zns_send(zns, 0, NVME_ZSA_RESET, true, NULL), 0);
	CU_ASSERT_EQUAL(zt_state(zns, 3), NVME_ZS_EMPTY);
	CU_ASSERT_EQUAL(zns->nr_active, 0);
	ctrlr_zns_destroy(zns);
	/* Without extensions the action is refused. */
	zns = zt_new(0, 0);
	CU_ASSERT_EQUAL(ZT_SC(ctrlr_zns_set_zde(zns, 0, ext)), NVME_SC_INVALID_FIELD);
	ctrlr_zns_destroy(zns);
}

/* The zone state file (layout in controller/zns/state_file.c): 8 zones, 64-byte extensions:
 * header page, live words at 4 KiB, extensions at 8 KiB, checkpoint slots at 12 and 16 KiB. */
#define ZF_LIVE 4096
#define ZF_ZDE 8192
#define ZF_SLOT0 12288
#define ZF_SLOT1 16384
#define ZF_SIZE 20480
#define ZF_BOOT_ID 48

static void zf_poke(const char *path, long off, const void *data, size_t len)
{
	FILE *f = fopen(path, "r+b");

	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fseek(f, off, SEEK_SET);
	CU_ASSERT_EQUAL(fwrite(data, 1, len, f), len);
	fclose(f);
}

static long zf_size(const char *path)
{
	struct stat st;

	return stat(path, &st) ? -1 : (long)st.st_size;
}

/* A reboot since the file was written: another boot id in its header. */
static void zf_reboot(const char *path)
{
	zf_poke(path, ZF_BOOT_ID, "00000000-0000-0000-0000-000000000000", 36);
}

/* The zone state file: made at the first start; the live words follow every change at once (a
 * killed daemon's successor finds them, same boot), open zones closed (or emptied without data);
 * after a reboot the zones come from the newest whole checkpoint (one is written at each start);
 * a file for another geometry, cut short, with a bad word or without a whole checkpoint after a
 * reboot is refused, changing nothing; a version 1 file is converted. */
static void test_state_file(void)
{
	char path[64];
	struct bdev_zone_geom g = {.zone_size = ZT_ZSZE,
				   .zone_capacity = ZT_ZCAP,
				   .num_zones = ZT_ZONES,
				   .optimal_open_zones = 1,
				   .max_active_zones = 4,
				   .zone_desc_ext_size = 64,
				   .state_file = path};
	struct ctrlr_zns *zns = NULL;
	uint8_t ext[64], rep[2 * 128], junk[64];
	struct ctrlr_req *ready;
	bool changed;
	FILE *f;

	snprintf(path, sizeof(path), "/tmp/zns_test.%d.state", (int)getpid());
	unlink(path);
	/* No file: made, every zone Empty. */
	CU_ASSERT_EQUAL_FATAL(ctrlr_zns_create(&g, &zns), 0);
	CU_ASSERT_EQUAL(zt_state(zns, 0), NVME_ZS_EMPTY);
	CU_ASSERT_EQUAL(zf_size(path), ZF_SIZE);
	/* Every kind of zone; the table is dropped without any saving (as a kill would). */
	memset(ext, 0x3c, sizeof(ext));
	CU_ASSERT_EQUAL(zt_write(zns, 0, 3), 0);				  /* 0: imp open */
	CU_ASSERT_EQUAL(ctrlr_zns_send(zns, 16, NVME_ZSA_OPEN, false, NULL), 0);  /* 1: exp, empty */
	CU_ASSERT_EQUAL(ctrlr_zns_send(zns, 32, NVME_ZSA_FINISH, false, NULL), 0); /* 2: full */
	CU_ASSERT_EQUAL(ctrlr_zns_fail_zone(zns, 48, false, &changed, &ready), 0); /* 3: RO */
	CU_ASSERT_EQUAL(ctrlr_zns_fail_zone(zns, 64, true, &changed, &ready), 0);  /* 4: offline */
	CU_ASSERT_EQUAL(ctrlr_zns_set_zde(zns, 80, ext), 0);			  /* 5: closed, ZDEV */
	CU_ASSERT_EQUAL(zt_write(zns, 96, 5), 0);				  /* 6: closed */
	CU_ASSERT_EQUAL(ctrlr_zns_send(zns, 96, NVME_ZSA_CLOSE, false, NULL), 0);
	/* A write reserved but not ended is not recorded. */
	CU_ASSERT_EQUAL(zt_reserve(zns, 3, 2), 0);
	ctrlr_zns_destroy(zns);
	CU_ASSERT_EQUAL(zf_size(path), ZF_SIZE);
	CU_ASSERT_EQUAL_FATAL(ctrlr_zns_create(&g, &zns), 0);
	CU_ASSERT_EQUAL(zt_state(zns, 0), NVME_ZS_CLOSED);
	CU_ASSERT_EQUAL(zns->zones[0].wp, 3);
	CU_ASSERT_EQUAL(zt_state(zns, 1), NVME_ZS_EMPTY);
	CU_ASSERT_EQUAL(zns->zones[1].wp, 16);
	CU_ASSERT_EQUAL(zt_state(zns, 2), NVME_ZS_FULL);
	CU_ASSERT_EQUAL(zt_state(zns, 3), NVME_ZS_READ_ONLY);
	CU_ASSERT_EQUAL(zt_state(zns, 4), NVME_ZS_OFFLINE);
	CU_ASSERT_EQUAL(zt_state(zns, 5), NVME_ZS_CLOSED);
	CU_ASSERT_EQUAL(zt_state(zns, 6), NVME_ZS_CLOSED);
	CU_ASSERT_EQUAL(zns->zones[6].wp, 101);
	CU_ASSERT_EQUAL(zt_state(zns, 7), NVME_ZS_EMPTY);
	CU_ASSERT_EQUAL(zns->nr_open, 0);
	CU_ASSERT_EQUAL(zns->nr_active, 3);
	CU_ASSERT_EQUAL(ctrlr_zns_report(zns, 80, NVME_ZRASF_ALL, true, true, rep, 2), 2);
	CU_ASSERT_EQUAL(((struct nvme_zone_desc *)rep)->za, NVME_ZA_ZDEV);
	CU_ASSERT_EQUAL(rep[64], 0x3c);
	CU_ASSERT_EQUAL(rep[127], 0x3c);
	CU_ASSERT_EQUAL(rep[128 + 64], 0);
	/* Writes go on at the recorded write pointer; this start wrote a checkpoint of wp 3. */
	CU_ASSERT_EQUAL(ZT_SC(zt_write(zns, 0, 1)), NVME_SC_ZONE_INVALID_WRITE);
	CU_ASSERT_EQUAL(zt_write(zns, 3, 1), 0);
	/* A zone reset drops its extension from the file as well. */
	CU_ASSERT_EQUAL(ctrlr_zns_send(zns, 80, NVME_ZSA_RESET, false, NULL), 0);
	ctrlr_zns_destroy(zns);
	/* After a reboot: the checkpoint (wp 3, zone 5 still with its extension), not the live
	 * words (wp 4, zone 5 empty). */
	zf_reboot(path);
	CU_ASSERT_EQUAL_FATAL(ctrlr_zns_create(&g, &zns), 0);
	CU_ASSERT_EQUAL(zns->zones[0].wp, 3);
	CU_ASSERT_EQUAL(zt_state(zns, 5), NVME_ZS_CLOSED);
	CU_ASSERT_EQUAL(ctrlr_zns_report(zns, 80, NVME_ZRASF_ALL, true, true, rep, 1), 1);
	CU_ASSERT_EQUAL(rep[64], 0); /* the extension's bytes were dropped: it reads as zeroes */
	ctrlr_zns_destroy(zns);
	/* Another geometry: refused; the file is kept as it was. */
	g.zone_capacity = ZT_ZCAP - 1;
	CU_ASSERT_EQUAL(ctrlr_zns_create(&g, &zns), -EINVAL);
	g.zone_capacity = ZT_ZCAP;
	g.zone_desc_ext_size = 0;
	CU_ASSERT_EQUAL(ctrlr_zns_create(&g, &zns), -EINVAL);
	g.zone_desc_ext_size = 64;
	CU_ASSERT_EQUAL_FATAL(ctrlr_zns_create(&g, &zns), 0);
	CU_ASSERT_EQUAL(zns->zones[0].wp, 3);
	ctrlr_zns_destroy(zns);
	/* A bad live word (state 7h), then a write pointer past the capacity. */
	f = fopen(path, "rb");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fseek(f, ZF_LIVE, SEEK_SET);
	CU_ASSERT_EQUAL(fread(junk, 1, 64, f), 64);
	fclose(f);
	zf_poke(path, ZF_LIVE + 7 * 8 + 7, "\x87", 1);
	CU_ASSERT_EQUAL(ctrlr_zns_create(&g, &zns), -EINVAL);
	zf_poke(path, ZF_LIVE, junk, 64);
	zf_poke(path, ZF_LIVE + 2 * 8, (uint8_t[]){32 + ZT_ZCAP + 1}, 1);
	CU_ASSERT_EQUAL(ctrlr_zns_create(&g, &zns), -EINVAL);
	zf_poke(path, ZF_LIVE, junk, 64);
	CU_ASSERT_EQUAL_FATAL(ctrlr_zns_create(&g, &zns), 0);
	ctrlr_zns_destroy(zns);
	/* After a reboot with both checkpoints damaged: refused. */
	zf_reboot(path);
	zf_poke(path, ZF_SLOT0 + 40, "x", 1);
	zf_poke(path, ZF_SLOT1 + 40, "x", 1);
	CU_ASSERT_EQUAL(ctrlr_zns_create(&g, &zns), -EINVAL);
	/* Cut short (a full disk). */
	CU_ASSERT_EQUAL(truncate(path, ZF_SIZE - 4096), 0);
	CU_ASSERT_EQUAL(ctrlr_zns_create(&g, &zns), -EINVAL);
	CU_ASSERT_EQUAL(truncate(path, 100), 0);
	CU_ASSERT_EQUAL(ctrlr_zns_create(&g, &zns), -EINVAL);
	/* A version 1 file: read and converted. */
	f = fopen(path, "wb");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	{
		struct {
			char magic[8];
			uint32_t version, zdes;
			uint64_t zsze, zcap;
			uint32_t n, rsvd;
		} __attribute__((packed)) h = {{'N', 'V', 'M', 'E', 'Z', 'N', 'S', '1'}, 1, 64,
					       ZT_ZSZE, ZT_ZCAP, ZT_ZONES, 0};
		uint8_t e[16];

		fwrite(&h, sizeof(h), 1, f);
		for (uint32_t i = 0; i < ZT_ZONES; i++) {
			uint64_t wp = i * ZT_ZSZE + (i == 2 ? 5 : 0);

			memset(e, 0, sizeof(e));
			memcpy(e, &wp, 8);
			e[8] = i == 2 ? NVME_ZS_CLOSED : NVME_ZS_EMPTY;
			fwrite(e, sizeof(e), 1, f);
		}
		for (uint32_t i = 0; i < ZT_ZONES * 64; i++)
			fputc(0, f);
	}
	fclose(f);
	CU_ASSERT_EQUAL_FATAL(ctrlr_zns_create(&g, &zns), 0);
	CU_ASSERT_EQUAL(zt_state(zns, 2), NVME_ZS_CLOSED);
	CU_ASSERT_EQUAL(zns->zones[2].wp, 37);
	ctrlr_zns_destroy(zns);
	CU_ASSERT_EQUAL(zf_size(path), ZF_SIZE);
	zf_reboot(path);
	CU_ASSERT_EQUAL_FATAL(ctrlr_zns_create(&g, &zns), 0);
	CU_ASSERT_EQUAL(zns->zones[2].wp, 37);
	ctrlr_zns_destroy(zns);
	unlink(path);
}

/* ---- end to end ---- */

#define ZE_ZCAP 48u /* zone size 64 */
static struct lb lb;
static uint64_t ze_buf;

static uint8_t *ze_ptr(void)
{
	return lb_ptr(&lb, ze_buf);
}

/* CC.CSS 110b: re-enables the controller right after lb_enable (no command sent yet). */
static int ze_enable_iocs(void)
{
	union nvme_cc cc = {.raw = lb_reg_read32(&lb, NVME_REG_CC)};

	lb_reg_write32(&lb, NVME_REG_CC, cc.raw & ~1u);
	lb_pump(&lb);
	if (lb_reg_read32(&lb, NVME_REG_CSTS) & 1)
		return -1;
	cc.bits.css = NVME_CC_CSS_IOCS;
	lb_reg_write32(&lb, NVME_REG_CC, cc.raw);
	lb_pump(&lb);
	return (lb_reg_read32(&lb, NVME_REG_CSTS) & 3) == 1 ? 0 : -1;
}

static int ze_init(void)
{
	struct bdev_zone_block_opts zo = {.zone_capacity = ZE_ZCAP,
					  .optimal_open_zones = 1,
					  .max_open_zones = 2,
					  .max_active_zones = 3};
	struct bdev *zb;

	if (lb_init(&lb, NULL) || bdev_malloc_create("zmem", 1000, 512, NULL, NULL) ||
	    bdev_zone_block_create("zoned0", "zmem", &zo, NULL, &zb))
		return -1;
	/* 1000 blocks: 15 zones of 64, the tail not exposed. */
	if (bdev_get_num_blocks(zb) != 960 || ctrlr_ns_add(lb.ctrlr, 1, zb, NULL) != 1 ||
	    lb_add_malloc_ns(&lb, "plain", 2, 256, 512) != 2)
		return -1;
	lb_pump(&lb);
	if (!(lb_enable(&lb, 32) & 1) || ze_enable_iocs() ||
	    lb_create_qpair(&lb, 1, 64, 1, true))
		return -1;
	ze_buf = lb_alloc(&lb, 64 * 1024);
	return 0;
}

static int ze_fini(void)
{
	lb_fini(&lb);
	return 0;
}

static uint16_t ze_rw(uint8_t opc, uint32_t nsid, uint64_t slba, uint32_t nlb, uint64_t *res)
{
	struct nvme_sqe sqe = lb_sqe(opc, nsid);
	struct nvme_cqe cqe;

	sqe.dptr.prp.prp1 = ze_buf; /* one page: at most 8 blocks */
	sqe.cdw10 = (uint32_t)slba;
	sqe.cdw11 = (uint32_t)(slba >> 32);
	sqe.cdw12 = nlb - 1;
	if (lb_submit(&lb, 1, &sqe) == LB_NO_CQE)
		return 0xffff;
	lb_ring_sq(&lb, 1, lb.h.q[1].sq_tail);
	lb_pump(&lb);
	if (!lb_reap(&lb, 1, &cqe, false))
		return 0xffff;
	if (res)
		*res = (uint64_t)cqe.dw0 | (uint64_t)cqe.dw1 << 32;
	return ZT_SC(cqe.status >> 1);
}

static uint16_t ze_send(uint64_t slba, uint8_t zsa, bool all)
{
	struct nvme_sqe sqe = lb_sqe(NVME_CMD_ZONE_MGMT_SEND, 1);

	sqe.cdw10 = (uint32_t)slba;
	sqe.cdw11 = (uint32_t)(slba >> 32);
	sqe.cdw13 = zsa | (all ? NVME_ZMS_SELECT_ALL : 0);
	return ZT_SC(lb_cmd(&lb, 1, &sqe, NULL));
}

static uint16_t ze_recv(uint64_t slba, uint32_t bytes, uint8_t zra, uint8_t filter, bool partial)
{
	struct nvme_sqe sqe = lb_sqe(NVME_CMD_ZONE_MGMT_RECV, 1);

	memset(ze_ptr(), 0xee, bytes);
	sqe.dptr.prp.prp1 = ze_buf;
	sqe.cdw10 = (uint32_t)slba;
	sqe.cdw12 = bytes / 4 - 1;
	sqe.cdw13 = zra | (uint32_t)filter << 8 | (partial ? NVME_ZMR_PARTIAL : 0);
	return ZT_SC(lb_cmd(&lb, 1, &sqe, NULL));
}

static uint16_t ze_admin(uint8_t opc, uint32_t nsid, uint32_t cdw10, uint32_t cdw11,
			 uint32_t cdw14, uint32_t *cdw0)
{
	struct nvme_sqe sqe = lb_sqe(opc, nsid);

	memset(ze_ptr(), 0xee, 4096);
	sqe.dptr.prp.prp1 = ze_buf;
	sqe.cdw10 = cdw10;
	sqe.cdw11 = cdw11;
	sqe.cdw14 = cdw14;
	return ZT_SC(lb_cmd(&lb, 0, &sqe, cdw0));
}

static void test_e2e_identify(void)
{
	struct nvme_id_ns_zns *idz = (void *)ze_ptr();
	uint32_t cdw0 = 0;
	union nvme_cap cap = {.raw = lb_reg_read64(&lb, NVME_REG_CAP)};

	CU_ASSERT_EQUAL(cap.bits.css, NVME_CAP_CSS_NVM | NVME_CAP_CSS_IOCS);
	CU_ASSERT_EQUAL(ze_admin(NVME_ADM_IDENTIFY, 1, NVME_CNS_CS_NS, NVME_CSI_ZNS << 24, 0, NULL),
			0);
	CU_ASSERT_EQUAL(idz->lbafe[0].zsze, 64);
	CU_ASSERT_EQUAL(idz->mor, 1);
	CU_ASSERT_EQUAL(idz->mar, 2);
	CU_ASSERT_EQUAL(idz->zoc, 0);
	CU_ASSERT_EQUAL(idz->ozcs, 0);
	/* Namespace 2 is not zoned. */
	CU_ASSERT_EQUAL(ze_admin(NVME_ADM_IDENTIFY, 2, NVME_CNS_CS_NS, NVME_CSI_ZNS << 24, 0, NULL),
			NVME_SC_INVALID_FIELD);
	CU_ASSERT_EQUAL(
	    ze_admin(NVME_ADM_IDENTIFY, 0, NVME_CNS_CS_CTRL, NVME_CSI_ZNS << 24, 0, NULL), 0);
	CU_ASSERT_EQUAL(ze_ptr()[0], 0); /* ZASL: MDTS */
	CU_ASSERT_EQUAL(ze_admin(NVME_ADM_IDENTIFY, 0, NVME_CNS_IOCS, 0, 0, NULL), 0);
	uint64_t vec;
	memcpy(&vec, ze_ptr(), 8);
	CU_ASSERT_EQUAL(vec, NVME_IOCS_VECTOR_NVM | NVME_IOCS_VECTOR_ZNS);
	CU_ASSERT_EQUAL(ze_ptr()[8], 0);
	/* The CSI descriptor of each namespace. */
	CU_ASSERT_EQUAL(ze_admin(NVME_ADM_IDENTIFY, 1, NVME_CNS_NS_DESC_LIST, 0, 0, NULL), 0);
	CU_ASSERT_EQUAL(ze_ptr()[4 + 8 + 4 + 16 + 4 + 16], NVME_NIDT_CSI);
	CU_ASSERT_EQUAL(ze_ptr()[4 + 8 + 4 + 16 + 4 + 16 + 4], NVME_CSI_ZNS);
	CU_ASSERT_EQUAL(ze_admin(NVME_ADM_IDENTIFY, 2, NVME_CNS_NS_DESC_LIST, 0, 0, NULL), 0);
	CU_ASSERT_EQUAL(ze_ptr()[4 + 8 + 4 + 16 + 4 + 16 + 4], NVME_CSI_NVM);
	/* Active namespace lists per command set. */
	uint32_t *list = (void *)ze_ptr();
	CU_ASSERT_EQUAL(
	    ze_admin(NVME_ADM_IDENTIFY, 0, NVME_CNS_CS_ACTIVE_NS_LIST, NVME_CSI_ZNS << 24, 0, NULL),
	    0);
	CU_ASSERT_EQUAL(list[0], 1);
	CU_ASSERT_EQUAL(list[1], 0);
	CU_ASSERT_EQUAL(ze_admin(NVME_ADM_IDENTIFY, 0, NVME_CNS_CS_ACTIVE_NS_LIST, 0, 0, NULL), 0);
	CU_ASSERT_EQUAL(list[0], 2);
	CU_ASSERT_EQUAL(list[1], 0);
	/* Commands Supported and Effects per CSI: Zone Append only in the ZNS one. */
	struct nvme_effects_log *e = (void *)ze_ptr();
	CU_ASSERT_EQUAL(ze_admin(NVME_ADM_GET_LOG_PAGE, 0, NVME_LOG_CMD_EFFECTS | (1023u << 16), 0,
				 (uint32_t)NVME_CSI_ZNS << 24, NULL),
			0);
	CU_ASSERT_TRUE(e->iocs[NVME_CMD_ZONE_APPEND] & NVME_CMD_EFFECTS_CSUPP);
	CU_ASSERT_TRUE(e->iocs[NVME_CMD_ZONE_MGMT_SEND] & NVME_CMD_EFFECTS_CSUPP);
	CU_ASSERT_TRUE(e->iocs[NVME_CMD_ZONE_MGMT_RECV] & NVME_CMD_EFFECTS_CSUPP);
	CU_ASSERT_TRUE(e->iocs[NVME_CMD_WRITE] & NVME_CMD_EFFECTS_CSUPP);
	CU_ASSERT_EQUAL(ze_admin(NVME_ADM_GET_LOG_PAGE, 0, NVME_LOG_CMD_EFFECTS | (1023u << 16), 0,
				 0, NULL),
			0);
	CU_ASSERT_EQUAL(e->iocs[NVME_CMD_ZONE_APPEND], 0);
	CU_ASSERT_EQUAL(ze_admin(NVME_ADM_GET_LOG_PAGE, 0, NVME_LOG_CMD_EFFECTS | (1023u << 16), 0,
				 1u << 24, NULL),
			NVME_SC_INVALID_FIELD);
	/* I/O Command Set Profile: index 0 only. */
	CU_ASSERT_EQUAL(ze_admin(NVME_ADM_GET_FEATURES, 0, NVME_FEAT_IOCS_PROFILE, 0, 0, &cdw0), 0);
	CU_ASSERT_EQUAL(cdw0, 0);
	CU_ASSERT_EQUAL(ze_admin(NVME_ADM_SET_FEATURES, 0, NVME_FEAT_IOCS_PROFILE, 0, 0, NULL), 0);
	CU_ASSERT_EQUAL(ze_admin(NVME_ADM_SET_FEATURES, 0, NVME_FEAT_IOCS_PROFILE, 1, 0, NULL),
			NVME_SC_IOCS_COMBINATION_REJECTED);
}

static void test_e2e_io(void)
{
	struct nvme_zone_report_hdr *h = (void *)ze_ptr();
	struct nvme_zone_desc *d = (void *)(ze_ptr() + 64);
	uint64_t lba = 0;

	/* Writes at the write pointer, then appends; the append's LBA comes in DW0/DW1. */
	memset(ze_ptr(), 0x5a, 4096);
	CU_ASSERT_EQUAL(ze_rw(NVME_CMD_WRITE, 1, 64, 4, NULL), 0);
	CU_ASSERT_EQUAL(ze_rw(NVME_CMD_WRITE, 1, 64, 4, NULL), NVME_SC_ZONE_INVALID_WRITE);
	memset(ze_ptr(), 0x6b, 4096);
	CU_ASSERT_EQUAL(ze_rw(NVME_CMD_ZONE_APPEND, 1, 64, 2, &lba), 0);
	CU_ASSERT_EQUAL(lba, 68);
	CU_ASSERT_EQUAL(ze_rw(NVME_CMD_ZONE_APPEND, 1, 65, 2, &lba), NVME_SC_INVALID_FIELD);
	CU_ASSERT_EQUAL(ze_rw(NVME_CMD_WRITE_ZEROES, 1, 70, 1, NULL), 0);
	memset(ze_ptr() + 4096, 0x7c, 4096);
	for (uint64_t at = 71; at < 111; at += 8) { /* one page of data each */
		struct nvme_sqe sqe = lb_sqe(NVME_CMD_WRITE, 1);

		sqe.dptr.prp.prp1 = ze_buf + 4096;
		sqe.cdw10 = (uint32_t)at;
		sqe.cdw12 = 7;
		CU_ASSERT_EQUAL(lb_cmd(&lb, 1, &sqe, NULL), 0);
	}
	CU_ASSERT_EQUAL(ze_rw(NVME_CMD_ZONE_APPEND, 1, 64, 2, &lba), NVME_SC_ZONE_BOUNDARY_ERROR);
	CU_ASSERT_EQUAL(ze_rw(NVME_CMD_ZONE_APPEND, 1, 64, 1, &lba), 0);
	CU_ASSERT_EQUAL(lba, 111);
	CU_ASSERT_EQUAL(ze_rw(NVME_CMD_ZONE_APPEND, 1, 64, 1, &lba), NVME_SC_ZONE_IS_FULL);
	/* Reads: written data, zeroes past the write pointer, no crossing of zones. */
	memset(ze_ptr(), 0xff, 8 * 512);
	CU_ASSERT_EQUAL(ze_rw(NVME_CMD_READ, 1, 64, 8, NULL), 0);
	CU_ASSERT_EQUAL(ze_ptr()[0], 0x5a);
	CU_ASSERT_EQUAL(ze_ptr()[4 * 512], 0x6b);
	CU_ASSERT_EQUAL(ze_ptr()[6 * 512], 0);
	CU_ASSERT_EQUAL(ze_ptr()[7 * 512], 0x7c);
	CU_ASSERT_EQUAL(ze_rw(NVME_CMD_READ, 1, 60, 8, NULL), NVME_SC_ZONE_BOUNDARY_ERROR);
	/* Data written before a reset reads as zeroes after it (the bdev still holds it). */
	CU_ASSERT_EQUAL(ze_send(64, NVME_ZSA_RESET, false), 0);
	memset(ze_ptr(), 0xff, 512);
	CU_ASSERT_EQUAL(ze_rw(NVME_CMD_READ, 1, 64, 1, NULL), 0);
	CU_ASSERT_EQUAL(ze_ptr()[0], 0);
	CU_ASSERT_EQUAL(ze_rw(NVME_CMD_VERIFY, 1, 64, 8, NULL), 0);
	/* Open/close/finish and the limits through the commands. */
	CU_ASSERT_EQUAL(ze_send(0, NVME_ZSA_OPEN, false), 0);
	CU_ASSERT_EQUAL(ze_send(128, NVME_ZSA_OPEN, false), 0);
	CU_ASSERT_EQUAL(ze_send(192, NVME_ZSA_OPEN, false), NVME_SC_TOO_MANY_OPEN_ZONES);
	CU_ASSERT_EQUAL(ze_send(128, NVME_ZSA_CLOSE, false), 0);
	CU_ASSERT_EQUAL(ze_send(192, NVME_ZSA_OPEN, false), 0);
	CU_ASSERT_EQUAL(ze_send(256, NVME_ZSA_OPEN, false), NVME_SC_TOO_MANY_ACTIVE_ZONES);
	CU_ASSERT_EQUAL(ze_rw(NVME_CMD_WRITE, 1, 256, 1, NULL), NVME_SC_TOO_MANY_ACTIVE_ZONES);
	CU_ASSERT_EQUAL(ze_send(192, NVME_ZSA_FINISH, false), 0);
	CU_ASSERT_EQUAL(ze_rw(NVME_CMD_WRITE, 1, 192, 1, NULL), NVME_SC_ZONE_IS_FULL);
	CU_ASSERT_EQUAL(ze_send(1, NVME_ZSA_CLOSE, false), NVME_SC_INVALID_FIELD);
	CU_ASSERT_EQUAL(ze_send(960, NVME_ZSA_CLOSE, false), NVME_SC_LBA_RANGE);
	/* Report Zones through the command. */
	CU_ASSERT_EQUAL(ze_recv(0, 4096, NVME_ZRA_REPORT, NVME_ZRASF_ALL, false), 0);
	CU_ASSERT_EQUAL(h->nr_zones, 15);
	CU_ASSERT_EQUAL(d[0].zs, NVME_ZS_EXP_OPEN << 4);
	CU_ASSERT_EQUAL(d[1].zs, NVME_ZS_EMPTY << 4);
	CU_ASSERT_EQUAL(d[2].zs, NVME_ZS_CLOSED << 4);
	CU_ASSERT_EQUAL(d[3].zs, NVME_ZS_FULL << 4);
	CU_ASSERT_EQUAL(d[3].zcap, ZE_ZCAP);
	CU_ASSERT_EQUAL(d[14].zslba, 14 * 64);
	CU_ASSERT_EQUAL(d[15].zt, 0); /* past the last zone: zeroes */
	CU_ASSERT_EQUAL(ze_recv(130, 192, NVME_ZRA_REPORT, NVME_ZRASF_EMPTY, true), 0);
	CU_ASSERT_EQUAL(h->nr_zones, 2);
	CU_ASSERT_EQUAL(d[0].zslba, 256);
	CU_ASSERT_EQUAL(d[1].zslba, 320);
	CU_ASSERT_EQUAL(ze_recv(130, 192, NVME_ZRA_REPORT, NVME_ZRASF_EMPTY, false), 0);
	CU_ASSERT_EQUAL(h->nr_zones, 11);
	CU_ASSERT_EQUAL(ze_recv(0, 4096, NVME_ZRA_EXT_REPORT, 0, false), NVME_SC_INVALID_FIELD);
	CU_ASSERT_EQUAL(ze_recv(0, 4096, NVME_ZRA_REPORT, 9, false), NVME_SC_INVALID_FIELD);
	CU_ASSERT_EQUAL(ze_recv(960, 4096, NVME_ZRA_REPORT, 0, false), NVME_SC_LBA_RANGE);
	/* Reset all, and ZNS commands on the NVM namespace. */
	CU_ASSERT_EQUAL(ze_send(0, NVME_ZSA_RESET, true), 0);
	CU_ASSERT_EQUAL(ze_recv(0, 4096, NVME_ZRA_REPORT, NVME_ZRASF_EMPTY, false), 0);
	CU_ASSERT_EQUAL(h->nr_zones, 15);
	CU_ASSERT_EQUAL(ze_rw(NVME_CMD_ZONE_APPEND, 2, 0, 1, NULL), NVME_SC_INVALID_OPCODE);
	CU_ASSERT_EQUAL(ze_rw(NVME_CMD_WRITE, 2, 5, 1, NULL), 0);
	/* A zoned namespace has format 0 only; Format NVM empties its zones. */
	struct nvme_id_ns *idn = (void *)ze_ptr();
	CU_ASSERT_EQUAL(ze_admin(NVME_ADM_IDENTIFY, 1, NVME_CNS_NS, 0, 0, NULL), 0);
	CU_ASSERT_EQUAL(idn->nlbaf, 0);
	CU_ASSERT_EQUAL(idn->nsze, 960);
	CU_ASSERT_EQUAL(ze_rw(NVME_CMD_WRITE, 1, 128, 2, NULL), 0);
	CU_ASSERT_EQUAL(ze_admin(NVME_ADM_FORMAT_NVM, 1, 1, 0, 0, NULL), NVME_SC_INVALID_FORMAT);
	CU_ASSERT_EQUAL(ze_admin(NVME_ADM_FORMAT_NVM, 1, 0, 0, 0, NULL), 0);
	CU_ASSERT_EQUAL(ze_recv(0, 4096, NVME_ZRA_REPORT, NVME_ZRASF_EMPTY, false), 0);
	CU_ASSERT_EQUAL(h->nr_zones, 15);
	CU_ASSERT_EQUAL(ze_rw(NVME_CMD_WRITE, 1, 128, 2, NULL), 0);
	/* So does a sanitize (block erase), run in the background. */
	CU_ASSERT_EQUAL(ze_admin(NVME_ADM_SANITIZE, 0, NVME_SANACT_BLOCK_ERASE, 0, 0, NULL), 0);
	lb_pump(&lb);
	CU_ASSERT_EQUAL(ze_recv(0, 4096, NVME_ZRA_REPORT, NVME_ZRASF_EMPTY, false), 0);
	CU_ASSERT_EQUAL(h->nr_zones, 15);
	CU_ASSERT_EQUAL(ze_rw(NVME_CMD_WRITE, 1, 128, 2, NULL), 0);
}

static uint16_t ze_aer_submit(void)
{
	struct nvme_sqe sqe = lb_sqe(NVME_ADM_ASYNC_EVENT, 0);

	return lb_submit(&lb, 0, &sqe);
}

/* Get Log Page BFh (CSI 2h) of namespace nsid, 4096 bytes. */
static uint16_t ze_changed_log(uint32_t nsid, bool rae, uint8_t csi)
{
	return ze_admin(NVME_ADM_GET_LOG_PAGE, nsid,
			NVME_LOG_ZNS_CHANGED_ZONES | (rae ? 1u << 15 : 0) | (1023u << 16), 0,
			(uint32_t)csi << 24, NULL);
}

/* Read Only and Offline zones made by the operator (ctrlr_zone_set_state, the RPC's call): the
 * zone statuses, Report Zones, the Changed Zone List and the Zone Descriptor Changed notice. */
static void test_e2e_changed_zones(void)
{
	struct nvme_zns_changed_zone_log *log = (void *)ze_ptr();
	struct nvme_zone_report_hdr *h = (void *)ze_ptr();
	struct nvme_zone_desc *d = (void *)(ze_ptr() + 64);
	const uint32_t zdc = NVME_AER_DW0(NVME_AER_TYPE_NOTICE, NVME_AER_NOTICE_ZONE_CHANGED,
					  NVME_LOG_ZNS_CHANGED_ZONES);
	struct nvme_cqe cqe;
	uint32_t cdw0 = 0;
	uint16_t cid;
	uint64_t wp;
	uint8_t zs;

	/* Advertised (OAES bit 27), enabled through AEC bit 27, listed for CSI 2h only. */
	CU_ASSERT_EQUAL(ze_admin(NVME_ADM_IDENTIFY, 0, NVME_CNS_CTRL, 0, 0, NULL), 0);
	CU_ASSERT_TRUE(((struct nvme_id_ctrl *)ze_ptr())->oaes & (1u << 27));
	CU_ASSERT_EQUAL(ze_admin(NVME_ADM_SET_FEATURES, 0, NVME_FEAT_ASYNC_EVENT, 1u << 27, 0, NULL),
			0);
	CU_ASSERT_EQUAL(ze_admin(NVME_ADM_GET_FEATURES, 0, NVME_FEAT_ASYNC_EVENT, 0, 0, &cdw0), 0);
	CU_ASSERT_EQUAL(cdw0, 1u << 27);
	CU_ASSERT_EQUAL(ze_admin(NVME_ADM_GET_LOG_PAGE, 0, NVME_LOG_SUPPORTED | (255u << 16), 0,
				 (uint32_t)NVME_CSI_ZNS << 24, NULL),
			0);
	CU_ASSERT_EQUAL(((uint32_t *)ze_ptr())[0xbf], NVME_LOG_SUPPORTED_LSUPP);
	CU_ASSERT_EQUAL(ze_admin(NVME_ADM_GET_LOG_PAGE, 0, NVME_LOG_SUPPORTED | (255u << 16), 0, 0,
				 NULL),
			0);
	CU_ASSERT_EQUAL(((uint32_t *)ze_ptr())[0xbf], 0);
	/* Nothing changed yet: an empty list. */
	CU_ASSERT_EQUAL(ze_changed_log(1, false, NVME_CSI_ZNS), 0);
	CU_ASSERT_EQUAL(log->nrzid, 0);
	CU_ASSERT_EQUAL(log->zid[0], 0);

	/* Zone 2 goes Read Only: the notice (type 2h, information EFh, log BFh). */
	CU_ASSERT_EQUAL(ze_rw(NVME_CMD_WRITE, 1, 130, 2, NULL), 0);
	cid = ze_aer_submit();
	CU_ASSERT_FALSE(lb_reap(&lb, 0, &cqe, false));
	CU_ASSERT_EQUAL(ctrlr_zone_set_state(lb.ctrlr, 1, 128, false), 0);
	lb_pump(&lb);
	CU_ASSERT_TRUE_FATAL(lb_reap(&lb, 0, &cqe, false));
	CU_ASSERT_EQUAL(cqe.cid, cid);
	CU_ASSERT_EQUAL(cqe.dw0, zdc);
	CU_ASSERT_EQUAL(cqe.dw0, 0x00bfef02u);
	/* Writes fail with Zone Is Read Only, reads still work; Report Zones shows ZSRO. */
	CU_ASSERT_EQUAL(ze_rw(NVME_CMD_WRITE, 1, 132, 1, NULL), NVME_SC_ZONE_IS_READ_ONLY);
	CU_ASSERT_EQUAL(ze_rw(NVME_CMD_ZONE_APPEND, 1, 128, 1, NULL), NVME_SC_ZONE_IS_READ_ONLY);
	CU_ASSERT_EQUAL(ze_rw(NVME_CMD_READ, 1, 128, 4, NULL), 0);
	CU_ASSERT_EQUAL(ze_send(128, NVME_ZSA_RESET, false), NVME_SC_ZONE_INVALID_TRANSITION);
	CU_ASSERT_EQUAL(ze_recv(0, 4096, NVME_ZRA_REPORT, NVME_ZRASF_READ_ONLY, false), 0);
	CU_ASSERT_EQUAL(h->nr_zones, 1);
	CU_ASSERT_EQUAL(d[0].zslba, 128);
	CU_ASSERT_EQUAL(d[0].zs, NVME_ZS_READ_ONLY << 4);
	CU_ASSERT_EQUAL(ctrlr_zone_get(lb.ctrlr, 1, 128, &zs, &wp), 0);
	CU_ASSERT_EQUAL(zs, NVME_ZS_READ_ONLY);
	CU_ASSERT_EQUAL(wp, ~0ull);

	/* Masked until the log is read: two more changes (zone 2 again, now Offline, listed once;
	 * zone 3 Read Only) post nothing. Setting a zone to its state again changes nothing. */
	cid = ze_aer_submit();
	CU_ASSERT_EQUAL(ctrlr_zone_set_state(lb.ctrlr, 1, 128, true), 0);
	CU_ASSERT_EQUAL(ctrlr_zone_set_state(lb.ctrlr, 1, 192, false), 0);
	CU_ASSERT_EQUAL(ctrlr_zone_set_state(lb.ctrlr, 1, 192, false), 0);
	lb_pump(&lb);
	CU_ASSERT_FALSE(lb_reap(&lb, 0, &cqe, false));
	CU_ASSERT_EQUAL(ze_rw(NVME_CMD_READ, 1, 128, 1, NULL), NVME_SC_ZONE_IS_OFFLINE);
	CU_ASSERT_EQUAL(ze_rw(NVME_CMD_WRITE, 1, 132, 1, NULL), NVME_SC_ZONE_IS_OFFLINE);
	/* RAE set: the list stays, so does the mask. */
	CU_ASSERT_EQUAL(ze_changed_log(1, true, NVME_CSI_ZNS), 0);
	CU_ASSERT_EQUAL(log->nrzid, 2);
	CU_ASSERT_EQUAL(log->zid[0], 128);
	CU_ASSERT_EQUAL(log->zid[1], 192);
	CU_ASSERT_EQUAL(log->zid[2], 0);
	CU_ASSERT_FALSE(lb_reap(&lb, 0, &cqe, false));
	/* RAE cleared: read once more, then empty; nothing else pending, so no notice. */
	CU_ASSERT_EQUAL(ze_changed_log(1, false, NVME_CSI_ZNS), 0);
	CU_ASSERT_EQUAL(log->nrzid, 2);
	CU_ASSERT_FALSE(lb_reap(&lb, 0, &cqe, false));
	CU_ASSERT_EQUAL(ze_changed_log(1, false, NVME_CSI_ZNS), 0);
	CU_ASSERT_EQUAL(log->nrzid, 0);
	/* Unmasked: the next change reports at once. */
	CU_ASSERT_EQUAL(ctrlr_zone_set_state(lb.ctrlr, 1, 256, true), 0);
	lb_pump(&lb);
	CU_ASSERT_TRUE_FATAL(lb_reap(&lb, 0, &cqe, false));
	CU_ASSERT_EQUAL(cqe.cid, cid);
	CU_ASSERT_EQUAL(cqe.dw0, zdc);
	/* Notices off (AEC bit 27 clear): the list is kept, no notice posts. */
	cid = ze_aer_submit();
	CU_ASSERT_EQUAL(ze_admin(NVME_ADM_SET_FEATURES, 0, NVME_FEAT_ASYNC_EVENT, 0, 0, NULL), 0);
	CU_ASSERT_EQUAL(ze_changed_log(1, false, NVME_CSI_ZNS), 0);
	CU_ASSERT_EQUAL(log->nrzid, 1);
	CU_ASSERT_EQUAL(log->zid[0], 256);
	CU_ASSERT_EQUAL(ctrlr_zone_set_state(lb.ctrlr, 1, 320, false), 0);
	lb_pump(&lb);
	CU_ASSERT_FALSE(lb_reap(&lb, 0, &cqe, false));
	CU_ASSERT_EQUAL(ze_changed_log(1, false, NVME_CSI_ZNS), 0);
	CU_ASSERT_EQUAL(log->nrzid, 1);
	CU_ASSERT_EQUAL(log->zid[0], 320);
	/* Report Zones: two offline, two read only. */
	CU_ASSERT_EQUAL(ze_recv(0, 4096, NVME_ZRA_REPORT, NVME_ZRASF_OFFLINE, false), 0);
	CU_ASSERT_EQUAL(h->nr_zones, 2);
	CU_ASSERT_EQUAL(ze_recv(0, 4096, NVME_ZRA_REPORT, NVME_ZRASF_READ_ONLY, false), 0);
	CU_ASSERT_EQUAL(h->nr_zones, 2);

	/* The log's fields: the ZNS CSI, a zoned namespace. */
	CU_ASSERT_EQUAL(ze_changed_log(1, false, NVME_CSI_NVM), NVME_SC_INVALID_LOG_PAGE);
	CU_ASSERT_EQUAL(ze_changed_log(2, false, NVME_CSI_ZNS), NVME_SC_INVALID_FIELD);
	CU_ASSERT_EQUAL(ze_changed_log(9, false, NVME_CSI_ZNS), NVME_SC_INVALID_NS);
	CU_ASSERT_EQUAL(ze_changed_log(0, false, NVME_CSI_ZNS), NVME_SC_INVALID_NS);
	CU_ASSERT_EQUAL(ze_changed_log(NVME_NSID_ALL, false, NVME_CSI_ZNS), NVME_SC_INVALID_NS);
	/* The operator's call: namespace, zoned, zone start, no way back from Offline. */
	CU_ASSERT_EQUAL(ctrlr_zone_set_state(lb.ctrlr, 9, 0, true), -ENOENT);
	CU_ASSERT_EQUAL(ctrlr_zone_set_state(lb.ctrlr, 2, 0, true), -ENOTSUP);
	CU_ASSERT_EQUAL(ctrlr_zone_set_state(lb.ctrlr, 1, 65, true), -EINVAL);
	CU_ASSERT_EQUAL(ctrlr_zone_set_state(lb.ctrlr, 1, 960, true), -EINVAL);
	CU_ASSERT_EQUAL(ctrlr_zone_set_state(lb.ctrlr, 1, 128, false), -EINVAL);
	CU_ASSERT_EQUAL(ctrlr_zone_get(lb.ctrlr, 1, 128, &zs, &wp), 0);
	CU_ASSERT_EQUAL(zs, NVME_ZS_OFFLINE);
	CU_ASSERT_EQUAL(ctrlr_zone_get(lb.ctrlr, 1, 0, &zs, &wp), 0);
	CU_ASSERT_EQUAL(zs, NVME_ZS_EMPTY);
	CU_ASSERT_EQUAL(wp, 0);

	/* Two zoned namespaces: one notice; reading one list (RAE 0) brings a new notice for the
	 * other one, reading that brings none. */
	struct bdev_zone_block_opts zo = {.zone_capacity = 32, .optimal_open_zones = 1};
	struct bdev *zb;
	CU_ASSERT_EQUAL_FATAL(bdev_malloc_create("zmem3", 256, 512, NULL, NULL), 0);
	CU_ASSERT_EQUAL_FATAL(bdev_zone_block_create("zoned3", "zmem3", &zo, NULL, &zb), 0);
	CU_ASSERT_EQUAL_FATAL(ctrlr_ns_add(lb.ctrlr, 3, zb, NULL), 3);
	lb_pump(&lb);
	CU_ASSERT_EQUAL(ze_admin(NVME_ADM_SET_FEATURES, 0, NVME_FEAT_ASYNC_EVENT, 1u << 27, 0, NULL),
			0);
	CU_ASSERT_EQUAL(ctrlr_zone_set_state(lb.ctrlr, 1, 384, false), 0);
	CU_ASSERT_EQUAL(ctrlr_zone_set_state(lb.ctrlr, 3, 32, false), 0);
	lb_pump(&lb);
	CU_ASSERT_TRUE_FATAL(lb_reap(&lb, 0, &cqe, false));
	CU_ASSERT_EQUAL(cqe.cid, cid);
	CU_ASSERT_EQUAL(cqe.dw0, zdc);
	cid = ze_aer_submit();
	CU_ASSERT_FALSE(lb_reap(&lb, 0, &cqe, false));
	CU_ASSERT_EQUAL(ze_changed_log(1, false, NVME_CSI_ZNS), 0);
	CU_ASSERT_EQUAL(log->nrzid, 1);
	CU_ASSERT_EQUAL(log->zid[0], 384);
	CU_ASSERT_TRUE_FATAL(lb_reap(&lb, 0, &cqe, false));
	CU_ASSERT_EQUAL(cqe.cid, cid);
	CU_ASSERT_EQUAL(cqe.dw0, zdc);
	cid = ze_aer_submit();
	CU_ASSERT_EQUAL(ze_changed_log(3, false, NVME_CSI_ZNS), 0);
	CU_ASSERT_EQUAL(log->nrzid, 1);
	CU_ASSERT_EQUAL(log->zid[0], 32);
	lb_pump(&lb);
	CU_ASSERT_FALSE(lb_reap(&lb, 0, &cqe, false));
	CU_ASSERT_EQUAL(ctrlr_ns_remove(lb.ctrlr, 3), 0);
	lb_pump(&lb);

	/* More than 511 changed zones: Number of Zone Identifiers FFFFh, an empty list; the read
	 * (RAE 0) starts a new list. Namespace 5: 600 zones of one block. */
	zo.zone_capacity = 1;
	CU_ASSERT_EQUAL_FATAL(bdev_malloc_create("zmem5", 600, 512, NULL, NULL), 0);
	CU_ASSERT_EQUAL_FATAL(bdev_zone_block_create("zoned5", "zmem5", &zo, NULL, &zb), 0);
	CU_ASSERT_EQUAL_FATAL(ctrlr_ns_add(lb.ctrlr, 5, zb, NULL), 5);
	lb_pump(&lb);
	for (uint64_t z = 0; z < 511; z++)
		CU_ASSERT_EQUAL(ctrlr_zone_set_state(lb.ctrlr, 5, z, false), 0);
	lb_pump(&lb);
	CU_ASSERT_TRUE_FATAL(lb_reap(&lb, 0, &cqe, false));
	CU_ASSERT_EQUAL(cqe.cid, cid);
	CU_ASSERT_EQUAL(ze_changed_log(5, true, NVME_CSI_ZNS), 0);
	CU_ASSERT_EQUAL(log->nrzid, 511);
	CU_ASSERT_EQUAL(log->zid[510], 510);
	CU_ASSERT_EQUAL(ctrlr_zone_set_state(lb.ctrlr, 5, 511, false), 0);
	CU_ASSERT_EQUAL(ze_changed_log(5, false, NVME_CSI_ZNS), 0);
	CU_ASSERT_EQUAL(log->nrzid, NVME_ZNS_CHANGED_OVERFLOW);
	CU_ASSERT_EQUAL(log->zid[0], 0);
	CU_ASSERT_EQUAL(log->zid[510], 0);
	CU_ASSERT_EQUAL(ctrlr_zone_set_state(lb.ctrlr, 5, 599, true), 0);
	CU_ASSERT_EQUAL(ze_changed_log(5, false, NVME_CSI_ZNS), 0);
	CU_ASSERT_EQUAL(log->nrzid, 1);
	CU_ASSERT_EQUAL(log->zid[0], 599);
	CU_ASSERT_EQUAL(ctrlr_ns_remove(lb.ctrlr, 5), 0);
	lb_pump(&lb);
	/* The outstanding AER ends with the controller (lb_fini). */
}

/* Zone descriptor extensions through the commands, on namespace 4 (128 bytes per zone). */
static void test_e2e_zde(void)
{
	struct bdev_zone_block_opts zo = {.zone_capacity = 32, .optimal_open_zones = 1,
					  .zone_desc_ext_size = 128};
	struct nvme_id_ns_zns *idz = (void *)ze_ptr();
	struct nvme_zone_report_hdr *h = (void *)ze_ptr();
	struct nvme_zone_desc *d;
	struct nvme_sqe sqe;
	struct bdev *zb;

	zo.zone_desc_ext_size = 100;
	CU_ASSERT_EQUAL_FATAL(bdev_malloc_create("zmem4", 256, 512, NULL, NULL), 0);
	CU_ASSERT_EQUAL(bdev_zone_block_create("zoned4", "zmem4", &zo, NULL, &zb), -EINVAL);
	zo.zone_desc_ext_size = 128;
	CU_ASSERT_EQUAL_FATAL(bdev_zone_block_create("zoned4", "zmem4", &zo, NULL, &zb), 0);
	CU_ASSERT_EQUAL_FATAL(ctrlr_ns_add(lb.ctrlr, 4, zb, NULL), 4);
	lb_pump(&lb);
	/* ZDES in the LBA format extension: 2 x 64 bytes. */
	CU_ASSERT_EQUAL(ze_admin(NVME_ADM_IDENTIFY, 4, NVME_CNS_CS_NS, NVME_CSI_ZNS << 24, 0, NULL),
			0);
	CU_ASSERT_EQUAL(idz->lbafe[0].zsze, 32);
	CU_ASSERT_EQUAL(idz->lbafe[0].zdes, 2);
	CU_ASSERT_EQUAL(ze_admin(NVME_ADM_IDENTIFY, 1, NVME_CNS_CS_NS, NVME_CSI_ZNS << 24, 0, NULL),
			0);
	CU_ASSERT_EQUAL(idz->lbafe[0].zdes, 0);
	/* Set Zone Descriptor Extension on zone 1 (LBA 32): the data comes from the host. */
	for (int i = 0; i < 128; i++)
		ze_ptr()[i] = (uint8_t)(i + 1);
	sqe = lb_sqe(NVME_CMD_ZONE_MGMT_SEND, 4);
	sqe.dptr.prp.prp1 = ze_buf;
	sqe.cdw10 = 32;
	sqe.cdw13 = NVME_ZSA_SET_ZDE;
	CU_ASSERT_EQUAL(ZT_SC(lb_cmd(&lb, 1, &sqe, NULL)), 0);
	CU_ASSERT_EQUAL(ZT_SC(lb_cmd(&lb, 1, &sqe, NULL)), NVME_SC_ZONE_INVALID_TRANSITION);
	sqe.cdw13 = NVME_ZSA_SET_ZDE | NVME_ZMS_SELECT_ALL;
	CU_ASSERT_EQUAL(ZT_SC(lb_cmd(&lb, 1, &sqe, NULL)), NVME_SC_INVALID_FIELD);
	sqe.cdw10 = 33;
	sqe.cdw13 = NVME_ZSA_SET_ZDE;
	CU_ASSERT_EQUAL(ZT_SC(lb_cmd(&lb, 1, &sqe, NULL)), NVME_SC_INVALID_FIELD);
	sqe.dptr.prp.prp1 = 0x7fff0000000ull; /* not guest memory */
	sqe.cdw10 = 64;
	CU_ASSERT_EQUAL(ZT_SC(lb_cmd(&lb, 1, &sqe, NULL)), NVME_SC_DATA_XFER_ERROR);
	/* Namespace 1 has no extensions: the action and the extended report are refused. */
	CU_ASSERT_EQUAL(ze_send(0, NVME_ZSA_SET_ZDE, false), NVME_SC_INVALID_FIELD);
	CU_ASSERT_EQUAL(ze_recv(0, 4096, NVME_ZRA_EXT_REPORT, 0, false), NVME_SC_INVALID_FIELD);
	/* Extended Report Zones: 64-byte descriptors each followed by 128 bytes. */
	sqe = lb_sqe(NVME_CMD_ZONE_MGMT_RECV, 4);
	memset(ze_ptr(), 0xee, 4096);
	sqe.dptr.prp.prp1 = ze_buf;
	sqe.cdw12 = 4096 / 4 - 1;
	sqe.cdw13 = NVME_ZRA_EXT_REPORT;
	CU_ASSERT_EQUAL(ZT_SC(lb_cmd(&lb, 1, &sqe, NULL)), 0);
	CU_ASSERT_EQUAL(h->nr_zones, 8);
	d = (void *)(ze_ptr() + 64 + 192);
	CU_ASSERT_EQUAL(d->zslba, 32);
	CU_ASSERT_EQUAL(d->zs, NVME_ZS_CLOSED << 4);
	CU_ASSERT_EQUAL(d->za, NVME_ZA_ZDEV);
	CU_ASSERT_EQUAL(ze_ptr()[64 + 192 + 64], 1);
	CU_ASSERT_EQUAL(ze_ptr()[64 + 192 + 64 + 127], 128);
	CU_ASSERT_EQUAL(ze_ptr()[64 + 64], 0); /* zone 0: no extension, zeroes */
	d = (void *)(ze_ptr() + 64 + 2 * 192);
	CU_ASSERT_EQUAL(d->zslba, 64);
	CU_ASSERT_EQUAL(d->za, 0);
	/* Partial, with room for one: the closed zone only. */
	memset(ze_ptr(), 0xee, 4096);
	sqe.cdw12 = (64 + 192) / 4 - 1;
	sqe.cdw13 = NVME_ZRA_EXT_REPORT | (uint32_t)NVME_ZRASF_CLOSED << 8 | NVME_ZMR_PARTIAL;
	CU_ASSERT_EQUAL(ZT_SC(lb_cmd(&lb, 1, &sqe, NULL)), 0);
	CU_ASSERT_EQUAL(h->nr_zones, 1);
	CU_ASSERT_EQUAL(((struct nvme_zone_desc *)(ze_ptr() + 64))->zslba, 32);
	CU_ASSERT_EQUAL(ze_ptr()[64 + 64 + 5], 6);
	CU_ASSERT_EQUAL(ze_ptr()[64 + 192], 0xee);
	/* Reset: Empty, no extension. */
	sqe = lb_sqe(NVME_CMD_ZONE_MGMT_SEND, 4);
	sqe.cdw10 = 32;
	sqe.cdw13 = NVME_ZSA_RESET;
	CU_ASSERT_EQUAL(ZT_SC(lb_cmd(&lb, 1, &sqe, NULL)), 0);
	sqe = lb_sqe(NVME_CMD_ZONE_MGMT_RECV, 4);
	sqe.dptr.prp.prp1 = ze_buf;
	sqe.cdw10 = 32;
	sqe.cdw12 = (64 + 192) / 4 - 1;
	sqe.cdw13 = NVME_ZRA_EXT_REPORT;
	CU_ASSERT_EQUAL(ZT_SC(lb_cmd(&lb, 1, &sqe, NULL)), 0);
	CU_ASSERT_EQUAL(((struct nvme_zone_desc *)(ze_ptr() + 64))->za, 0);
	CU_ASSERT_EQUAL(((struct nvme_zone_desc *)(ze_ptr() + 64))->zs, NVME_ZS_EMPTY << 4);
	CU_ASSERT_EQUAL(ze_ptr()[64 + 64], 0);
	CU_ASSERT_EQUAL(ctrlr_ns_remove(lb.ctrlr, 4), 0);
	lb_pump(&lb);
}

CUNIT_SUITE(zns_state, NULL, NULL, {"geometry", test_geometry}, {"end_order", test_end_order},
	    {"write_rules", test_write_rules}, {"limits", test_limits},
	    {"transitions", test_transitions}, {"reads", test_reads}, {"report", test_report},
	    {"zde", test_zde}, {"state_file", test_state_file})
CUNIT_SUITE(zns_cmds, ze_init, ze_fini, {"identify", test_e2e_identify}, {"io", test_e2e_io},
	    {"changed_zones", test_e2e_changed_zones}, {"zde", test_e2e_zde})
