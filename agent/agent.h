/* SPDX-License-Identifier: GPL-2.0-only */
/* trace-agent private header: one banner per file. */
#pragma once

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "perf_events.h"
#include "proto.h"

struct agent_options {
	const char *tracefs;   /* NULL: find it */
	const char *ports_dir; /* NULL: /dev/virtio-ports, else sysfs lookup */
	const char *instance;  /* ftrace instance name */
	uint64_t pipe_max;     /* cap on the splice pipe size, bytes */
	uint32_t subbuf_kb;    /* the instance's ring sub-buffer (Linux 6.8+), KiB; 0: leave it */
	bool no_binaries;      /* refuse BINARY_REQ */
};

#define AGENT_DEFAULT_EVENTS "sched,irq,timer"
#define AGENT_DEFAULT_CLOCK "mono"
#define AGENT_BUFFER_KB_MIN 4u
#define AGENT_BUFFER_KB_MAX (4u << 20) /* 4 GiB per CPU */
#define AGENT_FLUSH_MS_DEFAULT 1000u
/* Sub-buffers of 16 KiB (4 pages): a quarter of the ring's page swaps and allocations per byte
 * streamed; a quiet CPU's flush pads to one (bench/RESULTS.md, "Sub-buffers"). */
#define AGENT_SUBBUF_KB_DEFAULT 16u
#define AGENT_SUBBUF_KB_MAX 64u /* VT_MARKER_MAX_PAGE */
#define AGENT_FLUSH_MS_MAX 3600000u

/* What the host asked for; applied to the instance at CONFIG (idle) and at START. */
struct agent_config {
	char *events;       /* comma list as validated, e.g. "sched:*,irq:irq_handler_entry" */
	char *clock;        /* trace clock name */
	uint32_t buffer_kb; /* 0: leave the instance's size */
	char *tracer;       /* current_tracer during sessions; NULL = nop */
	char *ftrace_filter; /* set_ftrace_filter globs, space separated; NULL = all functions */
	uint32_t flush_ms;   /* a quiet ring's data goes out within this many ms; 0 = only at half full */
	char *perf_events;   /* guest perf events, "cpu-clock,page-faults"; NULL = no guest perf */
	uint32_t perf_freq;  /* samples per second per event and CPU */
	uint32_t perf_ring_kb; /* data part of each CPU's perf ring, KiB, a power of two */
	bool agent_events;   /* the agent's own threads' events in the trace too (default: left out) */
};

/* ---- events.c: the event list the host sends (pure, fuzzed) ---- */
#define EVENTS_NAME_MAX 128
#define EVENTS_MAX 1024
struct event_spec {
	char sys[EVENTS_NAME_MAX];
	char name[EVENTS_NAME_MAX]; /* "" = every event of sys */
};
/* Parses "sys:event,sys:*,sys"; on -EINVAL *ret_bad (if given) names the bad item. */
int events_parse(const char *list, struct event_spec **ret, size_t *ret_n, char **ret_bad);
/* Writes the canonical form ("sys:*" for whole systems) into a new string; -E2BIG past
 * VT_PROTO_MAX_STR. */
int events_format(const struct event_spec *ev, size_t n, char **ret);

/* ---- tracefs.c: tracefs mount, our instance, events, clock, buffer, stats ---- */
#define TRACEFS_LISTED_MAX 1024
struct tracefs {
	char *root;      /* tracefs mount */
	char *inst_path; /* root/instances/NAME */
	int inst_fd;     /* directory fd of the instance */
	int claim_fd;    /* abstract socket "trace-agent:NAME": one agent per instance */
	struct agent_config applied; /* what the instance has (NULL/0: unknown, write it) */
	int listed[TRACEFS_LISTED_MAX]; /* tids in set_event_notrace_pid, ours of now and of before */
	size_t n_listed;
	bool listed_unknown; /* a write failed: the next one rewrites the list */
};
int tracefs_open(struct tracefs *t, const char *root_opt, const char *instance);
/* Turns tracing off, disables events, removes the instance. */
void tracefs_close(struct tracefs *t);
int tracefs_write(const struct tracefs *t, const char *rel, const char *val);
int tracefs_read(const struct tracefs *t, const char *rel, size_t max, char **ret);
int tracefs_set_on(const struct tracefs *t, bool on);
/* Empties the instance's rings (and their stats). */
int tracefs_reset(const struct tracefs *t);
int tracefs_exclude_self(struct tracefs *t, bool exclude);
/* 0 if the config can be applied; else -errno and *ret_msg says what is wrong. */
int tracefs_config_check(const struct tracefs *t, const struct agent_config *c, char **ret_msg);
/* A START's progress reports (ctlout_progress_cb with the agent), or NULL for none. */
struct tracefs_progress {
	void (*fn)(void *data, uint32_t step, uint32_t done, uint32_t total);
	void *data;
};
/* Applies a complete config (events and clock set), writing only what changed since the last
 * one applied; the events enabled, then the other settings, reported to progress. */
