// SPDX-License-Identifier: GPL-2.0-only
/* agent-driver: the cases of things going wrong and of requests: FLUSH, old-style lines, the host
 * going away, signals, data ports unplugged or missing or unread, bad configurations and
 * frames, the control port attached later, user errors. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysinfo.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent-driver.h"
#include "harness.h"
#include "marker.h"
#include "proto.h"
#include "util.h"

/* FLUSH with the periodic flush off (FLUSH_MS 0) and a ring far from half full: every CPU sends
 * what its ring holds, then a flush marker with the request's seq; the lines written before the
 * request are all before that marker, and its pages_sent counts the ring pages before it. */
TEST(flush_on_request)
{
	_cleanup_drv_ struct drv d = { 0 };
	struct rmsg r;
	struct vt_cpu_stats st[MAXCPU];
	struct vt_buf b = { 0 };
	uint32_t seq;
	char *msg = NULL;

	CHECK(drv_up(&d, "flush", -1) == 0);
	vt_msg_begin(&b, VT_MSG_CONFIG, seq = ++d.seq);
	vt_put_str(&b, VT_A_EVENTS, "sched:sched_switch");
	vt_put_str(&b, VT_A_CLOCK, "mono");
	vt_put_u32(&b, VT_A_BUFFER_KB, 1024);
	vt_put_u32(&b, VT_A_FLUSH_MS, 0);
	vt_msg_end(&b);
	drv_send(&d, &b);
	CHECK(drv_expect(&d, VT_MSG_OK, seq, &r) == 0);
	rmsg_free(&r);
	/* Not tracing: refused, naming why. */
	vt_msg_begin(&b, VT_MSG_FLUSH, seq = ++d.seq);
	vt_put_u64(&b, VT_A_SESSION, 91);
	vt_put_u64(&b, VT_A_FLUSH_SEQ, 1);
	vt_msg_end(&b);
	drv_send(&d, &b);
	CHECK(drv_error(&d, seq, &msg) == EALREADY && strstr(msg, "not tracing"));
	free(msg);
	CHECK(drv_start(&d, 91) == 0);
	CHECK(write_markers(&d, 0, 40) == 0);
	/* Another session's id: refused. */
	vt_msg_begin(&b, VT_MSG_FLUSH, seq = ++d.seq);
	vt_put_u64(&b, VT_A_SESSION, 90);
	vt_put_u64(&b, VT_A_FLUSH_SEQ, 4);
	vt_msg_end(&b);
	drv_send(&d, &b);
	CHECK(drv_error(&d, seq, &msg) == ESTALE && strstr(msg, "session 91"));
	free(msg);
	vt_msg_begin(&b, VT_MSG_FLUSH, seq = ++d.seq);
	vt_put_u64(&b, VT_A_SESSION, 91);
	vt_put_u64(&b, VT_A_FLUSH_SEQ, 5);
	vt_msg_end(&b);
	drv_send(&d, &b);
	CHECK(drv_expect(&d, VT_MSG_OK, seq, &r) == 0);
	rmsg_free(&r);
	free(b.data);
	/* STOP at once: a pump takes a pending flush before the stop, so each stream holds its
	 * flush marker before the end marker. */
	CHECK(drv_stop(&d, 91, st) == 0);
	CHECK(check_session(&d, 91, 40, st, 0, NULL) == 0);
	for (unsigned c = 0; c < d.ncpus; c++) {
		const struct capture *cp = &d.cap[c];
		size_t n = cp->len / 4096, at = 0, flushes = 0;
		struct walk w = { .print_id = print_event_id(), .cpu = c };
		struct vt_marker m;
		struct vt_flush_marker f = { 0 };

		if (cp->lfd < 0)
			continue;
		for (size_t i = 1; i + 1 < n; i++)
			if (vt_marker_decode(cp->data + i * 4096, 4096, &m) == 1 && m.kind == VT_MARKER_FLUSH &&
			    vt_marker_decode_flush(cp->data + i * 4096, 4096, &m, &f) == 0)
				at = i, flushes++;
		CHECK_INT(flushes, ==, 1);
		CHECK_INT(f.seq, ==, 5);
		CHECK(f.guest_time > 0);
		CHECK_INT(m.session_id, ==, 91);
		for (size_t i = 1; i < at; i++) {
			walk_page(&w, cp->data + i * 4096, 4096);
			w.pages++;
		}
		printf("cpu%u: flush marker after %llu ring pages holding lines 0..%llu\n", c,
		       (unsigned long long)w.pages, (unsigned long long)w.next_seq - 1);
		CHECK_INT(w.next_seq, ==, 40); /* every line written before the request */
		CHECK_INT(w.bad_seq, ==, 0);
		CHECK_INT(m.stats.pages_sent, ==, w.pages);
	}
	CHECK_INT(drv_down(&d), ==, 0);
}

