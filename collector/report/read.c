// SPDX-License-Identifier: GPL-2.0-only
/* The report's reader: a merged perf.data (docs/perf-data.md) through common/perf_reader, in
 * one pass. It finds the events it needs by their formats in TRACING_DATA (host
 * sched:sched_switch, sched:sched_wakeup, kvm:kvm_exit/kvm_entry; each guest's
 * sched_switch: guest_sched for the first VM, guest<N>_sched for the N-th of a merge --guest),
 * each VM and its vCPUs from the extended ID_INDEX (machine_pid, vcpu, and the tid of QEMU's
 * vCPU thread that the merge found), vCPU threads from host COMM records named "CPU n/KVM" or
 * "CPU n/TCG", a VM's name from its QEMU's process name when the user set one, and hands every
 * relevant record to stall.c. The file may come from anywhere: every offset and size is
 * checked. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "perf_reader.h"
#include "report.h"
#include "tep_format.h"
#include "tracing_data.h"
#include "util.h"

enum kind { K_NONE, K_SWITCH, K_WAKEUP, K_KVM_EXIT, K_KVM_ENTRY, K_GSWITCH, K_MIGRATION, K_N };

static const struct {
	const char *sys, *name;
} kind_names[K_N] = {
	[K_SWITCH] = { "sched", "sched_switch" }, [K_WAKEUP] = { "sched", "sched_wakeup" },
	[K_KVM_EXIT] = { "kvm", "kvm_exit" }, [K_KVM_ENTRY] = { "kvm", "kvm_entry" },
	[K_GSWITCH] = { NULL, "sched_switch" }, /* guest_sched, guest2_sched, ...: is_guest_sys */
	[K_MIGRATION] = { NULL, "migration" },  /* guest_virtio_trace, ...: the merge's (merge/migration.c) */
};

#define READ_MAX_GSWITCH 64 /* guest sched_switch formats (the merge writes at most 16 VMs) */

/* Field offsets (-1: absent) of one event kind. */
struct fmt {
	bool present;
	uint32_t id;
	int32_t prev_pid, prev_comm, prev_state, next_pid, next_comm, pid, reason, target_cpu, isa;
	uint32_t state_size, reason_size;
	int32_t from_pid, to_pid, blackout, start; /* <prefix>virtio_trace:migration */
};

struct rid {
	uint64_t id;
	uint32_t attr;
	int32_t vm, vcpu; /* a guest id: its VM (index) and vCPU; -1 for the host */
};

struct report_feed {
	struct report *r;
	size_t n_attrs;
	const struct perf_attr_ids **attrs;
	uint8_t *kinds;
	bool *usable;
	struct fmt f[K_N];
	struct fmt gsw[READ_MAX_GSWITCH]; /* each VM's guest sched_switch */
	size_t n_gsw;
	uint8_t *gsw_of;                  /* per attr: its index in gsw */
	uint32_t mig_id[READ_MAX_GSWITCH]; /* each VM's virtio_trace:migration (one layout: the merge's) */
	size_t n_mig;
	struct rid *ids;
	size_t n_ids, cap_ids;
	bool ids_sorted;
	struct rid *last; /* id_find's last answer (NULL once ids moved) */
	uint64_t bad;
	/* guest task names from guest COMM records (guest perf sessions): (VM, tid) -> comm */
	int32_t gtid[4096];
	int32_t gvm[4096];
	char gcomm[4096][REPORT_COMM];
};

/* Slot of a VM's guest tid in the name table (open addressing; full: the last slot probed). */
static size_t gname_slot(const struct report_feed *d, int32_t vm, int32_t tid)
{
	size_t i = ((uint32_t)tid * 2654435761u + (uint32_t)vm * 40503u) % ARRAY_SIZE(d->gtid), n = 0;

	while (d->gtid[i] && !(d->gtid[i] == tid + 1 && d->gvm[i] == vm) && ++n < ARRAY_SIZE(d->gtid))
		i = (i + 1) % ARRAY_SIZE(d->gtid);
	return i;
}

