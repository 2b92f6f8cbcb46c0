// SPDX-License-Identifier: GPL-2.0-only
/* The host end of agent-ctl-path: sends hello/config/meta/start/stop/probe frames, reads
 * the agent's frames (hostile input: bounded, validated, errors logged but never fatal),
 * and stores metadata files under SESSION/guest/ with validated names. */
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "agentctl.h"
#include "collector.h"
#include "log.h"
#include "marker.h"
#include "ports.h"
#include "proto.h"
#include "util.h"

#define OUT_MAX (1u << 20)           /* queued host->agent bytes */
#define META_MAX_FILES 20000
#define META_MAX_TOTAL (256ull << 20) /* a real guest sends 5-30 MB (kallsyms, formats) */
#define META_NAME_MAX 256

struct agentctl {
	struct agentctl_ops ops;
	struct port *port;
	struct event *rev, *wev;
	struct vt_reader rd;
	struct vt_buf out;
	size_t out_off;
	uint32_t seq;
	uint64_t last_rx_ns;
	unsigned meta_files;
	uint64_t meta_bytes;
	uint64_t garbage_runs, bad_frames;
};

/* Logs the 1st, 2nd, 4th, 8th... occurrence: a flooding guest cannot fill the disk. */
static bool agentctl_log_due(uint64_t *counter)
{
	uint64_t n = ++*counter;

	return (n & (n - 1)) == 0;
}

static void agentctl_writable(evutil_socket_t fd, short what, void *arg)
{
	struct agentctl *a = arg;

	while (a->out_off < a->out.len) {
		ssize_t n = util_xfer_step(write(fd, a->out.data + a->out_off, a->out.len - a->out_off));

		if (n == -EAGAIN)
			break;
		if (n < 0) {
			event_del(a->rev);
			a->ops.gone(a->ops.userdata, (int)n);
			return;
		}
		a->out_off += (size_t)n;
	}
	if (a->out_off < a->out.len) {
		event_add(a->wev, NULL); /* armed only while data is queued */
		return;
	}
	a->out.len = a->out_off = 0;
}

/* Closes the frame being built and queues it. */
static int agentctl_queue(struct agentctl *a)
{
	int r = vt_msg_end(&a->out);

	if (r < 0 || a->out.len - a->out_off > OUT_MAX) {
		a->out.len = a->out.frame;
		a->out.oom = false;
		return r < 0 ? r : -ENOBUFS;
	}
	agentctl_writable(a->port->wfd, EV_WRITE, a);
	return 0;
}

static void agentctl_begin(struct agentctl *a, uint16_t type)
{
	if (a->out_off == a->out.len)
		a->out.len = a->out_off = 0;
	vt_msg_begin(&a->out, type, ++a->seq);
}

int agentctl_send_hello(struct agentctl *a)
{
	agentctl_begin(a, VT_MSG_HELLO);
	vt_put_u32(&a->out, VT_A_VERSION, VT_PROTO_VERSION);
	return agentctl_queue(a);
}

int agentctl_send_config(struct agentctl *a, const char *events, const char *clock, uint32_t buffer_kb,
			 const char *tracer, const char *ftrace_filter, uint32_t flush_ms, bool agent_events,
			 const struct guest_perf_opts *perf)
{
	agentctl_begin(a, VT_MSG_CONFIG);
	if (events)
		vt_put_str(&a->out, VT_A_EVENTS, events);
	if (clock)
		vt_put_str(&a->out, VT_A_CLOCK, clock);
	if (buffer_kb)
		vt_put_u32(&a->out, VT_A_BUFFER_KB, buffer_kb);
	if (tracer)
		vt_put_str(&a->out, VT_A_TRACER, tracer);
	if (ftrace_filter)
		vt_put_str(&a->out, VT_A_FTRACE_FILTER, ftrace_filter);
	vt_put_u32(&a->out, VT_A_FLUSH_MS, flush_ms); /* an older agent skips the unknown tag */
	vt_put_u32(&a->out, VT_A_AGENT_EVENTS, agent_events);
	if (perf) { /* always sent: "" turns an earlier session's guest perf off */
		vt_put_str(&a->out, VT_A_PERF_EVENTS, perf->events ? perf->events : "");
		if (perf->events) {
			vt_put_u32(&a->out, VT_A_PERF_FREQ, perf->freq);
			vt_put_u32(&a->out, VT_A_PERF_RING_KB, perf->ring_kb);
		}
	}
	return agentctl_queue(a);
}

