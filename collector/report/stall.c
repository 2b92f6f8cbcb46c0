// SPDX-License-Identifier: GPL-2.0-only
/* The report's state machine: each vCPU's QEMU thread on the host (running on a host CPU, or
 * switched out: preempted or asleep, and who ran there or woke it) and its guest task; a stall
 * is a switched-out interval of the thread, closed by its next switch in, during which the
 * guest had a task other than its idle task on that vCPU. Only real switch-out/switch-in pairs
 * make intervals: before a thread's first host switch, after a host loss and at the end of the
 * recording its state is unknown and nothing is judged. A stall counts once the guest's trace
 * is known to have gone on past it (a later guest record of that VM): after the guest's last
 * record its task is no longer known. */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"
#include "util.h"

static const char *const cause_names[] = {
	[REPORT_PREEMPTED] = "preempted", [REPORT_HOST_BLOCKED] = "host_blocked",
	[REPORT_VM_EXIT] = "vm_exit", [REPORT_MIGRATION] = "migration", [REPORT_UNKNOWN] = "unknown",
};

const char *report_cause_name(enum report_cause c)
{
	return c < REPORT_N_CAUSES ? cause_names[c] : "unknown";
}

const char *report_stall_cause(const struct report *r, const struct report_stall *s, char *buf, size_t len)
{
	const char *nm;

	if (s->cause != REPORT_VM_EXIT || s->exit_reason < 0)
		return report_cause_name(s->cause);
	nm = report_exit_name(r, s->exit_reason);
	if (nm)
		snprintf(buf, len, "vm_exit:%s", nm);
	else
		snprintf(buf, len, "vm_exit:%lld", (long long)s->exit_reason);
	return buf;
}

void report_note(struct report *r, const char *fmt, ...)
{
	va_list ap;

	if (r->n_notes >= ARRAY_SIZE(r->notes))
		return;
	va_start(ap, fmt);
	vsnprintf(r->notes[r->n_notes++], sizeof(r->notes[0]), fmt, ap);
	va_end(ap);
}

int report_init(struct report *r, const struct report_opts *o)
{
	memset(r, 0, sizeof(*r));
	r->o = *o;
	r->map_cap = 256;
	r->map_tid = calloc(r->map_cap, sizeof(*r->map_tid));
	r->map_val = calloc(r->map_cap, sizeof(*r->map_val));
	r->t_first = UINT64_MAX;
	r->host_first = UINT64_MAX;
	return r->map_tid && r->map_val ? 0 : -ENOMEM;
}

void report_free(struct report *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->n_vms; i++) {
		for (uint32_t c = 0; c < r->vms[i].n_vcpus; c++) {
			free(r->vms[i].vcpus[c].culprits);
			free(r->vms[i].vcpus[c].exits);
		}
		free(r->vms[i].vcpus);
		free(r->vms[i].pending);
	}
	free(r->vms);
	free(r->foreign);
	free(r->map_tid);
	free(r->map_val);
	free(r->hcpu);
	free(r->stalls);
	free(r->bands);
	memset(r, 0, sizeof(*r));
}

/* snprintf(dst, REPORT_COMM, "%s", ...) without the format's cost: on every host switch */
static void copy_comm(char *dst, const char *src)
{
	size_t n;

	if (!src || !src[0])
		src = "?";
	n = strnlen(src, REPORT_COMM - 1);
	memcpy(dst, src, n);
	dst[n] = '\0';
}

static struct report_hcpu *hcpu_get(struct report *r, uint32_t cpu)
{
	if (cpu >= REPORT_MAX_CPUS)
		return NULL;
	if (cpu >= r->n_hcpu) {
		uint32_t n = MAX(cpu + 1, r->n_hcpu * 2);
		struct report_hcpu *h = realloc(r->hcpu, n * sizeof(*h));

		if (!h)
			return NULL;
		memset(h + r->n_hcpu, 0, (n - r->n_hcpu) * sizeof(*h));
		r->hcpu = h;
		r->n_hcpu = n;
	}
	return &r->hcpu[cpu];
}

