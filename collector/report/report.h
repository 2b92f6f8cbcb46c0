/* SPDX-License-Identifier: GPL-2.0-only */
/* trace-collector report: why each guest vCPU stalled (docs/guide-report.md). read.c turns the
 * merged perf.data into the calls below, stall.c follows each vCPU's QEMU thread on the host
 * and its guest task and cuts stalls, output-*.c print them. Private to collector/report/. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define REPORT_COMM 16
#define REPORT_MAX_VCPUS 1024 /* per VM */
#define REPORT_MAX_CPUS 4096  /* host CPUs */
#define REPORT_TOP_TASKS 4    /* host tasks kept per stall (the culprit is the first) */

enum report_cause { REPORT_PREEMPTED, REPORT_HOST_BLOCKED, REPORT_VM_EXIT, REPORT_MIGRATION, REPORT_UNKNOWN, REPORT_N_CAUSES };
#define REPORT_MAX_MIGRATIONS 16 /* per VM, as the session records at most */

/* The guest task on a vCPU at a host time, from that guest's own events (-1: not known). */
struct report_gtask {
	int32_t pid;
	char comm[REPORT_COMM];
	uint64_t at;
};

struct report_task {
	int32_t pid;
	char comm[REPORT_COMM];
	uint64_t ns;
	struct report_gtask g; /* a vCPU thread of a VM in the file: its guest's task when it last ran */
};

struct report_stall {
	uint32_t vm, vcpu;
	uint64_t start, end;
	enum report_cause cause;
	const char *why;           /* static text for unknown, NULL otherwise */
	int32_t host_cpu;          /* where the thread was switched out */
	struct report_task culprit; /* ns: the culprit's time on host_cpu during the stall; g: the
				     * guest task on the culprit vCPU then (culprit_vm >= 0) */
	int32_t culprit_vm;         /* index of the VM whose vCPU the culprit is, or -1 */
	int32_t culprit_vcpu;
	int32_t culprit_machine_pid; /* that VM's QEMU pid */
	int32_t guest_pid;
	char guest_comm[REPORT_COMM];
	int64_t exit_reason;        /* vm_exit: the open kvm_exit's reason */
	int32_t mig_from, mig_to;   /* migration: the source and destination QEMU pids (else -1) */
	uint64_t woken_at;          /* asleep first: the wakeup's time, 0 if none seen */
	int32_t waker_pid;          /* and who woke it */
	char waker_comm[REPORT_COMM];
};

/* One culprit's share of a vCPU's stalls. */
struct report_culprit {
	struct report_task t;
	uint32_t n;
};

struct report_exit_reason {
	int64_t reason;
	uint64_t ns, n;
};

/* Host-side state of one vCPU thread. */
enum report_hstate { REPORT_H_UNKNOWN, REPORT_H_RUNNING, REPORT_H_OFF };

struct report_vcpu {
	int32_t tid;  /* QEMU's vCPU thread, -1 when unknown */
	bool seen;    /* any guest record of this vCPU */
	/* host side */
	enum report_hstate h;
	int32_t cpu;            /* running on, or switched out from */
	uint64_t since;         /* of the current host state */
	int64_t out_state;      /* prev_state at switch-out */
	int32_t waker_pid;
	char waker_comm[REPORT_COMM];
	struct report_gtask waker_g; /* a vCPU thread waker: its guest's task at the wakeup */
	uint64_t woken_at;
	uint64_t credit_from;   /* off_tasks count from here (the switch out, or the wakeup) */
	struct report_task off_tasks[REPORT_TOP_TASKS]; /* who ran on cpu while it was off */
	bool in_exit;           /* kvm_exit seen, no kvm_entry yet */
	int64_t exit_reason;
	uint64_t exit_at;
	uint64_t first_switch, last_switch;
	/* guest side */
	bool g_known;
	int32_t g_pid;
	char g_comm[REPORT_COMM];
	int32_t g_off_pid;      /* guest task at the switch-out */
	char g_off_comm[REPORT_COMM];
	bool g_off_known;
	uint64_t g_inside;      /* a guest record of this vCPU well inside the current switched-out
				 * interval (0: none): the vCPU ran, the host missed its switch in */
	/* totals */
	uint64_t running_ns, off_idle_ns, off_unknown_ns, stalled_ns[REPORT_N_CAUSES];
	uint64_t n_stalls, n_stalls_min, switches, dropped_intervals, g_since;
	uint64_t ran_unseen;    /* switched-out intervals it traced in: not judged (g_inside) */
	struct report_culprit *culprits;
	size_t n_culprits;
	struct report_exit_reason *exits;
	size_t n_exits;
	uint64_t exit_ns;
};

