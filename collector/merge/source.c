// SPDX-License-Identifier: GPL-2.0-only
/* The merge's sources: the guest's streams behind one interface (a table of kinds: a vCPU's
 * ftrace pages, guest.c; its perf records, gperf.c), the pick of the stream whose record goes
 * next, and the host recording's records (host.c) written through out.c. The offline loop
 * (merge.c) and the live one (follow.c) both pick through it. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "merge.h"
#include "out.h"
#include "source.h"
#include "util.h"

int merge_source_host_emit(struct merge_ctx *m, struct host_rec *q, bool immediate)
{
	const struct perf_event_header *h = (const void *)q->data;
	int r = 0;

	if (!m->index_done && h->type != PERF_REC_ID_INDEX && (r = merge_out_guest_index(m)) < 0)
		return r;
	if (!immediate) {
		if (q->ts < m->last_ts)
			m->host.out_of_order++;
		m->last_ts = MAX(m->last_ts, q->ts);
		if (h->type == PERF_RECORD_SAMPLE) {
			m->first_sample = MIN(m->first_sample, q->ts);
			m->last_sample = MAX(m->last_sample, q->ts);
		}
	}
	for (size_t v = 0; !immediate && h->type == PERF_RECORD_SAMPLE && v < m->n_vm; v++)
		merge_vcpu_host(&m->vm[v].vcpu, &m->host, h);
	for (size_t v = 0; h->type == PERF_RECORD_COMM && v < m->n_vm; v++) /* a QEMU started since */
		merge_vcpu_comm(&m->vm[v].vcpu, &m->vm[v].guest, h);
	m->host_written += h->type == PERF_RECORD_SAMPLE;
	if ((r = merge_out_emit(m, q->data, immediate ? 0 : q->ts)) < 0 || immediate)
		return r;
	return merge_exits_host(m, h); /* a kvm:kvm_exit of a traced vCPU: its guest sample too */
}

/* The guests' streams, one kind per row: a vCPU's ftrace pages (guest.c), its perf records
 * (gperf.c); each stream belongs to one VM (s->vm). A new kind of stream is one more row. */
static bool src_ftrace_peek(const struct merge_source *s, uint64_t *ret_ts)
{
	struct guest_cpu *c = s->state;

	if (!merge_guest_peek(&s->vm->guest, c))
		return false;
	*ret_ts = c->pending_lost ? c->lost_ts : c->head_ts;
	return true;
}

static int src_ftrace_emit(struct merge_ctx *m, const struct merge_source *s)
{
	return merge_out_guest(m, s->vm, s->state);
}

static bool src_ftrace_blocked(const struct merge_source *s, uint64_t *ret_bound)
{
	struct guest_cpu *c = s->state;

	if (c->blocked)
		*ret_bound = merge_guest_bound(&s->vm->guest, c);
	return c->blocked;
}

static void src_ftrace_raise(const struct merge_source *s, uint64_t ts)
{
	struct guest_cpu *c = s->state;

	if (c->pending_lost)
		c->lost_ts = ts;
	else
		c->head_ts = ts;
	c->last_ts = MAX(c->last_ts, ts);
}

static void *src_ftrace_state(struct merge_vm *vm, size_t i)
{
	return vm->guest.present && i < vm->guest.ncpus ? &vm->guest.cpus[i] : NULL;
}

static bool src_gperf_peek(const struct merge_source *s, uint64_t *ret_ts)
{
	struct gperf_cpu *c = s->state;

	if (!merge_gperf_peek(&s->vm->gp, &s->vm->guest, c))
		return false;
	*ret_ts = c->head_ts;
	return true;
}

static int src_gperf_emit(struct merge_ctx *m, const struct merge_source *s)
{
	return merge_gperf_emit(m, s->vm, s->state);
}

static bool src_gperf_blocked(const struct merge_source *s, uint64_t *ret_bound)
{
	struct gperf_cpu *c = s->state;

	if (c->blocked)
		*ret_bound = merge_gperf_bound(&s->vm->guest, c);
	return c->blocked;
}

static void src_gperf_raise(const struct merge_source *s, uint64_t ts)
{
	struct gperf_cpu *c = s->state;

	c->head_ts = ts;
	c->last_ts = MAX(c->last_ts, ts);
}

/* Records of one time from different CPUs: a FORK's CPU first (merge_gperf_rank). */
static unsigned src_gperf_rank(const struct merge_source *s)
{
	return merge_gperf_rank(&s->vm->guest, s->state);
}

