// SPDX-License-Identifier: GPL-2.0-only
/* --flight-recorder for a guest perf stream (perf-cpuN.spool). The oldest records are freed
 * from the file like an ftrace stream's pages, but a perf stream's records are not pages and
 * some of them stay needed: a sample is named by the COMM of its task and the MMAP2 of the
 * binary it ran in, and those may have come long before. So the spool scan tells this table
 * where records start (one mark per file block) and gives it every task and mapping record
 * (COMM, MMAP, MMAP2, FORK, EXIT, KSYMBOL). When the daemon frees the front, it cuts at a record
 * boundary, drops what no record kept needs (the task exited, a later COMM of the same thread,
 * the mappings before an exec), and writes the rest into perf-cpuN.side (struct
 * vt_perf_side_head, then the records): the merge reads them first, then the spool from that
 * boundary. What is dropped is decided over the tables of every guest CPU at once, by time: a
 * task's records are in the stream of the CPU it did them on, its samples in the streams of the
 * CPUs it ran on, a child's FORK in its parent's. So an exit, a rename or an exec drops older
 * records only when it is older than every record any stream still holds (the horizon: no sample
 * kept can come before it), and a FORK kept keeps what its child takes from the parent then
 * (perf copies the parent's name and maps at the FORK). The table keeps at most SIDE_MAX_BYTES;
 * records beyond are counted, not kept. Every record is guest bytes: sizes and fields are
 * checked before use; a time that cannot be read drops nothing. */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collector.h"
#include "hash.h"
#include "log.h"
#include "marker.h"
#include "perf_events.h"
#include "spool-side.h"
#include "util.h"

#define SIDE_MAX_BYTES (16u << 20)
#define SIDE_BLOCK 4096u /* one mark per file block: the cut's granularity */

struct side_ent {
	uint64_t off, time; /* time: the record's guest time, UINT64_MAX if it has none */
	uint32_t pid, tid;
	uint16_t type, misc, size;
	bool drop; /* the compaction's verdict */
	uint8_t *rec;
};

struct side_mark {
	uint64_t off, records, samples; /* a record start; the stream's counts before it */
	uint64_t time;                  /* its guest time (0: unknown) */
	uint64_t flushes;               /* perf flush marker pages before it */
};

struct spool_side {
	char path[PATH_MAX], tmp[PATH_MAX + 8];
	uint64_t session_id;
	unsigned cpu;
	struct side_ent *ent; /* in stream order */
	size_t n, cap, bytes;
	struct side_mark *mark; /* [mhead, mn) in stream order */
	size_t mhead, mn, mcap;
	uint64_t next_block; /* a record starting at or after this offset gets a mark */
	uint64_t not_kept, hole_end, flushes;
	uint64_t oldest; /* the guest time of the oldest record the spool holds (UINT64_MAX: none yet) */
	uint64_t set_refused; /* compaction's set adds refused (records kept that could have gone) */
	uint8_t rec[65536]; /* the scan reads a record here */
};

int spool_side_new(const char *session_dir, unsigned cpu, uint64_t session_id, struct spool_side **ret)
{
	struct spool_side *t = calloc(1, sizeof(*t));

	if (!t)
		return -ENOMEM;
	if (snprintf(t->path, sizeof(t->path), "%s/perf-cpu%u.side", session_dir, cpu) >= (int)sizeof(t->path)) {
		free(t);
		return -ENAMETOOLONG;
	}
	snprintf(t->tmp, sizeof(t->tmp), "%s.tmp", t->path);
	t->cpu = cpu;
	t->session_id = session_id;
	t->oldest = UINT64_MAX;
	*ret = t;
	return 0;
}

void spool_side_free(struct spool_side *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->n; i++)
		free(t->ent[i].rec);
	free(t->ent);
	free(t->mark);
	free(t);
}

uint8_t *spool_side_buf(struct spool_side *t)
{
	return t->rec;
}

