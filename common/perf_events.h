/* SPDX-License-Identifier: GPL-2.0-only */
/* Guest perf events by name, and the one perf_event_attr layout the agent opens them with and
 * the merge reads back (docs/protocol.md §3). Pure: no syscalls. */
#pragma once

#include <linux/perf_event.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "marker.h"

/* What every guest perf record is sampled with: samples lead with the id, sideband ends with
 * TID, TIME, CPU, IDENTIFIER (sample_id_all). The merge parses exactly this. */
#define VT_PERF_SAMPLE_TYPE                                                                        \
	(PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | \
	 PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN)
#define VT_PERF_SAMPLE_HEAD 48  /* id, ip, pid/tid, time, cpu/res, period: before nr */
#define VT_PERF_SAMPLE_ID_LEN 32 /* sideband trailer: pid/tid, time, cpu/res, id */
#define VT_PERF_MAX_STACK 1024  /* call-chain entries accepted (the kernel's max is 127 + contexts) */
#define VT_PERF_DEFAULT_EVENTS "cpu-clock"
#define VT_PERF_DEFAULT_FREQ 1000u
#define VT_PERF_FREQ_MAX 100000u
#define VT_PERF_DEFAULT_RING_KB 1024u
#define VT_PERF_RING_KB_MIN 8u
#define VT_PERF_RING_KB_MAX (256u << 10) /* 256 MiB per CPU */

struct perf_event_spec {
	const char *name; /* the table's name */
	uint32_t type;
	uint64_t config;
};

/* Looks up one name (perf's generic hardware and software event names): 0 or -ENOENT. */
int perf_events_lookup(const char *name, struct perf_event_spec *ret);
/* Parses "cpu-clock,page-faults" (at most VT_PERF_MAX_EVENTS, no repeats): 0, or -EINVAL with
 * the bad item written into bad (badlen bytes). */
int perf_events_parse(const char *list, struct perf_event_spec *ret, size_t *ret_n, char *bad, size_t badlen);
/* The attr for event e: freq sampling at freq Hz, VT_PERF_SAMPLE_TYPE, sample_id_all, the
 * clock clockid (use_clockid); sideband (comm/exec, mmap2 with build-ids, task, ksymbol) only
 * when leader is set; disabled at open. */
void perf_events_attr(const struct perf_event_spec *e, uint32_t freq, int clockid, bool leader,
		      struct perf_event_attr *ret);
/* The perf clockid for a trace clock: the same clock where perf has it, CLOCK_MONOTONIC for
 * x86-tsc (the host maps it with a fit of its own, from PROBE_REPLY's GUEST_MONO), or
 * -EOPNOTSUPP (local, global, counter: no user-space reading to probe). */
int perf_events_clockid(const char *trace_clock);
/* All names, space separated (for messages and --help). */
const char *perf_events_names(void);
