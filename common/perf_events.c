// SPDX-License-Identifier: GPL-2.0-only
#include "perf_events.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "util.h"

static const struct perf_event_spec events[] = {
	{ "cpu-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK },
	{ "task-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK },
	{ "page-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS },
	{ "minor-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MIN },
	{ "major-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MAJ },
	{ "context-switches", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES },
	{ "cpu-migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS },
	{ "alignment-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_ALIGNMENT_FAULTS },
	{ "emulation-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_EMULATION_FAULTS },
	{ "cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES },
	{ "instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS },
	{ "cache-references", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_REFERENCES },
	{ "cache-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES },
	{ "branches", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS },
	{ "branch-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES },
	{ "bus-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BUS_CYCLES },
	{ "ref-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_REF_CPU_CYCLES },
};

int perf_events_lookup(const char *name, struct perf_event_spec *ret)
{
	for (size_t i = 0; i < ARRAY_SIZE(events); i++)
		if (!strcmp(events[i].name, name)) {
			*ret = events[i];
			return 0;
		}
	return -ENOENT;
}

int perf_events_parse(const char *list, struct perf_event_spec *ret, size_t *ret_n, char *bad, size_t badlen)
{
	struct perf_event_spec out[VT_PERF_MAX_EVENTS];
	size_t n = 0;
	const char *p = list;

	while (*p) {
		size_t len = strcspn(p, ",");
		char name[32];

		if (len == 0 || len >= sizeof(name)) {
			snprintf(bad, badlen, "%.*s", (int)MIN(len, (size_t)64), p);
			return -EINVAL;
		}
		memcpy(name, p, len);
		name[len] = '\0';
		if (n == VT_PERF_MAX_EVENTS || perf_events_lookup(name, &out[n]) < 0) {
			snprintf(bad, badlen, "%s", name);
			return -EINVAL;
		}
		for (size_t i = 0; i < n; i++)
			if (out[i].name == out[n].name) {
				snprintf(bad, badlen, "%s", name);
				return -EINVAL;
			}
		n++;
		p += len;
		if (*p == ',' && !*++p) {
			snprintf(bad, badlen, "(empty name at the end)");
			return -EINVAL;
		}
	}
	memcpy(ret, out, n * sizeof(out[0]));
	*ret_n = n;
	return 0;
}

void perf_events_attr(const struct perf_event_spec *e, uint32_t freq, int clockid, bool leader,
		      struct perf_event_attr *ret)
{
	*ret = (struct perf_event_attr){
		.type = e->type,
		.size = sizeof(*ret),
		.config = e->config,
		.sample_freq = freq,
		.freq = 1,
		.sample_type = VT_PERF_SAMPLE_TYPE,
		.disabled = 1,
		.sample_id_all = 1,
		.use_clockid = 1,
		.clockid = clockid,
		.watermark = 1,
	};
	if (leader) {
		ret->comm = ret->comm_exec = 1;
		ret->mmap = ret->mmap2 = ret->build_id = 1;
		ret->task = 1;
		ret->ksymbol = 1;
	}
}

int perf_events_clockid(const char *trace_clock)
{
	static const struct {
		const char *name;
		int id;
	} map[] = {
		{ "mono", CLOCK_MONOTONIC },
		{ "mono_raw", CLOCK_MONOTONIC_RAW },
		{ "boot", CLOCK_BOOTTIME },
		{ "tai", CLOCK_TAI },
		/* perf cannot stamp with the TSC: mono, mapped by the probes' GUEST_MONO readings */
		{ "x86-tsc", CLOCK_MONOTONIC },
	};

	for (size_t i = 0; i < ARRAY_SIZE(map); i++)
		if (!strcmp(map[i].name, trace_clock))
			return map[i].id;
	return -EOPNOTSUPP;
}

const char *perf_events_names(void)
{
	return "cpu-clock task-clock page-faults minor-faults major-faults context-switches "
	       "cpu-migrations alignment-faults emulation-faults cycles instructions cache-references "
	       "cache-misses branches branch-misses bus-cycles ref-cycles";
}
