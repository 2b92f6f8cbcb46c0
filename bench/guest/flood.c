// SPDX-License-Identifier: GPL-2.0-only
/*
 * flood: event and byte producers for the benchmark guest (static).
 *   flood marker PATH KBPS SECONDS   one pinned child per online CPU writes 1000-byte lines
 *                                    into the trace_marker PATH at KBPS KB/s each (paced in
 *                                    10 ms steps; 0 = as fast as it can); prints
 *                                    "flood marker cpu0 BYTES ... total BYTES secs S"
 *   flood port PATH MIB [MBPS]       write()s MIB MiB in 1 MiB chunks into PATH (a virtio
 *                                    port), at most MBPS MB/s (paced in 10 ms steps; 0 or
 *                                    absent: as fast as it can); prints "flood port bytes B
 *                                    secs S mbps R cpu_s C" (C: its own user+system time)
 *   flood ports SECONDS [MBPS [KB]]  one pinned child per online CPU write()s KB KiB chunks
 *                                    (default 1024) into /dev/virtio-ports/trace-path-cpuN (N:
 *                                    its CPU) for SECONDS, at most MBPS MB/s each (0 or absent:
 *                                    as fast as it can): the port's floor beside a workload (cost.sh);
 *                                    prints "flood ports bytes B secs S mbps R cpu_s C" (C:
 *                                    the children's user+system time)
 *   flood write SECONDS              one pinned child per online CPU write()s 64 bytes into
 *                                    /dev/null as fast as it can (the traced workload of
 *                                    bench/guest/cost.sh: syscall events); prints "flood
 *                                    write total N secs S"
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
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

struct flood_job {
	const char *path; /* marker: the trace_marker file */
	double kbps, seconds;
	size_t chunk; /* ports: bytes a write() */
};

/* One child per online CPU, pinned, each running work(job); their counts into n[], the CPU
 * count into *ncpu. Returns 0, or the exit status main should give. */
static int flood_per_cpu(uint64_t (*work)(const struct flood_job *), const struct flood_job *job,
			 uint64_t n[FLOOD_MAX_CPUS], int *ncpu)
{
	int fds[FLOOD_MAX_CPUS][2];

	*ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN);
	if (*ncpu < 1 || *ncpu > FLOOD_MAX_CPUS || job->seconds <= 0)
		return 2;
	for (int c = 0; c < *ncpu; c++) {
		if (pipe(fds[c]) < 0)
			return 1;
		pid_t p = fork();
		if (p < 0)
			return 1;
		if (p == 0) {
			cpu_set_t set;
			uint64_t v;

			CPU_ZERO(&set);
			CPU_SET(c, &set);
			if (sched_setaffinity(0, sizeof(set), &set) < 0)
				_exit(1);
			v = work(job);
			_exit(write(fds[c][1], &v, sizeof(v)) == sizeof(v) ? 0 : 1);
		}
		close(fds[c][1]);
	}
	for (int c = 0; c < *ncpu; c++)
		if (read(fds[c][0], &n[c], sizeof(n[c])) != sizeof(n[c]))
			n[c] = 0;
	while (wait(NULL) > 0)
		;
	return 0;
}

static uint64_t flood_marker_work(const struct flood_job *job)
{
	int fd = open(job->path, O_WRONLY | O_CLOEXEC);
	uint64_t n;

	if (fd < 0) {
		fprintf(stderr, "flood: open %s: %s\n", job->path, strerror(errno));
		return 0;
	}
	n = flood_marker_cpu(fd, job->kbps, job->seconds);
	close(fd);
	return n;
}

static int flood_marker(const char *path, double kbps, double seconds)
{
	const struct flood_job job = { .path = path, .kbps = kbps, .seconds = seconds };
	uint64_t n[FLOOD_MAX_CPUS], total = 0;
	int ncpu, r = flood_per_cpu(flood_marker_work, &job, n, &ncpu);

	if (r)
		return r;
	printf("flood marker");
	for (int c = 0; c < ncpu; c++) {
		printf(" cpu%d %llu", c, (unsigned long long)n[c]);
		total += n[c];
	}
	printf(" total %llu secs %g\n", (unsigned long long)total, seconds);
	return 0;
}

static double flood_cpu_s(int who)
{
	struct rusage ru;

	if (getrusage(who, &ru) < 0)
		return -1;
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
	       (double)ru.ru_stime.tv_usec / 1e6;
}