/* The guest task at t of the vCPU whose thread tid is, when that VM's events tell it. */
static void gtask_of(const struct report *r, int32_t tid, uint64_t t, struct report_gtask *g)
{
	const struct report_vcpu *v = report_map_find(r, tid, NULL);

	g->pid = -1;
	g->at = t;
	if (v && v->g_known) {
		g->pid = v->g_pid;
		memcpy(g->comm, v->g_comm, REPORT_COMM);
	} else {
		copy_comm(g->comm, NULL);
	}
}

/* Adds ns to a task in a small top list (the smallest entry makes room); g: its guest's task
 * then, the latest kept. */
static void tasks_add(struct report_task *t, size_t n, int32_t pid, const char *comm, uint64_t ns,
		      const struct report_gtask *g)
{
	size_t min = 0;

	for (size_t i = 0; i < n; i++) {
		if (t[i].ns && t[i].pid == pid && !strncmp(t[i].comm, comm, REPORT_COMM - 1)) {
			t[i].ns += ns;
			if (g->pid >= 0)
				t[i].g = *g;
			return;
		}
		if (t[i].ns < t[min].ns)
			min = i;
	}
	if (t[min].ns >= ns && t[min].ns)
		return;
	t[min].pid = pid;
	copy_comm(t[min].comm, comm);
	t[min].ns = ns;
	t[min].g = *g;
}

/* The task on host CPU cpu since hcpu->since ran (until t) while v was switched out there. */
static void credit(struct report_vcpu *v, const struct report_hcpu *h, int32_t pid, const char *comm, uint64_t t,
		   const struct report_gtask *g)
{
	uint64_t from = h && h->known ? MAX(h->since, v->credit_from) : v->credit_from;

	if (t > from)
		tasks_add(v->off_tasks, REPORT_TOP_TASKS, pid, comm, t - from, g);
}

static void credit_cpu(struct report *r, uint32_t cpu, int32_t pid, const char *comm, uint64_t t)
{
	const struct report_hcpu *h = cpu < r->n_hcpu ? &r->hcpu[cpu] : NULL;
	struct report_gtask g;

	gtask_of(r, pid, t, &g);
	for (size_t i = 0; i < r->n_vms; i++)
		for (uint32_t c = 0; c < r->vms[i].n_vcpus; c++) {
			struct report_vcpu *v = &r->vms[i].vcpus[c];

			if (v->h == REPORT_H_OFF && v->cpu == (int32_t)cpu)
				credit(v, h, pid, comm, t, &g);
		}
}

static struct report_culprit *culprit_slot(struct report_vcpu *v, const struct report_task *t)
{
	struct report_culprit *c;

	for (size_t i = 0; i < v->n_culprits; i++)
		if (v->culprits[i].t.pid == t->pid && !strcmp(v->culprits[i].t.comm, t->comm))
			return &v->culprits[i];
	if (v->n_culprits >= 4096)
		return NULL;
	c = realloc(v->culprits, (v->n_culprits + 1) * sizeof(*c));
	if (!c)
		return NULL;
	v->culprits = c;
	c = &v->culprits[v->n_culprits++];
	memset(c, 0, sizeof(*c));
	c->t.pid = t->pid;
	memcpy(c->t.comm, t->comm, REPORT_COMM);
	c->t.g.pid = -1;
	return c;
}

static int stall_push(struct report_stall **a, size_t *n, size_t *cap, const struct report_stall *s)
{
	if (*n == *cap) {
		size_t nc = *cap ? *cap * 2 : 64;
		struct report_stall *p = realloc(*a, nc * sizeof(*p));

		if (!p)
			return -ENOMEM;
		*a = p;
		*cap = nc;
	}
	(*a)[(*n)++] = *s;
	return 0;
}

