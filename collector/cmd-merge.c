// SPDX-License-Identifier: GPL-2.0-only
/* trace-collector merge SESSION_DIR [--guest DIR]... [--host-data FILE] -o OUT [-z] [--follow] [--trust-guest-binaries].
 * --guest adds another VM's session (its guest, beside SESSION_DIR's; SESSION_DIR's host recording
 * covers them all). --follow merges a
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
		{ "guest", required_argument, NULL, 'G' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct merge_options o = { 0 };
	const char *guests[MERGE_MAX_GUESTS];
	size_t n_guests = 0;
	int c, r;

	optind = 1;
	while ((c = getopt_long(argc, argv, "H:o:zh", longopts, NULL)) != -1) {
		switch (c) {
		case 'H': o.host_data = optarg; break;
		case 'o': o.output = optarg; break;
		case 'z': o.zstd_level = 3; break;
		case 'F': o.follow = true, o.follow_fd = 0; break;
		case 'T': o.trust_binaries = true; break;
		case 'G':
			if (n_guests == MERGE_MAX_GUESTS - 1) {
				log_error("--guest %s: at most %u VMs go in one merge (SESSION_DIR's and %u --guest)", optarg,
					  MERGE_MAX_GUESTS, MERGE_MAX_GUESTS - 1);
				return 2;
			}
			guests[n_guests++] = optarg;
			break;
		case 'h': cmd_usage(&cmd_merge, 0); return 0;
		default: cmd_usage(&cmd_merge, 1); return 2;
		}
	}
	if (!o.output && optind == argc - 2)
		o.output = argv[--argc]; /* merge SESSION_DIR OUT */
	if (optind != argc - 1 || !o.output) {
		log_error("merge needs one SESSION_DIR and -o OUT (see trace-collector merge --help)");
		return 2;
	}
	o.session_dir = argv[optind];
	o.guest_dirs = guests;
	o.n_guest_dirs = n_guests;
	r = merge_run(&o);
	return r < 0 ? 1 : r > 0 ? 3 : 0; /* 3: written, clock unaligned */
}

const struct cmd_entry cmd_merge = {
	.name = "merge",
	.summary = "merge a session dir into one perf.data (offline, recovery)",
	.usage = "SESSION_DIR [--guest DIR]... [--host-data FILE] -o OUT [-z] [--follow] [--trust-guest-binaries]\n"
		 "--guest DIR: another VM's session dir; its guest joins the file as its own perf guest\n"
		 "machine (its QEMU pid), beside SESSION_DIR's (whose host recording covers all; at most\n"
		 "16 VMs). Its events are named guest2_*, guest3_*... in the order given.\n"
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