struct report_vm {
	int32_t machine_pid;
	char name[REPORT_COMM]; /* QEMU's process name when the user set one (-name ...,process=), else "" */
	uint32_t n_vcpus;
	struct report_vcpu *vcpus;
	uint64_t guest_switches, guest_records;
	bool has_guest_switch;
	uint32_t threads_named;
	/* stalls cut since the VM's last guest record: judged once another one comes */
	struct report_stall *pending;
	size_t n_pending, cap_pending;
	uint64_t last_guest, not_judged;
	uint64_t first_guest;   /* its first guest record (0: none): the SVG's default window */
	/* the QEMUs it migrated to (the file's <prefix>virtio_trace:migration): their vCPU
	 * threads are its own from then on */
	int32_t qemu_to[REPORT_MAX_MIGRATIONS];
	uint32_t n_migrations;
};

/* A vCPU thread of a QEMU that is not one of the file's VMs (named from host COMM records). */
struct report_foreign {
	int32_t tid, pid, vcpu;
};

/* Picture data (--svg): per vCPU bands inside [from, to]. */
struct report_band {
	uint64_t start, end;
	int32_t pid;
	char comm[REPORT_COMM];
	uint8_t kind; /* 0 guest task, 1 host off-CPU */
	uint32_t vm, vcpu;
};

struct report_opts {
	uint64_t min_ns;   /* stalls kept for the list (default 1 ms) */
	uint64_t from, to; /* picture range (0, UINT64_MAX: all) */
	bool bands;        /* keep bands for the picture */
};

struct report_hcpu {
	int32_t pid;
	char comm[REPORT_COMM];
	uint64_t since;
	bool known;
};

struct report {
	struct report_opts o;
	struct report_vm *vms;
	size_t n_vms;
	struct report_foreign *foreign;
	size_t n_foreign;
	/* tid -> (vm << 16 | vcpu) + 1, open addressing */
	int32_t *map_tid;
	uint32_t *map_val;
	size_t map_cap, map_n;
	struct report_hcpu *hcpu;
	uint32_t n_hcpu;
	struct report_stall *stalls;
	size_t n_stalls, cap_stalls;
	struct report_band *bands;
	size_t n_bands, cap_bands;
	uint64_t t_first, t_last, host_first, host_last;
	/* what the file holds */
	bool has_host, has_switch, has_wakeup, has_kvm, has_guest;
	uint32_t kvm_isa;       /* kvm_exit's isa field: 1 VMX (Intel), 2 SVM (AMD), 0 unknown */
	uint64_t host_switches, host_lost, records, out_of_order;
	char notes[8][256];
	size_t n_notes;
	const char *path;
};

/* stall.c: the state machine. Times are host ns in the file's clock, in order. */
int report_init(struct report *r, const struct report_opts *o);
void report_free(struct report *r);
int report_vm_add(struct report *r, int32_t machine_pid, uint32_t n_vcpus, uint32_t *ret_vm);
long report_vm_find(const struct report *r, int32_t machine_pid);
/* The VM whose QEMU pid is: its first (machine_pid) or one it migrated to; -1. */
long report_vm_of_qemu(const struct report *r, int32_t pid);
void report_vm_name(struct report *r, uint32_t vm, const char *name);
/* The name of a VM index, else its QEMU pid (a QEMU pid when vm < 0), in buf. */
const char *report_vm_label(const struct report *r, long vm, int32_t machine_pid, char *buf, size_t len);
/* vms.c: the VMs and the vCPU thread map; stall.c and read.c call in. */
int report_vcpu_thread(struct report *r, uint32_t vm, uint32_t vcpu, int32_t tid);
/* The vCPU (and its VM index) of a mapped thread tid, or NULL. */
struct report_vcpu *report_map_find(const struct report *r, int32_t tid, uint32_t *ret_vm);
/* Thread tid is no vCPU's any more (its QEMU migrated away). */
void report_map_forget(struct report *r, int32_t tid);
/* A name from the file into dst (REPORT_COMM): printable ASCII only, the rest '?'. */
void report_comm_clean(char *dst, const char *src);
int report_foreign_thread(struct report *r, int32_t pid, int32_t tid, int32_t vcpu);
void report_host_switch(struct report *r, uint64_t t, uint32_t cpu, int32_t prev_pid, const char *prev_comm,
			int64_t prev_state, int32_t next_pid, const char *next_comm);
