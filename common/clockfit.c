// SPDX-License-Identifier: GPL-2.0-only
/* Clock correlation from timestamped probes.
 *
 * Each probe brackets the guest's clock reading between two host times: the true host time
 * of the guest reading lies in [host_send, host_recv]. Probes with long round trips bracket
 * loosely, so only those within a small factor of the shortest round trip are kept. A least
 * squares line through the kept midpoints gives offset and drift; when the residuals show a
 * jump (the guest clock was stepped, or the VM was paused), the samples are split into
 * segments, each with its own line.
 *
 * A coarse guest clock (jiffies: 4 ms steps) gives many probes the same reading. A reading g
 * means the guest's true time lay in [g, g + resolution): each run of equal readings becomes
 * one sample (its shortest round trip) fitted at g + resolution / 2, and the segments are
 * shifted back so that a raw reading (an event's time stamp, a floor too) maps to the middle
 * of its step. Such a clock is also a poor one: a TCG guest on jiffies loses ticks and ran
 * 0.4% slow here, so it may drift by up to COARSE_DRIFT, and round trips far below its step
 * are all good enough to keep.
 *
 * The error bound is checked against every sample, not only the ones fitted: a probe whose
 * [send, reply] bracket the fit misses proves the fit wrong by at least that much. A coarse
 * clock's bound also covers two more steps: after idle its readings lag (COARSE_IDLE_TICKS). */
#include "clockfit.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

#define RTT_KEEP_FACTOR 3      /* keep probes with rtt <= 3 x the shortest (+ slack) */
#define RTT_SLACK_NS 20000     /* 20 us: scheduling noise on a loaded host */
#define STEP_MIN_NS 200000     /* a residual jump under 200 us is noise, not a step */
#define SLOPE_MIN_SPAN_NS 1000000000ull
#define SCALE_MIN_SPAN_NS 100e6 /* a guest clock's rate from probes at least this far apart */
#define ANCHOR_RTT_FACTOR 4     /* an anchor's round trip: at most this many times the median */
#define ANCHOR_GAP_NS 50e6      /* probes within this of host time are one cluster (a burst) */
#define SCALE_NS_TOL 0.05       /* within 5% of the host's rate: a ns clock (drift is the fit's) */
#define SCALE_MIN 1e-4          /* ns per guest unit: 10 GHz .. */
#define SCALE_MAX 1e4           /* .. 100 kHz */ /* a slope from a shorter span is noise: use 1 */
#define DRIFT_MAX 50e-6        /* clocks may drift apart this much across a gap without a step */
#define SLOPE_DEV_MAX 1e-3     /* a real clock drifts by ppm: clamp nonsense from degenerate spans */
#define COARSE_DRIFT 2e-2      /* a tick-counting guest clock (jiffies) that loses ticks */
/* A CPU that leaves NO_HZ idle stamps its first events with the jiffies of before its sleep
 * until a tick catches them up: guest perf samples of a task that had just started on such a
 * CPU lay 6.5 and 10.5 ms before its own begin marker (4 ms ticks, x86-tsc markers, CI of
 * 2026-11-24). The probes, answered by a thread that is already awake, do not see it: the
 * bound of a clock with a step of 1 ms or more adds two steps. */
#define COARSE_IDLE_MIN_NS 1000000ull
#define COARSE_IDLE_TICKS 2ull

/* How much a fit may bend: fine clocks by ppm, coarse ones by percent. */
struct fit_limits {
	double tol;       /* residual that counts as a step */
	double drift;     /* allowed drift per ns of gap */
	double slope_dev; /* |slope - 1| at most */
};

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int cmp_guest(const void *a, const void *b)
{
	const struct clock_sample *x = a, *y = b;

	return x->guest < y->guest ? -1 : x->guest > y->guest;
}

static uint64_t rtt(const struct clock_sample *s) { return s->host_recv - s->host_send; }
static double mid(const struct clock_sample *s) { return (double)s->host_send + (double)rtt(s) / 2; }

/* Least squares over s[0..n) around the first sample to keep precision. */
static void fit_line(const struct clock_sample *s, size_t n, const struct fit_limits *lim,
		     struct clock_segment *seg)
{
	double g0 = (double)s[0].guest, h0 = mid(&s[0]);
	double sx = 0, sy = 0, sxx = 0, sxy = 0, slope = 1, b, offset;

