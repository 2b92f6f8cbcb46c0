// SPDX-License-Identifier: GPL-2.0-only
/* Control protocol handling on agent-ctl-path (docs/protocol.md §1): one handler per type. */
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>

#include "agent.h"
#include "config.h"
#include "log.h"
#include "util.h"

typedef void (*control_fn)(struct agent *a, const struct vt_msg *m, struct vt_buf *out);

static void control_ok(struct agent *a, uint32_t seq, struct vt_buf *out)
{
	vt_msg_begin(out, VT_MSG_OK, seq);
	vt_put_u32(out, VT_A_STATE, a->tracing ? VT_STATE_TRACING : VT_STATE_IDLE);
	(void)vt_msg_end(out);
}

static uint32_t control_buffer_kb(const struct agent *a)
{
	_cleanup_free_ char *s = NULL;

	if (tracefs_read(&a->tfs, "buffer_size_kb", 4096, &s) < 0)
		return 0;
	return (uint32_t)strtoul(s, NULL, 10);
}

static void control_hello(struct agent *a, const struct vt_msg *m, struct vt_buf *out)
{
	_cleanup_free_ char *clocks = NULL;
	struct utsname u;

	(void)uname(&u);
	if (tracefs_read(&a->tfs, "trace_clock", VT_PROTO_MAX_STR, &clocks) == 0)
		clocks[strcspn(clocks, "\n")] = '\0';
	vt_msg_begin(out, VT_MSG_HELLO, m->hdr.seq);
	vt_put_u32(out, VT_A_VERSION, VT_PROTO_VERSION);
	vt_put_str(out, VT_A_AGENT_VERSION, VT_VERSION);
	vt_put_u32(out, VT_A_NCPUS, a->ncpus);
	vt_put_u32(out, VT_A_PAGE_SIZE, a->page_size);
	vt_put_str(out, VT_A_RELEASE, u.release);
	vt_put_str(out, VT_A_ARCH, u.machine);
	vt_put_str(out, VT_A_CLOCKS, clocks ? clocks : "");
	if (!a->clock_res[0]) { /* measured once: ~30 ms per clock at most */
		size_t n;

		clocks_resolution(a->clock_res, sizeof(a->clock_res));
		if (a->phc_fd == -2) {
			a->phc_fd = clocks_phc_open(&a->phc_precise);
			a->phc_fd = a->phc_fd < 0 ? -1 : a->phc_fd;
		}
		n = strlen(a->clock_res);
		snprintf(a->clock_res + n, sizeof(a->clock_res) - n, " phc=%s",
			 a->phc_fd < 0 ? "none" : a->phc_precise ? "kvm-precise" : "kvm");
	}
	vt_put_str(out, VT_A_CLOCK_RES, a->clock_res);
	vt_put_u32(out, VT_A_STATE, a->tracing ? VT_STATE_TRACING : VT_STATE_IDLE);
	if (a->tracing)
		vt_put_u64(out, VT_A_SESSION_ACTIVE, a->session);
	vt_put_str(out, VT_A_EVENTS, a->cfg.events);
	vt_put_str(out, VT_A_CLOCK, a->cfg.clock);
	vt_put_u32(out, VT_A_BUFFER_KB, a->cfg.buffer_kb ? a->cfg.buffer_kb : control_buffer_kb(a));
	vt_put_str(out, VT_A_TRACER, a->cfg.tracer ? a->cfg.tracer : "nop");
	vt_put_str(out, VT_A_FTRACE_FILTER, a->cfg.ftrace_filter ? a->cfg.ftrace_filter : "");
	vt_put_str(out, VT_A_PERF_EVENTS, a->cfg.perf_events ? a->cfg.perf_events : "");
	vt_put_u32(out, VT_A_PERF_FREQ, a->cfg.perf_freq);
	vt_put_u32(out, VT_A_PERF_RING_KB, a->cfg.perf_ring_kb);
	(void)vt_msg_end(out);
}

