// SPDX-License-Identifier: GPL-2.0-only
/* The merge's guest perf source: each vCPU's perf-cpuN.spool (docs/protocol.md §3), read one
 * record at a time, validated (the guest is hostile), and written as perf's guest machine: ids
 * remapped above the guest tracepoints', times converted with the guest clock, the sample cpu
 * the host CPU of the vCPU thread, cpumode GUEST_KERNEL / GUEST_USER (docs/perf-data.md). */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "merge.h"
#include "out.h"
#include "perf_writer.h"
#include "util.h"

#define GP_BUF_MIN (256u << 10)
#define GP_REC_MAX 65536

static void gp_cpu_close(struct gperf_cpu *c)
{
	if (c->fd >= 0)
		close(c->fd);
	if (c->side_fd >= 0)
		close(c->side_fd);
	c->fd = c->side_fd = -1;
	c->done = true;
}

/* Makes n bytes available at c->buf + c->off; false at the end of the file (following: met
 * once per wait for data, then c->blocked without reading again). */
static bool gp_need(struct merge_guest *g, struct gperf_cpu *c, size_t n)
{
	bool follow = g->follow && !c->in_side;

	while (c->len - c->off < n) {
		ssize_t r;

		if (follow && c->eof_gen == g->follow_gen && c->eof_gen) {
			c->blocked = true;
			return false;
		}

		if (c->off) {
			memmove(c->buf, c->buf + c->off, c->len - c->off);
			c->file_off += c->off;
			c->len -= c->off;
			c->off = 0;
		}
		r = pread(c->in_side ? c->side_fd : c->fd, c->buf + c->len, c->cap - c->len,
			  (off_t)(c->file_off + c->len));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0 || (follow && c->len + (size_t)r - c->off < n)) {
			if (r > 0)
				c->len += (size_t)r, g->loss.bytes_read += (uint64_t)r;
			if (!c->in_side) {
				c->eof_gen = g->follow_gen;
				c->blocked = g->follow;
			}
			return false;
		}
		c->len += (size_t)r;
		g->loss.bytes_read += (uint64_t)r;
	}
	return true;
}

/* This session's perf begin marker at any byte offset: what precedes it is stale. */
static bool gp_find_begin(struct merge_guest *g, struct gperf_cpu *c)
{
	static const uint8_t magic[8] = { 'V', 'I', 'R', 'T', 'M', 'A', 'R', 'K' };

	while (gp_need(g, c, g->page_size)) {
		const uint8_t *hit = memmem(c->buf + c->off, c->len - c->off, magic, 8);
		struct vt_marker m;
		struct vt_perf_marker pm;

		if (!hit) {
			c->stale += c->len - c->off - 7;
			c->off = c->len - 7;
			continue;
		}
		c->stale += (uint64_t)(hit - (c->buf + c->off));
		c->off = (size_t)(hit - c->buf);
		if (!gp_need(g, c, g->page_size))
			return false;
		if (vt_marker_decode(c->buf + c->off, g->page_size, &m) == 1 && m.kind == VT_MARKER_PERF_BEGIN &&
		    m.session_id == g->session_id && m.cpu == c->cpu &&
		    vt_marker_decode_perf(c->buf + c->off, g->page_size, &m, &pm) == 0) {
			c->nr_ids = pm.nr_ids;
			memcpy(c->ids, pm.ids, sizeof(c->ids));
			c->off += g->page_size;
			return true;
		}
		c->off++, c->stale++;
	}
	return false;
}

/* --flight-recorder: perf-cpuN.side, when the daemon freed the front of this stream. Its task
 * records are read first (they are older than any record kept), then the spool from hole_end,
 * a record boundary. A side file that does not fit this stream is not used (counted). */
static void gp_side_open(struct merge_gperf *gp, struct merge_guest *g, int dfd, struct gperf_cpu *c)
{
	struct vt_perf_side_head h = { 0 };
	uint64_t pos = c->file_off + c->off, end;
	struct stat st;
	char name[48];
	int fd;

	snprintf(name, sizeof(name), "perf-cpu%u.side", c->cpu);
	if ((fd = merge_input_open(dfd, g->dir, name, O_RDONLY)) < 0)
		return;
	end = pread(fd, &h, sizeof(h), 0) == (ssize_t)sizeof(h) ? le64toh(h.hole_end) : 0;
	if (le64toh(h.magic) != VT_PERF_SIDE_MAGIC || le64toh(h.session_id) != g->session_id ||
	    le32toh(h.cpu) != c->cpu || end < pos || fstat(c->fd, &st) < 0 || end > (uint64_t)st.st_size) {
		gp->fr_side_bad++;
		close(fd);
		return;
	}
	gp->fr_records += le64toh(h.dropped_records);
	gp->fr_samples += le64toh(h.dropped_samples);
	gp->fr_side_records += le64toh(h.side_records);
	gp->fr_not_kept += le64toh(h.not_kept);
	/* the freed bytes that were records (flush marker pages are not in bytes_sent) */
	c->fr_bytes = end - pos - MIN(end - pos, (uint64_t)le32toh(h.flush_pages) * g->page_size);
	c->side_bytes = le64toh(h.side_bytes);
	c->side_fd = fd;
	c->in_side = true;
	c->resume_off = end;
	c->file_off = sizeof(h);
	c->len = c->off = 0;
}