/* A stall becomes part of the report: totals, culprits, the list when long enough. */
static void stall_commit(struct report *r, const struct report_stall *s)
{
	struct report_vcpu *v = &r->vms[s->vm].vcpus[s->vcpu];
	uint64_t d = s->end - s->start;
	struct report_culprit *c;

	v->stalled_ns[s->cause] += d;
	v->n_stalls++;
	if (s->culprit.pid >= 0 && (c = culprit_slot(v, &s->culprit))) {
		c->t.ns += d;
		c->n++;
	}
	if (d < r->o.min_ns)
		return;
	v->n_stalls_min++;
	stall_push(&r->stalls, &r->n_stalls, &r->cap_stalls, s);
}

/* A guest record of VM vm at t: its trace went on, so the stalls held back are judged. */
static void vm_alive(struct report *r, uint32_t vm, uint64_t t)
{
	struct report_vm *m = &r->vms[vm];

	m->last_guest = MAX(m->last_guest, t);
	if (!m->first_guest || t < m->first_guest)
		m->first_guest = t;
	for (size_t i = 0; i < m->n_pending; i++)
		stall_commit(r, &m->pending[i]);
	m->n_pending = 0;
}

/* The culprit named as a vCPU of a VM in the file (its own or another QEMU's thread). */
static void culprit_vcpu(const struct report *r, struct report_stall *s)
{
	s->culprit_vm = (int32_t)report_vcpu_of(r, s->culprit.pid, &s->culprit_vcpu, &s->culprit_machine_pid);
}

static const struct report_task *top_task(const struct report_vcpu *v)
{
	const struct report_task *best = NULL;

	for (size_t i = 0; i < REPORT_TOP_TASKS; i++)
		if (v->off_tasks[i].ns && (!best || v->off_tasks[i].ns > best->ns))
			best = &v->off_tasks[i];
	return best;
}

/* Cause and culprit of a switched-out interval of v that ends now. */
static void stall_cause(const struct report *r, const struct report_vcpu *v, struct report_stall *s)
{
	const struct report_task *top = top_task(v);
	bool runnable = (v->out_state & 0xff) == 0;

	s->culprit.pid = -1;
	copy_comm(s->culprit.comm, NULL);
	s->culprit.g.pid = -1;
	if (v->out_state < 0) {
		s->cause = REPORT_UNKNOWN;
		s->why = "the host's sched_switch has no prev_state";
	} else if (runnable) {
		s->cause = REPORT_PREEMPTED;
		if (!top)
			s->why = "no host task was seen on its host CPU";
	} else {
		s->cause = v->in_exit ? REPORT_VM_EXIT : REPORT_HOST_BLOCKED;
		s->exit_reason = v->in_exit ? v->exit_reason : -1;
		s->woken_at = v->woken_at;
		if (v->woken_at) {
			s->waker_pid = v->waker_pid;
			memcpy(s->waker_comm, v->waker_comm, REPORT_COMM);
		}
		if (v->woken_at && top && s->end - v->woken_at > v->woken_at - s->start) {
			/* woken, then mostly waiting for its CPU: preempted, by what ran there */
			s->cause = REPORT_PREEMPTED;
			s->culprit = *top;
			return;
		}
		if (v->woken_at) {
			s->culprit.pid = v->waker_pid;
			memcpy(s->culprit.comm, v->waker_comm, REPORT_COMM);
			s->culprit.g = v->waker_g;
			return;
		}
		/* No waker known: the task that ran on its CPU meanwhile, if any (not the idle task) */
		s->why = r->has_wakeup ? "no wakeup of the thread recorded (the host recording lacks it): the culprit "
					 "is the task that ran on its CPU meanwhile"
				       : "the host recording has no sched:sched_wakeup (record it to name the waker): the "
					 "culprit is the task that ran on its CPU meanwhile";
		if (top && top->pid > 0)
			s->culprit = *top;
		return;
	}
	if (top)
		s->culprit = *top;
}

