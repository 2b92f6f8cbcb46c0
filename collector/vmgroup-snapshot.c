// SPDX-License-Identifier: GPL-2.0-only
/* `snapshot` of several VMs in one session (vmgroup.c): every traced VM's daemon is asked at
 * once, each makes SESSION/snapshot-N as for one VM (its agent flushed, its probe burst,
 * daemon/daemon-snapshot.c), and the snapshot dirs are merged into one perf.data like the
 * set's stop: the leader's (whose daemon records the host: the complete prefix of its host.data,
 * perf pinged on its control fifo, is the set's host data) with --guest each member's. A VM whose snapshot fails is named and left out; the
 * others' snapshot is written, and every VM goes on tracing. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "collector.h"
#include "log.h"
#include "merge.h"
#include "util.h"
#include "vmgroup.h"

/* One VM's part: its snapshot dir, or why it has none. */
struct vmgroup_snap {
	char dir[PATH_MAX];
	char host[256]; /* its daemon's "host:" word: dump, or why there is no host data */
	char why[PATH_MAX + 256];
};

/* The reply's snapshot dir must be SESSION/snapshot-N of the VM's own session and a root
 * directory no one else may change: this process reads it as root and removes it. */
static int vmgroup_snap_check(const struct vmgroup_vm *vm, struct vmgroup_snap *s)
{
	size_t l = strlen(vm->dir);
	const char *n = s->dir + l + strlen("/snapshot-");
	char why[PATH_MAX + 96];

	if (strncmp(s->dir, vm->dir, l) || strncmp(s->dir + l, "/snapshot-", strlen("/snapshot-")) || !*n ||
	    n[strspn(n, "0123456789")]) {
		snprintf(s->why, sizeof(s->why), "its daemon named %.1024s, not a snapshot dir of its session %.1024s",
			 s->dir, vm->dir);
		return -EINVAL;
	}
	if (util_trusted_dir(s->dir, why, sizeof(why)) < 0) {
		snprintf(s->why, sizeof(s->why), "%.1024s is not safe for root to read and remove: %.1024s", s->dir, why);
		return -EPERM;
	}
	return 0;
}

/* VM's answer to "snapshot": 0 with s->dir, else s->why. */
static int vmgroup_snap_reply(const struct vmgroup_vm *vm, const struct vmgroup_call *c, struct vmgroup_snap *s)
{
	const char *err = c->reply && !strncmp(c->reply, "error: ", 7) ? c->reply + 7 : NULL;
	char file[PATH_MAX];
	int r;

	if (c->r < 0) {
		snprintf(s->why, sizeof(s->why), "its daemon did not answer at %.1024s: %s", c->sock, strerror(-c->r));
		return c->r;
	}
	snapshot_dir_reply(c->reply, "snapshot-file: ", file, sizeof(file));
	snapshot_dir_reply(c->reply, "snapshot: ", s->dir, sizeof(s->dir));
	snapshot_dir_reply(c->reply, "host: ", s->host, sizeof(s->host));
	if (file[0]) { /* a live merge's cut: this VM's guest alone (the set has no live merge) */
		snprintf(s->why, sizeof(s->why), "its daemon cut its snapshot from its own live merge: %.1024s", file);
		return -EINVAL;
	}
	if (!s->dir[0]) {
		if (!err)
			err = "its daemon's reply names no snapshot dir";
		snprintf(s->why, sizeof(s->why), "%.*s", (int)MIN(strcspn(err, "\n"), 1024), err);
		return -EBADMSG;
	}
	if ((r = vmgroup_snap_check(vm, s)) < 0)
		s->dir[0] = '\0';
	return r;
}

/* Asks every traced VM at once; how many gave a snapshot dir. */
static unsigned vmgroup_snap_ask(const struct vmgroup *g, struct vmgroup_snap *s)
{
	uint64_t t0 = util_now_ns(CLOCK_MONOTONIC);
	struct vmgroup_call *c = vmgroup_ask(g, VMGROUP_ROLE(VMGROUP_LEADER) | VMGROUP_ROLE(VMGROUP_MEMBER), "snapshot");
	unsigned ok = 0, asked = 0;

	for (unsigned i = 0; i < g->n; i++) {
		if (g->vm[i].role == VMGROUP_FAILED)
			snprintf(s[i].why, sizeof(s[i].why), "not traced: %.1024s", g->vm[i].why);
		else if (!c)
			snprintf(s[i].why, sizeof(s[i].why), "not asked: %s", strerror(ENOMEM));
		else if (c[i].asked && (asked++, vmgroup_snap_reply(&g->vm[i], &c[i], &s[i]) == 0))
			ok++;
	}
	vmgroup_ask_free(g, c);
	printf("group %s: %u of %u VMs' snapshots taken, asked at once, in %.2f s\n", g->id, ok, asked,
	       (double)(util_now_ns(CLOCK_MONOTONIC) - t0) / 1e9);
	for (unsigned i = 0; i < g->n; i++)
		if (!s[i].dir[0] && g->vm[i].role != VMGROUP_FAILED)
			log_error("%s: no snapshot: %s", g->vm[i].name, s[i].why);
	return ok;
}

