// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ftrace_page.h"
#include "harness.h"
#include "util.h"

static const char hp[] = "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n"
			 "\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n"
			 "\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n"
			 "\tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;\n";
static const char he[] = "# compressed entry header\n\ttype_len    :    5 bits\n\ttime_delta  :   27 bits\n"
			 "\tarray       :   32 bits\n\n\tpadding     : type == 29\n\ttime_extend : type == 30\n"
			 "\ttime_stamp : type == 31\n\tdata max type_len  == 28\n";

static uint8_t page[4096];
static size_t at;

static void put32(uint32_t v) { memcpy(page + 16 + at, &v, 4); at += 4; }
static void head(uint32_t type, uint32_t delta) { put32(type | delta << 5); }

static void commit(uint64_t flags)
{
	uint64_t c = at | flags, ts = 1000;

	memcpy(page, &ts, 8);
	memcpy(page + 8, &c, 8);
}

static int layout(struct ftrace_page_layout *l)
{
	return ftrace_page_layout_parse(hp, strlen(hp), he, strlen(he), l);
}

TEST(layout_from_header_files)
{
	struct ftrace_page_layout l;

	CHECK_INT(layout(&l), ==, 0);
	CHECK_INT(l.page_size, ==, 4096);
	CHECK_INT(l.data_off, ==, 16);
	CHECK_INT(l.commit_size, ==, 8);
	CHECK_INT(l.type_len_bits, ==, 5);
	CHECK_INT(l.padding_type, ==, 29);
	CHECK_INT(l.extend_type, ==, 30);
	CHECK_INT(l.stamp_type, ==, 31);
	CHECK_INT(l.data_max_type, ==, 28);
	CHECK_INT(ftrace_page_layout_parse(hp, strlen(hp), "type_len : 5 bits\n", 18, &l), ==, -EBADMSG);
	{ /* a guest's type_len of 32 bits: refused, no shift by 32 (UBSan) */
		char bad[sizeof(he) + 8];

		snprintf(bad, sizeof(bad), "%s", he);
		memcpy(strstr(bad, "    5 bits"), "   32 bits", 10);
		CHECK_INT(ftrace_page_layout_parse(hp, strlen(hp), bad, strlen(bad), &l), ==, -EBADMSG);
	}
	CHECK_INT(ftrace_page_layout_parse("field: u64 timestamp; offset:0; size:8;", 39, he, strlen(he), &l), ==,
		  -EBADMSG);
}

TEST(every_event_kind)
{
	struct ftrace_page_layout l;
	struct ftrace_page it;
	struct ftrace_event ev;
	uint64_t lost = 77;

	memset(page, 0, sizeof(page));
	at = 0;
	head(2, 5), put32(0x11), put32(0x22);            /* data, 8 bytes, ts 1005 */
	head(30, 3), put32(1);                            /* time extend: + (1 << 27) + 3 */
	head(0, 0), put32(124);                           /* large data: 120 bytes */
	for (int i = 0; i < 30; i++)
		put32((uint32_t)i);
	head(29, 7), put32(8), put32(0);                  /* discarded: 4 + array[0] = 12 bytes */
	head(31, 5000 & ((1u << 27) - 1)), put32(0);      /* absolute ts 5000 */
	head(1, 1), put32(0x33);                          /* data, 4 bytes, ts 5001 */
	memcpy(page + 16 + at, &lost, 8);
	commit(FTRACE_PAGE_MISSED_EVENTS | FTRACE_PAGE_MISSED_STORED);
	CHECK_INT(layout(&l), ==, 0);
	CHECK_INT(ftrace_page_begin(&it, &l, page, sizeof(page)), ==, 0);
	CHECK(it.missed && it.lost_known);
	CHECK_INT(it.lost, ==, 77);
	CHECK_INT(ftrace_page_next(&it, &ev), ==, 1);
	CHECK_INT(ev.ts, ==, 1005);
	CHECK_INT(ev.len, ==, 8);
	CHECK_INT(ftrace_page_next(&it, &ev), ==, 1);
	CHECK_INT(ev.ts, ==, 1005 + (1ull << 27) + 3);
	CHECK_INT(ev.len, ==, 120);
	CHECK_INT(ev.data[4], ==, 1);
	CHECK_INT(ftrace_page_next(&it, &ev), ==, 1);
	CHECK_INT(ev.ts, ==, 5001);
	CHECK_INT(ev.len, ==, 4);
	CHECK_INT(ftrace_page_next(&it, &ev), ==, 0);
}

TEST(padding_ends_page)
{
	struct ftrace_page_layout l;
	struct ftrace_page it;
	struct ftrace_event ev;

	memset(page, 0, sizeof(page));
	at = 0;
	head(1, 1), put32(1);
	head(29, 0), put32(0);
	head(1, 1), put32(2);
	commit(0);
	CHECK_INT(layout(&l), ==, 0);
	CHECK_INT(ftrace_page_begin(&it, &l, page, sizeof(page)), ==, 0);
	CHECK(!it.missed);
	CHECK_INT(ftrace_page_next(&it, &ev), ==, 1);
	CHECK_INT(ftrace_page_next(&it, &ev), ==, 0);
}

