// SPDX-License-Identifier: GPL-2.0-only
#include "perf_writer.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "util.h"

/* The output goes out in whole OUT_BUF blocks with O_DIRECT where the file system has it (a
 * buffered write costs ~2.7 s of CPU per GB here, and a 10 GB merge's output pushed its own
 * input out of the page cache), the last partial block and the header through a buffered fd. */
#define OUT_BUF (1u << 20)
#define ZIN_MAX (256u << 10) /* below PERF_COMP_MMAP_LEN: perf's decompression window */
#define ZREC_MAX (65535u & ~7u)

struct perf_writer {
	int fd;
	int dfd;          /* the same file with O_DIRECT, or -1 */
	bool pipe;        /* pipe mode: a stream, written in order, no header at the end */
	uint64_t flushed; /* file offset of buf[0] */
	size_t shown;     /* a file: buf's bytes already written by perf_writer_flush */
	uint64_t limit;   /* the file's size may not pass it (0: no limit) */
	char *path;
	bool finished;
	uint64_t pos, in_bytes;
	void (*tap)(void *, const struct perf_event_header *);
	void *tap_ud;
	uint8_t *buf;
	size_t blen;
	int level;
	ZSTD_CStream *cs;
	uint8_t *zin;
	size_t zin_len;
	uint8_t zrec[ZREC_MAX];
};

static int out_pwrite(int fd, const uint8_t *p, size_t n, uint64_t off)
{
	while (n) {
		ssize_t k = pwrite(fd, p, n, (off_t)off);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return k < 0 ? -errno : -EIO;
		p += k, n -= (size_t)k, off += (uint64_t)k;
	}
	return 0;
}

/* The buffer into the file at w->flushed: a whole block by the O_DIRECT fd, else buffered. */
static int out_flush(struct perf_writer *w)
{
	if (w->limit && w->flushed + w->blen > w->limit)
		return -EFBIG; /* nothing written past the limit */
	if (w->pipe) {
		int r = w->blen ? util_write_full(w->fd, w->buf, w->blen) : 0;

		w->flushed += w->blen;
		w->blen = 0;
		return r;
	}
	int r = out_pwrite(w->blen == OUT_BUF && w->dfd >= 0 ? w->dfd : w->fd, w->buf, w->blen, w->flushed);

	if (r == -EINVAL && w->dfd >= 0) { /* a file system that opens O_DIRECT but refuses it */
		close(w->dfd);
		w->dfd = -1;
		r = out_pwrite(w->fd, w->buf, w->blen, w->flushed);
	}

	w->flushed += w->blen;
	w->blen = 0;
	w->shown = 0;
	return r;
}

uint64_t perf_writer_size(const struct perf_writer *w)
{
	return w->pos;
}

uint64_t perf_writer_records_bytes(const struct perf_writer *w)
{
	return w->in_bytes;
}

static int out_put(struct perf_writer *w, const void *d, size_t n)
{
	const uint8_t *p = d;

	w->pos += n;
	while (n) {
		size_t k = MIN(n, OUT_BUF - w->blen);
		int r;

		memcpy(w->buf + w->blen, p, k);
		w->blen += k, p += k, n -= k;
		if (w->blen == OUT_BUF && (r = out_flush(w)) < 0)
			return r;
	}
	return 0;
}

int perf_writer_open(const char *path, int level, struct perf_writer **ret)
{
	struct perf_writer *w = calloc(1, sizeof(*w));
	struct perf_file_header h = { 0 };
	int r;

	if (!w)
		return -ENOMEM;
	w->level = level;
	w->path = strdup(path);
	w->dfd = -1;
	if (posix_memalign((void **)&w->buf, 65536, OUT_BUF) != 0)
		w->buf = NULL;
	/* Never through a link; the O_DIRECT fd is the same file, reopened by its fd (a path
	 * another user can change would not be) */
	w->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (w->fd >= 0)
		w->dfd = util_reopen(w->fd, O_WRONLY | O_DIRECT | O_CLOEXEC); /* -1 (tmpfs): buffered it is */
	if (w->fd < 0 || !w->path || !w->buf) {
		r = w->fd < 0 ? -errno : -ENOMEM;
		perf_writer_free(w);
		return r;
	}
	if (level > 0) {
		w->cs = ZSTD_createCStream();
		w->zin = malloc(ZIN_MAX);
		if (!w->cs || !w->zin || ZSTD_isError(ZSTD_initCStream(w->cs, level))) {
			perf_writer_free(w);
			return -ENOMEM;
		}
	}
	if ((r = out_put(w, &h, sizeof(h))) < 0) {
		perf_writer_free(w);
		return r;
	}
	*ret = w;
	return 0;
}

void perf_writer_set_limit(struct perf_writer *w, uint64_t bytes)
{
	w->limit = bytes;
}

static int zin_flush(struct perf_writer *w);

