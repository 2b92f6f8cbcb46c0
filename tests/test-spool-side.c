// SPDX-License-Identifier: GPL-2.0-only
/* The flight recorder's table of a guest perf stream (collector/spool-side.c): which task and
 * mapping records of the freed part are kept in perf-cpuN.side, where the cut falls, and what
 * the head counts. Records built here in perf's layout (the e2e test guest-perf part 4 runs the
 * same through the real guest's streams). */
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collector.h"
#include "harness.h"
#include "marker.h"

struct feed {
	struct spool_side *t;
	uint64_t off, records, samples;
	uint64_t at[64]; /* offsets of the named records, by index */
};

static void put(struct feed *f, const void *rec, uint16_t size)
{
	struct perf_event_header h;

	memcpy(&h, rec, sizeof(h));
	if (spool_side_mark(f->t, f->off, f->records, f->samples) < 0 ||
	    (spool_side_wants(h.type) && spool_side_add(f->t, f->off, rec, size) < 0))
		abort();
	f->records++, f->samples += h.type == PERF_RECORD_SAMPLE;
	f->off += size;
}

/* COMM / MMAP2 / FORK / EXIT with a 40-byte sample_id trailer, as the agent's attrs give. */
static uint64_t task(struct feed *f, uint32_t type, uint16_t misc, uint32_t pid, uint32_t tid, const char *name)
{
	uint8_t r[256] = { 0 };
	struct perf_event_header h = { .type = type, .misc = misc };
	size_t n = 8;
	uint64_t at = f->off;

	if (type == PERF_RECORD_FORK || type == PERF_RECORD_EXIT) {
		uint32_t v[4] = { pid, pid, tid, tid };

		memcpy(r + 8, v, 16);
		n = 32;
	} else {
		memcpy(r + 8, &pid, 4), memcpy(r + 12, &tid, 4);
		n = type == PERF_RECORD_MMAP2 ? 72 : 16;
		strcpy((char *)r + n, name);
		n = (n + strlen(name) + 1 + 7) / 8 * 8;
	}
	n += 40;
	h.size = (uint16_t)n;
	memcpy(r, &h, sizeof(h));
	put(f, r, (uint16_t)n);
	return at;
}

static void samples(struct feed *f, unsigned n)
{
	uint8_t r[64] = { 0 };
	struct perf_event_header h = { .type = PERF_RECORD_SAMPLE, .size = sizeof(r) };

	memcpy(r, &h, sizeof(h));
	while (n--)
		put(f, r, sizeof(r));
}

/* perf-cpu0.side of dir: its head, and the names (COMM, MMAP2 path) of its records, in order. */
static int read_side(const char *dir, struct vt_perf_side_head *h, char *names, size_t len)
{
	char path[256];
	uint8_t buf[65536];
	FILE *f;
	size_t n, off = 0;

	snprintf(path, sizeof(path), "%s/perf-cpu0.side", dir);
	if (!(f = fopen(path, "r")))
		return -errno;
	n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	if (n < sizeof(*h))
		return -EBADMSG;
	memcpy(h, buf, sizeof(*h));
	names[0] = 0;
	for (off = sizeof(*h); off + 8 <= n;) {
		struct perf_event_header rh;

		memcpy(&rh, buf + off, sizeof(rh));
		if (rh.size < 8 || off + rh.size > n)
			return -EBADMSG;
		snprintf(names + strlen(names), len - strlen(names), "%s%s", names[0] ? " " : "",
			 rh.type == PERF_RECORD_COMM ? (char *)buf + off + 16 :
			 rh.type == PERF_RECORD_MMAP2 ? (char *)buf + off + 72 :
			 rh.type == PERF_RECORD_FORK ? "fork" : rh.type == PERF_RECORD_EXIT ? "exit" : "?");
		off += rh.size;
	}
	return off == n ? 0 : -EBADMSG;
}

