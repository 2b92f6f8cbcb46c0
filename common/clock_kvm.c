// SPDX-License-Identifier: GPL-2.0-only
#include "clock_kvm.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

struct conv_key {
	const char *name;
	size_t off;
	enum { K_U16, K_U32, K_U64, K_DBL, K_BOOL } type;
};

#define CK(n, t, f) { n, offsetof(struct clock_kvm, f), t }
static const struct conv_key conv_keys[] = {
	CK("time_shift", K_U16, tc.time_shift), CK("time_mult", K_U32, tc.time_mult),
	CK("time_zero", K_U64, tc.time_zero), CK("time_cycles", K_U64, tc.time_cycles),
	CK("time_mask", K_U64, tc.time_mask), CK("time_short", K_BOOL, tc.cap_user_time_short),
	CK("tsc0", K_U64, fit.tsc0), CK("ns0", K_U64, fit.ns0), CK("ns_per_cycle", K_DBL, fit.ns_per_cycle),
	CK("host_conv_error_ns", K_U64, fit.max_error_ns),
	CK("host_started_ns", K_U64, host_started_ns), CK("host_stopped_ns", K_U64, host_stopped_ns),
};

static int conv_value(struct clock_kvm *k, const struct conv_key *c, const char *val)
{
	void *p = (char *)k + c->off;
	uint64_t v;
	char *end;

	if (c->type == K_DBL) {
		errno = 0;
		*(double *)p = strtod(val, &end);
		return errno || end == val || *end || !isfinite(*(double *)p) ? -EBADMSG : 0;
	}
	if (util_parse_u64(val, c->type == K_U16 ? 63 : c->type == K_U32 ? UINT32_MAX : c->type == K_BOOL ? 1 : UINT64_MAX, &v) < 0)
		return -EBADMSG;
	if (c->type == K_U16)
		*(uint16_t *)p = (uint16_t)v;
	else if (c->type == K_U32)
		*(uint32_t *)p = (uint32_t)v;
	else if (c->type == K_BOOL)
		*(bool *)p = v;
	else
		*(uint64_t *)p = v;
	return 0;
}

static int conv_line(struct clock_kvm *k, char *line, bool *have_conv)
{
	char *eq = strchr(line, '=');

	if (!eq)
		return 0;
	*eq = '\0';
	if (!strcmp(line, "host_conv")) {
		if (strcmp(eq + 1, "time_conv") && strcmp(eq + 1, "measured"))
			return -EBADMSG;
		k->time_conv = !strcmp(eq + 1, "time_conv");
		*have_conv = true;
		return 0;
	}
	for (size_t i = 0; i < ARRAY_SIZE(conv_keys); i++)
		if (!strcmp(line, conv_keys[i].name))
			return conv_value(k, &conv_keys[i], eq + 1);
	return 0;
}

int clock_kvm_parse_conv(const char *text, size_t len, struct clock_kvm *k)
{
	_cleanup_free_ char *copy = strndup(text, len);
	char *save = NULL;
	bool have_conv = false;
	int r = 0;

	if (!copy)
		return -ENOMEM;
	for (char *l = strtok_r(copy, "\n", &save); l && r == 0; l = strtok_r(NULL, "\n", &save))
		r = conv_line(k, l, &have_conv);
	if (r < 0 || !have_conv)
		return -EBADMSG;
	if (k->time_conv ? k->tc.time_mult == 0 : !(k->fit.ns_per_cycle > 0.01 && k->fit.ns_per_cycle < 100.0))
		return -EBADMSG; /* a 10 MHz..100 GHz TSC */
	k->tc.cap_user_time_zero = k->time_conv;
	return 0;
}

uint64_t clock_kvm_tsc_to_ns(const struct clock_kvm *k, uint64_t host_tsc)
{
	return k->time_conv ? tsc_to_perf_time(&k->tc, host_tsc) : tsc_fit_apply(&k->fit, host_tsc);
}

uint64_t clock_kvm_ns_to_tsc(const struct clock_kvm *k, uint64_t ns)
{
	double d;

	if (k->time_conv)
		return tsc_from_perf_time(&k->tc, ns);
	d = (double)(int64_t)(ns - k->fit.ns0) / k->fit.ns_per_cycle;
	return k->fit.tsc0 + (uint64_t)(int64_t)d;
}

/* guest = ((host * ratio) >> frac) + offset: the guest TSC KVM shows for a host TSC. */
static uint64_t host_to_guest(const struct tsc_kvm *t, uint64_t host_tsc)
{
	unsigned __int128 v = host_tsc;

	if (t->ratio && t->frac_bits <= 63)
		v = (v * t->ratio) >> t->frac_bits;
	return (uint64_t)v + (uint64_t)t->offset;
}