int perf_writer_open_pipe(int fd, struct perf_writer **ret)
{
	struct perf_writer *w = calloc(1, sizeof(*w));
	struct perf_pipe_file_header h = { .magic = PERF_MAGIC2, .size = sizeof(h) };
	int r;

	if (!w)
		return -ENOMEM;
	w->fd = -1;
	w->dfd = -1;
	w->pipe = true;
	if (!(w->buf = malloc(OUT_BUF))) {
		perf_writer_free(w);
		return -ENOMEM;
	}
	w->fd = fd;
	if ((r = out_put(w, &h, sizeof(h))) < 0) {
		perf_writer_free(w);
		return r;
	}
	*ret = w;
	return 0;
}

void perf_writer_tap(struct perf_writer *w, void (*fn)(void *ud, const struct perf_event_header *rec), void *ud)
{
	w->tap = fn;
	w->tap_ud = ud;
}

int perf_writer_flush(struct perf_writer *w)
{
	int r = w->cs ? zin_flush(w) : 0;

	if (r < 0 || w->pipe)
		return r < 0 ? r : out_flush(w);
	if (w->blen == w->shown)
		return 0;
	if (w->limit && w->flushed + w->blen > w->limit)
		return -EFBIG;
	/* The partial block's new bytes through the buffered fd (those before w->shown are in the
	 * file already), kept: the block goes out whole (O_DIRECT) later. */
	if ((r = out_pwrite(w->fd, w->buf + w->shown, w->blen - w->shown, w->flushed + w->shown)) == 0)
		w->shown = w->blen;
	return r;
}

int perf_writer_raw(struct perf_writer *w, const void *data, size_t len)
{
	int r = w->cs ? zin_flush(w) : 0;

	return r < 0 ? r : out_put(w, data, len);
}

static int zrec_emit(struct perf_writer *w, size_t zlen)
{
	/* Like perf record: not padded to 8 (zero padding would feed the zstd stream). */
	struct perf_event_header h = { .type = PERF_REC_COMPRESSED, .size = (uint16_t)(sizeof(h) + zlen) };
	int r = out_put(w, &h, sizeof(h));

	return r < 0 ? r : out_put(w, w->zrec, zlen);
}

/* Compresses the pending records into COMPRESSED records of at most 64 KiB each. */
static int zin_flush(struct perf_writer *w)
{
	ZSTD_inBuffer in = { w->zin, w->zin_len, 0 };
	size_t room = ZREC_MAX - sizeof(struct perf_event_header) - 8;
	size_t left;

	if (!w->zin_len)
		return 0;
	do {
		ZSTD_outBuffer out = { w->zrec, room, 0 };
		int r;

		left = ZSTD_compressStream2(w->cs, &out, &in, ZSTD_e_flush);
		if (ZSTD_isError(left))
			return -EIO;
		if (out.pos && (r = zrec_emit(w, out.pos)) < 0)
			return r;
	} while (left != 0 || in.pos < in.size);
	w->zin_len = 0;
	return 0;
}

int perf_writer_record(struct perf_writer *w, const void *rec)
{
	const struct perf_event_header *h = rec;
	int r;

	if (w->tap)
		w->tap(w->tap_ud, h);
	w->in_bytes += h->size;
	if (!w->cs || h->type >= PERF_REC_USER_START) {
		if (w->cs && (r = zin_flush(w)) < 0)
			return r;
		return out_put(w, rec, h->size);
	}
	if (w->zin_len + h->size > ZIN_MAX && (r = zin_flush(w)) < 0)
		return r;
	memcpy(w->zin + w->zin_len, rec, h->size);
	w->zin_len += h->size;
	return 0;
}

static int cmp_feat(const void *a, const void *b)
{
	const struct perf_writer_feature *x = a, *y = b;

	return (x->bit > y->bit) - (x->bit < y->bit);
}

static int write_features(struct perf_writer *w, struct perf_writer_feature *f, size_t n,
			  struct perf_file_header *h)
{
	uint64_t body = w->pos + n * sizeof(struct perf_file_section);
	int r = 0;

	qsort(f, n, sizeof(*f), cmp_feat);
	for (size_t i = 0; i < n && r >= 0; i++) {
		struct perf_file_section s = { body, f[i].len };

		h->features[f[i].bit / 64] |= 1ull << (f[i].bit % 64);
		body += f[i].len;
		r = out_put(w, &s, sizeof(s));
	}
	for (size_t i = 0; i < n && r >= 0; i++)
		r = out_put(w, f[i].data, f[i].len);
	return r;
}

static int write_attrs(struct perf_writer *w, const struct perf_attr_ids *a, size_t n,
		       struct perf_file_header *h)
{
	_cleanup_free_ uint64_t *id_off = calloc(n ? n : 1, sizeof(*id_off));
	uint64_t zero = 0;
	int r = 0;