TEST(legacy_lines)
{
	_cleanup_drv_ struct drv d = { 0 };
	struct rmsg r;
	struct vt_cpu_stats st[MAXCPU];
	uint64_t sid = 1;
	uint32_t v = 0, seq;

	CHECK(drv_up(&d, "legacy", -1) == 0);
	capture_begin(&d);
	CHECK(util_write_full(d.ctl_fd, "1\n", 2) == 0);
	CHECK(drv_hello(&d, &r) == 0); /* answered after the start completed */
	CHECK(vt_msg_u32(&r.m, VT_A_STATE, &v) == 0 && v == VT_STATE_TRACING);
	CHECK(vt_msg_u64(&r.m, VT_A_SESSION_ACTIVE, &sid) == 0 && sid == 0);
	rmsg_free(&r);
	CHECK(write_markers(&d, 0, 500) == 0);
	CHECK(util_write_full(d.ctl_fd, "0\r\n", 3) == 0);
	CHECK(drv_hello(&d, &r) == 0);
	CHECK(vt_msg_u32(&r.m, VT_A_STATE, &v) == 0 && v == VT_STATE_IDLE);
	rmsg_free(&r);
	capture_end(&d);
	/* No STOPPED for a legacy stop: take the stats from the end markers. */
	for (unsigned c = 0; c < d.ncpus; c++) {
		struct vt_marker e;

		CHECK(d.cap[c].len >= 8192);
		CHECK(vt_marker_decode(d.cap[c].data + d.cap[c].len - 4096, 4096, &e) == 1);
		st[c] = e.stats;
	}
	CHECK(check_session(&d, 0, 500, st, 0, NULL) == 0);
	/* STOP while idle: an error, and the agent goes on. */
	seq = drv_simple(&d, VT_MSG_STOP, UINT64_MAX);
	_cleanup_free_ char *msg = NULL;
	CHECK(drv_error(&d, seq, &msg) == EALREADY);
	CHECK_INT(drv_down(&d), ==, 0);
	CHECK(!instance_exists(&d));
}

TEST(host_goes_away_and_returns)
{
	_cleanup_drv_ struct drv d = { 0 };
	struct rmsg r;
	struct vt_cpu_stats st[MAXCPU];
	uint64_t sid = 0;
	uint32_t v = 0;

	CHECK(drv_up(&d, "reconnect", -1) == 0);
	CHECK(drv_start(&d, 5) == 0);
	CHECK(write_markers(&d, 0, 200) == 0);
	/* The host disappears mid-session and comes back. */
	close(d.ctl_fd);
	vt_reader_free(&d.rd);
	vt_reader_init(&d.rd);
	d.ctl_fd = accept_wait(d.ctl_lfd);
	CHECK(d.ctl_fd >= 0);
	CHECK(drv_hello(&d, &r) == 0);
	CHECK(vt_msg_u32(&r.m, VT_A_STATE, &v) == 0 && v == VT_STATE_TRACING);
	CHECK(vt_msg_u64(&r.m, VT_A_SESSION_ACTIVE, &sid) == 0 && sid == 5);
	rmsg_free(&r);
	CHECK(write_markers(&d, 200, 200) == 0); /* the numbering goes on: 200..399 */
	CHECK(drv_stop(&d, 5, st) == 0);
	/* The markers of both halves, each once and in order. */
	CHECK(check_session(&d, 5, 400, st, 0, NULL) == 0);
	/* Gone again while idle, back again: the next session works. */
	close(d.ctl_fd);
	vt_reader_free(&d.rd);
	vt_reader_init(&d.rd);
	d.ctl_fd = accept_wait(d.ctl_lfd);
	CHECK(d.ctl_fd >= 0);
	CHECK(drv_start(&d, 6) == 0);
	CHECK(write_markers(&d, 0, 300) == 0);
	CHECK(drv_stop(&d, 6, st) == 0);
	CHECK(check_session(&d, 6, 300, st, 0, NULL) == 0);
	CHECK_INT(drv_down(&d), ==, 0);
	CHECK(!instance_exists(&d));
}

