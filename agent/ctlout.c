// SPDX-License-Identifier: GPL-2.0-only
/* What the agent writes on agent-ctl-path: whole replies (agent.c), and the PROGRESS frames of
 * a START that asked for them (session.c, tracefs.c through it), which say where a slow start
 * is so that the host's deadline can follow it (docs/protocol.md §1). */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/signalfd.h>

#include "agent.h"
#include "log.h"
#include "util.h"

#define CTLOUT_PROGRESS_EVERY_NS 250000000ull /* the same step's count, at most 4 times a second */

void ctlout_signal(struct agent *a)
{
	struct signalfd_siginfo si;

	if (read(a->sig_fd, &si, sizeof(si)) == sizeof(si)) {
		log_info("signal %u: stopping", si.ssi_signo);
		a->quit = true;
	}
}

/* Waits until the control port takes bytes again: 0, or -ECANCELED on a signal (SIGTERM
 * must not wait on a host that stopped reading), -EPIPE, -errno. */
static int ctlout_wait_writable(struct agent *a)
{
	struct pollfd pfd[2] = { { .fd = a->ctl.wr, .events = POLLOUT }, { .fd = a->sig_fd, .events = POLLIN } };

	if (poll(pfd, 2, -1) < 0 && errno != EINTR)
		return -errno;
	if (pfd[1].revents & POLLIN) {
		ctlout_signal(a);
		return -ECANCELED;
	}
	if (pfd[0].revents & (POLLERR | POLLHUP | POLLNVAL))
		return -EPIPE;
	return 0;
}

int ctlout_write(struct agent *a, const uint8_t *p, size_t len)
{
	while (len > 0) {
		ssize_t n = util_xfer_step(write(a->ctl.wr, p, len));

		if (n == -EAGAIN)
			n = ctlout_wait_writable(a);
		if (n < 0)
			return (int)n;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

void ctlout_progress_begin(struct agent *a, uint32_t seq, bool want)
{
	a->progress = (struct start_progress){ .want = want, .seq = seq,
					       .t0_ns = util_now_ns(CLOCK_MONOTONIC) };
}

/* Whether this report goes out: a new step always, the same step's count now and then. */
static bool ctlout_progress_due(struct start_progress *p, uint32_t step, uint32_t done, uint32_t total,
				uint64_t now)
{
	if (step == p->step && (done <= p->done || (done < total && now - p->sent_ns < CTLOUT_PROGRESS_EVERY_NS)))
		return false;
	p->step = step;
	p->done = done;
	p->sent_ns = now;
	return true;
}

/* One PROGRESS frame, only when the port takes it now: a start never waits on its report. */
static void ctlout_progress_send(struct agent *a, uint32_t step, uint32_t done, uint32_t total)
{
	struct pollfd pfd = { .fd = a->ctl.wr, .events = POLLOUT };
	struct vt_buf out = { 0 };
	int r;

	if (a->ctl.wr < 0 || poll(&pfd, 1, 0) != 1 || !(pfd.revents & POLLOUT)) {
		a->progress.dropped++;
		return;
	}
	vt_msg_begin(&out, VT_MSG_PROGRESS, a->progress.seq);
	vt_put_u32(&out, VT_A_STEP, step);
	vt_put_u32(&out, VT_A_DONE, done);
	vt_put_u32(&out, VT_A_TOTAL, total);
	r = vt_msg_end(&out);
	if (r == 0)
		r = ctlout_write(a, out.data, out.len);
	if (r < 0)
		log_debug("start: progress not sent: %s", strerror(-r));
	vt_buf_free(&out);
}

void ctlout_progress(struct agent *a, uint32_t step, uint32_t done, uint32_t total)
{
	uint64_t now = util_now_ns(CLOCK_MONOTONIC);
	bool new_step = step != a->progress.step;

	if (!ctlout_progress_due(&a->progress, step, done, total, now))
		return;
	if (new_step || done == total)
		log_debug("start: %s %u/%u at +%.3f s", vt_start_step_name(step), done, total,
			  (double)(now - a->progress.t0_ns) / 1e9);
	if (a->progress.want)
		ctlout_progress_send(a, step, done, total);
}

/* The tracefs.c callback form of ctlout_progress. */
void ctlout_progress_cb(void *agent, uint32_t step, uint32_t done, uint32_t total)
{
	ctlout_progress(agent, step, done, total);
}
