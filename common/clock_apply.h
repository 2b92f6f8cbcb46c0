/* SPDX-License-Identifier: GPL-2.0-only */
/* Guest clock → host perf clock, piecewise linear (session dir clock.ini, docs/session-dir.md). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CLOCK_APPLY_MAX_SEGMENTS 65536

struct clock_seg {
	uint64_t guest_start;
	int64_t offset_ns;
	long double slope;
};

struct clock_map {
	char method[16];
	size_t n;             /* 0 = identity (unaligned) */
	struct clock_seg *seg; /* sorted by guest_start */
	uint64_t samples;
	uint64_t error_bound_ns;
	long double guest_scale; /* guest units → ns before the segments (clock.ini guest_scale, 1) */
};

/* Parses clock.ini text; -EBADMSG naming nothing allocated on failure. */
int clock_apply_parse(const char *text, size_t len, struct clock_map *ret);
/* guest_ns = guest * guest_scale, then host_ns = guest_ns * slope + offset_ns of the last
 * segment starting at or before guest_ns (the first segment before it); identity without
 * segments. Clamped to [1, UINT64_MAX - 1]. */
uint64_t clock_apply(const struct clock_map *m, uint64_t guest);
void clock_apply_free(struct clock_map *m);
