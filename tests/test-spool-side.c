// SPDX-License-Identifier: GPL-2.0-only
/* The flight recorder's table of a guest perf stream (collector/link/spool-side.c): which task and
 * mapping records of the freed part are kept in perf-cpuN.side, where the cut falls, and what
 * the head counts; with the tables of other CPUs (a task's records, its samples and its
 * children's FORKs in different streams). Records built here in the agent's layout, each one a
 * tick later than the one before (the e2e test guest-perf part 4 runs the same through the real
 * guest's streams). */
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "marker.h"
#include "perf_events.h"
#include "spool-side.h"

struct feed {
	struct spool_side *t;
	uint64_t off, records, samples;
	uint64_t time; /* the next record's guest time */
};

/* As the daemon's scan: a mark where one is due (the record read for its time), the record kept
 * if it is a task or mapping record. */
static void put(struct feed *f, const void *rec, uint16_t size)
{
	struct perf_event_header h;

	memcpy(&h, rec, sizeof(h));
	if ((spool_side_marks(f->t, f->off) && spool_side_mark(f->t, f->off, f->records, f->samples, rec, size) < 0) ||
	    (spool_side_wants(h.type) && spool_side_add(f->t, f->off, rec, size) < 0))
		abort();
	f->records++, f->samples += h.type == PERF_RECORD_SAMPLE;
	f->off += size;
	f->time++;
}

/* COMM / MMAP2 / FORK / EXIT with the sample_id trailer the agent's attrs give (pid/tid, time,
 * cpu, id); v: pid, tid (FORK/EXIT: pid, ppid, tid, ptid). */
static uint64_t rec(struct feed *f, uint32_t type, uint16_t misc, const uint32_t v[4], const char *name)
{
	uint8_t r[256] = { 0 };
	struct perf_event_header h = { .type = type, .misc = misc };
	size_t n = 8;
	uint64_t at = f->off;

	if (type == PERF_RECORD_FORK || type == PERF_RECORD_EXIT) {
		memcpy(r + 8, v, 16);
		memcpy(r + 24, &f->time, 8);
		n = 32;
	} else {
		memcpy(r + 8, v, 8);
		n = type == PERF_RECORD_MMAP2 ? 72 : 16;
		strcpy((char *)r + n, name);
		n = (n + strlen(name) + 1 + 7) / 8 * 8;
	}
	memcpy(r + n, v, 8);
	memcpy(r + n + 8, &f->time, 8);
	n += VT_PERF_SAMPLE_ID_LEN;
	h.size = (uint16_t)n;
	memcpy(r, &h, sizeof(h));
	put(f, r, (uint16_t)n);
	return at;
}

/* COMM / MMAP2 of pid's thread tid; FORK / EXIT of thread tid of process pid (forked by its
 * leader). */
static uint64_t task(struct feed *f, uint32_t type, uint16_t misc, uint32_t pid, uint32_t tid, const char *name)
{
	uint32_t v[4] = { pid, tid };

	if (type == PERF_RECORD_FORK || type == PERF_RECORD_EXIT)
		v[1] = pid, v[2] = tid, v[3] = pid;
	return rec(f, type, misc, v, name);
}

/* A process child forked by process parent (its thread parent). */
static void fork_of(struct feed *f, uint32_t child, uint32_t parent)
{
	uint32_t v[4] = { child, parent, child, parent };

	rec(f, PERF_RECORD_FORK, 0, v, NULL);
}

/* n samples of pid (time after id, ip, pid/tid). */
static void samples_of(struct feed *f, uint32_t pid, unsigned n)
{
	uint8_t r[64] = { 0 };
	struct perf_event_header h = { .type = PERF_RECORD_SAMPLE, .size = sizeof(r) };

	memcpy(r, &h, sizeof(h));
	memcpy(r + 24, &pid, 4), memcpy(r + 28, &pid, 4);
	while (n--) {
		memcpy(r + 32, &f->time, 8);
		put(f, r, sizeof(r));
	}
}

static void samples(struct feed *f, unsigned n)
{
	samples_of(f, 1, n);
}

