// SPDX-License-Identifier: GPL-2.0-only
/* The daemon's disk budget (start --max-size, --min-free): every tick the session dir is
 * walked (spools are counted from their stats, which include what is still buffered), the
 * file systems' free space read, and the session stopped before it would pass either bound
 * (while every bound is far, only every DISK_FAR_TICKS ticks, the growth between charged from
 * the spools' stats and a host.data stat per tick: daemon_disk_far; the walk, stats and statfs
 * were half the daemon's CPU at 2 MB/s/vCPU, bench/RESULTS.md):
 * host perf at once (host.data is the big grower on a busy host: kvm_entry/kvm_exit), the
 * spools then discard what comes. The output is counted ahead (disk_projected: the guest's
 * ftrace pages DISK_FTRACE_FACTOR times over, or the live merge's file when that is larger): the
 * live merge writes much of it at the end, an offline merge all of it at stop, which then
 * finds room for it (and refuses it when not). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collector.h"
#include "daemon.h"
#include "disk.h"
#include "hostperf.h"
#include "log.h"
#include "session.h"
#include "spool.h"
#include "util.h"

#define DISK_PERF_RING (516u << 10) /* perf record's default ring per host CPU (512 KiB + header) */
#define DISK_FR_RING_MAX (16u << 20)
/* The far mode (daemon_disk_far): a walk finds every bound more than DISK_NEAR plus
 * 2 * DISK_FAR_TICKS ticks of the last growth away. Between walks the spools' bytes are charged
 * as they come (each 256 KiB, at any rate: the guest cannot outrun it) and host.data's once a
 * tick; a walk comes when the charge reaches half the room above DISK_NEAR. What is not charged
 * then stays below DISK_NEAR: host.data's growth within one tick (64 MiB in 100 ms would be host
 * perf writing 640 MB/s), the live merge's output past DISK_FTRACE_FACTOR (up to twice it, the
 * other half of the room), others' writes to the file system within DISK_FAR_TICKS ticks. While
 * a snapshot is taken (the live merge writes its file in the session dir) every tick walks. */
#define DISK_NEAR (64ull << 20)
#define DISK_FAR_TICKS 10 /* while far, the session dir is walked every 10th tick (1 s) */
#define DISK_HOST_WATCH_MS 10 /* host.data's size between ticks: 0.5 MB at 50 MB/s */

/* The spools' bytes from their stats: on disk, or about to be; with the live merge's word, the
 * ftrace bytes it has still to read and its measured ratio. */
static void disk_spools(const struct daemon *d, struct disk_usage *u)
{
	const struct disk_merged *m = &d->merged;
	struct spool_stats st;

	u->spools = u->ftrace = u->pending = 0;
	for (unsigned k = 0; k < ARRAY_SIZE(d->spools); k++) {
		if (!d->spools[k])
			continue;
		spool_stats(d->spools[k], &st);
		u->spools += st.spooled - st.fr_dropped - st.released;
		if (k >= COLLECTOR_MAX_CPUS)
			continue;
		u->ftrace += st.spooled - st.fr_dropped - st.released;
		u->pending += st.spooled - MIN(st.spooled, MAX(m->done[k], st.stale));
	}
	u->merged_in = d->live && m->known ? m->in : 0;
	u->merged_out = m->out;
}

/* SESSION/live.progress (merge/follow.c, root's like the session dir): how far the live merge is
 * in each ftrace spool, the bytes it read and its output's size then. */
