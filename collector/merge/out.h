/* SPDX-License-Identifier: GPL-2.0-only */
/* The merge's output side: attrs, guest records (ID_INDEX, COMM, samples, LOST_SAMPLES) and the
 * rewritten feature sections. Private to merge*.c. */
#pragma once

#include "merge.h"
#include "tracing_data.h"

/* exits.c: a VM's exit samples, each host kvm:kvm_exit of its vCPU threads written again as a
 * sample of its guest machine at the exit's guest rip (<prefix>kvm:kvm_exit, after its guest
 * perf events' attrs). */
struct merge_exits {
	bool on;
	uint32_t new_id; /* the output's tracepoint id of <prefix>kvm:kvm_exit */
	char *text;      /* the host's kvm_exit format with that id */
	size_t text_len;
	int32_t *cur;     /* vCPU → the guest task its last guest event ran in (-1: none yet) */
	int32_t sw_event; /* the guest's sched_switch (index in events; -1): next_pid runs after it */
	uint64_t samples, user, unknown_task;
	char why[64]; /* non-empty: possible, but not written, and why */
};

/* migration.c: a VM's live migrations (session.ini migration_N) as samples of its machine,
 * <prefix>virtio_trace:migration, after its exit samples' attr; each at its blackout's start. */
struct merge_mig_out {
	uint64_t start, len; /* the blackout in host time (len 0: not measured, start = switch_ns) */
	uint64_t at;         /* the sample's time: start, later when a live merge learnt of it late */
	uint64_t switch_ns;  /* when the session took the destination QEMU */
	uint32_t from, to;
};

struct merge_migs {
	bool on;
	uint32_t new_id; /* the output's tracepoint id of <prefix>virtio_trace:migration */
	char *text;      /* its format */
	size_t text_len;
	struct merge_mig_out b[MERGE_MAX_MIGRATIONS];
	uint32_t n, next; /* next: the first not written yet */
	uint32_t late;    /* following: placed at the end only (not counted in merge.ini) */
};

/* One guest of the merge (a VM): the session dir's own, then each merge --guest DIR. Each is its
 * own perf guest machine: its QEMU pid as machine_pid, its sample-id range from guest.id_base,
 * its vCPU map, its kcore_dir. */
struct merge_vm {
	const char *dir;       /* its session dir */
	char name[64];         /* session.ini vm=, else the dir */
	char sys_prefix[16];   /* its tracepoint systems: "guest_", then "guest2_".."guest16_" */
	char label[80];        /* "" with one VM, else "vm NAME: ", before what is said of it */
	struct merge_guest guest;
	struct merge_vcpu vcpu;
	struct merge_gperf gp;
	bool comms_done;
	uint64_t samples; /* its guest tracepoint samples written */
	char unusable[512]; /* why its guest data was left out ("" when merged or never there) */
	bool input_only;    /* its dir is another user's (or reached through one): session.ini
			     * steers nothing, nothing is written into it (vm.c) */
	char input_why[256];
	bool kcore_written; /* OUT/kcore_dir__PID/kallsyms written (dir.c) */
	struct merge_exits exits;
	struct merge_migs migs;
};

/* One time-ordered guest stream of the k-way merge: a kind (source.c's table), its VM, its state. */
struct merge_source_kind;
struct merge_source {
	const struct merge_source_kind *kind;
	struct merge_vm *vm;
	void *state;
};

struct merge_ctx {
	struct merge_host host;
	int host_fd; /* the host recording, opened once (-1: none) */
	struct merge_vm vm[MERGE_MAX_GUESTS];
	size_t n_vm; /* 1 without --guest */
	struct perf_writer *w;
	struct tracing_data td;
	bool have_td;
	uint8_t used[65536 / 8]; /* tracepoint ids taken by the host */
	struct perf_attr_ids *attrs; /* host attrs (ids borrowed) then guest attrs (ids owned) */
	size_t n_attrs;
	uint64_t first_sample, last_sample, last_ts, since_round;
	uint64_t live_bound_ns; /* following: the largest error bound of the fits used while tracing */
	bool index_done;
	uint64_t guest_samples, guest_lost_records, host_written;
	int zstd;
	bool out_dir; /* OUT is a perf.data directory (dir.c) */
	bool as_host; /* --guest-as-host: the guest's records as a host's (misc KERNEL, no machine) */
	bool pipe;    /* pipe-mode output on stdout (merge --follow -o -) */
	struct report_live *stalls; /* following into a file: stop's stalls line, as it is written */
	int exit_attr;         /* host attr of kvm:kvm_exit with a guest_rip (exits.c), -1 */
	uint32_t exit_rip_off; /* guest_rip's offset in its raw data */
	uint64_t exit_bad;     /* its samples too short for their fields */
	struct merge_source *src; /* every guest stream */
	size_t n_src;
	uint8_t rec[65536 + 64] __attribute__((aligned(8)));
};

