/* SPDX-License-Identifier: GPL-2.0-only */
/* trace-collector: what the top-level commands share (the command table, the options of start,
 * the status client, the daemon's and the merge's entry points). Each module has its own header
 * beside it: link/ (ports.h, agentctl.h, spool.h, spool-side.h, ctlsock.h), daemon/ (daemon.h,
 * session.h, disk.h, hostperf.h, gbinfetch.h, kcache.h, clocksync.h, kvmclock.h), setup/setup.h,
 * merge/ (merge.h and the private ones), report/report.h. */
#pragma once

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "log.h"

/* A subcommand: argv[0] is the subcommand's name. Returns the exit status. */
struct cmd_entry {
	const char *name;
	const char *summary;
	const char *usage;
	int (*run)(int argc, char **argv);
};

/* Prints "usage:" + the entry's usage text. Inline, so that the subcommands do not call back into main.c. */
static inline void cmd_usage(const struct cmd_entry *cmd, int to_stderr)
{
	fprintf(to_stderr ? stderr : stdout, "Usage: trace-collector %s %s\n", cmd->name, cmd->usage);
}

/* An option getopt refused (it said which): one line pointing at --help, the same in every
 * subcommand. */
static inline void cmd_bad_option(const struct cmd_entry *cmd)
{
	log_error("invalid option (see trace-collector %s --help)", cmd->name);
}

extern const struct cmd_entry cmd_setup, cmd_start, cmd_status, cmd_snapshot, cmd_stop, cmd_merge, cmd_report;

#define COLLECTOR_VM_ROOT "/var/lib/virtio-trace"
#define COLLECTOR_RUN_DIR "/run/virtio-trace"
#define COLLECTOR_MAX_CPUS 256

/* The output's zstd level unless --no-compress (bench/RESULTS.md: the level that keeps up with
 * a flood on one host core). */
#define MERGE_ZSTD_LEVEL 1
/* The zstd level of a merge of SESSION_DIR: compress 0 (--no-compress) raw, 1 (-z) the default
 * level, -1 (neither) the session's choice (session.ini opt_compress, written by start; a
 * session without it: the default level). */
int merge_zstd_level(const char *session_dir, int compress);
/* stop-summary.c: stop's line for a zstd OUT: how readers without zstd get a plain one (merge_args:
 * the session dir, and a set's --guest DIRs), or, when the spools are no longer whole
 * (!remergeable), that only a --no-compress start gives one. */
void stop_zstd_hint(const char *merge_args, const char *out, bool remergeable, FILE *f);
/* Merges SESSION_DIR into OUT (zstd level: merge_zstd_level(compress)); human summary lines go
 * to summary. Returns 0 or -errno (the merge prints its summary on stdout). */
/* 0, 1 when written with the guest clock unaligned, or -errno; -EFBIG when the output would
 * take more than max_bytes (0: no limit), nothing written then. */
int merge_session(const char *session_dir, const char *out, int compress, uint64_t max_bytes, FILE *summary);
/* The name (comm) of 'merge --follow', the live merge the daemon runs beside a session. */
#define MERGE_FOLLOW_COMM "vt-live-merge"
/* merge/dir.c: an existing OUT moved to OUT.old, as perf record does (merge and stop -o). An
 * older OUT.old goes first: a file or link by its name; a directory only when it is ours and only
 * what a merge writes in one, removed through descriptors (O_NOFOLLOW, unlinkat), never through
 * a link. 0 (also when there is no OUT) or -errno with why (a sentence naming what and the fix). */
int merge_dir_keep_old(const char *out, char *why, size_t len);
/* stop-summary.c: stop's short summary. A list of problems on one line: the first
 * SUMMARY_LIST_SHOWN items, then "and N more" (the full list is in the details). */
