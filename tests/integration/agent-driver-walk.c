// SPDX-License-Identifier: GPL-2.0-only
/* agent-driver: the checks of what the agent streamed: a minimal ring-page walker (common/ftrace_page
 * comes separately), one CPU's stream against its markers and stats, numbered lines written into
 * the instance from every CPU and found again once each, in order. */
#include <fcntl.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent-driver.h"
#include "marker.h"
#include "proto.h"
#include "util.h"


uint16_t print_event_id(void)
{
	_cleanup_free_ char *s = NULL;
	char *p;

	if (util_read_file(TRACEFS "/events/ftrace/print/format", 1 << 16, &s, NULL) < 0)
		return 0;
	p = strstr(s, "ID: ");
	return p ? (uint16_t)atoi(p + 4) : 0;
}

static void walk_print(struct walk *w, const uint8_t *data, size_t len)
{
	char text[128];
	unsigned cpu;
	unsigned long long n;

	if (len <= 16)
		return;
	snprintf(text, sizeof(text), "%.*s", (int)MIN(len - 16, sizeof(text) - 1), (const char *)data + 16);
	if (sscanf(text, "vt-seq %u %llu", &cpu, &n) == 2) {
		if (cpu != w->cpu || n != w->next_seq)
			w->bad_seq++;
		w->next_seq = n + 1;
	} else if (sscanf(text, "vt-probe %llu", &n) == 1 && n == w->probe_id) {
		w->probes++;
	}
}

void walk_page(struct walk *w, const uint8_t *page, size_t psize)
{
	uint64_t commit;
	size_t off = 16, end;

	memcpy(&commit, page + 8, 8);
	end = 16 + (commit & ((1u << 27) - 1));
	if (end > psize) {
		w->bad_page = true;
		return;
	}
	while (off + 4 <= end) {
		uint32_t h, alen;
		unsigned type;
		size_t size;

		memcpy(&h, page + off, 4);
		type = h & 31;
		if (type == 29 && (h >> 5) == 0)
			break; /* padding to the end of the page */
		if (type >= 30) {
			size = 8;
		} else if (type == 29 || type == 0) {
			if (off + 8 > end) {
				w->bad_page = true;
				return;
			}
			memcpy(&alen, page + off + 4, 4);
			size = 4 + (size_t)alen;
		} else {
			size = 4 + 4 * (size_t)type;
		}
		if (size < 8 && type != 30 && type != 31 && type == 0) {
			w->bad_page = true;
			return;
		}
		if (off + size > end) {
			w->bad_page = true;
			return;
		}
		if (type < 29) {
			const uint8_t *data = page + off + (type ? 4 : 8);
			size_t dlen = size - (type ? 4 : 8);
			uint16_t id;

			w->events++;
			memcpy(&id, data, 2);
			if (dlen >= 2 && id == w->print_id)
				walk_print(w, data, dlen);
			if (dlen >= 16 && w->count_id && id == w->count_id) {
				uint64_t ip;

				memcpy(&ip, data + 8, 8);
				w->counted++;
				w->ip_outside += ip < w->ip_lo || ip >= w->ip_hi;
			}
		}
		off += size;
	}
}

