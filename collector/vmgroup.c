// SPDX-License-Identifier: GPL-2.0-only
/* Several VMs in one session (start --name A --name B ..., --all): one daemon per VM as for one
 * VM, but only the first that starts (the leader) records the host: its `perf record -a` sees
 * every guest. The others name its host.data and merge nothing themselves. The set is
 * described by group.ini in the leader's session dir; status and stop go over every VM, stop
 * ends the members first and the leader last (its recording covers every guest to the end),
 * then merges once: `trace-collector merge LEADER_DIR --guest DIR ... -o OUT`. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "collector.h"
#include "ctlsock.h"
#include "log.h"
#include "ports.h"
#include "session.h"
#include "util.h"
#include "vmgroup.h"

#define VMGROUP_INI "group.ini"
#define VMGROUP_INI_MAX (1u << 20)

static const char *const vmgroup_roles[] = {
	[VMGROUP_NONE] = "none", [VMGROUP_FAILED] = "failed", [VMGROUP_LEADER] = "leader", [VMGROUP_MEMBER] = "member",
};

const char *vmgroup_leader_dir(const struct vmgroup *g)
{
	return g->vm[g->leader].dir;
}

/* DIR/group.ini written whole (tmp + fsync + rename) in the leader's session dir, a root
 * directory no one else may write (docs/security.md): checked, and nothing followed. */
static int vmgroup_ini_replace(const char *dir, const char *text, size_t len)
{
	char why[PATH_MAX + 96];

	if (util_trusted_dir(dir, why, sizeof(why)) < 0) {
		log_error("session dir %s is not safe for the root daemon to write in: %s", dir, why);
		return -EPERM;
	}
	return util_replace_file(dir, VMGROUP_INI, text, len);
}

int vmgroup_write(const struct vmgroup *g)
{
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	int r;

	if (!f)
		return -ENOMEM;
	fprintf(f, "group=%s\nleader=%s\nrun_dir=%s\noutput=%s\nstate=%s\nvms=%u\n", g->id, g->vm[g->leader].name,
		g->run_dir, g->out, g->state, g->n);
	for (unsigned i = 0; i < g->n; i++)
		fprintf(f, "vm=%s %s %s\n", g->vm[i].name, vmgroup_roles[g->vm[i].role], g->vm[i].dir[0] ? g->vm[i].dir : "-");
	for (unsigned i = 0; i < g->n; i++)
		if (g->vm[i].role == VMGROUP_FAILED)
			fprintf(f, "why_%s=%s\n", g->vm[i].name, g->vm[i].why);
	if (fclose(f) != 0)
		return -ENOMEM;
	r = vmgroup_ini_replace(vmgroup_leader_dir(g), text, len);
	if (r < 0)
		log_error("cannot write %s/" VMGROUP_INI ": %s", vmgroup_leader_dir(g), strerror(-r));
	return r;
}

/* One "vm=NAME ROLE DIR" line. */
static int vmgroup_parse_vm(struct vmgroup *g, const char *v, size_t n)
{
	char line[PATH_MAX + 128], *role, *dir;
	struct vmgroup_vm *vm;

	if (g->n >= VMGROUP_MAX_VMS || n >= sizeof(line))
		return -EBADMSG;
	memcpy(line, v, n);
	line[n] = '\0';
	role = strchr(line, ' ');
	dir = role ? strchr(role + 1, ' ') : NULL;
	if (!dir || role - line >= (ptrdiff_t)sizeof(vm->name))
		return -EBADMSG;
	*role++ = *dir++ = '\0';
	vm = &g->vm[g->n];
	snprintf(vm->name, sizeof(vm->name), "%.63s", line);
	snprintf(vm->dir, sizeof(vm->dir), "%s", strcmp(dir, "-") ? dir : "");
	vm->role = !strcmp(role, "leader") ? VMGROUP_LEADER : !strcmp(role, "member") ? VMGROUP_MEMBER : VMGROUP_FAILED;
	if (vm->role == VMGROUP_LEADER)
		g->leader = g->n;
	g->n++;
	return 0;
}

