// SPDX-License-Identifier: GPL-2.0-only
/* A live migration on this host (docs/migration.md): the VM's FIFOs are held by both QEMUs, so
 * the streams go on by themselves; the daemon follows the guest from the source QEMU to the
 * destination. An inotify watch on agent-ctl-path's FIFO tells when a second process opens
 * the VM's ports (a destination QEMU starting with -incoming): a probe burst then anchors the
 * clock before the migration; when the source exits while the destination holds the ports,
 * the destination becomes the session's QEMU (session.ini migration_N, its vCPU threads, the
 * kvm clock's offsets from then on) and a second burst anchors the clock after it: the guest's clock fell
 * behind the host's across the switch, a step the fit splits at. Sockets: the destination
 * rebinds the VM's socket names (QEMU unlinks and binds); an inotify watch on sock/ sees it, the
 * daemon connects to each name its new server holds (so the destination's ports are connected
 * when it loads the guest, which then sees no change), and moves each stream over, the old
 * connection read to its end first, once the guest sends there, a source port ends or the
 * source QEMU exits. */
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <unistd.h>

#include "daemon.h"
#include "log.h"
#include "ports.h"
#include "spool.h"
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

/* Whether pid runs the session's QEMU binary (a migration's destination is a QEMU like it; a
 * tool that happens to hold the ports is not followed: said, rate-limited). */
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
		if (log_due(&d->unexpected))
			log_warn("pid %d holds the VM's ports beside QEMU (pid %d, %s) but runs %s: not a migration's "
				 "destination, not followed", (int)pid, (int)d->mg.exe_of, d->mg.exe, exe);
		return false;
	}
	return true;
}

/* A destination is waiting (pid): the probe burst, and (ptp) the dense probes while it waits. */
static void migration_dest_found(struct daemon *d, uint64_t now)
{
	migration_burst(d);
	if (!strcmp(d->s.clock_method, "ptp")) {
		struct timeval tv = { 0, MIGRATION_DENSE_MS * 1000 };

		d->mg.dense_since_ns = now;
		evtimer_add(d->mg.dense, &tv);
	}
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
	migration_dest_found(d, now);
}

#define MIG_SOCKS (1 + 2 * COLLECTOR_MAX_CPUS)

static struct port *migration_port(struct daemon *d, unsigned i)
{
	return i == 0 ? &d->ctl : &d->data[i - 1];
}

/* Whether index i is a port of this session (agent-ctl-path, or a stream with its spool). */
static bool migration_has_port(const struct daemon *d, unsigned i)
{
	return i == 0 || (daemon_stream(d, i - 1) && d->spools[i - 1] && !d->cpu_missing[i - 1]);
}

static void migration_sock_close(struct daemon *d, unsigned i)
{
	if (d->mg.sock_ev[i])
		event_free(d->mg.sock_ev[i]);
	d->mg.sock_ev[i] = NULL;
	if (d->mg.sock_fd[i] >= 0)
		close(d->mg.sock_fd[i]);
	d->mg.sock_fd[i] = -1;
}

/* The destination is forgotten: its connections closed. */
static void migration_forget(struct daemon *d)
{
	for (unsigned i = 0; i < MIG_SOCKS; i++)
		migration_sock_close(d, i);
	d->mg.dest = 0;
	d->mg.switch_due = false;
}

static void migration_sock_readable(evutil_socket_t fd, short what, void *arg);

/* Sockets: connects to each of the VM's names the destination serves and the daemon has no
 * connection to yet (a name still the source's is left: its destination binds it later). */
static void migration_connect(struct daemon *d)
{
	for (unsigned i = 0; i < MIG_SOCKS; i++) {
		pid_t pid = 0;
		int fd;

		if (d->mg.sock_fd[i] >= 0 || !migration_has_port(d, i))
			continue;
		if ((fd = port_connect_again(migration_port(d, i), &pid)) < 0)
			continue;
		if (pid != d->mg.dest) {
			close(fd); /* the source's still, or another server: not the destination's */
			continue;
		}
		d->mg.sock_fd[i] = fd;
		d->mg.sock_ev[i] = event_new(d->base, fd, EV_READ, migration_sock_readable, d);
		if (d->mg.sock_ev[i])
			event_add(d->mg.sock_ev[i], NULL);
	}
}

/* Sockets: a new name in sock/. Its server, when not the session's QEMU and running the same
 * binary, is a migration's destination: connect to its names. */