int tracefs_config_apply(struct tracefs *t, const struct agent_config *c, const struct tracefs_progress *progress,
			 char **ret_msg);
/* Calls fn for every concrete event ("sys", "event") the list selects. */
int tracefs_events_foreach(const struct tracefs *t, const char *list,
			   int (*fn)(const char *sys, const char *ev, void *data), void *data);
/* Sets current_tracer back to nop (after the pipes are closed: 6.1 refuses while they are open). */
void tracefs_tracer_reset(struct tracefs *t);
/* Writes the function filter now (idle: it acts only with a function tracer), so that a glob
 * matching nothing is refused at CONFIG; on failure the previous filter is put back. */
int tracefs_filter_try(struct tracefs *t, const char *filter, char **ret_msg);
/* Reads per_cpu/cpuN/stats into the ring counters of *s. */
int tracefs_cpu_stats(const struct tracefs *t, unsigned cpu, struct vt_cpu_stats *s);
/* The instance's ring sub-buffer size (buffer_subbuf_size_kb, Linux 6.8+): -ENOENT before. */
int tracefs_subbuf_set(const struct tracefs *t, uint32_t kb);
/* The unit the ring is read in: the sub-buffer size, else the page size. */
uint32_t tracefs_page_size(const struct tracefs *t);

/* ---- ports.c: virtio-serial ports by name ---- */
struct ports {
	char *dir; /* directory of names, or NULL: look names up in /sys/class/virtio-ports */
};
int ports_find(struct ports *p, const char *dir_opt);
void ports_free(struct ports *p);
/* A port's read and write fds: a device or socket dup'd, or a test dir's FIFO pair. */
struct port_fds {
	int rd, wr;
};
/* Opens (or, for a unix socket in a test ports dir, connects) the port called name; in a
 * test dir without NAME, the FIFO pair NAME.in (read) / NAME.out (written). */
int ports_open(const struct ports *p, const char *name, struct port_fds *ret);
/* Closes both fds (either may be -1) and sets them to -1. */
void ports_close(struct port_fds *f);
/* A user-facing description of where name was looked for. */
const char *ports_where(const struct ports *p);

/* ---- pump.c: one pinned thread per CPU, trace_pipe_raw -> pipe -> port ---- */
#define PUMP_BEGIN_MS 5000 /* a port that takes no begin marker this long fails its CPU */
struct pump_shared {
	int stop_efd;  /* latched: drain, write the end marker, finish */
	int abort_efd; /* latched: give up waiting for the port (agent exits) */
	int ready_efd; /* counter: +1 per pump whose begin marker is out (or that failed) */
	int done_efd;  /* counter: +1 per pump that finished */
	uint64_t session;
	uint32_t page_size;
	size_t pipe_size;
	int flush_ms; /* poll timeout of a pump: then it sends what the ring has; -1 = never */
	const char *clock; /* the trace clock (flush markers carry its reading) */
	const struct tracefs *tfs;
	const struct ports *ports;
	/* guest perf (perf.c), perf_n = 0: none */
	struct perf_event_spec perf_ev[VT_PERF_MAX_EVENTS];
	size_t perf_n;
	uint32_t perf_freq, perf_ring_kb;
	int perf_clockid;
	int perf_synth_claimed; /* atomic: the first perf stream to start writes the task records */
	int perf_copy_logged;   /* atomic: the write() fallback was named in the log */
};
struct pump {
	unsigned cpu;
	bool thread_started;
	pthread_t thread;
	const struct pump_shared *sh;
	struct vt_cpu_stats stats; /* owned by the thread until joined */
	int flush_efd;             /* FLUSH: drain now, then a flush marker carrying flush_seq */
	uint64_t flush_seq;        /* atomic */
};
int pump_start(struct pump *p);
/* FLUSH: the pump sends what its ring holds now, then a flush marker with seq. */
void pump_flush(struct pump *p, uint64_t seq);
/* A thread running fn(arg) pinned to cpu (pumps and perf pumps): 0 or -errno. */
int pump_thread_pinned(pthread_t *ret, unsigned cpu, void *(*fn)(void *), void *arg);
void pump_join(struct pump *p);
/* +1 on an eventfd. */
void pump_signal(int efd);
/* A data port being written (non-blocking fd): waits honour the agent's abort and a deadline. */
struct pump_port {
	int fd;
	int abort_efd;
	int wait_ms; /* -1, or how long a write may wait for the port */
};
/* Waits for events on fd unless the agent aborts: 0, -ECANCELED, -EPIPE, -ETIMEDOUT. */
int pump_port_wait(const struct pump_port *port, int fd, short events);
/* Classifies one write/splice result: bytes moved, 0 to retry (EINTR, or EAGAIN once the port
 * is writable again), or -errno (-EPIPE when nothing moved, -ECANCELED on abort). */
