// SPDX-License-Identifier: GPL-2.0-only
#include "ftrace_page.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "tep_format.h"

static uint64_t get_le(const uint8_t *p, uint32_t size)
{
	uint64_t v = 0;

	for (uint32_t i = size; i > 0; i--)
		v = (v << 8) | p[i - 1];
	return v;
}

static int header_page_line(struct ftrace_page_layout *l, const char *line, size_t len, unsigned *seen)
{
	struct tep_format_field f;
	int r = tep_format_parse_field(line, len, FTRACE_PAGE_MAX, &f);

	if (r <= 0)
		return r;
	if (!strcmp(f.name, "timestamp")) {
		l->ts_off = f.offset, l->ts_size = f.size, *seen |= 1;
	} else if (!strcmp(f.name, "commit")) {
		l->commit_off = f.offset, l->commit_size = f.size, *seen |= 2;
	} else if (!strcmp(f.name, "data")) {
		l->data_off = f.offset, l->page_size = f.offset + f.size, *seen |= 4;
	}
	return 0;
}

/* "name : N bits" or "name : type == N" or "data max type_len == N". */
static void header_event_line(struct ftrace_page_layout *l, const char *line, size_t len, unsigned *seen)
{
	char buf[128], word[32];
	unsigned v;

	if (len >= sizeof(buf))
		return;
	memcpy(buf, line, len);
	buf[len] = '\0';
	if (sscanf(buf, " data max type_len == %u", &v) == 1) {
		l->data_max_type = v, *seen |= 1;
	} else if (sscanf(buf, " %31[a-z_] : type == %u", word, &v) == 2) {
		if (!strcmp(word, "padding"))
			l->padding_type = v, *seen |= 2;
		else if (!strcmp(word, "time_extend"))
			l->extend_type = v, *seen |= 4;
		else if (!strcmp(word, "time_stamp"))
			l->stamp_type = v, *seen |= 8;
	} else if (sscanf(buf, " %31[a-z_] : %u bits", word, &v) == 2 && !strcmp(word, "type_len")) {
		l->type_len_bits = v, *seen |= 16;
	}
}

static int layout_check(const struct ftrace_page_layout *l)
{
	uint32_t max_type;

	if (l->type_len_bits < 2 || l->type_len_bits > 8)
		return -EBADMSG;
	max_type = (1u << l->type_len_bits) - 1;
	if ((l->ts_size != 8) || (l->commit_size != 4 && l->commit_size != 8) ||
	    l->ts_off + 8 > l->data_off || l->commit_off + l->commit_size > l->data_off ||
	    l->page_size < 256 || l->page_size > FTRACE_PAGE_MAX || l->data_off >= l->page_size)
		return -EBADMSG;
	if (l->data_max_type == 0 ||
	    l->data_max_type >= l->padding_type || l->padding_type > max_type ||
	    l->extend_type > max_type || l->stamp_type > max_type ||
	    l->padding_type == l->extend_type || l->extend_type == l->stamp_type ||
	    l->padding_type == l->stamp_type || l->extend_type <= l->data_max_type ||
	    l->stamp_type <= l->data_max_type)
		return -EBADMSG;
	return 0;
}

int ftrace_page_layout_parse(const char *header_page, size_t hp_len, const char *header_event,
			     size_t he_len, struct ftrace_page_layout *ret)
{
	struct ftrace_page_layout l = { 0 };
	unsigned seen_p = 0, seen_e = 0;

	for (size_t pos = 0; pos < hp_len;) {
		const char *nl = memchr(header_page + pos, '\n', hp_len - pos);
		size_t ll = nl ? (size_t)(nl - header_page - pos) : hp_len - pos;

		if (header_page_line(&l, header_page + pos, ll, &seen_p) < 0)
			return -EBADMSG;
		pos += ll + 1;
	}
	for (size_t pos = 0; pos < he_len;) {
		const char *nl = memchr(header_event + pos, '\n', he_len - pos);
		size_t ll = nl ? (size_t)(nl - header_event - pos) : he_len - pos;

		header_event_line(&l, header_event + pos, ll, &seen_e);
		pos += ll + 1;
	}
	if (seen_p != 7 || seen_e != 31 || layout_check(&l) < 0)
		return -EBADMSG;
	*ret = l;
	return 0;
}

