// SPDX-License-Identifier: GPL-2.0-only
/* vCPU → host CPU for guest samples (docs/design.md §7, docs/perf-data.md "Records" 4): QEMU names its
 * vCPU threads "CPU n/KVM" ("CPU n/TCG" under TCG; -name debug-threads=on); perf record -a synthesizes COMM records for
 * them (id 0, time 0), and host sched:sched_switch samples say where each ran. A pre-pass over
 * the host recording learns the thread ids (the guest ID_INDEX, written first, needs them) and
 * each vCPU's first host CPU; the main pass follows switches in time order, so every guest
 * sample takes the state at its own time. Memory: per-vCPU state, nothing per record. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "merge.h"
#include "perf_reader.h"
#include "tep_format.h"
#include "tracing_data.h"
#include "util.h"

struct sw_sample {
	uint64_t time;
	uint32_t cpu;
	const uint8_t *raw;
	uint32_t raw_len;
};

/* Time, CPU and raw data of a sample of attr a (which has TIME, CPU and RAW, no READ);
 * -EBADMSG when they do not fit the record. */
static int sample_fields(const struct perf_event_attr *a, const struct perf_event_header *e, struct sw_sample *ret)
{
	const uint8_t *p = (const uint8_t *)e;
	uint64_t st = a->sample_type, nr;
	size_t off = 8 + 8 * (size_t)__builtin_popcountll(st & (PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID));

	if (off + 8 > e->size)
		return -EBADMSG;
	memcpy(&ret->time, p + off, 8);
	off += 8 + 8 * (size_t)__builtin_popcountll(st & (PERF_SAMPLE_ADDR | PERF_SAMPLE_ID | PERF_SAMPLE_STREAM_ID));
	if (off + 8 > e->size)
		return -EBADMSG;
	memcpy(&ret->cpu, p + off, 4);
	off += 8 + ((st & PERF_SAMPLE_PERIOD) ? 8 : 0);
	if (st & PERF_SAMPLE_CALLCHAIN) {
		if (off + 8 > e->size)
			return -EBADMSG;
		memcpy(&nr, p + off, 8);
		if (nr > (e->size - off - 8) / 8)
			return -EBADMSG;
		off += 8 + nr * 8;
	}
	if (off + 4 > e->size)
		return -EBADMSG;
	memcpy(&ret->raw_len, p + off, 4);
	ret->raw = p + off + 4;
	return ret->raw_len > e->size - off - 4 ? -EBADMSG : 0;
}

static int find_sched_switch(const char *sys, const struct td_text *t, void *ud)
{
	struct tep_format *f = ud;

	if (strcmp(sys, "sched") || !strstr(t->data, "name: sched_switch\n"))
		return 0;
	return tep_format_parse(t->data, t->len, f) == 0 && !strcmp(f->name, "sched_switch") ? 1 : 0;
}

/* The sched_switch attr and its prev_pid/next_pid offsets; false (with why) when unusable. */
static bool switch_attr(struct merge_vcpu *v, const struct merge_host *h, const struct tracing_data *td)
{
	_cleanup_free_ struct tep_format *f = calloc(1, sizeof(*f));
	const struct tep_format_field *prev, *next;

	if (!f || tracing_data_for_each(td, find_sched_switch, f) != 1) {
		snprintf(v->why, sizeof(v->why), "the host recording has no sched:sched_switch "
			 "(record the host with -e sched:sched_switch)");
		return false;
	}
	for (size_t i = 0; i < h->n_attrs && v->sw_attr < 0; i++)
		if (h->attrs[i].attr.type == PERF_TYPE_TRACEPOINT && h->attrs[i].attr.config == f->id)
			v->sw_attr = (int)i;
	prev = tep_format_field(f, "prev_pid");
	next = tep_format_field(f, "next_pid");
	if (v->sw_attr < 0 || !prev || !next || prev->size != 4 || next->size != 4) {
		snprintf(v->why, sizeof(v->why), "the host recording has no usable sched:sched_switch event");
		return false;
	}
	if (!(h->attrs[v->sw_attr].attr.sample_type & PERF_SAMPLE_CPU) ||
	    (h->attrs[v->sw_attr].attr.sample_type & (PERF_SAMPLE_READ | PERF_SAMPLE_RAW)) != PERF_SAMPLE_RAW) {
		snprintf(v->why, sizeof(v->why), "the host's sched:sched_switch samples lack CPU or raw data "
			 "(record with perf record -a)");
		return false;
	}
	v->prev_pid_off = prev->offset;
	v->next_pid_off = next->offset;
	return true;
}