/* Appends a reading to its vCPU; a reading that changes nothing is not a new point. */
static int add_point(struct clock_kvm *k, unsigned vcpu, uint64_t host_ns, const struct tsc_kvm *t)
{
	size_t n = k->n[vcpu];
	struct clock_kvm_point *np;
	uint64_t gs;

	if (n && tsc_kvm_equal(&k->p[vcpu][n - 1].k, t))
		return 0;
	gs = n ? host_to_guest(t, clock_kvm_ns_to_tsc(k, host_ns)) : 0;
	if (n && gs <= k->p[vcpu][n - 1].guest_start)
		gs = k->p[vcpu][n - 1].guest_start + 1; /* the guest TSC went back: keep points ordered */
	np = realloc(k->p[vcpu], (n + 1) * sizeof(*np));
	if (!np)
		return -ENOMEM;
	np[n] = (struct clock_kvm_point){ .guest_start = gs, .k = *t };
	k->p[vcpu] = np;
	k->n[vcpu] = n + 1;
	if (vcpu >= k->nvcpus)
		k->nvcpus = vcpu + 1;
	return 0;
}

static int sample_line(struct clock_kvm *k, const char *line)
{
	uint64_t host_ns, ratio;
	int64_t offset;
	unsigned vcpu, frac;
	char extra;

	if (sscanf(line, "%" SCNu64 " %u %" SCNd64 " %" SCNu64 " %u %c", &host_ns, &vcpu, &offset, &ratio,
		   &frac, &extra) != 5 || vcpu >= CLOCK_KVM_MAX_VCPUS || frac > 63)
		return -EBADMSG;
	if (++k->readings > CLOCK_KVM_MAX_READINGS)
		return -E2BIG;
	return add_point(k, vcpu, host_ns, &(struct tsc_kvm){ .offset = offset, .ratio = ratio, .frac_bits = frac });
}

int clock_kvm_parse_samples(struct clock_kvm *k, const char *text, size_t len, size_t *ret_line)
{
	size_t line = 0, i = 0;
	char buf[160];
	int r;

	while (i < len) {
		const char *nl = memchr(text + i, '\n', len - i);
		size_t l = nl ? (size_t)(nl - (text + i)) : len - i;

		line++;
		if (l >= sizeof(buf))
			r = -EBADMSG;
		else {
			memcpy(buf, text + i, l);
			buf[l] = '\0';
			r = l == 0 || buf[0] == '#' ? 0 : sample_line(k, buf);
		}
		if (r < 0) {
			if (ret_line)
				*ret_line = line;
			return r;
		}
		i += l + 1;
	}
	return k->nvcpus ? 0 : -ENOENT;
}

uint64_t clock_kvm_apply(const struct clock_kvm *k, unsigned vcpu, uint64_t guest_tsc)
{
	const struct clock_kvm_point *p;
	size_t lo = 0, hi;

	if (vcpu >= k->nvcpus || !k->n[vcpu])
		return 0;
	p = k->p[vcpu];
	hi = k->n[vcpu];
	while (hi - lo > 1) {
		size_t mid = (lo + hi) / 2;

		if (p[mid].guest_start <= guest_tsc)
			lo = mid;
		else
			hi = mid;
	}
	return clock_kvm_tsc_to_ns(k, tsc_guest_to_host(&p[lo].k, guest_tsc));
}

int clock_kvm_write_conv(FILE *f, const struct clock_kvm *k)
{
	if (k->time_conv)
		fprintf(f, "host_conv=time_conv\ntime_shift=%u\ntime_mult=%" PRIu32 "\ntime_zero=%" PRIu64
			   "\ntime_cycles=%" PRIu64 "\ntime_mask=%" PRIu64 "\ntime_short=%d\n",
			k->tc.time_shift, k->tc.time_mult, k->tc.time_zero, k->tc.time_cycles, k->tc.time_mask,
			k->tc.cap_user_time_short);
	else
		fprintf(f, "host_conv=measured\ntsc0=%" PRIu64 "\nns0=%" PRIu64 "\nns_per_cycle=%.17g\nhost_conv_error_ns=%" PRIu64 "\n",
			k->fit.tsc0, k->fit.ns0, k->fit.ns_per_cycle, k->fit.max_error_ns);
	return ferror(f) ? -EIO : 0;
}

void clock_kvm_free(struct clock_kvm *k)
{
	if (!k)
		return;
	for (unsigned i = 0; i < CLOCK_KVM_MAX_VCPUS; i++) {
		free(k->p[i]);
		k->p[i] = NULL;
		k->n[i] = 0;
	}
	k->nvcpus = 0;
}
