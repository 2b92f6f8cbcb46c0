// SPDX-License-Identifier: GPL-2.0-only
/* The trace clocks the agent can read from user space (PROBE answers them), and how fine each
 * one really is here: a guest on the jiffies clocksource has mono, mono_raw, boot and tai
 * stepping every 4 ms while x86-tsc still counts cycles. Also what mono costs (the kernel's
 * clocksource: an emulated hpet or acpi_pm is a device read per event) and whether x86-tsc
 * agrees across CPUs (a warp test). The host picks the clock from that. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/ptp_clock.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "log.h"
#include "util.h"

#define RES_BUDGET_NS 30000000ull /* per clock: long enough to see several 4 ms jiffies steps */
#define RES_STEPS 8

static const struct {
	const char *name;
	clockid_t id;
} clocks_posix[] = {
	{ "mono", CLOCK_MONOTONIC }, { "mono_raw", CLOCK_MONOTONIC_RAW },
	{ "boot", CLOCK_BOOTTIME }, { "tai", CLOCK_TAI },
};

int clocks_read(const char *clock, uint64_t *ret)
{
	for (size_t i = 0; i < ARRAY_SIZE(clocks_posix); i++) {
		if (!strcmp(clock, clocks_posix[i].name)) {
			*ret = util_now_ns(clocks_posix[i].id);
			return 0;
		}
	}
#if defined(__x86_64__) || defined(__i386__)
	if (!strcmp(clock, "x86-tsc")) {
		*ret = __builtin_ia32_rdtsc();
		return 0;
	}
#endif
	return -EOPNOTSUPP;
}

/* The smallest step of a clock seen within the budget (its own units), 0 when it never moved. */
static uint64_t clocks_step(const char *clock)
{
	uint64_t start = util_now_ns(CLOCK_MONOTONIC_RAW), prev, v, best = 0;
	unsigned steps = 0;

	if (clocks_read(clock, &prev) < 0)
		return 0;
	while (steps < RES_STEPS && util_now_ns(CLOCK_MONOTONIC_RAW) - start < RES_BUDGET_NS) {
		(void)clocks_read(clock, &v);
		if (v == prev)
			continue;
		if (v > prev && (!best || v - prev < best))
			best = v - prev;
		prev = v;
		steps++;
	}
	return best;
}

#if defined(__x86_64__) || defined(__i386__)
#define WARP_CPUS_MAX 64   /* CPU 0 against at most this many others */
#define WARP_BUDGET_NS 2000000ull /* per pair */
#define WARP_ROUNDS 20000

struct warp_pair {
	atomic_flag lock;
	uint64_t last;        /* the last TSC read under the lock, by either side */
	uint64_t worst;       /* the largest backwards step seen */
	atomic_int ready;
	int cpu[2];
};

static uint64_t warp_rdtsc(void)
{
	__builtin_ia32_lfence(); /* not read early, before the lock was taken */
	return __builtin_ia32_rdtsc();
}

/* Each side takes the lock, reads the TSC, compares with the other side's last reading: after
 * the lock hand-over a lower reading means the two CPUs' TSCs disagree by at least that much. */
struct warp_side {
	struct warp_pair *w;
	int side;
};

static void *warp_side(void *arg)
{
	struct warp_pair *w = ((struct warp_side *)arg)->w;
	int side = ((struct warp_side *)arg)->side;
	cpu_set_t set;
	uint64_t start;

	CPU_ZERO(&set);
	CPU_SET(w->cpu[side], &set);
	if (sched_setaffinity(0, sizeof(set), &set) < 0) {
		atomic_fetch_add(&w->ready, 1);
		return (void *)1;
	}
	atomic_fetch_add(&w->ready, 1);
	while (atomic_load(&w->ready) < 2)
		;
	start = util_now_ns(CLOCK_MONOTONIC_RAW);
	for (unsigned i = 0; i < WARP_ROUNDS && util_now_ns(CLOCK_MONOTONIC_RAW) - start < WARP_BUDGET_NS; i++) {
		uint64_t now;

		while (atomic_flag_test_and_set_explicit(&w->lock, memory_order_acquire))
			;
		now = warp_rdtsc();
		if (now < w->last && w->last - now > w->worst)
			w->worst = w->last - now;
		w->last = now;
		atomic_flag_clear_explicit(&w->lock, memory_order_release);
	}
	return NULL;
}

/* The largest x86-tsc disagreement between CPU 0 and the others (cycles; 0: none seen), or
 * -1 when it could not be measured (a CPU that cannot be pinned to, no thread). */
static int64_t clocks_tsc_warp(void)
{
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	int64_t worst = 0;

	if (ncpu < 2)
		return 0;
	for (long k = 1; k < ncpu && k <= WARP_CPUS_MAX; k++) {
		struct warp_pair w = { .lock = ATOMIC_FLAG_INIT, .cpu = { 0, (int)k } };
		struct warp_side args[2] = { { &w, 0 }, { &w, 1 } };
		pthread_t th[2];
		void *rv[2] = { NULL, NULL };

		if (pthread_create(&th[0], NULL, warp_side, &args[0]) != 0)
			return -1;
		if (pthread_create(&th[1], NULL, warp_side, &args[1]) != 0) {
			atomic_fetch_add(&w.ready, 1);
			pthread_join(th[0], NULL);
			return -1;
		}
		pthread_join(th[0], &rv[0]);
		pthread_join(th[1], &rv[1]);
		if (rv[0] || rv[1])
			return -1;
		if ((int64_t)w.worst > worst)
			worst = (int64_t)w.worst;
	}
	return worst;
}
#endif

