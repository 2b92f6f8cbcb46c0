// SPDX-License-Identifier: GPL-2.0-only
/* perf_writer → perf_reader round trips (plain and zstd), and the reader's checks (zstd bombs). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

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

/* A file whose one PERF_RECORD_COMPRESSED holds the zstd frame made by make_frame. */
static int write_frame_file(const char *path, const uint8_t *z, size_t zlen)
{
	struct perf_writer *w;
	uint8_t rec[65536];
	struct perf_event_header h = { .type = PERF_REC_COMPRESSED, .size = (uint16_t)(8 + zlen) };
	int r = perf_writer_open(path, 0, &w);

	if (r < 0)
		return r;
	memcpy(rec, &h, 8);
	memcpy(rec + 8, z, zlen);
	r = perf_writer_record(w, rec); /* a user type: written as it is */
	if (r >= 0)
		r = perf_writer_finish(w, NULL, 0, NULL, 0);
	perf_writer_free(w);
	return r;
}

/* n MiB of zeros as one zstd frame (window_log 0: zstd's choice); its size back, 0 on error. */
static size_t make_frame(uint8_t *out, size_t cap, unsigned mib, int window_log)
{
	ZSTD_CCtx *c = ZSTD_createCCtx();
	static uint8_t zeros[1 << 20];
	ZSTD_outBuffer o = { out, cap, 0 };
	size_t q = 0;

	ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, 1);
	if (window_log)
		ZSTD_CCtx_setParameter(c, ZSTD_c_windowLog, window_log);
	for (unsigned i = 0; i < mib && !ZSTD_isError(q); i++) {
		ZSTD_inBuffer in = { zeros, sizeof(zeros), 0 };

		q = ZSTD_compressStream2(c, &o, &in, i + 1 == mib ? ZSTD_e_end : ZSTD_e_continue);
	}
	ZSTD_freeCCtx(c);
	return ZSTD_isError(q) || q ? 0 : o.pos;
}

/* A frame that expands past PERF_READER_MAX_EXPAND, or asks for a window past
 * PERF_READER_MAX_WINDOW_LOG: a clear error, not the memory. */
static void bomb(unsigned mib, int window_log, const char *want)
{
	char path[] = "/tmp/vt-test-perf-XXXXXX", err[256];
	int fd = mkstemp(path);
	static uint8_t z[60000];
	size_t zlen = make_frame(z, sizeof(z), mib, window_log);
	const struct perf_event_header *e;
	struct perf_reader *r;

	CHECK(fd >= 0);
	close(fd);
	CHECK(zlen > 0);
	CHECK_INT(write_frame_file(path, z, zlen), ==, 0);
	CHECK_INT(perf_reader_open(path, &r, err, sizeof(err)), ==, 0);
	unlink(path);
	CHECK_INT(perf_reader_next(r, &e), ==, -EBADMSG);
	CHECK(strstr(perf_reader_error(r), want) != NULL);
	perf_reader_free(r);
}

TEST(zstd_bomb_expansion) { bomb(64, 0, "expands past"); }
TEST(zstd_bomb_window) { bomb(2, 30, "window over 16 MiB"); }
