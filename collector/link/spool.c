// SPDX-License-Identifier: GPL-2.0-only
/* One CPU's data port into cpuN.spool (perf-path-cpuN: perf-cpuN.spool), and the scan of what
 * was spooled: this session's begin marker, page heads (perf: record heads) and the end marker.
 *
 * Why not splice into the file: the kernel's buffered file write (page-cache allocation and
 * copy) costs ~2.7 s of CPU per GB on these hosts, whatever moves the bytes (dd, cp, splice).
 * The port is read into one reused, page-aligned buffer and written in whole SPOOL_BUF blocks
 * with O_DIRECT (~0.1 s per GB); the scan reads the buffer, and the file only for what was
 * already written. The rest of the buffer (its whole 4 KiB blocks O_DIRECT too, the last partial
 * one through a buffered fd) is written at the end of a wake-up PERSIST_NS after the last such
 * write, every second, for each status, snapshot and at finalize: a SIGKILLed daemon loses at
 * most the bytes of the last 0.5 s (a second when the port went quiet), never what status has
 * shown. The live merge needs no more: it waits for host.data's horizon, which comes every
 * 0.5 s. Every 100 ms cost the daemon ~10% of its CPU at 2 MB/s per vCPU (bench/RESULTS.md). */
#include <endian.h>
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/falloc.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <string.h>

#include "collector.h"
#include "log.h"
#include "marker.h"
#include "ports.h"
#include "proto.h"
#include "spool-side.h"
#include "spool.h"
#include "util.h"

/* SPOOL_BUF (spool.h): per CPU; a multiple of any O_DIRECT alignment */
#define PERSIST_NS 500000000ull
/* 256 KiB a read, up to 1 MiB a wake-up: at 2 MB/s/vCPU QEMU leaves ~0.5 MiB in the FIFO
 * between wake-ups, which took 8 reads of 64 KiB. The disk checks step by 256 KiB anyway
 * (DISK_CHECK_STEP, daemon/streams.c), so the limits act as before. */
#define ROUNDS_PER_WAKE 4
#define READ_MAX (256u << 10)
#define RATE_SLOTS 6
#define PAGE_HDR 16
#define COMMIT_SIZE_MASK ((1u << 27) - 1)
#define RB_MISSED_EVENTS (1ull << 31)
#define RB_MISSED_STORED (1ull << 30)
#define SCAN_CHUNK 65536
#define SPOOL_ALIGN 4096u /* the unit of holes: a file system block */

struct spool {
	struct spool_ops ops;
	unsigned cpu;
	bool perf;    /* perf-path-cpuN: records between perf markers, not ring pages */
	struct port *port;
	struct event *ev;
	struct event *batch_ev; /* a FIFO with a large buffer: a wake-up that found little waits */
	bool port_failed;       /* EOF or an error: the port is not watched again */
	int fd;       /* cpuN.spool, whole blocks (O_DIRECT where the file system has it) */
	int tail_fd;  /* cpuN.spool, buffered: the partial block */
	int rfd;      /* cpuN.spool, read back by the scan */
	uint8_t *buf; /* SPOOL_BUF bytes, page aligned: the file from offset flushed on */
	size_t fill, persisted; /* bytes in buf; of them, already in the file */
	size_t direct;          /* of them, the whole SPOOL_ALIGN blocks written through fd */
	uint64_t flushed;       /* file offset of buf[0] */
	uint64_t persist_ns;    /* when the partial block was last written */
	bool discard;
	uint64_t fr_bytes;  /* --flight-recorder: the newest bytes kept; 0 = everything */
	uint64_t fr_hole_end; /* the hole at the front of the data ends here */
	struct spool_side *side; /* perf with --flight-recorder: task records of what was freed */
	uint64_t *fm;       /* ftrace with --flight-recorder: offsets of flush marker pages not freed */
	size_t fm_n, fm_cap;
	bool fm_full;       /* one more than FM_MAX: the count of freed marker pages stops (logged) */
	char *dir;          /* the session dir (perf-cpuN.side) */
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

