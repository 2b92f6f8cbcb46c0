// SPDX-License-Identifier: GPL-2.0-only
/* The trace-collector daemon: one libevent loop (explicit base) that drives the agent
 * through hello -> config -> metadata -> probes -> host perf -> start (start.c, agent.c),
 * keeps every port read (streams.c), and on stop (request, signal, limit, disk full, QEMU
 * gone, agent silent: tick.c) finalizes the session dir (stop.c). This file sets it up,
 * wires its events and the control socket's ops, runs the loop and frees it all. See
 * collector/README.md. */
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

#include "agentctl.h"
#include "collector.h"
#include "ctlsock.h"
#include "daemon.h"
#include "gbinfetch.h"
#include "hostperf.h"
#include "log.h"
#include "ports.h"
#include "session.h"
#include "spool.h"
#include "util.h"

#define TICK_MS 100

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
	if (!d->deferred || daemon_migration_arm(d) < 0)
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
	char path[PATH_MAX + 8], why[2 * PATH_MAX + 512];
	int r = ports_detect(d->o->vm_dir, &d->kind);

	if (r < 0) {
		log_error("no FIFO at %s/agent-ctl-path.out and no socket at %s/agent-ctl-path.sock — run 'trace-collector setup --name %s --cpus N'",
			  d->o->vm_dir, d->o->vm_dir, d->o->name);
		return r;
	}
	port_init(&d->ctl, d->o->vm_dir, "agent-ctl-path", d->kind);
	r = port_open(&d->ctl, true);
	if (port_refused(&d->ctl, r, d->o->vm_dir, d->o->name, why, sizeof(why))) {
		log_error("%s", why);
		return r;
	}
	if (r < 0 && d->kind == PORT_SOCKET) {
		log_warn("cannot connect to %s: %s; retrying (is QEMU running?)",
			 port_path(&d->ctl, true, path, sizeof(path)), strerror(-r));
		d->agent_gone = true;
		d->ctl_err = r;
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
	daemon_migration_free(d);
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
	d->disk_guest = UINT64_MAX;
	for (unsigned k = 0; k < ARRAY_SIZE(d->data); k++)
		d->data[k].rfd = d->data[k].wfd = -1;
	d->ctl.rfd = d->ctl.wfd = -1;
	d->mg.inotify_fd = -1;
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
