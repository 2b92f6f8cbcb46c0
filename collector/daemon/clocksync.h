/* SPDX-License-Identifier: GPL-2.0-only */
/* The daemon's clock work: probe logs, the ptp fit, kvm readings; clock.ini at stop. */
#pragma once

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "clock_kvm.h"
#include "clockfit.h"
#include "kvmclock.h"
#include "tsc.h"

struct clocksync {
	int samples_fd, holdout_fd;
	int perf_fd;        /* perf-clock.samples: guest mono beside a trace clock that is not mono */
	bool no_time_conv;  /* kvm: relate the host TSC to CLOCK_MONOTONIC (guest perf needs it) */
	struct clock_sample *samples;
	size_t cap;
	unsigned nsamples, nholdout;
	/* Probes whose bracket the guest's KVM PTP clock narrowed (fitted, hold-out), and replies
	 * whose PTP bracket was malformed or missed their round trip (not used). */
	unsigned nphc, nholdout_phc, phc_refused;
	struct clock_fit fit;
	bool fitted, written;
	uint64_t error_bound;
	/* kvm */
	bool kvm_on, time_conv;
	char kvm_dir[512];
	FILE *kvm;          /* kvm.samples */
	struct tsc_conv tc;
	struct tsc_fit fit0; /* measured at start */
	unsigned nkvm, kvm_vcpus;
	/* What the readings saw move: a vCPU's offset is the guest's TSC minus the host's only
	 * while it holds, so a change (KVM rewrites it on an unstable host TSC; the guest wrote
	 * its TSC) leaves the times between two readings uncertain by up to its size. */
	struct tsc_kvm kvm_last[KVMCLOCK_MAX_VCPUS];
	unsigned kvm_changes;       /* readings of a vCPU that differed from its previous one */
	uint64_t kvm_jump_cycles;   /* the largest such difference, in host TSC cycles */
};

/* Opens DIR/clock.samples and DIR/clock.holdout (append). */
int clocksync_open(struct clocksync *c, const char *dir);
void clocksync_close(struct clocksync *c);
/* A probe's answer: hold-out probes (MARK=1) go to clock.holdout only, never into the fit. */
void clocksync_probe(struct clocksync *c, bool holdout, const struct clock_sample *s);
/* Guest perf's clock (mono) when the trace clock is another: DIR/perf-clock.samples, one line
 * per probe (host send, the guest's CLOCK_MONOTONIC, host reply), fitted by the merge. */
int clocksync_perf_open(struct clocksync *c, const char *dir);
void clocksync_perf_probe(struct clocksync *c, const struct clock_sample *s);
/* Fits the samples so far (status, stop). */
int clocksync_fit(struct clocksync *c);
/* kvm: finds QEMU's debugfs dir, picks the host conversion, first reading; *why on failure. */
int clocksync_kvm_begin(struct clocksync *c, const char *dir, const char *debugfs, pid_t qemu_pid,
			char *why, size_t whylen);
int clocksync_kvm_reading(struct clocksync *c);
/* Whether this host's TSC is a clocksource (SYSFS_CLOCKSOURCE's available_clocksource names
 * tsc): when the kernel marked it unstable, KVM rewrites each vCPU's TSC offset as it moves
 * between host CPUs, and the guest's TSC is not the host's plus the offsets read; *why says so. */
bool clocksync_host_tsc_stable(const char *available_path, char *why, size_t whylen);
#define SYSFS_CLOCKSOURCE "/sys/devices/system/clocksource/clocksource0/available_clocksource"
/* After a live migration: the destination QEMU's KVM dir (its own TSC offsets), read once now
 * (kvm.samples goes on, the offsets' change counted like any other). 0 when the kvm method is
 * not on; negative errno when the dir cannot be found or read. */
int clocksync_kvm_follow(struct clocksync *c, const char *debugfs, pid_t qemu_pid);
/* True when host perf must record with -k CLOCK_MONOTONIC (ptp, or kvm without TIME_CONV). */
bool clocksync_kvm_monotonic(const struct clocksync *c);
/* Now in the host perf clock. */
uint64_t clocksync_host_now(const struct clocksync *c);
/* Final reading/fit; writes DIR/clock.ini for ptp and kvm. */
int clocksync_finish(struct clocksync *c, const char *dir, const char *method, uint64_t host_started_ns,
		     uint64_t host_stopped_ns);
/* One line: method, samples, error bound (summary, status). */
void clocksync_describe(const struct clocksync *c, const char *method, char *buf, size_t size);
