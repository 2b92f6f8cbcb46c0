// SPDX-License-Identifier: GPL-2.0-only
/* trace-collector merge SESSION_DIR [--host-data FILE] -o OUT [-z] [--follow] [--trust-guest-binaries]. --follow merges a
 * session while it traces, told by the daemon on stdin how far host.data is complete and when
 * the session is over (collector/merge/merge.c; the daemon runs it with start --live-merge). */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "collector.h"
#include "log.h"
#include "merge.h"

static int merge_cmd_run(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "host-data", required_argument, NULL, 'H' },
		{ "output", required_argument, NULL, 'o' },
		{ "zstd", no_argument, NULL, 'z' },
		{ "compress", no_argument, NULL, 'z' },
		{ "follow", no_argument, NULL, 'F' },
		{ "trust-guest-binaries", no_argument, NULL, 'T' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct merge_options o = { 0 };
	int c, r;

	optind = 1;
	while ((c = getopt_long(argc, argv, "H:o:zh", longopts, NULL)) != -1) {
		switch (c) {
		case 'H': o.host_data = optarg; break;
		case 'o': o.output = optarg; break;
		case 'z': o.zstd_level = 3; break;
		case 'F': o.follow = true, o.follow_fd = 0; break;
		case 'T': o.trust_binaries = true; break;
		case 'h': cmd_usage(&cmd_merge, 0); return 0;
		default: cmd_usage(&cmd_merge, 1); return 2;
		}
	}
	if (optind != argc - 1 || !o.output) {
		log_error("merge needs one SESSION_DIR and -o OUT (see trace-collector merge --help)");
		return 2;
	}
	o.session_dir = argv[optind];
	r = merge_run(&o);
	return r < 0 ? 1 : r > 0 ? 3 : 0; /* 3: written, clock unaligned */
}

const struct cmd_entry cmd_merge = {
	.name = "merge",
	.summary = "merge a session dir into one perf.data (offline, recovery)",
	.usage = "SESSION_DIR [--host-data FILE] -o OUT [-z] [--follow] [--trust-guest-binaries]\n"
		 "Guest binaries fetched at stop go into OUT/buildids (the summary prints the perf\n"
		 "command that reads it); --trust-guest-binaries (or start's) places them in\n"
		 "$HOME/.debug instead. A build-id the host holds is never placed.",
	.run = merge_cmd_run,
};

/* stop's entry point (collector.h): the merge prints its summary on stdout. */
int merge_session(const char *session_dir, const char *out, bool compress, uint64_t max_bytes, FILE *summary)
{
	struct merge_options o = { .session_dir = session_dir, .output = out, .zstd_level = compress ? 3 : 0,
				   .max_bytes = max_bytes };

	fflush(summary);
	return merge_run(&o);
}