static void band_add(struct report *r, uint32_t vm, uint32_t vcpu, uint64_t a, uint64_t b, int32_t pid,
		     const char *comm, uint8_t kind)
{
	struct report_band *n;

	if (!r->o.bands || b <= r->o.from || a >= r->o.to || r->n_bands >= (4u << 20))
		return;
	if (r->n_bands == r->cap_bands) {
		size_t nc = r->cap_bands ? r->cap_bands * 2 : 1024;

		if (!(n = realloc(r->bands, nc * sizeof(*n))))
			return;
		r->bands = n;
		r->cap_bands = nc;
	}
	n = &r->bands[r->n_bands++];
	*n = (struct report_band){ MAX(a, r->o.from), MIN(b, r->o.to), pid, "", kind, vm, vcpu };
	copy_comm(n->comm, comm);
}

/* A guest record this far inside a switched-out interval (from both ends) is no clock error
 * (a converted guest time is off by its bound, well under this; a coarse clock's included). */
#define RAN_MARGIN_NS 5000000ull

/* The switched-out interval [since, t) of v ends (switched in again, on cpu). One the guest
 * traced in on this vCPU was no stall: its thread ran, and the host recording lacks the switch
 * in (seen: a flight recorder's host ring that had dropped the vCPU thread's switches, a false
 * 1.66 s host_blocked stall with 5166 guest records of that vCPU inside it). */
static void interval_close(struct report *r, uint32_t vm, struct report_vcpu *v, uint64_t t)
{
	struct report_vm *m = &r->vms[vm];
	struct report_stall s = { .vm = vm, .vcpu = (uint32_t)(v - m->vcpus), .start = v->since, .end = t };
	uint64_t d = t - v->since;

	if (v->g_inside && v->g_inside + RAN_MARGIN_NS <= t) {
		v->ran_unseen++;
		return;
	}
	band_add(r, vm, s.vcpu, v->since, t, -1, "", 1);
	if (!v->g_off_known || !v->g_known) {
		v->off_unknown_ns += d;
		return;
	}
	if (v->g_off_pid == 0 || v->g_pid == 0) {
		v->off_idle_ns += d;
		return;
	}
	s.host_cpu = v->cpu;
	s.guest_pid = v->g_off_pid;
	memcpy(s.guest_comm, v->g_off_comm, REPORT_COMM);
	s.exit_reason = -1;
	stall_cause(r, v, &s);
	culprit_vcpu(r, &s);
	if (m->n_pending >= (1u << 20))
		return; /* a guest silent for a million stalls: the rest is not judged */
	stall_push(&m->pending, &m->n_pending, &m->cap_pending, &s);
}

/* v switched out of host CPU cpu at t (prev_state: the kernel's; -1 unknown). */
static void host_out(struct report *r, struct report_vcpu *v, uint64_t t, uint32_t cpu, int64_t prev_state)
{
	if (v->h == REPORT_H_RUNNING && t >= v->since)
		v->running_ns += t - v->since;
	else if (v->h == REPORT_H_OFF)
		v->dropped_intervals++; /* out twice: a switch in was not recorded */
	if (!v->first_switch)
		v->first_switch = t;
	v->last_switch = t;
	v->switches++;
	v->h = REPORT_H_OFF;
	v->cpu = (int32_t)cpu;
	v->since = t;
	v->out_state = prev_state;
	v->woken_at = 0;
	v->credit_from = t;
	memset(v->off_tasks, 0, sizeof(v->off_tasks));
	v->g_inside = 0;
	v->g_off_known = v->g_known;
	v->g_off_pid = v->g_pid;
	memcpy(v->g_off_comm, v->g_comm, REPORT_COMM);
	(void)r;
}