/* The name of a VM's guest tid, else one from a COMM of no known VM (vm -1). */
static const char *gname(const struct report_feed *d, int32_t vm, int32_t tid)
{
	size_t i = gname_slot(d, vm, tid), j = gname_slot(d, -1, tid);

	if (tid >= 0 && d->gtid[i] == tid + 1 && d->gvm[i] == vm)
		return d->gcomm[i];
	return tid >= 0 && d->gtid[j] == tid + 1 && d->gvm[j] == -1 ? d->gcomm[j] : NULL;
}

/* "guest_SYS" or "guest<N>_SYS": a guest's events of system SYS in the merge's naming. */
static bool is_guest_sys(const char *sys, const char *name)
{
	if (strncmp(sys, "guest", 5))
		return false;
	sys += 5;
	while (*sys >= '0' && *sys <= '9')
		sys++;
	return sys[0] == '_' && !strcmp(sys + 1, name);
}

static int field_off(const struct tep_format *f, const char *name, uint32_t size_min, uint32_t size_max,
		     uint32_t *ret_size)
{
	const struct tep_format_field *x = tep_format_field(f, name);

	if (!x || x->dyn || x->size < size_min || x->size > size_max)
		return -1;
	if (ret_size)
		*ret_size = x->size;
	return (int32_t)x->offset;
}

static void fmt_fields(struct fmt *m, const struct tep_format *f)
{
	m->present = true;
	m->id = f->id;
	m->prev_pid = field_off(f, "prev_pid", 4, 4, NULL);
	m->next_pid = field_off(f, "next_pid", 4, 4, NULL);
	m->prev_comm = field_off(f, "prev_comm", REPORT_COMM, REPORT_COMM, NULL);
	m->next_comm = field_off(f, "next_comm", REPORT_COMM, REPORT_COMM, NULL);
	m->prev_state = field_off(f, "prev_state", 4, 8, &m->state_size);
	m->pid = field_off(f, "pid", 4, 4, NULL);
	m->target_cpu = field_off(f, "target_cpu", 4, 4, NULL);
	m->reason = field_off(f, "exit_reason", 4, 8, &m->reason_size);
	m->isa = field_off(f, "isa", 4, 4, NULL); /* kvm_exit since Linux 5.13 */
}

static int find_formats(const char *sys, const struct td_text *t, void *ud)
{
	struct report_feed *d = ud;
	struct tep_format f;

	if (is_guest_sys(sys, "virtio_trace")) {
		if (d->n_mig < READ_MAX_GSWITCH && tep_format_parse(t->data, t->len, &f) == 0 &&
		    !strcmp(f.name, kind_names[K_MIGRATION].name)) {
			struct fmt *m = &d->f[K_MIGRATION];

			m->present = true;
			m->from_pid = field_off(&f, "from_pid", 4, 4, NULL);
			m->to_pid = field_off(&f, "to_pid", 4, 4, NULL);
			m->blackout = field_off(&f, "blackout_ns", 8, 8, NULL);
			m->start = field_off(&f, "start_ns", 8, 8, NULL);
			d->mig_id[d->n_mig++] = f.id;
		}
		return 0;
	}
	if (is_guest_sys(sys, "sched")) {
		if (d->n_gsw < READ_MAX_GSWITCH && tep_format_parse(t->data, t->len, &f) == 0 &&
		    !strcmp(f.name, kind_names[K_GSWITCH].name)) {
			fmt_fields(&d->gsw[d->n_gsw++], &f);
			d->f[K_GSWITCH].present = true;
		}
		return 0;
	}
	for (int k = 1; k < K_GSWITCH; k++) {
		struct fmt *m = &d->f[k];

		if (m->present || strcmp(sys, kind_names[k].sys) || tep_format_parse(t->data, t->len, &f) < 0 ||
		    strcmp(f.name, kind_names[k].name))
			continue;
		fmt_fields(m, &f);
		break;
	}
	return 0;
}

