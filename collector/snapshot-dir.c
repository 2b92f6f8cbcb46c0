// SPDX-License-Identifier: GPL-2.0-only
/* A snapshot dir as the client sees it (one VM's snapshot, cmd-snapshot.c, and each VM's of a
 * set, vmgroup-snapshot.c): the daemon's reply naming it, host perf's ring dump moved in (or,
 * a set's, how far host.data is complete), its removal after the merge. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "collector.h"
#include "merge.h"
#include "util.h"

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

/* One ping on host perf's control fifo and its ack (within SNAPSHOT_DUMP_WAIT_MS). */
static int snapshot_dir_ping(int ctl, int ack)
{
	char c;

	if (write(ctl, "ping\n", 5) != 5)
		return -errno;
	for (int ms = 0; ms < SNAPSHOT_DUMP_WAIT_MS; ms += 50) {
		ssize_t n;

		while ((n = read(ack, &c, 1)) == 1)
			if (c == '\n')
				return 0;
		if (n < 0 && errno != EAGAIN)
			return -errno;
		poll(NULL, 0, 50);
	}
	return -ETIMEDOUT;
}

/* A set's leader records host.data whole until stop (perf --control fifos in its session dir):
 * perf acks a ping before it writes what its rings hold, so once the second ping is acked
 * everything recorded before the first is in host.data. Its size then: *prefix bytes the merge
 * reads (a partial record after them is left out). */
int snapshot_dir_host_prefix(const char *dir, char *host, size_t size, uint64_t *prefix)
{
	char session[PATH_MAX], ctl[PATH_MAX + 32], ack[PATH_MAX + 32], junk[256];
	_cleanup_close_ int cfd = -1, afd = -1;
	struct stat st;
	int r;

	snprintf(session, sizeof(session), "%.*s", (int)(strrchr(dir, '/') ? strrchr(dir, '/') - dir : 0), dir);
	snprintf(host, size, "%s/host.data", session);
	snprintf(ctl, sizeof(ctl), "%s/host-perf.ctl", session);
	snprintf(ack, sizeof(ack), "%s/host-perf.ack", session);
	/* perf holds both open: neither open waits for the other end */
	if ((cfd = open(ctl, O_WRONLY | O_NONBLOCK | O_CLOEXEC)) < 0 || (afd = open(ack, O_RDONLY | O_NONBLOCK | O_CLOEXEC)) < 0)
		return -errno;
	while (read(afd, junk, sizeof(junk)) > 0) /* acks of an earlier client's pings */
		;
	if ((r = snapshot_dir_ping(cfd, afd)) < 0 || (r = snapshot_dir_ping(cfd, afd)) < 0)
		return r;
	if (stat(host, &st) < 0)
		return -errno;
	*prefix = (uint64_t)st.st_size;
	return 0;
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
