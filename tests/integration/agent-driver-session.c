// SPDX-License-Identifier: GPL-2.0-only
/* agent-driver: the cases of whole sessions: a session, sessions one after another, START's
 * progress, the agent's own threads left out of the trace, the function tracer, a stream larger
 * than the ring. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent-driver.h"
#include "harness.h"
#include "marker.h"
#include "proto.h"
#include "util.h"

TEST(full_session)
{
	_cleanup_drv_ struct drv d = { 0 };
	struct rmsg r;
	struct vt_cpu_stats st[MAXCPU];
	uint32_t v, seq, files = 0, count = 0;
	bool header = false, print = false, sw = false, ksyms = false, notes = false;
	uint64_t probes = 0;
	char *s = NULL;

	CHECK(drv_up(&d, "full", -1) == 0);
	CHECK(instance_exists(&d));
	CHECK_STR(inst_read(&d, "tracing_on"), "0"); /* nothing traced before a session */
	CHECK(drv_hello(&d, &r) == 0);
	CHECK(vt_msg_u32(&r.m, VT_A_NCPUS, &v) == 0 && v == d.ncpus);
	CHECK(vt_msg_u32(&r.m, VT_A_PAGE_SIZE, &v) == 0 && v == 4096);
	CHECK(vt_msg_u32(&r.m, VT_A_STATE, &v) == 0 && v == VT_STATE_IDLE);
	CHECK(vt_msg_str(&r.m, VT_A_CLOCKS, 4096, &s) == 0 && strstr(s, "mono"));
	free(s);
	rmsg_free(&r);

	seq = drv_config(&d, "sched,irq:*,timer:hrtimer_start", "mono", 256);
	CHECK(drv_expect(&d, VT_MSG_OK, seq, &r) == 0);
	rmsg_free(&r);

	seq = drv_simple(&d, VT_MSG_META_REQ, UINT64_MAX);
	for (;;) {
		_cleanup_free_ char *name = NULL;
		struct vt_attr a;

		CHECK(drv_recv(&d, &r) == 0);
		CHECK(r.m.hdr.seq == seq);
		if (r.m.hdr.type == VT_MSG_META_END) {
			CHECK(vt_msg_u32(&r.m, VT_A_COUNT, &count) == 0);
			rmsg_free(&r);
			break;
		}
		CHECK(r.m.hdr.type == VT_MSG_META_FILE);
		CHECK(vt_msg_str(&r.m, VT_A_FILE_NAME, 4096, &name) == 0);
		CHECK(vt_msg_find(&r.m, VT_A_FILE_DATA, &a) == 0);
		_cleanup_free_ char *text = strndup((const char *)a.data, a.len);
		files++;
		if (!strcmp(name, "events/header_page"))
			header = strstr(text, "commit") != NULL;
		if (!strcmp(name, "events/ftrace/print/format"))
			print = strstr(text, "ID: ") && strstr(text, "field:char buf[]");
		if (!strcmp(name, "events/sched/sched_switch/format"))
			sw = strstr(text, "next_pid") != NULL;
		if (!strcmp(name, "kallsyms"))
			ksyms = strstr(text, " T ") || strstr(text, " t ");
		if (!strcmp(name, "notes"))
			notes = a.len >= 12;
		CHECK(strstr(name, "..") == NULL && name[0] != '/');
		rmsg_free(&r);
	}
	CHECK_INT(count, ==, files);
	CHECK(header && print && sw && ksyms && notes);

	CHECK(drv_start(&d, 42) == 0);
	CHECK(write_markers(&d, 0, 3000) == 0);
	/* A marked probe shows up in the trace. */
	{
		struct vt_buf b = { 0 };
		uint64_t t0 = util_now_ns(CLOCK_MONOTONIC), t1, g = 0;

		seq = ++d.seq;
		vt_msg_begin(&b, VT_MSG_PROBE, seq);
		vt_put_u64(&b, VT_A_PROBE_ID, 777);
		vt_put_u64(&b, VT_A_HOST_TIME, t0);
		vt_put_u32(&b, VT_A_MARK, 1);
		vt_msg_end(&b);
		drv_send(&d, &b);
		CHECK(drv_expect(&d, VT_MSG_PROBE_REPLY, seq, &r) == 0);
		t1 = util_now_ns(CLOCK_MONOTONIC);
		CHECK(vt_msg_u64(&r.m, VT_A_GUEST_TIME, &g) == 0);
		CHECK(g >= t0 && g <= t1); /* same machine: the agent's mono lies between our reads */
		rmsg_free(&r);
	}
	CHECK(drv_stop(&d, 42, st) == 0);
	CHECK(check_session(&d, 42, 3000, st, 777, &probes) == 0);
	CHECK_INT(probes, ==, 1);
	CHECK_INT(drv_down(&d), ==, 0);
	CHECK(!instance_exists(&d));
}

