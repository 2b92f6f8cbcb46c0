// SPDX-License-Identifier: GPL-2.0-only
/* The compressed perf_writer read back the way perf 6.1 reads it, with libzstd and not with
 * our reader: the data section walked record by record, every PERF_RECORD_COMPRESSED fed to
 * one ZSTD_DStream into an output buffer of HEADER_COMPRESSED's mmap_len (perf's decompression
 * buffer: a record must expand into it in one go), the expanded bytes parsed as records (one
 * may straddle two COMPRESSED records); the result must be the records written, in order, with
 * the user records plain between them. Also a snapshot of a compressed writer going on. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "harness.h"
#include "perf_writer.h"

#define NREC 100000

/* Record i: a SAMPLE of 16..136 bytes (counter, then bytes that compress well, as trace
 * records do: 4 pseudo-random bytes, the rest repeated), a FINISHED_ROUND every 10000 (the
 * merge's rate), an ID_INDEX at 7. */
static size_t make_record(uint8_t *rec, unsigned i)
{
	uint16_t type = i % 10000 == 9999 ? PERF_REC_FINISHED_ROUND : i == 7 ? PERF_REC_ID_INDEX : PERF_RECORD_SAMPLE;
	uint16_t size = type == PERF_REC_FINISHED_ROUND ? 8 : (uint16_t)(16 + 8 * (i % 16));
	struct perf_event_header h = { .type = type, .size = size };
	uint32_t x = i * 2654435761u;

	memset(rec, 0, size);
	memcpy(rec, &h, 8);
	if (size > 8)
		memcpy(rec + 8, &i, 4);
	for (unsigned k = 12; k < size; k++)
		rec[k] = k < 16 ? (uint8_t)(x >>= 8) : (uint8_t)(i % 7);
	return size;
}

struct expanded {
	ZSTD_DStream *zs;
	uint8_t *buf;          /* expanded bytes not yet parsed */
	size_t len;
	unsigned next;         /* the record expected next */
	unsigned n_compressed; /* COMPRESSED records seen */
	int bad;               /* 1: a record differs, 2: a record did not fit mmap_len, 3: zstd error,
				* 6: a record expanded to nothing (perf 6.1 stops there) */
};

static void expect(struct expanded *x, const uint8_t *rec)
{
	uint8_t want[256];
	size_t n = make_record(want, x->next++);

	if (!x->bad && memcmp(rec, want, n))
		x->bad = 1;
}

/* One COMPRESSED record's payload through the stream, as perf does: into mmap_len bytes. */
static void expand(struct expanded *x, const uint8_t *z, size_t zlen, size_t mmap_len)
{
	uint8_t *out = malloc(mmap_len);
	ZSTD_inBuffer in = { z, zlen, 0 };
	ZSTD_outBuffer o = { out, mmap_len, 0 };
	size_t p = 0;

	while (in.pos < in.size && o.pos < o.size && !x->bad)
		if (ZSTD_isError(ZSTD_decompressStream(x->zs, &o, &in)))
			x->bad = 3;
	if (in.pos < in.size && !x->bad)
		x->bad = 2;
	if (o.pos == 0 && !x->bad) /* perf: "Couldn't decompress data" */
		x->bad = 6;
	x->buf = realloc(x->buf, x->len + o.pos);
	memcpy(x->buf + x->len, out, o.pos);
	x->len += o.pos;
	free(out);
	while (x->len - p >= 8) {
		struct perf_event_header h;

		memcpy(&h, x->buf + p, 8);
		if (h.size < 8 || x->len - p < h.size)
			break;
		expect(x, x->buf + p);
		p += h.size;
	}
	memmove(x->buf, x->buf + p, x->len - p);
	x->len -= p;
}

/* The file at path: its HEADER_COMPRESSED in comp (zeros when absent), its records checked
 * against make_record; the number of records back. */
