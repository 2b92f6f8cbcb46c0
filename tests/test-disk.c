// SPDX-License-Identifier: GPL-2.0-only
/* collector/daemon/disk.c: the disk budget's defaults, sizes, the output's budget and the walk. */
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "disk.h"
#include "harness.h"
#include "util.h"

TEST(default_max_is_a_quarter_capped_at_16g)
{
	CHECK_INT(disk_default_max(0), ==, 0);
	CHECK_INT(disk_default_max(1ull << 20), ==, 256 << 10);
	CHECK_INT(disk_default_max(40ull << 30), ==, 10ull << 30);
	CHECK_INT(disk_default_max(64ull << 30), ==, 16ull << 30);
	CHECK_INT(disk_default_max(4ull << 40), ==, 16ull << 30);
	CHECK_INT(disk_default_max(UINT64_MAX), ==, DISK_MAX_CAP);
}

TEST(default_floor_is_5_percent_capped_at_1g)
{
	CHECK_INT(disk_default_floor(0), ==, 0);
	CHECK_INT(disk_default_floor(100ull << 20), ==, 5ull << 20);
	CHECK_INT(disk_default_floor(10ull << 30), ==, 512ull << 20);
	CHECK_INT(disk_default_floor(20ull << 30), ==, 1ull << 30);
	CHECK_INT(disk_default_floor(250ull << 30), ==, 1ull << 30);
}

TEST(parse_size_takes_none)
{
	uint64_t v = 7;

	CHECK_INT(disk_parse_size("none", &v), ==, 0);
	CHECK_INT(v, ==, 0);
	CHECK_INT(disk_parse_size("0", &v), ==, 0);
	CHECK_INT(v, ==, 0);
	CHECK_INT(disk_parse_size("8M", &v), ==, 0);
	CHECK_INT(v, ==, 8 << 20);
	CHECK_INT(disk_parse_size("nonee", &v), <, 0);
	CHECK_INT(disk_parse_size("2Q", &v), <, 0);
}

TEST(output_budget_takes_the_smaller_bound)
{
	enum disk_bound b;

	/* limit 100, used 30: 70 left; 1000 free, floor 100: 900 left */
	CHECK_INT(disk_output_budget(100, 30, 1000, 100, &b), ==, 70);
	CHECK_INT(b, ==, DISK_BOUND_LIMIT);
	/* the floor is nearer */
	CHECK_INT(disk_output_budget(100, 30, 150, 100, &b), ==, 50);
	CHECK_INT(b, ==, DISK_BOUND_FLOOR);
	/* past the limit already, or below the floor: nothing */
	CHECK_INT(disk_output_budget(100, 130, 1000, 100, &b), ==, 0);
	CHECK_INT(b, ==, DISK_BOUND_LIMIT);
	CHECK_INT(disk_output_budget(100, 30, 90, 100, &b), ==, 0);
	CHECK_INT(b, ==, DISK_BOUND_FLOOR);
	/* no limit: the floor alone; no floor either: unbounded but for the free space */
	CHECK_INT(disk_output_budget(0, 1ull << 40, 1000, 100, &b), ==, 900);
	CHECK_INT(b, ==, DISK_BOUND_FLOOR);
	CHECK_INT(disk_output_budget(0, 5, 1000, 0, &b), ==, 1000);
	CHECK_INT(b, ==, DISK_BOUND_FLOOR);
	/* equal bounds: the limit is named */
	CHECK_INT(disk_output_budget(100, 50, 150, 100, &b), ==, 50);
	CHECK_INT(b, ==, DISK_BOUND_LIMIT);
}

TEST(projected_counts_the_output_ahead)
{
	/* 1000 of ftrace pages, 200 of guest perf, 500 of host.data, 50 else, no live merge yet:
	 * the output is 500 + 200 + 4 * 1000 */
	struct disk_usage u = { .spools = 1200, .ftrace = 1000, .host = 500, .other = 50 };

	CHECK_INT(disk_projected(&u), ==, 1750 + 500 + 200 + DISK_FTRACE_FACTOR * 1000);
	u.live = 100000; /* the live merge's file is larger already: it is the output */
	CHECK_INT(disk_projected(&u), ==, 1750 + 100000);
	CHECK_INT(disk_total(&u), ==, 1750 + 100000);
}

TEST(projected_at_the_live_merges_ratio)
{
	/* The live merge read 100 MiB of pages into a 1 MiB output; 40 MiB of pages unread: they
	 * come at that ratio, a quarter over, beside what is on disk (the perf spools as they are). */
	struct disk_usage u = { .spools = (3ull << 30) + 200, .ftrace = 3ull << 30, .host = 500, .other = 50,
				.live = 1ull << 20, .merged_in = 100ull << 20, .merged_out = 1ull << 20,
				.pending = 40ull << 20 };
	uint64_t on_disk = disk_total(&u);

	CHECK_INT(disk_projected(&u), ==, on_disk + (40ull << 20) * 5 / 4 / 100 + 200);
	/* far below the worst case the 100 s flood was cut by (ftrace pages x4) */
	CHECK_INT(disk_projected(&u), <, on_disk + (100ull << 20));
	/* a ratio over the worst case is held to it */
	u.merged_out = 1000ull << 20;
	CHECK_INT(disk_projected(&u), ==, on_disk + DISK_FTRACE_FACTOR * (40ull << 20) + 200);
	/* under DISK_RATIO_MIN_IN read: no ratio yet, the worst case */
	u.merged_in = DISK_RATIO_MIN_IN - 1;
	CHECK_INT(disk_projected(&u), ==, u.spools + u.host + u.other +
					  MAX(u.live, u.host + 200 + DISK_FTRACE_FACTOR * u.ftrace));
}

