// SPDX-License-Identifier: GPL-2.0-only
/* Host `perf record` over the session window: SESSION/host.data, stopped with SIGINT. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "collector.h"
#include "hostevents.h"
#include "hostperf.h"
#include "log.h"
#include "merge.h"
#include "util.h"

#define TRACEFS "/sys/kernel/tracing"
#define PERF_MAX_ARGS 64

struct hostperf {
	pid_t pid;
	int status;   /* wait status once exited */
	bool exited, stopping;
	char data[PATH_MAX + 16];
	char mediated[64]; /* KVM's mediated PMU parameter that is on ("": none) */
};

/* Default host events: sched_switch and sched_wakeup (who ran instead of a vCPU thread, who
 * woke it: trace-collector report), plus kvm entry/exit when the host has them. */
static void hostperf_default_events(char *buf, size_t size)
{
	struct stat st;

	snprintf(buf, size, "sched:sched_switch,sched:sched_wakeup%s",
		 stat(TRACEFS "/events/kvm/kvm_entry", &st) == 0 && stat(TRACEFS "/events/kvm/kvm_exit", &st) == 0
			 ? ",kvm:kvm_entry,kvm:kvm_exit" : "");
}

/* perf record resolves tracepoints through tracefs: mount it when it is not. */
static int hostperf_tracefs(void)
{
	struct stat st;

	if (stat(TRACEFS "/events", &st) == 0)
		return 0;
	if (mount("nodev", TRACEFS, "tracefs", 0, NULL) < 0)
		return -errno;
	return 0;
}

/* --flight-recorder: perf's overwritable ring per CPU, the largest power of two of at most
 * SIZE and FR_HOST_RING_MAX (the ring is locked memory on every host CPU). */
#define FR_HOST_RING_MAX (16u << 20)

/* argv for perf: record -a -o DATA [-k CLOCK_MONOTONIC] [flight recorder] (-e EVENTS | user
 * args). The flight recorder: --overwrite (the kernel keeps the newest of each CPU's ring),
 * --switch-output (SIGUSR2 writes the ring into DATA.<timestamp>, as does the stop). */
static int hostperf_argv(const struct start_opts *o, bool monotonic, char *data,
			 char *events, char *ring, size_t ring_len, char *control, char **argv)
{
	int n = 0;

	argv[n++] = (char *)"perf";
	argv[n++] = (char *)"record";
	argv[n++] = (char *)"-q";
	/* No side-band thread for BPF program events: perf 6.1 polls it with a 1 s timeout and
	 * joins it at exit, so every stop waited 0.35-0.97 s for perf (bench/RESULTS.md). BPF
	 * programs loaded while tracing are then not named in host samples. */
	argv[n++] = (char *)"--no-bpf-event";
	argv[n++] = (char *)"-o";
	argv[n++] = data;
	if (monotonic) {
		argv[n++] = (char *)"-k";
		argv[n++] = (char *)"CLOCK_MONOTONIC";
	}
	if (o->flight_recorder) {
		uint64_t bytes = 4096;

		while (bytes * 2 <= MIN(o->flight_recorder, FR_HOST_RING_MAX))
			bytes *= 2;
		snprintf(ring, ring_len, "%lluK", (unsigned long long)(bytes >> 10));
		argv[n++] = (char *)"--overwrite";
		argv[n++] = (char *)"--switch-output";
		argv[n++] = (char *)"-m";
		argv[n++] = ring; /* before the user's arguments: their own -m wins */
	}
	if (control) { /* --live-merge: the daemon pings perf to write what its rings hold */
		argv[n++] = (char *)"--control";
		argv[n++] = control;
		/* No build-id pass at exit: perf would read the whole host.data again (0.8 s per
		 * 30 MB here), the last step of every stop. perf report on this host names host
		 * functions by path. */
		argv[n++] = (char *)"--no-buildid";
	}
	if (o->host_perf_argc) {
		for (unsigned i = 0; i < o->host_perf_argc; i++) {
			if (n >= PERF_MAX_ARGS - 1)
				return -E2BIG;
			argv[n++] = o->host_perf_argv[i];
		}
	} else {
		argv[n++] = (char *)"-a";
		argv[n++] = (char *)"-e";
		argv[n++] = events;
	}
	argv[n] = NULL;
	return 0;
}

