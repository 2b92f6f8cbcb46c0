// SPDX-License-Identifier: GPL-2.0-only
/* Exit samples: a guest kernel profile from the host alone (docs/perf-data.md "Exit samples").
 * Each host kvm:kvm_exit of a traced VM's vCPU thread is written once more as a sample of that
 * guest machine: ip = the exit's guest_rip, cpumode guest kernel (or guest user below the
 * kernel's half), the guest task its vCPU last ran, the host CPU and time of the exit, and the
 * exit's own fields as <prefix>kvm:kvm_exit. perf then names the guest functions the vCPUs were
 * in when they exited from the guest's kallsyms, with no guest PMU and no guest perf. They
 * sample exits, not time: a vCPU that runs without exits is not seen, one in an exit loop is
 * seen at every exit. The host recording is root's own; its records are still bounds-checked. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "out.h"
#include "util.h"

#define EXIT_GUEST_KERNEL 0xffff800000000000ull /* x86-64: the upper half is the kernel's */

struct exit_find {
	struct tep_format f;
	char *text;
	size_t len;
};

static int find_kvm_exit(const char *sys, const struct td_text *t, void *ud)
{
	struct exit_find *x = ud;

	if (strcmp(sys, "kvm") || !strstr(t->data, "name: kvm_exit\n") || tep_format_parse(t->data, t->len, &x->f) < 0 ||
	    strcmp(x->f.name, "kvm_exit"))
		return 0;
	x->text = t->data;
	x->len = t->len;
	return 1;
}

/* The host attr of kvm:kvm_exit with what an exit sample needs (TID, TIME, CPU, RAW, no READ),
 * or -1. */
static int exit_attr(const struct merge_host *h, uint32_t id)
{
	const uint64_t need = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_RAW;

	for (size_t i = 0; i < h->n_attrs; i++) {
		const struct perf_event_attr *a = &h->attrs[i].attr;

		if (a->type == PERF_TYPE_TRACEPOINT && a->config == id && (a->sample_type & need) == need &&
		    !(a->sample_type & PERF_SAMPLE_READ))
			return (int)i;
	}
	return -1;
}

/* vm's exit samples: its format (the host's kvm_exit with an id of its own, in the output as
 * <prefix>kvm), its per-vCPU task table. Off (nothing said) without a vCPU thread map. */
static int exits_vm(struct merge_ctx *m, struct merge_vm *vm, const struct exit_find *x)
{
	struct merge_exits *e = &vm->exits;
	struct merge_guest *g = &vm->guest;
	char sys[sizeof(vm->sys_prefix) + 4];
	int r;

	if (!g->present || !vm->vcpu.named)
		return 0;
	if (!(e->new_id = merge_out_new_id(m))) {
		snprintf(e->why, sizeof(e->why), "no free tracepoint id left");
		return 0;
	}
	if ((r = tep_format_set_id(x->text, x->len, &x->f, e->new_id, &e->text, &e->text_len)) < 0)
		return r == -ENOMEM ? r : 0;
	snprintf(sys, sizeof(sys), "%skvm", vm->sys_prefix);
	if ((r = tracing_data_add_event(&m->td, sys, e->text, e->text_len)) < 0)
		return r;
	if (!(e->cur = malloc(g->ncpus * sizeof(*e->cur))))
		return -ENOMEM;
	memset(e->cur, 0xff, g->ncpus * sizeof(*e->cur));
	e->sw_event = -1;
	for (size_t i = 0; i < g->n_events; i++)
		if (g->events[i].pid[1] && !strcmp(g->events[i].fmt.name, "sched_switch"))
			e->sw_event = (int32_t)i;
	if (!g->gsym)
		merge_gsym_load(g, vm->dir); /* the guest kernel's maps and kallsyms name the rips */
	e->on = true;
	return 0;
}

int merge_exits_prepare(struct merge_ctx *m)
{
	_cleanup_free_ struct exit_find *x = calloc(1, sizeof(*x));
	const struct tep_format_field *rip;
	int r;

	m->exit_attr = -1;
	if (!x)
		return -ENOMEM;
	if (!m->host.present || !m->have_td || tracing_data_for_each(&m->td, find_kvm_exit, x) != 1)
		return 0;
	rip = tep_format_field(&x->f, "guest_rip");
	if (!rip || rip->dyn || rip->size != 8 || (m->exit_attr = exit_attr(&m->host, x->f.id)) < 0) {
		m->exit_attr = -1;
		return 0;
	}
	m->exit_rip_off = rip->offset;
	for (size_t v = 0; v < m->n_vm; v++)
		if ((r = exits_vm(m, &m->vm[v], x)) < 0)
			return r;
	return 0;
}

struct exit_smp {
	uint64_t id, time, rip;
	uint32_t tid, cpu;
	const uint8_t *raw;
	uint32_t raw_len;
};