/* No more bytes where the reader is: the stream's end (-1), or, in the side file, on to the
 * spool where its records go on (0: read on). */
static int gp_out_of_bytes(struct gperf_cpu *c)
{
	if (!c->in_side)
		return -1;
	close(c->side_fd);
	c->side_fd = -1;
	c->in_side = false;
	c->file_off = c->resume_off;
	c->len = c->off = 0;
	return 0;
}

static int gp_open_cpu(struct merge_gperf *gp, struct merge_guest *g, int dfd, struct gperf_cpu *c)
{
	char name[48];

	snprintf(name, sizeof(name), "perf-cpu%u.spool", c->cpu);
	c->fd = merge_input_open(dfd, g->dir, name, O_RDONLY);
	if (c->fd < 0)
		return c->fd;
	c->cap = MAX(GP_BUF_MIN, 2 * g->page_size);
	c->buf = malloc(c->cap);
	c->rec = malloc(GP_REC_MAX);
	if (!c->buf || !c->rec)
		return -ENOMEM;
	if (!gp_find_begin(g, c))
		return -ENODATA;
	gp_side_open(gp, g, dfd, c);
	return 0;
}

int merge_gperf_load(struct merge_gperf *gp, struct merge_guest *g, const char *dir)
{
	_cleanup_close_ int dfd = -1;
	char bad[80];

	if (!g->present || !g->perf_events[0])
		return 0;
	if (perf_events_parse(g->perf_events, gp->ev, &gp->n_events, bad, sizeof(bad)) < 0 || !gp->n_events) {
		gp->why = "session.ini's guest_perf names no known perf event";
		return 0;
	}
	dfd = merge_input_dir(g, dir);
	gp->cpus = calloc(g->ncpus, sizeof(*gp->cpus));
	if (dfd < 0 || !gp->cpus)
		return dfd < 0 ? dfd : -ENOMEM;
	gp->ncpus_total = g->ncpus;
	gp->ktext = g->gsym ? g->gsym->ktext : 0; /* merge_gsym_load, before */
	/* perf stamps with mono; beside another trace clock the probes read mono too */
	if (!g->scan_only && g->guest_clock[0] && strcmp(g->guest_clock, "mono")) {
		g->perf_clock_needed = true;
		merge_meta_perf_clock(g, dfd); /* following: refitted as probes come (follow.c) */
		if (!g->perf_clock_on && g->clock_aligned && !g->follow) {
			g->clock_aligned = false;
			snprintf(g->clock_why, sizeof(g->clock_why), "guest perf's clock: %.120s", g->perf_clock_why);
		}
	}
	for (uint32_t i = 0; i < g->ncpus; i++) {
		struct gperf_cpu *c = &gp->cpus[i];
		int r;

		c->cpu = i;
		c->fd = c->side_fd = -1;
		r = gp_open_cpu(gp, g, dfd, c);
		if (r == -ENOMEM)
			return r;
		if (r < 0) {
			gp->dropped_cpus++;
			gp_cpu_close(c);
			continue;
		}
		gp->streams++;
	}
	gp->present = true;
	return 0;
}

/* A string field [from, end) must hold its NUL: perf reads it as a C string. */
static bool gp_str_ok(const uint8_t *r, size_t from, size_t end)
{
	return from < end && memchr(r + from, 0, end - from);
}


