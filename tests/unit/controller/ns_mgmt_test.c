/* tests/unit/controller/ns_mgmt_test.c - the capacity pool (best-fit extents, NSIDs, the header
 * kept across re-creation, torn-write fallback, refusal of a bdev with foreign data), the region
 * bdev (I/O lands at the extent of the pool), and Namespace Management / Attachment end to end
 * through the loopback: create/attach/detach/delete, Identify CNS 10h-13h, capacity fields,
 * effects, the Namespace Attribute Changed AEN and Changed Namespace List, every error status. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/evloop.h"
#include "controller/device/device.h"
#include "controller/pool/pool.h"
#include "tests/unit/backend/bdev_ut_util.h"
#include "tests/unit/controller/loopback.h"
#include "tests/unit/cunit_runner.h"

#define NSM_POOL_BLOCKS (64u * 2048) /* 64 MiB of 512-byte blocks */
#define NSM_MIB (1ull << 20)

static struct evloop *nsm_loop;

static int nsm_pool_suite_init(void)
{
	if (!nsm_loop)
		nsm_loop = evloop_create();
	return nsm_loop ? 0 : -1;
}

struct nsm_created {
	int calls, rc;
	struct ctrlr_ns_pool *pool;
};

static void nsm_created_cb(void *arg, int rc, const char *msg, struct ctrlr_ns_pool *pool)
{
	struct nsm_created *c = arg;

	c->calls++;
	c->rc = rc;
	c->pool = pool;
}

/* Creates a pool on `bdev` and runs the loop until its header was read. Returns rc. */
static int nsm_pool_create(struct bdev *bdev, uint32_t max_nsid, bool format,
			   struct ctrlr_ns_pool **out)
{
	struct ctrlr_ns_pool_opts o = {
	    .bdev = bdev, .loop = nsm_loop, .max_nsid = max_nsid, .format = format};
	struct nsm_created c = {0};
	int rc = ctrlr_ns_pool_create(&o, nsm_created_cb, &c);

	if (rc)
		return rc;
	CU_ASSERT_EQUAL(c.calls, 0); /* never from inside the call */
	for (int i = 0; i < 500 && !c.calls; i++)
		evloop_run_once(nsm_loop, 10);
	CU_ASSERT_EQUAL_FATAL(c.calls, 1);
	*out = c.pool;
	return c.rc;
}

struct nsm_sync {
	int calls, rc;
};

static void nsm_sync_cb(void *arg, int rc)
{
	struct nsm_sync *s = arg;

	s->calls++;
	s->rc = rc;
}

static int nsm_pool_sync(struct ctrlr_ns_pool *pool)
{
	struct nsm_sync s = {0};
	struct ctrlr_pool_waiter w = {.fn = nsm_sync_cb, .arg = &s};

	ctrlr_pool_sync(pool, &w);
	for (int i = 0; i < 500 && !s.calls; i++)
		evloop_run_once(nsm_loop, 10);
	CU_ASSERT_EQUAL(s.calls, 1);
	return s.rc;
}

static int nsm_alloc(struct ctrlr_ns_pool *pool, uint64_t mib, uint32_t *nsid)
{
	struct ctrlr_pool_ns req = {.nsze = mib * 2048, .block_size = 512};

	return ctrlr_pool_alloc(pool, &req, nsid);
}

/* ---- the pool alone ---- */

static void test_pool_extents(void)
{
	struct ctrlr_ns_pool_ns_info ni;
	struct ctrlr_ns_pool_info info;
	struct ctrlr_ns_pool *pool;
	uint32_t a, b, c, d, e;
	struct bdev *base;

	CU_ASSERT_EQUAL_FATAL(bdev_malloc_create("pool0", NSM_POOL_BLOCKS, 512, NULL, &base), 0);
	CU_ASSERT_EQUAL_FATAL(nsm_pool_create(base, 4, false, &pool), 0);
	ctrlr_ns_pool_get_info(pool, &info);
	CU_ASSERT_EQUAL(info.total_bytes, 63 * NSM_MIB); /* the first MiB holds the layout */
	CU_ASSERT_EQUAL(info.free_bytes, 63 * NSM_MIB);
	CU_ASSERT_EQUAL(info.granule, NSM_MIB);
	/* The pool claims its bdev: nobody else attaches or deletes it. */
	CU_ASSERT_EQUAL(bdev_claim(base, "someone"), -EBUSY);
	CU_ASSERT_EQUAL(bdev_delete("pool0"), -EBUSY);

	CU_ASSERT_EQUAL(nsm_alloc(pool, 10, &a), 0);
	CU_ASSERT_EQUAL(nsm_alloc(pool, 5, &b), 0);
	CU_ASSERT_EQUAL(nsm_alloc(pool, 20, &c), 0);
	CU_ASSERT_EQUAL(a, 1);
	CU_ASSERT_EQUAL(b, 2);
	CU_ASSERT_EQUAL(c, 3);
	CU_ASSERT_TRUE(ctrlr_ns_pool_get_ns(pool, b, &ni));
	CU_ASSERT_EQUAL(ni.offset_bytes, 11 * NSM_MIB);
	CU_ASSERT_EQUAL(ni.size_bytes, 5 * NSM_MIB);
	CU_ASSERT_STRING_EQUAL(ni.bdev_name, "pool0n2");
	CU_ASSERT_PTR_NOT_NULL(bdev_lookup("pool0n2"));
	/* Free the 5 MiB hole between a and c: a 3 MiB namespace goes there (best fit), not
	 * into the 28 MiB at the end. */
	ctrlr_pool_free(pool, b);
	CU_ASSERT_PTR_NULL(bdev_lookup("pool0n2"));
	CU_ASSERT_EQUAL(nsm_alloc(pool, 3, &d), 0);
	CU_ASSERT_EQUAL(d, 2); /* the lowest free NSID */
	CU_ASSERT_TRUE(ctrlr_ns_pool_get_ns(pool, d, &ni));
	CU_ASSERT_EQUAL(ni.offset_bytes, 11 * NSM_MIB);
	/* Partial MiB rounds up to whole granules. */
	{
		struct ctrlr_pool_ns req = {.nsze = 2049, .block_size = 512};

		CU_ASSERT_EQUAL(ctrlr_pool_alloc(pool, &req, &e), 0);
		CU_ASSERT_EQUAL(e, 4);
		CU_ASSERT_TRUE(ctrlr_ns_pool_get_ns(pool, e, &ni));
		CU_ASSERT_EQUAL(ni.size_bytes, 2 * NSM_MIB);
		CU_ASSERT_EQUAL(ni.offset_bytes, 14 * NSM_MIB); /* the 2 MiB left of the hole */
	}
	ctrlr_ns_pool_get_info(pool, &info);
	CU_ASSERT_EQUAL(info.free_bytes, (63 - 10 - 3 - 20 - 2) * NSM_MIB);
	CU_ASSERT_EQUAL(info.largest_free_bytes, 28 * NSM_MIB);
	/* No NSID left (max_nsid 4), then no extent large enough. */
	CU_ASSERT_EQUAL(nsm_alloc(pool, 1, &e), -EMLINK);
	ctrlr_pool_free(pool, 4);
	CU_ASSERT_EQUAL(nsm_alloc(pool, 29, &e), -ENOSPC);
	/* Reserved (operator) NSIDs are never handed out. */
	ctrlr_ns_pool_reserve(pool, 4, true);
	CU_ASSERT_EQUAL(nsm_alloc(pool, 1, &e), -EMLINK);
	ctrlr_ns_pool_reserve(pool, 4, false);
	CU_ASSERT_EQUAL(nsm_alloc(pool, 28, &e), 0);
	CU_ASSERT_EQUAL(e, 4);
	CU_ASSERT_EQUAL(ctrlr_ns_pool_destroy(pool), 0);
	CU_ASSERT_PTR_NULL(bdev_lookup("pool0n1"));
	CU_ASSERT_EQUAL(bdev_delete("pool0"), 0);
}

