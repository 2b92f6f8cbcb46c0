/* SPDX-License-Identifier: GPL-2.0-only */
/* Begin/end marker pages framing each trace-path-cpuN stream (DESIGN §5). */
#pragma once

#include <stdint.h>

#include "proto.h"

#define VT_MARKER_MAGIC 0x4b52414d54524956ull /* "VIRTMARK" as little-endian bytes */
#define VT_MARKER_COMMIT UINT64_MAX           /* never a valid ring-page commit word */
#define VT_MARKER_VERSION 1
#define VT_MARKER_MIN_PAGE 4096
#define VT_MARKER_MAX_PAGE (1u << 20)

enum vt_marker_kind { VT_MARKER_BEGIN = 1, VT_MARKER_END = 2 };

/* The head of a marker page; the rest of the page is zero. Little-endian. */
struct vt_marker {
	uint64_t magic;
	uint64_t commit;
	uint32_t kind;
	uint32_t version;
	uint64_t session_id;
	uint32_t cpu;
	uint32_t page_size;
	struct vt_cpu_stats stats; /* zero in a begin marker */
};
_Static_assert(sizeof(struct vt_marker) == 112, "marker head is 112 bytes");

/* Fills a whole page (page_size bytes) with a marker. */
void vt_marker_encode(void *page, uint32_t page_size, enum vt_marker_kind kind, uint64_t session_id,
		      uint32_t cpu, const struct vt_cpu_stats *stats);
/* 1 if page (len bytes) holds a valid marker (decoded into *ret), 0 if it is not a marker,
 * -EBADMSG if it looks like one but is malformed. */
int vt_marker_decode(const void *page, size_t len, struct vt_marker *ret);