/* td NULL: no tracepoints at all (said by read_notes). */
static int read_formats(struct report_feed *d, const uint8_t *td_bytes, size_t td_len, char *err, size_t errlen)
{
	struct tracing_data td;

	if (!td_bytes)
		return 0;
	if (tracing_data_parse(td_bytes, td_len, &td) < 0) {
		snprintf(err, errlen, "its TRACING_DATA section is damaged");
		return -EBADMSG;
	}
	tracing_data_for_each(&td, find_formats, d);
	tracing_data_free(&td);
	return 0;
}

static int id_add(struct report_feed *d, uint64_t id, uint32_t attr, int32_t vm, int32_t vcpu)
{
	if (d->n_ids == d->cap_ids) {
		size_t nc = d->cap_ids ? d->cap_ids * 2 : 256;
		struct rid *p;

		if (nc > PERF_READER_MAX_IDS * 2u || !(p = realloc(d->ids, nc * sizeof(*p))))
			return -ENOMEM;
		d->ids = p;
		d->cap_ids = nc;
		d->last = NULL;
	}
	d->ids[d->n_ids++] = (struct rid){ id, attr, vm, vcpu };
	d->ids_sorted = false;
	return 0;
}

static int cmp_rid(const void *a, const void *b)
{
	const struct rid *x = a, *y = b;

	return (x->id > y->id) - (x->id < y->id);
}

static struct rid *id_find(struct report_feed *d, uint64_t id)
{
	struct rid key = { .id = id };

	if (!d->n_ids)
		return NULL;
	if (!d->ids_sorted) {
		qsort(d->ids, d->n_ids, sizeof(*d->ids), cmp_rid);
		d->ids_sorted = true;
		d->last = NULL;
	}
	if (d->last && d->last->id == id) /* a vCPU's records come in runs */
		return d->last;
	return d->last = bsearch(&key, d->ids, d->n_ids, sizeof(key), cmp_rid);
}

/* Attrs: their kinds (by tracepoint id) and ids. */
static int read_attrs(struct report_feed *d, const struct perf_attr_ids *(*attr)(void *, size_t), void *ud, size_t n)
{
	d->n_attrs = n;
	d->attrs = calloc(d->n_attrs + 1, sizeof(*d->attrs));
	d->kinds = calloc(d->n_attrs + 1, 1);
	d->usable = calloc(d->n_attrs + 1, sizeof(*d->usable));
	d->gsw_of = calloc(d->n_attrs + 1, 1);
	if (!d->attrs || !d->kinds || !d->usable || !d->gsw_of)
		return -ENOMEM;
	for (size_t i = 0; i < d->n_attrs; i++) {
		const struct perf_attr_ids *a = attr(ud, i);
		uint64_t st = a->attr.sample_type;

		d->attrs[i] = a;
		d->usable[i] = (st & PERF_SAMPLE_TIME) && !(st & PERF_SAMPLE_READ);
		for (int k = 1; k < K_GSWITCH; k++)
			if (a->attr.type == PERF_TYPE_TRACEPOINT && d->f[k].present && a->attr.config == d->f[k].id)
				d->kinds[i] = (uint8_t)k;
		for (size_t g = 0; g < d->n_gsw; g++)
			if (a->attr.type == PERF_TYPE_TRACEPOINT && a->attr.config == d->gsw[g].id) {
				d->kinds[i] = K_GSWITCH;
				d->gsw_of[i] = (uint8_t)g;
			}
		for (size_t g = 0; g < d->n_mig; g++)
			if (a->attr.type == PERF_TYPE_TRACEPOINT && a->attr.config == d->mig_id[g])
				d->kinds[i] = K_MIGRATION;
		for (size_t j = 0; j < a->n_ids; j++)
			if (id_add(d, a->ids[j], (uint32_t)i, -1, -1) < 0)
				return -ENOMEM;
	}
	return 0;
}

struct smp {
	uint64_t id, time;
	int32_t pid, tid;
	uint32_t cpu;
	const uint8_t *raw;
	uint32_t raw_len;
};