/* True when rec is a sample of the sched_switch attr a (ids: that attr's ids). */
static bool is_switch(const struct perf_attr_ids *a, const struct perf_event_header *e)
{
	uint64_t id;

	if (e->type != PERF_RECORD_SAMPLE)
		return false;
	if (!(a->attr.sample_type & PERF_SAMPLE_IDENTIFIER))
		return true; /* a single-event file (merge_host_open checked) */
	if (e->size < 16)
		return false;
	memcpy(&id, (const uint8_t *)e + 8, 8);
	for (size_t k = 0; k < a->n_ids; k++)
		if (a->ids[k] == id)
			return true;
	return false;
}

/* QEMU names vCPU threads "CPU <n>/<accelerator>" with -name debug-threads=on. */
static const char *const vcpu_accels[] = { "/KVM", "/TCG", "/HVF", "/WHPX", "/NVMM" };

/* vCPU index of a "CPU <n>/KVM" (or /TCG, ...) name, or -1. */
static long vcpu_of_name(const char *s, size_t len)
{
	char *end;
	size_t rest;
	long n;

	if (len < 9 || strncmp(s, "CPU ", 4) || s[4] < '0' || s[4] > '9')
		return -1;
	n = strtol(s + 4, &end, 10);
	if (n >= MERGE_MAX_CPUS)
		return -1;
	rest = len - (size_t)(end - s);
	for (size_t i = 0; i < ARRAY_SIZE(vcpu_accels); i++)
		if (rest == strlen(vcpu_accels[i]) && !strncmp(end, vcpu_accels[i], rest))
			return n;
	return -1;
}

static long vcpu_of_tid(const struct merge_vcpu *v, int32_t tid);
static int cmp_tid(const void *a, const void *b);

/* Whether pid is the guest's QEMU: the first one, or one it migrated to. */
static bool guest_qemu_pid(const struct merge_guest *g, uint32_t pid)
{
	if (pid == g->machine_pid)
		return true;
	for (uint32_t i = 0; i < g->nmig; i++)
		if (g->mig[i].to == pid)
			return true;
	return false;
}

/* Thread tid is vCPU n's (kept sorted for the switch lookups); the latest names the vCPU's thread. */
static void learn_tid(struct merge_vcpu *v, uint32_t n, int32_t tid)
{
	if (vcpu_of_tid(v, tid) >= 0)
		return;
	if (v->tid[n] < 0)
		v->named++;
	v->tid[n] = tid;
	if (v->n_tids < v->cap_tids) {
		v->by_tid[v->n_tids++] = (struct vcpu_tid){ tid, n };
		qsort(v->by_tid, v->n_tids, sizeof(*v->by_tid), cmp_tid);
	}
}

/* A COMM of a vCPU thread of the guest's QEMU (any of them, after migrations): learnt; of
 * another QEMU: kept among the others (the oldest makes room). */
static void learn_comm(struct merge_vcpu *v, const struct merge_guest *g, const struct perf_event_header *e)
{
	const uint8_t *p = (const uint8_t *)e;
	uint32_t pt[2];
	long n;

	if (e->size < 17)
		return;
	memcpy(pt, p + 8, 8);
	n = vcpu_of_name((const char *)p + 16, strnlen((const char *)p + 16, e->size - 16u));
	if (n < 0 || (uint32_t)n >= v->n || (int32_t)pt[1] <= 0 || (int32_t)pt[0] <= 0)
		return;
	if (guest_qemu_pid(g, pt[0])) {
		learn_tid(v, (uint32_t)n, (int32_t)pt[1]);
		return;
	}
	if (v->n_others == MERGE_VCPU_OTHERS)
		memmove(v->others, v->others + 1, --v->n_others * sizeof(*v->others));
	v->others[v->n_others++] = (struct vcpu_other){ (int32_t)pt[0], (int32_t)pt[1], (uint32_t)n };
}

