/* tests/unit/controller/io_resv_test.c - the reservation state machine on its own (every type x
 * holder / registrant / non-registrant x read / write, register, acquire, preempt, release,
 * clear, notifications) and the Persist Through Power Loss state file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "controller/nvm/nvm.h"
#include "common/file_replace.h"
#include "tests/unit/cunit_runner.h"

static const uint8_t HA[16] = {0xa1, 1}, HB[16] = {0xb2, 2}, HC[16] = {0xc3, 3};
static struct ctrlr_resv_events ev;
static bool persist;

static uint16_t rs_reg(struct ctrlr_resv *r, const uint8_t *h, uint32_t act, uint64_t crkey,
		       uint64_t nrkey, uint32_t extra)
{
	struct ctrlr_resv_keys k = {crkey, nrkey};

	return ctrlr_resv_register(r, h, act | extra, &k, &ev, &persist);
}

static uint16_t rs_acq(struct ctrlr_resv *r, const uint8_t *h, uint32_t act, uint8_t rtype,
		       uint64_t crkey, uint64_t prkey)
{
	struct ctrlr_resv_keys k = {crkey, prkey};

	return ctrlr_resv_acquire(r, h, act | (uint32_t)rtype << 8, &k, &ev, &persist);
}

static uint16_t rs_rel(struct ctrlr_resv *r, const uint8_t *h, uint32_t act, uint8_t rtype,
		       uint64_t crkey)
{
	struct ctrlr_resv_keys k = {crkey, 0};

	return ctrlr_resv_release(r, h, act | (uint32_t)rtype << 8, &k, &ev, &persist);
}

static bool rs_has_event(const uint8_t *h, uint8_t type)
{
	for (uint32_t i = 0; i < ev.n; i++)
		if (!memcmp(ev.e[i].hostid, h, 16) && ev.e[i].type == type)
			return true;
	return false;
}

/* A holds a reservation of `type`, B is a registrant, C is not registered. */
static void rs_setup(struct ctrlr_resv *r, uint8_t type)
{
	ctrlr_resv_init(r, false);
	CU_ASSERT_EQUAL(rs_reg(r, HA, NVME_RREGA_REGISTER, 0, 0xa, 0), 0);
	CU_ASSERT_EQUAL(rs_reg(r, HB, NVME_RREGA_REGISTER, 0, 0xb, 0), 0);
	CU_ASSERT_EQUAL(rs_acq(r, HA, NVME_RACQA_ACQUIRE, type, 0xa, 0), 0);
}

/* Figure "Command Behavior in the Presence of a Reservation" (Base 2.0 section 8.19). */
static void test_conflict_table(void)
{
	const uint32_t W = CTRLR_RESV_BLOCK_WRITE, RW = CTRLR_RESV_BLOCK_READ | W;
	static const struct {
		uint8_t type;
		uint32_t holder, registrant, other;
	} t[] = {
	    {NVME_RESV_WRITE_EXCLUSIVE, 0, CTRLR_RESV_BLOCK_WRITE, CTRLR_RESV_BLOCK_WRITE},
	    {NVME_RESV_EXCLUSIVE_ACCESS, 0, CTRLR_RESV_BLOCK_READ | CTRLR_RESV_BLOCK_WRITE,
	     CTRLR_RESV_BLOCK_READ | CTRLR_RESV_BLOCK_WRITE},
	    {NVME_RESV_WE_REG_ONLY, 0, 0, CTRLR_RESV_BLOCK_WRITE},
	    {NVME_RESV_EA_REG_ONLY, 0, 0, CTRLR_RESV_BLOCK_READ | CTRLR_RESV_BLOCK_WRITE},
	    {NVME_RESV_WE_ALL_REGS, 0, 0, CTRLR_RESV_BLOCK_WRITE},
	    {NVME_RESV_EA_ALL_REGS, 0, 0, CTRLR_RESV_BLOCK_READ | CTRLR_RESV_BLOCK_WRITE},
	};
	struct ctrlr_resv r;

	(void)RW;
	for (size_t i = 0; i < CTRLR_ARRAY_SIZE(t); i++) {
		rs_setup(&r, t[i].type);
		CU_ASSERT_EQUAL(r.rtype, t[i].type);
		CU_ASSERT_EQUAL(ctrlr_resv_access(&r, HA), t[i].holder);
		CU_ASSERT_EQUAL(ctrlr_resv_access(&r, HB), t[i].registrant);
		CU_ASSERT_EQUAL(ctrlr_resv_access(&r, HC), t[i].other);
		/* All Registrants: every registrant holds it. */
		CU_ASSERT_EQUAL(ctrlr_resv_is_holder(&r, HB), t[i].type >= NVME_RESV_WE_ALL_REGS);
		CU_ASSERT_FALSE(ctrlr_resv_is_holder(&r, HC));
	}
	/* No reservation: nobody is blocked, registered or not. */
	ctrlr_resv_init(&r, false);
	CU_ASSERT_EQUAL(ctrlr_resv_access(&r, HC), 0);
	CU_ASSERT_EQUAL(W, CTRLR_RESV_BLOCK_WRITE);
}