/* v switched in on host CPU cpu at t. */
static void host_in(struct report *r, uint32_t vm, struct report_vcpu *v, uint64_t t, uint32_t cpu)
{
	if (v->h == REPORT_H_OFF && t >= v->since) {
		const struct report_hcpu *h = (uint32_t)v->cpu < r->n_hcpu ? &r->hcpu[v->cpu] : NULL;

		if ((uint32_t)v->cpu != cpu && h && h->known) {
			struct report_gtask g;

			gtask_of(r, h->pid, t, &g);
			credit(v, h, h->pid, h->comm, t, &g); /* it came back elsewhere: its CPU's task until now */
		}
		interval_close(r, vm, v, t);
	} else if (v->h == REPORT_H_RUNNING) {
		v->dropped_intervals++; /* in twice: a switch out was not recorded */
	}
	if (!v->first_switch)
		v->first_switch = t;
	v->last_switch = t;
	v->switches++;
	v->h = REPORT_H_RUNNING;
	v->cpu = (int32_t)cpu;
	v->since = t;
}

void report_host_switch(struct report *r, uint64_t t, uint32_t cpu, int32_t prev_pid, const char *prev_comm,
			int64_t prev_state, int32_t next_pid, const char *next_comm)
{
	struct report_hcpu *h = hcpu_get(r, cpu);
	struct report_vcpu *v;
	uint32_t vm;

	r->host_switches++;
	credit_cpu(r, cpu, prev_pid, prev_comm, t);
	if ((v = report_map_find(r, prev_pid, NULL)))
		host_out(r, v, t, cpu, prev_state);
	if ((v = report_map_find(r, next_pid, &vm)))
		host_in(r, vm, v, t, cpu);
	if (h) {
		h->pid = next_pid;
		copy_comm(h->comm, next_comm);
		h->since = t;
		h->known = true;
	}
}

void report_host_wakeup(struct report *r, uint64_t t, uint32_t cpu, int32_t waker, int32_t wakee, int32_t target_cpu)
{
	struct report_vcpu *v = report_map_find(r, wakee, NULL);
	const struct report_hcpu *h = cpu < r->n_hcpu ? &r->hcpu[cpu] : NULL;

	if (!v || v->h != REPORT_H_OFF || v->woken_at)
		return;
	/* From here it waits for a CPU: who runs on the one it was woken onto counts. */
	memset(v->off_tasks, 0, sizeof(v->off_tasks));
	v->credit_from = t;
	if (target_cpu >= 0 && target_cpu < REPORT_MAX_CPUS)
		v->cpu = target_cpu;
	v->woken_at = t;
	v->waker_pid = waker;
	gtask_of(r, waker, t, &v->waker_g);
	if (h && h->known && h->pid == waker)
		memcpy(v->waker_comm, h->comm, REPORT_COMM);
	else if (waker == 0)
		snprintf(v->waker_comm, REPORT_COMM, "swapper/%u", cpu);
	else
		copy_comm(v->waker_comm, NULL);
}

static void exit_add(struct report_vcpu *v, int64_t reason, uint64_t ns)
{
	struct report_exit_reason *e;

	v->exit_ns += ns;
	for (size_t i = 0; i < v->n_exits; i++)
		if (v->exits[i].reason == reason) {
			v->exits[i].ns += ns;
			v->exits[i].n++;
			return;
		}
	if (v->n_exits >= 256 || !(e = realloc(v->exits, (v->n_exits + 1) * sizeof(*e))))
		return;
	v->exits = e;
	v->exits[v->n_exits++] = (struct report_exit_reason){ reason, ns, 1 };
}

void report_host_kvm(struct report *r, uint64_t t, int32_t tid, bool is_exit, int64_t reason)
{
	struct report_vcpu *v = report_map_find(r, tid, NULL);

	if (!v)
		return;
	if (is_exit) {
		v->in_exit = true;
		v->exit_reason = reason;
		v->exit_at = t;
	} else if (v->in_exit) {
		v->in_exit = false;
		if (t >= v->exit_at)
			exit_add(v, v->exit_reason, t - v->exit_at);
	}
}

