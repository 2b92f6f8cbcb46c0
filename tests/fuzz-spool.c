// SPDX-License-Identifier: GPL-2.0-only
/* Fuzz target: a data port's bytes through the spool (read into a spool file, then the
 * scan for this session's markers and the page heads), once as a trace-path stream and once
 * as a perf-path stream (record heads). First 8 bytes: session id. */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ports.h"
#include "spool.h"

/* The spool's owner: errors and progress dropped, no flight-recorder peers. */
static void drop_error(void *userdata, unsigned k, int err) {}
static void drop_progress(void *userdata, unsigned k) {}
static const struct spool_ops drop_ops = { .error = drop_error, .progress = drop_progress };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fuzz_spool(const uint8_t *data, size_t size, bool perf)
{
	char dir[] = "/tmp/vt-fuzz-spool.XXXXXX", path[64];
	struct port port = { .rfd = -1, .wfd = -1 };
	struct spool_stats st;
	struct spool *s = NULL;
	uint64_t sid = 0;
	int p[2];

	if (!mkdtemp(dir))
		return;
	memcpy(&sid, data, 8);
	if (pipe2(p, O_NONBLOCK) == 0) {
		fcntl(p[1], F_SETPIPE_SZ, 1 << 20);
		port.rfd = p[0];
		if (spool_new(&drop_ops, 0, perf, &port, dir, sid, 4096, &s) == 0) {
			size_t off = 8;

			/* Feed in pieces so partial pages and markers split across reads occur. */
			while (off < size) {
				ssize_t w = write(p[1], data + off, size - off > 70000 ? 70000 : size - off);

				if (w <= 0)
					break;
				off += (size_t)w;
				spool_poll(s);
			}
			close(p[1]);
			p[1] = -1;
			spool_poll(s);
			spool_stats(s, &st);
			if (st.pages > st.spooled / 4096 + 1)
				abort(); /* the scan counted pages that are not there */
			if (st.records > st.spooled / 8 || st.data_bytes > st.spooled || st.samples > st.records)
				abort(); /* records that are not there */
			spool_free(s);
		}
		close(p[0]);
		if (p[1] >= 0)
			close(p[1]);
	}
	snprintf(path, sizeof(path), "%s/%scpu0.spool", dir, perf ? "perf-" : "");
	unlink(path);
	rmdir(dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 8)
		return 0;
	fuzz_spool(data, size, false);
	fuzz_spool(data, size, true);
	return 0;
}
