// SPDX-License-Identifier: GPL-2.0-only
/* The host perf.data side of the merge: attrs (IDENTIFIER added where missing), records
 * patched to carry it, and a time-ordered stream rebuilt from perf's FINISHED_ROUND rounds. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "merge.h"
#include "perf_reader.h"
#include "util.h"

static int host_attrs(struct merge_host *h, char *err, size_t errlen)
{
	bool all_ident = true;

	h->n_attrs = perf_reader_n_attrs(h->r);
	if (h->n_attrs == 0) {
		snprintf(err, errlen, "it has no event attributes");
		return -EBADMSG;
	}
	h->attrs = calloc(h->n_attrs, sizeof(*h->attrs));
	h->samples_by_attr = calloc(h->n_attrs, sizeof(uint64_t));
	if (!h->attrs || !h->samples_by_attr)
		return -ENOMEM;
	for (size_t i = 0; i < h->n_attrs; i++) {
		const struct perf_attr_ids *a = perf_reader_attr(h->r, i);

		h->attrs[i].attr = a->attr;
		h->attrs[i].n_ids = a->n_ids;
		h->attrs[i].ids = calloc(a->n_ids + 1, 8);
		if (!h->attrs[i].ids)
			return -ENOMEM;
		memcpy(h->attrs[i].ids, a->ids, a->n_ids * 8);
		for (size_t k = 0; k < a->n_ids; k++)
			h->max_id = MAX(h->max_id, a->ids[k]);
		if (!(a->attr.sample_type & PERF_SAMPLE_IDENTIFIER))
			all_ident = false;
		if (!(a->attr.sample_type & PERF_SAMPLE_TIME) || !a->attr.sample_id_all) {
			snprintf(err, errlen, "event %zu was recorded without timestamps or sample_id_all; "
				 "record the host with 'perf record' defaults", i);
			return -EBADMSG;
		}
	}
	if (!all_ident && h->n_attrs > 1) {
		snprintf(err, errlen, "it has several events without PERF_SAMPLE_IDENTIFIER; "
			 "record with 'perf record --sample-identifier'");
		return -EBADMSG;
	}
	if (!all_ident) {
		struct perf_attr_ids *a = &h->attrs[0];

		h->patch_identifier = true;
		if (a->n_ids == 0)
			a->ids[a->n_ids++] = ++h->max_id;
		h->patch_id = a->ids[0];
		a->attr.sample_type |= PERF_SAMPLE_IDENTIFIER;
	}
	return 0;
}

/* A reader of its own on the recording open as fd (a dup: the file offset does not matter,
 * every read is a pread), or -errno. */
static int host_dup(int fd)
{
	int d = fcntl(fd, F_DUPFD_CLOEXEC, 3);

	return d < 0 ? -errno : d;
}

int merge_host_open(struct merge_host *h, int fd, char *err, size_t errlen)
{
	char rerr[200] = "";
	int d = host_dup(fd), r = d < 0 ? d : perf_reader_open_fd(d, &h->r, rerr, sizeof(rerr));

	if (r < 0 && d >= 0)
		close(d);
	if (r < 0) {
		snprintf(err, errlen, "%s", rerr);
		return r;
	}
	h->present = true;
	return host_attrs(h, err, errlen);
}

int merge_host_open_follow(struct merge_host *h, int fd, char *err, size_t errlen)
{
	char rerr[200] = "";
	int d = host_dup(fd), r = d < 0 ? d : perf_reader_open_follow_fd(d, &h->r, rerr, sizeof(rerr));

	if (r < 0 && d >= 0)
		close(d);
	if (r == -EALREADY) /* perf record ended before the follower began (a stop right after start): whole */
		return merge_host_open(h, fd, err, errlen);
	if (r < 0) {
		snprintf(err, errlen, "%s", rerr);
		return r;
	}
	h->present = h->follow = true;
	return host_attrs(h, err, errlen);
}

int merge_host_open_prefix(struct merge_host *h, int fd, uint64_t size, char *err, size_t errlen)
{
	int r = merge_host_open_follow(h, fd, err, errlen);

	if (r < 0)
		return r;
	h->prefix = true;
	merge_host_horizon(h, size, 0);
	return 0;
}

void merge_host_horizon(struct merge_host *h, uint64_t size, uint64_t ts)
{
	perf_reader_set_end(h->r, size);
	h->horizon_size = MAX(h->horizon_size, size);
	h->horizon_ts = MAX(h->horizon_ts, ts);
}

/* After the last record: the host's build-ids (its BUILD_ID feature, its files') complete. */
void merge_host_build_ids(struct merge_host *h)
{
	_cleanup_free_ uint8_t *d = NULL;
	size_t len = 0;

	if (h->present && perf_reader_feature(h->r, PERF_FEAT_BUILD_ID, &d, &len) == 0)
		merge_gbin_host_feature(&h->ids, d, len);
	merge_gbin_host_resolve(&h->ids);
}

