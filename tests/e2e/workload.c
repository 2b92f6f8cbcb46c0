// SPDX-License-Identifier: GPL-2.0-only
/* e2e guest workload: N numbered lines into an ftrace instance's trace_marker, spread over
 * the CPUs with sched_setaffinity, plus context-switch churn (a pipe ping-pong). Static. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_MARKER "/sys/kernel/tracing/instances/virtio-trace/trace_marker"

struct workload_opts {
	const char *marker;
	long lines;
	long switches;
	long block; /* lines on one CPU before moving to the next (1: alternate every line) */
	long delay_us; /* pause after each line */
	const char *tag; /* "vt-e2e TAG I cpu C" */
	long spin_ms;    /* -S: a "vt-spin" task per CPU spins this long between two markers */
	const char *spin_name; /* -N: the spinners' task name instead of vt-spin */
	int ncpus;
	int width; /* -w: each line padded with spaces to this many bytes (a denser flood) */
	bool pio;  /* -P: the spinners read the CMOS clock's port (0x70/0x71, /dev/port) instead: a VM exit each */
	bool zero; /* -Z: the spinners read /dev/zero instead, 64 KiB a read: the kernel's time, no exit of their own */
};

static int workload_pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set) < 0 ? -errno : 0;
}

static int workload_lines(const struct workload_opts *o)
{
	int fd = open(o->marker, O_WRONLY | O_CLOEXEC);

	if (fd < 0) {
		fprintf(stderr, "workload: cannot open %s: %s\n", o->marker, strerror(errno));
		return -1;
	}
	for (long i = 0; i < o->lines; i++) {
		int cpu = (int)(i / o->block % o->ncpus);
		char line[1024];
		int n;

		if (i % o->block == 0 && workload_pin(cpu) < 0) {
			fprintf(stderr, "workload: cannot pin to cpu%d: %s\n", cpu, strerror(errno));
			close(fd);
			return -1;
		}
		n = snprintf(line, sizeof(line), "vt-e2e %.16s %ld cpu %d\n", o->tag, i, cpu);
		if (o->width > n && o->width <= (int)sizeof(line)) {
			memset(line + n - 1, ' ', (size_t)(o->width - n));
			line[o->width - 1] = '\n';
			n = o->width;
		}
		if (write(fd, line, (size_t)n) != n) {
			fprintf(stderr, "workload: write to %s failed: %s\n", o->marker, strerror(errno));
			close(fd);
			return -1;
		}
		if (o->delay_us)
			usleep((useconds_t)o->delay_us);
	}
	close(fd);
	return 0;
}

static long workload_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The spinner's hot loop: kept out of line so a profile can name it. */
__attribute__((noinline)) static unsigned long workload_spin_hot(unsigned long x)
{
	for (int i = 0; i < 100000; i++)
		x = x * 6364136223846793005ul + 1442695040888963407ul;
	return x;
}

/* One child per CPU, pinned: "vt-e2e spin begin cpu C", then named vt-spin for spin_ms of
 * user-space work, then "vt-e2e spin end cpu C" (guest perf e2e: vt-spin's samples lie between
 * its markers). */