/* An optional string attribute: 0 (absent leaves *ret NULL) or -EBADMSG. */
static int control_opt_str(const struct vt_msg *m, uint16_t tag, char **ret)
{
	int r = vt_msg_str(m, tag, VT_PROTO_MAX_STR, ret);

	if (r == -ENOENT) {
		*ret = NULL;
		return 0;
	}
	return r;
}

/* Builds the new config from the message over the current one. */
static int control_config_new(struct agent *a, const struct vt_msg *m, struct agent_config *c)
{
	_cleanup_free_ char *events = NULL, *clock = NULL, *tracer = NULL, *filter = NULL, *perf = NULL;
	_cleanup_free_ struct event_spec *ev = NULL;
	uint32_t kb = a->cfg.buffer_kb, flush = a->cfg.flush_ms;
	uint32_t freq = a->cfg.perf_freq, ring = a->cfg.perf_ring_kb, self = 0;
	size_t n;
	int r;

	if (control_opt_str(m, VT_A_EVENTS, &events) < 0 || control_opt_str(m, VT_A_CLOCK, &clock) < 0 ||
	    control_opt_str(m, VT_A_TRACER, &tracer) < 0 || control_opt_str(m, VT_A_FTRACE_FILTER, &filter) < 0 ||
	    control_opt_str(m, VT_A_PERF_EVENTS, &perf) < 0)
		return -EBADMSG;
	if (((r = vt_msg_u32(m, VT_A_PERF_FREQ, &freq)) < 0 && r != -ENOENT) ||
	    ((r = vt_msg_u32(m, VT_A_PERF_RING_KB, &ring)) < 0 && r != -ENOENT))
		return -EBADMSG;
	r = vt_msg_u32(m, VT_A_BUFFER_KB, &kb);
	if (r < 0 && r != -ENOENT)
		return r;
	r = vt_msg_u32(m, VT_A_FLUSH_MS, &flush);
	if ((r < 0 && r != -ENOENT) || flush > AGENT_FLUSH_MS_MAX)
		return -EBADMSG;
	r = vt_msg_u32(m, VT_A_AGENT_EVENTS, &self); /* absent (an older host): left out */
	if ((r < 0 && r != -ENOENT) || self > 1)
		return -EBADMSG;
	if (events && events_parse(events, &ev, &n, NULL) == 0) {
		free(events);
		events = NULL;
		r = events_format(ev, n, &events);
		if (r < 0)
			return r;
	}
	/* Present but "" (or nop): back to the default, which is stored as NULL. */
	return config_set(c, &(struct agent_config){
		.events = events ? events : a->cfg.events, .clock = clock ? clock : a->cfg.clock,
		.buffer_kb = kb, .flush_ms = flush,
		.tracer = !tracer ? a->cfg.tracer : *tracer && strcmp(tracer, "nop") ? tracer : NULL,
		.ftrace_filter = !filter ? a->cfg.ftrace_filter : *filter ? filter : NULL,
		.perf_events = !perf ? a->cfg.perf_events : *perf ? perf : NULL,
		.perf_freq = freq, .perf_ring_kb = ring, .agent_events = self });
}

static void control_config(struct agent *a, const struct vt_msg *m, struct vt_buf *out)
{
	struct agent_config c = { 0 };
	_cleanup_free_ char *msg = NULL;
	int r;

	if (a->tracing) {
		reply_error(out, m->hdr.seq, EBUSY, "tracing session %" PRIu64 " is running: stop it "
			      "before changing the config", a->session);
		return;
	}
	r = control_config_new(a, m, &c);
	if (r == 0)
		r = tracefs_config_check(&a->tfs, &c, &msg);
	if (r == 0)
		r = perf_config_check(&c, &msg);
	if (r == 0)
		r = tracefs_filter_try(&a->tfs, c.ftrace_filter, &msg);
	if (r < 0) {
		reply_error(out, m->hdr.seq, r, "%s", msg ? msg : r == -E2BIG ?
			      "event list too long: name whole systems (sys) instead of many events" :
			      "malformed CONFIG message");
		config_free(&c);
		return;
	}
	config_free(&a->cfg);
	a->cfg = c;
	log_info("config: events %s, clock %s, buffer %u KiB, flush %u ms, tracer %s%s%s%s", c.events, c.clock,
		 c.buffer_kb, c.flush_ms, c.tracer ? c.tracer : "nop", c.ftrace_filter ? ", functions " : "",
		 c.ftrace_filter ? c.ftrace_filter : "", c.agent_events ? ", the agent's own events too" : "");
	if (c.perf_events)
		log_info("config: guest perf %s at %u Hz, ring %u KiB per CPU", c.perf_events, c.perf_freq,
			 c.perf_ring_kb);
	control_ok(a, m->hdr.seq, out);
}