void merge_out_used_ids(struct merge_ctx *m);
/* A free tracepoint id (from the top, as the guests' are taken), marked used; 0 when none. */
uint32_t merge_out_new_id(struct merge_ctx *m);
int merge_out_attrs(struct merge_ctx *m);
/* Guest ID_INDEX (and, guest only, the kernel MMAP perf expects). */
int merge_out_guest_index(struct merge_ctx *m);
/* Writes c's head (a vCPU of vm): a LOST_SAMPLES or a sample (vm's task COMMs go before its
 * first sample). */
int merge_out_guest(struct merge_ctx *m, struct merge_vm *vm, struct guest_cpu *c);
/* header.c: final round marker, features, attrs, header. */
int merge_header_finish(struct merge_ctx *m);
/* A perf.data at path of what was written so far, the merge going on (merge --follow's
 * "snapshot"): a FINISHED_ROUND, then perf_writer_snapshot with the header as at the end. */
int merge_header_snapshot(struct merge_ctx *m, const char *path);
void merge_out_free(struct merge_ctx *m);
/* Writes one record, FINISHED_ROUND markers between timed ones (ts 0: untimed). The sources
 * (source.c's host records, gperf.c's) call down into it; out.c writes the guest perf attrs and
 * the guest kernel's maps itself, so it calls no source back. */
int merge_out_emit(struct merge_ctx *m, const void *rec, uint64_t ts);
/* out.c, for header.c's EVENT_DESC: a VM's tracepoints and guest perf events, a perf event's name. */
size_t merge_out_vm_n_events(const struct merge_vm *vm);
size_t merge_out_vm_n_perf(const struct merge_vm *vm);
void merge_out_gperf_name(const struct merge_gperf *gp, size_t e, char *buf, size_t len);
/* gperf.c: writes c's head record (a vCPU stream of vm), converted. */
int merge_gperf_emit(struct merge_ctx *m, struct merge_vm *vm, struct gperf_cpu *c);
/* dir.c: keeps an existing OUT as OUT.old, decides the output's form (a perf.data
 * directory when guest kernel symbols or guest binaries (OUT/buildids) go with it) and gives the path of the perf.data to write
 * into data; finish adds OUT/kcore_dir__<qemu pid>/kallsyms for each VM (from its own session
 * dir). 0 or -errno (said). */
int merge_dir_prepare(struct merge_ctx *m, const char *out, char *data, size_t len);
int merge_dir_finish(struct merge_ctx *m, const char *out);
/* vm.c: checks and loads the VMs of o (the session dir's, each --guest), names them; 0 or -errno
 * (said). */
int merge_vm_load(struct merge_ctx *m, const struct merge_options *o);
/* The first VM with guest data, or NULL. */
struct merge_vm *merge_vm_first(struct merge_ctx *m);
/* After the host recording and tracing data: each VM's vCPU map, kallsyms, guest perf streams. */
int merge_vm_prepare(struct merge_ctx *m, int host_fd);
/* Each VM's merge.ini in its session dir. */
void merge_vm_info(const struct merge_ctx *m, const char *output);
void merge_vm_free(struct merge_ctx *m);
/* exits.c: after each VM's vCPU map, the exit samples of the VMs whose vCPU threads are known
 * (their formats into m->td); 0 or -ENOMEM. */
int merge_exits_prepare(struct merge_ctx *m);
/* After host record e is written: its exit sample when it is a kvm:kvm_exit of a traced vCPU. */
int merge_exits_host(struct merge_ctx *m, const struct perf_event_header *e);
void merge_exits_summary(const struct merge_ctx *m, const struct merge_vm *vm);
void merge_exits_free(struct merge_vm *vm);
/* out.c: a VM's exit-sample attrs (0 or 1), and its guest kernel's _text when its guest kernel
 * maps are written (guest perf or exit samples; 0: none). */
size_t merge_out_vm_n_exits(const struct merge_vm *vm);
size_t merge_out_vm_n_migs(const struct merge_vm *vm);
/* migration.c: after the exit samples, each VM's migrations placed on its clock map (their
 * format into m->td); 0 or -ENOMEM. Peek/emit: the VM's next one, in time, as a guest source. */
int merge_migs_prepare(struct merge_ctx *m);
/* The migrations of vm's guest not placed yet (following: session.ini gained them since,
 * guest.c reloaded them) placed on its clock map as it is now and queued, those before
 * fitted_until only (the fit has probes after their switch: the step); how many. */
uint32_t merge_migs_update(struct merge_vm *vm, uint64_t fitted_until);
bool merge_migs_peek(const struct merge_vm *vm, uint64_t *ret_ts);
int merge_migs_emit(struct merge_ctx *m, struct merge_vm *vm);
void merge_migs_summary(const struct merge_vm *vm);
void merge_migs_free(struct merge_vm *vm);
uint64_t merge_out_vm_ktext(const struct merge_vm *vm);