static void disk_merged_read(struct daemon *d)
{
	_cleanup_free_ char *text = NULL;
	struct disk_merged *m = &d->merged;
	char path[PATH_MAX + 32];

	snprintf(path, sizeof(path), "%s/live.progress", d->s.dir);
	if (!d->live || util_read_file_at(AT_FDCWD, path, 1 << 16, &text, NULL) < 0)
		return;
	for (char *line = text, *next; line && *line; line = next) {
		unsigned long long v;
		unsigned cpu;

		if ((next = strchr(line, '\n')))
			*next++ = '\0';
		if (sscanf(line, "out=%llu", &v) == 1)
			m->out = v;
		else if (sscanf(line, "in=%llu", &v) == 1)
			m->in = v;
		else if (sscanf(line, "cpu%u=%llu", &cpu, &v) == 2 && cpu < COLLECTOR_MAX_CPUS)
			m->done[cpu] = v;
	}
	m->known = true;
}

/* What host perf may still write when stopped: its rings. */
static uint64_t disk_perf_headroom(const struct daemon *d)
{
	long cpus = sysconf(_SC_NPROCESSORS_CONF);
	uint64_t ring = d->o->flight_recorder ? MIN(d->o->flight_recorder, DISK_FR_RING_MAX) : DISK_PERF_RING;

	return d->perf && !d->disk_perf_stopped ? (uint64_t)(cpus > 0 ? cpus : 1) * ring : 0;
}


static void disk_cut(struct daemon *d, const char *reason, const char *what)
{
	char elapsed[48] = "before tracing started";

	d->disk_cut_ns = util_now_ns(CLOCK_MONOTONIC); /* the stop line's time too (daemon_stop_begin) */
	if (d->s.started_mono_ns)
		snprintf(elapsed, sizeof(elapsed), "%.1f s into the session",
			 (double)(d->disk_cut_ns - d->s.started_mono_ns) / 1e9);
	snprintf(d->disk_cut, sizeof(d->disk_cut), "cut: %s, %s; %s", what, elapsed,
		 d->perf ? "host perf stopped then, guest data after it dropped" : "guest data after it dropped");
	log_warn("%s", d->disk_cut);
	daemon_disk_stop(d, reason);
}

/* u: the last walk, with the spools as they are now. */
static void disk_check_limit(struct daemon *d, const struct disk_usage *u)
{
	uint64_t o_max = d->o->max_size, projected = disk_projected(u);
	char reason[128], what[384], a[32], b[32], c[32];

	if (!o_max || d->disk_cut[0] || projected + d->disk_grow + disk_perf_headroom(d) < o_max)
		return;
	snprintf(reason, sizeof(reason), "--max-size %llu bytes reached", (unsigned long long)o_max);
	snprintf(what, sizeof(what), "--max-size %s (%s) reached: the session held %s, %s with its output to come",
		 disk_size_str(o_max, a, sizeof(a)),
		 d->o->max_size_given ? "the option" : "the default: a quarter of the file system, at most 16 GiB",
		 disk_size_str(disk_total(u), b, sizeof(b)), disk_size_str(projected, c, sizeof(c)));
	log_info("disk: cut with spools %llu, host.data %llu, live.data %llu, other %llu bytes; %llu grown over "
		 "the last tick, %llu in host perf's rings", (unsigned long long)u->spools, (unsigned long long)u->host,
		 (unsigned long long)u->live, (unsigned long long)u->other, (unsigned long long)d->disk_grow,
		 (unsigned long long)disk_perf_headroom(d));
	disk_cut(d, reason, what);
}

/* What the spools may still write to their files: each one's buffer. */
static uint64_t disk_spool_headroom(const struct daemon *d)
{
	uint64_t n = 0;

	for (unsigned k = 0; k < ARRAY_SIZE(d->spools); k++)
		n += d->spools[k] ? 1 : 0;
	return n * SPOOL_BUF;
}

/* Free space on path's file system against floor (less what the spools buffer, for the session
 * dir's); true when it cut the session. */
