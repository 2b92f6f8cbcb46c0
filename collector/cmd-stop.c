// SPDX-License-Identifier: GPL-2.0-only
/* trace-collector stop: the daemon stops the agent and host perf and finalizes the
 * session; this process then runs the merge (the same code as 'merge', the recovery path). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "collector.h"
#include "gbin.h"
#include "log.h"
#include "util.h"


/* A guest clock that cannot be aligned is said on the summary's first line (the file is still
 * written; stop then exits 3). */
static void stop_clock_first(const char *reply)
{
	const char *p = reply ? strstr(reply, "session: ") : NULL;
	char dir[PATH_MAX], why[256];

	if (!p)
		return;
	snprintf(dir, sizeof(dir), "%.*s", (int)strcspn(p + 9, "\n"), p + 9);
	if (merge_clock_state(dir, why, sizeof(why)) == 0)
		printf("CLOCK UNALIGNED: the guest's clock cannot be lined up with the host's (%s): the merged file "
		       "will have the guest's events at guest times; stop exits 3\n", why);
}

static int stop_run(int argc, char **argv);
const struct cmd_entry cmd_stop = {
	.name = "stop", .summary = "stop the session and write the merged perf.data",
	.usage = "[--name VM] [--run-dir R] [-o OUT] [-z]\n"
		 "Stops the guest agent (waiting up to 10 s for every CPU's end marker) and host perf\n"
		 "record, finalizes the session dir, merges it into OUT (default: start's -o, else\n"
		 "./VM.data; -z compresses with zstd) and prints a summary of what was lost and why.\n",
	.run = stop_run,
};

/* Output path: -o, else start's -o (session.ini 'output'), else ./VM.data. */
static void stop_output(const char *dir, const char *opt, char *buf, size_t size)
{
	char vm[64] = "vm";

	if (opt) {
		snprintf(buf, size, "%s", opt);
		return;
	}
	if (session_ini_get(dir, "output", buf, size) == 0 && buf[0])
		return;
	session_ini_get(dir, "vm", vm, sizeof(vm));
	snprintf(buf, size, "%s.data", vm);
}

/* No daemon to ask (never started, or killed): point at the last session, still mergeable. */
static void stop_last_session(const char *run_dir, const char *name)
{
	char path[PATH_MAX + 16], text[PATH_MAX + 32] = "", *dir, state[16], why[1024];
	_cleanup_close_ int fd = -1;
	ssize_t n;

	if (!name)
		return;
	snprintf(path, sizeof(path), "%s/%s.pid", run_dir, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || (n = read(fd, text, sizeof(text) - 1)) <= 0)
		return;
	text[n] = '\0';
	dir = strchr(text, '\n');
	if (!dir || !dir[1])
		return;
	dir[1 + strcspn(dir + 1, "\n")] = '\0';
	if (session_ini_get(dir + 1, "state", state, sizeof(state)) == 0 && !strcmp(state, "failed")) {
		if (session_ini_get(dir + 1, "start_error", why, sizeof(why)) < 0 || !why[0])
			snprintf(why, sizeof(why), "see %s/collector.log", dir + 1);
		log_error("no session of %s is running: its last start failed: %s (session %s; nothing was traced, "
			  "so there is nothing to stop or merge: fix that, then run 'trace-collector start' again)",
			  name, why, dir + 1);
		return;
	}
	log_error("the last session of %s is %s; merge it with 'trace-collector merge %s -o %s.data'",
		  name, dir + 1, dir + 1, name);
}

/* --live-merge: the follower's file, merged while tracing (daemon-live.c), becomes OUT (an
 * existing OUT is kept as OUT.old, as the merge does); 0 or 3 (clock unaligned, said) when it
 * did, -1 when stop has to merge. */
static int stop_take_live(const char *dir, const char *out, bool compress)
{
	char state[32] = "", live[PATH_MAX + 16], log[PATH_MAX + 32], old[PATH_MAX + 8];
	_cleanup_free_ char *text = NULL;
	struct stat st;

	if (session_ini_get(dir, "live_merge", state, sizeof(state)) < 0 || strncmp(state, "done", 4))
		return -1;
	if (compress) {
		log_info("the live merge wrote no zstd: merging %s again with -z", dir);
		return -1;
	}
	snprintf(live, sizeof(live), "%s/live.data", dir);
	snprintf(log, sizeof(log), "%s/live-merge.log", dir);
	snprintf(old, sizeof(old), "%s.old", out);
	if (lstat(out, &st) == 0 && rename(out, old) < 0) {
		log_warn("cannot keep the existing %s as %s: %m; merging again", out, old);
		return -1;
	}
	if (rename(live, out) < 0) {
		log_warn("cannot move the live merge's %s to %s: %m; merging again", live, out);
		return -1;
	}
	if (util_read_file(log, 1 << 20, &text, NULL) == 0)
		fputs(text, stdout);
	snprintf(live, sizeof(live), "%s/" GBIN_OUT_DIR, out);
	if (stat(live, &st) == 0 && S_ISDIR(st.st_mode))
		printf("  guest user functions: perf --buildid-dir %s report -i %s\n", live, out);
	return strcmp(state, "done") ? 3 : 0;
}

/* The bytes the output may take (0: no bound): start's --max-size less what the session holds,
 * and the free space of OUT's file system less its --min-free (session.ini opt_*); why says
 * which bound it is. A session from before the disk budget has none. */