	snprintf(path, sizeof(path), "%s/%scpu%u.spool", session_dir, s->perf ? "perf-" : "", s->cpu);
	s->tail_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (s->tail_fd < 0)
		return -errno;
	s->fd = open(path, O_WRONLY | O_DIRECT | O_CLOEXEC);
	if (s->fd < 0 && errno == EINVAL) /* tmpfs and friends: buffered writes it is */
		s->fd = open(path, O_WRONLY | O_CLOEXEC);
	if (s->fd < 0)
		return -errno;
	s->rfd = open(path, O_RDONLY | O_CLOEXEC);
	if (s->rfd < 0)
		return -errno;
	if (posix_memalign((void **)&s->buf, 65536, SPOOL_BUF) != 0)
		return -ENOMEM;
	return 0;
}

int spool_new(const struct spool_ops *ops, unsigned cpu, bool perf, struct port *port, const char *session_dir,
	      uint64_t session_id, uint32_t page_size, struct spool **ret)
{
	struct spool *s = calloc(1, sizeof(*s));
	int r;

	if (!s)
		return -ENOMEM;
	*s = (struct spool){ .ops = *ops, .cpu = cpu, .perf = perf, .port = port, .fd = -1, .tail_fd = -1,
			     .rfd = -1, .session_id = session_id, .page_size = page_size };
	s->page = malloc(page_size);
	s->dir = strdup(session_dir);
	r = s->page && s->dir ? spool_open_files(s, session_dir) : -ENOMEM;
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
	if (s->batch_ev)
		event_free(s->batch_ev);
	(void)spool_persist(s);
	if (s->fd >= 0)
		close(s->fd);
	if (s->tail_fd >= 0)
		close(s->tail_fd);
	if (s->rfd >= 0)
		close(s->rfd);
	free(s->buf);
	free(s->page);
	free(s->dir);
	free(s->fm);
	spool_side_free(s->side);
	free(s);
}

static uint64_t get_le64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return le64toh(v); }

/* Reads len bytes of the spool at off into buf: the file up to s->flushed, the buffer after. */
static int spool_pread(struct spool *s, void *buf, size_t len, uint64_t off)
{
	uint8_t *out = buf;

	if (off + len > s->flushed + s->fill)
		return -EIO;
	if (off < s->flushed) {
		size_t from_file = (size_t)MIN((uint64_t)len, s->flushed - off);
		ssize_t n = pread(s->rfd, out, from_file, (off_t)off);

		if (n != (ssize_t)from_file)
			return n < 0 ? -errno : -EIO;
		out += from_file, off += from_file, len -= from_file;
	}
	if (len)
		memcpy(out, s->buf + (off - s->flushed), len);
	return 0;
}

/* Writes what the buffer holds beyond what the file has: its whole SPOOL_ALIGN blocks through
 * fd (O_DIRECT: a buffered write's page-cache copy, and the writeback the next direct write of
 * those blocks forces, cost the daemon ~20% of its CPU at 2 MB/s per vCPU: RESULTS.md), only
 * the last partial block through the buffered fd. */
int spool_persist(struct spool *s)
{
	size_t whole = s ? s->fill & ~(size_t)(SPOOL_ALIGN - 1) : 0;

	if (s)
		s->persist_ns = util_now_ns(CLOCK_MONOTONIC);
	while (s && s->direct < whole) {
		ssize_t w = pwrite(s->fd, s->buf + s->direct, whole - s->direct, (off_t)(s->flushed + s->direct));

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		s->direct += (size_t)w; /* a short O_DIRECT write leaves it aligned */
		s->persisted = MAX(s->persisted, s->direct);
	}
	while (s && s->persisted < s->fill) {
		ssize_t w = pwrite(s->tail_fd, s->buf + s->persisted, s->fill - s->persisted,
				   (off_t)(s->flushed + s->persisted));

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		s->persisted += (size_t)w;
	}
	return 0;
}