static void test_pool_persistence(void)
{
	struct ctrlr_ns_pool_ns_info n1, n2, again;
	struct ctrlr_ns_pool *pool;
	struct bdev_channel *ch;
	struct bdev *base;
	uint32_t a, b;
	uint8_t *blk;

	CU_ASSERT_EQUAL_FATAL(bdev_malloc_create("pool1", NSM_POOL_BLOCKS, 512, NULL, &base), 0);
	CU_ASSERT_EQUAL_FATAL(nsm_pool_create(base, 0, false, &pool), 0);
	CU_ASSERT_EQUAL(nsm_alloc(pool, 8, &a), 0);
	pool->ns[a - 1].attached = true;
	CU_ASSERT_EQUAL(nsm_pool_sync(pool), 0);
	CU_ASSERT_EQUAL(nsm_alloc(pool, 4, &b), 0);
	CU_ASSERT_EQUAL(nsm_pool_sync(pool), 0);
	CU_ASSERT_TRUE(ctrlr_ns_pool_get_ns(pool, a, &n1));
	CU_ASSERT_TRUE(ctrlr_ns_pool_get_ns(pool, b, &n2));
	CU_ASSERT_EQUAL(ctrlr_ns_pool_destroy(pool), 0);

	/* Re-created on the same bdev: the same namespaces, extents, UUIDs, attachment. */
	CU_ASSERT_EQUAL_FATAL(nsm_pool_create(base, 0, false, &pool), 0);
	CU_ASSERT_TRUE(ctrlr_ns_pool_get_ns(pool, a, &again));
	CU_ASSERT_EQUAL(again.offset_bytes, n1.offset_bytes);
	CU_ASSERT_EQUAL(again.num_blocks, 8 * 2048);
	CU_ASSERT_TRUE(again.attached);
	CU_ASSERT_EQUAL(memcmp(again.uuid, n1.uuid, 16), 0);
	CU_ASSERT_TRUE(ctrlr_ns_pool_get_ns(pool, b, &again));
	CU_ASSERT_FALSE(again.attached);
	CU_ASSERT_EQUAL(memcmp(again.uuid, n2.uuid, 16), 0);
	CU_ASSERT_EQUAL(ctrlr_ns_pool_destroy(pool), 0);

	/* A torn newest header copy: the previous generation (without b) is used. */
	CU_ASSERT_EQUAL_FATAL(bdev_open(base), 0);
	CU_ASSERT_EQUAL_FATAL(bdev_channel_create(base, &ch), 0);
	blk = aligned_alloc(4096, 8192);
	CU_ASSERT_EQUAL(ut_rw_sync(ch, 512, BDEV_IO_READ, 0, 16, blk, NULL), 0);
	{
		/* Generations 1 (format), 2 (a), 3 (b): slot 1 holds 3. */
		blk[4096 + 200] ^= 0xff;
		CU_ASSERT_EQUAL(ut_rw_sync(ch, 512, BDEV_IO_WRITE, 0, 16, blk, NULL), 0);
	}
	bdev_channel_destroy(ch);
	bdev_close(base);
	CU_ASSERT_EQUAL_FATAL(nsm_pool_create(base, 0, false, &pool), 0);
	CU_ASSERT_TRUE(ctrlr_ns_pool_owns(pool, a));
	CU_ASSERT_FALSE(ctrlr_ns_pool_owns(pool, b));
	CU_ASSERT_EQUAL(ctrlr_ns_pool_destroy(pool), 0);

	/* Foreign data and no header: refused unless formatting is asked for. */
	CU_ASSERT_EQUAL_FATAL(bdev_open(base), 0);
	CU_ASSERT_EQUAL_FATAL(bdev_channel_create(base, &ch), 0);
	memset(blk, 0x5a, 8192);
	CU_ASSERT_EQUAL(ut_rw_sync(ch, 512, BDEV_IO_WRITE, 0, 16, blk, NULL), 0);
	bdev_channel_destroy(ch);
	bdev_close(base);
	CU_ASSERT_EQUAL(nsm_pool_create(base, 0, false, &pool), -EINVAL);
	CU_ASSERT_EQUAL(bdev_claim(base, "x"), 0); /* the failed pool let go of it */
	bdev_release(base);
	CU_ASSERT_EQUAL_FATAL(nsm_pool_create(base, 0, true, &pool), 0);
	CU_ASSERT_FALSE(ctrlr_ns_pool_owns(pool, a));
	CU_ASSERT_EQUAL(ctrlr_ns_pool_destroy(pool), 0);
	free(blk);

	/* 4096-byte blocks and too small bdevs are refused at once. */
	{
		struct nsm_created c = {0};
		struct ctrlr_ns_pool_opts o = {.loop = nsm_loop};
		struct bdev *b4k, *tiny;

		CU_ASSERT_EQUAL_FATAL(bdev_malloc_create("pool4k", 4096, 4096, NULL, &b4k), 0);
		CU_ASSERT_EQUAL_FATAL(bdev_malloc_create("pooltiny", 2048, 512, NULL, &tiny), 0);
		o.bdev = b4k;
		CU_ASSERT_EQUAL(ctrlr_ns_pool_create(&o, nsm_created_cb, &c), -EINVAL);
		o.bdev = tiny;
		CU_ASSERT_EQUAL(ctrlr_ns_pool_create(&o, nsm_created_cb, &c), -ENOSPC);
		CU_ASSERT_EQUAL(c.calls, 0);
		CU_ASSERT_EQUAL(bdev_delete("pool4k"), 0);
		CU_ASSERT_EQUAL(bdev_delete("pooltiny"), 0);
	}
	CU_ASSERT_EQUAL(bdev_delete("pool1"), 0);
}

