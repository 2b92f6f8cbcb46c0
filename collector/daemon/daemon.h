/* SPDX-License-Identifier: GPL-2.0-only */
/* Private header of the daemon's files (collector/daemon/). Each calls only those before it:
 * core.c, migrate.c, stop.c, streams.c, start.c, agent.c, tick.c, daemon.c (daemon-*.c sit above
 * core.c). */
#pragma once

#define SEC 1000000000ull /* ns */

#include <event2/event.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "agentctl.h"
#include "clocksync.h"
#include "collector.h"
#include "disk.h"
#include "ports.h"
#include "proto.h"
#include "session.h"

enum phase {
	PH_HELLO, PH_RESET, PH_CONFIG, PH_META, PH_PROBES0, PH_PERF, PH_START, PH_TRACING,
	PH_PROBES1, PH_STOP, PH_PERF_STOP, PH_BINARIES, PH_STOPPED,
};

struct daemon {
	const struct start_opts *o;
	struct event_base *base;
	struct event *tick, *sigs[3];
	enum port_kind kind;
	/* data ports and spools by SPOOL_INDEX: trace-path-cpuN at N, perf-path-cpuN at MAX + N */
	struct port ctl, data[2 * COLLECTOR_MAX_CPUS];
	struct agentctl *agent;
	struct spool *spools[2 * COLLECTOR_MAX_CPUS];
	struct hostperf *perf;
	struct gbinfetch *gbin; /* at stop, with guest perf: guest binaries being fetched */
	struct ctlsock *sock;
	struct session_info s;
	struct agent_hello hello;
	int notify_fd, lock_fd, guest_dirfd;
	struct clocksync clk;
	enum phase ph;
	uint64_t deadline_ns, next_hello_ns, next_probe_ns, next_rate_ns;
	uint64_t total_ns; /* metadata, guest binaries: the phase's total bound (progress re-arms no further) */
	uint64_t early_probe_ns; /* the gap to the next early probe after start (doubles) */
	unsigned probes_left;
	uint64_t probe_id, host_started_ns;
	uint64_t holdout_id; /* the hold-out probe not answered yet (0: none) */
	bool probe_mark, holdout_due; /* the pending probe is a hold-out; one is due */
	bool probe_pending, agent_gone, agent_started, stopped_msg, started_ok, stop_begun, qemu_exited,
	     qemu_seen; /* its pid answered kill(0) once: it ran, so a later ESRCH is an exit */
	char stop_why[64];
	uint64_t stop_begun_ns; /* when the stop's reason came (a disk cut: its own time), for the stop line */
	int ctl_err; /* socket transport: why agent-ctl-path did not connect yet (-errno), or 0 */
	bool exit_on_finalize; /* stopped by a signal: no client will come for the summary */
	bool data_gone[2 * COLLECTOR_MAX_CPUS];
	/* What callbacks (spool errors, a disk cut) only recorded; daemon_deferred acts on it from
	 * the loop, once the callback has returned. */
	struct event *deferred;
	int spool_err[2 * COLLECTOR_MAX_CPUS]; /* the first -errno of each spool, 0: none */
	char deferred_cut[128];                /* a disk cut's reason still to act on */
	bool cpu_missing[2 * COLLECTOR_MAX_CPUS]; /* no stream this session: never wait for its end marker */
	struct vt_cpu_stats agent_stats[COLLECTOR_MAX_CPUS];
	unsigned n_agent_stats;
	struct vt_perf_stats perf_stats[COLLECTOR_MAX_CPUS]; /* STOPPED's PERF_STATS (--guest-perf) */
	unsigned n_perf_stats;
	uint64_t meta_refused, unexpected;
	struct bufferevent *stop_client;
	unsigned stop_replies; /* stop answers being written: the daemon exits after the last */
	int exit_code;
	unsigned snapshots; /* snapshot-N dirs made */
	struct bufferevent *snap_client; /* a snapshot being taken: answered by daemon_snapshot_finish */
	unsigned snap_probes_left;       /* its probe burst (ptp) */
	uint64_t snap_ready_ns, snap_deadline_ns; /* the burst after the flush interval; give up */
	uint64_t snap_asked_ns;          /* when the client asked */
	uint64_t snap_flush_seq;         /* the FLUSH_SEQ every CPU's flush marker must reach */
	uint32_t snap_flush_frame;       /* the FLUSH frame whose OK or ERROR is due (0: none) */
	bool snap_flush_refused;         /* the agent cannot flush (older): the flush interval it is */
	bool snap_live;                  /* the live merge is writing it (live_snapshot_poll) */
	bool snap_spools;                /* merge the spools (the live merge could not) */
	struct live *live;               /* --live-merge (daemon-live.c) */
	/* daemon-disk.c: the session's bytes at the last tick (spools, host.data, the rest), their
	 * growth over it, and the line saying which bound cut the session ("" while none did) */
	struct disk_usage disk;          /* the last tick's walk */
	struct disk_merged merged;       /* the live merge's progress; what was freed behind it */
	struct event *disk_watch;        /* host.data's size between ticks */
	uint64_t disk_total, disk_grow;
	uint64_t disk_guest;             /* guest/'s bytes once complete (UINT64_MAX: not walked yet) */
	/* The last walk found every bound far (daemon-disk.c disk_room): no host.data watch every
	 * 10 ms, no stat nor statfs per 256 KiB of spool (the walk, stats and statfs were the daemon's
	 * main fixed cost, issue 33); the growth since that walk is charged from the spools' stats and
	 * a host.data stat per tick, and the session dir walked again every DISK_FAR_TICKS ticks or
	 * once the charge reaches disk_far_slack, whichever comes first. */
	bool disk_far, disk_far_seen;    /* far now; far once (said in the log) */
	unsigned disk_ticks;             /* ticks since the last walk */
	uint64_t disk_far_proj;          /* disk_projected at the last walk */
	uint64_t disk_far_slack;         /* growth allowed before the next walk */
	bool disk_watching;              /* disk_watch is armed */
	/* The spools' bytes not yet seen by a disk check: a spool's progress checks the budget
	 * once DISK_CHECK_STEP has come, not on every read (the check stats and walks). */
	uint64_t disk_seen[2 * COLLECTOR_MAX_CPUS], disk_unchecked;
	bool disk_perf_stopped;
	char disk_cut[PATH_MAX + 512];
	uint64_t disk_cut_ns;            /* when a bound cut the session (0: none did) */
	char disk_reason[128];           /* a cut while START's OK was due: applied when it comes */
	/* start.c: START's wait follows the guest's progress, within a bound it cannot move */
	struct daemon_start_wait {
		uint64_t sent_ns, cap_ns;  /* START sent; the bound: --timeout x (3 + streams / 4) */
		uint64_t last_ns;          /* the last progress (START sent, a report, a begin marker) */
		unsigned streams, begun;   /* CPU streams with a host port; their begin markers in */
		struct agent_progress at;  /* the agent's furthest report (step 0: none yet) */
		uint64_t reports, repeats; /* PROGRESS frames; those that moved nothing */
	} sw;
	/* migrate.c: a live migration on this host (docs/migration.md) */
	struct daemon_migration {
		int inotify_fd;          /* IN_OPEN on agent-ctl-path's FIFO: a second QEMU opening it */
		struct event *opened;
		struct event *dense;     /* probes every MIGRATION_DENSE_MS while dest waits (ptp) */
		uint64_t dense_since_ns, dense_sent_ns;
		pid_t dest;              /* a second process holding the ports (a destination?), 0 none */
		uint64_t scanned_ns;     /* the last /proc scan for it */
		unsigned probes_left;    /* the probe burst on each side of a migration (ptp) */
		uint64_t burst_ns;       /* when it began */
		pid_t exe_of;            /* the QEMU whose binary exe is */
		char exe[256];           /* its /proc/PID/exe, read while it ran ("" unknown) */
		/* sockets: the destination rebinds the VM's socket names (IN_CREATE in sock/); the
		 * daemon connects to each before it runs (so the guest never sees the host side
		 * close) and moves over when the guest sends there, a source port ends, or the
		 * source exits. Index 0 agent-ctl-path, 1 + k stream k; -1 not connected. */
		int sock_fd[1 + 2 * COLLECTOR_MAX_CPUS];
		struct event *sock_ev[1 + 2 * COLLECTOR_MAX_CPUS]; /* readable: the guest runs there */
		bool switch_due;         /* a source port ended with the destination connected */
		bool look_due;           /* a name came in sock/ since the last look (sockets) */
		bool armed;              /* daemon_migration_arm ran (the fds above are set) */
	} mg;
};