void spool_flight_recorder(struct spool *s, uint64_t bytes)
{
	s->fr_bytes = bytes;
	if (bytes && s->perf && !s->side && spool_side_new(s->dir, s->cpu, s->session_id, &s->side) < 0) {
		s->fr_bytes = 0;
		log_warn("cpu%u: no memory for the flight recorder's table of perf-cpu%u.spool: not bounded",
			 s->cpu, s->cpu);
	}
}

/* A flush marker page at off in the window of an ftrace spool with --flight-recorder. */
#define FM_MAX (1u << 20) /* 8 MiB: a flush a second for 12 days of a quiet CPU's window */
static void spool_fm_add(struct spool *s, uint64_t off)
{
	if (s->fm_n == s->fm_cap && !s->fm_full) {
		size_t cap = s->fm_cap ? s->fm_cap * 2 : 64;
		uint64_t *v = cap <= FM_MAX ? realloc(s->fm, cap * sizeof(*v)) : NULL;

		if (!v) {
			s->fm_full = true;
			log_warn("cpu%u: the flight recorder stops counting the flush marker pages it frees (%zu in the "
				 "window): the merge may take some for data pages dropped and not see as many lost in transport",
				 s->cpu, s->fm_n);
		} else {
			s->fm = v, s->fm_cap = cap;
		}
	}
	if (s->fm_n < s->fm_cap)
		s->fm[s->fm_n++] = off;
}

/* The flush marker pages in the hole, which now ends at to: counted in cpuN.fr (tmp + rename),
 * so that the merge counts as dropped only the ring pages it lost there, and a page lost in
 * transport is not taken for one. */
static int spool_fm_freed(struct spool *s, uint64_t to)
{
	char path[PATH_MAX + 32], tmp[PATH_MAX + 40], text[64];
	size_t k = 0;
	int n;

	while (k < s->fm_n && s->fm[k] < to)
		k++;
	if (!k)
		return 0;
	memmove(s->fm, s->fm + k, (s->fm_n - k) * sizeof(*s->fm));
	s->fm_n -= k;
	s->st.fr_flush_pages += k;
	snprintf(path, sizeof(path), "%s/cpu%u.fr", s->dir, s->cpu);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	n = snprintf(text, sizeof(text), "flush_pages=%" PRIu64 "\n", s->st.fr_flush_pages);
	if (util_write_file(tmp, text, (size_t)n, 0600) < 0 || rename(tmp, path) < 0)
		return -errno;
	return 0;
}

/* The tables of the session's other guest perf streams (NULL for one without: it keeps everything). */
static size_t spool_side_peers(const struct spool *s, struct spool_side **ret)
{
	struct spool *const *all = s->ops.peers ? s->ops.peers(s->ops.userdata) : NULL;
	size_t n = 0;

	for (unsigned cpu = 0; all && cpu < COLLECTOR_MAX_CPUS; cpu++) {
		const struct spool *p = all[SPOOL_INDEX(cpu, true)];

		if (p && p != s)
			ret[n++] = p->side;
	}
	return n;
}

/* The flight recorder: the oldest whole file blocks of data beyond the newest fr_bytes become a
 * hole (FALLOC_FL_PUNCH_HOLE): the disk holds at most fr_bytes + one block; offsets stay, so
 * the merge finds the first data with SEEK_DATA and starts at the next whole page. The begin
 * marker page stays. A perf stream is cut at a record boundary once it is a step past the
 * window (perf-cpuN.side then holds the task records the merge still needs and where the
 * records go on): at most fr_bytes + max(1 MiB, fr_bytes / 8) + one block on disk. */
