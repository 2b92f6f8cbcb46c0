// SPDX-License-Identifier: GPL-2.0-only
/* A tracing session: configure the instance, start the per-CPU pumps, stop and drain them. */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>

#include "agent.h"
#include "log.h"
#include "util.h"

#define SESSION_QUIT_DRAIN_MS 3000
#define SESSION_STOP_DRAIN_MS 10000 /* a STOP whose ports nobody reads gives up the end markers */
/* Begin markers: each pump bounds its own at 5 s once it runs; a big guest under TCG starts its
 * threads slowly, so the wait lasts while markers come, within 10 s + 1 s per stream in all. */
#define SESSION_READY_MS 10000
#define SESSION_READY_PER_STREAM_MS 1000

static bool session_cpu_online(unsigned cpu)
{
	_cleanup_free_ char *s = NULL;
	char p[96];

	snprintf(p, sizeof(p), "/sys/devices/system/cpu/cpu%u/online", cpu);
	if (util_read_file(p, 64, &s, NULL) < 0)
		return true; /* no file: cpu0, or no hotplug */
	return s[0] == '1';
}

static void session_close_efds(struct pump_shared *sh)
{
	int *fds[] = { &sh->stop_efd, &sh->abort_efd, &sh->ready_efd, &sh->done_efd };

	for (size_t i = 0; i < ARRAY_SIZE(fds); i++) {
		if (*fds[i] >= 0)
			close(*fds[i]);
		*fds[i] = -1;
	}
}

static int session_open_efds(struct pump_shared *sh)
{
	int *fds[] = { &sh->stop_efd, &sh->abort_efd, &sh->ready_efd, &sh->done_efd };

	for (size_t i = 0; i < ARRAY_SIZE(fds); i++) {
		*fds[i] = eventfd(0, EFD_CLOEXEC);
		if (*fds[i] < 0) {
			int r = -errno;

			session_close_efds(sh);
			return r;
		}
	}
	return 0;
}

static void session_latch(int efd)
{
	uint64_t one = 1;

	if (write(efd, &one, sizeof(one)) < 0)
		log_debug("eventfd write: %m");
}

/* Aborts the pumps once: they give up waiting for a port. */
static void session_abort(struct agent *a, bool *aborted)
{
	if (!*aborted)
		session_latch(a->sh.abort_efd);
	*aborted = true;
}

/* What session_wait waits for: efd to count want events. */
struct session_waiting {
	int efd;
	uint64_t want;
	int idle_ms;   /* abort the pumps after this long without a count (-1: never)... */
	int total_ms;  /* ...or this long in all (-1: no such bound) */
	uint32_t step; /* each count reported as this step of the START (0: none) */
	const char *what;
};

/* How long poll may sleep before one of w's bounds (-1: none). */
static int session_wait_ms(const struct session_waiting *w, uint64_t t0, uint64_t last, uint64_t now)
{
	uint64_t end = last + (uint64_t)w->idle_ms * 1000000ull;

	if (w->idle_ms < 0)
		return -1;
	if (w->total_ms >= 0)
		end = MIN(end, t0 + (uint64_t)w->total_ms * 1000000ull);
	return end > now ? (int)((end - now + 999999) / 1000000) : 0;
}

/* Waits until w->efd has counted w->want events; SIGTERM/SIGINT meanwhile aborts the pumps,
 * and so does a wait past w's bounds. What the pumps were doing is named in the log. */
static int session_wait(struct agent *a, const struct session_waiting *w)
{
	struct pollfd pfd[2] = { { .fd = w->efd, .events = POLLIN }, { .fd = a->sig_fd, .events = POLLIN } };
	uint64_t got = 0, v, t0 = util_now_ns(CLOCK_MONOTONIC), last = t0;
	bool aborted = false;
	int ret = 0;

	while (got < w->want) {
		int n = poll(pfd, 2, aborted ? -1 : session_wait_ms(w, t0, last, util_now_ns(CLOCK_MONOTONIC)));

		if (n < 0) {
			if (errno == EINTR)
				continue;
			log_error("poll while waiting for the CPU threads: %m");
			return -errno;
		}
		if (n == 0) {
			uint64_t now = util_now_ns(CLOCK_MONOTONIC);
			bool idle = w->total_ms < 0 || now - last >= (uint64_t)w->idle_ms * 1000000ull;

			log_warn("%llu of %llu CPU threads still %s after %d ms%s: aborting them (%.1f s in all)",
				 (unsigned long long)(w->want - got), (unsigned long long)w->want, w->what,
				 idle ? w->idle_ms : w->total_ms, idle && w->total_ms >= 0 ? " without one done" : "",
				 (double)(now - t0) / 1e9);
			session_abort(a, &aborted);
			ret = -ETIMEDOUT;
		}
		if (pfd[1].revents & POLLIN) {
			struct signalfd_siginfo si;

			if (read(a->sig_fd, &si, sizeof(si)) == sizeof(si)) {
				log_info("signal %u: aborting the session", si.ssi_signo);
				a->quit = true;
				session_abort(a, &aborted);
				ret = ret ? ret : -EINTR;
			}
		}
		if ((pfd[0].revents & POLLIN) && read(w->efd, &v, sizeof(v)) == sizeof(v)) {
			got += v;
			last = util_now_ns(CLOCK_MONOTONIC);
			if (w->step)
				ctlout_progress(a, w->step, (uint32_t)MIN(got, w->want), (uint32_t)w->want);
		}
	}
	return ret;
}

