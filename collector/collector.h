/* SPDX-License-Identifier: GPL-2.0-only */
/* trace-collector private header. */
#pragma once

#include <stdio.h>

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

extern const struct cmd_entry cmd_setup, cmd_start, cmd_status, cmd_snapshot, cmd_stop, cmd_merge, cmd_report;

/* ---- daemon: trace-collector start/status/stop (collector/README.md) ---- */
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "marker.h"
#include "proto.h"

#define COLLECTOR_VM_ROOT "/var/lib/virtio-trace"
#define COLLECTOR_RUN_DIR "/run/virtio-trace"
#define COLLECTOR_MAX_CPUS 256

/* Merges SESSION_DIR into OUT (zstd when compress); human summary lines go to summary.
 * Returns 0 or -errno (the merge prints its summary on stdout). */
/* 0, 1 when written with the guest clock unaligned, or -errno; -EFBIG when the output would
 * take more than max_bytes (0: no limit), nothing written then. */
int merge_session(const char *session_dir, const char *out, bool compress, uint64_t max_bytes, FILE *summary);
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
/* The stop summary's stalls line for a merged file (collector/report/, cmd-report.c). */
void report_stop_summary(const char *path, FILE *out);
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
};

struct daemon;
struct event_base;

/* gbinfetch.c: at stop, after host perf stopped, the guest binaries that guest user-mode samples
 * ran in, from the agent into SESSION/binaries/ (the merge places them in OUT/buildids, or with
 * trust in perf's build-id cache $HOME/.debug). */
struct gbinfetch;
struct agentctl;
struct vt_msg;
/* A stop client answered this when a later stop takes over (that one prints and merges). */
#define DAEMON_STOP_TAKEN_OVER "taken over by a later 'trace-collector stop', which prints the summary and merges"
#define GBIN_TOTAL_TIMEOUTS 12 /* the whole fetch: at most this many --timeout */
/* Scans the session's guest perf streams and opens SESSION/binaries/index. */
int gbinfetch_new(const char *session_dir, bool trust, struct gbinfetch **ret);
/* Sends the next request; false when nothing is left to fetch. */
bool gbinfetch_next(struct gbinfetch *f, struct agentctl *a);
/* Takes the reply (BINARY or ERROR) to the pending request and sends the next; false when done. */
bool gbinfetch_on_msg(struct gbinfetch *f, struct agentctl *a, const struct vt_msg *m);
/* Whether that reply was progress (re-arms the wait): not a short chunk that is no file's end. */
bool gbinfetch_progress(const struct gbinfetch *f);
/* Ends the fetch: the rest listed with status ("cut:WHAT", said with why in the summary). */
void gbinfetch_abort(struct gbinfetch *f, const char *status, const char *why);
void gbinfetch_summary(const struct gbinfetch *f, FILE *out);
/* What the fetch did not bring: binaries not sent, binaries cut (and why, "" when none). */
void gbinfetch_missing(const struct gbinfetch *f, unsigned *not_sent, unsigned *cut, const char **cut_why);
void gbinfetch_free(struct gbinfetch *f);

/* ports.c: the per-VM FIFO pairs (NAME.in / NAME.out) or sockets (sock/NAME.sock). */
#define PORT_SOCK_DIR "sock"
#define PORT_DRAIN_MAX (16u << 20)
enum port_kind { PORT_FIFO, PORT_SOCKET };
struct port {
	char name[64];
	char base[PATH_MAX]; /* DIR/NAME */
	enum port_kind kind;
	int rfd, wfd;        /* equal for sockets; -1 when closed */
};
int ports_detect(const char *dir, enum port_kind *ret);
void port_init(struct port *p, const char *dir, const char *name, enum port_kind kind);
int port_open(struct port *p, bool writable);
void port_close(struct port *p);
uint64_t port_drain(struct port *p);
pid_t port_peer_pid(const struct port *p);
const char *port_path(const struct port *p, bool reading, char *buf, size_t size);

/* disk.c: the session's disk budget (start --max-size, --min-free; stop's output). */
#define DISK_MAX_DIVISOR 4              /* default --max-size: a quarter of the file system, */
#define DISK_MAX_CAP (16ull << 30)      /* at most 16 GiB */
#define DISK_FLOOR_DIVISOR 20           /* default --min-free: 5 % of the file system, */
#define DISK_FLOOR_CAP (1ull << 30)     /* at most 1 GiB */
struct stat;
struct disk_usage {
	uint64_t spools; /* top-level *.spool */
	uint64_t ftrace; /* of them, the guest's ftrace streams (cpuN.spool) */
	uint64_t host;   /* top-level host.data */
	uint64_t live;   /* top-level live.data (the live merge's output; a file or a directory) */
	uint64_t other;  /* everything else: guest/, binaries/, clock samples, logs, snapshots */
};
/* Every byte of it. */
uint64_t disk_total(const struct disk_usage *u);
/* What it will hold once the output is written: the output taken as its inputs, host.data and
 * guest perf records copied as they are and the guest's ftrace pages DISK_FTRACE_FACTOR times
 * over, or as the live merge's file when that is larger already. */