static uint64_t stop_budget(const char *dir, const char *out, char *why, size_t len)
{
	char v[160], a[32], b[32], c[32];
	uint64_t max = 0, floor = 0, size, avail, used;
	struct disk_usage u;
	enum disk_bound bound;
	uint64_t budget;

	if (session_ini_get(dir, "opt_min_free_from", v, sizeof(v)) < 0 || disk_fs_of_file(out, &size, &avail) < 0 ||
	    disk_usage(dir, &u) < 0)
		return 0;
	if (!strcmp(v, "option") && session_ini_get(dir, "opt_min_free", v, sizeof(v)) == 0)
		util_parse_u64(v, UINT64_MAX, &floor);
	else if (strcmp(v, "option"))
		floor = disk_default_floor(size);
	if (session_ini_get(dir, "opt_max_size", v, sizeof(v)) == 0)
		util_parse_u64(v, UINT64_MAX, &max);
	used = disk_total(&u);
	budget = disk_output_budget(max, used, avail, floor, &bound);
	if (bound == DISK_BOUND_LIMIT)
		snprintf(why, len, "the session holds %s of its --max-size %s: %s left for the output",
			 disk_size_str(used, a, sizeof(a)), disk_size_str(max, b, sizeof(b)), disk_size_str(budget, c, sizeof(c)));
	else
		snprintf(why, len, "%s free on the file system of %s, whose --min-free is %s: %s left for the output",
			 disk_size_str(avail, a, sizeof(a)), out, disk_size_str(floor, b, sizeof(b)),
			 disk_size_str(budget, c, sizeof(c)));
	if (bound == DISK_BOUND_NONE || !budget)
		return bound == DISK_BOUND_NONE ? 0 : 1; /* 1 byte: nothing fits */
	return budget;
}

/* The stalls line (trace-collector report): one pass over OUT, skipped when it holds no host
 * recording (nothing to follow) or is over 2 GB (the pass would take a while: run report). */
static void stop_stalls(const char *dir, const char *out)
{
	char data[PATH_MAX + 8], host[16] = "";
	struct stat st;

	snprintf(data, sizeof(data), "%s/data", out);
	if (stat(data, &st) < 0 && stat(out, &st) < 0)
		return;
	if (session_ini_get(dir, "opt_host", host, sizeof(host)) == 0 && !strcmp(host, "none")) {
		printf("stalls:  not known (no host recording: --no-host)\n");
	} else if (st.st_size > (2ll << 30)) {
		printf("stalls:  not counted here (%.1f GB: run 'trace-collector report %s')\n", (double)st.st_size / 1e9, out);
	} else {
		report_stop_summary(out, stdout);
	}
	fflush(stdout);
}

static int stop_merge(const char *dir, const char *out, bool compress)
{
	char why[PATH_MAX + 256] = "";
	struct stat st;
	int r = stop_take_live(dir, out, compress);
	uint64_t budget = 0;

	if (r < 0) {
		budget = stop_budget(dir, out, why, sizeof(why));
		r = budget == 1 ? -EFBIG : merge_session(dir, out, compress, budget, stdout);
	}
	if (r == -EFBIG) {
		log_error("output not written: it does not fit (%s). Nothing collected is lost: the session is kept at "
			  "%s; merge it where there is room with 'trace-collector merge %s -o OUT' (merge applies no "
			  "limit)", why, dir, dir);
		return 1;
	}
	if (r < 0) {
		log_error("merge failed: %s; session kept at %s; retry with 'trace-collector merge %s -o %s'",
			  strerror(-r), dir, dir, out);
		return 1;
	}
	session_ini_set(dir, "state", "merged");
	stop_stalls(dir, out);
	if (stat(out, &st) == 0 && S_ISDIR(st.st_mode)) {
		char data[PATH_MAX + 8];

		snprintf(data, sizeof(data), "%s/data", out);
		printf("output: %s (perf.data directory, data %.1f MB)\n", out,
		       stat(data, &st) == 0 ? (double)st.st_size / 1e6 : 0.0);
	} else {
		printf("output: %s (%.1f MB)\n", out, stat(out, &st) == 0 ? (double)st.st_size / 1e6 : 0.0);
	}
	return r > 0 ? 3 : 0; /* 3: written, but the guest clock is unaligned (said above) */
}

static int stop_run(int argc, char **argv)
{
	const char *name = NULL, *run_dir = COLLECTOR_RUN_DIR, *out = NULL;
	_cleanup_free_ char *reply = NULL;
	char sock[PATH_MAX], dir[PATH_MAX] = "", path[PATH_MAX], *p;
	bool compress = false;
	int r = status_parse(argc, argv, &cmd_stop, &name, &run_dir, &out, &compress);

	if (r)
		return r > 0 ? 0 : 2;
	if (status_socket(run_dir, name, sock, sizeof(sock)) < 0) {
		stop_last_session(run_dir, name);
		return 1;
	}
	r = status_request(sock, "stop", &reply);
	if (r >= 0)
		stop_clock_first(reply);
	fputs(reply ? reply : "", stdout);
	fflush(stdout);
	if (r < 0) {
		log_error("the daemon at %s did not answer the stop: %s", sock, strerror(-r));
		stop_last_session(run_dir, name);
		return 1;
	}
	if (reply && !strncmp(reply, "stop: " DAEMON_STOP_TAKEN_OVER, 6 + strlen(DAEMON_STOP_TAKEN_OVER)))
		return 0; /* said; the later stop merges */
	p = reply ? strstr(reply, "session: ") : NULL;
	if (p)
		snprintf(dir, sizeof(dir), "%.*s", (int)strcspn(p + 9, "\n"), p + 9);
	if (!dir[0]) {
		log_error("the daemon's stop reply names no session dir");
		return 1;
	}
	stop_output(dir, out, path, sizeof(path));
	return stop_merge(dir, path, compress);
}
