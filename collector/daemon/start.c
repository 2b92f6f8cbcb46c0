// SPDX-License-Identifier: GPL-2.0-only
/* The daemon's start: the agent's hello (the clock chosen, the data streams opened,
 * the configuration sent), the start probes, host perf, START and its OK (the CPUs that
 * cannot stream). The agent's frames reach it through agent.c. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agentctl.h"
#include "collector.h"
#include "daemon.h"
#include "hostperf.h"
#include "log.h"
#include "marker.h"
#include "ports.h"
#include "session.h"
#include "spool.h"
#include "util.h"

#define EARLY_PROBE_NS 150000000ull

/* A libvirt domain named like the VM: libvirt's run state names its QEMU
 * (/run/libvirt/qemu/NAME.pid; VT_LIBVIRT_QEMU_RUN overrides the dir, for tests). */
static pid_t libvirt_qemu_pid(const char *name)
{
	const char *dir = getenv("VT_LIBVIRT_QEMU_RUN") ? getenv("VT_LIBVIRT_QEMU_RUN") : "/run/libvirt/qemu";
	_cleanup_free_ char *text = NULL;
	char path[PATH_MAX];
	uint64_t pid;

	snprintf(path, sizeof(path), "%s/%s.pid", dir, name);
	if (util_read_file(path, 64, &text, NULL) < 0)
		return 0;
	text[strcspn(text, "\n")] = '\0';
	if (util_parse_u64(text, 1u << 22, &pid) < 0 || !pid || kill((pid_t)pid, 0) < 0)
		return 0;
	log_info("QEMU pid %llu from libvirt's %s", (unsigned long long)pid, path);
	return (pid_t)pid;
}

void daemon_on_hello(struct daemon *d, const struct vt_msg *m)
{
	char why[PATH_MAX + 256];
	int r = agentctl_parse_hello(m, &d->hello);

	if (r < 0) {
		daemon_fail(d, "agent-ctl-path: the agent's hello is invalid (%s: ncpus 1..%u and a power-of-two page size 4 KiB..%u KiB "
			    "required; a ring of larger sub-buffers: run the guest's trace-agent with --subbuf-kb %u or less)",
			    strerror(-r), COLLECTOR_MAX_CPUS, VT_MARKER_MAX_PAGE / 1024, VT_MARKER_MAX_PAGE / 1024);
		return;
	}
	d->s.ncpus = d->hello.ncpus;
	d->s.page_size = d->hello.page_size;
	snprintf(d->s.guest_release, sizeof(d->s.guest_release), "%s", d->hello.release);
	snprintf(d->s.guest_arch, sizeof(d->s.guest_arch), "%s", d->hello.arch);
	if (!d->s.qemu_pid)
		d->s.qemu_pid = libvirt_qemu_pid(d->o->name);
	if (!d->s.qemu_pid)
		d->s.qemu_pid = port_peer_pid(&d->ctl);
	if (daemon_choose_clock(d, why, sizeof(why)) < 0)
		return daemon_fail(d, "%s", why);
	log_info("agent %s: guest %s %s, %u CPUs, page size %u, clock method %s",
		 d->hello.agent_version, d->hello.release, d->hello.arch, d->hello.ncpus,
		 d->hello.page_size, d->s.clock_method);
	session_write(&d->s);
	if (daemon_open_data(d) < 0) {
		daemon_fail(d, "start failed: data ports missing or unusable (see above)");
		return;
	}
	if (d->hello.state == VT_STATE_TRACING) {
		log_warn("the agent is still tracing an earlier session: stopping it first");
		agentctl_send_stop(d->agent);
		daemon_set_phase(d, PH_RESET, daemon_timeout(d));
		return;
	}
	agentctl_send_config(d->agent, d->s.events, d->s.guest_clock, d->o->buffer_kb, d->o->tracer,
			     d->o->ftrace_filter, d->o->flush_ms, d->o->agent_events, &d->o->perf);
	daemon_set_phase(d, PH_CONFIG, daemon_timeout(d));
}

void daemon_begin_tracing_steps(struct daemon *d)
{
	if (!strcmp(d->s.clock_method, "ptp")) {
		d->probes_left = PROBES_PER_BURST;
		daemon_set_phase(d, PH_PROBES0, daemon_timeout(d));
		daemon_probe_send(d, false);
		return;
	}
	daemon_start_perf(d);
}

