// SPDX-License-Identifier: GPL-2.0-only
/* start --live-merge: the merge runs beside the session ('trace-collector merge --follow', a
 * child process: a merge that fails leaves the session and the offline merge as they were), so
 * that stop only drains what the last second brought. The daemon keeps it fed: every
 * LIVE_PERIOD_NS a FLUSH to the agent (each guest CPU then marks in its spool how far it is
 * complete) when a stream needs it, and a "ping" to host perf over its control fifo (perf then
 * writes what its rings hold). A stream that brought LIVE_BUSY_BYTES in the period needs no
 * FLUSH: the follower's horizon for a CPU is also its last record, and a ring that fills pages
 * this fast sends them within its watermark (the flush's own partial page and marker are then
 * pure cost: bench/RESULTS.md "The live merge's FLUSH on need"). perf acks a ping before it
 * writes, so the ack of the next ping says that everything before the first one is in
 * host.data: the follower gets "host SIZE TIME". At finalize it gets "end", and the daemon waits
 * for it: SESSION/live.data and session.ini live_merge=done, which
 * stop hands out; anything else, and stop merges offline as before. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agentctl.h"
#include "collector.h"
#include "daemon.h"
#include "hostperf.h"
#include "log.h"
#include "session.h"
#include "spool.h"
#include "util.h"

#define LIVE_PERIOD_NS 500000000ull
#define LIVE_BUSY_BYTES (128u << 10) /* per period: 256 KB/s, a page every 16 ms */
#define LIVE_PINGS 8
#define LIVE_END_WAIT_MS 120000
#define LIVE_FIT_SPAN_NS 6000000000ull /* the follower's first fit: probes over 5 s (merge.h) */

struct live {
	pid_t pid;
	int cmd_fd;         /* the follower's stdin */
	int ctl_fd, ack_fd; /* perf record --control fifo:CTL,ACK */
	uint64_t ping_ns[LIVE_PINGS];
	uint64_t pings, acks;
	uint64_t next_ns;
	uint32_t flush_frame; /* the last FLUSH sent: its OK is swallowed */
	uint64_t flushes, flushes_skipped;
	uint64_t seen[2 * COLLECTOR_MAX_CPUS]; /* each spool's data_bytes at the last period */
	bool flush_refused, started, failed;
	/* live_end ran: a second finalize (stop after the session stopped itself) writes its verdict
	 * again (session.ini was rewritten whole meanwhile) */
	const char *ended;
	char control[2 * PATH_MAX + 96];
	char snap_path[PATH_MAX + 32]; /* a snapshot asked of the follower, or "" */
	uint64_t snap_deadline_ns;
};

