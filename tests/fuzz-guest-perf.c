// SPDX-License-Identifier: GPL-2.0-only
/* Fuzz target: the merge's guest perf source (collector/merge/gperf.c) on a hostile
 * perf-cpu0.spool: the begin marker search, the record walk and resynchronisation, record
 * validation (sizes, types, strings, call chains, ids), conversion and the perf.data written.
 * The session dir is rebuilt for each input: session.ini (1 CPU, session 1, guest perf
 * cpu-clock,page-faults), the ring layout of tests/fixtures/ring-overrun, no ftrace spool. The
 * spool is the input, after a valid perf begin marker (ids 1 and 2) unless the input's first
 * byte is odd (then the input alone, so the search for the marker is fuzzed too). With bit 1 of
 * the first byte the merge follows the session (merge --follow, the live merge): the stream is
 * read as still being written, blocked at its end (perf flush markers are its horizon) until
 * the daemon's "end", a snapshot asked of it first (written at the end: everything so far). With bit 2 the daemon's flight recorder cut the stream halfway
 * (collector/link/spool-side.c, from the input's records): perf-cpu0.side holds the task records of
 * the first half, and the merge reads it, then the spool from the cut. With bit 3 the guest has
 * two CPUs and perf-cpu1.spool is the same stream for CPU 1: every record is tied with its twin,
 * so the order among equal times (the look ahead for a FORK, merge_gperf_rank) is fuzzed too;
 * with bit 2 as well, both streams are cut (perf-cpu1.side too), compacted together.
 * The input also goes, as it is, to the host build-id collector (gbinhost.c: MMAP/MMAP2 records
 * and the BUILD_ID feature). */
#include <errno.h>
#include <linux/perf_event.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz-session.h"
#include "gbin.h"
#include "marker.h"
#include "merge.h"
#include "spool-side.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define SESSION_INI(ncpus)                                                                         \
	"vm=fuzz\nsession_id=1\nncpus=" ncpus "\npage_size=4096\nqemu_pid=4242\n"                 \
	"guest_clock=mono\nclock_method=none\nstate=stopped\n"                                      \
	"guest_perf=cpu-clock,page-faults\nguest_perf_freq=1000\n"
static const char session_ini1[] = SESSION_INI("1"), session_ini2[] = SESSION_INI("2");

static void setup_dir(void)
{
	fuzz_session_setup("guest/events/ftrace/print");
	if (!freopen("/dev/null", "w", stdout)) /* the merge's summary */
		abort();
}

/* The flight recorder's tables fed like the daemon's scan feeds them (ncpus: the same stream
 * for each CPU), then cut halfway: the last CPU's first, then CPU 0's with the others as peers. */
static void fuzz_side(const uint8_t *spool, size_t n, size_t from, unsigned ncpus)
{
	struct spool_side *t[2] = { NULL, NULL };
	uint64_t records = 0, samples = 0, hole_end;
	size_t off = from;

	for (unsigned c = 0; c < ncpus; c++)
		if (spool_side_new(fuzz_dir, c, 1, &t[c]) < 0)
			abort();
	while (off + 8 <= n) {
		struct perf_event_header h;

		memcpy(&h, spool + off, sizeof(h));
		if (h.size < 8 || h.size % 8 || off + h.size > n)
			break;
		for (unsigned c = 0; c < ncpus; c++)
			if (spool_side_mark(t[c], off, records, samples, spool + off, h.size) < 0 ||
			    (spool_side_wants(h.type) && spool_side_add(t[c], off, spool + off, h.size) == -ENOMEM))
				abort();
		records++, samples += h.type == PERF_RECORD_SAMPLE;
		off += h.size;
	}
	if (ncpus == 2 && spool_side_cut(t[1], from + (off - from) / 2, from, 0, t, 1, &hole_end) < 0)
		abort();
	if (spool_side_cut(t[0], from + (off - from) / 2, from, 0, t + 1, ncpus - 1, &hole_end) < 0)
		abort();
	for (unsigned c = 0; c < ncpus; c++)
		spool_side_free(t[c]);
}

/* The same bytes as host.data's records and its BUILD_ID feature (collector/merge/gbinhost.c;
 * a --host-data file is the user's, still bounds-checked). */
