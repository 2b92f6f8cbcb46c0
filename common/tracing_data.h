/* SPDX-License-Identifier: GPL-2.0-only */
/* HEADER_TRACING_DATA blob (perf.data feature 1): parser and builder (docs/perf-data.md). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TRACING_DATA_MAX_EVENTS 65536
#define TRACING_DATA_MAX_NAME 256

struct td_text {
	char *data; /* owned, NUL-terminated copy */
	size_t len;
};

struct td_system {
	char *name;
	size_t n_events;
	struct td_text *events;
};

struct tracing_data {
	char version[16];
	uint8_t long_size;
	uint32_t page_size;
	struct td_text header_page, header_event;
	struct td_system ftrace; /* the "ftrace" list (name unused) */
	size_t n_systems;
	struct td_system *systems;
	struct td_text kallsyms, printk;
	bool has_cmdlines;
	struct td_text cmdlines;
};

/* Parses a blob (little-endian only); -EBADMSG with nothing allocated on failure. */
int tracing_data_parse(const void *buf, size_t len, struct tracing_data *ret);
/* An empty blob of version 0.6 with the given header texts (copied). */
int tracing_data_init(struct tracing_data *td, uint8_t long_size, uint32_t page_size,
		      const char *header_page, size_t hp_len, const char *header_event, size_t he_len);
/* Appends a copy of a format text under system sys (created at the end when new). */
int tracing_data_add_event(struct tracing_data *td, const char *sys, const char *text, size_t len);
/* Calls fn for every format text (ftrace list first); stops at the first non-zero return. */
int tracing_data_for_each(const struct tracing_data *td,
			  int (*fn)(const char *sys, const struct td_text *t, void *ud), void *ud);
/* Serialises the blob (malloc'd). */
int tracing_data_build(const struct tracing_data *td, uint8_t **ret_buf, size_t *ret_len);
void tracing_data_free(struct tracing_data *td);
