// SPDX-License-Identifier: GPL-2.0-only
/* `snapshot`: what the session holds now, as a session dir the merge reads while tracing goes
 * on. SESSION/snapshot-N gets hard links to the spools (their current inodes: the merge reads
 * each up to the size it has when opened, whole pages), the clock samples and session.ini, a
 * clock.ini fitted from the probes so far, and guest -> ../guest. With --flight-recorder the
 * host's perf writes its overwritable rings into a dump (SIGUSR2) that the client moves in as
 * host.data; without it the host recording is written at stop only. With ptp the daemon first
 * takes a probe burst (daemon.c), so the snapshot's fit has samples at both of its ends. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon.h"
#include "log.h"
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
	for (unsigned k = 0; k < ARRAY_SIZE(d->spools); k++) /* the files hold what the ports gave */
		if (d->spools[k] && (r = spool_persist(d->spools[k])) < 0)
			log_warn("snapshot: cpu%u's last bytes not written: %s", k % COLLECTOR_MAX_CPUS, strerror(-r));
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
		if (d->perf && d->o->flight_recorder)
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
