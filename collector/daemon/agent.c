// SPDX-License-Identifier: GPL-2.0-only
/* The agent's frames, by phase (agentctl.c's ops): the start's answers, clock probe
 * replies, flush answers, the guest binaries and STOPPED; anything else is counted and
 * ignored. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "agentctl.h"
#include "daemon.h"
#include "gbinfetch.h"
#include "kcache.h"
#include "log.h"
#include "util.h"

#define LIVE_PROBE_NS 1000000000ull
#define LIVE_RETRY_NS 250000000ull

/* The guest's KVM PTP clock's bracket of its reading (host CLOCK_REALTIME) narrows the probe's
 * round trip, never moves it out: CLOCK_REALTIME read between two readings of the host's perf
 * clock carries it over (both run at the same rate), the gap between those two widening it; a
 * malformed bracket, or one outside the round trip (a wall-clock step, a lying guest), is
 * refused and counted. */
static void daemon_probe_phc(struct daemon *d, const struct vt_msg *m, struct clock_sample *s, bool holdout)
{
	uint64_t lo = 0, hi = 0, host, real, host2;
	__int128 half, off, l, h;
	int r = agentctl_parse_probe_phc(m, &lo, &hi);

	if (r == -ENOENT)
		return;
	host = clocksync_host_now(&d->clk);
	real = util_now_ns(CLOCK_REALTIME);
	host2 = clocksync_host_now(&d->clk);
	half = ((__int128)host2 - host + 1) / 2;
	off = (__int128)real - (host + half); /* realtime - perf clock */
	l = (__int128)lo - off - half;
	h = (__int128)hi - off + half;
	if (r == 0 && host2 >= host && l >= 0 && h <= (__int128)UINT64_MAX)
		r = clockfit_narrow(s, (uint64_t)l, (uint64_t)h);
	else
		r = -ERANGE;
	if (r < 0)
		d->clk.phc_refused++;
	else if (holdout)
		d->clk.nholdout_phc++;
	else
		d->clk.nphc++;
}

static void daemon_probe_reply(struct daemon *d, const struct vt_msg *m)
{
	/* In the host perf clock (CLOCK_MONOTONIC but for kvm on TIME_CONV), as daemon_probe_send. */
	uint64_t id, host, guest, mono, now = clocksync_host_now(&d->clk);
	struct clock_sample s;

	if (agentctl_parse_probe_reply(m, &id, &host, &guest, &mono) < 0 || host > now) {
		d->unexpected++;
		return;
	}
	s = (struct clock_sample){ .id = id, .host_send = host, .guest = guest, .host_recv = now };
	/* A hold-out probe answered after the next probe went out (a burst began at stop or for a
	 * snapshot): its marker is in the trace, so its times go to clock.holdout all the same. */
	if (id != d->probe_id && id == d->holdout_id && daemon_holdout_method(d)) {
		d->holdout_id = 0;
		daemon_probe_phc(d, m, &s, true);
		clocksync_probe(&d->clk, true, &s);
		return;
	}
	if (id != d->probe_id) {
		d->unexpected++;
		return;
	}
	if (id == d->holdout_id)
		d->holdout_id = 0;
	d->probe_pending = false;
	/* kvm sessions probe as a heartbeat, and for hold-out markers: x86-tsc readings are no
	 * ptp samples. */
	if (!strcmp(d->s.clock_method, "ptp") || (d->probe_mark && daemon_holdout_method(d))) {
		daemon_probe_phc(d, m, &s, d->probe_mark);
		clocksync_probe(&d->clk, d->probe_mark, &s);
	}
	/* The live merge writes guest events up to the newest probe answered within
	 * CLOCKFIT_LIVE_RTT_MAX_NS: while it runs, a probe a second at least, and after a slower
	 * answer (the guest's CPUs or the host busy) another one in LIVE_RETRY_NS, so that a
	 * flood's session is merged while it traces, not at stop (bench/RESULTS.md). */
	if (d->live && d->ph == PH_TRACING && !strcmp(d->s.clock_method, "ptp"))
		d->next_probe_ns = MIN(d->next_probe_ns, now + (now - host > CLOCKFIT_LIVE_RTT_MAX_NS ?
								LIVE_RETRY_NS : LIVE_PROBE_NS));
	if (!d->probe_mark) /* no-op unless guest perf runs beside a trace clock other than mono */
		clocksync_perf_probe(&d->clk, &(struct clock_sample){ .id = id, .host_send = host, .guest = mono,
								       .host_recv = now });
	if (!strcmp(d->s.clock_method, "ptp") || (!d->probe_mark && d->clk.perf_fd >= 0))
		live_clock(d); /* the follower refits now instead of polling clock.samples */
	if (d->ph == PH_TRACING && d->holdout_due) {
		d->holdout_due = false;
		daemon_probe_send(d, true);
	}
}