static void test_register(void)
{
	struct ctrlr_resv r;

	ctrlr_resv_init(&r, false);
	CU_ASSERT_EQUAL(rs_reg(&r, HA, NVME_RREGA_REGISTER, 0, 0, 0), NVME_SC_INVALID_FIELD);
	CU_ASSERT_EQUAL(rs_reg(&r, HA, NVME_RREGA_REGISTER, 0, 5, 0), 0);
	CU_ASSERT_TRUE(persist);
	CU_ASSERT_EQUAL(r.gen, 1);
	/* Again with the same key: success; with another: conflict. */
	CU_ASSERT_EQUAL(rs_reg(&r, HA, NVME_RREGA_REGISTER, 0, 5, 0), 0);
	CU_ASSERT_EQUAL(rs_reg(&r, HA, NVME_RREGA_REGISTER, 0, 6, 0), NVME_SC_RESV_CONFLICT);
	CU_ASSERT_EQUAL(r.nregs, 1);
	/* Replace needs the current key unless IEKEY. */
	CU_ASSERT_EQUAL(rs_reg(&r, HA, NVME_RREGA_REPLACE, 4, 7, 0), NVME_SC_RESV_CONFLICT);
	CU_ASSERT_EQUAL(rs_reg(&r, HA, NVME_RREGA_REPLACE, 5, 7, 0), 0);
	CU_ASSERT_EQUAL(ctrlr_resv_find(&r, HA)->rkey, 7);
	CU_ASSERT_EQUAL(rs_reg(&r, HA, NVME_RREGA_REPLACE, 0, 8, NVME_RESV_IEKEY), 0);
	CU_ASSERT_EQUAL(ctrlr_resv_find(&r, HA)->rkey, 8);
	CU_ASSERT_EQUAL(rs_reg(&r, HB, NVME_RREGA_REPLACE, 0, 9, NVME_RESV_IEKEY),
			NVME_SC_RESV_CONFLICT);
	/* Unregister. */
	CU_ASSERT_EQUAL(rs_reg(&r, HA, NVME_RREGA_UNREGISTER, 7, 0, 0), NVME_SC_RESV_CONFLICT);
	CU_ASSERT_EQUAL(rs_reg(&r, HB, NVME_RREGA_UNREGISTER, 0, 0, NVME_RESV_IEKEY),
			NVME_SC_RESV_CONFLICT);
	CU_ASSERT_EQUAL(rs_reg(&r, HA, NVME_RREGA_UNREGISTER, 8, 0, 0), 0);
	CU_ASSERT_EQUAL(r.nregs, 0);
	/* Bad action, reserved CPTPL, PTPL without a state file. */
	CU_ASSERT_EQUAL(rs_reg(&r, HA, 3, 0, 1, 0), NVME_SC_INVALID_FIELD);
	CU_ASSERT_EQUAL(rs_reg(&r, HA, NVME_RREGA_REGISTER, 0, 1, 1u << 30), NVME_SC_INVALID_FIELD);
	CU_ASSERT_EQUAL(rs_reg(&r, HA, NVME_RREGA_REGISTER, 0, 1, 3u << 30), NVME_SC_INVALID_FIELD);
	CU_ASSERT_EQUAL(r.nregs, 0);
	/* A full table. */
	for (unsigned int i = 0; i < CTRLR_RESV_MAX_REGS; i++) {
		uint8_t h[16] = {0x10, (uint8_t)i};

		CU_ASSERT_EQUAL(rs_reg(&r, h, NVME_RREGA_REGISTER, 0, 1, 0), 0);
	}
	CU_ASSERT_EQUAL(rs_reg(&r, HA, NVME_RREGA_REGISTER, 0, 1, 0), NVME_SC_INTERNAL);
}

