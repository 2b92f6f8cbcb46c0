// SPDX-License-Identifier: GPL-2.0-only
/* trace-collector stop: the daemon stops the agent and host perf and finalizes the
 * session; this process then runs the merge (the same code as 'merge', the recovery path). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "collector.h"
#include "disk.h"
#include "gbin.h"
#include "log.h"
#include "perf_reader.h"
#include "session.h"
#include "util.h"
#include "vmgroup.h"


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
	.usage = "[--name VM] [--run-dir R] [-o OUT] [-z | --no-compress] [-v]\n"
		 "Stops the guest agent (waiting up to 10 s for every CPU's end marker) and host perf\n"
		 "record, finalizes the session dir, merges it into OUT (default: start's -o, else\n"
		 "./VM.data; zstd-compressed as perf record -z writes it, unless start's --no-compress;\n"
		 "-z or --no-compress here override, merging again when the live merge wrote the other\n"
		 "kind) and prints a short summary: what was lost, cut or missing and why, each kind on\n"
		 "one line. The full one (per CPU, per event type) goes to SESSION/stop-summary.txt; -v\n"
		 "(--verbose) prints it instead.\n"
		 "A VM started with others (start --name A --name B ...): the whole set stops, the VM\n"
		 "recording the host last, into one OUT (default: start's -o, else ./A-group.data).\n",
	.run = stop_run,
};

/* Where stop's summary goes: the short one to stdout, the full one to SESSION/stop-summary.txt
 * (and with -v to stdout instead of the short one). */
struct stop_out {
	FILE *file; /* NULL when it cannot be written (said; stdout then gets the full text) */
	char path[PATH_MAX + 32];
	bool verbose;
	char hint[2 * PATH_MAX + 64]; /* the merge's "guest user functions: perf ..." */
};

static void stop_out_open(struct stop_out *so, const char *dir)
{
	snprintf(so->path, sizeof(so->path), "%s/stop-summary.txt", dir);
	if (!(so->file = stop_summary_open(dir, true)))
		so->verbose = true; /* printed here instead */
}

/* The daemon's reply: its short summary printed (-v: its full one), the full one kept. */
static void stop_out_daemon(struct stop_out *so, const char *reply)
{
	stop_summary_reply(reply, so->verbose, stdout, so->file);
	fflush(stdout);
}

static void stop_out_line(struct stop_out *so, const char *text)
{
	fputs(text, stdout);
	if (so->file)
		fputs(text, so->file);
	fflush(stdout);
}

/* The merge prints its summary on stdout: while it runs, stdout is the file. Returns the
 * saved stdout (-1: not captured) and where the merge's text starts. */
static int stop_out_capture(struct stop_out *so, off_t *ret_start)
{
	int saved;

	fflush(stdout);
	if (!so->file || fflush(so->file) != 0 || (saved = dup(STDOUT_FILENO)) < 0)
		return -1;
	*ret_start = lseek(fileno(so->file), 0, SEEK_END);
	if (*ret_start < 0 || dup2(fileno(so->file), STDOUT_FILENO) < 0) {
		close(saved);
		return -1;
	}
	return saved;
}

/* stdout back; the merge's summary printed whole (-v) or in two lines. */
static void stop_out_release(struct stop_out *so, int saved, off_t start)
{
	_cleanup_free_ char *text = NULL;
	off_t end;

	if (saved < 0)
		return;
	fflush(stdout);
	end = lseek(STDOUT_FILENO, 0, SEEK_END);
	dup2(saved, STDOUT_FILENO);
	close(saved);
	if (end <= start || !(text = calloc(1, (size_t)(end - start) + 1)) ||
	    pread(fileno(so->file), text, (size_t)(end - start), start) != end - start)
		return;
	if (so->verbose)
		fputs(text, stdout);
	else
		summary_merge_brief(text, stdout, so->hint, sizeof(so->hint));
	fflush(stdout);
}

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

/* Whether the follower's file lacks a live migration the session followed (merge.ini's
 * migrations_written under session.ini's migrations: a follower from before they were written,
 * or one that could not place them): then stop merges again, and says so. */
