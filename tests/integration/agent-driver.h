/* SPDX-License-Identifier: GPL-2.0-only */
/* agent-driver: drives the real trace-agent on the host's tracefs (agent-driver.c: the driver,
 * agent-driver-walk.c: the checks; the cases in agent-driver-session.c, agent-driver-faults.c and
 * agent-driver-perf.c). */
#pragma once

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "proto.h"

#define TRACEFS "/sys/kernel/tracing"
#define MAXCPU 64
#define WAIT_MS 60000 /* a guard against hangs, not a timing assertion */

struct capture {
	int lfd;
	pthread_t th;
	bool running;
	bool unplug; /* close the connection at once, like a port going away */
	bool stall; /* accept, read nothing until the agent closes its end (a host not reading) */
	unsigned delay_ms; /* accept, then read nothing for this long (a host slow to read) */
	uint8_t *data;
	size_t len, cap;
	int err;
};

struct drv {
	char dir[64];
	char instance[64];
	char log[128];
	int ctl_lfd, ctl_fd;
	pid_t pid;
	unsigned ncpus;
	uint32_t seq;
	struct vt_reader rd;
	struct capture cap[MAXCPU];
	struct vt_cpu_stats started[MAXCPU]; /* START's OK: which CPUs stream (error 0) */
	bool started_known;
	struct capture pcap[MAXCPU]; /* perf-path-cpuN (drv_perf_ports), lfd -1 when absent */
	struct vt_perf_stats perf_started[MAXCPU]; /* START's OK: PERF_STATS */
	bool perf_started_known;
	struct vt_perf_stats perf_stopped[MAXCPU]; /* STOPPED: PERF_STATS */
	bool perf_stopped_known;
};

/* A received message, copied out of the reader. */
struct rmsg {
	struct vt_msg m;
	uint8_t *buf;
};

/* ---- a minimal ring-page walker for the checks (common/ftrace_page comes separately) ---- */

struct walk {
	uint16_t print_id;
	unsigned cpu;
	uint64_t events;    /* data events */
	uint64_t pages;     /* ring pages */
	uint64_t next_seq;  /* next "vt-seq <cpu> <n>" expected */
	uint64_t bad_seq;   /* markers out of order, duplicated or from another cpu */
	uint64_t probes;    /* "vt-probe <probe_id>" marks seen */
	uint64_t flush_markers; /* flush markers of the session (skipped) */
	uint64_t probe_id;
	bool bad_page;
	uint16_t count_id;          /* events of this id: counted, ip (u64 at 8) checked */
	uint64_t counted, ip_lo, ip_hi, ip_outside;
};

void rmsg_free(struct rmsg *r);
int listen_at(const char *dir, const char *name);
int accept_wait(int lfd);
const char *agent_path(void);
const char *instance_prefix(void);
bool tracefs_ready(void);
pid_t spawn(const char *log, const char *const argv[]);
int drv_up(struct drv *d, const char *name, int skip_cpu);
int drv_up_port(struct drv *d, unsigned cpu);
int drv_down(struct drv *d);
void drv_cleanup(struct drv *d);
bool instance_exists(const struct drv *d);
int drv_send(struct drv *d, struct vt_buf *b);
uint32_t drv_simple(struct drv *d, uint16_t type, uint64_t session);
int drv_recv(struct drv *d, struct rmsg *ret);
int drv_expect(struct drv *d, uint16_t type, uint32_t seq, struct rmsg *ret);
int drv_error(struct drv *d, uint32_t seq, char **ret_msg);
int drv_hello(struct drv *d, struct rmsg *ret);
uint32_t drv_config_all(struct drv *d, const char *events, const char *clock, uint32_t kb,
			const char *tracer, const char *filter);
uint32_t drv_config_tracer(struct drv *d, const char *tracer, const char *filter);
uint32_t drv_config(struct drv *d, const char *events, const char *clock, uint32_t kb);
void capture_begin(struct drv *d);
void capture_end(struct drv *d);
int drv_start(struct drv *d, uint64_t session);
int drv_stop(struct drv *d, uint64_t session, struct vt_cpu_stats *stats);
int drv_meta(struct drv *d, const char *want, char **ret_data, size_t *ret_len,
	     uint32_t *ret_files);
const char *inst_read(const struct drv *d, const char *rel);
unsigned log_count(const struct drv *d, const char *needle);
uint16_t print_event_id(void);
void walk_page(struct walk *w, const uint8_t *page, size_t psize);
int check_stream(const struct capture *c, uint32_t psize, uint64_t session, unsigned cpu,
		 const struct vt_cpu_stats *st, struct walk *w);
int write_markers(const struct drv *d, unsigned first, unsigned count);
int check_session(struct drv *d, uint64_t session, unsigned count, const struct vt_cpu_stats *st,
		  uint64_t probe_id, uint64_t *ret_probes);
#define _cleanup_drv_ _cleanup_(drv_cleanup)
