// SPDX-License-Identifier: GPL-2.0-only
/* The report for a person: the longest stalls, then each vCPU by time stalled, then what the
 * file does not let the report know. Also the stop summary's one line. */
#include <stdlib.h>
#include <string.h>

#include "report.h"
#include "util.h"

struct vref {
	const struct report_vm *m;
	const struct report_vcpu *v;
	uint32_t vcpu;
};

static int cmp_vref(const void *a, const void *b)
{
	uint64_t x = report_vcpu_stalled(((const struct vref *)a)->v), y = report_vcpu_stalled(((const struct vref *)b)->v);

	return (x < y) - (x > y);
}

void report_culprit_text(const struct report *r, const struct report_stall *s, char *buf, size_t len)
{
	char vm[48];
	int n;

	if (s->cause == REPORT_MIGRATION) {
		snprintf(buf, len, "QEMU %d -> %d (live migration)", s->mig_from, s->mig_to);
		return;
	}
	if (s->culprit.pid < 0) {
		snprintf(buf, len, "? (%s)", s->why ? s->why : "unknown");
		return;
	}
	if (s->culprit_vcpu < 0) {
		snprintf(buf, len, "%s (%d)", s->culprit.comm, s->culprit.pid);
		return;
	}
	n = snprintf(buf, len, "%s (%d) = VM %s vCPU %d", s->culprit.comm, s->culprit.pid,
		     report_vm_label(r, s->culprit_vm, s->culprit_machine_pid, vm, sizeof(vm)), s->culprit_vcpu);
	if (s->culprit_vm >= 0 && s->culprit.g.pid >= 0 && n >= 0 && (size_t)n < len)
		snprintf(buf + n, len - (size_t)n, " running %s (%d)", s->culprit.g.comm, s->culprit.g.pid);
}

static bool stall_shown(const struct report_stall *s, const struct report_filter *f)
{
	return f->vcpu < 0 || (long)s->vcpu == f->vcpu;
}

/* Stalls over the minimum and the longest: one line (text and stop summary). */
static void text_headline(const struct report *r, bool label, FILE *out)
{
	uint64_t total = 0;
	const struct report_stall *l = r->n_stalls ? &r->stalls[0] : NULL;
	char c[160], vm[48];

	for (size_t i = 0; i < r->n_stalls; i++)
		total += r->stalls[i].end - r->stalls[i].start;
	fprintf(out, "%s%zu over %.1f ms, %.3f s in all", label ? "stalls: " : "", r->n_stalls, (double)r->o.min_ns / 1e6, (double)total / 1e9);
	if (l) {
		report_culprit_text(r, l, c, sizeof(c));
		fprintf(out, "; longest %.1f ms on ", (double)(l->end - l->start) / 1e6);
		if (r->n_vms > 1)
			fprintf(out, "VM %s ", report_vm_label(r, l->vm, 0, vm, sizeof(vm)));
		fprintf(out, "vCPU %u (%s) at %.9f: %s, host CPU %d", l->vcpu, l->guest_comm, (double)l->start / 1e9, c,
			l->host_cpu);
	}
	fputc('\n', out);
}

void report_summary_line(const struct report *r, FILE *out)
{
	if (!r->has_guest || !r->has_switch || !r->host_switches) {
		fprintf(out, "stalls:  not known (%s)\n", r->n_notes ? r->notes[0] : "nothing to follow");
		return;
	}
	fputs("stalls:  ", out);
	text_headline(r, false, out);
}

static void text_stalls(const struct report *r, const struct report_filter *f, FILE *out)
{
	size_t shown = 0, n = 0;
	char c[160], g[40], vm[48], cause[48];

	for (size_t i = 0; i < r->n_stalls; i++)
		n += stall_shown(&r->stalls[i], f);
	if (!n)
		return;
	fprintf(out, "\nLongest stalls (%zu of %zu; --top N for more):\n", MIN(n, f->top), n);
	fprintf(out, "  %-19s ", "start (s)");
	if (r->n_vms > 1)
		fprintf(out, "%-12s ", "VM");
	fprintf(out, "%4s %9s  %-12s %-40s %4s  %s\n", "vCPU", "ms", "cause", "culprit", "host CPU", "guest task");
	for (size_t i = 0; i < r->n_stalls && shown < f->top; i++) {
		const struct report_stall *s = &r->stalls[i];

		if (!stall_shown(s, f))
			continue;
		shown++;
		report_culprit_text(r, s, c, sizeof(c));
		snprintf(g, sizeof(g), "%s (%d)", s->guest_comm, s->guest_pid);
		fprintf(out, "  %-19.9f ", (double)s->start / 1e9);
		if (r->n_vms > 1) /* the VM's name, or its QEMU pid */
			fprintf(out, "%-12s ", report_vm_label(r, s->vm, 0, vm, sizeof(vm)));
		fprintf(out, "%4u %9.3f  %-12s %-40s %4d      %s\n", s->vcpu, (double)(s->end - s->start) / 1e6,
			report_stall_cause(r, s, cause, sizeof(cause)), c, s->host_cpu, g);
	}
}