/* Sessions in a row: kallsyms is read once while no module changes, an unchanged config is
 * not written again, a changed one is (old events off, new on). */
TEST(sessions_reuse_config_and_kallsyms)
{
	_cleanup_drv_ struct drv d = { 0 };
	_cleanup_free_ char *k1 = NULL, *k2 = NULL;
	struct vt_cpu_stats st[MAXCPU];
	struct rmsg r;
	size_t l1, l2;
	uint32_t seq, files;

	CHECK(drv_up(&d, "reuse", -1) == 0);
	seq = drv_config(&d, "sched:sched_switch", "mono", 256);
	CHECK(drv_expect(&d, VT_MSG_OK, seq, &r) == 0);
	rmsg_free(&r);
	CHECK(drv_meta(&d, "kallsyms", &k1, &l1, &files) == 0 && k1 && l1 > 1000);
	CHECK(drv_start(&d, 1) == 0);
	CHECK_STR(inst_read(&d, "events/sched/sched_switch/enable"), "1");
	CHECK(drv_stop(&d, 1, st) == 0);
	CHECK(drv_meta(&d, "kallsyms", &k2, &l2, &files) == 0 && k2);
	CHECK(l1 == l2 && memcmp(k1, k2, l1) == 0);
	CHECK_INT(log_count(&d, "metadata: kallsyms read"), ==, 1);

	seq = drv_config(&d, "irq:irq_handler_entry", NULL, 0);
	CHECK(drv_expect(&d, VT_MSG_OK, seq, &r) == 0);
	rmsg_free(&r);
	CHECK(drv_start(&d, 2) == 0);
	CHECK_STR(inst_read(&d, "events/sched/sched_switch/enable"), "0");
	CHECK_STR(inst_read(&d, "events/irq/irq_handler_entry/enable"), "1");
	CHECK(drv_stop(&d, 2, st) == 0);
	/* The same config again: still applied, and the stream still works. */
	CHECK(drv_start(&d, 3) == 0);
	CHECK_STR(inst_read(&d, "events/irq/irq_handler_entry/enable"), "1");
	CHECK(write_markers(&d, 0, 100) == 0);
	CHECK(drv_stop(&d, 3, st) == 0);
	CHECK(check_session(&d, 3, 100, st, 0, NULL) == 0);
	CHECK_INT(drv_down(&d), ==, 0);
}

/* A START that asks for PROGRESS gets the steps in order, each (step, done) past the one
 * before, the events counted and every CPU's begin marker, then OK; one that does not ask (an
 * older host) gets none; the next START with the same events reports no event step. */
