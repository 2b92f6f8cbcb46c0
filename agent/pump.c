// SPDX-License-Identifier: GPL-2.0-only
/* One pinned thread per CPU: per_cpu/cpuN/trace_pipe_raw -> pipe -> trace-path-cpuN with
 * splice, framed by begin/end marker pages (docs/protocol.md §2). Never exits the process:
 * the result goes into the CPU's stats and main is woken through done_efd. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "agent.h"
#include "log.h"
#include "marker.h"
#include "util.h"

#define PUMP_TAIL_MAX (1u << 20) /* bound on pages read() at stop */

struct pump_io {
	int raw, pipe_r, pipe_w;
	int in; /* the port's read side: unused, data ports only write */
	struct pump_port port;
	size_t pipe_size;
	uint32_t page_size;
	const struct pump_shared *sh;
	struct vt_cpu_stats *stats;
	struct pump *self;
};

static void pump_io_close(struct pump_io *io)
{
	int *fds[] = { &io->raw, &io->pipe_r, &io->pipe_w, &io->port.fd, &io->in };

	for (size_t i = 0; i < ARRAY_SIZE(fds); i++) {
		if (*fds[i] >= 0)
			close(*fds[i]);
		*fds[i] = -1;
	}
}

void pump_signal(int efd)
{
	uint64_t one = 1;

	if (write(efd, &one, sizeof(one)) < 0)
		log_debug("eventfd write: %m");
}

int pump_port_wait(const struct pump_port *port, int fd, short events)
{
	struct pollfd pfd[2] = { { .fd = fd, .events = events },
				 { .fd = port->abort_efd, .events = POLLIN } };

	for (;;) {
		int n = poll(pfd, 2, port->wait_ms);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -ETIMEDOUT;
		if (pfd[1].revents)
			return -ECANCELED;
		if (pfd[0].revents & events)
			return 0;
		if (pfd[0].revents & (POLLERR | POLLHUP | POLLNVAL))
			return -EPIPE;
	}
}

ssize_t pump_port_step(const struct pump_port *port, ssize_t n)
{
	n = util_xfer_step(n);
	if (n == -EAGAIN)
		return pump_port_wait(port, port->fd, POLLOUT);
	return n;
}

int pump_port_write(const struct pump_port *port, const void *buf, size_t len)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = pump_port_step(port, write(port->fd, (const char *)buf + done, len - done));

		if (n < 0)
			return (int)n;
		done += (size_t)n;
	}
	return 0;
}

int pump_port_splice(const struct pump_port *port, int pipe_r, size_t len)
{
	while (len > 0) {
		ssize_t n = pump_port_step(port, splice(pipe_r, NULL, port->fd, NULL, len,
							SPLICE_F_MOVE | SPLICE_F_NONBLOCK));

		if (n < 0)
			return (int)n;
		len -= (size_t)n;
	}
	return 0;
}

int pump_pipe(size_t want, uint32_t page_size, int *ret_r, int *ret_w, size_t *ret_size)
{
	int pfd[2], sz;

	if (pipe2(pfd, O_CLOEXEC) < 0)
		return -errno;
	sz = fcntl(pfd[1], F_SETPIPE_SZ, (int)want);
	if (sz < 0)
		sz = fcntl(pfd[1], F_GETPIPE_SZ);
	if (sz < (int)page_size) {
		close(pfd[0]);
		close(pfd[1]);
		return -EINVAL;
	}
	*ret_r = pfd[0];
	*ret_w = pfd[1];
	*ret_size = (size_t)sz / page_size * page_size;
	return 0;
}

static int pump_marker(const struct pump_io *io, enum vt_marker_kind kind,
		       const struct vt_cpu_stats *stats)
{
	_cleanup_free_ void *page = malloc(io->page_size);

	if (!page)
		return -ENOMEM;
	vt_marker_encode(page, io->page_size, kind, io->sh->session, io->stats->cpu, stats);
	return pump_port_write(&io->port, page, io->page_size);
}

