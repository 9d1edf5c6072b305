/* common/lat_hist.h - log-linear latency histogram buckets: 2^LAT_HIST_SUB_BITS buckets per
 * power of two of nanoseconds (HdrHistogram's layout), so a bucket is at most 1/16 of its value
 * wide at any scale. nvme-emu-perf keeps every bucket (an index of the whole uint64_t range); the
 * daemon's per-namespace histograms keep the window [LAT_HIST_WIN_LO, LAT_HIST_WIN_HI) of those
 * indices plus one bucket below and one above it (controller/core/iostat.c), and the Prometheus
 * exporter names each bucket by its upper edge, so both sides count the same latencies in the
 * same buckets. Pure functions: any thread. */
#ifndef NVME_EMU_COMMON_LAT_HIST_H
#define NVME_EMU_COMMON_LAT_HIST_H

#include <stdint.h>

#define LAT_HIST_SUB_BITS 4
#define LAT_HIST_SUB (1u << LAT_HIST_SUB_BITS)
/* Indices of the whole range: 0..LAT_HIST_ALL - 1. */
#define LAT_HIST_ALL (64u << LAT_HIST_SUB_BITS)

/* The bucket of a latency of `ns` nanoseconds: values below 16 ns have their own bucket each;
 * from there, octave m (2^m <= ns < 2^(m+1)) is cut into 16 equal parts. */
static inline unsigned int lat_hist_index(uint64_t ns)
{
	unsigned int msb, sub;

	if (ns < LAT_HIST_SUB)
		return (unsigned int)ns;
	msb = 63u - (unsigned int)__builtin_clzll(ns);
	sub = (unsigned int)(ns >> (msb - LAT_HIST_SUB_BITS)) & (LAT_HIST_SUB - 1);
	return ((msb - LAT_HIST_SUB_BITS + 1) << LAT_HIST_SUB_BITS) + sub;
}

/* The upper edge of bucket `index` in nanoseconds: the bucket holds [lower, upper). */
double lat_hist_upper_ns(unsigned int index);
/* Its lower edge (the upper edge of the bucket before). */
double lat_hist_lower_ns(unsigned int index);

/* The window the daemon keeps: from 2^10 ns (1.024 us, the first octave its microsecond-grained
 * clock resolves) to 2^34 ns (17.2 s). Window bucket 0 counts everything below, the last one
 * everything from 2^34 ns up. */
#define LAT_HIST_WIN_LO (((10u - LAT_HIST_SUB_BITS + 1) << LAT_HIST_SUB_BITS))
#define LAT_HIST_WIN_HI (((34u - LAT_HIST_SUB_BITS + 1) << LAT_HIST_SUB_BITS))
#define LAT_HIST_WIN_BUCKETS (LAT_HIST_WIN_HI - LAT_HIST_WIN_LO + 2)

/* The window bucket of `ns`: 0 below the window, LAT_HIST_WIN_BUCKETS - 1 above it. */
static inline unsigned int lat_hist_win_index(uint64_t ns)
{
	unsigned int i = lat_hist_index(ns);

	if (i < LAT_HIST_WIN_LO)
		return 0;
	if (i >= LAT_HIST_WIN_HI)
		return LAT_HIST_WIN_BUCKETS - 1;
	return i - LAT_HIST_WIN_LO + 1;
}

/* The upper edge of window bucket `w` in nanoseconds (+infinity for the last one). */
double lat_hist_win_upper_ns(unsigned int w);

/* The value at quantile q (0 < q <= 1) of `n` buckets of the whole range counted in hist[], as
 * the upper edge of the bucket where the cumulative count reaches ceil(total * q); 0 when empty.
 * (nvme-emu-perf's percentiles.) */
double lat_hist_quantile_ns(const uint64_t *hist, unsigned int n, uint64_t total, double q);

#endif