static void vmgroup_parse_line(struct vmgroup *g, const char *line, size_t n)
{
	const char *eq = memchr(line, '=', n);
	size_t k = eq ? (size_t)(eq - line) : 0, vl = eq ? n - k - 1 : 0;
	const char *v = eq ? eq + 1 : NULL;

#define VMGROUP_KEY(name, buf) \
	if (k == strlen(name) && !memcmp(line, name, k)) { snprintf(buf, sizeof(buf), "%.*s", (int)vl, v); return; }
	if (!eq)
		return;
	VMGROUP_KEY("group", g->id)
	VMGROUP_KEY("run_dir", g->run_dir)
	VMGROUP_KEY("output", g->out)
	VMGROUP_KEY("state", g->state)
#undef VMGROUP_KEY
	if (k == 2 && !memcmp(line, "vm", 2)) {
		vmgroup_parse_vm(g, v, vl);
		return;
	}
	for (unsigned i = 0; i < g->n; i++)
		if (k == 4 + strlen(g->vm[i].name) && !memcmp(line, "why_", 4) && !memcmp(line + 4, g->vm[i].name, k - 4))
			snprintf(g->vm[i].why, sizeof(g->vm[i].why), "%.*s", (int)vl, v);
}

int vmgroup_load(const char *leader_dir, struct vmgroup *g)
{
	_cleanup_free_ char *text = NULL;
	char path[PATH_MAX + 32];
	int r;

	*g = (struct vmgroup){ 0 };
	g->leader = VMGROUP_MAX_VMS;
	snprintf(path, sizeof(path), "%s/" VMGROUP_INI, leader_dir);
	r = util_read_file(path, VMGROUP_INI_MAX, &text, NULL);
	if (r < 0)
		return r;
	for (char *p = text; *p;) {
		size_t n = strcspn(p, "\n");

		vmgroup_parse_line(g, p, n);
		p += n + (p[n] == '\n');
	}
	if (!g->n || g->leader >= g->n || !g->id[0] || strcmp(g->vm[g->leader].dir, leader_dir))
		return -EBADMSG;
	return 0;
}

/* RUN/NAME.pid's second line: the session dir of NAME's last session (a link there is not followed). */
int vmgroup_session_of(const char *run_dir, const char *name, char *dir, size_t size)
{
	char path[PATH_MAX + 80], text[PATH_MAX + 32];
	_cleanup_close_ int fd = -1;
	ssize_t n;
	char *nl;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s.pid", run_dir, name) >= sizeof(path))
		return -ENAMETOOLONG;
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, text, sizeof(text) - 1);
	if (n <= 0)
		return -ENOENT;
	text[n] = '\0';
	nl = strchr(text, '\n');
	if (!nl || !nl[1])
		return -ENOENT;
	nl++;
	nl[strcspn(nl, "\n")] = '\0';
	return (size_t)snprintf(dir, size, "%s", nl) < size ? 0 : -ENAMETOOLONG;
}

/* NAME's last session's leader dir when it is in a group not yet merged: 1, else 0. */
static int vmgroup_find_name(const char *run_dir, const char *name, char *leader, size_t size)
{
	char dir[PATH_MAX], id[64], state[16];
	_cleanup_free_ struct vmgroup *g = NULL;

	if (vmgroup_session_of(run_dir, name, dir, sizeof(dir)) < 0 || session_ini_get(dir, "group", id, sizeof(id)) < 0 ||
	    !id[0])
		return 0;
	if (session_ini_get(dir, "group_leader", leader, size) < 0 || !leader[0])
		snprintf(leader, size, "%s", dir);
	g = malloc(sizeof(*g));
	if (!g || vmgroup_load(leader, g) < 0 || strcmp(g->id, id))
		return 0; /* a start that failed (group.ini is written once the set runs) */
	snprintf(state, sizeof(state), "%s", g->state);
	return strcmp(state, "merged") ? 1 : 0;
}

struct vmgroup_found {
	const char *run_dir;
	char *leader, first[PATH_MAX];
	size_t size;
	unsigned n;
};

static int vmgroup_found_one(const char *vm, void *ud)
{
	struct vmgroup_found *f = ud;

	if (vmgroup_find_name(f->run_dir, vm, f->leader, f->size) != 1 || (f->n++ && strcmp(f->first, f->leader)))
		return 1; /* a session of no group, or of another */
	snprintf(f->first, sizeof(f->first), "%s", f->leader);
	return 0;
}

