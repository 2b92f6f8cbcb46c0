// SPDX-License-Identifier: GPL-2.0-only
/* The merge's guests (VMs): the session dir's own and each merge --guest DIR, every one its own
 * perf guest machine in the output. Here they are checked (a session dir each, each once, each
 * its own QEMU pid), loaded, named, and their merge.ini written. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "out.h"
#include "util.h"

/* A VM's name (session.ini vm=, else its dir), tracepoint prefix and the label of its lines. */
static void vm_names(struct merge_ctx *m, struct merge_vm *vm, size_t v)
{
	snprintf(vm->name, sizeof(vm->name), "%s", vm->guest.vm_name[0] ? vm->guest.vm_name : vm->dir);
	if (m->as_host) /* the guest's systems by their own names: sched:sched_switch for perf sched */
		vm->sys_prefix[0] = '\0';
	else if (v == 0)
		snprintf(vm->sys_prefix, sizeof(vm->sys_prefix), "guest_");
	else
		snprintf(vm->sys_prefix, sizeof(vm->sys_prefix), "guest%zu_", v + 1);
	if (m->n_vm > 1)
		snprintf(vm->label, sizeof(vm->label), "vm %s: ", vm->name);
}

/* Whether dir is input only: not this user's (root's when root merges), or writable by another
 * user, it or a directory above it (util_trusted_dir: a sticky /tmp aside). Such a dir is read
 * and nothing more: nothing in it chooses where the merge writes or what it reads outside it. */
static void vm_trust(struct merge_vm *vm)
{
	char abs[PATH_MAX + 1], cwd[PATH_MAX];

	if (vm->dir[0] == '/')
		snprintf(abs, sizeof(abs), "%s", vm->dir);
	else if (getcwd(cwd, sizeof(cwd)) && snprintf(abs, sizeof(abs), "%s/%s", cwd, vm->dir) < (int)sizeof(abs))
		;
	else
		snprintf(abs, sizeof(abs), "%s", vm->dir); /* refused: not absolute */
	vm->input_only = util_trusted_dir(abs, vm->input_why, sizeof(vm->input_why)) < 0;
	vm->guest.input_only = vm->input_only;
}

/* The line that says what session.ini of an input-only dir would have chosen and was ignored. */
static void vm_say_input_only(const struct merge_vm *vm, size_t v)
{
	char trust[16], bdir[16], keys[160] = "";

	if (!vm->input_only)
		return;
	merge_gbin_session_get(vm->dir, "opt_trust_guest_binaries", trust, sizeof(trust));
	merge_gbin_session_get(vm->dir, "buildid_dir", bdir, sizeof(bdir));
	snprintf(keys, sizeof(keys), "%s%s%s", !strcmp(trust, "1") ? ", opt_trust_guest_binaries" : "",
		 bdir[0] ? ", buildid_dir" : "", v == 0 && vm->guest.host_data[0] == '/' ? ", host_data" : "");
	if (keys[0])
		log_warn("merge: %s is input only (%s): session.ini's %s ignored; pass them as options "
			 "(--trust-guest-binaries, --host-data FILE); nothing is written into it", vm->dir,
			 vm->input_why, keys + 2);
	else
		log_warn("merge: %s is input only (%s): its files are read, nothing in it chooses where this merge "
			 "writes or what it reads outside it, nothing is written into it", vm->dir, vm->input_why);
}

/* Each dir once: the same dir under two names is refused too. */
static int vm_check_dirs(const char **dirs, size_t n)
{
	struct stat st[MERGE_MAX_GUESTS];

	for (size_t i = 0; i < n; i++) {
		if (stat(dirs[i], &st[i]) < 0 || !S_ISDIR(st[i].st_mode)) {
			log_error("%s%s: no such session dir: give the session dir of a VM's trace-collector start "
				  "(VM_DIR/sessions/ID)", i ? "--guest " : "", dirs[i]);
			return -ENOENT;
		}
		for (size_t j = 0; j < i; j++)
			if (st[i].st_dev == st[j].st_dev && st[i].st_ino == st[j].st_ino) {
				log_error("%s: given twice (%s%s): each VM's session once", dirs[i],
					  j == 0 ? "as SESSION_DIR and as --guest " : "as --guest and --guest ", dirs[j]);
				return -EINVAL;
			}
	}
	return 0;
}

