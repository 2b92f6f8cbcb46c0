/* SPDX-License-Identifier: GPL-2.0-only */
/* The merge's output side: attrs, guest records (ID_INDEX, COMM, samples, LOST_SAMPLES) and the
 * rewritten feature sections. Private to merge*.c. */
#pragma once

#include "merge.h"
#include "tracing_data.h"

/* One time-ordered guest stream of the k-way merge: a kind (source.c's table) and its state. */
struct merge_source_kind;
struct merge_source {
	const struct merge_source_kind *kind;
	void *state;
};

struct merge_ctx {
	struct merge_host host;
	struct merge_guest guest;
	struct merge_vcpu vcpu;
	struct merge_gperf gp;
	struct perf_writer *w;
	struct tracing_data td;
	bool have_td;
	uint8_t used[65536 / 8]; /* tracepoint ids taken by the host */
	struct perf_attr_ids *attrs; /* host attrs (ids borrowed) then guest attrs (ids owned) */
	size_t n_attrs;
	uint64_t first_sample, last_sample, last_ts, since_round;
	uint64_t live_bound_ns; /* following: the largest error bound of the fits used while tracing */
	bool index_done, comms_done;
	uint64_t guest_samples, guest_lost_records, host_written;
	int zstd;
	bool out_dir; /* OUT is a perf.data directory (dir.c) */
	bool pipe;    /* pipe-mode output on stdout (merge --follow -o -) */
	struct merge_source *src; /* every guest stream */
	size_t n_src;
	uint8_t rec[65536 + 64] __attribute__((aligned(8)));
};

void merge_out_used_ids(struct merge_ctx *m);
int merge_out_attrs(struct merge_ctx *m);
/* Guest ID_INDEX (and, guest only, the kernel MMAP perf expects). */
int merge_out_guest_index(struct merge_ctx *m);
/* Writes c's head: a LOST_SAMPLES or a sample (task COMMs go before the first sample). */
int merge_out_guest(struct merge_ctx *m, struct guest_cpu *c);
/* Final round marker, features, attrs, header. */
int merge_out_finish(struct merge_ctx *m);
/* A perf.data at path of what was written so far, the merge going on (merge --follow's
 * "snapshot"): a FINISHED_ROUND, then perf_writer_snapshot with the header as at the end. */
int merge_out_snapshot(struct merge_ctx *m, const char *path);
void merge_out_free(struct merge_ctx *m);
/* Writes one record, FINISHED_ROUND markers between timed ones (ts 0: untimed). The sources
 * (source.c's host records, gperf.c's) call down into it; out.c writes the guest perf attrs and
 * the guest kernel's maps itself, so it calls no source back. */
int merge_out_emit(struct merge_ctx *m, const void *rec, uint64_t ts);
/* gperf.c: writes c's head record, converted. */
int merge_gperf_emit(struct merge_ctx *m, struct gperf_cpu *c);
/* dir.c: keeps an existing OUT as OUT.old, decides the output's form (a perf.data
 * directory when guest kernel symbols or guest binaries (OUT/buildids) go with it) and gives the path of the perf.data to write
 * into data; finish adds OUT/kcore_dir__<qemu pid>/kallsyms. 0 or -errno (said). */
int merge_dir_prepare(struct merge_ctx *m, const char *session_dir, const char *out, char *data, size_t len);
int merge_dir_finish(struct merge_ctx *m, const char *session_dir, const char *out);
