/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

#include <stdbool.h>
#include <stddef.h>

struct start_opts;

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
/* The module parameter of KVM's mediated PMU that is on ("kvm_amd.enable_mediated_pmu"), or "":
 * with it, host perf's hardware events were given :H (hostevents.c). */
const char *hostperf_mediated(const struct hostperf *h);
/* --flight-recorder (perf --overwrite --switch-output): SIGUSR2, perf writes DATA.<timestamp>. */
int hostperf_dump(struct hostperf *h);
int hostperf_settle(struct hostperf *h, const char *dir); /* the last dump becomes DATA */
/* A set's leader: DIR/host-perf.ctl and .ack for perf's --control ("fifo:CTL,ACK" into buf),
 * which a snapshot's client pings (snapshot-dir.c) to learn how far host.data is complete. */
int hostperf_control_fifos(const char *dir, char *buf, size_t size);
