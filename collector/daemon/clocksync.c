// SPDX-License-Identifier: GPL-2.0-only
/* The daemon's clock work (docs/session-dir.md): ptp probe samples into clock.samples and
 * hold-out probes into clock.holdout, the ptp fit at stop; for the kvm method, per-vCPU TSC
 * readings from KVM's debugfs into kvm.samples and the host TSC → host perf clock conversion.
 * Either way clock.ini is written at stop (tmp + rename) with method, samples, error bound. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clocksync.h"
#include "log.h"
#include "util.h"

#define SAMPLES_MAX (1u << 20)
#define TSC_FIT_PAIRS 32
#define TSC_FIT_SPACING_US 100

int clocksync_open(struct clocksync *c, const char *dir)
{
	char path[PATH_MAX + 32];

	memset(c, 0, sizeof(*c));
	c->samples_fd = c->holdout_fd = c->perf_fd = -1;
	snprintf(path, sizeof(path), "%s/clock.samples", dir);
	c->samples_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (c->samples_fd < 0)
		return -errno;
	snprintf(path, sizeof(path), "%s/clock.holdout", dir);
	c->holdout_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
	return c->holdout_fd < 0 ? -errno : 0;
}

void clocksync_close(struct clocksync *c)
{
	if (c->samples_fd >= 0)
		close(c->samples_fd);
	if (c->holdout_fd >= 0)
		close(c->holdout_fd);
	if (c->perf_fd >= 0)
		close(c->perf_fd);
	if (c->kvm)
		fclose(c->kvm);
	free(c->samples);
	c->samples = NULL;
	c->samples_fd = c->holdout_fd = c->perf_fd = -1;
	c->kvm = NULL;
}

int clocksync_perf_open(struct clocksync *c, const char *dir)
{
	char path[PATH_MAX + 32];

	snprintf(path, sizeof(path), "%s/perf-clock.samples", dir);
	c->perf_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
	return c->perf_fd < 0 ? -errno : 0;
}

void clocksync_perf_probe(struct clocksync *c, const struct clock_sample *s)
{
	char line[CLOCKFIT_SAMPLE_LINE];
	size_t n = clockfit_format_sample(s, line, sizeof(line));

	if (c->perf_fd >= 0 && s->guest)
		(void)util_write_full(c->perf_fd, line, n);
}

void clocksync_probe(struct clocksync *c, bool holdout, const struct clock_sample *s)
{
	char line[CLOCKFIT_SAMPLE_LINE];
	size_t n = clockfit_format_sample(s, line, sizeof(line));

	if (holdout) {
		if (c->holdout_fd >= 0 && util_write_full(c->holdout_fd, line, n) == 0)
			c->nholdout++;
		return;
	}
	if (c->nsamples >= SAMPLES_MAX)
		return;
	if (c->nsamples == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 128;
		struct clock_sample *v = realloc(c->samples, cap * sizeof(*v));

		if (!v)
			return;
		c->samples = v;
		c->cap = cap;
	}
	if (c->samples_fd >= 0 && util_write_full(c->samples_fd, line, n) == 0)
		c->samples[c->nsamples++] = *s;
}

/* ---- kvm ---- */

uint64_t clocksync_host_now(const struct clocksync *c)
{
	if (c->kvm_on && c->time_conv)
		return tsc_to_perf_time(&c->tc, tsc_rdtsc());
	return util_now_ns(CLOCK_MONOTONIC);
}