static void test_acquire_release(void)
{
	struct ctrlr_resv r;

	ctrlr_resv_init(&r, false);
	CU_ASSERT_EQUAL(rs_acq(&r, HA, 0, NVME_RESV_WRITE_EXCLUSIVE, 0xa, 0), NVME_SC_RESV_CONFLICT);
	CU_ASSERT_EQUAL(rs_reg(&r, HA, NVME_RREGA_REGISTER, 0, 0xa, 0), 0);
	CU_ASSERT_EQUAL(rs_reg(&r, HB, NVME_RREGA_REGISTER, 0, 0xb, 0), 0);
	CU_ASSERT_EQUAL(rs_acq(&r, HA, 0, NVME_RESV_WRITE_EXCLUSIVE, 0xb, 0), NVME_SC_RESV_CONFLICT);
	CU_ASSERT_EQUAL(rs_acq(&r, HA, 0, 0, 0xa, 0), NVME_SC_INVALID_FIELD);
	CU_ASSERT_EQUAL(rs_acq(&r, HA, 0, 7, 0xa, 0), NVME_SC_INVALID_FIELD);
	CU_ASSERT_EQUAL(rs_acq(&r, HA, NVME_RESV_IEKEY, 1, 0xa, 0), NVME_SC_INVALID_FIELD);
	CU_ASSERT_EQUAL(rs_acq(&r, HA, 0, NVME_RESV_WE_REG_ONLY, 0xa, 0), 0);
	CU_ASSERT_EQUAL(r.gen, 2); /* Acquire does not move PRGEN */
	CU_ASSERT_EQUAL(rs_acq(&r, HA, 0, NVME_RESV_WE_REG_ONLY, 0xa, 0), 0);
	CU_ASSERT_EQUAL(rs_acq(&r, HA, 0, NVME_RESV_EXCLUSIVE_ACCESS, 0xa, 0), NVME_SC_RESV_CONFLICT);
	CU_ASSERT_EQUAL(rs_acq(&r, HB, 0, NVME_RESV_WE_REG_ONLY, 0xb, 0), NVME_SC_RESV_CONFLICT);
	/* Release: a non-holder changes nothing; the holder with the wrong type is refused. */
	CU_ASSERT_EQUAL(rs_rel(&r, HB, NVME_RRELA_RELEASE, NVME_RESV_WE_REG_ONLY, 0xb), 0);
	CU_ASSERT_EQUAL(r.rtype, NVME_RESV_WE_REG_ONLY);
	CU_ASSERT_EQUAL(rs_rel(&r, HA, NVME_RRELA_RELEASE, NVME_RESV_WE_REG_ONLY, 0xb),
			NVME_SC_RESV_CONFLICT);
	CU_ASSERT_EQUAL(rs_rel(&r, HA, NVME_RRELA_RELEASE, NVME_RESV_WRITE_EXCLUSIVE, 0xa),
			NVME_SC_INVALID_FIELD);
	CU_ASSERT_EQUAL(rs_rel(&r, HA, 2, NVME_RESV_WE_REG_ONLY, 0xa), NVME_SC_INVALID_FIELD);
	CU_ASSERT_EQUAL(rs_rel(&r, HA, NVME_RRELA_RELEASE, NVME_RESV_WE_REG_ONLY, 0xa), 0);
	CU_ASSERT_EQUAL(r.rtype, 0);
	/* Registrants Only: the other registrants hear Reservation Released. */
	CU_ASSERT_EQUAL(ev.n, 1);
	CU_ASSERT_TRUE(rs_has_event(HB, NVME_RESV_NOTIFY_RELEASED));
	CU_ASSERT_EQUAL(r.nregs, 2);
	/* Write Exclusive: released silently. */
	CU_ASSERT_EQUAL(rs_acq(&r, HB, 0, NVME_RESV_WRITE_EXCLUSIVE, 0xb, 0), 0);
	CU_ASSERT_EQUAL(rs_rel(&r, HB, NVME_RRELA_RELEASE, NVME_RESV_WRITE_EXCLUSIVE, 0xb), 0);
	CU_ASSERT_EQUAL(ev.n, 0);
}

