/* tests/perf/dpa_bench.c - dpa-bench: the dpa bench with the in-memory fake
 * of hw/ (tests/unit/dpa/fake_hw.c), which isolates the cost of the DPA
 * model from the vfio-user transport. */
#include "tests/perf/dpa_bench.h"
#include "tests/unit/dpa/fake_hw.h"

#include <errno.h>

static int fake_create(struct bench *b)
{
	unsigned int i;

	b->priv = fake_hw_dev_create(b->mode);
	b->dpa = dpa_create(b->harts);
	if (!b->priv || !b->dpa)
		return -ENOMEM;
	b->ch = dpa_nvme_chan_create(b->dpa, -1, 4096);
	if (!b->ch)
		return -errno;
	/* The fake has no loop thread: the control plane is this thread. */
	for (i = 0; i < BENCH_DBS; i++) {
		b->db[i] = dpa_db_create(dpa_nvme_chan_db_comp(b->ch), b->priv, i);
		if (!b->db[i])
			return -errno;
	}
	return 0;
}

static void fake_start_dbs(struct bench *b)
{
	for (unsigned int i = 0; i < BENCH_DBS; i++)
		dpa_db_start(b->db[i]);
}

static void fake_stop_dbs(struct bench *b)
{
	for (unsigned int i = 0; i < BENCH_DBS; i++)
		if (b->db[i])
			dpa_db_stop(b->db[i]);
}

static void fake_destroy(struct bench *b)
{
	for (unsigned int i = 0; i < BENCH_DBS; i++)
		if (b->db[i])
			dpa_db_destroy(b->db[i]);
	if (b->ch)
		dpa_nvme_chan_destroy(b->ch);
	if (b->dpa)
		dpa_destroy(b->dpa);
	fake_hw_dev_destroy(b->priv);
}

/* trap: the notify hook runs on the writer thread, as on the loop thread. */
static void fake_ring(struct bench *b, uint32_t id, uint32_t value)
{
	fake_hw_db_write(b->priv, id, value);
}

static const struct bench_env fake_env = {
    .name = "dpa-bench",
    .description = "hw = in-memory fake (tests/unit/dpa/fake_hw.c): trap = the notify hook "
		   "runs on the writer thread as on the device loop thread; mmap = plain "
		   "stores into the doorbell page. No vfio-user transport.",
    .create = fake_create,
    .start_dbs = fake_start_dbs,
    .stop_dbs = fake_stop_dbs,
    .destroy = fake_destroy,
    .ring = fake_ring,
};

int main(int argc, char **argv)
{
	return bench_main(&fake_env, argc, argv);
}
