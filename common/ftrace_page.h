/* SPDX-License-Identifier: GPL-2.0-only */
/* Walker for ftrace ring-buffer pages (trace_pipe_raw), driven by the writer's own
 * events/header_page and events/header_event text. Every offset is bounds-checked. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The largest sub-buffer walked (buffer_subbuf_size_kb since Linux 6.8; a page before): common/marker.h's VT_MARKER_MAX_PAGE. */
#define FTRACE_PAGE_MAX (1u << 16)

struct ftrace_page_layout {
	uint32_t ts_off, ts_size;         /* page base timestamp */
	uint32_t commit_off, commit_size; /* commit word, = long size */
	uint32_t data_off, page_size;     /* data start; data offset + size = sub-buffer size */
	uint32_t type_len_bits;           /* event header split: type_len | time_delta << bits */
	uint32_t padding_type, extend_type, stamp_type, data_max_type;
};

#define FTRACE_PAGE_MISSED_EVENTS (1ull << 31)
#define FTRACE_PAGE_MISSED_STORED (1ull << 30)
#define FTRACE_PAGE_SIZE_MASK ((1ull << 27) - 1)

struct ftrace_page {
	const uint8_t *page;
	uint32_t size;      /* data bytes used */
	uint32_t off;       /* walk position, relative to data start */
	uint64_t ts;        /* running timestamp */
	bool missed;        /* events were lost before this page */
	bool lost_known;    /* ... and their number is stored */
	uint64_t lost;
	const struct ftrace_page_layout *lay;
};

struct ftrace_event {
	uint64_t ts;
	const uint8_t *data; /* the raw record, starting with common_type */
	uint32_t len;        /* payload bytes (4-byte aligned by the ring buffer) */
};

/* Parses header_page and header_event text; -EBADMSG if either is malformed or unsupported. */
int ftrace_page_layout_parse(const char *header_page, size_t hp_len, const char *header_event,
			     size_t he_len, struct ftrace_page_layout *ret);
/* Starts walking one page of exactly lay->page_size bytes; -EBADMSG if its header is bad. */
int ftrace_page_begin(struct ftrace_page *it, const struct ftrace_page_layout *lay, const void *page,
		      size_t len);
/* Next data event: 1 with *ret, 0 at the end of the page, -EBADMSG on a malformed event. */
int ftrace_page_next(struct ftrace_page *it, struct ftrace_event *ret);