static unsigned session_launch(struct agent *a)
{
	unsigned started = 0;

	for (unsigned cpu = 0; cpu < a->ncpus; cpu++) {
		struct pump *p = &a->pumps[cpu];
		int r;

		p->cpu = cpu;
		p->sh = &a->sh;
		p->flush_efd = -1;
		p->stats = (struct vt_cpu_stats){ .cpu = cpu, .error = -ENXIO };
		if (!session_cpu_online(cpu))
			continue; /* offline: no stream, and none expected (docs/protocol.md) */
		r = pump_start(p);
		if (r < 0) {
			p->stats.error = r;
			log_error("cpu%u: cannot start its thread: %s", cpu, strerror(-r));
			continue;
		}
		started++;
		ctlout_progress(a, VT_STEP_THREADS, cpu + 1, a->ncpus * (a->perf ? 2 : 1));
	}
	return started;
}

/* The perf streams, after the ftrace pumps: how many threads started. */
static unsigned session_launch_perf(struct agent *a)
{
	unsigned started = 0;

	for (unsigned cpu = 0; cpu < a->ncpus; cpu++) {
		struct perf_pump *p = &a->perf[cpu];
		int r;

		p->cpu = cpu;
		p->sh = &a->sh;
		p->flush_efd = -1;
		p->stats = (struct vt_perf_stats){ .cpu = cpu, .error = -ENXIO };
		if (!session_cpu_online(cpu))
			continue;
		r = perf_start(p);
		if (r < 0) {
			p->stats.error = r;
			log_error("cpu%u: cannot start its guest perf thread: %s", cpu, strerror(-r));
			continue;
		}
		started++;
		ctlout_progress(a, VT_STEP_THREADS, a->ncpus + cpu + 1, 2 * a->ncpus);
	}
	return started;
}

/* What a pump's failure to write its begin marker means for the user. */
static const char *session_port_hint(int e)
{
	switch (e) {
	case -ENOENT:
		return " (add the virtio-serial channels: see trace-collector setup)";
	case -EPIPE:
		return " (the guest never saw the host side open: too many ports on one virtio-serial "
		       "controller? re-run trace-collector setup and restart the VM)";
	case -ETIMEDOUT:
		return " (the port took no data for 5 s: nobody reads its host side)";
	case -EACCES:
	case -EPERM:
		return " (kernel.perf_event_paranoid, or kernel lockdown?)";
	default:
		return "";
	}
}

/* Logs each CPU whose stream could not begin; returns how many did. */
static unsigned session_check_ready(struct agent *a, char **ret_msg)
{
	unsigned ok = 0;

	for (unsigned cpu = 0; cpu < a->ncpus; cpu++) {
		int e = a->pumps[cpu].stats.error;

		if (e == 0 || e == -ENXIO) {
			ok += e == 0;
			continue;
		}
		log_error("cpu%u: no stream on trace-path-cpu%u in %s: %s%s", cpu, cpu,
			  ports_where(&a->ports), strerror(-e), session_port_hint(e));
		if (!*ret_msg && asprintf(ret_msg, "cpu%u: cannot stream to trace-path-cpu%u: %s%s", cpu, cpu,
					  strerror(-e), session_port_hint(e)) < 0)
			*ret_msg = NULL;
	}
	return ok;
}

