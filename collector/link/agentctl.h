/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ports.h"
#include "proto.h"

struct event_base;
struct guest_perf_opts;

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
/* The control stream continues over fd (owned from now on): the old descriptor's frames first. */
int agentctl_hand_over(struct agentctl *a, struct event_base *base, int fd);
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
/* A PROGRESS frame of START: a known step, DONE <= TOTAL <= AGENTCTL_PROGRESS_MAX (0 of 0 for a
 * step without a count); -EBADMSG (an attribute missing) or -ERANGE. */
#define AGENTCTL_PROGRESS_MAX (1u << 20)
struct agent_progress {
	uint32_t step, done, total;
};
int agentctl_parse_progress(const struct vt_msg *m, struct agent_progress *ret);
/* A PROBE_REPLY's id, echoed host time and guest reading; -EBADMSG when one is missing. */
/* ret_mono: the guest's CLOCK_MONOTONIC beside the trace clock (0 from an older agent). */
int agentctl_parse_probe_reply(const struct vt_msg *m, uint64_t *ret_id, uint64_t *ret_host, uint64_t *ret_guest,
			       uint64_t *ret_mono);
/* A PROBE_REPLY's bracket of its guest reading in the host's CLOCK_REALTIME by the guest's KVM
 * PTP clock: 0; -ENOENT without one (no ptp_kvm, an older agent); -EBADMSG for half of one, lo
 * after hi, a value past INT64_MAX or a bracket over AGENTCTL_PHC_SPAN_MAX. */
#define AGENTCTL_PHC_SPAN_MAX 1000000000ull
int agentctl_parse_probe_phc(const struct vt_msg *m, uint64_t *ret_lo, uint64_t *ret_hi);
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
