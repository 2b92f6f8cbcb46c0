// SPDX-License-Identifier: GPL-2.0-only
/* Fuzz target: session.ini as its readers take it. The input is a session dir's session.ini
 * (the guest's release and arch strings land there, and a user may edit it); the dir also
 * holds the ring layout of the host capture in tests/fixtures/ring-overrun. Readers: the
 * merge's session loading (merge_guest_load: ncpus, page_size, session_id, pids, window,
 * host_data, missing_cpus, the migrations' chain) and stop's session_ini_get / session_ini_set. Property: after
 * session_ini_set(state, merged), session_ini_get(state) reads "merged". */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz-session.h"
#include "merge.h"
#include "session.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const keys[] = { "output", "vm", "state", "missing_cpus", "qemu_pid", "host_data" };
	static bool ready;
	struct merge_guest g;
	char why[256], buf[4096];

	if (!ready) {
		fuzz_session_setup("guest/events");
		ready = true;
	}
	fuzz_put("session.ini", data, size);
	memset(&g, 0, sizeof(g));
	if (merge_guest_load(&g, fuzz_dir, why, sizeof(why)) == 0 && (g.ncpus == 0 || g.ncpus > MERGE_MAX_CPUS))
		abort();
	/* migrations: at most MERGE_MAX_MIGRATIONS, each from the QEMU before it to another one */
	if (g.nmig > MERGE_MAX_MIGRATIONS)
		abort();
	for (uint32_t i = 0; i < g.nmig; i++)
		if (g.mig[i].from != (i ? g.mig[i - 1].to : g.machine_pid) || g.mig[i].to == g.mig[i].from || !g.mig[i].to)
			abort();
	merge_guest_free(&g);
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		(void)session_ini_get(fuzz_dir, keys[i], buf, sizeof(buf));
	if (session_ini_set(fuzz_dir, "state", "merged") == 0 &&
	    (session_ini_get(fuzz_dir, "state", buf, sizeof(buf)) < 0 || strcmp(buf, "merged")))
		abort();
	return 0;
}