	for (size_t i = 0; i < n; i++) {
		double x = (double)s[i].guest - g0, y = mid(&s[i]) - h0;

		sx += x, sy += y, sxx += x * x, sxy += x * y;
	}
	/* A burst of probes a few ms long says nothing about drift: its slope would be wrong by
	 * (round-trip jitter / span), thousands of ppm, and extrapolated across the session. */
	if (n >= 2 && s[n - 1].guest - s[0].guest >= SLOPE_MIN_SPAN_NS && n * sxx - sx * sx > 0) {
		slope = (n * sxy - sx * sy) / (n * sxx - sx * sx);
		if (!(fabs(slope - 1) <= lim->slope_dev)) /* NaN too */
			slope = 1;
	}
	b = (sy - slope * sx) / n; /* y = slope * x + b */
	seg->slope = slope;
	/* host = h0 + b + slope * (guest - g0)  =>  offset = h0 + b - slope * g0 */
	offset = h0 + b - slope * g0;
	seg->offset = offset > 9.2e18 ? INT64_MAX : offset < -9.2e18 ? INT64_MIN : (int64_t)llround(offset);
	seg->guest_start = s[0].guest;
	seg->samples = (uint32_t)n;
}

static double seg_apply(const struct clock_segment *seg, uint64_t g)
{
	/* Evaluate relative to guest_start so the double keeps sub-ns precision. */
	double base = seg->slope * (double)seg->guest_start + (double)seg->offset;

	return base + seg->slope * ((double)g - (double)seg->guest_start);
}

static double resid(const struct clock_segment *seg, const struct clock_sample *s)
{
	return mid(s) - seg_apply(seg, s->guest);
}

/* Length of the segment starting at s[0]: grows while the next sample agrees with the line
 * through the previous ones (within tol, plus DRIFT_MAX of the gap since the last agreeing
 * sample: after a long gap, e.g. start and stop bursts with slow probes between, the line
 * cannot know the drift yet); two disagreeing the same way in a row mark a step. */
static double gap_tol(const struct clock_sample *s, size_t len, size_t i, const struct fit_limits *lim)
{
	return lim->tol + lim->drift * ((double)s[i].guest - (double)s[len - 1].guest);
}

static size_t segment_len(const struct clock_sample *s, size_t n, const struct fit_limits *lim)
{
	struct clock_segment seg;
	size_t len = 1;

	while (len < n) {
		double r1, r2;

		fit_line(s, len, lim, &seg);
		r1 = resid(&seg, &s[len]);
		if (fabs(r1) > gap_tol(s, len, len, lim) && len + 1 < n) {
			r2 = resid(&seg, &s[len + 1]);
			if (fabs(r2) > gap_tol(s, len, len + 1, lim) && (r1 > 0) == (r2 > 0))
				break;
		}
		len++;
	}
	return len;
}

/* The guest clock's step: the smallest gap between distinct readings when some probes share
 * a reading, 0 when every reading differs (a fine clock). kept is sorted by guest time. */
static uint64_t guest_resolution(const struct clock_sample *kept, size_t nk)
{
	uint64_t res = UINT64_MAX;
	bool repeats = false;

	for (size_t i = 1; i < nk; i++) {
		uint64_t d = kept[i].guest - kept[i - 1].guest;

		if (d == 0)
			repeats = true;
		else
			res = MIN(res, d);
	}
	return repeats ? (res == UINT64_MAX ? 1 : res) : 0; /* all equal: dedupe only */
}

/* One sample per run of equal readings, the shortest round trip. Returns the new count. */
static size_t collapse_repeats(struct clock_sample *kept, size_t nk)
{
	size_t out = 0;

	for (size_t i = 0; i < nk;) {
		size_t best = i, j = i + 1;

		for (; j < nk && kept[j].guest == kept[i].guest; j++)
			if (rtt(&kept[j]) < rtt(&kept[best]))
				best = j;
		kept[out++] = kept[best];
		i = j;
	}
	return out;
}

/* How far the fit can be off, proved by the samples: the fitted ones by their distance to
 * the midpoint plus half their round trip, every one by how far the fit misses its bracket;
 * a coarse reading adds half a step (its event's own place in the step is unknown). */
