// SPDX-License-Identifier: GPL-2.0-only
/* The output's compression cost: rewrites a perf.data (the merge's own output, read with
 * common/perf_reader) through common/perf_writer at zstd LEVEL, the way the merge writes it,
 * and prints the CPU seconds of the rewrite, the MB/s of raw records per CPU second, and the
 * sizes. Level 0 is the plain rewrite: the difference is what compression costs.
 *   zstd-level IN.data LEVEL OUT.data
 * bench/zstd-level.sh runs it at several levels; it also makes compressed fuzz seeds. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "perf_reader.h"
#include "perf_writer.h"

static double cpu_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Every feature of r but COMPRESSED (the writer adds its own) into f; n back. */
static size_t zlevel_feats(struct perf_reader *r, struct perf_writer_feature *f, uint8_t **bufs)
{
	size_t n = 0;

	for (unsigned bit = 0; bit < PERF_FEAT_BITS; bit++) {
		size_t len;

		if (bit == PERF_FEAT_COMPRESSED || !perf_reader_has_feature(r, bit) ||
		    perf_reader_feature(r, bit, &bufs[n], &len) < 0)
			continue;
		f[n] = (struct perf_writer_feature){ bit, bufs[n], len };
		n++;
	}
	return n;
}

static int zlevel_copy(struct perf_reader *r, struct perf_writer *w, uint64_t *ret_bytes)
{
	const struct perf_event_header *e;
	uint64_t bytes = 0;
	int q;

	while ((q = perf_reader_next(r, &e)) == 1) {
		bytes += e->size;
		if ((q = perf_writer_record(w, e)) < 0)
			return q;
	}
	*ret_bytes = bytes;
	return q;
}

int main(int argc, char **argv)
{
	struct perf_writer_feature f[PERF_FEAT_BITS];
	uint8_t *bufs[PERF_FEAT_BITS] = { 0 };
	struct perf_attr_ids *attrs;
	struct perf_reader *r;
	struct perf_writer *w;
	struct stat in, out;
	char err[256];
	uint64_t bytes = 0;
	size_t n, na;
	double t0;
	int q;

	if (argc != 4) {
		fprintf(stderr, "usage: zstd-level IN.data LEVEL OUT.data\n");
		return 2;
	}
	if (perf_reader_open(argv[1], &r, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s: %s\n", argv[1], err);
		return 1;
	}
	if ((q = perf_writer_open(argv[3], atoi(argv[2]), &w)) < 0) {
		fprintf(stderr, "%s: %s\n", argv[3], strerror(-q));
		return 1;
	}
	n = zlevel_feats(r, f, bufs);
	na = perf_reader_n_attrs(r);
	attrs = calloc(na ? na : 1, sizeof(*attrs));
	for (size_t i = 0; attrs && i < na; i++)
		attrs[i] = *perf_reader_attr(r, i);
	t0 = cpu_s();
	q = attrs ? zlevel_copy(r, w, &bytes) : -ENOMEM;
	if (q == 0)
		q = perf_writer_finish(w, attrs, na, f, n);
	t0 = cpu_s() - t0;
	if (q < 0) {
		fprintf(stderr, "%s: %s\n", argv[1], q == -EBADMSG ? perf_reader_error(r) : strerror(-q));
		return 1;
	}
	perf_writer_free(w);
	stat(argv[1], &in);
	stat(argv[3], &out);
	printf("level=%s records_mb=%.1f in_mb=%.1f out_mb=%.2f ratio=%.1f cpu_s=%.3f raw_mb_per_cpu_s=%.0f\n", argv[2],
	       (double)bytes / 1e6, (double)in.st_size / 1e6, (double)out.st_size / 1e6,
	       (double)in.st_size / (double)out.st_size, t0, (double)bytes / 1e6 / t0);
	for (size_t i = 0; i < n; i++)
		free(bufs[i]);
	free(attrs);
	perf_reader_free(r);
	return 0;
}
