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

/* level 0 = no compression, 1..19 = zstd level (HEADER_COMPRESSED is then added): records of
 * types below PERF_REC_USER_START go through one zstd stream, flushed every 256 KiB of records
 * into PERF_RECORD_COMPRESSED records of < 64 KiB (so none expands past perf's mmap_len, the
 * 528384 of HEADER_COMPRESSED); user records (FINISHED_ROUND, ID_INDEX) stay plain, as perf
 * record writes them, the stream flushed before each. */
int perf_writer_open(const char *path, int level, struct perf_writer **ret);
/* The file may grow to bytes at most (0: no limit): a write past it fails with -EFBIG and
 * leaves the file as it was before that write. */
void perf_writer_set_limit(struct perf_writer *w, uint64_t bytes);
/* fn(ud, rec) for each record given to perf_writer_record from now on, before it is written. */
void perf_writer_tap(struct perf_writer *w, void (*fn)(void *ud, const struct perf_event_header *rec), void *ud);
/* Pipe mode (perf's `-o -` format) on fd: the pipe header now; the caller writes the attrs
 * and tracing data as records first (perf_writer_raw for the bytes that follow a
 * HEADER_TRACING_DATA record), then the data; finish only flushes (fd is the caller's). */
int perf_writer_open_pipe(int fd, struct perf_writer **ret);
/* What is buffered goes out now (the zstd stream flushed): a pipe's reader sees it; a file
 * shows it (its partial block written, and kept to be written whole later). */
int perf_writer_flush(struct perf_writer *w);
/* Bytes given to the file so far (compressed, as written): its size once flushed. */
uint64_t perf_writer_size(const struct perf_writer *w);
/* Bytes of the records given (before compression): what a reader holds decompressed. */
uint64_t perf_writer_records_bytes(const struct perf_writer *w);
/* Raw bytes into the stream (not a record). */
int perf_writer_raw(struct perf_writer *w, const void *data, size_t len);
/* Appends one record (header included, size a multiple of 8). */
int perf_writer_record(struct perf_writer *w, const void *rec);
/* Writes features (sorted by bit here; an empty one left out), attrs and the header; then the
 * file is complete. */
int perf_writer_finish(struct perf_writer *w, const struct perf_attr_ids *attrs, size_t n_attrs,
		       const struct perf_writer_feature *feats, size_t n_feats);
/* A perf.data file at path of what w has written so far, w going on: its data copied
 * (copy_file_range: a reflink or an in-kernel copy on one file system), then the header's
 * sections and the header as perf_writer_finish writes them. A compressed w has its pending
 * records compressed first (the stream flushed, so the copy decompresses on its own); its
 * records are otherwise as they were. -EOPNOTSUPP for a pipe. */
int perf_writer_snapshot(struct perf_writer *w, const char *path, const struct perf_attr_ids *attrs,
			 size_t n_attrs, const struct perf_writer_feature *feats, size_t n_feats);
/* Closes; an unfinished file is removed. */
void perf_writer_free(struct perf_writer *w);
