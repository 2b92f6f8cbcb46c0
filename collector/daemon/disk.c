// SPDX-License-Identifier: GPL-2.0-only
/* The session's disk budget (start --max-size, --min-free): the defaults taken from the file
 * system, the bytes a session dir holds, and how much an output may still take. The daemon
 * (daemon-disk.c) checks them while tracing; stop checks them before it writes the output. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include "disk.h"
#include "util.h"

uint64_t disk_default_max(uint64_t fs_bytes)
{
	return MIN(fs_bytes / DISK_MAX_DIVISOR, DISK_MAX_CAP);
}

uint64_t disk_default_floor(uint64_t fs_bytes)
{
	return MIN(fs_bytes / DISK_FLOOR_DIVISOR, DISK_FLOOR_CAP);
}

int disk_parse_size(const char *s, uint64_t *ret)
{
	if (!strcmp(s, "none")) {
		*ret = 0;
		return 0;
	}
	return util_parse_size(s, ret);
}

int disk_fs(const char *path, uint64_t *ret_size, uint64_t *ret_free)
{
	struct statvfs v;

	if (statvfs(path, &v) < 0)
		return -errno;
	if (ret_size)
		*ret_size = (uint64_t)v.f_blocks * v.f_frsize;
	if (ret_free)
		*ret_free = (uint64_t)v.f_bavail * v.f_frsize;
	return 0;
}

int disk_fs_of_file(const char *path, uint64_t *ret_size, uint64_t *ret_free)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(path, '/');

	if (!slash)
		return disk_fs(".", ret_size, ret_free);
	snprintf(dir, sizeof(dir), "%.*s", slash == path ? 1 : (int)(slash - path), path);
	return disk_fs(dir, ret_size, ret_free);
}

uint64_t disk_file_bytes(const struct stat *st)
{
	/* holes (a flight recorder's punched spool) hold nothing; a file's last block is not
	 * counted whole, so that a limit means the bytes written */
	return MIN((uint64_t)st->st_size, (uint64_t)st->st_blocks * 512);
}

static bool disk_is_spool(const char *name)
{
	size_t l = strlen(name);

	return l > 6 && !strcmp(name + l - 6, ".spool");
}

/* Sums the regular files under dirfd (taken: closed here) into *into, or at the top level by
 * name (into NULL); depth-bounded, symlinks not followed. At the top level the directory named
 * fixed counts *fixed_bytes, walked only while that is UINT64_MAX (then set). */
static int disk_walk(int dirfd, unsigned depth, uint64_t *into, struct disk_usage *u, const char *fixed,
		     uint64_t *fixed_bytes)
{
	DIR *dir = fdopendir(dirfd);
	struct dirent *e;
	struct stat st;

	if (!dir) {
		close(dirfd);
		return -errno;
	}
	while ((e = readdir(dir))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue; /* gone meanwhile */
		if (S_ISDIR(st.st_mode) && !into && fixed && !strcmp(e->d_name, fixed)) {
			uint64_t b = *fixed_bytes;

			if (b == UINT64_MAX) { /* not walked yet */
				int fd = openat(dirfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

				b = 0;
				if (fd >= 0 && disk_walk(fd, depth + 1, &b, u, NULL, NULL) == 0)
					*fixed_bytes = b;
			}
			u->other += b;
			continue;
		}
		if (S_ISDIR(st.st_mode) && depth < 8) {
			int fd = openat(dirfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

			if (fd >= 0) /* live.data is a directory when it has the guest's kallsyms */
				disk_walk(fd, depth + 1, into ? into : !strcmp(e->d_name, "live.data") ? &u->live : &u->other,
					  u, NULL, NULL);
			continue;
		}
		if (!S_ISREG(st.st_mode) || (!into && !strcmp(e->d_name, ".reserve")))
			continue; /* .reserve: room to finalize on a full disk, given back then */
		if (into)
			*into += disk_file_bytes(&st);
		else if (disk_is_spool(e->d_name))
			u->spools += disk_file_bytes(&st), u->ftrace += strncmp(e->d_name, "perf-", 5) ? disk_file_bytes(&st) : 0;
		else if (!strcmp(e->d_name, "host.data"))
			u->host += disk_file_bytes(&st);
		else if (!strcmp(e->d_name, "live.data"))
			u->live += disk_file_bytes(&st);
		else
			u->other += disk_file_bytes(&st);
	}
	closedir(dir);
	return 0;
}

int disk_usage(const char *dir, struct disk_usage *ret)
{
	return disk_usage_fixed(dir, NULL, NULL, ret);
}

int disk_usage_fixed(const char *dir, const char *fixed, uint64_t *fixed_bytes, struct disk_usage *ret)
{
	struct disk_usage u = { 0 };
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int r;

	if (fd < 0)
		return -errno;
	r = disk_walk(fd, 0, NULL, &u, fixed, fixed_bytes);
	if (r == 0)
		*ret = u;
	return r;
}

uint64_t disk_total(const struct disk_usage *u)
{
	return u->spools + u->host + u->live + u->other;
}

uint64_t disk_projected(const struct disk_usage *u)
{
	uint64_t out = u->host + (u->spools - u->ftrace) + DISK_FTRACE_FACTOR * u->ftrace;

	if (u->merged_in >= DISK_RATIO_MIN_IN) {
		unsigned __int128 to_come = (unsigned __int128)u->pending * u->merged_out * 5 / 4 / u->merged_in;

		to_come = MIN(to_come, (unsigned __int128)DISK_FTRACE_FACTOR * u->pending);
		return u->spools + u->host + u->other + u->live + (uint64_t)to_come + (u->spools - u->ftrace);
	}
	return u->spools + u->host + u->other + MAX(u->live, out);
}

uint64_t disk_output_budget(uint64_t max_size, uint64_t used, uint64_t free_bytes, uint64_t floor,
			    enum disk_bound *ret_bound)
{
	uint64_t by_limit = !max_size ? UINT64_MAX : used >= max_size ? 0 : max_size - used;
	uint64_t by_floor = free_bytes > floor ? free_bytes - floor : 0;

	*ret_bound = by_limit <= by_floor ? (max_size ? DISK_BOUND_LIMIT : DISK_BOUND_NONE) : DISK_BOUND_FLOOR;
	return MIN(by_limit, by_floor);
}

const char *disk_size_str(uint64_t bytes, char *buf, size_t size)
{
	static const char *const units[] = { "bytes", "KiB", "MiB", "GiB", "TiB" };
	unsigned u = 0;
	double v = (double)bytes;

	while (v >= 1024 && u + 1 < ARRAY_SIZE(units))
		v /= 1024, u++;
	if (u == 0)
		snprintf(buf, size, "%llu bytes", (unsigned long long)bytes);
	else
		snprintf(buf, size, "%.1f %s", v, units[u]);
	return buf;
}
