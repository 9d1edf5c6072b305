/* tests/perf/dpa_bench.h - the measurements of the dpa benches, shared by
 * the fake-hw bench (dpa_bench.c) and the real-hw bench over the vfio-user
 * socket (dpa_bench_hw.c), which differ only in their environment. */
#ifndef NVME_EMU_TESTS_PERF_DPA_BENCH_H
#define NVME_EMU_TESTS_PERF_DPA_BENCH_H

#include "dpa/nvme_dpa.h"
#include "hw/hw.h"

#include <stdbool.h>
#include <stdint.h>

#define BENCH_DBS 64

struct bench;

/* How one environment builds the device side and rings doorbells. */
struct bench_env {
	const char *name;
	const char *description;
	/* Creates the device, b->dpa (with b->harts), b->ch and b->db[] (not
	 * bound, not started) on the right threads. 0 or -errno. */
	int (*create)(struct bench *b);
	/* Run the control-plane steps on the device's loop thread. */
	void (*start_dbs)(struct bench *b);
	void (*stop_dbs)(struct bench *b);
	/* Destroys what create made (DBs unbound by then). */
	void (*destroy)(struct bench *b);
	/* A driver doorbell write; called by one writer thread at a time. */
	void (*ring)(struct bench *b, uint32_t id, uint32_t value);
};

struct bench {
	const struct bench_env *env;
	unsigned int harts;
	enum hw_db_mode mode;
	struct dpa *dpa;
	struct dpa_nvme_chan *ch;
	struct dpa_db *db[BENCH_DBS];
	void *priv; /* the environment's */
};

/* Runs every configuration (trap/mmap x 1 hart/fused), prints the table and
 * the summary line; argv: --quick (short samples), --json FILE (results for
 * the bench report). Returns the exit status. */
int bench_main(const struct bench_env *env, int argc, char **argv);

#endif