/* Validates one record of a guest perf stream (size already checked: >= 8, % 8 == 0). */
static bool gp_layout(const uint8_t *r, uint16_t size, struct gperf_layout *ret)
{
	struct perf_event_header h;
	size_t t = size - VT_PERF_SAMPLE_ID_LEN; /* the sample_id trailer of non-sample records */
	uint64_t nr;

	memcpy(&h, r, sizeof(h));
	*ret = (struct gperf_layout){ .id = (uint16_t)(size - 8), .time = (uint16_t)(t + 8), .cpu = (uint16_t)(t + 16) };
	if (h.type == PERF_RECORD_SAMPLE) {
		if (size < 8 + VT_PERF_SAMPLE_HEAD + 8)
			return false;
		memcpy(&nr, r + 8 + VT_PERF_SAMPLE_HEAD, 8);
		*ret = (struct gperf_layout){ .id = 8, .time = 32, .cpu = 40 };
		return nr <= VT_PERF_MAX_STACK && size == 8 + VT_PERF_SAMPLE_HEAD + 8 + 8 * nr;
	}
	if (size < 8 + VT_PERF_SAMPLE_ID_LEN)
		return false;
	switch (h.type) {
	case PERF_RECORD_COMM:
		return gp_str_ok(r, 16, t);
	case PERF_RECORD_MMAP:
		return gp_str_ok(r, 40, t);
	case PERF_RECORD_MMAP2: /* perf copies build_id_size bytes into 20 (util/build-id.c build_id__init) */
		return gp_str_ok(r, 72, t) &&
		       (!(h.misc & PERF_RECORD_MISC_MMAP_BUILD_ID) || (r[40] > 0 && r[40] <= ELF_NOTES_BUILD_ID_MAX));
	case PERF_RECORD_KSYMBOL:
		return gp_str_ok(r, 24, t);
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT:
		ret->time2 = 24;
		return size == 32 + VT_PERF_SAMPLE_ID_LEN;
	case PERF_RECORD_LOST:
		ret->id2 = 8;
		return size == 24 + VT_PERF_SAMPLE_ID_LEN;
	case PERF_RECORD_THROTTLE:
	case PERF_RECORD_UNTHROTTLE:
		ret->time2 = 8, ret->id2 = 16, ret->id3 = 24;
		return size == 32 + VT_PERF_SAMPLE_ID_LEN;
	}
	return false;
}

/* Which of the stream's events an id is: its index, or -1. */
static int gp_event(const struct merge_gperf *gp, const struct gperf_cpu *c, uint64_t id)
{
	for (uint32_t e = 0; e < c->nr_ids && e < gp->n_events; e++)
		if (c->ids[e] == id)
			return (int)e;
	return -1;
}

/* The head's host time by the fit clock_gen, never before the CPU's last (true: it was);
 * again: converted before (its time outside the window counted then). */
static bool gp_convert(struct merge_guest *g, struct gperf_cpu *c, bool again)
{
	bool before;

	c->last_ts = c->conv_prev;
	c->conv_gen = g->clock_gen;
	c->head_ts = again ? merge_meta_bound_time(g, c->cpu, c->head_raw, true)
			   : merge_meta_perf_time(g, c->cpu, c->head_raw);
	before = c->head_ts < c->last_ts; /* an interrupt's record reserved after a later one */
	if (before)
		c->head_ts = c->last_ts;
	c->last_ts = c->head_ts;
	return before;
}

/* The record at c->off into c->rec, checked; 1 kept, 0 dropped (counted), -1 at the end. */
static int gp_read_one(struct merge_gperf *gp, struct merge_guest *g, struct gperf_cpu *c)
{
	struct perf_event_header h;
	uint64_t id, raw;
	int ev;

	if (!gp_need(g, c, 8))
		return gp_out_of_bytes(c);
	memcpy(&h, c->buf + c->off, 8);
	if (!memcmp(c->buf + c->off, "VIRTMARK", 8) && !c->in_side) { /* no marker is kept aside */
		struct vt_marker m;
		struct vt_perf_marker pm;

		if (!gp_need(g, c, g->page_size))
			return -1;
		if (vt_marker_decode(c->buf + c->off, g->page_size, &m) == 1 && m.session_id == g->session_id &&
		    m.cpu == c->cpu && vt_marker_decode_perf(c->buf + c->off, g->page_size, &m, &pm) == 0) {
			struct vt_flush_marker f;

			if (m.kind == VT_MARKER_PERF_END) {
				c->ended = true;
				c->end = pm.stats;
				return -1;
			}
			/* FLUSH's answer: every record of this CPU stamped before f.guest_time is
			 * before it (the live merge's horizon for this stream). */
			if (m.kind == VT_MARKER_PERF_FLUSH &&
			    vt_marker_decode_flush(c->buf + c->off, g->page_size, &m, &f) == 0) {
				c->bound_raw = MAX(c->bound_raw, f.guest_time);
				c->flush_markers++;
				c->off += g->page_size;
				return 0;
			}
		}
		c->off += 8, c->skipped += 8;
		return 0;
	}
	if (h.size < 8 || h.size % 8) {
		c->off += 8, c->skipped += 8; /* walk on to the next plausible record */
		return 0;
	}
	if (!gp_need(g, c, h.size))
		return gp_out_of_bytes(c); /* a side file cut short: what it had */
	memcpy(c->rec, c->buf + c->off, h.size);
	c->off += h.size;
	c->bytes += h.size;
	if (!gp_layout(c->rec, h.size, &c->lay)) {
		gp->bad_records++;
		return 0;
	}
	memcpy(&id, c->rec + c->lay.id, 8);
	if ((ev = gp_event(gp, c, id)) < 0) {
		gp->unknown_ids++;
		return 0;
	}
	c->head_ev = (uint32_t)ev;
	c->head_rank = -1;
	memcpy(&raw, c->rec + c->lay.time, 8);
	c->head_raw = raw;
	c->last_raw = MAX(c->last_raw, raw);
	c->conv_prev = c->last_ts;
	gp->reordered += gp_convert(g, c, false);
	return 1;
}