#define DISK_FTRACE_FACTOR 4 /* a 20-byte event in a ring page is an 80-byte perf sample */
uint64_t disk_projected(const struct disk_usage *u);
uint64_t disk_default_max(uint64_t fs_bytes);
uint64_t disk_default_floor(uint64_t fs_bytes);
/* A size as util_parse_size, or "none" (0: no limit). */
int disk_parse_size(const char *s, uint64_t *ret);
/* statvfs: the file system's size and the bytes free to unprivileged users (either may be NULL). */
int disk_fs(const char *path, uint64_t *ret_size, uint64_t *ret_free);
/* The same for the file system that holds (or will hold) the file path. */
int disk_fs_of_file(const char *path, uint64_t *ret_size, uint64_t *ret_free);
/* A file's bytes on disk: its size, less its holes. */
uint64_t disk_file_bytes(const struct stat *st);
/* Every regular file under dir (symlinks not followed). */
int disk_usage(const char *dir, struct disk_usage *ret);
enum disk_bound { DISK_BOUND_NONE, DISK_BOUND_LIMIT, DISK_BOUND_FLOOR };
/* How many bytes an output may still take: max_size (0: none) less used, and free_bytes less
 * floor; *ret_bound says which of them is the smaller. */
uint64_t disk_output_budget(uint64_t max_size, uint64_t used, uint64_t free_bytes, uint64_t floor,
			    enum disk_bound *ret_bound);
/* "64.0 MiB" (binary units), "512 bytes". */
const char *disk_size_str(uint64_t bytes, char *buf, size_t size);

/* session.c: session dir and its session.ini. */
struct session_info {
	char dir[PATH_MAX];
	char vm[64];
	uint64_t session_id;
	uint32_t ncpus, page_size;
	pid_t qemu_pid;
	char guest_clock[32];
	char guest_clock_res[256]; /* the agent's measured clock steps (hello) */
	char clock_method[8];
	uint64_t clock_samples, clock_error_bound_ns; /* clock.ini's, once written */
	char events[1024];
	uint64_t started_realtime_ns, started_mono_ns, stopped_mono_ns;
	char host_data[PATH_MAX];
	char state[16];
	char guest_release[128], guest_arch[32];
	char stop_reason[128];
	char output[PATH_MAX];
	char missing_cpus[1280]; /* CPUs that cannot stream (--allow-partial), e.g. "13,14,15" */
	char start_error[1024];  /* why start failed, one line ('stop' says it) */
	const struct start_opts *opts; /* the options the session ran with, written as opt_* */
};
int session_create(const char *vm_dir, struct session_info *s);
int session_write(const struct session_info *s);
int session_set_state(struct session_info *s, const char *state);
/* Deletes the session's reserve file (made at creation) when the disk is full. */
void session_release_reserve(const struct session_info *s);
/* Reads one key of DIR/session.ini into buf; -ENOENT when absent. */
int session_ini_get(const char *dir, const char *key, char *buf, size_t size);
/* Rewrites one key of DIR/session.ini atomically (used by stop after the merge). */
int session_ini_set(const char *dir, const char *key, const char *value);

/* spool.c: one CPU's data port read into cpuN.spool (perf-path-cpuN into perf-cpuN.spool).
 * The daemon's spools and data ports are indexed by cpu, and COLLECTOR_MAX_CPUS + cpu for perf. */
#define SPOOL_BUF (512u << 10) /* each spool's buffer: written in whole blocks */
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
int spool_arm(struct spool *s, struct event_base *base);
/* Moves what the port has into the spool and scans it (the read callback; tests call it). */
void spool_poll(struct spool *s);
void spool_discard(struct spool *s);       /* stop writing the spool; keep reading the port */
int spool_persist(struct spool *s);        /* the buffered tail into the file (finalize, each second) */
void spool_stats(const struct spool *s, struct spool_stats *ret);
void spool_rate_tick(struct spool *s, uint64_t now_ns);
double spool_rate(const struct spool *s); /* MB/s over the last few seconds */