static void control_meta(struct agent *a, const struct vt_msg *m, struct vt_buf *out)
{
	_cleanup_free_ char *host_key = NULL;
	size_t mark = out->len;
	int r;

	if (vt_msg_str(m, VT_A_KALLSYMS_KEY, 64, &host_key) < 0)
		host_key = NULL;
	r = meta_reply(a, m->hdr.seq, host_key, out);

	if (r < 0) {
		out->len = mark; /* no half reply: only the error */
		out->oom = false;
		reply_error(out, m->hdr.seq, r, "cannot collect the metadata: %s", strerror(-r));
	}
}

static void control_stats_le(struct vt_cpu_stats *s);
static void control_perf_stats_le(struct vt_perf_stats *s);

/* The CPU_STATS attribute: n entries, converted to little-endian in place. */
static void control_put_stats(struct vt_buf *out, struct vt_cpu_stats *stats, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		control_stats_le(&stats[i]);
	vt_put_bytes(out, VT_A_CPU_STATS, stats, n * sizeof(*stats));
}

/* The PERF_STATS attribute, the same way; nothing when the session runs no guest perf. */
static void control_put_perf_stats(struct vt_buf *out, struct vt_perf_stats *stats, unsigned n)
{
	if (!stats)
		return;
	for (unsigned i = 0; i < n; i++)
		control_perf_stats_le(&stats[i]);
	vt_put_bytes(out, VT_A_PERF_STATS, stats, n * sizeof(*stats));
}

static void control_start(struct agent *a, const struct vt_msg *m, struct vt_buf *out)
{
	_cleanup_free_ struct vt_cpu_stats *stats = NULL;
	_cleanup_free_ struct vt_perf_stats *perf = NULL;
	_cleanup_free_ char *msg = NULL;
	uint32_t want_progress = 0;
	uint64_t id;
	int r;

	if (vt_msg_u64(m, VT_A_SESSION, &id) < 0) {
		reply_error(out, m->hdr.seq, EINVAL, "START needs a SESSION attribute (u64)");
		return;
	}
	(void)vt_msg_u32(m, VT_A_WANT_PROGRESS, &want_progress); /* absent (an older host): none */
	ctlout_progress_begin(a, m->hdr.seq, want_progress == 1);
	r = session_start(a, id, &msg);
	if (r < 0) {
		reply_error(out, m->hdr.seq, r, "cannot start session %" PRIu64 ": %s", id,
			      msg ? msg : strerror(-r));
		return;
	}
	/* Which CPUs stream (error 0) and which do not: the host decides whether that will do. */
	stats = calloc(a->ncpus, sizeof(*stats));
	perf = a->perf ? calloc(a->ncpus, sizeof(*perf)) : NULL;
	if (!stats || (a->perf && !perf)) {
		control_ok(a, m->hdr.seq, out);
		return;
	}
	for (unsigned i = 0; i < a->ncpus; i++) {
		stats[i] = (struct vt_cpu_stats){ .cpu = i, .error = a->pumps[i].stats.error };
		if (perf)
			perf[i] = (struct vt_perf_stats){ .cpu = i, .error = a->perf[i].stats.error };
	}
	vt_msg_begin(out, VT_MSG_OK, m->hdr.seq);
	vt_put_u32(out, VT_A_STATE, VT_STATE_TRACING);
	vt_put_u64(out, VT_A_SESSION, id);
	control_put_stats(out, stats, a->ncpus);
	control_put_perf_stats(out, perf, a->ncpus);
	(void)vt_msg_end(out);
}