/* The same for the perf streams; ret_msg gets the first failure only when none started. */
static unsigned session_check_perf(struct agent *a, char **ret_msg)
{
	_cleanup_free_ char *first = NULL;
	unsigned ok = 0;

	for (unsigned cpu = 0; cpu < a->ncpus; cpu++) {
		int e = a->perf[cpu].stats.error;

		if (e == 0 || e == -ENXIO) {
			ok += e == 0;
			continue;
		}
		log_error("cpu%u: no guest perf stream on perf-path-cpu%u in %s: %s%s", cpu, cpu,
			  ports_where(&a->ports), strerror(-e), session_port_hint(e));
		if (!first && asprintf(&first, "cpu%u: cannot stream guest perf to perf-path-cpu%u: %s%s", cpu,
				       cpu, strerror(-e), session_port_hint(e)) < 0)
			first = NULL;
	}
	if (ok == 0)
		*ret_msg = TAKE_PTR(first);
	return ok;
}

static int session_prepare(struct agent *a, char **ret_msg)
{
	int r = tracefs_set_on(&a->tfs, false);

	if (r == 0)
		r = tracefs_config_apply(&a->tfs, &a->cfg, &(struct tracefs_progress){ ctlout_progress_cb, a }, ret_msg);
	if (r == 0) {
		ctlout_progress(a, VT_STEP_RESET, 0, 0);
		r = tracefs_reset(&a->tfs);
	}
	if (r < 0 && !*ret_msg && asprintf(ret_msg, "cannot prepare ftrace instance %s: %s",
					   a->tfs.inst_path, strerror(-r)) < 0)
		*ret_msg = NULL;
	/* Wake the pumps only when the ring is half full: fewer wake-ups, fewer own events. */
	if (r == 0 && tracefs_write(&a->tfs, "buffer_percent", "50") < 0)
		log_debug("no buffer_percent in %s", a->tfs.inst_path);
	return r;
}

/* The pump and perf arrays for a session's config. */
static int session_alloc(struct agent *a)
{
	int r = perf_prepare(&a->sh, &a->cfg);

	if (r < 0)
		return r;
	a->pumps = calloc(a->ncpus, sizeof(*a->pumps));
	if (a->sh.perf_n)
		a->perf = calloc(a->ncpus, sizeof(*a->perf));
	if (!a->pumps || (a->sh.perf_n && !a->perf)) {
		free(a->pumps);
		free(a->perf);
		a->pumps = NULL;
		a->perf = NULL;
		return -ENOMEM;
	}
	return 0;
}

/* Starts the threads and waits for their begin markers: 0 or -errno with *ret_msg. */
static int session_begin(struct agent *a, unsigned *ret_started, unsigned *ret_perf, char **ret_msg)
{
	unsigned started = session_launch(a), perf_started = 0;
	int r;

	if (a->perf)
		perf_started = session_launch_perf(a);
	*ret_started = started;
	*ret_perf = perf_started;
	r = session_wait(a, &(struct session_waiting){ .efd = a->sh.ready_efd, .want = started + perf_started,
		.idle_ms = SESSION_READY_MS, .step = VT_STEP_BEGIN, .what = "writing their begin markers",
		.total_ms = SESSION_READY_MS + SESSION_READY_PER_STREAM_MS * (int)(started + perf_started) });
	if (r < 0) {
		if (r != -ETIMEDOUT)
			*ret_msg = strdup("interrupted while starting");
		else if (asprintf(ret_msg, "CPU threads did not get their begin markers into their ports (none "
				  "for %d ms, or %d ms + %d ms per stream in all): aborted", SESSION_READY_MS,
				  SESSION_READY_MS, SESSION_READY_PER_STREAM_MS) < 0)
			*ret_msg = NULL;
		return r;
	}
	if (session_check_ready(a, ret_msg) == 0)
		return -ENODEV;
	free(*ret_msg);
	*ret_msg = NULL;
	/* A CPU without perf is the host's call (like CPU_STATS errors); no perf at all is ours. */
	if (a->perf && session_check_perf(a, ret_msg) == 0)
		return -ENODEV;
	return 0;
}

