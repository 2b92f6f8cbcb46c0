// SPDX-License-Identifier: GPL-2.0-only
/* Replay main for fuzz targets when not linked with libFuzzer: runs every file given. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		_cleanup_free_ char *buf = NULL;
		size_t len = 0;
		int r = util_read_file(argv[i], 64u << 20, &buf, &len);

		if (r < 0) {
			fprintf(stderr, "%s: cannot read: %d\n", argv[i], r);
			return 1;
		}
		LLVMFuzzerTestOneInput((const uint8_t *)buf, len);
		printf("replayed %s (%zu bytes)\n", argv[i], len);
	}
	return 0;
}
