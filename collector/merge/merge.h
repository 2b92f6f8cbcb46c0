/* SPDX-License-Identifier: GPL-2.0-only */
/* trace-collector merge: session dir (guest pages and perf records + host perf.data) → one
 * perf.data. merge.c drives the k-way merge (follow.c while the session traces) over the host
 * recording (host.c) and the guest's streams behind one interface (source.c; a vCPU's ftrace
 * pages: guest.c; its perf records: gperf.c); tdata.c, out.c and dir.c write. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "clock_apply.h"
#include "clock_kvm.h"
#include "elf_notes.h"
#include "ftrace_page.h"
#include "hash.h"
#include "gbin.h"
#include "marker.h"
#include "perf_events.h"
#include "perf_file.h"
#include "tep_format.h"

struct perf_reader;
struct perf_writer;

#define MERGE_MAX_CPUS 1024
#define MERGE_MAX_GUESTS 16 /* VMs in one merge: the session dir's and up to 15 --guest dirs */
#define MERGE_MAX_EVENTS 4096
#define MERGE_MAX_TASKS 65536
#define MERGE_GUEST_SAMPLE_TYPE                                                              \
	(PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |       \
	 PERF_SAMPLE_PERIOD | PERF_SAMPLE_RAW)

struct merge_options {
	const char *session_dir;
	const char *host_data; /* NULL: from session.ini */
	const char *output;
	int zstd_level;        /* 0 = uncompressed */
	bool snapshot;         /* a snapshot dir: spools cut while tracing (no end markers), the
				* host only from host_data */
	uint64_t host_prefix;  /* host_data is still being recorded: only its first host_prefix
				* bytes are complete (perf acked a ping after them); 0: whole */
	bool follow;           /* follow the session while it traces, the daemon's words on
				* follow_fd (follow.c) */
	int follow_fd;
	uint64_t max_bytes;    /* the output may take this many bytes at most (0: no limit; stop's
				* disk budget): past it the merge fails with -EFBIG, nothing kept */
	bool trust_binaries;   /* --trust-guest-binaries: guest binaries into $HOME/.debug */
	/* merge --guest DIR...: other VMs' session dirs whose guests join the file (their own
	 * host_data ignored: session_dir's host recording covers them all); not with follow */
	const char *const *guest_dirs;
	size_t n_guest_dirs;
	/* merge --guest-as-host: the guest's events alone, as a host's (its own systems' names,
	 * its vCPUs as the file's CPUs, no guest machine), for perf sched and timechart; no host
	 * recording, guest perf or exit samples; not with --guest or --follow */
	bool guest_as_host;
};

/* Following: a live clock fit is used once its probes span this much at least. */
#define MERGE_LIVE_MIN_SPAN_NS 5000000000ull
/* Slow probes only for this long past the newest fitted one: the live horizon goes on through
 * those whose round trip is under MERGE_LIVE_EXTRA_MAX_NS, the bound stated growing by it. */
#define MERGE_LIVE_LAG_NS 1000000000ull
#define MERGE_LIVE_EXTRA_MAX_NS CLOCKFIT_LIVE_RTT_MAX_NS

/* What was dropped or lost, by kind (the summary prints each non-zero one). */
struct merge_losses {
	uint64_t damaged_read, damaged_marker, damaged_header; /* pages dropped, by reason */
	uint64_t bad_events, unknown_event_ids, backwards_ts, oversized_events;
	uint64_t ring_missed_pages, ring_lost_events, transport_missing_pages;
	uint64_t ring_lost_unstored; /* overrun the pages did not count (end marker's figure) */
	uint64_t bytes_read;         /* spool bytes read, every pass (not a loss: the cost) */
	uint64_t dropped_formats, dropped_cpus, stale_bytes;
	uint64_t fr_dropped_pages;   /* --flight-recorder: the oldest pages, freed by the daemon */
	uint64_t released_pages;     /* freed by the daemon near a disk bound once the live merge
				      * had written them (cpuN.released): in the live output only */
	uint64_t outside_window; /* converted times clamped into the session window */
	uint64_t no_end_cpus;    /* spools without their end marker: shortfall unknown */
	uint64_t tasks_not_kept; /* guest tasks over the task table's bound: not named */
};