int agentctl_send_meta_req(struct agentctl *a, const char *kallsyms_key)
{
	agentctl_begin(a, VT_MSG_META_REQ);
	if (kallsyms_key)
		vt_put_str(&a->out, VT_A_KALLSYMS_KEY, kallsyms_key);
	return agentctl_queue(a);
}

int agentctl_send_start(struct agentctl *a, uint64_t session_id)
{
	agentctl_begin(a, VT_MSG_START);
	vt_put_u64(&a->out, VT_A_SESSION, session_id);
	vt_put_u32(&a->out, VT_A_WANT_PROGRESS, 1); /* an older agent skips it and sends none */
	return agentctl_queue(a);
}

int agentctl_send_stop(struct agentctl *a)
{
	agentctl_begin(a, VT_MSG_STOP);
	return agentctl_queue(a);
}

int agentctl_send_probe(struct agentctl *a, uint64_t id, uint64_t host_ns, bool mark)
{
	agentctl_begin(a, VT_MSG_PROBE);
	vt_put_u64(&a->out, VT_A_PROBE_ID, id);
	vt_put_u64(&a->out, VT_A_HOST_TIME, host_ns);
	if (mark)
		vt_put_u32(&a->out, VT_A_MARK, 1);
	return agentctl_queue(a);
}

int agentctl_send_flush(struct agentctl *a, uint64_t session_id, uint64_t flush_seq, uint32_t *ret_frame)
{
	agentctl_begin(a, VT_MSG_FLUSH);
	*ret_frame = a->seq;
	vt_put_u64(&a->out, VT_A_SESSION, session_id);
	vt_put_u64(&a->out, VT_A_FLUSH_SEQ, flush_seq);
	return agentctl_queue(a);
}

int agentctl_send_binary_req(struct agentctl *a, const char *path, const uint8_t *id, size_t len, uint64_t off)
{
	agentctl_begin(a, VT_MSG_BINARY_REQ);
	vt_put_str(&a->out, VT_A_FILE_NAME, path);
	vt_put_bytes(&a->out, VT_A_BUILD_ID, id, len);
	vt_put_u64(&a->out, VT_A_FILE_OFFSET, off);
	return agentctl_queue(a);
}

int agentctl_parse_binary(const struct vt_msg *m, const uint8_t *id, size_t id_len, uint64_t off,
			  const uint8_t **ret_data, size_t *ret_len, uint64_t *ret_size)
{
	struct vt_attr bid, data;
	uint64_t size, at;

	if (m->hdr.type != VT_MSG_BINARY || vt_msg_find(m, VT_A_BUILD_ID, &bid) < 0 ||
	    vt_msg_find(m, VT_A_FILE_DATA, &data) < 0 || vt_msg_u64(m, VT_A_FILE_SIZE, &size) < 0 ||
	    vt_msg_u64(m, VT_A_FILE_OFFSET, &at) < 0)
		return -EBADMSG;
	if (bid.len != id_len || memcmp(bid.data, id, id_len) || at != off)
		return -ESTALE; /* not the chunk asked for */
	if (size > VT_BINARY_MAX || at > size || data.len > size - at || data.len > VT_BINARY_CHUNK ||
	    (data.len == 0 && at < size))
		return -EMSGSIZE;
	*ret_data = data.data;
	*ret_len = data.len;
	*ret_size = size;
	return 0;
}

static void agentctl_reply_error(struct agentctl *a, uint32_t seq, int err, const char *msg)
{
	vt_msg_begin(&a->out, VT_MSG_ERROR, seq);
	vt_put_u32(&a->out, VT_A_ERRNO, (uint32_t)err);
	vt_put_str(&a->out, VT_A_MESSAGE, msg);
	agentctl_queue(a);
}

