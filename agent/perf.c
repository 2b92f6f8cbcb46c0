// SPDX-License-Identifier: GPL-2.0-only
/* Guest perf: one pinned thread per CPU opens the configured events for all tasks on its CPU,
 * maps the first one's ring and moves [data_tail, data_head) to perf-path-cpuN, framed by perf
 * marker pages (docs/protocol.md §3). Never exits the process: the result goes into the CPU's
 * stats and main is woken through done_efd, like pump.c. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>

#include "agent.h"
#include "log.h"
#include "marker.h"
#include "util.h"

struct perf_io {
	int fd[VT_PERF_MAX_EVENTS]; /* [0] is the leader: its ring takes every event's records */
	size_t nfd;
	uint64_t ids[VT_PERF_MAX_EVENTS];
	void *map;
	size_t map_len;
	struct perf_event_mmap_page *meta;
	const uint8_t *data;
	uint64_t data_size; /* a power of two */
	int pipe_r, pipe_w;
	size_t pipe_size;
	int in; /* the port's read side: unused */
	struct pump_port port;
	bool copy; /* write() from the mapping instead of vmsplice (see perf_copy_reason) */
	struct pump_shared *sh;
	struct vt_perf_stats *stats;
	struct perf_pump *self;
};

static void perf_io_close(struct perf_io *io)
{
	int *fds[] = { &io->pipe_r, &io->pipe_w, &io->port.fd, &io->in };

	if (io->map)
		munmap(io->map, io->map_len);
	io->map = NULL;
	for (size_t i = 0; i < io->nfd; i++)
		close(io->fd[i]);
	io->nfd = 0;
	for (size_t i = 0; i < ARRAY_SIZE(fds); i++) {
		if (*fds[i] >= 0)
			close(*fds[i]);
		*fds[i] = -1;
	}
}