#define GSYM_MAX 4 /* pointers named per event */

/* One guest event format, remapped. */
struct guest_event {
	struct tep_format fmt;
	char sys[TEP_FORMAT_MAX_NAME];
	char *text; /* format text with the new ID line */
	size_t text_len;
	uint32_t new_id;
	uint64_t count;
	uint16_t pid_off; /* common_pid's offset (checked at load: 4 bytes within the first 64) */
	/* task-name fields, when the event has them */
	const struct tep_format_field *comm[2], *pid[2];
	/* %ps-style pointers named in the record (gsym.c): a "<field>_sym" string each */
	uint8_t n_sym;
	uint16_t sym_base; /* where their __data_loc words start: after the fixed fields */
	struct {
		uint16_t off; /* the pointer field's offset */
		bool with_off; /* %pS: name+0xoff */
	} sym[GSYM_MAX];
};

struct guest_task {
	int32_t pid, tgid;
	char comm[16]; /* empty: name unknown */
};

/* One vCPU's spool, walked page by page. */
struct guest_cpu {
	uint32_t cpu;
	int fd;
	int direct_fd;          /* following: the spool with O_DIRECT (-1: none) */
	uint64_t data_off, data_end; /* first ring page; end of whole pages before the end marker */
	uint64_t pos;
	bool have_end;
	uint64_t pages_sent, pages_read, pages_bad;
	uint64_t pages_dropped; /* the flight recorder's hole before the first page kept */
	uint64_t flush_markers; /* FLUSH answers between the pages (skipped) */
	bool blocked;           /* following: peek found no page yet, the spool is not at its end */
	uint64_t bound_raw;     /* following: the newest flush marker's guest time */
	uint64_t stat_gen;      /* following: follow_gen when the spool's size was last read */
	uint64_t end_overrun;       /* the ring's overrun in the end marker */
	uint64_t ring_lost_written; /* ring losses reported so far (LOST_SAMPLES) */
	uint8_t *page;          /* the begin marker search's page */
	uint8_t *rbuf;          /* whole pages from rb_off: read GUEST_RBUF at a time */
	uint64_t rb_off;
	size_t rb_len;
	bool in_page;
	struct ftrace_page it;
	uint64_t last_raw_ts, last_ts;
	bool head_valid;  /* head holds the next event */
	struct ftrace_event head;
	uint64_t head_ts; /* host time */
	uint64_t pending_lost; /* missed events to report before head */
	uint64_t lost_ts;
	/* The head's (or the pending loss's) time as converted: from conv_raw by fit conv_gen,
	 * with last_ts conv_prev before it. Following, a refit converts it again before it is
	 * written: a time converted past the old fit's newest probe was extrapolated. */
	uint64_t conv_raw, conv_prev, conv_gen;
	bool final_lost_done;
	uint64_t events;
};

#define MERGE_MAX_MIGRATIONS 16 /* as the daemon records at most */

