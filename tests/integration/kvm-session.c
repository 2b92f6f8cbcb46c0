// SPDX-License-Identifier: GPL-2.0-only
/* Test tool: plays the daemon's kvm clock work (collector/daemon/clocksync.c, the same code) around a
 * command: finds QEMU_PID's dir under DEBUGFS/kvm, picks the host TSC conversion, reads every
 * vCPU's tsc-offset into DIR/kvm.samples, runs CMD, then finishes as the daemon does at stop
 * (a last reading, DIR/clock.ini).
 *   kvm-session DIR DEBUGFS QEMU_PID CMD [ARG...] */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clocksync.h"

static int run(char **argv)
{
	int st;
	pid_t pid = fork();

	if (pid < 0)
		return -errno;
	if (pid == 0) {
		execvp(argv[0], argv);
		_exit(127);
	}
	if (waitpid(pid, &st, 0) < 0)
		return -errno;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -ECHILD;
}

int main(int argc, char **argv)
{
	struct clocksync c;
	char why[1024], line[512];
	uint64_t started, stopped;
	int r;

	if (argc < 5) {
		fprintf(stderr, "usage: kvm-session DIR DEBUGFS QEMU_PID CMD [ARG...]\n");
		return 2;
	}
	if ((r = clocksync_open(&c, argv[1])) < 0) {
		fprintf(stderr, "kvm-session: cannot open %s/clock.samples: %s\n", argv[1], strerror(-r));
		return 1;
	}
	if (clocksync_kvm_begin(&c, argv[1], argv[2], (pid_t)atoi(argv[3]), why, sizeof(why)) < 0) {
		fprintf(stderr, "kvm-session: %s\n", why);
		clocksync_close(&c);
		return 1;
	}
	started = clocksync_host_now(&c);
	r = run(argv + 4);
	stopped = clocksync_host_now(&c);
	if (r == 0)
		r = clocksync_finish(&c, argv[1], "kvm", started, stopped);
	clocksync_describe(&c, "kvm", line, sizeof(line));
	printf("%s\n", line);
	clocksync_close(&c);
	if (r < 0)
		fprintf(stderr, "kvm-session: %s\n", strerror(-r));
	return r < 0;
}
