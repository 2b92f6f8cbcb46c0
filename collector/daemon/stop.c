// SPDX-License-Identifier: GPL-2.0-only
/* The daemon's stop: the stop probes, STOP, host perf stopped, the guest binaries fetched
 * (with guest perf), the clock fitted, and the session finalized; the stop request of the
 * control socket and its reply. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agentctl.h"
#include "collector.h"
#include "ctlsock.h"
#include "daemon.h"
#include "gbinfetch.h"
#include "hostperf.h"
#include "log.h"
#include "session.h"
#include "spool.h"
#include "util.h"

/* The fit (ptp) or the last readings (kvm), clock.ini, and its numbers into session.ini. */
static void daemon_clock_finish(struct daemon *d)
{
	int r;

	if (d->clk.written)
		return; /* summarized again after an earlier finalize */
	r = clocksync_finish(&d->clk, d->s.dir, d->s.clock_method, d->host_started_ns, clocksync_host_now(&d->clk));
	if (r < 0) {
		log_warn("clock: cannot write %s/clock.ini (%s, %s): the merge will fit clock.samples itself or stay unaligned",
			 d->s.dir, d->s.clock_method, strerror(-r));
		return;
	}
	d->s.clock_samples = !strcmp(d->s.clock_method, "kvm") ? d->clk.nkvm : d->clk.nsamples;
	d->s.clock_phc_probes = d->clk.nphc + d->clk.nholdout_phc;
	d->s.clock_error_bound_ns = d->clk.error_bound;
}

static void daemon_finalize(struct daemon *d)
{
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	FILE *f;

	session_release_reserve(&d->s);
	if (d->perf && d->o->flight_recorder && hostperf_reap(d->perf)) {
		int r = hostperf_settle(d->perf, d->s.dir); /* perf's last dump is the host.data */

		if (r < 0)
			log_warn("flight recorder: no host perf dump in %s to use as host.data: %s", d->s.dir, strerror(-r));
	}
	for (unsigned k = 0; k < ARRAY_SIZE(d->spools); k++) { /* the merge reads the files next */
		int r = d->spools[k] ? spool_persist(d->spools[k]) : 0;

		if (r < 0)
			log_error("cpu%u: cannot write the last bytes of %s/%scpu%u.spool: %s", k % COLLECTOR_MAX_CPUS,
				  d->s.dir, k < COLLECTOR_MAX_CPUS ? "" : "perf-", k % COLLECTOR_MAX_CPUS, strerror(-r));
	}
	d->s.stopped_mono_ns = util_now_ns(CLOCK_MONOTONIC);
	daemon_set_phase(d, PH_STOPPED, 0);
	daemon_discard_all(d); /* keep reading the ports, write nothing more */
	daemon_report_agent_stats(d);
	daemon_clock_finish(d);
	session_set_state(&d->s, "stopped");
	live_end(d); /* the live merge drains and writes its header */
	daemon_disk_final(d);
	f = open_memstream(&text, &len);
	if (f) {
		daemon_report_summary(d, f);
		fclose(f);
		log_info("session finalized\n%s", text ? text : "");
	}
	if (d->stop_client) {
		ctlsock_finish_stop(d->stop_client, text ? text : "");
		d->stop_replies++;
		d->stop_client = NULL;
	} else if (d->exit_on_finalize) {
		event_base_loopbreak(d->base);
	}
}