static int drv_start_progress(struct drv *d, uint64_t session, uint32_t *ret_events, uint32_t *ret_begin)
{
	struct vt_buf b = { 0 };
	uint32_t seq = ++d->seq, step = 0, done = 0;
	struct rmsg r;

	*ret_events = *ret_begin = 0;
	capture_begin(d);
	vt_msg_begin(&b, VT_MSG_START, seq);
	vt_put_u64(&b, VT_A_SESSION, session);
	vt_put_u32(&b, VT_A_WANT_PROGRESS, 1);
	vt_msg_end(&b);
	drv_send(d, &b);
	for (;;) {
		uint32_t st = 0, dn = 0, tot = 0;

		if (drv_recv(d, &r) < 0 || r.m.hdr.seq != seq)
			return -1;
		if (r.m.hdr.type == VT_MSG_OK)
			break;
		if (r.m.hdr.type != VT_MSG_PROGRESS || vt_msg_u32(&r.m, VT_A_STEP, &st) < 0 ||
		    vt_msg_u32(&r.m, VT_A_DONE, &dn) < 0 || vt_msg_u32(&r.m, VT_A_TOTAL, &tot) < 0 ||
		    st < step || (st == step && dn <= done) || st >= VT_STEP_MAX || dn > tot) {
			fprintf(stderr, "bad progress: %s step %u %u/%u after step %u %u\n",
				vt_msg_type_name(r.m.hdr.type), st, dn, tot, step, done);
			rmsg_free(&r);
			return -1;
		}
		step = st, done = dn;
		if (st == VT_STEP_EVENTS && dn == tot)
			*ret_events = dn;
		if (st == VT_STEP_BEGIN && dn == tot)
			*ret_begin = dn;
		rmsg_free(&r);
	}
	rmsg_free(&r);
	return step == VT_STEP_TRACING_ON ? 0 : -1;
}

TEST(start_progress)
{
	_cleanup_drv_ struct drv d = { 0 };
	struct vt_cpu_stats st[MAXCPU];
	uint32_t seq, events, begin;
	struct rmsg r;

	CHECK(drv_up(&d, "progress", -1) == 0);
	seq = drv_config(&d, "sched:sched_switch,sched:sched_wakeup,irq:irq_handler_entry", "mono", 256);
	CHECK(drv_expect(&d, VT_MSG_OK, seq, &r) == 0);
	rmsg_free(&r);
	CHECK(drv_start_progress(&d, 1, &events, &begin) == 0);
	CHECK_INT(events, ==, 3);
	CHECK_INT(begin, ==, d.ncpus);
	CHECK(write_markers(&d, 0, 100) == 0);
	CHECK(drv_stop(&d, 1, st) == 0);
	CHECK(check_session(&d, 1, 100, st, 0, NULL) == 0);
	CHECK(drv_start_progress(&d, 2, &events, &begin) == 0);
	CHECK_INT(events, ==, 0); /* enabled by the session before: not written again */
	CHECK_INT(begin, ==, d.ncpus);
	CHECK(drv_stop(&d, 2, st) == 0);
	CHECK(drv_start(&d, 3) == 0); /* no WANT_PROGRESS: OK is the first frame */
	CHECK(drv_stop(&d, 3, st) == 0);
	CHECK_INT(drv_down(&d), ==, 0);
}

/* The tids in the instance's set_event_notrace_pid, ascending (the kernel lists them so). */
static size_t notrace_tids(const struct drv *d, int *v, size_t max)
{
	_cleanup_free_ char *s = NULL;
	char p[256], *save = NULL;
	size_t n = 0;

	snprintf(p, sizeof(p), TRACEFS "/instances/%s/set_event_notrace_pid", d->instance);
	if (util_read_file(p, 1 << 16, &s, NULL) < 0)
		return 0;
	for (char *tok = strtok_r(s, " \n", &save); tok && n < max; tok = strtok_r(NULL, " \n", &save))
		v[n++] = atoi(tok);
	return n;
}

static bool tid_listed(const int *v, size_t n, int tid)
{
	for (size_t i = 0; i < n; i++)
		if (v[i] == tid)
			return true;
	return false;
}

static bool tid_alive(pid_t pid, int tid)
{
	char p[64];

	snprintf(p, sizeof(p), "/proc/%d/task/%d", (int)pid, tid);
	return access(p, F_OK) == 0;
}

/* A child that sleeps with pid tid (ns_last_pid), or -1. */
static pid_t spawn_with_pid(int tid)
{
	for (int i = 0; i < 50; i++) {
		char v[16];
		pid_t c;
		int n = snprintf(v, sizeof(v), "%d", tid - 1);
		_cleanup_close_ int fd = open("/proc/sys/kernel/ns_last_pid", O_WRONLY | O_CLOEXEC);

		if (fd < 0 || util_write_full(fd, v, (size_t)n) < 0)
			return -1;
		c = fork();
		if (c == 0) {
			pause();
			_exit(0);
		}
		if (c == tid)
			return c;
		if (c > 0) {
			kill(c, SIGKILL);
			waitpid(c, NULL, 0);
		}
	}
	return -1;
}