/* kcache.c: the VM's cached guest kallsyms (VM_DIR/cache/kallsyms and kallsyms.key). */
#define KCACHE_KEY_LEN 16
/* The cached kallsyms' key, or -ENOENT. */
int kcache_key(const char *vm_dir, char key[KCACHE_KEY_LEN + 1]);
/* After META: a kallsyms that came caches it; a kallsyms_key alone that matches the cache puts
 * the cached copy into the session. *what says which; -errno when the session has none. */
int kcache_settle(const char *vm_dir, int guest_dirfd, char *what, size_t whatlen);

/* qmp.c: setup --qmp, the ports given to a running QEMU; 0 or -errno (said). */
struct qemu_config;
int setup_qmp_attach(const struct qemu_config *qc, const char *qmp_path);
/* libvirt-live.c: setup --format libvirt --live DOMAIN, with virsh; 0 or -errno (said). */
int setup_libvirt_attach(const struct qemu_config *qc, const char *domain);

/* agentctl.c: the agent-ctl-path client. */
struct agent_hello {
	uint32_t ncpus, page_size, state;
	char release[128], arch[32], clocks[512], agent_version[64];
	char clock_res[256]; /* each readable clock's measured step, "mono=4000000ns x86-tsc=38cycles" */
};
struct agentctl;
/* Its owner hears of frames and of the port going away through ops only. */
struct agentctl_ops {
	void *userdata;
	void (*msg)(void *userdata, const struct vt_msg *m); /* a whole, checked frame */
	void (*gone)(void *userdata, int err);               /* the port failed: -errno */
};
int agentctl_new(const struct agentctl_ops *ops, struct port *port, struct event_base *base, struct agentctl **ret);
void agentctl_free(struct agentctl *a);
int agentctl_send_hello(struct agentctl *a);
/* CONFIG; a NULL string or 0 leaves that attribute out (the agent keeps its value). */
int agentctl_send_config(struct agentctl *a, const char *events, const char *clock, uint32_t buffer_kb,
			 const char *tracer, const char *ftrace_filter, uint32_t flush_ms, bool agent_events,
			 const struct guest_perf_opts *perf);
/* kallsyms_key: the key of the VM's cached kallsyms, or NULL. */
int agentctl_send_meta_req(struct agentctl *a, const char *kallsyms_key);
int agentctl_send_start(struct agentctl *a, uint64_t session_id);
int agentctl_send_stop(struct agentctl *a);
/* mark: the agent writes "vt-probe ID" into the guest trace first (hold-out probes). */
int agentctl_send_probe(struct agentctl *a, uint64_t id, uint64_t host_ns, bool mark);
/* FLUSH (docs/protocol.md): 0 with *ret_frame = the frame's seq (its OK or ERROR echoes it). */
int agentctl_send_flush(struct agentctl *a, uint64_t session_id, uint64_t flush_seq, uint32_t *ret_frame);
/* BINARY_REQ: the chunk at off of the guest file path whose build-id is id. */
int agentctl_send_binary_req(struct agentctl *a, const char *path, const uint8_t *id, size_t len, uint64_t off);
/* A BINARY frame answering that request: its data and the file's size; -EBADMSG (malformed),
 * -ESTALE (another file or offset), -EMSGSIZE (sizes out of bounds). */
int agentctl_parse_binary(const struct vt_msg *m, const uint8_t *id, size_t id_len, uint64_t off,
			  const uint8_t **ret_data, size_t *ret_len, uint64_t *ret_size);
int agentctl_parse_hello(const struct vt_msg *m, struct agent_hello *ret);
/* An ERROR frame as one printable line: "MESSAGE (errno N)". */
void agentctl_error_text(const struct vt_msg *m, char *buf, size_t size);
/* A PROBE_REPLY's id, echoed host time and guest reading; -EBADMSG when one is missing. */
/* ret_mono: the guest's CLOCK_MONOTONIC beside the trace clock (0 from an older agent). */
int agentctl_parse_probe_reply(const struct vt_msg *m, uint64_t *ret_id, uint64_t *ret_host, uint64_t *ret_guest,
			       uint64_t *ret_mono);
/* Stores a META_FILE frame under guest_dir (a dirfd); validates the name; a printable copy
 * of the name goes to ret_name (for messages) in any case. */
int agentctl_store_meta(struct agentctl *a, const struct vt_msg *m, int guest_dirfd, char *ret_name,
			size_t size);
/* Also reads the per-CPU part of START's OK (error 0: streaming, -ENXIO: CPU offline). */
int agentctl_parse_stopped(const struct vt_msg *m, uint64_t session_id, struct vt_cpu_stats *stats,
			   unsigned ncpus, unsigned *ret_n);
