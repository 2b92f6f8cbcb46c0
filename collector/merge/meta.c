// SPDX-License-Identifier: GPL-2.0-only
/* Guest metadata for the merge beyond the event formats: task names (saved_cmdlines and the
 * events themselves) with their thread groups (saved_tgids), the kernel build-id (guest/notes),
 * and the guest→host clock: clock.ini, or a fit of clock.samples when the daemon died before
 * writing clock.ini (recovery), bounded by the session window. All of it came from the guest
 * or from a crashed daemon: validated, and a missing part is noted, never fatal. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "clockfit.h"
#include "hash.h"
#include "merge.h"
#include "util.h"

#define META_MAX (16u << 20)
#define INI_MAX (64u << 10)
#define CLOCK_SAMPLES_MAX (4u << 20)

/* The task of pid, or NULL. */
static struct guest_task *task_find(const struct merge_guest *g, int32_t pid)
{
	uint32_t i;

	if (pid < 0 || !g->tasks || hash_get(&g->task_index, (uint32_t)pid, &i) < 0)
		return NULL;
	return &g->tasks[i];
}

/* The task of pid, added if new; NULL when the table refused it (MERGE_MAX_TASKS, or the
 * index's probe bound: counted). */
static struct guest_task *task_get(struct merge_guest *g, int32_t pid)
{
	uint32_t i = (uint32_t)g->n_tasks;
	int r;

	if (pid < 0 || !g->tasks)
		return NULL;
	r = hash_put(&g->task_index, (uint32_t)pid, i, &i);
	if (r < 0) {
		g->loss.tasks_not_kept += r == -ENOSPC;
		return NULL;
	}
	if (r == 1)
		g->tasks[g->n_tasks++] = (struct guest_task){ .pid = pid, .tgid = pid };
	return &g->tasks[i];
}

void merge_meta_task_learn(struct merge_guest *g, int32_t pid, const char *comm, size_t len)
{
	struct guest_task *t = task_get(g, pid);
	size_t n = 0;

	if (!t || t->comm[0])
		return;
	for (; n < len && n < sizeof(t->comm) - 1 && comm[n]; n++)
		t->comm[n] = (comm[n] >= 0x20 && comm[n] < 0x7f) ? comm[n] : '?';
	t->comm[n] = '\0';
}

/* A task named by an event (sched_switch's prev/next, a fork's parent and child): returned when
 * the table did not have its name yet, or had another one (exec, prctl), so the caller emits a
 * COMM at the event's time and perf shows the name from then on; NULL when nothing changed or
 * the table is full. One pass over the events learns names as it goes: a task is switched in
 * (and named) before it runs on a CPU, and saved_cmdlines names those already running. pid 0
 * (the per-CPU idle tasks, swapper/N) is one thread to perf, whichever vCPU: named "swapper", as
 * perf names the host's, not after the vCPU it was first seen on. *ret_new: first name. */
const struct guest_task *merge_meta_task_see(struct merge_guest *g, int32_t pid, const char *comm, size_t len,
					     bool *ret_new)
{
	struct guest_task *t;
	char name[sizeof(t->comm)];
	size_t n = 0;

	*ret_new = false;
	if (pid < 0 || !g->tasks)
		return NULL;
	for (; n < len && n < sizeof(name) - 1 && comm[n]; n++)
		name[n] = (comm[n] >= 0x20 && comm[n] < 0x7f) ? comm[n] : '?';
	name[n] = '\0';
	if (!n)
		return NULL;
	if (pid == 0)
		n = (size_t)snprintf(name, sizeof(name), "swapper");
	t = task_find(g, pid);
	if (!t || !t->comm[0]) {
		if (!(t = task_get(g, pid)))
			return NULL;
		*ret_new = true;
	} else if (pid == 0 || !strcmp(name, t->comm)) {
		return NULL;
	}
	memcpy(t->comm, name, n + 1);
	return t;
}

int32_t merge_meta_tgid(const struct merge_guest *g, int32_t pid)
{
	const struct guest_task *t = task_find(g, pid);

	return t ? t->tgid : pid;
}