TEST(cut_keeps_what_live_tasks_need)
{
	char dir[] = "/tmp/vt-test-side.XXXXXX", names[512];
	struct feed f = { .off = 4096 };
	struct vt_perf_side_head h;
	uint64_t before_cut, hole, exit_c;

	CHECK(mkdtemp(dir));
	CHECK(spool_side_new(dir, 0, 7, &f.t) == 0);
	task(&f, PERF_RECORD_COMM, 0, 100, 100, "a");
	task(&f, PERF_RECORD_MMAP2, PERF_RECORD_MISC_USER, 100, 100, "/bin/a");
	task(&f, PERF_RECORD_COMM, 0, 200, 200, "b");
	task(&f, PERF_RECORD_MMAP2, PERF_RECORD_MISC_USER, 200, 200, "/bin/b");
	task(&f, PERF_RECORD_FORK, 0, 200, 201, NULL);  /* a thread of b */
	task(&f, PERF_RECORD_COMM, 0, 200, 201, "b-thread");
	samples(&f, 10);
	spool_side_flush_marker(f.t); /* a perf flush marker page between records */
	f.off += 4096;
	task(&f, PERF_RECORD_EXIT, 0, 200, 201, NULL);  /* the thread exits */
	task(&f, PERF_RECORD_COMM, PERF_RECORD_MISC_COMM_EXEC, 100, 100, "a2"); /* a execs */
	task(&f, PERF_RECORD_MMAP2, PERF_RECORD_MISC_USER, 100, 100, "/bin/a2");
	task(&f, PERF_RECORD_COMM, 0, 300, 300, "c");
	task(&f, PERF_RECORD_MMAP2, PERF_RECORD_MISC_USER, 300, 300, "/bin/c");
	exit_c = task(&f, PERF_RECORD_EXIT, 0, 300, 300, NULL); /* c exits */
	samples(&f, 300); /* 19 KiB: marks in five blocks */
	before_cut = f.off;
	task(&f, PERF_RECORD_COMM, 0, 400, 400, "d"); /* after the cut */
	samples(&f, 10);

	CHECK_INT(spool_side_cut(f.t, before_cut, 4096, 0, &hole), ==, 1);
	CHECK_INT(hole, <=, before_cut);
	CHECK_INT(hole, >, exit_c);
	CHECK_INT((hole - 4096) % 8, ==, 0);
	CHECK(read_side(dir, &h, names, sizeof(names)) == 0);
	printf("cut at %llu: kept %s\n", (unsigned long long)hole, names);
	CHECK(!strcmp(names, "b /bin/b a2 /bin/a2"));
	CHECK(h.magic == VT_PERF_SIDE_MAGIC && h.session_id == 7 && h.cpu == 0 && h.hole_end == hole);
	CHECK_INT(h.side_records, ==, 4);
	CHECK_INT(h.dropped_bytes, ==, hole - 4096);
	/* every record before the cut: 12 task records, 10 samples, and the samples up to it */
	CHECK_INT(h.dropped_records, ==, 12 + h.dropped_samples);
	CHECK_INT(h.dropped_samples, ==, 10 + (hole - (exit_c + 72)) / 64);
	CHECK_INT(h.not_kept, ==, 0);
	CHECK_INT(h.flush_pages, ==, 1); /* not records: the merge's transport check leaves it out */
	/* Nothing new past the window: no second cut; nor one less than a step past the last. */
	CHECK_INT(spool_side_cut(f.t, before_cut, 4096, 0, &hole), ==, 0);
	CHECK_INT(spool_side_cut(f.t, f.off, 4096, 1u << 20, &hole), ==, 0);

	/* b exits after the cut; the next cut takes it and d: b's records go, d's stays. */
	task(&f, PERF_RECORD_EXIT, 0, 200, 200, NULL);
	samples(&f, 100);
	CHECK_INT(spool_side_cut(f.t, f.off, 4096, 0, &hole), ==, 1);
	CHECK(read_side(dir, &h, names, sizeof(names)) == 0);
	printf("cut at %llu: kept %s\n", (unsigned long long)hole, names);
	CHECK(!strcmp(names, "a2 /bin/a2 d"));
	spool_side_free(f.t);
	char path[300];

	snprintf(path, sizeof(path), "%s/perf-cpu0.side", dir);
	unlink(path);
	rmdir(dir);
}

/* A record too short for its type is refused, not kept. */
TEST(short_records_refused)
{
	struct spool_side *t;
	uint8_t r[16] = { 0 };
	struct perf_event_header h = { .type = PERF_RECORD_FORK, .size = 16 };

	CHECK(spool_side_new("/tmp", 0, 1, &t) == 0);
	memcpy(r, &h, sizeof(h));
	CHECK_INT(spool_side_add(t, 4096, r, 16), ==, -EINVAL);
	h = (struct perf_event_header){ .type = PERF_RECORD_COMM, .size = 8 };
	memcpy(r, &h, sizeof(h));
	CHECK_INT(spool_side_add(t, 4096, r, 8), ==, -EINVAL);
	h = (struct perf_event_header){ .type = PERF_RECORD_SAMPLE, .size = 16 };
	memcpy(r, &h, sizeof(h));
	CHECK_INT(spool_side_add(t, 4096, r, 16), ==, -EINVAL);
	spool_side_free(t);
}
