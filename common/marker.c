// SPDX-License-Identifier: GPL-2.0-only
#include "marker.h"
#include "ftrace_page.h"

#include <endian.h>
#include <errno.h>
#include <string.h>

/* A ring page the host takes is one the page walker takes. */
_Static_assert(FTRACE_PAGE_MAX == VT_MARKER_MAX_PAGE, "ftrace_page.h and marker.h disagree on the largest page");

static void stats_swap(struct vt_cpu_stats *s, int to_le)
{
	uint64_t *u[] = { &s->pages_sent, &s->bytes_sent, &s->entries, &s->overrun,
			  &s->commit_overrun, &s->bytes, &s->dropped_events, &s->read_events };

	s->cpu = to_le ? htole32(s->cpu) : le32toh(s->cpu);
	s->error = (int32_t)(to_le ? htole32((uint32_t)s->error) : le32toh((uint32_t)s->error));
	for (size_t i = 0; i < sizeof(u) / sizeof(u[0]); i++)
		*u[i] = to_le ? htole64(*u[i]) : le64toh(*u[i]);
}

void vt_marker_encode(void *page, uint32_t page_size, enum vt_marker_kind kind, uint64_t session_id,
		      uint32_t cpu, const struct vt_cpu_stats *stats)
{
	struct vt_marker m = {
		.magic = htole64(VT_MARKER_MAGIC), .commit = VT_MARKER_COMMIT,
		.kind = htole32(kind), .version = htole32(VT_MARKER_VERSION),
		.session_id = htole64(session_id), .cpu = htole32(cpu), .page_size = htole32(page_size),
	};

	if (stats) {
		m.stats = *stats;
		stats_swap(&m.stats, 1);
	}
	memset(page, 0, page_size);
	memcpy(page, &m, sizeof(m));
}

int vt_marker_decode(const void *page, size_t len, struct vt_marker *ret)
{
	struct vt_marker m;

	if (len < sizeof(m))
		return 0;
	memcpy(&m, page, sizeof(m));
	if (le64toh(m.magic) != VT_MARKER_MAGIC || m.commit != VT_MARKER_COMMIT)
		return 0;
	m.magic = VT_MARKER_MAGIC;
	m.kind = le32toh(m.kind);
	m.version = le32toh(m.version);
	m.session_id = le64toh(m.session_id);
	m.cpu = le32toh(m.cpu);
	m.page_size = le32toh(m.page_size);
	stats_swap(&m.stats, 0);
	if (m.version != VT_MARKER_VERSION || m.kind < VT_MARKER_BEGIN || m.kind > VT_MARKER_PERF_FLUSH ||
	    m.page_size < VT_MARKER_MIN_PAGE || m.page_size > VT_MARKER_MAX_PAGE ||
	    (m.page_size & (m.page_size - 1)) || m.page_size != len)
		return -EBADMSG;
	*ret = m;
	return 1;
}

static void perf_stats_swap(struct vt_perf_stats *s, int to_le)
{
	uint64_t *u[] = { &s->bytes_sent, &s->records, &s->samples, &s->lost_records,
			  &s->lost, &s->synth_records, &s->reserved };

	s->cpu = to_le ? htole32(s->cpu) : le32toh(s->cpu);
	s->error = (int32_t)(to_le ? htole32((uint32_t)s->error) : le32toh((uint32_t)s->error));
	for (size_t i = 0; i < sizeof(u) / sizeof(u[0]); i++)
		*u[i] = to_le ? htole64(*u[i]) : le64toh(*u[i]);
}

static void perf_marker_swap(struct vt_perf_marker *p, int to_le)
{
	p->nr_ids = to_le ? htole32(p->nr_ids) : le32toh(p->nr_ids);
	p->clockid = to_le ? htole32(p->clockid) : le32toh(p->clockid);
	for (size_t i = 0; i < VT_PERF_MAX_EVENTS; i++)
		p->ids[i] = to_le ? htole64(p->ids[i]) : le64toh(p->ids[i]);
	perf_stats_swap(&p->stats, to_le);
}

void vt_marker_encode_perf(void *page, uint32_t page_size, enum vt_marker_kind kind, uint64_t session_id,
			   uint32_t cpu, const struct vt_perf_marker *perf)
{
	struct vt_cpu_stats head = { .cpu = cpu, .error = perf->stats.error };
	struct vt_perf_marker p = *perf;

	vt_marker_encode(page, page_size, kind, session_id, cpu, &head);
	perf_marker_swap(&p, 1);
	memcpy((uint8_t *)page + VT_PERF_MARKER_OFF, &p, sizeof(p));
}

int vt_marker_decode_perf(const void *page, size_t len, const struct vt_marker *m, struct vt_perf_marker *ret)
{
	struct vt_perf_marker p;

	if ((m->kind != VT_MARKER_PERF_BEGIN && m->kind != VT_MARKER_PERF_END && m->kind != VT_MARKER_PERF_FLUSH) ||
	    len < VT_PERF_MARKER_OFF + sizeof(p))
		return -EBADMSG;
	memcpy(&p, (const uint8_t *)page + VT_PERF_MARKER_OFF, sizeof(p));
	perf_marker_swap(&p, 0);
	if (p.nr_ids > VT_PERF_MAX_EVENTS)
		return -EBADMSG;
	*ret = p;
	return 0;
}

void vt_marker_encode_flush(void *page, uint32_t page_size, uint64_t session_id, const struct vt_cpu_stats *stats,
			    const struct vt_flush_marker *flush)
{
	struct vt_flush_marker f = { .seq = htole64(flush->seq), .guest_time = htole64(flush->guest_time) };

	vt_marker_encode(page, page_size, VT_MARKER_FLUSH, session_id, stats->cpu, stats);
	memcpy((uint8_t *)page + VT_FLUSH_MARKER_OFF, &f, sizeof(f));
}

void vt_marker_encode_perf_flush(void *page, uint32_t page_size, uint64_t session_id, uint32_t cpu,
				 const struct vt_perf_marker *perf, const struct vt_flush_marker *flush)
{
	struct vt_flush_marker f = { .seq = htole64(flush->seq), .guest_time = htole64(flush->guest_time) };

	vt_marker_encode_perf(page, page_size, VT_MARKER_PERF_FLUSH, session_id, cpu, perf);
	memcpy((uint8_t *)page + VT_PERF_FLUSH_MARKER_OFF, &f, sizeof(f));
}

int vt_marker_decode_flush(const void *page, size_t len, const struct vt_marker *m, struct vt_flush_marker *ret)
{
	struct vt_flush_marker f;
	size_t off = m->kind == VT_MARKER_PERF_FLUSH ? VT_PERF_FLUSH_MARKER_OFF : VT_FLUSH_MARKER_OFF;

	if ((m->kind != VT_MARKER_FLUSH && m->kind != VT_MARKER_PERF_FLUSH) || len < off + sizeof(f))
		return -EBADMSG;
	memcpy(&f, (const uint8_t *)page + off, sizeof(f));
	ret->seq = le64toh(f.seq);
	ret->guest_time = le64toh(f.guest_time);
	return 0;
}