ssize_t pump_port_step(const struct pump_port *port, ssize_t n);
/* Writes a whole buffer to the port, finishing short writes. */
int pump_port_write(const struct pump_port *port, const void *buf, size_t len);
/* Moves len bytes from a pipe to the port, finishing partial transfers. */
int pump_port_splice(const struct pump_port *port, int pipe_r, size_t len);
/* A pipe of up to want bytes (F_SETPIPE_SZ), at least a page; its size in whole pages. */
int pump_pipe(size_t want, uint32_t page_size, int *ret_r, int *ret_w, size_t *ret_size);

/* ---- perf.c: guest perf rings, one pinned thread per CPU, ring -> pipe -> perf-path-cpuN ---- */
struct perf_pump {
	unsigned cpu;
	bool thread_started;
	pthread_t thread;
	struct pump_shared *sh;
	struct vt_perf_stats stats; /* owned by the thread until joined */
	int flush_efd;              /* FLUSH: drain the perf ring now, then a perf flush marker */
	uint64_t flush_seq;         /* atomic */
};
/* FLUSH: the perf stream sends what its ring holds now, then a perf flush marker with seq. */
void perf_flush(struct perf_pump *p, uint64_t seq);
/* Checks the guest perf part of a config (events, rate, ring, clock; each event opened once on
 * CPU 0): 0, or -errno with *ret_msg saying what is wrong. */
int perf_config_check(const struct agent_config *c, char **ret_msg);
/* The session's perf settings from the (checked) config into sh: 0 or -errno. */
int perf_prepare(struct pump_shared *sh, const struct agent_config *c);
int perf_start(struct perf_pump *p);
void perf_join(struct perf_pump *p);

/* ---- perf_synth.c: COMM and MMAP2 records of the tasks alive now, from /proc ---- */
#define PERF_SYNTH_TASKS_MAX 32768
#define PERF_SYNTH_BYTES_MAX (16u << 20)
/* Writes them to the port, each with the sample_id trailer (task, time, cpu, id): 0 or the
 * port's -errno; what was written is counted either way. */
int perf_synth_tasks(const struct pump_port *port, unsigned cpu, uint64_t id, uint64_t time,
		     uint64_t *ret_records, uint64_t *ret_bytes);

/* ---- clocks.c: trace clocks read from user space, and their measured steps ---- */
/* The user-space reading of a trace clock; -EOPNOTSUPP for clocks that have none. */
int clocks_read(const char *clock, uint64_t *ret);
/* "mono=4000000ns mono_raw=... x86-tsc=38cycles": each readable clock's smallest step. */
void clocks_resolution(char *buf, size_t len);
/* The guest's KVM PTP clock (ptp_kvm) opened, *precise when it cross-timestamps; -ENOENT: none. */
int clocks_phc_open(bool *precise);
/* The trace clock read into *ret_guest, bracketed in the host's CLOCK_REALTIME by the PHC from
 * m0 (the guest's CLOCK_MONOTONIC_RAW taken before it) on: [*ret_lo, *ret_hi]. */
int clocks_phc_bracket(int fd, bool precise, const char *clock, uint64_t m0, uint64_t *ret_guest, uint64_t *ret_lo,
		       uint64_t *ret_hi);