/* KVM's mediated PMU on this host: every hardware event of perf's event lists (-e LIST,
 * --event LIST, --event=LIST, -eLIST) gets :H (hostevents.c), into bufs (nbufs of them, freed
 * by the caller). 0, or -ENOMEM / -E2BIG. */
static int hostperf_guard_argv(char **argv, char **bufs, size_t nbufs, struct hostevents_guarded *g)
{
	size_t nb = 0;

	for (int i = 0; argv[i]; i++) {
		const char *list = NULL, *prefix = "";
		int at = i;
		size_t len;
		int r;

		if ((!strcmp(argv[i], "-e") || !strcmp(argv[i], "--event")) && argv[i + 1])
			list = argv[++i], at = i;
		else if (!strncmp(argv[i], "--event=", 8))
			list = argv[i] + 8, prefix = "--event=";
		else if (!strncmp(argv[i], "-e", 2) && argv[i][2])
			list = argv[i] + 2, prefix = "-e";
		if (!list)
			continue;
		if (nb == nbufs)
			return -E2BIG;
		len = strlen(prefix) + 3 * strlen(list) + 64;
		if (!(bufs[nb] = malloc(len)))
			return -ENOMEM;
		strcpy(bufs[nb], prefix);
		if ((r = hostevents_guard(list, bufs[nb] + strlen(prefix), len - strlen(prefix), g)) < 0)
			return r;
		argv[at] = bufs[nb++];
	}
	return 0;
}

static void hostperf_child(const char *session_dir, char **argv)
{
	char log[PATH_MAX + 32];
	int fd;

	snprintf(log, sizeof(log), "%s/host-perf.log", session_dir);
	fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd >= 0) {
		dup2(fd, 1);
		dup2(fd, 2);
	}
	fd = open("/dev/null", O_RDONLY);
	if (fd >= 0)
		dup2(fd, 0);
	prctl(PR_SET_PDEATHSIG, SIGINT); /* a killed daemon leaves no perf behind */
	signal(SIGINT, SIG_DFL);
	signal(SIGPIPE, SIG_DFL);
	execvp(getenv("VT_PERF") ? getenv("VT_PERF") : "perf", argv);
	dprintf(2, "cannot run perf: %s\n", strerror(errno));
	_exit(127);
}

int hostperf_start(const struct start_opts *o, const char *session_dir, bool monotonic, const char *control,
		   struct hostperf **ret)
{
	char events[512], ring[32], ctl[2 * PATH_MAX + 96], *argv[PERF_MAX_ARGS], *bufs[PERF_MAX_ARGS / 2] = { 0 };
	struct hostevents_guarded g = { 0 };
	struct hostperf *h;
	int r;

	r = hostperf_tracefs();
	if (r < 0)
		return r;
	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	snprintf(h->data, sizeof(h->data), "%s/host.data", session_dir);
	if (o->host_events)
		snprintf(events, sizeof(events), "%s", o->host_events);
	else
		hostperf_default_events(events, sizeof(events));
	if (control)
		snprintf(ctl, sizeof(ctl), "%s", control);
	r = hostperf_argv(o, monotonic, h->data, events, ring, sizeof(ring), control ? ctl : NULL, argv);
	if (r == 0 && hostevents_mediated_pmu("/sys", h->mediated, sizeof(h->mediated)) &&
	    (r = hostperf_guard_argv(argv, bufs, ARRAY_SIZE(bufs), &g)) == 0) {
		log_info("host perf: KVM's mediated PMU is on (%s): %u hardware event%s given :H (exclude_guest: "
			 "a host event that counts the guest fails beside a mediated-PMU VM)", h->mediated, g.changed,
			 g.changed == 1 ? "" : "s");
		if (g.guest)
			log_warn("host perf: %u hardware event%s ask%s for the guest's mode (:G), which the host cannot count "
				 "while a mediated-PMU VM runs (perf fails with EOPNOTSUPP): the guest's own profile is "
				 "start --guest-perf", g.guest, g.guest == 1 ? "" : "s", g.guest == 1 ? "s" : "");
	}
	if (r == 0 && (h->pid = fork()) < 0)
		r = -errno;
	if (h->pid == 0 && r == 0)
		hostperf_child(session_dir, argv);
	for (size_t i = 0; i < ARRAY_SIZE(bufs); i++)
		free(bufs[i]);
	if (r < 0) {
		free(h);
		return r;
	}
	*ret = h;
	return 0;
}

