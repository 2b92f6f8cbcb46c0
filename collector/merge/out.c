// SPDX-License-Identifier: GPL-2.0-only
#include "out.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "perf_writer.h"
#include "util.h"

#define ID_INDEX_MAX_PER_RECORD 1300 /* 16 + n * 48 must fit a u16 record size */
#define KERNEL_TEXT 0xffffffff81000000ull
#define ROUND_EVERY 10000

/* Emits one record; counts timed ones and writes FINISHED_ROUND markers between them. */
int merge_out_emit(struct merge_ctx *m, const void *rec, uint64_t ts)
{
	static const struct perf_event_header round = { .type = PERF_REC_FINISHED_ROUND, .size = 8 };
	int r = perf_writer_record(m->w, rec);

	if (r < 0 || ts == 0)
		return r;
	if (++m->since_round >= ROUND_EVERY) {
		m->since_round = 0;
		r = perf_writer_record(m->w, &round);
	}
	return r;
}

/* A VM's guest perf events' attrs (event cpu-clock:G ...), after its guest ftrace's. */
static void out_gperf_attrs(const struct merge_ctx *m, const struct merge_vm *vm, struct perf_attr_ids *out)
{
	const struct merge_guest *g = &vm->guest;

	for (size_t e = 0; e < vm->gp.n_events; e++) {
		struct perf_attr_ids *a = &out[e];

		perf_events_attr(&vm->gp.ev[e], g->perf_freq ? g->perf_freq : VT_PERF_DEFAULT_FREQ, CLOCK_MONOTONIC,
				 e == 0, &a->attr);
		a->attr.disabled = 0;
		a->attr.watermark = 0;
		a->attr.exclude_host = 1;
		a->attr.read_format = m->host.present ? m->host.attrs[0].attr.read_format : 0;
		a->n_ids = g->ncpus;
	}
}

/* One guest kernel MMAP record (pid = the machine's, the guest sample id of the first perf event,
 * or of its exit samples without guest perf: they follow the tracepoints'). */
static int out_gperf_kernel_map(struct merge_ctx *m, const struct merge_vm *vm, const char *name, uint64_t start,
				uint64_t len, uint64_t pgoff)
{
	const struct merge_guest *g = &vm->guest;
	uint8_t *p = m->rec;
	size_t nl = ALIGN_UP(strlen(name) + 1, (size_t)8);
	struct perf_event_header h = { .type = PERF_RECORD_MMAP, .misc = PERF_RECORD_MISC_GUEST_KERNEL };
	uint32_t pt[2] = { (uint32_t)g->machine_pid, 0 }, tr[6] = { (uint32_t)g->machine_pid, 0, 0, 0, 0, 0 };
	uint64_t v[3] = { start, len, pgoff };
	uint64_t id = g->id_base + g->n_events * g->ncpus;

	h.size = (uint16_t)(8 + 8 + 24 + nl + VT_PERF_SAMPLE_ID_LEN);
	memset(p, 0, h.size);
	memcpy(p, &h, 8);
	memcpy(p + 8, pt, 8);
	memcpy(p + 16, v, 24);
	memcpy(p + 40, name, strlen(name));
	memcpy(p + 40 + nl, tr, 24); /* pid/tid, time 0, cpu */
	memcpy(p + 40 + nl + 24, &id, 8);
	return merge_out_emit(m, p, 0);
}

/* The guest kernel's maps in its machine, as perf synthesizes them for a kernel: the kernel
 * "[guest.kernel.kallsyms.PID]_text" (pgoff = _text) up to the first module above it, then
 * one "[module]" map per module, so that guest kernel and module samples resolve against the
 * output's kcore_dir__PID/kallsyms (perf files a module's kallsyms lines under its map). */
uint64_t merge_out_vm_ktext(const struct merge_vm *vm)
{
	if (vm->gp.present && vm->gp.ktext)
		return vm->gp.ktext;
	return vm->exits.on && vm->guest.gsym ? vm->guest.gsym->ktext : 0;
}