/* Calls fn(g, a, b, rest) for each "A B..." line of a guest file whose A parses as a pid. */
static void each_line(struct merge_guest *g, int dfd, const char *path,
		      void (*fn)(struct merge_guest *g, int32_t a, const char *rest))
{
	_cleanup_free_ char *text = NULL;
	char *save = NULL;

	if (merge_input_read(dfd, g->dir, path, META_MAX, &text, NULL) < 0)
		return;
	for (char *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		char *sp = strchr(l, ' ');
		uint64_t pid;

		if (!sp)
			continue;
		*sp = '\0';
		if (util_parse_u64(l, INT32_MAX, &pid) == 0)
			fn(g, (int32_t)pid, sp + 1);
	}
}

static void cmdline_line(struct merge_guest *g, int32_t pid, const char *comm)
{
	merge_meta_task_learn(g, pid, comm, strlen(comm));
}

/* saved_tgids: "pid tgid" per line. */
static void tgid_line(struct merge_guest *g, int32_t pid, const char *rest)
{
	struct guest_task *t;
	uint64_t tgid;

	if (util_parse_u64(rest, INT32_MAX, &tgid) < 0 || !(t = task_get(g, pid)))
		return;
	t->tgid = (int32_t)tgid;
}

void merge_meta_tasks(struct merge_guest *g, int dfd)
{
	g->tasks = calloc(MERGE_MAX_TASKS, sizeof(*g->tasks));
	if (!g->tasks || hash_init(&g->task_index, 1024, MERGE_MAX_TASKS) < 0) {
		merge_meta_tasks_free(g);
		return;
	}
	each_line(g, dfd, "guest/saved_cmdlines", cmdline_line);
	each_line(g, dfd, "guest/saved_tgids", tgid_line);
}

void merge_meta_tasks_free(struct merge_guest *g)
{
	free(g->tasks);
	g->tasks = NULL;
	g->n_tasks = 0;
	hash_free(&g->task_index);
}

void merge_meta_notes(struct merge_guest *g, int dfd)
{
	_cleanup_free_ char *notes = NULL;
	size_t len;
	int r;

	if (merge_input_read(dfd, g->dir, "guest/notes", META_MAX, &notes, &len) < 0) {
		snprintf(g->notes_why, sizeof(g->notes_why), "no guest/notes");
		return;
	}
	r = elf_notes_build_id(notes, len, g->build_id, &g->build_id_len);
	if (r == -ENOENT)
		snprintf(g->notes_why, sizeof(g->notes_why), "guest/notes has no GNU build-id note");
	else if (r < 0)
		snprintf(g->notes_why, sizeof(g->notes_why), "guest/notes is malformed (%s)", strerror(-r));
}

/* clock.ini text for a fit of a samples file (clock.samples, perf-clock.samples); *why says
 * what failed. */
/* How far a live fit converts: up to until (host time), within the fit's bound plus extra. */
struct fit_span {
	uint64_t until, oldest, extra;
	uint64_t fitted; /* the fit's own newest probe (until may reach past it) */
};

static int fit_samples_max(int dfd, const char *name, char **ret_text, size_t *ret_len, char *why, size_t whylen,
			   struct fit_span *span);

static int fit_samples(int dfd, const char *name, char **ret_text, size_t *ret_len, char *why, size_t whylen)
{
	return fit_samples_max(dfd, name, ret_text, ret_len, why, whylen, NULL);
}

static int cmp_send(const void *a, const void *b)
{
	const struct clock_sample *x = a, *y = b;

	return (x->host_send > y->host_send) - (x->host_send < y->host_send);
}

/* Past the newest probe fitted a time is extrapolated (e2e clock-accuracy-live saw hold-outs
 * there 1.2 ms off against a bound of 467 us): the horizon is that probe. But while the guest
 * streams, its probes are slower than the start burst's and none is fitted (only bounded by
 * its bracket): where the later ones were all slow for over MERGE_LIVE_LAG_NS, the horizon is the
 * newest one whose round trip is under MERGE_LIVE_EXTRA_MAX_NS. The fit is within its bound of
 * each probe's [send, reply] and the truth is inside it, so between two such probes a time is
 * off by at most the bound plus the larger round trip: the bound stated grows by the largest
 * (extra). */