struct merge_guest {
	bool present;
	bool scan_only;       /* set before merge_guest_load: records only (the daemon's binaries
			       * scan), no clock fit and nothing written into the session */
	bool session_read;    /* session.ini was valid */
	bool follow;          /* set before merge_guest_load: the session is still tracing */
	bool input_only;      /* set before merge_guest_load: the dir is another user's (vm.c):
			       * nothing is written into it (clock.ini) */
	const char *dir;      /* the session dir, as named (messages) */
	int dfd;              /* the session dir, opened once: every input relative to it (input.c) */
	bool dfd_open;
	bool followed;        /* it was: the spools may have grown since they were opened */
	uint64_t follow_gen;  /* following: +1 at each wait for more data (spool sizes read again) */
	uint64_t live_fit_until; /* following: host time of the newest probe fitted (guest times
				  * later than it would be extrapolated: they wait for the next) */
	uint64_t live_fitted_until; /* following: the fit's own newest probe (a step after it is not
				     * in its segments yet: migration.c places a blackout only before it) */
	uint64_t live_extra_ns; /* following: added to the fit's bound up to live_fit_until */
	uint64_t clock_gen;   /* +1 at each new fit (clock or perf clock): heads converted by an
			       * older one are converted again (merge_guest_peek, merge_gperf_peek) */
	char vm_name[64];     /* session.ini vm, may be empty */
	char host_data[4096]; /* session.ini host_data, may be empty */
	char missing_cpus[1280]; /* session.ini: CPUs not traced (start --allow-partial) */
	uint32_t ncpus, page_size;
	uint64_t session_id, machine_pid;
	bool machine_pid_stand_in;
	/* live migrations on this host the session followed (session.ini migration_N): the QEMU
	 * pid the guest moved to at each, by time; their vCPU threads are the guest's too */
	struct merge_migration {
		uint64_t mono_ns;
		uint32_t from, to;
	} mig[MERGE_MAX_MIGRATIONS];
	uint32_t nmig;
	struct ftrace_page_layout layout;
	char *header_page, *header_event;
	size_t hp_len, he_len;
	size_t n_events;
	struct guest_event *events;
	int32_t *by_id; /* guest id → index in events, -1 */
	struct guest_cpu *cpus;
	size_t n_tasks;
	struct guest_task *tasks; /* MERGE_MAX_TASKS, the first n_tasks in the order first seen */
	struct hash task_index;   /* pid → index in tasks (pids are the guest's: keyed, bounded) */
	struct clock_map clock;
	struct clock_kvm *kvm;     /* method kvm: per-vCPU TSC map (clock.ini + kvm.samples) */
	bool clock_aligned;
	bool clock_recovered;      /* fitted here from clock.samples; clock.ini written */
	char clock_why[160];       /* why unaligned, or what the recovery did */
	uint64_t started_ns, stopped_ns; /* session.ini host CLOCK_MONOTONIC; 0 = absent */
	uint64_t window_lo, window_hi;   /* guest times are clamped into this (0, UINT64_MAX: none) */
	uint8_t build_id[ELF_NOTES_BUILD_ID_MAX];
	size_t build_id_len;       /* 0: none (notes_why says why) */
	char notes_why[96];
	uint64_t id_base; /* sample id of (event e, vcpu c) = id_base + e * ncpus + c; guest perf
			   * events follow the tracepoints: e = n_events + perf event index */
	char perf_events[512]; /* session.ini guest_perf: "" = no guest perf */
	char guest_clock[32];  /* session.ini guest_clock (the trace clock) */
	struct clock_map perf_clock; /* guest perf's mono → host, when the trace clock is not mono */
	bool perf_clock_on;
	bool perf_clock_needed;  /* guest perf beside a trace clock other than mono: its own fit */
	uint64_t perf_fit_until; /* host time of the newest probe fitted in the perf clock's fit */
	uint64_t perf_live_extra_ns; /* added to its bound up to perf_fit_until (live_extra_ns) */
	char perf_clock_why[160];
	uint32_t perf_freq;
	struct gsym_table *gsym; /* guest/kallsyms, read once (merge_gsym_load) */
	size_t gsym_events;      /* events whose format names pointers */
	struct merge_losses loss;
};

/* input.c: a session dir's file name (beneath dfd, no link followed) opened or read only as a
 * regular file: a FIFO, device, link or a name outside is refused at once and said (log_warn,
 * naming DIR/NAME); absence (-ENOENT) is left to the caller. The fd, 0, or -errno. */
int merge_input_open(int dfd, const char *dir, const char *name, int flags);
int merge_input_read(int dfd, const char *dir, const char *name, size_t max, char **ret_buf, size_t *ret_len);
/* A descriptor of g's session dir (a dup of the one merge_guest_load opened; else dir opened). */
int merge_input_dir(const struct merge_guest *g, const char *dir);