/* PERF_STATS of START's OK or STOPPED: -ENOENT when absent (no guest perf, or an older agent). */
int agentctl_parse_perf_stats(const struct vt_msg *m, struct vt_perf_stats *stats, unsigned ncpus, unsigned *ret_n);
uint64_t agentctl_last_rx(const struct agentctl *a);
/* META_FILE frames stored this session, and their bytes. */
unsigned agentctl_meta_files(const struct agentctl *a);
uint64_t agentctl_meta_bytes(const struct agentctl *a);
/* Validates a metadata file name (docs/protocol.md); 0 or -EINVAL. */
int agentctl_meta_name_ok(const char *name);

/* hostperf.c: host `perf record` over the session window. */
struct hostperf;
/* monotonic: record with -k CLOCK_MONOTONIC (ptp; kvm without perf's TIME_CONV). */
/* control: "fifo:CTL,ACK" (perf record --control), or NULL. */
int hostperf_start(const struct start_opts *o, const char *session_dir, bool monotonic, const char *control,
		   struct hostperf **ret);
bool hostperf_ready(struct hostperf *h, int *ret_err);
/* Running and not told to stop: host.data is being recorded, its header not yet rewritten. */
bool hostperf_recording(struct hostperf *h);
int hostperf_stop(struct hostperf *h); /* SIGINT */
bool hostperf_reap(struct hostperf *h); /* true once exited */
void hostperf_kill(struct hostperf *h);
void hostperf_free(struct hostperf *h);
const char *hostperf_state(const struct hostperf *h, char *buf, size_t size);
int hostperf_exit_status(const struct hostperf *h);
/* --flight-recorder (perf --overwrite --switch-output): SIGUSR2, perf writes DATA.<timestamp>. */
int hostperf_dump(struct hostperf *h);
int hostperf_settle(struct hostperf *h, const char *dir); /* the last dump becomes DATA */

/* cmd-status.c: the status client, shared by status, snapshot and stop. */
/* The daemon's socket for --name (or the only session in run_dir); says why not. */
int status_socket(const char *run_dir, const char *name, char *buf, size_t size);
/* One request to the daemon at sock, its reply in *ret_reply (free it; NULL when none came). */
int status_request(const char *sock, const char *request, char **ret_reply);
/* The options of status, snapshot and stop (out and compress NULL for status). */
int status_parse(int argc, char **argv, const struct cmd_entry *cmd, const char **name,
		 const char **run_dir, const char **out, bool *compress);

/* ctlsock.c: the daemon's control socket RUN/VM.sock (line protocol). It calls its owner
 * through ops only (it never sees struct daemon). */
struct ctlsock;
struct bufferevent;
struct ctlsock_ops {
	void *userdata;
	/* "status": fill the reply. */
	void (*status)(void *userdata, char *buf, size_t size);
	/* "stop", "snapshot": the owner answers later with ctlsock_finish_stop(client, text). */
	void (*stop)(void *userdata, struct bufferevent *client);
	void (*snapshot)(void *userdata, struct bufferevent *client);
	/* A stop or snapshot client was answered (or went away) and freed. */
	void (*replied)(void *userdata);
};
int ctlsock_path(const char *run_dir, const char *name, char *buf, size_t size);
int ctlsock_listen(const struct ctlsock_ops *ops, struct event_base *base, const char *path, struct ctlsock **ret);
void ctlsock_free(struct ctlsock *c);
/* Client side: sends one request line, copies the reply (to "end\n") to out. */
int ctlsock_request(const char *path, const char *request, FILE *out, char *last, size_t lastsize);
/* Resolves --name (or the only session in run_dir) to a socket path. */
int ctlsock_find(const char *run_dir, const char *name, char *buf, size_t size);
/* Writes the stop reply to the waiting client, which is then freed. */
void ctlsock_finish_stop(struct bufferevent *client, const char *text);
/* The daemon's side of the control socket (daemon.c, daemon-report.c, daemon-snapshot.c). */
void daemon_status(struct daemon *d, char *buf, size_t size);
void daemon_stop_request(struct daemon *d, struct bufferevent *client);
void daemon_snapshot_request(struct daemon *d, struct bufferevent *client);
void daemon_stop_replied(struct daemon *d);
int spool_rearm(struct spool *s, struct event_base *base);

/* daemon.c */
/* Runs the daemon; notify_fd (or -1 in the foreground) receives "dir PATH", then "ok" or "fail". */
int daemon_run(const struct start_opts *o, int lock_fd, int notify_fd);