static void control_stats_le(struct vt_cpu_stats *s)
{
	uint64_t *u[] = { &s->pages_sent, &s->bytes_sent, &s->entries, &s->overrun,
			  &s->commit_overrun, &s->bytes, &s->dropped_events, &s->read_events };

	s->cpu = htole32(s->cpu);
	s->error = (int32_t)htole32((uint32_t)s->error);
	for (size_t i = 0; i < ARRAY_SIZE(u); i++)
		*u[i] = htole64(*u[i]);
}

static void control_perf_stats_le(struct vt_perf_stats *s)
{
	uint64_t *u[] = { &s->bytes_sent, &s->records, &s->samples, &s->lost_records, &s->lost,
			  &s->synth_records, &s->reserved };

	s->cpu = htole32(s->cpu);
	s->error = (int32_t)htole32((uint32_t)s->error);
	for (size_t i = 0; i < ARRAY_SIZE(u); i++)
		*u[i] = htole64(*u[i]);
}

static void control_stop(struct agent *a, const struct vt_msg *m, struct vt_buf *out)
{
	_cleanup_free_ struct vt_cpu_stats *stats = NULL;
	_cleanup_free_ struct vt_perf_stats *perf = NULL;
	uint64_t id = a->session;
	int r = session_stop(a, &stats, &perf);

	if (r < 0) {
		reply_error(out, m->hdr.seq, r, r == -EALREADY ? "not tracing: nothing to stop"
								 : "cannot stop: %s", strerror(-r));
		return;
	}
	vt_msg_begin(out, VT_MSG_STOPPED, m->hdr.seq);
	vt_put_u64(out, VT_A_SESSION, id);
	control_put_stats(out, stats, a->ncpus);
	control_put_perf_stats(out, perf, a->ncpus);
	(void)vt_msg_end(out);
}

/* FLUSH: each streaming CPU drains its ring and sends a flush marker; OK at once (the markers
 * follow on the data ports). */
static void control_flush(struct agent *a, const struct vt_msg *m, struct vt_buf *out)
{
	uint64_t id, seq;
	int r;

	if (vt_msg_u64(m, VT_A_SESSION, &id) < 0 || vt_msg_u64(m, VT_A_FLUSH_SEQ, &seq) < 0) {
		reply_error(out, m->hdr.seq, EINVAL, "FLUSH needs SESSION and FLUSH_SEQ attributes (u64)");
		return;
	}
	r = session_flush(a, id, seq);
	if (r < 0) {
		reply_error(out, m->hdr.seq, -r, r == -EALREADY ? "not tracing: nothing to flush" :
			      "FLUSH names session %" PRIu64 ", the agent traces session %" PRIu64, id, a->session);
		return;
	}
	control_ok(a, m->hdr.seq, out);
}