int ftrace_page_begin(struct ftrace_page *it, const struct ftrace_page_layout *lay, const void *page,
		      size_t len)
{
	const uint8_t *p = page;
	uint64_t commit;
	uint32_t data_len = lay->page_size - lay->data_off;

	if (len != lay->page_size)
		return -EBADMSG;
	commit = get_le(p + lay->commit_off, lay->commit_size);
	/* The kernel adds its flags as int constants: with bit 31 set, a 64-bit commit word reads
	 * back sign-extended (0xffffffffc0000c0c). Other high bits mean a marker or garbage. */
	if ((commit >> 32) && !((commit >> 32) == 0xffffffffu && (commit & FTRACE_PAGE_MISSED_EVENTS)))
		return -EBADMSG;
	memset(it, 0, sizeof(*it));
	it->page = p;
	it->lay = lay;
	it->ts = get_le(p + lay->ts_off, 8);
	it->size = (uint32_t)(commit & FTRACE_PAGE_SIZE_MASK);
	it->missed = !!(commit & FTRACE_PAGE_MISSED_EVENTS);
	if (it->size > data_len)
		return -EBADMSG;
	if (commit & FTRACE_PAGE_MISSED_STORED) {
		if (it->size + lay->commit_size > data_len)
			return -EBADMSG;
		it->lost_known = true;
		it->lost = get_le(p + lay->data_off + it->size, lay->commit_size);
	}
	return 0;
}

/* Absolute time stamp: keep the top bits of the previous time (rb_fix_abs_ts). */
static uint64_t fix_abs_ts(uint64_t abs, uint64_t prev)
{
	const uint64_t top = 0xf8ull << 56;

	if (prev & top) {
		abs |= prev & top;
		if (abs < prev)
			abs += 1ull << 59;
	}
	return abs;
}

static int walk_one(struct ftrace_page *it, struct ftrace_event *ret)
{
	const struct ftrace_page_layout *l = it->lay;
	const uint8_t *d = it->page + l->data_off;
	uint32_t left = it->size - it->off, w, type, delta, arr = 0, len;

	if (left < 4)
		return -EBADMSG;
	w = (uint32_t)get_le(d + it->off, 4);
	type = w & ((1u << l->type_len_bits) - 1);
	delta = w >> l->type_len_bits;
	if (type == 0 || type > l->data_max_type) {
		if (left < 8)
			return -EBADMSG;
		arr = (uint32_t)get_le(d + it->off + 4, 4);
	}
	if (type == l->padding_type) {
		if (delta == 0) {
			it->off = it->size;
			return 0;
		}
		if (arr > left - 4)
			return -EBADMSG;
		it->off += 4 + ((arr + 3) & ~3u);
		if (it->off > it->size)
			it->off = it->size;
		return 0;
	}
	if (type == l->extend_type) {
		it->ts += ((uint64_t)arr << (32 - l->type_len_bits)) + delta;
		it->off += 8;
		return 0;
	}
	if (type == l->stamp_type) {
		it->ts = fix_abs_ts(((uint64_t)arr << (32 - l->type_len_bits)) + delta, it->ts);
		it->off += 8;
		return 0;
	}
	if (type > l->data_max_type)
		return -EBADMSG;
	it->ts += delta;
	if (type == 0) {
		if (arr < 4 || arr - 4 > left - 8)
			return -EBADMSG;
		len = arr - 4;
		ret->data = d + it->off + 8;
		it->off += 8 + ((len + 3) & ~3u);
	} else {
		len = type * 4;
		if (len > left - 4)
			return -EBADMSG;
		ret->data = d + it->off + 4;
		it->off += 4 + len;
	}
	if (it->off > it->size)
		it->off = it->size;
	ret->len = len;
	ret->ts = it->ts;
	return 1;
}

int ftrace_page_next(struct ftrace_page *it, struct ftrace_event *ret)
{
	while (it->off < it->size) {
		int r = walk_one(it, ret);

		if (r != 0)
			return r;
	}
	return 0;
}