/* SIGTERM mid-session: tracing off, streams closed with their end markers, instance gone, exit 0. */
TEST(sigterm_while_tracing)
{
	_cleanup_drv_ struct drv d = { 0 };
	struct vt_cpu_stats st[MAXCPU];
	int status = -1;

	CHECK(drv_up(&d, "sigterm", -1) == 0);
	CHECK(drv_start(&d, 11) == 0);
	CHECK(write_markers(&d, 0, 1000) == 0);
	kill(d.pid, SIGTERM);
	waitpid(d.pid, &status, 0);
	d.pid = 0;
	capture_end(&d);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	CHECK(!instance_exists(&d));
	for (unsigned c = 0; c < d.ncpus; c++) {
		struct vt_marker e;

		CHECK(d.cap[c].len >= 8192);
		CHECK(vt_marker_decode(d.cap[c].data + d.cap[c].len - 4096, 4096, &e) == 1);
		CHECK(e.kind == VT_MARKER_END);
		st[c] = e.stats;
	}
	CHECK(check_session(&d, 11, 1000, st, 0, NULL) == 0);
}

/* A data port that goes away mid-session: that CPU reports the error, the others go on. */
TEST(data_port_unplugged)
{
	_cleanup_drv_ struct drv d = { 0 };
	struct vt_cpu_stats st[MAXCPU];
	unsigned last;

	CHECK(get_nprocs_conf() >= 2);
	last = (unsigned)get_nprocs_conf() - 1;
	CHECK(drv_up(&d, "unplug", -1) == 0);
	d.cap[last].unplug = true;
	CHECK(drv_start(&d, 12) == 0);
	CHECK(write_markers(&d, 0, 100) == 0);
	CHECK(drv_stop(&d, 12, st) == 0);
	CHECK(st[last].error < 0);
	close(d.cap[last].lfd);
	d.cap[last].lfd = -1; /* left out of the stream checks */
	CHECK(check_session(&d, 12, 100, st, 0, NULL) == 0);
	/* The next session on every port works again. */
	CHECK(drv_up_port(&d, last) == 0);
	CHECK(drv_start(&d, 13) == 0);
	CHECK(write_markers(&d, 0, 100) == 0);
	CHECK(drv_stop(&d, 13, st) == 0);
	CHECK(check_session(&d, 13, 100, st, 0, NULL) == 0);
	CHECK_INT(drv_down(&d), ==, 0);
}

TEST(missing_data_port)
{
	_cleanup_drv_ struct drv d = { 0 };
	struct vt_cpu_stats st[MAXCPU];
	unsigned last;

	CHECK(get_nprocs_conf() >= 2); /* the case needs a CPU with and one without a port */
	last = (unsigned)get_nprocs_conf() - 1;
	CHECK(drv_up(&d, "missing", (int)last) == 0);
	CHECK(drv_start(&d, 9) == 0);
	/* START's OK names the CPU that cannot stream. */
	CHECK(d.started_known);
	CHECK_INT(d.started[last].error, ==, -ENOENT);
	CHECK_INT(d.started[0].error, ==, 0);
	CHECK(write_markers(&d, 0, 100) == 0);
	CHECK(drv_stop(&d, 9, st) == 0);
	CHECK_INT(st[last].error, ==, -ENOENT);
	CHECK_INT(st[last].pages_sent, ==, 0);
	CHECK(check_session(&d, 9, 100, st, 0, NULL) == 0);
	CHECK_INT(drv_down(&d), ==, 0);
}

