// SPDX-License-Identifier: GPL-2.0-only
/* The daemon's periodic work (every TICK_MS, daemon.c) and signals: phase deadlines, host perf
 * readiness, the heartbeat probes, spool rates, a QEMU gone, a socket reconnected. */
#include <dirent.h>
#include <errno.h>
#include <event2/event.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "agentctl.h"
#include "daemon.h"
#include "gbinfetch.h"
#include "hostperf.h"
#include "log.h"
#include "ports.h"
#include "spool.h"
#include "util.h"

/* QEMU 7.2's multi-threaded TCG can run stale code after the guest kernel patches itself
 * (text_poke_bp, when events are enabled or disabled): a vCPU loops on an int3 that is
 * gone while the others wait for it. Fixed upstream in QEMU 8.1 (deba78709a). On QEMU 10 a
 * 32-vCPU TCG guest on 2 host cores once made no progress for 10 s on its first event (CI,
 * 2026-12-02): the hint names both, since the daemon does not know QEMU's version. */
#define TCG_PATCH_HANG                                                                             \
	". This VM runs under TCG: QEMU before 8.1 (Debian 12 has 7.2) can hang a multi-vCPU TCG guest "  \
	"while its kernel patches its own code to enable or disable events (fixed in QEMU 8.1 by "         \
	"'accel/tcg: Always lock pages before translation'), and on any QEMU a TCG guest with many more "  \
	"vCPUs than host CPUs can take longer than --timeout over it. Use KVM, QEMU 8.1 or later, or "     \
	"'-accel tcg,thread=single', or start again with a larger --timeout; the guest may have to be "    \
	"restarted"

/* Whether QEMU's vCPU threads are named "CPU n/TCG" (-name debug-threads=on, libvirt's default). */
static bool qemu_runs_tcg(pid_t pid)
{
	char path[64];
	struct dirent *e;
	bool tcg = false;
	DIR *dir;

	if (pid <= 0)
		return false;
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	dir = opendir(path);
	if (!dir)
		return false;
	while (!tcg && (e = readdir(dir))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%.16s/comm", (int)pid, e->d_name);
		_cleanup_free_ char *comm = NULL;

		if (util_read_file(path, 64, &comm, NULL) == 0 && !strncmp(comm, "CPU ", 4) && strstr(comm, "/TCG"))
			tcg = true;
	}
	closedir(dir);
	return tcg;
}

/* The guest binary fetch's wait ran out: no progress within --timeout, or its total bound. */
static void daemon_binaries_cut_deadline(struct daemon *d)
{
	char why[160];

	if (util_now_ns(CLOCK_MONOTONIC) >= d->total_ns)
		snprintf(why, sizeof(why), "the fetch's total bound of %u s (%u x --timeout) was reached",
			 d->o->timeout_s * GBIN_TOTAL_TIMEOUTS, GBIN_TOTAL_TIMEOUTS);
	else
		snprintf(why, sizeof(why), "no progress from the agent within %u s (--timeout; a reply shorter than "
			 "64 KiB that is no file's end is none)", d->o->timeout_s);
	log_warn("guest binaries: %s; the rest are not fetched", why);
	daemon_binaries_end(d, d->total_ns && util_now_ns(CLOCK_MONOTONIC) >= d->total_ns ? "cut:total-bound" :
			    "cut:no-progress", why);
}

static void daemon_tick_deadline(struct daemon *d, uint64_t now)
{
	if (!d->deadline_ns || now < d->deadline_ns)
		return;
	d->deadline_ns = 0;
	switch (d->ph) {
	case PH_HELLO:
		if (d->kind == PORT_SOCKET && d->agent_gone && d->ctl_err) { /* never reached the guest */
			char path[PATH_MAX + 8];

			daemon_fail(d, "no connection to %s within %u s while %s (the last try: %s) — is QEMU running with "
				    "that socket?", port_path(&d->ctl, true, path, sizeof(path)), d->o->timeout_s,
				    daemon_phase_names[d->ph], strerror(-d->ctl_err));
			break;
		}
		daemon_fail(d, "no answer from the agent on agent-ctl-path within %u s while %s — is trace-agent running in the guest?",
			    d->o->timeout_s, daemon_phase_names[d->ph]);
		break;
	case PH_START:
		daemon_start_timed_out(d, now, qemu_runs_tcg(d->s.qemu_pid) ? TCG_PATCH_HANG : "");
		break;
	case PH_RESET: case PH_CONFIG: case PH_META:
		/* It answered HELLO (and more): it runs, but this step hangs in the guest. */
		daemon_fail(d, "the agent (%s, guest %s) answered HELLO but not within %u s while %s: that step is stuck "
			    "in the guest (its log says where; 'trace-collector stop' is not needed, nothing was traced)%s",
			    d->hello.agent_version, d->hello.release, d->o->timeout_s, daemon_phase_names[d->ph],
			    d->ph != PH_META && qemu_runs_tcg(d->s.qemu_pid) ? TCG_PATCH_HANG : "");
		break;
	case PH_PROBES0:
		log_warn("clock probes unanswered; the clock stays unaligned");
		snprintf(d->s.clock_method, sizeof(d->s.clock_method), "none");
		daemon_start_perf(d);
		break;
	case PH_PERF:
		daemon_fail(d, "host perf record did not start within 30 s (see %s/host-perf.log)", d->s.dir);
		break;
	case PH_PROBES1:
		agentctl_send_stop(d->agent);
		daemon_set_phase(d, PH_STOP, STOP_WAIT_NS);
		break;
	case PH_STOP:
		log_warn("the agent did not finish within %llu s (stopped frame %s); finalizing with what arrived%s",
			 (unsigned long long)(STOP_WAIT_NS / SEC), d->stopped_msg ? "received" : "missing",
			 !d->stopped_msg && qemu_runs_tcg(d->s.qemu_pid) ? TCG_PATCH_HANG : "");
		daemon_perf_stop(d);
		break;
	case PH_BINARIES:
		daemon_binaries_cut_deadline(d);
		break;
	case PH_PERF_STOP:
		log_warn("host perf record did not exit within %llu s after SIGINT: killed; host.data may be truncated",
			 PERF_WAIT_NS / SEC);
		hostperf_kill(d->perf);
		daemon_binaries(d);
		break;
	default:
		break;
	}
}