int merge_host_finish(struct merge_host *h)
{
	char err[200];
	int r;

	if (!h->follow)
		return 0;
	r = perf_reader_finish(h->r, err, sizeof(err));
	if (r < 0) {
		snprintf(h->err, sizeof(h->err), "%s", err);
		return r;
	}
	h->follow = false;
	return 0;
}

static int attr_by_id(const struct merge_host *h, uint64_t id)
{
	for (size_t i = 0; i < h->n_attrs; i++)
		for (size_t k = 0; k < h->attrs[i].n_ids; k++)
			if (h->attrs[i].ids[k] == id)
				return (int)i;
	return -1;
}

/* Time of a kernel record (sample or sample_id_all trailer), in its original layout. */
static int record_time(struct merge_host *h, const struct perf_event_header *e, int *ret_attr,
		       uint64_t *ret_ts)
{
	const uint8_t *p = (const uint8_t *)e;
	const struct perf_event_attr *a;
	uint64_t st, id;
	size_t off;
	int ai = 0;

	if (!h->patch_identifier) {
		if (e->size < 16)
			return -EBADMSG;
		memcpy(&id, e->type == PERF_RECORD_SAMPLE ? p + 8 : p + e->size - 8, 8);
		if ((ai = attr_by_id(h, id)) < 0)
			return -ENOENT;
	}
	a = &perf_reader_attr(h->r, (size_t)ai)->attr;
	st = a->sample_type;
	if (e->type == PERF_RECORD_SAMPLE) {
		off = 8 + !!(st & PERF_SAMPLE_IDENTIFIER) * 8 + !!(st & PERF_SAMPLE_IP) * 8 +
		      !!(st & PERF_SAMPLE_TID) * 8;
	} else {
		off = e->size - (!!(st & PERF_SAMPLE_IDENTIFIER) + !!(st & PERF_SAMPLE_CPU) +
				 !!(st & PERF_SAMPLE_STREAM_ID) + !!(st & PERF_SAMPLE_ID) + 1) * 8;
		if (e->size < 8 + 8 * (unsigned)__builtin_popcountll(st & 0x2c6) + 8 * !!(st & PERF_SAMPLE_IDENTIFIER))
			return -EBADMSG;
	}
	if (off + 8 > e->size)
		return -EBADMSG;
	memcpy(ret_ts, p + off, 8);
	*ret_attr = ai;
	return 0;
}

/* Records up to HOST_POOL_DATA bytes (a sched_switch sample with its raw data is ~140) are
 * allocated at that size and, released, kept on h->pool for the next: a round holds ~10000, so
 * malloc and free per record showed in the live merge's profile. At most HOST_POOL_MAX kept. */
#define HOST_POOL_DATA 248u
#define HOST_POOL_MAX 65536u

static struct host_rec *host_alloc(struct merge_host *h, size_t len)
{
	struct host_rec *q;

	if (len > HOST_POOL_DATA)
		return malloc(sizeof(*q) + len);
	if (!h->pool)
		return malloc(sizeof(*q) + HOST_POOL_DATA);
	q = h->pool;
	memcpy(&h->pool, q->data, sizeof(h->pool));
	h->pooled--;
	return q;
}

void merge_host_release(struct merge_host *h, struct host_rec *q)
{
	if (!q)
		return;
	if (q->len > HOST_POOL_DATA || h->pooled >= HOST_POOL_MAX) {
		free(q);
		return;
	}
	memcpy(q->data, &h->pool, sizeof(h->pool));
	h->pool = q;
	h->pooled++;
}

/* A queued copy, with the IDENTIFIER inserted/appended when the host file lacked it. */
static struct host_rec *host_copy(struct merge_host *h, const struct perf_event_header *e, uint64_t ts)
{
	bool patch = h->patch_identifier && e->type < PERF_REC_USER_START;
	struct host_rec *q = host_alloc(h, (size_t)e->size + 8);
	struct perf_event_header nh = *e;

	if (!q)
		return NULL;
	q->ts = ts;
	q->seq = h->seq++;
	if (!patch) {
		memcpy(q->data, e, e->size);
	} else if (e->type == PERF_RECORD_SAMPLE) {
		nh.size += 8;
		memcpy(q->data, &nh, 8);
		memcpy(q->data + 8, &h->patch_id, 8);
		memcpy(q->data + 16, (const uint8_t *)e + 8, e->size - 8u);
	} else {
		nh.size += 8;
		memcpy(q->data, e, e->size);
		memcpy(q->data, &nh, 8);
		memcpy(q->data + e->size, &h->patch_id, 8);
	}
	q->len = nh.size;
	return q;
}