/* ---- ctlout.c: what the agent writes on agent-ctl-path ---- */
/* Where the START being run is (PROGRESS frames, docs/protocol.md §1). */
struct start_progress {
	bool want;        /* the host asked for PROGRESS (START's WANT_PROGRESS) */
	uint32_t seq;     /* START's seq, echoed */
	uint32_t step, done; /* the last report */
	uint64_t t0_ns, sent_ns;
	uint64_t dropped; /* reports not sent: the port was full */
};
struct agent;
/* A pending SIGTERM/SIGINT: sets quit. */
void ctlout_signal(struct agent *a);
/* Writes a whole buffer to the control port, waiting while it is full; a signal cancels. */
int ctlout_write(struct agent *a, const uint8_t *p, size_t len);
/* A START begins (seq: its frame's; want: it asked for PROGRESS); legacy starts want none. */
void ctlout_progress_begin(struct agent *a, uint32_t seq, bool want);
/* The start is at step (enum vt_start_step), done of total items: logged at each new step, and
 * sent when asked for (a new step at once, the same step's count at most 4 times a second). */
void ctlout_progress(struct agent *a, uint32_t step, uint32_t done, uint32_t total);
void ctlout_progress_cb(void *agent, uint32_t step, uint32_t done, uint32_t total);

/* ---- agent.c / session.c / control.c / meta.c ---- */
/* A guest file kept across sessions while its key (what it depends on) is unchanged. */
struct meta_cache {
	char *key;
	char *data;
	size_t len;
};

struct agent {
	const struct agent_options *opts;
	struct tracefs tfs;
	struct ports ports;
	unsigned ncpus;
	uint32_t page_size;
	size_t pipe_size;
	struct agent_config cfg;
	struct port_fds ctl; /* -1/-1 while closed */
	int sig_fd, timer_fd;
	unsigned backoff_ms;
	struct vt_reader rd;
	bool quit;
	/* session */
	bool tracing;
	uint64_t session;
	struct pump_shared sh;
	struct pump *pumps;
	struct perf_pump *perf; /* NULL: the session runs no guest perf */
	struct start_progress progress;
	struct meta_cache kallsyms;
	char clock_res[256]; /* clocks_resolution(), measured at the first HELLO */
	int phc_fd;          /* the guest's KVM PTP clock: -1 none, -2 not looked for yet */
	bool phc_precise;
	bool phc_said;       /* a failed PHC read logged once */
};

void config_free(struct agent_config *c);
/* Replaces *c by a deep copy of *v (NULL strings stay NULL). */
int config_set(struct agent_config *c, const struct agent_config *v);
/* The defaults (events sched,irq,timer, clock mono, no tracer) with buffer_kb. */
int config_default(struct agent_config *c, uint32_t buffer_kb);
/* Whether the config runs a tracer besides the events (a name other than nop). */
bool config_has_tracer(const struct agent_config *c);

/* Starts a session; on failure *ret_msg says why (caller frees). */
int session_start(struct agent *a, uint64_t id, char **ret_msg);
/* Stops the session, filling stats (ncpus entries, caller frees) and, when ret_perf is given,
 * the perf streams' stats (ncpus entries, NULL when the session ran no guest perf). */
int session_stop(struct agent *a, struct vt_cpu_stats **ret_stats, struct vt_perf_stats **ret_perf);
/* FLUSH: every streaming CPU drains its ring now and sends a flush marker with seq; 0, or
 * -EALREADY when not tracing, -ESTALE when id is not the session's. */
int session_flush(struct agent *a, uint64_t id, uint64_t seq);

/* ---- binary.c ---- */

/* BINARY_REQ: one chunk of the guest ELF file at the requested path whose build-id is the
 * requested one, as a BINARY frame, or an ERROR naming the file (docs/protocol.md). */
void binary_reply(struct agent *a, const struct vt_msg *m, struct vt_buf *out);

/* Handles one decoded event of the control stream, appending replies to out. */
void control_msg(struct agent *a, const struct vt_msg *m, struct vt_buf *out);
void control_legacy(struct agent *a, char c);
/* reply.c: an ERROR frame (errno, message) for seq into out; logged as a warning. */
void reply_error(struct vt_buf *out, uint32_t seq, int err, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Appends META_FILE frames and META_END for the current config; host_key (or NULL) is the key
 * of the kallsyms the host holds for this VM: when it is current, only kallsyms_key goes. */
int meta_reply(struct agent *a, uint32_t seq, const char *host_key, struct vt_buf *out);
void meta_cache_free(struct meta_cache *k);

int agent_run(const struct agent_options *opts);
