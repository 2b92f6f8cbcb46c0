// SPDX-License-Identifier: GPL-2.0-only
/* Host CPU hog of the report e2e test: pinned to one host CPU at SCHED_FIFO, it burns N bursts
 * of B ms with G ms gaps and prints each burst's CLOCK_MONOTONIC start and end (ns), the times
 * host perf record -k CLOCK_MONOTONIC stamps, so the test knows the true preemptions.
 *   report-hog CPU N BURST_MS GAP_MS      prints "tid T", "ready NS" (pinned, at SCHED_FIFO: what
 *                                         ran before is its start-up), then "burst START END" lines */
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static uint64_t hog_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int main(int argc, char **argv)
{
	struct sched_param sp = { .sched_priority = 50 };
	uint64_t *t;
	cpu_set_t set;
	long n, burst, gap;
	volatile unsigned long x = 0;

	if (argc != 5) {
		fprintf(stderr, "usage: report-hog CPU N BURST_MS GAP_MS\n");
		return 2;
	}
	n = atol(argv[2]), burst = atol(argv[3]) * 1000000, gap = atol(argv[4]) * 1000;
	t = calloc((size_t)n * 2 + 1, sizeof(*t));
	CPU_ZERO(&set);
	CPU_SET(atoi(argv[1]), &set);
	if (!t || n <= 0 || sched_setaffinity(0, sizeof(set), &set) < 0 ||
	    sched_setscheduler(0, SCHED_FIFO, &sp) < 0) {
		perror("report-hog: cannot pin to the CPU at SCHED_FIFO (run as root)");
		return 1;
	}
	printf("tid %d\nready %llu\n", gettid(), (unsigned long long)hog_now());
	fflush(stdout);
	for (long i = 0; i < n; i++) {
		uint64_t end;

		usleep((useconds_t)gap);
		t[2 * i] = hog_now();
		for (end = t[2 * i] + (uint64_t)burst; (t[2 * i + 1] = hog_now()) < end;)
			x++;
	}
	for (long i = 0; i < n; i++) /* printed after the bursts: no I/O inside the measured spans */
		printf("burst %llu %llu\n", (unsigned long long)t[2 * i], (unsigned long long)t[2 * i + 1]);
	return 0;
}