/* A host that accepts a data port but never reads it: STOP still answers, naming that CPU. */
TEST(stop_with_unread_port)
{
	_cleanup_drv_ struct drv d = { 0 };
	struct vt_cpu_stats st[MAXCPU];
	struct rmsg r;
	unsigned last;

	CHECK(get_nprocs_conf() >= 2);
	last = (unsigned)get_nprocs_conf() - 1;
	CHECK(drv_up(&d, "stall", -1) == 0);

	CHECK(drv_expect(&d, VT_MSG_OK, drv_config(&d, "sched", "mono", 4096), &r) == 0);
	rmsg_free(&r);
	d.cap[last].stall = true;
	CHECK(drv_start(&d, 21) == 0);
	CHECK(write_markers(&d, 0, 20000) == 0); /* far more than a socket buffer holds */
	CHECK(drv_stop(&d, 21, st) == 0);
	CHECK_INT(st[last].error, ==, -ECANCELED);
	CHECK_INT(st[0].error, ==, 0);
	CHECK(log_count(&d, "still draining their rings into their ports") == 1);
	/* The next session streams on every CPU again. */
	d.cap[last].stall = false;
	CHECK(drv_start(&d, 22) == 0);
	CHECK(write_markers(&d, 0, 100) == 0);
	CHECK(drv_stop(&d, 22, st) == 0);
	CHECK_INT(st[last].error, ==, 0);
	CHECK_INT(drv_down(&d), ==, 0);
}

TEST(bad_config_and_probe_clocks)
{
	static const struct {
		const char *events, *clock, *named;
	} bad[] = {
		{ "sched:nope_not_here", NULL, "sched:nope_not_here" },
		{ "sched:sched_switch,nosuchsys", NULL, "nosuchsys:*" },
		{ "sched:sched switch", NULL, "sched:sched switch" },
		{ NULL, "bogusclock", "bogusclock" },
		{ "sched:sched_switch", "bogusclock", "bogusclock" },
	};
	_cleanup_drv_ struct drv d = { 0 };
	struct rmsg r;
	_cleanup_free_ char *before = NULL, *after = NULL, *clock = NULL;
	uint32_t seq;

	CHECK(drv_up(&d, "badcfg", -1) == 0);
	CHECK(drv_hello(&d, &r) == 0);
	CHECK(vt_msg_str(&r.m, VT_A_EVENTS, 4096, &before) == 0);
	rmsg_free(&r);
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		_cleanup_free_ char *msg = NULL;

		seq = drv_config(&d, bad[i].events, bad[i].clock, 0);
		CHECK(drv_error(&d, seq, &msg) > 0);
		if (!strstr(msg, bad[i].named))
			fprintf(stderr, "error '%s' does not name '%s'\n", msg, bad[i].named);
		CHECK(strstr(msg, bad[i].named) != NULL);
	}
	seq = drv_config(&d, NULL, NULL, 1u << 31);
	_cleanup_free_ char *m2 = NULL;
	CHECK(drv_error(&d, seq, &m2) == ERANGE);
	/* Nothing half-applied. */
	CHECK(drv_hello(&d, &r) == 0);
	CHECK(vt_msg_str(&r.m, VT_A_EVENTS, 4096, &after) == 0);
	CHECK(vt_msg_str(&r.m, VT_A_CLOCK, 4096, &clock) == 0);
	rmsg_free(&r);
	CHECK_STR(after, before);
	CHECK_STR(clock, "mono");
	/* A clock without a user-space reading is refused by PROBE, clearly. */
	seq = drv_config(&d, NULL, "global", 0);
	CHECK(drv_expect(&d, VT_MSG_OK, seq, &r) == 0);
	rmsg_free(&r);
	{
		struct vt_buf b = { 0 };
		_cleanup_free_ char *msg = NULL;

		seq = ++d.seq;
		vt_msg_begin(&b, VT_MSG_PROBE, seq);
		vt_put_u64(&b, VT_A_PROBE_ID, 1);
		vt_msg_end(&b);
		drv_send(&d, &b);
		CHECK(drv_error(&d, seq, &msg) == EOPNOTSUPP);
		CHECK(strstr(msg, "'global'") != NULL);
	}
	CHECK_INT(drv_down(&d), ==, 0);
}

