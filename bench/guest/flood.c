// SPDX-License-Identifier: GPL-2.0-only
/*
 * flood: event and byte producers for the benchmark guest (static).
 *   flood marker PATH KBPS SECONDS   one pinned child per online CPU writes 1000-byte lines
 *                                    into the trace_marker PATH at KBPS KB/s each (paced in
 *                                    10 ms steps; 0 = as fast as it can); prints
 *                                    "flood marker cpu0 BYTES ... total BYTES secs S"
 *   flood port PATH MIB              write()s MIB MiB in 1 MiB chunks into PATH (a virtio
 *                                    port); prints "flood port bytes B secs S mbps R"
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define FLOOD_MAX_CPUS 64
#define FLOOD_LINE 1000

static double flood_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void flood_sleep_until(double t)
{
	struct timespec ts = { (time_t)t, (long)((t - (double)(time_t)t) * 1e9) };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

/* Writes lines at kbps KB/s until the deadline; returns the bytes written. */
static uint64_t flood_marker_cpu(int fd, double kbps, double seconds)
{
	char line[FLOOD_LINE];
	double start = flood_now(), end = start + seconds, step = 0.01;
	uint64_t done = 0;

	memset(line, 'x', sizeof(line));
	line[sizeof(line) - 1] = '\n';
	for (double t = start; t < end; t += step) {
		uint64_t want = kbps > 0 ? (uint64_t)((t + step - start) * kbps * 1000.0) : UINT64_MAX;

		while (done < want) {
			if (write(fd, line, sizeof(line)) != (ssize_t)sizeof(line))
				return done;
			done += sizeof(line);
			if (kbps <= 0 && (done & 0xfffff) < sizeof(line) && flood_now() >= end)
				return done;
		}
		flood_sleep_until(t + step);
	}
	return done;
}

static int flood_child(int cpu, const char *path, double kbps, double seconds, int wfd)
{
	cpu_set_t set;
	uint64_t n;
	int fd;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set) < 0)
		return 1;
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "flood: open %s: %s\n", path, strerror(errno));
		return 1;
	}
	n = flood_marker_cpu(fd, kbps, seconds);
	close(fd);
	return write(wfd, &n, sizeof(n)) == sizeof(n) ? 0 : 1;
}

static int flood_marker(const char *path, double kbps, double seconds)
{
	int ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN), fds[FLOOD_MAX_CPUS][2];
	uint64_t total = 0;

	if (ncpu < 1 || ncpu > FLOOD_MAX_CPUS || seconds <= 0)
		return 2;
	for (int c = 0; c < ncpu; c++) {
		if (pipe(fds[c]) < 0)
			return 1;
		pid_t p = fork();
		if (p < 0)
			return 1;
		if (p == 0)
			_exit(flood_child(c, path, kbps, seconds, fds[c][1]));
		close(fds[c][1]);
	}
	printf("flood marker");
	for (int c = 0; c < ncpu; c++) {
		uint64_t n = 0;

		if (read(fds[c][0], &n, sizeof(n)) != sizeof(n))
			n = 0;
		printf(" cpu%d %llu", c, (unsigned long long)n);
		total += n;
	}
	while (wait(NULL) > 0)
		;
	printf(" total %llu secs %g\n", (unsigned long long)total, seconds);
	return 0;
}

static int flood_port(const char *path, long mib)
{
	static char buf[1 << 20];
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	double t0;
	uint64_t done = 0;

	if (fd < 0 || mib <= 0) {
		fprintf(stderr, "flood: open %s: %s\n", path, strerror(errno));
		return 1;
	}
	memset(buf, 0x5a, sizeof(buf));
	t0 = flood_now();
	for (long i = 0; i < mib; i++) {
		size_t off = 0;

		while (off < sizeof(buf)) {
			ssize_t w = write(fd, buf + off, sizeof(buf) - off);

			if (w <= 0) {
				fprintf(stderr, "flood: write %s: %s\n", path, strerror(errno));
				close(fd);
				return 1;
			}
			off += (size_t)w;
		}
		done += sizeof(buf);
	}
	double secs = flood_now() - t0;
	close(fd);
	printf("flood port bytes %llu secs %.3f mbps %.1f\n", (unsigned long long)done, secs,
	       (double)done / secs / 1e6);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 5 && strcmp(argv[1], "marker") == 0)
		return flood_marker(argv[2], atof(argv[3]), atof(argv[4]));
	if (argc == 4 && strcmp(argv[1], "port") == 0)
		return flood_port(argv[2], atol(argv[3]));
	fprintf(stderr, "usage: flood marker PATH KBPS SECONDS | flood port PATH MIB\n");
	return 2;
}