static void agentctl_dispatch(struct agentctl *a, enum vt_read_result res, const struct vt_msg *m)
{
	if (res == VT_READ_GARBAGE) {
		if (agentctl_log_due(&a->garbage_runs))
			log_warn("agent-ctl-path: skipped bytes that are no frame (%llu runs, %llu bytes so far)",
				 (unsigned long long)a->garbage_runs, (unsigned long long)a->rd.garbage_bytes);
		return;
	}
	if (res == VT_READ_TOOBIG) {
		if (agentctl_log_due(&a->bad_frames))
			log_warn("agent-ctl-path: frame header with length %u or version %u refused (limit %u bytes; %llu bad frames so far)",
				 m->hdr.len, m->hdr.version, VT_PROTO_MAX_PAYLOAD, (unsigned long long)a->bad_frames);
		return;
	}
	if (res == VT_READ_LEGACY)
		return; /* a guest has no business sending legacy lines to the host */
	if (vt_msg_validate(m) < 0) {
		if (agentctl_log_due(&a->bad_frames))
			log_warn("agent-ctl-path: malformed attributes in a '%s' frame (seq %u) ignored (%llu bad frames so far)",
				 vt_msg_type_name(m->hdr.type), m->hdr.seq, (unsigned long long)a->bad_frames);
		return;
	}
	if (m->hdr.type >= VT_MSG_TYPE_MAX || m->hdr.type == 0) {
		agentctl_reply_error(a, m->hdr.seq, EOPNOTSUPP, "unknown frame type");
		return;
	}
	a->ops.msg(a->ops.userdata, m);
}

/* Up to 64 reads of fd, each read's frames handled: 0 when it has nothing now (EAGAIN or 64
 * reads), -errno when it failed or ended (EOF counts as -EPIPE). */
static int agentctl_read(struct agentctl *a, int fd)
{
	enum vt_read_result res;
	struct vt_msg m;
	char legacy;
	uint8_t *p;
	size_t room;
	ssize_t n;

	for (int round = 0; round < 64; round++) {
		if (vt_reader_space(&a->rd, &p, &room) < 0)
			return 0; /* cannot happen with the reader's own bound; keep the loop alive */
		n = util_xfer_step(read(fd, p, room));
		if (n == 0)
			continue; /* EINTR */
		if (n == -EAGAIN)
			return 0;
		if (n < 0)
			return (int)n;
		a->last_rx_ns = util_now_ns(CLOCK_MONOTONIC);
		vt_reader_commit(&a->rd, (size_t)n);
		while ((res = vt_reader_next(&a->rd, &m, &legacy)) != VT_READ_NEED_MORE)
			agentctl_dispatch(a, res, &m);
	}
	return 0;
}

static void agentctl_readable(evutil_socket_t fd, short what, void *arg)
{
	struct agentctl *a = arg;
	int r = agentctl_read(a, fd);

	if (r < 0) {
		event_del(a->rev);
		event_del(a->wev);
		a->ops.gone(a->ops.userdata, r);
	}
}

int agentctl_new(const struct agentctl_ops *ops, struct port *port, struct event_base *base, struct agentctl **ret)
{
	struct agentctl *a = calloc(1, sizeof(*a));

	if (!a)
		return -ENOMEM;
	a->ops = *ops;
	a->port = port;
	a->last_rx_ns = util_now_ns(CLOCK_MONOTONIC);
	a->seq = (uint32_t)a->last_rx_ns & 0xffff;
	if (vt_reader_init(&a->rd) < 0)
		goto fail;
	a->rev = event_new(base, port->rfd, EV_READ | EV_PERSIST, agentctl_readable, a);
	a->wev = event_new(base, port->wfd, EV_WRITE, agentctl_writable, a);
	if (!a->rev || !a->wev || event_add(a->rev, NULL) < 0)
		goto fail;
	*ret = a;
	return 0;
fail:
	agentctl_free(a);
	return -ENOMEM;
}

/* The control stream continues over fd (a live migration's destination, socket transport): the
 * frames the old descriptor still holds are read and handled first (at most 64 reads), then fd
 * replaces it. Output half written to the old one is dropped whole (its tail alone would be
 * garbage to the agent); output not begun goes to fd. */