void merge_vcpu_comm(struct merge_vcpu *v, const struct merge_guest *g, const struct perf_event_header *rec)
{
	if (v->n && v->by_tid && rec->type == PERF_RECORD_COMM)
		learn_comm(v, g, rec);
}

int merge_vcpu_adopt(struct merge_vcpu *v, const struct merge_guest *g, int32_t pid)
{
	size_t cap = 2 * (size_t)v->n * (1 + g->nmig);
	struct vcpu_tid *b;

	if (!v->n || !v->by_tid)
		return 0;
	if (cap > v->cap_tids) {
		if (!(b = realloc(v->by_tid, cap * sizeof(*b))))
			return -ENOMEM;
		v->by_tid = b;
		v->cap_tids = cap;
	}
	for (size_t i = 0; i < v->n_others; i++)
		if (v->others[i].pid == pid)
			learn_tid(v, v->others[i].vcpu, v->others[i].tid);
	if (v->why[0] && v->named && v->sw_attr >= 0 && !g->machine_pid_stand_in)
		v->why[0] = '\0'; /* no thread of the first QEMU was named, the destination's are */
	return 0;
}

static int cmp_tid(const void *a, const void *b)
{
	const struct vcpu_tid *x = a, *y = b;

	return (x->tid > y->tid) - (x->tid < y->tid);
}

static long vcpu_of_tid(const struct merge_vcpu *v, int32_t tid)
{
	struct vcpu_tid key = { .tid = tid }, *f;

	if (tid <= 0)
		return -1;
	f = bsearch(&key, v->by_tid, v->n_tids, sizeof(key), cmp_tid);
	return f ? (long)f->vcpu : -1;
}

/* Calls fn for each vCPU a sched_switch sample names (prev, then next). */
static void switch_vcpus(struct merge_vcpu *v, const struct sw_sample *s, void (*fn)(struct merge_vcpu *v, uint32_t vcpu, const struct sw_sample *s))
{
	const uint32_t off[2] = { v->prev_pid_off, v->next_pid_off };

	for (int i = 0; i < 2; i++) {
		int32_t pid;
		long n;

		if (off[i] > s->raw_len || s->raw_len - off[i] < 4)
			continue;
		memcpy(&pid, s->raw + off[i], 4);
		if ((n = vcpu_of_tid(v, pid)) >= 0)
			fn(v, (uint32_t)n, s);
	}
}

static void first_switch(struct merge_vcpu *v, uint32_t vcpu, const struct sw_sample *s)
{
	if (s->time < v->first_ts[vcpu]) {
		v->first_ts[vcpu] = s->time;
		v->cpu[vcpu] = (int32_t)s->cpu;
	}
}

/* The pre-pass: thread names from COMM records, then each vCPU's first switch. */
static void prescan(struct merge_vcpu *v, const struct merge_host *h, const struct merge_guest *g, int host_fd)
{
	const struct perf_attr_ids *a = perf_reader_attr(h->r, (size_t)v->sw_attr);
	const struct perf_event_header *e;
	struct perf_reader *r = NULL;
	int fd = fcntl(host_fd, F_DUPFD_CLOEXEC, 3); /* the same inode the main pass reads */
	struct stat st;
	char err[200];

	if (fd < 0)
		return;
	if (h->follow) { /* perf still writes it: QEMU's threads are named at its start */
		if (perf_reader_open_follow_fd(fd, &r, err, sizeof(err)) < 0) {
			close(fd);
			return;
		}
		if (fstat(fd, &st) < 0) {
			perf_reader_free(r);
			return;
		}
		perf_reader_set_end(r, (uint64_t)st.st_size);
	} else if (perf_reader_open_fd(fd, &r, err, sizeof(err)) < 0) {
		close(fd);
		return; /* the main pass reports a damaged file */
	}
	while (perf_reader_next(r, &e) > 0) {
		struct sw_sample s;

		if (e->type == PERF_RECORD_COMM)
			learn_comm(v, g, e);
		else if (v->n_tids && is_switch(a, e) && sample_fields(&a->attr, e, &s) == 0)
			switch_vcpus(v, &s, first_switch);
	}
	perf_reader_free(r);
}