/* Loads session.ini, the guest metadata and opens the spools; a guest that cannot be used at all
 * leaves present=false with *why set. Damaged parts are dropped and counted. */
int merge_guest_load(struct merge_guest *g, const char *dir, char *why, size_t whylen);
/* Assigns new tracepoint ids not in used[] (bitmap of 65536) and rewrites the format texts. */
int merge_guest_remap(struct merge_guest *g, const uint8_t *used);
/* Walks all pages once: validates, learns task names, counts events. */
/* Fills cpu->head (or pending loss); false when the cpu is exhausted. */
bool merge_guest_peek(struct merge_guest *g, struct guest_cpu *c);
void merge_guest_free(struct merge_guest *g);
/* Following: session.ini read again for migrations the daemon recorded since (appended to the
 * chain g has); how many are new. */
uint32_t merge_guest_reload_migrations(struct merge_guest *g, int dfd);
/* Following, after peek found c blocked: the earliest host time its next event can have. */
uint64_t merge_guest_bound(struct merge_guest *g, struct guest_cpu *c);

/* gsym.c: guest/kallsyms read once for what the merge names with it: guest function pointers
 * in guest tracepoints (text symbols), and the guest kernel's maps for guest perf (_text and
 * each module's extent, page-rounded over all its lines). */
struct gsym_module {
	char name[64]; /* "[virtio_console]" */
	uint64_t start, end;
};
#define GSYM_MODULES_MAX 4096

struct gsym_table {
	char *text;      /* guest/kallsyms, names cut in place */
	uint64_t *addr;  /* text symbols, sorted */
	const char **name;
	size_t n;
	uint64_t ktext;  /* _text, 0 when absent */
	struct gsym_module *mods; /* by address, disjoint */
	size_t n_mods;
};
/* Rewrites an event's format so that its %ps pointers print a "<field>_sym" string (1), or
 * leaves it (0: no such pointer, or a layout that has no room for the strings). */
int merge_gsym_format(struct guest_event *e, char **text, size_t *len);
/* Reads dir/guest/kallsyms into g->gsym (left NULL when it is missing). */
void merge_gsym_load(struct merge_guest *g, const char *dir);
void merge_gsym_free(struct merge_guest *g);
/* The record of such an event with its names appended (out: at least len + 4 * GSYM_MAX +
 * GSYM_MAX * 128 bytes); its new length. */
size_t merge_gsym_record(const struct merge_guest *g, const struct guest_event *e, const uint8_t *data, size_t len,
			 uint8_t *out);

/* meta.c: the guest's task names and tgids, kernel build-id, and the clock (with the
 * recovery fit from clock.samples and the session window). Missing parts are noted, not fatal. */
void merge_meta_tasks(struct merge_guest *g, int dfd);
void merge_meta_tasks_free(struct merge_guest *g);
/* Records a task name (first name seen wins; bounded; cleaned to printable). */
void merge_meta_task_learn(struct merge_guest *g, int32_t pid, const char *comm, size_t len);
/* A task named or renamed by an event (meta.c says when); NULL when nothing changed. */
const struct guest_task *merge_meta_task_see(struct merge_guest *g, int32_t pid, const char *comm, size_t len,
					     bool *ret_new);
/* The thread group of a guest task (pid itself when unknown). */
int32_t merge_meta_tgid(const struct merge_guest *g, int32_t pid);
void merge_meta_notes(struct merge_guest *g, int dfd);
void merge_meta_clock(struct merge_guest *g, int dfd);
/* Following a session: a fit of clock.samples as they are now replaces the clock (clock.ini is
 * neither read nor written: the daemon writes it at stop). 0, or -errno with the fit kept. */
int merge_meta_clock_live(struct merge_guest *g, int dfd);
/* Guest perf's own clock map from perf-clock.samples (the trace clock is not mono); on failure
 * perf_clock_why says why. */
