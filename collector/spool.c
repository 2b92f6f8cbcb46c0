// SPDX-License-Identifier: GPL-2.0-only
/* One CPU's data port spliced into cpuN.spool (port -> pipe -> file, no copy through user
 * space), and the scan of what was spooled: this session's begin marker, page heads and
 * the end marker, read back with small preads of the spool. */
#include <endian.h>
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>

#include "collector.h"
#include "log.h"
#include "util.h"

#define SPLICE_CHUNK (1u << 20)
#define ROUNDS_PER_WAKE 16
#define RATE_SLOTS 6
#define PAGE_HDR 16
#define COMMIT_SIZE_MASK ((1u << 27) - 1)
#define RB_MISSED_EVENTS (1ull << 31)
#define RB_MISSED_STORED (1ull << 30)
#define SCAN_CHUNK 65536

struct spool {
	struct daemon *d;
	unsigned cpu;
	struct port *port;
	struct event *ev;
	int pipe[2];
	int fd;      /* cpuN.spool, written by splice */
	int rfd;     /* cpuN.spool, read back by the scan */
	int null_fd; /* /dev/null, for discarding */
	bool discard;
	uint64_t session_id;
	uint32_t page_size;
	uint64_t scan_off;  /* next byte (before begin) or page (after) to scan */
	uint8_t *page;      /* one page, for marker decoding */
	struct spool_stats st;
	uint64_t rate_t[RATE_SLOTS], rate_b[RATE_SLOTS];
	unsigned rate_i;
};

static int spool_open_files(struct spool *s, const char *session_dir)
{
	char path[PATH_MAX + 32];

	snprintf(path, sizeof(path), "%s/cpu%u.spool", session_dir, s->cpu);
	s->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (s->fd < 0)
		return -errno;
	s->rfd = open(path, O_RDONLY | O_CLOEXEC);
	if (s->rfd < 0)
		return -errno;
	s->null_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (s->null_fd < 0 || pipe2(s->pipe, O_CLOEXEC) < 0)
		return -errno;
	/* A big pipe means fewer, larger splices; pipe-max-size bounds it. */
	fcntl(s->pipe[1], F_SETPIPE_SZ, (int)SPLICE_CHUNK);
	return 0;
}

int spool_new(struct daemon *d, unsigned cpu, struct port *port, const char *session_dir,
	      uint64_t session_id, uint32_t page_size, struct spool **ret)
{
	struct spool *s = calloc(1, sizeof(*s));
	int r;

	if (!s)
		return -ENOMEM;
	*s = (struct spool){ .d = d, .cpu = cpu, .port = port, .pipe = { -1, -1 }, .fd = -1, .rfd = -1,
			     .null_fd = -1, .session_id = session_id, .page_size = page_size };
	s->page = malloc(page_size);
	r = s->page ? spool_open_files(s, session_dir) : -ENOMEM;
	if (r < 0) {
		spool_free(s);
		return r;
	}
	*ret = s;
	return 0;
}

void spool_free(struct spool *s)
{
	if (!s)
		return;
	if (s->ev)
		event_free(s->ev);
	for (int i = 0; i < 2; i++)
		if (s->pipe[i] >= 0)
			close(s->pipe[i]);
	if (s->fd >= 0)
		close(s->fd);
	if (s->rfd >= 0)
		close(s->rfd);
	if (s->null_fd >= 0)
		close(s->null_fd);
	free(s->page);
	free(s);
}

static uint64_t get_le64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return le64toh(v); }

/* Reads len bytes of the spool at off into buf. */
static int spool_pread(struct spool *s, void *buf, size_t len, uint64_t off)
{
	ssize_t n = pread(s->rfd, buf, len, (off_t)off);

	return n == (ssize_t)len ? 0 : n < 0 ? -errno : -EIO;
}

/* Before the begin marker: search byte by byte (stale bytes need not be page aligned). */
static void spool_find_begin(struct spool *s)
{
	static const uint8_t magic[8] = { 'V', 'I', 'R', 'T', 'M', 'A', 'R', 'K' };
	uint8_t buf[SCAN_CHUNK];
	struct vt_marker m;

	while (!s->st.begun && s->scan_off + s->page_size <= s->st.spooled) {
		size_t n = (size_t)MIN((uint64_t)sizeof(buf), s->st.spooled - s->scan_off);
		const uint8_t *hit;

		if (spool_pread(s, buf, n, s->scan_off) < 0)
			return;
		hit = memmem(buf, n, magic, sizeof(magic));
		if (!hit) {
			s->scan_off += n > 7 ? n - 7 : n;
			continue;
		}
		s->scan_off += (uint64_t)(hit - buf);
		if (s->scan_off + s->page_size > s->st.spooled ||
		    spool_pread(s, s->page, s->page_size, s->scan_off) < 0)
			return; /* wait for the whole page */
		if (vt_marker_decode(s->page, s->page_size, &m) == 1 && m.kind == VT_MARKER_BEGIN &&
		    m.session_id == s->session_id && m.cpu == s->cpu) {
			s->st.begun = true;
			s->st.stale = s->scan_off;
			s->scan_off += s->page_size;
			return;
		}
		s->st.bad_markers += m.magic == VT_MARKER_MAGIC;
		s->scan_off++;
	}
}

