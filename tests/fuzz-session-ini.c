// SPDX-License-Identifier: GPL-2.0-only
/* Fuzz target: session.ini as its readers take it. The input is a session dir's session.ini
 * (the guest's release and arch strings land there, and a user may edit it); the dir also
 * holds the ring layout of the host capture in tests/fixtures/ring-overrun. Readers: the
 * merge's session loading (merge_guest_load: ncpus, page_size, session_id, pids, window,
 * host_data, missing_cpus) and stop's session_ini_get / session_ini_set. Property: after
 * session_ini_set(state, merged), session_ini_get(state) reads "merged". */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector.h"
#include "log.h"
#include "merge.h"
#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char header_page[] =
	"\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n"
	"\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n"
	"\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n"
	"\tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;\n";
static const char header_event[] =
	"# compressed entry header\n\ttype_len    :    5 bits\n\ttime_delta  :   27 bits\n"
	"\tarray       :   32 bits\n\n\tpadding     : type == 29\n\ttime_extend : type == 30\n"
	"\ttime_stamp  : type == 31\n\tdata max type_len  == 28\n";

static char dir[] = "/tmp/vt-fuzz-session-XXXXXX";

static void put(const char *rel, const void *p, size_t len)
{
	char path[sizeof(dir) + 64];

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	if (util_write_file(path, p, len, 0600) < 0)
		abort();
}

static void cleanup(void)
{
	static const char *const files[] = { "guest/events/header_page", "guest/events/header_event",
					     "session.ini", "guest/events", "guest", "" };
	char path[sizeof(dir) + 64];

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
		if (unlink(path) < 0)
			rmdir(path);
	}
}

static void setup_dir(void)
{
	char path[sizeof(dir) + 64];

	if (!mkdtemp(dir))
		abort();
	atexit(cleanup);
	snprintf(path, sizeof(path), "%s/guest/events", dir);
	if (util_mkdir_p(path, 0700) < 0)
		abort();
	put("guest/events/header_page", header_page, sizeof(header_page) - 1);
	put("guest/events/header_event", header_event, sizeof(header_event) - 1);
	log_level = -1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const keys[] = { "output", "vm", "state", "missing_cpus", "qemu_pid", "host_data" };
	static bool ready;
	struct merge_guest g;
	char why[256], buf[4096];

	if (!ready) {
		setup_dir();
		ready = true;
	}
	put("session.ini", data, size);
	memset(&g, 0, sizeof(g));
	if (merge_guest_load(&g, dir, why, sizeof(why)) == 0 && (g.ncpus == 0 || g.ncpus > MERGE_MAX_CPUS))
		abort();
	merge_guest_free(&g);
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		(void)session_ini_get(dir, keys[i], buf, sizeof(buf));
	if (session_ini_set(dir, "state", "merged") == 0 &&
	    (session_ini_get(dir, "state", buf, sizeof(buf)) < 0 || strcmp(buf, "merged")))
		abort();
	return 0;
}