static uint64_t flood_write_work(const struct flood_job *job)
{
	char buf[64] = { 0 };
	double end = flood_now() + job->seconds;
	uint64_t n = 0;
	int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);

	if (fd < 0)
		return 0;
	do {
		for (int i = 0; i < 256 && write(fd, buf, sizeof(buf)) == (ssize_t)sizeof(buf); i++)
			n++;
	} while (n % 256 == 0 && flood_now() < end);
	close(fd);
	return n;
}

static int flood_write(double seconds)
{
	const struct flood_job job = { .seconds = seconds };
	uint64_t n[FLOOD_MAX_CPUS], total = 0;
	int ncpu, r = flood_per_cpu(flood_write_work, &job, n, &ncpu);

	if (r)
		return r;
	for (int c = 0; c < ncpu; c++)
		total += n[c];
	printf("flood write total %llu secs %g\n", (unsigned long long)total, seconds);
	return 0;
}

/* One pinned child of flood ports: job->chunk write()s into its CPU's port until the deadline. */
static uint64_t flood_ports_work(const struct flood_job *job)
{
	static char buf[1 << 20];
	char path[64];
	double t0 = flood_now(), end = t0 + job->seconds;
	uint64_t done = 0;
	int fd;

	snprintf(path, sizeof(path), "/dev/virtio-ports/trace-path-cpu%d", sched_getcpu());
	if ((fd = open(path, O_WRONLY | O_CLOEXEC)) < 0) {
		fprintf(stderr, "flood: open %s: %s\n", path, strerror(errno));
		return 0;
	}
	memset(buf, 0x5a, sizeof(buf));
	while (flood_now() < end) {
		/* the whole chunk, then pace: a port write() takes at most 32 KiB (virtio_console),
		 * and pacing after each one made every 32 KiB a sleep and a wake-up whatever the chunk */
		for (size_t off = 0; off < job->chunk;) {
			ssize_t w = write(fd, buf + off, job->chunk - off);

			if (w <= 0)
				goto out;
			off += (size_t)w;
			done += (uint64_t)w;
		}
		if (job->kbps > 0 && flood_now() < t0 + (double)done / (job->kbps * 1e3))
			flood_sleep_until(t0 + (double)done / (job->kbps * 1e3));
	}
out:
	close(fd);
	return done;
}

static int flood_ports(double seconds, double mbps, long kb)
{
	const struct flood_job job = { .kbps = mbps * 1e3, .seconds = seconds,
				       .chunk = kb > 0 && kb <= 1024 ? (size_t)kb << 10 : 1u << 20 };
	uint64_t n[FLOOD_MAX_CPUS], total = 0;
	double t0 = flood_now(), secs;
	int ncpu, r = flood_per_cpu(flood_ports_work, &job, n, &ncpu);

	if (r)
		return r;
	secs = flood_now() - t0;
	for (int c = 0; c < ncpu; c++)
		total += n[c];
	printf("flood ports bytes %llu secs %.3f mbps %.1f cpu_s %.3f\n", (unsigned long long)total, secs,
	       (double)total / secs / 1e6, flood_cpu_s(RUSAGE_CHILDREN));
	return total ? 0 : 1;
}

static int flood_port(const char *path, long mib, double mbps)
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
		if (mbps > 0 && flood_now() < t0 + (double)done / (mbps * 1e6))
			flood_sleep_until(t0 + (double)done / (mbps * 1e6));
	}
	double secs = flood_now() - t0;
	close(fd);
	printf("flood port bytes %llu secs %.3f mbps %.1f cpu_s %.3f\n", (unsigned long long)done, secs,
	       (double)done / secs / 1e6, flood_cpu_s(RUSAGE_SELF));
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 5 && strcmp(argv[1], "marker") == 0)
		return flood_marker(argv[2], atof(argv[3]), atof(argv[4]));
	if ((argc == 4 || argc == 5) && strcmp(argv[1], "port") == 0)
		return flood_port(argv[2], atol(argv[3]), argc == 5 ? atof(argv[4]) : 0);
	if (argc >= 3 && argc <= 5 && strcmp(argv[1], "ports") == 0)
		return flood_ports(atof(argv[2]), argc >= 4 ? atof(argv[3]) : 0, argc == 5 ? atol(argv[4]) : 1024);
	if (argc == 3 && strcmp(argv[1], "write") == 0)
		return flood_write(atof(argv[2]));
	fprintf(stderr, "usage: flood marker PATH KBPS SECONDS | flood port PATH MIB [MBPS] | flood ports SECONDS [MBPS [KB]] | flood write SECONDS\n");
	return 2;
}
