/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "collector.h"

/* disk.c: the session's disk budget (start --max-size, --min-free; stop's output). */
#define DISK_MAX_DIVISOR 4              /* default --max-size: a quarter of the file system, */
#define DISK_MAX_CAP (16ull << 30)      /* at most 16 GiB */
#define DISK_FLOOR_DIVISOR 20           /* default --min-free: 5 % of the file system, */
#define DISK_FLOOR_CAP (1ull << 30)     /* at most 1 GiB */
struct stat;
struct disk_usage {
	uint64_t spools; /* top-level *.spool */
	uint64_t ftrace; /* of them, the guest's ftrace streams (cpuN.spool) */
	uint64_t host;   /* top-level host.data */
	uint64_t live;   /* top-level live.data (the live merge's output; a file or a directory) */
	uint64_t other;  /* everything else: guest/, binaries/, clock samples, logs, snapshots */
	/* The live merge's measured ratio (its live.progress): it had read merged_in bytes of ftrace
	 * pages when its output was merged_out bytes; pending: ftrace bytes spooled it has not read.
	 * merged_in under DISK_RATIO_MIN_IN: no ratio yet, the worst case is charged. */
	uint64_t merged_in, merged_out, pending;
};
/* Every byte of it. */
uint64_t disk_total(const struct disk_usage *u);
/* What it will hold once the output is written. With a measured ratio (the live merge): the
 * live merge's file as it is, the ftrace pages it has still to read at that ratio (and a quarter
 * over), the guest perf spools as they are. Without (an offline merge at stop, or the live
 * merge's first 16 MiB): the output taken as its inputs, host.data and guest perf records copied
 * as they are and the guest's ftrace pages DISK_FTRACE_FACTOR times over, or as the live merge's
 * file when that is larger already. */
#define DISK_FTRACE_FACTOR 4 /* a 20-byte event in a ring page is an 80-byte perf sample */
#define DISK_RATIO_MIN_IN (16ull << 20)
uint64_t disk_projected(const struct disk_usage *u);
uint64_t disk_default_max(uint64_t fs_bytes);
uint64_t disk_default_floor(uint64_t fs_bytes);
/* A size as util_parse_size, or "none" (0: no limit). */
int disk_parse_size(const char *s, uint64_t *ret);
/* statvfs: the file system's size and the bytes free to unprivileged users (either may be NULL). */
int disk_fs(const char *path, uint64_t *ret_size, uint64_t *ret_free);
/* The same for the file system that holds (or will hold) the file path. */
int disk_fs_of_file(const char *path, uint64_t *ret_size, uint64_t *ret_free);
/* A file's bytes on disk: its size, less its holes. */
uint64_t disk_file_bytes(const struct stat *st);
/* Every regular file under dir (symlinks not followed). */
int disk_usage(const char *dir, struct disk_usage *ret);
/* The same, with dir's subdirectory named fixed (one that no longer changes) walked once: while
 * *fixed_bytes is UINT64_MAX; its total is kept there and counted in later walks unwalked. */
int disk_usage_fixed(const char *dir, const char *fixed, uint64_t *fixed_bytes, struct disk_usage *ret);
/* daemon-disk.c: what the live merge said of its progress (SESSION/live.progress, written by
 * merge/follow.c) and what the daemon freed from the spools behind it. */
struct disk_merged {
	bool known;                        /* live.progress read once */
	uint64_t in, out;                  /* ftrace bytes it read; its output's size then */
	uint64_t done[COLLECTOR_MAX_CPUS]; /* cpuN.spool: every page before it is in the output */
	unsigned releases;                 /* walks that freed spool pages behind it */
	bool release_failed;               /* a spool's hole could not be punched (said once) */
};
enum disk_bound { DISK_BOUND_NONE, DISK_BOUND_LIMIT, DISK_BOUND_FLOOR };
/* How many bytes an output may still take: max_size (0: none) less used, and free_bytes less
 * floor; *ret_bound says which of them is the smaller. */
uint64_t disk_output_budget(uint64_t max_size, uint64_t used, uint64_t free_bytes, uint64_t floor,
			    enum disk_bound *ret_bound);
/* "64.0 MiB" (binary units), "512 bytes". */
const char *disk_size_str(uint64_t bytes, char *buf, size_t size);