static void fit_span_get(struct clock_sample *s, size_t n, const struct clock_fit *fit, struct fit_span *span)
{
	span->until = span->fitted = fit->fitted_until;
	span->extra = 0;
	qsort(s, n, sizeof(*s), cmp_send);
	span->oldest = n ? s[0].host_send : 0;
	if (!n || s[n - 1].host_send - fit->fitted_until < MERGE_LIVE_LAG_NS)
		return;
	for (size_t i = 0; i < n; i++) {
		uint64_t rtt = s[i].host_recv - s[i].host_send;

		if (s[i].host_send <= fit->fitted_until || rtt > MERGE_LIVE_EXTRA_MAX_NS)
			continue; /* a slower one between two such is not needed: they bound what lies between */
		span->extra = MAX(span->extra, rtt);
		span->until = s[i].host_send;
	}
}

/* The fit of a samples file; *span (when asked) how far it converts live (fit_span_get). */
static int fit_samples_max(int dfd, const char *name, char **ret_text, size_t *ret_len, char *why, size_t whylen,
			   struct fit_span *span)
{
	_cleanup_free_ struct clock_sample *s = NULL;
	struct clock_fit fit;
	size_t n = 0, line = 0;
	char owhy[128];
	int fd = util_open_input(dfd, name, O_RDONLY, owhy, sizeof(owhy)), r;
	FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;

	if (!f) {
		if (fd >= 0)
			close(fd);
		if (fd == -ENOENT)
			snprintf(why, whylen, "no %s", name);
		else
			snprintf(why, whylen, "%s %s", name, fd < 0 ? owhy : "cannot be read");
		return -ENOENT;
	}
	r = clockfit_read_samples(f, CLOCK_SAMPLES_MAX, &s, &n, &line);
	fclose(f);
	if (r < 0) {
		snprintf(why, whylen, "%s line %zu is malformed (%s)", name, line, strerror(-r));
		return r;
	}
	if ((r = clockfit_fit(s, n, &fit)) < 0) {
		snprintf(why, whylen, "%s holds no usable probe (%zu lines)", name, n);
		return r;
	}
	if (span)
		fit_span_get(s, n, &fit, span);
	if (!(f = open_memstream(ret_text, ret_len)))
		return -ENOMEM;
	r = clockfit_write_ini(f, "ptp", &fit);
	return fclose(f) < 0 || r < 0 ? -EIO : 0;
}

/* Writes clock.ini atomically (tmp + rename); failure leaves the fit in memory only. */
static int write_clock_ini(int dfd, const char *text, size_t len)
{
	_cleanup_close_ int fd = openat(dfd, "clock.ini.tmp", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);

	if (fd < 0)
		return -errno;
	if (util_write_full(fd, text, len) < 0 || fsync(fd) < 0 || renameat(dfd, "clock.ini.tmp", dfd, "clock.ini") < 0) {
		int r = -errno;

		unlinkat(dfd, "clock.ini.tmp", 0);
		return r ? r : -EIO;
	}
	return 0;
}

static void clock_recover(struct merge_guest *g, int dfd, bool have_ini)
{
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	int r;

	r = fit_samples(dfd, "clock.samples", &text, &len, g->clock_why, sizeof(g->clock_why));
	if (r == -ENOENT)
		snprintf(g->clock_why, sizeof(g->clock_why), "no clock.ini and no clock.samples");
	if (r < 0)
		return;
	if (clock_apply_parse(text, len, &g->clock) < 0 || g->clock.n == 0) {
		snprintf(g->clock_why, sizeof(g->clock_why), "the fit of clock.samples is unusable");
		return;
	}
	g->clock_aligned = g->clock_recovered = true;
	if (have_ini)
		snprintf(g->clock_why, sizeof(g->clock_why), "clock.ini is malformed: fitted clock.samples, clock.ini kept");
	else if (g->input_only) /* another user's dir: input only */
		snprintf(g->clock_why, sizeof(g->clock_why), "fitted clock.samples; clock.ini not written (the dir is input only)");
	else if ((r = write_clock_ini(dfd, text, len)) < 0)
		snprintf(g->clock_why, sizeof(g->clock_why), "fitted clock.samples; cannot write clock.ini: %s", strerror(-r));
	else
		snprintf(g->clock_why, sizeof(g->clock_why), "fitted clock.samples, clock.ini written");
}