static void spool_marker_page(struct spool *s)
{
	struct vt_marker m = { 0 };

	if (spool_pread(s, s->page, s->page_size, s->scan_off) == 0 &&
	    vt_marker_decode(s->page, s->page_size, &m) == 1 && m.kind == VT_MARKER_END &&
	    m.session_id == s->session_id && m.cpu == s->cpu) {
		s->st.ended = true;
		s->st.end = m.stats;
		return;
	}
	s->st.bad_markers++;
}

static void spool_ring_page(struct spool *s, uint64_t commit)
{
	uint64_t size = commit & COMMIT_SIZE_MASK, missed;
	uint8_t cnt[8];

	s->st.pages++;
	if (size > s->page_size - PAGE_HDR) {
		s->st.bad_pages++;
		return;
	}
	s->st.data_bytes += size;
	if (!(commit & RB_MISSED_EVENTS))
		return;
	s->st.missed_pages++;
	/* The kernel stores the count after the data when there is room for it. */
	if ((commit & RB_MISSED_STORED) && size + 8 <= s->page_size - PAGE_HDR &&
	    spool_pread(s, cnt, 8, s->scan_off + PAGE_HDR + size) == 0) {
		missed = get_le64(cnt);
		if (missed < (1ull << 40))
			s->st.missed_events += missed;
	}
}

/* After the begin marker: one 16-byte head per page; whole pages only for markers. */
static void spool_scan_pages(struct spool *s)
{
	uint8_t head[PAGE_HDR];

	while (!s->st.ended && s->scan_off + s->page_size <= s->st.spooled) {
		if (spool_pread(s, head, sizeof(head), s->scan_off) < 0)
			return;
		if (get_le64(head) == VT_MARKER_MAGIC && get_le64(head + 8) == VT_MARKER_COMMIT)
			spool_marker_page(s);
		else
			spool_ring_page(s, get_le64(head + 8));
		s->scan_off += s->page_size;
	}
}

static void spool_scan(struct spool *s)
{
	if (!s->st.begun)
		spool_find_begin(s);
	if (s->st.begun)
		spool_scan_pages(s);
}

/* Moves n bytes from the pipe into the spool (or /dev/null); -errno on a write failure. */
static int spool_flush_pipe(struct spool *s, size_t n)
{
	while (n > 0) {
		int out = s->discard ? s->null_fd : s->fd;
		ssize_t w = splice(s->pipe[0], NULL, out, NULL, n, SPLICE_F_MOVE);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			int err = w < 0 ? -errno : -EIO;

			if (s->discard)
				return err;
			s->discard = true; /* keep reading the port; drop the rest */
			daemon_spool_error(s->d, s->cpu, err);
			continue;
		}
		n -= (size_t)w;
		if (s->discard)
			s->st.discarded += (uint64_t)w;
		else
			s->st.spooled += (uint64_t)w;
	}
	return 0;
}

static void spool_readable(evutil_socket_t fd, short what, void *arg)
{
	spool_poll(arg);
}

void spool_poll(struct spool *s)
{
	int fd = s->port->rfd;

	for (int i = 0; i < ROUNDS_PER_WAKE; i++) {
		ssize_t n = splice(fd, NULL, s->pipe[1], NULL, SPLICE_CHUNK, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			break;
		if (n <= 0) {
			if (s->ev)
				event_del(s->ev);
			daemon_spool_error(s->d, s->cpu, n == 0 ? -EPIPE : -errno);
			break;
		}
		if (spool_flush_pipe(s, (size_t)n) < 0) {
			if (s->ev)
				event_del(s->ev);
			break;
		}
		daemon_spool_progress(s->d, s->cpu); /* limits act within one wake-up */
	}
	if (!s->discard)
		spool_scan(s);
	daemon_spool_progress(s->d, s->cpu);
}

int spool_arm(struct spool *s, struct event_base *base)
{
	s->ev = event_new(base, s->port->rfd, EV_READ | EV_PERSIST, spool_readable, s);
	if (!s->ev || event_add(s->ev, NULL) < 0)
		return -ENOMEM;
	return 0;
}

/* The port was reopened (socket reconnect): watch its new fd. */
int spool_rearm(struct spool *s, struct event_base *base)
{
	if (s->ev)
		event_free(s->ev);
	s->ev = NULL;
	return spool_arm(s, base);
}

void spool_discard(struct spool *s)
{
	s->discard = true;
}

/* A CPU without a spool (its port is missing, --allow-partial) reads as an empty one. */
void spool_stats(const struct spool *s, struct spool_stats *ret)
{
	*ret = s ? s->st : (struct spool_stats){ 0 };
}

void spool_rate_tick(struct spool *s, uint64_t now_ns)
{
	s->rate_i = (s->rate_i + 1) % RATE_SLOTS;
	s->rate_t[s->rate_i] = now_ns;
	s->rate_b[s->rate_i] = s->st.spooled + s->st.discarded;
}

double spool_rate(const struct spool *s)
{
	unsigned old;
	uint64_t dt;

	if (!s)
		return 0;
	/* The oldest tick taken: right after start only a few slots are filled. */
	old = (s->rate_i + 1) % RATE_SLOTS;
	while (!s->rate_t[old] && old != s->rate_i)
		old = (old + 1) % RATE_SLOTS;
	dt = s->rate_t[s->rate_i] - s->rate_t[old];
	if (dt == 0)
		return 0.0;
	return (double)(s->rate_b[s->rate_i] - s->rate_b[old]) / ((double)dt / 1e9) / 1e6;
}
