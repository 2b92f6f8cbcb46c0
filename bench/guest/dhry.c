// SPDX-License-Identifier: GPL-2.0-only
/*
 * dhry: a dhrystone-like CPU-bound integer loop for the benchmark guest (static).
 * One child per online CPU, each pinned to its CPU, runs the loop for SECONDS and reports
 * its iteration count; the parent prints one line:
 *   dhry cpu0 N0 cpu1 N1 ... total T secs S
 * Usage: dhry SECONDS
 */
#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define DHRY_MAX_CPUS 64

struct dhry_rec {
	int a, b;
	char name[32];
};

static double dhry_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* One "dhrystone": integer arithmetic, a record copy, string compare, a branch. */
static int dhry_one(struct dhry_rec *r, struct dhry_rec *s, int i)
{
	int x = i * 3 + r->a;

	*s = *r;
	s->a = x % 17 + s->b;
	s->b = (x ^ s->a) & 0xff;
	if (memcmp(r->name, s->name, sizeof(r->name)) == 0)
		r->a = s->b + 1;
	else
		r->a = s->a - 1;
	return r->a;
}

static uint64_t dhry_loop(double seconds)
{
	struct dhry_rec r = { 1, 2, "DHRYSTONE PROGRAM, SOME STRING" }, s;
	volatile int sink = 0;
	double end = dhry_now() + seconds;
	uint64_t n = 0;

	for (;;) {
		for (int i = 0; i < 100000; i++)
			sink += dhry_one(&r, &s, i);
		n += 100000;
		if (dhry_now() >= end)
			return n;
	}
}

static int dhry_child(int cpu, double seconds, int wfd)
{
	cpu_set_t set;
	uint64_t n;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set) < 0) {
		fprintf(stderr, "dhry: pin to cpu%d: %s\n", cpu, strerror(errno));
		return 1;
	}
	n = dhry_loop(seconds);
	return write(wfd, &n, sizeof(n)) == sizeof(n) ? 0 : 1;
}

int main(int argc, char **argv)
{
	int ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN), fds[DHRY_MAX_CPUS][2];
	double seconds = argc > 1 ? atof(argv[1]) : 5.0;
	uint64_t total = 0;

	if (seconds <= 0 || ncpu < 1 || ncpu > DHRY_MAX_CPUS) {
		fprintf(stderr, "usage: dhry SECONDS (1..%d cpus)\n", DHRY_MAX_CPUS);
		return 2;
	}
	for (int c = 0; c < ncpu; c++) {
		if (pipe(fds[c]) < 0)
			return 1;
		pid_t p = fork();
		if (p < 0)
			return 1;
		if (p == 0)
			_exit(dhry_child(c, seconds, fds[c][1]));
		close(fds[c][1]);
	}
	printf("dhry");
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