static int out_gperf_kernel_mmap(struct merge_ctx *m, const struct merge_vm *vm)
{
	const struct gsym_module *mods = vm->guest.gsym ? vm->guest.gsym->mods : NULL;
	size_t n_mods = vm->guest.gsym ? vm->guest.gsym->n_mods : 0;
	uint64_t kend = ~0ull, ktext = merge_out_vm_ktext(vm);
	char name[64];
	int r;

	if (!ktext)
		return 0;
	for (size_t i = 0; i < n_mods; i++)
		if (mods[i].start > ktext) {
			kend = mods[i].start;
			break;
		}
	snprintf(name, sizeof(name), "[guest.kernel.kallsyms.%u]_text", (uint32_t)vm->guest.machine_pid);
	if ((r = out_gperf_kernel_map(m, vm, name, ktext, kend - ktext, ktext)) < 0)
		return r;
	for (size_t i = 0; i < n_mods; i++)
		if (mods[i].start > ktext &&
		    (r = out_gperf_kernel_map(m, vm, mods[i].name, mods[i].start, mods[i].end - mods[i].start, 0)) < 0)
			return r;
	return 0;
}

void merge_out_gperf_name(const struct merge_gperf *gp, size_t e, char *buf, size_t len)
{
	snprintf(buf, len, "%s:G", e < gp->n_events ? gp->ev[e].name : "unknown");
}

static void used_set(struct merge_ctx *m, uint64_t id)
{
	if (id < 65536)
		m->used[id / 8] |= (uint8_t)(1u << (id % 8));
}

static int used_from_format(const char *sys, const struct td_text *t, void *ud)
{
	const char *p = strstr(t->data, "\nID: ");

	if (!strncmp(t->data, "ID: ", 4))
		p = t->data - 1;
	if (p)
		used_set(ud, strtoull(p + 5, NULL, 10));
	return 0;
}

void merge_out_used_ids(struct merge_ctx *m)
{
	used_set(m, 0);
	if (m->have_td)
		tracing_data_for_each(&m->td, used_from_format, m);
	for (size_t i = 0; m->host.present && i < m->host.n_attrs; i++)
		if (m->host.attrs[i].attr.type == PERF_TYPE_TRACEPOINT)
			used_set(m, m->host.attrs[i].attr.config);
}

static uint64_t guest_id(const struct merge_guest *g, size_t ev, uint32_t cpu)
{
	return g->id_base + ev * g->ncpus + cpu;
}

/* A VM's exit samples' attr (exits.c): its <prefix>kvm:kvm_exit, with the guest's rip. */
static void out_exit_attr(const struct merge_ctx *m, const struct merge_vm *vm, struct perf_attr_ids *a)
{
	a->attr.type = PERF_TYPE_TRACEPOINT;
	a->attr.size = PERF_ATTR_SIZE;
	a->attr.config = vm->exits.new_id;
	a->attr.sample_period = 1;
	a->attr.sample_type = MERGE_GUEST_SAMPLE_TYPE | PERF_SAMPLE_IP;
	a->attr.read_format = m->host.present ? m->host.attrs[0].attr.read_format : 0;
	a->attr.sample_id_all = 1;
	a->attr.exclude_host = 1;
	a->n_ids = vm->guest.ncpus;
}

/* A VM's migrations' attr (migration.c): its <prefix>virtio_trace:migration. */
static void out_mig_attr(const struct merge_ctx *m, const struct merge_vm *vm, struct perf_attr_ids *a)
{
	out_exit_attr(m, vm, a);
	a->attr.config = vm->migs.new_id;
	a->attr.sample_type = MERGE_GUEST_SAMPLE_TYPE;
}

/* A VM's tracepoint attrs (ng), its guest perf attrs (np), its exit samples' (nx), then its
 * migrations' (nm) at a, ids from its id_base. */
