/* SPDX-License-Identifier: GPL-2.0-only */
/* start-daemon.c: what `start` does once its options are read, for one VM or each VM of a set. */
#pragma once

#include <stddef.h>
#include <sys/types.h>

struct start_opts;
/* Takes RUN/VM.pid's lock (after checking that the VM dir, sessions/, cache/ and the run dir are
 * root's and no other user's to change); a held lock means a session is running: said. The
 * lock's fd, or -errno. */
int start_lock(const struct start_opts *o);
/* The VM's lock, then its daemon in the background; *ret_fd reads its result (start_wait). */
int start_spawn(const struct start_opts *o, pid_t *ret_pid, int *ret_fd);
/* Relays the daemon's result (its session dir in dir); on failure prints the errors of its log,
 * each after "NAME: " when name (one of several VMs), the first in why: 0 or 1. */
int start_wait(int rfd, pid_t child, const char *name, char *dir, size_t dirsize, char *why, size_t whysize);
