// SPDX-License-Identifier: GPL-2.0-only
#include "out.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "perf_reader.h"
#include "perf_topology.h"
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

/* One guest kernel MMAP record (pid = the machine's, the guest sample id of the first perf event). */
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
static int out_gperf_kernel_mmap(struct merge_ctx *m, const struct merge_vm *vm)
{
	const struct merge_gperf *gp = &vm->gp;
	const struct gsym_module *mods = vm->guest.gsym ? vm->guest.gsym->mods : NULL;
	size_t n_mods = vm->guest.gsym ? vm->guest.gsym->n_mods : 0;
	uint64_t kend = ~0ull;
	char name[64];
	int r;

	if (!gp->present || !gp->ktext)
		return 0;
	for (size_t i = 0; i < n_mods; i++)
		if (mods[i].start > gp->ktext) {
			kend = mods[i].start;
			break;
		}
	snprintf(name, sizeof(name), "[guest.kernel.kallsyms.%u]_text", (uint32_t)vm->guest.machine_pid);
	if ((r = out_gperf_kernel_map(m, vm, name, gp->ktext, kend - gp->ktext, gp->ktext)) < 0)
		return r;
	for (size_t i = 0; i < n_mods; i++)
		if (mods[i].start > gp->ktext &&
		    (r = out_gperf_kernel_map(m, vm, mods[i].name, mods[i].start, mods[i].end - mods[i].start, 0)) < 0)
			return r;
	return 0;
}

static void out_gperf_name(const struct merge_gperf *gp, size_t e, char *buf, size_t len)
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

/* A VM's tracepoint attrs (ng) then its guest perf attrs (np) at a, ids from its id_base. */
static int out_vm_attrs(const struct merge_ctx *m, struct merge_vm *vm, struct perf_attr_ids *a, size_t ng, size_t np)
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
	for (size_t e = 0; e < np; e++, a++) {
		a->ids = calloc(g->ncpus, 8);
		if (!a->ids)
			return -ENOMEM;
		for (uint32_t c = 0; c < g->ncpus; c++)
			a->ids[c] = guest_id(g, ng + e, c);
	}
	return 0;
}

static size_t vm_n_events(const struct merge_vm *vm)
{
	return vm->guest.present ? vm->guest.n_events : 0;
}

static size_t vm_n_perf(const struct merge_vm *vm)
{
	return vm->gp.present ? vm->gp.n_events : 0;
}

/* Host attrs, then each VM's; each VM's sample ids follow the previous one's (the first's above
 * the host's largest id). */