static int out_vm_attrs(const struct merge_ctx *m, struct merge_vm *vm, struct perf_attr_ids *a, size_t ng, size_t np,
			size_t nx, size_t nm)
{
	struct merge_guest *g = &vm->guest;
	size_t nh = m->host.present ? m->host.n_attrs : 0;

	for (size_t e = 0; e < ng; e++, a++) {
		a->attr.type = PERF_TYPE_TRACEPOINT;
		a->attr.size = PERF_ATTR_SIZE;
		a->attr.config = g->events[e].new_id;
		a->attr.sample_period = 1;
		a->attr.sample_type = MERGE_GUEST_SAMPLE_TYPE;
		a->attr.read_format = nh ? m->host.attrs[0].attr.read_format : 0;
		a->attr.sample_id_all = 1;
		a->attr.exclude_host = 1;
		a->ids = calloc(g->ncpus, 8);
		if (!a->ids)
			return -ENOMEM;
		a->n_ids = g->ncpus;
		for (uint32_t c = 0; c < g->ncpus; c++)
			a->ids[c] = guest_id(g, e, c);
	}
	out_gperf_attrs(m, vm, a);
	if (nx)
		out_exit_attr(m, vm, &a[np]);
	if (nm)
		out_mig_attr(m, vm, &a[np + nx]);
	for (size_t e = 0; e < np + nx + nm; e++, a++) {
		a->ids = calloc(g->ncpus, 8);
		if (!a->ids)
			return -ENOMEM;
		for (uint32_t c = 0; c < g->ncpus; c++)
			a->ids[c] = guest_id(g, ng + e, c);
	}
	return 0;
}

uint32_t merge_out_new_id(struct merge_ctx *m)
{
	for (uint32_t id = 65535; id > 0; id--)
		if (!(m->used[id / 8] & (1u << (id % 8)))) {
			m->used[id / 8] |= (uint8_t)(1u << (id % 8));
			return id;
		}
	return 0;
}

size_t merge_out_vm_n_events(const struct merge_vm *vm)
{
	return vm->guest.present ? vm->guest.n_events : 0;
}

size_t merge_out_vm_n_perf(const struct merge_vm *vm)
{
	return vm->gp.present ? vm->gp.n_events : 0;
}

size_t merge_out_vm_n_exits(const struct merge_vm *vm)
{
	return vm->exits.on ? 1 : 0;
}

size_t merge_out_vm_n_migs(const struct merge_vm *vm)
{
	return vm->migs.on ? 1 : 0;
}

/* A VM's attrs in the output: tracepoints, guest perf events, exit samples, migrations. */
static size_t vm_n_attrs(const struct merge_vm *vm)
{
	return merge_out_vm_n_events(vm) + merge_out_vm_n_perf(vm) + merge_out_vm_n_exits(vm) + merge_out_vm_n_migs(vm);
}

/* Host attrs, then each VM's; each VM's sample ids follow the previous one's (the first's above
 * the host's largest id). */
int merge_out_attrs(struct merge_ctx *m)
{
	size_t nh = m->host.present ? m->host.n_attrs : 0, n = nh;
	uint64_t id_base = (m->host.present ? m->host.max_id : 0) + 1;
	int r;

	for (size_t v = 0; v < m->n_vm; v++)
		n += vm_n_attrs(&m->vm[v]);
	m->attrs = calloc(n + 1, sizeof(*m->attrs));
	if (!m->attrs)
		return -ENOMEM;
	for (size_t i = 0; i < nh; i++)
		m->attrs[i] = m->host.attrs[i];
	m->n_attrs = nh;
	for (size_t v = 0; v < m->n_vm; v++) {
		struct merge_vm *vm = &m->vm[v];
		size_t ng = merge_out_vm_n_events(vm), np = merge_out_vm_n_perf(vm), nx = merge_out_vm_n_exits(vm);
		size_t nm = merge_out_vm_n_migs(vm);

		vm->guest.id_base = id_base;
		r = out_vm_attrs(m, vm, &m->attrs[m->n_attrs], ng, np, nx, nm);
		m->n_attrs += ng + np + nx + nm; /* merge_out_free frees what was allocated */
		if (r < 0)
			return r;
		id_base += (ng + np + nx + nm) * vm->guest.ncpus;
	}
	return 0;
}

