// SPDX-License-Identifier: GPL-2.0-only
/* The trace-collector daemon: one libevent loop (explicit base) that drives the agent
 * through hello -> config -> metadata -> probes -> host perf -> start, keeps every port
 * read, and on stop (request, signal, limit, disk full, QEMU gone, agent silent) finalizes
 * the session dir. See collector/README.md. */
#include <dirent.h>
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>

#include "clocksync.h"
#include "collector.h"
#include "daemon.h"
#include "log.h"
#include "util.h"

#define TICK_MS 100
#define EARLY_PROBE_NS 150000000ull
#define STOP_WAIT_NS ((uint64_t)d->o->timeout_s * SEC) /* bounded wait for end markers */
#define PERF_WAIT_NS (30ull * 1000000000ull)

static void daemon_notify(struct daemon *d, const char *line)
{
	if (d->notify_fd >= 0)
		util_write_full(d->notify_fd, line, strlen(line));
}

static void daemon_set_phase(struct daemon *d, enum phase ph, uint64_t timeout_ns)
{
	d->ph = ph;
	d->deadline_ns = timeout_ns ? util_now_ns(CLOCK_MONOTONIC) + timeout_ns : 0;
	log_debug("phase: %s", daemon_phase_names[ph]);
}

static uint64_t daemon_interval(const struct daemon *d)
{
	return (uint64_t)d->o->probe_interval_ms * 1000000ull;
}

static void daemon_finalize(struct daemon *d);

