// SPDX-License-Identifier: GPL-2.0-only
/* perf_writer → perf_reader round trips (plain and zstd), and the reader's checks. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "perf_reader.h"
#include "perf_writer.h"

#define NREC 5000

static void make_record(uint8_t *rec, unsigned i)
{
	struct perf_event_header h = { .type = i % 97 == 0 ? PERF_REC_FINISHED_ROUND : PERF_RECORD_SAMPLE,
				       .size = (uint16_t)(h.type == PERF_REC_FINISHED_ROUND ? 8 : 16 + 8 * (i % 9)) };

	memset(rec, 0, h.size);
	memcpy(rec, &h, 8);
	if (h.size > 8)
		memcpy(rec + 8, &i, 4);
}

static int write_file(const char *path, int level)
{
	struct perf_writer *w;
	uint64_t ids[3] = { 7, 8, 9 };
	struct perf_attr_ids a[2] = { { .n_ids = 2, .ids = ids }, { .n_ids = 1, .ids = ids + 2 } };
	const struct perf_writer_feature f[] = { { PERF_FEAT_NRCPUS, "\2\0\0\0\2\0\0\0", 8 },
						 { PERF_FEAT_TRACING_DATA, "abc", 3 } };
	uint8_t rec[128];
	int r = perf_writer_open(path, level, &w);

	if (r < 0)
		return r;
	a[0].attr.type = PERF_TYPE_TRACEPOINT;
	a[0].attr.config = 372;
	a[1].attr.config = 5;
	for (unsigned i = 0; i < NREC && r >= 0; i++) {
		make_record(rec, i);
		r = perf_writer_record(w, rec);
	}
	if (r >= 0)
		r = perf_writer_finish(w, a, 2, f, 2);
	perf_writer_free(w);
	return r;
}

static void roundtrip(int level)
{
	char path[] = "/tmp/vt-test-perf-XXXXXX", err[256];
	int fd = mkstemp(path);
	struct perf_reader *r;
	const struct perf_event_header *e;
	uint8_t want[128], *feat;
	size_t len;
	unsigned i = 0;
	int q;

	CHECK(fd >= 0);
	close(fd);
	CHECK_INT(write_file(path, level), ==, 0);
	CHECK_INT(perf_reader_open(path, &r, err, sizeof(err)), ==, 0);
	unlink(path);
	CHECK_INT(perf_reader_n_attrs(r), ==, 2);
	CHECK_INT(perf_reader_attr(r, 0)->attr.config, ==, 372);
	CHECK_INT(perf_reader_attr(r, 0)->n_ids, ==, 2);
	CHECK_INT(perf_reader_attr(r, 1)->ids[0], ==, 9);
	CHECK(perf_reader_has_feature(r, PERF_FEAT_NRCPUS));
	CHECK(perf_reader_has_feature(r, PERF_FEAT_COMPRESSED) == (level > 0));
	CHECK_INT(perf_reader_feature(r, PERF_FEAT_TRACING_DATA, &feat, &len), ==, 0);
	CHECK(len == 3 && !memcmp(feat, "abc", 3));
	free(feat);
	while ((q = perf_reader_next(r, &e)) == 1) {
		make_record(want, i++);
		CHECK(!memcmp(e, want, e->size));
	}
	CHECK_INT(q, ==, 0);
	CHECK_INT(i, ==, NREC);
	CHECK(level == 0 || perf_reader_n_expanded(r) > 0);
	perf_reader_free(r);
}

TEST(plain) { roundtrip(0); }
TEST(zstd) { roundtrip(3); }

TEST(attrs_overlap_data)
{
	char path[] = "/tmp/vt-test-perf-XXXXXX", err[256] = "";
	int fd = mkstemp(path);
	struct perf_file_header h;
	struct perf_reader *r;

	CHECK(fd >= 0);
	close(fd);
	CHECK_INT(write_file(path, 0), ==, 0);
	fd = open(path, O_RDWR);
	CHECK(pread(fd, &h, sizeof(h), 0) == sizeof(h));
	h.attrs.offset = h.data.offset + 16;
	CHECK(pwrite(fd, &h, sizeof(h), 0) == sizeof(h));
	CHECK_INT(perf_reader_open_fd(fd, &r, err, sizeof(err)), ==, -EBADMSG);
	CHECK(!strcmp(err, "attrs overlap data section"));
	h.attrs.offset = 1ull << 40;
	CHECK(pwrite(fd, &h, sizeof(h), 0) == sizeof(h));
	CHECK_INT(perf_reader_open_fd(fd, &r, err, sizeof(err)), ==, -EBADMSG);
	CHECK(!strcmp(err, "attrs section lies outside the file"));
	close(fd);
	unlink(path);
}

TEST(truncated_record)
{
	char path[] = "/tmp/vt-test-perf-XXXXXX", err[256];
	int fd = mkstemp(path);
	struct perf_file_header h;
	struct perf_reader *r;
	const struct perf_event_header *e;
	int q;

	CHECK(fd >= 0);
	close(fd);
	CHECK_INT(write_file(path, 0), ==, 0);
	fd = open(path, O_RDWR);
	CHECK(pread(fd, &h, sizeof(h), 0) == sizeof(h));
	h.data.size -= 4; /* the last record now ends past the data section */
	h.features[0] = 0;
	CHECK(pwrite(fd, &h, sizeof(h), 0) == sizeof(h));
	CHECK_INT(perf_reader_open_fd(fd, &r, err, sizeof(err)), ==, 0);
	while ((q = perf_reader_next(r, &e)) == 1)
		;
	CHECK_INT(q, ==, -EBADMSG);
	CHECK(strstr(perf_reader_error(r), "ends inside a record") != NULL);
	perf_reader_free(r);
	unlink(path);
}