int merge_out_attrs(struct merge_ctx *m)
{
	size_t nh = m->host.present ? m->host.n_attrs : 0, n = nh;
	uint64_t id_base = (m->host.present ? m->host.max_id : 0) + 1;
	int r;

	for (size_t v = 0; v < m->n_vm; v++)
		n += vm_n_events(&m->vm[v]) + vm_n_perf(&m->vm[v]);
	m->attrs = calloc(n + 1, sizeof(*m->attrs));
	if (!m->attrs)
		return -ENOMEM;
	for (size_t i = 0; i < nh; i++)
		m->attrs[i] = m->host.attrs[i];
	m->n_attrs = nh;
	for (size_t v = 0; v < m->n_vm; v++) {
		struct merge_vm *vm = &m->vm[v];
		size_t ng = vm_n_events(vm), np = vm_n_perf(vm);

		vm->guest.id_base = id_base;
		r = out_vm_attrs(m, vm, &m->attrs[m->n_attrs], ng, np);
		m->n_attrs += ng + np; /* merge_out_free frees what was allocated */
		if (r < 0)
			return r;
		id_base += (ng + np) * vm->guest.ncpus;
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

static int out_index_chunk(struct merge_ctx *m, const struct merge_vm *vm, size_t from, size_t n)
{
	const struct merge_guest *g = &vm->guest;
	uint8_t *p = m->rec;
	struct perf_event_header h = { .type = PERF_REC_ID_INDEX, .size = (uint16_t)(16 + n * 48) };
	uint64_t nr = n;

	memcpy(p, &h, 8);
	memcpy(p + 8, &nr, 8);
	for (size_t k = 0; k < n; k++) {
		size_t i = from + k;
		uint64_t vcpu = i % g->ncpus;
		uint64_t e1[4] = { g->id_base + i, vcpu, (uint64_t)-1,
				   (uint64_t)(int64_t)merge_vcpu_tid(&vm->vcpu, (uint32_t)vcpu) };
		uint64_t e2[2] = { g->machine_pid, vcpu };

		memcpy(p + 16 + k * 32, e1, 32);
		memcpy(p + 16 + n * 32 + k * 16, e2, 16);
	}
	return perf_writer_record(m->w, p);
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
	return (vm_n_events(vm) + vm_n_perf(vm)) * vm->guest.ncpus;
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
	struct perf_event_header h = { .type = PERF_RECORD_COMM, .misc = PERF_RECORD_MISC_GUEST_KERNEL | misc,
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
	struct perf_event_header h = { .type = PERF_RECORD_LOST_SAMPLES, .misc = PERF_RECORD_MISC_GUEST_KERNEL,
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
	struct perf_event_header h = { .type = PERF_RECORD_SAMPLE, .misc = PERF_RECORD_MISC_GUEST_KERNEL };
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
	memcpy(&pid, ev->data + tep_format_field(&e->fmt, "common_pid")->offset, 4);
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

struct buf {
	uint8_t *p;
	size_t len, cap;
	bool oom;
};

static void buf_put(struct buf *b, const void *d, size_t n)
{
	if (b->oom)
		return;
	if (b->len + n > b->cap) {
		size_t cap = MAX(b->cap * 2, b->len + n + 1024);
		uint8_t *np = realloc(b->p, cap);

		if (!np) {
			b->oom = true;
			return;
		}
		b->p = np, b->cap = cap;
	}
	memcpy(b->p + b->len, d, n);
	b->len += n;
}

/* perf_header_string: u32 len (strlen + 1 rounded up to 64), zero padded. */
static void buf_string(struct buf *b, const char *s)
{
	static const uint8_t zero[64];
	uint32_t n = (uint32_t)ALIGN_UP(strlen(s) + 1, 64);

	buf_put(b, &n, 4);
	buf_put(b, s, strlen(s));
	buf_put(b, zero, n - strlen(s));
}

/* A host tracepoint's "sys:name" by its id, from the tracing data: a file perf still writes
 * (a set's snapshot) has no EVENT_DESC yet, and its formats came from tracefs (tdata.c). */
struct td_name {
	uint64_t id;
	char *name;
	struct tep_format f;
};

static int td_name_one(const char *sys, const struct td_text *t, void *ud)
{
	struct td_name *n = ud;

	if (tep_format_parse(t->data, t->len, &n->f) < 0 || n->f.id != n->id)
		return 0;
	if (asprintf(&n->name, "%s:%s", sys, n->f.name) < 0)
		n->name = NULL;
	return 1;
}

static char **host_names_desc(struct merge_ctx *m);

static char *td_name(const struct merge_ctx *m, uint64_t id)
{
	_cleanup_free_ struct td_name *n = calloc(1, sizeof(*n));

	if (!n || !m->have_td)
		return NULL;
	n->id = id;
	tracing_data_for_each(&m->td, td_name_one, n);
	return n->name;
}

static void host_names_td(struct merge_ctx *m, char **names, size_t nh)
{
	for (size_t i = 0; i < nh; i++)
		if (!names[i] && m->host.attrs[i].attr.type == PERF_TYPE_TRACEPOINT)
			names[i] = td_name(m, m->host.attrs[i].attr.config);
}

/* Names of the host's events, from its EVENT_DESC (bounds-checked), else its tracepoints' from
 * the tracing data; NULL entries when absent. */
static char **host_names(struct merge_ctx *m)
{
	char **names = host_names_desc(m);

	if (names)
		host_names_td(m, names, m->host.present ? m->host.n_attrs : 0);
	return names;
}

static char **host_names_desc(struct merge_ctx *m)
{
	_cleanup_free_ uint8_t *d = NULL;
	size_t len, off = 8, nh = m->host.present ? m->host.n_attrs : 0;
	uint32_t nr, asz;
	char **names = calloc(nh + 1, sizeof(*names));

	if (!names || !nh || perf_reader_feature(m->host.r, PERF_FEAT_EVENT_DESC, &d, &len) < 0 || len < 8)
		return names;
	memcpy(&nr, d, 4);
	memcpy(&asz, d + 4, 4);
	for (uint32_t i = 0; i < nr && i < nh; i++) {
		uint32_t nids, sl;

		if (asz > len || off > len - asz - 8)
			break;
		off += asz;
		memcpy(&nids, d + off, 4);
		memcpy(&sl, d + off + 4, 4);
		off += 8;
		if (sl > len - off || (uint64_t)nids * 8 > len - off - sl)
			break;
		names[i] = strndup((const char *)d + off, sl);
		off += sl + (size_t)nids * 8;
	}
	return names;
}

/* The name of attr i: the host's, or a VM's "<prefix><sys>:<event>" or "<perf event>:G". */
static void attr_name(const struct merge_ctx *m, char **host, size_t i, char *buf, size_t len)
{
	size_t nh = m->host.present ? m->host.n_attrs : 0;

	if (i < nh) {
		snprintf(buf, len, "%s", host[i] ? host[i] : "unknown");
		return;
	}
	i -= nh;
	for (size_t v = 0; v < m->n_vm; v++) {
		const struct merge_vm *vm = &m->vm[v];

		if (i < vm_n_events(vm)) {
			snprintf(buf, len, "%s%s:%s", vm->sys_prefix, vm->guest.events[i].sys, vm->guest.events[i].fmt.name);
			return;
		}
		i -= vm_n_events(vm);
		if (i < vm_n_perf(vm)) {
			out_gperf_name(&vm->gp, i, buf, len);
			return;
		}
		i -= vm_n_perf(vm);
	}
	snprintf(buf, len, "unknown");
}

static int event_desc(struct merge_ctx *m, struct buf *b)
{
	char **names = host_names(m);
	uint32_t nr = (uint32_t)m->n_attrs, asz = PERF_ATTR_SIZE;
	size_t nh = m->host.present ? m->host.n_attrs : 0;

	if (!names)
		return -ENOMEM;
	buf_put(b, &nr, 4);
	buf_put(b, &asz, 4);
	for (size_t i = 0; i < m->n_attrs; i++) {
		const struct perf_attr_ids *a = &m->attrs[i];
		uint32_t nids = (uint32_t)a->n_ids;
		char name[2 * TEP_FORMAT_MAX_NAME + 32];

		attr_name(m, names, i, name, sizeof(name));
		buf_put(b, &a->attr, PERF_ATTR_SIZE);
		buf_put(b, &nids, 4);
		buf_string(b, name);
		buf_put(b, a->ids, a->n_ids * 8);
	}
	for (size_t i = 0; i < nh; i++)
		free(names[i]);
	free(names);
	return b->oom ? -ENOMEM : 0;
}

static void nrcpus(struct merge_ctx *m, uint32_t out[2])
{
	_cleanup_free_ uint8_t *d = NULL;
	size_t len;

	out[0] = out[1] = 1;
	for (size_t v = 0; v < m->n_vm; v++)
		if (m->vm[v].guest.present)
			out[0] = out[1] = MAX(out[0], m->vm[v].guest.ncpus);
	if (m->host.present && perf_reader_feature(m->host.r, PERF_FEAT_NRCPUS, &d, &len) == 0 && len >= 8) {
		uint32_t h[2];

		memcpy(h, d, 8);
		out[0] = MAX(out[0], h[0]);
		out[1] = MAX(out[1], h[1]);
	}
}

static bool feature_rewritten(unsigned bit)
{
	return bit == PERF_FEAT_TRACING_DATA || bit == PERF_FEAT_EVENT_DESC || bit == PERF_FEAT_NRCPUS ||
	       bit == PERF_FEAT_SAMPLE_TIME || bit == PERF_FEAT_COMPRESSED;
}

struct feats {
	struct perf_writer_feature f[PERF_FEAT_BITS];
	uint8_t *owned[PERF_FEAT_BITS];
	size_t n;
};

static void feats_free(struct feats *fs)
{
	for (size_t i = 0; i < fs->n; i++)
		free(fs->owned[i]);
}

static int feats_add(struct feats *fs, unsigned bit, uint8_t *owned, const void *d, size_t len)
{
	fs->owned[fs->n] = owned;
	fs->f[fs->n++] = (struct perf_writer_feature){ bit, d, len };
	return 0;
}

/* BUILD_ID entry of the guest kernel (perf header.c write_buildid): header (type 0, misc
 * GUEST_KERNEL | BUILD_ID_SIZE), s32 pid = machine_pid, u8 id[20], u8 size, 3 reserved, then the
 * name perf gives the guest's kernel map ("[guest.kernel.kallsyms.<pid>]", machine.c) padded
 * to 64. */
static void guest_build_id(const struct merge_guest *g, struct buf *b)
{
	static const uint8_t zero[64];
	char name[64];
	uint8_t id[24] = { 0 };
	int32_t pid = (int32_t)g->machine_pid;
	size_t nl = (size_t)snprintf(name, sizeof(name), "[guest.kernel.kallsyms.%d]", pid) + 1;
	size_t padded = ALIGN_UP(nl, 64);
	struct perf_event_header h = { .type = 0, .misc = PERF_RECORD_MISC_GUEST_KERNEL | (1u << 15),
				       .size = (uint16_t)(8 + 4 + 24 + padded) };

	memcpy(id, g->build_id, g->build_id_len);
	id[20] = (uint8_t)g->build_id_len;
	buf_put(b, &h, 8);
	buf_put(b, &pid, 4);
	buf_put(b, id, 24);
	buf_put(b, name, nl);
	buf_put(b, zero, padded - nl);
}

static bool vm_has_build_id(const struct merge_vm *vm)
{
	return vm->guest.present && vm->guest.build_id_len;
}

/* The host's BUILD_ID entries, kept, plus each guest kernel's. */
static int build_ids(struct merge_ctx *m, struct buf *b)
{
	_cleanup_free_ uint8_t *d = NULL;
	size_t len;

	if (m->host.present && perf_reader_feature(m->host.r, PERF_FEAT_BUILD_ID, &d, &len) == 0)
		buf_put(b, d, len);
	for (size_t v = 0; v < m->n_vm; v++)
		if (vm_has_build_id(&m->vm[v]))
			guest_build_id(&m->vm[v].guest, b);
	return b->oom ? -ENOMEM : 0;
}

static bool guest_has_build_id(const struct merge_ctx *m)
{
	for (size_t v = 0; v < m->n_vm; v++)
		if (vm_has_build_id(&m->vm[v]))
			return true;
	return false;
}

/* The host's CPU_TOPOLOGY for the output's cpus (NRCPUS raised to the guest's vCPUs): padded, as
 * perf 6.1 reads it for NRCPUS' count (perf_topology.h); left out when it does not parse.
 * Takes d. */
static void feats_host_topology(struct merge_ctx *m, struct feats *fs, uint8_t *d, size_t len, uint32_t cpus)
{
	_cleanup_free_ uint8_t *nr = NULL;
	uint8_t *t;
	size_t nlen, tlen;
	uint32_t host_cpus;

	if (perf_reader_feature(m->host.r, PERF_FEAT_NRCPUS, &nr, &nlen) < 0 || nlen < 4) {
		free(d); /* no count of the host's own: perf reads it for cpus */
		return;
	}
	memcpy(&host_cpus, nr, 4);
	if (host_cpus == cpus) {
		feats_add(fs, PERF_FEAT_CPU_TOPOLOGY, d, d, len);
		return;
	}
	if (perf_topology_pad(d, len, host_cpus, cpus, &t, &tlen) == 0)
		feats_add(fs, PERF_FEAT_CPU_TOPOLOGY, t, t, tlen);
	free(d);
}

static int feats_host(struct merge_ctx *m, struct feats *fs, uint32_t cpus)
{
	for (unsigned bit = 0; m->host.present && bit < PERF_FEAT_BITS; bit++) {
		uint8_t *d;
		size_t len;

		if (feature_rewritten(bit) || (bit == PERF_FEAT_BUILD_ID && guest_has_build_id(m)) ||
		    !perf_reader_has_feature(m->host.r, bit))
			continue;
		if (perf_reader_feature(m->host.r, bit, &d, &len) < 0)
			continue; /* an unreadable optional section is left out */
		if (!len) { /* perf still records (a live snapshot): its bit set, no section yet; perf
			     * 6.1 stops reading the header's features at an empty one (COMPRESSED too) */
			free(d);
			continue;
		}
		if (bit == PERF_FEAT_CPU_TOPOLOGY)
			feats_host_topology(m, fs, d, len, cpus);
		else
			feats_add(fs, bit, d, d, len);
	}
	return 0;
}

/* The header's feature sections for what was written so far: in fs, which owns them. */
static int out_feats(struct merge_ctx *m, struct feats *fs, uint32_t cpus[2], uint64_t stime[2])
{
	struct buf desc = { 0 }, bids = { 0 };
	uint8_t *td = NULL;
	size_t td_len = 0;
	int r;

	if (m->have_td && (r = tracing_data_build(&m->td, &td, &td_len)) < 0)
		return r;
	if (td)
		feats_add(fs, PERF_FEAT_TRACING_DATA, td, td, td_len);
	if ((r = event_desc(m, &desc)) < 0) {
		free(desc.p);
		return r;
	}
	feats_add(fs, PERF_FEAT_EVENT_DESC, desc.p, desc.p, desc.len);
	if (guest_has_build_id(m)) {
		if ((r = build_ids(m, &bids)) < 0) {
			free(bids.p);
			return r;
		}
		feats_add(fs, PERF_FEAT_BUILD_ID, bids.p, bids.p, bids.len);
	}
	nrcpus(m, cpus);
	feats_add(fs, PERF_FEAT_NRCPUS, NULL, cpus, 2 * sizeof(*cpus));
	stime[0] = m->first_sample, stime[1] = m->last_sample;
	if (m->first_sample != UINT64_MAX)
		feats_add(fs, PERF_FEAT_SAMPLE_TIME, NULL, stime, 2 * sizeof(*stime));
	feats_host(m, fs, cpus[0]);
	return 0;
}

/* A FINISHED_ROUND and the header: w's own (the end), or a snapshot's at path, w going on. */
static int out_end(struct merge_ctx *m, const char *snapshot_path)
{
	static const struct perf_event_header round = { .type = PERF_REC_FINISHED_ROUND, .size = 8 };
	struct feats fs = { .n = 0 };
	uint32_t cpus[2];
	uint64_t stime[2];
	int r;

	if ((r = perf_writer_record(m->w, &round)) < 0)
		return r;
	if ((r = out_feats(m, &fs, cpus, stime)) == 0)
		r = snapshot_path ? perf_writer_snapshot(m->w, snapshot_path, m->attrs, m->n_attrs, fs.f, fs.n)
				  : perf_writer_finish(m->w, m->attrs, m->n_attrs, fs.f, fs.n);
	feats_free(&fs);
	return r;
}

int merge_out_finish(struct merge_ctx *m)
{
	return out_end(m, NULL);
}

int merge_out_snapshot(struct merge_ctx *m, const char *path)
{
	return out_end(m, path);
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
