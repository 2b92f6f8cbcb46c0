// SPDX-License-Identifier: GPL-2.0-only
/* HEADER_CPU_TOPOLOGY padded to a larger NRCPUS (common/perf_topology.c): the host's bytes kept,
 * -1 ids for the CPUs past them, in each of perf's three layouts (siblings only, with core and
 * socket ids, with dies); a section that does not parse is refused. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "perf_topology.h"

struct sec {
	uint8_t b[512];
	size_t len;
};

static void put32(struct sec *s, uint32_t v)
{
	memcpy(s->b + s->len, &v, 4);
	s->len += 4;
}

/* A perf string: u32 len (64-aligned, as perf writes it), then the bytes, NUL-padded. */
static void put_str(struct sec *s, const char *str)
{
	memset(s->b + s->len + 4, 0, 64);
	put32(s, 64);
	memcpy(s->b + s->len, str, strlen(str));
	s->len += 64;
}

/* A 2-CPU host's section: siblings; ids when ids; dies when dies. */
static void host_topology(struct sec *s, int ids, int dies)
{
	s->len = 0;
	put32(s, 1), put_str(s, "0-1");
	put32(s, 2), put_str(s, "0"), put_str(s, "1");
	if (!ids)
		return;
	put32(s, 0), put32(s, 0), put32(s, 1), put32(s, 0);
	if (!dies)
		return;
	put32(s, 1), put_str(s, "0-1");
	put32(s, 0), put32(s, 0);
}

static uint32_t u32_at(const uint8_t *p, size_t off)
{
	uint32_t v;

	memcpy(&v, p + off, 4);
	return v;
}

TEST(siblings_only_kept_as_is)
{
	struct sec s;
	uint8_t *out;
	size_t len;

	host_topology(&s, 0, 0);
	CHECK_INT(perf_topology_pad(s.b, s.len, 2, 16, &out, &len), ==, 0);
	CHECK_INT(len, ==, s.len);
	CHECK(!memcmp(out, s.b, len));
	free(out);
}

TEST(ids_padded_with_minus_one)
{
	struct sec s;
	uint8_t *out;
	size_t len, ids;

	host_topology(&s, 0, 0);
	ids = s.len;
	host_topology(&s, 1, 0);
	CHECK_INT(perf_topology_pad(s.b, s.len, 2, 5, &out, &len), ==, 0);
	CHECK_INT(len, ==, s.len + 3 * 8);
	CHECK(!memcmp(out, s.b, s.len));
	for (size_t i = 0; i < 6; i++)
		CHECK_INT(u32_at(out, ids + 16 + 4 * i), ==, UINT32_MAX);
	free(out);
}

TEST(dies_padded_after_their_lists)
{
	struct sec s;
	uint8_t *out;
	size_t len, dies;

	host_topology(&s, 1, 0);
	dies = s.len;
	host_topology(&s, 1, 1);
	CHECK_INT(perf_topology_pad(s.b, s.len, 2, 4, &out, &len), ==, 0);
	CHECK_INT(len, ==, s.len + 2 * 8 + 2 * 4);
	CHECK(!memcmp(out, s.b, dies));                                   /* host ids */
	CHECK_INT(u32_at(out, dies), ==, UINT32_MAX);                      /* cpu2 core */
	CHECK_INT(u32_at(out, dies + 12), ==, UINT32_MAX);                 /* cpu3 socket */
	CHECK(!memcmp(out + dies + 16, s.b + dies, s.len - dies));        /* die lists, host die ids */
	CHECK_INT(u32_at(out, s.len + 16), ==, UINT32_MAX);                /* cpu2 die */
	CHECK_INT(u32_at(out, s.len + 20), ==, UINT32_MAX);                /* cpu3 die */
	free(out);
}

TEST(same_count_is_a_copy)
{
	struct sec s;
	uint8_t *out;
	size_t len;

	host_topology(&s, 1, 1);
	CHECK_INT(perf_topology_pad(s.b, s.len, 2, 2, &out, &len), ==, 0);
	CHECK_INT(len, ==, s.len);
	CHECK(!memcmp(out, s.b, len));
	free(out);
}

TEST(malformed_refused)
{
	struct sec s;
	uint8_t *out = NULL;
	size_t len;

	host_topology(&s, 1, 1);
	CHECK_INT(perf_topology_pad(s.b, s.len, 3, 8, &out, &len), ==, -EBADMSG); /* ids of 2, not 3 */
	CHECK_INT(perf_topology_pad(s.b, s.len - 2, 2, 8, &out, &len), ==, -EBADMSG); /* cut in a die id */
	CHECK_INT(perf_topology_pad(s.b, 70, 2, 8, &out, &len), ==, -EBADMSG);       /* cut in a string */
	CHECK_INT(perf_topology_pad(s.b, 3, 2, 8, &out, &len), ==, -EBADMSG);        /* cut in a count */
	memset(s.b + 4, 0xff, 4);                                                     /* a huge string */
	CHECK_INT(perf_topology_pad(s.b, s.len, 2, 8, &out, &len), ==, -EBADMSG);
	CHECK_INT(perf_topology_pad(s.b, s.len, 8, 2, &out, &len), ==, -EINVAL);
	CHECK(out == NULL);
}