int vmgroup_find(const char *run_dir, const char *name, char *leader, size_t size)
{
	struct vmgroup_found f = { .run_dir = run_dir, .leader = leader, .size = size };

	if (name)
		return vmgroup_find_name(run_dir, name, leader, size);
	/* No --name: the group when every running session in run_dir belongs to one. */
	return ctlsock_each(run_dir, vmgroup_found_one, &f) == 0 && f.n > 0;
}

/* A VM dir as setup makes it: the FIFO ports, or the sock/ dir QEMU makes its sockets in. */
static bool vmgroup_is_vm_dir(const char *root, const char *name)
{
	char path[PATH_MAX + 300];
	enum port_kind kind;
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s/" PORT_SOCK_DIR, root, name);
	if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode))
		return true;
	snprintf(path, sizeof(path), "%s/%s", root, name);
	return ports_detect(path, &kind) == 0;
}

/* --all: every VM dir under root, by name. */
int vmgroup_scan(const char *root, struct vmgroup *g)
{
	struct dirent **list = NULL;
	int n = scandir(root, &list, NULL, alphasort);

	if (n < 0)
		return -errno;
	g->n = 0;
	for (int i = 0; i < n; i++) {
		const char *name = list[i]->d_name;

		if (name[0] != '.' && strlen(name) < sizeof(g->vm[0].name) && vmgroup_is_vm_dir(root, name)) {
			if (g->n < VMGROUP_MAX_VMS)
				memcpy(g->vm[g->n].name, name, strlen(name) + 1); /* shorter: checked above */
			g->n++;
		}
		free(list[i]);
	}
	free(list);
	return g->n > VMGROUP_MAX_VMS ? -E2BIG : 0;
}

static void *vmgroup_call_run(void *arg)
{
	struct vmgroup_call *c = arg;
	FILE *f = open_memstream(&c->reply, &c->len);

	c->r = f ? ctlsock_request(c->sock, c->request, f, NULL, 0) : -ENOMEM;
	if (f)
		fclose(f);
	return NULL;
}

/* A stop reply: its short part printed (verbose: the full one), the full one kept in the VM's
 * stop-summary.txt; a status reply printed as it is. */
static void vmgroup_reply(const struct vmgroup_vm *vm, const char *request, const char *reply, bool verbose, FILE *out)
{
	FILE *f;

	if (strcmp(request, "stop")) {
		fputs(reply, out);
		return;
	}
	f = stop_summary_open(vm->dir, true);
	stop_summary_reply(reply, verbose, out, f);
	if (f)
		fclose(f);
}

struct vmgroup_call *vmgroup_ask(const struct vmgroup *g, unsigned roles, const char *request)
{
	struct vmgroup_call *c = calloc(g->n, sizeof(*c));

	if (!c)
		return NULL;
	for (unsigned i = 0; i < g->n; i++) {
		c[i].r = -ENOENT;
		if (!(roles & VMGROUP_ROLE(g->vm[i].role)))
			continue;
		c[i].asked = true;
		c[i].request = request;
		c[i].r = ctlsock_path(g->run_dir, g->vm[i].name, c[i].sock, sizeof(c[i].sock));
		if (c[i].r == 0)
			c[i].started = pthread_create(&c[i].thread, NULL, vmgroup_call_run, &c[i]) == 0;
		if (c[i].r == 0 && !c[i].started)
			vmgroup_call_run(&c[i]);
	}
	for (unsigned i = 0; i < g->n; i++)
		if (c[i].started)
			pthread_join(c[i].thread, NULL);
	return c;
}

void vmgroup_ask_free(const struct vmgroup *g, struct vmgroup_call *c)
{
	for (unsigned i = 0; c && i < g->n; i++)
		free(c[i].reply);
	free(c);
}

/* Sends request to the VMs of role (a stop: members all at once, then the leader), and prints
 * each reply under its VM's name to out (NULL: not printed). Returns how many did not answer. */