static void control_probe(struct agent *a, const struct vt_msg *m, struct vt_buf *out)
{
	uint64_t id, host = 0, guest = 0, mono, m0, lo = 0, hi = 0;
	uint32_t mark = 0;
	char line[64];
	int r = -ENOENT;

	if (vt_msg_u64(m, VT_A_PROBE_ID, &id) < 0) {
		reply_error(out, m->hdr.seq, EINVAL, "PROBE needs a PROBE_ID attribute (u64)");
		return;
	}
	(void)vt_msg_u64(m, VT_A_HOST_TIME, &host);
	(void)vt_msg_u32(m, VT_A_MARK, &mark);
	m0 = util_now_ns(CLOCK_MONOTONIC_RAW); /* the PHC's bracket covers the marker too */
	if (clocks_read(a->cfg.clock, &guest) < 0) {
		reply_error(out, m->hdr.seq, EOPNOTSUPP, "trace clock '%s' has no user-space reading "
			      "to probe: configure mono, boot, mono_raw, tai or x86-tsc", a->cfg.clock);
		return;
	}
	if (mark == 1) {
		snprintf(line, sizeof(line), "vt-probe %" PRIu64 "\n", id);
		if (tracefs_write(&a->tfs, "trace_marker", line) < 0)
			log_debug("trace_marker write failed: %m");
		(void)clocks_read(a->cfg.clock, &guest);
	}
	if (a->phc_fd >= 0) {
		r = clocks_phc_bracket(a->phc_fd, a->phc_precise, a->cfg.clock, m0, &guest, &lo, &hi);
		if (r < 0 && !a->phc_said) {
			a->phc_said = true; /* ptp_kvm refuses while the host's clocksource is not the TSC */
			log_info("the KVM PTP clock cannot be read (%s): clock probes go without the host's time",
				 strerror(-r));
		}
	}
	mono = util_now_ns(CLOCK_MONOTONIC); /* guest perf's clock, when the trace clock is another */
	vt_msg_begin(out, VT_MSG_PROBE_REPLY, m->hdr.seq);
	vt_put_u64(out, VT_A_PROBE_ID, id);
	vt_put_u64(out, VT_A_HOST_TIME, host);
	vt_put_u64(out, VT_A_GUEST_TIME, guest);
	vt_put_u64(out, VT_A_GUEST_MONO, mono);
	if (a->phc_fd >= 0 && r == 0) {
		vt_put_u64(out, VT_A_PHC_LO, lo);
		vt_put_u64(out, VT_A_PHC_HI, hi);
	}
	vt_put_str(out, VT_A_CLOCK, a->cfg.clock);
	(void)vt_msg_end(out);
}

void control_msg(struct agent *a, const struct vt_msg *m, struct vt_buf *out)
{
	static const control_fn handlers[VT_MSG_TYPE_MAX] = {
		[VT_MSG_HELLO] = control_hello, [VT_MSG_CONFIG] = control_config,
		[VT_MSG_META_REQ] = control_meta, [VT_MSG_START] = control_start,
		[VT_MSG_STOP] = control_stop, [VT_MSG_PROBE] = control_probe,
		[VT_MSG_BINARY_REQ] = binary_reply, [VT_MSG_FLUSH] = control_flush,
	};
	uint16_t type = m->hdr.type;

	if (type >= VT_MSG_TYPE_MAX || !handlers[type]) {
		reply_error(out, m->hdr.seq, EOPNOTSUPP, "unknown or unexpected message type %u (%s)",
			      type, vt_msg_type_name(type));
		return;
	}
	if (vt_msg_validate(m) < 0) {
		reply_error(out, m->hdr.seq, EBADMSG, "malformed %s message: an attribute runs past "
			      "the end of the frame", vt_msg_type_name(type));
		return;
	}
	uint64_t t0 = util_now_ns(CLOCK_MONOTONIC), c0 = util_now_ns(CLOCK_PROCESS_CPUTIME_ID);

	handlers[type](a, m, out);
	log_debug("control: %s seq %u: %" PRIu64 " us, %" PRIu64 " us CPU", vt_msg_type_name(type),
		  m->hdr.seq, (util_now_ns(CLOCK_MONOTONIC) - t0) / 1000,
		  (util_now_ns(CLOCK_PROCESS_CPUTIME_ID) - c0) / 1000);
}

/* The original tool's "1"/"0" lines: start with the defaults, stop; no reply. */
void control_legacy(struct agent *a, char c)
{
	_cleanup_free_ char *msg = NULL;
	int r;

	if (c == '0') {
		r = session_stop(a, NULL, NULL);
		if (r < 0 && r != -EALREADY)
			log_error("legacy stop: %s", strerror(-r));
		return;
	}
	if (a->tracing) {
		log_info("legacy start: already tracing session %" PRIu64, a->session);
		return;
	}
	r = config_default(&a->cfg, a->cfg.buffer_kb);
	ctlout_progress_begin(a, 0, false);
	if (r == 0)
		r = session_start(a, 0, &msg);
	if (r < 0)
		log_error("legacy start: %s", msg ? msg : strerror(-r));
}
