// SPDX-License-Identifier: GPL-2.0-only
#include "perf_reader.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zstd.h>
#include <zstd_errors.h>

#include "util.h"

#define READ_CHUNK (1u << 20)

struct perf_reader {
	int fd;
	uint64_t file_size;
	struct perf_file_header hdr;
	size_t n_attrs;
	struct perf_attr_ids *attrs;
	struct perf_file_section feat[PERF_FEAT_BITS];
	/* raw data section, read in chunks */
	uint64_t pos, end;
	uint8_t *buf;
	size_t buf_len, buf_pos;
	/* expanded PERF_RECORD_COMPRESSED bytes */
	ZSTD_DStream *zs;
	uint8_t *dbuf;
	size_t dlen, dpos, dcap;
	uint64_t n_expanded;
	bool follow; /* a file perf is still writing: data up to end, which grows (perf_reader_set_end) */
	uint8_t rec[65536] __attribute__((aligned(8)));
	char err[256];
};

__attribute__((format(printf, 3, 4))) static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -EBADMSG;
}

static bool section_ok(const struct perf_file_section *s, uint64_t file_size)
{
	return s->offset <= file_size && s->size <= file_size - s->offset;
}

static bool overlap(const struct perf_file_section *a, const struct perf_file_section *b)
{
	return a->size && b->size && a->offset < b->offset + b->size && b->offset < a->offset + a->size;
}

static int check_header(struct perf_reader *r, char *err, size_t errlen)
{
	const struct perf_file_header *h = &r->hdr;

	if (h->magic != PERF_MAGIC2)
		return fail(err, errlen, "not a PERFILE2 file of this machine's byte order");
	if (h->size != sizeof(*h))
		return fail(err, errlen, "header size %llu, expected 104", (unsigned long long)h->size);
	/* newer perf writes longer attrs (6.12: 136 bytes, config3); their fields past 6.1's are
	 * read and must be zero (read_attrs) */
	if (h->attr_size < PERF_ATTR_SIZE_VER0 + 16 || h->attr_size > PERF_READER_ATTR_MAX + 16 || h->attr_size % 8)
		return fail(err, errlen, "attr size %llu is not supported (perf 6.1 writes %u, newer ones up to %u)",
			    (unsigned long long)h->attr_size, PERF_FILE_ATTR_SIZE, PERF_READER_ATTR_MAX + 16);
	if (!section_ok(&h->attrs, r->file_size) || h->attrs.offset < h->size)
		return fail(err, errlen, "attrs section lies outside the file");
	if (!section_ok(&h->data, r->file_size) || h->data.offset < h->size)
		return fail(err, errlen, "data section lies outside the file");
	if (overlap(&h->attrs, &h->data))
		return fail(err, errlen, "attrs overlap data section");
	if (h->attrs.size % h->attr_size || h->attrs.size / h->attr_size > PERF_READER_MAX_ATTRS)
		return fail(err, errlen, "attrs section size %llu is not a sane multiple of %llu",
			    (unsigned long long)h->attrs.size, (unsigned long long)h->attr_size);
	return 0;
}

static int read_at(struct perf_reader *r, void *buf, size_t len, uint64_t off)
{
	ssize_t n = pread(r->fd, buf, len, (off_t)off);

	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EIO;
}

static int read_ids(struct perf_reader *r, struct perf_attr_ids *a, const struct perf_file_section *s,
		    size_t *total, char *err, size_t errlen)
{
	if (!section_ok(s, r->file_size) || s->size % 8 || overlap(s, &r->hdr.data))
		return fail(err, errlen, "attr %zu: id array lies outside the file or overlaps the data section",
			    (size_t)(a - r->attrs));
	a->n_ids = s->size / 8;
	*total += a->n_ids;
	if (*total > PERF_READER_MAX_IDS)
		return fail(err, errlen, "more than %u sample ids", PERF_READER_MAX_IDS);
	a->ids = calloc(a->n_ids ? a->n_ids : 1, 8);
	if (!a->ids)
		return -ENOMEM;
	if (a->n_ids && read_at(r, a->ids, s->size, s->offset) < 0)
		return fail(err, errlen, "cannot read the id array of attr %zu", (size_t)(a - r->attrs));
	return 0;
}

