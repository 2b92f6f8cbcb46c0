// SPDX-License-Identifier: GPL-2.0-only
/* `snapshot`: what the session holds now, as a session dir the merge reads while tracing goes
 * on. SESSION/snapshot-N gets hard links to the spools (their current inodes: the merge reads
 * each up to the size it has when opened, whole pages), the clock samples and session.ini, a
 * clock.ini fitted from the probes so far, and guest -> ../guest. With --flight-recorder the
 * host's perf writes its overwritable rings into a dump (SIGUSR2) that the client moves in as
 * host.data; a set's leader says "prefix": the client pings host perf's control fifo and merges
 * the complete prefix of host.data; otherwise the host recording is written at stop only. First the agent flushes:
 * FLUSH makes every CPU drain its ring and send a flush marker, so the spools hold everything the
 * guest traced before the request (an agent without FLUSH: two flush intervals are waited out).
 * With ptp the daemon then takes a probe burst, so the snapshot's fit has samples at both ends. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agentctl.h"
#include "collector.h"
#include "ctlsock.h"
#include "daemon.h"
#include "hostperf.h"
#include "log.h"
#include "marker.h"
#include "spool.h"
#include "util.h"

static int snapshot_link(const char *from_dir, const char *to_dir, const char *name)
{
	char a[PATH_MAX + 64], b[PATH_MAX + 64];

	snprintf(a, sizeof(a), "%s/%s", from_dir, name);
	snprintf(b, sizeof(b), "%s/%s", to_dir, name);
	if (link(a, b) == 0 || errno == ENOENT)
		return 0;
	return -errno;
}

static int snapshot_files(struct daemon *d, const char *dir)
{
	static const char *const meta[] = { "session.ini", "clock.samples", "perf-clock.samples", "kvm.samples" };
	char name[64], guest[PATH_MAX + 64];
	int r = 0;

	for (unsigned k = 0; k < ARRAY_SIZE(d->spools) && r == 0; k++) {
		if (!d->spools[k])
			continue;
		snprintf(name, sizeof(name), "%scpu%u.spool", k < COLLECTOR_MAX_CPUS ? "" : "perf-", k % COLLECTOR_MAX_CPUS);
		r = snapshot_link(d->s.dir, dir, name);
		if (r == 0) {
			/* --flight-recorder: a perf stream's records kept aside, the count of flush
			 * marker pages freed from a ring stream (the daemon replaces these files by
			 * rename: the link holds the one of now) */
			snprintf(name, sizeof(name), k < COLLECTOR_MAX_CPUS ? "cpu%u.fr" : "perf-cpu%u.side",
				 k % COLLECTOR_MAX_CPUS);
			r = snapshot_link(d->s.dir, dir, name);
		}
	}
	for (size_t i = 0; i < ARRAY_SIZE(meta) && r == 0; i++)
		r = snapshot_link(d->s.dir, dir, meta[i]);
	snprintf(guest, sizeof(guest), "%s/guest", dir);
	if (r == 0 && symlink("../guest", guest) < 0)
		r = -errno;
	return r;
}

/* After the probe burst (ptp) or at once: the snapshot dir, and the reply to the client. */
void daemon_snapshot_finish(struct daemon *d)
{
	char dir[PATH_MAX + 32], buf[PATH_MAX + 256];
	int r = 0;

	if (!d->snap_client)
		return;
	d->snap_probes_left = 0;
	d->snap_flush_frame = 0;
	for (unsigned k = 0; k < ARRAY_SIZE(d->spools); k++) /* the files hold what the ports gave */
		if (d->spools[k] && (r = spool_persist(d->spools[k])) < 0)
			log_warn("snapshot: cpu%u's last bytes not written: %s", k % COLLECTOR_MAX_CPUS, strerror(-r));
	/* With the live merge: its output so far, cut at the request, host events included; the
	 * spools are merged only when it cannot. */
	if (!d->snap_spools && live_snapshot_begin(d, d->snapshots + 1)) {
		d->snapshots++;
		d->snap_live = true;
		return;
	}
	r = 0;
	if (snprintf(dir, sizeof(dir), "%s/snapshot-%u", d->s.dir, ++d->snapshots) >= (int)sizeof(dir) - 32)
		r = -ENAMETOOLONG;
	else if (mkdir(dir, 0700) < 0)
		r = -errno;
	if (r == 0)
		r = snapshot_files(d, dir);
	if (r < 0) {
		snprintf(buf, sizeof(buf), "error: cannot prepare %s: %s\n", dir, strerror(-r));
	} else {
		if (strcmp(d->s.clock_method, "none") &&
		    clocksync_finish(&d->clk, dir, d->s.clock_method, d->host_started_ns, clocksync_host_now(&d->clk)) < 0)
			log_warn("snapshot: no clock.ini for %s (the merge fits clock.samples itself)", dir);
		d->clk.written = false; /* stop writes the session's own clock.ini */
		if (d->perf && d->o->group && hostperf_recording(d->perf)) /* a set's leader */
			snprintf(buf, sizeof(buf), "snapshot: %s\nhost: prefix\n", dir);
		else if (d->perf && d->o->flight_recorder)
			snprintf(buf, sizeof(buf), "snapshot: %s\nhost: %s\n", dir,
				 hostperf_dump(d->perf) < 0 ? "none (host perf is not running)" : "dump");
		else
			snprintf(buf, sizeof(buf), "snapshot: %s\nhost: none (%s)\n", dir,
				 d->perf ? "without --flight-recorder the host recording is written at stop only" :
				 "no host recording in this session");
		log_info("snapshot %u: %s", d->snapshots, dir);
	}
	ctlsock_finish_stop(d->snap_client, buf);
	d->snap_client = NULL;
}

