// SPDX-License-Identifier: GPL-2.0-only
/* Fuzz target: the session's clock files, whose numbers come from the guest (probe replies,
 * kvm readings) or from a session dir anyone may have edited: clock.ini (clock_apply_parse,
 * clock_kvm_parse_conv), clock.samples (clockfit_read_samples, then the fit a merge redoes)
 * and kvm.samples (clock_kvm_parse_samples). The first byte picks the file. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock_apply.h"
#include "clock_kvm.h"
#include "clockfit.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fuzz_ini(const char *t, size_t n)
{
	struct clock_map m;

	if (clock_apply_parse(t, n, &m) == 0) {
		for (uint64_t g = 0; g < 64; g++) {
			uint64_t h = clock_apply(&m, g << 40);

			if (m.n && (h == 0 || h == UINT64_MAX))
				abort(); /* documented: clamped to [1, UINT64_MAX - 1] */
		}
		clock_apply_free(&m);
	}
}

static void fuzz_samples(const char *t, size_t n)
{
	FILE *f = fmemopen((void *)t, n, "r");
	struct clock_sample *s = NULL;
	struct clock_fit fit;
	size_t ns = 0, line = 0;

	if (!f)
		return;
	if (clockfit_read_samples(f, 4096, &s, &ns, &line) == 0 && clockfit_fit(s, ns, &fit) == 0) {
		char *ini = NULL;
		size_t len = 0;
		FILE *o = open_memstream(&ini, &len);
		struct clock_map m;

		/* Whatever the samples, a fit yields a clock.ini the merge's reader accepts. */
		if (!o || clockfit_write_ini(o, "ptp", &fit) < 0 || fclose(o) != 0 || clock_apply_parse(ini, len, &m) < 0)
			abort();
		clock_apply_free(&m);
		free(ini);
		(void)clockfit_apply(&fit, s[0].guest);
	}
	free(s);
	fclose(f);
}

static void fuzz_kvm(const char *t, size_t n)
{
	const char *split = memchr(t, '\f', n); /* clock.ini \f kvm.samples */
	struct clock_kvm k = { 0 };
	size_t line = 0;

	if (!split)
		return;
	if (clock_kvm_parse_conv(t, (size_t)(split - t), &k) == 0 &&
	    clock_kvm_parse_samples(&k, split + 1, n - (size_t)(split - t) - 1, &line) == 0)
		for (unsigned v = 0; v < 4; v++)
			(void)clock_kvm_apply(&k, v, 123456789ull << v);
	clock_kvm_free(&k);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *t;

	if (size < 1 || size > (1u << 20))
		return 0;
	t = malloc(size); /* not NUL-terminated: the parsers get lengths */
	if (!t)
		return 0;
	memcpy(t, data + 1, size - 1);
	switch (data[0] % 3) {
	case 0: fuzz_ini(t, size - 1); break;
	case 1: fuzz_samples(t, size - 1); break;
	default: fuzz_kvm(t, size - 1); break;
	}
	free(t);
	return 0;
}
