// SPDX-License-Identifier: GPL-2.0-only
/* Fuzz target: the control-frame stream reader and attribute decoders (guest and host input). */
#include <stdint.h>
#include <stdlib.h>

#include "marker.h"
#include "proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct vt_reader r;
	struct vt_msg m;
	struct vt_marker mk;
	char legacy;
	size_t fed = 0;

	if (vt_reader_init(&r) < 0)
		return 0;
	/* Feed in uneven chunks so partial frames are exercised. */
	while (fed < size) {
		size_t n = 1 + (data[fed] % 61);
		enum vt_read_result res;

		if (n > size - fed)
			n = size - fed;
		if (vt_reader_feed(&r, data + fed, n) < 0)
			break;
		fed += n;
		while ((res = vt_reader_next(&r, &m, &legacy)) != VT_READ_NEED_MORE) {
			if (res == VT_READ_MSG) {
				struct vt_attr a;
				uint32_t off = 0, v32;
				uint64_t v64;
				char *s = NULL;

				while (vt_attr_next(&m, &off, &a) > 0)
					;
				(void)vt_msg_u32(&m, VT_A_BUFFER_KB, &v32);
				(void)vt_msg_u64(&m, VT_A_SESSION, &v64);
				if (vt_msg_str(&m, VT_A_EVENTS, VT_PROTO_MAX_STR, &s) == 0)
					free(s);
				(void)vt_msg_type_name(m.hdr.type);
			}
		}
	}
	vt_reader_free(&r);
	if (size >= 4096 && vt_marker_decode(data, 4096, &mk) == 1) {
		struct vt_flush_marker fm;

		(void)vt_marker_decode_flush(data, 4096, &mk, &fm);
	}
	return 0;
}