void merge_meta_perf_clock(struct merge_guest *g, int dfd);
/* A guest perf record's time → host time: its own map when there is one, else merge_meta_time. */
uint64_t merge_meta_perf_time(struct merge_guest *g, uint32_t vcpu, uint64_t raw);
/* Guest raw time → host time, clamped into the session window (counted in loss). */
uint64_t merge_meta_time(struct merge_guest *g, uint32_t vcpu, uint64_t raw);
/* The same for a following merge's bound (a flush marker's time: not a record, not counted);
 * perf: with guest perf's map. */
uint64_t merge_meta_bound_time(struct merge_guest *g, uint32_t vcpu, uint64_t raw, bool perf);

/* vCPU → host CPU, from the host recording: QEMU's "CPU n/KVM" threads (COMM records of
 * qemu_pid) and host sched:sched_switch samples of them. Bounded: per-vCPU state only. */
#define MERGE_VCPU_OTHERS 256

struct vcpu_tid {
	int32_t tid;
	uint32_t vcpu;
};

struct merge_vcpu {
	uint32_t n;                /* guest vCPUs */
	int32_t *tid;              /* vCPU → host tid of its thread, -1 unknown */
	int32_t *cpu;              /* vCPU → host CPU it is (or was last) on, -1 unknown */
	uint64_t *first_ts;        /* pre-pass: time of its first host sched_switch */
	struct vcpu_tid *by_tid;   /* sorted by tid */
	size_t n_tids, cap_tids;
	/* vCPU threads of other QEMUs (pid, tid, vCPU), the latest MERGE_VCPU_OTHERS: a QEMU the
	 * guest migrates to later (a live merge learns of it late) is adopted from them */
	struct vcpu_other {
		int32_t pid, tid;
		uint32_t vcpu;
	} others[MERGE_VCPU_OTHERS];
	size_t n_others;
	uint32_t named;            /* vCPUs with a named thread */
	int sw_attr;               /* host attr of sched:sched_switch, -1 */
	uint32_t prev_pid_off, next_pid_off;
	uint64_t switches;         /* sched_switch samples involving vCPU threads (main pass) */
	uint64_t fallback_samples; /* guest records that got the vCPU number */
	char why[200];             /* non-empty: the mapping is off, and why */
};

struct tracing_data;
struct merge_host;

/* Sets up the mapping: finds the sched_switch attr and its fields in the host's tracing data,
 * then reads the host recording (open as host_fd, read through a dup) once for vCPU thread names and first CPUs. On any
 * gap v->why says why guest samples get their vCPU number instead. Only -ENOMEM is an error. */
int merge_vcpu_init(struct merge_vcpu *v, const struct merge_guest *g, const struct merge_host *h,
		    const struct tracing_data *td, int host_fd);
/* Follows one timed host record (written in time order). */
void merge_vcpu_host(struct merge_vcpu *v, const struct merge_host *h, const struct perf_event_header *rec);
/* A host COMM record as it is written: a vCPU thread of the guest's QEMU (one started since the
 * pre-pass) is learnt, another QEMU's kept for merge_vcpu_adopt. */
void merge_vcpu_comm(struct merge_vcpu *v, const struct merge_guest *g, const struct perf_event_header *rec);
/* The guest migrated to QEMU pid (g->mig has it now): its vCPU threads seen so far are the
 * guest's. 0 or -ENOMEM. */
int merge_vcpu_adopt(struct merge_vcpu *v, const struct merge_guest *g, int32_t pid);
/* Host CPU of vcpu at the current time; the vCPU number when unknown (counted). */
uint32_t merge_vcpu_cpu(struct merge_vcpu *v, uint32_t vcpu);
/* The vCPU whose thread is host tid, -1 when none of this VM's. */
long merge_vcpu_of_tid(const struct merge_vcpu *v, int32_t tid);
/* Host tid of vcpu's thread, -1 when unknown. */
int32_t merge_vcpu_tid(const struct merge_vcpu *v, uint32_t vcpu);
void merge_vcpu_free(struct merge_vcpu *v);