/* START's bound: --timeout x (3 + streams / 4), streams being the CPUs the host has ports for
 * (not what the guest claims): 30 s for 2 vCPUs at the default 10 s, 110 s for 32, 190 s for 64
 * (a 64-vCPU TCG guest on 2 host cores enabled the 47 default events in 42 s). */
static void daemon_start_wait_begin(struct daemon *d)
{
	uint64_t now = util_now_ns(CLOCK_MONOTONIC);
	unsigned streams = 0;

	for (unsigned i = 0; i < d->s.ncpus; i++)
		streams += !d->cpu_missing[i];
	d->sw = (struct daemon_start_wait){ .sent_ns = now, .last_ns = now, .streams = streams,
				 .cap_ns = now + daemon_timeout(d) * (3 + streams / 4) };
}

/* Progress: the wait lasts --timeout from now, never past the bound. */
static void daemon_start_moved(struct daemon *d, uint64_t now)
{
	d->sw.last_ns = now;
	d->deadline_ns = MIN(now + daemon_timeout(d), d->sw.cap_ns);
}

void daemon_start_progress(struct daemon *d, const struct vt_msg *m)
{
	struct agent_progress p;
	int r = agentctl_parse_progress(m, &p);
	double since;

	d->sw.reports++;
	if (r < 0) {
		if (log_due(&d->unexpected))
			log_warn("agent-ctl-path: 'progress' frame refused: %s (%llu unexpected frames so far)",
				 strerror(-r), (unsigned long long)d->unexpected);
		return;
	}
	if (p.step < d->sw.at.step || (p.step == d->sw.at.step && p.done <= d->sw.at.done)) {
		d->sw.repeats++; /* nothing new: a guest repeating itself does not move the deadline */
		return;
	}
	since = (double)(util_now_ns(CLOCK_MONOTONIC) - d->sw.sent_ns) / 1e9;
	if (p.step != d->sw.at.step) /* a slow start's steps in collector.log; a quick one's at debug */
		log_msg(since >= 1.0 ? LOG_INFO : LOG_DEBUG, "start: the agent is %s (%u/%u) at +%.1f s",
			vt_start_step_name(p.step), p.done, p.total, since);
	d->sw.at = p;
	daemon_start_moved(d, util_now_ns(CLOCK_MONOTONIC));
}

void daemon_start_watch(struct daemon *d, uint64_t now)
{
	struct spool_stats st;
	unsigned begun = 0;

	for (unsigned k = 0; k < ARRAY_SIZE(d->spools); k++) {
		if (!daemon_stream(d, k) || !d->spools[k])
			continue;
		spool_stats(d->spools[k], &st);
		begun += st.begun;
	}
	if (begun > d->sw.begun) { /* at most one per stream: bounded by the host's ports */
		d->sw.begun = begun;
		daemon_start_moved(d, now);
	}
}

/* "enabling events (12/47)", or what a start without reports is waiting for. */
static void daemon_start_where(const struct daemon *d, char *buf, size_t size)
{
	if (!d->sw.at.step)
		snprintf(buf, size, "(no progress reported: an older agent)");
	else if (d->sw.at.total)
		snprintf(buf, size, "%s (%u/%u)", vt_start_step_name(d->sw.at.step), d->sw.at.done, d->sw.at.total);
	else
		snprintf(buf, size, "%s", vt_start_step_name(d->sw.at.step));
}