static int read_attrs(struct perf_reader *r, char *err, size_t errlen)
{
	size_t total = 0, asz = r->hdr.attr_size - 16;

	r->n_attrs = r->hdr.attrs.size / r->hdr.attr_size;
	r->attrs = calloc(r->n_attrs ? r->n_attrs : 1, sizeof(*r->attrs));
	if (!r->attrs)
		return -ENOMEM;
	for (size_t i = 0; i < r->n_attrs; i++) {
		struct perf_attr_ids *a = &r->attrs[i];
		struct perf_file_section ids;
		uint64_t off = r->hdr.attrs.offset + i * r->hdr.attr_size;
		int q;

		uint8_t ext[PERF_READER_ATTR_MAX - PERF_ATTR_SIZE];
		size_t own = MIN(asz, (size_t)PERF_ATTR_SIZE), more = asz - own;

		if (read_at(r, &a->attr, own, off) < 0 || (more && read_at(r, ext, more, off + own) < 0) ||
		    read_at(r, &ids, sizeof(ids), off + asz) < 0)
			return fail(err, errlen, "cannot read attr %zu", i);
		if (a->attr.size != asz)
			return fail(err, errlen, "attr %zu: size %u does not match the header's attr size %zu",
				    i, a->attr.size, asz);
		for (size_t k = 0; k < more; k++)
			if (ext[k])
				return fail(err, errlen, "attr %zu sets a field past perf 6.1's %u bytes (byte %zu: "
					    "config3 or newer), which this merge cannot carry", i, PERF_ATTR_SIZE, PERF_ATTR_SIZE + k);
		a->attr.size = PERF_ATTR_SIZE;
		q = read_ids(r, a, &ids, &total, err, errlen);
		if (q < 0)
			return q;
	}
	return 0;
}

static int read_features(struct perf_reader *r, char *err, size_t errlen)
{
	uint64_t off = r->hdr.data.offset + r->hdr.data.size;

	for (unsigned bit = 0; bit < PERF_FEAT_BITS; bit++) {
		struct perf_file_section *s = &r->feat[bit];

		if (!(r->hdr.features[bit / 64] & (1ull << (bit % 64))))
			continue;
		if (off + sizeof(*s) > r->file_size || read_at(r, s, sizeof(*s), off) < 0)
			return fail(err, errlen, "feature table entry for feature %u lies outside the file", bit);
		if (!section_ok(s, r->file_size))
			return fail(err, errlen, "feature %u section lies outside the file", bit);
		off += sizeof(*s);
	}
	return 0;
}

int perf_reader_open_fd(int fd, struct perf_reader **ret, char *err, size_t errlen)
{
	struct perf_reader *r = calloc(1, sizeof(*r));
	struct stat st;
	int q;

	if (!r)
		return -ENOMEM;
	r->fd = fd;
	if (fstat(fd, &st) < 0) {
		q = -errno;
		snprintf(err, errlen, "cannot stat: %s", strerror(errno));
		goto fail_free;
	}
	r->file_size = (uint64_t)st.st_size;
	if (r->file_size < sizeof(r->hdr) || read_at(r, &r->hdr, sizeof(r->hdr), 0) < 0) {
		q = fail(err, errlen, "file too short for a perf.data header");
		goto fail_free;
	}
	if ((q = check_header(r, err, errlen)) < 0 || (q = read_attrs(r, err, errlen)) < 0 ||
	    (q = read_features(r, err, errlen)) < 0)
		goto fail_free;
	r->pos = r->hdr.data.offset;
	r->end = r->hdr.data.offset + r->hdr.data.size;
	*ret = r;
	return 0;
fail_free:
	r->fd = -1;
	perf_reader_free(r);
	return q;
}

int perf_reader_open(const char *path, struct perf_reader **ret, char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), q;

	if (fd < 0) {
		q = -errno;
		snprintf(err, errlen, "cannot open: %s", strerror(errno));
		return q;
	}
	q = perf_reader_open_fd(fd, ret, err, errlen);
	if (q < 0)
		close(fd);
	return q;
}

/* perf record writes its header with the attrs at start (data size 0, no feature table) and
 * again at exit; in between the data section grows at the end of the file. */
int perf_reader_open_follow(const char *path, struct perf_reader **ret, char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), q;

	if (fd < 0) {
		q = -errno;
		snprintf(err, errlen, "cannot open: %s", strerror(errno));
		return q;
	}
	if ((q = perf_reader_open_follow_fd(fd, ret, err, errlen)) < 0)
		close(fd);
	return q;
}