static void test_unregister_holder(void)
{
	struct ctrlr_resv r;

	rs_setup(&r, NVME_RESV_EA_REG_ONLY);
	CU_ASSERT_EQUAL(rs_reg(&r, HA, NVME_RREGA_UNREGISTER, 0xa, 0, 0), 0);
	CU_ASSERT_EQUAL(r.rtype, 0);
	CU_ASSERT_TRUE(rs_has_event(HB, NVME_RESV_NOTIFY_RELEASED));
	/* All Registrants: the reservation stays while a registrant is left. */
	rs_setup(&r, NVME_RESV_WE_ALL_REGS);
	CU_ASSERT_EQUAL(rs_reg(&r, HA, NVME_RREGA_UNREGISTER, 0xa, 0, 0), 0);
	CU_ASSERT_EQUAL(r.rtype, NVME_RESV_WE_ALL_REGS);
	CU_ASSERT_EQUAL(ctrlr_resv_access(&r, HA), CTRLR_RESV_BLOCK_WRITE);
	CU_ASSERT_EQUAL(ctrlr_resv_access(&r, HB), 0);
	CU_ASSERT_EQUAL(rs_reg(&r, HB, NVME_RREGA_UNREGISTER, 0xb, 0, 0), 0);
	CU_ASSERT_EQUAL(r.rtype, 0);
	CU_ASSERT_EQUAL(ctrlr_resv_access(&r, HC), 0);
}

static void test_preempt(void)
{
	struct ctrlr_resv r;
	uint32_t gen;

	/* B preempts the holder A by A's key: B holds (new type), A is unregistered. */
	rs_setup(&r, NVME_RESV_WRITE_EXCLUSIVE);
	gen = r.gen;
	CU_ASSERT_EQUAL(rs_acq(&r, HB, NVME_RACQA_PREEMPT, NVME_RESV_EXCLUSIVE_ACCESS, 0xb, 0xa), 0);
	CU_ASSERT_EQUAL(r.gen, gen + 1);
	CU_ASSERT_EQUAL(r.rtype, NVME_RESV_EXCLUSIVE_ACCESS);
	CU_ASSERT_TRUE(ctrlr_resv_is_holder(&r, HB));
	CU_ASSERT_PTR_NULL(ctrlr_resv_find(&r, HA));
	CU_ASSERT_TRUE(rs_has_event(HA, NVME_RESV_NOTIFY_REG_PREEMPTED));
	CU_ASSERT_EQUAL(ctrlr_resv_access(&r, HA), CTRLR_RESV_BLOCK_READ | CTRLR_RESV_BLOCK_WRITE);
	/* Preempt and Abort behaves alike for the state. */
	rs_setup(&r, NVME_RESV_WE_REG_ONLY);
	CU_ASSERT_EQUAL(rs_acq(&r, HB, NVME_RACQA_PREEMPT_ABORT, NVME_RESV_WE_REG_ONLY, 0xb, 0xa), 0);
	CU_ASSERT_TRUE(ctrlr_resv_is_holder(&r, HB));
	CU_ASSERT_EQUAL(r.nregs, 1);
	/* A key nobody has: conflict; PRKEY 0 that is not the holder's: invalid field. */
	rs_setup(&r, NVME_RESV_WRITE_EXCLUSIVE);
	CU_ASSERT_EQUAL(rs_acq(&r, HB, NVME_RACQA_PREEMPT, 1, 0xb, 0x77), NVME_SC_RESV_CONFLICT);
	CU_ASSERT_EQUAL(rs_acq(&r, HB, NVME_RACQA_PREEMPT, 1, 0xb, 0), NVME_SC_INVALID_FIELD);
	CU_ASSERT_EQUAL(rs_acq(&r, HC, NVME_RACQA_PREEMPT, 1, 0xc, 0xa), NVME_SC_RESV_CONFLICT);
	CU_ASSERT_TRUE(ctrlr_resv_is_holder(&r, HA));
	/* A non-holder's key: only that registration goes, the reservation stays. */
	CU_ASSERT_EQUAL(rs_reg(&r, HC, NVME_RREGA_REGISTER, 0, 0xc, 0), 0);
	CU_ASSERT_EQUAL(rs_acq(&r, HB, NVME_RACQA_PREEMPT, 1, 0xb, 0xc), 0);
	CU_ASSERT_PTR_NULL(ctrlr_resv_find(&r, HC));
	CU_ASSERT_TRUE(ctrlr_resv_is_holder(&r, HA));
	/* No reservation: preempt removes registrations by key. */
	ctrlr_resv_init(&r, false);
	CU_ASSERT_EQUAL(rs_reg(&r, HA, NVME_RREGA_REGISTER, 0, 0xa, 0), 0);
	CU_ASSERT_EQUAL(rs_reg(&r, HB, NVME_RREGA_REGISTER, 0, 0xb, 0), 0);
	CU_ASSERT_EQUAL(rs_acq(&r, HA, NVME_RACQA_PREEMPT, 1, 0xa, 0xb), 0);
	CU_ASSERT_EQUAL(r.nregs, 1);
	CU_ASSERT_EQUAL(r.rtype, 0);
	/* All Registrants with PRKEY 0: everybody else goes, the caller holds the new type. */
	rs_setup(&r, NVME_RESV_EA_ALL_REGS);
	CU_ASSERT_EQUAL(rs_reg(&r, HC, NVME_RREGA_REGISTER, 0, 0xc, 0), 0);
	CU_ASSERT_EQUAL(rs_acq(&r, HB, NVME_RACQA_PREEMPT, NVME_RESV_WRITE_EXCLUSIVE, 0xb, 0), 0);
	CU_ASSERT_EQUAL(r.nregs, 1);
	CU_ASSERT_EQUAL(r.rtype, NVME_RESV_WRITE_EXCLUSIVE);
	CU_ASSERT_TRUE(ctrlr_resv_is_holder(&r, HB));
	CU_ASSERT_TRUE(rs_has_event(HA, NVME_RESV_NOTIFY_REG_PREEMPTED));
	CU_ASSERT_TRUE(rs_has_event(HC, NVME_RESV_NOTIFY_REG_PREEMPTED));
	/* The holder changes its own type: Registrants Only -> others hear Released. */
	rs_setup(&r, NVME_RESV_WE_REG_ONLY);
	CU_ASSERT_EQUAL(rs_acq(&r, HA, NVME_RACQA_PREEMPT, NVME_RESV_EA_REG_ONLY, 0xa, 0xa), 0);
	CU_ASSERT_EQUAL(r.rtype, NVME_RESV_EA_REG_ONLY);
	CU_ASSERT_TRUE(rs_has_event(HB, NVME_RESV_NOTIFY_RELEASED));
	CU_ASSERT_EQUAL(r.nregs, 2);
}