/* A region's I/O lands at its extent of the base, shifted, without a copy of its own. */
static void test_region_io(void)
{
	struct bdev_channel *rch, *bch;
	struct bdev *base, *reg, *reg4k;
	uint8_t *w = aligned_alloc(4096, 65536), *r = aligned_alloc(4096, 65536);
	struct bdev_range ranges[12];

	CU_ASSERT_EQUAL_FATAL(bdev_malloc_create("rbase", 8192, 512, NULL, &base), 0);
	CU_ASSERT_EQUAL(bdev_region_create("rbad", base, 8000, 200, 512, NULL, &reg), -EINVAL);
	CU_ASSERT_EQUAL(bdev_region_create("rbad", base, 0, 10, 1000, NULL, &reg), -EINVAL);
	CU_ASSERT_EQUAL_FATAL(bdev_region_create("rreg", base, 1000, 2048, 512, NULL, &reg), 0);
	CU_ASSERT_EQUAL_FATAL(bdev_region_create("rreg4k", base, 4096, 256, 4096, NULL, &reg4k), 0);
	CU_ASSERT_STRING_EQUAL(bdev_get_module_name(reg), BDEV_REGION_MODULE);
	CU_ASSERT_EQUAL(bdev_delete("rbase"), -EBUSY); /* held by its regions */
	CU_ASSERT_EQUAL_FATAL(bdev_open(reg), 0);
	CU_ASSERT_EQUAL_FATAL(bdev_open(base), 0);
	CU_ASSERT_EQUAL_FATAL(bdev_channel_create(reg, &rch), 0);
	CU_ASSERT_EQUAL_FATAL(bdev_channel_create(base, &bch), 0);

	ut_pattern(w, 65536, 7);
	CU_ASSERT_EQUAL(ut_rw_sync(rch, 512, BDEV_IO_WRITE, 10, 128, w, NULL), 0);
	CU_ASSERT_EQUAL(ut_rw_sync(bch, 512, BDEV_IO_READ, 1010, 128, r, NULL), 0);
	CU_ASSERT_EQUAL(memcmp(w, r, 65536), 0);
	/* Out of the region (but inside the base): refused, nothing touched. */
	CU_ASSERT_EQUAL(ut_rw_sync(rch, 512, BDEV_IO_READ, 2047, 2, r, NULL), -ERANGE);
	CU_ASSERT_EQUAL(ut_rw_sync(rch, 512, BDEV_IO_READ, 2047, 1, r, NULL), 0);
	/* Deallocate of more ranges than one base io carries: all of them, shifted. */
	for (int i = 0; i < 12; i++)
		ranges[i] = (struct bdev_range){.offset_blocks = 10 + 10 * i, .num_blocks = 5};
	CU_ASSERT_EQUAL(ut_unmap_sync(rch, ranges, 12), 0);
	CU_ASSERT_EQUAL(ut_rw_sync(bch, 512, BDEV_IO_READ, 1010, 128, r, NULL), 0);
	for (int i = 0; i < 12; i++) {
		CU_ASSERT_TRUE(ut_is_zero(r + 5120 * i, 2560));
		if (i < 11)
			CU_ASSERT_EQUAL(memcmp(r + 5120 * i + 2560, w + 5120 * i + 2560, 2560), 0);
	}
	CU_ASSERT_EQUAL(ut_nodata_sync(rch, BDEV_IO_WRITE_ZEROES, 0, 4, 0), 0);
	CU_ASSERT_EQUAL(ut_nodata_sync(rch, BDEV_IO_FLUSH, 0, 0, 0), 0);
	/* The model starts from zeroes. */
	CU_ASSERT_EQUAL(ut_nodata_sync(rch, BDEV_IO_WRITE_ZEROES, 0, 2048, 0), 0);
	CU_ASSERT_EQUAL(ut_model_run(rch, 512, 2048, 11, 20, 8), 0);
	bdev_channel_destroy(rch);
	bdev_close(reg);

	/* A 4 KiB-block region over a 512-byte base: block n is base blocks 8n.. of its window. */
	CU_ASSERT_EQUAL_FATAL(bdev_open(reg4k), 0);
	CU_ASSERT_EQUAL_FATAL(bdev_channel_create(reg4k, &rch), 0);
	CU_ASSERT_EQUAL(ut_rw_sync(rch, 4096, BDEV_IO_WRITE, 3, 2, w, NULL), 0);
	CU_ASSERT_EQUAL(ut_rw_sync(bch, 512, BDEV_IO_READ, 4096 + 24, 16, r, NULL), 0);
	CU_ASSERT_EQUAL(memcmp(w, r, 8192), 0);
	bdev_channel_destroy(rch);
	bdev_close(reg4k);
	bdev_channel_destroy(bch);
	bdev_close(base);
	CU_ASSERT_EQUAL(bdev_delete("rreg"), 0);
	CU_ASSERT_EQUAL(bdev_delete("rreg4k"), 0);
	CU_ASSERT_EQUAL(bdev_delete("rbase"), 0);
	free(w);
	free(r);
}

/* ---- Namespace Management / Attachment through the controller ---- */

static struct lb lb;
static struct ctrlr_ns_pool *nsm_pool;
static uint64_t nsm_buf;
static struct nvme_cqe nsm_aer_cqe;
static int nsm_aers;

static uint8_t *nsm_data(void)
{
	return lb_ptr(&lb, nsm_buf);
}

/* Submits on the admin queue and pumps the loopback and the pool's loop until its CQE; an AER's
 * CQE on the way is kept in nsm_aer_cqe. Returns the status (DNR included). */
static uint16_t nsm_cmd(struct nvme_sqe *sqe, uint32_t *cdw0)
{
	uint16_t cid = lb_submit(&lb, 0, sqe);
	struct nvme_cqe cqe;

	CU_ASSERT_NOT_EQUAL_FATAL(cid, LB_NO_CQE);
	for (int i = 0; i < 2000; i++) {
		lb_pump(&lb);
		while (lb_reap(&lb, 0, &cqe, false)) {
			if (cqe.cid != cid) {
				nsm_aer_cqe = cqe;
				nsm_aers++;
				continue;
			}
			if (cdw0)
				*cdw0 = cqe.dw0;
			return cqe.status >> 1;
		}
		evloop_run_once(nsm_loop, 1);
	}
	CU_FAIL("no completion");
	return LB_NO_CQE;
}

static uint16_t nsm_status_sc(uint16_t st)
{
	return st & ~NVME_DNR;
}

static uint16_t nsm_create(uint64_t nsze, uint64_t ncap, uint8_t flbas, uint8_t dps, uint8_t nmic,
			   uint32_t *nsid)
{
	struct nvme_sqe sqe = lb_sqe(NVME_ADM_NS_MGMT, 0);
	struct nvme_id_ns *id = (struct nvme_id_ns *)nsm_data();

	memset(id, 0, 4096);
	id->nsze = nsze;
	id->ncap = ncap;
	id->flbas = flbas;
	id->dps = dps;
	id->nmic = nmic;
	sqe.cdw10 = NVME_NS_MGMT_SEL_CREATE;
	sqe.dptr.prp.prp1 = nsm_buf;
	return nsm_status_sc(nsm_cmd(&sqe, nsid));
}

static uint16_t nsm_delete(uint32_t nsid)
{
	struct nvme_sqe sqe = lb_sqe(NVME_ADM_NS_MGMT, nsid);

	sqe.cdw10 = NVME_NS_MGMT_SEL_DELETE;
	return nsm_status_sc(nsm_cmd(&sqe, NULL));
}

/* Namespace Attachment with a controller list of n ids. */
static uint16_t nsm_attach(uint8_t sel, uint32_t nsid, const uint16_t *ids, uint16_t n)
{
	struct nvme_sqe sqe = lb_sqe(NVME_ADM_NS_ATTACH, nsid);
	uint16_t *list = (uint16_t *)nsm_data();

	memset(list, 0, 4096);
	list[0] = n;
	memcpy(&list[1], ids, n * sizeof(*ids));
	sqe.cdw10 = sel;
	sqe.dptr.prp.prp1 = nsm_buf;
	return nsm_status_sc(nsm_cmd(&sqe, NULL));
}

static uint16_t nsm_identify(uint8_t cns, uint32_t nsid, uint16_t cntid)
{
	struct nvme_sqe sqe = lb_sqe(NVME_ADM_IDENTIFY, nsid);

	memset(nsm_data(), 0xa5, 4096);
	sqe.cdw10 = cns | (uint32_t)cntid << 16;
	sqe.dptr.prp.prp1 = nsm_buf;
	return nsm_status_sc(nsm_cmd(&sqe, NULL));
}

static bool nsm_in_list(uint32_t nsid)
{
	const uint32_t *l = (const uint32_t *)nsm_data();

	for (int i = 0; i < 1024 && l[i]; i++)
		if (l[i] == nsid)
			return true;
	return false;
}

static uint64_t nsm_le64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