static void *src_gperf_state(struct merge_vm *vm, size_t i)
{
	return vm->gp.present && i < vm->gp.ncpus_total ? &vm->gp.cpus[i] : NULL;
}

/* A VM's live migrations (migration.c): one stream per VM, written in time with the rest. */
static bool src_migs_peek(const struct merge_source *s, uint64_t *ret_ts)
{
	return merge_migs_peek(s->vm, ret_ts);
}

static int src_migs_emit(struct merge_ctx *m, const struct merge_source *s)
{
	return merge_migs_emit(m, s->vm);
}

static bool src_migs_blocked(const struct merge_source *s, uint64_t *ret_bound)
{
	(void)s, (void)ret_bound;
	return false;
}

static void src_migs_raise(const struct merge_source *s, uint64_t ts)
{
	struct merge_migs *x = s->state;

	if (x->next < x->n)
		x->b[x->next].at = MAX(x->b[x->next].at, ts);
}

static void *src_migs_state(struct merge_vm *vm, size_t i)
{
	return vm->migs.on && i == 0 ? &vm->migs : NULL;
}

static const struct merge_source_kind source_kinds[] = {
	{ .state = src_ftrace_state, .peek = src_ftrace_peek, .emit = src_ftrace_emit,
	  .blocked = src_ftrace_blocked, .raise = src_ftrace_raise },
	{ .state = src_gperf_state, .peek = src_gperf_peek, .emit = src_gperf_emit,
	  .blocked = src_gperf_blocked, .raise = src_gperf_raise, .rank = src_gperf_rank },
	{ .state = src_migs_state, .peek = src_migs_peek, .emit = src_migs_emit,
	  .blocked = src_migs_blocked, .raise = src_migs_raise },
};

int merge_sources(struct merge_ctx *m)
{
	size_t n = 0;

	for (size_t v = 0; v < m->n_vm; v++)
		for (size_t k = 0; k < ARRAY_SIZE(source_kinds); k++)
			for (size_t i = 0; source_kinds[k].state(&m->vm[v], i); i++)
				n++;
	m->src = calloc(n + 1, sizeof(*m->src));
	if (!m->src)
		return -ENOMEM;
	for (size_t v = 0; v < m->n_vm; v++)
		for (size_t k = 0; k < ARRAY_SIZE(source_kinds); k++)
			for (size_t i = 0; source_kinds[k].state(&m->vm[v], i); i++)
				m->src[m->n_src++] = (struct merge_source){ .kind = &source_kinds[k], .vm = &m->vm[v],
									 .state = source_kinds[k].state(&m->vm[v], i) };
	return 0;
}

unsigned merge_source_rank(const struct merge_source *s)
{
	return s->kind->rank ? s->kind->rank(s) : 1;
}

/* Whether s, whose next record is at t, goes before *best (at *bt): the earlier time, then on a
 * tie the lower rank (asked only then: *brank < 0 until asked), then the first stream. */
bool merge_source_before(struct merge_source *s, uint64_t t, struct merge_source **best, uint64_t *bt,
			 int *brank)
{
	int rank = -1;

	if (*best && t > *bt)
		return false;
	if (*best && t == *bt) {
		rank = (int)merge_source_rank(s);
		if (*brank < 0)
			*brank = (int)merge_source_rank(*best);
		if (rank >= *brank)
			return false;
	}
	*best = s, *bt = t, *brank = rank;
	return true;
}

/* The guest stream whose next record goes first (source_before), or NULL. */
struct merge_source *merge_source_min(struct merge_ctx *m, uint64_t *ret_ts)
{
	struct merge_source *best = NULL;
	uint64_t bt = UINT64_MAX, t;
	int brank = -1;

	for (size_t i = 0; i < m->n_src; i++)
		if (m->src[i].kind->peek(&m->src[i], &t))
			merge_source_before(&m->src[i], t, &best, &bt, &brank);
	*ret_ts = bt;
	return best;
}

/* The host's next timed record in *q (1), 2 (following: none yet, m->host.bound), 0 (none
 * left) or -errno; untimed records on the way are written at once. */
int merge_source_host_next(struct merge_ctx *m, struct host_rec **q)
{
	for (;;) {
		bool imm = false;
		int r = m->host.present ? merge_host_peek(&m->host, q, &imm) : 0;

		if (r != 1 || !imm)
			return r;
		merge_host_take(&m->host);
		r = merge_source_host_emit(m, *q, true);
		merge_host_release(&m->host, *q);
		*q = NULL;
		if (r < 0)
			return r;
	}
}