/* A host loss: every thread's state is unknown until its next switch. */
void report_host_lost(struct report *r, uint64_t t)
{
	(void)t;
	r->host_lost++;
	for (size_t i = 0; i < r->n_vms; i++)
		for (uint32_t c = 0; c < r->vms[i].n_vcpus; c++) {
			struct report_vcpu *v = &r->vms[i].vcpus[c];

			if (v->h != REPORT_H_UNKNOWN)
				v->dropped_intervals++;
			v->h = REPORT_H_UNKNOWN;
			v->in_exit = false;
		}
	for (uint32_t c = 0; c < r->n_hcpu; c++)
		r->hcpu[c].known = false;
}

/* A guest record of vCPU c of vm at t: one well inside a switched-out interval is noted. */
static void guest_ran(struct report *r, uint32_t vm, uint32_t c, uint64_t t)
{
	struct report_vcpu *v;

	if (vm >= r->n_vms || c >= r->vms[vm].n_vcpus)
		return;
	v = &r->vms[vm].vcpus[c];
	if (v->h == REPORT_H_OFF && !v->g_inside && t >= v->since + RAN_MARGIN_NS)
		v->g_inside = t;
}

static void guest_set(struct report *r, uint32_t vm, uint32_t vcpu, uint64_t t, int32_t pid, const char *comm)
{
	struct report_vcpu *v;

	if (vm >= r->n_vms || vcpu >= r->vms[vm].n_vcpus)
		return;
	v = &r->vms[vm].vcpus[vcpu];
	v->seen = true;
	if (v->g_known && v->g_pid == pid)
		return;
	if (v->g_known && t > v->g_since)
		band_add(r, vm, vcpu, v->g_since, t, v->g_pid, v->g_comm, 0);
	v->g_since = t;
	v->g_known = true;
	v->g_pid = pid;
	report_comm_clean(v->g_comm, comm);
}

void report_guest_switch(struct report *r, uint32_t vm, uint32_t vcpu, uint64_t t, int32_t next_pid,
			 const char *next_comm)
{
	if (vm >= r->n_vms)
		return;
	r->vms[vm].guest_switches++;
	guest_ran(r, vm, vcpu, t);
	if (next_pid >= 0) /* a damaged switch leaves the task as it was */
		guest_set(r, vm, vcpu, t, next_pid, next_comm);
	vm_alive(r, vm, t);
}

void report_guest_task(struct report *r, uint32_t vm, uint32_t vcpu, uint64_t t, int32_t pid, const char *comm)
{
	if (vm >= r->n_vms)
		return;
	r->vms[vm].guest_records++;
	guest_ran(r, vm, vcpu, t);
	if (!r->vms[vm].has_guest_switch && pid >= 0)
		guest_set(r, vm, vcpu, t, pid, comm);
	else if (vcpu < r->vms[vm].n_vcpus)
		r->vms[vm].vcpus[vcpu].seen = true;
	vm_alive(r, vm, t);
}

/* The migration's stall on vCPU c of VM vm: the guest paused over [t, t + blackout), whatever
 * its task (a paused guest runs none); judged, as any, once the guest's trace goes on. */
static void migration_stall(struct report *r, uint32_t vm, uint32_t c, uint64_t t, int32_t from, int32_t to,
			    uint64_t blackout_ns)
{
	struct report_vm *m = &r->vms[vm];
	const struct report_vcpu *v = &m->vcpus[c];
	struct report_stall s = { .vm = vm, .vcpu = c, .start = t, .end = t + blackout_ns, .cause = REPORT_MIGRATION,
				  .host_cpu = -1, .culprit_vm = -1, .culprit_vcpu = -1, .culprit_machine_pid = -1,
				  .guest_pid = v->g_known ? v->g_pid : -1, .exit_reason = -1, .mig_from = from,
				  .mig_to = to };

	s.culprit.pid = -1;
	s.culprit.g.pid = -1;
	copy_comm(s.culprit.comm, NULL);
	copy_comm(s.guest_comm, v->g_known ? v->g_comm : NULL);
	band_add(r, vm, c, s.start, s.end, -1, "", 1);
	if (m->n_pending < (1u << 20))
		stall_push(&m->pending, &m->n_pending, &m->cap_pending, &s);
}