int merge_vcpu_init(struct merge_vcpu *v, const struct merge_guest *g, const struct merge_host *h,
		    const struct tracing_data *td, int host_fd)
{
	v->sw_attr = -1;
	v->n = g->present ? g->ncpus : 0;
	if (!v->n)
		return 0;
	v->tid = malloc(v->n * sizeof(*v->tid));
	v->cpu = malloc(v->n * sizeof(*v->cpu));
	v->first_ts = malloc(v->n * sizeof(*v->first_ts));
	v->cap_tids = 2 * (size_t)v->n * (1 + g->nmig); /* a rename each, per QEMU */
	v->by_tid = calloc(v->cap_tids, sizeof(*v->by_tid));
	if (!v->tid || !v->cpu || !v->first_ts || !v->by_tid)
		return -ENOMEM;
	memset(v->tid, 0xff, v->n * sizeof(*v->tid));
	memset(v->cpu, 0xff, v->n * sizeof(*v->cpu));
	memset(v->first_ts, 0xff, v->n * sizeof(*v->first_ts));
	if (!h->present || !td) {
		snprintf(v->why, sizeof(v->why), "no host recording");
		return 0;
	}
	if (g->machine_pid_stand_in) {
		snprintf(v->why, sizeof(v->why), "QEMU's pid is unknown (session.ini qemu_pid)");
		return 0;
	}
	if (!switch_attr(v, h, td))
		return 0;
	prescan(v, h, g, host_fd);
	if (!v->named)
		snprintf(v->why, sizeof(v->why), "no \"CPU n/KVM\" threads of QEMU pid %u in the host recording "
			 "(start QEMU with -name debug-threads=on; single-threaded TCG, -accel tcg,thread=single, has "
			 "no thread per vCPU)", (uint32_t)g->machine_pid);
	return 0;
}

static void follow_switch(struct merge_vcpu *v, uint32_t vcpu, const struct sw_sample *s)
{
	v->cpu[vcpu] = (int32_t)s->cpu;
	v->switches++;
}

void merge_vcpu_host(struct merge_vcpu *v, const struct merge_host *h, const struct perf_event_header *rec)
{
	struct sw_sample s;

	if (v->why[0] || v->sw_attr < 0 || !is_switch(&h->attrs[v->sw_attr], rec) ||
	    sample_fields(&h->attrs[v->sw_attr].attr, rec, &s) < 0)
		return;
	switch_vcpus(v, &s, follow_switch);
}

uint32_t merge_vcpu_cpu(struct merge_vcpu *v, uint32_t vcpu)
{
	if (vcpu < v->n && !v->why[0] && v->cpu[vcpu] >= 0)
		return (uint32_t)v->cpu[vcpu];
	v->fallback_samples++;
	return vcpu;
}

long merge_vcpu_of_tid(const struct merge_vcpu *v, int32_t tid)
{
	return vcpu_of_tid(v, tid);
}

int32_t merge_vcpu_tid(const struct merge_vcpu *v, uint32_t vcpu)
{
	return vcpu < v->n ? v->tid[vcpu] : -1;
}

void merge_vcpu_free(struct merge_vcpu *v)
{
	if (!v)
		return;
	free(v->tid);
	free(v->cpu);
	free(v->first_ts);
	free(v->by_tid);
	memset(v, 0, sizeof(*v));
}
