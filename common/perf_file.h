/* SPDX-License-Identifier: GPL-2.0-only */
/* perf.data on-disk structures and constants shared by the reader and the writer
 * (docs/perf-data.md; the perf 6.1 reader is the reference). */
#pragma once

#include <linux/perf_event.h>
#include <stdint.h>

#define PERF_MAGIC2 0x32454c4946524550ull /* "PERFILE2" */
#define PERF_ATTR_SIZE 128                 /* PERF_ATTR_SIZE_VER7: what perf 6.1 reads */
#define PERF_FILE_ATTR_SIZE (PERF_ATTR_SIZE + 16)
#define PERF_READER_ATTR_MAX 256 /* the longest attr read (newer perf's; the kernel's page is the limit) */
#define PERF_FEAT_BITS 256

_Static_assert(sizeof(struct perf_event_attr) == PERF_ATTR_SIZE, "perf_event_attr is VER7");

struct perf_file_section {
	uint64_t offset, size;
};

/* Pipe mode (perf record -o -): this, then records only (attrs and tracing data as records). */
struct perf_pipe_file_header {
	uint64_t magic; /* PERF_MAGIC2 */
	uint64_t size;  /* 16 */
};

struct perf_file_header {
	uint64_t magic, size, attr_size;
	struct perf_file_section attrs, data, event_types;
	uint64_t features[PERF_FEAT_BITS / 64];
};
_Static_assert(sizeof(struct perf_file_header) == 104, "perf file header is 104 bytes");

/* User record types (never time-sorted by perf). */
enum {
	PERF_REC_HEADER_ATTR = 64,
	PERF_REC_TRACING_DATA = 66,
	PERF_REC_HEADER_FEATURE = 80,
	PERF_REC_FINISHED_ROUND = 68,
	PERF_REC_ID_INDEX = 69,
	PERF_REC_THREAD_MAP = 73,
	PERF_REC_CPU_MAP = 74,
	PERF_REC_COMPRESSED = 81,
	PERF_REC_FINISHED_INIT = 82,
	PERF_REC_USER_START = 64,
};

/* Feature bits. */
enum {
	PERF_FEAT_TRACING_DATA = 1,
	PERF_FEAT_BUILD_ID = 2,
	PERF_FEAT_NRCPUS = 7,
	PERF_FEAT_EVENT_DESC = 12,
	PERF_FEAT_CPU_TOPOLOGY = 13,
	PERF_FEAT_SAMPLE_TIME = 21,
	PERF_FEAT_COMPRESSED = 27,
};

#define PERF_COMP_MMAP_LEN 528384u

/* An attr with its sample ids, as read or to be written. */
struct perf_attr_ids {
	struct perf_event_attr attr;
	uint64_t *ids;
	size_t n_ids;
};
