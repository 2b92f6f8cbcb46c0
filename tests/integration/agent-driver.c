// SPDX-License-Identifier: GPL-2.0-only
/* Drives the real trace-agent on the host's tracefs through common/proto + common/marker:
 * the test plays the host. Ports are unix sockets bound here in a temporary ports dir (the
 * agent connects to sockets it finds there); each case runs its own agent and its own
 * ftrace instance PREFIX_<case>, PREFIX = $VT_TEST_INSTANCE_PREFIX or vt_agent_test. Needs
 * root (the agent does). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/sysinfo.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent-driver.h"
#include "harness.h"
#include "marker.h"
#include "proto.h"
#include "util.h"

void rmsg_free(struct rmsg *r)
{
	free(r->buf);
	r->buf = NULL;
}

int listen_at(const char *dir, const char *name)
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

int accept_wait(int lfd)
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

const char *agent_path(void)
{
	const char *p = getenv("TRACE_AGENT");

	return p ? p : "build/agent/trace-agent";
}

/* Instance names: a prefix per engineer keeps parallel runs on one host apart. */
const char *instance_prefix(void)
{
	const char *p = getenv("VT_TEST_INSTANCE_PREFIX");

	return p && *p ? p : "vt_agent_test";
}

bool tracefs_ready(void)
{
	if (access(TRACEFS "/instances", F_OK) == 0)
		return true;
	return mount("nodev", TRACEFS, "tracefs", 0, NULL) == 0;
}

/* Spawns the agent: returns its pid. */
pid_t spawn(const char *log, const char *const argv[])
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
int drv_up(struct drv *d, const char *name, int skip_cpu)
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
	/* --subbuf-kb 0: pages, whatever this host's kernel has (6.8+ has sub-buffers; e2e full-subbuf
	 * tests the agent's default on a guest) */
	const char *argv[] = { (char *)agent_path(), "--ports-dir", d->dir, "--instance", d->instance,
			 "--subbuf-kb", "0", "-vv", NULL };
	d->pid = spawn(d->log, argv);
	d->ctl_fd = accept_wait(d->ctl_lfd);
	vt_reader_init(&d->rd);
	return d->ctl_fd >= 0 ? 0 : -1;
}

/* Binds cpu's data port again (after a test unplugged it). */
int drv_up_port(struct drv *d, unsigned cpu)
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
int drv_down(struct drv *d)
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
void drv_cleanup(struct drv *d)
{
	if (d->dir[0])
		(void)drv_down(d);
}

bool instance_exists(const struct drv *d)
{
	char p[128];

	snprintf(p, sizeof(p), TRACEFS "/instances/%s", d->instance);
	return access(p, F_OK) == 0;
}

int drv_send(struct drv *d, struct vt_buf *b)
{
	int r = util_write_full(d->ctl_fd, b->data, b->len);

	vt_buf_free(b);
	return r;
}

/* Sends a message with no attributes (or a u64 SESSION when session != ~0). */
uint32_t drv_simple(struct drv *d, uint16_t type, uint64_t session)
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
int drv_recv(struct drv *d, struct rmsg *ret)
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
int drv_expect(struct drv *d, uint16_t type, uint32_t seq, struct rmsg *ret)
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
int drv_error(struct drv *d, uint32_t seq, char **ret_msg)
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

int drv_hello(struct drv *d, struct rmsg *ret)
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
uint32_t drv_config_all(struct drv *d, const char *events, const char *clock, uint32_t kb,
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
uint32_t drv_config_tracer(struct drv *d, const char *tracer, const char *filter)
{
	return drv_config_all(d, NULL, NULL, 0, tracer, filter);
}

uint32_t drv_config(struct drv *d, const char *events, const char *clock, uint32_t kb)
{
	return drv_config_all(d, events, clock, kb, NULL, NULL);
}

void capture_begin(struct drv *d)
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

void capture_end(struct drv *d)
{
	for (unsigned c = 0; c < d->ncpus; c++) {
		if (d->cap[c].running)
			pthread_join(d->cap[c].th, NULL);
		if (d->pcap[c].running)
			pthread_join(d->pcap[c].th, NULL);
		d->cap[c].running = d->pcap[c].running = false;
	}
}

int drv_start(struct drv *d, uint64_t session)
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
int drv_stop(struct drv *d, uint64_t session, struct vt_cpu_stats *stats)
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

/* A whole META reply: the data of the file named want (NULL if absent), the files counted. */
int drv_meta(struct drv *d, const char *want, char **ret_data, size_t *ret_len,
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
const char *inst_read(const struct drv *d, const char *rel)
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
unsigned log_count(const struct drv *d, const char *needle)
{
	_cleanup_free_ char *s = NULL;
	unsigned n = 0;

	if (util_read_file(d->log, 1 << 22, &s, NULL) < 0)
		return 0;
	for (const char *p = s; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