static bool disk_check_floor(struct daemon *d, const char *path, const char *whose, uint64_t floor)
{
	char reason[128], what[PATH_MAX + 256], a[32], b[32];
	uint64_t avail, ahead = path == d->s.dir ? disk_spool_headroom(d) : 0;

	if (!floor || d->disk_cut[0] || disk_fs(path, NULL, &avail) < 0 || avail >= floor + ahead)
		return false;
	snprintf(reason, sizeof(reason), "free space below --min-free %llu bytes (%s)", (unsigned long long)floor, whose);
	snprintf(what, sizeof(what), "free space on the file system of %s (%s) fell to %s, below --min-free %s (%s)", path,
		 whose, disk_size_str(avail, a, sizeof(a)), disk_size_str(floor, b, sizeof(b)),
		 d->o->min_free_given ? "the option" : "the default: 5% of that file system, at most 1 GiB");
	disk_cut(d, reason, what);
	return true;
}

static void disk_walk(struct daemon *d);

/* While far: the growth since the walk, as disk_projected counts it, from the spools' stats and
 * host.data's last size; the next walk now once it took the slack. */
static void disk_far_check(struct daemon *d)
{
	disk_spools(d, &d->disk);
	if (disk_projected(&d->disk) >= d->disk_far_proj + d->disk_far_slack)
		disk_walk(d);
}

void daemon_disk_progress(struct daemon *d)
{
	char path[PATH_MAX + 16];
	struct stat st;

	if (d->disk_far)
		return disk_far_check(d); /* a spool's 256 KiB: no stat, no statfs */
	/* host.data grows between ticks too: faster than the spools on a host busy with VM exits */
	snprintf(path, sizeof(path), "%s/host.data", d->s.dir);
	if (d->perf && stat(path, &st) == 0)
		d->disk.host = disk_file_bytes(&st);
	disk_spools(d, &d->disk);
	disk_check_limit(d, &d->disk);
	disk_check_floor(d, d->s.dir, "the session dir", d->o->min_free); /* a fast disk fills between ticks */
}

static void disk_watch_host(evutil_socket_t fd, short what, void *arg)
{
	struct daemon *d = arg;

	if (d->perf && !d->disk_perf_stopped && hostperf_recording(d->perf))
		daemon_disk_progress(d);
}

int daemon_disk_arm(struct daemon *d)
{
	struct timeval tv = { 0, DISK_HOST_WATCH_MS * 1000 };

	d->disk_watch = event_new(d->base, -1, EV_PERSIST, disk_watch_host, d);
	if (!d->disk_watch || event_add(d->disk_watch, &tv) < 0)
		return -ENOMEM;
	d->disk_watching = true;
	return 0;
}

/* Bytes free on path's file system above floor and ahead (0: none, or unknown). */
static uint64_t disk_room_fs(const char *path, bool of_file, uint64_t floor, bool default_floor, uint64_t ahead)
{
	uint64_t size = 0, avail = 0;

	if ((of_file ? disk_fs_of_file(path, &size, &avail) : disk_fs(path, &size, &avail)) < 0)
		return 0;
	floor = default_floor ? disk_default_floor(size) : floor;
	return avail > floor + ahead ? avail - floor - ahead : 0;
}

/* The room to the nearest bound (UINT64_MAX: none) after the walk u: --max-size against the
 * projected size, each file system's free space against its floor (the session dir's less what
 * the spools buffer and, with the live merge, the output it has still to write). */
static uint64_t disk_room(const struct daemon *d, const struct disk_usage *u)
{
	uint64_t room = UINT64_MAX, used = disk_projected(u) + d->disk_grow + disk_perf_headroom(d);
	uint64_t owed = d->live ? disk_projected(u) - disk_total(u) : 0;

	if (d->o->max_size)
		room = used >= d->o->max_size ? 0 : d->o->max_size - used;
	if (d->o->min_free)
		room = MIN(room, disk_room_fs(d->s.dir, false, d->o->min_free, false, disk_spool_headroom(d) + owed));
	if (d->o->out[0])
		room = MIN(room, disk_room_fs(d->o->out, true, d->o->min_free, !d->o->min_free_given, 0));
	return room;
}