int clocksync_kvm_reading(struct clocksync *c)
{
	struct kvmclock_vm *vm = calloc(1, sizeof(*vm));
	uint64_t now;
	int r;

	if (!vm)
		return -ENOMEM;
	r = kvmclock_read(c->kvm_dir, vm);
	now = clocksync_host_now(c);
	if (r == 0)
		r = kvmclock_append(c->kvm, now, vm);
	if (r == 0 && fflush(c->kvm) != 0)
		r = -EIO;
	if (r == 0) {
		for (unsigned i = 0; c->nkvm && i < vm->nvcpus && i < c->kvm_vcpus; i++) {
			const struct tsc_kvm *a = &c->kvm_last[i], *b = &vm->vcpu[i];
			uint64_t jump = a->offset > b->offset ? (uint64_t)a->offset - (uint64_t)b->offset
							     : (uint64_t)b->offset - (uint64_t)a->offset;

			if (tsc_kvm_equal(a, b))
				continue;
			c->kvm_changes++;
			c->kvm_jump_cycles = MAX(c->kvm_jump_cycles, jump);
		}
		c->nkvm++;
		c->kvm_vcpus = vm->nvcpus;
		memcpy(c->kvm_last, vm->vcpu, vm->nvcpus * sizeof(vm->vcpu[0]));
	}
	free(vm);
	return r;
}

bool clocksync_host_tsc_stable(const char *available_path, char *why, size_t whylen)
{
	_cleanup_free_ char *text = NULL;
	int r = util_read_file(available_path, 4096, &text, NULL);

	if (r < 0) {
		snprintf(why, whylen, "cannot read %s (%s) to tell whether the host's TSC is stable", available_path,
			 strerror(-r));
		return false;
	}
	for (char *save = NULL, *w = strtok_r(text, " \n", &save); w; w = strtok_r(NULL, " \n", &save))
		if (!strcmp(w, "tsc"))
			return true;
	snprintf(why, whylen, "the host's TSC is not among its clocksources (%s: the kernel marked it unstable, "
		 "see dmesg), so KVM rewrites each vCPU's TSC offset as it moves between host CPUs and the "
		 "guest's TSC is not the host's plus the offsets read", available_path);
	return false;
}

/* Host TSC → host perf clock: perf's TIME_CONV when the kernel offers it, else a measured
 * line against CLOCK_MONOTONIC (the host perf then records with -k CLOCK_MONOTONIC). */
static int clocksync_host_conv(struct clocksync *c)
{
	int r;

	if (!c->no_time_conv && tsc_conv_from_kernel(&c->tc) == 0) {
		c->time_conv = true;
		return 0;
	}
	r = tsc_fit_measure(CLOCK_MONOTONIC, TSC_FIT_PAIRS, TSC_FIT_SPACING_US, &c->fit0);
	return r;
}

int clocksync_kvm_begin(struct clocksync *c, const char *dir, const char *debugfs, pid_t qemu_pid,
			char *why, size_t whylen)
{
	char path[PATH_MAX + 32];
	int r = kvmclock_find(debugfs, qemu_pid, c->kvm_dir, sizeof(c->kvm_dir));

	if (r == -EMLINK) {
		snprintf(why, whylen, "QEMU pid %d has several VMs in %s/kvm", (int)qemu_pid, debugfs);
		return r;
	}
	if (r < 0) {
		snprintf(why, whylen, "no %s/kvm/%d-* directory (is this a KVM guest? is debugfs mounted?)",
			 debugfs, (int)qemu_pid);
		return r;
	}
	if ((r = clocksync_host_conv(c)) < 0) {
		snprintf(why, whylen, "cannot relate the host TSC to CLOCK_MONOTONIC: %s", strerror(-r));
		return r;
	}
	snprintf(path, sizeof(path), "%s/kvm.samples", dir);
	if (!(c->kvm = fopen(path, "ae"))) {
		r = -errno;
		snprintf(why, whylen, "cannot write %s: %s", path, strerror(-r));
		return r;
	}
	c->kvm_on = true;
	if ((r = clocksync_kvm_reading(c)) < 0) {
		snprintf(why, whylen, "cannot read %s/vcpu*/tsc-offset: %s", c->kvm_dir, strerror(-r));
		fclose(c->kvm);
		c->kvm = NULL;
		c->kvm_on = c->time_conv = false; /* the caller may fall back to ptp */
	}
	return r;
}

int clocksync_kvm_follow(struct clocksync *c, const char *debugfs, pid_t qemu_pid)
{
	char dir[sizeof(c->kvm_dir)];
	int r;

	if (!c->kvm_on)
		return 0;
	if ((r = kvmclock_find(debugfs, qemu_pid, dir, sizeof(dir))) < 0)
		return r;
	memcpy(c->kvm_dir, dir, sizeof(dir));
	return clocksync_kvm_reading(c);
}

