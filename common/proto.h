/* SPDX-License-Identifier: GPL-2.0-only */
/* Control protocol on agent-ctl-path: frames, attributes, stream reader (docs/protocol.md). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define VT_PROTO_MAGIC 0x31435456u /* "VTC1" as little-endian bytes */
#define VT_PROTO_VERSION 1
#define VT_PROTO_HDR_SIZE 16
#define VT_PROTO_MAX_PAYLOAD (16u << 20)
#define VT_BINARY_CHUNK (4u << 20)      /* FILE_DATA bytes per BINARY frame */
#define VT_BINARY_MAX (256ull << 20)    /* the largest guest binary sent */
#define VT_PROTO_MAX_STR 4096 /* any string attribute except file data */

/* Frame header, little-endian on the wire. */
struct vt_frame_hdr {
	uint32_t magic;
	uint16_t version;
	uint16_t type;
	uint32_t seq; /* chosen by the requester, echoed in every reply frame */
	uint32_t len; /* payload bytes that follow */
};
_Static_assert(sizeof(struct vt_frame_hdr) == VT_PROTO_HDR_SIZE, "frame header is 16 bytes");

enum vt_msg_type {
	VT_MSG_ERROR = 1,      /* A_ERRNO, A_MESSAGE */
	VT_MSG_OK = 2,         /* (reply to config/start) A_STATE */
	VT_MSG_HELLO = 3,      /* host: A_VERSION; agent reply: see docs/protocol.md */
	VT_MSG_CONFIG = 4,     /* A_EVENTS, A_CLOCK, A_BUFFER_KB, A_TRACER, A_FTRACE_FILTER (each optional) */
	VT_MSG_META_REQ = 5,   /* -> n x META_FILE, then META_END */
	VT_MSG_META_FILE = 6,  /* A_FILE_NAME, A_FILE_DATA */
	VT_MSG_META_END = 7,   /* A_COUNT */
	VT_MSG_START = 8,      /* A_SESSION -> OK or ERROR */
	VT_MSG_STOP = 9,       /* -> STOPPED */
	VT_MSG_STOPPED = 10,   /* A_SESSION, A_CPU_STATS */
	VT_MSG_PROBE = 11,     /* A_PROBE_ID, A_HOST_TIME, A_MARK */
	VT_MSG_PROBE_REPLY = 12, /* A_PROBE_ID, A_HOST_TIME, A_GUEST_TIME, A_CLOCK */
	VT_MSG_BINARY_REQ = 13, /* A_FILE_NAME (guest path), A_BUILD_ID, A_FILE_OFFSET -> BINARY or ERROR */
	VT_MSG_BINARY = 14,     /* A_BUILD_ID, A_FILE_SIZE, A_FILE_OFFSET, A_FILE_DATA (<= VT_BINARY_CHUNK) */
	VT_MSG_FLUSH = 15,      /* A_SESSION, A_FLUSH_SEQ -> OK (each CPU then sends a flush marker) or ERROR */
	VT_MSG_PROGRESS = 16,   /* agent, while a START with A_WANT_PROGRESS runs: A_STEP, A_DONE, A_TOTAL */
	VT_MSG_TYPE_MAX,
};

