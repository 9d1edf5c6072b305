/* common/lat_hist.c - bucket edges and quantiles of the log-linear latency histogram. */
#include "common/lat_hist.h"

#include <math.h>

double lat_hist_upper_ns(unsigned int index)
{
	unsigned int e = index >> LAT_HIST_SUB_BITS, sub = index & (LAT_HIST_SUB - 1);

	if (e == 0)
		return sub + 1;
	/* Octave m = e + SUB_BITS - 1 starts at 2^m; its 16 parts are 2^m / 16 wide. */
	return ldexp(1.0 + (sub + 1.0) / LAT_HIST_SUB, (int)(e + LAT_HIST_SUB_BITS - 1));
}

double lat_hist_lower_ns(unsigned int index)
{
	return index ? lat_hist_upper_ns(index - 1) : 0;
}

double lat_hist_win_upper_ns(unsigned int w)
{
	if (w >= LAT_HIST_WIN_BUCKETS - 1)
		return INFINITY;
	if (w == 0)
		return lat_hist_lower_ns(LAT_HIST_WIN_LO);
	return lat_hist_upper_ns(LAT_HIST_WIN_LO + w - 1);
}

double lat_hist_quantile_ns(const uint64_t *hist, unsigned int n, uint64_t total, double q)
{
	uint64_t want = (uint64_t)ceil((double)total * q), seen = 0;

	for (unsigned int b = 0; b < n; b++) {
		seen += hist[b];
		if (seen >= want && want)
			return lat_hist_upper_ns(b);
	}
	return 0;
}
