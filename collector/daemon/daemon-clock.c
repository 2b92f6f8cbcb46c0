// SPDX-License-Identifier: GPL-2.0-only
/* The session's clock method and the guest's trace clock, chosen from the agent's hello (its
 * trace clocks and their measured steps) and the host (kvm debugfs for this QEMU). */
#include <errno.h>
#include <glob.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clocksync.h"
#include "daemon.h"
#include "log.h"

#define COARSE_CLOCK_NS 1000000ull /* a guest clock stepping this much is coarse for ptp */
#define FINE_TSC_CYCLES 100000ull

static bool clocks_has(const char *clocks, const char *want)
{
	size_t l = strlen(want);

	for (const char *p = clocks; (p = strstr(p, want)); p += l) {
		bool left = p == clocks || p[-1] == ' ' || p[-1] == '[';
		bool right = p[l] == '\0' || p[l] == ' ' || p[l] == ']';

		if (left && right)
			return true;
	}
	return false;
}

/* kvm debugfs holds this QEMU's vCPU TSC offsets: /sys/kernel/debug/kvm/<pid>-<fd>/vcpu0/tsc-offset. */
static bool kvm_debugfs_has(const char *debugfs, pid_t pid)
{
	char pattern[PATH_MAX];
	glob_t g;
	bool found;

	if (pid <= 0)
		return false;
	snprintf(pattern, sizeof(pattern), "%s/kvm/%d-*/vcpu0/tsc-offset", debugfs, (int)pid);
	found = glob(pattern, 0, NULL, &g) == 0 && g.gl_pathc > 0;
	globfree(&g);
	return found;
}

/* A "name=VALUE" word of the agent's hello clock_res into buf; false when absent. */
static bool clock_word(const char *res, const char *name, char *buf, size_t len)
{
	size_t l = strlen(name);

	for (const char *p = res; (p = strstr(p, name)); p += l) {
		if ((p != res && p[-1] != ' ') || p[l] != '=')
			continue;
		snprintf(buf, len, "%.*s", (int)strcspn(p + l + 1, " "), p + l + 1);
		return true;
	}
	return false;
}

/* The step the agent measured for clock name ("name=NUMBERunit" in its hello), 0 when unknown. */
static uint64_t clock_step(const char *res, const char *name, const char *unit)
{
	char word[32], *end;
	uint64_t v;

	if (!clock_word(res, name, word, sizeof(word)))
		return 0;
	v = strtoull(word, &end, 10);
	return end != word && !strcmp(end, unit) ? v : 0;
}

/* Whether reading mono costs a device access per event here (an emulated HPET or ACPI PM
 * timer: a VM exit under KVM, a device model call under TCG) while x86-tsc is read in place
 * and agrees across CPUs (the agent's warp test saw no TSC go backwards between CPU 0 and each
 * other CPU). Under TCG a guest's mono reads hpet: a traced flood wrote 18% of its untraced
 * rate with mono, 27% with x86-tsc, and the agent spent 10.8 against 8.8 s of guest CPU per
 * GB (bench/RESULTS.md, bench cost). */
static bool daemon_mono_costly(struct daemon *d)
{
	char src[48], warp[24];
	char *end;

	if (!clock_word(d->hello.clock_res, "clocksource", src, sizeof(src)) ||
	    (strcmp(src, "hpet") && strcmp(src, "acpi_pm")))
		return false;
	if (!clock_word(d->hello.clock_res, "x86-tsc-warp", warp, sizeof(warp)))
		return false;
	return strtoll(warp, &end, 10) == 0 && end != warp && !*end;
}

/* The ptp method's guest trace clock: mono, unless mono is coarse here (a guest on the jiffies
 * clocksource steps every 4 ms) or costly (daemon_mono_costly; not with guest perf, whose
 * samples carry mono: one clock keeps events and samples in exact order) and the guest has a
 * fine x86-tsc: then x86-tsc, whose rate the fit measures (clockfit guest_scale). Guest perf
 * still stamps with mono (perf-clock.samples). */