int agentctl_hand_over(struct agentctl *a, struct event_base *base, int fd)
{
	(void)agentctl_read(a, a->port->rfd); /* to EAGAIN or its end */
	if (a->out_off)
		a->out.len = a->out_off = 0;
	port_adopt(a->port, fd);
	event_free(a->rev);
	event_free(a->wev);
	a->rev = event_new(base, fd, EV_READ | EV_PERSIST, agentctl_readable, a);
	a->wev = event_new(base, fd, EV_WRITE, agentctl_writable, a);
	if (!a->rev || !a->wev || event_add(a->rev, NULL) < 0)
		return -ENOMEM;
	if (a->out.len)
		event_add(a->wev, NULL);
	return 0;
}

void agentctl_free(struct agentctl *a)
{
	if (!a)
		return;
	if (a->rev)
		event_free(a->rev);
	if (a->wev)
		event_free(a->wev);
	vt_reader_free(&a->rd);
	vt_buf_free(&a->out);
	free(a);
}

unsigned agentctl_meta_files(const struct agentctl *a)
{
	return a->meta_files;
}

uint64_t agentctl_meta_bytes(const struct agentctl *a)
{
	return a->meta_bytes;
}

uint64_t agentctl_last_rx(const struct agentctl *a)
{
	return a->last_rx_ns;
}

static void printable_inplace(char *s)
{
	for (; *s; s++)
		if (*s < 0x20 || *s > 0x7e)
			*s = '?';
}

static void copy_str(const struct vt_msg *m, uint16_t tag, char *buf, size_t size)
{
	_cleanup_free_ char *s = NULL;

	buf[0] = '\0';
	if (vt_msg_str(m, tag, size - 1, &s) == 0)
		snprintf(buf, size, "%s", s);
}

int agentctl_parse_hello(const struct vt_msg *m, struct agent_hello *ret)
{
	struct agent_hello h = { 0 };

	if (vt_msg_u32(m, VT_A_NCPUS, &h.ncpus) < 0 || vt_msg_u32(m, VT_A_PAGE_SIZE, &h.page_size) < 0)
		return -EBADMSG;
	if (h.ncpus == 0 || h.ncpus > COLLECTOR_MAX_CPUS)
		return -ERANGE;
	if (h.page_size < VT_MARKER_MIN_PAGE || h.page_size > VT_MARKER_MAX_PAGE ||
	    (h.page_size & (h.page_size - 1)))
		return -EDOM;
	vt_msg_u32(m, VT_A_STATE, &h.state);
	copy_str(m, VT_A_RELEASE, h.release, sizeof(h.release));
	copy_str(m, VT_A_ARCH, h.arch, sizeof(h.arch));
	copy_str(m, VT_A_CLOCKS, h.clocks, sizeof(h.clocks));
	copy_str(m, VT_A_AGENT_VERSION, h.agent_version, sizeof(h.agent_version));
	copy_str(m, VT_A_CLOCK_RES, h.clock_res, sizeof(h.clock_res));
	printable_inplace(h.clock_res);
	/* These strings land in session.ini and the log: keep them on one printable line. */
	printable_inplace(h.release);
	printable_inplace(h.arch);
	printable_inplace(h.clocks);
	printable_inplace(h.agent_version);
	*ret = h;
	return 0;
}

void agentctl_error_text(const struct vt_msg *m, char *buf, size_t size)
{
	_cleanup_free_ char *msg = NULL;
	uint32_t e = 0;

	vt_msg_u32(m, VT_A_ERRNO, &e);
	vt_msg_str(m, VT_A_MESSAGE, VT_PROTO_MAX_STR, &msg);
	snprintf(buf, size, "%s (errno %u)", msg ? msg : "no message", e);
	printable_inplace(buf);
}