static uint64_t nsm_unvmcap(void)
{
	CU_ASSERT_EQUAL(nsm_identify(NVME_CNS_CTRL, 0, 0), 0);
	return nsm_le64(((struct nvme_id_ctrl *)nsm_data())->unvmcap);
}

static int nsm_init(void)
{
	struct ctrlr_config cfg;
	struct bdev *base;

	if (nsm_pool_suite_init())
		return -1;
	lb_default_config(&cfg);
	cfg.cntlid = 5;
	if (lb_init(&lb, &cfg))
		return -1;
	if (lb_add_malloc_ns(&lb, "nsm_op", 1, 2048, 512) != 1) /* the operator's 1 MiB */
		return -1;
	if (!(lb_enable(&lb, 32) & 1))
		return -1;
	nsm_buf = lb_alloc(&lb, 8192);
	if (bdev_malloc_create("nsm_pool", NSM_POOL_BLOCKS, 512, NULL, &base))
		return -1;
	return 0;
}

static int nsm_fini(void)
{
	lb_fini(&lb);
	if (nsm_pool)
		ctrlr_ns_pool_destroy(nsm_pool);
	bdev_delete("nsm_pool");
	bdev_delete("nsm_op");
	return 0;
}

static void test_no_pool(void)
{
	struct nvme_sqe sqe = lb_sqe(NVME_ADM_GET_LOG_PAGE, 0);
	struct nvme_effects_log *e = (struct nvme_effects_log *)nsm_data();
	uint32_t nsid;

	/* Without a pool: not advertised, not accepted, not in the effects log. */
	CU_ASSERT_EQUAL(nsm_identify(NVME_CNS_CTRL, 0, 0), 0);
	CU_ASSERT_FALSE(((struct nvme_id_ctrl *)nsm_data())->oacs & NVME_OACS_NS_MGMT);
	CU_ASSERT_EQUAL(nsm_create(2048, 2048, 0, 0, 0, &nsid), NVME_SC_INVALID_OPCODE);
	CU_ASSERT_EQUAL(nsm_identify(NVME_CNS_ALLOC_NS_LIST, 0, 0), NVME_SC_INVALID_FIELD);
	sqe.cdw10 = NVME_LOG_CMD_EFFECTS | ((4096 / 4 - 1) << 16);
	sqe.dptr.prp.prp1 = nsm_buf;
	CU_ASSERT_EQUAL(nsm_cmd(&sqe, NULL), 0);
	CU_ASSERT_EQUAL(e->acs[NVME_ADM_NS_MGMT], 0);
	CU_ASSERT_EQUAL(e->acs[NVME_ADM_NS_ATTACH], 0);
}

/* Makes the pool nsm_pool on `base` (NSIDs up to max_nsid, 0: all; NSID 1 is the operator's)
 * and binds it to the loopback controller. */
static void nsm_pool_bind(struct bdev *base, uint32_t max_nsid)
{
	bool reserved[CTRLR_MAX_NAMESPACES] = {[0] = true};
	struct ctrlr_ns_pool_opts o = {.loop = nsm_loop, .bdev = base, .max_nsid = max_nsid,
				       .reserved = reserved};
	struct nsm_created c = {0};

	CU_ASSERT_EQUAL_FATAL(ctrlr_ns_pool_create(&o, nsm_created_cb, &c), 0);
	for (int i = 0; i < 500 && !c.calls; i++)
		evloop_run_once(nsm_loop, 10);
	CU_ASSERT_EQUAL_FATAL(c.rc, 0);
	nsm_pool = c.pool;
	CU_ASSERT_EQUAL_FATAL(ctrlr_ns_pool_bind(nsm_pool, lb.ctrlr), 0);
}

static void test_bind(void)
{
	struct nvme_sqe sqe = lb_sqe(NVME_ADM_GET_LOG_PAGE, 0);
	struct nvme_effects_log *e = (struct nvme_effects_log *)nsm_data();
	struct nvme_id_ctrl *id;

	nsm_pool_bind(bdev_lookup("nsm_pool"), 4);
	CU_ASSERT_EQUAL(ctrlr_ns_pool_bind(nsm_pool, lb.ctrlr), -EBUSY);
	CU_ASSERT_EQUAL(ctrlr_ns_pool_destroy(nsm_pool), -EBUSY); /* bound */

	CU_ASSERT_EQUAL(nsm_identify(NVME_CNS_CTRL, 0, 0), 0);
	id = (struct nvme_id_ctrl *)nsm_data();
	CU_ASSERT_TRUE(id->oacs & NVME_OACS_NS_MGMT);
	/* TNVMCAP: the pool's 63 MiB and the operator's 1 MiB; UNVMCAP: the pool's free. */
	CU_ASSERT_EQUAL(nsm_le64(id->tnvmcap), 64 * NSM_MIB);
	CU_ASSERT_EQUAL(nsm_le64(id->unvmcap), 63 * NSM_MIB);
	sqe.cdw10 = NVME_LOG_CMD_EFFECTS | ((4096 / 4 - 1) << 16);
	sqe.dptr.prp.prp1 = nsm_buf;
	CU_ASSERT_EQUAL(nsm_cmd(&sqe, NULL), 0);
	CU_ASSERT_EQUAL(e->acs[NVME_ADM_NS_MGMT], NVME_CMD_EFFECTS_CSUPP | NVME_CMD_EFFECTS_NIC |
						     NVME_CMD_EFFECTS_NCC | NVME_CMD_EFFECTS_CCC);
	CU_ASSERT_EQUAL(e->acs[NVME_ADM_NS_ATTACH], NVME_CMD_EFFECTS_CSUPP | NVME_CMD_EFFECTS_NIC);
}

static void test_create_errors(void)
{
	struct nvme_sqe sqe;
	uint32_t nsid = 0;

	CU_ASSERT_EQUAL(nsm_create(0, 0, 0, 0, 0, &nsid), NVME_SC_INVALID_FIELD);
	CU_ASSERT_EQUAL(nsm_create(2048, 4096, 0, 0, 0, &nsid), NVME_SC_INVALID_FIELD);
	CU_ASSERT_EQUAL(nsm_create(4096, 2048, 0, 0, 0, &nsid), NVME_SC_THIN_PROV_NOT_SUPP);
	/* Format 16 and up do not exist; PI needs metadata; DPS bits 7:4 are reserved. */
	CU_ASSERT_EQUAL(nsm_create(2048, 2048, 0x20, 0, 0, &nsid), NVME_SC_INVALID_FORMAT);
	CU_ASSERT_EQUAL(nsm_create(2048, 2048, 0, 1, 0, &nsid), NVME_SC_INVALID_FORMAT);
	CU_ASSERT_EQUAL(nsm_create(2048, 2048, 6, 1, 0, &nsid), NVME_SC_INVALID_FORMAT);
	CU_ASSERT_EQUAL(nsm_create(2048, 2048, 1, 0x11, 0, &nsid), NVME_SC_INVALID_FORMAT);
	/* Type 1 PI in 8 bytes of metadata fits; a 64b guard tuple (16 bytes) does not. */
	CU_ASSERT_EQUAL(nsm_create(2048, 2048, 1, 5, 0, &nsid), NVME_SC_INVALID_FORMAT);
	CU_ASSERT_EQUAL(nsm_create(2048, 2048, 0, 0, 2, &nsid), NVME_SC_INVALID_FIELD);
	CU_ASSERT_EQUAL(nsm_create(64 * 2048, 64 * 2048, 0, 0, 0, &nsid),
			NVME_SC_NS_INSUFFICIENT_CAP);
	/* ANA group, NVM set, CSI, SEL. */
	{
		struct nvme_id_ns *id = (struct nvme_id_ns *)nsm_data();

		sqe = lb_sqe(NVME_ADM_NS_MGMT, 0);
		sqe.dptr.prp.prp1 = nsm_buf;
		memset(id, 0, 4096);
		id->nsze = id->ncap = 2048;
		id->anagrpid = 1;
		CU_ASSERT_EQUAL(nsm_status_sc(nsm_cmd(&sqe, NULL)), NVME_SC_ANA_GROUP_ID_INVALID);
		id->anagrpid = 0;
		id->nvmsetid = 1;
		CU_ASSERT_EQUAL(nsm_status_sc(nsm_cmd(&sqe, NULL)), NVME_SC_INVALID_FIELD);
		id->nvmsetid = 0;
		sqe.cdw11 = 2u << 24; /* ZNS */
		CU_ASSERT_EQUAL(nsm_status_sc(nsm_cmd(&sqe, NULL)), NVME_SC_IOCS_NOT_SUPPORTED);
		sqe.cdw11 = 0;
		sqe.cdw10 = 2;
		CU_ASSERT_EQUAL(nsm_status_sc(nsm_cmd(&sqe, NULL)), NVME_SC_INVALID_FIELD);
	}
	/* Nothing was allocated by any of them. */
	CU_ASSERT_EQUAL(nsm_unvmcap(), 63 * NSM_MIB);
}