static void migration_look_sockets(struct daemon *d)
{
	uint64_t now = util_now_ns(CLOCK_MONOTONIC);
	pid_t pid = 0;
	int fd;

	if (d->ph != PH_TRACING || now < d->mg.scanned_ns + MIGRATION_SCAN_GAP_NS / 20)
		return; /* (look_due stays: the tick looks again) */
	d->mg.scanned_ns = now;
	d->mg.look_due = false;
	if (d->mg.dest) {
		migration_connect(d);
		return;
	}
	if ((fd = port_connect_again(&d->ctl, &pid)) < 0)
		return;
	close(fd); /* migration_connect connects again, checked as the others */
	if (pid <= 0 || pid == d->s.qemu_pid || !d->mg.exe[0] || !same_exe(d, pid))
		return;
	d->mg.dest = pid;
	migration_connect(d);
	log_info("pid %d opened the VM's ports beside QEMU (pid %d): a live migration's destination? connected to its "
		 "sockets%s", (int)pid, (int)d->s.qemu_pid,
		 strcmp(d->s.clock_method, "ptp") ? " (kvm clock: its TSC offsets are read when the guest runs there)" : "");
	migration_dest_found(d, now);
}

static void migration_opened(evutil_socket_t fd, short what, void *arg)
{
	struct daemon *d = arg;
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));

	while (read(fd, buf, sizeof(buf)) > 0)
		;
	if (d->kind == PORT_SOCKET) {
		d->mg.look_due = true; /* a QEMU binds its names one after another: looked at again */
		migration_look_sockets(d);
	} else
		migration_look(d);
}

