// SPDX-License-Identifier: GPL-2.0-only
/* The daemon's core, below its other files: the phase names, the timeouts, the phase change,
 * the start's failure, the probe send, the spools' discard and the deferral of work to the
 * loop. The daemon's other files (daemon.c, start.c, agent.c, stop.c, tick.c, streams.c,
 * daemon-*.c) call down into it; it calls only link/, hostperf.c, session.c and common/. */
#include <event2/event.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "agentctl.h"
#include "daemon.h"
#include "hostperf.h"
#include "log.h"
#include "session.h"
#include "spool.h"
#include "util.h"

const char *const daemon_phase_names[] = {
	[PH_HELLO] = "waiting for the agent's hello", [PH_RESET] = "stopping the agent's old session",
	[PH_CONFIG] = "configuring the agent", [PH_META] = "receiving guest metadata",
	[PH_PROBES0] = "clock probes", [PH_PERF] = "starting host perf record",
	[PH_START] = "starting the agent", [PH_TRACING] = "tracing",
	[PH_PROBES1] = "clock probes at stop", [PH_STOP] = "waiting for the agent to stop",
	[PH_BINARIES] = "fetching guest binaries",
	[PH_PERF_STOP] = "waiting for host perf record", [PH_STOPPED] = "stopped",
};

uint64_t daemon_timeout(const struct daemon *d)
{
	return (uint64_t)d->o->timeout_s * SEC;
}

void daemon_probe_send(struct daemon *d, bool mark)
{
	/* The host perf clock: a hold-out marker's times are compared with its converted time. */
	uint64_t now = clocksync_host_now(&d->clk);

	d->probe_id++;
	d->probe_mark = mark;
	if (mark)
		d->holdout_id = d->probe_id;
	d->probe_pending = agentctl_send_probe(d->agent, d->probe_id, now, mark) == 0;
}

bool daemon_holdout_method(const struct daemon *d)
{
	return !strcmp(d->s.clock_method, "ptp") || !strcmp(d->s.clock_method, "kvm");
}

void daemon_discard_all(struct daemon *d)
{
	for (unsigned k = 0; k < ARRAY_SIZE(d->spools); k++)
		if (d->spools[k])
			spool_discard(d->spools[k]);
}

/* Runs the daemon's deferred work (daemon_deferred, streams.c) once the current callback has
 * returned: what a link callback or a disk check only recorded. */
void daemon_defer(struct daemon *d)
{
	if (d->deferred)
		event_active(d->deferred, EV_TIMEOUT, 0);
}

void daemon_notify(struct daemon *d, const char *line)
{
	if (d->notify_fd >= 0)
		util_write_full(d->notify_fd, line, strlen(line));
}

void daemon_set_phase(struct daemon *d, enum phase ph, uint64_t timeout_ns)
{
	d->ph = ph;
	d->deadline_ns = timeout_ns ? util_now_ns(CLOCK_MONOTONIC) + timeout_ns : 0;
	log_debug("phase: %s", daemon_phase_names[ph]);
}

/* A failure before tracing started: say why, undo, and let start report it. */
void daemon_fail(struct daemon *d, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vmsg(LOG_ERR, fmt, ap);
	va_end(ap);
	va_start(ap, fmt);
	vsnprintf(d->s.start_error, sizeof(d->s.start_error), fmt, ap);
	va_end(ap);
	for (char *p = d->s.start_error; *p; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';
	if (d->agent && !d->agent_gone && d->agent_started)
		agentctl_send_stop(d->agent);
	if (d->perf) {
		hostperf_stop(d->perf);
		hostperf_kill(d->perf);
	}
	session_release_reserve(&d->s);
	snprintf(d->s.stop_reason, sizeof(d->s.stop_reason), "start failed");
	session_set_state(&d->s, "failed");
	daemon_notify(d, "fail\n");
	d->exit_code = 1;
	event_base_loopbreak(d->base);
}