/* The sample_id_all trailer of guest non-sample records: TID, TIME, CPU, IDENTIFIER. */
static size_t put_trailer(uint8_t *p, int32_t pid, int32_t tid, uint64_t ts, uint32_t cpu, uint64_t id)
{
	uint32_t t[2] = { (uint32_t)pid, (uint32_t)tid }, c[2] = { cpu, 0 };

	memcpy(p, t, 8);
	memcpy(p + 8, &ts, 8);
	memcpy(p + 16, c, 8);
	memcpy(p + 24, &id, 8);
	return 32;
}

/* perf's ID_INDEX: per id its idx, cpu and tid, then (extended) machine_pid and vCPU; as a host's
 * (--guest-as-host) the first part alone, the vCPU as the cpu. */
static int out_index_chunk(struct merge_ctx *m, const struct merge_vm *vm, size_t from, size_t n)
{
	const struct merge_guest *g = &vm->guest;
	uint8_t *p = m->rec;
	struct perf_event_header h = { .type = PERF_REC_ID_INDEX, .size = (uint16_t)(16 + n * (m->as_host ? 32 : 48)) };
	uint64_t nr = n;

	memcpy(p, &h, 8);
	memcpy(p + 8, &nr, 8);
	for (size_t k = 0; k < n; k++) {
		size_t i = from + k;
		uint64_t vcpu = i % g->ncpus;
		uint64_t e1[4] = { g->id_base + i, vcpu, m->as_host ? vcpu : (uint64_t)-1,
				   m->as_host ? (uint64_t)-1 : (uint64_t)(int64_t)merge_vcpu_tid(&vm->vcpu, (uint32_t)vcpu) };
		uint64_t e2[2] = { g->machine_pid, vcpu };

		memcpy(p + 16 + k * 32, e1, 32);
		if (!m->as_host)
			memcpy(p + 16 + n * 32 + k * 16, e2, 16);
	}
	return perf_writer_record(m->w, p);
}

/* A guest record's cpumode: the guest kernel's, or the host kernel's for --guest-as-host. */
static uint16_t guest_misc(const struct merge_ctx *m)
{
	return m->as_host ? PERF_RECORD_MISC_KERNEL : PERF_RECORD_MISC_GUEST_KERNEL;
}

static int out_kernel_mmap(struct merge_ctx *m, const struct merge_vm *vm)
{
	static const char name[] = "[kernel.kallsyms]_text";
	size_t nl = ALIGN_UP(sizeof(name), 8);
	uint8_t *p = m->rec;
	struct perf_event_header h = { .type = PERF_RECORD_MMAP, .misc = PERF_RECORD_MISC_KERNEL,
				       .size = (uint16_t)(8 + 32 + nl + 32) };
	uint32_t pt[2] = { (uint32_t)-1, 0 };
	uint64_t v[3] = { KERNEL_TEXT, 0x1000000, KERNEL_TEXT };

	memset(p, 0, h.size);
	memcpy(p, &h, 8);
	memcpy(p + 8, pt, 8);
	memcpy(p + 16, v, 24);
	memcpy(p + 40, name, sizeof(name));
	put_trailer(p + 40 + nl, -1, -1, 0, 0, vm->guest.id_base);
	return perf_writer_record(m->w, p);
}

static size_t vm_ids(const struct merge_vm *vm)
{
	return vm_n_attrs(vm) * vm->guest.ncpus;
}