#define SNAP_SLACK_NS 300000000ull /* after the flush interval: the port and the daemon's read */

void daemon_snapshot_request(struct daemon *d, struct bufferevent *client)
{
	uint64_t now = util_now_ns(CLOCK_MONOTONIC);

	if (d->snap_client || d->ph != PH_TRACING) {
		char buf[256];

		snprintf(buf, sizeof(buf), d->snap_client ? "error: a snapshot is being taken: ask again in a moment\n" :
			 "error: the session is %s, not tracing: a snapshot is taken while it traces (stop writes "
			 "the whole file)\n", daemon_phase_names[d->ph]);
		ctlsock_finish_stop(client, buf);
		return;
	}
	d->snap_client = client;
	d->snap_asked_ns = now;
	d->snap_live = d->snap_spools = false;
	/* What the guest traced until now reaches the spools first. FLUSH says when: every CPU's
	 * flush marker. Without it (an older agent, or its ERROR), a quiet ring's whole pages come
	 * within one flush interval and its partial page at the next one (agent/pump.c sends the
	 * partial page only in a period that sent no whole page). */
	d->snap_ready_ns = now + 2ull * d->o->flush_ms * 1000000ull + SNAP_SLACK_NS;
	d->snap_deadline_ns = d->snap_ready_ns + daemon_timeout(d);
	d->snap_flush_refused = false;
	if (agentctl_send_flush(d->agent, d->s.session_id, ++d->snap_flush_seq, &d->snap_flush_frame) < 0) {
		d->snap_flush_frame = 0;
		d->snap_flush_refused = true;
	}
}

void daemon_snapshot_flush_answer(struct daemon *d, bool ok, const char *err)
{
	d->snap_flush_frame = 0;
	if (ok)
		return;
	d->snap_flush_refused = true;
	log_info("snapshot: the agent cannot flush on request (%s): waiting %u ms (two flush intervals) instead",
		 err, 2 * d->o->flush_ms);
}

/* Whether every stream that still runs (ftrace and guest perf) has answered this snapshot's
 * FLUSH; an agent whose perf streams send no flush marker (older) gets the flush interval. */
static bool daemon_snapshot_flushed(const struct daemon *d)
{
	struct spool_stats st;

	if (d->snap_flush_refused)
		return false;
	for (unsigned k = 0; k < COLLECTOR_MAX_CPUS; k++) {
		if (!d->spools[k])
			continue;
		spool_stats(d->spools[k], &st);
		if (st.begun && !st.ended && st.flush_seq < d->snap_flush_seq)
			return false;
	}
	return true;
}

/* The tick, once the spools hold what the guest traced until the request: a probe burst like
 * start's and stop's (the fit then has samples at the snapshot's end), or the snapshot at once
 * without ptp. */
static void daemon_snapshot_live(struct daemon *d, uint64_t now)
{
	char path[PATH_MAX + 32], why[PATH_MAX + 128], buf[PATH_MAX + 128];
	int r = live_snapshot_poll(d, now, path, sizeof(path), why, sizeof(why));

	if (r == 0)
		return;
	d->snap_live = false;
	if (r < 0) {
		log_warn("snapshot: %s; merging the spools instead", why);
		d->snap_spools = true;
		return daemon_snapshot_finish(d);
	}
	log_info("snapshot %u: %s, cut from the live merge %.2f s after the request", d->snapshots, path,
		 (double)(now - d->snap_asked_ns) / 1e9);
	snprintf(buf, sizeof(buf), "snapshot-file: %s\nhost: live (host events until the request)\n", path);
	ctlsock_finish_stop(d->snap_client, buf);
	d->snap_client = NULL;
}

void daemon_snapshot_tick(struct daemon *d, uint64_t now)
{
	if (d->snap_live)
		return daemon_snapshot_live(d, now);
	if (now >= d->snap_deadline_ns)
		return daemon_snapshot_finish(d); /* the agent did not answer the whole burst */
	if (d->snap_probes_left)
		return;
	if (now < d->snap_ready_ns) {
		if (!daemon_snapshot_flushed(d))
			return;
		log_info("snapshot: every CPU flushed its ring %llu ms after the request",
			 (unsigned long long)((now - d->snap_asked_ns) / 1000000));
		d->snap_ready_ns = now;
	}
	if (strcmp(d->s.clock_method, "ptp"))
		return daemon_snapshot_finish(d);
	d->snap_probes_left = PROBES_PER_BURST;
	if (!d->probe_pending)
		daemon_probe_send(d, false);
}
