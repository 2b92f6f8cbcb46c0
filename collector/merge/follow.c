// SPDX-License-Identifier: GPL-2.0-only
/* Following a session while it traces (merge --follow, the daemon's live merge).
 * The daemon's words come on a pipe, one per line: "host SIZE TS" (host.data holds every record
 * before host time TS in its first SIZE bytes: perf flushed its rings on a ping), "snapshot T
 * PATH" (a perf.data at PATH of everything before host time T, written once no source can still
 * bring a record before T: follow_snapshot), "snapshot-cancel", "clock" (a probe's times were
 * appended to clock.samples: a refit may let more guest records out) and "end" (the session is over:
 * perf has finished host.data, every spool has its end marker or never will, clock.samples is
 * complete). Guest CPUs say how far they are complete with flush markers. A
 * record is written once no source can still bring an earlier one; until "end" the merge waits
 * for the others, so memory stays one round of host records and one page per vCPU. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "collector.h"
#include "follow.h"
#include "log.h"
#include "merge.h"
#include "out.h"
#include "perf_writer.h"
#include "source.h"
#include "tdata.h"
#include "tracing_data.h"
#include "util.h"

#define FOLLOW_WAIT_MS 50 /* polling the spools: a guest CPU's next page or flush marker */
/* Waiting on the daemon's words only: nothing can go out before host.data's next horizon ("host",
 * every 0.5 s) or the next probe ("clock", a second at most). Polling the spools meanwhile cost
 * the follower ~20% of its CPU at 2 MB/s per vCPU (bench/RESULTS.md); this is only the bound. */
#define FOLLOW_WORD_WAIT_MS 1000
#define FOLLOW_REFIT_NS 200000000ull /* at most this often, when clock.samples grew */

struct follow {
	int fd, dfd;
	const char *session_dir;
	char line[PATH_MAX + 64];
	/* "snapshot T PATH": a perf.data of everything before host time T, at PATH, once written */
	char snap_path[PATH_MAX];
	uint64_t snap_t;
	size_t len;
	bool ended;
	bool refit_due; /* "clock" came: clock.samples grew */
	uint64_t next_refit_ns;
	unsigned refits;
	uint64_t clamped; /* guest times raised to the last time written (a refit moved them back) */
	off_t samples_size; /* clock.samples when last fitted */
	uint64_t progress_ns; /* live.progress is written again after this */
	unsigned busy;        /* records written since the clock was last read */
};

/* Whether new probes came since the last fit (clock.samples grew). */
static bool samples_grew(struct follow *f)
{
	struct stat st;

	if (fstatat(f->dfd, "clock.samples", &st, 0) < 0 || st.st_size == f->samples_size)
		return false;
	f->samples_size = st.st_size;
	return true;
}

/* The snapshot asked for: f->snap_path (a perf.data directory like the output, or a file),
 * written as PATH.tmp and renamed; PATH.err with the reason when it cannot be. The daemon waits
 * for either. */
static void follow_snapshot(struct merge_ctx *m, struct follow *f)
{
	char tmp[PATH_MAX + 16], data[PATH_MAX + 32], err[PATH_MAX + 16];
	int r = 0;

	snprintf(tmp, sizeof(tmp), "%s.tmp", f->snap_path);
	snprintf(data, sizeof(data), m->out_dir ? "%s/data" : "%s", tmp);
	if (m->out_dir && mkdir(tmp, 0700) < 0)
		r = -errno;
	if (r == 0 && !m->index_done)
		r = merge_out_guest_index(m);
	if (r == 0)
		r = merge_header_snapshot(m, data);
	if (r == 0)
		r = merge_dir_finish(m, tmp);
	if (r == 0 && rename(tmp, f->snap_path) < 0)
		r = -errno;
	if (r < 0) {
		char why[256];
		int n = snprintf(why, sizeof(why), "%s\n", strerror(-r));

		log_warn("snapshot %s: cannot write it from the live merge: %s", f->snap_path, strerror(-r));
		snprintf(err, sizeof(err), "%s.err", f->snap_path);
		(void)util_write_file(err, why, (size_t)n, 0600);
	} else {
		log_info("snapshot %s: written from the live merge (%" PRIu64 " guest records so far)", f->snap_path,
			 m->guest_samples + m->vm[0].gp.records);
	}
	f->snap_path[0] = '\0';
}

