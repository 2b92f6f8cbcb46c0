// SPDX-License-Identifier: GPL-2.0-only
/* A live migration on this host (docs/migration.md): the VM's FIFOs are held by both QEMUs, so
 * the streams go on by themselves; the daemon follows the guest from the source QEMU to the
 * destination. An inotify watch on agent-ctl-path's FIFO tells when a second process opens
 * the VM's ports (a destination QEMU starting with -incoming): a probe burst then anchors the
 * clock before the migration; when the source exits while the destination holds the ports,
 * the destination becomes the session's QEMU (session.ini migration_N, its vCPU threads, the
 * kvm clock's offsets from then on) and a second burst anchors the clock after it: the guest's clock fell
 * behind the host's across the switch, a step the fit splits at. */
#include <errno.h>
#include <event2/event.h>
#include <signal.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "daemon.h"
#include "log.h"
#include "ports.h"
#include "util.h"

#define MIGRATION_BURST_MAX_NS (2 * SEC) /* a burst not answered by then is given up */
#define MIGRATION_DENSE_MS 10             /* probe spacing while a destination waits */
#define MIGRATION_DENSE_MAX_NS (120 * SEC) /* at most this long (a destination left waiting) */
#define MIGRATION_SCAN_GAP_NS SEC /* /proc is scanned at most once a second, whoever opens the FIFO */

/* While a destination holds the ports, a probe every MIGRATION_DENSE_MS: the step the guest's
 * clock takes over the blackout is then placed within that much of guest time (clockfit
 * place_step), not within the periodic probes' spacing. */
static void migration_dense(evutil_socket_t fd, short what, void *arg)
{
	struct daemon *d = arg;

	if (!d->mg.dest || d->ph != PH_TRACING ||
	    util_now_ns(CLOCK_MONOTONIC) > d->mg.dense_since_ns + MIGRATION_DENSE_MAX_NS) {
		evtimer_del(d->mg.dense);
		return;
	}
	/* a probe the migration swallowed (the source QEMU read it and stopped) is not waited for */
	if ((!d->probe_pending || util_now_ns(CLOCK_MONOTONIC) > d->mg.dense_sent_ns + 5 * MIGRATION_DENSE_MS * 1000000ull) &&
	    !d->mg.probes_left && !d->snap_client) {
		daemon_probe_send(d, false);
		d->mg.dense_sent_ns = util_now_ns(CLOCK_MONOTONIC);
	}
}

static void migration_burst(struct daemon *d)
{
	if (strcmp(d->s.clock_method, "ptp") || d->snap_probes_left)
		return; /* kvm reads offsets, not probes; a snapshot's burst serves as well */
	d->mg.probes_left = PROBES_PER_BURST;
	d->mg.burst_ns = util_now_ns(CLOCK_MONOTONIC);
	if (!d->probe_pending)
		daemon_probe_send(d, false);
}

/* A second QEMU holding the VM's ports: a migration's destination, most likely. */
static void migration_look(struct daemon *d)
{
	uint64_t now = util_now_ns(CLOCK_MONOTONIC);
	pid_t pid;

	if (d->ph != PH_TRACING || d->mg.dest || now < d->mg.scanned_ns + MIGRATION_SCAN_GAP_NS)
		return;
	d->mg.scanned_ns = now;
	if ((pid = port_other_holder(&d->ctl, d->s.qemu_pid)) <= 0)
		return;
	d->mg.dest = pid;
	if (!strcmp(d->s.clock_method, "ptp"))
		log_info("pid %d opened the VM's ports beside QEMU (pid %d): a live migration's destination? "
			 "clock probes every %d ms while it waits", (int)pid, (int)d->s.qemu_pid, MIGRATION_DENSE_MS);
	else
		log_info("pid %d opened the VM's ports beside QEMU (pid %d): a live migration's destination? "
			 "(kvm clock: its TSC offsets are read when the source exits)", (int)pid, (int)d->s.qemu_pid);
	migration_burst(d);
	if (!strcmp(d->s.clock_method, "ptp")) {
		struct timeval tv = { 0, MIGRATION_DENSE_MS * 1000 };

		d->mg.dense_since_ns = now;
		evtimer_add(d->mg.dense, &tv);
	}
}

static void migration_opened(evutil_socket_t fd, short what, void *arg)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));

	while (read(fd, buf, sizeof(buf)) > 0)
		;
	migration_look(arg);
}

