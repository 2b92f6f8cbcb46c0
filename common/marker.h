/* SPDX-License-Identifier: GPL-2.0-only */
/* Begin/end marker pages framing each trace-path-cpuN and perf-path-cpuN stream (docs/protocol.md §2, §3). */
#pragma once

#include <stdint.h>

#include "proto.h"

#define VT_MARKER_MAGIC 0x4b52414d54524956ull /* "VIRTMARK" as little-endian bytes */
#define VT_MARKER_COMMIT UINT64_MAX           /* never a valid ring-page commit word */
#define VT_MARKER_VERSION 1
#define VT_MARKER_MIN_PAGE 4096
/* The largest page a guest may stream in: a ring sub-buffer of 64 KiB (Linux 6.8+ takes more, but
 * 16 KiB already gives what larger ones do, bench/RESULTS.md): what the daemon and the merge
 * hold per CPU stream stays 64 KiB, 32 MiB at 256 CPUs, whatever a guest claims. */
#define VT_MARKER_MAX_PAGE (1u << 16)

enum vt_marker_kind {
	VT_MARKER_BEGIN = 1, VT_MARKER_END = 2,          /* trace-path-cpuN */
	VT_MARKER_PERF_BEGIN = 3, VT_MARKER_PERF_END = 4, /* perf-path-cpuN */
	VT_MARKER_FLUSH = 5, /* trace-path-cpuN, answering FLUSH: the ring was drained up to here */
	VT_MARKER_PERF_FLUSH = 6, /* perf-path-cpuN, answering FLUSH: the perf ring was drained up to here */
};

#define VT_PERF_MAX_EVENTS 8

/* The head of a marker page; the rest of the page is zero. Little-endian. */
struct vt_marker {
	uint64_t magic;
	uint64_t commit;
	uint32_t kind;
	uint32_t version;
	uint64_t session_id;
	uint32_t cpu;
	uint32_t page_size;
	struct vt_cpu_stats stats; /* zero in a begin marker */
};
_Static_assert(sizeof(struct vt_marker) == 112, "marker head is 112 bytes");

/* Follows the head in a perf marker page (kinds 3, 4 and 6), at offset 112. */
struct vt_perf_marker {
	uint32_t nr_ids;  /* begin: events open on this CPU, in CONFIG's PERF_EVENTS order */
	uint32_t clockid; /* begin: the clock of the records' times (CLOCK_MONOTONIC, ...) */
	uint64_t ids[VT_PERF_MAX_EVENTS]; /* begin: each event's sample id (PERF_EVENT_IOC_ID) */
	struct vt_perf_stats stats;       /* end (and flush): the stream's counters (so far) */
};
_Static_assert(sizeof(struct vt_perf_marker) == 136, "perf marker tail is 136 bytes");
#define VT_PERF_MARKER_OFF sizeof(struct vt_marker)

/* Follows the head in a flush marker page (kind 5), at offset 112; the head's stats hold the
 * counters so far (pages_sent: ring pages before this marker). */
struct vt_flush_marker {
	uint64_t seq;        /* FLUSH's FLUSH_SEQ */
	uint64_t guest_time; /* the trace clock read before the drain (0: no user-space reading) */
};
_Static_assert(sizeof(struct vt_flush_marker) == 16, "flush marker tail is 16 bytes");
#define VT_FLUSH_MARKER_OFF sizeof(struct vt_marker)
/* A perf flush marker (kind 6): the perf tail at 112, then the flush tail (guest_time in the
 * perf records' clock). */
#define VT_PERF_FLUSH_MARKER_OFF (VT_PERF_MARKER_OFF + sizeof(struct vt_perf_marker))

/* perf-cpuN.side (host side, --flight-recorder with guest perf): written by the daemon when it
 * frees the oldest part of perf-cpuN.spool; the task and mapping records (COMM, MMAP, MMAP2,
 * FORK, EXIT, KSYMBOL) of that part that still describe a live task follow this head, in stream
 * order, as the guest sent them. The merge reads them, then the spool from hole_end (a record
 * boundary). Little-endian. */
#define VT_PERF_SIDE_MAGIC 0x3130454449535456ull /* "VTSIDE01" */
struct vt_perf_side_head {
	uint64_t magic;
	uint64_t session_id;
	uint32_t cpu;
	uint32_t flush_pages;     /* perf flush marker pages before hole_end (not records) */
	uint64_t hole_end;        /* the spool's records go on from this offset */
	uint64_t dropped_records; /* records of the stream before hole_end (these side ones included) */
	uint64_t dropped_samples;
	uint64_t dropped_bytes;   /* hole_end - the end of the begin marker page */
	uint64_t side_records;    /* records after this head */
	uint64_t side_bytes;
	uint64_t not_kept;        /* task records over the table's bound: not kept (counted) */
};
_Static_assert(sizeof(struct vt_perf_side_head) == 80, "perf side head is 80 bytes");

/* Fills a whole page (page_size bytes) with a marker. */
void vt_marker_encode(void *page, uint32_t page_size, enum vt_marker_kind kind, uint64_t session_id,
		      uint32_t cpu, const struct vt_cpu_stats *stats);
/* 1 if page (len bytes) holds a valid marker (decoded into *ret), 0 if it is not a marker,
 * -EBADMSG if it looks like one but is malformed. */
int vt_marker_decode(const void *page, size_t len, struct vt_marker *ret);
/* A perf marker page: the head (stats: cpu and error only) plus the perf tail. */
void vt_marker_encode_perf(void *page, uint32_t page_size, enum vt_marker_kind kind, uint64_t session_id,
			   uint32_t cpu, const struct vt_perf_marker *perf);
/* Decodes the perf tail of a page vt_marker_decode accepted as kind 3, 4 or 6: 0, or -EBADMSG
 * (more ids than VT_PERF_MAX_EVENTS, or a kind without a perf tail). */
int vt_marker_decode_perf(const void *page, size_t len, const struct vt_marker *m, struct vt_perf_marker *ret);
/* A flush marker page: the head with stats, plus the flush tail. */
void vt_marker_encode_flush(void *page, uint32_t page_size, uint64_t session_id, const struct vt_cpu_stats *stats,
			    const struct vt_flush_marker *flush);
/* A perf flush marker (kind 6): the stream's counters so far and the flush tail. */
void vt_marker_encode_perf_flush(void *page, uint32_t page_size, uint64_t session_id, uint32_t cpu,
				 const struct vt_perf_marker *perf, const struct vt_flush_marker *flush);
/* Decodes the flush tail of a page vt_marker_decode accepted as kind 5 or 6: 0, or -EBADMSG. */
int vt_marker_decode_flush(const void *page, size_t len, const struct vt_marker *m, struct vt_flush_marker *ret);