/* A live migration the daemon recorded since (session.ini): the destination QEMU's vCPU threads
 * are the guest's at once; its sample is queued once the clock's fit has probes after the
 * switch (the source QEMU, until it exits, reads the probes sent to the guest: the fit has no
 * step before), at the end with clock.ini's. */
static int follow_migrations(struct merge_ctx *m, struct follow *f)
{
	struct merge_vm *vm = &m->vm[0];
	uint32_t n0 = vm->guest.nmig, n = merge_guest_reload_migrations(&vm->guest, f->dfd);
	int r;

	for (uint32_t k = n0; k < n0 + n; k++) {
		if ((r = merge_vcpu_adopt(&vm->vcpu, &vm->guest, (int32_t)vm->guest.mig[k].to)) < 0)
			return r;
		log_info("live merge: the guest migrated to QEMU pid %u: its vCPU threads followed from here",
			 vm->guest.mig[k].to);
	}
	/* placed only at the end (the kvm clock: its readings are read again at the end only): the
	 * guest's records since were converted without the step, stop merges again (merge.ini) */
	if (f->ended)
		vm->migs.late += merge_migs_update(vm, UINT64_MAX);
	else
		merge_migs_update(vm, vm->guest.live_fitted_until);
	return 0;
}

static int follow_command(struct merge_ctx *m, struct follow *f, const char *cmd)
{
	unsigned long long size, ts;
	int n = 0;

	if (sscanf(cmd, "host %llu %llu", &size, &ts) == 2) {
		if (m->host.present && m->host.follow)
			merge_host_horizon(&m->host, size, ts);
		return 0;
	}
	if (sscanf(cmd, "snapshot %llu %n", &ts, &n) == 1 && n > 0 && cmd[n] == '/' && strlen(cmd + n) < sizeof(f->snap_path)) {
		snprintf(f->snap_path, sizeof(f->snap_path), "%s", cmd + n);
		f->snap_t = ts;
		f->next_refit_ns = 0; /* the daemon's probe burst for it: fitted at the next wait */
		return 0;
	}
	if (!strcmp(cmd, "clock")) {
		f->refit_due = true;
		return 0;
	}
	if (!strcmp(cmd, "snapshot-cancel")) { /* the daemon gave up waiting: it merges the spools */
		f->snap_path[0] = '\0';
		return 0;
	}
	if (strcmp(cmd, "end"))
		return 0; /* a word of a newer daemon */
	if (f->snap_path[0]) /* asked just before the end: what was written until now */
		follow_snapshot(m, f);
	f->ended = true;
	if (m->host.present && merge_host_finish(&m->host) < 0)
		return -EBADMSG;
	m->vm[0].guest.follow = false; /* spools: to their end markers, or their end */
	if (m->vm[0].guest.present) { /* the rest with the session's own clock.ini, as offline */
		_cleanup_free_ char *ini = NULL;
		const char *v;

		if (merge_input_read(f->dfd, f->session_dir, "session.ini", 1 << 16, &ini, NULL) == 0 &&
		    (v = strstr(ini, "\nstopped_mono_ns=")))
			m->vm[0].guest.stopped_ns = strtoull(v + 17, NULL, 10); /* the window closes at stop */
		clock_apply_free(&m->vm[0].guest.clock);
		m->vm[0].guest.clock_aligned = false;
		merge_meta_clock(&m->vm[0].guest, f->dfd);
		if (m->vm[0].guest.perf_clock_needed)
			merge_meta_perf_clock(&m->vm[0].guest, f->dfd);
		return follow_migrations(m, f);
	}
	return 0;
}