#define PROBES_PER_BURST 32 /* at start, stop and snapshot: the min-RTT filter needs a few fast ones */
#define STOP_WAIT_NS ((uint64_t)d->o->timeout_s * SEC) /* bounded wait for end markers */
#define PERF_WAIT_NS (30ull * 1000000000ull)

/* ---- core.c ---- */
uint64_t daemon_timeout(const struct daemon *d);
void daemon_probe_send(struct daemon *d, bool mark);
/* Whether the session's method converts hold-out markers (--holdout-probes): ptp and kvm. */
bool daemon_holdout_method(const struct daemon *d);
void daemon_notify(struct daemon *d, const char *line);
/* Enters phase ph, with a deadline timeout_ns from now (0: none). */
void daemon_set_phase(struct daemon *d, enum phase ph, uint64_t timeout_ns);
/* A failure before tracing started: say why, undo, and let start report it. */
void daemon_fail(struct daemon *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The heartbeat probe period (--probe-interval). */
static inline uint64_t daemon_interval(const struct daemon *d)
{
	return (uint64_t)d->o->probe_interval_ms * 1000000ull;
}

/* True on the 1st, 2nd, 4th, 8th... call: hostile floods cannot fill the log. */
static inline bool log_due(uint64_t *counter)
{
	uint64_t n = ++*counter;

	return (n & (n - 1)) == 0;
}

/* ---- daemon.c ---- */
/* r from port_open(p) refused the port (a link, -ELOOP; not QEMU's socket, -EACCES): true, and
 * the sentence naming it and what to do in buf. */

/* ---- streams.c: the data ports and their spools ---- */
/* Bytes an earlier session left in a FIFO (QEMU's pipe chardev never drops them). */
void daemon_drain(struct port *p);
/* Every stream of the session (daemon_stream) opened with its spool. */
int daemon_open_data(struct daemon *d);
/* The loop's deferred event: the spool errors and a disk cut that callbacks only recorded. */
void daemon_deferred(evutil_socket_t fd, short what, void *arg);
/* Whether every stream has sent its end marker (or is gone or missing). */
bool daemon_all_ended(const struct daemon *d);

/* ---- start.c ---- */
void daemon_on_hello(struct daemon *d, const struct vt_msg *m);
/* After the metadata: the start probes (ptp), then host perf and START. */
void daemon_begin_tracing_steps(struct daemon *d);
/* The session starts when START goes out. */
void daemon_send_start(struct daemon *d);
/* Host perf record (unless --no-host or --host-data), then START once it is ready. */
void daemon_start_perf(struct daemon *d);
/* START's OK: the CPUs that cannot stream checked, tracing. */
void daemon_on_started(struct daemon *d, const struct vt_msg *m);
/* START's wait (docs/protocol.md, PROGRESS): a report past every one before re-arms it for
 * --timeout, within the bound; anything else moves nothing. */
void daemon_start_progress(struct daemon *d, const struct vt_msg *m);
/* Each tick while starting: a CPU's begin marker that came is progress too. */
void daemon_start_watch(struct daemon *d, uint64_t now);
/* The wait ran out: start fails saying slow (progress came, the bound was reached) or stuck
 * (the step last reported and since when); hint: the TCG text for a stuck guest, or "". */
void daemon_start_timed_out(struct daemon *d, uint64_t now, const char *hint);

/* ---- agent.c ---- */
/* The agent's control client on d->ctl, its frames and its end routed to the phases. */
int daemon_agent_open(struct daemon *d);

/* ---- stop.c ---- */
/* Stops the session (once; before tracing, start fails): the stop probes, then STOP. */
void daemon_stop_begin(struct daemon *d, const char *reason);
/* After the agent stopped: host perf, then the guest binaries, then finalize. */
void daemon_perf_stop(struct daemon *d);
/* The guest binaries fetched (with guest perf), then finalize. */
void daemon_binaries(struct daemon *d);
/* The fetch ended (status and why: cut or refused; NULL: finished): finalize. */
void daemon_binaries_end(struct daemon *d, const char *status, const char *why);

/* ---- migrate.c ---- */
/* Watches agent-ctl-path's FIFO for a second QEMU opening it (FIFO transport; 0 otherwise). */
int daemon_migration_arm(struct daemon *d);
void daemon_migration_free(struct daemon *d);
/* QEMU pid is running: its binary is noted (a destination must run the same). */
void daemon_migration_seen(struct daemon *d, pid_t pid);
/* QEMU pid `gone` exited: when another process holds the VM's ports, the guest migrated there;
 * the session follows it (true). False: QEMU gone. */
bool daemon_migration_follow(struct daemon *d, pid_t gone);
/* Each tick: a destination that exited (a failed or cancelled migration) is forgotten; sockets:
 * the destination's names not connected yet are tried again. */
void daemon_migration_tick(struct daemon *d);
/* Sockets: port k's source end closed (k -1: agent-ctl-path): true when the destination is
 * connected (the switch to it is done from the loop: daemon_migration_due); false: the port is
 * gone. */
bool daemon_migration_port_ended(struct daemon *d, int k);
/* From the loop: the switch a port's end asked for. */
void daemon_migration_due(struct daemon *d);
/* A probe reply during a migration's burst: the next probe sent; true when it was the burst's. */
bool daemon_migration_probe_reply(struct daemon *d);

/* ---- tick.c ---- */
void daemon_tick(evutil_socket_t fd, short what, void *arg);
void daemon_signal(evutil_socket_t sig, short what, void *arg);

/* One line to `start` waiting in the foreground: "dir PATH", then "ok" or "fail". */

/* Whether stream k (SPOOL_INDEX) exists in this session: every CPU's trace-path, and its
 * perf-path with --guest-perf. */
static inline bool daemon_stream(const struct daemon *d, unsigned k)
{
	return k % COLLECTOR_MAX_CPUS < d->s.ncpus && (k < COLLECTOR_MAX_CPUS || d->o->perf.events);
}
/* "trace-path-cpu3" or "perf-path-cpu3". */
static inline const char *daemon_stream_port(unsigned k)
{
	return k < COLLECTOR_MAX_CPUS ? "trace-path-cpu" : "perf-path-cpu";
}

/* The daemon's side of the control socket (ctlsock.c's ops, set in daemon.c): status
 * (daemon-report.c), stop (stop.c), snapshot (daemon-snapshot.c). */
struct bufferevent;
void daemon_status(struct daemon *d, char *buf, size_t size);
void daemon_stop_request(struct daemon *d, struct bufferevent *client);
void daemon_snapshot_request(struct daemon *d, struct bufferevent *client);
void daemon_stop_replied(struct daemon *d);

/* Human names of the phases (status, logs). */
extern const char *const daemon_phase_names[];

/* ---- daemon-clock.c ---- */
/* From the agent's hello: d->s.clock_method and guest_clock (and perf-clock.samples opened for
 * guest perf beside another trace clock). A choice the user's options make impossible: -errno
 * and why says so. */
int daemon_choose_clock(struct daemon *d, char *why, size_t len);

/* ---- daemon-snapshot.c ---- */
/* Prepares SESSION/snapshot-N and answers d->snap_client: the dir, and where its host data
 * comes from. */
void daemon_snapshot_finish(struct daemon *d);
/* The agent's OK or ERROR to the snapshot's FLUSH. */
void daemon_snapshot_flush_answer(struct daemon *d, bool ok, const char *err);
/* Each tick while a snapshot is being taken. */
void daemon_snapshot_tick(struct daemon *d, uint64_t now);

/* ---- daemon-live.c: --live-merge ---- */
struct live;
/* Before host perf starts: its control fifos; *ret_control is perf's --control value. */
int live_prepare(struct daemon *d, const char **ret_control);
/* Each tick while tracing: starts the follower once the spools have begun, FLUSH and ping. */
void live_tick(struct daemon *d, uint64_t now);
/* snapshot with the follower running: asks it for SESSION/snapshot-N.data, everything before
 * the request (false: no follower to ask). */
bool live_snapshot_begin(struct daemon *d, unsigned n);
/* 1: written (path), -1: the follower could not, or not in time (why; the caller merges the
 * spools instead), 0: not yet. */
int live_snapshot_poll(struct daemon *d, uint64_t now, char *path, size_t len, char *why, size_t wlen);
/* A probe's times are in clock.samples: "clock" to the follower. */
void live_clock(struct daemon *d);
/* The agent's answer to a live FLUSH (true: it was one). */
bool live_flush_answer(struct daemon *d, uint32_t frame, bool ok, const char *err);
/* At finalize: "end" to the follower, its exit awaited, session.ini live_merge set. */
void live_end(struct daemon *d);
void live_free(struct live *l);
/* status: the follower's state and how much it has written. */
void live_status(const struct daemon *d, FILE *f);

/* Stops writing every spool (the ports are still read). */
void daemon_discard_all(struct daemon *d);
/* A disk bound reached: host perf stopped now, the spools discard, the session stops (a guest
 * binary fetch is abandoned; before tracing, start fails). */
void daemon_disk_stop(struct daemon *d, const char *reason);
/* core.c: runs daemon_deferred (streams.c) from the loop once the current callback returned. */
void daemon_defer(struct daemon *d);

/* ---- daemon-disk.c: start --max-size, --min-free ---- */
/* After each spool write: the limit, against the last walk's other files. */
void daemon_disk_progress(struct daemon *d);
/* The watch of host.data between ticks (freed with the daemon). */
int daemon_disk_arm(struct daemon *d);
/* Each tick: the session dir walked, the limit and the free-space floors checked. */
void daemon_disk_tick(struct daemon *d);
/* At finalize: the session's bytes once everything is written. */
void daemon_disk_final(struct daemon *d);
/* The summary's "disk:" line, and the line of the bound that cut the session. */
void daemon_disk_summary(const struct daemon *d, FILE *f);

/* ---- daemon-report.c ---- */
/* SESSION/agent-stats.ini from the STOPPED frame's per-CPU stats. */
void daemon_report_agent_stats(const struct daemon *d);
/* The summary printed by stop (and logged): the short one (a dozen lines, each kind of problem
 * on one line), DAEMON_SUMMARY_DETAILS, then the full one (per CPU pages, losses, clock, host
 * perf). */
void daemon_report_summary(const struct daemon *d, FILE *f);
