// SPDX-License-Identifier: GPL-2.0-only
/* trace-collector snapshot: a perf.data of what the session holds now, tracing going on. The
 * daemon prepares SESSION/snapshot-N (daemon-snapshot.c); this process moves the host perf
 * dump in (--flight-recorder), merges the dir like stop does, and removes it. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "collector.h"
#include "log.h"
#include "merge.h"
#include "util.h"
#include "vmgroup.h"

static int snapshot_run(int argc, char **argv);
const struct cmd_entry cmd_snapshot = {
	.name = "snapshot", .summary = "write a perf.data of what a running session holds now",
	.usage = "[--name VM] [--run-dir R] [-o OUT] [-z | --no-compress]\n"
		 "Asks the agent to flush (what the guest traced until now reaches the host), then\n"
		 "writes OUT (default ./VM.snapshot-N.data) while tracing goes on. With the live merge\n"
		 "(the default) it is cut from the live output at the request: guest and host events,\n"
		 "compressed as the session's output (zstd unless start --no-compress). Otherwise the\n"
		 "spools are merged (with --flight-recorder: the newest window, and the host perf's ring;\n"
		 "zstd unless --no-compress or start's); without --flight-recorder the host recording\n"
		 "is then written at stop only, so such a snapshot holds the guest's events.\n",
	.run = snapshot_run,
};

/* src (a file, or a perf.data directory of files and one level of directories) to dst on
 * another file system: copied, then removed. */
static int copy_tree(const char *src, const char *dst)
{
	struct stat st;
	DIR *d;
	int r = 0;

	if (stat(src, &st) < 0)
		return -errno;
	if (!S_ISDIR(st.st_mode)) {
		_cleanup_close_ int in = open(src, O_RDONLY | O_CLOEXEC);
		_cleanup_close_ int out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);

		if (in < 0 || out < 0)
			return -errno;
		if ((r = util_copy_range(in, out, 0, (uint64_t)st.st_size)) < 0)
			return r;
		return unlink(src) < 0 ? -errno : 0;
	}
	if (mkdir(dst, 0700) < 0 || !(d = opendir(src)))
		return -errno;
	for (struct dirent *de; r == 0 && (de = readdir(d));) {
		char a[PATH_MAX + 256], b[PATH_MAX + 256];

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		snprintf(a, sizeof(a), "%s/%s", src, de->d_name);
		snprintf(b, sizeof(b), "%s/%s", dst, de->d_name);
		r = copy_tree(a, b);
	}
	closedir(d);
	return r == 0 && rmdir(src) < 0 ? -errno : r;
}

/* The live merge wrote the snapshot (host events included) into the session dir: moved to OUT. */
static int snapshot_live(const char *path, const char *name, const char *out, int compress)
{
	char dst[PATH_MAX + 64], sdir[PATH_MAX];
	int r = 0;

	snprintf(sdir, sizeof(sdir), "%.*s", (int)(strrchr(path, '/') - path), path);
	if (compress >= 0 && (merge_zstd_level(sdir, compress) > 0) != (merge_zstd_level(sdir, -1) > 0))
		log_warn("the snapshot is cut from the live merge, which writes %s (start's choice): %s does not apply",
			 merge_zstd_level(sdir, -1) ? "zstd" : "plain perf.data", compress ? "-z" : "--no-compress");

	if (out)
		snprintf(dst, sizeof(dst), "%s", out);
	else
		snprintf(dst, sizeof(dst), "%s.%s", name ? name : "vm", strrchr(path, '/') + 1);
	if (access(dst, F_OK) == 0) {
		log_error("%s exists: the snapshot stays at %s (move it yourself, or name another -o)", dst, path);
		return 1;
	}
	if (rename(path, dst) < 0)
		r = errno == EXDEV ? copy_tree(path, dst) : -errno;
	if (r < 0) {
		log_error("cannot move the snapshot %s to %s: %s; it stays at %s", path, dst, strerror(-r), path);
		return 1;
	}
	printf("host: live (the host's events until the request)\n");
	printf("snapshot: %s (tracing goes on; cut from the live merge: everything traced before the request)\n", dst);
	return 0;
}

static int snapshot_run(int argc, char **argv)
{
	const char *name = NULL, *run_dir = COLLECTOR_RUN_DIR, *out = NULL;
	_cleanup_free_ char *reply = NULL;
	char sock[PATH_MAX], dir[PATH_MAX], host[PATH_MAX + 16], hostwhy[256], path[PATH_MAX + 64];
	struct merge_options mo = { 0 };
	int compress = -1;
	int r = status_parse(argc, argv, &cmd_snapshot, &name, &run_dir, &out, &compress);

	if (r)
		return r > 0 ? 0 : 2;
	if (vmgroup_find(run_dir, name, dir, sizeof(dir)) == 1)
		return vmgroup_snapshot(dir, out, compress);
	if (status_socket(run_dir, name, sock, sizeof(sock)) < 0)
		return 1;
	r = status_request(sock, "snapshot", &reply);
	if (r == -ENOENT || r == -ECONNREFUSED) {
		log_error("no session of %s is running (nothing answers at %s): a snapshot is taken of a "
			  "running session; start one with 'trace-collector start'", name ? name : "this VM", sock);
		return 1;
	}
	if (r < 0) {
		log_error("the daemon at %s did not answer the snapshot request: %s", sock, strerror(-r));
		return 1;
	}
	snapshot_dir_reply(reply, "snapshot-file: ", dir, sizeof(dir));
	if (dir[0])
		return snapshot_live(dir, name, out, compress);
	snapshot_dir_reply(reply, "snapshot: ", dir, sizeof(dir));
	snapshot_dir_reply(reply, "host: ", hostwhy, sizeof(hostwhy));
	if (!dir[0]) {
		log_error("%s", reply && !strncmp(reply, "error: ", 7) ? reply + 7 : "the daemon's reply names no snapshot dir");
		return 1;
	}
	mo = (struct merge_options){ .session_dir = dir, .zstd_level = merge_zstd_level(dir, compress), .snapshot = true };
	if (!strcmp(hostwhy, "dump")) {
		r = snapshot_dir_host_dump(dir, host, sizeof(host));
		if (r < 0)
			log_warn("host perf wrote no dump within %d s (%s): the snapshot holds the guest only",
				 SNAPSHOT_DUMP_WAIT_MS / 1000, strerror(-r));
		else
			mo.host_data = host;
	} else {
		printf("host: %s\n", hostwhy);
	}
	if (out)
		snprintf(path, sizeof(path), "%s", out);
	else
		snprintf(path, sizeof(path), "%s.%s.data", name ? name : "vm", strrchr(dir, '/') + 1);
	mo.output = path;
	fflush(stdout);
	r = merge_run(&mo);
	if (r < 0) {
		log_error("snapshot merge failed: %s; the snapshot's files stay in %s (merge them with "
			  "'trace-collector merge %s -o FILE')", strerror(-r), dir, dir);
		return 1;
	}
	printf("snapshot: %s (tracing goes on)\n", path);
	if (snapshot_dir_remove(dir) < 0)
		log_warn("cannot remove %s: %m", dir);
	return r > 0 ? 3 : 0;
}