static uint64_t error_bound(const struct clock_fit *fit, const struct clock_sample *s, size_t n,
			    uint64_t limit)
{
	double half = (double)fit->guest_resolution / 2, worst = 0;

	for (size_t i = 0; i < n; i++) {
		double h = (double)clockfit_apply(fit, s[i].guest), e;

		if (rtt(&s[i]) <= limit)
			e = fabs(mid(&s[i]) - h) + (double)rtt(&s[i]) / 2 + half;
		else
			e = fmax(fmax((double)s[i].host_send - half - h, h - (double)s[i].host_recv - half), 0) + half;
		worst = fmax(worst, e);
	}
	return worst < 1.8e19 ? (uint64_t)ceil(worst) : UINT64_MAX;
}

/* How far line seg misses sample s's bracket (0: inside it). */
static double bracket_miss(const struct clock_segment *seg, const struct clock_sample *s)
{
	double h = seg_apply(seg, s->guest);

	return fmax(fmax((double)s->host_send - h, h - (double)s->host_recv), 0);
}

/* Moves the start of segment k back from its first fitted sample to where the step is: past
 * every sample in between (the slow ones the fit left out) whose bracket the new line misses
 * less than the old one, to halfway from the last one that the old line fits better. A step
 * known only from two bursts seconds apart (a live migration) is then placed within the
 * probes' spacing, not at the second burst. all[0..n): every sample, sorted by guest time. */
static void place_step(struct clock_fit *fit, unsigned k, uint64_t prev_last, const struct clock_sample *all, size_t n)
{
	const struct clock_segment *old = &fit->seg[k - 1];
	struct clock_segment *seg = &fit->seg[k];
	uint64_t first_new = seg->guest_start, last_old = prev_last, start;
	size_t i = n;

	while (i > 0 && all[i - 1].guest >= first_new)
		i--;
	for (; i > 0 && all[i - 1].guest > prev_last; i--) {
		double to_old = bracket_miss(old, &all[i - 1]), to_new = bracket_miss(seg, &all[i - 1]);

		if (to_old < to_new) {
			last_old = all[i - 1].guest;
			break;
		}
		if (to_new < to_old)
			first_new = all[i - 1].guest;
	}
	start = last_old + (first_new - last_old) / 2; /* halfway: the step's place is not known better */
	if (start > old->guest_start) { /* the window the step may lie in, and its size */
		double h_old = seg_apply(old, start), h_new = seg_apply(seg, start);

		fit->step_window_ns = MAX(fit->step_window_ns, first_new - last_old);
		fit->step_max_ns = MAX(fit->step_max_ns, (uint64_t)fmin(fabs(h_new - h_old), 1.8e19));
	}
	seg->guest_start = MAX(start, old->guest_start + 1);
}

/* Fits the segments of kept[0..nk) (sorted, one sample per reading) into fit; their starts
 * placed among all[0..n) (place_step). */
static void fit_segments(struct clock_fit *fit, struct clock_sample *kept, size_t nk, const struct fit_limits *lim,
			 const struct clock_sample *all, size_t n)
{
	uint64_t half = fit->guest_resolution / 2, last[CLOCKFIT_MAX_SEGMENTS];
	size_t start = 0;

	for (size_t i = 0; i < nk; i++)
		kept[i].guest += half; /* a reading stands for the middle of its step */
	while (start < nk && fit->nseg < CLOCKFIT_MAX_SEGMENTS) {
		size_t len = fit->nseg + 1 == CLOCKFIT_MAX_SEGMENTS ? nk - start : segment_len(kept + start, nk - start, lim);
		struct clock_segment *seg = &fit->seg[fit->nseg++];
		double shift;

		fit_line(kept + start, len, lim, seg);
		/* back to raw readings: raw g maps to where g + half was fitted */
		seg->guest_start = seg->guest_start >= half ? seg->guest_start - half : 0;
		shift = (double)seg->offset + seg->slope * (double)half; /* saturating: a hostile fit */
		seg->offset = shift > 9.2e18 ? INT64_MAX : shift < -9.2e18 ? INT64_MIN : (int64_t)llround(shift);
		start += len;
		last[fit->nseg - 1] = kept[start - 1].guest - half;
	}
	for (size_t i = 0; i < nk; i++)
		kept[i].guest -= half;
	for (unsigned k = 1; k < fit->nseg; k++)
		place_step(fit, k, last[k - 1], all, n);
}

