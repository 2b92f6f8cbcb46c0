// SPDX-License-Identifier: GPL-2.0-only
/* The daemon's data streams: each trace-path (and perf-path) port opened with its spool, the
 * spools' ops (an error is only recorded; daemon_deferred acts on it from the loop), and
 * whether every stream has ended. */
#include <errno.h>
#include <event2/event.h>
#include <stdio.h>
#include <string.h>

#include "collector.h"
#include "daemon.h"
#include "disk.h"
#include "log.h"
#include "ports.h"
#include "session.h"
#include "spool.h"
#include "util.h"

static void daemon_spool_error(void *userdata, unsigned k, int err);
static void daemon_spool_progress(void *userdata, unsigned k);
static struct spool *const *daemon_spool_peers(void *userdata);

/* Bytes an earlier session left in a FIFO (QEMU's pipe chardev never drops them). */
void daemon_drain(struct port *p)
{
	char path[PATH_MAX + 8];
	uint64_t n = port_drain(p);

	if (n)
		log_info("%s: dropped %llu stale bytes queued before this session", port_path(p, true, path, sizeof(path)),
			 (unsigned long long)n);
}

static int daemon_open_stream(struct daemon *d, unsigned k)
{
	unsigned cpu = k % COLLECTOR_MAX_CPUS;
	bool perf = k >= COLLECTOR_MAX_CPUS;
	char path[PATH_MAX + 8], name[32], why[2 * PATH_MAX + 512];
	int r;

	snprintf(name, sizeof(name), "%s%u", daemon_stream_port(k), cpu);
	port_init(&d->data[k], d->o->vm_dir, name, d->kind);
	r = port_open(&d->data[k], false);
	if (port_refused(&d->data[k], r, d->o->vm_dir, d->o->name, why, sizeof(why))) {
		log_error("%s", why);
		return r;
	}
	if (r < 0 && d->o->allow_partial) {
		log_warn("cannot open %s: %s — cpu%u's %s is not collected (--allow-partial); run 'trace-collector "
			 "setup --name %s --cpus %u' to collect it", port_path(&d->data[k], true, path, sizeof(path)),
			 strerror(-r), cpu, perf ? "guest perf" : "trace", d->o->name, d->hello.ncpus);
		d->cpu_missing[k] = true;
		return 0;
	}
	if (r < 0) {
		log_error("cannot open %s: %s — the guest has %u CPUs; run 'trace-collector setup --name %s --cpus %u' "
			  "(and give the VM the new ports), or pass --allow-partial to trace the CPUs that have ports",
			  port_path(&d->data[k], true, path, sizeof(path)), strerror(-r), d->hello.ncpus,
			  d->o->name, d->hello.ncpus);
		return r;
	}
	if (d->kind == PORT_FIFO)
		daemon_drain(&d->data[k]);
	r = spool_new(&(struct spool_ops){ .userdata = d, .error = daemon_spool_error,
					   .progress = daemon_spool_progress, .peers = daemon_spool_peers },
		      cpu, perf, &d->data[k], d->s.dir, d->s.session_id, d->hello.page_size, &d->spools[k]);
	if (r == 0 && d->o->flight_recorder)
		spool_flight_recorder(d->spools[k], d->o->flight_recorder);
	if (r == 0)
		r = spool_arm(d->spools[k], d->base);
	if (r < 0)
		log_error("cpu%u: cannot create %s/%scpu%u.spool: %s", cpu, d->s.dir, perf ? "perf-" : "", cpu,
			  strerror(-r));
	return r;
}

int daemon_open_data(struct daemon *d)
{
	for (unsigned k = 0; k < 2 * COLLECTOR_MAX_CPUS; k++) {
		int r = daemon_stream(d, k) ? daemon_open_stream(d, k) : 0;

		if (r < 0)
			return r;
	}
	return 0;
}

