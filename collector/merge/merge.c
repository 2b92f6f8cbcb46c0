// SPDX-License-Identifier: GPL-2.0-only
/* The merge: host records and per-vCPU guest events, k-way merged by time into one perf.data
 * (docs/perf-data.md). Memory stays bounded: the host is buffered one perf round at a time,
 * the guest one page per vCPU. */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "gbin.h"
#include "merge.h"
#include "collector.h"
#include "out.h"
#include "perf_reader.h"
#include "perf_writer.h"
#include "tracing_data.h"
#include "util.h"


static int host_path(const struct merge_options *o, const struct merge_guest *g, char *buf, size_t len)
{
	struct stat st;
	char def[PATH_MAX];

	if (o->host_data) {
		snprintf(buf, len, "%s", o->host_data);
		return 1;
	}
	if (o->snapshot)
		return 0; /* the session's host.data is being recorded: only a dump (host_data) */
	if (g->host_data[0] == '/') {
		snprintf(buf, len, "%s", g->host_data);
		return 1;
	}
	if (snprintf(def, sizeof(def), "%s/%s", o->session_dir, g->host_data[0] ? g->host_data : "host.data") >=
	    (int)sizeof(def))
		return 0;
	/* --flight-recorder, the daemon killed before it renamed perf's last ring dump */
	if (stat(def, &st) < 0 && merge_newest_host_dump(o->session_dir, buf, len) == 0) {
		log_info("%s: no %s: merging host perf's last ring dump %s", o->session_dir, def, buf);
		return 1;
	}
	snprintf(buf, len, "%s", def);
	return g->host_data[0] || stat(def, &st) == 0; /* named in session.ini: an error if missing */
}

static int emit_host(struct merge_ctx *m, struct host_rec *q, bool immediate)
{
	const struct perf_event_header *h = (const void *)q->data;
	int r = 0;

	if (!m->index_done && h->type != PERF_REC_ID_INDEX && (r = merge_out_guest_index(m)) < 0)
		return r;
	if (!immediate) {
		if (q->ts < m->last_ts)
			m->host.out_of_order++;
		m->last_ts = MAX(m->last_ts, q->ts);
		if (h->type == PERF_RECORD_SAMPLE) {
			m->first_sample = MIN(m->first_sample, q->ts);
			m->last_sample = MAX(m->last_sample, q->ts);
		}
	}
	if (!immediate && h->type == PERF_RECORD_SAMPLE)
		merge_vcpu_host(&m->vcpu, &m->host, h);
	m->host_written += h->type == PERF_RECORD_SAMPLE;
	return merge_out_emit(m, q->data, immediate ? 0 : q->ts);
}

/* The guest's streams, one kind per row: a vCPU's ftrace pages (guest.c), its perf records
 * (gperf.c). A new kind of stream is one more row. */
static bool src_ftrace_peek(struct merge_ctx *m, void *st, uint64_t *ret_ts)
{
	struct guest_cpu *c = st;

	if (!merge_guest_peek(&m->guest, c))
		return false;
	*ret_ts = c->pending_lost ? c->lost_ts : c->head_ts;
	return true;
}

static int src_ftrace_emit(struct merge_ctx *m, void *st)
{
	return merge_out_guest(m, st);
}

static bool src_ftrace_blocked(struct merge_ctx *m, void *st, uint64_t *ret_bound)
{
	struct guest_cpu *c = st;

	if (c->blocked)
		*ret_bound = merge_guest_bound(&m->guest, c);
	return c->blocked;
}

static void src_ftrace_raise(struct merge_ctx *m, void *st, uint64_t ts)
{
	struct guest_cpu *c = st;

	if (c->pending_lost)
		c->lost_ts = ts;
	else
		c->head_ts = ts;
	c->last_ts = MAX(c->last_ts, ts);
}

static void *src_ftrace_state(struct merge_ctx *m, size_t i)
{
	return m->guest.present && i < m->guest.ncpus ? &m->guest.cpus[i] : NULL;
}

static bool src_gperf_peek(struct merge_ctx *m, void *st, uint64_t *ret_ts)
{
	struct gperf_cpu *c = st;

	if (!merge_gperf_peek(&m->gp, &m->guest, c))
		return false;
	*ret_ts = c->head_ts;
	return true;
}

static int src_gperf_emit(struct merge_ctx *m, void *st)
{
	return merge_gperf_emit(m, st);
}

static bool src_gperf_blocked(struct merge_ctx *m, void *st, uint64_t *ret_bound)
{
	struct gperf_cpu *c = st;

	if (c->blocked)
		*ret_bound = merge_gperf_bound(&m->guest, c);
	return c->blocked;
}

static void src_gperf_raise(struct merge_ctx *m, void *st, uint64_t ts)
{
	struct gperf_cpu *c = st;

	c->head_ts = ts;
	c->last_ts = MAX(c->last_ts, ts);
}

/* Records of one time from different CPUs: a FORK's CPU first (merge_gperf_rank). */
static unsigned src_gperf_rank(struct merge_ctx *m, void *st)
{
	return merge_gperf_rank(&m->guest, st);
}

