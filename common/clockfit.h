/* SPDX-License-Identifier: GPL-2.0-only */
/* PTP-style clock correlation: probe samples in, piecewise-linear guest→host map out. */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* One probe: host sent at host_send, the guest read guest, the reply came at host_recv. */
struct clock_sample {
	uint64_t id;
	uint64_t host_send;
	uint64_t guest;
	uint64_t host_recv;
};

/* host_ns = guest_ns * slope + offset, for guest_ns >= guest_start (until the next segment). */
struct clock_segment {
	uint64_t guest_start;
	double slope;
	int64_t offset;
	uint32_t samples; /* samples used for this segment */
};

#define CLOCKFIT_MAX_SEGMENTS 64
#define CLOCKFIT_SAMPLE_LINE 96 /* 4 u64s, 3 spaces, newline, NUL */
/* A probe whose round trip is under this bounds the live merge's horizon (collector/merge
 * meta.c); the daemon probes again soon after a slower one while the live merge runs. */
#define CLOCKFIT_LIVE_RTT_MAX_NS 2000000ull

struct clock_fit {
	unsigned nseg;
	struct clock_segment seg[CLOCKFIT_MAX_SEGMENTS];
	uint32_t samples_total;    /* samples given */
	uint32_t samples_used;     /* kept after the round-trip filter */
	uint64_t min_rtt, median_rtt;
	uint64_t guest_resolution; /* ns: the guest clock's step when probes shared readings, else 0 */
	uint64_t error_bound;      /* ns: max over used samples of |fit - midpoint| + rtt/2 */
	uint64_t fitted_until;     /* host_send of the newest sample used: a guest time after it is
				    * extrapolated, bound only by the slower probes' wide brackets */
	/* A step placed between two samples (place_step): a guest time in between may be on the
	 * wrong side of it. The widest such window (guest ns) and the largest such step (host ns):
	 * the error bound holds outside the windows, within them the step is the bound. */
	uint64_t step_window_ns, step_max_ns;
	double guest_scale;        /* guest units → ns before the segments: 1 for a ns clock, ~1/GHz
				    * for x86-tsc (measured from the samples); segments are in scaled units */
};

/* Fits samples (any order; copied, not modified). -EINVAL with no usable sample. */
int clockfit_fit(const struct clock_sample *samples, size_t n, struct clock_fit *ret);
/* Converts a raw guest reading (scaled, then the segment that covers it, the first before any
 * segment). */
uint64_t clockfit_apply(const struct clock_fit *fit, uint64_t guest);

/* Narrows s's bracket to where it overlaps [lo, hi] (host ns: another measure of when the
 * guest read its clock, the guest's KVM PTP clock's): 0; -ERANGE, s unchanged, when lo > hi or
 * they do not overlap (the other measure is wrong: the probe's own round trip is the host's). */
int clockfit_narrow(struct clock_sample *s, uint64_t lo, uint64_t hi);
/* clock.samples: one "id host_send guest host_recv" line per probe. */
size_t clockfit_format_sample(const struct clock_sample *s, char *buf, size_t len);
/* Reads at most max samples; malformed lines → -EBADMSG with *ret_line set. */
int clockfit_read_samples(FILE *f, size_t max, struct clock_sample **ret, size_t *ret_n, size_t *ret_line);
/* clock.ini, see docs/session-dir.md; read back by common/clock_apply.c. */
int clockfit_write_ini(FILE *f, const char *method, const struct clock_fit *fit);
