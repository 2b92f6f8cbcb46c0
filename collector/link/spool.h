/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "collector.h" /* COLLECTOR_MAX_CPUS */
#include "ports.h"
#include "proto.h"

struct event_base;

/* spool.c: one CPU's data port read into cpuN.spool (perf-path-cpuN into perf-cpuN.spool).
 * The daemon's spools and data ports are indexed by cpu, and COLLECTOR_MAX_CPUS + cpu for perf. */
/* Each spool's buffer, written in whole blocks: 1 MiB, not 512 KiB, halves the O_DIRECT writes
 * (each a request and a device kick: ~19% of the daemon at 2 MB/s/vCPU, RESULTS.md) */
#define SPOOL_BUF (1024u << 10)
#define SPOOL_INDEX(cpu, perf) ((perf) ? COLLECTOR_MAX_CPUS + (cpu) : (cpu))
struct spool_stats {
	uint64_t spooled;        /* bytes in cpuN.spool */
	uint64_t stale;          /* bytes before this session's begin marker */
	uint64_t pages;          /* ring pages after the begin marker */
	uint64_t data_bytes;     /* their used bytes (commit sizes) */
	uint64_t missed_pages;   /* pages flagged RB_MISSED_EVENTS (ring overwrote events before them) */
	uint64_t missed_events;  /* counts stored with RB_MISSED_STORED */
	uint64_t bad_pages;      /* implausible commit words (stream misaligned or corrupt) */
	uint64_t bad_markers;    /* marker-like pages that are not ours */
	uint64_t discarded;      /* bytes read from the port and dropped (limit, disk full, after stop) */
	uint64_t fr_dropped;     /* --flight-recorder: the oldest bytes after the begin marker, freed
				  * from the file (a hole: the file's size stays, its blocks go) */
	uint64_t released;       /* ftrace: bytes after the begin marker freed from the file once the
				  * live merge had written them into its output (spool_release) */
	bool begun, ended;
	struct vt_cpu_stats end; /* from the end marker */
	uint64_t flush_markers;  /* flush markers of this session (FLUSH answered; not pages) */
	uint64_t fr_flush_pages; /* --flight-recorder, ftrace: flush marker pages among fr_dropped */
	uint64_t flush_seq;      /* the last one's FLUSH_SEQ */
	/* perf-path-cpuN (data_bytes: record bytes; bad_pages: impossible record sizes skipped) */
	uint64_t records, samples, lost_records, lost;
	struct vt_perf_stats perf_end; /* from the perf end marker */
};
struct spool;
/* perf: the CPU's perf-path-cpuN stream into perf-cpuN.spool. */
/* A spool tells its owner what happened through ops only; the owner acts on it later, from its
 * own loop (a callback never runs the owner's stop). */
struct spool_ops {
	void *userdata;
	void (*error)(void *userdata, unsigned k, int err); /* k: SPOOL_INDEX; the port or the file */
	void (*progress)(void *userdata, unsigned k);       /* bytes spooled: the owner's limits */
	/* The spools by SPOOL_INDEX (NULL where none), or NULL: the flight recorder's peers. */
	struct spool *const *(*peers)(void *userdata);
};
int spool_new(const struct spool_ops *ops, unsigned cpu, bool perf, struct port *port, const char *session_dir,
	      uint64_t session_id, uint32_t page_size, struct spool **ret);
void spool_free(struct spool *s);
/* --flight-recorder: keep only the newest bytes of this stream on disk (a perf stream: cut at a
 * record boundary, its task and mapping records kept aside in perf-cpuN.side: spool-side.c).
 * The spool must be on a file system that punches holes. */
void spool_flight_recorder(struct spool *s, uint64_t bytes);
/* An ftrace spool's bytes before upto (the live merge wrote every page before it into its
 * output) freed from the file, as the flight recorder frees its oldest ones, and counted in
 * cpuN.released: bytes freed now (0: none), or -errno. */
int64_t spool_release(struct spool *s, uint64_t upto);

int spool_arm(struct spool *s, struct event_base *base);
/* Moves what the port has into the spool and scans it (the read callback; tests call it). */
void spool_poll(struct spool *s);
void spool_discard(struct spool *s);       /* stop writing the spool; keep reading the port */
int spool_persist(struct spool *s);        /* the buffered tail into the file (finalize, each second) */
void spool_stats(const struct spool *s, struct spool_stats *ret);
void spool_rate_tick(struct spool *s, uint64_t now_ns);
double spool_rate(const struct spool *s); /* MB/s over the last few seconds */

int spool_rearm(struct spool *s, struct event_base *base);
/* The stream continues on fd (owned from now on): the old descriptor's bytes are read first. */
int spool_hand_over(struct spool *s, struct event_base *base, int fd);
