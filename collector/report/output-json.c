// SPDX-License-Identifier: GPL-2.0-only
/* The report for a program: one JSON object (field names fixed by issue 30, see
 * docs/guide-report.md): "stalls" (vcpu, start_ns, duration_ns, cause, culprit_comm,
 * culprit_pid, host_cpu, guest_task, guest_pid, and more) and "vcpus" (per-vCPU totals). */
#include <string.h>

#include "report.h"

static void json_str(FILE *out, const char *s)
{
	fputc('"', out);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(out, "\\%c", c);
		else if (c < 0x20 || c >= 0x7f)
			fprintf(out, "\\u%04x", c);
		else
			fputc(c, out);
	}
	fputc('"', out);
}

static void json_str_or_null(FILE *out, const char *s)
{
	if (s)
		json_str(out, s);
	else
		fputs("null", out);
}

/* The culprit vCPU's VM name and guest task (null and -1 when not known). */
static void json_culprit_guest(const struct report *r, const struct report_stall *s, FILE *out)
{
	bool in_file = s->culprit_vm >= 0 && (size_t)s->culprit_vm < r->n_vms;
	bool g = in_file && s->culprit.g.pid >= 0;

	fputs(",\"culprit_vm_name\":", out);
	json_str_or_null(out, in_file && r->vms[s->culprit_vm].name[0] ? r->vms[s->culprit_vm].name : NULL);
	fputs(",\"culprit_guest_comm\":", out);
	json_str_or_null(out, g ? s->culprit.g.comm : NULL);
	fprintf(out, ",\"culprit_guest_pid\":%d", g ? s->culprit.g.pid : -1);
}

static void json_stall(const struct report *r, const struct report_stall *s, FILE *out)
{
	const char *nm;

	fprintf(out, "{\"vcpu\":%u,\"machine_pid\":%d,\"start_ns\":%llu,\"end_ns\":%llu,\"duration_ns\":%llu,\"cause\":",
		s->vcpu, r->vms[s->vm].machine_pid, (unsigned long long)s->start, (unsigned long long)s->end,
		(unsigned long long)(s->end - s->start));
	json_str(out, report_cause_name(s->cause));
	fputs(",\"why\":", out);
	if (s->why)
		json_str(out, s->why);
	else
		fputs("null", out);
	fputs(",\"culprit_comm\":", out);
	if (s->culprit.pid >= 0)
		json_str(out, s->culprit.comm);
	else
		fputs("null", out);
	fprintf(out, ",\"culprit_pid\":%d,\"culprit_ns\":%llu,\"culprit_vm\":%d,\"culprit_vcpu\":%d,\"host_cpu\":%d,"
		     "\"guest_task\":", s->culprit.pid, (unsigned long long)s->culprit.ns, s->culprit_machine_pid,
		s->culprit_vcpu, s->host_cpu);
	json_str(out, s->guest_comm);
	json_culprit_guest(r, s, out);
	fprintf(out, ",\"guest_pid\":%d,\"exit_reason\":%lld,\"woken_ns\":%llu,\"waker_pid\":%d,\"waker_comm\":",
		s->guest_pid, (long long)s->exit_reason, (unsigned long long)s->woken_at, s->woken_at ? s->waker_pid : -1);
	if (s->woken_at)
		json_str(out, s->waker_comm);
	else
		fputs("null", out);
	fprintf(out, ",\"migration_from_pid\":%d,\"migration_to_pid\":%d", s->cause == REPORT_MIGRATION ? s->mig_from : -1,
		s->cause == REPORT_MIGRATION ? s->mig_to : -1);
	fputs(",\"exit_name\":", out);
	if (s->cause == REPORT_VM_EXIT && (nm = report_exit_name(r, s->exit_reason)))
		json_str(out, nm);
	else
		fputs("null", out);
	fputc('}', out);
}