/* The id of a sample (IDENTIFIER first, else ID in its place), or false. */
static bool sample_id(const struct report_feed *d, const struct perf_event_header *e, uint64_t *ret)
{
	const uint8_t *p = (const uint8_t *)e;
	uint64_t st;
	size_t off = 8;

	if (d->n_attrs == 1) {
		*ret = d->attrs[0]->n_ids ? d->attrs[0]->ids[0] : 0;
		st = d->attrs[0]->attr.sample_type;
		if (!(st & (PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_ID)))
			return true;
	}
	if (!d->n_attrs || e->size < 16)
		return false;
	st = d->attrs[0]->attr.sample_type; /* perf requires one id position for all attrs */
	if (!(st & PERF_SAMPLE_IDENTIFIER)) {
		if (!(st & PERF_SAMPLE_ID))
			return false;
		off += 8 * (size_t)__builtin_popcountll(st & (PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
								 PERF_SAMPLE_ADDR));
	}
	if (off + 8 > e->size)
		return false;
	memcpy(ret, p + off, 8);
	return true;
}

/* The fields of a sample of attr a; false when they do not fit the record. */
static bool sample_parse(const struct perf_event_attr *a, const struct perf_event_header *e, struct smp *s)
{
	const uint8_t *p = (const uint8_t *)e;
	uint64_t st = a->sample_type, nr;
	size_t off = 8, end = e->size;

	memset(s, 0, sizeof(*s));
	s->pid = s->tid = -1;
#define TAKE(bit, dst, n)                          \
	if (st & (bit)) {                          \
		if (off + 8 > end)                 \
			return false;              \
		memcpy((void *)(dst), p + off, n); \
		off += 8;                          \
	}
#define SKIP(bits) off += 8 * (size_t)__builtin_popcountll(st & (bits))
	TAKE(PERF_SAMPLE_IDENTIFIER, &s->id, 8);
	SKIP(PERF_SAMPLE_IP);
	if (st & PERF_SAMPLE_TID) {
		if (off + 8 > end)
			return false;
		memcpy(&s->pid, p + off, 4);
		memcpy(&s->tid, p + off + 4, 4);
		off += 8;
	}
	TAKE(PERF_SAMPLE_TIME, &s->time, 8);
	SKIP(PERF_SAMPLE_ADDR);
	TAKE(PERF_SAMPLE_ID, &s->id, 8);
	SKIP(PERF_SAMPLE_STREAM_ID);
	TAKE(PERF_SAMPLE_CPU, &s->cpu, 4);
	SKIP(PERF_SAMPLE_PERIOD);
#undef TAKE
#undef SKIP
	if (off > end)
		return false;
	if (st & PERF_SAMPLE_CALLCHAIN) {
		if (off + 8 > end)
			return false;
		memcpy(&nr, p + off, 8);
		if (nr > (end - off - 8) / 8)
			return false;
		off += 8 + nr * 8;
	}
	if (st & PERF_SAMPLE_RAW) {
		if (off + 4 > end)
			return false;
		memcpy(&s->raw_len, p + off, 4);
		s->raw = p + off + 4;
		if (s->raw_len > end - off - 4)
			return false;
	}
	return true;
}

/* A fixed field of the raw data: false when absent or outside it. */
static bool raw_get(const struct smp *s, int32_t off, uint32_t size, void *dst)
{
	if (off < 0 || !s->raw || (uint32_t)off > s->raw_len || s->raw_len - (uint32_t)off < size)
		return false;
	memcpy(dst, s->raw + off, size);
	return true;
}

static int32_t raw_s32(const struct smp *s, int32_t off, int32_t dflt)
{
	int32_t v;

	return raw_get(s, off, 4, &v) ? v : dflt;
}

static int64_t raw_long(const struct smp *s, int32_t off, uint32_t size, int64_t dflt)
{
	int64_t v8;
	int32_t v4;

	if (size == 8)
		return raw_get(s, off, 8, &v8) ? v8 : dflt;
	return raw_get(s, off, 4, &v4) ? v4 : dflt;
}

static void raw_comm(const struct smp *s, int32_t off, char *dst)
{
	if (!raw_get(s, off, REPORT_COMM, dst))
		snprintf(dst, REPORT_COMM, "?");
	dst[REPORT_COMM - 1] = '\0';
}