/* The fields of a host sample of attr a; false when they do not fit the record. */
static bool exit_parse(const struct perf_event_attr *a, const struct perf_event_header *e, struct exit_smp *s)
{
	const uint8_t *p = (const uint8_t *)e;
	uint64_t st = a->sample_type, nr;
	size_t off = 8;

	if (st & PERF_SAMPLE_IDENTIFIER)
		memcpy(&s->id, p + off, 8), off += 8;
	off += (st & PERF_SAMPLE_IP) ? 8 : 0;
	memcpy(&s->tid, p + off + 4, 4);
	off += 8;
	memcpy(&s->time, p + off, 8);
	off += 8 + 8 * (size_t)__builtin_popcountll(st & (PERF_SAMPLE_ADDR | PERF_SAMPLE_ID | PERF_SAMPLE_STREAM_ID));
	if (off + 8 > e->size)
		return false;
	memcpy(&s->cpu, p + off, 4);
	off += 8 + ((st & PERF_SAMPLE_PERIOD) ? 8 : 0);
	if (st & PERF_SAMPLE_CALLCHAIN) {
		if (off + 8 > e->size)
			return false;
		memcpy(&nr, p + off, 8);
		if (nr > (e->size - off - 8) / 8)
			return false;
		off += 8 + nr * 8;
	}
	if (off + 4 > e->size)
		return false;
	memcpy(&s->raw_len, p + off, 4);
	s->raw = p + off + 4;
	return s->raw_len <= e->size - off - 4;
}

/* Whether host sample e is one of attr a's (IDENTIFIER first on every attr, or a single attr). */
static bool exit_is(const struct perf_attr_ids *a, const struct perf_event_header *e, size_t n_attrs)
{
	uint64_t id;

	if (!(a->attr.sample_type & PERF_SAMPLE_IDENTIFIER))
		return n_attrs == 1;
	if (e->size < 16)
		return false;
	memcpy(&id, (const uint8_t *)e + 8, 8);
	for (size_t k = 0; k < a->n_ids; k++)
		if (a->ids[k] == id)
			return true;
	return false;
}

static int exit_write(struct merge_ctx *m, struct merge_vm *vm, uint32_t vcpu, const struct exit_smp *s)
{
	struct merge_exits *x = &vm->exits;
	const struct merge_guest *g = &vm->guest;
	bool user = s->rip < EXIT_GUEST_KERNEL;
	struct perf_event_header h = { .type = PERF_RECORD_SAMPLE,
				       .misc = user ? PERF_RECORD_MISC_GUEST_USER : PERF_RECORD_MISC_GUEST_KERNEL,
				       .size = (uint16_t)(60 + s->raw_len) };
	int32_t pid = x->cur[vcpu];
	uint32_t tid[2], cpu[2] = { s->cpu, 0 };
	uint64_t id = g->id_base + (merge_out_vm_n_events(vm) + merge_out_vm_n_perf(vm)) * g->ncpus + vcpu, period = 1;
	uint16_t new_id = (uint16_t)x->new_id;
	uint8_t *p = m->rec;

	if (pid < 0) {
		x->unknown_task++;
		pid = 0;
	}
	tid[0] = (uint32_t)merge_meta_tgid(g, pid);
	tid[1] = (uint32_t)pid;
	memcpy(p, &h, 8);
	memcpy(p + 8, &id, 8);
	memcpy(p + 16, &s->rip, 8);
	memcpy(p + 24, tid, 8);
	memcpy(p + 32, &s->time, 8);
	memcpy(p + 40, cpu, 8);
	memcpy(p + 48, &period, 8);
	memcpy(p + 56, &s->raw_len, 4);
	memcpy(p + 60, s->raw, s->raw_len);
	memcpy(p + 60, &new_id, 2); /* common_type: the output's id of <prefix>kvm:kvm_exit */
	x->samples++;
	x->user += user;
	m->guest_samples++;
	return merge_out_emit(m, p, s->time);
}

int merge_exits_host(struct merge_ctx *m, const struct perf_event_header *e)
{
	const struct perf_attr_ids *a;
	struct exit_smp s = { 0 };

	if (m->exit_attr < 0 || e->type != PERF_RECORD_SAMPLE)
		return 0;
	a = &m->host.attrs[m->exit_attr];
	if (!exit_is(a, e, m->host.n_attrs))
		return 0;
	if (e->size < 8 + 8 * 5 || !exit_parse(&a->attr, e, &s) || s.raw_len % 8 != 4 ||
	    s.raw_len > sizeof(m->rec) - 64 || m->exit_rip_off > s.raw_len || s.raw_len - m->exit_rip_off < 8 ||
	    s.raw_len < 2) {
		m->exit_bad++;
		return 0;
	}
	memcpy(&s.rip, s.raw + m->exit_rip_off, 8);
	for (size_t v = 0; v < m->n_vm; v++) {
		struct merge_vm *vm = &m->vm[v];
		long vcpu = vm->exits.on ? merge_vcpu_of_tid(&vm->vcpu, (int32_t)s.tid) : -1;

		if (vcpu >= 0)
			return exit_write(m, vm, (uint32_t)vcpu, &s);
	}
	return 0;
}

void merge_exits_summary(const struct merge_ctx *m, const struct merge_vm *vm)
{
	const struct merge_exits *x = &vm->exits;

	if (x->why[0])
		printf("  exits:  none written as guest samples (%s)\n", x->why);
	if (!x->on)
		return;
	printf("  exits:  %" PRIu64 " guest samples at the guest's rip of each host kvm:kvm_exit (%skvm:kvm_exit, "
	       "%" PRIu64 " in guest user space): they sample exits, not time\n",
	       x->samples, vm->sys_prefix, x->user);
	if (x->unknown_task)
		printf("          %" PRIu64 " of them before their vCPU's first guest event: task 0\n", x->unknown_task);
	if (m->exit_bad && vm == &m->vm[0])
		printf("          %" PRIu64 " host kvm:kvm_exit samples too short for their fields: skipped\n", m->exit_bad);
}

void merge_exits_free(struct merge_vm *vm)
{
	free(vm->exits.text);
	free(vm->exits.cur);
	memset(&vm->exits, 0, sizeof(vm->exits));
}