/* Each period: a heartbeat probe (a ptp sample), a hold-out probe after its reply when asked
 * for, and a kvm reading. */
static void daemon_tick_probe(struct daemon *d, uint64_t now)
{
	/* Sent even when the last probe is unanswered: a lost reply must not end the heartbeat. */
	d->holdout_due = d->o->holdout && daemon_holdout_method(d);
	daemon_probe_send(d, false);
	if (d->clk.kvm_on && clocksync_kvm_reading(&d->clk) < 0 && log_due(&d->unexpected))
		log_warn("kvm: cannot read %s/vcpu*/tsc-offset", d->clk.kvm_dir);
	if (d->early_probe_ns < daemon_interval(d))
		d->early_probe_ns *= 2;
	d->next_probe_ns = now + MIN(d->early_probe_ns, daemon_interval(d));
}

static void daemon_tick_phase(struct daemon *d, uint64_t now)
{
	int err;

	if (d->ph == PH_HELLO && now >= d->next_hello_ns && !d->agent_gone) {
		agentctl_send_hello(d->agent); /* the agent may come up after us */
		d->next_hello_ns = now + SEC;
	} else if (d->ph == PH_PERF && d->perf) {
		if (hostperf_ready(d->perf, &err)) {
			daemon_send_start(d);
		} else if (err) {
			daemon_fail(d, "host perf record exited with status %d before recording (see %s/host-perf.log)%s%s%s",
				    hostperf_exit_status(d->perf), d->s.dir,
				    hostperf_mediated(d->perf)[0] ? "; KVM's mediated PMU is on (" : "", hostperf_mediated(d->perf),
				    hostperf_mediated(d->perf)[0] ? "): a host hardware event that counts the guest (:G) "
				    "fails beside a mediated-PMU VM, and such a VM cannot start (EBUSY) while one counts" : "");
		}
	} else if (d->ph == PH_TRACING) {
		uint64_t silent = now - agentctl_last_rx(d->agent);

		if (d->qemu_exited)
			daemon_stop_begin(d, d->stop_why);
		else if (d->agent_gone)
			daemon_stop_begin(d, "QEMU gone (agent-ctl-path closed)");
		else if (silent > MAX(3 * daemon_interval(d), daemon_timeout(d)))
			daemon_stop_begin(d, "agent silent (no answer to heartbeat probes)");
		else if (d->snap_client)
			daemon_snapshot_tick(d, now);
		else if (d->mg.probes_left)
			; /* a migration's burst: its replies send the next */
		else if (now >= d->next_probe_ns)
			daemon_tick_probe(d, now);
		live_tick(d, now);
	} else if (d->ph == PH_STOP && ((d->stopped_msg && daemon_all_ended(d)) || d->agent_gone)) {
		daemon_perf_stop(d);
	} else if (d->ph == PH_BINARIES && d->agent_gone) {
		log_warn("guest binaries: agent-ctl-path closed while fetching them");
		daemon_binaries_end(d, "refused:agent-gone", NULL);
	} else if (d->ph == PH_PERF_STOP && hostperf_reap(d->perf)) {
		daemon_binaries(d);
	} else if (d->ph < PH_TRACING && d->agent_gone && d->kind == PORT_FIFO) {
		daemon_fail(d, "agent-ctl-path failed before tracing started");
	}
}

/* A reconnect that found a link or another service's socket: before tracing the start fails,
 * named; while tracing it is said (rate-limited) and retried. False when the start failed. */