static void host_sample(struct report_feed *d, int kind, const struct smp *s)
{
	const struct fmt *f = &d->f[kind];
	char pc[REPORT_COMM], nc[REPORT_COMM];
	int32_t pp, np;

	switch (kind) {
	case K_SWITCH:
		pp = raw_s32(s, f->prev_pid, -1);
		np = raw_s32(s, f->next_pid, -1);
		if (pp < 0 || np < 0) {
			d->bad++;
			return;
		}
		raw_comm(s, f->prev_comm, pc);
		raw_comm(s, f->next_comm, nc);
		report_host_switch(d->r, s->time, s->cpu, pp, pc, raw_long(s, f->prev_state, f->state_size, -1), np, nc);
		break;
	case K_WAKEUP:
		report_host_wakeup(d->r, s->time, s->cpu, s->tid, raw_s32(s, f->pid, -1), raw_s32(s, f->target_cpu, -1));
		break;
	case K_KVM_EXIT:
		if (!d->r->kvm_isa)
			d->r->kvm_isa = (uint32_t)MAX(raw_s32(s, f->isa, 0), 0);
		report_host_kvm(d->r, s->time, s->tid, true, raw_long(s, f->reason, f->reason_size, -1));
		break;
	case K_KVM_ENTRY:
		report_host_kvm(d->r, s->time, s->tid, false, 0);
		break;
	}
}

static void on_sample(struct report_feed *d, const struct perf_event_header *e)
{
	struct report *r = d->r;
	struct rid *id;
	uint64_t v;
	struct smp s;
	char nc[REPORT_COMM];

	if (!sample_id(d, e, &v) || !(id = id_find(d, v)) || !d->usable[id->attr] ||
	    !sample_parse(&d->attrs[id->attr]->attr, e, &s)) {
		d->bad++;
		return;
	}
	if (s.time < r->t_last)
		r->out_of_order++; /* the merge writes in time order; stall.c sees it as it is */
	r->t_last = MAX(r->t_last, s.time);
	r->t_first = MIN(r->t_first, s.time);
	if (id->vm >= 0) {
		if (d->kinds[id->attr] == K_MIGRATION) { /* the merge's, not the guest's: no guest record */
			const struct fmt *f = &d->f[K_MIGRATION];

			report_migration(r, (uint32_t)id->vm, s.time, (uint64_t)raw_long(&s, f->start, 8, (int64_t)s.time),
					 raw_s32(&s, f->from_pid, -1), raw_s32(&s, f->to_pid, -1),
					 (uint64_t)raw_long(&s, f->blackout, 8, 0));
			return;
		}
		if (d->kinds[id->attr] == K_GSWITCH) {
			const struct fmt *g = &d->gsw[d->gsw_of[id->attr]];

			raw_comm(&s, g->next_comm, nc);
			report_guest_switch(r, (uint32_t)id->vm, (uint32_t)id->vcpu, s.time, raw_s32(&s, g->next_pid, -1), nc);
		} else {
			report_guest_task(r, (uint32_t)id->vm, (uint32_t)id->vcpu, s.time, s.tid, gname(d, id->vm, s.tid));
		}
		return;
	}
	r->host_first = MIN(r->host_first, s.time);
	r->host_last = MAX(r->host_last, s.time);
	if (d->kinds[id->attr] != K_NONE && d->kinds[id->attr] != K_GSWITCH)
		host_sample(d, d->kinds[id->attr], &s);
}

/* Extended ID_INDEX entries name each guest id's VM (machine_pid) and vCPU, and the merge's
 * tid of that vCPU's QEMU thread. */