#define SUMMARY_LIST_SHOWN 6
struct summary_list {
	const char *sep; /* between items: ", " or "; " */
	char text[1536];
	size_t len;
	unsigned n; /* items added, shown or not */
};
void summary_list_add(struct summary_list *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The items shown and ", and N more"; "" when none. */
const char *summary_list_str(struct summary_list *l);
/* The merge's summary text (captured at stop) in two lines on out: "merged:" with what it
 * dropped, and "warnings:" when any; hint gets its "guest user functions: perf ..." line. */
void summary_merge_brief(const char *text, FILE *out, char *hint, size_t hintlen);
/* The daemon's stop reply: the short summary, this line, then the full one (stop -v, and
 * SESSION/stop-summary.txt). */
#define DAEMON_SUMMARY_DETAILS "--- details (trace-collector stop -v) ---"
/* SESSION/stop-summary.txt for appending (truncated first: truncate), O_NOFOLLOW in the root
 * session dir; NULL when it cannot be (said). */
FILE *stop_summary_open(const char *session_dir, bool truncate);
/* A daemon's stop reply: its short part on out (verbose, or no details: the full one), the full
 * one into file (may be NULL). */
void stop_summary_reply(const char *reply, bool verbose, FILE *out, FILE *file);
/* The stop summary's stalls line for a merged file (collector/report/, cmd-report.c). */
void report_stop_summary(const char *path, FILE *out);
/* The same line computed as the live merge writes the file: each record it writes is given to
 * report_live_record (perf_writer_tap); report_live_finish prints the line once the last one
 * was (the file's own attrs and TRACING_DATA; attrs kept until report_live_free). */
struct perf_attr_ids;
struct perf_event_header;
struct report_live;
int report_live_new(const struct perf_attr_ids *attrs, size_t n_attrs, const uint8_t *td, size_t td_len,
		    struct report_live **ret);
void report_live_record(void *ud, const struct perf_event_header *e);
void report_live_finish(struct report_live *l, FILE *out);
void report_live_free(struct report_live *l);
/* Whether the merge will line the guest's clock up with the host's: 1 yes, 0 no (why says why),
 * -errno when the session has no usable guest side. */
int merge_clock_state(const char *session_dir, char *why, size_t whylen);

/* Guest perf sampling (start --guest-perf): events NULL = off. */
struct guest_perf_opts {
	const char *events; /* "cpu-clock,page-faults" */
	uint32_t freq;      /* Hz per event and CPU */
	uint32_t ring_kb;   /* per-CPU perf ring in the guest */
	bool no_binaries;   /* --no-guest-binaries: no guest user symbols fetched at stop */
	bool trust_binaries; /* --trust-guest-binaries: into $HOME/.debug, not the output's own dir */
};

/* Parsed `start` options (the only mutable state besides the log level). */
struct start_opts {
	const char *name;
	char vm_dir[PATH_MAX];
	char run_dir[PATH_MAX];
	const char *events;
	const char *tracer;           /* guest current_tracer during the session (default nop) */
	const char *ftrace_filter;    /* guest set_ftrace_filter globs ("" = every function) */
	const char *clock;            /* auto|kvm|ptp */
	const char *trace_clock;      /* the guest's trace clock with ptp: auto|mono|x86-tsc */
	const char *host_events;
	char **host_perf_argv;        /* perf record's own arguments, after '--' */
	unsigned host_perf_argc;
	char host_data[PATH_MAX];     /* --host-data, absolute; "" when absent */
	char out[PATH_MAX];           /* -o, absolute; "" when absent */
	uint32_t buffer_kb;
	uint64_t max_size;            /* --max-size: every byte the session writes; 0 = none */
	uint64_t min_free;            /* --min-free: free space kept on the session's file system */
	bool max_size_given, min_free_given; /* else the defaults of disk.c, from the file system */
	uint64_t flight_recorder;     /* --flight-recorder SIZE: each guest CPU's newest SIZE kept */
	bool live_merge;              /* merged while tracing (daemon-live.c): the default, unless
				       * --no-live-merge, --flight-recorder or --host-data */
	bool live_explicit;           /* --live-merge (or -o -) given: refused where it cannot run */
	bool no_live_merge;           /* --no-live-merge: stop merges (offline merge) */
	bool keep_spools;             /* --keep-spools: nothing freed behind the live merge */
	int zstd_level;               /* the output's zstd level (MERGE_ZSTD_LEVEL; --no-compress: 0),
				       * session.ini opt_compress for the merges */
	bool live_stdout;             /* -o -: the live merge as pipe-mode perf.data on stdout */
	pid_t qemu_pid;
	bool no_host;
	bool foreground;
	unsigned timeout_s;           /* agent answer timeout */
	unsigned probe_interval_ms;   /* probe (heartbeat) period while tracing */
	bool holdout;                 /* --holdout-probes: one marked probe per period */
	bool allow_partial;           /* --allow-partial: go on when some CPUs cannot stream */
	uint32_t flush_ms;            /* --flush-interval: a quiet guest ring goes out within it */
	bool agent_events;            /* --agent-events: the agent's own threads traced too */
	const char *kvm_debugfs;      /* debugfs root for the kvm method */
	struct guest_perf_opts perf;  /* --guest-perf, --guest-freq, --guest-perf-kb */
	/* Several VMs in one session (start --name A --name B, --all; collector/vmgroup.c): */
	const char *names[16];        /* every --name, in order (VMGROUP_MAX_VMS) */
	unsigned nnames;
	bool all;                     /* --all: every VM dir under vm_root */
	const char *vm_root;          /* --vm-root: the VM dirs are ROOT/NAME */
	const char *group;            /* the set's id (session.ini group=); NULL: one VM */
	char group_leader[PATH_MAX];  /* a member: the session dir of the VM that records the host */
};

/* cmd-status.c: the status client, shared by status, snapshot and stop. */
/* The daemon's socket for --name (or the only session in run_dir); says why not. */
int status_socket(const char *run_dir, const char *name, char *buf, size_t size);
/* No daemon to ask (never started, or killed): says where the last session of name is, still
 * mergeable, or why its start failed (run_dir/NAME.pid, session.ini). */
void status_last_session(const char *run_dir, const char *name);
/* The daemon at sock gave no answer to what (-r from the request): says why in words (no
 * session, a stale socket, else the error) and where the last session is. */
void status_no_answer(const char *run_dir, const char *name, const char *sock, int r, const char *what);
/* One request to the daemon at sock, its reply in *ret_reply (free it; NULL when none came). */
int status_request(const char *sock, const char *request, char **ret_reply);
/* The options of status, snapshot and stop (out and compress NULL for status); *compress: 1 for
 * -z, 0 for --no-compress, untouched otherwise (merge_zstd_level). */
int status_parse(int argc, char **argv, const struct cmd_entry *cmd, const char **name,
		 const char **run_dir, const char **out, int *compress);

/* snapshot-dir.c: a snapshot dir, for one VM's snapshot (cmd-snapshot.c) and a set's. */
#define SNAPSHOT_DUMP_WAIT_MS 15000
/* The rest of the daemon's reply line that starts with key ("" when none). */
void snapshot_dir_reply(const char *reply, const char *key, char *buf, size_t size);
/* Waits for host perf's ring dump beside the snapshot dir and moves it in as dir/host.data. */
int snapshot_dir_host_dump(const char *dir, char *host, size_t size);
/* A set's leader's host.data (host: prefix): the path and how many bytes of it are complete. */
int snapshot_dir_host_prefix(const char *dir, char *host, size_t size, uint64_t *prefix);
/* Removes a snapshot dir (links and small files, no subdirectories). */
int snapshot_dir_remove(const char *dir);

/* A stop client answered this when a later stop takes over (that one prints and merges):
 * the daemon (daemon/stop.c) says it, cmd-stop.c recognizes it. */
#define DAEMON_STOP_TAKEN_OVER "taken over by a later 'trace-collector stop', which prints the summary and merges"

/* daemon.c */
/* Runs the daemon; notify_fd (or -1 in the foreground) receives "dir PATH", then "ok" or "fail". */
int daemon_run(const struct start_opts *o, int lock_fd, int notify_fd);