static bool daemon_reconnect_refused(struct daemon *d, const struct port *p, int r)
{
	char why[2 * PATH_MAX + 512];

	if (!port_refused(p, r, d->o->vm_dir, d->o->name, why, sizeof(why)))
		return true;
	if (d->ph < PH_TRACING) {
		daemon_fail(d, "%s", why);
		return false;
	}
	if (log_due(&d->unexpected))
		log_warn("%s; retrying", why);
	return true;
}

/* Socket transport: QEMU restarted or came up late; connect again and keep reading. */
static void daemon_reconnect(struct daemon *d)
{
	int r;

	if (d->kind != PORT_SOCKET)
		return;
	if (d->agent_gone) {
		r = d->ctl_err = port_open(&d->ctl, true);
		if (r < 0 && !daemon_reconnect_refused(d, &d->ctl, r))
			return;
		if (r == 0) {
			agentctl_free(d->agent);
			d->agent = NULL;
			if (daemon_agent_open(d) == 0) {
				d->agent_gone = false;
				log_info("agent-ctl-path reconnected");
				d->next_hello_ns = 0;
			}
		}
	}
	for (unsigned k = 0; k < ARRAY_SIZE(d->spools); k++) {
		if (!d->data_gone[k] || !d->spools[k])
			continue;
		if ((r = port_open(&d->data[k], false)) < 0) {
			daemon_reconnect_refused(d, &d->data[k], r);
			continue;
		}
		if (spool_rearm(d->spools[k], d->base) == 0)
			d->data_gone[k] = false;
	}
}

/* FIFO pairs never report EOF (QEMU and we both hold them read-write): watch QEMU's pid,
 * so a killed QEMU ends the session at once instead of after the heartbeat and stop waits. */
static void daemon_watch_qemu(struct daemon *d)
{
	pid_t pid = d->s.qemu_pid;

	if (d->qemu_exited || pid <= 0)
		return;
	if (kill(pid, 0) == 0 || errno != ESRCH) {
		d->qemu_seen = true;
		daemon_migration_seen(d, pid);
		return;
	}
	if (d->qemu_seen && daemon_migration_follow(d, pid))
		return;
	d->qemu_exited = true;
	snprintf(d->stop_why, sizeof(d->stop_why), "QEMU gone (pid %d exited)", (int)pid);
	log_warn("QEMU (pid %d) exited: the guest cannot send anything more", (int)pid);
	d->agent_gone = true;
}

void daemon_tick(evutil_socket_t fd, short what, void *arg)
{
	struct daemon *d = arg;
	uint64_t now = util_now_ns(CLOCK_MONOTONIC);

	daemon_tick_phase(d, now);
	if (d->ph == PH_START)
		daemon_start_watch(d, now);
	daemon_tick_deadline(d, now);
	daemon_disk_tick(d);
	/* QEMU's exit at once, a kill(0) a tick: after a live migration the guest's first times map
	 * to the source's clock line until the session follows the destination */
	daemon_watch_qemu(d);
	daemon_migration_tick(d);
	/* Before tracing runs, a QEMU gone ends the start now, named: its guest cannot answer (a
	 * guest kernel panic exits QEMU: panic=-1 reboots, -no-reboot exits), and the step's
	 * deadline would call that guest stuck. */
	if (d->qemu_exited && d->qemu_seen && d->ph < PH_TRACING) { /* a pid never seen: as before */
		daemon_fail(d, "start failed: QEMU (pid %d) exited while %s: the guest is gone, nothing was "
			    "traced (its console says why: a guest kernel panic ends QEMU under -no-reboot)",
			    (int)d->s.qemu_pid, daemon_phase_names[d->ph]);
		return;
	}
	if (now >= d->next_rate_ns) {
		for (unsigned k = 0; k < ARRAY_SIZE(d->spools); k++)
			if (d->spools[k])
				spool_rate_tick(d->spools[k], now);
		d->next_rate_ns = now + SEC;
		daemon_reconnect(d);
	}
}

void daemon_signal(evutil_socket_t sig, short what, void *arg)
{
	struct daemon *d = arg;

	if (sig == SIGCHLD) {
		if (d->ph == PH_PERF_STOP && hostperf_reap(d->perf))
			daemon_binaries(d);
		return;
	}
	log_info("signal %d: stopping", (int)sig);
	if (d->ph == PH_BINARIES) {
		d->exit_on_finalize = true;
		daemon_binaries_end(d, "cut:signal", "a signal (SIGTERM or SIGINT) ended the fetch");
	} else if (!d->started_ok) {
		daemon_fail(d, "start interrupted by signal %d", (int)sig);
	} else if (d->ph == PH_STOPPED) {
		event_base_loopbreak(d->base);
	} else {
		d->exit_on_finalize = true;
		daemon_stop_begin(d, "signal");
	}
}