static void on_id_index(struct report_feed *d, const struct perf_event_header *e)
{
	const uint8_t *p = (const uint8_t *)e;
	uint64_t nr;

	if (e->size < 16)
		return;
	memcpy(&nr, p + 8, 8);
	if (nr > (e->size - 16u) / 48u)
		return; /* not extended (no machine_pid): host ids */
	for (uint64_t i = 0; i < nr; i++) {
		uint64_t ent[4], mv[2];
		struct rid *id;
		uint32_t vm;

		memcpy(ent, p + 16 + i * 32, 32);
		memcpy(mv, p + 16 + nr * 32 + i * 16, 16);
		if (!mv[0] || mv[0] > INT32_MAX || mv[1] >= REPORT_MAX_VCPUS || !(id = id_find(d, ent[0])))
			continue;
		if (report_vm_add(d->r, (int32_t)mv[0], (uint32_t)mv[1] + 1, &vm) < 0)
			continue;
		id->vm = (int32_t)vm;
		id->vcpu = (int32_t)mv[1];
		if (d->kinds[id->attr] == K_GSWITCH)
			d->r->vms[vm].has_guest_switch = true;
		if ((int64_t)ent[3] > 0 && (int64_t)ent[3] <= INT32_MAX)
			report_vcpu_thread(d->r, vm, (uint32_t)mv[1], (int32_t)ent[3]);
	}
}

/* "CPU <n>/<accelerator>": QEMU's vCPU thread names (-name debug-threads=on); -1 otherwise. */
static long vcpu_of_comm(const char *s)
{
	char *end;
	long n;

	if (strncmp(s, "CPU ", 4) || s[4] < '0' || s[4] > '9')
		return -1;
	n = strtol(s + 4, &end, 10);
	if (*end != '/' || !end[1] || n >= REPORT_MAX_VCPUS)
		return -1;
	return n;
}

/* The VM of a non-sample record from its sample_id_all trailer's id (-1: none, or the host). */
static int32_t record_vm(struct report_feed *d, const struct perf_event_header *e, size_t body)
{
	uint64_t st, id;
	size_t back;
	struct rid *x;

	if (!d->n_attrs || !d->attrs[0]->attr.sample_id_all)
		return -1;
	st = d->attrs[0]->attr.sample_type; /* one id position for all attrs (as sample_id) */
	if (st & PERF_SAMPLE_IDENTIFIER)
		back = 8;
	else if (st & PERF_SAMPLE_ID)
		back = 8 * (1 + (size_t)__builtin_popcountll(st & (PERF_SAMPLE_STREAM_ID | PERF_SAMPLE_CPU)));
	else
		return -1;
	if (e->size < body + back)
		return -1;
	memcpy(&id, (const uint8_t *)e + e->size - back, 8);
	return (x = id_find(d, id)) ? x->vm : -1;
}

/* A guest task's name (guest COMM records of guest perf sessions), kept per VM (-1: its id
 * names none). */
static void guest_comm(struct report_feed *d, const struct perf_event_header *e, int32_t tid, const char *comm)
{
	int32_t vm = record_vm(d, e, 24);
	size_t i = gname_slot(d, vm, tid);

	if (tid < 0 || tid == INT32_MAX)
		return;
	d->gtid[i] = tid + 1;
	d->gvm[i] = vm;
	memcpy(d->gcomm[i], comm, REPORT_COMM);
}

/* QEMU's process name (its main thread's COMM), a VM's name when the user set one with -name
 * ...,process=NAME: QEMU's own binary name ("qemu-system-x86", "qemu-kvm") is none. */
static void vm_name_of_comm(struct report_feed *d, int32_t pid, const char *comm)
{
	long vm = report_vm_of_qemu(d->r, pid);

	if (vm >= 0 && comm[0] && strncmp(comm, "qemu", 4))
		report_vm_name(d->r, (uint32_t)vm, comm);
}

/* COMM records: guest tasks' names; on the host, QEMU's vCPU threads (of a VM in the file or of
 * another QEMU) and the VMs' process names. */
