/* SPDX-License-Identifier: GPL-2.0-only */
/* Streaming perf.data reader (PERFILE2, native endian): header, attrs and their ids, feature
 * sections, and the data records one at a time, with PERF_RECORD_COMPRESSED expanded. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "perf_file.h"

#define PERF_READER_MAX_ATTRS 4096
#define PERF_READER_MAX_IDS (1u << 20)
#define PERF_READER_MAX_FEATURE (256u << 20)
/* PERF_RECORD_COMPRESSED (a guest-made or damaged file may hold a zstd bomb): the expanded
 * bytes not yet read as records stay under PERF_READER_MAX_EXPAND, and a frame may ask for a
 * window of 1 << PERF_READER_MAX_WINDOW_LOG at most (perf record -z up to level 19 and our
 * writer need ≤ 8 MiB); so decompression holds ≤ 32 MiB plus zstd's own ~200 KiB. */
#define PERF_READER_MAX_EXPAND (16u << 20)
#define PERF_READER_MAX_WINDOW_LOG 24

struct perf_reader;

/* Opens and validates; on failure *err (errlen bytes) says what is wrong. */
int perf_reader_open(const char *path, struct perf_reader **ret, char *err, size_t errlen);
int perf_reader_open_fd(int fd, struct perf_reader **ret, char *err, size_t errlen);
void perf_reader_free(struct perf_reader *r);
/* Follow mode, for a file perf record is still writing (header from its start: attrs, data size
 * 0): records are read up to an end the caller raises (perf_reader_set_end: bytes perf is known
 * to have written), and perf_reader_next returns -EAGAIN where they stop (a record cut there
 * waits for the rest). perf_reader_finish, once perf has exited, reads the final header and the
 * feature table: the data then ends where perf says. -EALREADY: perf has finished the file
 * already (open it whole). */
int perf_reader_open_follow(const char *path, struct perf_reader **ret, char *err, size_t errlen);
/* The same on fd (the reader's on success, the caller's on failure, as perf_reader_open_fd). */
int perf_reader_open_follow_fd(int fd, struct perf_reader **ret, char *err, size_t errlen);
void perf_reader_set_end(struct perf_reader *r, uint64_t end);
int perf_reader_finish(struct perf_reader *r, char *err, size_t errlen);
/* File offset up to which bytes were read (a record cut at the end waits in the buffer). */
uint64_t perf_reader_read_pos(const struct perf_reader *r);

size_t perf_reader_n_attrs(const struct perf_reader *r);
const struct perf_attr_ids *perf_reader_attr(const struct perf_reader *r, size_t i);
/* True when the file has feature bit. */
bool perf_reader_has_feature(const struct perf_reader *r, unsigned bit);
/* Reads a feature body (malloc'd); -ENOENT when absent, -EFBIG past PERF_READER_MAX_FEATURE. */
int perf_reader_feature(struct perf_reader *r, unsigned bit, uint8_t **ret_buf, size_t *ret_len);
/* Next data record: 1 with *ret pointing to it (valid until the next call), 0 at the end,
 * negative on a damaged file (perf_reader_error() says why). */
int perf_reader_next(struct perf_reader *r, const struct perf_event_header **ret);
const char *perf_reader_error(const struct perf_reader *r);
/* Records seen inside PERF_RECORD_COMPRESSED so far. */
uint64_t perf_reader_n_expanded(const struct perf_reader *r);