static void test_clear(void)
{
	struct ctrlr_resv r;

	rs_setup(&r, NVME_RESV_EXCLUSIVE_ACCESS);
	CU_ASSERT_EQUAL(rs_rel(&r, HC, NVME_RRELA_CLEAR, 0, 0), NVME_SC_RESV_CONFLICT);
	CU_ASSERT_EQUAL(rs_rel(&r, HB, NVME_RRELA_CLEAR, 0, 0xa), NVME_SC_RESV_CONFLICT);
	CU_ASSERT_EQUAL(rs_rel(&r, HB, NVME_RRELA_CLEAR, 0, 0xb), 0);
	CU_ASSERT_EQUAL(r.nregs, 0);
	CU_ASSERT_EQUAL(r.rtype, 0);
	CU_ASSERT_EQUAL(ev.n, 1);
	CU_ASSERT_TRUE(rs_has_event(HA, NVME_RESV_NOTIFY_PREEMPTED));
	CU_ASSERT_EQUAL(ctrlr_resv_access(&r, HC), 0);
}

/* What resv.c has the syncer write: the encoded state, the file replaced whole. */
static int rs_save(const struct ctrlr_resv *r, const char *path)
{
	char *text = ctrlr_resv_encode(r);
	struct iovec iov = {.iov_base = text, .iov_len = text ? strlen(text) : 0};
	int rc = text ? file_replace(path, &iov, 1) : -ENOMEM;

	free(text);
	return rc;
}