static bool stop_live_missed_migration(const char *dir)
{
	_cleanup_free_ char *text = NULL;
	_cleanup_close_ int dfd = -1;
	char v[32], why[200];
	uint64_t n = 0, written = 0;
	const char *w;

	if (session_ini_get(dir, "migrations", v, sizeof(v)) < 0 || util_parse_u64(v, UINT32_MAX, &n) < 0 || !n)
		return false;
	/* a regular file in the session dir, not reached through a link (util_read_input_at walks
	 * beneath dfd with O_NOFOLLOW): nothing planted there holds or steers stop */
	if ((dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0 &&
	    util_read_input_at(dfd, "merge.ini", 1 << 16, &text, NULL, why, sizeof(why)) == 0 &&
	    (w = strstr(text, "\nmigrations_written=")))
		written = strtoull(w + 20, NULL, 10);
	if (written >= n)
		return false;
	log_info("the live merge wrote %llu of the session's %llu live migrations: merging %s again",
		 (unsigned long long)written, (unsigned long long)n, dir);
	return true;
}

/* --live-merge: the follower's file, merged while tracing (daemon-live.c), becomes OUT (an
 * existing OUT is kept as OUT.old, as the merge does); 0 or 3 (clock unaligned, said) when it
 * did, -1 when stop has to merge. */
static int stop_take_live(const char *dir, const char *out, int compress)
{
	char state[32] = "", live[PATH_MAX + 16], log[PATH_MAX + 32], why[PATH_MAX + 256];
	_cleanup_free_ char *text = NULL;
	struct stat st;

	if (session_ini_get(dir, "live_merge", state, sizeof(state)) < 0 || strncmp(state, "done", 4))
		return -1;
	if (stop_live_missed_migration(dir))
		return -1;
	if ((merge_zstd_level(dir, compress) > 0) != (merge_zstd_level(dir, -1) > 0)) {
		log_info("the live merge wrote %s: merging %s again %s", merge_zstd_level(dir, -1) ? "zstd" : "no zstd",
			 dir, compress ? "with -z" : "uncompressed");
		return -1;
	}
	snprintf(live, sizeof(live), "%s/live.data", dir);
	snprintf(log, sizeof(log), "%s/live-merge.log", dir);
	if (merge_dir_keep_old(out, why, sizeof(why)) < 0)
		return -1; /* the merge meets it again and says why */
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

/* The bytes of records in the perf.data at path of size bytes: times HEADER_COMPRESSED's
 * ratio when it is compressed (the report pass reads them all). */
static uint64_t stop_records_size(const char *path, uint64_t size)
{
	struct perf_reader *r;
	uint8_t *c = NULL;
	uint32_t comp[5];
	size_t len = 0;
	char err[256];

	if (perf_reader_open(path, &r, err, sizeof(err)) < 0)
		return size;
	if (perf_reader_feature(r, PERF_FEAT_COMPRESSED, &c, &len) == 0 && len >= sizeof(comp)) {
		memcpy(comp, c, sizeof(comp));
		size *= comp[3] ? comp[3] : 1;
	}
	free(c);
	perf_reader_free(r);
	return size;
}

/* The stalls line (trace-collector report): the live merge's (live: OUT is its file), else one
 * pass over OUT, skipped when it holds no host recording (nothing to follow) or over 2 GB of
 * records (the pass would take a while: run report). */
static void stop_stalls(struct stop_out *so, const char *dir, const char *out, bool live)
{
	char data[PATH_MAX + 8], host[16] = "";
	_cleanup_free_ char *text = NULL;
	uint64_t records;
	size_t len = 0;
	struct stat st;
	FILE *f;

	/* the live merge made the line as it wrote OUT (merge/merge.c merge_stalls_line) */
	snprintf(data, sizeof(data), "%s/live-stalls.txt", dir);
	if (live && util_read_file(data, 4096, &text, &len) == 0 && len > 8 && !strncmp(text, "stalls:", 7) &&
	    text[len - 1] == '\n' && !memchr(text, '\n', len - 1)) {
		stop_out_line(so, text);
		return;
	}
	free(text);
	text = NULL;
	len = 0;
	snprintf(data, sizeof(data), "%s/data", out);
	if (stat(data, &st) == 0)
		records = stop_records_size(data, (uint64_t)st.st_size);
	else if (stat(out, &st) == 0)
		records = stop_records_size(out, (uint64_t)st.st_size);
	else
		return;
	if (!(f = open_memstream(&text, &len)))
		return;
	if (session_ini_get(dir, "opt_host", host, sizeof(host)) == 0 && !strcmp(host, "none"))
		fprintf(f, "stalls:  not known (no host recording: --no-host)\n");
	else if (records > (2ull << 30))
		fprintf(f, "stalls:  not counted here (%.1f GB of records: run 'trace-collector report %s')\n",
			(double)records / 1e9, out);
	else
		report_stop_summary(out, f);
	if (fclose(f) == 0 && text)
		stop_out_line(so, text);
}

/* Whether the spools still hold the whole session: nothing freed behind the live merge
 * (session.ini spools_released, daemon-disk.c). */
static bool stop_spools_whole(const char *dir)
{
	char n[32] = "";

	return session_ini_get(dir, "spools_released", n, sizeof(n)) < 0 || !n[0] || !strcmp(n, "0");
}

/* The output line, and where the rest is (the guest functions' perf command too when the
 * merge said one); how to get a plain file when it is zstd. */
static void stop_output_line(struct stop_out *so, const char *dir, const char *out, bool zstd)
{
	char line[2 * PATH_MAX + 128], data[PATH_MAX + 8];
	struct stat st;

	if (stat(out, &st) == 0 && S_ISDIR(st.st_mode)) {
		snprintf(data, sizeof(data), "%s/data", out);
		snprintf(line, sizeof(line), "output: %s (perf.data directory, data %.1f MB)\n", out,
			 stat(data, &st) == 0 ? (double)st.st_size / 1e6 : 0.0);
	} else {
		snprintf(line, sizeof(line), "output: %s (%.1f MB)\n", out, stat(out, &st) == 0 ? (double)st.st_size / 1e6 : 0.0);
	}
	stop_out_line(so, line);
	if (zstd) {
		_cleanup_free_ char *text = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&text, &len);

		if (f) {
			stop_zstd_hint(dir, out, stop_spools_whole(dir), f);
			if (fclose(f) == 0 && text)
				stop_out_line(so, text);
		}
	}
	if (so->hint[0] && !so->verbose)
		printf("%s\n", so->hint);
	if (so->file && !so->verbose)
		printf("details: %s (per CPU and per event type; 'trace-collector stop -v' prints them)\n", so->path);
}

static int stop_merge(struct stop_out *so, const char *dir, const char *out, int compress)
{
	char why[PATH_MAX + 256] = "";
	off_t start = 0;
	int saved = stop_out_capture(so, &start);
	int r = stop_take_live(dir, out, compress);
	bool live = r >= 0;
	uint64_t budget = 0;

	if (r < 0) {
		budget = stop_budget(dir, out, why, sizeof(why));
		r = budget == 1 ? -EFBIG : merge_session(dir, out, compress, budget, stdout);
	}
	stop_out_release(so, saved, start);
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
	stop_stalls(so, dir, out, live);
	stop_output_line(so, dir, out, merge_zstd_level(dir, compress) > 0);
	return r > 0 ? 3 : 0; /* 3: written, but the guest clock is unaligned (said above) */
}

/* -v, --verbose: stop's own option, taken out before the status client's parser sees the rest. */
static int stop_take_verbose(int argc, char **argv, bool *verbose)
{
	int n = 1;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-v") || !strcmp(argv[i], "--verbose"))
			*verbose = true;
		else
			argv[n++] = argv[i];
	}
	argv[n] = NULL;
	return n;
}