int perf_reader_open_follow_fd(int fd, struct perf_reader **ret, char *err, size_t errlen)
{
	struct perf_reader *r = calloc(1, sizeof(*r));
	struct stat st;
	int q;

	if (!r)
		return -ENOMEM;
	r->fd = fd;
	if (fstat(r->fd, &st) < 0) {
		q = -errno;
		snprintf(err, errlen, "cannot stat: %s", strerror(errno));
		goto fail_free;
	}
	r->file_size = (uint64_t)st.st_size;
	if (r->file_size < sizeof(r->hdr) || read_at(r, &r->hdr, sizeof(r->hdr), 0) < 0) {
		q = fail(err, errlen, "file too short for a perf.data header (perf record not started?)");
		goto fail_free;
	}
	if ((q = check_header(r, err, errlen)) < 0 || (q = read_attrs(r, err, errlen)) < 0)
		goto fail_free;
	if (r->hdr.data.size) {
		fail(err, errlen, "perf record has finished this file already: read it whole");
		q = -EALREADY;
		goto fail_free;
	}
	r->follow = true;
	r->pos = r->end = r->hdr.data.offset;
	*ret = r;
	return 0;
fail_free:
	r->fd = -1; /* the caller's, on failure */
	perf_reader_free(r);
	return q;
}

void perf_reader_set_end(struct perf_reader *r, uint64_t end)
{
	if (r->follow && end > r->end)
		r->end = end;
}

int perf_reader_finish(struct perf_reader *r, char *err, size_t errlen)
{
	struct perf_file_header h;
	struct stat st;

	if (!r->follow)
		return 0;
	if (fstat(r->fd, &st) < 0 || read_at(r, &h, sizeof(h), 0) < 0)
		return fail(err, errlen, "cannot read the header again");
	r->file_size = (uint64_t)st.st_size;
	if (h.data.offset != r->hdr.data.offset || h.attrs.offset != r->hdr.attrs.offset ||
	    h.attrs.size != r->hdr.attrs.size || !h.data.size)
		return fail(err, errlen, "perf record did not finish the file (data size %llu)",
			    (unsigned long long)h.data.size);
	r->hdr = h;
	if (check_header(r, err, errlen) < 0 || read_features(r, err, errlen) < 0)
		return -EBADMSG;
	if (h.data.offset + h.data.size < r->end)
		return fail(err, errlen, "perf record's final data size %llu is shorter than what was read",
			    (unsigned long long)h.data.size);
	r->end = h.data.offset + h.data.size;
	r->follow = false;
	return 0;
}

uint64_t perf_reader_read_pos(const struct perf_reader *r)
{
	return r->pos;
}

void perf_reader_free(struct perf_reader *r)
{
	if (!r)
		return;
	if (r->fd >= 0)
		close(r->fd);
	for (size_t i = 0; i < r->n_attrs && r->attrs; i++)
		free(r->attrs[i].ids);
	free(r->attrs);
	free(r->buf);
	free(r->dbuf);
	ZSTD_freeDStream(r->zs);
	free(r);
}

size_t perf_reader_n_attrs(const struct perf_reader *r) { return r->n_attrs; }
const struct perf_attr_ids *perf_reader_attr(const struct perf_reader *r, size_t i) { return &r->attrs[i]; }
const char *perf_reader_error(const struct perf_reader *r) { return r->err; }
uint64_t perf_reader_n_expanded(const struct perf_reader *r) { return r->n_expanded; }

bool perf_reader_has_feature(const struct perf_reader *r, unsigned bit)
{
	return bit < PERF_FEAT_BITS && (r->hdr.features[bit / 64] & (1ull << (bit % 64)));
}

int perf_reader_feature(struct perf_reader *r, unsigned bit, uint8_t **ret_buf, size_t *ret_len)
{
	const struct perf_file_section *s;
	uint8_t *b;

	if (!perf_reader_has_feature(r, bit))
		return -ENOENT;
	s = &r->feat[bit];
	if (s->size > PERF_READER_MAX_FEATURE)
		return -EFBIG;
	b = malloc(s->size ? s->size : 1);
	if (!b)
		return -ENOMEM;
	if (s->size && read_at(r, b, s->size, s->offset) < 0) {
		free(b);
		return -EIO;
	}
	*ret_buf = b;
	*ret_len = s->size;
	return 0;
}

/* Makes at least n bytes of the raw data section available at buf + buf_pos. */
static int raw_fill(struct perf_reader *r, size_t n)
{
	size_t have = r->buf_len - r->buf_pos, want;
	int q;

	if (have >= n)
		return 0;
	if (!r->buf && !(r->buf = malloc(READ_CHUNK)))
		return -ENOMEM;
	if (have)
		memmove(r->buf, r->buf + r->buf_pos, have);
	r->buf_pos = 0;
	r->buf_len = have;
	want = (size_t)MIN((uint64_t)(READ_CHUNK - have), r->end - r->pos);
	if (have + want < n && r->follow) { /* the rest is not written yet: keep what we have */
		if (want && (q = read_at(r, r->buf + have, want, r->pos)) < 0)
			return q;
		r->pos += want;
		r->buf_len += want;
		return -EAGAIN;
	}
	if (have + want < n)
		return -EBADMSG;
	if ((q = read_at(r, r->buf + have, want, r->pos)) < 0)
		return q;
	r->pos += want;
	r->buf_len += want;
	return 0;
}