static unsigned vmgroup_call(const struct vmgroup *g, enum vmgroup_role role, const char *request, bool verbose,
			     FILE *out)
{
	struct vmgroup_call *c = vmgroup_ask(g, VMGROUP_ROLE(role), request);
	unsigned bad = 0;

	if (!c)
		return g->n;
	for (unsigned i = 0; i < g->n; i++) {
		if (!c[i].asked)
			continue;
		if (out)
			fprintf(out, "== %s: %s ==\n", g->vm[i].name, role == VMGROUP_LEADER ? "records the host" : "guest");
		if (c[i].r < 0) {
			bad++;
			if (out)
				fprintf(out, "no answer from its daemon at %s: %s (session %s: merged as it is)\n", c[i].sock,
					strerror(-c[i].r), g->vm[i].dir);
		} else if (out && c[i].reply) {
			vmgroup_reply(&g->vm[i], request, c[i].reply, verbose, out);
		}
	}
	vmgroup_ask_free(g, c);
	if (out)
		fflush(out);
	return bad;
}

struct vmgroup *vmgroup_open(const char *leader_dir)
{
	struct vmgroup *g = malloc(sizeof(*g));
	int r = g ? vmgroup_load(leader_dir, g) : -ENOMEM;

	if (r < 0) {
		log_error("cannot read the group of VMs in %s/" VMGROUP_INI ": %s", leader_dir, strerror(-r));
		free(g);
		return NULL;
	}
	return g;
}

int vmgroup_status(const char *leader_dir, FILE *out)
{
	_cleanup_free_ struct vmgroup *g = vmgroup_open(leader_dir);
	unsigned bad, traced = 0;

	if (!g)
		return 1;

	for (unsigned i = 0; i < g->n; i++)
		traced += g->vm[i].role != VMGROUP_FAILED;
	fprintf(out, "group %s: %u of %u VMs traced, host recorded by %s's session (%s)\n", g->id, traced, g->n,
		g->vm[g->leader].name, vmgroup_leader_dir(g));
	for (unsigned i = 0; i < g->n; i++)
		if (g->vm[i].role == VMGROUP_FAILED)
			fprintf(out, "== %s: NOT TRACED: %s ==\n", g->vm[i].name, g->vm[i].why);
	bad = vmgroup_call(g, VMGROUP_LEADER, "status", false, out) + vmgroup_call(g, VMGROUP_MEMBER, "status", false, out);
	return bad ? 1 : 0;
}

void vmgroup_stop_daemons(const struct vmgroup *g, bool verbose, FILE *out)
{
	vmgroup_call(g, VMGROUP_MEMBER, "stop", verbose, out);
	vmgroup_call(g, VMGROUP_LEADER, "stop", verbose, out);
}

/* trace-collector merge LEADER --guest DIR ... -o OUT [-z | --no-compress] (compress 1 or 0; -1:
 * neither, the leader's session.ini says), in a child whose stdout is summary (when not NULL):
 * its exit status. */
static int vmgroup_merge(const struct vmgroup *g, const char *out, int compress, FILE *summary)
{
	const char *argv[2 * VMGROUP_MAX_VMS + 8];
	char self[PATH_MAX];
	unsigned n = 0;
	ssize_t l = readlink("/proc/self/exe", self, sizeof(self) - 1);
	int st;
	pid_t pid;

	if (l <= 0)
		return -errno;
	self[l] = '\0';
	argv[n++] = self;
	argv[n++] = "merge";
	argv[n++] = vmgroup_leader_dir(g);
	for (unsigned i = 0; i < g->n; i++) {
		if (g->vm[i].role != VMGROUP_MEMBER)
			continue;
		argv[n++] = "--guest";
		argv[n++] = g->vm[i].dir;
	}
	argv[n++] = "-o";
	argv[n++] = out;
	if (compress >= 0)
		argv[n++] = compress ? "-z" : "--no-compress";
	argv[n] = NULL;
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		if (summary)
			dup2(fileno(summary), STDOUT_FILENO);
		execv(self, (char **)argv);
		_exit(127);
	}
	if (waitpid(pid, &st, 0) < 0)
		return -errno;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* The merge, its summary kept after the leader's stop summary and printed in two lines
 * (verbose: whole), as stop does for one VM. */
