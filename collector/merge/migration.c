// SPDX-License-Identifier: GPL-2.0-only
/* The live migrations a session followed, in the file (docs/perf-data.md "Migration samples"):
 * one sample of the guest's machine per migration (session.ini migration_N), as
 * <prefix>virtio_trace:migration with its source and destination QEMU pids and the blackout:
 * the step by which the guest's clock fell behind the host's across it, placed where the
 * clock map has it. perf script prints it; the report (collector/report) takes the destination
 * QEMU's vCPU threads from its time on and names the blackout on each vCPU "migration". */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock_kvm.h"
#include "out.h"
#include "util.h"

/* The raw data: the common fields, from_pid, to_pid, blackout_ns, start_ns, switch_ns, index. */
#define MIG_RAW_LEN 44u
/* A step under this is a rate change's seam, not a paused guest (a migration's pause is
 * milliseconds: docs/migration.md) */
#define MIG_STEP_MIN_NS 100000ull
#define MIG_AFTER_NS 1000000000ull /* a step placed up to this long after its switch is its own */

/* File format: a tracepoint format as tracefs gives one, written here (perf's libtraceevent
 * parses it from TRACING_DATA). */
static int mig_format(struct merge_migs *x)
{
	FILE *f = open_memstream(&x->text, &x->text_len);

	if (!f)
		return -ENOMEM;
	fprintf(f, "name: migration\nID: %u\nformat:\n"
		   "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
		   "\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
		   "\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
		   "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"
		   "\tfield:int from_pid;\toffset:8;\tsize:4;\tsigned:1;\n"
		   "\tfield:int to_pid;\toffset:12;\tsize:4;\tsigned:1;\n"
		   "\tfield:u64 blackout_ns;\toffset:16;\tsize:8;\tsigned:0;\n"
		   "\tfield:u64 start_ns;\toffset:24;\tsize:8;\tsigned:0;\n"
		   "\tfield:u64 switch_ns;\toffset:32;\tsize:8;\tsigned:0;\n"
		   "\tfield:unsigned int index;\toffset:40;\tsize:4;\tsigned:0;\n\n"
		   "print fmt: \"QEMU %%d -> %%d, blackout %%llu ns at %%llu\", REC->from_pid, REC->to_pid, "
		   "REC->blackout_ns, REC->start_ns\n",
		x->new_id);
	return fclose(f) < 0 || !x->text ? -ENOMEM : 0;
}

/* The step at a boundary of the ptp map: [host time of guest g on the old line, on the new]. */
static void step_ptp(const struct clock_map *c, size_t i, uint64_t *lo, uint64_t *hi)
{
	long double g = (long double)c->seg[i].guest_start;

	*lo = (uint64_t)MAX((long double)c->seg[i - 1].offset_ns + c->seg[i - 1].slope * g, 0.0L);
	*hi = (uint64_t)MAX((long double)c->seg[i].offset_ns + c->seg[i].slope * g, 0.0L);
}

/* The same for the kvm map, vCPU 0's readings: the guest TSC at the new reading, by each. */
static void step_kvm(const struct clock_kvm *k, size_t i, uint64_t *lo, uint64_t *hi)
{
	const struct clock_kvm_point *p = k->p[0];

	*lo = clock_kvm_tsc_to_ns(k, tsc_guest_to_host(&p[i - 1].k, p[i].guest_start));
	*hi = clock_kvm_tsc_to_ns(k, tsc_guest_to_host(&p[i].k, p[i].guest_start));
}

/* Migration k's blackout: the largest forward step of the guest's clock map between the
 * session's switch before it (or the start) and its own switch, plus MIG_AFTER_NS: a step is
 * placed at the first probe (or kvm reading) after it, and the switch can come before that (a
 * kvm reading taken at the switch; sockets: the daemon moves to the destination when the guest
 * first sends there, and its probes go there from then on). None found: at the switch, length 0
 * (not measured). */
static void mig_place(const struct merge_guest *g, uint32_t k, struct merge_mig_out *o)
{
	uint64_t after = k ? g->mig[k - 1].mono_ns + MIG_AFTER_NS : 0, until = g->mig[k].mono_ns, lo, hi;
	bool kvm = g->kvm && g->kvm->nvcpus && g->kvm->n[0] > 1;
	size_t n = kvm ? g->kvm->n[0] : g->clock.n;

	o->start = until;
	o->len = 0;
	until += MIG_AFTER_NS;
	for (size_t i = 1; g->clock_aligned && i < n; i++) {
		if (kvm)
			step_kvm(g->kvm, i, &lo, &hi);
		else
			step_ptp(&g->clock, i, &lo, &hi);
		if (hi > lo && lo > after && lo <= until && hi - lo >= MIG_STEP_MIN_NS && hi - lo > o->len) {
			o->start = lo;
			o->len = hi - lo;
		}
	}
}

