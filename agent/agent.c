// SPDX-License-Identifier: GPL-2.0-only
/* The agent's main loop: signals, the control port (reopened with backoff while no host is
 * there), and the control stream handed to control.c. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/sysinfo.h>
#include <sys/timerfd.h>

#include "agent.h"
#include "log.h"
#include "util.h"

#define AGENT_CTL_PORT "agent-ctl-path"
#define AGENT_BACKOFF_MIN_MS 50u
#define AGENT_BACKOFF_MAX_MS 2000u

static int agent_signals(struct agent *a)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	/* Blocked before any thread exists, so every pump inherits the mask. */
	if (pthread_sigmask(SIG_BLOCK, &set, NULL) != 0)
		return -EINVAL;
	signal(SIGPIPE, SIG_IGN);
	a->sig_fd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	return a->sig_fd < 0 ? -errno : 0;
}

static size_t agent_pipe_size(const struct agent_options *opts)
{
	_cleanup_free_ char *s = NULL;
	uint64_t max = 1 << 20;

	if (util_read_file("/proc/sys/fs/pipe-max-size", 64, &s, NULL) == 0)
		(void)util_parse_u64(strtok(s, "\n"), 1u << 30, &max);
	if (opts->pipe_max && opts->pipe_max < max)
		max = opts->pipe_max;
	return (size_t)max;
}

/* Arms the reconnect timer and doubles the backoff. */
static void agent_backoff(struct agent *a)
{
	struct itimerspec its = { .it_value = { .tv_sec = a->backoff_ms / 1000,
						.tv_nsec = (long)(a->backoff_ms % 1000) * 1000000 } };

	(void)timerfd_settime(a->timer_fd, 0, &its, NULL);
	a->backoff_ms = MIN(a->backoff_ms * 2, AGENT_BACKOFF_MAX_MS);
}

static void agent_ctl_close(struct agent *a)
{
	ports_close(&a->ctl);
	vt_reader_free(&a->rd);
	agent_backoff(a);
}

static int agent_ctl_nonblock(struct agent *a)
{
	int fds[] = { a->ctl.rd, a->ctl.wr };

	for (size_t i = 0; i < ARRAY_SIZE(fds); i++)
		if (fcntl(fds[i], F_SETFL, fcntl(fds[i], F_GETFL) | O_NONBLOCK) < 0)
			return -errno;
	return 0;
}

static void agent_ctl_open(struct agent *a)
{
	int r = ports_open(&a->ports, AGENT_CTL_PORT, &a->ctl);

	if (r < 0) {
		log_debug("cannot open %s in %s: %s; retrying", AGENT_CTL_PORT, ports_where(&a->ports),
			  strerror(-r));
		agent_backoff(a);
		return;
	}
	if (agent_ctl_nonblock(a) < 0 || vt_reader_init(&a->rd) < 0) {
		ports_close(&a->ctl);
		agent_backoff(a);
		return;
	}
	log_debug("control port open");
}

static void agent_reply(struct agent *a, struct vt_buf *out)
{
	int r = 0;

	if (out->len > 0 && a->ctl.wr >= 0)
		r = ctlout_write(a, out->data, out->len);
	out->len = 0;
	out->oom = false;
	if (r < 0) {
		log_info("host went away while we replied (%s): waiting for it", strerror(-r));
		agent_ctl_close(a);
	}
}

/* Handles every complete frame or legacy line buffered so far. */
static void agent_dispatch(struct agent *a)
{
	struct vt_buf out = { 0 };
	enum vt_read_result res;
	struct vt_msg m;
	char legacy;

	while (a->ctl.rd >= 0 && !a->quit && (res = vt_reader_next(&a->rd, &m, &legacy)) != VT_READ_NEED_MORE) {
		if (res == VT_READ_MSG)
			control_msg(a, &m, &out);
		else if (res == VT_READ_LEGACY)
			control_legacy(a, legacy);
		else if (res == VT_READ_GARBAGE)
			reply_error(&out, 0, EBADMSG, "skipped bytes that were not a frame (bad magic)");
		else if (m.hdr.version != VT_PROTO_VERSION)
			reply_error(&out, m.hdr.seq, EPROTONOSUPPORT, "protocol version %u not supported "
				      "(this agent speaks %u)", m.hdr.version, VT_PROTO_VERSION);
		else
			reply_error(&out, m.hdr.seq, EMSGSIZE, "frame of %u bytes is over the %u byte limit",
				      m.hdr.len, VT_PROTO_MAX_PAYLOAD);
		agent_reply(a, &out);
	}
	vt_buf_free(&out);
}