/* The agent leaves its own threads out of the events (set_event_notrace_pid). A START adds its
 * threads to the list instead of rewriting it (a rewrite unregisters and registers the kernel's
 * pid-filter probes: code patches in the guest), unless a tid of an earlier session's thread
 * now names another task, whose events the list would leave out. */
TEST(notrace_list_added_to)
{
	_cleanup_drv_ struct drv d = { 0 };
	struct vt_cpu_stats st[MAXCPU];
	int l1[256], l2[256], l3[256], stale = -1;
	size_t n1, n2, n3;
	struct rmsg r;
	uint32_t seq;
	pid_t child;

	CHECK(drv_up(&d, "notrace", -1) == 0);
	seq = drv_config(&d, "sched:sched_switch", "mono", 256);
	CHECK(drv_expect(&d, VT_MSG_OK, seq, &r) == 0);
	rmsg_free(&r);
	CHECK(drv_start(&d, 1) == 0);
	n1 = notrace_tids(&d, l1, ARRAY_SIZE(l1));
	CHECK(n1 > d.ncpus); /* the main thread and a pump per CPU at least */
	for (size_t i = 0; i < n1; i++)
		CHECK(tid_alive(d.pid, l1[i]));
	CHECK(drv_stop(&d, 1, st) == 0);
	CHECK(drv_start(&d, 2) == 0);
	n2 = notrace_tids(&d, l2, ARRAY_SIZE(l2));
	for (size_t i = 0; i < n1; i++) /* added to: session 1's tids are still there */
		CHECK(tid_listed(l2, n2, l1[i]));
	for (size_t i = 0; i < n2; i++)
		if (!tid_alive(d.pid, l2[i]))
			stale = l2[i];
	CHECK(n2 > n1 && stale > 0); /* session 2's pumps are new threads; session 1's are gone */
	CHECK(drv_stop(&d, 2, st) == 0);
	CHECK_INT(log_count(&d, "set_event_notrace_pid rewritten"), ==, 0);

	/* An exited pump's tid given to another task: the next START rewrites the list. */
	child = stale > 0 ? spawn_with_pid(stale) : -1;
	CHECK(child == stale);
	CHECK(drv_start(&d, 3) == 0);
	n3 = notrace_tids(&d, l3, ARRAY_SIZE(l3));
	CHECK(!tid_listed(l3, n3, stale));
	for (size_t i = 0; i < n3; i++)
		CHECK(tid_alive(d.pid, l3[i]));
	CHECK_INT(log_count(&d, "set_event_notrace_pid rewritten"), ==, 1);
	if (child > 0) {
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
	}
	CHECK(write_markers(&d, 0, 100) == 0);
	CHECK(drv_stop(&d, 3, st) == 0);
	CHECK(check_session(&d, 3, 100, st, 0, NULL) == 0);
	CHECK_INT(drv_down(&d), ==, 0);
}

/* The address of symbol name in a kallsyms text, 0 if absent. */
static uint64_t kallsyms_addr(const char *text, const char *name)
{
	size_t nl = strlen(name);

	for (const char *l = text; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
		const char *sp = strchr(l, ' ');

		if (sp && (sp[1] == 'T' || sp[1] == 't') && sp[2] == ' ' && !strncmp(sp + 3, name, nl) &&
		    (sp[3 + nl] == '\n' || sp[3 + nl] == '\0' || sp[3 + nl] == '\t'))
			return strtoull(l, NULL, 16);
	}
	return 0;
}

/* Whether this host lets an instance run the function tracer with a filter (a locked-down
 * kernel refuses both with EPERM). */
static bool host_allows_function(void)
{
	char dir[128], p[160];
	int ok;

	snprintf(dir, sizeof(dir), TRACEFS "/instances/%s_fnprobe", instance_prefix());
	if (mkdir(dir, 0700) < 0)
		return false;
	snprintf(p, sizeof(p), "%s/set_ftrace_filter", dir);
	ok = util_write_file(p, "vfs_read", 8, 0600) == 0;
	snprintf(p, sizeof(p), "%s/current_tracer", dir);
	ok = ok && util_write_file(p, "function", 8, 0600) == 0;
	(void)util_write_file(p, "nop", 3, 0600);
	rmdir(dir);
	return ok;
}

