// SPDX-License-Identifier: GPL-2.0-only
/* The kvm clock method in the merge (common/clock_kvm.c) on the fixture debugfs values:
 * guest x86-tsc → host TSC per vCPU → host perf clock, exact integer math checked against
 * values computed independently (Python big integers). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock_kvm.h"
#include "harness.h"

/* tests/fixtures/kvm-debugfs/kvm/4242-11: vcpu0 scaled, vcpu1 offset only. */
static const char fixture_samples[] =
	"1000 0 -1234567890123 225179981368524 48\n"
	"1000 1 5000 0 0\n"
	"2000 0 -1234567890123 225179981368524 48\n"
	"2000 1 5000 0 0\n";
static const char time_conv_ini[] =
	"method=kvm\nsegments=0\nsamples=4\nerror_bound_ns=1\n"
	"host_conv=time_conv\ntime_shift=31\ntime_mult=858993459\ntime_zero=1700000000000\n"
	"time_cycles=0\ntime_mask=0\ntime_short=0\n";
static const char measured_ini[] =
	"method=kvm\nhost_conv=measured\ntsc0=1000\nns0=5000\nns_per_cycle=0.5\nhost_conv_error_ns=40\n"
	"host_started_ns=10\nhost_stopped_ns=20\n";

static struct clock_kvm *load(const char *ini, const char *samples)
{
	struct clock_kvm *k = calloc(1, sizeof(*k));

	if (k && (clock_kvm_parse_conv(ini, strlen(ini), k) < 0 ||
		  clock_kvm_parse_samples(k, samples, strlen(samples), NULL) < 0)) {
		clock_kvm_free(k);
		free(k);
		return NULL;
	}
	return k;
}

static void drop(struct clock_kvm *k)
{
	clock_kvm_free(k);
	free(k);
}

TEST(time_conv_scaled_vcpu)
{
	struct clock_kvm *k = load(time_conv_ini, fixture_samples);

	CHECK(k);
	CHECK_INT(k->time_conv, ==, 1);
	CHECK_INT(k->nvcpus, ==, 2);
	CHECK_INT(k->readings, ==, 4);
	CHECK_INT(k->n[0], ==, 1); /* an unchanged reading is no new point */
	/* guest 97530863319752 → host TSC 123456789012344 → perf ns (perf's mul/shift). */
	CHECK_INT(clock_kvm_apply(k, 0, 97530863319752ull), ==, 51082715593439ll);
	drop(k);
}

TEST(measured_unscaled_vcpu)
{
	struct clock_kvm *k = load(measured_ini, fixture_samples);

	CHECK(k);
	CHECK_INT(k->time_conv, ==, 0);
	CHECK_INT(k->fit.max_error_ns, ==, 40);
	CHECK_INT(k->host_started_ns, ==, 10);
	CHECK_INT(k->host_stopped_ns, ==, 20);
	/* guest 1005000 - offset 5000 = host TSC 1000000 → 5000 + 999000 * 0.5 ns. */
	CHECK_INT(clock_kvm_apply(k, 1, 1005000), ==, 504500);
	CHECK_INT(clock_kvm_ns_to_tsc(k, 504500), ==, 1000000);
	CHECK_INT(clock_kvm_apply(k, 2, 1005000), ==, 0); /* no such vCPU */
	drop(k);
}

TEST(offset_change_starts_a_segment)
{
	/* vcpu0's offset is 0 until host ns 1000 (host TSC 1000: ns = 1000 * 1.0), then 10^6. */
	static const char ini[] = "host_conv=measured\ntsc0=0\nns0=0\nns_per_cycle=1.0\n";
	static const char s[] = "100 0 0 0 0\n1000 0 1000000 0 0\n";
	struct clock_kvm *k = load(ini, s);

	CHECK(k);
	CHECK_INT(k->n[0], ==, 2);
	CHECK_INT(k->p[0][1].guest_start, ==, 1001000); /* host TSC 1000 as the guest saw it */
	CHECK_INT(clock_kvm_apply(k, 0, 500), ==, 500);       /* before the change: offset 0 */
	CHECK_INT(clock_kvm_apply(k, 0, 1002000), ==, 2000);  /* after: offset 10^6 */
	drop(k);
}

TEST(conv_round_trip)
{
	struct clock_kvm a = { .time_conv = false, .fit = { .tsc0 = 7, .ns0 = 9, .ns_per_cycle = 0.3333333333333333,
							     .max_error_ns = 12 } };
	struct clock_kvm *b = calloc(1, sizeof(*b));
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	CHECK(f && b);
	CHECK_INT(clock_kvm_write_conv(f, &a), ==, 0);
	fclose(f);
	CHECK_INT(clock_kvm_parse_conv(text, len, b), ==, 0);
	CHECK_INT(b->fit.tsc0, ==, 7);
	CHECK_INT(b->fit.ns0, ==, 9);
	CHECK(b->fit.ns_per_cycle == a.fit.ns_per_cycle); /* %.17g round-trips a double */
	free(text);
	free(b);
}

TEST(refusals)
{
	struct clock_kvm *k = calloc(1, sizeof(*k));
	size_t line = 0;

	CHECK(k);
	CHECK_INT(clock_kvm_parse_conv("method=kvm\n", 11, k), ==, -EBADMSG);                   /* no host_conv */
	CHECK_INT(clock_kvm_parse_conv("host_conv=magic\n", 16, k), ==, -EBADMSG);
	CHECK_INT(clock_kvm_parse_conv("host_conv=measured\nns_per_cycle=0\n", 34, k), ==, -EBADMSG);
	CHECK_INT(clock_kvm_parse_conv("host_conv=time_conv\ntime_mult=0\n", 32, k), ==, -EBADMSG);
	CHECK_INT(clock_kvm_parse_conv("host_conv=time_conv\ntime_shift=64\n", 34, k), ==, -EBADMSG);
	CHECK_INT(clock_kvm_parse_conv(measured_ini, strlen(measured_ini), k), ==, 0);
	CHECK_INT(clock_kvm_parse_samples(k, "", 0, &line), ==, -ENOENT);
	CHECK_INT(clock_kvm_parse_samples(k, "1 0 0 0\n", 8, &line), ==, -EBADMSG);
	CHECK_INT(line, ==, 1);
	CHECK_INT(clock_kvm_parse_samples(k, "# c\n1 256 0 0 0\n", 16, &line), ==, -EBADMSG); /* vCPU */
	CHECK_INT(line, ==, 2);
	CHECK_INT(clock_kvm_parse_samples(k, "1 0 0 1 64\n", 11, &line), ==, -EBADMSG);       /* frac bits */
	CHECK_INT(clock_kvm_parse_samples(k, "1 0 0 0 0 junk\n", 15, &line), ==, -EBADMSG);
	drop(k);
}
