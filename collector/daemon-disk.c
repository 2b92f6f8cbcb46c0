// SPDX-License-Identifier: GPL-2.0-only
/* The daemon's disk budget (start --max-size, --min-free): every tick the session dir is
 * walked (spools are counted from their stats, which include what is still buffered), the
 * file systems' free space read, and the session stopped before it would pass either bound:
 * host perf at once (host.data is the big grower on a busy host: kvm_entry/kvm_exit), the
 * spools then discard what comes. Without the live merge the output stop writes is counted
 * ahead (about the size of its inputs): stop then finds room for it. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collector.h"
#include "daemon.h"
#include "log.h"
#include "util.h"

#define DISK_PERF_RING (516u << 10) /* perf record's default ring per host CPU (512 KiB + header) */
#define DISK_FR_RING_MAX (16u << 20)

static uint64_t disk_spools(const struct daemon *d)
{
	struct spool_stats st;
	uint64_t total = 0;

	for (unsigned k = 0; k < ARRAY_SIZE(d->spools); k++) {
		if (!d->spools[k])
			continue;
		spool_stats(d->spools[k], &st);
		total += st.spooled - st.fr_dropped; /* on disk, or about to be */
	}
	return total;
}

/* What host perf may still write when stopped: its rings. */
static uint64_t disk_perf_headroom(const struct daemon *d)
{
	long cpus = sysconf(_SC_NPROCESSORS_CONF);
	uint64_t ring = d->o->flight_recorder ? MIN(d->o->flight_recorder, DISK_FR_RING_MAX) : DISK_PERF_RING;

	return d->perf && !d->disk_perf_stopped ? (uint64_t)(cpus > 0 ? cpus : 1) * ring : 0;
}

/* The session's bytes as the limit counts them: held now, plus the output stop merges when no
 * live merge writes it as the session goes. */
static uint64_t disk_projected(const struct daemon *d, uint64_t spools)
{
	uint64_t held = spools + d->disk_host + d->disk_other;

	return held + (live_writes_output(d) ? 0 : spools + d->disk_host);
}

static void disk_cut(struct daemon *d, const char *reason, const char *what)
{
	char elapsed[48] = "before tracing started";

	if (d->s.started_mono_ns)
		snprintf(elapsed, sizeof(elapsed), "%.1f s into the session",
			 (double)(util_now_ns(CLOCK_MONOTONIC) - d->s.started_mono_ns) / 1e9);
	snprintf(d->disk_cut, sizeof(d->disk_cut), "cut: %s, %s; %s", what, elapsed,
		 d->perf ? "host perf stopped then, guest data after it dropped" : "guest data after it dropped");
	log_warn("%s", d->disk_cut);
	daemon_disk_stop(d, reason);
}

static void disk_check_limit(struct daemon *d, uint64_t spools)
{
	uint64_t o_max = d->o->max_size, projected = disk_projected(d, spools);
	char reason[128], what[384], a[32], b[32], c[32];

	if (!o_max || d->disk_cut[0] || projected + d->disk_grow + disk_perf_headroom(d) < o_max)
		return;
	snprintf(reason, sizeof(reason), "--max-size %llu bytes reached", (unsigned long long)o_max);
	snprintf(what, sizeof(what), "--max-size %s (%s) reached: the session held %s%s%s", disk_size_str(o_max, a, sizeof(a)),
		 d->o->max_size_given ? "the option" : "the default: a quarter of the file system, at most 16 GiB",
		 disk_size_str(spools + d->disk_host + d->disk_other, b, sizeof(b)),
		 live_writes_output(d) ? "" : ", with the output stop merges ",
		 live_writes_output(d) ? "" : disk_size_str(projected, c, sizeof(c)));
	disk_cut(d, reason, what);
}

/* Free space on path's file system against floor; true when it cut the session. */
static bool disk_check_floor(struct daemon *d, const char *path, const char *whose, uint64_t floor)
{
	char reason[128], what[PATH_MAX + 256], a[32], b[32];
	uint64_t avail;

	if (!floor || d->disk_cut[0] || disk_fs(path, NULL, &avail) < 0 || avail >= floor)
		return false;
	snprintf(reason, sizeof(reason), "free space below --min-free %llu bytes (%s)", (unsigned long long)floor, whose);
	snprintf(what, sizeof(what), "free space on the file system of %s (%s) fell to %s, below --min-free %s (%s)", path,
		 whose, disk_size_str(avail, a, sizeof(a)), disk_size_str(floor, b, sizeof(b)),
		 d->o->min_free_given ? "the option" : "the default: 5% of that file system, at most 1 GiB");
	disk_cut(d, reason, what);
	return true;
}

void daemon_disk_progress(struct daemon *d)
{
	disk_check_limit(d, disk_spools(d));
}

void daemon_disk_tick(struct daemon *d)
{
	struct disk_usage u;
	uint64_t spools, total, size;

	if (d->ph == PH_HELLO || d->ph == PH_STOPPED || disk_usage(d->s.dir, &u) < 0)
		return;
	spools = disk_spools(d);
	total = spools + u.host + u.other;
	d->disk_grow = total > d->disk_total ? total - d->disk_total : 0;
	d->disk_total = total;
	d->disk_host = u.host;
	d->disk_other = u.other;
	disk_check_limit(d, spools);
	if (disk_check_floor(d, d->s.dir, "the session dir", d->o->min_free) || !d->o->out[0])
		return;
	if (d->o->min_free_given)
		disk_check_floor(d, d->o->out, "the output", d->o->min_free);
	else if (disk_fs_of_file(d->o->out, &size, NULL) == 0)
		disk_check_floor(d, d->o->out, "the output", disk_default_floor(size));
}

void daemon_disk_final(struct daemon *d)
{
	struct disk_usage u;

	if (disk_usage(d->s.dir, &u) == 0)
		d->disk_total = u.spools + u.host + u.other; /* the spools are all in their files now */
}

void daemon_disk_summary(const struct daemon *d, FILE *f)
{
	char a[32], b[32], c[32], e[32];
	uint64_t avail = 0;

	disk_fs(d->s.dir, NULL, &avail);
	fprintf(f, "disk: the session holds %s of its --max-size %s; %s free on its file system (--min-free %s)\n",
		disk_size_str(d->disk_total, a, sizeof(a)),
		d->o->max_size ? disk_size_str(d->o->max_size, b, sizeof(b)) : "none",
		disk_size_str(avail, c, sizeof(c)), d->o->min_free ? disk_size_str(d->o->min_free, e, sizeof(e)) : "none");
	if (d->disk_cut[0])
		fprintf(f, "%s\n", d->disk_cut);
}
