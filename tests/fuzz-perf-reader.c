// SPDX-License-Identifier: GPL-2.0-only
/* Fuzz target: perf.data files (host recordings) through the reader: header, attrs, ids,
 * feature sections, every record, PERF_RECORD_COMPRESSED included. */
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "perf_reader.h"
#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

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
	return 0;
}
