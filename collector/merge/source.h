/* SPDX-License-Identifier: GPL-2.0-only */
/* source.c: the merge's sources (the guest's streams behind one table of kinds, and the host
 * recording's records). Private to the merge (merge.c, follow.c). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "out.h"

/* A kind of guest stream: one row of source.c's table. */
struct merge_source_kind {
	void *(*state)(struct merge_vm *vm, size_t i); /* the i-th stream of this kind of vm, or NULL */
	bool (*peek)(const struct merge_source *s, uint64_t *ret_ts); /* next record's time */
	int (*emit)(struct merge_ctx *m, const struct merge_source *s); /* writes the record peek found */
	/* following: after a peek found nothing, whether more may come, and no earlier than when */
	bool (*blocked)(const struct merge_source *s, uint64_t *ret_bound);
	void (*raise)(const struct merge_source *s, uint64_t ts); /* following: head at ts, later */
	unsigned (*rank)(const struct merge_source *s); /* order among equal times; NULL: 1 */
};

/* Every guest stream of every kind of every VM into m->src, VM by VM (the host recording is
 * merged beside them). */
int merge_sources(struct merge_ctx *m);
/* Order among records of one time: the kind's rank (a FORK's CPU first), else 1. */
unsigned merge_source_rank(const struct merge_source *s);
/* Whether s, whose next record is at t, goes before *best (at *bt): the earlier time, then on a
 * tie the lower rank (asked only then: *brank < 0 until asked), then the first stream. */
bool merge_source_before(struct merge_source *s, uint64_t t, struct merge_source **best, uint64_t *bt,
			 int *brank);
/* The guest stream whose next record goes first (merge_source_before), or NULL. */
struct merge_source *merge_source_min(struct merge_ctx *m, uint64_t *ret_ts);
/* The host's next timed record in *q (1), 2 (following: none yet, m->host.bound), 0 (none
 * left) or -errno; untimed records on the way are written at once. */
int merge_source_host_next(struct merge_ctx *m, struct host_rec **q);
/* Writes a host record (immediate: an untimed one, written as it comes). */
int merge_source_host_emit(struct merge_ctx *m, struct host_rec *q, bool immediate);