uint32_t merge_migs_update(struct merge_vm *vm, uint64_t fitted_until)
{
	const struct merge_guest *g = &vm->guest;
	struct merge_migs *x = &vm->migs;
	uint32_t n0 = x->n;

	/* placed once the fit has probes past the switch and either holds its step or reaches past
	 * the window the step may lie in (the live fit's probes past a migration's burst may stay
	 * unfitted while the guest streams: waiting for the window's end alone waited to the end) */
	for (; x->on && x->n < g->nmig && x->n < MERGE_MAX_MIGRATIONS && g->mig[x->n].mono_ns < fitted_until; x->n++) {
		struct merge_mig_out *b = &x->b[x->n];

		mig_place(g, x->n, b);
		if (!b->len && g->mig[x->n].mono_ns + MIG_AFTER_NS >= fitted_until)
			break;
		b->at = b->start;
		b->from = g->mig[x->n].from;
		b->to = g->mig[x->n].to;
		b->switch_ns = g->mig[x->n].mono_ns;
	}
	return x->n - n0;
}

/* A VM whose session migrated, or a live merge's (one may come while it follows: the attr is
 * there from the start, its ids in the first ID_INDEX), gets the attr and the format. */
int merge_migs_prepare(struct merge_ctx *m)
{
	for (size_t v = 0; v < m->n_vm; v++) {
		struct merge_vm *vm = &m->vm[v];
		const struct merge_guest *g = &vm->guest;
		struct merge_migs *x = &vm->migs;
		char sys[sizeof(vm->sys_prefix) + 16];
		int r;

		if (!g->present || !(g->nmig || g->follow) || m->as_host || !m->have_td)
			continue;
		if (!(x->new_id = merge_out_new_id(m)))
			continue; /* no id left: the migrations stay in session.ini alone */
		if ((r = mig_format(x)) < 0)
			return r;
		snprintf(sys, sizeof(sys), "%svirtio_trace", vm->sys_prefix);
		if ((r = tracing_data_add_event(&m->td, sys, x->text, x->text_len)) < 0)
			return r;
		x->on = true;
		merge_migs_update(vm, UINT64_MAX);
	}
	return 0;
}

bool merge_migs_peek(const struct merge_vm *vm, uint64_t *ret_ts)
{
	const struct merge_migs *x = &vm->migs;

	if (!x->on || x->next >= x->n)
		return false;
	*ret_ts = x->b[x->next].at;
	return true;
}

int merge_migs_emit(struct merge_ctx *m, struct merge_vm *vm)
{
	struct merge_migs *x = &vm->migs;
	const struct merge_mig_out *b = &x->b[x->next];
	const struct merge_guest *g = &vm->guest;
	struct perf_event_header h = { .type = PERF_RECORD_SAMPLE, .misc = PERF_RECORD_MISC_GUEST_KERNEL,
				       .size = (uint16_t)(48 + 4 + MIG_RAW_LEN) };
	uint64_t id = g->id_base + (merge_out_vm_n_events(vm) + merge_out_vm_n_perf(vm) + merge_out_vm_n_exits(vm)) * g->ncpus;
	uint64_t zero = 0, period = 1;
	uint32_t raw_len = MIG_RAW_LEN, index = x->next;
	int32_t pids[2] = { (int32_t)b->from, (int32_t)b->to };
	uint16_t new_id = (uint16_t)x->new_id;
	uint8_t *p = m->rec;

	memset(p, 0, h.size);
	memcpy(p, &h, 8);
	memcpy(p + 8, &id, 8);
	memcpy(p + 16, &zero, 8); /* guest pid/tid 0: the machine's, no task's */
	memcpy(p + 24, &b->at, 8);
	memcpy(p + 32, &zero, 8); /* vCPU 0 */
	memcpy(p + 40, &period, 8);
	memcpy(p + 48, &raw_len, 4);
	memcpy(p + 52, &new_id, 2); /* common_type */
	memcpy(p + 52 + 8, pids, 8);
	memcpy(p + 52 + 16, &b->len, 8);
	memcpy(p + 52 + 24, &b->start, 8);
	memcpy(p + 52 + 32, &b->switch_ns, 8);
	memcpy(p + 52 + 40, &index, 4);
	x->next++;
	m->guest_samples++;
	m->last_ts = MAX(m->last_ts, b->at);
	return merge_out_emit(m, p, b->at);
}

void merge_migs_summary(const struct merge_vm *vm)
{
	const struct merge_migs *x = &vm->migs;

	for (uint32_t k = 0; x->on && k < x->n; k++)
		if (x->b[k].len)
			printf("  migrated: QEMU %u -> %u at %.9f s, blackout %.3f ms (the guest's clock step; "
			       "%svirtio_trace:migration)\n", x->b[k].from, x->b[k].to, (double)x->b[k].start / 1e9,
			       (double)x->b[k].len / 1e6, vm->sys_prefix);
		else
			printf("  migrated: QEMU %u -> %u at %.9f s, blackout not measured (no step in the guest's "
			       "clock map; %svirtio_trace:migration)\n", x->b[k].from, x->b[k].to,
			       (double)x->b[k].start / 1e9, vm->sys_prefix);
}

void merge_migs_free(struct merge_vm *vm)
{
	free(vm->migs.text);
	memset(&vm->migs, 0, sizeof(vm->migs));
}