/* Checks one CPU's stream: begin marker, ring pages, end marker agreeing with stats. */
int check_stream(const struct capture *c, uint32_t psize, uint64_t session, unsigned cpu,
		 const struct vt_cpu_stats *st, struct walk *w)
{
	struct vt_marker b, e;
	size_t n;

	w->cpu = cpu;
	if (c->err || c->len % psize || c->len < 2 * psize) {
		fprintf(stderr, "cpu%u: stream of %zu bytes (err %d)\n", cpu, c->len, c->err);
		return -1;
	}
	n = c->len / psize;
	if (vt_marker_decode(c->data, psize, &b) != 1 || b.kind != VT_MARKER_BEGIN ||
	    b.session_id != session || b.cpu != cpu)
		return -2;
	if (vt_marker_decode(c->data + (n - 1) * psize, psize, &e) != 1 || e.kind != VT_MARKER_END ||
	    e.session_id != session || e.cpu != cpu)
		return -3;
	for (size_t i = 1; i + 1 < n; i++) {
		struct vt_marker f;

		if (vt_marker_decode(c->data + i * psize, psize, &f) == 1 && f.kind == VT_MARKER_FLUSH &&
		    f.session_id == session && f.cpu == cpu) {
			w->flush_markers++; /* FLUSH's answer: not a ring page */
			continue;
		}
		walk_page(w, c->data + i * psize, psize);
		w->pages++;
	}
	if (w->bad_page)
		return -4;
	if (e.stats.pages_sent != w->pages || st->pages_sent != w->pages ||
	    memcmp(&e.stats, st, sizeof(*st)) != 0)
		return -5;
	if (st->read_events != w->events) {
		fprintf(stderr, "cpu%u: %llu events in the pages, stats say read events %llu\n", cpu,
			(unsigned long long)w->events, (unsigned long long)st->read_events);
		return -6;
	}
	if (st->error || st->entries || st->overrun || st->dropped_events) {
		fprintf(stderr, "cpu%u: error %d entries %llu overrun %llu dropped %llu\n", cpu, st->error,
			(unsigned long long)st->entries, (unsigned long long)st->overrun,
			(unsigned long long)st->dropped_events);
		return -7;
	}
	return 0;
}

/* Writes count numbered lines (from first) into the instance's trace_marker from each online CPU. */
int write_markers(const struct drv *d, unsigned first, unsigned count)
{
	char p[128], line[64];
	cpu_set_t all, one;
	int fd;

	snprintf(p, sizeof(p), TRACEFS "/instances/%s/trace_marker", d->instance);
	fd = open(p, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || sched_getaffinity(0, sizeof(all), &all) < 0)
		return -1;
	for (unsigned c = 0; c < d->ncpus; c++) {
		CPU_ZERO(&one);
		CPU_SET(c, &one);
		if (sched_setaffinity(0, sizeof(one), &one) < 0)
			continue;
		for (unsigned i = first; i < first + count; i++) {
			int len = snprintf(line, sizeof(line), "vt-seq %u %u\n", c, i);

			/* Pace the writer a little so the pinned pump gets the CPU: a test wants
			 * no overrun, the agent itself would report one. */
			if (i % 512 == 511)
				nanosleep(&(struct timespec){ .tv_nsec = 1000000 }, NULL);
			if (write(fd, line, (size_t)len) != len) {
				close(fd);
				return -1;
			}
		}
	}
	sched_setaffinity(0, sizeof(all), &all);
	close(fd);
	return 0;
}

/* A whole-session check on every CPU with a port: markers 0..count-1 once and in order. */
int check_session(struct drv *d, uint64_t session, unsigned count, const struct vt_cpu_stats *st,
		  uint64_t probe_id, uint64_t *ret_probes)
{
	uint64_t probes = 0;

	for (unsigned c = 0; c < d->ncpus; c++) {
		struct walk w = { .print_id = print_event_id(), .probe_id = probe_id };
		int r;

		if (d->cap[c].lfd < 0)
			continue;
		r = check_stream(&d->cap[c], 4096, session, c, &st[c], &w);
		if (r < 0 || w.bad_seq || w.next_seq != count) {
			fprintf(stderr, "cpu%u: stream check %d, %llu markers out of order, next %llu of %u\n",
				c, r, (unsigned long long)w.bad_seq, (unsigned long long)w.next_seq, count);
			return -1;
		}
		probes += w.probes;
		printf("cpu%u: %llu ring pages, %llu events, %llu markers\n", c, (unsigned long long)w.pages,
		       (unsigned long long)w.events, (unsigned long long)w.next_seq);
	}
	if (ret_probes)
		*ret_probes = probes;
	return 0;
}

