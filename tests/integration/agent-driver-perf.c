// SPDX-License-Identifier: GPL-2.0-only
/* agent-driver: the cases of guest perf (docs/protocol.md §3). */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysinfo.h>
#include <time.h>
#include <unistd.h>

#include "agent-driver.h"
#include "harness.h"
#include "marker.h"
#include "perf_events.h"
#include "proto.h"
#include "util.h"

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