/* Waits for the daemon's next words (or timeout_ms): 0, or -EPIPE when it is gone. */
static int follow_wait(struct merge_ctx *m, struct follow *f, int timeout_ms)
{
	struct pollfd p = { .fd = f->fd, .events = POLLIN };
	char buf[512];
	ssize_t n;
	int r;

	m->vm[0].guest.follow_gen++; /* the spools may have grown meanwhile */
	if (poll(&p, 1, timeout_ms) <= 0)
		return 0;
	n = read(f->fd, buf, sizeof(buf));
	if (n <= 0)
		return -EPIPE; /* no "end": the daemon died; the session dir stays for 'merge' */
	for (ssize_t i = 0; i < n && !f->ended; i++) {
		if (buf[i] != '\n') {
			if (f->len < sizeof(f->line) - 1)
				f->line[f->len++] = buf[i];
			continue;
		}
		f->line[f->len] = 0;
		f->len = 0;
		if ((r = follow_command(m, f, f->line)) < 0)
			return r;
	}
	return 0;
}

/* live.progress, after a flush: how far each guest CPU's spool is in the output (every page
 * before its offset is in the file), the spool bytes read and the output's size then. The
 * daemon charges the output still to come at this measured ratio, and when its disk bounds come
 * near it frees what is in the output from the spools (daemon-disk.c). tmp + rename; the
 * session dir is root's. */
