// SPDX-License-Identifier: GPL-2.0-only
/* Test tool: turns a real host tracefs instance into a session dir as the collector would
 * write it (docs/session-dir.md): guest/ metadata, cpuN.spool with begin/end marker pages
 * around the raw trace_pipe_raw pages, session.ini, agent-stats.ini, and expected.ini with the
 * kernel's own per-CPU "read events" counts (and "overrun": a ring that overran fails the
 * capture unless VT_CAPTURE_OVERRUN=1). Stands in for the agent + daemon in tests.
 *   capture-session TRACEFS INSTANCE OUTDIR SESSION_ID [STALE_BYTES [DROP_PAGE_OF_CPU0]] */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ftrace_page.h"
#include "marker.h"
#include "util.h"

static int copy_file(const char *from, const char *to)
{
	_cleanup_free_ char *buf = NULL;
	size_t len;
	int r = util_read_file(from, 16u << 20, &buf, &len);

	if (r < 0) {
		fprintf(stderr, "capture-session: cannot read %s: %s\n", from, strerror(-r));
		return r;
	}
	return util_write_file(to, buf, len, 0644);
}

static uint64_t stat_value(const char *stats, const char *key)
{
	const char *p = strstr(stats, key);

	return p ? strtoull(p + strlen(key), NULL, 10) : 0;
}

static int copy_formats(const char *inst, const char *out)
{
	char path[4096], dst[4096], line[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/set_event", inst);
	if (!(f = fopen(path, "r")))
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		char *colon = strchr(line, ':');

		line[strcspn(line, "\n")] = '\0';
		if (!colon)
			continue;
		*colon = '\0';
		snprintf(dst, sizeof(dst), "%s/guest/events/%s/%s", out, line, colon + 1);
		util_mkdir_p(dst, 0755);
		snprintf(path, sizeof(path), "%s/events/%s/%s/format", inst, line, colon + 1);
		strcat(dst, "/format");
		if (copy_file(path, dst) < 0) {
			fclose(f);
			return -EIO;
		}
	}
	fclose(f);
	snprintf(dst, sizeof(dst), "%s/guest/events/ftrace/print", out);
	util_mkdir_p(dst, 0755);
	snprintf(path, sizeof(path), "%s/events/ftrace/print/format", inst);
	strcat(dst, "/format");
	return copy_file(path, dst);
}

/* One CPU: [stale bytes] begin marker, every page trace_pipe_raw gives, end marker. */
static int capture_cpu(const char *inst, const char *out, uint32_t cpu, uint32_t ps, uint64_t sid,
		       size_t stale, long drop, uint64_t *ret_events, uint64_t *ret_overrun, FILE *agent)
{
	char path[4096];
	_cleanup_free_ uint8_t *page = malloc(ps);
	_cleanup_free_ char *stats = NULL;
	_cleanup_close_ int in = -1, fd = -1;
	struct vt_cpu_stats st = { .cpu = cpu };
	long n_page = 0;

	snprintf(path, sizeof(path), "%s/per_cpu/cpu%u/trace_pipe_raw", inst, cpu);
	in = open(path, O_RDONLY | O_NONBLOCK);
	snprintf(path, sizeof(path), "%s/cpu%u.spool", out, cpu);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (in < 0 || fd < 0 || !page)
		return -errno;
	memset(page, 0xa5, ps);
	if (stale && util_write_full(fd, page, stale) < 0)
		return -EIO;
	vt_marker_encode(page, ps, VT_MARKER_BEGIN, sid, cpu, NULL);
	if (util_write_full(fd, page, ps) < 0)
		return -EIO;
	for (;;) {
		ssize_t n = read(in, page, ps);

		if (n <= 0)
			break;
		memset(page + n, 0, ps - (size_t)n);
		st.pages_sent++;
		st.bytes_sent += ps;
		if (n_page++ == drop && cpu == 0)
			continue; /* simulated transport loss */
		if (util_write_full(fd, page, ps) < 0)
			return -EIO;
	}
	snprintf(path, sizeof(path), "%s/per_cpu/cpu%u/stats", inst, cpu);
	if (util_read_file(path, 65536, &stats, NULL) == 0) {
		st.entries = stat_value(stats, "entries: ");
		st.overrun = stat_value(stats, "\noverrun: ");
		st.commit_overrun = stat_value(stats, "commit overrun: ");
		st.dropped_events = stat_value(stats, "dropped events: ");
		st.read_events = stat_value(stats, "read events: ");
	}
	vt_marker_encode(page, ps, VT_MARKER_END, sid, cpu, &st);
	if (util_write_full(fd, page, ps) < 0)
		return -EIO;
	fprintf(agent, "cpu%u.pages_sent=%" PRIu64 "\ncpu%u.read_events=%" PRIu64 "\ncpu%u.overrun=%" PRIu64 "\n",
		cpu, st.pages_sent, cpu, st.read_events, cpu, st.overrun);
	*ret_events = st.read_events;
	*ret_overrun = st.overrun;
	return st.overrun && !getenv("VT_CAPTURE_OVERRUN") ? -EOVERFLOW : 0;
}

