/* SPDX-License-Identifier: GPL-2.0-only */
/* The kvm clock method in the merge: guest x86-tsc → host TSC (per vCPU, kvm.samples) → host
 * perf clock (clock.ini: perf's TIME_CONV values, or a measured TSC↔CLOCK_MONOTONIC line). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "tsc.h"

#define CLOCK_KVM_MAX_VCPUS 256
#define CLOCK_KVM_MAX_READINGS (1u << 20)

/* One vCPU's TSC parameters, valid from guest TSC guest_start on. */
struct clock_kvm_point {
	uint64_t guest_start;
	struct tsc_kvm k;
};

struct clock_kvm {
	bool time_conv;         /* true: perf's TIME_CONV; false: the measured line */
	struct tsc_conv tc;
	struct tsc_fit fit;
	uint64_t readings;      /* kvm.samples lines */
	uint64_t host_started_ns, host_stopped_ns; /* session window in the host perf clock (0: absent) */
	unsigned nvcpus;
	size_t n[CLOCK_KVM_MAX_VCPUS];
	struct clock_kvm_point *p[CLOCK_KVM_MAX_VCPUS]; /* sorted by guest_start */
};

/* Host conversion keys of a kvm clock.ini (host_conv=time_conv|measured and its values). */
int clock_kvm_parse_conv(const char *text, size_t len, struct clock_kvm *k);
/* kvm.samples ("host_ns vcpu offset ratio frac_bits" lines, host_ns in the host perf clock);
 * -EBADMSG with *ret_line on a malformed line. */
int clock_kvm_parse_samples(struct clock_kvm *k, const char *text, size_t len, size_t *ret_line);
/* Host TSC ↔ host perf clock ns with the recorded conversion. */
uint64_t clock_kvm_tsc_to_ns(const struct clock_kvm *k, uint64_t host_tsc);
uint64_t clock_kvm_ns_to_tsc(const struct clock_kvm *k, uint64_t ns);
/* A guest x86-tsc timestamp of vCPU vcpu → host perf clock ns (0 for an unknown vCPU). */
uint64_t clock_kvm_apply(const struct clock_kvm *k, unsigned vcpu, uint64_t guest_tsc);
/* Writes the conversion keys (for clock.ini). */
int clock_kvm_write_conv(FILE *f, const struct clock_kvm *k);
void clock_kvm_free(struct clock_kvm *k);