/* Sockets: sock/ opened O_PATH, no link followed, watched through that descriptor. */
static int migration_watch_sockdir(struct daemon *d)
{
	char path[PATH_MAX + 8], held[64];
	_cleanup_close_ int dfd = -1;

	snprintf(path, sizeof(path), "%s/" PORT_SOCK_DIR, d->o->vm_dir);
	if ((dfd = open(path, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
		return -errno;
	snprintf(held, sizeof(held), "/proc/self/fd/%d", dfd);
	if (inotify_add_watch(d->mg.inotify_fd, held, IN_CREATE | IN_MOVED_TO | IN_ONLYDIR) < 0)
		return -errno;
	return 0;
}

int daemon_migration_arm(struct daemon *d)
{
	char path[PATH_MAX], held[64];
	int r;

	d->mg.inotify_fd = -1;
	for (unsigned i = 0; i < MIG_SOCKS; i++)
		d->mg.sock_fd[i] = -1;
	d->mg.armed = true;
	if (d->kind == PORT_FIFO && d->ctl.rfd < 0)
		return 0;
	if ((d->mg.inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) < 0) {
		r = -errno;
	} else if (d->kind == PORT_SOCKET) {
		r = migration_watch_sockdir(d);
	} else {
		/* the FIFO the daemon holds open (its /proc/self/fd link), not the path in the VM dir,
		 * which QEMU's user may replace */
		snprintf(held, sizeof(held), "/proc/self/fd/%d", d->ctl.rfd);
		r = inotify_add_watch(d->mg.inotify_fd, held, IN_OPEN) < 0 ? -errno : 0;
	}
	if (r < 0) {
		log_warn("inotify on %s: %s: a migration's destination is seen only when the source exits",
			 d->kind == PORT_SOCKET ? d->o->vm_dir : port_path(&d->ctl, true, path, sizeof(path)), strerror(-r));
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
	if (!d->mg.armed)
		return;
	for (unsigned i = 0; i < MIG_SOCKS; i++)
		migration_sock_close(d, i);
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

/* The session's QEMU is `next` from now on (the guest migrated from `gone`): session.ini, the
 * kvm clock's offsets, a burst. False past SESSION_MAX_MIGRATIONS (the session ends). */
static bool migration_followed(struct daemon *d, pid_t gone, pid_t next)
{
	uint64_t now = util_now_ns(CLOCK_MONOTONIC);
	int r;

	if ((r = session_migrated(&d->s, now, next)) == -ENOSPC) {
		log_warn("QEMU (pid %d) exited and pid %d holds the VM's ports, a migration past the %u the session "
			 "follows: ending it", (int)gone, (int)next, SESSION_MAX_MIGRATIONS);
		return false;
	}
	if (r < 0)
		log_warn("session.ini: cannot record the migration (%s)", strerror(-r));
	log_info("QEMU (pid %d) %s while pid %d holds the VM's ports: the guest migrated to it %.1f s into "
		 "the session; following it", (int)gone, kill(gone, 0) < 0 && errno == ESRCH ? "exited" : "stopped",
		 (int)next, (double)(now - d->s.started_mono_ns) / 1e9);
	/* not before: a destination's offsets also change when QEMU resets its vCPUs at start (seen:
	 * by 79 s on the rig, the guest still on the source), not only when it loads the guest's TSC */
	if (!strcmp(d->s.clock_method, "kvm") && (r = clocksync_kvm_follow(&d->clk, d->o->kvm_debugfs, next)) < 0)
		log_warn("kvm clock: the destination QEMU's TSC offsets cannot be read (%s): the guest's times "
			 "after the migration keep the source's offsets", strerror(-r));
	d->mg.dest = 0;
	daemon_migration_seen(d, next);
	/* a probe still unanswered went to the source after it stopped (sockets: its connection is
	 * closed now): lost, so the burst does not wait for it (it did, 3 s, until the periodic
	 * probes took over: the clock's step then lay anywhere in those 3 s) */
	d->probe_pending = false;
	migration_burst(d);
	return true;
}

/* Sockets: each port moves to its connection to the destination, the old one read first; a
 * port the destination had not bound yet is left to end and reconnect (tick.c). */
static bool migration_switch(struct daemon *d)
{
	pid_t gone = d->s.qemu_pid, next = d->mg.dest;
	unsigned moved = 0, left = 0;
	int r;

	for (unsigned i = 0; i < MIG_SOCKS; i++) {
		int fd = d->mg.sock_fd[i];

		if (!migration_has_port(d, i))
			continue;
		if (fd < 0 || (i == 0 && !d->agent)) {
			left++;
			continue;
		}
		if (d->mg.sock_ev[i])
			event_free(d->mg.sock_ev[i]);
		d->mg.sock_ev[i] = NULL;
		d->mg.sock_fd[i] = -1;
		if (i == 0) {
			r = agentctl_hand_over(d->agent, d->base, fd);
			d->agent_gone = r < 0;
		} else {
			r = spool_hand_over(d->spools[i - 1], d->base, fd);
			d->data_gone[i - 1] = r < 0;
			d->spool_err[i - 1] = 0;
		}
		if (r < 0)
			log_warn("%s: cannot watch the destination's connection (%s)", migration_port(d, i)->name, strerror(-r));
		moved++;
	}
	log_info("the guest runs on pid %d: %u of the VM's %u ports moved to its sockets, the source's read to their end%s",
		 (int)next, moved, moved + left, left ? " (the others reconnect once the source's connections end)" : "");
	migration_forget(d);
	d->mg.dest = next;
	return migration_followed(d, gone, next);
}

bool daemon_migration_follow(struct daemon *d, pid_t gone)
{
	pid_t next;

	if (d->kind == PORT_SOCKET) /* the source exited: the destination connected is the guest's */
		return d->ph == PH_TRACING && d->mg.dest > 0 && d->mg.exe[0] && migration_switch(d);
	/* while tracing only (a QEMU gone before it is a failed start), and to a process running
	 * the source's own binary (a migration's destination is a QEMU like it; a tool that
	 * happens to hold the FIFOs is not followed) */
	if (d->kind != PORT_FIFO || d->ph != PH_TRACING || !d->mg.exe[0] ||
	    (next = port_other_holder(&d->ctl, gone)) <= 0 || !same_exe(d, next))
		return false;
	return migration_followed(d, gone, next);
}

bool daemon_migration_port_ended(struct daemon *d, int k)
{
	unsigned i = k < 0 ? 0 : 1 + (unsigned)k;

	if (d->kind != PORT_SOCKET || !d->mg.armed || d->mg.dest <= 0 || i >= MIG_SOCKS || d->mg.sock_fd[i] < 0)
		return false;
	d->mg.switch_due = true;
	daemon_defer(d);
	return true;
}

void daemon_migration_due(struct daemon *d)
{
	if (!d->mg.switch_due)
		return;
	d->mg.switch_due = false;
	if (d->mg.dest > 0 && d->ph == PH_TRACING)
		migration_switch(d);
}

/* A destination connection readable: the guest sends there (it runs on the destination), or
 * the destination closed it (it exited: the migration failed or was cancelled). */
static void migration_sock_readable(evutil_socket_t fd, short what, void *arg)
{
	struct daemon *d = arg;
	char c;
	ssize_t n = recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);

	for (unsigned i = 0; i < MIG_SOCKS; i++)
		if (d->mg.sock_fd[i] == fd && d->mg.sock_ev[i] && n < 0 && (errno == EAGAIN || errno == EINTR)) {
			event_add(d->mg.sock_ev[i], NULL); /* nothing after all */
			return;
		}
	if (n > 0) {
		d->mg.switch_due = true;
		daemon_defer(d);
		return;
	}
	log_info("pid %d, which held the VM's ports beside QEMU (pid %d), closed its sockets: no migration (it failed "
		 "or was cancelled), the session stays with pid %d", (int)d->mg.dest, (int)d->s.qemu_pid,
		 (int)d->s.qemu_pid);
	migration_forget(d);
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
		if (d->kind == PORT_SOCKET)
			migration_forget(d);
		d->mg.dest = 0;
	}
	if (d->kind == PORT_SOCKET && d->mg.look_due)
		migration_look_sockets(d);
	if (d->kind == PORT_SOCKET && d->mg.dest > 0 && util_now_ns(CLOCK_MONOTONIC) > d->mg.scanned_ns + MIGRATION_SCAN_GAP_NS) {
		d->mg.scanned_ns = util_now_ns(CLOCK_MONOTONIC);
		migration_connect(d);
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