static void *src_gperf_state(struct merge_ctx *m, size_t i)
{
	return m->gp.present && i < m->gp.ncpus_total ? &m->gp.cpus[i] : NULL;
}

static const struct merge_source_kind {
	void *(*state)(struct merge_ctx *m, size_t i); /* the i-th stream of this kind, or NULL */
	bool (*peek)(struct merge_ctx *m, void *state, uint64_t *ret_ts); /* next record's time */
	int (*emit)(struct merge_ctx *m, void *state); /* writes the record peek found */
	/* following: after a peek found nothing, whether more may come, and no earlier than when */
	bool (*blocked)(struct merge_ctx *m, void *state, uint64_t *ret_bound);
	void (*raise)(struct merge_ctx *m, void *state, uint64_t ts); /* following: head at ts, later */
	unsigned (*rank)(struct merge_ctx *m, void *state); /* order among equal times; NULL: 1 */
} source_kinds[] = {
	{ .state = src_ftrace_state, .peek = src_ftrace_peek, .emit = src_ftrace_emit,
	  .blocked = src_ftrace_blocked, .raise = src_ftrace_raise },
	{ .state = src_gperf_state, .peek = src_gperf_peek, .emit = src_gperf_emit,
	  .blocked = src_gperf_blocked, .raise = src_gperf_raise, .rank = src_gperf_rank },
};

/* Every guest stream of every kind (the host recording is merged beside them in merge_loop). */
static int merge_sources(struct merge_ctx *m)
{
	size_t n = 0;

	for (size_t k = 0; k < ARRAY_SIZE(source_kinds); k++)
		for (size_t i = 0; source_kinds[k].state(m, i); i++)
			n++;
	m->src = calloc(n + 1, sizeof(*m->src));
	if (!m->src)
		return -ENOMEM;
	for (size_t k = 0; k < ARRAY_SIZE(source_kinds); k++)
		for (size_t i = 0; source_kinds[k].state(m, i); i++)
			m->src[m->n_src++] = (struct merge_source){ .kind = &source_kinds[k],
								 .state = source_kinds[k].state(m, i) };
	return 0;
}

static unsigned source_rank(struct merge_ctx *m, const struct merge_source *s)
{
	return s->kind->rank ? s->kind->rank(m, s->state) : 1;
}

/* Whether s, whose next record is at t, goes before *best (at *bt): the earlier time, then on a
 * tie the lower rank (asked only then: *brank < 0 until asked), then the first stream. */
static bool source_before(struct merge_ctx *m, struct merge_source *s, uint64_t t,
			  struct merge_source **best, uint64_t *bt, int *brank)
{
	int rank = -1;

	if (*best && t > *bt)
		return false;
	if (*best && t == *bt) {
		rank = (int)source_rank(m, s);
		if (*brank < 0)
			*brank = (int)source_rank(m, *best);
		if (rank >= *brank)
			return false;
	}
	*best = s, *bt = t, *brank = rank;
	return true;
}

/* The guest stream whose next record goes first (source_before), or NULL. */
static struct merge_source *source_min(struct merge_ctx *m, uint64_t *ret_ts)
{
	struct merge_source *best = NULL;
	uint64_t bt = UINT64_MAX, t;
	int brank = -1;

	for (size_t i = 0; i < m->n_src; i++)
		if (m->src[i].kind->peek(m, m->src[i].state, &t))
			source_before(m, &m->src[i], t, &best, &bt, &brank);
	*ret_ts = bt;
	return best;
}

/* The host's next timed record in *q (1), 2 (following: none yet, m->host.bound), 0 (none
 * left) or -errno; untimed records on the way are written at once. */
static int host_next(struct merge_ctx *m, struct host_rec **q)
{
	for (;;) {
		bool imm = false;
		int r = m->host.present ? merge_host_peek(&m->host, q, &imm) : 0;

		if (r != 1 || !imm)
			return r;
		merge_host_take(&m->host);
		r = emit_host(m, *q, true);
		free(*q);
		*q = NULL;
		if (r < 0)
			return r;
	}
}

static int merge_loop(struct merge_ctx *m)
{
	for (;;) {
		struct host_rec *q = NULL;
		uint64_t gts;
		struct merge_source *g;
		int r = host_next(m, &q);

		if (r < 0)
			return r;
		g = source_min(m, &gts);
		if (q && (!g || q->ts <= gts)) { /* the host first on ties */
			merge_host_take(&m->host);
			r = emit_host(m, q, false);
			free(q);
		} else if (g) {
			/* perf must see the guest ID_INDEX (and so perf_guest) before any guest
			 * record: samples delivered before it are dropped as host-side noise. */
			if (!m->index_done && (r = merge_out_guest_index(m)) < 0)
				return r;
			r = g->kind->emit(m, g->state);
		} else {
			return 0;
		}
		if (r < 0)
			return r;
	}
}