/* A failure before tracing started: say why, undo, and let start report it. */
static void daemon_fail(struct daemon *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void daemon_fail(struct daemon *d, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vmsg(LOG_ERR, fmt, ap);
	va_end(ap);
	va_start(ap, fmt);
	vsnprintf(d->s.start_error, sizeof(d->s.start_error), fmt, ap);
	va_end(ap);
	for (char *p = d->s.start_error; *p; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';
	if (d->agent && !d->agent_gone && d->agent_started)
		agentctl_send_stop(d->agent);
	if (d->perf) {
		hostperf_stop(d->perf);
		hostperf_kill(d->perf);
	}
	session_release_reserve(&d->s);
	snprintf(d->s.stop_reason, sizeof(d->s.stop_reason), "start failed");
	session_set_state(&d->s, "failed");
	daemon_notify(d, "fail\n");
	d->exit_code = 1;
	event_base_loopbreak(d->base);
}

static void daemon_stop_begin(struct daemon *d, const char *reason);
static void daemon_binaries_end(struct daemon *d, const char *status, const char *why);
static void daemon_spool_error(void *userdata, unsigned k, int err);
static void daemon_spool_progress(void *userdata, unsigned k);
static struct spool *const *daemon_spool_peers(void *userdata);

/* True on the 1st, 2nd, 4th, 8th... call: hostile floods cannot fill the log. */
static bool log_due(uint64_t *counter)
{
	uint64_t n = ++*counter;

	return (n & (n - 1)) == 0;
}

/* ---- clock probes ---- */

static void daemon_probe_reply(struct daemon *d, const struct vt_msg *m)
{
	uint64_t id, host, guest, mono, now = util_now_ns(CLOCK_MONOTONIC);

	if (agentctl_parse_probe_reply(m, &id, &host, &guest, &mono) < 0 || host > now) {
		d->unexpected++;
		return;
	}
	/* A hold-out probe answered after the next probe went out (a burst began at stop or for a
	 * snapshot): its marker is in the trace, so its times go to clock.holdout all the same. */
	if (id != d->probe_id && id == d->holdout_id && !strcmp(d->s.clock_method, "ptp")) {
		d->holdout_id = 0;
		clocksync_probe(&d->clk, true, &(struct clock_sample){ .id = id, .host_send = host, .guest = guest,
									 .host_recv = now });
		return;
	}
	if (id != d->probe_id) {
		d->unexpected++;
		return;
	}
	if (id == d->holdout_id)
		d->holdout_id = 0;
	d->probe_pending = false;
	/* kvm sessions probe only as a heartbeat: x86-tsc readings are no ptp samples. */
	if (!strcmp(d->s.clock_method, "ptp"))
		clocksync_probe(&d->clk, d->probe_mark,
				&(struct clock_sample){ .id = id, .host_send = host, .guest = guest, .host_recv = now });
	if (!d->probe_mark) /* no-op unless guest perf runs beside a trace clock other than mono */
		clocksync_perf_probe(&d->clk, &(struct clock_sample){ .id = id, .host_send = host, .guest = mono,
								       .host_recv = now });
	if (d->ph == PH_TRACING && d->holdout_due) {
		d->holdout_due = false;
		daemon_probe_send(d, true);
	}
}

/* ---- start sequence ---- */

/* Bytes an earlier session left in a FIFO (QEMU's pipe chardev never drops them). */
static void daemon_drain(struct port *p)
{
	char path[PATH_MAX + 8];
	uint64_t n = port_drain(p);

	if (n)
		log_info("%s: dropped %llu stale bytes queued before this session", port_path(p, true, path, sizeof(path)),
			 (unsigned long long)n);
}

static int daemon_open_stream(struct daemon *d, unsigned k)
{
	unsigned cpu = k % COLLECTOR_MAX_CPUS;
	bool perf = k >= COLLECTOR_MAX_CPUS;
	char path[PATH_MAX + 8], name[32];
	int r;

	snprintf(name, sizeof(name), "%s%u", daemon_stream_port(k), cpu);
	port_init(&d->data[k], d->o->vm_dir, name, d->kind);
	r = port_open(&d->data[k], false);
	if (r < 0 && d->o->allow_partial) {
		log_warn("cannot open %s: %s — cpu%u's %s is not collected (--allow-partial); run 'trace-collector "
			 "setup --name %s --cpus %u' to collect it", port_path(&d->data[k], true, path, sizeof(path)),
			 strerror(-r), cpu, perf ? "guest perf" : "trace", d->o->name, d->hello.ncpus);
		d->cpu_missing[k] = true;
		return 0;
	}
	if (r < 0) {
		log_error("cannot open %s: %s — the guest has %u CPUs; run 'trace-collector setup --name %s --cpus %u' "
			  "(and give the VM the new ports), or pass --allow-partial to trace the CPUs that have ports",
			  port_path(&d->data[k], true, path, sizeof(path)), strerror(-r), d->hello.ncpus,
			  d->o->name, d->hello.ncpus);
		return r;
	}
	if (d->kind == PORT_FIFO)
		daemon_drain(&d->data[k]);
	r = spool_new(&(struct spool_ops){ .userdata = d, .error = daemon_spool_error,
					   .progress = daemon_spool_progress, .peers = daemon_spool_peers },
		      cpu, perf, &d->data[k], d->s.dir, d->s.session_id, d->hello.page_size, &d->spools[k]);
	if (r == 0 && d->o->flight_recorder)
		spool_flight_recorder(d->spools[k], d->o->flight_recorder);
	if (r == 0)
		r = spool_arm(d->spools[k], d->base);
	if (r < 0)
		log_error("cpu%u: cannot create %s/%scpu%u.spool: %s", cpu, d->s.dir, perf ? "perf-" : "", cpu,
			  strerror(-r));
	return r;
}

static int daemon_open_data(struct daemon *d)
{
	for (unsigned k = 0; k < 2 * COLLECTOR_MAX_CPUS; k++) {
		int r = daemon_stream(d, k) ? daemon_open_stream(d, k) : 0;

		if (r < 0)
			return r;
	}
	return 0;
}

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

static void daemon_on_hello(struct daemon *d, const struct vt_msg *m)
{
	char why[PATH_MAX + 256];
	int r = agentctl_parse_hello(m, &d->hello);

	if (r < 0) {
		daemon_fail(d, "agent-ctl-path: the agent's hello is invalid (%s: ncpus 1..%u and a power-of-two page size 4 KiB..1 MiB required)",
			    strerror(-r), COLLECTOR_MAX_CPUS);
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

static void daemon_start_perf(struct daemon *d);

static void daemon_begin_tracing_steps(struct daemon *d)
{
	if (!strcmp(d->s.clock_method, "ptp")) {
		d->probes_left = PROBES_PER_BURST;
		daemon_set_phase(d, PH_PROBES0, daemon_timeout(d));
		daemon_probe_send(d, false);
		return;
	}
	daemon_start_perf(d);
}

/* The session starts when START goes out: the agent turns tracing on before its OK
 * arrives, and the merge clamps guest times to [started, stopped] ± the clock bound. */
static void daemon_send_start(struct daemon *d)
{
	d->s.started_realtime_ns = util_now_ns(CLOCK_REALTIME);
	d->s.started_mono_ns = util_now_ns(CLOCK_MONOTONIC);
	d->host_started_ns = clocksync_host_now(&d->clk);
	agentctl_send_start(d->agent, d->s.session_id);
	d->agent_started = true;
	daemon_set_phase(d, PH_START, daemon_timeout(d));
}

static void daemon_start_perf(struct daemon *d)
{
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
	r = hostperf_start(d->o, d->s.dir, monotonic, control, &d->perf);
	if (r < 0) {
		daemon_fail(d, "cannot start host perf record: %s (use --no-host to trace the guest only)", strerror(-r));
		return;
	}
	snprintf(d->s.host_data, sizeof(d->s.host_data), "host.data");
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

static void daemon_on_started(struct daemon *d, const struct vt_msg *m)
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

static void daemon_on_stopped(struct daemon *d, const struct vt_msg *m)
{
	int r = agentctl_parse_stopped(m, d->s.session_id, d->agent_stats, d->s.ncpus, &d->n_agent_stats);

	if (r < 0)
		log_warn("agent-ctl-path: 'stopped' frame refused: %s", strerror(-r));
	if (d->o->perf.events && agentctl_parse_perf_stats(m, d->perf_stats, d->s.ncpus, &d->n_perf_stats) < 0)
		log_warn("agent-ctl-path: 'stopped' frame has no usable guest perf counters");
	d->stopped_msg = true;
}

/* Frames that matter in the current phase; everything else is counted and ignored. */
static void daemon_agent_msg_phase(struct daemon *d, const struct vt_msg *m)
{
	uint16_t t = m->hdr.type;
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
		if (t == VT_MSG_STOPPED || t == VT_MSG_ERROR) {
			agentctl_send_config(d->agent, d->s.events, d->s.guest_clock, d->o->buffer_kb, d->o->tracer,
			     d->o->ftrace_filter, d->o->flush_ms, d->o->agent_events, &d->o->perf);
			return daemon_set_phase(d, PH_CONFIG, daemon_timeout(d));
		}
		break;
	case PH_CONFIG:
		if (t == VT_MSG_OK) {
			char key[KCACHE_KEY_LEN + 1];

			agentctl_send_meta_req(d->agent, kcache_key(d->o->vm_dir, key) == 0 ? key : NULL);
			daemon_set_phase(d, PH_META, daemon_timeout(d) * 3);
			d->total_ns = util_now_ns(CLOCK_MONOTONIC) + daemon_timeout(d) * GBIN_TOTAL_TIMEOUTS;
			return;
		}
		if (t == VT_MSG_ERROR)
			return daemon_fail(d, "the agent refused the configuration (events '%s', clock %s): %s",
					   d->s.events, d->s.guest_clock, err);
		break;
	case PH_META:
		if (t == VT_MSG_META_FILE) {
			char name[80];
			int r = agentctl_store_meta(d->agent, m, d->guest_dirfd, name, sizeof(name));

			if (r >= 0) /* only a file kept is progress; never past the phase's total bound */
				d->deadline_ns = MIN(util_now_ns(CLOCK_MONOTONIC) + daemon_timeout(d) * 3, d->total_ns);
			if (r < 0 && log_due(&d->meta_refused))
				log_warn("agent-ctl-path: metadata file '%s' refused: %s (only the names in docs/protocol.md are stored; %llu refused so far)",
					 name, r == -EINVAL ? "name not allowed" : strerror(-r),
					 (unsigned long long)d->meta_refused);
			return;
		}
		if (t == VT_MSG_META_END) {
			char what[256];

			if (kcache_settle(d->o->vm_dir, d->guest_dirfd, what, sizeof(what)) < 0)
				log_warn("metadata: %s: guest kernel symbols missing from this session", what);
			else
				log_info("metadata: %u files, %llu bytes over the link; %s", agentctl_meta_files(d->agent),
					 (unsigned long long)agentctl_meta_bytes(d->agent), what);
			return daemon_begin_tracing_steps(d);
		}
		if (t == VT_MSG_ERROR)
			return daemon_fail(d, "the agent could not send its metadata: %s", err);
		break;
	case PH_PROBES0:
	case PH_PROBES1:
	case PH_TRACING:
		if ((t == VT_MSG_OK || t == VT_MSG_ERROR) && d->snap_flush_frame && m->hdr.seq == d->snap_flush_frame)
			return daemon_snapshot_flush_answer(d, t == VT_MSG_OK, err);
		if ((t == VT_MSG_OK || t == VT_MSG_ERROR) && live_flush_answer(d, m->hdr.seq, t == VT_MSG_OK, err))
			return;
		if (t == VT_MSG_PROBE_REPLY)
			return daemon_probe_reply(d, m);
		if (t == VT_MSG_ERROR && d->probe_pending) {
			d->probe_pending = false;
			log_warn("the agent cannot answer clock probes: %s; the clock stays unaligned", err);
			snprintf(d->s.clock_method, sizeof(d->s.clock_method), "none");
			d->probes_left = 0;
			return;
		}
		break;
	case PH_START:
		if (t == VT_MSG_OK)
			return daemon_on_started(d, m);
		if (t == VT_MSG_ERROR)
			return daemon_fail(d, "the agent refused to start: %s", err);
		break;
	case PH_BINARIES:
		if (t == VT_MSG_BINARY || t == VT_MSG_ERROR) {
			if (!gbinfetch_on_msg(d->gbin, d->agent, m))
				return daemon_binaries_end(d, NULL, NULL);
			if (gbinfetch_progress(d->gbin)) /* a trickle re-arms nothing; the total bound stays */
				d->deadline_ns = MIN(util_now_ns(CLOCK_MONOTONIC) + daemon_timeout(d), d->total_ns);
			return;
		}
		break;
	case PH_STOP:
		if (t == VT_MSG_STOPPED)
			return daemon_on_stopped(d, m);
		if (t == VT_MSG_ERROR) {
			log_warn("the agent answered stop with an error: %s", err);
			d->stopped_msg = true;
			return;
		}
		break;
	default:
		break;
	}
	if (log_due(&d->unexpected))
		log_warn("agent-ctl-path: unexpected '%s' frame (seq %u) while %s, ignored (%llu so far)",
			 vt_msg_type_name(t), m->hdr.seq, daemon_phase_names[d->ph], (unsigned long long)d->unexpected);
}

/* agentctl's ops: every checked frame, and the port going away. */
static void daemon_agent_msg(void *userdata, const struct vt_msg *m)
{
	struct daemon *d = userdata;

	daemon_agent_msg_phase(d, m);
	/* Probe bursts advance here so that a reply to the last one moves on at once. */
	if (d->ph == PH_TRACING && d->snap_probes_left && !d->probe_pending) {
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

	if (d->agent_gone)
		return;
	d->agent_gone = true;
	log_warn("agent-ctl-path closed: %s (QEMU gone?)", strerror(-err));
}

static int daemon_agent_open(struct daemon *d)
{
	const struct agentctl_ops ops = { .userdata = d, .msg = daemon_agent_msg, .gone = daemon_agent_gone };

	return agentctl_new(&ops, &d->ctl, d->base, &d->agent);
}

/* ---- spools ---- */

/* A spool's port or file failed (acted on from the loop). */
static void daemon_spool_failed(struct daemon *d, unsigned k, int err)
{
	unsigned cpu = k % COLLECTOR_MAX_CPUS;
	const char *pre = k < COLLECTOR_MAX_CPUS ? "" : "perf-";
	char reason[128];

	if (err == -EPIPE || err == -ECONNRESET) {
		d->data_gone[k] = true;
		log_warn("cpu%u: %s%u closed (QEMU gone?)", cpu, daemon_stream_port(k), cpu);
		return;
	}
	log_error("cpu%u: cannot write %s/%scpu%u.spool: %s — stopping; what was spooled is kept",
		  cpu, d->s.dir, pre, cpu, strerror(-err));
	session_release_reserve(&d->s); /* room for session.ini and the stop's files */
	snprintf(reason, sizeof(reason), "%s writing %scpu%u.spool", err == -ENOSPC ? "disk full" : strerror(-err),
		 pre, cpu);
	daemon_discard_all(d);
	daemon_stop_begin(d, reason);
}

/* A disk cut, after the guest data was discarded and host perf stopped: the phase moves on. */
static void daemon_disk_act(struct daemon *d, const char *reason)
{
	if (d->ph == PH_BINARIES)
		return daemon_binaries_end(d, "cut:disk-limit", reason);
	if (d->ph == PH_START) { /* the streams began before START's OK: the session stops once it came */
		snprintf(d->disk_reason, sizeof(d->disk_reason), "%s", reason);
		return;
	}
	daemon_stop_begin(d, reason);
}

static void daemon_deferred(evutil_socket_t fd, short what, void *arg)
{
	struct daemon *d = arg;
	char reason[sizeof(d->deferred_cut)];

	for (unsigned k = 0; k < ARRAY_SIZE(d->spool_err); k++) {
		int err = d->spool_err[k];

		d->spool_err[k] = 0;
		if (err)
			daemon_spool_failed(d, k, err);
	}
	if (d->deferred_cut[0]) {
		snprintf(reason, sizeof(reason), "%s", d->deferred_cut);
		d->deferred_cut[0] = '\0';
		daemon_disk_act(d, reason);
	}
}

/* spool's ops: an error is recorded, acted on from the loop; progress feeds the disk budget. */
static void daemon_spool_error(void *userdata, unsigned k, int err)
{
	struct daemon *d = userdata;

	if (k < ARRAY_SIZE(d->spool_err) && !d->spool_err[k])
		d->spool_err[k] = err ? err : -EIO;
	daemon_defer(d);
}

#define DISK_CHECK_STEP (256u << 10)

static void daemon_spool_progress(void *userdata, unsigned k)
{
	struct daemon *d = userdata;
	struct spool_stats st;

	spool_stats(d->spools[k], &st);
	d->disk_unchecked += st.spooled - MIN(st.spooled, d->disk_seen[k]);
	d->disk_seen[k] = st.spooled;
	if (d->disk_unchecked < DISK_CHECK_STEP)
		return;
	d->disk_unchecked = 0;
	daemon_disk_progress(d);
}

static struct spool *const *daemon_spool_peers(void *userdata)
{
	return ((struct daemon *)userdata)->spools;
}

static bool daemon_all_ended(const struct daemon *d)
{
	struct spool_stats st;

	for (unsigned k = 0; k < ARRAY_SIZE(d->spools); k++) {
		if (!daemon_stream(d, k))
			continue;
		spool_stats(d->spools[k], &st);
		if (!st.ended && !d->data_gone[k] && !d->cpu_missing[k])
			return false;
	}
	return true;
}

/* ---- stop and finalize ---- */

static void daemon_stop_begin(struct daemon *d, const char *reason)
{
	daemon_snapshot_finish(d); /* one being taken: with the probes it has */
	if (d->stop_begun)
		return;
	if (!d->started_ok) {
		daemon_fail(d, "start failed: %s", reason);
		return;
	}
	d->stop_begun = true;
	snprintf(d->s.stop_reason, sizeof(d->s.stop_reason), "%s", reason);
	session_set_state(&d->s, "stopping");
	log_info("stopping: %s", reason);
	if (d->agent_gone) {
		daemon_set_phase(d, PH_STOP, 0);
		return;
	}
	if (!strcmp(d->s.clock_method, "ptp")) {
		d->probes_left = PROBES_PER_BURST;
		daemon_set_phase(d, PH_PROBES1, daemon_timeout(d));
		daemon_probe_send(d, false);
		return;
	}
	agentctl_send_stop(d->agent);
	daemon_set_phase(d, PH_STOP, STOP_WAIT_NS);
}

static void daemon_binaries_end(struct daemon *d, const char *status, const char *why)
{
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	FILE *f;

	if (status)
		gbinfetch_abort(d->gbin, status, why);
	f = open_memstream(&text, &len);
	if (f) {
		gbinfetch_summary(d->gbin, f);
		fclose(f);
		log_info("%s", text ? text : "");
	}
	daemon_finalize(d);
}

/* With guest perf, once host perf has stopped (so the host recording does not run on while a
 * guest sends slowly): the binaries guest user-mode samples ran in, from the agent
 * (gbinfetch.c), within GBIN_TOTAL_TIMEOUTS × --timeout in all. */
static void daemon_binaries(struct daemon *d)
{
	int r;

	if (!d->o->perf.events || d->o->perf.no_binaries || d->agent_gone || d->gbin)
		return daemon_finalize(d);
	for (unsigned k = COLLECTOR_MAX_CPUS; k < ARRAY_SIZE(d->spools); k++) /* the scan reads the files */
		if (d->spools[k] && (r = spool_persist(d->spools[k])) < 0)
			log_warn("cpu%u: cannot write the last bytes of perf-cpu%u.spool: %s", k - COLLECTOR_MAX_CPUS,
				 k - COLLECTOR_MAX_CPUS, strerror(-r));
	r = gbinfetch_new(d->s.dir, d->o->perf.trust_binaries, &d->gbin);
	if (r < 0) {
		log_warn("guest binaries: cannot scan the guest perf streams of %s: %s; guest user functions stay unnamed",
			 d->s.dir, strerror(-r));
		return daemon_finalize(d);
	}
	if (!gbinfetch_next(d->gbin, d->agent))
		return daemon_binaries_end(d, NULL, NULL);
	daemon_set_phase(d, PH_BINARIES, daemon_timeout(d));
	d->total_ns = util_now_ns(CLOCK_MONOTONIC) + daemon_timeout(d) * GBIN_TOTAL_TIMEOUTS;
}

/* After the agent stopped: host perf, then the guest binaries, then finalize. */
static void daemon_perf_stop(struct daemon *d)
{
	if (d->perf && !hostperf_reap(d->perf)) {
		hostperf_stop(d->perf);
		daemon_set_phase(d, PH_PERF_STOP, PERF_WAIT_NS);
		return;
	}
	daemon_binaries(d);
}

/* The fit (ptp) or the last readings (kvm), clock.ini, and its numbers into session.ini. */
static void daemon_clock_finish(struct daemon *d)
{
	int r;

	if (d->clk.written)
		return; /* summarized again after an earlier finalize */
	r = clocksync_finish(&d->clk, d->s.dir, d->s.clock_method, d->host_started_ns, clocksync_host_now(&d->clk));
	if (r < 0) {
		log_warn("clock: cannot write %s/clock.ini (%s, %s): the merge will fit clock.samples itself or stay unaligned",
			 d->s.dir, d->s.clock_method, strerror(-r));
		return;
	}
	d->s.clock_samples = !strcmp(d->s.clock_method, "kvm") ? d->clk.nkvm : d->clk.nsamples;
	d->s.clock_error_bound_ns = d->clk.error_bound;
}

static void daemon_finalize(struct daemon *d)
{
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	FILE *f;

	session_release_reserve(&d->s);
	if (d->perf && d->o->flight_recorder && hostperf_reap(d->perf)) {
		int r = hostperf_settle(d->perf, d->s.dir); /* perf's last dump is the host.data */

		if (r < 0)
			log_warn("flight recorder: no host perf dump in %s to use as host.data: %s", d->s.dir, strerror(-r));
	}
	for (unsigned k = 0; k < ARRAY_SIZE(d->spools); k++) { /* the merge reads the files next */
		int r = d->spools[k] ? spool_persist(d->spools[k]) : 0;

		if (r < 0)
			log_error("cpu%u: cannot write the last bytes of %s/%scpu%u.spool: %s", k % COLLECTOR_MAX_CPUS,
				  d->s.dir, k < COLLECTOR_MAX_CPUS ? "" : "perf-", k % COLLECTOR_MAX_CPUS, strerror(-r));
	}
	d->s.stopped_mono_ns = util_now_ns(CLOCK_MONOTONIC);
	daemon_set_phase(d, PH_STOPPED, 0);
	daemon_discard_all(d); /* keep reading the ports, write nothing more */
	daemon_report_agent_stats(d);
	daemon_clock_finish(d);
	session_set_state(&d->s, "stopped");
	live_end(d); /* the live merge drains and writes its header */
	daemon_disk_final(d);
	f = open_memstream(&text, &len);
	if (f) {
		daemon_report_summary(d, f);
		fclose(f);
		log_info("session finalized\n%s", text ? text : "");
	}
	if (d->stop_client) {
		ctlsock_finish_stop(d->stop_client, text ? text : "");
		d->stop_replies++;
		d->stop_client = NULL;
	} else if (d->exit_on_finalize) {
		event_base_loopbreak(d->base);
	}
}

void daemon_stop_request(struct daemon *d, struct bufferevent *client)
{
	if (d->stop_client && d->stop_client != client) /* the later stop takes over (the first may be gone) */
		ctlsock_finish_stop(d->stop_client, "stop: " DAEMON_STOP_TAKEN_OVER "\n"), d->stop_replies++;
	d->stop_client = client;
	if (d->ph == PH_STOPPED) {
		daemon_finalize(d); /* already stopped on its own: summarize again */
		return;
	}
	if (d->ph == PH_BINARIES) /* a second stop: no more waiting for the guest */
		return daemon_binaries_end(d, "cut:second-stop", "a second 'stop' ended the fetch");
	daemon_stop_begin(d, "stop requested");
}

void daemon_stop_replied(struct daemon *d)
{
	if (d->stop_replies > 0)
		d->stop_replies--;
	if (d->ph == PH_STOPPED && !d->stop_replies) /* a stop taken over is answered too */
		event_base_loopbreak(d->base);
}

/* ---- periodic work: deadlines, perf readiness, heartbeat, rates ---- */

/* QEMU 7.2's multi-threaded TCG can run stale code after the guest kernel patches itself
 * (text_poke_bp, when events are enabled or disabled): a vCPU loops on an int3 that is
 * gone while the others wait for it. Fixed upstream in QEMU 8.1 (deba78709a). */
#define TCG_PATCH_HANG                                                                             \
	". This VM runs under TCG: QEMU before 8.1 (Debian 12 has 7.2) can hang a multi-vCPU TCG guest "  \
	"while its kernel patches its own code to enable or disable events (fixed in QEMU 8.1 by "         \
	"'accel/tcg: Always lock pages before translation'). Use KVM, QEMU 8.1 or later, or "              \
	"'-accel tcg,thread=single'; the guest may have to be restarted"

/* Whether QEMU's vCPU threads are named "CPU n/TCG" (-name debug-threads=on, libvirt's default). */
static bool qemu_runs_tcg(pid_t pid)
{
	char path[64];
	struct dirent *e;
	bool tcg = false;
	DIR *dir;

	if (pid <= 0)
		return false;
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	dir = opendir(path);
	if (!dir)
		return false;
	while (!tcg && (e = readdir(dir))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%.16s/comm", (int)pid, e->d_name);
		_cleanup_free_ char *comm = NULL;

		if (util_read_file(path, 64, &comm, NULL) == 0 && !strncmp(comm, "CPU ", 4) && strstr(comm, "/TCG"))
			tcg = true;
	}
	closedir(dir);
	return tcg;
}

/* The guest binary fetch's wait ran out: no progress within --timeout, or its total bound. */
static void daemon_binaries_cut_deadline(struct daemon *d)
{
	char why[160];

	if (util_now_ns(CLOCK_MONOTONIC) >= d->total_ns)
		snprintf(why, sizeof(why), "the fetch's total bound of %u s (%u x --timeout) was reached",
			 d->o->timeout_s * GBIN_TOTAL_TIMEOUTS, GBIN_TOTAL_TIMEOUTS);
	else
		snprintf(why, sizeof(why), "no progress from the agent within %u s (--timeout; a reply shorter than "
			 "64 KiB that is no file's end is none)", d->o->timeout_s);
	log_warn("guest binaries: %s; the rest are not fetched", why);
	daemon_binaries_end(d, d->total_ns && util_now_ns(CLOCK_MONOTONIC) >= d->total_ns ? "cut:total-bound" :
			    "cut:no-progress", why);
}

static void daemon_tick_deadline(struct daemon *d, uint64_t now)
{
	if (!d->deadline_ns || now < d->deadline_ns)
		return;
	d->deadline_ns = 0;
	switch (d->ph) {
	case PH_HELLO:
		daemon_fail(d, "no answer from the agent on agent-ctl-path within %u s while %s — is trace-agent running in the guest?",
			    d->o->timeout_s, daemon_phase_names[d->ph]);
		break;
	case PH_RESET: case PH_CONFIG: case PH_META: case PH_START:
		/* It answered HELLO (and more): it runs, but this step hangs in the guest. */
		daemon_fail(d, "the agent (%s, guest %s) answered HELLO but not within %u s while %s: that step is stuck "
			    "in the guest (its log says where; 'trace-collector stop' is not needed, nothing was traced%s)%s",
			    d->hello.agent_version, d->hello.release, d->o->timeout_s, daemon_phase_names[d->ph],
			    d->ph == PH_START ? "; the agent aborts a start it cannot finish in 10 s" : "",
			    d->ph != PH_META && qemu_runs_tcg(d->s.qemu_pid) ? TCG_PATCH_HANG : "");
		break;
	case PH_PROBES0:
		log_warn("clock probes unanswered; the clock stays unaligned");
		snprintf(d->s.clock_method, sizeof(d->s.clock_method), "none");
		daemon_start_perf(d);
		break;
	case PH_PERF:
		daemon_fail(d, "host perf record did not start within 30 s (see %s/host-perf.log)", d->s.dir);
		break;
	case PH_PROBES1:
		agentctl_send_stop(d->agent);
		daemon_set_phase(d, PH_STOP, STOP_WAIT_NS);
		break;
	case PH_STOP:
		log_warn("the agent did not finish within %llu s (stopped frame %s); finalizing with what arrived%s",
			 (unsigned long long)(STOP_WAIT_NS / SEC), d->stopped_msg ? "received" : "missing",
			 !d->stopped_msg && qemu_runs_tcg(d->s.qemu_pid) ? TCG_PATCH_HANG : "");
		daemon_perf_stop(d);
		break;
	case PH_BINARIES:
		daemon_binaries_cut_deadline(d);
		break;
	case PH_PERF_STOP:
		log_warn("host perf record did not exit within %llu s after SIGINT: killed; host.data may be truncated",
			 PERF_WAIT_NS / SEC);
		hostperf_kill(d->perf);
		daemon_binaries(d);
		break;
	default:
		break;
	}
}

/* Each period: a heartbeat probe (a ptp sample), a hold-out probe after its reply when asked
 * for, and a kvm reading. */
static void daemon_tick_probe(struct daemon *d, uint64_t now)
{
	/* Sent even when the last probe is unanswered: a lost reply must not end the heartbeat. */
	d->holdout_due = d->o->holdout && !strcmp(d->s.clock_method, "ptp");
	daemon_probe_send(d, false);
	if (d->clk.kvm_on && clocksync_kvm_reading(&d->clk) < 0 && log_due(&d->unexpected))
		log_warn("kvm: cannot read %s/vcpu*/tsc-offset", d->clk.kvm_dir);
	if (d->early_probe_ns < daemon_interval(d))
		d->early_probe_ns *= 2;
	d->next_probe_ns = now + MIN(d->early_probe_ns, daemon_interval(d));
}

static void daemon_tick_phase(struct daemon *d, uint64_t now)
{
	int err;

	if (d->ph == PH_HELLO && now >= d->next_hello_ns && !d->agent_gone) {
		agentctl_send_hello(d->agent); /* the agent may come up after us */
		d->next_hello_ns = now + SEC;
	} else if (d->ph == PH_PERF && d->perf) {
		if (hostperf_ready(d->perf, &err)) {
			daemon_send_start(d);
		} else if (err) {
			daemon_fail(d, "host perf record exited with status %d before recording (see %s/host-perf.log)",
				    hostperf_exit_status(d->perf), d->s.dir);
		}
	} else if (d->ph == PH_TRACING) {
		uint64_t silent = now - agentctl_last_rx(d->agent);

		if (d->qemu_exited)
			daemon_stop_begin(d, d->stop_why);
		else if (d->agent_gone)
			daemon_stop_begin(d, "QEMU gone (agent-ctl-path closed)");
		else if (silent > MAX(3 * daemon_interval(d), daemon_timeout(d)))
			daemon_stop_begin(d, "agent silent (no answer to heartbeat probes)");
		else if (d->snap_client)
			daemon_snapshot_tick(d, now);
		else if (now >= d->next_probe_ns)
			daemon_tick_probe(d, now);
		live_tick(d, now);
	} else if (d->ph == PH_STOP && ((d->stopped_msg && daemon_all_ended(d)) || d->agent_gone)) {
		daemon_perf_stop(d);
	} else if (d->ph == PH_BINARIES && d->agent_gone) {
		log_warn("guest binaries: agent-ctl-path closed while fetching them");
		daemon_binaries_end(d, "refused:agent-gone", NULL);
	} else if (d->ph == PH_PERF_STOP && hostperf_reap(d->perf)) {
		daemon_binaries(d);
	} else if (d->ph < PH_TRACING && d->agent_gone && d->kind == PORT_FIFO) {
		daemon_fail(d, "agent-ctl-path failed before tracing started");
	}
}

/* Socket transport: QEMU restarted or came up late; connect again and keep reading. */
static void daemon_reconnect(struct daemon *d)
{
	if (d->kind != PORT_SOCKET)
		return;
	if (d->agent_gone && port_open(&d->ctl, true) == 0) {
		agentctl_free(d->agent);
		d->agent = NULL;
		if (daemon_agent_open(d) == 0) {
			d->agent_gone = false;
			log_info("agent-ctl-path reconnected");
			d->next_hello_ns = 0;
		}
	}
	for (unsigned k = 0; k < ARRAY_SIZE(d->spools); k++) {
		if (!d->data_gone[k] || !d->spools[k] || port_open(&d->data[k], false) < 0)
			continue;
		if (spool_rearm(d->spools[k], d->base) == 0)
			d->data_gone[k] = false;
	}
}

/* FIFO pairs never report EOF (QEMU and we both hold them read-write): watch QEMU's pid,
 * so a killed QEMU ends the session at once instead of after the heartbeat and stop waits. */
static void daemon_watch_qemu(struct daemon *d)
{
	pid_t pid = d->s.qemu_pid;

	if (d->qemu_exited || pid <= 0 || kill(pid, 0) == 0 || errno != ESRCH)
		return;
	d->qemu_exited = true;
	snprintf(d->stop_why, sizeof(d->stop_why), "QEMU gone (pid %d exited)", (int)pid);
	log_warn("QEMU (pid %d) exited: the guest cannot send anything more", (int)pid);
	d->agent_gone = true;
}

static void daemon_tick(evutil_socket_t fd, short what, void *arg)
{
	struct daemon *d = arg;
	uint64_t now = util_now_ns(CLOCK_MONOTONIC);

	daemon_tick_phase(d, now);
	daemon_tick_deadline(d, now);
	daemon_disk_tick(d);
	if (now >= d->next_rate_ns) {
		for (unsigned k = 0; k < ARRAY_SIZE(d->spools); k++)
			if (d->spools[k])
				spool_rate_tick(d->spools[k], now);
		d->next_rate_ns = now + SEC;
		daemon_watch_qemu(d);
		daemon_reconnect(d);
	}
}

static void daemon_signal(evutil_socket_t sig, short what, void *arg)
{
	struct daemon *d = arg;

	if (sig == SIGCHLD) {
		if (d->ph == PH_PERF_STOP && hostperf_reap(d->perf))
			daemon_binaries(d);
		return;
	}
	log_info("signal %d: stopping", (int)sig);
	if (d->ph == PH_BINARIES) {
		d->exit_on_finalize = true;
		daemon_binaries_end(d, "cut:signal", "a signal (SIGTERM or SIGINT) ended the fetch");
	} else if (!d->started_ok) {
		daemon_fail(d, "start interrupted by signal %d", (int)sig);
	} else if (d->ph == PH_STOPPED) {
		event_base_loopbreak(d->base);
	} else {
		d->exit_on_finalize = true;
		daemon_stop_begin(d, "signal");
	}
}

/* ---- setup and teardown ---- */

static int daemon_events(struct daemon *d)
{
	static const int signals[] = { SIGINT, SIGTERM, SIGCHLD };
	struct timeval tv = { 0, TICK_MS * 1000 };

	for (size_t i = 0; i < ARRAY_SIZE(signals); i++) {
		d->sigs[i] = evsignal_new(d->base, signals[i], daemon_signal, d);
		if (!d->sigs[i] || event_add(d->sigs[i], NULL) < 0)
			return -ENOMEM;
	}
	d->tick = event_new(d->base, -1, EV_PERSIST, daemon_tick, d);
	if (!d->tick || event_add(d->tick, &tv) < 0)
		return -ENOMEM;
	d->deferred = event_new(d->base, -1, 0, daemon_deferred, d);
	if (!d->deferred)
		return -ENOMEM;
	return daemon_disk_arm(d);
}

static int daemon_session(struct daemon *d)
{
	char path[PATH_MAX + 32];
	int r = session_create(d->o->vm_dir, &d->s);

	if (r < 0) {
		log_error("cannot create a session dir under %s/sessions: %s", d->o->vm_dir, strerror(-r));
		return r;
	}
	snprintf(d->s.vm, sizeof(d->s.vm), "%s", d->o->name);
	snprintf(d->s.events, sizeof(d->s.events), "%s", d->o->events);
	snprintf(d->s.clock_method, sizeof(d->s.clock_method), "none");
	snprintf(d->s.host_data, sizeof(d->s.host_data), "%s", d->o->host_data);
	snprintf(d->s.output, sizeof(d->s.output), "%s", d->o->out);
	d->s.opts = d->o;
	d->s.qemu_pid = d->o->qemu_pid;
	if (getrandom(&d->s.session_id, sizeof(d->s.session_id), 0) != sizeof(d->s.session_id))
		d->s.session_id = util_now_ns(CLOCK_REALTIME) ^ (uint64_t)getpid();
	snprintf(d->s.state, sizeof(d->s.state), "starting");
	r = session_write(&d->s);
	snprintf(path, sizeof(path), "%s/guest", d->s.dir);
	if (r == 0 && mkdir(path, 0700) < 0)
		r = -errno;
	if (r == 0 && (d->guest_dirfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		r = -errno;
	if (r == 0)
		r = clocksync_open(&d->clk, d->s.dir);
	if (r < 0)
		log_error("cannot write the session dir %s: %s", d->s.dir, strerror(-r));
	return r;
}

/* Daemon's own log: SESSION/collector.log (stderr is redirected there). */
static void daemon_log_to_session(struct daemon *d)
{
	char path[PATH_MAX + 32];
	int fd;

	snprintf(path, sizeof(path), "%s/collector.log", d->s.dir);
	fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	dup2(fd, 2);
	close(fd);
	setvbuf(stderr, NULL, _IOLBF, 0);
}

static void daemon_write_pidfile(struct daemon *d)
{
	char text[PATH_MAX + 32];
	int n = snprintf(text, sizeof(text), "%d\n%s\n", (int)getpid(), d->s.dir);

	if (d->lock_fd < 0 || ftruncate(d->lock_fd, 0) < 0)
		return;
	if (pwrite(d->lock_fd, text, (size_t)n, 0) != n)
		log_warn("cannot write the pidfile: %s", strerror(errno));
}

static int daemon_ports(struct daemon *d)
{
	char path[PATH_MAX + 8];
	int r = ports_detect(d->o->vm_dir, &d->kind);

	if (r < 0) {
		log_error("no FIFO at %s/agent-ctl-path.out and no socket at %s/agent-ctl-path.sock — run 'trace-collector setup --name %s --cpus N'",
			  d->o->vm_dir, d->o->vm_dir, d->o->name);
		return r;
	}
	port_init(&d->ctl, d->o->vm_dir, "agent-ctl-path", d->kind);
	r = port_open(&d->ctl, true);
	if (r == -EACCES) {
		log_error("%s is served by a process that does not run as the owner of %s/" PORT_SOCK_DIR
			  " (QEMU's user) nor as root: not QEMU's socket; re-run 'trace-collector setup --name %s "
			  "--transport socket --owner USER:GROUP' and restart QEMU",
			  port_path(&d->ctl, true, path, sizeof(path)), d->o->vm_dir, d->o->name);
		return r;
	}
	if (r < 0 && d->kind == PORT_SOCKET) {
		log_warn("cannot connect to %s: %s; retrying (is QEMU running?)",
			 port_path(&d->ctl, true, path, sizeof(path)), strerror(-r));
		d->agent_gone = true;
		return 0;
	}
	if (r < 0) {
		log_error("cannot open %s: %s", port_path(&d->ctl, true, path, sizeof(path)), strerror(-r));
		return r;
	}
	if (d->kind == PORT_FIFO)
		daemon_drain(&d->ctl);
	return daemon_agent_open(d);
}

static void daemon_free(struct daemon *d)
{
	for (size_t i = 0; i < ARRAY_SIZE(d->sigs); i++)
		if (d->sigs[i])
			event_free(d->sigs[i]);
	if (d->tick)
		event_free(d->tick);
	if (d->deferred)
		event_free(d->deferred);
	if (d->disk_watch)
		event_free(d->disk_watch);
	for (unsigned k = 0; k < ARRAY_SIZE(d->spools); k++) {
		spool_free(d->spools[k]);
		port_close(&d->data[k]);
	}
	agentctl_free(d->agent);
	port_close(&d->ctl);
	hostperf_free(d->perf);
	live_free(d->live);
	gbinfetch_free(d->gbin);
	ctlsock_free(d->sock);
	if (d->guest_dirfd >= 0)
		close(d->guest_dirfd);
	clocksync_close(&d->clk);
	if (d->base)
		event_base_free(d->base);
	free(d);
}
/* The control socket's ops: its requests reach the daemon only through these. */
static void daemon_ctl_status(void *userdata, char *buf, size_t size) { daemon_status(userdata, buf, size); }
static void daemon_ctl_stop(void *userdata, struct bufferevent *client) { daemon_stop_request(userdata, client); }
static void daemon_ctl_snapshot(void *userdata, struct bufferevent *client) { daemon_snapshot_request(userdata, client); }
static void daemon_ctl_replied(void *userdata) { daemon_stop_replied(userdata); }


static int daemon_setup(struct daemon *d)
{
	char sock[PATH_MAX], line[PATH_MAX + 16];
	int r;

	d->base = event_base_new();
	if (!d->base)
		return -ENOMEM;
	r = daemon_session(d);
	if (r < 0)
		return r;
	snprintf(line, sizeof(line), "dir %s\n", d->s.dir);
	daemon_notify(d, line);
	if (!d->o->foreground)
		daemon_log_to_session(d);
	daemon_write_pidfile(d);
	r = ctlsock_path(d->o->run_dir, d->o->name, sock, sizeof(sock));
	if (r == 0)
		r = ctlsock_listen(&(struct ctlsock_ops){ .userdata = d, .status = daemon_ctl_status,
							  .stop = daemon_ctl_stop, .snapshot = daemon_ctl_snapshot,
							  .replied = daemon_ctl_replied },
				   d->base, sock, &d->sock);
	if (r < 0) {
		log_error("cannot listen on %s/%s.sock: %s", d->o->run_dir, d->o->name, strerror(-r));
		return r;
	}
	r = daemon_ports(d);
	if (r == 0)
		r = daemon_events(d);
	if (r == 0)
		daemon_set_phase(d, PH_HELLO, daemon_timeout(d));
	return r;
}

int daemon_run(const struct start_opts *o, int lock_fd, int notify_fd)
{
	struct daemon *d = calloc(1, sizeof(*d));
	int r;

	if (!d)
		return -ENOMEM;
	d->o = o;
	d->lock_fd = lock_fd;
	d->notify_fd = notify_fd;
	d->guest_dirfd = d->clk.samples_fd = d->clk.holdout_fd = -1;
	for (unsigned k = 0; k < ARRAY_SIZE(d->data); k++)
		d->data[k].rfd = d->data[k].wfd = -1;
	d->ctl.rfd = d->ctl.wfd = -1;
	signal(SIGPIPE, SIG_IGN);
	r = daemon_setup(d);
	if (r < 0) {
		if (d->s.dir[0])
			session_set_state(&d->s, "failed");
		daemon_notify(d, "fail\n");
		daemon_free(d);
		return 1;
	}
	event_base_dispatch(d->base);
	r = d->exit_code;
	daemon_free(d);
	return r;
}