void daemon_stop_begin(struct daemon *d, const char *reason)
{
	daemon_snapshot_finish(d); /* one being taken: with the probes it has */
	if (d->stop_begun)
		return;
	if (!d->started_ok) {
		daemon_fail(d, "start failed: %s", reason);
		return;
	}
	d->stop_begun = true;
	d->stop_begun_ns = d->disk_cut_ns ? d->disk_cut_ns : util_now_ns(CLOCK_MONOTONIC);
	snprintf(d->s.stop_reason, sizeof(d->s.stop_reason), "%s", reason);
	session_set_state(&d->s, "stopping");
	log_info("stopping: %s", reason);
	if (d->agent_gone) {
		daemon_set_phase(d, PH_STOP, 0);
		return;
	}
	if (!strcmp(d->s.clock_method, "ptp")) {
		d->probes_left = PROBES_PER_BURST;
		daemon_set_phase(d, PH_PROBES1, daemon_timeout(d));
		daemon_probe_send(d, false);
		return;
	}
	agentctl_send_stop(d->agent);
	daemon_set_phase(d, PH_STOP, STOP_WAIT_NS);
}

void daemon_binaries_end(struct daemon *d, const char *status, const char *why)
{
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	FILE *f;

	if (status)
		gbinfetch_abort(d->gbin, status, why);
	f = open_memstream(&text, &len);
	if (f) {
		gbinfetch_summary(d->gbin, f);
		fclose(f);
		log_info("%s", text ? text : "");
	}
	daemon_finalize(d);
}

/* With guest perf, once host perf has stopped (so the host recording does not run on while a
 * guest sends slowly): the binaries guest user-mode samples ran in, from the agent
 * (gbinfetch.c), within GBIN_TOTAL_TIMEOUTS × --timeout in all. */
void daemon_binaries(struct daemon *d)
{
	int r;

	if (!d->o->perf.events || d->o->perf.no_binaries || d->agent_gone || d->gbin)
		return daemon_finalize(d);
	for (unsigned k = COLLECTOR_MAX_CPUS; k < ARRAY_SIZE(d->spools); k++) /* the scan reads the files */
		if (d->spools[k] && (r = spool_persist(d->spools[k])) < 0)
			log_warn("cpu%u: cannot write the last bytes of perf-cpu%u.spool: %s", k - COLLECTOR_MAX_CPUS,
				 k - COLLECTOR_MAX_CPUS, strerror(-r));
	r = gbinfetch_new(d->s.dir, d->o->perf.trust_binaries, &d->gbin);
	if (r < 0) {
		log_warn("guest binaries: cannot scan the guest perf streams of %s: %s; guest user functions stay unnamed",
			 d->s.dir, strerror(-r));
		return daemon_finalize(d);
	}
	if (!gbinfetch_next(d->gbin, d->agent))
		return daemon_binaries_end(d, NULL, NULL);
	daemon_set_phase(d, PH_BINARIES, daemon_timeout(d));
	d->total_ns = util_now_ns(CLOCK_MONOTONIC) + daemon_timeout(d) * GBIN_TOTAL_TIMEOUTS;
}

/* After the agent stopped: host perf, then the guest binaries, then finalize. */
void daemon_perf_stop(struct daemon *d)
{
	if (d->perf && !hostperf_reap(d->perf)) {
		hostperf_stop(d->perf);
		daemon_set_phase(d, PH_PERF_STOP, PERF_WAIT_NS);
		return;
	}
	daemon_binaries(d);
}

void daemon_stop_request(struct daemon *d, struct bufferevent *client)
{
	if (d->stop_client && d->stop_client != client) /* the later stop takes over (the first may be gone) */
		ctlsock_finish_stop(d->stop_client, "stop: " DAEMON_STOP_TAKEN_OVER "\n"), d->stop_replies++;
	d->stop_client = client;
	if (d->ph == PH_STOPPED) {
		daemon_finalize(d); /* already stopped on its own: summarize again */
		return;
	}
	if (d->ph == PH_BINARIES) /* a second stop: no more waiting for the guest */
		return daemon_binaries_end(d, "cut:second-stop", "a second 'stop' ended the fetch");
	daemon_stop_begin(d, "stop requested");
}

void daemon_stop_replied(struct daemon *d)
{
	if (d->stop_replies > 0)
		d->stop_replies--;
	if (d->ph == PH_STOPPED && !d->stop_replies) /* a stop taken over is answered too */
		event_base_loopbreak(d->base);
}
