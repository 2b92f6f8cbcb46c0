// SPDX-License-Identifier: GPL-2.0-only
/* Subcommands whose real work is not in this build yet: each says so and fails. */
#include <string.h>

#include "collector.h"

static int stub_run(const struct cmd_entry *cmd, int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			cmd_usage(cmd, 0);
			return 0;
		}
	}
	return cmd_not_implemented(cmd);
}

#define STUB(var, nm, sum, use)                                                   \
	static int var##_run(int argc, char **argv) { return stub_run(&var, argc, argv); } \
	const struct cmd_entry var = { .name = nm, .summary = sum, .usage = use, .run = var##_run }

STUB(cmd_setup, "setup", "create the per-VM FIFOs/sockets, print QEMU args or libvirt XML",
     "--name VM --cpus N [--dir D] [--transport pipe|socket] [--format qemu|libvirt]");
STUB(cmd_merge, "merge", "merge a session dir into one perf.data (offline, recovery)",
     "SESSION_DIR [--host-data FILE] -o OUT [-z]");
