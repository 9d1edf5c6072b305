/* tests/integration/crash/crash_main.c - the crash torture's state, its random numbers and block
 * contents, and main: which runs the program is built for (see crash.h). */
#include "tests/integration/crash/crash.h"

struct ct_state ct;

uint64_t ct_rand(void)
{
	ct.rng ^= ct.rng << 13;
	ct.rng ^= ct.rng >> 7;
	ct.rng ^= ct.rng << 17;
	return ct.rng;
}

uint64_t ct_below(uint64_t n)
{
	return n ? ct_rand() % n : 0;
}

/* ---- block contents: a tag (operation id << 16 | block index), then its pattern ---- */

void ct_block_fill(uint8_t *b, uint64_t tag)
{
	uint64_t x = tag * 0x9e3779b97f4a7c15ull | 1;

	memcpy(b, &tag, 8);
	for (unsigned int i = 8; i < CT_BS; i += 8) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		memcpy(b + i, &x, 8);
	}
}

/* The tag a block holds: 0 for zeroes, ~0 for anything that is not a whole block of ours. */
uint64_t ct_block_tag(const uint8_t *b)
{
	uint8_t want[CT_BS];
	uint64_t tag;

	memcpy(&tag, b, 8);
	if (!tag) {
		for (unsigned int i = 0; i < CT_BS; i++)
			if (b[i])
				return ~0ull;
		return 0;
	}
	ct_block_fill(want, tag);
	return memcmp(want, b, CT_BS) ? ~0ull : tag;
}


int main(int argc, char **argv)
{
	const char *build = argc > 1 ? argv[1] : "build";
	const char *me = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];

	if (strstr(me, "powerloss")) {
		itest_run("power_loss", test_power_loss, build);
		itest_run("startup_checks", test_startup_checks, build);
	} else {
		itest_run("crash_torture", test_crash_torture, build);
	}
	return itest_summary();
}
