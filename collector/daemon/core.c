// SPDX-License-Identifier: GPL-2.0-only
/* The daemon's core, below its other files: the phase names, the timeouts, the probe send,
 * the spools' discard and the deferral of work to the loop. daemon.c (the phases and the
 * loop) and daemon-*.c (disk, live, report, snapshot, clock) call down into it; it calls
 * only link/ and common/. */
#include <event2/event.h>
#include <string.h>
#include <time.h>

#include "daemon.h"
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
	uint64_t now = util_now_ns(CLOCK_MONOTONIC);

	d->probe_id++;
	d->probe_mark = mark;
	if (mark)
		d->holdout_id = d->probe_id;
	d->probe_pending = agentctl_send_probe(d->agent, d->probe_id, now, mark) == 0;
}

void daemon_discard_all(struct daemon *d)
{
	for (unsigned k = 0; k < ARRAY_SIZE(d->spools); k++)
		if (d->spools[k])
			spool_discard(d->spools[k]);
}

/* Runs the daemon's deferred work (daemon_deferred, daemon.c) once the current callback has
 * returned: what a link callback or a disk check only recorded. */
void daemon_defer(struct daemon *d)
{
	if (d->deferred)
		event_active(d->deferred, EV_TIMEOUT, 0);
}