	if (!id_off)
		return -ENOMEM;
	if (w->pos % 8)
		r = out_put(w, &zero, 8 - w->pos % 8);
	for (size_t i = 0; i < n && r >= 0; i++) {
		id_off[i] = w->pos;
		r = out_put(w, a[i].ids, a[i].n_ids * 8);
	}
	h->attrs.offset = w->pos;
	h->attrs.size = n * PERF_FILE_ATTR_SIZE;
	for (size_t i = 0; i < n && r >= 0; i++) {
		struct perf_event_attr at = a[i].attr;
		struct perf_file_section ids = { id_off[i], a[i].n_ids * 8 };

		at.size = PERF_ATTR_SIZE;
		r = out_put(w, &at, sizeof(at));
		if (r >= 0)
			r = out_put(w, &ids, sizeof(ids));
	}
	return r;
}

/* The header's sections after the data written so far, then the header itself at offset 0;
 * HEADER_COMPRESSED {version 0, type 1 = zstd, level, ratio, mmap_len} when compressing. */
static int finish_file(struct perf_writer *w, const struct perf_attr_ids *attrs, size_t n_attrs,
		       const struct perf_writer_feature *feats, size_t n_feats)
{
	_cleanup_free_ struct perf_writer_feature *f = calloc(n_feats + 1, sizeof(*f));
	struct perf_file_header h = { .magic = PERF_MAGIC2, .size = sizeof(h),
				      .attr_size = PERF_FILE_ATTR_SIZE };
	uint32_t comp[5] = { 0, 1, (uint32_t)w->level, 0, PERF_COMP_MMAP_LEN };
	size_t n = 0;
	int r;

	if (!f)
		return -ENOMEM;
	h.data.offset = sizeof(h);
	h.data.size = w->pos - sizeof(h);
	/* An empty section is left out: perf 6.1 stops reading the features at one it cannot
	 * process, and no feature it reads is empty (a host feature perf has not written yet). */
	for (size_t i = 0; i < n_feats; i++)
		if (feats[i].bit != PERF_FEAT_COMPRESSED && feats[i].bit < PERF_FEAT_BITS && feats[i].len)
			f[n++] = feats[i];
	if (w->level > 0) {
		comp[3] = h.data.size ? (uint32_t)(w->in_bytes / h.data.size) : 0;
		f[n++] = (struct perf_writer_feature){ PERF_FEAT_COMPRESSED, comp, sizeof(comp) };
	}
	if ((r = write_features(w, f, n, &h)) < 0 || (r = write_attrs(w, attrs, n_attrs, &h)) < 0 ||
	    (r = out_flush(w)) < 0)
		return r;
	if (pwrite(w->fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h))
		return -EIO;
	return 0;
}

int perf_writer_finish(struct perf_writer *w, const struct perf_attr_ids *attrs, size_t n_attrs,
		       const struct perf_writer_feature *feats, size_t n_feats)
{
	int r;

	if (w->cs && (r = zin_flush(w)) < 0)
		return r;
	if (w->pipe) { /* the stream just ends: perf has had the attrs and tracing data first */
		r = out_flush(w);
		w->finished = r == 0;
		return r;
	}
	r = finish_file(w, attrs, n_attrs, feats, n_feats);
	w->finished = r == 0;
	return r;
}

int perf_writer_snapshot(struct perf_writer *w, const char *path, const struct perf_attr_ids *attrs,
			 size_t n_attrs, const struct perf_writer_feature *feats, size_t n_feats)
{
	struct perf_writer s = { .fd = -1, .dfd = -1, .level = w->level, .in_bytes = w->in_bytes };
	_cleanup_close_ int in = -1;
	int r;

	if (w->pipe || !w->path)
		return -EOPNOTSUPP;
	/* The zstd stream flushed: what is written so far decompresses by itself, and the stream
	 * goes on from there (a flush ends a block, not the frame). */
	if (w->cs && (r = zin_flush(w)) < 0)
		return r;
	s.flushed = w->flushed, s.pos = w->pos, s.blen = w->blen;
	in = util_reopen(w->fd, O_RDONLY | O_CLOEXEC);
	s.fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	s.buf = malloc(OUT_BUF);
	r = in < 0 || s.fd < 0 ? -errno : !s.buf ? -ENOMEM : 0;
	if (r == 0)
		r = util_copy_range(in, s.fd, 0, w->flushed);
	if (r == 0) {
		memcpy(s.buf, w->buf, w->blen);
		r = finish_file(&s, attrs, n_attrs, feats, n_feats);
	}
	if (s.fd >= 0 && close(s.fd) < 0 && r == 0)
		r = -errno;
	free(s.buf);
	if (r < 0)
		unlink(path);
	return r;
}

void perf_writer_free(struct perf_writer *w)
{
	if (!w)
		return;
	if (w->dfd >= 0)
		close(w->dfd);
	if (w->fd >= 0 && !w->pipe) {
		close(w->fd);
		if (!w->finished && w->path)
			unlink(w->path);
	}
	ZSTD_freeCStream(w->cs);
	free(w->zin);
	free(w->buf);
	free(w->path);
	free(w);
}