static void agent_ctl_read(struct agent *a)
{
	uint8_t *p;
	size_t room;
	ssize_t n;

	if (vt_reader_space(&a->rd, &p, &room) < 0) {
		log_warn("control stream unparseable: resetting it");
		agent_ctl_close(a);
		return;
	}
	n = read(a->ctl.rd, p, room);
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n <= 0) {
		/* Socket chardevs read EOF while no host is connected: wait and reopen. */
		log_debug("control port: %s", n == 0 ? "end of file" : strerror(errno));
		agent_ctl_close(a);
		return;
	}
	a->backoff_ms = AGENT_BACKOFF_MIN_MS;
	vt_reader_commit(&a->rd, (size_t)n);
	agent_dispatch(a);
}

static void agent_loop(struct agent *a)
{
	while (!a->quit) {
		struct pollfd pfd[2] = { { .fd = a->sig_fd, .events = POLLIN },
					 { .fd = a->ctl.rd >= 0 ? a->ctl.rd : a->timer_fd, .events = POLLIN } };
		uint64_t ticks;

		if (poll(pfd, 2, -1) < 0) {
			if (errno != EINTR)
				log_error("poll: %m");
			continue;
		}
		if (pfd[0].revents & POLLIN)
			ctlout_signal(a);
		else if (a->ctl.rd >= 0 && (pfd[1].revents & (POLLIN | POLLHUP | POLLERR)))
			agent_ctl_read(a);
		else if (a->ctl.rd < 0 && (pfd[1].revents & POLLIN) &&
			 read(a->timer_fd, &ticks, sizeof(ticks)) == sizeof(ticks))
			agent_ctl_open(a);
	}
}

static int agent_setup(struct agent *a)
{
	int r = agent_signals(a);

	if (r < 0)
		return r;
	r = ports_find(&a->ports, a->opts->ports_dir);
	if (r < 0)
		return r;
	a->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (a->timer_fd < 0)
		return -errno;
	r = tracefs_open(&a->tfs, a->opts->tracefs, a->opts->instance);
	if (r < 0)
		return r;
	a->ncpus = (unsigned)get_nprocs_conf();
	if (a->opts->subbuf_kb && (r = tracefs_subbuf_set(&a->tfs, a->opts->subbuf_kb)) < 0 && r != -ENOENT)
		log_warn("cannot write %u to %s/buffer_subbuf_size_kb (%s): streaming in the kernel's sub-buffers "
			 "(trace-agent --subbuf-kb 0 leaves them alone)", a->opts->subbuf_kb, a->tfs.inst_path, strerror(-r));
	a->page_size = tracefs_page_size(&a->tfs);
	log_debug("ring read in %u-byte sub-buffers", a->page_size);
	a->pipe_size = agent_pipe_size(a->opts);
	return config_default(&a->cfg, 0);
}

/* The first open tells the user what is missing; later ones retry quietly. */
static int agent_first_open(struct agent *a)
{
	int r = ports_open(&a->ports, AGENT_CTL_PORT, &a->ctl);

	if (r == -ENOENT) {
		/* A port hot-plugged later (virsh attach-device --live) is found by the retries. */
		log_error("no control port %s in %s: add the virtio-serial channels (see trace-collector "
			  "setup); waiting for it to appear", AGENT_CTL_PORT, ports_where(&a->ports));
		agent_backoff(a);
		return 0;
	}
	if (r < 0) {
		log_info("control port %s not ready (%s): waiting for the host", AGENT_CTL_PORT, strerror(-r));
		agent_backoff(a);
		return 0;
	}
	r = agent_ctl_nonblock(a);
	return r < 0 ? r : vt_reader_init(&a->rd);
}

static void agent_teardown(struct agent *a)
{
	if (a->tracing)
		(void)session_stop(a, NULL, NULL);
	tracefs_close(&a->tfs);
	ports_free(&a->ports);
	config_free(&a->cfg);
	meta_cache_free(&a->kallsyms);
	vt_reader_free(&a->rd);
	ports_close(&a->ctl);
	if (a->timer_fd >= 0)
		close(a->timer_fd);
	if (a->sig_fd >= 0)
		close(a->sig_fd);
	if (a->phc_fd >= 0)
		close(a->phc_fd);
}

int agent_run(const struct agent_options *opts)
{
	struct agent a = { .opts = opts, .ctl = { -1, -1 }, .sig_fd = -1, .timer_fd = -1, .phc_fd = -2,
			   .backoff_ms = AGENT_BACKOFF_MIN_MS,
			   .tfs = { .inst_fd = -1, .claim_fd = -1 },
			   .sh = { .stop_efd = -1, .abort_efd = -1, .ready_efd = -1, .done_efd = -1 } };
	int r;

	if (geteuid() != 0) {
		log_error("trace-agent must run as root: it creates an ftrace instance and opens the "
			  "virtio-serial ports (run it as the trace-agent service or with sudo)");
		return -EPERM;
	}
	r = agent_setup(&a);
	if (r == 0)
		r = agent_first_open(&a);
	if (r == 0) {
		log_info("waiting for the host on %s (%u CPUs, page %u, pipe %zu)", AGENT_CTL_PORT, a.ncpus,
			 a.page_size, a.pipe_size);
		agent_loop(&a);
	}
	agent_teardown(&a);
	return r;
}