static void daemon_on_stopped(struct daemon *d, const struct vt_msg *m)
{
	int r = agentctl_parse_stopped(m, d->s.session_id, d->agent_stats, d->s.ncpus, &d->n_agent_stats);

	if (r < 0)
		log_warn("agent-ctl-path: 'stopped' frame refused: %s", strerror(-r));
	if (d->o->perf.events && agentctl_parse_perf_stats(m, d->perf_stats, d->s.ncpus, &d->n_perf_stats) < 0)
		log_warn("agent-ctl-path: 'stopped' frame has no usable guest perf counters");
	d->stopped_msg = true;
}

/* RESET and CONFIG: the agent's answer to the old session's stop, then to the configuration. */
static bool daemon_agent_on_config(struct daemon *d, uint16_t t, const char *err)
{
	if (d->ph == PH_RESET && (t == VT_MSG_STOPPED || t == VT_MSG_ERROR)) {
		agentctl_send_config(d->agent, d->s.events, d->s.guest_clock, d->o->buffer_kb, d->o->tracer,
		     d->o->ftrace_filter, d->o->flush_ms, d->o->agent_events, &d->o->perf);
		daemon_set_phase(d, PH_CONFIG, daemon_timeout(d));
		return true;
	}
	if (d->ph == PH_CONFIG && t == VT_MSG_OK) {
		char key[KCACHE_KEY_LEN + 1];

		agentctl_send_meta_req(d->agent, kcache_key(d->o->vm_dir, key) == 0 ? key : NULL);
		daemon_set_phase(d, PH_META, daemon_timeout(d) * 3);
		d->total_ns = util_now_ns(CLOCK_MONOTONIC) + daemon_timeout(d) * GBIN_TOTAL_TIMEOUTS;
		return true;
	}
	if (d->ph == PH_CONFIG && t == VT_MSG_ERROR) {
		daemon_fail(d, "the agent refused the configuration (events '%s', clock %s): %s",
			    d->s.events, d->s.guest_clock, err);
		return true;
	}
	return false;
}

/* META: the metadata files, their end. */
static bool daemon_agent_on_meta(struct daemon *d, const struct vt_msg *m, const char *err)
{
	uint16_t t = m->hdr.type;

	if (t == VT_MSG_META_FILE) {
		char name[80];
		int r = agentctl_store_meta(d->agent, m, d->guest_dirfd, name, sizeof(name));

		if (r >= 0) /* only a file kept is progress; never past the phase's total bound */
			d->deadline_ns = MIN(util_now_ns(CLOCK_MONOTONIC) + daemon_timeout(d) * 3, d->total_ns);
		if (r < 0 && log_due(&d->meta_refused))
			log_warn("agent-ctl-path: metadata file '%s' refused: %s (only the names in docs/protocol.md are stored; %llu refused so far)",
				 name, r == -EINVAL ? "name not allowed" : strerror(-r),
				 (unsigned long long)d->meta_refused);
		return true;
	}
	if (t == VT_MSG_META_END) {
		char what[256];

		if (kcache_settle(d->o->vm_dir, d->guest_dirfd, what, sizeof(what)) < 0)
			log_warn("metadata: %s: guest kernel symbols missing from this session", what);
		else
			log_info("metadata: %u files, %llu bytes over the link; %s", agentctl_meta_files(d->agent),
				 (unsigned long long)agentctl_meta_bytes(d->agent), what);
		daemon_begin_tracing_steps(d);
		return true;
	}
	if (t == VT_MSG_ERROR) {
		daemon_fail(d, "the agent could not send its metadata: %s", err);
		return true;
	}
	return false;
}

/* PROBES0, TRACING, PROBES1: flush answers (snapshot, live merge) and clock probe replies. */
static bool daemon_agent_on_tracing(struct daemon *d, const struct vt_msg *m, const char *err)
{
	uint16_t t = m->hdr.type;

	if ((t == VT_MSG_OK || t == VT_MSG_ERROR) && d->snap_flush_frame && m->hdr.seq == d->snap_flush_frame) {
		daemon_snapshot_flush_answer(d, t == VT_MSG_OK, err);
		return true;
	}
	if ((t == VT_MSG_OK || t == VT_MSG_ERROR) && live_flush_answer(d, m->hdr.seq, t == VT_MSG_OK, err))
		return true;
	if (t == VT_MSG_PROBE_REPLY) {
		daemon_probe_reply(d, m);
		return true;
	}
	if (t == VT_MSG_ERROR && d->probe_pending) {
		d->probe_pending = false;
		log_warn("the agent cannot answer clock probes: %s; the clock stays unaligned", err);
		snprintf(d->s.clock_method, sizeof(d->s.clock_method), "none");
		d->probes_left = 0;
		return true;
	}
	return false;
}