__attribute__((format(printf, 2, 3))) static int rfail(struct perf_reader *r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->err, sizeof(r->err), fmt, ap);
	va_end(ap);
	return -EBADMSG;
}

static int expand(struct perf_reader *r, const uint8_t *z, size_t zlen)
{
	ZSTD_inBuffer in = { z, zlen, 0 };

	if (!r->zs && (!(r->zs = ZSTD_createDStream()) || ZSTD_isError(ZSTD_initDStream(r->zs)) ||
		       ZSTD_isError(ZSTD_DCtx_setParameter(r->zs, ZSTD_d_windowLogMax, PERF_READER_MAX_WINDOW_LOG))))
		return -ENOMEM;
	if (r->dbuf)
		memmove(r->dbuf, r->dbuf + r->dpos, r->dlen - r->dpos);
	r->dlen -= r->dpos;
	r->dpos = 0;
	while (in.pos < in.size) {
		ZSTD_outBuffer out;
		size_t q;

		if (r->dcap - r->dlen < 65536) {
			uint8_t *n;

			if (r->dcap >= PERF_READER_MAX_EXPAND)
				return rfail(r, "a compressed record expands past %u bytes", PERF_READER_MAX_EXPAND);
			n = realloc(r->dbuf, r->dcap + (1u << 20));
			if (!n)
				return -ENOMEM;
			r->dbuf = n;
			r->dcap += 1u << 20;
		}
		out = (ZSTD_outBuffer){ r->dbuf + r->dlen, r->dcap - r->dlen, 0 };
		q = ZSTD_decompressStream(r->zs, &out, &in);
		if (ZSTD_getErrorCode(q) == ZSTD_error_frameParameter_windowTooLarge)
			return rfail(r, "compressed data needs a zstd window over %u MiB (perf record -z above level 19?): "
				     "write it uncompressed with 'perf inject -i FILE -o PLAIN' first",
				     (1u << PERF_READER_MAX_WINDOW_LOG) >> 20);
		if (ZSTD_isError(q))
			return rfail(r, "compressed data is damaged: %s", ZSTD_getErrorName(q));
		r->dlen += out.pos;
	}
	return 0;
}

/* A whole record from the expanded buffer, or 0 when none is complete. */
static int next_expanded(struct perf_reader *r, const struct perf_event_header **ret)
{
	struct perf_event_header h;
	size_t have = r->dlen - r->dpos;

	if (have < sizeof(h))
		return 0;
	memcpy(&h, r->dbuf + r->dpos, sizeof(h));
	if (h.size < sizeof(h) || h.type == PERF_REC_COMPRESSED)
		return rfail(r, "bad record (type %u, size %u) inside compressed data", h.type, h.size);
	if (have < h.size)
		return 0;
	memcpy(r->rec, r->dbuf + r->dpos, h.size);
	r->dpos += h.size;
	r->n_expanded++;
	*ret = (const struct perf_event_header *)r->rec;
	return 1;
}

int perf_reader_next(struct perf_reader *r, const struct perf_event_header **ret)
{
	for (;;) {
		struct perf_event_header h;
		int q = next_expanded(r, ret);

		if (q != 0)
			return q;
		if (r->pos == r->end && r->buf_pos == r->buf_len) {
			if (r->follow)
				return -EAGAIN;
			if (r->dlen != r->dpos)
				return rfail(r, "compressed data ends inside a record");
			return 0;
		}
		if ((q = raw_fill(r, sizeof(h))) < 0)
			return q == -EBADMSG ? rfail(r, "data section ends inside a record header") : q;
		memcpy(&h, r->buf + r->buf_pos, sizeof(h));
		if (h.size < sizeof(h))
			return rfail(r, "record of type %u has size %u (< 8) at data offset %llu", h.type, h.size,
				     (unsigned long long)(r->pos - r->hdr.data.offset - (r->buf_len - r->buf_pos)));
		if ((q = raw_fill(r, h.size)) < 0)
			return q == -EBADMSG ? rfail(r, "data section ends inside a record of type %u", h.type) : q;
		memcpy(r->rec, r->buf + r->buf_pos, h.size);
		r->buf_pos += h.size;
		if (h.type != PERF_REC_COMPRESSED) {
			if (r->dlen != r->dpos)
				return rfail(r, "compressed data ends inside a record");
			*ret = (const struct perf_event_header *)r->rec;
			return 1;
		}
		if ((q = expand(r, r->rec + sizeof(h), h.size - sizeof(h))) < 0)
			return q;
	}
}
