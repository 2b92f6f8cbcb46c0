// SPDX-License-Identifier: GPL-2.0-only
/* Drives the real trace-agent on the host's tracefs through common/proto + common/marker:
 * the test plays the host. Ports are unix sockets bound here in a temporary ports dir (the
 * agent connects to sockets it finds there); each case runs its own agent and its own
 * ftrace instance PREFIX_<case>, PREFIX = $VT_TEST_INSTANCE_PREFIX or vt_agent_test. Needs
 * root (the agent does). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysinfo.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "marker.h"
#include "perf_events.h"
#include "proto.h"
#include "util.h"

#define TRACEFS "/sys/kernel/tracing"
#define MAXCPU 64
#define WAIT_MS 60000 /* a guard against hangs, not a timing assertion */

struct capture {
	int lfd;
	pthread_t th;
	bool running;
	bool unplug; /* close the connection at once, like a port going away */
	bool stall; /* accept, read nothing until the agent closes its end (a host not reading) */
	unsigned delay_ms; /* accept, then read nothing for this long (a host slow to read) */
	uint8_t *data;
	size_t len, cap;
	int err;
};

struct drv {
	char dir[64];
	char instance[64];
	char log[128];
	int ctl_lfd, ctl_fd;
	pid_t pid;
	unsigned ncpus;
	uint32_t seq;
	struct vt_reader rd;
	struct capture cap[MAXCPU];
	struct vt_cpu_stats started[MAXCPU]; /* START's OK: which CPUs stream (error 0) */
	bool started_known;
	struct capture pcap[MAXCPU]; /* perf-path-cpuN (drv_perf_ports), lfd -1 when absent */
	struct vt_perf_stats perf_started[MAXCPU]; /* START's OK: PERF_STATS */
	bool perf_started_known;
	struct vt_perf_stats perf_stopped[MAXCPU]; /* STOPPED: PERF_STATS */
	bool perf_stopped_known;
};

/* A received message, copied out of the reader. */
struct rmsg {
	struct vt_msg m;
	uint8_t *buf;
};

static void rmsg_free(struct rmsg *r)
{
	free(r->buf);
	r->buf = NULL;
}

static int listen_at(const char *dir, const char *name)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%s", dir, name);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 4) < 0) {
		perror(sa.sun_path);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

static int accept_wait(int lfd)
{
	struct pollfd p = { .fd = lfd, .events = POLLIN };

	if (poll(&p, 1, WAIT_MS) != 1)
		return -1;
	return accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
}

static void *capture_thread(void *arg)
{
	struct capture *c = arg;
	int fd = accept_wait(c->lfd);

	if (fd < 0) {
		c->err = -ETIMEDOUT;
		return NULL;
	}
	if (c->unplug) {
		close(fd);
		return NULL;
	}
	if (c->stall) {
		struct pollfd p = { .fd = fd, .events = POLLRDHUP };

		(void)poll(&p, 1, WAIT_MS);
	}
	if (c->delay_ms)
		nanosleep(&(struct timespec){ .tv_sec = c->delay_ms / 1000,
					      .tv_nsec = (long)(c->delay_ms % 1000) * 1000000 }, NULL);
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t n;

		if (c->cap - c->len < 65536) {
			c->cap = c->cap ? c->cap * 2 : 1 << 20;
			c->data = realloc(c->data, c->cap);
		}
		if (poll(&p, 1, WAIT_MS) != 1) {
			c->err = -ETIMEDOUT;
			break;
		}
		n = read(fd, c->data + c->len, c->cap - c->len);
		if (n <= 0)
			break;
		c->len += (size_t)n;
	}
	close(fd);
	return NULL;
}

static const char *agent_path(void)
{
	const char *p = getenv("TRACE_AGENT");

	return p ? p : "build/agent/trace-agent";
}

/* Instance names: a prefix per engineer keeps parallel runs on one host apart. */
static const char *instance_prefix(void)
{
	const char *p = getenv("VT_TEST_INSTANCE_PREFIX");

	return p && *p ? p : "vt_agent_test";
}

static bool tracefs_ready(void)
{
	if (access(TRACEFS "/instances", F_OK) == 0)
		return true;
	return mount("nodev", TRACEFS, "tracefs", 0, NULL) == 0;
}