/* ---- following a session while it traces (merge --follow, the daemon's live merge) ----
 * The daemon's words come on a pipe, one per line: "host SIZE TS" (host.data holds every record
 * before host time TS in its first SIZE bytes: perf flushed its rings on a ping), "snapshot T
 * PATH" (a perf.data at PATH of everything before host time T, written once no source can still
 * bring a record before T: follow_snapshot), "snapshot-cancel" and "end" (the session is over:
 * perf has finished host.data, every spool has its end marker or never will, clock.samples is
 * complete). Guest CPUs say how far they are complete with flush markers. A
 * record is written once no source can still bring an earlier one; until "end" the merge waits
 * for the others, so memory stays one round of host records and one page per vCPU. */
#define FOLLOW_WAIT_MS 50
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
	uint64_t next_refit_ns;
	unsigned refits;
	uint64_t clamped; /* guest times raised to the last time written (a refit moved them back) */
	off_t samples_size; /* clock.samples when last fitted */
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
		r = merge_out_snapshot(m, data);
	if (r == 0)
		r = merge_dir_finish(m, f->session_dir, tmp);
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
			 m->guest_samples + m->gp.records);
	}
	f->snap_path[0] = '\0';
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
	m->guest.follow = false; /* spools: to their end markers, or their end */
	if (m->guest.present) { /* the rest with the session's own clock.ini, as offline */
		_cleanup_free_ char *ini = NULL;
		const char *v;

		if (util_read_file_at(f->dfd, "session.ini", 1 << 16, &ini, NULL) == 0 &&
		    (v = strstr(ini, "\nstopped_mono_ns=")))
			m->guest.stopped_ns = strtoull(v + 17, NULL, 10); /* the window closes at stop */
		clock_apply_free(&m->guest.clock);
		m->guest.clock_aligned = false;
		merge_meta_clock(&m->guest, f->dfd);
		if (m->guest.perf_clock_needed)
			merge_meta_perf_clock(&m->guest, f->dfd);
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

	m->guest.follow_gen++; /* the spools may have grown meanwhile */
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

/* Pipe mode, before waiting: a round marker after what was written (perf script shows a round
 * once it ends) and the buffer out. */
static int pipe_round(struct merge_ctx *m)
{
	static const struct perf_event_header round = { .type = PERF_REC_FINISHED_ROUND, .size = 8 };
	int r = 0;

	if (m->since_round) {
		m->since_round = 0;
		r = perf_writer_record(m->w, &round);
	}
	return r < 0 ? r : perf_writer_flush(m->w);
}

static int merge_loop_follow(struct merge_ctx *m, struct follow *f)
{
	for (;;) {
		struct host_rec *q = NULL;
		struct merge_source *best = NULL;
		bool blocked = false;
		uint64_t bt = UINT64_MAX, bound = UINT64_MAX, now, t;
		int brank = -1;
		int r = host_next(m, &q);

		if (r < 0)
			return r;
		if (r == 2)
			blocked = true, bound = m->host.bound, q = NULL;
		/* No guest time converts before a fit exists (the cycle clock's rate needs the
		 * early probes): everything waits for it. */
		if (m->guest.present && m->guest.follow && !m->guest.clock_aligned)
			blocked = true, bound = 0;
		/* A guest time after the newest probe would be extrapolated by the fit (on a cycle
		 * clock, off by its rate error times the distance): nothing is written past it until
		 * a later probe is in the fit, so every conversion is an interpolation. */
		if (m->guest.present && m->guest.follow && m->guest.live_fit_until)
			blocked = true, bound = MIN(bound, m->guest.live_fit_until);
		if (m->guest.present && m->guest.follow && m->guest.perf_clock_needed && m->guest.perf_fit_until)
			blocked = true, bound = MIN(bound, m->guest.perf_fit_until);
		if (m->guest.present && m->guest.follow && m->guest.perf_clock_needed && !m->guest.perf_clock_on)
			blocked = true, bound = 0; /* guest perf's own fit (perf-clock.samples) first */
		for (size_t i = 0; i < m->n_src && bound; i++) {
			const struct merge_source *s = &m->src[i];

			if (s->kind->peek(m, s->state, &t)) {
				source_before(m, &m->src[i], t, &best, &bt, &brank);
			} else if (s->kind->blocked(m, s->state, &t)) {
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
			r = emit_host(m, q, false);
			free(q);
		} else if (best && (!blocked || bt < bound || (bt == bound && source_rank(m, best) == 0))) {
			/* At the bound itself a blocked stream may still bring a record of that time
			 * that goes first (a FORK): only a FORK goes now, as the whole-file merge would. */
			if (bt < m->last_ts) { /* a refit moved this CPU's times back: keep the order */
				f->clamped++;
				best->kind->raise(m, best->state, m->last_ts);
				bt = m->last_ts;
			}
			if (!m->index_done && (r = merge_out_guest_index(m)) < 0)
				return r;
			m->last_ts = MAX(m->last_ts, bt);
			r = best->kind->emit(m, best->state);
		} else if (!q && !best && !blocked) {
			return 0;
		} else if (m->pipe && (r = pipe_round(m)) < 0) {
			return r;
		} else if ((r = follow_wait(m, f, FOLLOW_WAIT_MS)) == 0 && !f->ended && m->guest.present &&
			   (now = util_now_ns(CLOCK_MONOTONIC)) >= f->next_refit_ns && samples_grew(f)) {
			f->next_refit_ns = now + FOLLOW_REFIT_NS;
			if (merge_meta_clock_live(&m->guest, f->dfd) == 0) {
				f->refits++;
				m->live_bound_ns = MAX(m->live_bound_ns, m->guest.clock.error_bound_ns);
			}
			if (m->guest.perf_clock_needed)
				merge_meta_perf_clock(&m->guest, f->dfd);
		}
		if (r < 0)
			return r;
	}
}

/* Host TRACING_DATA (or a fresh one from the guest's headers) plus the remapped guest events. */
/* Following: host perf writes its tracing data at exit only, so the formats of its tracepoints
 * come from the host's tracefs meanwhile (the same files perf reads), found by id. */
static int host_tracefs_format(struct tracing_data *td, uint64_t id)
{
	static const char root[] = "/sys/kernel/tracing/events";
	DIR *d = opendir(root), *sd;
	char path[PATH_MAX], *text = NULL;
	struct dirent *sys, *ev;
	size_t len;
	int r = -ENOENT;

	while (d && r == -ENOENT && (sys = readdir(d))) {
		if (sys->d_name[0] == '.' || snprintf(path, sizeof(path), "%s/%s", root, sys->d_name) >= (int)sizeof(path) ||
		    !(sd = opendir(path)))
			continue;
		while (r == -ENOENT && (ev = readdir(sd))) {
			_cleanup_free_ char *idtext = NULL;

			if (ev->d_name[0] == '.' ||
			    snprintf(path, sizeof(path), "%s/%s/%s/id", root, sys->d_name, ev->d_name) >= (int)sizeof(path) ||
			    util_read_file(path, 64, &idtext, NULL) < 0 || strtoull(idtext, NULL, 10) != id)
				continue;
			snprintf(path, sizeof(path), "%s/%s/%s/format", root, sys->d_name, ev->d_name);
			if ((r = util_read_file(path, TEP_FORMAT_MAX_TEXT, &text, &len)) == 0) {
				r = tracing_data_add_event(td, sys->d_name, text, len);
				free(text);
			}
		}
		closedir(sd);
	}
	if (d)
		closedir(d);
	return r;
}

static int follow_host_td(struct merge_ctx *m)
{
	_cleanup_free_ char *hp = NULL, *he = NULL;
	size_t hp_len, he_len;
	int r;

	if (util_read_file("/sys/kernel/tracing/events/header_page", 65536, &hp, &hp_len) < 0 ||
	    util_read_file("/sys/kernel/tracing/events/header_event", 65536, &he, &he_len) < 0)
		return -ENOENT;
	if ((r = tracing_data_init(&m->td, (uint8_t)sizeof(long), (uint32_t)sysconf(_SC_PAGESIZE), hp, hp_len,
				   he, he_len)) < 0)
		return r;
	for (size_t i = 0; i < m->host.n_attrs; i++)
		if (m->host.attrs[i].attr.type == PERF_TYPE_TRACEPOINT &&
		    (r = host_tracefs_format(&m->td, m->host.attrs[i].attr.config)) < 0 && r != -ENOENT)
			return r;
	m->have_td = true;
	return 0;
}

/* The guest's remapped formats, as guest_<sys>, into m->td. */
static int td_add_guest(struct merge_ctx *m)
{
	for (size_t i = 0; i < m->guest.n_events; i++) {
		const struct guest_event *e = &m->guest.events[i];
		char sys[TEP_FORMAT_MAX_NAME + 8];
		int r;

		snprintf(sys, sizeof(sys), "guest_%s", e->sys);
		if ((r = tracing_data_add_event(&m->td, sys, e->text, e->text_len)) < 0)
			return r;
	}
	return 0;
}

/* Following, at the end: perf's own tracing data replaces the tracefs one in the output. */
static int follow_final_td(struct merge_ctx *m)
{
	_cleanup_free_ uint8_t *blob = NULL;
	struct tracing_data td = { 0 };
	size_t len;

	if (!m->host.present || perf_reader_feature(m->host.r, PERF_FEAT_TRACING_DATA, &blob, &len) < 0)
		return 0;
	if (tracing_data_parse(blob, len, &td) < 0)
		return -EBADMSG;
	tracing_data_free(&m->td);
	m->td = td;
	m->have_td = true;
	return m->guest.present ? td_add_guest(m) : 0;
}

static int build_tracing_data(struct merge_ctx *m, char *why, size_t whylen)
{
	_cleanup_free_ uint8_t *blob = NULL;
	size_t len;
	int r;

	if (m->host.present && m->host.follow && follow_host_td(m) < 0)
		log_warn("the host's tracefs formats are unreadable: host tracepoints undecoded until stop");
	if (m->host.present && !m->host.follow &&
	    perf_reader_feature(m->host.r, PERF_FEAT_TRACING_DATA, &blob, &len) == 0) {
		if (tracing_data_parse(blob, len, &m->td) < 0) {
			snprintf(why, whylen, "the host recording's tracing data is malformed");
			return -EBADMSG;
		}
		m->have_td = true;
	}
	merge_out_used_ids(m);
	if (!m->guest.present)
		return 0;
	if (!m->have_td) {
		const struct merge_guest *g = &m->guest;

		if ((r = tracing_data_init(&m->td, (uint8_t)g->layout.commit_size, g->page_size, g->header_page,
					   g->hp_len, g->header_event, g->he_len)) < 0)
			return r;
		m->have_td = true;
	}
	if (m->td.long_size != m->guest.layout.commit_size) {
		snprintf(why, whylen, "the guest's long size (%u) differs from the host's (%u)",
			 m->guest.layout.commit_size, m->td.long_size);
		return -EPROTONOSUPPORT;
	}
	if ((r = merge_guest_remap(&m->guest, m->used)) < 0) {
		snprintf(why, whylen, "no free tracepoint ids left for the guest's events");
		return r;
	}
	return td_add_guest(m);
}

static void summary_clock(const struct merge_guest *g)
{
	if (g->clock_aligned)
		printf("  clock:  aligned (%s, %zu segments, %" PRIu64 " samples, error bound %" PRIu64 " ns)%s%s\n",
		       g->clock.method, g->clock.n, g->clock.samples, g->clock.error_bound_ns,
		       g->clock_recovered ? ": recovered, " : "", g->clock_recovered ? g->clock_why : "");
	else if (g->present)
		printf("  clock:  UNALIGNED (%s: guest times used as host times)\n",
		       g->clock_why[0] ? g->clock_why : "no usable clock.ini");
	if (g->window_hi != UINT64_MAX || g->window_lo)
		printf("  window: guest times kept in [%" PRIu64 ", %" PRIu64 "] (session start/stop ± error bound); "
		       "%" PRIu64 " outside, clamped\n", g->window_lo, g->window_hi, g->loss.outside_window);
	else if (g->clock_aligned)
		printf("  window: not checked (session.ini has no started_mono_ns)\n");
}

static void summary_vcpu(const struct merge_ctx *m)
{
	const struct merge_vcpu *v = &m->vcpu;

	if (!m->guest.present)
		return;
	if (v->why[0])
		printf("  vcpu:   FALLBACK: guest sample cpu = vCPU number, because %s\n", v->why);
	else
		printf("  vcpu:   guest sample cpu = host CPU of QEMU's \"CPU n/KVM\" (or /TCG) thread (%u/%u vCPU threads found, "
		       "%" PRIu64 " host switches followed)\n", v->named, v->n, v->switches);
	if (v->fallback_samples && !v->why[0])
		printf("          %" PRIu64 " guest records fell back to the vCPU number (thread never seen switching)\n",
		       v->fallback_samples);
}

static void summary_build_id(const struct merge_guest *g)
{
	char hex[2 * ELF_NOTES_BUILD_ID_MAX + 1] = "";

	if (!g->present)
		return;
	for (size_t i = 0; i < g->build_id_len; i++)
		snprintf(hex + 2 * i, 3, "%02x", g->build_id[i]);
	if (g->build_id_len)
		printf("  kernel: guest build-id %s ([guest.kernel.kallsyms.%" PRIu64 "])\n", hex, g->machine_pid);
	else
		printf("  kernel: no guest build-id (%s)\n", g->notes_why);
}

static void summary(const struct merge_ctx *m, const char *out)
{
	const struct merge_losses *l = &m->guest.loss;
	struct stat st;
	const struct { const char *what; uint64_t n; } loss[] = {
		{ "ring pages with missed events (LOST_SAMPLES written)", l->ring_missed_pages },
		{ "events lost in the guest ring (stored counts)", l->ring_lost_events },
		{ "events lost in the guest ring (end marker's overrun beyond the stored counts)", l->ring_lost_unstored },
		{ "pages missing in transport (sent - received)", l->transport_missing_pages },
		{ "damaged pages dropped: unreadable spool", l->damaged_read },
		{ "damaged pages dropped: marker-like page not of this session", l->damaged_marker },
		{ "damaged pages dropped: bad ring page header", l->damaged_header },
		{ "malformed events dropped", l->bad_events },
		{ "events with an unknown id dropped", l->unknown_event_ids },
		{ "events going back in time dropped", l->backwards_ts },
		{ "oversized events dropped", l->oversized_events },
		{ "event formats dropped", l->dropped_formats },
		{ "vCPU spools without this session's begin marker", l->dropped_cpus },
		{ "stale bytes skipped before begin markers", l->stale_bytes },
		{ "oldest pages dropped by the flight recorder (--flight-recorder: the newest kept)", l->fr_dropped_pages },
		{ "host records out of order", m->host.out_of_order },
		{ "host events lost by perf record (buffer overflow; give perf a bigger -m after '--' on start)", m->host.lost },
		{ "guest times outside the session window, clamped", l->outside_window },
		{ "vCPU spools without an end marker (what the guest had not sent is missing, amount unknown)", l->no_end_cpus },
		{ "guest task names not kept (the task table was full; counted per event)", l->tasks_not_kept },
		{ "guest perf samples lost in the guest's perf ring (its LOST records are in the file)", m->gp.lost },
		{ "guest perf records dropped: malformed", m->gp.bad_records },
		{ "guest perf records dropped: unknown id", m->gp.unknown_ids },
		{ "guest perf streams without an end marker (amount missing unknown)", m->gp.no_end_cpus },
		{ "oldest guest perf records dropped by the flight recorder (their task records kept aside)", m->gp.fr_records },
		{ "guest perf task records the flight recorder had no room to keep", m->gp.fr_not_kept },
	};

	printf("merge summary\n");
	printf("  host:   %s, %" PRIu64 " samples in, %" PRIu64 " written\n",
	       m->host.present ? "recording merged" : "none (guest only)", m->host.samples, m->host_written);
	printf("  guest:  %" PRIu64 " samples written, %zu event formats, %zu task names, %u vCPUs\n",
	       m->guest_samples, m->guest.n_events, m->guest.n_tasks, m->guest.ncpus);
	if (m->guest.missing_cpus[0])
		printf("  NOT TRACED: guest CPUs %s (they could not stream; start --allow-partial)\n",
		       m->guest.missing_cpus);
	for (size_t i = 0; m->guest.present && i < m->guest.n_events; i++)
		if (m->guest.events[i].count)
			printf("          guest_%s:%s %" PRIu64 "\n", m->guest.events[i].sys,
			       m->guest.events[i].fmt.name, m->guest.events[i].count);
	if (m->guest.present && m->guest.machine_pid_stand_in)
		printf("  vm pid: qemu_pid unknown, stand-in machine_pid %" PRIu64 " used\n", m->guest.machine_pid);
	else if (m->guest.present)
		printf("  vm pid: %" PRIu64 "\n", m->guest.machine_pid);
	merge_gperf_summary(&m->gp, &m->guest);
	summary_clock(&m->guest);
	summary_vcpu(m);
	summary_build_id(&m->guest);
	bool any = false;

	for (size_t i = 0; i < ARRAY_SIZE(loss); i++)
		any = any || loss[i].n;
	printf("  losses:%s\n", any ? "" : " none");
	for (size_t i = 0; i < ARRAY_SIZE(loss); i++)
		if (loss[i].n)
			printf("          %s: %" PRIu64 "\n", loss[i].what, loss[i].n);
	if (stat(out, &st) == 0)
		printf("  output: %s (%lld bytes%s)\n", out, (long long)st.st_size, m->zstd ? ", zstd" : "");
	if (m->guest.present)
		printf("  input read: %" PRIu64 " bytes of guest spools (one pass)\n", m->guest.loss.bytes_read);
}

/* merge.ini in the session dir: what this merge did about the clock and the vCPUs (best effort:
 * a read-only session dir only loses this file). */
static void merge_info(const struct merge_ctx *m, const struct merge_options *o)
{
	const struct merge_guest *g = &m->guest;
	char path[PATH_MAX];
	FILE *f;

	if (!g->present || snprintf(path, sizeof(path), "%s/merge.ini", o->session_dir) >= (int)sizeof(path) ||
	    !(f = fopen(path, "w"))) {
		if (g->present)
			log_warn("%s: cannot write merge.ini: %s", o->session_dir, strerror(errno));
		return;
	}
	fprintf(f, "output=%s\nclock_method=%s\nclock_aligned=%d\nclock_recovered=%d\nclock_samples=%" PRIu64
		   "\nclock_error_bound_ns=%" PRIu64 "\nguest_outside_window=%" PRIu64 "\nvcpu_cpu=%s\n"
		   "vcpu_fallback_records=%" PRIu64 "\nguest_samples=%" PRIu64 "\nclock_live_error_bound_ns=%" PRIu64 "\n",
		o->output, g->clock_aligned ? g->clock.method : "none", g->clock_aligned, g->clock_recovered,
		g->clock.samples, g->clock.error_bound_ns, g->loss.outside_window,
		m->vcpu.why[0] ? "fallback" : "host_sched_switch", m->vcpu.fallback_samples, m->guest_samples,
		m->live_bound_ns);
	/* ring pages per vCPU: read (bad ones apart), dropped by the flight recorder, missing */
	for (uint32_t i = 0; i < g->ncpus; i++)
		fprintf(f, "cpu%u.pages_read=%" PRIu64 "\ncpu%u.pages_bad=%" PRIu64 "\ncpu%u.pages_dropped=%" PRIu64 "\n",
			i, g->cpus[i].pages_read, i, g->cpus[i].pages_bad, i, g->cpus[i].pages_dropped);
	fclose(f);
}

static int merge_prepare(struct merge_ctx *m, const struct merge_options *o)
{
	char why[512] = "", path[PATH_MAX] = "";
	int r;

	m->guest.follow = o->follow;
	r = merge_guest_load(&m->guest, o->session_dir, why, sizeof(why));

	if (r < 0 && !m->guest.session_read) {
		log_error("%s: %s", o->session_dir, why);
		return r;
	}
	if (r < 0) {
		log_warn("%s: guest data not usable, merging the host recording only: %s", o->session_dir, why);
		merge_guest_free(&m->guest);
	}
	if (host_path(o, &m->guest, path, sizeof(path)) &&
	    (r = (o->follow ? merge_host_open_follow : merge_host_open)(&m->host, path, why, sizeof(why))) < 0) {
		log_error("%s: cannot use the host recording: %s", path, why);
		return r;
	}
	if (!m->host.present && !m->guest.present) {
		log_error("%s: neither guest data nor a host recording to merge", o->session_dir);
		return -ENOENT;
	}
	if ((r = build_tracing_data(m, why, sizeof(why))) < 0) {
		log_error("%s: %s", o->session_dir, why);
		return r;
	}
	if ((r = merge_vcpu_init(&m->vcpu, &m->guest, &m->host, m->host.present ? &m->td : NULL, path)) < 0)
		return r;
	if (m->guest.present && (m->guest.gsym_events || m->guest.perf_events[0]))
		merge_gsym_load(&m->guest, o->session_dir); /* read once: %ps names, guest kernel maps */
	if ((r = merge_gperf_load(&m->gp, &m->guest, o->session_dir)) < 0)
		return r;
	if ((r = merge_sources(m)) < 0)
		return r;
	return merge_out_attrs(m);
}

int merge_clock_state(const char *session_dir, char *why, size_t whylen)
{
	struct merge_guest g = { 0 };
	int r = merge_guest_load(&g, session_dir, why, whylen);

	if (r >= 0 && g.present) {
		r = g.clock_aligned;
		snprintf(why, whylen, "%s", g.clock_why[0] ? g.clock_why : "no usable clock.ini");
	}
	merge_guest_free(&g);
	return r < 0 ? r : r ? 1 : 0;
}

/* Guest binaries fetched at stop go into the output's own build-id cache (OUT/buildids; with
 * --trust-guest-binaries perf's, $HOME/.debug), never under a build-id the host holds; the
 * summary says where and how perf reads them. */
static void merge_gbin_summary(struct merge_ctx *m, const struct merge_options *o)
{
	bool trust = merge_gbin_trusted(o->session_dir, o->trust_binaries);
	struct gbin_settled st;

	if (merge_gbin_any(o->session_dir)) /* reads the host files' build-ids: only when it matters */
		merge_host_build_ids(&m->host);
	if (merge_gbin_settle(o->session_dir, m->out_dir && !m->pipe ? o->output : NULL, trust, &m->host.ids, &st) < 0)
		return;
	printf("  guest binaries: %u in %s%s (%u placed now, %u there before), %u not sent",
	       st.installed + st.cached, !st.bdir[0] ? "no build-id directory (the output is no perf.data directory)" :
	       o->follow && !trust ? "the output's " GBIN_OUT_DIR "/ (live.data's, stop moves it with the output)" : st.bdir,
	       trust ? " (perf's own cache: --trust-guest-binaries)" : "", st.installed, st.cached, st.not_sent + st.bad);
	if (st.cut)
		printf(", %" PRIu64 " cut (the fetch ended early: see the stop summary)", st.cut);
	if (st.host_ids)
		printf(", %u REFUSED: their build-id is the host's (host.data's or a host file's; perf reads the "
		       "host's file for it, or names nothing)", st.host_ids);
	if (st.no_dir)
		printf(", %u not placed (no perf.data directory)", st.no_dir);
	if (st.no_build_id)
		printf("; %" PRIu64 " mappings without a build-id: perf names their functions [unknown]", st.no_build_id);
	printf("\n");
	if (st.bad)
		log_warn("%u guest binaries in %s/binaries failed their check again (build-id, size, path): not used",
			 st.bad, o->session_dir);
	if (st.installed + st.cached && !trust && !o->follow)
		printf("  guest user functions: perf --buildid-dir %s/" GBIN_OUT_DIR " report -i %s\n", o->output,
		       o->output);
}

/* Pipe mode: the attrs as HEADER_ATTR records and the tracing data (the host's tracefs formats
 * and the guest's, as the file's would be) as a HEADER_TRACING_DATA record and its bytes, before
 * any event: perf reads a pipe in order. */
static int pipe_preamble(struct merge_ctx *m, int fd)
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

/* stop's disk budget for the output, less what merge_dir_finish adds beside the data (the
 * guest's kallsyms). */
static uint64_t merge_data_budget(const struct merge_ctx *m, const struct merge_options *o)
{
	char path[PATH_MAX];
	struct stat st;
	uint64_t extra = 0;

	snprintf(path, sizeof(path), "%s/guest/kallsyms", o->session_dir);
	if (m->out_dir && stat(path, &st) == 0)
		extra = (uint64_t)st.st_size;
	return o->max_bytes > extra ? o->max_bytes - extra : 1; /* 1: nothing fits */
}

int merge_run(const struct merge_options *o)
{
	_cleanup_free_ struct merge_ctx *m = calloc(1, sizeof(*m));
	char data[PATH_MAX];
	int r, out_fd = -1;

	if (!m)
		return -ENOMEM;
	m->first_sample = UINT64_MAX;
	m->zstd = o->zstd_level;
	/* -o - (following only): pipe-mode perf.data on stdout, for 'perf script -i -'; the
	 * summary and logs go to stderr. */
	m->pipe = o->follow && !strcmp(o->output, "-");
	if (m->pipe && ((out_fd = dup(1)) < 0 || dup2(2, 1) < 0)) {
		r = -errno;
		goto out;
	}
	if ((r = merge_prepare(m, o)) < 0)
		goto out;
	if (m->pipe) {
		snprintf(data, sizeof(data), "standard output");
		if ((r = pipe_preamble(m, out_fd)) < 0) {
			log_error("standard output: cannot write the pipe-mode header: %s", strerror(-r));
			goto out;
		}
	} else if ((r = merge_dir_prepare(m, o->session_dir, o->output, data, sizeof(data))) < 0) {
		goto out;
	} else if ((r = perf_writer_open(data, o->zstd_level, &m->w)) < 0) {
		log_error("%s: cannot create: %s", data, strerror(-r));
		goto out;
	} else if (o->max_bytes) {
		perf_writer_set_limit(m->w, merge_data_budget(m, o));
	}
	if (o->follow) {
		struct follow f = { .fd = o->follow_fd, .dfd = open(o->session_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC),
				    .session_dir = o->session_dir };

		if (m->guest.present && m->guest.clock_aligned) { /* fitted at load already */
			f.refits = 1;
			m->live_bound_ns = m->guest.clock.error_bound_ns;
		}

		r = f.dfd < 0 ? -errno : merge_loop_follow(m, &f);
		if (f.dfd >= 0)
			close(f.dfd);
		if (r == 0 && (r = follow_final_td(m)) < 0)
			log_error("%s: the host recording's final tracing data is malformed", o->session_dir);
		if (r == -EPIPE) {
			log_error("live merge stopped: its daemon is gone (no 'end' came); %s is unfinished: merge "
				  "the session with 'trace-collector merge %s -o OUT'", data, o->session_dir);
			goto out;
		}
		if (r < 0) {
			log_error("live merge failed: %s", m->host.err[0] ? m->host.err : strerror(-r));
			goto out;
		}
		if (f.refits)
			printf("  live:   merged while tracing; clock fitted %u times from the probes so far (error bounds up "
			       "to %" PRIu64 " ns), at the end clock.ini's; %" PRIu64 " guest times raised to keep the "
			       "order\n", f.refits, m->live_bound_ns, f.clamped);
		else
			printf("  live:   merged while tracing; no guest time converted before the end (a fit waits for "
			       "probes spanning %llu s), then with clock.ini's; %" PRIu64 " guest times raised to keep "
			       "the order\n", (unsigned long long)(MERGE_LIVE_MIN_SPAN_NS / 1000000000ull), f.clamped);
	} else if ((r = merge_loop(m)) < 0) {
		log_error("merge failed: %s", m->host.err[0] ? m->host.err : strerror(-r));
		goto out;
	}
	if (!m->index_done && (r = merge_out_guest_index(m)) < 0)
		goto out;
	if ((r = merge_out_finish(m)) < 0) {
		log_error("%s: cannot write: %s", data, strerror(-r));
		goto out;
	}
	if (!m->pipe && (r = merge_dir_finish(m, o->session_dir, o->output)) < 0) {
		log_error("%s: cannot add the guest's kallsyms (perf would not name guest kernel functions): %s",
			  o->output, strerror(-r));
		goto out;
	}
	if (o->snapshot) { /* cut while tracing: no end markers yet, by design */
		m->guest.loss.no_end_cpus = 0;
		m->gp.no_end_cpus = 0;
	}
	summary(m, data);
	if (o->snapshot)
		printf("  snapshot: each stream as far as its spool held when the snapshot was taken; the "
		       "session goes on\n");
	merge_gbin_summary(m, o);
	if (m->out_dir)
		printf("  output: a perf.data directory: %s/data and %s/kcore_dir__%" PRIu64 "/kallsyms (the guest's "
		       "kernel symbols; perf -i %s reads both)\n", o->output, o->output, m->guest.machine_pid, o->output);
	merge_info(m, o);
	if (m->guest.present && !m->guest.clock_aligned) {
		log_error("guest clock UNALIGNED (%s): %s has the guest's events at guest times, not on the "
			  "host's timeline; see the session's clock.samples and collector.log",
			  m->guest.clock_why[0] ? m->guest.clock_why : "no usable clock.ini", o->output);
		r = 1; /* written, but not aligned */
	}
out:
	perf_writer_free(m->w); /* an unfinished file is removed */
	if (r == -EFBIG && m->out_dir)
		rmdir(o->output); /* and the perf.data directory made for it */
	if (out_fd >= 0)
		close(out_fd);
	merge_out_free(m);
	merge_host_free(&m->host);
	merge_guest_free(&m->guest);
	merge_gperf_free(&m->gp);
	merge_vcpu_free(&m->vcpu);
	free(m->src);
	return r;
}
