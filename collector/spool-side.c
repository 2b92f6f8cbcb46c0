// SPDX-License-Identifier: GPL-2.0-only
/* --flight-recorder for a guest perf stream (perf-cpuN.spool). The oldest records are freed
 * from the file like an ftrace stream's pages, but a perf stream's records are not pages and
 * some of them stay needed: a sample is named by the COMM of its task and the MMAP2 of the
 * binary it ran in, and those may have come long before. So the spool scan tells this table
 * where records start (one mark per file block) and gives it every task and mapping record
 * (COMM, MMAP, MMAP2, FORK, EXIT, KSYMBOL). When the daemon frees the front, it cuts at a record
 * boundary, drops from the table what no later record needs (the task exited, a later COMM of
 * the same thread, the mappings before an exec), and writes the rest into perf-cpuN.side
 * (struct vt_perf_side_head, then the records): the merge reads them first, then the spool from
 * that boundary. The table keeps at most SIDE_MAX_BYTES; records beyond are counted, not kept.
 * Every record is guest bytes: sizes and fields are checked before use. */
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
#include "util.h"

#define SIDE_MAX_BYTES (16u << 20)
#define SIDE_BLOCK 4096u /* one mark per file block: the cut's granularity */

struct side_ent {
	uint64_t off;
	uint32_t pid, tid;
	uint16_t type, misc, size;
	uint8_t *rec;
};

struct side_mark {
	uint64_t off, records, samples; /* a record start; the stream's counts before it */
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

int spool_side_mark(struct spool_side *t, uint64_t off, uint64_t records, uint64_t samples)
{
	if (off < t->next_block)
		return 0;
	if (t->mhead && t->mhead * 2 >= t->mn) { /* the front was cut: move the rest down */
		memmove(t->mark, t->mark + t->mhead, (t->mn - t->mhead) * sizeof(*t->mark));
		t->mn -= t->mhead;
		t->mhead = 0;
	}
	if (t->mn == t->mcap && side_grow((void **)&t->mark, &t->mcap, 1024, sizeof(*t->mark)) < 0)
		return -ENOMEM;
	t->mark[t->mn++] = (struct side_mark){ off, records, samples, t->flushes };
	t->next_block = (off / SIDE_BLOCK + 1) * SIDE_BLOCK;
	return 0;
}

static uint32_t rd32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return le32toh(v);
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
	if (t->n == t->cap && side_grow((void **)&t->ent, &t->cap, 256, sizeof(*t->ent)) < 0)
		return -ENOMEM;
	if (!(e.rec = malloc(size)))
		return -ENOMEM;
	memcpy(e.rec, rec, size);
	t->ent[t->n++] = e;
	t->bytes += size;
	return 0;
}

/* A set of u32 (pids or tids; 0 is a valid member, the idle task): the guest chose them, so a
 * keyed table with bounded walks (common/hash.h). A refused add leaves the member out, and a
 * record is kept that could have gone: never the other way. */
static int set_init(struct hash *s, size_t n)
{
	return hash_init(s, n, n);
}

/* Adds x; whether it was there already. */
static bool set_add(struct hash *s, uint32_t x)
{
	return hash_put(s, x, 0, NULL) == 0;
}

static bool set_has(const struct hash *s, uint32_t x)
{
	return hash_get(s, x, NULL) == 0;
}

/* Of the records before end (entries [0, n)), drops what no record from end on needs: every
 * record of a process whose EXIT is also before end, a thread's COMM and FORK once it exited,
 * a COMM with a later one of the same thread, the mappings of a process before its exec. Walks
 * backwards, newest first. */
static int side_compact(struct spool_side *t, size_t n)
{
	struct hash gone_pid, gone_tid, named, execd;
	uint64_t refused;
	size_t w = 0;
	int r = set_init(&gone_pid, n) | set_init(&gone_tid, n) | set_init(&named, n) | set_init(&execd, n);

	for (size_t i = n; r == 0 && i-- > 0;) {
		struct side_ent *e = &t->ent[i];
		bool drop = false;

		switch (e->type) {
		case PERF_RECORD_KSYMBOL:
			break;
		case PERF_RECORD_EXIT:
			set_add(e->pid == e->tid ? &gone_pid : &gone_tid, e->pid == e->tid ? e->pid : e->tid);
			drop = true;
			break;
		case PERF_RECORD_COMM:
			drop = set_has(&gone_pid, e->pid) || set_has(&gone_tid, e->tid) || set_add(&named, e->tid);
			if (!drop && (e->misc & PERF_RECORD_MISC_COMM_EXEC))
				set_add(&execd, e->pid);
			break;
		case PERF_RECORD_FORK:
			drop = set_has(&gone_pid, e->pid) || set_has(&gone_tid, e->tid);
			break;
		default: /* MMAP, MMAP2 */
			drop = set_has(&gone_pid, e->pid) || set_has(&execd, e->pid);
		}
		if (drop) {
			t->bytes -= e->size;
			free(e->rec);
			e->rec = NULL;
		}
	}
	refused = gone_pid.refused + gone_tid.refused + named.refused + execd.refused;
	if (refused)
		log_debug("%s: %" PRIu64 " task ids refused by the compaction's sets: their records kept", t->path, refused);
	t->set_refused += refused;
	hash_free(&gone_pid), hash_free(&gone_tid), hash_free(&named), hash_free(&execd);
	if (r < 0)
		return -ENOMEM;
	for (size_t i = 0; i < t->n; i++) /* close the gaps, order kept */
		if (t->ent[i].rec)
			t->ent[w++] = t->ent[i];
	t->n = w;
	return 0;
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
		   uint64_t *ret_hole_end)
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
	if ((r = side_compact(t, n)) < 0 || (r = side_write(t, &t->mark[cut], data_start)) < 0)
		return r;
	t->hole_end = t->mark[cut].off;
	t->mhead = cut + 1;
	*ret_hole_end = t->hole_end;
	return 1;
}