/* Spawns the agent: returns its pid. */
static pid_t spawn(const char *log, const char *const argv[])
{
	pid_t pid = fork();

	if (pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		int null = open("/dev/null", O_WRONLY);

		dup2(null, 1); /* never hold the test runner's stdout */
		dup2(fd, 2);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	return pid;
}

/* Ports dir with all sockets except skip_cpu (-1: none), then the agent, then its connection. */
static int drv_up(struct drv *d, const char *name, int skip_cpu)
{
	char port[64];

	*d = (struct drv){ .ctl_lfd = -1, .ctl_fd = -1, .ncpus = (unsigned)get_nprocs_conf() };
	if (!tracefs_ready() || d->ncpus > MAXCPU)
		return -1;
	snprintf(d->dir, sizeof(d->dir), "/tmp/vt-agent-XXXXXX");
	if (!mkdtemp(d->dir))
		return -1;
	snprintf(d->instance, sizeof(d->instance), "%s_%s", instance_prefix(), name);
	snprintf(d->log, sizeof(d->log), "%s/agent.log", d->dir);
	d->ctl_lfd = listen_at(d->dir, "agent-ctl-path");
	for (unsigned c = 0; c < d->ncpus; c++) {
		d->cap[c].lfd = -1;
		d->pcap[c].lfd = -1;
		if ((int)c == skip_cpu)
			continue;
		snprintf(port, sizeof(port), "trace-path-cpu%u", c);
		d->cap[c].lfd = listen_at(d->dir, port);
	}
	const char *argv[] = { (char *)agent_path(), "--ports-dir", d->dir, "--instance", d->instance,
			 "-vv", NULL };
	d->pid = spawn(d->log, argv);
	d->ctl_fd = accept_wait(d->ctl_lfd);
	vt_reader_init(&d->rd);
	return d->ctl_fd >= 0 ? 0 : -1;
}

/* Binds cpu's data port again (after a test unplugged it). */
static int drv_up_port(struct drv *d, unsigned cpu)
{
	char port[160];

	snprintf(port, sizeof(port), "%s/trace-path-cpu%u", d->dir, cpu);
	unlink(port);
	snprintf(port, sizeof(port), "trace-path-cpu%u", cpu);
	d->cap[cpu].unplug = false;
	d->cap[cpu].lfd = listen_at(d->dir, port);
	return d->cap[cpu].lfd >= 0 ? 0 : -1;
}

static void drv_print_log(const struct drv *d)
{
	_cleanup_free_ char *s = NULL;

	if (util_read_file(d->log, 1 << 20, &s, NULL) == 0)
		fprintf(stderr, "--- agent log:\n%s---\n", s);
}

/* SIGTERM the agent: its exit status (or -1). */
static int drv_down(struct drv *d)
{
	int status = 0;

	if (d->pid > 0) {
		status = -1;
		kill(d->pid, SIGTERM);
		waitpid(d->pid, &status, 0);
		d->pid = 0;
	}
	if (d->ctl_fd >= 0)
		close(d->ctl_fd);
	if (d->ctl_lfd >= 0)
		close(d->ctl_lfd);
	for (unsigned c = 0; c < d->ncpus; c++) {
		if (d->cap[c].lfd >= 0)
			close(d->cap[c].lfd);
		free(d->cap[c].data);
		if (d->pcap[c].lfd >= 0)
			close(d->pcap[c].lfd);
		free(d->pcap[c].data);
	}
	vt_reader_free(&d->rd);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		drv_print_log(d);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", d->dir);
	if (d->dir[0] && system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", d->dir);
	d->dir[0] = '\0';
	d->ctl_fd = d->ctl_lfd = -1;
	d->ncpus = 0;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* A failed check returns from the case: the agent and the ports dir still go. */
static void drv_cleanup(struct drv *d)
{
	if (d->dir[0])
		(void)drv_down(d);
}
#define _cleanup_drv_ _cleanup_(drv_cleanup)

static bool instance_exists(const struct drv *d)
{
	char p[128];

	snprintf(p, sizeof(p), TRACEFS "/instances/%s", d->instance);
	return access(p, F_OK) == 0;
}

static int drv_send(struct drv *d, struct vt_buf *b)
{
	int r = util_write_full(d->ctl_fd, b->data, b->len);

	vt_buf_free(b);
	return r;
}

/* Sends a message with no attributes (or a u64 SESSION when session != ~0). */
static uint32_t drv_simple(struct drv *d, uint16_t type, uint64_t session)
{
	struct vt_buf b = { 0 };
	uint32_t seq = ++d->seq;

	vt_msg_begin(&b, type, seq);
	if (session != UINT64_MAX)
		vt_put_u64(&b, VT_A_SESSION, session);
	vt_msg_end(&b);
	drv_send(d, &b);
	return seq;
}

/* Next frame from the agent (legacy lines are not expected): 0 or -1 on timeout/EOF. */
static int drv_recv(struct drv *d, struct rmsg *ret)
{
	for (;;) {
		struct pollfd p = { .fd = d->ctl_fd, .events = POLLIN };
		struct vt_msg m;
		char legacy;
		uint8_t *sp;
		size_t room;
		ssize_t n;

		if (vt_reader_next(&d->rd, &m, &legacy) == VT_READ_MSG) {
			ret->buf = malloc(m.len + 1);
			memcpy(ret->buf, m.payload, m.len);
			ret->m = m;
			ret->m.payload = ret->buf;
			return 0;
		}
		if (poll(&p, 1, WAIT_MS) != 1 || vt_reader_space(&d->rd, &sp, &room) < 0)
			return -1;
		n = read(d->ctl_fd, sp, room);
		if (n <= 0)
			return -1;
		vt_reader_commit(&d->rd, (size_t)n);
	}
}

/* Receives a reply of the wanted type and seq. */
static int drv_expect(struct drv *d, uint16_t type, uint32_t seq, struct rmsg *ret)
{
	if (drv_recv(d, ret) < 0)
		return -1;
	if (ret->m.hdr.type != type || ret->m.hdr.seq != seq) {
		_cleanup_free_ char *msg = NULL;

		vt_msg_str(&ret->m, VT_A_MESSAGE, 4096, &msg);
		fprintf(stderr, "got %s seq %u (%s), wanted %s seq %u\n", vt_msg_type_name(ret->m.hdr.type),
			ret->m.hdr.seq, msg ? msg : "", vt_msg_type_name(type), seq);
		rmsg_free(ret);
		return -1;
	}
	return 0;
}

/* An ERROR reply for seq: its errno, message in *ret_msg. -1 otherwise. */
static int drv_error(struct drv *d, uint32_t seq, char **ret_msg)
{
	struct rmsg r;
	uint32_t e = 0;

	if (drv_expect(d, VT_MSG_ERROR, seq, &r) < 0)
		return -1;
	vt_msg_u32(&r.m, VT_A_ERRNO, &e);
	if (vt_msg_str(&r.m, VT_A_MESSAGE, 4096, ret_msg) < 0)
		*ret_msg = strdup("");
	rmsg_free(&r);
	return (int)e;
}

static int drv_hello(struct drv *d, struct rmsg *ret)
{
	struct vt_buf b = { 0 };
	uint32_t seq = ++d->seq;

	vt_msg_begin(&b, VT_MSG_HELLO, seq);
	vt_put_u32(&b, VT_A_VERSION, VT_PROTO_VERSION);
	vt_msg_end(&b);
	drv_send(d, &b);
	return drv_expect(d, VT_MSG_HELLO, seq, ret);
}

/* CONFIG with the given attributes (NULL or 0: attribute left out). */
static uint32_t drv_config_all(struct drv *d, const char *events, const char *clock, uint32_t kb,
			       const char *tracer, const char *filter)
{
	struct vt_buf b = { 0 };
	uint32_t seq = ++d->seq;

	vt_msg_begin(&b, VT_MSG_CONFIG, seq);
	if (events)
		vt_put_str(&b, VT_A_EVENTS, events);
	if (clock)
		vt_put_str(&b, VT_A_CLOCK, clock);
	if (kb)
		vt_put_u32(&b, VT_A_BUFFER_KB, kb);
	if (tracer)
		vt_put_str(&b, VT_A_TRACER, tracer);
	if (filter)
		vt_put_str(&b, VT_A_FTRACE_FILTER, filter);
	vt_msg_end(&b);
	drv_send(d, &b);
	return seq;
}

/* CONFIG with a tracer and a function filter (either NULL: attribute left out). */
static uint32_t drv_config_tracer(struct drv *d, const char *tracer, const char *filter)
{
	return drv_config_all(d, NULL, NULL, 0, tracer, filter);
}

static uint32_t drv_config(struct drv *d, const char *events, const char *clock, uint32_t kb)
{
	return drv_config_all(d, events, clock, kb, NULL, NULL);
}

static void capture_begin(struct drv *d)
{
	for (unsigned c = 0; c < 2 * d->ncpus; c++) {
		struct capture *cp = c < d->ncpus ? &d->cap[c] : &d->pcap[c - d->ncpus];

		free(cp->data);
		cp->data = NULL;
		cp->len = cp->cap = 0;
		cp->err = 0;
		cp->running = cp->lfd >= 0 && pthread_create(&cp->th, NULL, capture_thread, cp) == 0;
	}
}

static void capture_end(struct drv *d)
{
	for (unsigned c = 0; c < d->ncpus; c++) {
		if (d->cap[c].running)
			pthread_join(d->cap[c].th, NULL);
		if (d->pcap[c].running)
			pthread_join(d->pcap[c].th, NULL);
		d->cap[c].running = d->pcap[c].running = false;
	}
}

static int drv_start(struct drv *d, uint64_t session)
{
	struct rmsg r;
	uint32_t seq;

	struct vt_attr a;

	capture_begin(d);
	seq = drv_simple(d, VT_MSG_START, session);
	if (drv_expect(d, VT_MSG_OK, seq, &r) < 0)
		return -1;
	d->started_known = vt_msg_find(&r.m, VT_A_CPU_STATS, &a) == 0 && a.len == d->ncpus * sizeof(d->started[0]);
	if (d->started_known)
		memcpy(d->started, a.data, a.len);
	d->perf_started_known = vt_msg_find(&r.m, VT_A_PERF_STATS, &a) == 0 &&
				a.len == d->ncpus * sizeof(d->perf_started[0]);
	if (d->perf_started_known)
		memcpy(d->perf_started, a.data, a.len);
	rmsg_free(&r);
	return 0;
}

/* STOP; the STOPPED stats are copied to stats[ncpus]. */
static int drv_stop(struct drv *d, uint64_t session, struct vt_cpu_stats *stats)
{
	struct rmsg r;
	struct vt_attr a;
	uint64_t sid = 0;
	uint32_t seq = drv_simple(d, VT_MSG_STOP, UINT64_MAX);
	int ret = -1;

	if (drv_expect(d, VT_MSG_STOPPED, seq, &r) < 0) {
		capture_end(d);
		return -1;
	}
	capture_end(d);
	d->perf_stopped_known = vt_msg_find(&r.m, VT_A_PERF_STATS, &a) == 0 &&
				a.len == d->ncpus * sizeof(d->perf_stopped[0]);
	if (d->perf_stopped_known)
		memcpy(d->perf_stopped, a.data, a.len);
	if (vt_msg_u64(&r.m, VT_A_SESSION, &sid) == 0 && sid == session &&
	    vt_msg_find(&r.m, VT_A_CPU_STATS, &a) == 0 && a.len == d->ncpus * sizeof(*stats)) {
		memcpy(stats, a.data, a.len);
		ret = 0;
	}
	rmsg_free(&r);
	return ret;
}

/* ---- a minimal ring-page walker for the checks (common/ftrace_page comes separately) ---- */

struct walk {
	uint16_t print_id;
	unsigned cpu;
	uint64_t events;    /* data events */
	uint64_t pages;     /* ring pages */
	uint64_t next_seq;  /* next "vt-seq <cpu> <n>" expected */
	uint64_t bad_seq;   /* markers out of order, duplicated or from another cpu */
	uint64_t probes;    /* "vt-probe <probe_id>" marks seen */
	uint64_t flush_markers; /* flush markers of the session (skipped) */
	uint64_t probe_id;
	bool bad_page;
	uint16_t count_id;          /* events of this id: counted, ip (u64 at 8) checked */
	uint64_t counted, ip_lo, ip_hi, ip_outside;
};

static uint16_t print_event_id(void)
{
	_cleanup_free_ char *s = NULL;
	char *p;

	if (util_read_file(TRACEFS "/events/ftrace/print/format", 1 << 16, &s, NULL) < 0)
		return 0;
	p = strstr(s, "ID: ");
	return p ? (uint16_t)atoi(p + 4) : 0;
}

static void walk_print(struct walk *w, const uint8_t *data, size_t len)
{
	char text[128];
	unsigned cpu;
	unsigned long long n;

	if (len <= 16)
		return;
	snprintf(text, sizeof(text), "%.*s", (int)MIN(len - 16, sizeof(text) - 1), (const char *)data + 16);
	if (sscanf(text, "vt-seq %u %llu", &cpu, &n) == 2) {
		if (cpu != w->cpu || n != w->next_seq)
			w->bad_seq++;
		w->next_seq = n + 1;
	} else if (sscanf(text, "vt-probe %llu", &n) == 1 && n == w->probe_id) {
		w->probes++;
	}
}

static void walk_page(struct walk *w, const uint8_t *page, size_t psize)
{
	uint64_t commit;
	size_t off = 16, end;

	memcpy(&commit, page + 8, 8);
	end = 16 + (commit & ((1u << 27) - 1));
	if (end > psize) {
		w->bad_page = true;
		return;
	}
	while (off + 4 <= end) {
		uint32_t h, alen;
		unsigned type;
		size_t size;

		memcpy(&h, page + off, 4);
		type = h & 31;
		if (type == 29 && (h >> 5) == 0)
			break; /* padding to the end of the page */
		if (type >= 30) {
			size = 8;
		} else if (type == 29 || type == 0) {
			if (off + 8 > end) {
				w->bad_page = true;
				return;
			}
			memcpy(&alen, page + off + 4, 4);
			size = 4 + (size_t)alen;
		} else {
			size = 4 + 4 * (size_t)type;
		}
		if (size < 8 && type != 30 && type != 31 && type == 0) {
			w->bad_page = true;
			return;
		}
		if (off + size > end) {
			w->bad_page = true;
			return;
		}
		if (type < 29) {
			const uint8_t *data = page + off + (type ? 4 : 8);
			size_t dlen = size - (type ? 4 : 8);
			uint16_t id;

			w->events++;
			memcpy(&id, data, 2);
			if (dlen >= 2 && id == w->print_id)
				walk_print(w, data, dlen);
			if (dlen >= 16 && w->count_id && id == w->count_id) {
				uint64_t ip;

				memcpy(&ip, data + 8, 8);
				w->counted++;
				w->ip_outside += ip < w->ip_lo || ip >= w->ip_hi;
			}
		}
		off += size;
	}
}

/* Checks one CPU's stream: begin marker, ring pages, end marker agreeing with stats. */
static int check_stream(const struct capture *c, uint32_t psize, uint64_t session, unsigned cpu,
			const struct vt_cpu_stats *st, struct walk *w)
{
	struct vt_marker b, e;
	size_t n;

	w->cpu = cpu;
	if (c->err || c->len % psize || c->len < 2 * psize) {
		fprintf(stderr, "cpu%u: stream of %zu bytes (err %d)\n", cpu, c->len, c->err);
		return -1;
	}
	n = c->len / psize;
	if (vt_marker_decode(c->data, psize, &b) != 1 || b.kind != VT_MARKER_BEGIN ||
	    b.session_id != session || b.cpu != cpu)
		return -2;
	if (vt_marker_decode(c->data + (n - 1) * psize, psize, &e) != 1 || e.kind != VT_MARKER_END ||
	    e.session_id != session || e.cpu != cpu)
		return -3;
	for (size_t i = 1; i + 1 < n; i++) {
		struct vt_marker f;

		if (vt_marker_decode(c->data + i * psize, psize, &f) == 1 && f.kind == VT_MARKER_FLUSH &&
		    f.session_id == session && f.cpu == cpu) {
			w->flush_markers++; /* FLUSH's answer: not a ring page */
			continue;
		}
		walk_page(w, c->data + i * psize, psize);
		w->pages++;
	}
	if (w->bad_page)
		return -4;
	if (e.stats.pages_sent != w->pages || st->pages_sent != w->pages ||
	    memcmp(&e.stats, st, sizeof(*st)) != 0)
		return -5;
	if (st->read_events != w->events) {
		fprintf(stderr, "cpu%u: %llu events in the pages, stats say read events %llu\n", cpu,
			(unsigned long long)w->events, (unsigned long long)st->read_events);
		return -6;
	}
	if (st->error || st->entries || st->overrun || st->dropped_events) {
		fprintf(stderr, "cpu%u: error %d entries %llu overrun %llu dropped %llu\n", cpu, st->error,
			(unsigned long long)st->entries, (unsigned long long)st->overrun,
			(unsigned long long)st->dropped_events);
		return -7;
	}
	return 0;
}

/* Writes count numbered lines (from first) into the instance's trace_marker from each online CPU. */
static int write_markers(const struct drv *d, unsigned first, unsigned count)
{
	char p[128], line[64];
	cpu_set_t all, one;
	int fd;

	snprintf(p, sizeof(p), TRACEFS "/instances/%s/trace_marker", d->instance);
	fd = open(p, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || sched_getaffinity(0, sizeof(all), &all) < 0)
		return -1;
	for (unsigned c = 0; c < d->ncpus; c++) {
		CPU_ZERO(&one);
		CPU_SET(c, &one);
		if (sched_setaffinity(0, sizeof(one), &one) < 0)
			continue;
		for (unsigned i = first; i < first + count; i++) {
			int len = snprintf(line, sizeof(line), "vt-seq %u %u\n", c, i);

			/* Pace the writer a little so the pinned pump gets the CPU: a test wants
			 * no overrun, the agent itself would report one. */
			if (i % 512 == 511)
				nanosleep(&(struct timespec){ .tv_nsec = 1000000 }, NULL);
			if (write(fd, line, (size_t)len) != len) {
				close(fd);
				return -1;
			}
		}
	}
	sched_setaffinity(0, sizeof(all), &all);
	close(fd);
	return 0;
}

/* A whole-session check on every CPU with a port: markers 0..count-1 once and in order. */
static int check_session(struct drv *d, uint64_t session, unsigned count, const struct vt_cpu_stats *st,
			 uint64_t probe_id, uint64_t *ret_probes)
{
	uint64_t probes = 0;

	for (unsigned c = 0; c < d->ncpus; c++) {
		struct walk w = { .print_id = print_event_id(), .probe_id = probe_id };
		int r;

		if (d->cap[c].lfd < 0)
			continue;
		r = check_stream(&d->cap[c], 4096, session, c, &st[c], &w);
		if (r < 0 || w.bad_seq || w.next_seq != count) {
			fprintf(stderr, "cpu%u: stream check %d, %llu markers out of order, next %llu of %u\n",
				c, r, (unsigned long long)w.bad_seq, (unsigned long long)w.next_seq, count);
			return -1;
		}
		probes += w.probes;
		printf("cpu%u: %llu ring pages, %llu events, %llu markers\n", c, (unsigned long long)w.pages,
		       (unsigned long long)w.events, (unsigned long long)w.next_seq);
	}
	if (ret_probes)
		*ret_probes = probes;
	return 0;
}

/* A whole META reply: the data of the file named want (NULL if absent), the files counted. */
static int drv_meta(struct drv *d, const char *want, char **ret_data, size_t *ret_len,
		    uint32_t *ret_files)
{
	uint32_t seq = drv_simple(d, VT_MSG_META_REQ, UINT64_MAX), count = 0, files = 0;
	struct rmsg r;

	*ret_data = NULL;
	*ret_len = 0;
	for (;;) {
		_cleanup_free_ char *name = NULL;
		struct vt_attr a;

		if (drv_recv(d, &r) < 0 || r.m.hdr.seq != seq)
			return -1;
		if (r.m.hdr.type == VT_MSG_META_END) {
			vt_msg_u32(&r.m, VT_A_COUNT, &count);
			rmsg_free(&r);
			break;
		}
		if (r.m.hdr.type != VT_MSG_META_FILE || vt_msg_str(&r.m, VT_A_FILE_NAME, 4096, &name) < 0 ||
		    vt_msg_find(&r.m, VT_A_FILE_DATA, &a) < 0) {
			rmsg_free(&r);
			return -1;
		}
		files++;
		if (!*ret_data && !strcmp(name, want)) {
			*ret_data = strndup((const char *)a.data, a.len);
			*ret_len = a.len;
		}
		rmsg_free(&r);
	}
	*ret_files = files;
	return count == files ? 0 : -1;
}

/* The instance's file rel, first line, or "" (static buffer: one use per expression). */
static const char *inst_read(const struct drv *d, const char *rel)
{
	static char line[256];
	_cleanup_free_ char *s = NULL;
	char p[256];

	snprintf(p, sizeof(p), TRACEFS "/instances/%s/%s", d->instance, rel);
	line[0] = '\0';
	if (util_read_file(p, 1 << 16, &s, NULL) == 0)
		snprintf(line, sizeof(line), "%.*s", (int)strcspn(s, "\n"), s);
	return line;
}

/* How many times the agent's log has needle. */
static unsigned log_count(const struct drv *d, const char *needle)
{
	_cleanup_free_ char *s = NULL;
	unsigned n = 0;

	if (util_read_file(d->log, 1 << 22, &s, NULL) < 0)
		return 0;
	for (const char *p = s; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

/* ---- cases ---- */

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
	const char *argv[] = { (char *)agent_path(), "--ports-dir", d.dir, "--instance", d.instance, "-v", NULL };
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

/* ---- guest perf (docs/protocol.md §3) ---- */

/* Binds perf-path-cpuN for every CPU but skip_cpu (-1: none). */
static int drv_perf_ports(struct drv *d, int skip_cpu)
{
	char port[64];

	for (unsigned c = 0; c < d->ncpus; c++) {
		if ((int)c == skip_cpu)
			continue;
		snprintf(port, sizeof(port), "perf-path-cpu%u", c);
		d->pcap[c].lfd = listen_at(d->dir, port);
		if (d->pcap[c].lfd < 0)
			return -1;
	}
	return 0;
}

/* CONFIG with the perf attributes (NULL or 0: left out) and a clock. */
static uint32_t drv_config_perf(struct drv *d, const char *events, uint32_t freq, uint32_t ring_kb,
				const char *clock)
{
	struct vt_buf b = { 0 };
	uint32_t seq = ++d->seq;

	vt_msg_begin(&b, VT_MSG_CONFIG, seq);
	if (clock)
		vt_put_str(&b, VT_A_CLOCK, clock);
	if (events)
		vt_put_str(&b, VT_A_PERF_EVENTS, events);
	if (freq)
		vt_put_u32(&b, VT_A_PERF_FREQ, freq);
	if (ring_kb)
		vt_put_u32(&b, VT_A_PERF_RING_KB, ring_kb);
	vt_msg_end(&b);
	drv_send(d, &b);
	return seq;
}

/* The perf config HELLO reports. */
static int drv_perf_hello(struct drv *d, char **ret_events, uint32_t *ret_freq, uint32_t *ret_kb)
{
	struct rmsg r;
	int e = -1;

	if (drv_hello(d, &r) < 0)
		return -1;
	if (vt_msg_str(&r.m, VT_A_PERF_EVENTS, 4096, ret_events) == 0 &&
	    vt_msg_u32(&r.m, VT_A_PERF_FREQ, ret_freq) == 0 && vt_msg_u32(&r.m, VT_A_PERF_RING_KB, ret_kb) == 0)
		e = 0;
	rmsg_free(&r);
	return e;
}

/* What one perf-path-cpuN stream held. */
struct pwalk {
	uint32_t busy_tid, self_pid;
	struct vt_perf_marker begin, end;
	uint64_t bytes, records, samples, lost_records, lost;
	uint64_t busy_samples, comm_self, mmap_self, bad_id;
	/* perf flush markers (FLUSH's answer): how many, the last one's seq, guest time and counters,
	 * and records after one stamped before its time (the horizon broken) */
	uint64_t flushes, flush_seq, flush_time, before_horizon, flush_records;
};

/* The time of a record of this stream's layout (sample: TIME at 32; else the sample_id trailer). */
static uint64_t pwalk_time(const uint8_t *rec, const struct perf_event_header *h)
{
	uint64_t t;

	memcpy(&t, rec + (h->type == PERF_RECORD_SAMPLE ? 32 : h->size - VT_PERF_SAMPLE_ID_LEN + 8), 8);
	return t;
}

static void pwalk_sideband(struct pwalk *w, const uint8_t *rec, const struct perf_event_header *h)
{
	size_t t = h->size - VT_PERF_SAMPLE_ID_LEN;
	uint32_t pid;
	uint64_t v;

	memcpy(&v, rec + h->size - 8, 8); /* IDENTIFIER ends the sample_id trailer */
	w->bad_id += v != w->begin.ids[0];
	memcpy(&pid, rec + 8, 4);
	if (h->type == PERF_RECORD_LOST && h->size == 24 + VT_PERF_SAMPLE_ID_LEN) {
		memcpy(&v, rec + 16, 8);
		w->lost_records++;
		w->lost += v;
	} else if (h->type == PERF_RECORD_COMM && t > 16 && memchr(rec + 16, 0, t - 16)) {
		w->comm_self += pid == w->self_pid && !strcmp((const char *)rec + 16, "agent-driver");
	} else if (h->type == PERF_RECORD_MMAP2 && t > 72 && memchr(rec + 72, 0, t - 72)) {
		w->mmap_self += pid == w->self_pid && strstr((const char *)rec + 72, "agent-driver") != NULL;
	}
}

/* One record at rec (size checked): 0, or -1 if its layout is wrong. */
static int pwalk_record(struct pwalk *w, const uint8_t *rec, const struct perf_event_header *h)
{
	uint64_t id, nr;
	uint32_t tid;

	w->records++;
	/* The agent's task records (synthesized at START) carry the START time, and an interrupt's
	 * record may be reserved after a later one; neither comes after a flush marker. */
	w->before_horizon += w->flushes && pwalk_time(rec, h) < w->flush_time;
	if (h->type != PERF_RECORD_SAMPLE) {
		if (h->size < 8 + VT_PERF_SAMPLE_ID_LEN)
			return -1;
		pwalk_sideband(w, rec, h);
		return 0;
	}
	if (h->size < 8 + VT_PERF_SAMPLE_HEAD + 8)
		return -1;
	memcpy(&nr, rec + 8 + VT_PERF_SAMPLE_HEAD, 8);
	if (nr > VT_PERF_MAX_STACK || h->size != 8 + VT_PERF_SAMPLE_HEAD + 8 + 8 * nr)
		return -1;
	memcpy(&id, rec + 8, 8);
	memcpy(&tid, rec + 28, 4);
	w->samples++;
	w->bad_id += id != w->begin.ids[0];
	w->busy_samples += tid == w->busy_tid;
	return 0;
}

/* Checks one CPU's perf stream: begin marker, well-formed records, end marker. */
static int check_perf_stream(const struct capture *c, uint64_t session, unsigned cpu, struct pwalk *w)
{
	const size_t ps = 4096;
	struct vt_marker b, e;
	const uint8_t *p;

	if (c->err || c->len < 2 * ps) {
		fprintf(stderr, "cpu%u: perf stream of %zu bytes (err %d)\n", cpu, c->len, c->err);
		return -1;
	}
	if (vt_marker_decode(c->data, ps, &b) != 1 || b.kind != VT_MARKER_PERF_BEGIN || b.session_id != session ||
	    b.cpu != cpu || vt_marker_decode_perf(c->data, ps, &b, &w->begin) < 0)
		return -2;
	if (w->begin.nr_ids != 1 || !w->begin.ids[0] || w->begin.clockid != CLOCK_MONOTONIC)
		return -3;
	p = c->data + c->len - ps;
	if (vt_marker_decode(p, ps, &e) != 1 || e.kind != VT_MARKER_PERF_END || e.session_id != session ||
	    e.cpu != cpu || vt_marker_decode_perf(p, ps, &e, &w->end) < 0)
		return -4;
	w->bytes = c->len - 2 * ps;
	for (size_t off = 0; off < w->bytes;) {
		struct perf_event_header h;

		if (w->bytes - off < sizeof(h))
			return -5;
		memcpy(&h, c->data + ps + off, sizeof(h));
		if (w->bytes - off >= ps && !memcmp(c->data + ps + off, "VIRTMARK", 8)) {
			struct vt_marker fm;
			struct vt_perf_marker pm;
			struct vt_flush_marker f;

			if (vt_marker_decode(c->data + ps + off, ps, &fm) != 1 || fm.kind != VT_MARKER_PERF_FLUSH ||
			    fm.session_id != session || fm.cpu != cpu ||
			    vt_marker_decode_perf(c->data + ps + off, ps, &fm, &pm) < 0 ||
			    vt_marker_decode_flush(c->data + ps + off, ps, &fm, &f) < 0) {
				fprintf(stderr, "cpu%u: a marker that is no perf flush marker at %zu\n", cpu, off);
				return -8;
			}
			w->flushes++;
			w->flush_seq = f.seq;
			w->flush_time = f.guest_time;
			w->flush_records = pm.stats.records;
			if (pm.stats.records != w->records || pm.stats.bytes_sent != off - (w->flushes - 1) * ps) {
				fprintf(stderr, "cpu%u: flush marker counts %llu records %llu bytes, stream %llu %zu\n",
					cpu, (unsigned long long)pm.stats.records,
					(unsigned long long)pm.stats.bytes_sent, (unsigned long long)w->records, off);
				return -9;
			}
			off += ps;
			continue;
		}
		if (h.size < sizeof(h) || h.size % 8 || h.size > w->bytes - off) {
			fprintf(stderr, "cpu%u: perf record type %u size %u at %zu of %llu\n", cpu, h.type, h.size,
				off, (unsigned long long)w->bytes);
			return -6;
		}
		if (pwalk_record(w, c->data + ps + off, &h) < 0) {
			fprintf(stderr, "cpu%u: perf record type %u size %u: bad layout\n", cpu, h.type, h.size);
			return -7;
		}
		off += h.size;
	}
	return 0;
}

/* The end marker and STOPPED agree with what the stream held. */
static int check_perf_counts(const struct pwalk *w, const struct vt_perf_stats *st, unsigned cpu)
{
	const struct vt_perf_stats *e = &w->end.stats;

	printf("cpu%u: perf %llu bytes, %llu records (%llu task records), %llu samples (%llu of the busy "
	       "thread), %llu LOST records (%llu lost)\n", cpu, (unsigned long long)w->bytes,
	       (unsigned long long)w->records, (unsigned long long)e->synth_records,
	       (unsigned long long)w->samples, (unsigned long long)w->busy_samples,
	       (unsigned long long)w->lost_records, (unsigned long long)w->lost);
	if (e->error || e->bytes_sent != w->bytes - w->flushes * 4096 || e->records != w->records ||
	    e->samples != w->samples ||
	    e->lost_records != w->lost_records || e->lost != w->lost || w->bad_id ||
	    memcmp(e, st, sizeof(*st)) != 0) {
		fprintf(stderr, "cpu%u: end marker error %d bytes %llu records %llu samples %llu lost %llu/%llu, "
			"%llu bad ids, STOPPED %s\n", cpu, e->error, (unsigned long long)e->bytes_sent,
			(unsigned long long)e->records, (unsigned long long)e->samples,
			(unsigned long long)e->lost_records, (unsigned long long)e->lost,
			(unsigned long long)w->bad_id, memcmp(e, st, sizeof(*st)) ? "differs" : "agrees");
		return -1;
	}
	return 0;
}

struct busy {
	pthread_t th;
	unsigned ms;
	volatile uint32_t tid;
};

static void *busy_thread(void *arg)
{
	struct busy *b = arg;
	uint64_t end = util_now_ns(CLOCK_MONOTONIC) + (uint64_t)b->ms * 1000000;
	volatile uint64_t x = 0;

	b->tid = (uint32_t)gettid();
	while (util_now_ns(CLOCK_MONOTONIC) < end)
		for (int i = 0; i < 100000; i++)
			x += (uint64_t)i;
	(void)x; /* read: the busy work is the point */
	return NULL;
}

/* Spins a thread for ms, then joins it: its tid. */
static uint32_t busy_run(unsigned ms)
{
	struct busy b = { .ms = ms };

	if (pthread_create(&b.th, NULL, busy_thread, &b) != 0)
		return 0;
	pthread_join(b.th, NULL);
	return b.tid;
}

TEST(perf_config)
{
	static const struct {
		const char *events, *clock, *named;
		uint32_t freq, kb;
		int err;
	} bad[] = {
		{ "cpu-clock,nosuchevent", NULL, "nosuchevent", 0, 0, EINVAL },
		{ "cpu-clock,cpu-clock", NULL, "cpu-clock", 0, 0, EINVAL },
		{ "cpu-clock", "global", "'global'", 0, 0, EOPNOTSUPP },
		{ "cpu-clock", NULL, "100001", 100001, 0, ERANGE },
		{ "cpu-clock", NULL, "12", 0, 12, ERANGE },
		{ "cpu-clock", NULL, "524288", 0, 512u << 10, ERANGE },
	};
	_cleanup_drv_ struct drv d = { 0 };
	_cleanup_free_ char *ev0 = NULL, *ev1 = NULL, *ev2 = NULL;
	struct rmsg r;
	uint32_t freq = 0, kb = 0;

	CHECK(drv_up(&d, "perfcfg", -1) == 0);
	CHECK(drv_perf_hello(&d, &ev0, &freq, &kb) == 0);
	CHECK_STR(ev0, "");
	CHECK_INT(freq, ==, VT_PERF_DEFAULT_FREQ);
	CHECK_INT(kb, ==, VT_PERF_DEFAULT_RING_KB);
	CHECK(drv_expect(&d, VT_MSG_OK, drv_config_perf(&d, "cpu-clock,page-faults", 250, 64, NULL), &r) == 0);
	rmsg_free(&r);
	CHECK(drv_perf_hello(&d, &ev1, &freq, &kb) == 0);
	CHECK_STR(ev1, "cpu-clock,page-faults");
	CHECK_INT(freq, ==, 250);
	CHECK_INT(kb, ==, 64);
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		_cleanup_free_ char *msg = NULL;
		uint32_t seq = drv_config_perf(&d, bad[i].events, bad[i].freq, bad[i].kb, bad[i].clock);

		CHECK_INT(drv_error(&d, seq, &msg), ==, bad[i].err);
		if (!strstr(msg, bad[i].named))
			fprintf(stderr, "error '%s' does not name '%s'\n", msg, bad[i].named);
		CHECK(strstr(msg, bad[i].named) != NULL);
	}
	/* Nothing half-applied; "" turns guest perf off, and then any clock will do again. */
	CHECK(drv_perf_hello(&d, &ev2, &freq, &kb) == 0);
	CHECK_STR(ev2, "cpu-clock,page-faults");
	CHECK_INT(freq, ==, 250);
	CHECK_INT(kb, ==, 64);
	CHECK(drv_expect(&d, VT_MSG_OK, drv_config_perf(&d, "", 0, 0, "global"), &r) == 0);
	rmsg_free(&r);
	CHECK_INT(drv_down(&d), ==, 0);
}

TEST(perf_session)
{
	_cleanup_drv_ struct drv d = { 0 };
	struct vt_cpu_stats st[MAXCPU];
	struct rmsg r;
	uint32_t tid;
	uint64_t busy = 0, comm = 0, mmap = 0, synth = 0, synth_cpus = 0;

	CHECK(drv_up(&d, "perf", -1) == 0);
	CHECK(drv_perf_ports(&d, -1) == 0);
	CHECK(drv_expect(&d, VT_MSG_OK, drv_config_perf(&d, "cpu-clock", 1000, 1024, "mono"), &r) == 0);
	rmsg_free(&r);
	CHECK(drv_start(&d, 61) == 0);
	CHECK(d.perf_started_known);
	for (unsigned c = 0; c < d.ncpus; c++)
		CHECK_INT(d.perf_started[c].error, ==, 0);
	tid = busy_run(1500);
	CHECK(tid != 0);
	CHECK(write_markers(&d, 0, 100) == 0);
	CHECK(drv_stop(&d, 61, st) == 0);
	CHECK(d.perf_stopped_known);
	CHECK(check_session(&d, 61, 100, st, 0, NULL) == 0);
	for (unsigned c = 0; c < d.ncpus; c++) {
		struct pwalk w = { .busy_tid = tid, .self_pid = (uint32_t)getpid() };
		int e = check_perf_stream(&d.pcap[c], 61, c, &w);

		if (e < 0)
			fprintf(stderr, "cpu%u: perf stream check %d\n", c, e);
		CHECK(e == 0);
		CHECK(check_perf_counts(&w, &d.perf_stopped[c], c) == 0);
		busy += w.busy_samples;
		comm += w.comm_self;
		mmap += w.mmap_self;
		synth += w.end.stats.synth_records;
		synth_cpus += w.end.stats.synth_records > 0;
	}
	CHECK_INT(busy, >, 100);     /* 1.5 s of spinning at 1000 Hz */
	CHECK_INT(synth_cpus, ==, 1); /* one stream carries the task records */
	CHECK_INT(synth, >, 10);
	CHECK_INT(comm, >=, 1);      /* this process, alive at START */
	CHECK_INT(mmap, >=, 1);      /* and its executable mapping */
	printf("vmsplice path: %s\n", log_count(&d, "by write() from the mapping") ? "refused (write() fallback)"
										  : "used");
	CHECK_INT(drv_down(&d), ==, 0);
}

/* FLUSH with guest perf: each CPU's perf stream drains its ring and sends a perf flush marker
 * (docs/protocol.md §3); no record after it is stamped before the marker's time. */
TEST(perf_flush_on_request)
{
	_cleanup_drv_ struct drv d = { 0 };
	struct vt_cpu_stats st[MAXCPU];
	struct vt_buf b = { 0 };
	struct rmsg r;
	uint32_t seq;
	uint64_t after = 0;

	CHECK(drv_up(&d, "perf_flush", -1) == 0);
	CHECK(drv_perf_ports(&d, -1) == 0);
	CHECK(drv_expect(&d, VT_MSG_OK, drv_config_perf(&d, "cpu-clock", 1000, 1024, "mono"), &r) == 0);
	rmsg_free(&r);
	CHECK(drv_start(&d, 63) == 0);
	CHECK(busy_run(400) != 0);
	vt_msg_begin(&b, VT_MSG_FLUSH, seq = ++d.seq);
	vt_put_u64(&b, VT_A_SESSION, 63);
	vt_put_u64(&b, VT_A_FLUSH_SEQ, 7);
	vt_msg_end(&b);
	drv_send(&d, &b);
	free(b.data);
	CHECK(drv_expect(&d, VT_MSG_OK, seq, &r) == 0);
	rmsg_free(&r);
	CHECK(busy_run(400) != 0);
	CHECK(write_markers(&d, 0, 20) == 0);
	CHECK(drv_stop(&d, 63, st) == 0);
	CHECK(check_session(&d, 63, 20, st, 0, NULL) == 0);
	for (unsigned c = 0; c < d.ncpus; c++) {
		struct pwalk w = { .self_pid = (uint32_t)getpid() };
		int e = check_perf_stream(&d.pcap[c], 63, c, &w);

		if (e < 0)
			fprintf(stderr, "cpu%u: perf stream check %d\n", c, e);
		CHECK(e == 0);
		CHECK(check_perf_counts(&w, &d.perf_stopped[c], c) == 0);
		printf("cpu%u: %llu perf flush marker(s), seq %llu, %llu of %llu records before it\n", c,
		       (unsigned long long)w.flushes, (unsigned long long)w.flush_seq,
		       (unsigned long long)w.flush_records, (unsigned long long)w.records);
		CHECK_INT(w.flushes, ==, 1);
		CHECK_INT(w.flush_seq, ==, 7);
		CHECK(w.flush_time != 0);
		CHECK_INT(w.before_horizon, ==, 0);
		after += w.records - w.flush_records;
	}
	CHECK_INT(after, >, 0); /* the second busy spell came after the marker */
	CHECK_INT(drv_down(&d), ==, 0);
}

TEST(perf_lost_when_port_not_read)
{
	_cleanup_drv_ struct drv d = { 0 };
	struct vt_cpu_stats st[MAXCPU];
	struct rmsg r;
	uint64_t lost = 0, lost_records = 0;
	uint32_t tid;

	CHECK(drv_up(&d, "perflost", -1) == 0);
	CHECK(drv_perf_ports(&d, -1) == 0);
	CHECK(drv_expect(&d, VT_MSG_OK, drv_config_perf(&d, "cpu-clock", 20000, 8, "mono"), &r) == 0);
	rmsg_free(&r);
	for (unsigned c = 0; c < d.ncpus; c++)
		d.pcap[c].delay_ms = 1500;
	CHECK(drv_start(&d, 62) == 0);
	tid = busy_run(2500);
	CHECK(tid != 0);
	CHECK(drv_stop(&d, 62, st) == 0);
	CHECK(d.perf_stopped_known);
	for (unsigned c = 0; c < d.ncpus; c++) {
		struct pwalk w = { .busy_tid = tid, .self_pid = (uint32_t)getpid() };

		CHECK(check_perf_stream(&d.pcap[c], 62, c, &w) == 0);
		CHECK(check_perf_counts(&w, &d.perf_stopped[c], c) == 0);
		lost += w.lost;
		lost_records += w.lost_records;
	}
	CHECK_INT(lost_records, >, 0);
	CHECK_INT(lost, >=, lost_records);
	CHECK_INT(drv_down(&d), ==, 0);
}

TEST(perf_missing_port)
{
	_cleanup_drv_ struct drv d = { 0 };
	struct vt_cpu_stats st[MAXCPU];
	struct rmsg r;
	unsigned last;

	CHECK(get_nprocs_conf() >= 2);
	last = (unsigned)get_nprocs_conf() - 1;
	CHECK(drv_up(&d, "perfmiss", -1) == 0);
	CHECK(drv_perf_ports(&d, (int)last) == 0);
	CHECK(drv_expect(&d, VT_MSG_OK, drv_config_perf(&d, "cpu-clock", 0, 0, NULL), &r) == 0);
	rmsg_free(&r);
	CHECK(drv_start(&d, 63) == 0);
	CHECK(d.perf_started_known);
	CHECK_INT(d.perf_started[last].error, ==, -ENOENT);
	CHECK_INT(d.perf_started[0].error, ==, 0);
	CHECK_INT(d.started[last].error, ==, 0); /* its ftrace stream is fine */
	CHECK(drv_stop(&d, 63, st) == 0);
	CHECK_INT(d.perf_stopped[last].error, ==, -ENOENT);
	CHECK_INT(d.perf_stopped[0].error, ==, 0);
	CHECK(log_count(&d, "no guest perf stream on perf-path-cpu") == 1);
	/* No perf port at all: START fails naming the first. */
	close(d.pcap[0].lfd);
	d.pcap[0].lfd = -1;
	{
		char p[160];
		_cleanup_free_ char *msg = NULL;
		uint32_t seq;

		for (unsigned c = 0; c < d.ncpus; c++) {
			snprintf(p, sizeof(p), "%s/perf-path-cpu%u", d.dir, c);
			unlink(p);
			if (d.pcap[c].lfd >= 0)
				close(d.pcap[c].lfd);
			d.pcap[c].lfd = -1;
		}
		capture_begin(&d);
		seq = drv_simple(&d, VT_MSG_START, 64);
		CHECK_INT(drv_error(&d, seq, &msg), ==, ENODEV);
		capture_end(&d);
		CHECK(strstr(msg, "perf-path-cpu0") != NULL);
	}
	CHECK_INT(drv_down(&d), ==, 0);
}

/* A perf port nobody reads: STOP still answers after the 10 s drain limit, that CPU's perf
 * stream reports -ECANCELED and has no end marker; the others are whole. */
TEST(perf_stop_with_unread_port)
{
	_cleanup_drv_ struct drv d = { 0 };
	struct vt_cpu_stats st[MAXCPU];
	struct rmsg r;
	unsigned last;

	CHECK(get_nprocs_conf() >= 2);
	last = (unsigned)get_nprocs_conf() - 1;
	CHECK(drv_up(&d, "perfstall", -1) == 0);
	CHECK(drv_perf_ports(&d, -1) == 0);
	CHECK(drv_expect(&d, VT_MSG_OK, drv_config_perf(&d, "cpu-clock", 20000, 8, NULL), &r) == 0);
	rmsg_free(&r);
	d.pcap[last].stall = true;
	CHECK(drv_start(&d, 65) == 0);
	CHECK(d.perf_started_known && d.perf_started[last].error == 0); /* the socket took the begin marker */
	CHECK(busy_run(1000) != 0);
	CHECK(drv_stop(&d, 65, st) == 0);
	CHECK(d.perf_stopped_known);
	CHECK_INT(d.perf_stopped[last].error, ==, -ECANCELED);
	CHECK_INT(st[last].error, ==, 0); /* its ftrace stream was read */
	for (unsigned c = 0; c < d.ncpus; c++) {
		struct pwalk w = { .self_pid = (uint32_t)getpid() };

		if (c == last)
			continue;
		CHECK(check_perf_stream(&d.pcap[c], 65, c, &w) == 0);
		CHECK(check_perf_counts(&w, &d.perf_stopped[c], c) == 0);
	}
	CHECK(log_count(&d, "still draining their rings into their ports") == 1);
	CHECK_INT(drv_down(&d), ==, 0);
}