static const char *daemon_ptp_clock(struct daemon *d)
{
	uint64_t mono = clock_step(d->hello.clock_res, "mono", "ns");
	uint64_t tsc = clock_step(d->hello.clock_res, "x86-tsc", "cycles");
	bool tsc_fine = clocks_has(d->hello.clocks, "x86-tsc") && tsc && tsc <= FINE_TSC_CYCLES;

	if (strcmp(d->o->trace_clock, "auto"))
		return d->o->trace_clock; /* --trace-clock, checked against the guest's list before */
	if (tsc_fine && mono < COARSE_CLOCK_NS && !d->o->perf.events && daemon_mono_costly(d)) {
		log_info("the guest's mono clock reads an emulated timer device (clock_res: %s): tracing with "
			 "x86-tsc, which is read in place and agrees across its CPUs", d->hello.clock_res);
		return "x86-tsc";
	}
	if (mono < COARSE_CLOCK_NS || !tsc_fine)
		return "mono";
	if (d->o->perf.events)
		log_warn("the guest's mono clock steps every %.1f ms: guest perf samples (stamped with it) are aligned "
			 "only to within a step; its events are traced with x86-tsc", (double)mono / 1e6);
	log_info("the guest's mono clock steps every %.1f ms (jiffies clocksource?): tracing with x86-tsc "
		 "(steps of %llu cycles) instead", (double)mono / 1e6, (unsigned long long)tsc);
	return "x86-tsc";
}

/* --clock auto: kvm only when kvm debugfs has this VM and the guest offers x86-tsc. An
 * explicit --clock kvm that cannot work fails the start; auto falls back to ptp. */
int daemon_choose_clock(struct daemon *d, char *why, size_t len)
{
	const char *want = d->o->clock;
	bool autom = !strcmp(want, "auto");
	char kwhy[PATH_MAX + 128];

	/* Guest perf stamps its records with the guest's mono: beside x86-tsc (kvm, or ptp on a
	 * coarse guest) the probes also read mono (perf-clock.samples), and host times must be
	 * CLOCK_MONOTONIC for that fit, so kvm relates the host TSC to it (no TIME_CONV). So do
	 * the VMs of a group: one host recording, whose clock every one of them must share. */
	d->clk.no_time_conv = d->o->perf.events != NULL || d->o->group;
	if (strcmp(d->o->trace_clock, "auto") && !clocks_has(d->hello.clocks, d->o->trace_clock)) {
		snprintf(why, len, "--trace-clock %s: the guest has no such trace clock (it offers: %s)", d->o->trace_clock,
			 d->hello.clocks);
		return -ENOENT;
	}
	if (!strcmp(want, "kvm") && strcmp(d->o->trace_clock, "auto") && strcmp(d->o->trace_clock, "x86-tsc")) {
		snprintf(why, len, "--clock kvm traces with x86-tsc: it cannot take --trace-clock %s", d->o->trace_clock);
		return -EINVAL;
	}
	if (autom && strcmp(d->o->trace_clock, "auto") && strcmp(d->o->trace_clock, "x86-tsc"))
		want = "ptp"; /* the trace clock asked for rules kvm out */
	else if (autom)
		want = kvm_debugfs_has(d->o->kvm_debugfs, d->s.qemu_pid) && clocks_has(d->hello.clocks, "x86-tsc") ? "kvm" : "ptp";
	if (!strcmp(want, "kvm") && !clocksync_host_tsc_stable(SYSFS_CLOCKSOURCE, kwhy, sizeof(kwhy))) {
		if (!autom) {
			snprintf(why, len, "--clock kvm: %s; --clock ptp aligns this guest", kwhy);
			return -EINVAL;
		}
		log_warn("kvm clock method unusable (%s): using ptp", kwhy);
		want = "ptp";
	}
	if (!strcmp(want, "kvm") && clocksync_kvm_begin(&d->clk, d->s.dir, d->o->kvm_debugfs, d->s.qemu_pid, kwhy, sizeof(kwhy)) < 0) {
		if (!autom) {
			snprintf(why, len, "--clock kvm: %s", kwhy);
			return -ENOENT;
		}
		log_warn("kvm clock method unusable (%s): using ptp", kwhy);
		want = "ptp";
	}
	snprintf(d->s.clock_method, sizeof(d->s.clock_method), "%s", want);
	snprintf(d->s.guest_clock, sizeof(d->s.guest_clock), "%s",
		 !strcmp(want, "kvm") ? "x86-tsc" : daemon_ptp_clock(d));
	snprintf(d->s.guest_clock_res, sizeof(d->s.guest_clock_res), "%s", d->hello.clock_res);
	if (d->o->perf.events && strcmp(d->s.guest_clock, "mono") && clocksync_perf_open(&d->clk, d->s.dir) < 0)
		log_warn("cannot write %s/perf-clock.samples: guest perf records will not be aligned", d->s.dir);
	return 0;
}