/* A spool's port or file failed (acted on from the loop). */
static void daemon_spool_failed(struct daemon *d, unsigned k, int err)
{
	unsigned cpu = k % COLLECTOR_MAX_CPUS;
	const char *pre = k < COLLECTOR_MAX_CPUS ? "" : "perf-";
	char reason[128];

	if ((err == -EPIPE || err == -ECONNRESET) && daemon_migration_port_ended(d, (int)k))
		return; /* the source's end of a socket: the destination's connection takes over */
	if (err == -EPIPE || err == -ECONNRESET) {
		d->data_gone[k] = true;
		log_warn("cpu%u: %s%u closed (QEMU gone?)", cpu, daemon_stream_port(k), cpu);
		return;
	}
	log_error("cpu%u: cannot write %s/%scpu%u.spool: %s — stopping; what was spooled is kept",
		  cpu, d->s.dir, pre, cpu, strerror(-err));
	session_release_reserve(&d->s); /* room for session.ini and the stop's files */
	snprintf(reason, sizeof(reason), "%s writing %scpu%u.spool", err == -ENOSPC ? "disk full" : strerror(-err),
		 pre, cpu);
	daemon_discard_all(d);
	daemon_stop_begin(d, reason);
}

/* A disk cut, after the guest data was discarded and host perf stopped: the phase moves on. */
static void daemon_disk_act(struct daemon *d, const char *reason)
{
	if (d->ph == PH_BINARIES)
		return daemon_binaries_end(d, "cut:disk-limit", reason);
	if (d->ph == PH_START) { /* the streams began before START's OK: the session stops once it came */
		snprintf(d->disk_reason, sizeof(d->disk_reason), "%s", reason);
		return;
	}
	daemon_stop_begin(d, reason);
}

void daemon_deferred(evutil_socket_t fd, short what, void *arg)
{
	struct daemon *d = arg;
	char reason[sizeof(d->deferred_cut)];

	for (unsigned k = 0; k < ARRAY_SIZE(d->spool_err); k++) {
		int err = d->spool_err[k];

		d->spool_err[k] = 0;
		if (err)
			daemon_spool_failed(d, k, err);
	}
	daemon_migration_due(d);
	if (d->deferred_cut[0]) {
		snprintf(reason, sizeof(reason), "%s", d->deferred_cut);
		d->deferred_cut[0] = '\0';
		daemon_disk_act(d, reason);
	}
}

/* spool's ops: an error is recorded, acted on from the loop; progress feeds the disk budget. */
static void daemon_spool_error(void *userdata, unsigned k, int err)
{
	struct daemon *d = userdata;

	if (k < ARRAY_SIZE(d->spool_err) && !d->spool_err[k])
		d->spool_err[k] = err ? err : -EIO;
	daemon_defer(d);
}

#define DISK_CHECK_STEP (256u << 10)

static void daemon_spool_progress(void *userdata, unsigned k)
{
	struct daemon *d = userdata;
	struct spool_stats st;

	spool_stats(d->spools[k], &st);
	d->disk_unchecked += st.spooled - MIN(st.spooled, d->disk_seen[k]);
	d->disk_seen[k] = st.spooled;
	if (d->disk_unchecked < DISK_CHECK_STEP)
		return;
	d->disk_unchecked = 0;
	daemon_disk_progress(d);
}

static struct spool *const *daemon_spool_peers(void *userdata)
{
	return ((struct daemon *)userdata)->spools;
}

/* Every stream's end marker seen (or the stream gone). After a disk cut the spools discard
 * what comes unscanned, so no end marker is ever seen there: the agent's STOPPED (which comes
 * after it wrote them) ends them, or stop waited --timeout for nothing (7.4 s after a cut). */
bool daemon_all_ended(const struct daemon *d)
{
	struct spool_stats st;

	if (d->disk_cut[0] && d->stopped_msg)
		return true;
	for (unsigned k = 0; k < ARRAY_SIZE(d->spools); k++) {
		if (!daemon_stream(d, k))
			continue;
		spool_stats(d->spools[k], &st);
		if (!st.ended && !d->data_gone[k] && !d->cpu_missing[k])
			return false;
	}
	return true;
}