int agentctl_parse_probe_reply(const struct vt_msg *m, uint64_t *ret_id, uint64_t *ret_host, uint64_t *ret_guest,
			       uint64_t *ret_mono)
{
	if (vt_msg_u64(m, VT_A_GUEST_MONO, ret_mono) < 0)
		*ret_mono = 0; /* an older agent */
	if (vt_msg_u64(m, VT_A_PROBE_ID, ret_id) < 0 || vt_msg_u64(m, VT_A_HOST_TIME, ret_host) < 0 ||
	    vt_msg_u64(m, VT_A_GUEST_TIME, ret_guest) < 0)
		return -EBADMSG;
	return 0;
}

int agentctl_parse_probe_phc(const struct vt_msg *m, uint64_t *ret_lo, uint64_t *ret_hi)
{
	bool has_lo = vt_msg_u64(m, VT_A_PHC_LO, ret_lo) == 0, has_hi = vt_msg_u64(m, VT_A_PHC_HI, ret_hi) == 0;

	if (!has_lo && !has_hi)
		return -ENOENT;
	if (!has_lo || !has_hi || *ret_lo > *ret_hi || *ret_hi > (uint64_t)INT64_MAX ||
	    *ret_hi - *ret_lo > AGENTCTL_PHC_SPAN_MAX)
		return -EBADMSG;
	return 0;
}

int agentctl_parse_progress(const struct vt_msg *m, struct agent_progress *ret)
{
	struct agent_progress p;

	if (vt_msg_u32(m, VT_A_STEP, &p.step) < 0 || vt_msg_u32(m, VT_A_DONE, &p.done) < 0 ||
	    vt_msg_u32(m, VT_A_TOTAL, &p.total) < 0)
		return -EBADMSG;
	if (!p.step || p.step >= VT_STEP_MAX || p.total > AGENTCTL_PROGRESS_MAX || p.done > p.total)
		return -ERANGE;
	*ret = p;
	return 0;
}

/* Splits name into '/'-separated components, each [A-Za-z0-9_]; returns their count. */
static int meta_split(const char *name, const char *comp[4], size_t len[4])
{
	int n = 0;

	for (const char *p = name;; n++) {
		const char *slash = strchr(p, '/');
		size_t l = slash ? (size_t)(slash - p) : strlen(p);

		if (n == 4 || !util_safe_name(p, l))
			return -EINVAL;
		comp[n] = p;
		len[n] = l;
		if (!slash)
			return n + 1;
		p = slash + 1;
	}
}

static bool comp_is(const char *c, size_t l, const char *want)
{
	return l == strlen(want) && !memcmp(c, want, l);
}

int agentctl_meta_name_ok(const char *name)
{
	static const char *const top[] = { "printk_formats", "saved_cmdlines", "saved_tgids", "kallsyms", "kallsyms_key",
					   "notes" };
	const char *c[4];
	size_t l[4];
	int n;

	if (strlen(name) > META_NAME_MAX)
		return -EINVAL;
	n = meta_split(name, c, l);
	if (n == 1) {
		for (size_t i = 0; i < ARRAY_SIZE(top); i++)
			if (comp_is(c[0], l[0], top[i]))
				return 0;
		return -EINVAL;
	}
	if (n == 2 && comp_is(c[0], l[0], "events") &&
	    (comp_is(c[1], l[1], "header_page") || comp_is(c[1], l[1], "header_event")))
		return 0;
	if (n == 4 && comp_is(c[0], l[0], "events") && comp_is(c[3], l[3], "format"))
		return 0;
	return -EINVAL;
}