static int workload_spin(const struct workload_opts *o)
{
	int ok = 0;

	for (int cpu = 0; cpu < o->ncpus; cpu++) {
		pid_t pid = fork();

		if (pid < 0)
			return -1;
		if (pid == 0) {
			int fd = open(o->marker, O_WRONLY | O_CLOEXEC);
			unsigned long x = (unsigned long)cpu;
			char line[64];
			long end;
			int n;

			int port = o->pio ? open("/dev/port", O_RDWR | O_CLOEXEC) : o->zero ? open("/dev/zero", O_RDONLY | O_CLOEXEC) : -1;
			static char zbuf[64 << 10];

			if (fd < 0 || workload_pin(cpu) < 0 || ((o->pio || o->zero) && port < 0)) {
				fprintf(stderr, "workload: cpu %d: %s: %s\n", cpu,
					fd < 0 ? o->marker : o->pio ? "/dev/port" : o->zero ? "/dev/zero" : "sched_setaffinity", strerror(errno));
				_exit(1);
			}
			n = snprintf(line, sizeof(line), "vt-e2e spin begin cpu %d\n", cpu);
			if (write(fd, line, (size_t)n) != n)
				_exit(1);
			/* Named vt-spin (-N) only between the markers, on its own CPU; a short sleep so that
			 * the guest's next sched_switch into it carries the new name (a task renamed while
			 * it runs keeps its old next_comm until it is switched in again). */
			prctl(PR_SET_NAME, o->spin_name);
			usleep(2000);
			for (end = workload_now_ms() + o->spin_ms; workload_now_ms() < end;) {
				if (o->zero) {
					if (read(port, zbuf, sizeof(zbuf)) != (ssize_t)sizeof(zbuf))
						_exit(1);
					x += (unsigned char)zbuf[x % sizeof(zbuf)] | 1u;
					continue;
				}
				if (!o->pio) {
					x = workload_spin_hot(x);
					continue;
				}
				for (int i = 0; i < 64; i++) { /* outb + inb: an exit to QEMU's RTC model each */
					unsigned char reg = 0x0a, v = 0;

					if (pwrite(port, &reg, 1, 0x70) != 1 || pread(port, &v, 1, 0x71) != 1)
						_exit(1);
					x += v | 1u;
				}
			}
			prctl(PR_SET_NAME, "vt-spun");
			n = snprintf(line, sizeof(line), "vt-e2e spin end cpu %d %lu\n", cpu, x & 1);
			_exit(write(fd, line, (size_t)n) == n ? 0 : 1);
		}
	}
	for (int cpu = 0; cpu < o->ncpus; cpu++) {
		int status;

		if (wait(&status) < 0 || !WIFEXITED(status) || WEXITSTATUS(status)) {
			fprintf(stderr, "workload: a spinner ended with status %#x\n", status);
			ok = -1;
		}
	}
	return ok;
}

/* Parent and child bounce one byte: every round trip is two context switches. */
static int workload_churn(long rounds)
{
	int ab[2], ba[2];
	char c = 0;
	pid_t pid;
	int status;

	if (pipe(ab) < 0 || pipe(ba) < 0)
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		/* Keep only our ends, or the parent's close never reaches us as EOF. */
		close(ab[1]);
		close(ba[0]);
		while (read(ab[0], &c, 1) == 1 && write(ba[1], &c, 1) == 1)
			;
		_exit(0);
	}
	for (long i = 0; i < rounds; i++)
		if (write(ab[1], &c, 1) != 1 || read(ba[0], &c, 1) != 1)
			break;
	close(ab[0]);
	close(ba[1]);
	close(ab[1]);
	waitpid(pid, &status, 0);
	close(ba[0]);
	return 0;
}

int main(int argc, char **argv)
{
	struct workload_opts o = { .marker = DEFAULT_MARKER, .lines = 1000, .switches = 2000, .block = 1, .tag = "line",
				   .spin_name = "vt-spin" };
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	int c;

	while ((c = getopt(argc, argv, "n:m:s:b:fd:t:S:N:w:PZ")) != -1) {
		switch (c) {
		case 'n': o.lines = strtol(optarg, NULL, 10); break;
		case 'b': o.block = strtol(optarg, NULL, 10); break;
		case 'd': o.delay_us = strtol(optarg, NULL, 10); break;
		case 't': o.tag = optarg; break;
		case 'f': /* outrun any reader on the same CPU: the ring must overrun */
			if (sched_setscheduler(0, SCHED_FIFO, &(struct sched_param){ .sched_priority = 1 }) < 0) {
				fprintf(stderr, "workload: SCHED_FIFO: %s\n", strerror(errno));
				return 1;
			}
			break;
		case 'm': o.marker = optarg; break;
		case 's': o.switches = strtol(optarg, NULL, 10); break;
		case 'S': o.spin_ms = strtol(optarg, NULL, 10); break;
		case 'N': o.spin_name = optarg; break;
		case 'w': o.width = (int)strtol(optarg, NULL, 10); break;
		case 'P': o.pio = true; break;
		case 'Z': o.zero = true; break;
		default:
			fprintf(stderr, "usage: workload [-n LINES] [-b LINES_PER_CPU] [-d USEC] [-t TAG] [-f] [-s ROUND_TRIPS] [-m TRACE_MARKER] [-S SPIN_MS] [-N SPIN_NAME] [-w LINE_BYTES] [-P] [-Z]\n");
			return 2;
		}
	}
	o.ncpus = n < 1 ? 1 : n > 256 ? 256 : (int)n; /* every online CPU */
	if (o.spin_ms > 0)
		return workload_spin(&o) < 0 ? 1 : 0;
	if (o.lines < 0 || o.block < 1 || o.switches < 0 || workload_lines(&o) < 0 || workload_churn(o.switches) < 0)
		return 1;
	printf("workload: %ld lines over %d cpus, %ld round trips\n", o.lines, o.ncpus, o.switches);
	return 0;
}