bool merge_gperf_peek(struct merge_gperf *gp, struct merge_guest *g, struct gperf_cpu *c)
{
	c->blocked = false;
	if (c->head_valid && c->conv_gen != g->clock_gen)
		gp_convert(g, c, true); /* converted by an older fit: again, by the new one */
	while (!c->head_valid && !c->done) {
		int r = gp_read_one(gp, g, c);

		if (r < 0 && c->blocked && !c->ended)
			return false; /* following: more may come */
		if (r < 0) {
			gp->no_end_cpus += !c->ended;
			gp_cpu_close(c);
		}
		c->head_valid = r > 0;
	}
	return c->head_valid;
}

/* Records of the head's stamp looked at for a FORK: a hostile stream of one stamp costs at
 * most this many record checks per tie. */
#define GP_RANK_AHEAD 32

/* A coarse guest clock (clocksource=jiffies: mono moves once per 4 ms tick) gives the fork on one
 * vCPU and the child's first COMM or MMAP2 on another the same stamp. perf gives a forked thread
 * its parent's name and maps, so among CPUs tied on a stamp the one with a FORK in its records of
 * that stamp goes first; its own order stays. What is not read yet (following) is not looked at. */
unsigned merge_gperf_rank(struct merge_guest *g, struct gperf_cpu *c)
{
	struct perf_event_header h;
	size_t rel = 0;

	if (c->head_rank >= 0)
		return (unsigned)c->head_rank;
	memcpy(&h, c->rec, sizeof(h));
	c->head_rank = h.type == PERF_RECORD_FORK ? 0 : h.type == PERF_RECORD_EXIT ? 2 : 1;
	for (int n = 0; c->head_rank == 1 && n < GP_RANK_AHEAD && gp_need(g, c, rel + 8); n++) {
		const uint8_t *r = c->buf + c->off + rel;
		struct gperf_layout lay;
		uint64_t raw;

		memcpy(&h, r, sizeof(h));
		if (!memcmp(r, "VIRTMARK", 8) || h.size < 8 || h.size % 8 || !gp_need(g, c, rel + h.size))
			break;
		r = c->buf + c->off + rel; /* gp_need may have moved the buffer */
		if (!gp_layout(r, h.size, &lay))
			break;
		memcpy(&raw, r + lay.time, 8);
		if (raw != c->head_raw)
			break;
		if (h.type == PERF_RECORD_FORK)
			c->head_rank = 0;
		rel += h.size;
	}
	c->blocked = false; /* the head is there: a short look ahead does not block the stream */
	return (unsigned)c->head_rank;
}

uint64_t merge_gperf_bound(struct merge_guest *g, const struct gperf_cpu *c)
{
	uint64_t t = c->bound_raw > c->last_raw ? merge_meta_bound_time(g, c->cpu, c->bound_raw, true) : 0;

	return MAX(t, c->last_ts);
}

/* perf inject --guest-data's rule: a user cpumode becomes GUEST_USER, anything else GUEST_KERNEL. */
static uint16_t gp_misc(uint16_t misc)
{
	uint16_t mode = misc & PERF_RECORD_MISC_CPUMODE_MASK;

	mode = (mode & PERF_RECORD_MISC_USER) ? PERF_RECORD_MISC_GUEST_USER : PERF_RECORD_MISC_GUEST_KERNEL;
	return (uint16_t)((misc & ~PERF_RECORD_MISC_CPUMODE_MASK) | mode);
}

