// SPDX-License-Identifier: GPL-2.0-only
/* The trace clocks the agent can read from user space (PROBE answers them), and how fine each
 * one really is here: a guest on the jiffies clocksource has mono, mono_raw, boot and tai
 * stepping every 4 ms while x86-tsc still counts cycles. The host picks the clock from that. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "agent.h"
#include "util.h"

#define RES_BUDGET_NS 30000000ull /* per clock: long enough to see several 4 ms jiffies steps */
#define RES_STEPS 8

static const struct {
	const char *name;
	clockid_t id;
} clocks_posix[] = {
	{ "mono", CLOCK_MONOTONIC }, { "mono_raw", CLOCK_MONOTONIC_RAW },
	{ "boot", CLOCK_BOOTTIME }, { "tai", CLOCK_TAI },
};

int clocks_read(const char *clock, uint64_t *ret)
{
	for (size_t i = 0; i < ARRAY_SIZE(clocks_posix); i++) {
		if (!strcmp(clock, clocks_posix[i].name)) {
			*ret = util_now_ns(clocks_posix[i].id);
			return 0;
		}
	}
#if defined(__x86_64__) || defined(__i386__)
	if (!strcmp(clock, "x86-tsc")) {
		*ret = __builtin_ia32_rdtsc();
		return 0;
	}
#endif
	return -EOPNOTSUPP;
}

/* The smallest step of a clock seen within the budget (its own units), 0 when it never moved. */
static uint64_t clocks_step(const char *clock)
{
	uint64_t start = util_now_ns(CLOCK_MONOTONIC_RAW), prev, v, best = 0;
	unsigned steps = 0;

	if (clocks_read(clock, &prev) < 0)
		return 0;
	while (steps < RES_STEPS && util_now_ns(CLOCK_MONOTONIC_RAW) - start < RES_BUDGET_NS) {
		(void)clocks_read(clock, &v);
		if (v == prev)
			continue;
		if (v > prev && (!best || v - prev < best))
			best = v - prev;
		prev = v;
		steps++;
	}
	return best;
}

void clocks_resolution(char *buf, size_t len)
{
	size_t at = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < ARRAY_SIZE(clocks_posix) && at < len; i++)
		at += (size_t)snprintf(buf + at, len - at, "%s%s=%lluns", at ? " " : "", clocks_posix[i].name,
				       (unsigned long long)clocks_step(clocks_posix[i].name));
#if defined(__x86_64__) || defined(__i386__)
	if (at < len)
		snprintf(buf + at, len - at, " x86-tsc=%llucycles", (unsigned long long)clocks_step("x86-tsc"));
#endif
}