enum vt_attr_tag {
	VT_A_VERSION = 1,       /* u32 protocol version */
	VT_A_AGENT_VERSION = 2, /* str */
	VT_A_NCPUS = 3,         /* u32 */
	VT_A_PAGE_SIZE = 4,     /* u32 ring sub-buffer size */
	VT_A_RELEASE = 5,       /* str uname -r */
	VT_A_ARCH = 6,          /* str uname -m */
	VT_A_CLOCKS = 7,        /* str trace_clock contents, e.g. "local [global] mono" */
	VT_A_STATE = 8,         /* u32 enum vt_agent_state */
	VT_A_EVENTS = 9,        /* str "sys:event,sys:*" */
	VT_A_CLOCK = 10,        /* str trace clock name */
	VT_A_BUFFER_KB = 11,    /* u32 per-CPU ring size */
	VT_A_SESSION = 12,      /* u64 */
	VT_A_FILE_NAME = 13,    /* str relative name, see docs/protocol.md */
	VT_A_FILE_DATA = 14,    /* bytes */
	VT_A_COUNT = 15,        /* u32 */
	VT_A_ERRNO = 16,        /* u32 positive errno */
	VT_A_MESSAGE = 17,      /* str */
	VT_A_CPU_STATS = 18,    /* array of struct vt_cpu_stats */
	VT_A_PROBE_ID = 19,     /* u64 */
	VT_A_HOST_TIME = 20,    /* u64 host ns, echoed */
	VT_A_GUEST_TIME = 21,   /* u64 guest clock value */
	VT_A_MARK = 22,         /* u32: 1 = write "vt-probe <id>" into the guest trace first */
	VT_A_SESSION_ACTIVE = 23, /* u64 session the agent is tracing, in hello replies */
	VT_A_TRACER = 24,       /* str ftrace tracer of the instance, "nop" = events only */
	VT_A_FTRACE_FILTER = 25, /* str function globs for set_ftrace_filter, "" = all */
	VT_A_FLUSH_MS = 26,     /* u32: a quiet ring's pages go out within this many ms (0 = at half full only) */
	VT_A_PERF_EVENTS = 27,  /* str guest perf events "cpu-clock,page-faults" ("" = no guest perf) */
	VT_A_PERF_FREQ = 28,    /* u32 samples per second per event and CPU */
	VT_A_PERF_RING_KB = 29, /* u32 per-CPU perf ring (data part), KiB, a power of two */
	VT_A_PERF_STATS = 30,   /* array of struct vt_perf_stats (START's OK, STOPPED) */
	VT_A_GUEST_MONO = 32,   /* u64, PROBE_REPLY: the guest's CLOCK_MONOTONIC beside GUEST_TIME (guest perf's clock) */
	VT_A_KALLSYMS_KEY = 33, /* str, META_REQ: the key of the host's cached kallsyms (16 hex digits) */
	VT_A_BUILD_ID = 34,     /* bytes (1..20), BINARY_REQ / BINARY: the GNU build-id of a guest binary */
	VT_A_FILE_OFFSET = 35,  /* u64, BINARY_REQ / BINARY: where FILE_DATA starts in the file */
	VT_A_FILE_SIZE = 36,    /* u64, BINARY: the whole file's size */
	VT_A_AGENT_EVENTS = 37, /* u32, CONFIG: 1 = trace the agent's own threads too (default 0: left out) */
	VT_A_FLUSH_SEQ = 38,    /* u64, FLUSH: echoed in every CPU's flush marker */
	VT_A_STEP = 39,         /* u32 enum vt_start_step, PROGRESS */
	VT_A_DONE = 40,         /* u32, PROGRESS: items of the step done (events enabled, CPUs ready) */
	VT_A_TOTAL = 41,        /* u32, PROGRESS: items of the step in all (0: the step has no count) */
	VT_A_WANT_PROGRESS = 42, /* u32, START: 1 = send PROGRESS frames until OK or ERROR */
	VT_A_CLOCK_RES = 31,    /* str, HELLO: each readable clock's measured step "mono=4000000ns x86-tsc=38cycles" */
	VT_A_PHC_LO = 43,       /* u64, PROBE_REPLY: host CLOCK_REALTIME ns before which GUEST_TIME (and MARK's */
	VT_A_PHC_HI = 44,       /* marker) cannot lie, and after which not: the guest's KVM PTP clock (ptp_kvm) */
};

enum vt_agent_state { VT_STATE_IDLE = 0, VT_STATE_TRACING = 1 };

/* The steps of a START, in the order the agent takes them (PROGRESS's A_STEP). */
enum vt_start_step {
	VT_STEP_EVENTS = 1,    /* enabling the configured events: DONE of TOTAL */
	VT_STEP_SETTINGS = 2,  /* clock, ring size, function filter, tracer */
	VT_STEP_RESET = 3,     /* emptying the rings */
	VT_STEP_THREADS = 4,   /* per-CPU threads started: DONE of TOTAL */
	VT_STEP_BEGIN = 5,     /* begin markers written (or failed): DONE of TOTAL */
	VT_STEP_NOTRACE = 6,   /* leaving the agent's threads out (set_event_notrace_pid) */
	VT_STEP_TRACING_ON = 7, /* tracing_on */
	VT_STEP_MAX,
};
/* "enabling events", ...; "an unknown step" past the table. */
const char *vt_start_step_name(uint32_t step);

/* Per-CPU counters, in STOPPED and in end marker pages. */
struct vt_cpu_stats {
	uint32_t cpu;
	int32_t error;          /* 0 or -errno of the CPU's pump */
	uint64_t pages_sent;    /* ring pages written to the port (markers excluded) */
	uint64_t bytes_sent;    /* their bytes, = pages_sent * page size */
	uint64_t entries;       /* per_cpu/cpuN/stats at stop */
	uint64_t overrun;
	uint64_t commit_overrun;
	uint64_t bytes;
	uint64_t dropped_events;
	uint64_t read_events;
};
_Static_assert(sizeof(struct vt_cpu_stats) == 72, "cpu stats are 72 bytes");