static void json_vcpu(const struct report *r, const struct report_vm *m, uint32_t c, FILE *out)
{
	const struct report_vcpu *v = &m->vcpus[c];

	fprintf(out, "{\"vcpu\":%u,\"machine_pid\":%d,\"tid\":%d,\"followed\":%s,\"first_switch_ns\":%llu,"
		     "\"last_switch_ns\":%llu,\"running_ns\":%llu,\"off_idle_ns\":%llu,\"off_unknown_ns\":%llu,"
		     "\"stalled_ns\":%llu",
		c, m->machine_pid, v->tid, v->tid > 0 && v->switches ? "true" : "false", (unsigned long long)v->first_switch,
		(unsigned long long)v->last_switch, (unsigned long long)v->running_ns, (unsigned long long)v->off_idle_ns,
		(unsigned long long)v->off_unknown_ns, (unsigned long long)report_vcpu_stalled(v));
	for (int k = 0; k < REPORT_N_CAUSES; k++)
		fprintf(out, ",\"stalled_%s_ns\":%llu", report_cause_name(k), (unsigned long long)v->stalled_ns[k]);
	fprintf(out, ",\"stalls\":%llu,\"stalls_over_min\":%llu,\"host_switches\":%llu,\"dropped_intervals\":%llu,"
		     "\"exit_ns\":%llu,\"culprits\":[",
		(unsigned long long)v->n_stalls, (unsigned long long)v->n_stalls_min, (unsigned long long)v->switches,
		(unsigned long long)v->dropped_intervals, (unsigned long long)v->exit_ns);
	for (size_t i = 0; i < v->n_culprits; i++) {
		fprintf(out, "%s{\"comm\":", i ? "," : "");
		json_str(out, v->culprits[i].t.comm);
		fprintf(out, ",\"pid\":%d,\"ns\":%llu,\"stalls\":%u}", v->culprits[i].t.pid,
			(unsigned long long)v->culprits[i].t.ns, v->culprits[i].n);
	}
	fputs("],\"exits\":[", out);
	for (size_t i = 0; i < v->n_exits; i++) {
		const char *nm = report_exit_name(r, v->exits[i].reason);

		fprintf(out, "%s{\"reason\":%lld,\"name\":", i ? "," : "", (long long)v->exits[i].reason);
		if (nm)
			json_str(out, nm);
		else
			fputs("null", out);
		fprintf(out, ",\"n\":%llu,\"ns\":%llu}", (unsigned long long)v->exits[i].n, (unsigned long long)v->exits[i].ns);
	}
	fputs("]}", out);
}

void report_json(const struct report *r, const struct report_filter *f, FILE *out)
{
	bool first = true;

	fputs("{\"file\":", out);
	json_str(out, r->path ? r->path : "-");
	fprintf(out, ",\"records\":%llu,\"out_of_order\":%llu", (unsigned long long)r->records,
		(unsigned long long)r->out_of_order);
	fprintf(out, ",\"min_ns\":%llu,\"host_first_ns\":%llu,\"host_last_ns\":%llu,\"host_switches\":%llu,"
		     "\"has_wakeup\":%s,\"has_kvm\":%s,\"vms\":[",
		(unsigned long long)r->o.min_ns, (unsigned long long)(r->has_host ? r->host_first : 0),
		(unsigned long long)r->host_last, (unsigned long long)r->host_switches, r->has_wakeup ? "true" : "false",
		r->has_kvm ? "true" : "false");
	for (size_t i = 0; i < r->n_vms; i++)
	{
		fprintf(out, "%s{\"machine_pid\":%d,\"name\":", i ? "," : "", r->vms[i].machine_pid);
		json_str_or_null(out, r->vms[i].name[0] ? r->vms[i].name : NULL);
		fprintf(out, ",\"vcpus\":%u,\"threads_named\":%u,\"not_judged\":%llu,\"guest_switches\":%llu}",
			r->vms[i].n_vcpus, r->vms[i].threads_named, (unsigned long long)r->vms[i].not_judged,
			(unsigned long long)r->vms[i].guest_switches);
	}
	fputs("],\"stalls\":[", out);
	for (size_t i = 0; i < r->n_stalls; i++) {
		if (f->vcpu >= 0 && (long)r->stalls[i].vcpu != f->vcpu)
			continue;
		fputs(first ? "\n" : ",\n", out);
		json_stall(r, &r->stalls[i], out);
		first = false;
	}
	fputs("],\"vcpus\":[", out);
	first = true;
	for (size_t i = 0; i < r->n_vms; i++)
		for (uint32_t c = 0; c < r->vms[i].n_vcpus; c++) {
			if (f->vcpu >= 0 && (long)c != f->vcpu)
				continue;
			fputs(first ? "\n" : ",\n", out);
			json_vcpu(r, &r->vms[i], c, out);
			first = false;
		}
	fputs("],\"notes\":[", out);
	for (size_t i = 0; i < r->n_notes; i++) {
		fputs(i ? "," : "", out);
		json_str(out, r->notes[i]);
	}
	fputs("]}\n", out);
}