static void on_comm(struct report_feed *d, const struct perf_event_header *e)
{
	const uint8_t *p = (const uint8_t *)e;
	uint16_t mode = e->misc & PERF_RECORD_MISC_CPUMODE_MASK;
	char comm[REPORT_COMM] = "";
	int32_t pt[2];
	long n, vm;

	if (e->size < 17)
		return;
	memcpy(pt, p + 8, 8);
	memcpy(comm, p + 16, MIN((size_t)e->size - 16, sizeof(comm) - 1));
	if (mode == PERF_RECORD_MISC_GUEST_KERNEL || mode == PERF_RECORD_MISC_GUEST_USER) {
		guest_comm(d, e, pt[1], comm);
		return;
	}
	if (pt[0] > 0 && pt[0] == pt[1])
		vm_name_of_comm(d, pt[0], comm);
	if ((n = vcpu_of_comm(comm)) < 0 || pt[1] <= 0)
		return;
	vm = report_vm_of_qemu(d->r, pt[0]);
	if (vm >= 0 && (uint32_t)n < d->r->vms[vm].n_vcpus)
		report_vcpu_thread(d->r, (uint32_t)vm, (uint32_t)n, pt[1]);
	else
		report_foreign_thread(d->r, pt[0], pt[1], (int32_t)n);
}

static void on_record(struct report_feed *d, const struct perf_event_header *e)
{
	uint16_t mode = e->misc & PERF_RECORD_MISC_CPUMODE_MASK;
	bool guest = mode == PERF_RECORD_MISC_GUEST_KERNEL || mode == PERF_RECORD_MISC_GUEST_USER;

	d->r->records++;
	switch (e->type) {
	case PERF_RECORD_SAMPLE:
		on_sample(d, e);
		break;
	case PERF_REC_ID_INDEX:
		on_id_index(d, e);
		break;
	case PERF_RECORD_COMM:
		on_comm(d, e);
		break;
	case PERF_RECORD_LOST:
	case PERF_RECORD_LOST_SAMPLES:
		if (!guest)
			report_host_lost(d->r, d->r->t_last);
		break;
	}
}

/* What the file lets the report know, said once. */
static void read_notes(struct report_feed *d)
{
	struct report *r = d->r;

	r->has_guest = r->n_vms > 0;
	r->has_host = r->host_first != UINT64_MAX;
	if (!r->has_guest)
		report_note(r, "no guest events (no VM in the file's ID_INDEX): nothing to report");
	if (!r->has_switch || !r->host_switches)
		report_note(r, "no host sched:sched_switch events (a --no-host session, or host perf without "
			    "-e sched:sched_switch): the vCPU threads' host state is unknown, no stall can be found");
	else if (!r->has_wakeup)
		report_note(r, "no host sched:sched_wakeup: the waker of a blocked vCPU thread is unknown "
			    "(start --host-events sched:sched_switch,sched:sched_wakeup)");
	if (d->f[K_SWITCH].present && d->f[K_SWITCH].prev_state < 0)
		report_note(r, "the host's sched_switch has no prev_state: preempted and blocked cannot be told apart");
	for (size_t i = 0; i < r->n_vms; i++) {
		const struct report_vm *m = &r->vms[i];

		if (m->threads_named < m->n_vcpus)
			report_note(r, "VM %d: %u of %u vCPU threads named (QEMU's \"CPU n/KVM\" or \"CPU n/TCG\" "
				    "threads; the merge's vCPU fallback when none): the others cannot be followed",
				    m->machine_pid, m->threads_named, m->n_vcpus);
		if (!m->has_guest_switch)
			report_note(r, "VM %d: no guest sched:sched_switch: the guest's task is taken from its "
				    "latest record (start -e sched:sched_switch to know idle from busy exactly)",
				    m->machine_pid);
		if (m->not_judged)
			report_note(r, "VM %d: %llu switched-out intervals after the guest's last record not judged "
				    "(its task was no longer known)", m->machine_pid, (unsigned long long)m->not_judged);
	}
	for (size_t i = 0; i < r->n_vms; i++) {
		uint64_t n = 0, ran = 0;

		for (uint32_t c = 0; c < r->vms[i].n_vcpus; c++) {
			n += r->vms[i].vcpus[c].dropped_intervals;
			ran += r->vms[i].vcpus[c].ran_unseen;
		}
		if (ran)
			report_note(r, "VM %d: %llu switched-out intervals not judged: the guest traced on that vCPU inside "
				    "them, so its thread ran (the host recording lacks the switch in: a flight recorder's "
				    "host ring overwritten, or lost events)", r->vms[i].machine_pid, (unsigned long long)ran);
		if (n)
			report_note(r, "VM %d: %llu intervals not judged: a switch of the vCPU thread was missing from the "
				    "host recording (out twice or in twice; perf on some hosts loses switches out of the "
				    "idle task)", r->vms[i].machine_pid, (unsigned long long)n);
	}
	if (r->host_lost)
		report_note(r, "host perf lost events %llu times: the threads' state was unknown from each loss "
			    "to their next switch", (unsigned long long)r->host_lost);
	if (d->bad)
		report_note(r, "%llu samples could not be read (unknown id or damaged)", (unsigned long long)d->bad);
}