/* Each VM's ID_INDEX (its ids' machine_pid and vCPU), then, with no host recording, the host
 * kernel map perf expects (with the first VM's first id), then each VM's guest kernel maps. */
int merge_out_guest_index(struct merge_ctx *m)
{
	const struct merge_vm *first = NULL;
	int r = 0;

	m->index_done = true;
	for (size_t v = 0; v < m->n_vm && r >= 0; v++) {
		size_t total = vm_ids(&m->vm[v]);

		if (total && !first)
			first = &m->vm[v];
		for (size_t i = 0; i < total && r >= 0; i += ID_INDEX_MAX_PER_RECORD)
			r = out_index_chunk(m, &m->vm[v], i, MIN((size_t)ID_INDEX_MAX_PER_RECORD, total - i));
	}
	if (r >= 0 && !m->host.present && first)
		r = out_kernel_mmap(m, first);
	for (size_t v = 0; v < m->n_vm && r >= 0; v++)
		r = out_gperf_kernel_mmap(m, &m->vm[v]);
	return r;
}

static int out_comm(struct merge_ctx *m, const struct merge_vm *vm, const struct guest_task *t, uint64_t ts,
		    uint16_t misc)
{
	size_t cl = ALIGN_UP(strlen(t->comm) + 1, 8);
	uint8_t *p = m->rec;
	struct perf_event_header h = { .type = PERF_RECORD_COMM, .misc = guest_misc(m) | misc,
				       .size = (uint16_t)(16 + cl + 32) };
	uint32_t pt[2] = { (uint32_t)t->tgid, (uint32_t)t->pid };

	memset(p, 0, h.size);
	memcpy(p, &h, 8);
	memcpy(p + 8, pt, 8);
	memcpy(p + 16, t->comm, strlen(t->comm));
	put_trailer(p + 16 + cl, t->tgid, t->pid, ts, 0, vm->guest.id_base);
	return perf_writer_record(m->w, p);
}

static int out_comms(struct merge_ctx *m, struct merge_vm *vm, uint64_t ts)
{
	const struct merge_guest *g = &vm->guest;
	int r = 0;

	vm->comms_done = true;
	for (size_t i = 0; g->tasks && i < g->n_tasks && r >= 0; i++)
		if (g->tasks[i].comm[0])
			r = out_comm(m, vm, &g->tasks[i], ts, 0);
	return r;
}

static int out_lost(struct merge_ctx *m, struct merge_vm *vm, struct guest_cpu *c)
{
	uint8_t *p = m->rec;
	struct perf_event_header h = { .type = PERF_RECORD_LOST_SAMPLES, .misc = guest_misc(m),
				       .size = 8 + 8 + 32 };

	memcpy(p, &h, 8);
	memcpy(p + 8, &c->pending_lost, 8);
	put_trailer(p + 16, -1, -1, c->lost_ts, merge_vcpu_cpu(&vm->vcpu, c->cpu), guest_id(&vm->guest, 0, c->cpu));
	c->pending_lost = 0;
	m->guest_lost_records++;
	m->last_ts = MAX(m->last_ts, c->lost_ts);
	return perf_writer_record(m->w, p);
}

/* A task named by this event for the first time, or renamed since (exec): a COMM at the
 * event's time, so perf shows the name from then on (the merge reads each event once). */
static int out_renames(struct merge_ctx *m, struct merge_vm *vm, const struct guest_cpu *c,
		       const struct guest_event *e)
{
	const struct ftrace_event *ev = &c->head;
	int r = 0;

	for (int i = 0; i < 2 && r >= 0; i++) {
		const struct guest_task *t;
		bool first;
		int32_t pid;

		if (!e->comm[i])
			continue;
		memcpy(&pid, ev->data + e->pid[i]->offset, 4);
		t = merge_meta_task_see(&vm->guest, pid, (const char *)ev->data + e->comm[i]->offset, 16, &first);
		if (t)
			r = out_comm(m, vm, t, c->head_ts, first ? 0 : PERF_RECORD_MISC_COMM_EXEC);
	}
	return r;
}

