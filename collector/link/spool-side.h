/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* spool-side.c: a perf stream's task and mapping records for the flight recorder. */
struct spool_side;
int spool_side_new(const char *session_dir, unsigned cpu, uint64_t session_id, struct spool_side **ret);
void spool_side_free(struct spool_side *t);
bool spool_side_wants(uint32_t type); /* COMM, MMAP, MMAP2, FORK, EXIT, KSYMBOL */
uint8_t *spool_side_buf(struct spool_side *t); /* 64 KiB: where the scan reads such a record */
/* The scan passed a perf flush marker page (the cut's head counts them: not records). */
void spool_side_flush_marker(struct spool_side *t);
/* Whether a record starting at off gets a mark (the scan then reads it for its time). */
bool spool_side_marks(const struct spool_side *t, uint64_t off);
/* A record starts at off (the stream's records and samples before it; rec, size: the record, or
 * NULL when it could not be read: its time unknown): 0 or -ENOMEM. */
int spool_side_mark(struct spool_side *t, uint64_t off, uint64_t records, uint64_t samples, const uint8_t *rec,
		    uint16_t size);
/* A task or mapping record at off (size checked by the caller against the stream): kept, or
 * counted when the table is full; -EINVAL for a record too short for its type. */
int spool_side_add(struct spool_side *t, uint64_t off, const uint8_t *rec, uint16_t size);
/* Cuts at the newest record start at or before target (after data_start, the end of the begin
 * marker page, and at least step past the last cut): writes perf-cpuN.side for it; 1 with
 * *ret_hole_end, 0 (nothing to cut), -errno. peers: the tables of the session's other guest perf
 * streams (NULL for one without: its spool keeps everything), compacted with this one (a task's
 * records, its samples and its children's FORKs may be in different CPUs' streams). */
int spool_side_cut(struct spool_side *t, uint64_t target, uint64_t data_start, uint64_t step,
		   struct spool_side *const *peers, size_t npeers, uint64_t *ret_hole_end);