/* Namespaces created in any format Identify NSID FFFFFFFFh lists: their NSZE in their own
 * blocks, the pool charged for data, metadata and padding; Format NVM of one is kept in its pool
 * entry (the header). */
static void test_create_formats(void)
{
	struct nvme_id_ns *idns = (struct nvme_id_ns *)nsm_data();
	struct ctrlr_ns_pool_ns_info info;
	uint16_t me = 5;
	uint32_t a = 0, b = 0;
	struct nvme_sqe sqe;

	CU_ASSERT_EQUAL(nsm_identify(NVME_CNS_NS, NVME_NSID_ALL, 0), 0);
	CU_ASSERT_EQUAL(idns->nlbaf, 15);
	CU_ASSERT_EQUAL(idns->lbaf[1].ms, 8);
	CU_ASSERT_EQUAL(idns->lbaf[6].lbads, 12);
	/* 256 blocks of 4 KiB (format 6): 1 MiB of the pool. */
	CU_ASSERT_EQUAL(nsm_create(256, 256, 6, 0, 0, &a), 0);
	CU_ASSERT_EQUAL(nsm_unvmcap(), 62 * NSM_MIB);
	/* 2048 blocks of 512 + 8 with Type 1 PI, tuple first: 520 bytes each, in 2 MiB. */
	CU_ASSERT_EQUAL(nsm_create(2048, 2048, 0x11, 0x9, 0, &b), 0); /* FLBAS 1, extended */
	CU_ASSERT_EQUAL(nsm_unvmcap(), 60 * NSM_MIB);
	CU_ASSERT_EQUAL(nsm_identify(NVME_CNS_ALLOC_NS, a, 0), 0);
	CU_ASSERT_EQUAL(idns->nsze, 256);
	CU_ASSERT_EQUAL(idns->flbas & 0xf, 6);
	CU_ASSERT_EQUAL(nsm_attach(NVME_NS_ATTACH_SEL_ATTACH, b, &me, 1), 0);
	CU_ASSERT_EQUAL(nsm_identify(NVME_CNS_NS, b, 0), 0);
	CU_ASSERT_EQUAL(idns->nsze, 2048);
	CU_ASSERT_EQUAL(idns->flbas, 0x11);
	CU_ASSERT_EQUAL(idns->dps, 0x9);
	/* Format NVM of b to format 6 (4 KiB, no PI): its 2048 x 520 bytes hold 260 of them, and
	 * the pool's entry says so once the command completes. */
	sqe = lb_sqe(NVME_ADM_FORMAT_NVM, b);
	sqe.cdw10 = 6;
	CU_ASSERT_EQUAL(nsm_cmd(&sqe, NULL), 0);
	CU_ASSERT_EQUAL(nsm_identify(NVME_CNS_NS, b, 0), 0);
	CU_ASSERT_EQUAL(idns->nsze, 2048 * 520 / 4096);
	CU_ASSERT_TRUE(ctrlr_ns_pool_get_ns(nsm_pool, b, &info));
	CU_ASSERT_EQUAL(info.flbas, 6);
	CU_ASSERT_EQUAL(info.dps, 0);
	CU_ASSERT_EQUAL(nsm_attach(NVME_NS_ATTACH_SEL_DETACH, b, &me, 1), 0);
	CU_ASSERT_EQUAL(nsm_delete(a), 0);
	CU_ASSERT_EQUAL(nsm_delete(b), 0);
	CU_ASSERT_EQUAL(nsm_unvmcap(), 63 * NSM_MIB);
	/* Read (and so clear) the Changed Namespace List these changes filled. */
	sqe = lb_sqe(NVME_ADM_GET_LOG_PAGE, 0);
	sqe.cdw10 = NVME_LOG_CHANGED_NS | ((4096 / 4 - 1) << 16);
	sqe.dptr.prp.prp1 = nsm_buf;
	CU_ASSERT_EQUAL(nsm_cmd(&sqe, NULL), 0);
	nsm_aers = 0;
}