/* Near a bound (DISK_RELEASE_NEAR of the room left, at least DISK_RELEASE_MIN), with the live
 * merge: every ftrace spool's pages it has written into its output are freed from the spool (the
 * front of the file becomes a hole, as the flight recorder's), so that a long session keeps going
 * on a bounded disk and nothing is lost from the output. An offline merge of the session dir then
 * lacks them, and says so; --keep-spools keeps them (a bound then stops the session). */
#define DISK_RELEASE_MIN (1ull << 30)
#define DISK_RELEASE_NEAR 4 /* a quarter of --max-size */
#define DISK_RELEASE_STEP (512ull << 20) /* per spool and walk (a walk a second at least) */
static void disk_release(struct daemon *d, struct disk_usage *u)
{
	struct disk_merged *m = &d->merged;
	uint64_t margin = MAX(DISK_RELEASE_MIN, d->o->max_size / DISK_RELEASE_NEAR), freed = 0;
	char a[32], b[32];

	if (!d->live || d->o->keep_spools || d->disk_cut[0] || d->ph != PH_TRACING)
		return;
	if (!m->known || disk_room(d, u) >= margin)
		return;
	for (unsigned k = 0; k < COLLECTOR_MAX_CPUS && k < ARRAY_SIZE(d->spools); k++) {
		struct spool_stats st;
		int64_t r = 0;

		spool_stats(d->spools[k], &st);
		if (d->spools[k]) /* a step a walk: punching 1 GiB of ext4 takes ~0.17 s of the loop */
			r = spool_release(d->spools[k], MIN(m->done[k], st.stale + st.fr_dropped + st.released +
								DISK_RELEASE_STEP));

		if (r < 0 && !m->release_failed) {
			m->release_failed = true;
			log_warn("cpu%u: cannot free the pages the live merge wrote from %s/cpu%u.spool (fallocate "
				 "PUNCH_HOLE: %s): the disk bounds then stop the session; put the VM dir on a file "
				 "system that punches holes (ext4, xfs, btrfs, tmpfs)", k, d->s.dir, k, strerror((int)-r));
		}
		freed += r > 0 ? (uint64_t)r : 0;
	}
	if (!freed)
		return;
	if (m->releases++ == 0)
		log_info("disk: near a bound (%s left): %s of the spools the live merge has written into its output "
			 "freed; an offline merge of %s no longer covers the session's start", disk_size_str(disk_room(d, u), a, sizeof(a)),
			 disk_size_str(freed, b, sizeof(b)), d->s.dir);
	disk_spools(d, u);
	d->disk_total -= MIN(d->disk_total, freed);
}

/* What was freed behind the live merge, from the spools' own counts. */
static uint64_t disk_released(const struct daemon *d)
{
	struct spool_stats st;
	uint64_t n = 0;

	for (unsigned k = 0; k < COLLECTOR_MAX_CPUS && k < ARRAY_SIZE(d->spools); k++) {
		spool_stats(d->spools[k], &st);
		n += st.released;
	}
	return n;
}

/* After a walk: far (the host.data watch rests, the next walk in DISK_FAR_TICKS ticks or once
 * the growth took the slack) or near (the watch runs, every tick walks). */
static void disk_far_follow(struct daemon *d, const struct disk_usage *u)
{
	struct timeval tv = { 0, DISK_HOST_WATCH_MS * 1000 };
	uint64_t room = d->disk_cut[0] ? 0 : disk_room(d, u);
	bool far = room > DISK_NEAR + 2 * DISK_FAR_TICKS * d->disk_grow;

	if (far && !d->disk_far_seen) {
		char a[32];

		log_info("disk: every bound far (%s to the nearest): the session dir walked each second, "
			 "the growth between charged", disk_size_str(room, a, sizeof(a)));
		d->disk_far_seen = true;
	}
	d->disk_far = far;
	d->disk_far_proj = disk_projected(u);
	d->disk_far_slack = far ? (room - DISK_NEAR) / 2 : 0;
	if (!d->disk_watch || far == !d->disk_watching || d->disk_cut[0])
		return;
	if (far)
		event_del(d->disk_watch);
	else if (event_add(d->disk_watch, &tv) < 0)
		return;
	d->disk_watching = !far;
}