bool spool_side_wants(uint32_t type)
{
	return type == PERF_RECORD_COMM || type == PERF_RECORD_MMAP || type == PERF_RECORD_MMAP2 ||
	       type == PERF_RECORD_FORK || type == PERF_RECORD_EXIT || type == PERF_RECORD_KSYMBOL;
}

/* Doubles an array's capacity (first: first): 0 or -ENOMEM. */
static int side_grow(void **v, size_t *cap, size_t first, size_t size)
{
	size_t n = *cap ? 2 * *cap : first;
	void *p = realloc(*v, n * size);

	if (!p)
		return -ENOMEM;
	*v = p;
	*cap = n;
	return 0;
}

void spool_side_flush_marker(struct spool_side *t)
{
	t->flushes++;
}

static uint32_t rd32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return le32toh(v);
}

static uint64_t rd64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return le64toh(v);
}

/* A record's guest time in the agent's layout (common/perf_events.h): a sample's after its id,
 * ip and pid/tid, any other record's in its sample_id trailer; unknown when it is too short. */
static uint64_t side_time(const uint8_t *rec, uint16_t size, uint64_t unknown)
{
	if (size < 8)
		return unknown;
	if (rd32(rec) == PERF_RECORD_SAMPLE)
		return size >= 40 ? rd64(rec + 32) : unknown;
	return size >= 8 + VT_PERF_SAMPLE_ID_LEN ? rd64(rec + size - VT_PERF_SAMPLE_ID_LEN + 8) : unknown;
}

bool spool_side_marks(const struct spool_side *t, uint64_t off)
{
	return off >= t->next_block;
}

int spool_side_mark(struct spool_side *t, uint64_t off, uint64_t records, uint64_t samples, const uint8_t *rec,
		    uint16_t size)
{
	uint64_t time = rec ? MIN(side_time(rec, size, 0), UINT64_MAX - 1) : 0;

	if (off < t->next_block)
		return 0;
	if (t->mhead && t->mhead * 2 >= t->mn) { /* the front was cut: move the rest down */
		memmove(t->mark, t->mark + t->mhead, (t->mn - t->mhead) * sizeof(*t->mark));
		t->mn -= t->mhead;
		t->mhead = 0;
	}
	if (t->mn == t->mcap && side_grow((void **)&t->mark, &t->mcap, 1024, sizeof(*t->mark)) < 0)
		return -ENOMEM;
	t->mark[t->mn++] = (struct side_mark){ off, records, samples, time, t->flushes };
	t->next_block = (off / SIDE_BLOCK + 1) * SIDE_BLOCK;
	if (t->oldest == UINT64_MAX) /* the stream's first record */
		t->oldest = time;
	return 0;
}

int spool_side_add(struct spool_side *t, uint64_t off, const uint8_t *rec, uint16_t size)
{
	struct perf_event_header h;
	struct side_ent e = { .off = off, .size = size };

	memcpy(&h, rec, sizeof(h));
	e.type = (uint16_t)le32toh(h.type);
	e.misc = le16toh(h.misc);
	if (size < 8 || size != le16toh(h.size) || !spool_side_wants(le32toh(h.type)))
		return -EINVAL;
	if (e.type == PERF_RECORD_FORK || e.type == PERF_RECORD_EXIT) {
		if (size < 24)
			return -EINVAL;
		e.pid = rd32(rec + 8), e.tid = rd32(rec + 16);
	} else if (e.type != PERF_RECORD_KSYMBOL) {
		if (size < 16)
			return -EINVAL;
		e.pid = rd32(rec + 8), e.tid = rd32(rec + 12);
	}
	if (t->bytes + size > SIDE_MAX_BYTES) {
		t->not_kept++;
		return 0;
	}
	e.time = side_time(rec, size, UINT64_MAX);
	if (t->n == t->cap && side_grow((void **)&t->ent, &t->cap, 256, sizeof(*t->ent)) < 0)
		return -ENOMEM;
	if (!(e.rec = malloc(size)))
		return -ENOMEM;
	memcpy(e.rec, rec, size);
	t->ent[t->n++] = e;
	t->bytes += size;
	return 0;
}