/* The tracer and filter the agent reports in HELLO. */
static int drv_tracer(struct drv *d, char **ret_tracer, char **ret_filter)
{
	struct rmsg r;
	int e = -1;

	if (drv_hello(d, &r) < 0)
		return -1;
	if (vt_msg_str(&r.m, VT_A_TRACER, 4096, ret_tracer) == 0 &&
	    vt_msg_str(&r.m, VT_A_FTRACE_FILTER, 4096, ret_filter) == 0)
		e = 0;
	rmsg_free(&r);
	return e;
}

/* A host that refuses the function tracer (lockdown): the filter is refused at CONFIG, the
 * tracer at START, both naming the cause; afterwards a plain session works. */
static void tracer_refused_by_kernel(struct drv *d)
{
	_cleanup_free_ char *m1 = NULL, *m2 = NULL;
	struct vt_cpu_stats st[MAXCPU];
	struct rmsg r;
	uint32_t seq;

	seq = drv_config_tracer(d, "function", "vfs_read");
	CHECK_INT(drv_error(d, seq, &m1), ==, EPERM);
	CHECK(strstr(m1, "'vfs_read'") && strstr(m1, "lockdown"));
	seq = drv_config_tracer(d, "function", NULL);
	CHECK(drv_expect(d, VT_MSG_OK, seq, &r) == 0);
	rmsg_free(&r);
	seq = drv_simple(d, VT_MSG_START, 12); /* refused before any port is opened */
	CHECK_INT(drv_error(d, seq, &m2), ==, EPERM);
	CHECK(strstr(m2, "current_tracer") != NULL);
	CHECK_STR(inst_read(d, "current_tracer"), "nop");
	seq = drv_config_tracer(d, "nop", NULL);
	CHECK(drv_expect(d, VT_MSG_OK, seq, &r) == 0);
	rmsg_free(&r);
	CHECK(drv_start(d, 13) == 0);
	CHECK(write_markers(d, 0, 50) == 0);
	CHECK(drv_stop(d, 13, st) == 0);
	CHECK(check_session(d, 13, 50, st, 0, NULL) == 0);
	printf("this host refuses the function tracer: refusals checked (the e2e guest test "
	       "tracer-function runs it)\n");
}

/* The function tracer with a one-function filter: function entries of vfs_read arrive, their
 * formats go in META, current_tracer is nop again after STOP. */
static void tracer_function_runs(struct drv *d)
{
	_cleanup_free_ char *fmt = NULL, *ksyms = NULL, *tracer = NULL, *filter = NULL;
	struct vt_cpu_stats st[MAXCPU];
	struct rmsg r;
	size_t len;
	uint32_t seq, files;
	uint64_t counted = 0, outside = 0, addr;
	const char *id;

	seq = drv_config_tracer(d, "function", "vfs_read");
	CHECK(drv_expect(d, VT_MSG_OK, seq, &r) == 0);
	rmsg_free(&r);
	CHECK(drv_tracer(d, &tracer, &filter) == 0);
	CHECK_STR(tracer, "function");
	CHECK_STR(filter, "vfs_read");
	CHECK_STR(inst_read(d, "set_ftrace_filter"), "vfs_read");
	CHECK(drv_meta(d, "events/ftrace/function/format", &fmt, &len, &files) == 0 && fmt);
	CHECK(strstr(fmt, "parent_ip") != NULL && (id = strstr(fmt, "ID: ")) != NULL);
	CHECK(drv_meta(d, "kallsyms", &ksyms, &len, &files) == 0 && ksyms);
	addr = kallsyms_addr(ksyms, "vfs_read");
	CHECK(addr != 0);
	CHECK(drv_start(d, 11) == 0);
	CHECK_STR(inst_read(d, "current_tracer"), "function");
	for (int i = 0; i < 200; i++) {
		_cleanup_free_ char *s = NULL;

		CHECK(util_read_file("/proc/self/stat", 4096, &s, NULL) == 0);
	}
	CHECK(write_markers(d, 0, 50) == 0);
	CHECK(drv_stop(d, 11, st) == 0);
	CHECK_STR(inst_read(d, "current_tracer"), "nop");
	for (unsigned c = 0; c < d->ncpus; c++) {
		struct walk w = { .print_id = print_event_id(), .count_id = (uint16_t)atoi(id + 4),
				  .ip_lo = addr, .ip_hi = addr + 16 };

		CHECK(check_stream(&d->cap[c], 4096, 11, c, &st[c], &w) == 0);
		CHECK_INT(w.next_seq, ==, 50);
		counted += w.counted;
		outside += w.ip_outside;
	}
	printf("function entries: %llu, outside vfs_read: %llu\n", (unsigned long long)counted,
	       (unsigned long long)outside);
	CHECK_INT(counted, >=, 200);
	CHECK_INT(outside, ==, 0);
}

