/* SPDX-License-Identifier: GPL-2.0-only */
/* vmgroup.c: several VMs in one session (start --name A --name B ..., --all): the first VM that
 * starts (the leader) records the host for all; group.ini in its session dir names the set. */
#pragma once

#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>

#define VMGROUP_MAX_VMS 16 /* the merge's bound: a session dir and 15 --guest */
enum vmgroup_role { VMGROUP_NONE, VMGROUP_FAILED, VMGROUP_LEADER, VMGROUP_MEMBER }; /* NONE: not started yet */
struct vmgroup_vm {
	char name[64];
	enum vmgroup_role role;
	char dir[PATH_MAX];  /* its session dir; "" when it failed before having one */
	char why[512];       /* VMGROUP_FAILED: why it is not traced */
};
struct vmgroup {
	char id[40];
	char run_dir[PATH_MAX];
	char out[PATH_MAX];  /* start's -o, absolute; "" : stop's default */
	char state[16];      /* running, stopped, merged */
	unsigned n, leader;
	struct vmgroup_vm vm[VMGROUP_MAX_VMS];
};
const char *vmgroup_leader_dir(const struct vmgroup *g);
/* The set of leader_dir, loaded (free it); NULL (said) when its group.ini cannot be read. */
struct vmgroup *vmgroup_open(const char *leader_dir);
int vmgroup_write(const struct vmgroup *g);
int vmgroup_session_of(const char *run_dir, const char *name, char *dir, size_t size);
int vmgroup_load(const char *leader_dir, struct vmgroup *g);
/* The leader's session dir of NAME's group (NULL: of the only group running in run_dir):
 * 1 when there is one not yet merged, else 0. */
int vmgroup_find(const char *run_dir, const char *name, char *leader, size_t size);
/* --all: the names of every VM dir under root; -E2BIG past VMGROUP_MAX_VMS. */
int vmgroup_scan(const char *root, struct vmgroup *g);
/* One request to a VM's daemon: its reply (r 0) or why none came. */
struct vmgroup_call {
	char sock[PATH_MAX];
	const char *request;
	char *reply;
	size_t len;
	int r;
	pthread_t thread;
	bool started, asked; /* asked: the VM has a role in roles */
};
#define VMGROUP_ROLE(role) (1u << (role))
/* Sends request to every VM whose role is in roles (VMGROUP_ROLE bits) at once, each on its
 * own thread, and waits for every reply: an array of g->n (NULL: no memory). */
struct vmgroup_call *vmgroup_ask(const struct vmgroup *g, unsigned roles, const char *request);
void vmgroup_ask_free(const struct vmgroup *g, struct vmgroup_call *c);
/* Every VM's status under its name; 1 when a daemon did not answer. */
int vmgroup_status(const char *leader_dir, FILE *out);
/* Stops the members (all at once), then the leader; their replies to out (NULL: none). */
void vmgroup_stop_daemons(const struct vmgroup *g, bool verbose, FILE *out);
/* Stops the set and merges it into OUT (NULL: start's -o, else ./LEADER-group.data), printing
 * each VM's short summary and the merge's (verbose: the full ones; both kept in each
 * SESSION/stop-summary.txt): the exit status. */
int vmgroup_stop(const char *leader_dir, const char *out, int compress, bool verbose);
/* vmgroup-snapshot.c: a snapshot of every VM at once, merged into OUT (NULL: the default name
 * ./LEADER-group.snapshot-N.data): the exit status. */
int vmgroup_snapshot(const char *leader_dir, const char *out, int compress);
