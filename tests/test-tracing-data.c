// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "tracing_data.h"

static const char ev1[] = "name: a\nID: 5\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\n";
static const char ev2[] = "name: b\nID: 6\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\n";

TEST(build_parse_roundtrip)
{
	struct tracing_data td, back;
	uint8_t *blob, *blob2;
	size_t len, len2;

	CHECK_INT(tracing_data_init(&td, 8, 4096, "hp", 2, "he", 2), ==, 0);
	CHECK_INT(tracing_data_add_event(&td, "sched", ev1, strlen(ev1)), ==, 0);
	CHECK_INT(tracing_data_add_event(&td, "guest_sched", ev2, strlen(ev2)), ==, 0);
	CHECK_INT(tracing_data_add_event(&td, "sched", ev2, strlen(ev2)), ==, 0);
	CHECK_INT(tracing_data_build(&td, &blob, &len), ==, 0);
	CHECK(!memcmp(blob, "\027\bDtracing0.6", 14));
	CHECK_INT(tracing_data_parse(blob, len, &back), ==, 0);
	CHECK_INT(back.n_systems, ==, 2);
	CHECK_STR(back.systems[0].name, "sched");
	CHECK_INT(back.systems[0].n_events, ==, 2);
	CHECK_STR(back.systems[1].name, "guest_sched");
	CHECK_STR(back.header_page.data, "hp");
	CHECK_INT(back.page_size, ==, 4096);
	CHECK(back.has_cmdlines);
	CHECK_INT(tracing_data_build(&back, &blob2, &len2), ==, 0);
	CHECK_INT(len2, ==, len);
	CHECK(!memcmp(blob, blob2, len));
	tracing_data_free(&back);
	for (size_t cut = 0; cut < len; cut += 7)
		CHECK_INT(tracing_data_parse(blob, cut, &back) == 0 ? (tracing_data_free(&back), 0) : -EBADMSG,
			  ==, -EBADMSG);
	free(blob);
	free(blob2);
	tracing_data_free(&td);
}

TEST(rejects_big_endian_and_huge_counts)
{
	struct tracing_data td, back;
	uint8_t *blob;
	size_t len;
	uint32_t huge = 0xffffffff;

	CHECK_INT(tracing_data_init(&td, 8, 4096, "hp", 2, "he", 2), ==, 0);
	CHECK_INT(tracing_data_build(&td, &blob, &len), ==, 0);
	blob[14] = 1; /* file_bigendian */
	CHECK_INT(tracing_data_parse(blob, len, &back), ==, -EBADMSG);
	blob[14] = 0;
	/* n_ftrace sits right after header_event's text */
	memcpy(blob + 14 + 6 + 12 + 8 + 2 + 13 + 8 + 2, &huge, 4);
	CHECK_INT(tracing_data_parse(blob, len, &back), ==, -EBADMSG);
	free(blob);
	tracing_data_free(&td);
}