/* Splices whole pages until the ring has no full page left (EAGAIN). */
static int pump_splice_all(struct pump_io *io)
{
	for (;;) {
		ssize_t n = splice(io->raw, NULL, io->pipe_w, NULL, io->pipe_size,
				   SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
		int r;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return 0;
		if (n < 0)
			return -errno;
		if (n == 0)
			return 0;
		r = pump_port_splice(&io->port, io->pipe_r, (size_t)n);
		if (r < 0)
			return r;
		io->stats->pages_sent += (uint64_t)n / io->page_size;
	}
}

/* splice leaves the last partial page in the ring: read() it, pad it to a page; at most max
 * reads. While tracing is on, every write into the port makes new events (virtio_console's
 * kmalloc/kfree when kmem is traced, wake-ups): reading until EAGAIN would feed on itself. */
static int pump_read_tail(struct pump_io *io, unsigned max)
{
	_cleanup_free_ char *page = malloc(io->page_size);

	if (!page)
		return -ENOMEM;
	for (unsigned i = 0; i < max; i++) {
		ssize_t n = read(io->raw, page, io->page_size);
		int r;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return 0;
		if (n < 0)
			return -errno;
		if (n == 0)
			return 0;
		memset(page + n, 0, io->page_size - (size_t)n);
		r = pump_port_write(&io->port, page, io->page_size);
		if (r < 0)
			return r;
		io->stats->pages_sent++;
	}
	return 0;
}

/* A ring below buffer_percent for flush_ms: its whole pages by splice, so history reaches the
 * host before a later burst could overwrite it; when there were none (a quiet ring), also the
 * partial page by read() (at most a page through user space per period). A ring that filled
 * pages keeps its partial page: it is next period's whole page, and reading it every period
 * costs events of its own (measured: bench/RESULTS.md). */
static int pump_flush_quiet(struct pump_io *io)
{
	uint64_t before = io->stats->pages_sent;
	int r = pump_splice_all(io);

	if (r < 0 || io->stats->pages_sent != before)
		return r;
	return pump_read_tail(io, 1); /* the one partial page there is now */
}

/* FLUSH: what the ring holds now (whole pages, then the one partial page), then a flush marker
 * with the request's seq and the trace clock read after the drain: the host then has every
 * event this CPU traced before the request (docs/protocol.md §2). */
static int pump_flush_now(struct pump_io *io)
{
	_cleanup_free_ void *page = NULL;
	struct vt_flush_marker f = { 0 };
	uint64_t v;
	int r;

	if (read(io->self->flush_efd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		return -errno;
	/* The clock before the drain: this thread runs on the ring's CPU, so no event of it with
	 * an earlier time is still being written when the drain reads. */
	if (io->sh->clock && clocks_read(io->sh->clock, &f.guest_time) < 0)
		f.guest_time = 0;
	r = pump_splice_all(io);
	if (r == 0)
		r = pump_read_tail(io, 1);
	if (r < 0)
		return r;
	f.seq = __atomic_load_n(&io->self->flush_seq, __ATOMIC_ACQUIRE);
	page = malloc(io->page_size);
	if (!page)
		return -ENOMEM;
	io->stats->bytes_sent = io->stats->pages_sent * io->page_size;
	vt_marker_encode_flush(page, io->page_size, io->sh->session, io->stats, &f);
	return pump_port_write(&io->port, page, io->page_size);
}

/* Waits for ring data (pollable; buffer_percent sets when it wakes us), a flush request or stop. */
static int pump_loop(struct pump_io *io)
{
	struct pollfd pfd[4] = { { .fd = io->raw, .events = POLLIN },
				 { .fd = io->sh->stop_efd, .events = POLLIN },
				 { .fd = io->sh->abort_efd, .events = POLLIN },
				 { .fd = io->self->flush_efd, .events = POLLIN } };

	for (;;) {
		int n = poll(pfd, 4, io->sh->flush_ms), r;

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0) {
			r = pump_flush_quiet(io);
			if (r < 0)
				return r;
			continue;
		}
		if (pfd[2].revents)
			return -ECANCELED;
		if (pfd[3].revents & POLLIN) { /* before a stop that came with it: the host waits for it */
			r = pump_flush_now(io);
			if (r < 0)
				return r;
			continue;
		}
		if (pfd[1].revents)
			return 0;
		if (pfd[0].revents & POLLIN) {
			r = pump_splice_all(io);
			if (r < 0)
				return r;
		} else if (pfd[0].revents & (POLLERR | POLLNVAL)) {
			return -EIO;
		}
	}
}

static int pump_open(struct pump_io *io, unsigned cpu)
{
	struct port_fds port;
	char name[64];
	int r;

	snprintf(name, sizeof(name), "per_cpu/cpu%u/trace_pipe_raw", cpu);
	io->raw = openat(io->sh->tfs->inst_fd, name, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (io->raw < 0)
		return -errno;
	r = pump_pipe(io->sh->pipe_size, io->page_size, &io->pipe_r, &io->pipe_w, &io->pipe_size);
	if (r < 0)
		return r;
	snprintf(name, sizeof(name), "trace-path-cpu%u", cpu);
	r = ports_open(io->sh->ports, name, &port);
	if (r < 0)
		return r;
	io->in = port.rd;
	io->port.fd = port.wr;
	if (fcntl(io->port.fd, F_SETFL, fcntl(io->port.fd, F_GETFL) | O_NONBLOCK) < 0)
		return -errno;
	return 0;
}

/* The stream for one session: begin marker, pages, tail, end marker. */
static int pump_stream(struct pump_io *io, bool *ready_sent)
{
	int r = pump_open(io, io->stats->cpu);

	io->port.wait_ms = PUMP_BEGIN_MS;
	if (r == 0)
		r = pump_marker(io, VT_MARKER_BEGIN, NULL);
	io->port.wait_ms = -1;
	io->stats->error = r; /* main reads it once ready_efd says so */
	pump_signal(io->sh->ready_efd);
	*ready_sent = true;
	if (r < 0)
		return r;
	r = pump_loop(io);
	if (r == 0)
		r = pump_splice_all(io);
	if (r == 0)
		r = pump_read_tail(io, PUMP_TAIL_MAX); /* tracing is off: it ends */
	io->stats->bytes_sent = io->stats->pages_sent * io->page_size;
	(void)tracefs_cpu_stats(io->sh->tfs, io->stats->cpu, io->stats);
	if (r == 0)
		r = pump_marker(io, VT_MARKER_END, io->stats);
	return r;
}

static void *pump_thread(void *arg)
{
	struct pump *p = arg;
	struct pump_io io = { .raw = -1, .pipe_r = -1, .pipe_w = -1, .in = -1,
			      .port = { .fd = -1, .abort_efd = p->sh->abort_efd, .wait_ms = -1 },
			      .page_size = p->sh->page_size, .sh = p->sh, .stats = &p->stats, .self = p };
	bool ready_sent = false;
	int r = pump_stream(&io, &ready_sent);

	if (r < 0) {
		p->stats.error = r;
		p->stats.bytes_sent = p->stats.pages_sent * io.page_size;
	}
	pump_io_close(&io);
	if (!ready_sent)
		pump_signal(p->sh->ready_efd);
	pump_signal(p->sh->done_efd);
	return NULL;
}

int pump_thread_pinned(pthread_t *ret, unsigned cpu, void *(*fn)(void *), void *arg)
{
	pthread_attr_t attr;
	cpu_set_t set;
	int r;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	r = -pthread_attr_init(&attr);
	if (r < 0)
		return r;
	r = -pthread_attr_setaffinity_np(&attr, sizeof(set), &set);
	if (r == 0)
		r = -pthread_create(ret, &attr, fn, arg);
	pthread_attr_destroy(&attr);
	return r;
}

int pump_start(struct pump *p)
{
	int r;

	p->stats = (struct vt_cpu_stats){ .cpu = p->cpu };
	p->flush_seq = 0;
	p->flush_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (p->flush_efd < 0)
		return -errno;
	r = pump_thread_pinned(&p->thread, p->cpu, pump_thread, p);
	p->thread_started = r == 0;
	if (r < 0) {
		close(p->flush_efd);
		p->flush_efd = -1;
	}
	return r;
}

void pump_flush(struct pump *p, uint64_t seq)
{
	if (!p->thread_started)
		return;
	__atomic_store_n(&p->flush_seq, seq, __ATOMIC_RELEASE);
	pump_signal(p->flush_efd);
}

void pump_join(struct pump *p)
{
	if (p->thread_started)
		pthread_join(p->thread, NULL);
	p->thread_started = false;
	if (p->flush_efd >= 0)
		close(p->flush_efd);
	p->flush_efd = -1;
}