#define KVM_SAMPLES_MAX (64u << 20)

/* Method kvm: the host conversion from clock.ini, the per-vCPU readings from kvm.samples. */
static void clock_kvm_load(struct merge_guest *g, int dfd, const char *ini, size_t ini_len)
{
	_cleanup_free_ char *text = NULL;
	struct clock_kvm *k = calloc(1, sizeof(*k));
	size_t len, line = 0;
	int r;

	if (!k)
		return;
	if (clock_kvm_parse_conv(ini, ini_len, k) < 0) {
		snprintf(g->clock_why, sizeof(g->clock_why), "clock.ini (kvm) has no usable host_conv values");
	} else if ((r = merge_input_read(dfd, g->dir, "kvm.samples", KVM_SAMPLES_MAX, &text, &len)) < 0) {
		snprintf(g->clock_why, sizeof(g->clock_why), "clock.ini says kvm but kvm.samples is unreadable (%s)", strerror(-r));
	} else if ((r = clock_kvm_parse_samples(k, text, len, &line)) < 0) {
		snprintf(g->clock_why, sizeof(g->clock_why), r == -ENOENT ? "kvm.samples has no reading" :
			 "kvm.samples line %zu is malformed (%s)", line, strerror(-r));
	} else {
		g->kvm = k;
		g->clock_aligned = true;
		if (k->host_started_ns)
			g->started_ns = k->host_started_ns;
		if (k->host_stopped_ns)
			g->stopped_ns = k->host_stopped_ns;
		return;
	}
	clock_kvm_free(k);
	free(k);
}

/* The window guest times must fall in: [started - bound, stopped + bound] (host monotonic). */
static void clock_window(struct merge_guest *g)
{
	uint64_t eb = g->clock.error_bound_ns;

	g->window_lo = 0;
	g->window_hi = UINT64_MAX;
	if (!g->clock_aligned || !g->started_ns)
		return;
	g->window_lo = g->started_ns > eb ? g->started_ns - eb : 1;
	if (g->stopped_ns >= g->started_ns)
		g->window_hi = g->stopped_ns > UINT64_MAX - eb ? UINT64_MAX : g->stopped_ns + eb;
}

void merge_meta_clock(struct merge_guest *g, int dfd)
{
	_cleanup_free_ char *text = NULL;
	size_t len;
	bool have_ini = merge_input_read(dfd, g->dir, "clock.ini", INI_MAX, &text, &len) == 0;

	g->clock_gen++;
	if (!have_ini || clock_apply_parse(text, len, &g->clock) < 0)
		clock_recover(g, dfd, have_ini);
	else if (!strcmp(g->clock.method, "kvm"))
		clock_kvm_load(g, dfd, text, len);
	else if (g->clock.n == 0)
		snprintf(g->clock_why, sizeof(g->clock_why), "clock.ini has no segments (method %s)", g->clock.method);
	else
		g->clock_aligned = true;
	/* A cycle counter fitted as if it counted ns: the probes spanned too short a time (one
	 * burst: the daemon died before a periodic probe) to measure its rate. The bound would
	 * hold only inside the burst; every later event would be off by a third of its age. */
	if (g->clock_aligned && !strcmp(g->clock.method, "ptp") && !strcmp(g->guest_clock, "x86-tsc") &&
	    g->clock.guest_scale == 1.0L) {
		g->clock_aligned = false;
		snprintf(g->clock_why, sizeof(g->clock_why), "the guest traced with x86-tsc (cycles) and the probes "
			 "span too short a time to measure its rate (under 0.1 s: no periodic probe)");
	}
	clock_window(g);
}