static void test_lifecycle(void)
{
	uint16_t me = 5, other = 6, twice[2] = {5, 5};
	uint32_t nsid = 0, n3 = 0, cdw0;
	struct nvme_sqe aer = lb_sqe(NVME_ADM_ASYNC_EVENT, 0);
	struct nvme_sqe sqe;
	struct nvme_id_ns *idns;
	uint16_t *cl;

	/* Namespace attribute notices on, one AER waiting. */
	sqe = lb_sqe(NVME_ADM_SET_FEATURES, 0);
	sqe.cdw10 = 0x0b;
	sqe.cdw11 = NVME_AEC_NS_ATTR;
	CU_ASSERT_EQUAL(nsm_cmd(&sqe, NULL), 0);
	CU_ASSERT_NOT_EQUAL(lb_submit(&lb, 0, &aer), LB_NO_CQE);

	CU_ASSERT_EQUAL(nsm_create(10 * 2048, 10 * 2048, 0, 0, 1, &nsid), 0);
	CU_ASSERT_EQUAL(nsid, 2); /* 1 is the operator's */
	CU_ASSERT_EQUAL(nsm_unvmcap(), 53 * NSM_MIB);
	CU_ASSERT_EQUAL(nsm_aers, 0); /* creating attaches nothing: no event */

	/* Allocated list (10h) has 1 and 2; active list (02h) only 1; 11h describes 2. */
	CU_ASSERT_EQUAL(nsm_identify(NVME_CNS_ALLOC_NS_LIST, 0, 0), 0);
	CU_ASSERT_TRUE(nsm_in_list(1) && nsm_in_list(2));
	CU_ASSERT_EQUAL(nsm_identify(NVME_CNS_ALLOC_NS_LIST, 1, 0), 0);
	CU_ASSERT_FALSE(nsm_in_list(1));
	CU_ASSERT_TRUE(nsm_in_list(2));
	CU_ASSERT_EQUAL(nsm_identify(NVME_CNS_ACTIVE_NS_LIST, 0, 0), 0);
	CU_ASSERT_FALSE(nsm_in_list(2));
	CU_ASSERT_EQUAL(nsm_identify(NVME_CNS_ALLOC_NS, 2, 0), 0);
	idns = (struct nvme_id_ns *)nsm_data();
	CU_ASSERT_EQUAL(idns->nsze, 10 * 2048);
	CU_ASSERT_EQUAL(idns->nmic, 1);
	CU_ASSERT_EQUAL(nsm_le64(idns->nvmcap), 10 * NSM_MIB);
	CU_ASSERT_EQUAL(nsm_identify(NVME_CNS_NS, 2, 0), 0); /* inactive: zeroes */
	CU_ASSERT_EQUAL(idns->nsze, 0);
	CU_ASSERT_EQUAL(nsm_identify(NVME_CNS_ALLOC_NS, 3, 0), 0); /* unallocated: zeroes */
	CU_ASSERT_EQUAL(idns->nsze, 0);
	CU_ASSERT_EQUAL(nsm_identify(NVME_CNS_ALLOC_NS, 0, 0), NVME_SC_INVALID_NS);
	CU_ASSERT_EQUAL(nsm_identify(NVME_CNS_NS_CTRL_LIST, 2, 0), 0);
	cl = (uint16_t *)nsm_data();
	CU_ASSERT_EQUAL(cl[0], 0);
	CU_ASSERT_EQUAL(nsm_identify(NVME_CNS_CTRL_LIST, 0, 0), 0);
	CU_ASSERT_EQUAL(cl[0], 1);
	CU_ASSERT_EQUAL(cl[1], 5);
	CU_ASSERT_EQUAL(nsm_identify(NVME_CNS_CTRL_LIST, 0, 6), 0); /* ids >= 6: none */
	CU_ASSERT_EQUAL(cl[0], 0);

	/* Attachment errors. */
	CU_ASSERT_EQUAL(nsm_attach(NVME_NS_ATTACH_SEL_ATTACH, 2, &me, 0), NVME_SC_CTRL_LIST_INVALID);
	CU_ASSERT_EQUAL(nsm_attach(NVME_NS_ATTACH_SEL_ATTACH, 2, &other, 1),
			NVME_SC_CTRL_LIST_INVALID);
	CU_ASSERT_EQUAL(nsm_attach(NVME_NS_ATTACH_SEL_ATTACH, 2, twice, 2),
			NVME_SC_CTRL_LIST_INVALID);
	CU_ASSERT_EQUAL(nsm_attach(NVME_NS_ATTACH_SEL_DETACH, 2, &me, 1), NVME_SC_NS_NOT_ATTACHED);
	CU_ASSERT_EQUAL(nsm_attach(NVME_NS_ATTACH_SEL_ATTACH, 3, &me, 1), NVME_SC_INVALID_FIELD);
	CU_ASSERT_EQUAL(nsm_attach(NVME_NS_ATTACH_SEL_ATTACH, 0, &me, 1), NVME_SC_INVALID_NS);
	CU_ASSERT_EQUAL(nsm_attach(NVME_NS_ATTACH_SEL_ATTACH, 33, &me, 1), NVME_SC_INVALID_NS);
	CU_ASSERT_EQUAL(nsm_attach(NVME_NS_ATTACH_SEL_ATTACH, NVME_NSID_ALL, &me, 1),
			NVME_SC_INVALID_FIELD);
	CU_ASSERT_EQUAL(nsm_attach(2, 2, &me, 1), NVME_SC_INVALID_FIELD);
	/* The operator's namespace: attached for good. */
	CU_ASSERT_EQUAL(nsm_attach(NVME_NS_ATTACH_SEL_ATTACH, 1, &me, 1),
			NVME_SC_NS_ALREADY_ATTACHED);
	CU_ASSERT_EQUAL(nsm_attach(NVME_NS_ATTACH_SEL_DETACH, 1, &me, 1), NVME_SC_INVALID_FIELD);
	CU_ASSERT_EQUAL(nsm_aers, 0);

	/* Attach: active, AEN (Namespace Attribute Changed), Changed Namespace List holds 2. */
	CU_ASSERT_EQUAL(nsm_attach(NVME_NS_ATTACH_SEL_ATTACH, 2, &me, 1), 0);
	CU_ASSERT_TRUE(nsm_pool->ns[1].attached);
	CU_ASSERT_EQUAL(nsm_identify(NVME_CNS_ACTIVE_NS_LIST, 0, 0), 0);
	CU_ASSERT_TRUE(nsm_in_list(2));
	CU_ASSERT_EQUAL(nsm_aers, 1);
	CU_ASSERT_EQUAL(nsm_aer_cqe.dw0, NVME_AER_DW0(NVME_AER_TYPE_NOTICE,
						      NVME_AER_NOTICE_NS_CHANGED,
						      NVME_LOG_CHANGED_NS));
	sqe = lb_sqe(NVME_ADM_GET_LOG_PAGE, 0);
	sqe.cdw10 = NVME_LOG_CHANGED_NS | ((4096 / 4 - 1) << 16);
	sqe.dptr.prp.prp1 = nsm_buf;
	CU_ASSERT_EQUAL(nsm_cmd(&sqe, NULL), 0);
	CU_ASSERT_EQUAL(((uint32_t *)nsm_data())[0], 2);
	CU_ASSERT_EQUAL(((uint32_t *)nsm_data())[1], 0);
	CU_ASSERT_EQUAL(nsm_attach(NVME_NS_ATTACH_SEL_ATTACH, 2, &me, 1),
			NVME_SC_NS_ALREADY_ATTACHED);
	CU_ASSERT_EQUAL(nsm_identify(NVME_CNS_NS_CTRL_LIST, 2, 0), 0);
	CU_ASSERT_EQUAL(cl[0], 1);
	CU_ASSERT_EQUAL(cl[1], 5);
	CU_ASSERT_EQUAL(nsm_identify(NVME_CNS_NS, 2, 0), 0);
	CU_ASSERT_EQUAL(idns->nsze, 10 * 2048);
	CU_ASSERT_EQUAL(idns->nmic, 1);

	/* I/O on it reaches the pool at its extent. */
	{
		struct ctrlr_ns_pool_ns_info ni;
		struct bdev_channel *ch;
		uint64_t io = lb_alloc(&lb, 4096);
		uint8_t rb[4096];

		CU_ASSERT_EQUAL_FATAL(lb_create_qpair(&lb, 1, 16, 1, true), 0);
		memset(lb_ptr(&lb, io), 0x3c, 4096);
		sqe = lb_sqe(NVME_CMD_WRITE, 2);
		sqe.cdw10 = 100;
		sqe.cdw12 = 7; /* 8 blocks */
		sqe.dptr.prp.prp1 = io;
		CU_ASSERT_EQUAL(lb_cmd(&lb, 1, &sqe, NULL), 0);
		CU_ASSERT_TRUE(ctrlr_ns_pool_get_ns(nsm_pool, 2, &ni));
		CU_ASSERT_EQUAL_FATAL(bdev_open(bdev_lookup("nsm_pool")), 0);
		CU_ASSERT_EQUAL_FATAL(bdev_channel_create(bdev_lookup("nsm_pool"), &ch), 0);
		CU_ASSERT_EQUAL(ut_rw_sync(ch, 512, BDEV_IO_READ, ni.offset_bytes / 512 + 100, 8, rb,
					   NULL),
				0);
		CU_ASSERT_EQUAL(memcmp(rb, lb_ptr(&lb, io), 4096), 0);
		bdev_channel_destroy(ch);
		bdev_close(bdev_lookup("nsm_pool"));
	}

	/* A second namespace fills most of the rest; then no NSID is left (max 4). */
	CU_ASSERT_EQUAL(nsm_create(50 * 2048, 50 * 2048, 0, 0, 0, &n3), 0);
	CU_ASSERT_EQUAL(n3, 3);
	CU_ASSERT_EQUAL(nsm_create(4 * 2048, 4 * 2048, 0, 0, 0, &cdw0), NVME_SC_NS_INSUFFICIENT_CAP);
	CU_ASSERT_EQUAL(nsm_create(2048, 2048, 0, 0, 0, &cdw0), 0);
	CU_ASSERT_EQUAL(cdw0, 4);
	CU_ASSERT_EQUAL(nsm_create(2048, 2048, 0, 0, 0, &cdw0), NVME_SC_NS_ID_UNAVAILABLE);

	/* Delete errors: the operator's, unallocated, invalid. */
	CU_ASSERT_EQUAL(nsm_delete(1), NVME_SC_INVALID_FIELD);
	CU_ASSERT_EQUAL(nsm_delete(5), NVME_SC_INVALID_FIELD);
	CU_ASSERT_EQUAL(nsm_delete(0), NVME_SC_INVALID_NS);
	CU_ASSERT_EQUAL(nsm_delete(33), NVME_SC_INVALID_NS);

	/* Detach: inactive again, AEN after the log was read, capacity unchanged. */
	CU_ASSERT_NOT_EQUAL(lb_submit(&lb, 0, &aer), LB_NO_CQE);
	CU_ASSERT_EQUAL(nsm_attach(NVME_NS_ATTACH_SEL_DETACH, 2, &me, 1), 0);
	CU_ASSERT_FALSE(nsm_pool->ns[1].attached);
	CU_ASSERT_EQUAL(nsm_identify(NVME_CNS_ACTIVE_NS_LIST, 0, 0), 0);
	CU_ASSERT_FALSE(nsm_in_list(2));
	CU_ASSERT_EQUAL(nsm_aers, 2);
	CU_ASSERT_EQUAL(nsm_unvmcap(), 2 * NSM_MIB);

	/* Re-attach, then delete while attached: detached first (its bdev released), then gone. */
	CU_ASSERT_EQUAL(nsm_attach(NVME_NS_ATTACH_SEL_ATTACH, 2, &me, 1), 0);
	CU_ASSERT_EQUAL(nsm_delete(2), 0);
	CU_ASSERT_PTR_NULL(bdev_lookup("nsm_pooln2"));
	CU_ASSERT_EQUAL(nsm_identify(NVME_CNS_ALLOC_NS_LIST, 0, 0), 0);
	CU_ASSERT_FALSE(nsm_in_list(2));
	CU_ASSERT_TRUE(nsm_in_list(3));
	CU_ASSERT_EQUAL(nsm_unvmcap(), 12 * NSM_MIB);
	/* The freed NSID and extent are taken again. */
	CU_ASSERT_EQUAL(nsm_create(10 * 2048, 10 * 2048, 0, 0, 0, &cdw0), 0);
	CU_ASSERT_EQUAL(cdw0, 2);

	/* Delete all (NSID FFFFFFFFh): the pool's namespaces go, the operator's stays. */
	CU_ASSERT_EQUAL(nsm_attach(NVME_NS_ATTACH_SEL_ATTACH, 3, &me, 1), 0);
	CU_ASSERT_EQUAL(nsm_delete(NVME_NSID_ALL), 0);
	CU_ASSERT_EQUAL(nsm_unvmcap(), 63 * NSM_MIB);
	CU_ASSERT_EQUAL(nsm_identify(NVME_CNS_ALLOC_NS_LIST, 0, 0), 0);
	CU_ASSERT_TRUE(nsm_in_list(1));
	CU_ASSERT_FALSE(nsm_in_list(2) || nsm_in_list(3) || nsm_in_list(4));
	CU_ASSERT_EQUAL(nsm_delete(NVME_NSID_ALL), 0); /* nothing left: still fine */
	CU_ASSERT_EQUAL(nsm_identify(NVME_CNS_ACTIVE_NS_LIST, 0, 0), 0);
	CU_ASSERT_TRUE(nsm_in_list(1));
}

