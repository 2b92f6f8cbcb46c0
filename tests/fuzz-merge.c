// SPDX-License-Identifier: GPL-2.0-only
/* Fuzz target: the merge's own reading of a guest session (collector/merge*.c): the begin
 * marker search, the page walk, event_check and __data_loc bounds, the comm/pid scan, format
 * loading and the perf.data it writes. The session dir is rebuilt for each input:
 * session.ini (1 CPU, session 1), header_page/header_event of the host capture in
 * tests/fixtures/ring-overrun (compiled in), then from the input:
 *   SCHED_SWITCH_FORMAT \0 SPOOL_BYTES
 * as guest/events/sched/sched_switch/format and cpu0.spool. The output goes to a scratch file.
 * Each input is merged twice: alone, and as two VMs (merge --guest g2, a second session dir of
 * another QEMU pid whose guest/ and cpu0.spool are the same files). Each VM migrated once. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz-session.h"
#include "merge.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Each migrated once (the merge writes a virtio_trace:migration sample of each VM, at the
 * switch: no clock step without a clock) */
static const char session_ini[] = "vm=fuzz\nsession_id=1\nncpus=1\npage_size=4096\nqemu_pid=4242\n"
				  "guest_clock=mono\nclock_method=none\nstate=stopped\nmigrations=1\n"
				  "migration_0=1000000000 4242 4250\n";

static const char session_ini_g2[] = "vm=fuzz2\nsession_id=1\nncpus=1\npage_size=4096\nqemu_pid=4243\n"
				     "guest_clock=mono\nclock_method=none\nstate=stopped\nmigrations=1\n"
				     "migration_0=1000000000 4243 4251\n";

static void setup_dir(void)
{
	char path[sizeof(fuzz_dir) + 32];

	fuzz_session_setup("guest/events/sched/sched_switch");
	fuzz_put("session.ini", session_ini, sizeof(session_ini) - 1);
	snprintf(path, sizeof(path), "%s/g2", fuzz_dir);
	if (mkdir(path, 0700) < 0)
		abort();
	fuzz_put("g2/session.ini", session_ini_g2, sizeof(session_ini_g2) - 1);
	snprintf(path, sizeof(path), "%s/g2/guest", fuzz_dir);
	if (symlink("../guest", path) < 0)
		abort();
	snprintf(path, sizeof(path), "%s/g2/cpu0.spool", fuzz_dir);
	if (symlink("../cpu0.spool", path) < 0)
		abort();
	if (!freopen("/dev/null", "w", stdout)) /* the merge's summary */
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool ready;
	const uint8_t *nul = memchr(data, '\0', size);
	char out[sizeof(fuzz_dir) + 16], g2[sizeof(fuzz_dir) + 16];
	const char *guests[] = { g2 };
	struct merge_options o = { .session_dir = fuzz_dir, .output = out };

	if (!ready) {
		setup_dir();
		ready = true;
	}
	if (!nul)
		return 0;
	fuzz_put("guest/events/sched/sched_switch/format", data, (size_t)(nul - data));
	fuzz_put("cpu0.spool", nul + 1, size - (size_t)(nul + 1 - data));
	snprintf(out, sizeof(out), "%s/out.data", fuzz_dir);
	(void)merge_run(&o);
	snprintf(g2, sizeof(g2), "%s/g2", fuzz_dir);
	o.guest_dirs = guests;
	o.n_guest_dirs = 1;
	(void)merge_run(&o);
	return 0;
}