/* Host recording, streamed with round buffering. */
struct host_rec {
	uint64_t ts, seq;
	uint16_t len;
	uint8_t data[] __attribute__((aligned(8)));
};

struct merge_host {
	bool present;
	struct perf_reader *r;
	size_t n_attrs;
	struct perf_attr_ids *attrs; /* copies, IDENTIFIER added */
	bool patch_identifier;       /* single attr without IDENTIFIER: records get the id */
	uint64_t patch_id;
	uint64_t max_id;
	/* round buffering */
	struct host_rec **q;
	size_t qn, qcap, qhead, qready; /* q[qhead, qready) are sorted and safe to write */
	size_t qsorted;                 /* q[0, qsorted) is in order (queue_release) */
	struct host_rec **qtmp;         /* queue_release's merge, qcap entries */
	struct host_rec *imm;           /* an immediate record waiting to be taken */
	uint64_t seq, max_ts_prev_round, max_ts;
	bool eof;
	uint64_t samples, records, out_of_order;
	uint64_t lost, lost_records; /* PERF_RECORD_LOST of host perf record: its buffer overflowed */
	uint64_t stale_build_ids;    /* MMAP2 records whose stale build-id flag was cleared (host.c) */
	bool thread_map, cpu_map;    /* seen: perf 6.1's --switch-output files repeat them, and perf
				      * then warns "Extra thread map event": the repeats are dropped */
	uint64_t *samples_by_attr;
	/* follow (merge --follow): perf record still writes the file */
	bool follow;
	bool prefix; /* a snapshot of a file perf still writes: its horizon is its end */
	uint64_t horizon_size, horizon_ts; /* every record before horizon_ts is in the first
					    * horizon_size bytes (the daemon's word, after a ping) */
	uint64_t bound;                    /* peek returned 2: no later record is before this */
	uint64_t bound_limit, bound_seq;   /* the release that returned 2: redone only when a record came or the limit moved */
	struct gbin_host ids;              /* its build-ids, which no guest binary may take (gbinhost.c) */
	struct host_rec *pool;             /* released small records, for the next ones (a list) */
	size_t pooled;
	char err[256];
};

/* The host recording open as fd (the caller's: the reader reads a dup of it). */
int merge_host_open(struct merge_host *h, int fd, char *err, size_t errlen);
/* A record peek gave, written and taken: freed, or kept for the next one (no malloc per record). */
void merge_host_release(struct merge_host *h, struct host_rec *q);
/* The next host record to write: 1 with *ret and *ret_immediate (user or untimed records,
 * written as soon as read) or a timed record that no later host record can precede;
 * 0 when the recording is exhausted; negative on a damaged file (h->err). */
int merge_host_peek(struct merge_host *h, struct host_rec **ret, bool *ret_immediate);
/* Follow mode: the file perf record is writing (its header from the start). peek then
 * returns 2 when no record can be written yet, with h->bound the earliest time a later one
 * can have; merge_host_horizon raises what may be read (size) and what is known complete (ts);
 * merge_host_finish reads perf's final header once perf has exited. */
int merge_host_open_follow(struct merge_host *h, int fd, char *err, size_t errlen);
/* A file perf still writes, read up to its first size bytes (a snapshot's). */
int merge_host_open_prefix(struct merge_host *h, int fd, uint64_t size, char *err, size_t errlen);
void merge_host_horizon(struct merge_host *h, uint64_t size, uint64_t ts);
int merge_host_finish(struct merge_host *h);
/* After the last record: completes h->ids (the feature, the files' build-ids). */
void merge_host_build_ids(struct merge_host *h);
/* Consumes the record peek returned (the caller owns it and frees it). */
void merge_host_take(struct merge_host *h);
void merge_host_free(struct merge_host *h);

/* gperf.c: the guest perf streams (perf-cpuN.spool), one record at a time per vCPU. */
/* Offsets of the fields the conversion rewrites in a record; 0 = none. */
struct gperf_layout {
	uint16_t id, time, cpu;   /* the sample's, or the sample_id trailer's */
	uint16_t id2, id3, time2; /* LOST/THROTTLE inner ids, FORK/EXIT/THROTTLE inner time */
};