const char *hostperf_mediated(const struct hostperf *h)
{
	return h->mediated;
}

bool hostperf_reap(struct hostperf *h)
{
	if (!h->exited && waitpid(h->pid, &h->status, WNOHANG) == h->pid)
		h->exited = true;
	return h->exited;
}

/* perf has written its header (it does so before recording) and is still running. */
bool hostperf_ready(struct hostperf *h, int *ret_err)
{
	struct stat st;

	if (hostperf_reap(h)) {
		*ret_err = -ECHILD;
		return false;
	}
	*ret_err = 0;
	return stat(h->data, &st) == 0 && st.st_size >= 104;
}

bool hostperf_recording(struct hostperf *h)
{
	return !hostperf_reap(h) && !h->stopping;
}

int hostperf_stop(struct hostperf *h)
{
	if (h->exited || h->stopping)
		return 0;
	h->stopping = true;
	return kill(h->pid, SIGINT) < 0 ? -errno : 0;
}

/* --flight-recorder: perf writes its rings into DATA.<timestamp> and records on. */
int hostperf_dump(struct hostperf *h)
{
	if (h->exited || h->stopping)
		return -ESRCH;
	return kill(h->pid, SIGUSR2) < 0 ? -errno : 0;
}

/* At stop with --flight-recorder: perf's last dump becomes DATA (the merge's host.data). */
int hostperf_settle(struct hostperf *h, const char *dir)
{
	char dump[PATH_MAX + 300];
	int r = merge_newest_host_dump(dir, dump, sizeof(dump));

	if (r == 0 && rename(dump, h->data) < 0)
		r = -errno;
	return r;
}

int hostperf_control_fifos(const char *dir, char *buf, size_t size)
{
	char ctl[PATH_MAX + 32], ack[PATH_MAX + 32];

	snprintf(ctl, sizeof(ctl), "%s/host-perf.ctl", dir);
	snprintf(ack, sizeof(ack), "%s/host-perf.ack", dir);
	if ((mkfifo(ctl, 0600) < 0 && errno != EEXIST) || (mkfifo(ack, 0600) < 0 && errno != EEXIST))
		return -errno;
	snprintf(buf, size, "fifo:%s,%s", ctl, ack);
	return 0;
}

void hostperf_kill(struct hostperf *h)
{
	if (!h->exited) {
		kill(h->pid, SIGKILL);
		waitpid(h->pid, &h->status, 0);
		h->exited = true;
	}
}

void hostperf_free(struct hostperf *h)
{
	if (h)
		hostperf_kill(h);
	free(h);
}

int hostperf_exit_status(const struct hostperf *h)
{
	if (!h->exited)
		return -1;
	if (WIFEXITED(h->status))
		return WEXITSTATUS(h->status);
	return 128 + WTERMSIG(h->status);
}

const char *hostperf_state(const struct hostperf *h, char *buf, size_t size)
{
	struct stat st;
	double mb = stat(h->data, &st) == 0 ? (double)st.st_size / 1e6 : 0.0;

	if (!h->exited)
		snprintf(buf, size, "%s (pid %d), host.data %.1f MB", h->stopping ? "stopping" : "running",
			 (int)h->pid, mb);
	else if (h->stopping && (hostperf_exit_status(h) == 0 || hostperf_exit_status(h) == 128 + SIGINT))
		/* perf record ends by the daemon's SIGINT (re-raised once its file is written: 130) */
		snprintf(buf, size, "stopped, host.data %.1f MB", mb);
	else
		snprintf(buf, size, "exited with status %d, host.data %.1f MB", hostperf_exit_status(h), mb);
	return buf;
}