int session_start(struct agent *a, uint64_t id, char **ret_msg)
{
	unsigned started = 0, perf_started = 0;
	int r;

	*ret_msg = NULL;
	if (a->tracing) {
		if (asprintf(ret_msg, "already tracing session %" PRIu64 ": send STOP first", a->session) < 0)
			*ret_msg = NULL;
		return -EBUSY;
	}
	r = session_prepare(a, ret_msg);
	if (r < 0)
		return r;
	r = session_open_efds(&a->sh);
	if (r < 0)
		return r;
	a->sh.session = id;
	a->sh.page_size = a->page_size;
	a->sh.pipe_size = a->pipe_size;
	a->sh.flush_ms = a->cfg.flush_ms ? (int)a->cfg.flush_ms : -1;
	a->sh.tfs = &a->tfs;
	a->sh.ports = &a->ports;
	a->sh.clock = a->cfg.clock;
	r = session_alloc(a);
	if (r < 0) {
		session_close_efds(&a->sh);
		return r;
	}
	r = session_begin(a, &started, &perf_started, ret_msg);
	a->tracing = true;
	a->session = id;
	if (r == 0)
		ctlout_progress(a, VT_STEP_NOTRACE, 0, 0);
	if (r == 0 && (r = tracefs_exclude_self(&a->tfs, !a->cfg.agent_events)) < 0) {
		log_info("the agent's own events stay in the trace: set_event_notrace_pid: %s", strerror(-r));
		r = 0;
	}
	if (r == 0) {
		ctlout_progress(a, VT_STEP_TRACING_ON, 0, 0);
		r = tracefs_set_on(&a->tfs, true);
		if (r < 0 && asprintf(ret_msg, "cannot turn tracing on in %s: %s", a->tfs.inst_path,
				      strerror(-r)) < 0)
			*ret_msg = NULL;
	}
	if (r < 0) {
		(void)session_stop(a, NULL, NULL);
		return r;
	}
	if (a->perf)
		log_info("session %" PRIu64 " started on %u CPUs, guest perf on %u", id, started, perf_started);
	else
		log_info("session %" PRIu64 " started on %u CPUs", id, started);
	return 0;
}

int session_flush(struct agent *a, uint64_t id, uint64_t seq)
{
	if (!a->tracing || !a->pumps)
		return -EALREADY;
	if (id != a->session)
		return -ESTALE;
	for (unsigned cpu = 0; cpu < a->ncpus; cpu++) {
		pump_flush(&a->pumps[cpu], seq);
		if (a->perf)
			perf_flush(&a->perf[cpu], seq);
	}
	return 0;
}

/* Joins every thread; their stats into new arrays (perf: NULL without guest perf). */
static int session_collect(struct agent *a, struct vt_cpu_stats **ret_stats, struct vt_perf_stats **ret_perf)
{
	_cleanup_free_ struct vt_cpu_stats *stats = calloc(a->ncpus, sizeof(*stats));
	_cleanup_free_ struct vt_perf_stats *perf = a->perf ? calloc(a->ncpus, sizeof(*perf)) : NULL;

	for (unsigned cpu = 0; cpu < a->ncpus; cpu++) {
		pump_join(&a->pumps[cpu]);
		if (stats)
			stats[cpu] = a->pumps[cpu].stats;
		if (!a->perf)
			continue;
		perf_join(&a->perf[cpu]);
		if (perf)
			perf[cpu] = a->perf[cpu].stats;
	}
	if (!stats || (a->perf && !perf))
		return -ENOMEM;
	if (ret_stats)
		*ret_stats = TAKE_PTR(stats);
	if (ret_perf)
		*ret_perf = TAKE_PTR(perf);
	return 0;
}

int session_stop(struct agent *a, struct vt_cpu_stats **ret_stats, struct vt_perf_stats **ret_perf)
{
	uint64_t started = 0;
	int r;

	if (!a->tracing)
		return -EALREADY;
	(void)tracefs_set_on(&a->tfs, false);
	session_latch(a->sh.stop_efd);
	for (unsigned cpu = 0; cpu < a->ncpus; cpu++) {
		started += a->pumps[cpu].thread_started;
		started += a->perf && a->perf[cpu].thread_started;
	}
	/* A host that stopped reading must not keep us forever (less so when exiting on SIGTERM). */
	(void)session_wait(a, &(struct session_waiting){ .efd = a->sh.done_efd, .want = started,
		.idle_ms = a->quit ? SESSION_QUIT_DRAIN_MS : SESSION_STOP_DRAIN_MS, .total_ms = -1,
		.what = "draining their rings into their ports" });
	r = session_collect(a, ret_stats, ret_perf);
	free(a->pumps);
	a->pumps = NULL;
	free(a->perf);
	a->perf = NULL;
	session_close_efds(&a->sh);
	tracefs_tracer_reset(&a->tfs); /* the pipes are closed now */
	/* The tid list stays until the next START rewrites it (tracing is off meanwhile): clearing
	 * it unregisters the kernel's pid-filter probes, one more patch of the guest kernel's code
	 * per session, which QEMU 7.2's multi-threaded TCG can hang on (daemon.c TCG_PATCH_HANG). */
	a->tracing = false;
	log_info("session %" PRIu64 " stopped", a->session);
	return r;
}