void daemon_start_timed_out(struct daemon *d, uint64_t now, const char *hint)
{
	double since = (double)(now - d->sw.last_ns) / 1e9, all = (double)(now - d->sw.sent_ns) / 1e9;
	char where[160];

	daemon_start_where(d, where, sizeof(where));
	if (now >= d->sw.cap_ns && now - d->sw.last_ns < daemon_timeout(d))
		return daemon_fail(d, "start failed: the guest is slow, not stuck: after %.0f s, the bound of START "
				   "(--timeout %u s x (3 + %u CPUs / 4)), the agent was still starting: %s, last "
				   "progress %.1f s ago, %u of %u begin markers in. Start again with a larger --timeout "
				   "(nothing was traced)", all, d->o->timeout_s, d->sw.streams, where, since,
				   d->sw.begun, d->sw.streams);
	if (!d->sw.at.step && !d->sw.begun) /* an agent that reports nothing: as before */
		return daemon_fail(d, "the agent (%s, guest %s) answered HELLO but not within %u s while %s: that step is "
				   "stuck in the guest (its log says where; 'trace-collector stop' is not needed, nothing "
				   "was traced; the agent gives up a start whose begin markers stop coming)%s",
				   d->hello.agent_version, d->hello.release, d->o->timeout_s, daemon_phase_names[d->ph],
				   hint);
	daemon_fail(d, "start failed: the agent (%s, guest %s) is stuck: it was %s, %u of %u begin markers in, "
		    "and nothing moved for %.1f s (--timeout %u s; %llu repeated reports did not count; %.0f s since "
		    "START). 'trace-collector stop' is not needed, nothing was traced%s", d->hello.agent_version,
		    d->hello.release, where, d->sw.begun, d->sw.streams, since, d->o->timeout_s,
		    (unsigned long long)d->sw.repeats, all, hint);
}

/* The session starts when START goes out: the agent turns tracing on before its OK
 * arrives, and the merge clamps guest times to [started, stopped] ± the clock bound. */
void daemon_send_start(struct daemon *d)
{
	d->s.started_realtime_ns = util_now_ns(CLOCK_REALTIME);
	d->s.started_mono_ns = util_now_ns(CLOCK_MONOTONIC);
	d->host_started_ns = clocksync_host_now(&d->clk);
	agentctl_send_start(d->agent, d->s.session_id);
	d->agent_started = true;
	daemon_set_phase(d, PH_START, daemon_timeout(d));
	daemon_start_wait_begin(d);
}

void daemon_start_perf(struct daemon *d)
{
	char fifos[2 * PATH_MAX + 96];
	const char *control = NULL;
	bool monotonic;
	int r;

	if (d->o->no_host || d->o->host_data[0]) {
		daemon_send_start(d);
		return;
	}
	monotonic = !strcmp(d->s.clock_method, "ptp") || (!strcmp(d->s.clock_method, "kvm") && clocksync_kvm_monotonic(&d->clk));
	if (d->o->live_merge && (r = live_prepare(d, &control)) < 0) {
		daemon_fail(d, "the live merge: cannot make host perf's control fifos in %s: %s (start with --no-live-merge: stop then merges)",
			    d->s.dir, strerror(-r));
		return;
	}
	/* A set's leader (no live merge): the fifos a snapshot pings to cut host.data. */
	if (!control && d->o->group && (r = hostperf_control_fifos(d->s.dir, fifos, sizeof(fifos))) == 0)
		control = fifos;
	r = hostperf_start(d->o, d->s.dir, monotonic, control, &d->perf);
	if (r < 0) {
		daemon_fail(d, "cannot start host perf record: %s (use --no-host to trace the guest only)", strerror(-r));
		return;
	}
	snprintf(d->s.host_data, sizeof(d->s.host_data), "host.data");
	snprintf(d->s.host_mediated_pmu, sizeof(d->s.host_mediated_pmu), "%s", hostperf_mediated(d->perf));
	daemon_set_phase(d, PH_PERF, 30 * SEC);
}

/* Names the CPUs that cannot stream (no host port, or START's OK says so) into
 * d->s.missing_cpus; how many. */
static unsigned daemon_missing_cpus(struct daemon *d, const struct vt_msg *m, char *why, size_t size)
{
	struct vt_cpu_stats st[COLLECTOR_MAX_CPUS];
	unsigned n = 0, missing = 0;
	size_t at = 0, wat = 0;

	/* An agent before 0.2 does not say: trust its OK. */
	if (agentctl_parse_stopped(m, d->s.session_id, st, d->s.ncpus, &n) < 0)
		n = 0;
	for (unsigned i = 0; i < d->s.ncpus; i++) {
		int e = i < n ? st[i].error : 0;

		if (!d->cpu_missing[i] && (e == 0 || e == -ENXIO))
			continue;
		if (d->cpu_missing[i] && (e == 0 || e == -ENXIO))
			e = -ENOENT; /* the host has no port for it */
		d->cpu_missing[i] = true;
		missing++;
		/* at most 256 CPUs of 3 digits and a comma: always fits */
		at += (size_t)snprintf(d->s.missing_cpus + at, sizeof(d->s.missing_cpus) - at, "%s%u", at ? "," : "", i);
		if (wat < size)
			wat += (size_t)snprintf(why + wat, size - wat, "%scpu%u (%s)", wat ? ", " : "", i,
						e < 0 && e > -4096 ? strerror(-e) : "bad error code");
	}
	return missing;
}

