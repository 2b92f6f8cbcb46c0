// SPDX-License-Identifier: GPL-2.0-only
/* A snapshot dir as the client sees it (one VM's snapshot, cmd-snapshot.c, and each VM's of a
 * set, vmgroup-snapshot.c): the daemon's reply naming it, host perf's ring dump moved in, its
 * removal after the merge. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "collector.h"
#include "merge.h"

void snapshot_dir_reply(const char *reply, const char *key, char *buf, size_t size)
{
	const char *p = reply ? strstr(reply, key) : NULL;

	buf[0] = '\0';
	if (p && (p == reply || p[-1] == '\n'))
		snprintf(buf, size, "%.*s", (int)strcspn(p + strlen(key), "\n"), p + strlen(key));
}

/* perf renames each dump into place once it is whole: wait for it, then move it into dir. */
int snapshot_dir_host_dump(const char *dir, char *host, size_t size)
{
	char session[PATH_MAX], dump[PATH_MAX + 300];
	int r = -ENOENT;

	snprintf(session, sizeof(session), "%.*s", (int)(strrchr(dir, '/') ? strrchr(dir, '/') - dir : 0), dir);
	snprintf(host, size, "%s/host.data", dir);
	for (int ms = 0; ms < SNAPSHOT_DUMP_WAIT_MS && (r = merge_newest_host_dump(session, dump, sizeof(dump))) == -ENOENT; ms += 50)
		nanosleep(&(struct timespec){ .tv_nsec = 50000000 }, NULL);
	if (r == 0 && rename(dump, host) < 0)
		r = -errno;
	return r;
}

/* The snapshot dir holds links and small files only, no subdirectories. */
int snapshot_dir_remove(const char *dir)
{
	DIR *d = opendir(dir);
	int r = 0;

	if (!d)
		return -errno;
	for (struct dirent *de; (de = readdir(d));)
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..") && unlinkat(dirfd(d), de->d_name, 0) < 0)
			r = -errno;
	closedir(d);
	return r == 0 && rmdir(dir) < 0 ? -errno : r;
}