struct gperf_cpu {
	uint32_t cpu;
	int fd;
	bool done, ended;
	uint8_t *buf;                 /* the spool from file_off, len bytes, next record at off */
	size_t cap, len, off;
	uint64_t file_off;
	uint32_t nr_ids;
	uint64_t ids[VT_PERF_MAX_EVENTS]; /* the begin marker's: index = event */
	struct vt_perf_stats end;     /* the end marker's */
	uint8_t *rec;                 /* the head record, being converted */
	bool head_valid;
	uint32_t head_ev;
	uint64_t head_ts, last_ts;
	uint64_t head_raw;            /* the head record's time as the guest stamped it */
	uint64_t conv_prev, conv_gen; /* last_ts before the head's conversion, by fit clock_gen */
	int head_rank;                /* merge_gperf_rank's answer for this head; -1 not asked yet */
	struct gperf_layout lay;
	uint64_t stale, skipped, bytes, samples;
	uint64_t last_raw;      /* the newest record's time as the guest stamped it */
	bool blocked;           /* following: no whole record yet, the stream is not at its end */
	uint64_t bound_raw;     /* following: the newest perf flush marker's guest time */
	uint64_t eof_gen;       /* following: follow_gen when the spool's end was last met */
	uint64_t flush_markers; /* FLUSH answers between the records (skipped) */
	/* --flight-recorder: perf-cpuN.side read first (in_side), then the spool from resume_off */
	int side_fd;
	bool in_side;
	uint64_t resume_off, fr_bytes, side_bytes; /* record bytes freed from the spool; of them, kept aside */
};

struct merge_gperf {
	bool present;
	const char *why; /* not merged, and why */
	size_t n_events;
	struct perf_event_spec ev[VT_PERF_MAX_EVENTS];
	uint32_t ncpus_total, streams, dropped_cpus, no_end_cpus;
	struct gperf_cpu *cpus;
	uint64_t records, samples, lost_records, lost, bad_records, unknown_ids, reordered;
	/* --flight-recorder (perf-cpuN.side): records and samples of the oldest part freed, the task
	 * records of it kept aside, those the daemon's table had no room for, unusable side files */
	uint64_t fr_records, fr_samples, fr_side_records, fr_not_kept, fr_side_bad;
	uint64_t ktext; /* guest kernel _text (guest/kallsyms), 0 when unknown */
};

/* Opens every vCPU's perf spool of a session that asked for guest perf (session.ini guest_perf);
 * a session without it leaves gp->present false. Only -ENOMEM is an error. */
int merge_gperf_load(struct merge_gperf *gp, struct merge_guest *g, const char *dir);
/* Fills c's head with the next valid record; false when the stream is exhausted (or, following,
 * c->blocked: no whole record yet). */
bool merge_gperf_peek(struct merge_gperf *gp, struct merge_guest *g, struct gperf_cpu *c);
/* Following, for a blocked stream: no later record of it can be earlier than this host time
 * (its newest perf flush marker, or its last record). */
uint64_t merge_gperf_bound(struct merge_guest *g, const struct gperf_cpu *c);
/* Order among records of one time from different CPUs: 0 a FORK is among this CPU's records of
 * the head's time (from the head on), 1 otherwise, 2 the head is an EXIT. */
unsigned merge_gperf_rank(struct merge_guest *g, struct gperf_cpu *c);
void merge_gperf_summary(const struct merge_gperf *gp, const struct merge_guest *g);
void merge_gperf_free(struct merge_gperf *gp);

/* Runs a whole merge and prints its summary; 0 or -errno (already logged). */
/* 0, 1 when the output is written but the guest clock could not be aligned, or -errno. */
/* --flight-recorder: the newest host.data.<timestamp> dump in dir, or -ENOENT (merge/dir.c). */
int merge_newest_host_dump(const char *dir, char *buf, size_t len);
int merge_run(const struct merge_options *o);