static void test_ptpl_file(void)
{
	char dir[] = "/tmp/resv_testXXXXXX", path[64];
	struct ctrlr_resv r, l;
	FILE *f;

	CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/ns1.json", dir);
	ctrlr_resv_init(&r, true);
	/* No file yet: an empty state. */
	ctrlr_resv_init(&l, true);
	CU_ASSERT_EQUAL(ctrlr_resv_load(&l, path), 0);
	CU_ASSERT_EQUAL(l.nregs, 0);
	CU_ASSERT_EQUAL(rs_reg(&r, HA, NVME_RREGA_REGISTER, 0, 0x1122334455667788ull, 3u << 30), 0);
	CU_ASSERT_TRUE(r.ptpl);
	CU_ASSERT_EQUAL(rs_reg(&r, HB, NVME_RREGA_REGISTER, 0, 0xb, 0), 0);
	CU_ASSERT_EQUAL(rs_acq(&r, HA, 0, NVME_RESV_EA_REG_ONLY, 0x1122334455667788ull, 0), 0);
	CU_ASSERT_EQUAL(rs_save(&r, path), 0);
	CU_ASSERT_EQUAL(ctrlr_resv_load(&l, path), 0);
	CU_ASSERT_TRUE(l.ptpl);
	CU_ASSERT_EQUAL(l.gen, r.gen);
	CU_ASSERT_EQUAL(l.rtype, NVME_RESV_EA_REG_ONLY);
	CU_ASSERT_TRUE(ctrlr_resv_is_holder(&l, HA));
	CU_ASSERT_EQUAL(ctrlr_resv_find(&l, HA)->rkey, 0x1122334455667788ull);
	CU_ASSERT_EQUAL(ctrlr_resv_find(&l, HB)->rkey, 0xb);
	CU_ASSERT_EQUAL(ctrlr_resv_access(&l, HC), CTRLR_RESV_BLOCK_READ | CTRLR_RESV_BLOCK_WRITE);
	/* PTPL off: nothing survives. */
	CU_ASSERT_EQUAL(rs_reg(&r, HB, NVME_RREGA_REGISTER, 0, 0xb, 2u << 30), 0);
	CU_ASSERT_FALSE(r.ptpl);
	CU_ASSERT_EQUAL(rs_save(&r, path), 0);
	CU_ASSERT_EQUAL(ctrlr_resv_load(&l, path), 0);
	CU_ASSERT_FALSE(l.ptpl);
	CU_ASSERT_EQUAL(l.nregs, 0);
	CU_ASSERT_EQUAL(l.rtype, 0);
	/* Damaged files are refused, whole. */
	f = fopen(path, "w");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fputs("{\"ptpl\": true, \"generation\": 1, \"rtype\": 1, \"holder\": \"00\", "
	      "\"registrants\": []}",
	      f);
	fclose(f);
	CU_ASSERT_EQUAL(ctrlr_resv_load(&l, path), -EINVAL);
	CU_ASSERT_EQUAL(l.nregs, 0);
	f = fopen(path, "w");
	fputs("not json", f);
	fclose(f);
	CU_ASSERT_EQUAL(ctrlr_resv_load(&l, path), -EINVAL);
	unlink(path);
	rmdir(dir);
}

/* The record daemons sharing a namespace keep in the cluster: the whole state, PTPL or not, and
 * the last changes with their notifications; a wrap keeps the newest; bad records are refused. */
