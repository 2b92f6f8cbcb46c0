/* SPDX-License-Identifier: GPL-2.0-only */
/* A synthetic guest session whose sched_switch events name many pids: for the hash-flood check
 * in test-hash and the benchmark bench/hash-flood.sh (through tests/integration/pid-session). */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* n pids the merge's old task table put in one cluster: groups of 16384 sharing their low 17
 * bits (the most a positive int32 allows), the groups' slots adjacent. */
void pid_session_colliding(int32_t *pids, size_t n);
/* n distinct random positive pids (a fixed seed: the same list each time). */
void pid_session_random(int32_t *pids, size_t n, uint32_t seed);
/* The comm the session gives pids[i]: "t<i>". */
void pid_session_comm(size_t i, char comm[16]);
/* Writes DIR (made) as one-vCPU session: passes × n sched_switch events, event k switching
 * from pids[(k-1) % n] to pids[k % n], each named by pid_session_comm. 0 or -errno. */
int pid_session_write(const char *dir, const int32_t *pids, size_t n, unsigned passes);