static unsigned read_back(const char *path, uint32_t comp[5], struct expanded *x)
{
	int fd = open(path, O_RDONLY);
	off_t size = lseek(fd, 0, SEEK_END);
	uint8_t *f = malloc((size_t)size);
	struct perf_file_header h;
	struct perf_file_section s;
	unsigned nfeat = 0;

	memset(comp, 0, 5 * sizeof(*comp));
	if (fd < 0 || pread(fd, f, (size_t)size, 0) != size) {
		x->bad = 4;
		return 0;
	}
	close(fd);
	memcpy(&h, f, sizeof(h));
	for (unsigned bit = 0; bit < PERF_FEAT_COMPRESSED; bit++)
		nfeat += (h.features[bit / 64] >> (bit % 64)) & 1;
	if ((h.features[0] >> PERF_FEAT_COMPRESSED) & 1) {
		memcpy(&s, f + h.data.offset + h.data.size + nfeat * sizeof(s), sizeof(s));
		if (s.size == 5 * sizeof(*comp))
			memcpy(comp, f + s.offset, s.size);
	}
	x->zs = ZSTD_createDStream();
	ZSTD_initDStream(x->zs);
	for (uint64_t p = h.data.offset; p + 8 <= h.data.offset + h.data.size && !x->bad;) {
		struct perf_event_header e;

		memcpy(&e, f + p, 8);
		if (e.type == PERF_REC_COMPRESSED) {
			x->n_compressed++;
			expand(x, f + p + 8, e.size - 8u, comp[4]);
		} else {
			if (x->len) /* a plain record in the middle of a compressed one */
				x->bad = 5;
			expect(x, f + p);
		}
		p += e.size;
	}
	ZSTD_freeDStream(x->zs);
	free(x->buf);
	free(f);
	return x->next;
}

static int write_some(struct perf_writer *w, unsigned from, unsigned to)
{
	uint8_t rec[256];
	int r = 0;

	for (unsigned i = from; i < to && r >= 0; i++) {
		make_record(rec, i);
		r = perf_writer_record(w, rec);
	}
	return r;
}

TEST(compressed_read_back_with_libzstd)
{
	char path[] = "/tmp/vt-test-pw-XXXXXX";
	int fd = mkstemp(path);
	struct expanded x = { 0 };
	struct perf_writer *w;
	uint32_t comp[5];
	uint64_t ids[1] = { 7 };
	struct perf_attr_ids a = { .n_ids = 1, .ids = ids };

	CHECK(fd >= 0);
	close(fd);
	CHECK_INT(perf_writer_open(path, 3, &w), ==, 0);
	CHECK_INT(write_some(w, 0, NREC), ==, 0);
	CHECK_INT(perf_writer_finish(w, &a, 1, NULL, 0), ==, 0);
	perf_writer_free(w);
	CHECK_INT(read_back(path, comp, &x), ==, NREC);
	unlink(path);
	CHECK_INT(x.bad, ==, 0);
	CHECK_INT(x.len, ==, 0);
	CHECK(x.n_compressed > 10); /* several flushes: 256 KiB chunks and the rounds */
	CHECK_INT(comp[0], ==, 0);  /* version */
	CHECK_INT(comp[1], ==, 1);  /* zstd */
	CHECK_INT(comp[2], ==, 3);  /* level */
	CHECK(comp[3] >= 1);        /* ratio */
	CHECK_INT(comp[4], ==, PERF_COMP_MMAP_LEN);
}

TEST(plain_has_no_compressed_records)
{
	char path[] = "/tmp/vt-test-pw-XXXXXX";
	int fd = mkstemp(path);
	struct expanded x = { 0 };
	struct perf_writer *w;
	uint32_t comp[5];

	CHECK(fd >= 0);
	close(fd);
	CHECK_INT(perf_writer_open(path, 0, &w), ==, 0);
	CHECK_INT(write_some(w, 0, 3000), ==, 0);
	CHECK_INT(perf_writer_finish(w, NULL, 0, NULL, 0), ==, 0);
	perf_writer_free(w);
	CHECK_INT(read_back(path, comp, &x), ==, 3000);
	unlink(path);
	CHECK_INT(x.bad, ==, 0);
	CHECK_INT(x.n_compressed, ==, 0);
	CHECK_INT(comp[1], ==, 0);
}

/* A snapshot of a compressed writer holds everything before it and decompresses by itself;
 * the writer goes on, and its own file holds everything. */
TEST(compressed_snapshot)
{
	char path[] = "/tmp/vt-test-pw-XXXXXX", snap[] = "/tmp/vt-test-pws-XXXXXX";
	int fd = mkstemp(path), sfd = mkstemp(snap);
	struct expanded x = { 0 }, y = { 0 };
	struct perf_writer *w;
	uint32_t comp[5];

	CHECK(fd >= 0 && sfd >= 0);
	close(fd);
	close(sfd);
	CHECK_INT(perf_writer_open(path, 1, &w), ==, 0);
	for (unsigned i = 0; i < 12000; i += 1000) { /* the live merge flushes before each wait */
		CHECK_INT(write_some(w, i, i + 1000), ==, 0);
		CHECK_INT(perf_writer_flush(w), ==, 0);
	}
	CHECK_INT(write_some(w, 12000, 12345), ==, 0); /* ends inside a 256 KiB chunk */
	CHECK_INT(perf_writer_snapshot(w, snap, NULL, 0, NULL, 0), ==, 0);
	CHECK_INT(write_some(w, 12345, NREC), ==, 0);
	CHECK_INT(perf_writer_finish(w, NULL, 0, NULL, 0), ==, 0);
	perf_writer_free(w);
	CHECK_INT(read_back(snap, comp, &x), ==, 12345);
	CHECK_INT(x.bad, ==, 0);
	CHECK_INT(comp[2], ==, 1);
	CHECK_INT(read_back(path, comp, &y), ==, NREC);
	CHECK_INT(y.bad, ==, 0);
	unlink(path);
	unlink(snap);
}