/* Per-CPU counters of a perf-path-cpuN stream, in START's OK (cpu, error), STOPPED and the
 * perf end marker. */
struct vt_perf_stats {
	uint32_t cpu;
	int32_t error;          /* 0 or -errno of the CPU's perf pump; -ENODATA: no guest perf */
	uint64_t bytes_sent;    /* record bytes written to the port (markers excluded) */
	uint64_t records;       /* records among them, synthesized ones included */
	uint64_t samples;       /* PERF_RECORD_SAMPLE among them */
	uint64_t lost_records;  /* PERF_RECORD_LOST among them */
	uint64_t lost;          /* the sum of their counts: samples the kernel dropped (ring full) */
	uint64_t synth_records; /* COMM/MMAP2 records the agent wrote for tasks that existed at START */
	uint64_t reserved;
};
_Static_assert(sizeof(struct vt_perf_stats) == 64, "perf stats are 64 bytes");

/* Growable output buffer for one or more frames. */
struct vt_buf {
	uint8_t *data;
	size_t len, cap;
	size_t frame; /* start of the frame being built */
	bool oom;     /* sticky: a put failed */
};

void vt_buf_free(struct vt_buf *b);
void vt_msg_begin(struct vt_buf *b, uint16_t type, uint32_t seq);
void vt_put_bytes(struct vt_buf *b, uint16_t tag, const void *data, size_t len);
void vt_put_str(struct vt_buf *b, uint16_t tag, const char *s);
void vt_put_u32(struct vt_buf *b, uint16_t tag, uint32_t v);
void vt_put_u64(struct vt_buf *b, uint16_t tag, uint64_t v);
/* Closes the frame; -ENOMEM if any put failed, -EMSGSIZE past VT_PROTO_MAX_PAYLOAD. */
int vt_msg_end(struct vt_buf *b);

/* A decoded frame; payload points into the reader's buffer until the next call. */
struct vt_msg {
	struct vt_frame_hdr hdr;
	const uint8_t *payload;
	uint32_t len;
};

struct vt_attr {
	uint16_t tag;
	uint32_t len;
	const uint8_t *data;
};

/* Validates a header in buf (at least 16 bytes): -EBADMSG bad magic, -EPROTONOSUPPORT
 * version, -EMSGSIZE length over the cap. */
int vt_hdr_decode(const uint8_t *buf, struct vt_frame_hdr *ret);
/* Iterates attributes: 1 with *ret filled, 0 at the end, -EBADMSG if malformed. */
int vt_attr_next(const struct vt_msg *m, uint32_t *off, struct vt_attr *ret);
/* Checks that all attributes are well formed: 0 or -EBADMSG. */
int vt_msg_validate(const struct vt_msg *m);
/* Finds the first attribute with tag: 0, -ENOENT, -EBADMSG. */
int vt_msg_find(const struct vt_msg *m, uint16_t tag, struct vt_attr *ret);
int vt_msg_u32(const struct vt_msg *m, uint16_t tag, uint32_t *ret);
int vt_msg_u64(const struct vt_msg *m, uint16_t tag, uint64_t *ret);
/* Copies a string attribute (no NUL inside, at most max bytes) into a new malloc'd string. */
int vt_msg_str(const struct vt_msg *m, uint16_t tag, size_t max, char **ret);

const char *vt_msg_type_name(uint16_t type);

/* Stream reader with resynchronisation: bytes in, frames or legacy lines out. */
enum vt_read_result {
	VT_READ_NEED_MORE = 0,
	VT_READ_MSG,      /* *ret_msg valid */
	VT_READ_LEGACY,   /* *ret_legacy is '1' or '0' */
	VT_READ_GARBAGE,  /* skipped bytes that were neither frame nor legacy line */
	VT_READ_TOOBIG,   /* a frame header with a bad length or version; header skipped; seq in ret_msg */
};

struct vt_reader {
	uint8_t *buf;
	size_t len, cap, off;
	uint64_t garbage_bytes; /* total skipped, for diagnostics */
};

int vt_reader_init(struct vt_reader *r);
void vt_reader_free(struct vt_reader *r);
/* Space to read into (at least 4 KiB); call vt_reader_commit with bytes read. */
int vt_reader_space(struct vt_reader *r, uint8_t **ret_ptr, size_t *ret_len);
void vt_reader_commit(struct vt_reader *r, size_t n);
/* Feeds bytes by copying (tests, fuzzing). */
int vt_reader_feed(struct vt_reader *r, const void *data, size_t len);
enum vt_read_result vt_reader_next(struct vt_reader *r, struct vt_msg *ret_msg, char *ret_legacy);