int main(int argc, char **argv)
{
	char inst[4096], path[4096];
	_cleanup_free_ char *hp = NULL, *he = NULL;
	size_t hp_len, he_len, stale;
	struct ftrace_page_layout lay;
	long ncpus = sysconf(_SC_NPROCESSORS_CONF), drop;
	uint64_t total = 0, overrun = 0, sid;
	FILE *f, *agent;

	if (argc < 5) {
		fprintf(stderr, "usage: capture-session TRACEFS INSTANCE OUTDIR SESSION_ID [STALE [DROP]]\n");
		return 2;
	}
	snprintf(inst, sizeof(inst), "%s/instances/%s", argv[1], argv[2]);
	sid = strtoull(argv[4], NULL, 10);
	stale = argc > 5 ? strtoul(argv[5], NULL, 10) : 0;
	drop = argc > 6 ? strtol(argv[6], NULL, 10) : -1;
	snprintf(path, sizeof(path), "%s/guest/events", argv[3]);
	if (util_mkdir_p(path, 0755) < 0)
		return 1;
	snprintf(path, sizeof(path), "%s/events/header_page", inst);
	if (util_read_file(path, 65536, &hp, &hp_len) < 0)
		return 1;
	snprintf(path, sizeof(path), "%s/events/header_event", inst);
	if (util_read_file(path, 65536, &he, &he_len) < 0 ||
	    ftrace_page_layout_parse(hp, hp_len, he, he_len, &lay) < 0) {
		fprintf(stderr, "capture-session: cannot parse %s header files\n", inst);
		return 1;
	}
	snprintf(path, sizeof(path), "%s/guest/events/header_page", argv[3]);
	util_write_file(path, hp, hp_len, 0644);
	snprintf(path, sizeof(path), "%s/guest/events/header_event", argv[3]);
	util_write_file(path, he, he_len, 0644);
	snprintf(path, sizeof(path), "%s/saved_cmdlines", argv[1]);
	{
		char dst[4096];

		snprintf(dst, sizeof(dst), "%s/guest/saved_cmdlines", argv[3]);
		if (copy_file(path, dst) < 0)
			return 1;
	}
	if (copy_formats(inst, argv[3]) < 0)
		return 1;
	snprintf(path, sizeof(path), "%s/agent-stats.ini", argv[3]);
	if (!(agent = fopen(path, "w")))
		return 1;
	for (long c = 0; c < ncpus; c++) {
		uint64_t ev = 0, ov = 0;
		int r = capture_cpu(inst, argv[3], (uint32_t)c, lay.page_size, sid, stale, drop, &ev, &ov, agent);

		if (r < 0) {
			fprintf(stderr, "capture-session: cpu%ld: %s\n", c, strerror(-r));
			return 1;
		}
		total += ev;
		overrun += ov;
	}
	fclose(agent);
	snprintf(path, sizeof(path), "%s/session.ini", argv[3]);
	if (!(f = fopen(path, "w")))
		return 1;
	fprintf(f, "vm=test\nsession_id=%" PRIu64 "\nncpus=%ld\npage_size=%u\nqemu_pid=%s\nguest_clock=mono\n"
		   "clock_method=none\nstate=stopped\n", sid, ncpus, lay.page_size, getenv("VT_QEMU_PID") ?: "0");
	fclose(f);
	snprintf(path, sizeof(path), "%s/expected.ini", argv[3]);
	if (!(f = fopen(path, "w")))
		return 1;
	fprintf(f, "read_events=%" PRIu64 "\noverrun=%" PRIu64 "\n", total, overrun);
	fclose(f);
	printf("captured %" PRIu64 " events from %ld cpus\n", total, ncpus);
	return 0;
}