bool clocksync_kvm_monotonic(const struct clocksync *c)
{
	return !(c->kvm_on && c->time_conv);
}

/* The measured line over the whole session: the fits at start and stop, end to end. */
static void clocksync_kvm_conv_final(struct clocksync *c, struct clock_kvm *k)
{
	struct tsc_fit f1;

	k->time_conv = c->time_conv;
	k->tc = c->tc;
	k->fit = c->fit0;
	if (c->time_conv || tsc_fit_measure(CLOCK_MONOTONIC, TSC_FIT_PAIRS, TSC_FIT_SPACING_US, &f1) < 0 ||
	    f1.tsc0 <= c->fit0.tsc0 + 1000000)
		return;
	k->fit.ns_per_cycle = (double)(f1.ns0 - c->fit0.ns0) / (double)(f1.tsc0 - c->fit0.tsc0);
	k->fit.max_error_ns = MAX(c->fit0.max_error_ns, f1.max_error_ns);
}

/* ---- the fit and clock.ini ---- */

static int clocksync_write_ini(const char *dir, const char *text, size_t len)
{
	char path[PATH_MAX + 32], tmp[PATH_MAX + 32];
	int r;

	snprintf(path, sizeof(path), "%s/clock.ini", dir);
	snprintf(tmp, sizeof(tmp), "%s/clock.ini.tmp", dir);
	r = util_write_file(tmp, text, len, 0600);
	if (r == 0 && rename(tmp, path) < 0)
		r = -errno;
	if (r < 0)
		unlink(tmp);
	return r;
}

int clocksync_fit(struct clocksync *c)
{
	int r;

	if (!c->nsamples)
		return -ENODATA;
	r = clockfit_fit(c->samples, c->nsamples, &c->fit);
	c->fitted = r == 0;
	if (r == 0)
		c->error_bound = c->fit.error_bound;
	return r;
}

static int clocksync_ini_ptp(struct clocksync *c, FILE *f)
{
	int r = clocksync_fit(c);

	return r < 0 ? r : clockfit_write_ini(f, "ptp", &c->fit);
}

/* The largest offset change the readings saw, in ns of the host clock: how far a guest time
 * between those two readings may be from the offset it was converted with. */
static uint64_t clocksync_kvm_jump_ns(const struct clocksync *c, const struct clock_kvm *k)
{
	if (k->time_conv)
		return (uint64_t)(((unsigned __int128)c->kvm_jump_cycles * k->tc.time_mult) >> k->tc.time_shift);
	return (uint64_t)((double)c->kvm_jump_cycles * k->fit.ns_per_cycle);
}

static int clocksync_ini_kvm(struct clocksync *c, FILE *f, uint64_t started, uint64_t stopped)
{
	struct clock_kvm k = { 0 };

	clocksync_kvm_conv_final(c, &k);
	c->error_bound = c->time_conv ? 1 : MAX(k.fit.max_error_ns, 1);
	c->error_bound = MAX(c->error_bound, clocksync_kvm_jump_ns(c, &k));
	fprintf(f, "method=kvm\nsegments=0\nsamples=%u\nvcpus=%u\nerror_bound_ns=%" PRIu64
		   "\nhost_started_ns=%" PRIu64 "\nhost_stopped_ns=%" PRIu64 "\ntsc_offset_changes=%u\n",
		c->nkvm, c->kvm_vcpus, c->error_bound, started, stopped, c->kvm_changes);
	return clock_kvm_write_conv(f, &k);
}