TEST(size_strings)
{
	char buf[32];

	CHECK_STR(disk_size_str(0, buf, sizeof(buf)), "0 bytes");
	CHECK_STR(disk_size_str(1023, buf, sizeof(buf)), "1023 bytes");
	CHECK_STR(disk_size_str(1024, buf, sizeof(buf)), "1.0 KiB");
	CHECK_STR(disk_size_str(8ull << 20, buf, sizeof(buf)), "8.0 MiB");
	CHECK_STR(disk_size_str(3ull << 29, buf, sizeof(buf)), "1.5 GiB");
	CHECK_STR(disk_size_str(16ull << 30, buf, sizeof(buf)), "16.0 GiB");
	CHECK_STR(disk_size_str(UINT64_MAX, buf, sizeof(buf)), "16777216.0 TiB");
}

TEST(file_bytes_leave_holes_out)
{
	struct stat st = { .st_size = 10000, .st_blocks = 24 }; /* 12 KiB allocated */

	CHECK_INT(disk_file_bytes(&st), ==, 10000);
	st.st_size = 1 << 30, st.st_blocks = 8; /* sparse */
	CHECK_INT(disk_file_bytes(&st), ==, 4096);
}

static void write_n(const char *dir, const char *name, size_t n)
{
	char path[PATH_MAX], *buf = calloc(1, n + 1);
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd >= 0 && buf)
		util_write_full(fd, buf, n);
	if (fd >= 0)
		close(fd);
	free(buf);
}

TEST(usage_walks_the_session_dir)
{
	char tmpl[] = "/tmp/vt-test-disk.XXXXXX", path[PATH_MAX], cmd[128];
	struct disk_usage u;

	CHECK(mkdtemp(tmpl));
	write_n(tmpl, "cpu0.spool", 8192);
	write_n(tmpl, "perf-cpu1.spool", 4096);
	write_n(tmpl, "host.data", 20000);
	write_n(tmpl, "live.data", 30000);
	write_n(tmpl, ".reserve", 262144); /* given back at finalize: not counted */
	snprintf(path, sizeof(path), "%s/guest", tmpl);
	CHECK_INT(mkdir(path, 0700), ==, 0);
	write_n(path, "kallsyms", 5000);
	write_n(path, "x.spool", 100); /* only the top level's spools are the daemon's */
	snprintf(path, sizeof(path), "%s/guest/link", tmpl);
	CHECK_INT(symlink("/etc/passwd", path), ==, 0); /* not followed */
	snprintf(path, sizeof(path), "%s/fifo", tmpl);
	CHECK_INT(mkfifo(path, 0600), ==, 0);
	CHECK_INT(disk_usage(tmpl, &u), ==, 0);
	CHECK_INT(u.spools, ==, 12288);
	CHECK_INT(u.ftrace, ==, 8192);
	CHECK_INT(u.live, ==, 30000);
	CHECK_INT(u.host, ==, 20000);
	CHECK_INT(u.other, ==, 5000 + 100);
	CHECK_INT(disk_total(&u), ==, 12288 + 20000 + 30000 + 5100);
	/* guest/ fixed: walked once, its total kept and counted unwalked after */
	uint64_t fixed = UINT64_MAX;

	CHECK_INT(disk_usage_fixed(tmpl, "guest", &fixed, &u), ==, 0);
	CHECK_INT(fixed, ==, 5100);
	CHECK_INT(u.other, ==, 5100);
	snprintf(path, sizeof(path), "%s/guest", tmpl);
	write_n(path, "later", 700);
	write_n(tmpl, "clock.samples", 300); /* the rest is walked each time */
	CHECK_INT(disk_usage_fixed(tmpl, "guest", &fixed, &u), ==, 0);
	CHECK_INT(u.other, ==, 5100 + 300);
	CHECK_INT(u.spools, ==, 12288);
	CHECK_INT(disk_usage(tmpl, &u), ==, 0);
	CHECK_INT(u.other, ==, 5100 + 700 + 300);
	snprintf(path, sizeof(path), "%s/nothere", tmpl);
	CHECK_INT(disk_usage(path, &u), ==, -ENOENT);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpl);
	CHECK_INT(system(cmd), ==, 0);
}

TEST(fs_reads_a_file_system)
{
	uint64_t size = 0, avail = 0;

	CHECK_INT(disk_fs("/tmp", &size, &avail), ==, 0);
	CHECK(size > 0 && avail <= size);
	CHECK_INT(disk_fs_of_file("/tmp/no-such-file.data", &size, NULL), ==, 0);
	CHECK_INT(disk_fs_of_file("/no-such-dir/out.data", &size, NULL), ==, -ENOENT);
}
