// SPDX-License-Identifier: GPL-2.0-only
#include "clock_apply.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

static int seg_key(struct clock_map *m, const char *key, const char *val)
{
	unsigned long idx;
	char field[32], *end;
	struct clock_seg *s;

	if (sscanf(key, "seg%lu.%31s", &idx, field) != 2 || idx >= m->n)
		return -EBADMSG;
	s = &m->seg[idx];
	errno = 0;
	if (!strcmp(field, "guest_start"))
		s->guest_start = strtoull(val, &end, 10);
	else if (!strcmp(field, "offset_ns"))
		s->offset_ns = strtoll(val, &end, 10);
	else if (!strcmp(field, "slope"))
		s->slope = strtold(val, &end);
	else
		return 0;
	return (errno || end == val || *end) ? -EBADMSG : 0;
}

static int ini_line(struct clock_map *m, char *line)
{
	char *eq = strchr(line, '='), *val;

	if (!eq || line[0] == '#')
		return 0;
	*eq = '\0';
	val = eq + 1;
	if (!strcmp(line, "method")) {
		snprintf(m->method, sizeof(m->method), "%s", val);
		return 0;
	}
	if (!strcmp(line, "segments")) {
		uint64_t n;

		if (m->seg || util_parse_u64(val, CLOCK_APPLY_MAX_SEGMENTS, &n) < 0)
			return -EBADMSG;
		m->n = (size_t)n;
		m->seg = calloc(n ? n : 1, sizeof(*m->seg));
		return m->seg ? 0 : -ENOMEM;
	}
	if (!strcmp(line, "samples"))
		return util_parse_u64(val, UINT64_MAX, &m->samples) < 0 ? -EBADMSG : 0;
	if (!strcmp(line, "guest_scale")) {
		char *end;

		errno = 0;
		m->guest_scale = strtold(val, &end);
		return errno || end == val || *end || !isfinite((double)m->guest_scale) || m->guest_scale < 1e-4L ||
			       m->guest_scale > 1e4L ? -EBADMSG : 0;
	}
	if (!strcmp(line, "error_bound_ns"))
		return util_parse_u64(val, UINT64_MAX, &m->error_bound_ns) < 0 ? -EBADMSG : 0;
	if (!strncmp(line, "seg", 3))
		return seg_key(m, line, val);
	return 0;
}

static int segs_check(const struct clock_map *m)
{
	for (size_t i = 0; i < m->n; i++) {
		if (!isfinite((double)m->seg[i].slope) || m->seg[i].slope <= 0.5L || m->seg[i].slope >= 2.0L)
			return -EBADMSG;
		if (i && m->seg[i].guest_start <= m->seg[i - 1].guest_start)
			return -EBADMSG;
	}
	return 0;
}

int clock_apply_parse(const char *text, size_t len, struct clock_map *ret)
{
	struct clock_map m = { .method = "none", .guest_scale = 1.0L };
	_cleanup_free_ char *copy = strndup(text, len);
	char *save = NULL;
	int r = 0;

	if (!copy)
		return -ENOMEM;
	for (char *line = strtok_r(copy, "\n", &save); line && r >= 0; line = strtok_r(NULL, "\n", &save))
		r = ini_line(&m, line);
	if (r >= 0)
		r = segs_check(&m);
	if (r < 0) {
		clock_apply_free(&m);
		return r;
	}
	*ret = m;
	return 0;
}

uint64_t clock_apply(const struct clock_map *m, uint64_t guest)
{
	size_t lo = 0, hi = m->n;
	long double v, scaled = (long double)guest * (m->guest_scale > 0 ? m->guest_scale : 1.0L);
	uint64_t guest_ns = scaled >= 1.8e19L ? UINT64_MAX : (uint64_t)scaled;

	if (!m->n)
		return guest_ns;
	while (hi - lo > 1) {
		size_t mid = (lo + hi) / 2;

		if (m->seg[mid].guest_start <= guest_ns)
			lo = mid;
		else
			hi = mid;
	}
	v = (long double)guest_ns * m->seg[lo].slope + (long double)m->seg[lo].offset_ns;
	if (v < 1.0L)
		return 1;
	if (v >= (long double)(UINT64_MAX - 1))
		return UINT64_MAX - 1;
	return (uint64_t)v;
}

void clock_apply_free(struct clock_map *m)
{
	if (!m)
		return;
	free(m->seg);
	m->seg = NULL;
	m->n = 0;
}