int clocksync_finish(struct clocksync *c, const char *dir, const char *method, uint64_t host_started_ns,
		     uint64_t host_stopped_ns)
{
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	FILE *f;
	int r;

	if (c->kvm_on && clocksync_kvm_reading(c) < 0)
		log_warn("kvm: cannot read %s at stop; the readings from earlier stand", c->kvm_dir);
	if (strcmp(method, "ptp") && strcmp(method, "kvm"))
		return 0;
	if (!(f = open_memstream(&text, &len)))
		return -ENOMEM;
	r = !strcmp(method, "kvm") ? clocksync_ini_kvm(c, f, host_started_ns, host_stopped_ns) : clocksync_ini_ptp(c, f);
	if (fclose(f) != 0 && r == 0)
		r = -EIO;
	if (r == 0)
		r = clocksync_write_ini(dir, text, len);
	c->written = r == 0;
	return r;
}

/* Method kvm while tracing (clock.ini not written yet): the bound the readings so far give, by
 * the start's TSC fit (stop measures it again). */
static uint64_t clocksync_kvm_bound_now(const struct clocksync *c)
{
	struct clock_kvm k = { .time_conv = c->time_conv, .tc = c->tc, .fit = c->fit0 };

	if (c->error_bound)
		return c->error_bound;
	return MAX(c->time_conv ? 1 : MAX(c->fit0.max_error_ns, 1), clocksync_kvm_jump_ns(c, &k));
}

/* What the guest's KVM PTP clock gave, appended to buf (nothing when it gave nothing). */
static void clocksync_describe_phc(const struct clocksync *c, char *buf, size_t size)
{
	size_t n = strlen(buf);

	if (n < size && (c->nphc || c->nholdout_phc))
		n += (size_t)snprintf(buf + n, size - n, "; the guest's KVM PTP clock (ptp_kvm) narrowed %u probes and %u "
				      "hold-out probes to its readings of the host's time", c->nphc, c->nholdout_phc);
	if (n < size && c->phc_refused)
		snprintf(buf + n, size - n, "; %u of its readings malformed or outside their probe's round trip: not used",
			 c->phc_refused);
}

void clocksync_describe(const struct clocksync *c, const char *method, char *buf, size_t size)
{
	uint64_t kvm_bound = strcmp(method, "kvm") ? 0 : clocksync_kvm_bound_now(c);

	if (!strcmp(method, "kvm") && c->kvm_changes)
		snprintf(buf, size, "kvm (host TSC → perf clock by %s), %u readings of %u vCPUs in kvm.samples, error bound %" PRIu64
			 " ns: the vCPUs' TSC offsets changed %u times during the session, by up to %" PRIu64
			 " cycles (KVM moves them on a host whose TSC is unstable, or the guest wrote its TSC), and a time "
			 "between two readings is known only to within that",
			 c->time_conv ? "perf's TIME_CONV" : "a measured TSC↔CLOCK_MONOTONIC fit", c->nkvm,
			 c->kvm_vcpus, kvm_bound, c->kvm_changes, c->kvm_jump_cycles);
	else if (!strcmp(method, "kvm"))
		snprintf(buf, size, "kvm (host TSC → perf clock by %s), %u readings of %u vCPUs in kvm.samples, error bound %" PRIu64 " ns",
			 c->time_conv ? "perf's TIME_CONV" : "a measured TSC↔CLOCK_MONOTONIC fit", c->nkvm,
			 c->kvm_vcpus, kvm_bound);
	else if (!strcmp(method, "ptp") && c->fitted)
		snprintf(buf, size, "ptp, %u probe samples (%u used), error bound %" PRIu64
			 " ns, round trip min %" PRIu64 " ns / median %" PRIu64 " ns, %u hold-out probes",
			 c->nsamples, c->fit.samples_used, c->error_bound, c->fit.min_rtt, c->fit.median_rtt, c->nholdout);
	else
		snprintf(buf, size, "%s, %u probe samples, no fit", method, c->nsamples);
	if (!strcmp(method, "ptp") && c->fitted && c->fit.step_window_ns && strlen(buf) < size)
		snprintf(buf + strlen(buf), size - strlen(buf), "; the guest's clock stepped by up to %.3f ms (it fell behind "
			 "the host's across a live migration): within %.3f ms of guest time around a step the side is unknown, "
			 "and the error there is the step", (double)c->fit.step_max_ns / 1e6, (double)c->fit.step_window_ns / 1e6);
	clocksync_describe_phc(c, buf, size);
}