void report_host_wakeup(struct report *r, uint64_t t, uint32_t cpu, int32_t waker, int32_t wakee, int32_t target_cpu);
void report_host_kvm(struct report *r, uint64_t t, int32_t tid, bool is_exit, int64_t reason);
void report_host_lost(struct report *r, uint64_t t);
void report_guest_switch(struct report *r, uint32_t vm, uint32_t vcpu, uint64_t t, int32_t next_pid,
			 const char *next_comm);
void report_guest_task(struct report *r, uint32_t vm, uint32_t vcpu, uint64_t t, int32_t pid, const char *comm);
/* The file says at t that VM vm's guest migrated from QEMU from to QEMU to, paused blackout_ns
 * (0: not measured) from start (at or before t: a live merge may learn of it late): a
 * "migration" stall on each vCPU over it, and to's vCPU threads followed from t on. */
void report_migration(struct report *r, uint32_t vm, uint64_t t, uint64_t start, int32_t from, int32_t to,
		      uint64_t blackout_ns);
void report_end(struct report *r);
void report_note(struct report *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
const char *report_cause_name(enum report_cause c);
/* The name of a kvm_exit reason on the file's ISA ("hlt", "io", "msr", "npf" ...), as perf kvm
 * stat names them; NULL when the ISA or the code is not known. */
const char *report_exit_name(const struct report *r, int64_t reason);
/* A stall's cause as the text and the SVG show it: "vm_exit:hlt" (or "vm_exit:NUMBER") for an
 * exit, else report_cause_name's; in buf when it has to be written. */
const char *report_stall_cause(const struct report *r, const struct report_stall *s, char *buf, size_t len);
/* The VM index of a vCPU thread tid (-1: not a VM of the file) with its vCPU and QEMU pid
 * (-1, -1: no vCPU thread at all). */
long report_vcpu_of(const struct report *r, int32_t tid, int32_t *ret_vcpu, int32_t *ret_machine_pid);
/* Stalls sorted longest first (in place). */
void report_sort_stalls(struct report *r);
/* Stalls' total of one vCPU, and the sort of vCPUs by impact: indexes into (vm, vcpu) pairs. */
uint64_t report_vcpu_stalled(const struct report_vcpu *v);

/* read.c: the records of a merged perf.data, one at a time, through stall.c: with its attrs
 * (attr(ud, i), i < n_attrs; kept until report_feed_free) and its TRACING_DATA (td NULL: none),
 * from a file (report_read) or as the live merge writes them (report_live). */
struct perf_attr_ids;
struct perf_event_header;
struct report_feed;
int report_feed_new(struct report *r, const struct perf_attr_ids *(*attr)(void *ud, size_t i), void *ud,
		    size_t n_attrs, const uint8_t *td, size_t td_len, char *err, size_t errlen,
		    struct report_feed **ret);
void report_feed_record(struct report_feed *f, const struct perf_event_header *e);
/* After the last record: stall.c's end, the notes. */
void report_feed_end(struct report_feed *f);
void report_feed_free(struct report_feed *f);
/* read.c: feeds a merged perf.data (a file, or a perf.data directory) through stall.c. */
int report_read(struct report *r, const char *path, char *err, size_t errlen);
/* The same from an open fd, which it takes over (the fuzz target's memfd). */
int report_read_fd(struct report *r, int fd, char *err, size_t errlen);

/* Output filters. */
struct report_filter {
	long vcpu; /* -1: all */
	size_t top;
};
void report_text(const struct report *r, const struct report_filter *f, FILE *out);
/* The culprit of s in words: "COMM (PID)", then "= VM X vCPU N running GCOMM (GPID)" for a vCPU
 * thread (the guest task when that VM's own events tell it). */
void report_culprit_text(const struct report *r, const struct report_stall *s, char *buf, size_t len);
void report_json(const struct report *r, const struct report_filter *f, FILE *out);
int report_svg(struct report *r, const struct report_filter *f, FILE *out);
/* One line for the stop summary: "stalls: ..." (or why there is none). */
void report_summary_line(const struct report *r, FILE *out);