/* BINARIES and STOP: the guest binaries' chunks, the agent's STOPPED. */
static bool daemon_agent_on_stop(struct daemon *d, const struct vt_msg *m, const char *err)
{
	uint16_t t = m->hdr.type;

	if (d->ph == PH_BINARIES && (t == VT_MSG_BINARY || t == VT_MSG_ERROR)) {
		if (!gbinfetch_on_msg(d->gbin, d->agent, m)) {
			daemon_binaries_end(d, NULL, NULL);
			return true;
		}
		if (gbinfetch_progress(d->gbin)) /* a trickle re-arms nothing; the total bound stays */
			d->deadline_ns = MIN(util_now_ns(CLOCK_MONOTONIC) + daemon_timeout(d), d->total_ns);
		return true;
	}
	if (d->ph == PH_STOP && t == VT_MSG_STOPPED) {
		daemon_on_stopped(d, m);
		return true;
	}
	if (d->ph == PH_STOP && t == VT_MSG_ERROR) {
		log_warn("the agent answered stop with an error: %s", err);
		d->stopped_msg = true;
		return true;
	}
	return false;
}

/* Frames that matter in the current phase; everything else is counted and ignored. */
static void daemon_agent_msg_phase(struct daemon *d, const struct vt_msg *m)
{
	uint16_t t = m->hdr.type;
	bool done = false;
	char err[512];

	if (t == VT_MSG_ERROR)
		agentctl_error_text(m, err, sizeof(err));
	if (t == VT_MSG_HELLO && d->ph != PH_HELLO)
		return; /* answers to repeated hellos */
	switch (d->ph) {
	case PH_HELLO:
		if (t == VT_MSG_HELLO)
			return daemon_on_hello(d, m);
		break;
	case PH_RESET:
	case PH_CONFIG:
		done = daemon_agent_on_config(d, t, err);
		break;
	case PH_META:
		done = daemon_agent_on_meta(d, m, err);
		break;
	case PH_PROBES0:
	case PH_PROBES1:
	case PH_TRACING:
		done = daemon_agent_on_tracing(d, m, err);
		break;
	case PH_START:
		if (t == VT_MSG_PROGRESS)
			return daemon_start_progress(d, m);
		if (t == VT_MSG_OK)
			return daemon_on_started(d, m);
		if (t == VT_MSG_ERROR)
			return daemon_fail(d, "the agent refused to start: %s", err);
		break;
	case PH_BINARIES:
	case PH_STOP:
		done = daemon_agent_on_stop(d, m, err);
		break;
	default:
		break;
	}
	if (!done && log_due(&d->unexpected))
		log_warn("agent-ctl-path: unexpected '%s' frame (seq %u) while %s, ignored (%llu so far)",
			 vt_msg_type_name(t), m->hdr.seq, daemon_phase_names[d->ph], (unsigned long long)d->unexpected);
}

/* agentctl's ops: every checked frame, and the port going away. */
static void daemon_agent_msg(void *userdata, const struct vt_msg *m)
{
	struct daemon *d = userdata;

	daemon_agent_msg_phase(d, m);
	/* Probe bursts advance here so that a reply to the last one moves on at once. */
	if (daemon_migration_probe_reply(d))
		;
	else if (d->ph == PH_TRACING && d->snap_probes_left && !d->probe_pending) {
		if (--d->snap_probes_left > 0)
			daemon_probe_send(d, false);
		else
			daemon_snapshot_finish(d);
	}
	if ((d->ph == PH_PROBES0 || d->ph == PH_PROBES1) && !d->probe_pending) {
		if (d->probes_left > 0)
			d->probes_left--;
		if (d->probes_left > 0)
			daemon_probe_send(d, false);
		else if (d->ph == PH_PROBES0)
			daemon_start_perf(d);
		else {
			agentctl_send_stop(d->agent);
			daemon_set_phase(d, PH_STOP, STOP_WAIT_NS);
		}
	}
}

static void daemon_agent_gone(void *userdata, int err)
{
	struct daemon *d = userdata;

	if (d->agent_gone || daemon_migration_port_ended(d, -1))
		return; /* (the source's end of a socket: the destination's connection takes over) */
	d->agent_gone = true;
	log_warn("agent-ctl-path closed: %s (QEMU gone?)", strerror(-err));
}

int daemon_agent_open(struct daemon *d)
{
	const struct agentctl_ops ops = { .userdata = d, .msg = daemon_agent_msg, .gone = daemon_agent_gone };

	return agentctl_new(&ops, &d->ctl, d->base, &d->agent);
}