/* mkdir -p of name's directories under dirfd (names are validated: no '..', no '/'). */
static int meta_mkdirs(int dirfd, const char *name)
{
	char buf[META_NAME_MAX + 1];

	snprintf(buf, sizeof(buf), "%s", name);
	for (char *p = strchr(buf, '/'); p; p = strchr(p + 1, '/')) {
		*p = '\0';
		if (mkdirat(dirfd, buf, 0700) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	return 0;
}

/* A printable, bounded copy of a guest-chosen name, for messages. */
static void printable(const char *in, size_t len, char *out, size_t size)
{
	size_t n = MIN(len, size - 1);

	for (size_t i = 0; i < n; i++)
		out[i] = in[i] >= 0x20 && in[i] < 0x7f ? in[i] : '?';
	out[n] = '\0';
}

int agentctl_store_meta(struct agentctl *a, const struct vt_msg *m, int guest_dirfd, char *ret_name,
			size_t size)
{
	_cleanup_free_ char *name = NULL;
	_cleanup_close_ int fd = -1;
	struct vt_attr data, na;
	int r;

	if (vt_msg_find(m, VT_A_FILE_NAME, &na) == 0)
		printable((const char *)na.data, na.len, ret_name, size);
	else
		snprintf(ret_name, size, "(no name)");
	if (vt_msg_str(m, VT_A_FILE_NAME, META_NAME_MAX, &name) < 0 ||
	    vt_msg_find(m, VT_A_FILE_DATA, &data) < 0)
		return -EBADMSG;
	if (agentctl_meta_name_ok(name) < 0)
		return -EINVAL;
	if (a->meta_files >= META_MAX_FILES || a->meta_bytes + data.len > META_MAX_TOTAL)
		return -EFBIG;
	r = meta_mkdirs(guest_dirfd, name);
	if (r < 0)
		return r;
	fd = openat(guest_dirfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	r = util_write_full(fd, data.data, data.len);
	if (r < 0)
		return r;
	a->meta_files++;
	a->meta_bytes += data.len;
	return 0;
}

int agentctl_parse_stopped(const struct vt_msg *m, uint64_t session_id, struct vt_cpu_stats *stats,
			   unsigned ncpus, unsigned *ret_n)
{
	struct vt_attr at;
	uint64_t sid;
	unsigned n;

	if (vt_msg_u64(m, VT_A_SESSION, &sid) < 0 || vt_msg_find(m, VT_A_CPU_STATS, &at) < 0)
		return -EBADMSG;
	if (sid != session_id)
		return -ESRCH;
	if (at.len % sizeof(struct vt_cpu_stats))
		return -EBADMSG;
	n = (unsigned)MIN(at.len / sizeof(struct vt_cpu_stats), (size_t)ncpus);
	for (unsigned i = 0; i < n; i++) {
		struct vt_cpu_stats s;
		uint8_t page[VT_MARKER_MIN_PAGE];
		struct vt_marker mk;

		/* Reuse the marker decoder for the little-endian conversion. */
		memcpy(&s, at.data + i * sizeof(s), sizeof(s));
		vt_marker_encode(page, sizeof(page), VT_MARKER_END, 0, 0, NULL);
		memcpy(page + offsetof(struct vt_marker, stats), &s, sizeof(s));
		if (vt_marker_decode(page, sizeof(page), &mk) != 1)
			return -EBADMSG;
		stats[i] = mk.stats;
	}
	*ret_n = n;
	return 0;
}

int agentctl_parse_perf_stats(const struct vt_msg *m, struct vt_perf_stats *stats, unsigned ncpus, unsigned *ret_n)
{
	struct vt_attr at;
	unsigned n;

	if (vt_msg_find(m, VT_A_PERF_STATS, &at) < 0)
		return -ENOENT;
	if (at.len % sizeof(struct vt_perf_stats))
		return -EBADMSG;
	n = (unsigned)MIN(at.len / sizeof(struct vt_perf_stats), (size_t)ncpus);
	for (unsigned i = 0; i < n; i++) {
		uint8_t page[VT_MARKER_MIN_PAGE];
		struct vt_perf_marker pm = { 0 };
		struct vt_marker mk;

		/* Reuse the marker decoder for the little-endian conversion. */
		vt_marker_encode_perf(page, sizeof(page), VT_MARKER_PERF_END, 0, 0, &pm);
		memcpy(page + VT_PERF_MARKER_OFF + offsetof(struct vt_perf_marker, stats),
		       at.data + i * sizeof(struct vt_perf_stats), sizeof(struct vt_perf_stats));
		if (vt_marker_decode(page, sizeof(page), &mk) != 1 ||
		    vt_marker_decode_perf(page, sizeof(page), &mk, &pm) < 0)
			return -EBADMSG;
		stats[i] = pm.stats;
	}
	*ret_n = n;
	return 0;
}
