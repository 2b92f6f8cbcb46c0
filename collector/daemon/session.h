/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct start_opts;

/* session.c: session dir and its session.ini. */
/* A live migration the session followed: the guest left QEMU pid `from` for pid `to`, seen at
 * mono_ns (CLOCK_MONOTONIC: the source's exit while `to` held the VM's ports). */
struct session_migration {
	uint64_t mono_ns;
	pid_t from, to;
};
#define SESSION_MAX_MIGRATIONS 16

struct session_info {
	char dir[PATH_MAX];
	char vm[64];
	uint64_t session_id;
	uint32_t ncpus, page_size;
	pid_t qemu_pid; /* the QEMU serving the guest now (after a migration: the destination) */
	struct session_migration mig[SESSION_MAX_MIGRATIONS];
	unsigned nmig;
	char guest_clock[32];
	char guest_clock_res[256]; /* the agent's measured clock steps (hello) */
	char clock_method[8];
	uint64_t clock_samples, clock_error_bound_ns; /* clock.ini's, once written */
	uint64_t clock_phc_probes; /* probes (fitted and hold-out) the guest's KVM PTP clock narrowed */
	char events[1024];
	uint64_t started_realtime_ns, started_mono_ns, stopped_mono_ns;
	char host_data[PATH_MAX];
	char host_mediated_pmu[64]; /* KVM's mediated PMU parameter that is on, "" none (hostevents.c) */
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
/* Records a migration from s->qemu_pid to `to` (at most SESSION_MAX_MIGRATIONS: -ENOSPC) and
 * makes `to` the session's QEMU; session.ini rewritten. */
int session_migrated(struct session_info *s, uint64_t mono_ns, pid_t to);
int session_set_state(struct session_info *s, const char *state);
/* Deletes the session's reserve file (made at creation) when the disk is full. */
void session_release_reserve(const struct session_info *s);
/* Reads one key of DIR/session.ini into buf; -ENOENT when absent. */
int session_ini_get(const char *dir, const char *key, char *buf, size_t size);
/* Rewrites one key of DIR/session.ini atomically (used by stop after the merge). */
int session_ini_set(const char *dir, const char *key, const char *value);