/* The compaction walks the records kept before the cuts of every CPU's table at once, newest
 * first by guest time (a table's own order on equal times), with what it learnt of each task
 * from the newer ones. */
#define SF_GONE 1u     /* a thread: exited; a process: its leader exited */
#define SF_EXECD 2u    /* a process: exec'd (its older mappings were replaced) */
#define SF_NAMED 4u    /* a thread: a newer COMM names it */
#define SF_REVIVED 8u  /* a FORK kept took from it (so its EXIT stays: a later cut may need it) */
#define KEY_PID(x) ((1ull << 32) | (x))
#define KEY_TID(x) ((uint64_t)(x))

struct side_ref {
	uint64_t time;
	uint32_t table, idx;
};

struct side_task {
	uint64_t revived; /* the time of the last FORK kept that took from it (UINT64_MAX: none) */
	unsigned flags;
};

struct side_walk {
	uint64_t horizon;     /* the oldest record a spool still holds: no sample kept is older */
	struct hash ids;      /* KEY_PID / KEY_TID -> task[]: the guest chose them (common/hash.h) */
	struct side_task *task;
	size_t n;
	bool blind;           /* a FORK's parent was refused a place: nothing older is dropped */
};

static int side_ref_cmp(const void *a, const void *b)
{
	const struct side_ref *x = a, *y = b;

	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	if (x->table != y->table)
		return x->table < y->table ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* What the walk knows of key: NULL when nothing (add: a new entry; NULL if the table refused it). */
static struct side_task *side_task(struct side_walk *w, uint64_t key, bool add)
{
	uint32_t i = (uint32_t)w->n;
	int r = add ? hash_put(&w->ids, key, i, &i) : hash_get(&w->ids, key, &i);

	if (r < 0)
		return NULL;
	if (r == 1)
		w->task[w->n++] = (struct side_task){ .revived = UINT64_MAX };
	return &w->task[i];
}

static bool side_is(struct side_walk *w, uint64_t key, unsigned flags)
{
	const struct side_task *k = side_task(w, key, false);

	return k && (k->flags & flags);
}

/* A record at time replaces key's older ones (flag), if it is older than every record a spool
 * holds (else a sample on another CPU may still need them), and no FORK kept of the same time
 * took from them (which came first is not known). A refused entry replaces nothing. */
static void side_replace(struct side_walk *w, uint64_t key, unsigned flag, uint64_t time)
{
	struct side_task *k = time < w->horizon ? side_task(w, key, true) : NULL;

	if (k && k->revived != time)
		k->flags |= flag;
}

/* A FORK kept at time: the child took key's name and maps then, so its older records stay. */
static void side_revive(struct side_walk *w, uint64_t key, unsigned flags, uint64_t time)
{
	struct side_task *k = side_task(w, key, true);

	if (!k) {
		w->blind = true;
		return;
	}
	k->flags = (k->flags & ~flags) | SF_REVIVED;
	k->revived = time;
}

/* Whether no record kept needs e, given the newer ones walked. An EXIT is decided after the walk. */
static bool side_drop(struct side_walk *w, const struct side_ent *e)
{
	switch (e->type) {
	case PERF_RECORD_EXIT:
		side_replace(w, KEY_TID(e->tid), SF_GONE, e->time);
		if (e->pid == e->tid)
			side_replace(w, KEY_PID(e->pid), SF_GONE, e->time);
		return false;
	case PERF_RECORD_COMM:
		if (side_is(w, KEY_TID(e->tid), SF_GONE | SF_NAMED))
			return true;
		side_replace(w, KEY_TID(e->tid), SF_NAMED, e->time);
		if (e->misc & PERF_RECORD_MISC_COMM_EXEC)
			side_replace(w, KEY_PID(e->pid), SF_EXECD, e->time);
		return false;
	case PERF_RECORD_FORK: /* pid, ppid, tid, ptid */
		if (side_is(w, KEY_TID(e->tid), SF_GONE))
			return true;
		side_revive(w, KEY_PID(rd32(e->rec + 12)), SF_GONE | SF_EXECD, e->time);
		side_revive(w, KEY_TID(rd32(e->rec + 20)), SF_GONE | SF_NAMED, e->time);
		return false;
	case PERF_RECORD_MMAP:
	case PERF_RECORD_MMAP2:
		return side_is(w, KEY_PID(e->pid), SF_GONE | SF_EXECD);
	}
	return false; /* KSYMBOL */
}

/* An EXIT older than the horizon goes unless a FORK kept took from its task. */
static bool side_drop_exit(struct side_walk *w, const struct side_ent *e)
{
	return e->time < w->horizon && !side_is(w, KEY_TID(e->tid), SF_REVIVED) &&
	       !(e->pid == e->tid && side_is(w, KEY_PID(e->pid), SF_REVIVED));
}

/* tab[k]'s records before its cut (its first cnt[k]), oldest first: into *ret (count *ret_n). */
static int side_refs(struct spool_side *const *tab, const size_t *cnt, size_t ntab, struct side_ref **ret,
		     size_t *ret_n)
{
	size_t n = 0;
	struct side_ref *v;

	for (size_t k = 0; k < ntab; k++)
		n += cnt[k];
	if (!(v = malloc(MAX(n, (size_t)1) * sizeof(*v))))
		return -ENOMEM;
	n = 0;
	for (size_t k = 0; k < ntab; k++)
		for (size_t i = 0; i < cnt[k]; i++)
			v[n++] = (struct side_ref){ tab[k]->ent[i].time, (uint32_t)k, (uint32_t)i };
	qsort(v, n, sizeof(*v), side_ref_cmp);
	*ret = v;
	*ret_n = n;
	return 0;
}

/* The walk over ref (oldest first): sets the drop of each record no record kept needs. */
static int side_walk(struct side_walk *w, struct spool_side *const *tab, const struct side_ref *ref, size_t n)
{
	if (hash_init(&w->ids, n, 2 * n) < 0 || !(w->task = calloc(MAX(2 * n, (size_t)1), sizeof(*w->task))))
		return -ENOMEM;
	for (size_t i = n; i-- > 0 && !w->blind;) {
		struct side_ent *e = &tab[ref[i].table]->ent[ref[i].idx];

		e->drop = side_drop(w, e);
	}
	for (size_t i = 0; i < n && !w->blind; i++) {
		struct side_ent *e = &tab[ref[i].table]->ent[ref[i].idx];

		if (e->type == PERF_RECORD_EXIT)
			e->drop = side_drop_exit(w, e);
	}
	if (w->blind) /* the newer ones' drops stand: they do not depend on older records */
		log_debug("%s: the compaction's table refused a task id: the records before it kept", tab[0]->path);
	return 0;
}

/* Frees the records the walk dropped; closes the gaps, order kept. */
static void side_sweep(struct spool_side *t)
{
	size_t w = 0;

	for (size_t i = 0; i < t->n; i++) {
		if (t->ent[i].drop) {
			t->bytes -= t->ent[i].size;
			free(t->ent[i].rec);
			continue;
		}
		t->ent[w++] = t->ent[i];
	}
	t->n = w;
}

/* Drops from t's records before the cut (its first n) and from each peer's before its last cut
 * what no record kept needs. cut_time: the time of the first record t keeps. */
static int side_compact(struct spool_side *t, size_t n, uint64_t cut_time, struct spool_side *const *peers,
			size_t npeers)
{
	struct spool_side *tab[COLLECTOR_MAX_CPUS + 1] = { t };
	size_t cnt[COLLECTOR_MAX_CPUS + 1] = { n }, ntab = 1, nref = 0;
	struct side_walk w = { .horizon = cut_time };
	struct side_ref *ref = NULL;
	int r;

	for (size_t k = 0; k < npeers && ntab < COLLECTOR_MAX_CPUS + 1; k++) {
		struct spool_side *p = peers[k];

		if (p == t)
			continue;
		w.horizon = MIN(w.horizon, p ? p->oldest : 0); /* no table: its spool holds everything */
		if (!p)
			continue;
		tab[ntab] = p;
		for (cnt[ntab] = 0; cnt[ntab] < p->n && p->ent[cnt[ntab]].off < p->hole_end; cnt[ntab]++)
			;
		ntab++;
	}
	if (w.horizon == 0)
		return 0; /* nothing is older than every record kept */
	r = side_refs(tab, cnt, ntab, &ref, &nref);
	if (r == 0)
		r = side_walk(&w, tab, ref, nref);
	t->set_refused += w.ids.refused;
	for (size_t k = 0; k < ntab; k++)
		side_sweep(tab[k]);
	hash_free(&w.ids);
	free(w.task);
	free(ref);
	return r;
}
/* perf-cpuN.side for a cut at end: tmp, then rename (a reader sees the old or the new one). */
static int side_write(struct spool_side *t, const struct side_mark *cut, uint64_t data_start)
{
	struct vt_perf_side_head h = { .magic = htole64(VT_PERF_SIDE_MAGIC), .session_id = htole64(t->session_id),
				       .cpu = htole32(t->cpu), .hole_end = htole64(cut->off),
				       .flush_pages = htole32((uint32_t)MIN(cut->flushes, UINT32_MAX)),
				       .dropped_records = htole64(cut->records), .dropped_samples = htole64(cut->samples),
				       .dropped_bytes = htole64(cut->off - data_start), .not_kept = htole64(t->not_kept) };
	uint64_t n = 0, bytes = 0;
	FILE *f;
	int r = 0;

	for (size_t i = 0; i < t->n && t->ent[i].off < cut->off; i++)
		n++, bytes += t->ent[i].size;
	h.side_records = htole64(n);
	h.side_bytes = htole64(bytes);
	if (!(f = fopen(t->tmp, "we")))
		return -errno;
	if (fwrite(&h, sizeof(h), 1, f) != 1)
		r = -EIO;
	for (size_t i = 0; r == 0 && i < n; i++)
		if (fwrite(t->ent[i].rec, t->ent[i].size, 1, f) != 1)
			r = -EIO;
	if (fclose(f) != 0 && r == 0)
		r = -errno;
	if (r == 0 && rename(t->tmp, t->path) < 0)
		r = -errno;
	if (r < 0)
		unlink(t->tmp);
	return r;
}

int spool_side_cut(struct spool_side *t, uint64_t target, uint64_t data_start, uint64_t step,
		   struct spool_side *const *peers, size_t npeers, uint64_t *ret_hole_end)
{
	size_t i = t->mhead, cut, n = 0;
	int r;

	if (i >= t->mn || t->mark[i].off > target)
		return 0;
	while (i + 1 < t->mn && t->mark[i + 1].off <= target)
		i++;
	cut = i;
	if (t->mark[cut].off <= MAX(t->hole_end, data_start) || t->mark[cut].off < t->hole_end + step)
		return 0;
	while (n < t->n && t->ent[n].off < t->mark[cut].off)
		n++;
	if ((r = side_compact(t, n, t->mark[cut].time, peers, npeers)) < 0 ||
	    (r = side_write(t, &t->mark[cut], data_start)) < 0)
		return r;
	t->hole_end = t->mark[cut].off;
	t->oldest = t->mark[cut].time;
	t->mhead = cut + 1;
	*ret_hole_end = t->hole_end;
	return 1;
}