/* The session dir walked, the bounds checked, far or near decided. */
static void disk_walk(struct daemon *d)
{
	struct disk_usage u;
	uint64_t total, size;

	/* guest/ holds the guest's metadata, complete once tracing begins (META_END): walked once
	 * then (its ~50 directories were half of each walk) */
	if (disk_usage_fixed(d->s.dir, "guest", d->ph > PH_META ? &d->disk_guest : &(uint64_t){ UINT64_MAX }, &u) < 0)
		return;
	disk_merged_read(d);
	disk_spools(d, &u); /* with what they still buffer */
	total = disk_total(&u);
	/* per tick: after a far stretch the growth spans several of them */
	d->disk_grow = (total > d->disk_total ? total - d->disk_total : 0) / MAX(d->disk_ticks, 1u);
	d->disk_ticks = 0;
	d->disk_total = total;
	d->disk = u;
	disk_release(d, &u);
	disk_check_limit(d, &u);
	if (!disk_check_floor(d, d->s.dir, "the session dir", d->o->min_free) && d->o->out[0]) {
		if (d->o->min_free_given)
			disk_check_floor(d, d->o->out, "the output", d->o->min_free);
		else if (disk_fs_of_file(d->o->out, &size, NULL) == 0)
			disk_check_floor(d, d->o->out, "the output", disk_default_floor(size));
	}
	disk_far_follow(d, &u);
}

void daemon_disk_tick(struct daemon *d)
{
	char path[PATH_MAX + 16];
	struct stat st;

	if (d->ph == PH_HELLO || d->ph == PH_STOPPED)
		return;
	d->disk_ticks++;
	/* a snapshot being taken: the live merge writes SESSION/snapshot-N.data, uncharged */
	if (!d->disk_far || d->disk_ticks >= DISK_FAR_TICKS || d->snap_client)
		return disk_walk(d);
	snprintf(path, sizeof(path), "%s/host.data", d->s.dir);
	if (d->perf && !d->disk_perf_stopped && stat(path, &st) == 0)
		d->disk.host = disk_file_bytes(&st);
	disk_far_check(d);
}

void daemon_disk_final(struct daemon *d)
{
	struct disk_usage u;
	uint64_t released = disk_released(d);
	char v[32];

	if (released) { /* an offline merge says what it lacks */
		snprintf(v, sizeof(v), "%llu", (unsigned long long)released);
		session_ini_set(d->s.dir, "spools_released", v);
	}

	if (disk_usage(d->s.dir, &u) == 0)
		d->disk_total = disk_total(&u); /* the spools are all in their files now */
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
	if (disk_released(d))
		fprintf(f, "disk: %s of the spools freed near the bound once the live merge had written them "
			"(the output has them; an offline 'merge' of the session dir lacks them; --keep-spools keeps them)\n",
			disk_size_str(disk_released(d), a, sizeof(a)));
	if (d->disk_cut[0])
		fprintf(f, "%s\n", d->disk_cut);
}

/* A disk bound reached: the guest's data dropped and host perf stopped now (within one
 * wake-up), the session's phase moved on from the loop. */
void daemon_disk_stop(struct daemon *d, const char *reason)
{
	daemon_discard_all(d);
	if (d->perf && !d->disk_perf_stopped) {
		d->disk_perf_stopped = true;
		hostperf_stop(d->perf); /* reaped where the stop waits for it */
	}
	if (!d->deferred_cut[0])
		snprintf(d->deferred_cut, sizeof(d->deferred_cut), "%s", reason);
	daemon_defer(d);
}
