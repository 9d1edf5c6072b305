/* tests/unit/backend/bdev_rbd_test.c - the RBD bdev against a real single-node Ceph cluster that
 * the suite starts (tests/lib/ceph-cluster.sh: a monitor and a memstore OSD on 127.0.0.1): the
 * random model workload, FUA and flush, write zeroes and deallocation reading back zeroes,
 * bdev_rbd_resize and a resize by the rbd CLI both reaching the bdev's user, the configuration
 * given as a map instead of a file, creation errors. When no cluster can run on the machine, each
 * test says why and checks nothing. */
#include "backend/bdev.h"
#include "tests/unit/backend/bdev_ut_loop.h"
#include "tests/unit/backend/bdev_ut_util.h"
#include "tests/unit/cunit_runner.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define RUT_BS 512u

static char rut_dir[64];
static char rut_conf[256];
static char rut_why[512]; /* set when no cluster can run here */

static int rut_sh(const char *fmt, const char *arg1, const char *arg2)
{
	char cmd[1024];
	int rc;

	snprintf(cmd, sizeof(cmd), fmt, arg1, arg2);
	rc = system(cmd);
	return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

static bool rut_skip(void)
{
	if (rut_why[0])
		printf("SKIPPED (no Ceph cluster on this machine: %s) ", rut_why);
	return rut_why[0];
}

/* rbd CLI: create/resize an image of `mib` MiB. */
static int rut_rbd(const char *verb, const char *image, unsigned int mib)
{
	char cmd[1024];

	snprintf(cmd, sizeof(cmd), "CEPH_CONF=%s timeout 60 rbd %s --size %uM rbd/%s %s", rut_conf,
		 verb, mib, image, !strcmp(verb, "resize") ? "--allow-shrink >/dev/null 2>&1" : "");
	return system(cmd);
}

static void rut_do_create(struct ut_loop_call *c)
{
	c->rc = bdev_rbd_create(c->name, c->opts, ut_loop(), ut_loop_created, c);
	if (c->rc)
		ut_loop_done(c);
}

static int rut_create(const char *name, const struct bdev_rbd_opts *o, struct bdev **out,
		      char *msg, size_t msglen)
{
	struct ut_loop_call c = {.name = name, .opts = o};

	ut_loop_call(&c, rut_do_create);
	if (msg)
		snprintf(msg, msglen, "%s", c.message);
	if (c.rc)
		return c.rc;
	if (out)
		*out = c.bdev;
	return c.create_rc;
}

/* Resize notifications seen by the bdev's user (runs on the loop thread). */
static uint64_t rut_resized_to;
static int rut_resizes;

static void rut_resize_cb(struct bdev *bdev, uint64_t num_blocks, void *arg)
{
	__atomic_store_n(&rut_resized_to, num_blocks, __ATOMIC_RELEASE);
	__atomic_add_fetch(&rut_resizes, 1, __ATOMIC_ACQ_REL);
}

static void rut_do_set_cb(struct ut_loop_call *c)
{
	bdev_set_resize_cb(c->bdev, rut_resize_cb, NULL);
	ut_loop_done(c);
}

static void rut_resized(void *arg, int rc, const char *message)
{
	struct ut_loop_call *c = arg;

	c->create_rc = rc;
	snprintf(c->message, sizeof(c->message), "%s", message ? message : "");
	ut_loop_done(c);
}

static void rut_do_resize(struct ut_loop_call *c)
{
	c->rc = bdev_rbd_resize(c->name, c->u64, rut_resized, c);
	if (c->rc)
		ut_loop_done(c);
}

static int rut_resize(const char *name, uint64_t bytes)
{
	struct ut_loop_call c = {.name = name, .u64 = bytes};

	ut_loop_call(&c, rut_do_resize);
	return c.rc ? c.rc : c.create_rc;
}

static void rut_close(struct ut_dev *d, const char *name)
{
	ut_dev_close(d);
	CU_ASSERT_EQUAL(ut_loop_delete(name), 0);
}

/* The model workload, then flush/FUA and zeroes, with the configuration file ($CEPH_CONF). */
static void test_model_and_zeroes(void)
{
	struct bdev_rbd_opts o = {.pool_name = "rbd", .rbd_name = "model", .block_size = RUT_BS};
	unsigned char *buf = malloc(64 * RUT_BS), *back = malloc(64 * RUT_BS);
	struct bdev_range r = {.offset_blocks = 40, .num_blocks = 8};
	struct bdev_info info;
	struct bdev *b = NULL;
	struct ut_dev d;
	char msg[512];

	if (rut_skip())
		goto out;
	CU_ASSERT_EQUAL_FATAL(rut_rbd("create", "model", 16), 0);
	CU_ASSERT_EQUAL_FATAL(rut_create("rbd0", &o, &b, msg, sizeof(msg)), 0);
	CU_ASSERT_EQUAL(bdev_get_num_blocks(b), (16u << 20) / RUT_BS);
	CU_ASSERT_STRING_EQUAL(bdev_get_module_name(b), "rbd");
	CU_ASSERT_TRUE(bdev_io_size(b) <= UT_IO_SIZE);
	CU_ASSERT_TRUE(bdev_has_write_cache(b));
	info = ut_loop_info("rbd0");
	CU_ASSERT_STRING_EQUAL(info.rbd_pool, "rbd");
	CU_ASSERT_STRING_EQUAL(info.rbd_image, "model");
	ut_dev_open(&d, b);
	CU_ASSERT_EQUAL(ut_model_run(d.ch, RUT_BS, 4096, 3, 25, 32), 0);
	ut_pattern(buf, 64 * RUT_BS, 9);
	CU_ASSERT_EQUAL(ut_rw_sync(d.ch, RUT_BS, BDEV_IO_WRITE, 0, 64, buf, NULL), 0);
	CU_ASSERT_EQUAL(ut_nodata_sync(d.ch, BDEV_IO_WRITE_ZEROES, 8, 8, BDEV_IO_F_FUA), 0);
	CU_ASSERT_EQUAL(ut_unmap_sync(d.ch, &r, 1), 0);
	CU_ASSERT_EQUAL(ut_nodata_sync(d.ch, BDEV_IO_FLUSH, 0, 0, 0), 0);
	CU_ASSERT_EQUAL(ut_rw_sync(d.ch, RUT_BS, BDEV_IO_READ, 0, 64, back, NULL), 0);
	CU_ASSERT_EQUAL(memcmp(back, buf, 8 * RUT_BS), 0);
	CU_ASSERT_TRUE(ut_is_zero(back + 8 * RUT_BS, 8 * RUT_BS));
	CU_ASSERT_EQUAL(memcmp(back + 16 * RUT_BS, buf + 16 * RUT_BS, 24 * RUT_BS), 0);
	CU_ASSERT_TRUE(ut_is_zero(back + 40 * RUT_BS, 8 * RUT_BS));
	CU_ASSERT_EQUAL(memcmp(back + 48 * RUT_BS, buf + 48 * RUT_BS, 16 * RUT_BS), 0);
	/* A FUA write with the cache off. */
	CU_ASSERT_EQUAL(bdev_set_write_cache(b, false), 0);
	CU_ASSERT_EQUAL(ut_rw_sync(d.ch, RUT_BS, BDEV_IO_WRITE, 100, 1, buf, NULL), 0);
	CU_ASSERT_EQUAL(ut_rw_sync(d.ch, RUT_BS, BDEV_IO_READ, (16u << 20) / RUT_BS, 1, back, NULL),
			-ERANGE);
	rut_close(&d, "rbd0");
out:
	free(buf);
	free(back);
}

/* bdev_rbd_resize, then a resize by the rbd CLI: both reach the bdev's user; I/O goes to the new
 * blocks; shrinking is refused. The configuration comes as a map here. */
static void test_resize_and_config_map(void)
{
	char mon_host[256] = "";
	const char *config[] = {"mon_host", mon_host, "auth_client_required", "none"};
	struct bdev_rbd_opts o = {.pool_name = "rbd", .rbd_name = "grow", .block_size = 4096,
				  .config = config, .nconfig = 2};
	struct ut_loop_call c = {0};
	unsigned char buf[4096], back[4096];
	struct bdev *b = NULL;
	struct ut_dev d;
	FILE *f;

	if (rut_skip())
		return;
	/* mon host from the cluster's file, but given as a map: no file is read. */
	f = fopen(rut_conf, "r");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	while (fgets((char *)buf, sizeof(buf), f))
		if (sscanf((char *)buf, "mon host = %255[^\n]", mon_host) == 1)
			break;
	fclose(f);
	CU_ASSERT_NOT_EQUAL_FATAL(mon_host[0], '\0');
	CU_ASSERT_EQUAL_FATAL(rut_rbd("create", "grow", 8), 0);
	unsetenv("CEPH_CONF");
	CU_ASSERT_EQUAL_FATAL(rut_create("rbd1", &o, &b, NULL, 0), 0);
	setenv("CEPH_CONF", rut_conf, 1);
	CU_ASSERT_EQUAL(ut_loop_info("rbd1").rbd_nconfig, 2);
	c.bdev = b;
	ut_loop_call(&c, rut_do_set_cb);
	ut_dev_open(&d, b);
	CU_ASSERT_EQUAL(bdev_get_num_blocks(b), 2048);
	CU_ASSERT_EQUAL(rut_resize("rbd1", 4u << 20), -EINVAL); /* shrink */
	CU_ASSERT_EQUAL(rut_resize("rbd1", (16u << 20) + 512), -EINVAL); /* not whole blocks */
	CU_ASSERT_EQUAL(rut_resize("nope", 16u << 20), -ENODEV);
	CU_ASSERT_EQUAL(rut_resize("rbd1", 16u << 20), 0);
	CU_ASSERT_EQUAL(bdev_get_num_blocks(b), 4096);
	CU_ASSERT_EQUAL(__atomic_load_n(&rut_resized_to, __ATOMIC_ACQUIRE), 4096);
	ut_pattern(buf, sizeof(buf), 10);
	CU_ASSERT_EQUAL(ut_rw_sync(d.ch, 4096, BDEV_IO_WRITE, 4095, 1, buf, NULL), 0);
	CU_ASSERT_EQUAL(ut_rw_sync(d.ch, 4096, BDEV_IO_READ, 4095, 1, back, NULL), 0);
	CU_ASSERT_EQUAL(memcmp(buf, back, sizeof(buf)), 0);
	/* Someone else grows the image: the header watch brings the new size. */
	CU_ASSERT_EQUAL(rut_rbd("resize", "grow", 32), 0);
	for (int i = 0; i < 300 && bdev_get_num_blocks(b) != 8192; i++)
		usleep(20000);
	CU_ASSERT_EQUAL(bdev_get_num_blocks(b), 8192);
	CU_ASSERT_EQUAL(__atomic_load_n(&rut_resized_to, __ATOMIC_ACQUIRE), 8192);
	CU_ASSERT_TRUE(__atomic_load_n(&rut_resizes, __ATOMIC_ACQUIRE) >= 2);
	rut_close(&d, "rbd1");
}

static void test_create_errors(void)
{
	struct bdev_rbd_opts o = {.pool_name = "nopool", .rbd_name = "x", .block_size = RUT_BS};
	const char *badcfg[] = {"no_such_option_anywhere", "1"};
	struct bdev *b = NULL;
	char msg[512];

	if (rut_skip())
		return;
	CU_ASSERT_EQUAL(rut_create("rbd2", &o, &b, msg, sizeof(msg)), -ENOENT);
	CU_ASSERT_PTR_NOT_NULL(strstr(msg, "pool nopool"));
	o.pool_name = "rbd";
	o.rbd_name = "missing";
	CU_ASSERT_EQUAL(rut_create("rbd2", &o, &b, msg, sizeof(msg)), -ENOENT);
	CU_ASSERT_PTR_NOT_NULL(strstr(msg, "image rbd/missing"));
	o.config = badcfg;
	o.nconfig = 1;
	CU_ASSERT_NOT_EQUAL(rut_create("rbd2", &o, &b, msg, sizeof(msg)), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(msg, "no_such_option_anywhere"));
	o.config = NULL;
	o.nconfig = 0;
	o.block_size = 1000;
	CU_ASSERT_EQUAL(rut_create("rbd2", &o, &b, NULL, 0), -EINVAL);
	o.block_size = RUT_BS;
	o.pool_name = "";
	CU_ASSERT_EQUAL(rut_create("rbd2", &o, &b, NULL, 0), -EINVAL);
	/* A name taken (the first one stays). */
	CU_ASSERT_EQUAL_FATAL(rut_rbd("create", "taken", 4), 0);
	o.pool_name = "rbd";
	o.rbd_name = "taken";
	CU_ASSERT_EQUAL_FATAL(rut_create("rbd2", &o, &b, NULL, 0), 0);
	CU_ASSERT_EQUAL(rut_create("rbd2", &o, &b, NULL, 0), -EEXIST);
	CU_ASSERT_EQUAL(ut_loop_delete("rbd2"), 0);
}

static int rut_init(void)
{
	char out[512];
	FILE *p;
	int rc;

	snprintf(rut_dir, sizeof(rut_dir), "/tmp/rbd_ut.XXXXXX");
	if (!mkdtemp(rut_dir))
		return -1;
	snprintf(out, sizeof(out), "tests/lib/ceph-cluster.sh start %s/ceph 2>%s/why", rut_dir,
		 rut_dir);
	p = popen(out, "r");
	if (!p)
		return -1;
	if (!fgets(rut_conf, sizeof(rut_conf), p))
		rut_conf[0] = '\0';
	rc = pclose(p);
	rut_conf[strcspn(rut_conf, "\n")] = '\0';
	if (!WIFEXITED(rc) || WEXITSTATUS(rc) != 0 || !rut_conf[0]) {
		char why_path[128];
		FILE *w;

		snprintf(why_path, sizeof(why_path), "%s/why", rut_dir);
		w = fopen(why_path, "r");
		if (!w || !fgets(rut_why, sizeof(rut_why), w))
			snprintf(rut_why, sizeof(rut_why), "ceph-cluster.sh failed");
		if (w)
			fclose(w);
		rut_why[strcspn(rut_why, "\n")] = '\0';
		/* Exit 77 is "cannot run here"; anything else is a failure of the harness. */
		if (!WIFEXITED(rc) || WEXITSTATUS(rc) != 77)
			return -1;
		fprintf(stderr, "bdev_rbd: %s\n", rut_why);
	} else {
		setenv("CEPH_CONF", rut_conf, 1);
	}
	return ut_loop_start();
}

static void rut_idle(void *arg)
{
	ut_loop_done(arg);
}

static void rut_do_wait_idle(struct ut_loop_call *c)
{
	if (bdev_rbd_when_idle(rut_idle, c) == 0)
		ut_loop_done(c);
}

/* Deleted images close on their own threads: every one is closed (threads joined) before the
 * loop stops. */
static void test_all_closed(void)
{
	struct ut_loop_call c = {0};

	ut_loop_call(&c, rut_do_wait_idle);
}

static int rut_cleanup(void)
{
	ut_loop_stop();
	rut_sh("tests/lib/ceph-cluster.sh stop %s/ceph%s", rut_dir, "");
	rut_sh("rm -rf %s%s", rut_dir, "");
	return 0;
}

CUNIT_SUITE(bdev_rbd, rut_init, rut_cleanup, {"model_and_zeroes", test_model_and_zeroes},
	    {"resize_and_config_map", test_resize_and_config_map},
	    {"create_errors", test_create_errors}, {"all_closed", test_all_closed})