static int cmp_rec(const void *a, const void *b)
{
	const struct host_rec *x = *(struct host_rec *const *)a, *y = *(struct host_rec *const *)b;

	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return (x->seq > y->seq) - (x->seq < y->seq);
}

static int queue_push(struct merge_host *h, struct host_rec *q)
{
	if (h->qn == h->qcap) {
		size_t cap = h->qcap ? h->qcap * 2 : 4096;
		struct host_rec **n = realloc(h->q, cap * sizeof(*n)), **t;

		if (!n)
			return -ENOMEM;
		h->q = n;
		if (!(t = realloc(h->qtmp, cap * sizeof(*t))))
			return -ENOMEM;
		h->qtmp = t;
		h->qcap = cap;
	}
	h->q[h->qn++] = q;
	return 0;
}

/* Releases queued records with ts <= limit: sorts them to the front; returns how many. What an
 * earlier release sorted and left (the records after its limit) stays in order: only the records
 * queued since are sorted, then merged with it (the live merge releases at each horizon, and
 * sorting the whole queue each time was 3-5% of its CPU). The order is the same total
 * order (time, then arrival) a sort of the whole queue gives. */
static size_t queue_release(struct merge_host *h, uint64_t limit)
{
	size_t k = 0, a = 0, b = h->qsorted, o = 0;

	if (h->qsorted < h->qn)
		qsort(h->q + h->qsorted, h->qn - h->qsorted, sizeof(*h->q), cmp_rec);
	if (h->qsorted && h->qsorted < h->qn && cmp_rec(&h->q[h->qsorted - 1], &h->q[h->qsorted]) > 0) {
		while (a < h->qsorted && b < h->qn)
			h->qtmp[o++] = cmp_rec(&h->q[a], &h->q[b]) <= 0 ? h->q[a++] : h->q[b++];
		while (a < h->qsorted)
			h->qtmp[o++] = h->q[a++];
		while (b < h->qn)
			h->qtmp[o++] = h->q[b++];
		memcpy(h->q, h->qtmp, h->qn * sizeof(*h->q));
	}
	h->qsorted = h->qn;
	while (k < h->qn && h->q[k]->ts <= limit)
		k++;
	return k;
}


/* The kernel (6.1 to 6.18 at least: perf_event_mmap_output) ORs PERF_RECORD_MISC_MMAP_BUILD_ID
 * into the one mmap event it hands to every listener in turn, and restores its type and size
 * but not its misc: once a listener with attr.build_id (a 'perf record --buildid-mmap', a
 * trace-agent on the host) has had it, the MMAP2 records of ours written after carry the bit
 * over their maj/min/ino body. perf 6.1 then reads maj's low byte as the build-id size and
 * copies that many bytes into 20 (util/build-id.c build_id__init: "assertion failed at
 * util/build-id.c:1010", then "stack smashing detected" and perf stops). The body is a whole
 * maj/min/ino one: the bit goes, the mapping stays. Stale: the record's event has no
 * attr.build_id, or the bytes cannot be a build-id (size 0 or over 20, reserved bytes set). */
static bool host_mmap2_stale_build_id(const struct merge_host *h, const uint8_t *r, size_t ai, bool known_attr)
{
	struct perf_event_header e;
	bool any = false;

	memcpy(&e, r, sizeof(e));
	if (e.type != PERF_RECORD_MMAP2 || !(e.misc & PERF_RECORD_MISC_MMAP_BUILD_ID) || e.size < 72)
		return false;
	if (r[40] == 0 || r[40] > ELF_NOTES_BUILD_ID_MAX || r[41] || r[42] || r[43])
		return true;
	if (known_attr)
		return !perf_reader_attr(h->r, ai)->attr.build_id;
	for (size_t i = 0; i < h->n_attrs; i++) /* perf's synthesized records: id 0 */
		any = any || perf_reader_attr(h->r, i)->attr.build_id;
	return !any;
}