struct pair {
	const struct clock_sample *a, *b;
	double ratio, weight;
};

static int cmp_pair(const void *x, const void *y)
{
	const struct pair *p = x, *q = y;

	return p->ratio < q->ratio ? -1 : p->ratio > q->ratio;
}

static double pair_ratio(const struct clock_sample *a, const struct clock_sample *b)
{
	return (mid(b) - mid(a)) / ((double)b->guest - (double)a->guest);
}

/* The pairs of neighbouring anchors of all[0..n) (sorted by guest time) into p, from probes
 * whose round trip is at most max_rtt; their count. */
static size_t anchor_pairs(const struct clock_sample *all, size_t n, uint64_t max_rtt, struct pair *p)
{
	const struct clock_sample *anchor = NULL, *prev = NULL, *first = NULL;
	size_t np = 0;

	for (size_t i = 0; i <= n; i++) {
		if (i < n && rtt(&all[i]) > max_rtt)
			continue;
		if (!anchor && i < n) {
			anchor = first = &all[i];
			continue;
		}
		if (!anchor)
			break;
		if (i < n && mid(&all[i]) <= mid(first) + ANCHOR_GAP_NS) {
			if (rtt(&all[i]) < rtt(anchor))
				anchor = &all[i];
			continue;
		}
		/* pairs chain end to end (a step falls in one of them): an anchor too close to the
		 * last one is passed over, not a new start */
		if (prev && mid(anchor) - mid(prev) >= SCALE_MIN_SPAN_NS && anchor->guest > prev->guest)
			p[np++] = (struct pair){ prev, anchor, pair_ratio(prev, anchor),
						 (mid(anchor) - mid(prev)) / ((double)(rtt(prev) + rtt(anchor)) + 1) };
		if (!prev || (mid(anchor) - mid(prev) >= SCALE_MIN_SPAN_NS && anchor->guest > prev->guest))
			prev = anchor;
		anchor = first = i < n ? &all[i] : NULL;
	}
	return np;
}

/* The rate over anchors p[from].a, p[from..to].b: least squares weighted by 1 / round trip²
 * (a probe that straddled a pause brackets its reading loosely). */
static double run_ratio(const struct pair *p, size_t from, size_t to)
{
	const struct clock_sample *s0 = p[from].a;
	double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;

	for (size_t i = from; i <= to + 1; i++) {
		const struct clock_sample *s = i == from ? s0 : p[i - 1].b;
		double w = 1.0 / (((double)rtt(s) + 1000.0) * ((double)rtt(s) + 1000.0));
		double x = (double)s->guest - (double)s0->guest, y = mid(s) - mid(s0);

		sw += w, sx += w * x, sy += w * y, sxx += w * x * x, sxy += w * x * y;
	}
	return (sw * sxy - sx * sy) / (sw * sxx - sx * sx);
}

/* A guest clock that does not count nanoseconds (x86-tsc counts cycles): ns per guest unit;
 * 1 when the clock runs within SCALE_NS_TOL of the host's, or the samples say nothing.
 * From anchors, the fastest probe of each cluster (probes within ANCHOR_GAP_NS of host time of
 * the cluster's first: a burst; probes taken every few ms make one every ANCHOR_GAP_NS).
 * Neighbouring anchors at least SCALE_MIN_SPAN_NS apart give a rate each; their median, weighted
 * by span over bracket width, is a rough rate that a step between two anchors cannot move (a
 * VM's clock falling behind the host's across a live migration). The rate is then measured end
 * to end over the longest run of pairs that agree with it (no step inside): precise like the
 * whole span when nothing stepped. */
