// SPDX-License-Identifier: GPL-2.0-only
#include "tsc.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

bool tsc_kvm_equal(const struct tsc_kvm *a, const struct tsc_kvm *b)
{
	return a->offset == b->offset && a->ratio == b->ratio && a->frac_bits == b->frac_bits;
}

uint64_t tsc_guest_to_host(const struct tsc_kvm *k, uint64_t guest_tsc)
{
	unsigned __int128 v = (uint64_t)(guest_tsc - (uint64_t)k->offset);

	if (k->ratio == 0 || k->frac_bits > 63)
		return (uint64_t)v;
	v = (v << k->frac_bits) / k->ratio;
	return v > UINT64_MAX ? UINT64_MAX : (uint64_t)v;
}

uint64_t tsc_to_perf_time(const struct tsc_conv *tc, uint64_t cyc)
{
	uint64_t quot, rem;

	if (tc->cap_user_time_short)
		cyc = tc->time_cycles + ((cyc - tc->time_cycles) & tc->time_mask);
	quot = cyc >> tc->time_shift;
	rem = cyc & (((uint64_t)1 << tc->time_shift) - 1);
	return tc->time_zero + quot * tc->time_mult + ((rem * tc->time_mult) >> tc->time_shift);
}

uint64_t tsc_from_perf_time(const struct tsc_conv *tc, uint64_t ns)
{
	uint64_t t, quot, rem;

	if (tc->time_mult == 0)
		return 0;
	t = ns - tc->time_zero;
	quot = t / tc->time_mult;
	rem = t % tc->time_mult;
	return (quot << tc->time_shift) + (rem << tc->time_shift) / tc->time_mult;
}

int tsc_conv_from_kernel(struct tsc_conv *ret)
{
	struct perf_event_attr attr = {
		.type = PERF_TYPE_SOFTWARE, .size = sizeof(attr), .config = PERF_COUNT_SW_DUMMY,
		.exclude_kernel = 1,
	};
	volatile struct perf_event_mmap_page *pg;
	long psz = sysconf(_SC_PAGESIZE);
	struct tsc_conv tc = { 0 };
	uint32_t seq;
	int fd, r = 0;

	fd = (int)syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0);
	if (fd < 0)
		return -errno;
	pg = mmap(NULL, (size_t)psz, PROT_READ, MAP_SHARED, fd, 0);
	if (pg == MAP_FAILED) {
		r = -errno;
		close(fd);
		return r;
	}
	do {
		seq = pg->lock;
		__sync_synchronize();
		tc.cap_user_time_zero = pg->cap_user_time_zero;
		tc.cap_user_time_short = pg->cap_user_time_short;
		tc.time_shift = pg->time_shift;
		tc.time_mult = pg->time_mult;
		tc.time_zero = pg->time_zero;
		tc.time_cycles = pg->time_cycles;
		tc.time_mask = pg->time_mask;
		__sync_synchronize();
	} while (pg->lock != seq);
	munmap((void *)pg, (size_t)psz);
	close(fd);
	if (!tc.cap_user_time_zero)
		return -EOPNOTSUPP;
	*ret = tc;
	return 0;
}

uint64_t tsc_rdtsc(void)
{
#if defined(__x86_64__) || defined(__i386__)
	uint32_t lo, hi;

	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
#else
	return 0;
#endif
}

int tsc_fit_measure(int clockid, unsigned n, unsigned spacing_us, struct tsc_fit *ret)
{
	uint64_t t[64], c[64];
	struct tsc_fit f = { 0 };
	double sx = 0, sy = 0, sxx = 0, sxy = 0;

	if (n < 2 || n > 64)
		return -EINVAL;
	for (unsigned i = 0; i < n; i++) {
		struct timespec ts;
		uint64_t a = tsc_rdtsc(), b;

		clock_gettime(clockid, &ts);
		b = tsc_rdtsc();
		c[i] = a + (b - a) / 2;
		t[i] = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
		if (spacing_us)
			usleep(spacing_us);
	}
	if (c[n - 1] == c[0])
		return -EOPNOTSUPP; /* no usable TSC */
	f.tsc0 = c[0];
	f.ns0 = t[0];
	for (unsigned i = 0; i < n; i++) {
		double x = (double)(c[i] - c[0]), y = (double)(t[i] - t[0]);

		sx += x, sy += y, sxx += x * x, sxy += x * y;
	}
	f.ns_per_cycle = (n * sxy - sx * sy) / (n * sxx - sx * sx);
	f.ns0 = t[0] + (uint64_t)((sy - f.ns_per_cycle * sx) / n);
	for (unsigned i = 0; i < n; i++) {
		double e = (double)tsc_fit_apply(&f, c[i]) - (double)t[i];

		if (e < 0)
			e = -e;
		if ((uint64_t)e > f.max_error_ns)
			f.max_error_ns = (uint64_t)e;
	}
	*ret = f;
	return 0;
}

uint64_t tsc_fit_apply(const struct tsc_fit *f, uint64_t tsc)
{
	double d = ((double)(int64_t)(tsc - f->tsc0)) * f->ns_per_cycle;

	/* A hostile or broken fit (clock.ini is a file) must not make the conversion undefined. */
	if (!(d > -9.2e18 && d < 9.2e18))
		return d > 0 ? UINT64_MAX - 1 : 1;
	return f->ns0 + (uint64_t)(int64_t)d;
}