static int vmgroup_merge_said(const struct vmgroup *g, const char *out, int compress, bool verbose)
{
	_cleanup_free_ char *text = NULL;
	FILE *f = stop_summary_open(vmgroup_leader_dir(g), false);
	long start;
	int r;

	if (!f || fflush(f) != 0 || fseek(f, 0, SEEK_END) < 0 || (start = ftell(f)) < 0) {
		if (f)
			fclose(f);
		return vmgroup_merge(g, out, compress, NULL);
	}
	r = vmgroup_merge(g, out, compress, f);
	if (fseek(f, start, SEEK_SET) == 0 && (text = calloc(1, VMGROUP_INI_MAX + 1)) &&
	    fread(text, 1, VMGROUP_INI_MAX, f) > 0) {
		char hint[2 * PATH_MAX + 64] = "";

		if (verbose || (r != 0 && r != 3))
			fputs(text, stdout);
		else
			summary_merge_brief(text, stdout, hint, sizeof(hint));
		if (hint[0])
			printf("%s\n", hint);
	}
	fclose(f);
	return r;
}

/* The set's merge arguments: the leader's session dir, then --guest DIR of each member. */
static void vmgroup_merge_args(const struct vmgroup *g, FILE *f)
{
	fputs(vmgroup_leader_dir(g), f);
	for (unsigned i = 0; i < g->n; i++)
		if (g->vm[i].role == VMGROUP_MEMBER)
			fprintf(f, " --guest %s", g->vm[i].dir);
}

static void vmgroup_merge_hint(const struct vmgroup *g, const char *out)
{
	fprintf(stderr, "retry with: trace-collector merge ");
	vmgroup_merge_args(g, stderr);
	fprintf(stderr, " -o %s\n", out);
}

int vmgroup_stop(const char *leader_dir, const char *opt_out, int compress, bool verbose)
{
	_cleanup_free_ struct vmgroup *g = vmgroup_open(leader_dir);
	char out[PATH_MAX], data[PATH_MAX + 8];
	struct stat st;
	int r;

	if (!g)
		return 1;
	if (opt_out)
		snprintf(out, sizeof(out), "%s", opt_out);
	else if (g->out[0])
		snprintf(out, sizeof(out), "%s", g->out);
	else
		snprintf(out, sizeof(out), "%s-group.data", g->vm[g->leader].name);
	printf("group %s: stopping the guests first, then %s, whose host recording covers them all\n", g->id,
	       g->vm[g->leader].name);
	vmgroup_stop_daemons(g, verbose, stdout);
	snprintf(g->state, sizeof(g->state), "stopped");
	vmgroup_write(g);
	printf("== merge: %s and its guests into %s ==\n", g->vm[g->leader].name, out);
	r = vmgroup_merge_said(g, out, compress, verbose);
	if (r != 0 && r != 3) {
		log_error("the merge of the group failed (%s %d); nothing collected is lost: the sessions are kept",
			  r < 0 ? "error" : "exit status", r < 0 ? -r : r);
		vmgroup_merge_hint(g, out);
		return 1;
	}
	for (unsigned i = 0; i < g->n; i++)
		if (g->vm[i].role != VMGROUP_FAILED)
			session_ini_set(g->vm[i].dir, "state", "merged");
	snprintf(g->state, sizeof(g->state), "merged");
	vmgroup_write(g);
	snprintf(data, sizeof(data), "%s/data", out);
	if (stat(data, &st) < 0 && stat(out, &st) < 0)
		st.st_size = 0;
	if (st.st_size > (2ll << 30))
		printf("stalls:  not counted here (%.1f GB: run 'trace-collector report %s')\n", (double)st.st_size / 1e9, out);
	else
		report_stop_summary(out, stdout);
	printf("output: %s (%.1f MB)\n", out, (double)st.st_size / 1e6);
	if (merge_zstd_level(leader_dir, compress) > 0) {
		_cleanup_free_ char *args = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&args, &len);

		if (f) {
			vmgroup_merge_args(g, f);
			if (fclose(f) == 0 && args)
				stop_zstd_hint(args, out, true, stdout); /* a set has no live merge */
		}
	}
	return r; /* 3: written, some guest's clock unaligned (the merge said which) */
}