static void live_close(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

void live_free(struct live *l)
{
	if (!l)
		return;
	live_close(&l->cmd_fd);
	live_close(&l->ctl_fd);
	live_close(&l->ack_fd);
	if (l->pid > 0 && waitpid(l->pid, NULL, WNOHANG) == 0) {
		kill(l->pid, SIGTERM);
		waitpid(l->pid, NULL, 0);
	}
	free(l);
}

/* The control fifos in the session dir, open before perf starts (perf opens them too). */
int live_prepare(struct daemon *d, const char **ret_control)
{
	char ctl[PATH_MAX + 32], ack[PATH_MAX + 32];
	struct live *l = calloc(1, sizeof(*l));

	if (!l)
		return -ENOMEM;
	*l = (struct live){ .cmd_fd = -1, .ctl_fd = -1, .ack_fd = -1 };
	d->live = l;
	snprintf(ctl, sizeof(ctl), "%s/host-perf.ctl", d->s.dir);
	snprintf(ack, sizeof(ack), "%s/host-perf.ack", d->s.dir);
	if ((mkfifo(ctl, 0600) < 0 && errno != EEXIST) || (mkfifo(ack, 0600) < 0 && errno != EEXIST))
		return -errno;
	l->ctl_fd = open(ctl, O_RDWR | O_NONBLOCK | O_CLOEXEC);
	l->ack_fd = open(ack, O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (l->ctl_fd < 0 || l->ack_fd < 0)
		return -errno;
	snprintf(l->control, sizeof(l->control), "fifo:%s,%s", ctl, ack);
	*ret_control = l->control;
	return 0;
}

/* The daemon's own binary by its path (exec names the process for the file's name; for
 * /proc/self/exe that is "exe"), or /proc/self/exe when it was replaced meanwhile. */
static void live_self(char *buf, size_t len)
{
	ssize_t n = readlink("/proc/self/exe", buf, len - 1);

	if (n > 0 && (size_t)n < len - 1)
		buf[n] = '\0';
	if (n <= 0 || (size_t)n >= len - 1 || (n >= 10 && !strcmp(buf + n - 10, " (deleted)")))
		snprintf(buf, len, "/proc/self/exe");
}

static int live_spawn(struct daemon *d, struct live *l)
{
	char out[PATH_MAX + 32], log[PATH_MAX + 32], self[PATH_MAX];
	int pfd[2];

	live_self(self, sizeof(self));
	snprintf(out, sizeof(out), "%s/live.data", d->s.dir);
	snprintf(log, sizeof(log), "%s/live-merge.log", d->s.dir);
	if (pipe2(pfd, O_CLOEXEC) < 0)
		return -errno;
	l->pid = fork();
	if (l->pid < 0) {
		close(pfd[0]);
		close(pfd[1]);
		return -errno;
	}
	if (l->pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);

		dup2(pfd[0], 0);
		if (fd >= 0) {
			if (!d->o->live_stdout) /* -o -: stdout is the user's pipe */
				dup2(fd, 1);
			dup2(fd, 2);
		}
		prctl(PR_SET_PDEATHSIG, SIGTERM); /* a killed daemon leaves the session to 'merge' */
		signal(SIGPIPE, SIG_DFL);
		execl(self, "trace-collector", "merge", "--follow", d->s.dir, "-o",
		      d->o->live_stdout ? "-" : out, (char *)NULL);
		dprintf(2, "cannot run trace-collector merge --follow: %s\n", strerror(errno));
		_exit(127);
	}
	close(pfd[0]);
	l->cmd_fd = pfd[1];
	fcntl(l->cmd_fd, F_SETFL, O_NONBLOCK);
	log_info("live merge: following the session into %s (pid %d, log %s)", out, (int)l->pid, log);
	return 0;
}

/* Every streaming CPU's spool (ftrace and guest perf) has its begin marker: the follower can
 * open them. */
static bool live_spools_begun(const struct daemon *d)
{
	struct spool_stats st;

	for (unsigned k = 0; k < 2 * COLLECTOR_MAX_CPUS; k++) {
		if (!d->spools[k] || d->cpu_missing[k])
			continue;
		spool_stats(d->spools[k], &st);
		if (!st.begun)
			return false;
	}
	return true;
}

/* Whether a running stream (ftrace or guest perf) brought less than LIVE_BUSY_BYTES since the last
 * period: its records may not reach the present, so the follower waits on it without a FLUSH.
 * Looks at every stream, so each one's count starts the next period afresh. */
static bool live_flush_needed(const struct daemon *d, struct live *l)
{
	struct spool_stats st;
	bool need = false;

	for (unsigned k = 0; k < 2 * COLLECTOR_MAX_CPUS; k++) {
		if (!d->spools[k] || d->cpu_missing[k])
			continue;
		spool_stats(d->spools[k], &st);
		if (st.begun && !st.ended && st.data_bytes - l->seen[k] < LIVE_BUSY_BYTES)
			need = true;
		l->seen[k] = st.data_bytes;
	}
	return need;
}

static void live_say(struct live *l, const char *line)
{
	if (l->cmd_fd >= 0 && write(l->cmd_fd, line, strlen(line)) < 0 && errno != EAGAIN)
		live_close(&l->cmd_fd);
}

/* perf's acks: each one after the first tells how far host.data is complete. Only while perf
 * records: once told to stop it writes its feature sections after the data, and a size taken
 * then would let the follower read them as records. */
static void live_acks(struct daemon *d, struct live *l)
{
	char buf[256], line[96], path[PATH_MAX + 16];
	ssize_t n;
	struct stat st;

	if (!d->perf || !hostperf_recording(d->perf))
		return;
	while ((n = read(l->ack_fd, buf, sizeof(buf))) > 0) {
		for (ssize_t i = 0; i < n; i++) {
			if (buf[i] != '\n')
				continue;
			if (++l->acks < 2 || l->acks > l->pings)
				continue;
			snprintf(path, sizeof(path), "%s/host.data", d->s.dir);
			if (stat(path, &st) < 0)
				continue;
			snprintf(line, sizeof(line), "host %lld %llu\n", (long long)st.st_size,
				 (unsigned long long)l->ping_ns[(l->acks - 2) % LIVE_PINGS]);
			live_say(l, line);
		}
	}
}

void live_tick(struct daemon *d, uint64_t now)
{
	struct live *l = d->live;

	if (!l || l->failed || d->ph != PH_TRACING)
		return;
	if (!l->started) {
		/* after a disk cut host perf is stopped: its finished host.data is for a merge at stop */
		if (!live_spools_begun(d) || d->disk_cut[0] || (d->perf && !hostperf_recording(d->perf)))
			return;
		/* The scan saw each begin marker in the spool's buffer; a quiet CPU's may sit there
		 * until its next bytes come, and a follower that opened the spool without it would
		 * leave that CPU out of the whole session. Into the files first. */
		for (unsigned k = 0; k < ARRAY_SIZE(d->spools); k++)
			if (d->spools[k] && spool_persist(d->spools[k]) < 0)
				return; /* the spool's own error handling says why; try again next tick */
		l->started = true;
		if (live_spawn(d, l) < 0) {
			log_warn("live merge: cannot start the follower: %m; stop merges offline");
			l->failed = true;
			return;
		}
	}
	live_acks(d, l);
	if (now < l->next_ns)
		return;
	l->next_ns = now + LIVE_PERIOD_NS;
	if (l->flush_refused || d->snap_client) {
		/* nothing to send */
	} else if (!live_flush_needed(d, l)) {
		l->flushes_skipped++;
	} else if (agentctl_send_flush(d->agent, d->s.session_id, ++d->snap_flush_seq, &l->flush_frame) < 0) {
		l->flush_frame = 0;
	} else {
		l->flushes++;
	}
	if (d->perf && l->pings - l->acks < LIVE_PINGS - 1 && write(l->ctl_fd, "ping\n", 5) == 5)
		l->ping_ns[l->pings++ % LIVE_PINGS] = util_now_ns(CLOCK_MONOTONIC);
}

void live_clock(struct daemon *d)
{
	if (d->live && d->live->started && !d->live->failed)
		live_say(d->live, "clock\n");
}

bool live_snapshot_begin(struct daemon *d, unsigned n)
{
	struct live *l = d->live;
	char line[PATH_MAX + 96];

	if (!l || !l->started || l->failed || l->pid <= 0 || l->cmd_fd < 0 || d->o->live_stdout ||
	    waitpid(l->pid, NULL, WNOHANG) != 0)
		return false;
	/* The follower converts guest times once its probes span LIVE_FIT_SPAN_NS (and with the
	 * kvm method only at the end): before, it could not cut in time. */
	if (strcmp(d->s.clock_method, "ptp") || d->snap_asked_ns < d->s.started_mono_ns + LIVE_FIT_SPAN_NS) {
		log_info("snapshot: the live merge has no clock fit yet (%s): merging the spools",
			 strcmp(d->s.clock_method, "ptp") ? "the clock is fitted at stop" : "a session under 6 s");
		return false;
	}
	snprintf(l->snap_path, sizeof(l->snap_path), "%s/snapshot-%u.data", d->s.dir, n);
	snprintf(line, sizeof(line), "snapshot %llu %s\n", (unsigned long long)d->snap_asked_ns, l->snap_path);
	live_say(l, line);
	if (l->cmd_fd < 0) {
		l->snap_path[0] = '\0';
		return false;
	}
	l->snap_deadline_ns = util_now_ns(CLOCK_MONOTONIC) + daemon_timeout(d);
	return true;
}

int live_snapshot_poll(struct daemon *d, uint64_t now, char *path, size_t len, char *why, size_t wlen)
{
	struct live *l = d->live;
	_cleanup_free_ char *text = NULL;
	char err[PATH_MAX + 48];

	snprintf(path, len, "%s", l->snap_path);
	if (access(l->snap_path, F_OK) == 0) {
		l->snap_path[0] = '\0';
		return 1;
	}
	snprintf(err, sizeof(err), "%s.err", l->snap_path);
	if (util_read_file(err, 256, &text, NULL) == 0) {
		snprintf(why, wlen, "the live merge could not write it: %.*s", (int)strcspn(text, "\n"), text);
		unlink(err);
	} else if (now >= l->snap_deadline_ns) {
		snprintf(why, wlen, "the live merge had not written it after %u s", d->o->timeout_s);
		live_say(l, "snapshot-cancel\n");
	} else {
		return 0;
	}
	l->snap_path[0] = '\0';
	return -1;
}

bool live_flush_answer(struct daemon *d, uint32_t frame, bool ok, const char *err)
{
	struct live *l = d->live;

	if (!l || !l->flush_frame || frame != l->flush_frame)
		return false;
	l->flush_frame = 0;
	if (!ok && !l->flush_refused) {
		l->flush_refused = true;
		log_warn("live merge: the agent cannot flush on request (%s): the merge waits for the stop", err);
	}
	return true;
}

/* At finalize: the follower drains and writes the header; the session says how it went. */
void live_end(struct daemon *d)
{
	struct live *l = d->live;
	uint64_t t0 = util_now_ns(CLOCK_MONOTONIC);
	int status = 0;
	pid_t w = 0;

	if (l && l->ended) {
		session_ini_set(d->s.dir, "live_merge", l->ended);
		return;
	}
	if (!l || !l->started || l->failed || l->pid <= 0) {
		if (l)
			session_ini_set(d->s.dir, "live_merge", l->ended = "none");
		return;
	}
	log_info("live merge: %llu FLUSH sent, %llu periods needed none (every stream busy)",
		 (unsigned long long)l->flushes, (unsigned long long)l->flushes_skipped);
	live_say(l, "end\n");
	live_close(&l->cmd_fd);
	while ((w = waitpid(l->pid, &status, WNOHANG)) == 0 &&
	       util_now_ns(CLOCK_MONOTONIC) - t0 < (uint64_t)LIVE_END_WAIT_MS * 1000000ull)
		poll(NULL, 0, 20);
	if (w == 0) {
		kill(l->pid, SIGKILL);
		waitpid(l->pid, &status, 0);
		log_warn("live merge: the follower did not finish within %d s: killed; stop merges offline",
			 LIVE_END_WAIT_MS / 1000);
	}
	l->pid = 0;
	/* exit 3: written, the clock unaligned (merge's own code): stop says so as it would */
	if (w > 0 && WIFEXITED(status) && (WEXITSTATUS(status) == 0 || WEXITSTATUS(status) == 3)) {
		/* -o -: the stream went to stdout; stop writes its file offline */
		session_ini_set(d->s.dir, "live_merge", l->ended = d->o->live_stdout ? "piped" :
				WEXITSTATUS(status) ? "done-unaligned" : "done");
		log_info("live merge: done %.2f s after the end (see %s/live-merge.log)",
			 (double)(util_now_ns(CLOCK_MONOTONIC) - t0) / 1e9, d->s.dir);
	} else {
		session_ini_set(d->s.dir, "live_merge", l->ended = "failed");
		log_warn("live merge: the follower failed (status %d, see %s/live-merge.log); stop merges offline",
			 w > 0 && WIFEXITED(status) ? WEXITSTATUS(status) : -1, d->s.dir);
	}
}

void live_status(const struct daemon *d, FILE *f)
{
	const struct live *l = d->live;
	char path[PATH_MAX + 32];
	struct stat st;

	snprintf(path, sizeof(path), "%s/live.data/data", d->s.dir);
	if (stat(path, &st) < 0) {
		snprintf(path, sizeof(path), "%s/live.data", d->s.dir);
		if (stat(path, &st) < 0)
			st.st_size = 0;
	}
	if (l->failed)
		fprintf(f, "live merge: FAILED to start (stop merges offline)\n");
	else if (!l->started)
		fprintf(f, "live merge: waiting for every CPU's begin marker\n");
	else
		fprintf(f, "live merge: following (pid %d), %.1f MB written, host perf acked %llu of %llu pings, "
			"%llu FLUSH sent, %llu not needed (every stream busy); %.1f MB of guest pages still to merge%s\n",
			(int)l->pid, (double)st.st_size / 1e6, (unsigned long long)l->acks, (unsigned long long)l->pings,
			(unsigned long long)l->flushes, (unsigned long long)l->flushes_skipped, (double)d->disk.pending / 1e6,
			l->flush_refused ? "; the agent cannot flush: guest events wait for stop" : "");
}