/* Raw bytes on the control port. */
static void drv_raw(struct drv *d, const void *p, size_t len)
{
	if (util_write_full(d->ctl_fd, p, len) < 0)
		fprintf(stderr, "raw write failed\n");
}

static void hdr_bytes(uint8_t *h, uint32_t magic, uint16_t ver, uint16_t type, uint32_t seq, uint32_t len)
{
	memcpy(h, &magic, 4);
	memcpy(h + 4, &ver, 2);
	memcpy(h + 6, &type, 2);
	memcpy(h + 8, &seq, 4);
	memcpy(h + 12, &len, 4);
}

TEST(hostile_frames)
{
	_cleanup_drv_ struct drv d = { 0 };
	struct rmsg r;
	uint8_t f[64];
	char *msg = NULL;

	CHECK(drv_up(&d, "hostile", -1) == 0);
	drv_raw(&d, "garbage here\n", 13);
	CHECK(drv_error(&d, 0, &msg) == EBADMSG);
	free(msg);
	hdr_bytes(f, VT_PROTO_MAGIC, 1, VT_MSG_HELLO, 99, 0x7fffffff);
	drv_raw(&d, f, 16);
	CHECK(drv_error(&d, 99, &msg) == EMSGSIZE);
	free(msg);
	hdr_bytes(f, VT_PROTO_MAGIC, 9, VT_MSG_HELLO, 98, 0);
	drv_raw(&d, f, 16);
	CHECK(drv_error(&d, 98, &msg) == EPROTONOSUPPORT);
	free(msg);
	hdr_bytes(f, VT_PROTO_MAGIC, 1, 200, 7, 0);
	drv_raw(&d, f, 16);
	CHECK(drv_error(&d, 7, &msg) == EOPNOTSUPP);
	free(msg);
	/* An attribute claiming more bytes than the frame holds. */
	hdr_bytes(f, VT_PROTO_MAGIC, 1, VT_MSG_CONFIG, 8, 12);
	uint16_t tag = VT_A_EVENTS, fl = 0;
	uint32_t alen = 1000;
	memcpy(f + 16, &tag, 2);
	memcpy(f + 18, &fl, 2);
	memcpy(f + 20, &alen, 4);
	memcpy(f + 24, "abcd", 4);
	drv_raw(&d, f, 28);
	CHECK(drv_error(&d, 8, &msg) == EBADMSG);
	free(msg);
	/* START without a session id. */
	uint32_t seq = drv_simple(&d, VT_MSG_START, UINT64_MAX);
	CHECK(drv_error(&d, seq, &msg) == EINVAL);
	free(msg);
	CHECK(drv_hello(&d, &r) == 0);
	rmsg_free(&r);
	/* A truncated frame, then the host goes away: the next host is served from a clean state. */
	hdr_bytes(f, VT_PROTO_MAGIC, 1, VT_MSG_HELLO, 5, 40);
	drv_raw(&d, f, 26);
	close(d.ctl_fd);
	vt_reader_free(&d.rd);
	vt_reader_init(&d.rd);
	d.ctl_fd = accept_wait(d.ctl_lfd);
	CHECK(d.ctl_fd >= 0);
	CHECK(drv_hello(&d, &r) == 0);
	rmsg_free(&r);
	CHECK_INT(drv_down(&d), ==, 0);
	CHECK(!instance_exists(&d));
}