/* A --guest dir: a session dir, or the merge stops; unusable guest data leaves that VM out. */
static int vm_load_guest(struct merge_vm *vm)
{
	char why[512] = "";
	int r = merge_guest_load(&vm->guest, vm->dir, why, sizeof(why));

	if (r < 0 && !vm->guest.session_read) {
		log_error("--guest %s: not a VM session dir (%s): give the session dir of another VM's trace-collector "
			  "start (VM_DIR/sessions/ID)", vm->dir, why);
		return r;
	}
	if (r < 0) {
		char name[sizeof(vm->guest.vm_name)];

		log_warn("--guest %s: guest data not usable, this VM is left out: %s", vm->dir, why);
		snprintf(vm->unusable, sizeof(vm->unusable), "%s", why);
		memcpy(name, vm->guest.vm_name, sizeof(name));
		merge_guest_free(&vm->guest);
		memcpy(vm->guest.vm_name, name, sizeof(name)); /* named in the summary */
	}
	return 0;
}

/* Two VMs with one QEMU pid would be one perf machine: refused (stand-ins are made distinct). */
static int vm_check_pids(struct merge_ctx *m)
{
	for (size_t i = 1; i < m->n_vm; i++) {
		struct merge_vm *a = &m->vm[i];

		if (a->guest.machine_pid_stand_in)
			a->guest.machine_pid += i; /* above PID_MAX_LIMIT all the same */
		for (size_t j = 0; a->guest.present && j < i; j++)
			if (m->vm[j].guest.present && m->vm[j].guest.machine_pid == a->guest.machine_pid) {
				log_error("%s and %s: the same QEMU pid %" PRIu64 ": two sessions of one VM cannot be "
					  "merged as two guests (merge each on its own)", m->vm[j].dir, a->dir,
					  a->guest.machine_pid);
				return -EINVAL;
			}
	}
	return 0;
}

int merge_vm_load(struct merge_ctx *m, const struct merge_options *o)
{
	const char *dirs[MERGE_MAX_GUESTS];
	char why[512] = "";
	int r;

	if (o->n_guest_dirs >= MERGE_MAX_GUESTS) {
		log_error("%zu --guest dirs: at most %u VMs go in one merge (SESSION_DIR's and %u --guest)",
			  o->n_guest_dirs, MERGE_MAX_GUESTS, MERGE_MAX_GUESTS - 1);
		return -E2BIG;
	}
	if (o->n_guest_dirs && o->follow) {
		log_error("--guest: the live merge (--follow) follows one session; merge the VMs' sessions "
			  "offline once they have stopped");
		return -EINVAL;
	}
	m->n_vm = 1 + o->n_guest_dirs;
	dirs[0] = o->session_dir;
	for (size_t i = 0; i < o->n_guest_dirs; i++)
		dirs[i + 1] = o->guest_dirs[i];
	if (m->n_vm > 1 && (r = vm_check_dirs(dirs, m->n_vm)) < 0)
		return r;
	for (size_t v = 0; v < m->n_vm; v++) {
		m->vm[v].dir = dirs[v];
		vm_trust(&m->vm[v]);
	}
	m->vm[0].guest.follow = o->follow;
	r = merge_guest_load(&m->vm[0].guest, o->session_dir, why, sizeof(why));
	if (r < 0 && !m->vm[0].guest.session_read) {
		log_error("%s: %s", o->session_dir, why);
		return r;
	}
	if (r < 0) {
		log_warn("%s: guest data not usable, merging the host recording only: %s", o->session_dir, why);
		snprintf(m->vm[0].unusable, sizeof(m->vm[0].unusable), "%s", why);
		merge_guest_free(&m->vm[0].guest);
	}
	for (size_t v = 1; v < m->n_vm; v++)
		if ((r = vm_load_guest(&m->vm[v])) < 0)
			return r;
	for (size_t v = 0; v < m->n_vm; v++) {
		vm_names(m, &m->vm[v], v);
		vm_say_input_only(&m->vm[v], v);
	}
	return vm_check_pids(m);
}

struct merge_vm *merge_vm_first(struct merge_ctx *m)
{
	for (size_t v = 0; v < m->n_vm; v++)
		if (m->vm[v].guest.present)
			return &m->vm[v];
	return NULL;
}