void report_migration(struct report *r, uint32_t vm, uint64_t t, uint64_t start, int32_t from, int32_t to,
		      uint64_t blackout_ns)
{
	struct report_vm *m;

	if (vm >= r->n_vms || to <= 0 || (m = &r->vms[vm])->n_migrations >= REPORT_MAX_MIGRATIONS ||
	    report_vm_of_qemu(r, to) >= 0)
		return; /* a damaged or repeated record: the threads stay as they are */
	m->qemu_to[m->n_migrations++] = to;
	for (uint32_t c = 0; c < m->n_vcpus; c++) {
		struct report_vcpu *v = &m->vcpus[c];

		if (blackout_ns && start <= t && blackout_ns <= UINT64_MAX - start)
			migration_stall(r, vm, c, start, from, to, blackout_ns);
		/* the source's thread is no longer this vCPU: whatever it was doing is not judged */
		if (v->tid > 0) {
			report_map_forget(r, v->tid);
			v->tid = -1;
			m->threads_named--;
		}
		if (v->h == REPORT_H_RUNNING && t > v->since)
			v->running_ns += t - v->since;
		v->h = REPORT_H_UNKNOWN;
		v->in_exit = false;
	}
	/* the destination's vCPU threads, named before (host COMMs of a QEMU not in the file) */
	for (size_t i = 0; i < r->n_foreign; i++)
		if (r->foreign[i].pid == to && r->foreign[i].vcpu >= 0 && (uint32_t)r->foreign[i].vcpu < m->n_vcpus)
			report_vcpu_thread(r, vm, (uint32_t)r->foreign[i].vcpu, r->foreign[i].tid);
}

/* A culprit vCPU's guest task taken after its VM's last guest record is not known: that
 * guest's trace had ended. */
static void culprit_guest_end(struct report *r)
{
	for (size_t i = 0; i < r->n_stalls; i++) {
		struct report_stall *s = &r->stalls[i];

		if (s->culprit.g.pid >= 0 && (s->culprit_vm < 0 || (size_t)s->culprit_vm >= r->n_vms ||
					      s->culprit.g.at > r->vms[s->culprit_vm].last_guest))
			s->culprit.g.pid = -1;
	}
}

/* The end: open intervals are not judged (no switch in closes them), nor stalls after the
 * guest's last record. */
void report_end(struct report *r)
{
	culprit_guest_end(r);
	for (size_t i = 0; i < r->n_vms; i++) {
		struct report_vm *m = &r->vms[i];

		m->not_judged += m->n_pending;
		m->n_pending = 0;
		for (uint32_t c = 0; c < m->n_vcpus; c++) {
			struct report_vcpu *v = &m->vcpus[c];

			if (v->h == REPORT_H_RUNNING && r->host_last > v->since)
				v->running_ns += r->host_last - v->since;
			if (v->g_known && r->t_last > v->g_since)
				band_add(r, (uint32_t)i, c, v->g_since, MIN(r->t_last, m->last_guest ? m->last_guest : r->t_last),
					 v->g_pid, v->g_comm, 0);
		}
	}
}

uint64_t report_vcpu_stalled(const struct report_vcpu *v)
{
	uint64_t s = 0;

	for (int c = 0; c < REPORT_N_CAUSES; c++)
		s += v->stalled_ns[c];
	return s;
}

static int cmp_stall(const void *a, const void *b)
{
	const struct report_stall *x = a, *y = b;
	uint64_t dx = x->end - x->start, dy = y->end - y->start;

	if (dx != dy)
		return dx < dy ? 1 : -1;
	return (x->start > y->start) - (x->start < y->start);
}

void report_sort_stalls(struct report *r)
{
	if (r->n_stalls)
		qsort(r->stalls, r->n_stalls, sizeof(*r->stalls), cmp_stall);
}
