/* SPDX-License-Identifier: GPL-2.0-only */
/* Streaming perf.data writer: placeholder header, data records (optionally zstd-compressed
 * into PERF_RECORD_COMPRESSED), then the feature table and bodies, the attrs, and the header. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "perf_file.h"

struct perf_writer;

struct perf_writer_feature {
	unsigned bit;
	const void *data;
	size_t len;
};

/* level 0 = no compression, 1..19 = zstd level (HEADER_COMPRESSED is then added). */
int perf_writer_open(const char *path, int level, struct perf_writer **ret);
/* Appends one record (header included, size a multiple of 8). */
int perf_writer_record(struct perf_writer *w, const void *rec);
/* Writes features (sorted by bit here), attrs and the header; then the file is complete. */
int perf_writer_finish(struct perf_writer *w, const struct perf_attr_ids *attrs, size_t n_attrs,
		       const struct perf_writer_feature *feats, size_t n_feats);
/* Closes; an unfinished file is removed. */
void perf_writer_free(struct perf_writer *w);