int merge_meta_clock_live(struct merge_guest *g, int dfd)
{
	_cleanup_free_ char *text = NULL;
	struct clock_map c = { 0 };
	char why[160];
	size_t len = 0;
	struct fit_span span;
	int r = fit_samples_max(dfd, "clock.samples", &text, &len, why, sizeof(why), &span);

	if (r < 0)
		return r; /* the fit so far stays (a line being written, say) */
	/* Probes over a few seconds at least: a rate fitted over the start burst alone (a cycle
	 * clock's above all) converts the session's first seconds hundreds of us off, more than the
	 * final fit's bound states (e2e scale-coarse-clock saw 448 us against 235 us). Until then
	 * nothing waits in vain: a shorter session is converted at its end with clock.ini. */
	if (span.until - span.oldest < MERGE_LIVE_MIN_SPAN_NS)
		return -EAGAIN;
	if (clock_apply_parse(text, len, &c) < 0 || c.n == 0) {
		clock_apply_free(&c);
		return -EBADMSG;
	}
	if (!strcmp(g->guest_clock, "x86-tsc") && c.guest_scale == 1.0L) {
		clock_apply_free(&c); /* the cycle rate is not measured yet: keep the fit so far */
		return -EAGAIN;
	}
	clock_apply_free(&g->clock);
	g->clock = c;
	g->clock_aligned = true;
	g->clock_recovered = false;
	g->live_fit_until = span.until;
	g->live_fitted_until = span.fitted;
	g->live_extra_ns = span.extra;
	g->clock_gen++;
	snprintf(g->clock_why, sizeof(g->clock_why), "fitted while tracing from clock.samples");
	clock_window(g);
	return 0;
}

void merge_meta_perf_clock(struct merge_guest *g, int dfd)
{
	_cleanup_free_ char *text = NULL;
	struct clock_map c = { 0 };
	size_t len = 0;
	struct fit_span span;

	/* Following, called again as probes come: a failed refit keeps the fit so far. */
	if (fit_samples_max(dfd, "perf-clock.samples", &text, &len, g->perf_clock_why, sizeof(g->perf_clock_why),
			    &span) < 0)
		return;
	if (clock_apply_parse(text, len, &c) < 0 || c.n == 0) {
		snprintf(g->perf_clock_why, sizeof(g->perf_clock_why), "the fit of perf-clock.samples is unusable");
		clock_apply_free(&c);
		return;
	}
	clock_apply_free(&g->perf_clock);
	g->perf_clock = c;
	g->perf_clock_on = true;
	g->perf_fit_until = span.until;
	g->perf_live_extra_ns = span.extra;
	g->clock_gen++;
}

/* Guest raw time → host time: guest perf's own map when it has one, else the clock's. */
static uint64_t meta_convert(const struct merge_guest *g, uint32_t vcpu, uint64_t raw, bool perf)
{
	if (perf && g->perf_clock_on)
		return clock_apply(&g->perf_clock, raw);
	return g->kvm ? clock_kvm_apply(g->kvm, vcpu, raw) : clock_apply(&g->clock, raw);
}

/* Into the session window; a record's time out of it is counted (count), a bound's is not. */
static uint64_t meta_window(struct merge_guest *g, uint64_t t, bool count)
{
	if (t >= g->window_lo && t <= g->window_hi)
		return t;
	g->loss.outside_window += count;
	return t < g->window_lo ? g->window_lo : g->window_hi;
}

uint64_t merge_meta_perf_time(struct merge_guest *g, uint32_t vcpu, uint64_t raw)
{
	return meta_window(g, meta_convert(g, vcpu, raw, true), true);
}

uint64_t merge_meta_time(struct merge_guest *g, uint32_t vcpu, uint64_t raw)
{
	return meta_window(g, meta_convert(g, vcpu, raw, false), true);
}

uint64_t merge_meta_bound_time(struct merge_guest *g, uint32_t vcpu, uint64_t raw, bool perf)
{
	return meta_window(g, meta_convert(g, vcpu, raw, perf), false);
}