static int spool_drop_oldest(struct spool *s)
{
	uint64_t from, to, data_start = s->st.stale + s->page_size, hole_end;
	int r;

	if (!s->fr_bytes || !s->st.begun || s->flushed <= s->fr_bytes)
		return 0;
	to = (s->flushed - s->fr_bytes) / SPOOL_ALIGN * SPOOL_ALIGN;
	from = MAX(s->fr_hole_end, (data_start + SPOOL_ALIGN - 1) / SPOOL_ALIGN * SPOOL_ALIGN);
	if (s->perf) { /* a step at a time: each cut rewrites perf-cpuN.side */
		struct spool_side *peers[COLLECTOR_MAX_CPUS];

		r = spool_side_cut(s->side, s->flushed - s->fr_bytes, data_start, MAX(1u << 20, s->fr_bytes / 8),
				   peers, spool_side_peers(s, peers), &hole_end);
		if (r < 0) /* the bound cannot hold: as for a hole that cannot be punched */
			log_error("cpu%u: --flight-recorder cannot write %s/perf-cpu%u.side (%s): free space there, or "
				  "start without --flight-recorder; what was spooled is kept", s->cpu, s->dir, s->cpu,
				  strerror(-r));
		if (r <= 0)
			return r;
		to = hole_end / SPOOL_ALIGN * SPOOL_ALIGN;
	}
	if (to <= from)
		return 0;
	if (fallocate(s->tail_fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)from, (off_t)(to - from)) < 0) {
		r = -errno;
		/* The bound cannot hold: the session stops (what was spooled is kept). */
		log_error("cpu%u: --flight-recorder cannot free the oldest blocks of %scpu%u.spool (fallocate "
			  "PUNCH_HOLE: %s): put the VM dir on a file system that punches holes (ext4, xfs, btrfs, "
			  "tmpfs), or start without --flight-recorder", s->cpu, s->perf ? "perf-" : "", s->cpu,
			  strerror(-r));
		return r;
	}
	s->fr_hole_end = to;
	s->st.fr_dropped += to - from;
	if (!s->perf && (r = spool_fm_freed(s, to)) < 0)
		log_warn("cpu%u: cannot write %s/cpu%u.fr (%s): the merge may take freed flush marker pages for "
			 "dropped ring pages", s->cpu, s->dir, s->cpu, strerror(-r));
	return 0;
}

/* cpuN.released (util_replace_file): the merge counts the pages of the front hole as freed behind
 * the live merge, not as the flight recorder's, and an offline merge says what it lacks. */
static int spool_released_note(struct spool *s)
{
	char name[48], text[96];
	int n;

	snprintf(name, sizeof(name), "cpu%u.released", s->cpu);
	n = snprintf(text, sizeof(text), "released=%" PRIu64 "\nhole_end=%" PRIu64 "\n", s->st.released,
		     s->fr_hole_end);
	return util_replace_file(s->dir, name, text, (size_t)n);
}

int64_t spool_release(struct spool *s, uint64_t upto)
{
	uint64_t data_start = s->st.stale + s->page_size, from, to;
	int r;

	if (s->perf || !s->st.begun || s->discard)
		return 0;
	/* only blocks in the file, and behind the daemon's own scan */
	to = MIN(upto, MIN(s->flushed, s->scan_off)) / SPOOL_ALIGN * SPOOL_ALIGN;
	from = MAX(s->fr_hole_end, (data_start + SPOOL_ALIGN - 1) / SPOOL_ALIGN * SPOOL_ALIGN);
	if (to <= from)
		return 0;
	if (fallocate(s->tail_fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)from, (off_t)(to - from)) < 0)
		return -errno;
	s->fr_hole_end = to;
	s->st.released += to - from;
	if (s->fr_bytes && (r = spool_fm_freed(s, to)) < 0)
		log_warn("cpu%u: cannot write %s/cpu%u.fr (%s): the merge may take freed flush marker pages for "
			 "dropped ring pages", s->cpu, s->dir, s->cpu, strerror(-r));
	if ((r = spool_released_note(s)) < 0)
		log_warn("cpu%u: cannot write %s/cpu%u.released (%s): an offline merge of the session dir will "
			 "count the freed pages as the flight recorder's", s->cpu, s->dir, s->cpu, strerror(-r));
	return (int64_t)(to - from);
}

