// SPDX-License-Identifier: GPL-2.0-only
/* Test tool: stands in for QEMU's vCPU threads on the host. Starts N threads named "CPU n/KVM"
 * (as QEMU -name debug-threads=on does; "worker n" with --no-names) that hop between host CPUs,
 * spin briefly and sleep, so host sched_switch shows them switching in and out on several CPUs.
 * Prints "ready <pid>" once all threads are named; exits on SIGTERM/SIGINT.
 *   fake-qemu N [--no-names | --tcg]   (--tcg: "CPU n/TCG", as under TCG) */
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

struct vcpu {
	pthread_t th;
	int n;
	bool names;
	const char *accel;
	atomic_bool *stop;
	atomic_int *named;
};

static void spin_us(long us)
{
	struct timespec a, b;

	clock_gettime(CLOCK_MONOTONIC, &a);
	do
		clock_gettime(CLOCK_MONOTONIC, &b);
	while ((b.tv_sec - a.tv_sec) * 1000000L + (b.tv_nsec - a.tv_nsec) / 1000 < us);
}

static void *vcpu_run(void *arg)
{
	struct vcpu *v = arg;
	long ncpus = sysconf(_SC_NPROCESSORS_ONLN);
	char name[16];
	struct timespec nap = { 0, 4000000 }; /* few events: other tests trace this host too */

	snprintf(name, sizeof(name), v->names ? "CPU %d/%s" : "worker %d", v->n, v->accel);
	prctl(PR_SET_NAME, name);
	atomic_fetch_add(v->named, 1);
	for (long i = v->n; !atomic_load(v->stop); i++) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET((int)(i % ncpus), &set);
		sched_setaffinity(0, sizeof(set), &set);
		spin_us(300);
		nanosleep(&nap, NULL);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 0, sig;
	bool names = !(argc > 2 && !strcmp(argv[2], "--no-names"));
	const char *accel = argc > 2 && !strcmp(argv[2], "--tcg") ? "TCG" : "KVM";
	atomic_bool stop = false;
	atomic_int named = 0;
	struct vcpu *v;
	sigset_t set;

	if (n < 1 || n > 64) {
		fprintf(stderr, "usage: fake-qemu N [--no-names | --tcg]   (1 <= N <= 64)\n");
		return 2;
	}
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	v = calloc((size_t)n, sizeof(*v));
	if (!v)
		return 1;
	for (int i = 0; i < n; i++) {
		v[i] = (struct vcpu){ .n = i, .names = names, .accel = accel, .stop = &stop, .named = &named };
		if (pthread_create(&v[i].th, NULL, vcpu_run, &v[i]) != 0)
			return 1;
	}
	while (atomic_load(&named) < n)
		sched_yield();
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	sigwait(&set, &sig);
	atomic_store(&stop, true);
	for (int i = 0; i < n; i++)
		pthread_join(v[i].th, NULL);
	free(v);
	return 0;
}