TEST(tracer_function)
{
	_cleanup_drv_ struct drv d = { 0 };
	struct rmsg r;
	bool allowed = host_allows_function();
	uint32_t seq;

	CHECK(drv_up(&d, "fn", -1) == 0);
	seq = drv_config(&d, "sched:sched_switch", "mono", 1024);
	CHECK(drv_expect(&d, VT_MSG_OK, seq, &r) == 0);
	rmsg_free(&r);
	if (allowed)
		tracer_function_runs(&d);
	else
		tracer_refused_by_kernel(&d);
	CHECK_INT(drv_down(&d), ==, 0); /* also after a failed helper: the agent must exit cleanly */
}

/* Unknown tracer, bad filter: ERROR naming it, the previous config stays. */
TEST(tracer_refusals)
{
	static const struct {
		const char *tracer, *filter, *named;
		int err;
	} bad[] = {
		{ "nosuchtracer", NULL, "nosuchtracer", ENOENT },
		{ "../x", NULL, "../x", ENOENT },
		{ "function", "vfs_read;reboot", "vfs_read;reboot", EINVAL },
		{ NULL, "mod:ext4", "mod:ext4", EINVAL },
	};
	_cleanup_drv_ struct drv d = { 0 };

	CHECK(drv_up(&d, "fnbad", -1) == 0);
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		_cleanup_free_ char *msg = NULL, *tracer = NULL, *filter = NULL;
		uint32_t seq = drv_config_tracer(&d, bad[i].tracer, bad[i].filter);

		CHECK_INT(drv_error(&d, seq, &msg), ==, bad[i].err);
		if (!strstr(msg, bad[i].named))
			fprintf(stderr, "error '%s' does not name '%s'\n", msg, bad[i].named);
		CHECK(strstr(msg, bad[i].named) != NULL);
		CHECK(drv_tracer(&d, &tracer, &filter) == 0);
		CHECK_STR(tracer, "nop");
		CHECK_STR(filter, "");
		CHECK_STR(inst_read(&d, "current_tracer"), "nop");
	}
	CHECK_INT(drv_down(&d), ==, 0);
}

/* More data than the ring holds: the pumps must wake (poll + buffer_percent) and stream live. */
TEST(live_stream_larger_than_ring)
{
	_cleanup_drv_ struct drv d = { 0 };
	struct rmsg r;
	struct vt_cpu_stats st[MAXCPU];
	uint32_t seq;

	CHECK(drv_up(&d, "live", -1) == 0);
	seq = drv_config(&d, "sched:sched_switch", "mono", 256);
	CHECK(drv_expect(&d, VT_MSG_OK, seq, &r) == 0);
	rmsg_free(&r);
	CHECK(drv_start(&d, 77) == 0);
	CHECK(write_markers(&d, 0, 30000) == 0);
	CHECK(drv_stop(&d, 77, st) == 0);
	CHECK(check_session(&d, 77, 30000, st, 0, NULL) == 0);
	for (unsigned c = 0; c < d.ncpus; c++)
		CHECK_INT(st[c].pages_sent, >, 256 / 4); /* more than one ring's worth went through */
	CHECK_INT(drv_down(&d), ==, 0);
	CHECK(!instance_exists(&d));
}