static double guest_scale(const struct clock_sample *all, size_t n, uint64_t median_rtt)
{
	_cleanup_free_ struct pair *p = malloc(n * sizeof(*p)), *sorted = malloc(n * sizeof(*p));
	double total = 0, acc = 0, rough = 1.0, ratio, best_span = -1;
	size_t np, run = 0, best_from = 0, best_to = 0;

	if (!p || !sorted)
		return 1.0;
	/* probes that took far longer than most (one that straddled a pause fits both sides of its
	 * step) are no anchors, unless nothing else is */
	if (!(np = anchor_pairs(all, n, ANCHOR_RTT_FACTOR * median_rtt, p)) && !(np = anchor_pairs(all, n, UINT64_MAX, p)))
		return 1.0;
	memcpy(sorted, p, np * sizeof(*p));
	qsort(sorted, np, sizeof(*sorted), cmp_pair);
	for (size_t i = 0; i < np; i++)
		total += sorted[i].weight;
	for (size_t i = 0; i < np && acc < total / 2; i++) {
		acc += sorted[i].weight;
		rough = sorted[i].ratio;
	}
	for (size_t i = 0; i <= np; i++) { /* runs of agreeing pairs, in time order */
		bool agree = i < np && fabs(p[i].ratio - rough) * ((double)p[i].b->guest - (double)p[i].a->guest) <=
					       (double)(rtt(p[i].a) + rtt(p[i].b)) / 2 + STEP_MIN_NS +
						       SLOPE_DEV_MAX * (mid(p[i].b) - mid(p[i].a));

		if (agree) {
			run++;
			continue;
		}
		if (run && mid(p[i - 1].b) - mid(p[i - run].a) > best_span) {
			best_span = mid(p[i - 1].b) - mid(p[i - run].a);
			best_from = i - run, best_to = i - 1;
		}
		run = 0;
	}
	ratio = best_span > 0 ? run_ratio(p, best_from, best_to) : rough;
	if (!isfinite(ratio) || fabs(ratio - 1.0) <= SCALE_NS_TOL || ratio < SCALE_MIN || ratio > SCALE_MAX)
		return 1.0;
	return ratio;
}

int clockfit_fit(const struct clock_sample *samples, size_t n, struct clock_fit *ret)
{
	_cleanup_free_ uint64_t *rtts = NULL;
	_cleanup_free_ struct clock_sample *kept = NULL, *all = NULL;
	struct clock_fit fit = { .samples_total = (uint32_t)n };
	struct fit_limits lim = { .drift = DRIFT_MAX, .slope_dev = SLOPE_DEV_MAX };
	size_t nk = 0;
	uint64_t limit;
	double scale;

	if (n == 0)
		return -EINVAL;
	rtts = malloc(n * sizeof(*rtts));
	kept = malloc(n * sizeof(*kept));
	all = malloc(n * sizeof(*all));
	if (!rtts || !kept || !all)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		if (samples[i].host_recv < samples[i].host_send)
			return -EINVAL;
		rtts[i] = rtt(&samples[i]);
		all[i] = samples[i];
	}
	qsort(rtts, n, sizeof(*rtts), cmp_u64);
	qsort(all, n, sizeof(*all), cmp_guest);
	fit.min_rtt = rtts[0];
	limit = fit.min_rtt * RTT_KEEP_FACTOR + RTT_SLACK_NS;
	scale = guest_scale(all, n, rtts[n / 2]);
	for (size_t i = 0; scale != 1.0 && i < n; i++) /* fitted in ns, like any clock */
		all[i].guest = (uint64_t)llround((double)all[i].guest * scale);
	fit.guest_resolution = guest_resolution(all, n);
	if (fit.guest_resolution) {
		limit = MAX(limit, fit.guest_resolution / 4);
		lim.drift = lim.slope_dev = COARSE_DRIFT;
	}
	for (size_t i = 0; i < n; i++)
		if (rtt(&all[i]) <= limit)
			kept[nk++] = all[i];
	if (fit.guest_resolution)
		nk = collapse_repeats(kept, nk);
	for (size_t i = 0; i < nk; i++)
		rtts[i] = rtt(&kept[i]);
	qsort(rtts, nk, sizeof(*rtts), cmp_u64);
	fit.median_rtt = rtts[nk / 2];
	fit.samples_used = (uint32_t)nk;
	for (size_t i = 0; i < nk; i++)
		fit.fitted_until = MAX(fit.fitted_until, kept[i].host_send);
	lim.tol = MAX((double)STEP_MIN_NS, 4.0 * (double)fit.median_rtt);
	lim.tol = MAX(lim.tol, 2.0 * (double)fit.guest_resolution);
	fit_segments(&fit, kept, nk, &lim, all, n);
	fit.error_bound = error_bound(&fit, all, n, limit); /* in the scaled domain: scale 0 = none yet */
	if (fit.guest_resolution >= COARSE_IDLE_MIN_NS) /* a tick-counting clock, stale after idle */
		fit.error_bound = fit.error_bound > UINT64_MAX - COARSE_IDLE_TICKS * fit.guest_resolution
					  ? UINT64_MAX : fit.error_bound + COARSE_IDLE_TICKS * fit.guest_resolution;
	fit.guest_scale = scale;
	*ret = fit;
	return 0;
}