int merge_gperf_emit(struct merge_ctx *m, struct merge_vm *vm, struct gperf_cpu *c)
{
	struct merge_gperf *gp = &vm->gp;
	const struct merge_guest *g = &vm->guest;
	const struct gperf_layout *l = &c->lay;
	uint8_t *r = c->rec;
	struct perf_event_header h;
	uint64_t id = g->id_base + (g->n_events + c->head_ev) * g->ncpus + c->cpu, lost;
	uint32_t cpu = merge_vcpu_cpu(&vm->vcpu, c->cpu);

	memcpy(&h, r, sizeof(h));
	h.misc = gp_misc(h.misc);
	memcpy(r, &h, sizeof(h));
	memcpy(r + l->id, &id, 8);
	memcpy(r + l->time, &c->head_ts, 8);
	memcpy(r + l->cpu, &cpu, 4);
	if (l->id2)
		memcpy(r + l->id2, &id, 8);
	if (l->id3)
		memcpy(r + l->id3, &id, 8);
	if (l->time2)
		memcpy(r + l->time2, &c->head_ts, 8);
	if (h.type == PERF_RECORD_SAMPLE) {
		gp->samples++, c->samples++;
		m->first_sample = MIN(m->first_sample, c->head_ts);
		m->last_sample = MAX(m->last_sample, c->head_ts);
	} else if (h.type == PERF_RECORD_LOST) {
		memcpy(&lost, r + 16, 8);
		gp->lost_records++;
		gp->lost += lost;
	}
	gp->records++;
	m->last_ts = MAX(m->last_ts, c->head_ts);
	c->head_valid = false;
	return merge_out_emit(m, r, c->head_ts);
}

void merge_gperf_summary(const struct merge_gperf *gp, const struct merge_guest *g)
{
	uint64_t sent = 0, got = 0;

	if (!gp->present) {
		if (gp->why)
			printf("  perf:   guest perf not merged: %s\n", gp->why);
		return;
	}
	for (uint32_t i = 0; gp->cpus && i < gp->ncpus_total; i++) {
		const struct gperf_cpu *c = &gp->cpus[i];

		/* the flight recorder's freed bytes count as received; their records kept aside
		 * were read (c->bytes) from the side file */
		if (c->ended)
			sent += c->end.bytes_sent, got += c->bytes + c->skipped + c->fr_bytes - MIN(c->side_bytes, c->fr_bytes);
	}
	if (g->perf_clock_on)
		printf("  perf clock: guest mono (the trace clock is %s), fitted from perf-clock.samples: %" PRIu64
		       " samples, error bound %" PRIu64 " ns\n", g->guest_clock, g->perf_clock.samples,
		       g->perf_clock.error_bound_ns);
	printf("  perf:   guest perf %zu event(s), %u/%u vCPU streams, %" PRIu64 " records written (%" PRIu64
	       " samples), %" PRIu64 " LOST records for %" PRIu64 " samples lost in the guest ring\n",
	       gp->n_events, gp->streams, gp->ncpus_total, gp->records, gp->samples, gp->lost_records, gp->lost);
	if (sent > got)
		printf("          guest perf bytes missing in transport: %" PRIu64 "\n", sent - got);
	if (gp->fr_records || gp->fr_side_bad)
		printf("          flight recorder: the oldest %" PRIu64 " records (%" PRIu64 " samples) dropped; %" PRIu64
		       " task and mapping records of them kept (perf-cpuN.side), %" PRIu64 " not kept (table full)%s\n",
		       gp->fr_records, gp->fr_samples, gp->fr_side_records, gp->fr_not_kept,
		       gp->fr_side_bad ? "; a perf-cpuN.side that does not fit its spool was not used" : "");
	if (gp->bad_records || gp->unknown_ids || gp->no_end_cpus || gp->dropped_cpus || gp->reordered)
		printf("          dropped: %" PRIu64 " malformed records, %" PRIu64 " with an unknown id; %u streams "
		       "without an end marker, %u without a begin marker; %" PRIu64 " records' times raised to keep "
		       "each vCPU in order\n", gp->bad_records, gp->unknown_ids, gp->no_end_cpus, gp->dropped_cpus,
		       gp->reordered);
}

void merge_gperf_free(struct merge_gperf *gp)
{
	for (uint32_t i = 0; gp->cpus && i < gp->ncpus_total; i++) {
		gp_cpu_close(&gp->cpus[i]);
		free(gp->cpus[i].buf);
		free(gp->cpus[i].rec);
	}
	free(gp->cpus);
	gp->cpus = NULL;
}
