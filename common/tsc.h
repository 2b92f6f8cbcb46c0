/* SPDX-License-Identifier: GPL-2.0-only */
/* TSC arithmetic for the kvm clock method: guest TSC → host TSC → host perf clock. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

/* perf's TIME_CONV values (perf_event_mmap_page time_* fields). */
struct tsc_conv {
	uint16_t time_shift;
	uint32_t time_mult;
	uint64_t time_zero;
	uint64_t time_cycles;
	uint64_t time_mask;
	bool cap_user_time_zero;
	bool cap_user_time_short;
};

/* One vCPU's KVM TSC parameters: guest = ((host * ratio) >> frac) + offset. */
struct tsc_kvm {
	int64_t offset;
	uint64_t ratio;     /* 0 or absent: no scaling */
	uint32_t frac_bits; /* 0..63 */
};

/* Whether two readings of a vCPU's parameters are the same. */
bool tsc_kvm_equal(const struct tsc_kvm *a, const struct tsc_kvm *b);
/* host_tsc = ((guest_tsc - offset) << frac) / ratio, in 128-bit arithmetic. */
uint64_t tsc_guest_to_host(const struct tsc_kvm *k, uint64_t guest_tsc);
/* perf's tsc_to_perf_time() and perf_time_to_tsc(), same integer math. */
uint64_t tsc_to_perf_time(const struct tsc_conv *tc, uint64_t cycles);
uint64_t tsc_from_perf_time(const struct tsc_conv *tc, uint64_t ns);
/* Reads this host's conversion from a perf_event mmap page: -EOPNOTSUPP without
 * cap_user_time_zero (as on these PVM machines), -errno if perf_event_open fails. */
int tsc_conv_from_kernel(struct tsc_conv *ret);

/* A measured linear map host TSC → clock ns, for hosts without cap_user_time_zero:
 * ns = (tsc - tsc0) * ns_per_cycle + ns0. */
struct tsc_fit {
	uint64_t tsc0, ns0;
	double ns_per_cycle;
	uint64_t max_error_ns; /* worst residual of the pairs it was fitted to */
};

/* This CPU's TSC (0 where there is none). */
uint64_t tsc_rdtsc(void);
/* Samples rdtsc against clock_gettime(clockid) n times, spaced by spacing_us. */
int tsc_fit_measure(int clockid, unsigned n, unsigned spacing_us, struct tsc_fit *ret);
uint64_t tsc_fit_apply(const struct tsc_fit *f, uint64_t tsc);
