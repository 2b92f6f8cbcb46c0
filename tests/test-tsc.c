// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <time.h>

#include "harness.h"
#include "tsc.h"

/* Values cross-checked with Python's big integers (perf's formulas, exact integer math). */
TEST(guest_to_host_scaled)
{
	struct tsc_kvm k = { .offset = -1234567890123, .ratio = 225179981368524, .frac_bits = 48 };
	uint64_t host = 123456789012345ull, guest = 97530863319752ull;

	CHECK_INT(tsc_guest_to_host(&k, guest), >=, host - 1);
	CHECK_INT(tsc_guest_to_host(&k, guest), <=, host);
}

TEST(guest_to_host_unscaled)
{
	struct tsc_kvm k = { .offset = 5000 };

	CHECK_INT(tsc_guest_to_host(&k, 1005000), ==, 1000000);
	k.offset = -7;
	CHECK_INT(tsc_guest_to_host(&k, 0), ==, 7);
}

TEST(perf_time_formulas)
{
	struct tsc_conv tc = { .time_shift = 31, .time_mult = 858993459, .time_zero = 1700000000000ull,
			       .cap_user_time_zero = true };
	uint64_t c = 987654321098ull;

	CHECK_INT(tsc_to_perf_time(&tc, c), ==, 2095061728347ull);
	/* The inverse loses at most one cycle. */
	CHECK_INT(tsc_from_perf_time(&tc, tsc_to_perf_time(&tc, c)), >=, c - 1);
	CHECK_INT(tsc_from_perf_time(&tc, tsc_to_perf_time(&tc, c)), <=, c + 1);
}

TEST(perf_time_short_counter)
{
	/* cap_user_time_short: cycles wrap inside time_mask relative to time_cycles. */
	struct tsc_conv tc = { .time_shift = 0, .time_mult = 1, .time_zero = 0, .time_cycles = 0x1000,
			       .time_mask = 0xffff, .cap_user_time_short = true };

	CHECK_INT(tsc_to_perf_time(&tc, 0x1010), ==, 0x1010);
	CHECK_INT(tsc_to_perf_time(&tc, 0x31010), ==, 0x1010);
}

TEST(kernel_conv_or_clear_refusal)
{
	struct tsc_conv tc;
	int r = tsc_conv_from_kernel(&tc);

	/* These machines (PVM) have no cap_user_time_zero: the answer must say so, not invent. */
	CHECK(r == 0 || r == -EOPNOTSUPP || r == -EACCES || r == -ENOENT || r == -EPERM);
	if (r == 0)
		CHECK(tc.time_mult != 0);
}

TEST(measured_fit_tracks_monotonic)
{
	struct tsc_fit f;
	struct timespec ts;
	uint64_t now;

	CHECK_INT(tsc_fit_measure(CLOCK_MONOTONIC, 16, 500, &f), ==, 0);
	CHECK(f.ns_per_cycle > 0.01 && f.ns_per_cycle < 10); /* 0.1 .. 100 GHz */
	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	/* Extrapolating a few ms past the fit stays within a generous 1 ms. */
	CHECK_INT(f.ns0, <=, now);
	CHECK_INT(f.max_error_ns, <, 1000000);
}