static void fuzz_host_ids(const uint8_t *p, size_t n)
{
	static uint64_t rec[65536 / 8];
	struct gbin_host h = { 0 };
	uint8_t id[ELF_NOTES_BUILD_ID_MAX] = { 0 };

	for (size_t off = 0; off + 8 <= n;) {
		struct perf_event_header eh;

		memcpy(&eh, p + off, sizeof(eh));
		if (eh.size < 8 || eh.size > n - off)
			break;
		memcpy(rec, p + off, eh.size); /* aligned, as the reader hands them */
		merge_gbin_host_record(&h, (const struct perf_event_header *)rec);
		off += eh.size;
	}
	merge_gbin_host_feature(&h, p, n);
	merge_gbin_host_sort(&h);
	memcpy(id, p, MIN(n, sizeof(id)));
	(void)merge_gbin_host_has(&h, id, sizeof(id));
	merge_gbin_host_free(&h);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool ready;
	static uint8_t buf[4096 + (1u << 20)];
	char out[sizeof(fuzz_dir) + 16];
	struct merge_options o = { .session_dir = fuzz_dir, .output = out };
	struct vt_perf_marker pm = { .nr_ids = 2, .clockid = 1, .ids = { 1, 2 } };
	size_t n = 0;

	if (!ready) {
		setup_dir();
		ready = true;
	}
	if (size == 0 || size > sizeof(buf) - 4096)
		return 0;
	if (!(data[0] & 1)) {
		vt_marker_encode_perf(buf, 4096, VT_MARKER_PERF_BEGIN, 1, 0, &pm);
		n = 4096;
	}
	memcpy(buf + n, data + 1, size - 1);
	fuzz_put("perf-cpu0.spool", buf, n + size - 1);
	snprintf(out, sizeof(out), "%s/perf-cpu1.spool", fuzz_dir);
	unlink(out);
	if (data[0] & 8) {
		fuzz_put("session.ini", session_ini2, sizeof(session_ini2) - 1);
		if (n)
			vt_marker_encode_perf(buf, 4096, VT_MARKER_PERF_BEGIN, 1, 1, &pm);
		fuzz_put("perf-cpu1.spool", buf, n + size - 1);
		if (n)
			vt_marker_encode_perf(buf, 4096, VT_MARKER_PERF_BEGIN, 1, 0, &pm);
	} else {
		fuzz_put("session.ini", session_ini1, sizeof(session_ini1) - 1);
	}
	snprintf(out, sizeof(out), "%s/perf-cpu0.side", fuzz_dir);
	unlink(out);
	snprintf(out, sizeof(out), "%s/perf-cpu1.side", fuzz_dir);
	unlink(out);
	if (data[0] & 4)
		fuzz_side(buf, n + size - 1, n, data[0] & 8 ? 2 : 1);
	snprintf(out, sizeof(out), "%s/out.data", fuzz_dir);
	if (data[0] & 2) {
		char cmd[sizeof(fuzz_dir) + 64];
		int p[2], k;

		/* a snapshot asked of the follower ("snapshot T PATH"), then the end */
		k = snprintf(cmd, sizeof(cmd), "snapshot 18446744073709551615 %s/snap.data\nend\n", fuzz_dir);
		if (pipe(p) < 0 || write(p[1], cmd, (size_t)k) != k)
			abort();
		close(p[1]);
		o.follow = true;
		o.follow_fd = p[0];
		(void)merge_run(&o);
		close(p[0]);
		snprintf(cmd, sizeof(cmd), "%s/snap.data", fuzz_dir); /* a file, or a directory */
		nftw(cmd, fuzz_rm_one, 16, FTW_DEPTH | FTW_PHYS);
	} else {
		(void)merge_run(&o);
	}
	/* the daemon's scan for guest binaries (collector/merge/gbin.c), on the same spool */
	struct gbin_list l;

	if (merge_gbin_scan(fuzz_dir, &l) == 0)
		for (size_t i = 0; i < l.n; i++)
			if (l.v[i].len == 0 || l.v[i].len > ELF_NOTES_BUILD_ID_MAX || !merge_gbin_path_ok(l.v[i].path))
				abort();
	merge_gbin_list_free(&l);
	fuzz_host_ids(data + 1, size - 1);
	return 0;
}