static int cmp_culprit(const void *a, const void *b)
{
	uint64_t x = ((const struct report_culprit *)a)->t.ns, y = ((const struct report_culprit *)b)->t.ns;

	return (x < y) - (x > y);
}

static void text_vcpu(const struct report *r, const struct vref *x, FILE *out)
{
	const struct report_vcpu *v = x->v;
	uint64_t st = report_vcpu_stalled(v), span = v->last_switch - v->first_switch;
	struct report_culprit *cs = NULL;

	if (x->m->name[0])
		fprintf(out, "  vCPU %u (VM %s, QEMU %d, thread %d): ", x->vcpu, x->m->name, x->m->machine_pid, v->tid);
	else
		fprintf(out, "  vCPU %u (VM %d, thread %d): ", x->vcpu, x->m->machine_pid, v->tid);
	if (v->tid < 0 || !v->switches) {
		fprintf(out, "%s\n", v->tid < 0 ? "its QEMU thread is unknown: not followed"
						: "its thread never switched on the host: state unknown");
		return;
	}
	fprintf(out, "stalled %.3f s (%.1f%% of %.3f s followed), %llu stalls, %llu over %.1f ms\n", (double)st / 1e9,
		span ? 100.0 * (double)st / (double)span : 0.0, (double)span / 1e9, (unsigned long long)v->n_stalls,
		(unsigned long long)v->n_stalls_min, (double)r->o.min_ns / 1e6);
	fprintf(out, "    host: running %.3f s, switched out while the guest idled %.3f s, guest task unknown %.3f s\n",
		(double)v->running_ns / 1e9, (double)v->off_idle_ns / 1e9, (double)v->off_unknown_ns / 1e9);
	fprintf(out, "    by cause:");
	for (int c = 0; c < REPORT_N_CAUSES; c++)
		if (v->stalled_ns[c])
			fprintf(out, " %s %.3f s", report_cause_name(c), (double)v->stalled_ns[c] / 1e9);
	fprintf(out, "%s\n", st ? "" : " none");
	if (v->n_culprits && (cs = malloc(v->n_culprits * sizeof(*cs)))) {
		memcpy(cs, v->culprits, v->n_culprits * sizeof(*cs));
		qsort(cs, v->n_culprits, sizeof(*cs), cmp_culprit);
		fprintf(out, "    culprits:");
		for (size_t i = 0; i < v->n_culprits && i < 5; i++) {
			int32_t vc, mp;
			long vm = report_vcpu_of(r, cs[i].t.pid, &vc, &mp);
			char l[48];

			fprintf(out, "%s %s (%d", i ? "," : "", cs[i].t.comm, cs[i].t.pid);
			if (vc >= 0)
				fprintf(out, " = VM %s vCPU %d", report_vm_label(r, vm, mp, l, sizeof(l)), vc);
			fprintf(out, ") %.1f%%", st ? 100.0 * (double)cs[i].t.ns / (double)st : 0.0);
		}
		fputc('\n', out);
		free(cs);
	}
	if (v->n_exits) {
		fprintf(out, "    kvm exits: %.3f s in all;", (double)v->exit_ns / 1e9);
		for (size_t i = 0; i < v->n_exits && i < 8; i++) {
			const char *nm = report_exit_name(r, v->exits[i].reason);

			fprintf(out, " reason %lld%s%s: %llu, %.3f ms", (long long)v->exits[i].reason, nm ? " " : "",
				nm ? nm : "", (unsigned long long)v->exits[i].n, (double)v->exits[i].ns / 1e6);
		}
		fputc('\n', out);
	}
}

void report_text(const struct report *r, const struct report_filter *f, FILE *out)
{
	struct vref *vs;
	size_t n = 0;

	fprintf(out, "report of %s: %zu VM(s), host events %.3f s (%llu sched_switch%s%s)\n", r->path ? r->path : "-",
		r->n_vms, r->has_host ? (double)(r->host_last - r->host_first) / 1e9 : 0.0,
		(unsigned long long)r->host_switches, r->has_wakeup ? ", sched_wakeup" : "", r->has_kvm ? ", kvm_exit/entry" : "");
	text_headline(r, true, out);
	text_stalls(r, f, out);
	for (size_t i = 0; i < r->n_vms; i++)
		n += r->vms[i].n_vcpus;
	if ((vs = calloc(n + 1, sizeof(*vs)))) {
		n = 0;
		for (size_t i = 0; i < r->n_vms; i++)
			for (uint32_t c = 0; c < r->vms[i].n_vcpus; c++)
				if (f->vcpu < 0 || (long)c == f->vcpu)
					vs[n++] = (struct vref){ &r->vms[i], &r->vms[i].vcpus[c], c };
		qsort(vs, n, sizeof(*vs), cmp_vref);
		fprintf(out, "\nPer vCPU, most stalled first:\n");
		for (size_t i = 0; i < n; i++)
			text_vcpu(r, &vs[i], out);
		free(vs);
	}
	if (r->n_notes)
		fprintf(out, "\nWhat this file cannot tell:\n");
	for (size_t i = 0; i < r->n_notes; i++)
		fprintf(out, "  - %s\n", r->notes[i]);
}