/* The kernel's clocksource ("tsc", "kvm-clock", "hpet", "acpi_pm", "jiffies"), or "". */
static void clocks_source(char *buf, size_t len)
{
	_cleanup_free_ char *s = NULL;
	size_t i = 0;

	if (util_read_file("/sys/devices/system/clocksource/clocksource0/current_clocksource", 64, &s, NULL) == 0)
		for (; s[i] && s[i] != '\n' && i + 1 < len; i++) /* "kvm-clock": '-' kept, nothing else odd */
			buf[i] = (s[i] == '-' || util_safe_name(s + i, 1)) ? s[i] : '_';
	buf[i] = '\0';
}

void clocks_resolution(char *buf, size_t len)
{
	size_t at = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < ARRAY_SIZE(clocks_posix) && at < len; i++)
		at += (size_t)snprintf(buf + at, len - at, "%s%s=%lluns", at ? " " : "", clocks_posix[i].name,
				       (unsigned long long)clocks_step(clocks_posix[i].name));
#if defined(__x86_64__) || defined(__i386__)
	if (at < len)
		at += (size_t)snprintf(buf + at, len - at, " x86-tsc=%llucycles x86-tsc-warp=%lld",
				       (unsigned long long)clocks_step("x86-tsc"), (long long)clocks_tsc_warp());
#endif
	if (at < len) {
		char src[48];

		clocks_source(src, sizeof(src));
		if (src[0])
			snprintf(buf + at, len - at, " clocksource=%s", src);
	}
}

/* ---- the guest's KVM PTP clock (ptp_kvm): the host's CLOCK_REALTIME, read by a hypercall ---- */
#define PHC_NAME "KVM virtual PTP"
#define PHC_FD_CLOCKID(fd) ((~(clockid_t)(fd) << 3) | 3) /* the kernel's FD_TO_CLOCKID */

/* /dev/ptpN whose sysfs clock_name is ptp_kvm's, opened; -ENOENT when the guest has none (the
 * module not loaded, not a KVM guest). *precise: it offers PTP_SYS_OFFSET_PRECISE (an exact
 * pair of the host's time and the guest's CLOCK_MONOTONIC_RAW). */
int clocks_phc_open(bool *precise)
{
	DIR *d = opendir("/sys/class/ptp");
	struct dirent *e;
	int r = -ENOENT;

	*precise = false;
	if (!d)
		return -ENOENT;
	while (r == -ENOENT && (e = readdir(d))) {
		char path[300], *nl;
		_cleanup_free_ char *name = NULL;
		struct ptp_clock_caps caps = { 0 };
		int fd;

		if (strncmp(e->d_name, "ptp", 3) || !util_safe_name(e->d_name, strlen(e->d_name)))
			continue;
		snprintf(path, sizeof(path), "/sys/class/ptp/%s/clock_name", e->d_name);
		if (util_read_file(path, 64, &name, NULL) < 0)
			continue;
		if ((nl = strchr(name, '\n')))
			*nl = '\0';
		if (strcmp(name, PHC_NAME))
			continue;
		snprintf(path, sizeof(path), "/dev/%s", e->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		if (fd < 0) {
			r = -errno;
			log_info("%s: %s: clock probes go without the host's PTP time", path, strerror(-r));
			break;
		}
		*precise = ioctl(fd, PTP_CLOCK_GETCAPS, &caps) == 0 && caps.cross_timestamping;
		log_info("%s (%s%s): clock probes carry the host's time", path, PHC_NAME,
			 *precise ? ", cross-timestamped" : "");
		r = fd;
	}
	closedir(d);
	return r;
}

/* Reads the trace clock into *ret_guest and brackets it in the host's CLOCK_REALTIME through the
 * PHC: the guest's CLOCK_MONOTONIC_RAW is read at *m0 (the caller, before whatever else the
 * bracket must cover: the probe's marker) and after the trace clock; the PHC pairs the host's
 * time with a later CLOCK_MONOTONIC_RAW (PTP_SYS_OFFSET_PRECISE) or is read after it (then the
 * bracket also spans that read). Guest ns count as host ns over the few microseconds between. */
int clocks_phc_bracket(int fd, bool precise, const char *clock, uint64_t m0, uint64_t *ret_guest, uint64_t *ret_lo,
		       uint64_t *ret_hi)
{
	uint64_t m1, host, at;
	int r = clocks_read(clock, ret_guest);

	if (r < 0)
		return r;
	m1 = util_now_ns(CLOCK_MONOTONIC_RAW);
	if (precise) {
		struct ptp_sys_offset_precise p = { 0 };

		if (ioctl(fd, PTP_SYS_OFFSET_PRECISE, &p) < 0)
			return -errno;
		host = (uint64_t)p.device.sec * 1000000000ull + p.device.nsec;
		at = (uint64_t)p.sys_monoraw.sec * 1000000000ull + p.sys_monoraw.nsec;
		if (at < m1 || host < at - m0)
			return -ERANGE;
		*ret_lo = host - (at - m0);
		*ret_hi = host - (at - m1);
		return 0;
	}
	{
		struct timespec ts;

		if (clock_gettime(PHC_FD_CLOCKID(fd), &ts) < 0)
			return -errno;
		at = util_now_ns(CLOCK_MONOTONIC_RAW);
		host = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
		if (host < at - m0)
			return -ERANGE;
		*ret_lo = host - (at - m0);
		*ret_hi = host;
	}
	return 0;
}
