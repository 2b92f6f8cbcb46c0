// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <string.h>

#include "clock_apply.h"
#include "harness.h"

TEST(piecewise)
{
	static const char ini[] = "method=ptp\nsegments=2\nseg0.guest_start=0\nseg0.offset_ns=1000\n"
				  "seg0.slope=1.0\nseg1.guest_start=1000000\nseg1.offset_ns=-500\n"
				  "seg1.slope=1.5\nsamples=9\nerror_bound_ns=20\n";
	struct clock_map m;

	CHECK_INT(clock_apply_parse(ini, strlen(ini), &m), ==, 0);
	CHECK_STR(m.method, "ptp");
	CHECK_INT(m.n, ==, 2);
	CHECK_INT(m.samples, ==, 9);
	CHECK_INT(clock_apply(&m, 10), ==, 1010);
	CHECK_INT(clock_apply(&m, 999999), ==, 1000999);
	CHECK_INT(clock_apply(&m, 2000000), ==, 2999500);
	clock_apply_free(&m);
}

TEST(identity_and_rejects)
{
	struct clock_map m;
	static const char *const bad[] = {
		"segments=1\nseg0.slope=0\n",
		"segments=1\nseg0.slope=abc\n",
		"segments=2\nseg0.guest_start=5\nseg0.slope=1\nseg1.guest_start=5\nseg1.slope=1\n",
		"segments=1\nseg7.slope=1\n",
		"segments=99999999\n",
	};

	CHECK_INT(clock_apply_parse("method=none\n", 12, &m), ==, 0);
	CHECK_INT(m.n, ==, 0);
	CHECK_INT(clock_apply(&m, 12345), ==, 12345);
	clock_apply_free(&m);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK_INT(clock_apply_parse(bad[i], strlen(bad[i]), &m), ==, -EBADMSG);
}