TEST(bounds)
{
	struct ftrace_page_layout l;
	struct ftrace_page it;
	struct ftrace_event ev;
	uint64_t c = 4081;

	CHECK_INT(layout(&l), ==, 0);
	memset(page, 0, sizeof(page));
	memcpy(page + 8, &c, 8);
	CHECK_INT(ftrace_page_begin(&it, &l, page, sizeof(page)), ==, -EBADMSG);
	CHECK_INT(ftrace_page_begin(&it, &l, page, 100), ==, -EBADMSG);
	c = ~0ull; /* a marker page */
	memcpy(page + 8, &c, 8);
	CHECK_INT(ftrace_page_begin(&it, &l, page, sizeof(page)), ==, -EBADMSG);
	at = 0;
	head(0, 0), put32(4000); /* large event longer than the page's data */
	commit(0);
	CHECK_INT(ftrace_page_begin(&it, &l, page, sizeof(page)), ==, 0);
	CHECK_INT(ftrace_page_next(&it, &ev), ==, -EBADMSG);
	at = 0;
	head(28, 0); /* 112 bytes claimed, 4 present */
	commit(0);
	CHECK_INT(ftrace_page_begin(&it, &l, page, sizeof(page)), ==, 0);
	CHECK_INT(ftrace_page_next(&it, &ev), ==, -EBADMSG);
	at = 4080 - 4;
	commit(FTRACE_PAGE_MISSED_STORED); /* no room for the stored count */
	CHECK_INT(ftrace_page_begin(&it, &l, page, sizeof(page)), ==, -EBADMSG);
}

/* Pages read back from a real ring overrun on the host's tracefs (tests/fixtures/ring-overrun,
 * made by its capture script): the kernel's own flag encoding, a sign-extended commit word. */
#define OVERRUN VT_SOURCE_ROOT "/tests/fixtures/ring-overrun/"

static uint64_t stats_value(const char *stats, const char *key)
{
	const char *p = strstr(stats, key);

	return p ? strtoull(p + strlen(key), NULL, 10) : UINT64_MAX;
}

/* The checks of one capture dir: every page walks to its end, the stored lost counts add up to
 * the ring's overrun and every event read is there; *ret: the pages with a sign-extended
 * commit word (a failed check leaves it 0). */
static void check_capture(const char *dir, uint32_t want_page_size, size_t *ret)
{
	_cleanup_free_ char *hp_text = NULL, *he_text = NULL, *pages = NULL, *stats = NULL;
	size_t hp_len, he_len, len, sign_extended = 0, missed = 0, events = 0;
	uint64_t lost = 0, commit;
	struct ftrace_page_layout l;
	struct ftrace_page it;
	struct ftrace_event ev;
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/header_page", dir);
	CHECK_INT(util_read_file(path, 4096, &hp_text, &hp_len), ==, 0);
	snprintf(path, sizeof(path), "%s/header_event", dir);
	CHECK_INT(util_read_file(path, 4096, &he_text, &he_len), ==, 0);
	snprintf(path, sizeof(path), "%s/pages", dir);
	CHECK_INT(util_read_file(path, 4 << 20, &pages, &len), ==, 0);
	snprintf(path, sizeof(path), "%s/stats", dir);
	CHECK_INT(util_read_file(path, 4096, &stats, NULL), ==, 0);
	CHECK_INT(ftrace_page_layout_parse(hp_text, hp_len, he_text, he_len, &l), ==, 0);
	CHECK_INT(l.page_size, ==, want_page_size);
	CHECK(len > 0 && len % l.page_size == 0);
	for (size_t off = 0; off < len; off += l.page_size) {
		memcpy(&commit, pages + off + l.commit_off, 8);
		sign_extended += commit >> 32 == 0xffffffffu;
		CHECK_INT(ftrace_page_begin(&it, &l, pages + off, l.page_size), ==, 0);
		if (it.missed) {
			missed++;
			CHECK(it.lost_known);
			lost += it.lost;
		}
		while (ftrace_page_next(&it, &ev) == 1)
			events++;
		CHECK_INT(it.off, ==, it.size); /* walked to the end: no malformed event */
	}
	CHECK_INT(missed, ==, sign_extended);
	/* The counts stored in the pages add up to the ring's own overrun figure, and every event
	 * the ring says was read is in the pages. */
	CHECK_INT(lost, ==, stats_value(stats, "overrun: "));
	CHECK_INT(events, ==, stats_value(stats, "read events: "));
	*ret = sign_extended;
}

TEST(real_overrun_pages)
{
	size_t sign_extended = 0;

	check_capture(OVERRUN, 4096, &sign_extended);
	CHECK(sign_extended > 0);
}

/* The same from a ring of 16 KiB sub-buffers (tests/fixtures/ring-overrun-subbuf, Linux 6.8+):
 * header_page's data field passes an event record's 64 KiB bound only at 64 KiB sub-buffers,
 * but the walker must take any sub-buffer size the instance says. */
TEST(real_overrun_subbufs)
{
	size_t sign_extended = 0;

	check_capture(VT_SOURCE_ROOT "/tests/fixtures/ring-overrun-subbuf", 16384, &sign_extended);
	CHECK(sign_extended > 0);
}

/* header_page of a 64 KiB sub-buffer: data ends past 65535 (an event field's bound). */
TEST(layout_64k_subbuf)
{
	static const char hp64[] = "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n"
				   "\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n"
				   "\tfield: char data;\toffset:16;\tsize:65520;\tsigned:0;\n";
	_cleanup_free_ char *he_text = NULL;
	struct ftrace_page_layout l;
	size_t he_len;

	CHECK_INT(util_read_file(OVERRUN "header_event", 4096, &he_text, &he_len), ==, 0);
	CHECK_INT(ftrace_page_layout_parse(hp64, sizeof(hp64) - 1, he_text, he_len, &l), ==, 0);
	CHECK_INT(l.page_size, ==, 65536);
	CHECK_INT(l.data_off, ==, 16);
}
