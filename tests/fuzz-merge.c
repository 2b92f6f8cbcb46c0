// SPDX-License-Identifier: GPL-2.0-only
/* Fuzz target: the merge's own reading of a guest session (collector/merge*.c): the begin
 * marker search, the page walk, event_check and __data_loc bounds, the comm/pid scan, format
 * loading and the perf.data it writes. The session dir is rebuilt for each input:
 * session.ini (1 CPU, session 1), header_page/header_event of the host capture in
 * tests/fixtures/ring-overrun (compiled in), then from the input:
 *   SCHED_SWITCH_FORMAT \0 SPOOL_BYTES
 * as guest/events/sched/sched_switch/format and cpu0.spool. The output goes to a scratch file. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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
static const char session_ini[] = "vm=fuzz\nsession_id=1\nncpus=1\npage_size=4096\nqemu_pid=4242\n"
				  "guest_clock=mono\nclock_method=none\nstate=stopped\n";

static char dir[] = "/tmp/vt-fuzz-merge-XXXXXX";

static void put(const char *rel, const void *p, size_t len)
{
	char path[sizeof(dir) + 64];

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	if (util_write_file(path, p, len, 0600) < 0)
		abort();
}

static void cleanup(void)
{
	static const char *const files[] = { "guest/events/sched/sched_switch/format", "guest/events/header_page",
					     "guest/events/header_event", "session.ini", "cpu0.spool", "out.data",
					     "merge.ini", "clock.ini", "guest/events/sched/sched_switch",
					     "guest/events/sched", "guest/events", "guest", "" };
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
	snprintf(path, sizeof(path), "%s/guest/events/sched/sched_switch", dir);
	if (util_mkdir_p(path, 0700) < 0)
		abort();
	put("guest/events/header_page", header_page, sizeof(header_page) - 1);
	put("guest/events/header_event", header_event, sizeof(header_event) - 1);
	put("session.ini", session_ini, sizeof(session_ini) - 1);
	log_level = -1; /* the merge's complaints are expected here */
	if (!freopen("/dev/null", "w", stdout)) /* and its summary */
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool ready;
	const uint8_t *nul = memchr(data, '\0', size);
	char out[sizeof(dir) + 16];
	struct merge_options o = { .session_dir = dir, .output = out };

	if (!ready) {
		setup_dir();
		ready = true;
	}
	if (!nul)
		return 0;
	put("guest/events/sched/sched_switch/format", data, (size_t)(nul - data));
	put("cpu0.spool", nul + 1, size - (size_t)(nul + 1 - data));
	snprintf(out, sizeof(out), "%s/out.data", dir);
	(void)merge_run(&o);
	return 0;
}
