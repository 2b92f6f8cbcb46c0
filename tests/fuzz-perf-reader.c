// SPDX-License-Identifier: GPL-2.0-only
/* Fuzz target: perf.data files (host recordings) through the reader: header, attrs, ids,
 * feature sections, every record, PERF_RECORD_COMPRESSED included; and the same bytes followed
 * as a file being written (merge --follow). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "perf_reader.h"
#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Follow mode (merge --follow): the same bytes as a file perf is still writing, its end raised
 * in steps the input chooses, then finished. */
static void fuzz_follow(const uint8_t *data, size_t size)
{
	char path[64], err[256];
	const struct perf_event_header *e;
	struct perf_reader *r;
	int fd = memfd_create("fuzz-perf-follow", MFD_CLOEXEC);
	uint64_t end = 104;

	if (fd < 0 || size < 104)
		goto out;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	/* As perf leaves it while recording: data size 0 (header bytes 48..55), no feature table. */
	if (util_write_full(fd, data, size) == 0 && pwrite(fd, "\0\0\0\0\0\0\0\0", 8, 48) == 8 &&
	    perf_reader_open_follow(path, &r, err, sizeof(err)) == 0) {
		for (unsigned i = 0; i < 64 && end < size; i++) {
			end += 1 + data[i % size] * 37u;
			perf_reader_set_end(r, end < size ? end : size);
			while (perf_reader_next(r, &e) == 1)
				;
		}
		/* perf's final header comes back: the data ends where it says */
		if (pwrite(fd, data, 104, 0) == 104 && perf_reader_finish(r, err, sizeof(err)) == 0)
			while (perf_reader_next(r, &e) == 1)
				;
		perf_reader_free(r);
	}
out:
	if (fd >= 0)
		close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int fd = memfd_create("fuzz-perf", MFD_CLOEXEC);
	struct perf_reader *r;
	const struct perf_event_header *e;
	char err[256];

	if (fd < 0)
		return 0;
	if (util_write_full(fd, data, size) < 0 || perf_reader_open_fd(fd, &r, err, sizeof(err)) < 0) {
		close(fd);
		return 0;
	}
	for (unsigned bit = 0; bit < PERF_FEAT_BITS; bit++) {
		uint8_t *b;
		size_t len;

		if (perf_reader_feature(r, bit, &b, &len) == 0)
			free(b);
	}
	while (perf_reader_next(r, &e) == 1)
		;
	perf_reader_free(r); /* closes fd */
	fuzz_follow(data, size);
	return 0;
}