/* The last Change Namespace event of the controller's Persistent Event Log (its data), or NULL. */
static const uint8_t *nsm_pel_last_change(uint32_t *count)
{
	const struct ctrlr_pel *p = &ctrlr_dev(lb.ctrlr)->pel;
	const uint8_t *last = NULL;

	*count = 0;
	for (size_t off = 0; off + sizeof(struct nvme_pel_event) <= p->len;) {
		struct nvme_pel_event e;

		memcpy(&e, p->buf + off, sizeof(e));
		if (e.etype == NVME_PEL_CHANGE_NS) {
			last = p->buf + off + sizeof(e);
			(*count)++;
		}
		off += sizeof(e) + e.el;
	}
	return last;
}

/* Persistent Event Log: a creation and a deletion each leave a Change Namespace event (06h)
 * with the command's CDW10, the size and format asked for, and the NSID. */
static void test_pel_change_ns(void)
{
	const uint8_t *d;
	uint32_t nsid = 0, n0, n, v;

	d = nsm_pel_last_change(&n0);
	CU_ASSERT_EQUAL(nsm_create(2048, 2048, 0, 0, NVME_NMIC_SHARED, &nsid), 0);
	d = nsm_pel_last_change(&n);
	CU_ASSERT_EQUAL(n, n0 + 1);
	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	memcpy(&v, d, 4);
	CU_ASSERT_EQUAL(v & 0xf, NVME_NS_MGMT_SEL_CREATE);
	CU_ASSERT_EQUAL(nsm_le64(d + 8), 2048);
	CU_ASSERT_EQUAL(nsm_le64(d + 16), 2048);
	CU_ASSERT_EQUAL(d[34], NVME_NMIC_SHARED);
	memcpy(&v, d + 44, 4);
	CU_ASSERT_EQUAL(v, nsid);
	CU_ASSERT_EQUAL(nsm_delete(nsid), 0);
	d = nsm_pel_last_change(&n);
	CU_ASSERT_EQUAL(n, n0 + 2);
	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	memcpy(&v, d, 4);
	CU_ASSERT_EQUAL(v & 0xf, NVME_NS_MGMT_SEL_DELETE);
	memcpy(&v, d + 44, 4);
	CU_ASSERT_EQUAL(v, nsid);
	/* A failed one leaves none. */
	CU_ASSERT_NOT_EQUAL(nsm_delete(nsid), 0);
	nsm_pel_last_change(&n);
	CU_ASSERT_EQUAL(n, n0 + 2);
}

/* ---- Capacity: what a host computes from UNVMCAP must fit, in every format ---- */

#define CAP_POOL_MIB 25u /* the pool's namespace area: 24 MiB after the header's */

static void cap_pool_bind(struct bdev *base)
{
	nsm_pool_bind(base, 0);
}

static void cap_pool_unbind(void)
{
	ctrlr_pool_unbind(lb.ctrlr);
	CU_ASSERT_EQUAL(ctrlr_ns_pool_destroy(nsm_pool), 0);
	nsm_pool = NULL;
}

/* One logical block of nsid at lba, data and metadata in one buffer (extended LBA): a Write or
 * Read of io (ds + ms bytes, two pages). Returns the status. */
static uint16_t cap_rw(uint8_t opc, uint32_t nsid, uint64_t lba, uint64_t io)
{
	struct nvme_sqe sqe = lb_sqe(opc, nsid);

	sqe.cdw10 = (uint32_t)lba;
	sqe.cdw11 = (uint32_t)(lba >> 32);
	sqe.dptr.prp.prp1 = io;
	sqe.dptr.prp.prp2 = io + 4096;
	return nsm_status_sc(lb_cmd(&lb, 1, &sqe, NULL));
}