int daemon_migration_arm(struct daemon *d)
{
	char path[PATH_MAX], held[64];

	d->mg.inotify_fd = -1;
	if (d->kind != PORT_FIFO || d->ctl.rfd < 0)
		return 0;
	/* the FIFO the daemon holds open (its /proc/self/fd link), not the path in the VM dir, which
	 * QEMU's user may replace */
	snprintf(held, sizeof(held), "/proc/self/fd/%d", d->ctl.rfd);
	if ((d->mg.inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) < 0 ||
	    inotify_add_watch(d->mg.inotify_fd, held, IN_OPEN) < 0) {
		log_warn("inotify on %s: %s: a migration's destination is seen only when the source exits",
			 port_path(&d->ctl, true, path, sizeof(path)), strerror(errno));
		return 0;
	}
	d->mg.opened = event_new(d->base, d->mg.inotify_fd, EV_READ | EV_PERSIST, migration_opened, d);
	d->mg.dense = event_new(d->base, -1, EV_PERSIST, migration_dense, d);
	if (!d->mg.opened || !d->mg.dense || event_add(d->mg.opened, NULL) < 0)
		return -ENOMEM;
	return 0;
}

void daemon_migration_free(struct daemon *d)
{
	if (d->mg.opened)
		event_free(d->mg.opened);
	if (d->mg.dense)
		event_free(d->mg.dense);
	if (d->mg.inotify_fd >= 0)
		close(d->mg.inotify_fd);
}

/* The source QEMU's binary, read while it runs (its /proc entry goes with it). */
void daemon_migration_seen(struct daemon *d, pid_t pid)
{
	char link[64];
	ssize_t n;

	if (d->mg.exe_of == pid)
		return;
	d->mg.exe_of = pid;
	snprintf(link, sizeof(link), "/proc/%d/exe", (int)pid);
	n = readlink(link, d->mg.exe, sizeof(d->mg.exe) - 1);
	d->mg.exe[n > 0 ? n : 0] = '\0';
}

static bool same_exe(struct daemon *d, pid_t pid)
{
	char link[64], exe[sizeof(d->mg.exe)];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/%d/exe", (int)pid);
	n = readlink(link, exe, sizeof(exe) - 1);
	if (n <= 0)
		return false;
	exe[n] = '\0';
	if (strcmp(exe, d->mg.exe)) {
		log_warn("QEMU (pid %d, %s) exited; pid %d holds the VM's ports but runs %s: not a migration's "
			 "destination, not followed", (int)d->mg.exe_of, d->mg.exe, (int)pid, exe);
		return false;
	}
	return true;
}

bool daemon_migration_follow(struct daemon *d, pid_t gone)
{
	uint64_t now = util_now_ns(CLOCK_MONOTONIC);
	pid_t next;
	int r;

	/* while tracing only (a QEMU gone before it is a failed start), and to a process running
	 * the source's own binary (a migration's destination is a QEMU like it; a tool that
	 * happens to hold the FIFOs is not followed) */
	if (d->kind != PORT_FIFO || d->ph != PH_TRACING || !d->mg.exe[0] ||
	    (next = port_other_holder(&d->ctl, gone)) <= 0 || !same_exe(d, next))
		return false;
	if ((r = session_migrated(&d->s, now, next)) == -ENOSPC) {
		log_warn("QEMU (pid %d) exited and pid %d holds the VM's ports, a migration past the %u the session "
			 "follows: ending it", (int)gone, (int)next, SESSION_MAX_MIGRATIONS);
		return false;
	}
	if (r < 0)
		log_warn("session.ini: cannot record the migration (%s)", strerror(-r));
	log_info("QEMU (pid %d) exited while pid %d holds the VM's ports: the guest migrated to it %.1f s into "
		 "the session; following it", (int)gone, (int)next, (double)(now - d->s.started_mono_ns) / 1e9);
	/* not before: a destination's offsets also change when QEMU resets its vCPUs at start (seen:
	 * by 79 s on the rig, the guest still on the source), not only when it loads the guest's TSC */
	if (!strcmp(d->s.clock_method, "kvm") && (r = clocksync_kvm_follow(&d->clk, d->o->kvm_debugfs, next)) < 0)
		log_warn("kvm clock: the destination QEMU's TSC offsets cannot be read (%s): the guest's times "
			 "after the migration keep the source's offsets", strerror(-r));
	d->mg.dest = 0;
	daemon_migration_seen(d, next);
	migration_burst(d);
	return true;
}

void daemon_migration_tick(struct daemon *d)
{
	/* a reply lost (or the guest paused by the migration): the periodic probes take over */
	if (d->mg.probes_left && util_now_ns(CLOCK_MONOTONIC) > d->mg.burst_ns + MIGRATION_BURST_MAX_NS)
		d->mg.probes_left = 0;
	if (d->mg.dest > 0 && kill(d->mg.dest, 0) < 0 && errno == ESRCH) {
		log_info("pid %d, which held the VM's ports beside QEMU (pid %d), exited: no migration (it failed "
			 "or was cancelled), the session stays with pid %d", (int)d->mg.dest, (int)d->s.qemu_pid,
			 (int)d->s.qemu_pid);
		d->mg.dest = 0;
	}
}

bool daemon_migration_probe_reply(struct daemon *d)
{
	if (d->ph != PH_TRACING || !d->mg.probes_left || d->probe_pending)
		return false;
	if (--d->mg.probes_left > 0)
		daemon_probe_send(d, false);
	return true;
}