static int host_read_one(struct merge_host *h, struct host_rec **ret_imm)
{
	const struct perf_event_header *e;
	uint64_t ts = 0;
	int ai = 0, r = perf_reader_next(h->r, &e);

	if (r <= 0) {
		if (r < 0)
			snprintf(h->err, sizeof(h->err), "%s", perf_reader_error(h->r));
		return r;
	}
	h->records++;
	if (e->type == PERF_REC_THREAD_MAP || e->type == PERF_REC_CPU_MAP) {
		bool *seen = e->type == PERF_REC_THREAD_MAP ? &h->thread_map : &h->cpu_map;

		if (*seen)
			return 1;
		*seen = true;
	}
	if (e->type == PERF_REC_FINISHED_ROUND) {
		uint64_t limit = h->max_ts_prev_round;

		h->max_ts_prev_round = h->max_ts;
		h->qhead = 0;
		h->qready = queue_release(h, limit);
		return 1;
	}
	if (e->type < PERF_REC_USER_START && (r = record_time(h, e, &ai, &ts)) == -ENOENT &&
	    e->type != PERF_RECORD_SAMPLE) {
		ts = 0; /* synthesized records carry id 0: written in file order, like perf does */
	} else if (e->type < PERF_REC_USER_START && r < 0) {
		snprintf(h->err, sizeof(h->err), "record %llu (type %u) has no usable sample id or time",
			 (unsigned long long)h->records, e->type);
		return r;
	}
	if (e->type == PERF_RECORD_SAMPLE)
		h->samples++, h->samples_by_attr[ai]++;
	if (e->type == PERF_RECORD_LOST && e->size >= 24) {
		uint64_t lost;

		memcpy(&lost, (const uint8_t *)e + 16, 8);
		h->lost += lost, h->lost_records++;
	}
	if (!(*ret_imm = host_copy(h, e, ts)))
		return -ENOMEM;
	if (host_mmap2_stale_build_id(h, (*ret_imm)->data, (size_t)ai, r == 0)) {
		struct perf_event_header nh;

		memcpy(&nh, (*ret_imm)->data, sizeof(nh));
		nh.misc &= (uint16_t)~PERF_RECORD_MISC_MMAP_BUILD_ID;
		memcpy((*ret_imm)->data, &nh, sizeof(nh));
		h->stale_build_ids++;
	}
	if (e->type == PERF_RECORD_MMAP || e->type == PERF_RECORD_MMAP2)
		merge_gbin_host_record(&h->ids, (const struct perf_event_header *)(*ret_imm)->data);
	if (e->type >= PERF_REC_USER_START || ts == 0)
		return 1;
	h->max_ts = MAX(h->max_ts, ts);
	r = queue_push(h, *ret_imm);
	*ret_imm = NULL;
	return r < 0 ? r : 1;
}

int merge_host_peek(struct merge_host *h, struct host_rec **ret, bool *ret_immediate)
{
	if (h->imm) {
		*ret = h->imm, *ret_immediate = true;
		return 1;
	}
	while (h->qhead == h->qready) {
		int r;

		if (h->qhead) { /* drop the consumed prefix (sorted: what stays sorted is after it) */
			memmove(h->q, h->q + h->qhead, (h->qn - h->qhead) * sizeof(*h->q));
			h->qn -= h->qhead;
			h->qsorted = h->qsorted > h->qhead ? h->qsorted - h->qhead : 0;
			h->qhead = h->qready = 0;
		}
		if (h->eof) {
			if (!h->qn)
				return 0;
			h->qready = queue_release(h, UINT64_MAX);
			break;
		}
		r = host_read_one(h, &h->imm);
		if (r == -EAGAIN && h->prefix)
			r = 0; /* the prefix read (a partial record after it is perf's next write) */
		if (r == -EAGAIN) {
			/* Follow: what perf has not written yet. Records at or before the
			 * previous round's maximum are final (perf's rule), and so are those
			 * before the daemon's horizon once the data up to it is read. */
			uint64_t limit = h->max_ts_prev_round;

			if (perf_reader_read_pos(h->r) >= h->horizon_size && h->horizon_ts)
				limit = MAX(limit, h->horizon_ts - 1);
			h->bound = limit + 1;
			if (limit == h->bound_limit && h->seq == h->bound_seq)
				return 2; /* nothing new since the last look: no sort per guest record */
			h->bound_limit = limit, h->bound_seq = h->seq;
			h->qready = queue_release(h, limit);
			if (h->qready == 0)
				return 2;
			break;
		}
		if (r < 0)
			return r;
		if (r == 0)
			h->eof = true;
		if (h->imm) {
			*ret = h->imm, *ret_immediate = true;
			return 1;
		}
	}
	*ret = h->q[h->qhead];
	*ret_immediate = false;
	return 1;
}

void merge_host_take(struct merge_host *h)
{
	if (h->imm)
		h->imm = NULL;
	else if (h->qhead < h->qready)
		h->qhead++;
}

void merge_host_free(struct merge_host *h)
{
	if (!h)
		return;
	for (size_t i = 0; i < h->n_attrs && h->attrs; i++)
		free(h->attrs[i].ids);
	free(h->attrs);
	free(h->samples_by_attr);
	for (size_t i = 0; i < h->qn; i++)
		if (i >= h->qhead)
			free(h->q[i]);
	free(h->q);
	free(h->qtmp);
	free(h->imm);
	while (h->pool) {
		struct host_rec *q = h->pool;

		memcpy(&h->pool, q->data, sizeof(h->pool));
		free(q);
	}
	merge_gbin_host_free(&h->ids);
	perf_reader_free(h->r);
	memset(h, 0, sizeof(*h));
}