static int out_sample(struct merge_ctx *m, struct merge_vm *vm, struct guest_cpu *c)
{
	struct merge_guest *g = &vm->guest;
	const struct ftrace_event *ev = &c->head;
	uint16_t old_id;
	int32_t idx, pid;
	struct guest_event *e;
	uint8_t *p = m->rec;
	uint32_t raw_size, cpu[2] = { merge_vcpu_cpu(&vm->vcpu, c->cpu), 0 }, tid[2];
	struct perf_event_header h = { .type = PERF_RECORD_SAMPLE, .misc = guest_misc(m) };
	size_t plen;
	uint64_t id, period = 1;
	uint16_t new_id;

	int r;

	memcpy(&old_id, ev->data, 2);
	idx = g->by_id[old_id];
	e = &g->events[idx];
	r = out_renames(m, vm, c, e);
	if (r < 0)
		return r;
	memcpy(&pid, ev->data + e->pid_off, 4);
	if (vm->exits.cur) /* the task its vCPU runs, for the exit samples (exits.c) */
		memcpy(&vm->exits.cur[c->cpu], idx == vm->exits.sw_event ? ev->data + e->pid[1]->offset : ev->data + e->pid_off, 4);
	tid[0] = (uint32_t)merge_meta_tgid(g, pid);
	tid[1] = (uint32_t)pid;
	id = guest_id(g, (size_t)idx, c->cpu);
	if (e->n_sym) {
		plen = merge_gsym_record(g, e, ev->data, ev->len, p + 52); /* pointers named (gsym.c) */
	} else {
		memcpy(p + 52, ev->data, ev->len);
		plen = ev->len;
	}
	raw_size = (uint32_t)ALIGN_UP(plen + 4, 8) - 4;
	h.size = (uint16_t)(52 + raw_size);
	memset(p + 52 + plen, 0, raw_size - plen);
	memset(p, 0, 52);
	memcpy(p, &h, 8);
	memcpy(p + 8, &id, 8);
	memcpy(p + 16, tid, 8);
	memcpy(p + 24, &c->head_ts, 8);
	memcpy(p + 32, cpu, 8);
	memcpy(p + 40, &period, 8);
	memcpy(p + 48, &raw_size, 4);
	new_id = (uint16_t)e->new_id;
	memcpy(p + 52, &new_id, 2); /* common_type: offset 0, size 2 (checked at load) */
	e->count++;
	c->events++;
	m->guest_samples++;
	vm->samples++;
	m->first_sample = MIN(m->first_sample, c->head_ts);
	m->last_sample = MAX(m->last_sample, c->head_ts);
	m->last_ts = MAX(m->last_ts, c->head_ts);
	c->head_valid = false;
	return perf_writer_record(m->w, p);
}

int merge_out_guest(struct merge_ctx *m, struct merge_vm *vm, struct guest_cpu *c)
{
	int r;

	if (c->pending_lost)
		r = out_lost(m, vm, c);
	else if (!vm->comms_done && (r = out_comms(m, vm, c->head_ts)) < 0)
		return r;
	else
		r = out_sample(m, vm, c);
	if (r >= 0 && ++m->since_round >= 10000) {
		static const struct perf_event_header round = { .type = PERF_REC_FINISHED_ROUND, .size = 8 };

		m->since_round = 0;
		r = perf_writer_record(m->w, &round);
	}
	return r;
}

void merge_out_free(struct merge_ctx *m)
{
	size_t nh = m->host.present ? m->host.n_attrs : 0;

	for (size_t i = nh; m->attrs && i < m->n_attrs; i++)
		free(m->attrs[i].ids);
	free(m->attrs);
	m->attrs = NULL;
	tracing_data_free(&m->td);
}
