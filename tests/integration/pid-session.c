// SPDX-License-Identifier: GPL-2.0-only
/* Bench tool: writes a one-vCPU guest session of sched_switch events over many pids
 * (tests/pid-session.c), for bench/hash-flood.sh.
 *   pid-session OUTDIR colliding|random NPIDS PASSES */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pid-session.h"
#include "util.h"

int main(int argc, char **argv)
{
	_cleanup_free_ int32_t *pids = NULL;
	unsigned long n = argc == 5 ? strtoul(argv[3], NULL, 10) : 0, passes = argc == 5 ? strtoul(argv[4], NULL, 10) : 0;
	bool colliding = argc == 5 && !strcmp(argv[2], "colliding");
	int r;

	if (argc != 5 || (!colliding && strcmp(argv[2], "random")) || !n || n >= (1u << 17) || !passes) {
		fprintf(stderr, "usage: pid-session OUTDIR colliding|random NPIDS(1..131071) PASSES(>0)\n");
		return 2;
	}
	if (!(pids = calloc(n, sizeof(*pids))))
		return 1;
	if (colliding)
		pid_session_colliding(pids, n);
	else
		pid_session_random(pids, n, 42);
	if ((r = pid_session_write(argv[1], pids, n, (unsigned)passes)) < 0) {
		fprintf(stderr, "pid-session: cannot write %s: %s\n", argv[1], strerror(-r));
		return 1;
	}
	return 0;
}