void report_feed_free(struct report_feed *d)
{
	if (!d)
		return;
	free(d->attrs);
	free(d->kinds);
	free(d->usable);
	free(d->gsw_of);
	free(d->ids);
	free(d);
}

int report_feed_new(struct report *r, const struct perf_attr_ids *(*attr)(void *ud, size_t i), void *ud,
		    size_t n_attrs, const uint8_t *td, size_t td_len, char *err, size_t errlen,
		    struct report_feed **ret)
{
	struct report_feed *d = calloc(1, sizeof(*d));
	int q;

	err[0] = '\0';
	if (!d)
		return -ENOMEM;
	d->r = r;
	q = read_formats(d, td, td_len, err, errlen);
	if (q >= 0 && (q = read_attrs(d, attr, ud, n_attrs)) < 0)
		snprintf(err, errlen, "out of memory");
	if (q < 0) {
		report_feed_free(d);
		return q;
	}
	/* known before the records: stall.c's reasons depend on them */
	r->has_switch = d->f[K_SWITCH].present;
	r->has_wakeup = d->f[K_WAKEUP].present;
	r->has_kvm = d->f[K_KVM_EXIT].present && d->f[K_KVM_ENTRY].present;
	*ret = d;
	return 0;
}

void report_feed_record(struct report_feed *d, const struct perf_event_header *e)
{
	on_record(d, e);
}

void report_feed_end(struct report_feed *d)
{
	report_end(d->r);
	read_notes(d);
}

static const struct perf_attr_ids *reader_attr(void *ud, size_t i)
{
	return perf_reader_attr(ud, i);
}

static int read_run(struct report *r, struct perf_reader *pr, char *err, size_t errlen)
{
	_cleanup_free_ uint8_t *td = NULL;
	const struct perf_event_header *e;
	struct report_feed *d = NULL;
	size_t td_len = 0;
	int q = perf_reader_feature(pr, PERF_FEAT_TRACING_DATA, &td, &td_len);

	if (q < 0 && q != -ENOENT) {
		snprintf(err, errlen, "its TRACING_DATA section is damaged");
		q = -EBADMSG;
	} else {
		q = report_feed_new(r, reader_attr, pr, perf_reader_n_attrs(pr), q == -ENOENT ? NULL : td, td_len,
				    err, errlen, &d);
	}
	while (q >= 0 && (q = perf_reader_next(pr, &e)) > 0)
		on_record(d, e);
	if (q < 0 && !err[0])
		snprintf(err, errlen, "%s", q == -ENOMEM ? "out of memory" : perf_reader_error(pr));
	if (q >= 0)
		report_feed_end(d);
	report_feed_free(d);
	perf_reader_free(pr);
	return q < 0 ? q : 0;
}

int report_read_fd(struct report *r, int fd, char *err, size_t errlen)
{
	struct perf_reader *pr = NULL;
	int q;

	err[0] = '\0';
	q = perf_reader_open_fd(fd, &pr, err, errlen);
	if (q < 0) {
		close(fd);
		return q;
	}
	return read_run(r, pr, err, errlen);
}

int report_read(struct report *r, const char *path, char *err, size_t errlen)
{
	char data[PATH_MAX + 8];
	struct perf_reader *pr = NULL;
	struct stat st;
	int q;

	err[0] = '\0';
	r->path = path;
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) { /* a perf.data directory */
		snprintf(data, sizeof(data), "%s/data", path);
		path = data;
	}
	q = perf_reader_open(path, &pr, err, errlen);
	if (q < 0)
		return q;
	return read_run(r, pr, err, errlen);
}