static int perf_open_event(const struct perf_event_spec *e, uint32_t freq, int clockid, unsigned cpu,
			   bool leader, int *ret_fd)
{
	struct perf_event_attr attr;
	long fd;

	perf_events_attr(e, freq, clockid, leader, &attr);
	fd = syscall(SYS_perf_event_open, &attr, -1, (int)cpu, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return -errno;
	*ret_fd = (int)fd;
	return 0;
}

/* What a failed perf_event_open probably means for the user. */
static const char *perf_open_hint(int e)
{
	switch (e) {
	case -ENOENT:
	case -ENODEV:
	case -EOPNOTSUPP:
		return " (no PMU in this guest? use cpu-clock)";
	case -EACCES:
	case -EPERM:
		return " (kernel.perf_event_paranoid, or kernel lockdown?)";
	case -EINVAL:
		return " (this kernel refuses the event's attributes: older than 5.12?)";
	default:
		return "";
	}
}

/* kernel.perf_event_max_sample_rate (the kernel lowers it when sampling takes too long). */
static uint32_t perf_max_rate(void)
{
	_cleanup_free_ char *s = NULL;
	uint64_t v = UINT32_MAX;

	if (util_read_file("/proc/sys/kernel/perf_event_max_sample_rate", 64, &s, NULL) == 0)
		(void)util_parse_u64(strtok(s, "\n"), UINT32_MAX, &v);
	return (uint32_t)v;
}

static int perf_config_msg(char **ret_msg, int r, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int perf_config_msg(char **ret_msg, int r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	if (vasprintf(ret_msg, fmt, ap) < 0)
		*ret_msg = NULL;
	va_end(ap);
	return r;
}

int perf_config_check(const struct agent_config *c, char **ret_msg)
{
	struct perf_event_spec ev[VT_PERF_MAX_EVENTS];
	char bad[80];
	size_t n;
	int clockid, fd = -1;

	*ret_msg = NULL;
	if (c->perf_freq < 1 || c->perf_freq > VT_PERF_FREQ_MAX)
		return perf_config_msg(ret_msg, -ERANGE, "guest perf rate %u Hz is out of range (1..%u)",
				       c->perf_freq, VT_PERF_FREQ_MAX);
	if (c->perf_ring_kb < VT_PERF_RING_KB_MIN || c->perf_ring_kb > VT_PERF_RING_KB_MAX ||
	    (c->perf_ring_kb & (c->perf_ring_kb - 1)))
		return perf_config_msg(ret_msg, -ERANGE, "guest perf ring of %u KiB per CPU: it must be a "
				       "power of two from %u to %u", c->perf_ring_kb, VT_PERF_RING_KB_MIN,
				       VT_PERF_RING_KB_MAX);
	if (!c->perf_events)
		return 0;
	if (perf_events_parse(c->perf_events, ev, &n, bad, sizeof(bad)) < 0)
		return perf_config_msg(ret_msg, -EINVAL, "unknown or repeated guest perf event '%s' (at most "
				       "%u of: %s)", bad, VT_PERF_MAX_EVENTS, perf_events_names());
	clockid = perf_events_clockid(c->clock);
	if (clockid < 0)
		return perf_config_msg(ret_msg, clockid, "trace clock '%s' cannot stamp guest perf records: "
				       "configure mono, mono_raw, boot, tai or x86-tsc", c->clock);
	for (size_t i = 0; i < n; i++) {
		int r = perf_open_event(&ev[i], c->perf_freq, clockid, 0, i == 0, &fd);

		if (r == -EINVAL && c->perf_freq > perf_max_rate())
			return perf_config_msg(ret_msg, r, "guest perf event '%s' at %u Hz: over the guest's "
					       "kernel.perf_event_max_sample_rate (%u): ask for less", ev[i].name,
					       c->perf_freq, perf_max_rate());
		if (r < 0)
			return perf_config_msg(ret_msg, r, "guest perf event '%s': %s%s", ev[i].name,
					       strerror(-r), perf_open_hint(r));
		close(fd);
	}
	return 0;
}

int perf_prepare(struct pump_shared *sh, const struct agent_config *c)
{
	char bad[80];
	int clockid;

	sh->perf_n = 0;
	sh->perf_synth_claimed = 0;
	sh->perf_copy_logged = 0;
	if (!c->perf_events)
		return 0;
	clockid = perf_events_clockid(c->clock);
	if (clockid < 0)
		return clockid;
	if (perf_events_parse(c->perf_events, sh->perf_ev, &sh->perf_n, bad, sizeof(bad)) < 0)
		return -EINVAL;
	sh->perf_freq = c->perf_freq;
	sh->perf_ring_kb = c->perf_ring_kb;
	sh->perf_clockid = clockid;
	return 0;
}

/* Events (leader first, the others into its ring) and the leader's ring mapping. */
static int perf_open_events(struct perf_io *io)
{
	const struct pump_shared *sh = io->sh;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	for (size_t i = 0; i < sh->perf_n; i++) {
		int r = perf_open_event(&sh->perf_ev[i], sh->perf_freq, sh->perf_clockid, io->stats->cpu,
					i == 0, &io->fd[i]);

		if (r < 0)
			return r;
		io->nfd++;
		if (i > 0 && ioctl(io->fd[i], PERF_EVENT_IOC_SET_OUTPUT, io->fd[0]) < 0)
			return -errno;
		if (ioctl(io->fd[i], PERF_EVENT_IOC_ID, &io->ids[i]) < 0)
			return -errno;
	}
	io->data_size = MAX((uint64_t)sh->perf_ring_kb << 10, (uint64_t)page);
	io->map_len = page + (size_t)io->data_size;
	io->map = mmap(NULL, io->map_len, PROT_READ | PROT_WRITE, MAP_SHARED, io->fd[0], 0);
	if (io->map == MAP_FAILED) {
		io->map = NULL;
		return -errno;
	}
	io->meta = io->map;
	io->data = (const uint8_t *)io->map + page;
	return 0;
}

/* Why ring bytes go to this port by write(), or NULL: vmsplice is safe only into a port that
 * copies what it splices before splice() returns (virtio_console copies pages it cannot steal,
 * and vmsplice'd pages without SPLICE_F_GIFT cannot be stolen). A socket or FIFO would keep
 * references to the ring's pages after we advanced data_tail, and the kernel reuses them. */
static const char *perf_copy_reason(int port_fd)
{
	struct stat st;

	if (fstat(port_fd, &st) < 0 || !S_ISCHR(st.st_mode))
		return "the port is a socket or FIFO, which would keep references to the ring's pages";
	return NULL;
}

static void perf_set_copy(struct perf_io *io, const char *why)
{
	io->copy = true;
	/* Once per session, not once per CPU. */
	if (!__atomic_exchange_n(&io->sh->perf_copy_logged, 1, __ATOMIC_ACQ_REL))
		log_info("guest perf: ring records go to the ports by write() from the mapping, one copy "
			 "through user space: %s", why);
}

static int perf_open(struct perf_io *io)
{
	struct port_fds port;
	char name[64];
	const char *why;
	int r = perf_open_events(io);

	if (r < 0)
		return r;
	r = pump_pipe(io->sh->pipe_size, io->sh->page_size, &io->pipe_r, &io->pipe_w, &io->pipe_size);
	if (r < 0)
		return r;
	snprintf(name, sizeof(name), "perf-path-cpu%u", io->stats->cpu);
	r = ports_open(io->sh->ports, name, &port);
	if (r < 0)
		return r;
	io->in = port.rd;
	io->port.fd = port.wr;
	if (fcntl(io->port.fd, F_SETFL, fcntl(io->port.fd, F_GETFL) | O_NONBLOCK) < 0)
		return -errno;
	why = perf_copy_reason(io->port.fd);
	if (why)
		perf_set_copy(io, why);
	return 0;
}

static int perf_ioctl_all(const struct perf_io *io, unsigned long req)
{
	for (size_t i = 0; i < io->nfd; i++)
		if (ioctl(io->fd[i], req, 0) < 0)
			return -errno;
	return 0;
}

static int perf_marker(const struct perf_io *io, enum vt_marker_kind kind)
{
	_cleanup_free_ void *page = malloc(io->sh->page_size);
	struct vt_perf_marker m = { .stats = *io->stats };

	if (!page)
		return -ENOMEM;
	if (kind == VT_MARKER_PERF_BEGIN) {
		m.nr_ids = (uint32_t)io->nfd;
		m.clockid = (uint32_t)io->sh->perf_clockid;
		memcpy(m.ids, io->ids, io->nfd * sizeof(io->ids[0]));
	}
	vt_marker_encode_perf(page, io->sh->page_size, kind, io->sh->session, io->stats->cpu, &m);
	return pump_port_write(&io->port, page, io->sh->page_size);
}

/* len bytes of the ring at pos, as one or two pieces across the wrap: the number of pieces. */
static int perf_ring_iov(const struct perf_io *io, uint64_t pos, size_t len, struct iovec iov[2])
{
	size_t off = (size_t)(pos & (io->data_size - 1)), first = MIN(len, (size_t)io->data_size - off);

	iov[0] = (struct iovec){ .iov_base = (void *)(io->data + off), .iov_len = first };
	iov[1] = (struct iovec){ .iov_base = (void *)io->data, .iov_len = len - first };
	return len > first ? 2 : 1;
}

static void perf_ring_read(const struct perf_io *io, uint64_t pos, void *buf, size_t len)
{
	struct iovec iov[2];
	int n = perf_ring_iov(io, pos, len, iov);

	memcpy(buf, iov[0].iov_base, iov[0].iov_len);
	if (n == 2)
		memcpy((uint8_t *)buf + iov[0].iov_len, iov[1].iov_base, iov[1].iov_len);
}

/* Walks the records from tail towards head, at most limit bytes (but at least one record):
 * where the last whole record ends, its counts added to c. The kernel only publishes whole
 * records; a header that makes no sense ends the walk at head, uncounted (the host resyncs). */
static uint64_t perf_walk(const struct perf_io *io, uint64_t tail, uint64_t head, uint64_t limit,
			  struct vt_perf_stats *c)
{
	uint64_t pos = tail;

	while (pos < head) {
		struct perf_event_header h;

		perf_ring_read(io, pos, &h, sizeof(h));
		if (h.size < sizeof(h) || h.size % 8 || h.size > head - pos) {
			log_debug("cpu%u: perf record of size %u at ring offset %llu: sent unparsed",
				  io->stats->cpu, h.size, (unsigned long long)pos);
			return head;
		}
		if (pos > tail && pos + h.size - tail > limit)
			break;
		c->records++;
		if (h.type == PERF_RECORD_SAMPLE) {
			c->samples++;
		} else if (h.type == PERF_RECORD_LOST && h.size >= 24) {
			uint64_t lost;

			perf_ring_read(io, pos + 16, &lost, sizeof(lost));
			c->lost_records++;
			c->lost += lost;
		}
		pos += h.size;
	}
	return pos;
}

/* vmsplice refused on the ring's mapping (Linux 6.15 and later map it VM_PFNMAP: EFAULT). */
static bool perf_vmsplice_refused(int e)
{
	return e == EFAULT || e == EINVAL || e == ENOSYS || e == EPERM;
}

/* Moves len ring bytes from pos into the port: vmsplice into the pipe, splice into the port,
 * each piece wholly before the next; or write() from the mapping. */
static int perf_send(struct perf_io *io, uint64_t pos, size_t len)
{
	while (len > 0) {
		struct iovec iov[2];
		int niov = perf_ring_iov(io, pos, MIN(len, io->pipe_size), iov), r;
		ssize_t n;

		if (io->copy) {
			n = pump_port_step(&io->port, writev(io->port.fd, iov, niov));
		} else {
			n = vmsplice(io->pipe_w, iov, (unsigned long)niov, SPLICE_F_NONBLOCK);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0 && perf_vmsplice_refused(errno)) {
				char why[128];

				snprintf(why, sizeof(why), "this kernel refuses vmsplice() of the perf ring (%s)",
					 strerror(errno));
				perf_set_copy(io, why);
				continue;
			}
			if (n <= 0)
				return n < 0 ? -errno : -EIO;
			r = pump_port_splice(&io->port, io->pipe_r, (size_t)n);
			if (r < 0)
				return r;
		}
		if (n < 0)
			return (int)n;
		pos += (uint64_t)n;
		len -= (size_t)n;
	}
	return 0;
}

static void perf_stats_add(struct vt_perf_stats *s, const struct vt_perf_stats *c, uint64_t bytes)
{
	s->bytes_sent += bytes;
	s->records += c->records;
	s->samples += c->samples;
	s->lost_records += c->lost_records;
	s->lost += c->lost;
}

/* Sends what the ring holds now in record-aligned pieces of at most a pipe; data_tail moves on
 * only once the port has taken every byte of a piece (then the kernel may reuse the space). */
static int perf_move(struct perf_io *io)
{
	uint64_t head = __atomic_load_n(&io->meta->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = io->meta->data_tail;

	while (tail < head) {
		struct vt_perf_stats c = { 0 };
		uint64_t end = perf_walk(io, tail, head, io->pipe_size, &c);
		int r = perf_send(io, tail, (size_t)(end - tail));

		if (r < 0)
			return r;
		perf_stats_add(io->stats, &c, end - tail);
		__atomic_store_n(&io->meta->data_tail, end, __ATOMIC_RELEASE);
		tail = end;
	}
	return 0;
}

/* FLUSH: the ring's records up to now, then a perf flush marker with the request's seq and the
 * perf clock read before the drain. This thread runs on the ring's CPU, so every record of it
 * with an earlier time is committed when the drain reads data_head (docs/protocol.md §3). */
static int perf_flush_now(struct perf_io *io)
{
	_cleanup_free_ void *page = NULL;
	struct vt_flush_marker f = { .guest_time = util_now_ns(io->sh->perf_clockid) };
	struct vt_perf_marker m;
	uint64_t v;
	int r;

	if (read(io->self->flush_efd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		return -errno;
	if ((r = perf_move(io)) < 0)
		return r;
	f.seq = __atomic_load_n(&io->self->flush_seq, __ATOMIC_ACQUIRE);
	m = (struct vt_perf_marker){ .nr_ids = (uint32_t)io->nfd, .clockid = (uint32_t)io->sh->perf_clockid,
				     .stats = *io->stats };
	memcpy(m.ids, io->ids, io->nfd * sizeof(io->ids[0]));
	if (!(page = malloc(io->sh->page_size)))
		return -ENOMEM;
	vt_marker_encode_perf_flush(page, io->sh->page_size, io->sh->session, io->stats->cpu, &m, &f);
	return pump_port_write(&io->port, page, io->sh->page_size);
}

/* Waits for the ring's watermark (half the ring), flush_ms, a flush request, or stop. */
static int perf_loop(struct perf_io *io)
{
	struct pollfd pfd[4] = { { .fd = io->fd[0], .events = POLLIN },
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
		if (pfd[2].revents)
			return -ECANCELED;
		if (pfd[1].revents)
			return 0;
		if (pfd[0].revents & (POLLERR | POLLHUP | POLLNVAL))
			return -EIO;
		r = pfd[3].revents ? perf_flush_now(io) : perf_move(io);
		if (r < 0)
			return r;
	}
}

/* After DISABLE nothing more is written: send the ring's rest. */
static int perf_drain(struct perf_io *io)
{
	uint64_t head;
	int r;

	do {
		head = __atomic_load_n(&io->meta->data_head, __ATOMIC_ACQUIRE);
		r = perf_move(io);
	} while (r == 0 && __atomic_load_n(&io->meta->data_head, __ATOMIC_ACQUIRE) != head);
	return r;
}

/* Task records of the tasks alive now, stamped before the events were enabled so that the
 * stream stays in time order; written by the first stream to start only. */
static int perf_synth(struct perf_io *io, uint64_t time)
{
	uint64_t records = 0, bytes = 0;
	int r = perf_synth_tasks(&io->port, io->stats->cpu, io->ids[0], time, &records, &bytes);

	io->stats->synth_records += records;
	io->stats->records += records;
	io->stats->bytes_sent += bytes;
	return r;
}

/* The stream for one session: begin marker, task records, ring records, end marker. */
static int perf_stream(struct perf_io *io, bool *ready_sent)
{
	uint64_t t0 = 0;
	int r = perf_open(io);

	io->port.wait_ms = PUMP_BEGIN_MS;
	if (r == 0)
		r = perf_marker(io, VT_MARKER_PERF_BEGIN);
	io->port.wait_ms = -1;
	if (r == 0) {
		t0 = util_now_ns(io->sh->perf_clockid);
		r = perf_ioctl_all(io, PERF_EVENT_IOC_ENABLE);
	}
	io->stats->error = r; /* main reads it once ready_efd says so */
	pump_signal(io->sh->ready_efd);
	*ready_sent = true;
	if (r < 0)
		return r;
	if (!__atomic_exchange_n(&io->sh->perf_synth_claimed, 1, __ATOMIC_ACQ_REL))
		r = perf_synth(io, t0);
	if (r == 0)
		r = perf_loop(io);
	(void)perf_ioctl_all(io, PERF_EVENT_IOC_DISABLE);
	if (r == 0)
		r = perf_drain(io);
	if (r == 0)
		r = perf_marker(io, VT_MARKER_PERF_END);
	return r;
}

static void *perf_thread(void *arg)
{
	struct perf_pump *p = arg;
	struct perf_io io = { .pipe_r = -1, .pipe_w = -1, .in = -1,
			      .port = { .fd = -1, .abort_efd = p->sh->abort_efd, .wait_ms = -1 },
			      .sh = p->sh, .stats = &p->stats, .self = p };
	bool ready_sent = false;
	int r = perf_stream(&io, &ready_sent);

	if (r < 0)
		p->stats.error = r;
	perf_io_close(&io);
	if (!ready_sent)
		pump_signal(p->sh->ready_efd);
	pump_signal(p->sh->done_efd);
	return NULL;
}

int perf_start(struct perf_pump *p)
{
	int r;

	p->stats = (struct vt_perf_stats){ .cpu = p->cpu };
	p->flush_seq = 0;
	p->flush_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (p->flush_efd < 0)
		return -errno;
	r = pump_thread_pinned(&p->thread, p->cpu, perf_thread, p);
	p->thread_started = r == 0;
	if (r < 0) {
		close(p->flush_efd);
		p->flush_efd = -1;
	}
	return r;
}

void perf_flush(struct perf_pump *p, uint64_t seq)
{
	if (!p->thread_started)
		return;
	__atomic_store_n(&p->flush_seq, seq, __ATOMIC_RELEASE);
	pump_signal(p->flush_efd);
}

void perf_join(struct perf_pump *p)
{
	if (p->thread_started)
		pthread_join(p->thread, NULL);
	p->thread_started = false;
	if (p->flush_efd >= 0)
		close(p->flush_efd);
	p->flush_efd = -1;
}