static int stop_run(int argc, char **argv)
{
	const char *name = NULL, *run_dir = COLLECTOR_RUN_DIR, *out = NULL;
	_cleanup_free_ char *reply = NULL;
	struct stop_out so = { 0 };
	char sock[PATH_MAX], dir[PATH_MAX] = "", path[PATH_MAX], *p;
	int compress = -1;
	bool verbose = false;
	int r;

	argc = stop_take_verbose(argc, argv, &verbose);
	r = status_parse(argc, argv, &cmd_stop, &name, &run_dir, &out, &compress);
	if (r)
		return r > 0 ? 0 : 2;
	if (vmgroup_find(run_dir, name, dir, sizeof(dir)) == 1) /* one of several VMs: the whole set */
		return vmgroup_stop(dir, out, compress, verbose);
	if (status_socket(run_dir, name, sock, sizeof(sock)) < 0) {
		status_last_session(run_dir, name);
		return 1;
	}
	r = status_request(sock, "stop", &reply);
	p = r >= 0 && reply ? strstr(reply, "session: ") : NULL;
	if (p)
		snprintf(dir, sizeof(dir), "%.*s", (int)strcspn(p + 9, "\n"), p + 9);
	if (!dir[0]) { /* an error, or a stop taken over: said as the daemon put it */
		fputs(reply ? reply : "", stdout);
		fflush(stdout);
	}
	if (r < 0) {
		status_no_answer(run_dir, name, sock, r, "the stop");
		return 1;
	}
	if (reply && !strncmp(reply, "stop: " DAEMON_STOP_TAKEN_OVER, 6 + strlen(DAEMON_STOP_TAKEN_OVER)))
		return 0; /* said; the later stop merges */
	if (!dir[0]) {
		log_error("the daemon's stop reply names no session dir");
		return 1;
	}
	stop_clock_first(reply);
	so.verbose = verbose;
	stop_out_open(&so, dir);
	stop_out_daemon(&so, reply);
	stop_output(dir, out, path, sizeof(path));
	r = stop_merge(&so, dir, path, compress);
	if (so.file)
		fclose(so.file);
	return r;
}
