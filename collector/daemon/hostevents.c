// SPDX-License-Identifier: GPL-2.0-only
/* Host perf's events beside KVM's mediated PMU (Linux 6.20+, the enable_mediated_pmu parameter
 * of kvm, kvm_amd or kvm_intel): while a VM with a mediated vPMU exists, the guest owns the
 * core PMU while it runs, so a host hardware event that does not exclude the guest fails with
 * EOPNOTSUPP (and such a VM cannot start, EBUSY, while a host event counts the guest). Each
 * hardware event of host perf's event lists then gets perf's :H modifier (exclude_guest). */
#include "hostevents.h"

#include <stdio.h>
#include <string.h>

#include "util.h"

static const char *const mediated_params[] = { "kvm", "kvm_amd", "kvm_intel" };

bool hostevents_mediated_pmu(const char *sys_root, char *which, size_t len)
{
	for (size_t i = 0; i < ARRAY_SIZE(mediated_params); i++) {
		_cleanup_free_ char *v = NULL;
		char path[256];

		snprintf(path, sizeof(path), "%s/module/%s/parameters/enable_mediated_pmu", sys_root, mediated_params[i]);
		if (util_read_file(path, 16, &v, NULL) == 0 && (v[0] == 'Y' || v[0] == 'y' || v[0] == '1')) {
			snprintf(which, len, "%s.enable_mediated_pmu", mediated_params[i]);
			return true;
		}
	}
	return false;
}

/* perf's generic hardware and hardware cache event names (tools/perf: parse-events). */
static bool hw_name(const char *s, size_t n)
{
	static const char *const names[] = { "cycles", "cpu-cycles", "instructions", "cache-references", "cache-misses",
					      "branch-instructions", "branches", "branch-misses", "bus-cycles",
					      "stalled-cycles-frontend", "idle-cycles-frontend", "stalled-cycles-backend",
					      "idle-cycles-backend", "ref-cycles", "mem-loads", "mem-stores", "topdown-fetch-bubbles" };
	static const char *const cache[] = { "L1-dcache-", "L1-icache-", "LLC-", "dTLB-", "iTLB-", "branch-load", "node-" };
	size_t k;

	for (size_t i = 0; i < ARRAY_SIZE(names); i++)
		if (n == strlen(names[i]) && !strncmp(s, names[i], n))
			return true;
	for (size_t i = 0; i < ARRAY_SIZE(cache); i++)
		if (n > strlen(cache[i]) && !strncmp(s, cache[i], strlen(cache[i])))
			return true;
	if (n >= 2 && s[0] == 'r') { /* a raw event: r<hex> */
		for (k = 1; k < n && strchr("0123456789abcdefABCDEF", s[k]); k++)
			;
		return k == n;
	}
	return false;
}

/* The core PMUs' event syntax, "cpu/.../" (cpu_core, cpu_atom on hybrid CPUs). */
static bool core_pmu(const char *s, size_t n)
{
	return (n > 4 && !strncmp(s, "cpu/", 4)) || (n > 9 && !strncmp(s, "cpu_core/", 9)) ||
	       (n > 9 && !strncmp(s, "cpu_atom/", 9));
}

static bool modifiers(const char *s, size_t n)
{
	return n && strspn(s, "ukhHGIpPSDWeb") >= n;
}

/* Appends n bytes of s to out; false when it does not fit. */
static bool put(char *out, size_t len, size_t *at, const char *s, size_t n)
{
	if (*at + n + 1 > len)
		return false;
	memcpy(out + *at, s, n);
	*at += n;
	out[*at] = '\0';
	return true;
}

/* One event (a list's item): with :H when it is a hardware event with no H or G modifier. */
static bool guard_one(const char *s, size_t n, char *out, size_t len, size_t *at, struct hostevents_guarded *g)
{
	const char *colon = memrchr(s, ':', n), *slash = memrchr(s, '/', n);
	size_t name_n = n;
	const char *mods = "";
	size_t mods_n = 0;

	if (slash && core_pmu(s, n)) { /* cpu/.../MODS */
		mods = slash + 1, mods_n = n - (size_t)(slash + 1 - s);
		if (mods_n && mods[0] == ':')
			mods++, mods_n--;
		if (memchr(mods, 'H', mods_n) || memchr(mods, 'G', mods_n)) {
			g->guest += memchr(mods, 'G', mods_n) != NULL;
			return put(out, len, at, s, n);
		}
		g->changed++;
		return put(out, len, at, s, n) && put(out, len, at, "H", 1);
	}
	if (colon && modifiers(colon + 1, n - (size_t)(colon + 1 - s)))
		name_n = (size_t)(colon - s), mods = colon + 1, mods_n = n - name_n - 1;
	if (!hw_name(s, name_n))
		return put(out, len, at, s, n);
	if (memchr(mods, 'H', mods_n) || memchr(mods, 'G', mods_n)) {
		g->guest += memchr(mods, 'G', mods_n) != NULL;
		return put(out, len, at, s, n);
	}
	g->changed++;
	return put(out, len, at, s, n) && put(out, len, at, mods_n ? "H" : ":H", mods_n ? 1 : 2);
}

int hostevents_guard(const char *list, char *out, size_t len, struct hostevents_guarded *g)
{
	size_t at = 0;
	const char *p = list;

	if (!len)
		return -ENOBUFS;
	out[0] = '\0';
	while (*p) {
		int slashes = 0, braces = 0;
		const char *e = p;

		/* an item ends at a comma outside "pmu/.../" and "{...}" */
		while (*e && (*e != ',' || slashes % 2 || braces)) {
			slashes += *e == '/';
			braces += *e == '{' ? 1 : *e == '}' ? -1 : 0;
			e++;
		}
		if (*p == '{') { /* a group: its members guarded, its own modifiers kept */
			const char *close = memrchr(p, '}', (size_t)(e - p));
			char inner[1024];
			int r;

			if (!close || (size_t)(close - p) >= sizeof(inner))
				return -EINVAL;
			snprintf(inner, sizeof(inner), "%.*s", (int)(close - p - 1), p + 1);
			if (!put(out, len, &at, "{", 1))
				return -ENOBUFS;
			if ((r = hostevents_guard(inner, out + at, len - at, g)) < 0)
				return r;
			at += strlen(out + at);
			if (!put(out, len, &at, close, (size_t)(e - close)))
				return -ENOBUFS;
		} else if (!guard_one(p, (size_t)(e - p), out, len, &at, g)) {
			return -ENOBUFS;
		}
		if (*e == ',' && !put(out, len, &at, ",", 1))
			return -ENOBUFS;
		p = *e ? e + 1 : e;
	}
	return 0;
}