/* The set's host data: the leader's snapshot's, the only one (a member records no host). */
static const char *vmgroup_snap_host(const struct vmgroup *g, struct vmgroup_snap *s, char *host, size_t size,
				     uint64_t *prefix)
{
	const struct vmgroup_snap *l = &s[g->leader];
	int r;

	if (!l->dir[0]) {
		printf("host: none (%s records the host and has no snapshot)\n", g->vm[g->leader].name);
		return NULL;
	}
	if (!strcmp(l->host, "prefix")) { /* the leader's host.data, as far as perf has written it */
		r = snapshot_dir_host_prefix(l->dir, host, size, prefix);
		if (r == 0) {
			printf("host: %s's host.data, its first %llu bytes (host perf acked a ping after them)\n",
			       g->vm[g->leader].name, (unsigned long long)*prefix);
			return host;
		}
		log_warn("%s's host perf did not say how far host.data is complete (%s): the snapshot holds the guests only",
			 g->vm[g->leader].name, strerror(-r));
		return NULL;
	}
	if (strstr(l->host, "written at stop only")) { /* a leader's daemon before host: prefix */
		printf("host: none (the set's host recording, %s's, is written at stop only: this snapshot holds the "
		       "guests' events)\n", g->vm[g->leader].name);
		return NULL;
	}
	if (strcmp(l->host, "dump")) {
		printf("host: %s\n", l->host[0] ? l->host : "none");
		return NULL;
	}
	r = snapshot_dir_host_dump(l->dir, host, size);
	if (r == 0)
		return host;
	log_warn("host perf wrote no dump (%s): the snapshot holds the guests only", strerror(-r));
	return NULL;
}

/* The snapshot dirs in the merge's order: the leader's (or the first VM's that has one),
 * then the others' (--guest); how many. */
static unsigned vmgroup_snap_dirs(const struct vmgroup *g, const struct vmgroup_snap *s, const char **dirs)
{
	unsigned n = 0;

	if (s[g->leader].dir[0])
		dirs[n++] = s[g->leader].dir;
	for (unsigned i = 0; i < g->n; i++)
		if (s[i].dir[0] && i != g->leader)
			dirs[n++] = s[i].dir;
	return n;
}

static int vmgroup_snap_merge(const struct vmgroup *g, struct vmgroup_snap *s, const char *path, int compress)
{
	const char *dirs[VMGROUP_MAX_VMS];
	char host[PATH_MAX + 16];
	unsigned n = vmgroup_snap_dirs(g, s, dirs);
	struct merge_options mo = { .session_dir = dirs[0], .output = path, .zstd_level = merge_zstd_level(dirs[0], compress),
				    .snapshot = true, .guest_dirs = dirs + 1, .n_guest_dirs = n - 1 };

	mo.host_data = vmgroup_snap_host(g, s, host, sizeof(host), &mo.host_prefix);
	fflush(stdout);
	return merge_run(&mo);
}

/* After the merge: where it went and which VMs it lacks, or how to merge the dirs again. */
static void vmgroup_snap_said(const struct vmgroup *g, const struct vmgroup_snap *s, const char *path, int r)
{
	char missing[1024] = "";
	size_t at = 0;

	for (unsigned i = 0; i < g->n; i++)
		if (!s[i].dir[0] && g->vm[i].role != VMGROUP_FAILED)
			at += (size_t)snprintf(missing + at, at < sizeof(missing) ? sizeof(missing) - at : 0, "%s%s",
					       at ? ", " : "", g->vm[i].name);
	if (r < 0) {
		const char *dirs[VMGROUP_MAX_VMS];
		unsigned n = vmgroup_snap_dirs(g, s, dirs);

		log_error("the snapshot's merge failed: %s; the snapshots' files stay (merge them with the command below)",
			  strerror(-r));
		fprintf(stderr, "trace-collector merge %s", dirs[0]);
		for (unsigned i = 1; i < n; i++)
			fprintf(stderr, " --guest %s", dirs[i]);
		fprintf(stderr, " -o %s\n", path);
		return;
	}
	if (missing[0])
		printf("snapshot: %s (tracing goes on) WITHOUT %s: no snapshot (said above)\n", path, missing);
	else
		printf("snapshot: %s (tracing goes on; every VM of the set)\n", path);
}

int vmgroup_snapshot(const char *leader_dir, const char *out, int compress)
{
	_cleanup_free_ struct vmgroup *g = vmgroup_open(leader_dir);
	_cleanup_free_ struct vmgroup_snap *s = NULL;
	const char *dirs[VMGROUP_MAX_VMS];
	char path[PATH_MAX + 64];
	bool missing = false;
	int r;

	if (!g)
		return 1;
	if (!(s = calloc(g->n, sizeof(*s))))
		return 1;
	if (!vmgroup_snap_ask(g, s)) {
		log_error("no VM of the set gave a snapshot: nothing written (the set goes on tracing)");
		return 1;
	}
	for (unsigned i = 0; i < g->n; i++) /* a VM not traced since start is not missed */
		missing |= !s[i].dir[0] && g->vm[i].role != VMGROUP_FAILED;
	vmgroup_snap_dirs(g, s, dirs); /* the default name: the merge's first dir's snapshot-N */
	if (out)
		snprintf(path, sizeof(path), "%s", out);
	else
		snprintf(path, sizeof(path), "%s-group.%s.data", g->vm[g->leader].name, strrchr(dirs[0], '/') + 1);
	r = vmgroup_snap_merge(g, s, path, compress);
	vmgroup_snap_said(g, s, path, r);
	if (r < 0)
		return 1;
	missing |= r > 0;
	for (unsigned i = 0; i < g->n; i++)
		if (s[i].dir[0] && (r = snapshot_dir_remove(s[i].dir)) < 0)
			log_warn("cannot remove %s: %s", s[i].dir, strerror(-r));
	return missing ? 3 : 0; /* 3: written, a VM's clock unaligned or a VM missing */
}