uint64_t clockfit_apply(const struct clock_fit *fit, uint64_t guest)
{
	const struct clock_segment *seg;
	double h, scaled = (double)guest * (fit->guest_scale > 0 ? fit->guest_scale : 1.0);
	uint64_t guest_ns = scaled >= 1.8e19 ? UINT64_MAX : (uint64_t)llround(scaled);

	if (fit->nseg == 0)
		return guest_ns;
	seg = &fit->seg[0];
	for (unsigned i = 1; i < fit->nseg && fit->seg[i].guest_start <= guest_ns; i++)
		seg = &fit->seg[i];
	h = seg_apply(seg, guest_ns);
	if (h <= 0)
		return 0;
	if (h >= 18446744073709551615.0)
		return UINT64_MAX;
	return h < 9.2e18 ? (uint64_t)llround(h) : (uint64_t)h;
}

int clockfit_narrow(struct clock_sample *s, uint64_t lo, uint64_t hi)
{
	if (lo > hi || hi < s->host_send || lo > s->host_recv)
		return -ERANGE;
	s->host_send = MAX(s->host_send, lo);
	s->host_recv = MIN(s->host_recv, hi);
	return 0;
}

size_t clockfit_format_sample(const struct clock_sample *s, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", s->id,
			 s->host_send, s->guest, s->host_recv);

	return n < 0 || (size_t)n >= len ? 0 : (size_t)n;
}

int clockfit_read_samples(FILE *f, size_t max, struct clock_sample **ret, size_t *ret_n, size_t *ret_line)
{
	_cleanup_free_ struct clock_sample *v = NULL;
	size_t n = 0, cap = 0, line = 0;
	char buf[256];

	while (fgets(buf, sizeof(buf), f)) {
		struct clock_sample s;
		char extra;

		line++;
		if (buf[0] == '#' || buf[0] == '\n')
			continue;
		if (sscanf(buf, "%" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %c", &s.id, &s.host_send,
			   &s.guest, &s.host_recv, &extra) != 4 || s.host_recv < s.host_send) {
			if (ret_line)
				*ret_line = line;
			return -EBADMSG;
		}
		if (n == max)
			return -E2BIG;
		if (n == cap) {
			struct clock_sample *nv = realloc(v, (cap ? cap * 2 : 64) * sizeof(*v));

			if (!nv)
				return -ENOMEM;
			v = nv;
			cap = cap ? cap * 2 : 64;
		}
		v[n++] = s;
	}
	*ret = TAKE_PTR(v);
	*ret_n = n;
	return 0;
}

int clockfit_write_ini(FILE *f, const char *method, const struct clock_fit *fit)
{
	fprintf(f, "method=%s\nsegments=%u\nsamples=%u\nsamples_used=%u\nmin_rtt_ns=%" PRIu64
		   "\nmedian_rtt_ns=%" PRIu64 "\nerror_bound_ns=%" PRIu64 "\nguest_resolution_ns=%" PRIu64 "\n",
		method, fit->nseg, fit->samples_total, fit->samples_used, fit->min_rtt, fit->median_rtt,
		fit->error_bound, fit->guest_resolution);
	if (fit->guest_scale > 0 && fit->guest_scale != 1.0)
		fprintf(f, "guest_scale=%.17g\n", fit->guest_scale);
	if (fit->step_window_ns)
		fprintf(f, "step_window_ns=%" PRIu64 "\nstep_max_ns=%" PRIu64 "\n", fit->step_window_ns, fit->step_max_ns);
	for (unsigned i = 0; i < fit->nseg; i++)
		fprintf(f, "seg%u.guest_start=%" PRIu64 "\nseg%u.slope=%.12f\nseg%u.offset_ns=%" PRId64 "\n",
			i, fit->seg[i].guest_start, i, fit->seg[i].slope, i, fit->seg[i].offset);
	return ferror(f) ? -EIO : 0;
}