#define FOLLOW_PROGRESS_NS 250000000ull
static void follow_progress(struct merge_ctx *m, struct follow *f)
{
	const struct merge_guest *g = &m->vm[0].guest;
	char text[96 + COLLECTOR_MAX_CPUS * 48];
	uint64_t now = util_now_ns(CLOCK_MONOTONIC);
	size_t n;
	int fd, r;

	if (m->pipe || now < f->progress_ns)
		return;
	f->progress_ns = now + FOLLOW_PROGRESS_NS;
	n = (size_t)snprintf(text, sizeof(text), "out=%" PRIu64 "\nin=%" PRIu64 "\n", perf_writer_size(m->w),
			     g->loss.bytes_read);
	for (uint32_t i = 0; g->present && g->cpus && i < g->ncpus && n + 48 < sizeof(text); i++) {
		const struct guest_cpu *c = &g->cpus[i];
		/* the page at pos - page_size may still hold the head: it stays */
		uint64_t done = c->pos >= c->data_off + g->page_size ? c->pos - g->page_size : c->data_off;

		if (c->fd >= 0)
			n += (size_t)snprintf(text + n, sizeof(text) - n, "cpu%u=%" PRIu64 "\n", c->cpu, done);
	}
	fd = openat(f->dfd, "live.progress.tmp", O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	r = util_write_full(fd, text, n);
	if (close(fd) == 0 && r == 0)
		(void)renameat(f->dfd, "live.progress.tmp", f->dfd, "live.progress");
}

/* A merge that never waits (a flood keeps every source busy) still says how far it is, every
 * FOLLOW_PROGRESS_NS: the output flushed first, so what it says is in the file. */
#define FOLLOW_BUSY_CHECK 4096
static int follow_busy_progress(struct merge_ctx *m, struct follow *f)
{
	int r;

	if (m->pipe || ++f->busy < FOLLOW_BUSY_CHECK)
		return 0;
	f->busy = 0;
	if (util_now_ns(CLOCK_MONOTONIC) < f->progress_ns)
		return 0;
	if ((r = perf_writer_flush(m->w)) == 0)
		follow_progress(m, f);
	return r;
}

/* Before waiting: what was merged goes out (perf_writer_flush: a file shows it, compressed or
 * not, and the disk budget counts it); in pipe mode after a round marker (perf script shows a
 * round once it ends). */
static int follow_flush(struct merge_ctx *m)
{
	static const struct perf_event_header round = { .type = PERF_REC_FINISHED_ROUND, .size = 8 };
	int r = 0;

	if (m->pipe && m->since_round) {
		m->since_round = 0;
		r = perf_writer_record(m->w, &round);
	}
	return r < 0 ? r : perf_writer_flush(m->w);
}

static int follow_flush_progress(struct merge_ctx *m, struct follow *f)
{
	int r = follow_flush(m);

	if (r == 0)
		follow_progress(m, f);
	return r;
}

/* Whether what holds the merge back is a bound only the daemon's words move: host.data's horizon,
 * or the guest clock's fit (none yet, or guest times past its newest probe). */
static bool follow_waits_on_words(const struct merge_ctx *m, bool host_blocked, uint64_t bound)
{
	const struct merge_guest *g = &m->vm[0].guest;

	if (host_blocked && bound == m->host.bound)
		return true;
	if (!g->present || !g->follow)
		return false;
	return !g->clock_aligned || (g->live_fit_until && bound == g->live_fit_until) ||
	       (g->perf_clock_needed && (!g->perf_clock_on || (g->perf_fit_until && bound == g->perf_fit_until)));
}

static int merge_follow_loop(struct merge_ctx *m, struct follow *f)
{
	for (;;) {
		struct host_rec *q = NULL;
		struct merge_source *best = NULL;
		bool blocked = false, host_blocked = false;
		uint64_t bt = UINT64_MAX, bound = UINT64_MAX, now, t;
		int brank = -1;
		int r = merge_source_host_next(m, &q);

		if (r < 0)
			return r;
		if (r == 2)
			blocked = host_blocked = true, bound = m->host.bound, q = NULL;
		/* No guest time converts before a fit exists (the cycle clock's rate needs the
		 * early probes): everything waits for it. */
		if (m->vm[0].guest.present && m->vm[0].guest.follow && !m->vm[0].guest.clock_aligned)
			blocked = true, bound = 0;
		/* A guest time after the newest probe fitted would be extrapolated by the fit (on a
		 * cycle clock, off by its rate error times the distance; slower probes after it
		 * bound it only by their wide brackets): nothing is written past it until a later
		 * probe is fitted, so every conversion is an interpolation. A head converted while
		 * it waited is converted again by the new fit (clock_gen). */
		if (m->vm[0].guest.present && m->vm[0].guest.follow && m->vm[0].guest.live_fit_until)
			blocked = true, bound = MIN(bound, m->vm[0].guest.live_fit_until);
		if (m->vm[0].guest.present && m->vm[0].guest.follow && m->vm[0].guest.perf_clock_needed && m->vm[0].guest.perf_fit_until)
			blocked = true, bound = MIN(bound, m->vm[0].guest.perf_fit_until);
		if (m->vm[0].guest.present && m->vm[0].guest.follow && m->vm[0].guest.perf_clock_needed && !m->vm[0].guest.perf_clock_on)
			blocked = true, bound = 0; /* guest perf's own fit (perf-clock.samples) first */
		for (size_t i = 0; i < m->n_src && bound; i++) {
			const struct merge_source *s = &m->src[i];

			if (s->kind->peek(s, &t)) {
				merge_source_before(&m->src[i], t, &best, &bt, &brank);
			} else if (s->kind->blocked(s, &t)) {
				blocked = true;
				bound = MIN(bound, t);
			}
		}
		if (f->snap_path[0]) { /* everything before the snapshot's time written: cut here */
			uint64_t next = MIN(q ? q->ts : UINT64_MAX, best ? bt : UINT64_MAX);

			if (next >= f->snap_t && (!blocked || bound >= f->snap_t)) {
				follow_snapshot(m, f);
				continue;
			}
		}
		if (q && q->ts <= bt && (!blocked || q->ts <= bound)) {
			merge_host_take(&m->host);
			r = merge_source_host_emit(m, q, false);
			merge_host_release(&m->host, q);
		} else if (best && (!blocked || bt < bound || (bt == bound && merge_source_rank(best) == 0))) {
			/* At the bound itself a blocked stream may still bring a record of that time
			 * that goes first (a FORK): only a FORK goes now, as the whole-file merge would. */
			if (bt < m->last_ts) { /* a refit moved this CPU's times back: keep the order */
				f->clamped++;
				best->kind->raise(best, m->last_ts);
				bt = m->last_ts;
			}
			if (!m->index_done && (r = merge_out_guest_index(m)) < 0)
				return r;
			m->last_ts = MAX(m->last_ts, bt);
			r = best->kind->emit(m, best);
			if (r == 0)
				r = follow_busy_progress(m, f);
		} else if (!q && !best && !blocked) {
			return 0;
		} else if ((r = follow_flush_progress(m, f)) < 0) {
			return r;
		} else if ((r = follow_wait(m, f, follow_waits_on_words(m, host_blocked, bound) && !f->refit_due ?
						   FOLLOW_WORD_WAIT_MS : FOLLOW_WAIT_MS)) == 0 &&
			   !f->ended && m->vm[0].guest.present && (now = util_now_ns(CLOCK_MONOTONIC)) >= f->next_refit_ns &&
			   (samples_grew(f) || f->refit_due)) {
			f->next_refit_ns = now + FOLLOW_REFIT_NS;
			f->refit_due = false;
			if (merge_meta_clock_live(&m->vm[0].guest, f->dfd) == 0) {
				f->refits++;
				m->live_bound_ns = MAX(m->live_bound_ns, m->vm[0].guest.clock.error_bound_ns +
									    m->vm[0].guest.live_extra_ns);
			}
			if (m->vm[0].guest.perf_clock_needed) {
				merge_meta_perf_clock(&m->vm[0].guest, f->dfd);
				m->live_bound_ns = MAX(m->live_bound_ns, m->vm[0].guest.perf_clock.error_bound_ns +
									    m->vm[0].guest.perf_live_extra_ns);
			}
			r = follow_migrations(m, f);
		}
		if (r < 0)
			return r;
	}
}

/* File format: a HEADER_FEATURE record (type 80): u64 feature id, then the feature as a file's
 * section holds it; here HEADER_OSRELEASE (4), a string: u32 length (a multiple of 64) and the
 * string, NUL-padded. Perf record writes its features so in a pipe, before the tracing data;
 * perf 6.1's evlist reads a pipe up to the first one, and without one misreads the tracing data
 * as records ("failed to process type"). */
static int follow_feature(struct merge_ctx *m)
{
	struct utsname u;
	struct {
		struct perf_event_header hdr;
		uint64_t feat;
		uint32_t len;
		char s[128];
	} __attribute__((packed)) rec = { .feat = 4 };

	if (uname(&u) < 0)
		snprintf(u.release, sizeof(u.release), "unknown");
	rec.len = strlen(u.release) < 64 ? 64 : 128;
	snprintf(rec.s, rec.len, "%s", u.release);
	rec.hdr = (struct perf_event_header){ .type = PERF_REC_HEADER_FEATURE, .size = (uint16_t)(20 + rec.len) };
	return perf_writer_record(m->w, &rec);
}

/* Pipe mode: the attrs as HEADER_ATTR records, a feature, and the tracing data (the host's
 * tracefs formats and the guest's, as the file's would be) as a HEADER_TRACING_DATA record and
 * its bytes, before any event: perf reads a pipe in order. */
int merge_follow_preamble(struct merge_ctx *m, int fd)
{
	_cleanup_free_ uint8_t *td = NULL;
	size_t td_len = 0;
	int r = perf_writer_open_pipe(fd, &m->w);

	for (size_t i = 0; r == 0 && i < m->n_attrs; i++) {
		const struct perf_attr_ids *a = &m->attrs[i];
		size_t len = sizeof(struct perf_event_header) + PERF_ATTR_SIZE + a->n_ids * 8;
		struct perf_event_header h = { .type = PERF_REC_HEADER_ATTR, .size = (uint16_t)len };
		struct perf_event_attr at = a->attr;

		if (len > sizeof(m->rec))
			return -E2BIG;
		at.size = PERF_ATTR_SIZE;
		memcpy(m->rec, &h, sizeof(h));
		memcpy(m->rec + sizeof(h), &at, PERF_ATTR_SIZE);
		memcpy(m->rec + sizeof(h) + PERF_ATTR_SIZE, a->ids, a->n_ids * 8);
		r = perf_writer_record(m->w, m->rec);
	}
	if (r == 0)
		r = follow_feature(m);
	if (r == 0 && m->have_td && (r = tracing_data_build(&m->td, &td, &td_len)) == 0) {
		uint32_t aligned = (uint32_t)((td_len + 7) & ~(size_t)7);
		struct { struct perf_event_header h; uint32_t size, pad; } rec = {
			{ .type = PERF_REC_TRACING_DATA, .size = 16 }, aligned, 0 };
		static const uint8_t zero[8];

		r = perf_writer_record(m->w, &rec);
		if (r == 0)
			r = perf_writer_raw(m->w, td, td_len);
		if (r == 0 && aligned > td_len)
			r = perf_writer_raw(m->w, zero, aligned - td_len);
	}
	return r < 0 ? r : perf_writer_flush(m->w);
}

/* merge --follow: the loop until the daemon's "end", then perf's own tracing data; the summary's
 * "live:" line. 0 or -errno (said). */
int merge_follow(struct merge_ctx *m, const struct merge_options *o, const char *data)
{
	struct follow f = { .fd = o->follow_fd, .dfd = open(o->session_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC),
			    .session_dir = o->session_dir };
	int r;

	if (m->vm[0].guest.present && m->vm[0].guest.clock_aligned) { /* fitted at load already */
		f.refits = 1;
		m->live_bound_ns = m->vm[0].guest.clock.error_bound_ns;
	}

	/* stop's stalls line: the report's pass over the output, made here as it is written (that
	 * pass was most of stop's CPU: bench/RESULTS.md) */
	if (!m->pipe && m->have_td) {
		_cleanup_free_ uint8_t *td = NULL;
		size_t td_len = 0;

		if (tracing_data_build(&m->td, &td, &td_len) == 0 &&
		    report_live_new(m->attrs, m->n_attrs, td, td_len, &m->stalls) == 0)
			perf_writer_tap(m->w, report_live_record, m->stalls);
	}
	r = f.dfd < 0 ? -errno : merge_follow_loop(m, &f);
	if (f.dfd >= 0)
		close(f.dfd);
	if (r == 0 && (r = merge_tdata_final(m)) < 0)
		log_error("%s: the host recording's final tracing data is malformed", o->session_dir);
	if (r == -EPIPE) {
		log_error("live merge stopped: its daemon is gone (no 'end' came); %s is unfinished: merge "
			  "the session with 'trace-collector merge %s -o OUT'", data, o->session_dir);
		return r;
	}
	if (r < 0) {
		log_error("live merge failed: %s", m->host.err[0] ? m->host.err : strerror(-r));
		return r;
	}
	if (f.refits)
		printf("  live:   merged while tracing; clock fitted %u times from the probes so far (error bounds up "
		       "to %" PRIu64 " ns), at the end clock.ini's; %" PRIu64 " guest times raised to keep the "
		       "order\n", f.refits, m->live_bound_ns, f.clamped);
	else
		printf("  live:   merged while tracing; no guest time converted before the end (a fit waits for "
		       "probes spanning %llu s), then with clock.ini's; %" PRIu64 " guest times raised to keep "
		       "the order\n", (unsigned long long)(MERGE_LIVE_MIN_SPAN_NS / 1000000000ull), f.clamped);
	return 0;
}