/* The full buffer as one block at an aligned offset, then the buffer starts over. */
static int spool_write_block(struct spool *s)
{
	size_t done = s->direct; /* the blocks persist wrote already */

	while (done < SPOOL_BUF) {
		ssize_t w = pwrite(s->fd, s->buf + done, SPOOL_BUF - done, (off_t)(s->flushed + done));

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		done += (size_t)w; /* O_DIRECT writes whole blocks; a short one leaves done aligned */
	}
	s->flushed += SPOOL_BUF;
	s->fill = s->persisted = s->direct = 0;
	return spool_drop_oldest(s);
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
		if (vt_marker_decode(s->page, s->page_size, &m) == 1 &&
		    m.kind == (s->perf ? VT_MARKER_PERF_BEGIN : VT_MARKER_BEGIN) &&
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

/* This session's end marker, a flush marker (FLUSH answered: everything the ring held at the
 * request is before it), or a marker that is not ours. */
static void spool_marker_page(struct spool *s)
{
	struct vt_marker m = { 0 };
	struct vt_flush_marker f;

	if (spool_pread(s, s->page, s->page_size, s->scan_off) == 0 &&
	    vt_marker_decode(s->page, s->page_size, &m) == 1 && m.session_id == s->session_id && m.cpu == s->cpu) {
		if (m.kind == VT_MARKER_END) {
			s->st.ended = true;
			s->st.end = m.stats;
			return;
		}
		if (m.kind == VT_MARKER_FLUSH && vt_marker_decode_flush(s->page, s->page_size, &m, &f) == 0) {
			s->st.flush_markers++;
			s->st.flush_seq = f.seq;
			if (s->fr_bytes)
				spool_fm_add(s, s->scan_off);
			return;
		}
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

/* A perf marker at a record boundary: this session's end, a flush marker (FLUSH's answer: the
 * ring was drained up to here), or a marker that is not ours. */
static void spool_perf_marker(struct spool *s)
{
	struct vt_marker m = { 0 };
	struct vt_perf_marker pm;
	struct vt_flush_marker f;

	if (spool_pread(s, s->page, s->page_size, s->scan_off) == 0 &&
	    vt_marker_decode(s->page, s->page_size, &m) == 1 && m.session_id == s->session_id && m.cpu == s->cpu &&
	    vt_marker_decode_perf(s->page, s->page_size, &m, &pm) == 0) {
		if (m.kind == VT_MARKER_PERF_END) {
			s->st.ended = true;
			s->st.perf_end = pm.stats;
			return;
		}
		if (m.kind == VT_MARKER_PERF_FLUSH && vt_marker_decode_flush(s->page, s->page_size, &m, &f) == 0) {
			s->st.flush_markers++;
			s->st.flush_seq = f.seq;
			s->scan_off += s->page_size;
			if (s->side)
				spool_side_flush_marker(s->side);
			return;
		}
	}
	s->st.bad_markers++;
	s->scan_off += 8; /* not ours: walk on (the merge validates again) */
}

/* --flight-recorder: where records start, and the task and mapping records, into the table. */
static void spool_side_record(struct spool *s, uint32_t type, uint16_t size)
{
	uint8_t *buf = spool_side_buf(s->side);
	bool mark = spool_side_marks(s->side, s->scan_off), want = spool_side_wants(type);
	bool got = (mark || want) && spool_pread(s, buf, size, s->scan_off) == 0;
	int r = mark ? spool_side_mark(s->side, s->scan_off, s->st.records, s->st.samples, got ? buf : NULL, size) : 0;

	/* a record too short for its type is not kept (the merge drops it too) */
	if (r == 0 && want && got)
		r = spool_side_add(s->side, s->scan_off, buf, size) == -ENOMEM ? -ENOMEM : 0;
	if (r < 0) {
		log_error("cpu%u: no memory for the flight recorder's table of perf-cpu%u.spool: the stream "
			  "is no longer bounded", s->cpu, s->cpu);
		spool_side_free(s->side);
		s->side = NULL;
		s->fr_bytes = 0;
	}
}

/* After a perf begin marker: one 8-byte header per record (the LOST count too); records are
 * validated again by the merge, here they are only counted. A size that cannot be a record's
 * moves on by 8 bytes (counted). */
static void spool_scan_records(struct spool *s)
{
	uint8_t head[24];

	while (!s->st.ended && s->scan_off + 8 <= s->st.spooled) {
		uint32_t type;
		uint16_t size;

		if (spool_pread(s, head, 8, s->scan_off) < 0)
			return;
		if (get_le64(head) == VT_MARKER_MAGIC) {
			if (s->scan_off + s->page_size > s->st.spooled)
				return; /* wait for the whole marker */
			spool_perf_marker(s);
			continue;
		}
		memcpy(&type, head, 4), memcpy(&size, head + 6, 2);
		type = le32toh(type), size = le16toh(size);
		if (size < 8 || size % 8) {
			s->st.bad_pages++;
			s->scan_off += 8;
			continue;
		}
		if (s->scan_off + size > s->st.spooled)
			return;
		if (s->side)
			spool_side_record(s, type, size);
		s->st.records++;
		s->st.data_bytes += size;
		s->st.samples += type == PERF_RECORD_SAMPLE;
		if (type == PERF_RECORD_LOST && size >= 24 && spool_pread(s, head, 24, s->scan_off) == 0) {
			s->st.lost_records++;
			s->st.lost += get_le64(head + 16);
		}
		s->scan_off += size;
	}
}

static void spool_scan(struct spool *s)
{
	if (!s->st.begun)
		spool_find_begin(s);
	if (s->st.begun && s->perf)
		spool_scan_records(s);
	else if (s->st.begun)
		spool_scan_pages(s);
}

/* A write failed (disk full, I/O error): say so once, keep reading the port, drop the rest. */
static void spool_write_failed(struct spool *s, int err)
{
	s->fill = s->persisted; /* what the file does not have is gone */
	s->direct = s->persisted & ~(size_t)(SPOOL_ALIGN - 1); /* nothing more from buf: discarding reuses it */
	s->st.spooled = s->flushed + s->persisted;
	s->discard = true;
	s->ops.error(s->ops.userdata, SPOOL_INDEX(s->cpu, s->perf), err);
}

/* One read of the port into the buffer: bytes read, 0 when it has nothing now (EAGAIN), or
 * -errno (-EPIPE at EOF). Bytes read while discarding are counted and dropped. */
static ssize_t spool_read_port(struct spool *s)
{
	for (;;) {
		/* Discarding: the buffer's bytes are all in the file (persisted first), reuse it.
		 * READ_MAX a read: the limits act between reads (docs/security.md). */
		uint8_t *to = s->discard ? s->buf : s->buf + s->fill;
		ssize_t n = read(s->port->rfd, to, MIN(READ_MAX, s->discard ? SPOOL_BUF : SPOOL_BUF - s->fill));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return 0;
		if (n <= 0)
			return n == 0 ? -EPIPE : -errno;
		if (s->discard) {
			s->st.discarded += (uint64_t)n;
			return n;
		}
		s->fill += (size_t)n;
		s->st.spooled += (uint64_t)n;
		return n;
	}
}

/* A FIFO port's buffer is raised to BATCH_PIPE; a wake-up that read under BATCH_MIN then
 * leaves the port unwatched for BATCH_US, so the bytes QEMU writes meanwhile are read in one
 * go: at a flood, each of QEMU's writes woke the daemon (context switches were a third of its
 * CPU), and at 2 MB/s a vCPU a wake-up moved ~4 KiB. The buffer holds BATCH_US of ~200 MB/s a
 * port, so QEMU never waits for it. */
#define BATCH_PIPE (1u << 20)
#define BATCH_MIN (256u << 10)
#define BATCH_US 5000

static void spool_readable(evutil_socket_t fd, short what, void *arg)
{
	static const struct timeval wait = { 0, BATCH_US };
	struct spool *s = arg;
	uint64_t before = s->st.spooled + s->st.discarded;

	spool_poll(s);
	if (s->batch_ev && !s->port_failed && s->st.spooled + s->st.discarded - before < BATCH_MIN &&
	    event_del(s->ev) == 0 && evtimer_add(s->batch_ev, &wait) < 0)
		event_add(s->ev, NULL);
}

static void spool_batch_done(evutil_socket_t fd, short what, void *arg)
{
	struct spool *s = arg;

	if (s->port_failed)
		return;
	event_add(s->ev, NULL);
	spool_poll(s);
}

void spool_poll(struct spool *s)
{
	int r;

	for (int i = 0; i < ROUNDS_PER_WAKE; i++) {
		ssize_t n = spool_read_port(s);

		if (n == 0)
			break;
		if (n < 0) {
			s->port_failed = true;
			if (s->ev)
				event_del(s->ev);
			s->ops.error(s->ops.userdata, SPOOL_INDEX(s->cpu, s->perf), (int)n);
			break;
		}
		if (s->discard)
			continue;
		spool_scan(s); /* while the bytes are in the buffer */
		if (s->fill == SPOOL_BUF && (r = spool_write_block(s)) < 0)
			spool_write_failed(s, r);
		s->ops.progress(s->ops.userdata, SPOOL_INDEX(s->cpu, s->perf)); /* limits act within one wake-up */
	}
	if (!s->discard && s->persisted < s->fill &&
	    util_now_ns(CLOCK_MONOTONIC) - s->persist_ns >= PERSIST_NS && (r = spool_persist(s)) < 0)
		spool_write_failed(s, r);
	s->ops.progress(s->ops.userdata, SPOOL_INDEX(s->cpu, s->perf));
}

int spool_arm(struct spool *s, struct event_base *base)
{
	s->port_failed = false;
	s->ev = event_new(base, s->port->rfd, EV_READ | EV_PERSIST, spool_readable, s);
	if (!s->ev || event_add(s->ev, NULL) < 0)
		return -ENOMEM;
	if (s->port->kind == PORT_FIFO && !s->batch_ev && fcntl(s->port->rfd, F_SETPIPE_SZ, BATCH_PIPE) >= (int)BATCH_PIPE)
		s->batch_ev = evtimer_new(base, spool_batch_done, s);
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

/* The port's stream goes on over fd (a live migration's destination, socket transport): what
 * the old descriptor still holds is read first, to EAGAIN or its end (at most PORT_DRAIN_MAX:
 * a source that keeps writing does not hold the daemon), then fd replaces it. */
int spool_hand_over(struct spool *s, struct event_base *base, int fd)
{
	uint64_t before = s->st.spooled + s->st.discarded;
	ssize_t n;
	int r;

	if (s->ev)
		event_del(s->ev);
	if (s->batch_ev)
		evtimer_del(s->batch_ev);
	while (!s->port_failed && s->st.spooled + s->st.discarded - before < PORT_DRAIN_MAX &&
	       (n = spool_read_port(s)) > 0) {
		if (s->discard)
			continue;
		spool_scan(s);
		if (s->fill == SPOOL_BUF && (r = spool_write_block(s)) < 0)
			spool_write_failed(s, r);
	}
	port_adopt(s->port, fd);
	s->ops.progress(s->ops.userdata, SPOOL_INDEX(s->cpu, s->perf));
	return spool_rearm(s, base);
}

void spool_discard(struct spool *s)
{
	int r = spool_persist(s); /* what was spooled stays */

	if (r < 0 && !s->discard)
		spool_write_failed(s, r);
	s->discard = true;
}

/* A CPU without a spool (its port is missing, --allow-partial) reads as an empty one. */
void spool_stats(const struct spool *s, struct spool_stats *ret)
{
	*ret = s ? s->st : (struct spool_stats){ 0 };
}

void spool_rate_tick(struct spool *s, uint64_t now_ns)
{
	int r = s->discard ? 0 : spool_persist(s); /* at most a second's bytes only in memory */

	if (r < 0)
		spool_write_failed(s, r);
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