/* The live merge's flush before it waits: the file shows what was written so far (the partial
 * block), and the block still goes out whole later: the finished file reads back complete. */
TEST(flush_shows_the_file)
{
	char path[] = "/tmp/vt-test-pw-XXXXXX";
	int fd = mkstemp(path);
	struct expanded x = { 0 };
	struct perf_writer *w;
	struct stat st;
	uint32_t comp[5];
	off_t before;

	CHECK(fd >= 0);
	close(fd);
	CHECK_INT(perf_writer_open(path, 1, &w), ==, 0);
	CHECK_INT(write_some(w, 0, 5000), ==, 0);
	CHECK_INT(stat(path, &st), ==, 0);
	before = st.st_size;
	CHECK_INT(perf_writer_flush(w), ==, 0);
	CHECK_INT(stat(path, &st), ==, 0);
	CHECK(st.st_size > before);
	CHECK_INT(perf_writer_flush(w), ==, 0); /* nothing new: nothing written */
	CHECK_INT(write_some(w, 5000, NREC), ==, 0);
	CHECK_INT(perf_writer_finish(w, NULL, 0, NULL, 0), ==, 0);
	perf_writer_free(w);
	CHECK_INT(read_back(path, comp, &x), ==, NREC);
	CHECK_INT(x.bad, ==, 0);
	unlink(path);
}

/* A snapshot of the live merge's writer well past its first whole blocks (written O_DIRECT
 * where the file system has it, after partial writes by perf_writer_flush at the same
 * offsets): the copy holds the records written, byte for byte. */
TEST(compressed_snapshot_after_blocks)
{
	char path[] = "/tmp/vt-test-pw-XXXXXX", snap[] = "/tmp/vt-test-pws-XXXXXX";
	int fd = mkstemp(path), sfd = mkstemp(snap);
	struct expanded x = { 0 };
	struct perf_writer *w;
	uint32_t comp[5];
	unsigned n = 600000;

	CHECK(fd >= 0 && sfd >= 0);
	close(fd);
	close(sfd);
	CHECK_INT(perf_writer_open(path, 1, &w), ==, 0);
	for (unsigned i = 0; i < n; i += 20000) {
		CHECK_INT(write_some(w, i, i + 20000), ==, 0);
		CHECK_INT(perf_writer_flush(w), ==, 0);
	}
	CHECK_INT(perf_writer_snapshot(w, snap, NULL, 0, NULL, 0), ==, 0);
	CHECK_INT(read_back(snap, comp, &x), ==, n);
	CHECK_INT(x.bad, ==, 0);
	perf_writer_free(w);
	unlink(path);
	unlink(snap);
}

/* An empty feature is left out (its bit clear): perf 6.1 stops reading the features at one it
 * cannot process, and a HOSTNAME perf has not written yet would hide COMPRESSED. */
TEST(empty_feature_left_out)
{
	char path[] = "/tmp/vt-test-pw-XXXXXX";
	int fd = mkstemp(path);
	static const char host[] = "\x08\0\0\0host\0\0\0";
	struct perf_writer_feature f[2] = { { 3, NULL, 0 }, { 4, host, 12 } }; /* HOSTNAME, OSRELEASE */
	struct perf_file_header h;
	struct perf_writer *w;

	CHECK(fd >= 0);
	CHECK_INT(perf_writer_open(path, 1, &w), ==, 0);
	CHECK_INT(write_some(w, 0, 100), ==, 0);
	CHECK_INT(perf_writer_finish(w, NULL, 0, f, 2), ==, 0);
	perf_writer_free(w);
	CHECK_INT(pread(fd, &h, sizeof(h), 0), ==, sizeof(h));
	close(fd);
	unlink(path);
	CHECK_INT(h.features[0] >> 3 & 1, ==, 0);
	CHECK_INT(h.features[0] >> 4 & 1, ==, 1);
	CHECK_INT(h.features[0] >> PERF_FEAT_COMPRESSED & 1, ==, 1);
}
