// SPDX-License-Identifier: GPL-2.0-only
/* start's daemon (cmd-start.c, vmgroup start): the VM's dirs checked for trust, its lock taken, the
 * daemon forked and its result read. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "collector.h"
#include "disk.h"
#include "log.h"
#include "perf_events.h"
#include "util.h"
#include "vmgroup.h"
#include "start-daemon.h"

/* Root writes only where no other user can plant a link: the VM dir, what the daemon writes
 * under it (sessions/, cache/) and the run dir must be root's and writable by nobody else. */
static int start_trust(const struct start_opts *o)
{
	static const char *const subs[] = { "", "/sessions", "/cache" };
	char path[PATH_MAX + 16], why[PATH_MAX + 96];
	struct stat st;

	for (size_t i = 0; i < ARRAY_SIZE(subs); i++) {
		snprintf(path, sizeof(path), "%s%s", o->vm_dir, subs[i]);
		if (i && lstat(path, &st) < 0 && errno == ENOENT)
			continue;
		if (util_trusted_dir(path, why, sizeof(why)) < 0) {
			log_error("VM dir %s is not safe for the root daemon to write in: %s — re-run "
				  "'trace-collector setup --name %s --cpus N [--owner USER:GROUP]' as root: it gives "
				  "QEMU's user only its ports (docs/security.md)", o->vm_dir, why, o->name);
			return -EPERM;
		}
	}
	if (util_trusted_dir(o->run_dir, why, sizeof(why)) < 0) {
		log_error("run dir %s is not safe for the root daemon: %s — make it root's, mode 0700, or "
			  "name another with --run-dir", o->run_dir, why);
		return -EPERM;
	}
	return 0;
}

/* Takes RUN/VM.pid's lock; a held lock means a session is running: say which. */
int start_lock(const struct start_opts *o)
{
	char path[PATH_MAX + 16], text[PATH_MAX + 32] = "";
	_cleanup_close_ int fd = -1;
	int r = util_mkdir_p(o->run_dir, 0700);

	if (r < 0) {
		log_error("cannot create the run dir %s: %s", o->run_dir, strerror(-r));
		return r;
	}
	if (start_trust(o) < 0)
		return -EPERM;
	snprintf(path, sizeof(path), "%s/%s.pid", o->run_dir, o->name);
	fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		log_error("cannot open %s: %s", path, strerror(errno));
		return -errno;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		ssize_t n = pread(fd, text, sizeof(text) - 1, 0);
		char *nl;

		text[n > 0 ? n : 0] = '\0';
		nl = strchr(text, '\n');
		if (nl)
			*nl = ' ';
		log_error("a session for %s is already running (daemon pid and session: %s) — stop it with 'trace-collector stop --name %s'",
			  o->name, text[0] ? text : "unknown", o->name);
		return -EBUSY;
	}
	return TAKE_FD(fd);
}

/* Parent side: relays the daemon's result (its session dir in dir); on failure prints the
 * errors of its log, each after "NAME: " when name (one of several VMs), the first in why. */
int start_wait(int rfd, pid_t child, const char *name, char *dir, size_t dirsize, char *why, size_t whysize)
{
	char buf[PATH_MAX + 64], log[PATH_MAX + 96];
	FILE *f = fdopen(rfd, "r"), *l;
	bool ok = false;

	dir[0] = '\0';
	while (f && fgets(buf, sizeof(buf), f)) {
		buf[strcspn(buf, "\n")] = '\0';
		if (!strncmp(buf, "dir ", 4))
			snprintf(dir, dirsize, "%s", buf + 4);
		else if (!strcmp(buf, "ok"))
			ok = true;
		if (!strcmp(buf, "ok") || !strcmp(buf, "fail"))
			break;
	}
	if (f)
		fclose(f);
	if (ok)
		return 0;
	waitpid(child, NULL, 0);
	if (why)
		snprintf(why, whysize, "start failed%s%s", dir[0] ? ", see " : "", dir[0] ? dir : "");
	if (!dir[0]) {
		log_error("%s%sstart failed (see the messages above)", name ? name : "", name ? ": " : "");
		return 1;
	}
	snprintf(log, sizeof(log), "%s/collector.log", dir);
	l = fopen(log, "r");
	for (bool first = true; l && fgets(buf, sizeof(buf), l);) {
		char *e = strstr(buf, "error: ");

		if (!e)
			continue;
		if (name)
			log_error("%s: %.*s", name, (int)strcspn(e + 7, "\n"), e + 7);
		else
			fputs(buf, stderr);
		if (why && first)
			snprintf(why, whysize, "%.*s", (int)strcspn(e + 7, "\n"), e + 7);
		first = false;
	}
	if (l)
		fclose(l);
	log_error("%s%sstart failed; session dir kept at %s (log: %s)", name ? name : "", name ? ": " : "", dir, log);
	return 1;
}

static void start_child(const struct start_opts *o, int lock_fd, int wfd)
{
	int null = open("/dev/null", O_RDWR);

	setsid();
	if (null >= 0) {
		dup2(null, 0);
		dup2(null, 1);
		close(null);
	}
	if (o->group) /* the other VMs' pipes and locks stay theirs */
		for (int fd = 3; fd < 1024; fd++)
			if (fd != lock_fd && fd != wfd)
				close(fd);
	_exit(daemon_run(o, lock_fd, wfd));
}

/* The VM's lock, then its daemon in the background; *ret_fd reads its result (start_wait). */
int start_spawn(const struct start_opts *o, pid_t *ret_pid, int *ret_fd)
{
	int lock_fd = start_lock(o), p[2];
	pid_t pid;

	if (lock_fd < 0)
		return lock_fd;
	if (pipe2(p, O_CLOEXEC) < 0 || (pid = fork()) < 0) {
		log_error("%s: cannot start the daemon: %s", o->name, strerror(errno));
		close(lock_fd);
		return -errno;
	}
	if (pid == 0) {
		close(p[0]);
		start_child(o, lock_fd, p[1]);
	}
	close(p[1]);
	close(lock_fd);
	*ret_pid = pid;
	*ret_fd = p[0];
	return 0;
}