static void test_shared_record(void)
{
	static struct ctrlr_resv_record rec, back;
	struct ctrlr_resv_events e1 = {0}, e2 = {0};
	char *text;

	ctrlr_resv_init(&rec.r, true);
	CU_ASSERT_EQUAL(rs_reg(&rec.r, HA, NVME_RREGA_REGISTER, 0, 0xa, 0), 0);
	CU_ASSERT_EQUAL(rs_reg(&rec.r, HB, NVME_RREGA_REGISTER, 0, 0xb, 0), 0);
	CU_ASSERT_EQUAL(rs_acq(&rec.r, HA, 0, NVME_RESV_WRITE_EXCLUSIVE, 0xa, 0), 0);
	CU_ASSERT_FALSE(rec.r.ptpl);
	e1.n = 1;
	memcpy(e1.e[0].hostid, HB, 16);
	e1.e[0].type = NVME_RESV_NOTIFY_REG_PREEMPTED;
	ctrlr_resv_record_add(&rec, true, &e1);
	ctrlr_resv_record_add(&rec, false, &e2);
	CU_ASSERT_EQUAL(rec.seq, 2);
	text = ctrlr_resv_record_encode(&rec);
	CU_ASSERT_PTR_NOT_NULL_FATAL(text);
	CU_ASSERT_EQUAL(ctrlr_resv_record_decode(&back, text, strlen(text)), 0);
	CU_ASSERT_EQUAL(back.seq, 2);
	CU_ASSERT_EQUAL(back.r.nregs, 2); /* kept with PTPL off: the cluster holds everything */
	CU_ASSERT_EQUAL(back.r.rtype, NVME_RESV_WRITE_EXCLUSIVE);
	CU_ASSERT_TRUE(ctrlr_resv_is_holder(&back.r, HA));
	CU_ASSERT_EQUAL(back.r.gen, rec.r.gen);
	CU_ASSERT_EQUAL(back.nchanges, 2);
	CU_ASSERT_TRUE(back.changes[0].abort);
	CU_ASSERT_EQUAL(back.changes[0].seq, 1);
	CU_ASSERT_EQUAL(back.changes[0].ev.n, 1);
	CU_ASSERT_EQUAL(memcmp(back.changes[0].ev.e[0].hostid, HB, 16), 0);
	CU_ASSERT_EQUAL(back.changes[0].ev.e[0].type, NVME_RESV_NOTIFY_REG_PREEMPTED);
	CU_ASSERT_FALSE(back.changes[1].abort);
	free(text);
	/* The ring keeps the newest CTRLR_RESV_CHANGES. */
	for (int i = 0; i < CTRLR_RESV_CHANGES + 3; i++)
		ctrlr_resv_record_add(&rec, false, &e1);
	CU_ASSERT_EQUAL(rec.nchanges, CTRLR_RESV_CHANGES);
	CU_ASSERT_EQUAL(rec.changes[CTRLR_RESV_CHANGES - 1].seq, rec.seq);
	CU_ASSERT_EQUAL(rec.changes[0].seq, rec.seq - CTRLR_RESV_CHANGES + 1);
	text = ctrlr_resv_record_encode(&rec);
	CU_ASSERT_PTR_NOT_NULL_FATAL(text);
	CU_ASSERT_EQUAL(ctrlr_resv_record_decode(&back, text, strlen(text)), 0);
	CU_ASSERT_EQUAL(back.nchanges, CTRLR_RESV_CHANGES);
	CU_ASSERT_EQUAL(back.seq, rec.seq);
	free(text);
	/* Never written: the empty state. */
	CU_ASSERT_EQUAL(ctrlr_resv_record_decode(&back, "", 0), 0);
	CU_ASSERT_EQUAL(back.seq, 0);
	CU_ASSERT_EQUAL(back.r.nregs, 0);
	/* Refused whole: not JSON, changes out of order, a change beyond seq, a truncated text. */
	CU_ASSERT_EQUAL(ctrlr_resv_record_decode(&back, "nope", 4), -EINVAL);
	{
		const char *bad[] = {
		    "{\"ptpl\": false, \"generation\": 0, \"rtype\": 0, \"holder\": "
		    "\"00000000000000000000000000000000\", \"registrants\": [], \"seq\": 3, "
		    "\"changes\": [{\"seq\": 3, \"abort\": false, \"events\": []}, "
		    "{\"seq\": 2, \"abort\": false, \"events\": []}]}",
		    "{\"ptpl\": false, \"generation\": 0, \"rtype\": 0, \"holder\": "
		    "\"00000000000000000000000000000000\", \"registrants\": [], \"seq\": 1, "
		    "\"changes\": [{\"seq\": 2, \"abort\": false, \"events\": []}]}",
		    "{\"ptpl\": false, \"generation\": 0, \"rtype\": 0",
		};

		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			CU_ASSERT_EQUAL(ctrlr_resv_record_decode(&back, bad[i], strlen(bad[i])),
					-EINVAL);
			CU_ASSERT_EQUAL(back.r.nregs, 0);
		}
	}
}

CUNIT_SUITE(io_resv, NULL, NULL, {"conflict_table", test_conflict_table},
	    {"register", test_register}, {"acquire_release", test_acquire_release},
	    {"unregister_holder", test_unregister_holder}, {"preempt", test_preempt},
	    {"clear", test_clear}, {"ptpl_file", test_ptpl_file},
	    {"shared_record", test_shared_record})
