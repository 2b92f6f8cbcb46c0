// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <stdlib.h>

#include "harness.h"
#include "marker.h"
#include "proto.h"

static int build_hello(struct vt_buf *b, uint32_t seq)
{
	vt_msg_begin(b, VT_MSG_HELLO, seq);
	vt_put_u32(b, VT_A_VERSION, VT_PROTO_VERSION);
	vt_put_str(b, VT_A_RELEASE, "6.1.0-test");
	vt_put_u64(b, VT_A_SESSION, 0x1122334455667788ull);
	return vt_msg_end(b);
}

TEST(roundtrip_attrs)
{
	struct vt_buf b = { 0 };
	struct vt_reader r;
	struct vt_msg m;
	char legacy, *s = NULL;
	uint32_t v32;
	uint64_t v64;

	CHECK_INT(build_hello(&b, 42), ==, 0);
	CHECK_INT(vt_reader_init(&r), ==, 0);
	CHECK_INT(vt_reader_feed(&r, b.data, b.len), ==, 0);
	CHECK_INT(vt_reader_next(&r, &m, &legacy), ==, VT_READ_MSG);
	CHECK_INT(m.hdr.type, ==, VT_MSG_HELLO);
	CHECK_INT(m.hdr.seq, ==, 42);
	CHECK_INT(vt_msg_validate(&m), ==, 0);
	CHECK_INT(vt_msg_u32(&m, VT_A_VERSION, &v32), ==, 0);
	CHECK_INT(v32, ==, VT_PROTO_VERSION);
	CHECK_INT(vt_msg_u64(&m, VT_A_SESSION, &v64), ==, 0);
	CHECK(v64 == 0x1122334455667788ull);
	CHECK_INT(vt_msg_str(&m, VT_A_RELEASE, 64, &s), ==, 0);
	CHECK_STR(s, "6.1.0-test");
	free(s);
	CHECK_INT(vt_msg_str(&m, VT_A_RELEASE, 4, &s), ==, -EBADMSG); /* over the caller's bound */
	CHECK_INT(vt_msg_u32(&m, VT_A_SESSION, &v32), ==, -EBADMSG);  /* wrong width */
	CHECK_INT(vt_msg_u32(&m, VT_A_CLOCK, &v32), ==, -ENOENT);
	CHECK_INT(vt_reader_next(&r, &m, &legacy), ==, VT_READ_NEED_MORE);
	vt_reader_free(&r);
	vt_buf_free(&b);
}

TEST(byte_by_byte_and_legacy)
{
	struct vt_buf b = { 0 };
	struct vt_reader r;
	struct vt_msg m;
	char legacy = 0;
	int msgs = 0, legacies = 0;

	CHECK_INT(build_hello(&b, 1), ==, 0);
	CHECK_INT(vt_reader_init(&r), ==, 0);
	CHECK_INT(vt_reader_feed(&r, "1\n", 2), ==, 0);
	for (size_t i = 0; i < b.len; i++)
		CHECK_INT(vt_reader_feed(&r, b.data + i, 1), ==, 0);
	CHECK_INT(vt_reader_feed(&r, "0\r\n", 3), ==, 0);
	for (;;) {
		enum vt_read_result res = vt_reader_next(&r, &m, &legacy);

		if (res == VT_READ_NEED_MORE)
			break;
		if (res == VT_READ_MSG)
			msgs++;
		else if (res == VT_READ_LEGACY)
			legacies++;
		else
			CHECK(!"unexpected result");
	}
	CHECK_INT(msgs, ==, 1);
	CHECK_INT(legacies, ==, 2);
	CHECK_INT(legacy, ==, '0');
	vt_reader_free(&r);
	vt_buf_free(&b);
}

TEST(garbage_then_frame_resyncs)
{
	struct vt_buf b = { 0 };
	struct vt_reader r;
	struct vt_msg m;
	char legacy;
	int garbage = 0;
	enum vt_read_result res;

	CHECK_INT(build_hello(&b, 9), ==, 0);
	CHECK_INT(vt_reader_init(&r), ==, 0);
	CHECK_INT(vt_reader_feed(&r, "xxVTC0junk", 10), ==, 0);
	CHECK_INT(vt_reader_feed(&r, b.data, b.len), ==, 0);
	while ((res = vt_reader_next(&r, &m, &legacy)) == VT_READ_GARBAGE)
		garbage++;
	CHECK(garbage >= 1);
	CHECK_INT(res, ==, VT_READ_MSG);
	CHECK_INT(m.hdr.seq, ==, 9);
	CHECK_INT(r.garbage_bytes, ==, 10);
	vt_reader_free(&r);
	vt_buf_free(&b);
}

TEST(oversized_length_refused)
{
	struct vt_buf b = { 0 };
	struct vt_reader r;
	struct vt_msg m;
	char legacy;

	vt_msg_begin(&b, VT_MSG_CONFIG, 5);
	CHECK_INT(vt_msg_end(&b), ==, 0);
	b.data[12] = 0xff, b.data[13] = 0xff, b.data[14] = 0xff, b.data[15] = 0x7f; /* 2 GiB */
	CHECK_INT(vt_reader_init(&r), ==, 0);
	CHECK_INT(vt_reader_feed(&r, b.data, b.len), ==, 0);
	CHECK_INT(vt_reader_next(&r, &m, &legacy), ==, VT_READ_TOOBIG);
	CHECK_INT(m.hdr.seq, ==, 5);
	CHECK_INT(vt_reader_next(&r, &m, &legacy), ==, VT_READ_NEED_MORE);
	vt_reader_free(&r);
	vt_buf_free(&b);
}

TEST(truncated_attribute_rejected)
{
	struct vt_buf b = { 0 };
	struct vt_msg m;

	vt_msg_begin(&b, VT_MSG_CONFIG, 1);
	vt_put_str(&b, VT_A_EVENTS, "sched:*");
	CHECK_INT(vt_msg_end(&b), ==, 0);
	m.hdr.len = (uint32_t)(b.len - VT_PROTO_HDR_SIZE);
	m.payload = b.data + VT_PROTO_HDR_SIZE;
	m.len = m.hdr.len - 5; /* cut inside the string */
	CHECK_INT(vt_msg_validate(&m), ==, -EBADMSG);
	m.len = 3; /* cut inside the attribute header */
	CHECK_INT(vt_msg_validate(&m), ==, -EBADMSG);
	vt_buf_free(&b);
}

TEST(marker_roundtrip)
{
	static uint8_t page[4096];
	struct vt_cpu_stats st = { .cpu = 3, .pages_sent = 10, .bytes_sent = 40960, .overrun = 2, .read_events = 99 };
	struct vt_marker mk;

	vt_marker_encode(page, sizeof(page), VT_MARKER_END, 77, 3, &st);
	CHECK_INT(vt_marker_decode(page, sizeof(page), &mk), ==, 1);
	CHECK_INT(mk.kind, ==, VT_MARKER_END);
	CHECK_INT(mk.session_id, ==, 77);
	CHECK_INT(mk.cpu, ==, 3);
	CHECK_INT(mk.stats.pages_sent, ==, 10);
	CHECK_INT(mk.stats.read_events, ==, 99);
	CHECK_INT(vt_marker_decode(page, 2048, &mk), ==, -EBADMSG); /* wrong page size */
	page[0] ^= 1;
	CHECK_INT(vt_marker_decode(page, sizeof(page), &mk), ==, 0); /* a ring page, not a marker */
}