/* The same for the perf streams (--guest-perf): PERF_STATS of START's OK. */
static unsigned daemon_missing_perf(struct daemon *d, const struct vt_msg *m, char *why, size_t size)
{
	struct vt_perf_stats st[COLLECTOR_MAX_CPUS];
	unsigned n = 0, missing = 0;
	size_t wat = strlen(why);

	if (!d->o->perf.events)
		return 0;
	if (agentctl_parse_perf_stats(m, st, d->s.ncpus, &n) < 0)
		n = 0; /* an agent without guest perf: every CPU fails below */
	for (unsigned i = 0; i < d->s.ncpus; i++) {
		unsigned k = SPOOL_INDEX(i, true);
		int e = i < n ? st[i].error : -EPROTONOSUPPORT;

		if (!d->cpu_missing[k] && (e == 0 || e == -ENXIO))
			continue;
		if (d->cpu_missing[k] && (e == 0 || e == -ENXIO))
			e = -ENOENT;
		d->cpu_missing[k] = true;
		missing++;
		if (wat < size)
			wat += (size_t)snprintf(why + wat, size - wat, "%sperf cpu%u (%s)", wat ? ", " : "", i,
						e < 0 && e > -4096 ? strerror(-e) : "bad error code");
	}
	return missing;
}

void daemon_on_started(struct daemon *d, const struct vt_msg *m)
{
	char why[1024] = "";
	unsigned missing = daemon_missing_cpus(d, m, why, sizeof(why));
	unsigned perf_missing = daemon_missing_perf(d, m, why, sizeof(why));

	if (missing && !d->o->allow_partial)
		return daemon_fail(d, "start failed: %u of %u guest CPUs cannot stream: %s. Their trace-path "
				   "ports are not usable in the guest: re-run 'trace-collector setup' for this VM (it "
				   "spreads the ports over several virtio-serial controllers), update the VM's "
				   "arguments or domain and restart it; or pass --allow-partial to trace the other CPUs",
				   missing, d->s.ncpus, why);
	if (perf_missing && !d->o->allow_partial)
		return daemon_fail(d, "start failed: guest perf cannot stream from %u of %u guest CPUs: %s. A missing "
				   "perf-path port needs 'trace-collector setup' for this VM (it creates the perf "
				   "ports) and a VM restart; an agent without guest perf needs updating; or pass "
				   "--allow-partial", perf_missing, d->s.ncpus, why);
	if (missing || perf_missing)
		log_warn("tracing without %u of %u guest CPUs and guest perf of %u (--allow-partial): %s", missing,
			 d->s.ncpus, perf_missing, why);
	session_set_state(&d->s, "tracing");
	daemon_set_phase(d, PH_TRACING, 0);
	d->started_ok = true;
	/* The first probes come early (0.15, 0.3, 0.6, 1.2 s, then each interval): a session that
	 * ends soon (QEMU killed, the daemon killed) still has probes apart from the start burst,
	 * which a guest clock counting cycles needs for its rate. */
	d->early_probe_ns = EARLY_PROBE_NS;
	d->next_probe_ns = util_now_ns(CLOCK_MONOTONIC) + MIN(d->early_probe_ns, daemon_interval(d));
	log_info("tracing: session %llu in %s", (unsigned long long)d->s.session_id, d->s.dir);
	daemon_notify(d, "ok\n");
	if (d->o->foreground) /* -o -: stdout is the live perf.data stream */
		fprintf(d->o->live_stdout ? stderr : stdout, "%s\n", d->s.dir), fflush(stdout);
	if (d->disk_reason[0])
		daemon_stop_begin(d, d->disk_reason);
}