/* Runs the agent with args and a given uid; returns its exit status, stderr in *ret_err. */
static int run_agent(uid_t uid, const char *log, const char *const argv[], char **ret_err)
{
	int status = -1;
	pid_t pid = fork();

	if (pid == 0) {
		if (uid && (setgid(uid) < 0 || setuid(uid) < 0))
			_exit(126);
		int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0666);
		dup2(fd, 2);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	waitpid(pid, &status, 0);
	if (util_read_file(log, 1 << 16, ret_err, NULL) < 0)
		*ret_err = strdup("");
	unlink(log);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Started before its control port exists (a port hot-plugged into a running VM): it says what
 * is missing, waits, and serves the port once it appears. */
TEST(control_port_attached_later)
{
	_cleanup_drv_ struct drv d = { .ctl_lfd = -1, .ctl_fd = -1 };
	struct rmsg r;
	char port[64];

	CHECK(tracefs_ready());
	d.ncpus = (unsigned)get_nprocs_conf();
	CHECK(d.ncpus <= MAXCPU);
	snprintf(d.dir, sizeof(d.dir), "/tmp/vt-agent-XXXXXX");
	CHECK(mkdtemp(d.dir) != NULL);
	snprintf(d.instance, sizeof(d.instance), "%s_late", instance_prefix());
	snprintf(d.log, sizeof(d.log), "%s/agent.log", d.dir);
	for (unsigned c = 0; c < MAXCPU; c++)
		d.pcap[c].lfd = -1;
	const char *argv[] = { (char *)agent_path(), "--ports-dir", d.dir, "--instance", d.instance, "--subbuf-kb", "0",
			       "-v", NULL };
	d.pid = spawn(d.log, argv);
	for (int i = 0; i < 500 && !log_count(&d, "waiting for it to appear"); i++)
		nanosleep(&(struct timespec){ .tv_nsec = 20000000 }, NULL);
	CHECK(log_count(&d, "no control port agent-ctl-path") == 1);
	CHECK(log_count(&d, "add the virtio-serial channels") == 1);
	CHECK(kill(d.pid, 0) == 0); /* still there, waiting */
	for (unsigned c = 0; c < d.ncpus; c++) {
		snprintf(port, sizeof(port), "trace-path-cpu%u", c);
		d.cap[c].lfd = listen_at(d.dir, port);
	}
	d.ctl_lfd = listen_at(d.dir, "agent-ctl-path");
	d.ctl_fd = accept_wait(d.ctl_lfd); /* the agent's backoff is at most a few seconds */
	CHECK(d.ctl_fd >= 0);
	vt_reader_init(&d.rd);
	CHECK(drv_hello(&d, &r) == 0);
	rmsg_free(&r);
	CHECK(drv_start(&d, 31) == 0);
	CHECK(write_markers(&d, 0, 50) == 0);
	{
		struct vt_cpu_stats st[MAXCPU];

		CHECK(drv_stop(&d, 31, st) == 0);
		CHECK(check_session(&d, 31, 50, st, 0, NULL) == 0);
	}
	CHECK_INT(drv_down(&d), ==, 0);
}

TEST(user_errors_say_what_to_do)
{
	char dir[] = "/tmp/vt-agent-err-XXXXXX";
	char log[64], inst[64], ipath[128];
	char *err = NULL;

	CHECK(tracefs_ready());
	CHECK(mkdtemp(dir) != NULL);
	chmod(dir, 0777);
	snprintf(log, sizeof(log), "%s/log", dir);
	snprintf(inst, sizeof(inst), "%s_err", instance_prefix());
	snprintf(ipath, sizeof(ipath), TRACEFS "/instances/%s", inst);
	const char *no_ports[] = { (char *)agent_path(), "--ports-dir", dir, "--instance", inst, NULL };
	const char *no_tracefs[] = { (char *)agent_path(), "--tracefs", dir, "--ports-dir", dir,
			       "--instance", inst, NULL };
	CHECK_INT(run_agent(0, log, no_tracefs, &err), ==, 1);
	CHECK(strstr(err, "mount -t tracefs") != NULL);
	free(err);
	CHECK_INT(run_agent(65534, log, no_ports, &err), ==, 1);
	CHECK(strstr(err, "must run as root") != NULL);
	free(err);
	rmdir(dir);
}