/* perf-cpu0.side of dir: its head, and the names (COMM, MMAP2 path) of its records, in order. */
static int read_side_cpu(const char *dir, unsigned cpu, struct vt_perf_side_head *h, char *names, size_t len)
{
	char path[256];
	uint8_t buf[65536];
	FILE *f;
	size_t n, off = 0;

	snprintf(path, sizeof(path), "%s/perf-cpu%u.side", dir, cpu);
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

static int read_side(const char *dir, struct vt_perf_side_head *h, char *names, size_t len)
{
	return read_side_cpu(dir, 0, h, names, len);
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

	CHECK_INT(spool_side_cut(f.t, before_cut, 4096, 0, NULL, 0, &hole), ==, 1);
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
	CHECK_INT(h.dropped_samples, ==, 10 + (hole - (exit_c + 64)) / 64);
	CHECK_INT(h.not_kept, ==, 0);
	CHECK_INT(h.flush_pages, ==, 1); /* not records: the merge's transport check leaves it out */
	/* Nothing new past the window: no second cut; nor one less than a step past the last. */
	CHECK_INT(spool_side_cut(f.t, before_cut, 4096, 0, NULL, 0, &hole), ==, 0);
	CHECK_INT(spool_side_cut(f.t, f.off, 4096, 1u << 20, NULL, 0, &hole), ==, 0);

	/* b exits after the cut; the next cut takes it and d: b's records go, d's stays. */
	task(&f, PERF_RECORD_EXIT, 0, 200, 200, NULL);
	samples(&f, 100);
	CHECK_INT(spool_side_cut(f.t, f.off, 4096, 0, NULL, 0, &hole), ==, 1);
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


static void side_rmdir(char *dir)
{
	char path[300];

	for (unsigned c = 0; c < 2; c++) {
		snprintf(path, sizeof(path), "%s/perf-cpu%u.side", dir, c);
		unlink(path);
	}
	rmdir(dir);
}

/* The e2e flake (guest-perf part 4, stop after the spin): the shell forks workload P, which
 * execs, forks the spinner C and exits after it; C exits on the other vCPU, so its FORK stays.
 * P's exit must not take P's name and mappings (nor P's own FORK) with it: perf gives C what P
 * had at the FORK, and without them C's samples fell in the shell's busybox mapping. */
TEST(parent_exit_keeps_what_a_kept_fork_took)
{
	char dir[] = "/tmp/vt-test-side.XXXXXX", names[512];
	struct feed f = { .off = 4096, .time = 1000 };
	struct vt_perf_side_head h;
	uint64_t hole;

	CHECK(mkdtemp(dir));
	CHECK(spool_side_new(dir, 0, 7, &f.t) == 0);
	task(&f, PERF_RECORD_COMM, 0, 50, 50, "sh");
	task(&f, PERF_RECORD_MMAP2, PERF_RECORD_MISC_USER, 50, 50, "/bin/busybox");
	fork_of(&f, 100, 50);
	task(&f, PERF_RECORD_COMM, PERF_RECORD_MISC_COMM_EXEC, 100, 100, "workload");
	task(&f, PERF_RECORD_MMAP2, PERF_RECORD_MISC_USER, 100, 100, "/bin/workload");
	fork_of(&f, 101, 100);
	samples_of(&f, 101, 10);
	task(&f, PERF_RECORD_EXIT, 0, 100, 100, NULL);
	samples(&f, 100);
	CHECK_INT(spool_side_cut(f.t, f.off, 4096, 0, NULL, 0, &hole), ==, 1);
	CHECK(read_side(dir, &h, names, sizeof(names)) == 0);
	printf("cut at %llu: kept %s\n", (unsigned long long)hole, names);
	CHECK(!strcmp(names, "sh /bin/busybox fork workload /bin/workload fork exit"));
	/* C exits: at the next cut nothing of P or C is needed any more (the shell stays) */
	task(&f, PERF_RECORD_EXIT, 0, 101, 101, NULL);
	samples(&f, 100);
	CHECK_INT(spool_side_cut(f.t, f.off, 4096, 0, NULL, 0, &hole), ==, 1);
	CHECK(read_side(dir, &h, names, sizeof(names)) == 0);
	printf("cut at %llu: kept %s\n", (unsigned long long)hole, names);
	CHECK(!strcmp(names, "sh /bin/busybox"));
	spool_side_free(f.t);
	side_rmdir(dir);
}

/* Two vCPUs: task T's name, mapping and exit in CPU 0's stream, its samples in CPU 1's. While
 * CPU 1's spool holds samples older than the exit, CPU 0's cut keeps T's records; once CPU 1 is
 * cut past the exit, its cut drops them from CPU 0's table too (not needed by any sample kept). */
TEST(exit_waits_for_every_cpus_window)
{
	char dir[] = "/tmp/vt-test-side.XXXXXX", names[512];
	struct feed f0 = { .off = 4096, .time = 1000 }, f1 = { .off = 4096, .time = 1000 };
	struct spool_side *p0[1], *p1[1];
	struct vt_perf_side_head h;
	uint64_t hole;

	CHECK(mkdtemp(dir));
	CHECK(spool_side_new(dir, 0, 7, &f0.t) == 0 && spool_side_new(dir, 1, 7, &f1.t) == 0);
	p0[0] = f1.t, p1[0] = f0.t;
	samples(&f1, 5); /* CPU 1's first records: before T */
	f0.time = f1.time;
	task(&f0, PERF_RECORD_COMM, 0, 300, 300, "t");
	task(&f0, PERF_RECORD_MMAP2, PERF_RECORD_MISC_USER, 300, 300, "/bin/t");
	f1.time = f0.time;
	samples_of(&f1, 300, 10); /* T runs on CPU 1 */
	f0.time = f1.time;
	task(&f0, PERF_RECORD_EXIT, 0, 300, 300, NULL);
	samples(&f0, 100);
	CHECK_INT(spool_side_cut(f0.t, f0.off, 4096, 0, p0, 1, &hole), ==, 1);
	CHECK(read_side_cpu(dir, 0, &h, names, sizeof(names)) == 0);
	printf("cpu0 cut at %llu (cpu1 not cut): kept %s\n", (unsigned long long)hole, names);
	CHECK(!strcmp(names, "t /bin/t exit"));
	/* CPU 1 goes on past the exit and is cut there; then CPU 0 again */
	f1.time = f0.time;
	samples(&f1, 100);
	CHECK_INT(spool_side_cut(f1.t, f1.off - 64, 4096, 0, p1, 1, &hole), ==, 1);
	samples(&f0, 100);
	CHECK_INT(spool_side_cut(f0.t, f0.off, 4096, 0, p0, 1, &hole), ==, 1);
	CHECK(read_side_cpu(dir, 0, &h, names, sizeof(names)) == 0);
	printf("cpu0 cut at %llu (cpu1 cut past the exit): kept '%s'\n", (unsigned long long)hole, names);
	CHECK(!strcmp(names, ""));
	spool_side_free(f0.t);
	spool_side_free(f1.t);
	side_rmdir(dir);
}

/* Two vCPUs: P's mapping and exit in CPU 0's stream, its child C's FORK in CPU 1's (C lives on,
 * a daemon): CPU 0's cut keeps what C took from P, though nothing in CPU 0's stream needs it;
 * once C exited and CPU 1 is cut again, P's records go. On a coarse clock the FORK and P's exit
 * share a time: which came first is not known, so P's records stay then too. */
static void fork_in_other_stream(bool tie)
{
	char dir[] = "/tmp/vt-test-side.XXXXXX", names[512];
	struct feed f0 = { .off = 4096, .time = 1000 }, f1 = { .off = 4096, .time = 1000 };
	struct spool_side *p0[1], *p1[1];
	struct vt_perf_side_head h;
	uint64_t hole;

	CHECK(mkdtemp(dir));
	CHECK(spool_side_new(dir, 0, 7, &f0.t) == 0 && spool_side_new(dir, 1, 7, &f1.t) == 0);
	p0[0] = f1.t, p1[0] = f0.t;
	task(&f0, PERF_RECORD_COMM, PERF_RECORD_MISC_COMM_EXEC, 100, 100, "p");
	task(&f0, PERF_RECORD_MMAP2, PERF_RECORD_MISC_USER, 100, 100, "/bin/p");
	f1.time = f0.time + 1;
	fork_of(&f1, 101, 100);
	f0.time = tie ? f1.time - 1 : f1.time;
	task(&f0, PERF_RECORD_EXIT, 0, 100, 100, NULL);
	f0.time = f1.time = f0.time > f1.time ? f0.time : f1.time;
	samples_of(&f1, 101, 100);
	samples(&f0, 100);
	CHECK_INT(spool_side_cut(f1.t, f1.off, 4096, 0, p1, 1, &hole), ==, 1);
	CHECK_INT(spool_side_cut(f0.t, f0.off, 4096, 0, p0, 1, &hole), ==, 1);
	CHECK(read_side_cpu(dir, 0, &h, names, sizeof(names)) == 0);
	printf("%s: cpu0 kept %s\n", tie ? "same time" : "fork first", names);
	CHECK(!strcmp(names, "p /bin/p exit"));
	CHECK(read_side_cpu(dir, 1, &h, names, sizeof(names)) == 0);
	CHECK(!strcmp(names, "fork"));
	/* C exits on CPU 1; both cut again: nothing of P or C left */
	task(&f1, PERF_RECORD_EXIT, 0, 101, 101, NULL);
	f0.time = f1.time;
	samples(&f1, 100);
	samples(&f0, 100);
	CHECK_INT(spool_side_cut(f1.t, f1.off, 4096, 0, p1, 1, &hole), ==, 1);
	CHECK_INT(spool_side_cut(f0.t, f0.off, 4096, 0, p0, 1, &hole), ==, 1);
	CHECK(read_side_cpu(dir, 0, &h, names, sizeof(names)) == 0);
	printf("after C's exit: cpu0 kept '%s'\n", names);
	CHECK(!strcmp(names, ""));
	spool_side_free(f0.t);
	spool_side_free(f1.t);
	side_rmdir(dir);
}

TEST(fork_in_other_stream_keeps_parent)
{
	fork_in_other_stream(false);
}

TEST(fork_same_time_as_parent_exit_keeps_parent)
{
	fork_in_other_stream(true);
}