int merge_vm_prepare(struct merge_ctx *m, int host_fd)
{
	int r;

	for (size_t v = 0; v < m->n_vm; v++) {
		struct merge_vm *vm = &m->vm[v];

		if ((r = merge_vcpu_init(&vm->vcpu, &vm->guest, &m->host, m->host.present ? &m->td : NULL, host_fd)) < 0)
			return r;
		if (vm->guest.present && (vm->guest.gsym_events || vm->guest.perf_events[0]))
			merge_gsym_load(&vm->guest, vm->dir); /* read once: %ps names, guest kernel maps */
		if (!m->as_host && (r = merge_gperf_load(&vm->gp, &vm->guest, vm->dir)) < 0)
			return r;
	}
	if ((r = merge_exits_prepare(m)) < 0)
		return r;
	return merge_migs_prepare(m);
}

/* With several VMs, every merge.ini lists them all: name, dir, machine pid, event prefix. */
static void vm_info_list(const struct merge_ctx *m, FILE *f)
{
	if (m->n_vm < 2)
		return;
	fprintf(f, "vms=%zu\n", m->n_vm);
	for (size_t v = 0; v < m->n_vm; v++) {
		const struct merge_vm *vm = &m->vm[v];

		fprintf(f, "vm%zu.name=%s\nvm%zu.dir=%s\nvm%zu.merged=%d\nvm%zu.machine_pid=%" PRIu64 "\nvm%zu.events=%s*\n"
			   "vm%zu.clock_aligned=%d\nvm%zu.guest_samples=%" PRIu64 "\n",
			v, vm->name, v, vm->dir, v, vm->guest.present, v, vm->guest.machine_pid, v, vm->sys_prefix, v,
			vm->guest.clock_aligned, v, vm->samples);
	}
}

/* vm's merge.ini in its session dir: what this merge did about its clock and vCPUs (best
 * effort: a read-only session dir only loses this file). Written as merge.ini.tmp (never
 * through a link) and renamed over it: a session dir of another user's cannot send it elsewhere. */
static void vm_info(const struct merge_ctx *m, const struct merge_vm *vm, const char *output)
{
	const struct merge_guest *g = &vm->guest;
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	FILE *f;
	int r;

	if (!g->present || vm->input_only) /* another user's dir: nothing written into it */
		return;
	if (!(f = open_memstream(&text, &len))) {
		log_warn("%s: cannot write merge.ini: %m", vm->dir);
		return;
	}
	fprintf(f, "output=%s\nclock_method=%s\nclock_aligned=%d\nclock_recovered=%d\nclock_samples=%" PRIu64
		   "\nclock_error_bound_ns=%" PRIu64 "\nguest_outside_window=%" PRIu64 "\nvcpu_cpu=%s\n"
		   "vcpu_fallback_records=%" PRIu64 "\nguest_samples=%" PRIu64 "\nclock_live_error_bound_ns=%" PRIu64 "\n"
		   "exit_samples=%" PRIu64 "\nmigrations_written=%u\n",
		output, g->clock_aligned ? g->clock.method : "none", g->clock_aligned, g->clock_recovered,
		g->clock.samples, g->clock.error_bound_ns, g->loss.outside_window,
		m->as_host ? "guest_as_host" : vm->vcpu.why[0] ? "fallback" : "host_sched_switch", vm->vcpu.fallback_samples, vm->samples,
		m->live_bound_ns, vm->exits.samples, vm->migs.next - MIN(vm->migs.late, vm->migs.next));
	/* ring pages per vCPU: read (bad ones apart), dropped by the flight recorder, missing */
	for (uint32_t i = 0; i < g->ncpus; i++)
		fprintf(f, "cpu%u.pages_read=%" PRIu64 "\ncpu%u.pages_bad=%" PRIu64 "\ncpu%u.pages_dropped=%" PRIu64 "\n",
			i, g->cpus[i].pages_read, i, g->cpus[i].pages_bad, i, g->cpus[i].pages_dropped);
	vm_info_list(m, f);
	r = fclose(f) < 0 || !text ? -ENOMEM : util_replace_file(vm->dir, "merge.ini", text, len);
	if (r < 0)
		log_warn("%s: cannot write merge.ini: %s", vm->dir, strerror(-r));
}

void merge_vm_info(const struct merge_ctx *m, const char *output)
{
	for (size_t v = 0; v < m->n_vm; v++)
		vm_info(m, &m->vm[v], output);
}

void merge_vm_free(struct merge_ctx *m)
{
	for (size_t v = 0; v < m->n_vm; v++) {
		merge_guest_free(&m->vm[v].guest);
		merge_gperf_free(&m->vm[v].gp);
		merge_vcpu_free(&m->vm[v].vcpu);
		merge_exits_free(&m->vm[v]);
		merge_migs_free(&m->vm[v]);
	}
}