/* For every format Identify NSID FFFFFFFFh offers: NSZE = UNVMCAP / (LBA data size + metadata
 * size) is created (one block more is Namespace Insufficient Capacity), takes UNVMCAP to 0 with
 * NVMCAP = TNVMCAP - the operator's, holds its first and last blocks with their metadata (one
 * past the last is LBA Out of Range), and gives the capacity back when deleted. */
static void cap_fill_every_format(void)
{
	struct nvme_id_ns *idns = (struct nvme_id_ns *)nsm_data();
	struct nvme_id_ctrl *idc = (struct nvme_id_ctrl *)nsm_data();
	uint64_t io = lb_alloc(&lb, 8192), total, unvm;
	uint8_t want[8192];
	uint16_t me = 5;
	int nlbaf;

	CU_ASSERT_EQUAL(nsm_identify(NVME_CNS_CTRL, 0, 0), 0);
	total = nsm_le64(idc->tnvmcap);
	unvm = nsm_le64(idc->unvmcap);
	CU_ASSERT_EQUAL(unvm, (CAP_POOL_MIB - 1) * NSM_MIB);
	CU_ASSERT_EQUAL(total, unvm + NSM_MIB); /* and the operator's 1 MiB namespace */
	CU_ASSERT_EQUAL(nsm_identify(NVME_CNS_NS, NVME_NSID_ALL, 0), 0);
	nlbaf = idns->nlbaf + 1;
	CU_ASSERT_EQUAL(nlbaf, 16);
	for (int f = 0; f < nlbaf; f++) {
		uint32_t ds, ms, nsid = 0, bytes;
		uint64_t nsze;
		uint8_t flbas;

		CU_ASSERT_EQUAL(nsm_identify(NVME_CNS_NS, NVME_NSID_ALL, 0), 0);
		ds = 1u << idns->lbaf[f].lbads;
		ms = idns->lbaf[f].ms;
		CU_ASSERT_EQUAL(idns->lbaf[f].rp, 0); /* nothing wasted: the best */
		bytes = ds + ms;
		nsze = unvm / bytes;
		flbas = (uint8_t)(f | (ms ? NVME_FLBAS_EXTENDED : 0));
		CU_ASSERT_EQUAL(nsm_create(nsze + 1, nsze + 1, flbas, 0, 0, &nsid),
				NVME_SC_NS_INSUFFICIENT_CAP);
		CU_ASSERT_EQUAL_FATAL(nsm_create(nsze, nsze, flbas, 0, 0, &nsid), 0);
		CU_ASSERT_EQUAL(nsm_unvmcap(), 0);
		CU_ASSERT_EQUAL(nsm_identify(NVME_CNS_ALLOC_NS, nsid, 0), 0);
		CU_ASSERT_EQUAL(idns->nsze, nsze);
		CU_ASSERT_EQUAL(nsm_le64(idns->nvmcap), unvm);
		CU_ASSERT_EQUAL(nsm_attach(NVME_NS_ATTACH_SEL_ATTACH, nsid, &me, 1), 0);
		for (int k = 0; k < 2; k++) {
			uint64_t lba = k ? nsze - 1 : 0;

			ut_pattern(want, bytes, (unsigned int)(f * 2 + k + 1));
			memcpy(lb_ptr(&lb, io), want, bytes);
			CU_ASSERT_EQUAL(cap_rw(NVME_CMD_WRITE, nsid, lba, io), 0);
			memset(lb_ptr(&lb, io), 0, bytes);
			CU_ASSERT_EQUAL(cap_rw(NVME_CMD_READ, nsid, lba, io), 0);
			CU_ASSERT_EQUAL(memcmp(lb_ptr(&lb, io), want, bytes), 0);
		}
		/* The first block is still intact after the last one's write. */
		ut_pattern(want, bytes, (unsigned int)(f * 2 + 1));
		CU_ASSERT_EQUAL(cap_rw(NVME_CMD_READ, nsid, 0, io), 0);
		CU_ASSERT_EQUAL(memcmp(lb_ptr(&lb, io), want, bytes), 0);
		CU_ASSERT_EQUAL(cap_rw(NVME_CMD_WRITE, nsid, nsze, io), NVME_SC_LBA_RANGE);
		CU_ASSERT_EQUAL(nsm_attach(NVME_NS_ATTACH_SEL_DETACH, nsid, &me, 1), 0);
		CU_ASSERT_EQUAL(nsm_delete(nsid), 0);
		CU_ASSERT_EQUAL(nsm_unvmcap(), unvm);
	}
	/* Two namespaces of half the capacity each in the 4096 + 64 format fill it too. */
	{
		uint32_t a = 0, b = 0;
		uint64_t half = unvm / 2 / (4096 + 64);

		CU_ASSERT_EQUAL(unvm % (2 * NSM_MIB), 0);
		CU_ASSERT_EQUAL(nsm_create(half, half, 10, 0, 0, &a), 0);
		CU_ASSERT_EQUAL(nsm_create(half, half, 10, 0, 0, &b), 0);
		CU_ASSERT_EQUAL(nsm_unvmcap(), 0);
		CU_ASSERT_EQUAL(nsm_delete(a), 0);
		CU_ASSERT_EQUAL(nsm_delete(b), 0);
	}
	/* Drop the Namespace Attribute Changed AENs and the list these changes filled. */
	{
		struct nvme_sqe sqe = lb_sqe(NVME_ADM_GET_LOG_PAGE, 0);

		sqe.cdw10 = NVME_LOG_CHANGED_NS | ((4096 / 4 - 1) << 16);
		sqe.dptr.prp.prp1 = nsm_buf;
		CU_ASSERT_EQUAL(nsm_cmd(&sqe, NULL), 0);
		nsm_aers = 0;
	}
}

static int cap_init(void)
{
	if (nsm_init())
		return -1;
	return lb_create_qpair(&lb, 1, 16, 1, true) ? -1 : 0;
}

static void test_capacity_ram(void)
{
	struct bdev *base = bdev_lookup("nsm_pool");

	CU_ASSERT_EQUAL_FATAL(bdev_delete("nsm_pool"), 0);
	CU_ASSERT_EQUAL_FATAL(bdev_malloc_create("nsm_pool", CAP_POOL_MIB * 2048, 512, NULL, &base),
			      0);
	cap_pool_bind(base);
	cap_fill_every_format();
	cap_pool_unbind();
}

static void test_capacity_file(void)
{
	char path[64];

	cap_pool_bind(ut_aio_temp_create("cap_file", CAP_POOL_MIB * NSM_MIB, path));
	cap_fill_every_format();
	cap_pool_unbind();
	ut_aio_temp_delete("cap_file", path);
}

CUNIT_SUITE(ns_pool, nsm_pool_suite_init, NULL, {"pool_extents", test_pool_extents},
	    {"pool_persistence", test_pool_persistence}, {"region_io", test_region_io})
CUNIT_SUITE(ns_mgmt, nsm_init, nsm_fini, {"no_pool", test_no_pool}, {"bind", test_bind},
	    {"create_errors", test_create_errors}, {"create_formats", test_create_formats},
	    {"lifecycle", test_lifecycle}, {"pel_change_ns", test_pel_change_ns})
CUNIT_SUITE(ns_capacity, cap_init, nsm_fini, {"ram", test_capacity_ram},
	    {"file", test_capacity_file})
