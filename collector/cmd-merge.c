// SPDX-License-Identifier: GPL-2.0-only
/* trace-collector merge SESSION_DIR [--guest DIR]... [--host-data FILE] -o OUT [-z | --no-compress] [--follow]
 * [--trust-guest-binaries]. --guest adds another VM's session (its guest, beside SESSION_DIR's;
 * SESSION_DIR's host recording covers them all). --follow merges a session while it traces, told
 * by the daemon on stdin how far host.data is complete and when the session is over
 * (collector/merge/merge.c; the daemon runs it with start --live-merge). The output is
 * zstd-compressed as perf record -z does it unless --no-compress (or start's): common/perf_writer.c. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>

#include "collector.h"
#include "log.h"
#include "merge.h"
#include "session.h"
#include "util.h"

static int merge_cmd_run(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "host-data", required_argument, NULL, 'H' },
		{ "output", required_argument, NULL, 'o' },
		{ "zstd", no_argument, NULL, 'z' },
		{ "compress", no_argument, NULL, 'z' },
		{ "no-compress", no_argument, NULL, 'Z' },
		{ "follow", no_argument, NULL, 'F' },
		{ "trust-guest-binaries", no_argument, NULL, 'T' },
		{ "guest", required_argument, NULL, 'G' },
		{ "guest-as-host", no_argument, NULL, 'A' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct merge_options o = { 0 };
	const char *guests[MERGE_MAX_GUESTS];
	size_t n_guests = 0;
	int c, r, compress = -1;

	optind = 1;
	while ((c = getopt_long(argc, argv, "H:o:zh", longopts, NULL)) != -1) {
		switch (c) {
		case 'H': o.host_data = optarg; break;
		case 'o': o.output = optarg; break;
		case 'z': compress = 1; break;
		case 'Z': compress = 0; break;
		case 'F': o.follow = true, o.follow_fd = 0; break;
		case 'T': o.trust_binaries = true; break;
		case 'A': o.guest_as_host = true; break;
		case 'G':
			if (n_guests == MERGE_MAX_GUESTS - 1) {
				log_error("--guest %s: at most %u VMs go in one merge (SESSION_DIR's and %u --guest)", optarg,
					  MERGE_MAX_GUESTS, MERGE_MAX_GUESTS - 1);
				return 2;
			}
			guests[n_guests++] = optarg;
			break;
		case 'h': cmd_usage(&cmd_merge, 0); return 0;
		default: cmd_bad_option(&cmd_merge); return 2;
		}
	}
	if (!o.output && optind == argc - 2)
		o.output = argv[--argc]; /* merge SESSION_DIR OUT */
	if (optind != argc - 1 || !o.output) {
		log_error("merge needs one SESSION_DIR and -o OUT (see trace-collector merge --help)");
		return 2;
	}
	/* the daemon's child: named for perf report, perf sched and the stall report, which would
	 * otherwise show the file it ran ("trace-collector", or "exe" for /proc/self/exe) */
	if (o.guest_as_host && (n_guests || o.follow || o.host_data)) {
		log_error("--guest-as-host writes one VM's guest alone: not with %s (merge that VM's own session dir)",
			  n_guests ? "--guest" : o.follow ? "--follow" : "--host-data");
		return 2;
	}
	if (o.follow)
		prctl(PR_SET_NAME, MERGE_FOLLOW_COMM);
	o.session_dir = argv[optind];
	o.guest_dirs = guests;
	o.n_guest_dirs = n_guests;
	/* -o - (the live view): pipe-mode perf.data stays plain, a reader takes it as it comes */
	o.zstd_level = o.follow && !strcmp(o.output, "-") ? 0 : merge_zstd_level(o.session_dir, compress);
	r = merge_run(&o);
	return r < 0 ? 1 : r > 0 ? 3 : 0; /* 3: written, clock unaligned */
}

const struct cmd_entry cmd_merge = {
	.name = "merge",
	.summary = "merge a session dir into one perf.data (offline, recovery)",
	.usage = "SESSION_DIR [--guest DIR]... [--host-data FILE] -o OUT [-z | --no-compress] [--follow] [--trust-guest-binaries]\n"
		 "       SESSION_DIR --guest-as-host -o OUT [-z | --no-compress]\n"
		 "--guest DIR: another VM's session dir; its guest joins the file as its own perf guest\n"
		 "machine (its QEMU pid), beside SESSION_DIR's (whose host recording covers all; at most\n"
		 "16 VMs). Its events are named guest2_*, guest3_*... in the order given.\n"
		 "OUT is zstd-compressed as 'perf record -z' writes it (perf reads it as it is) unless\n"
		 "--no-compress, or start's --no-compress for this session (-z: compressed anyway).\n"
		 "Guest binaries fetched at stop go into OUT/buildids (the summary prints the perf\n"
		 "command that reads it); --trust-guest-binaries (or start's) places them in\n"
		 "$HOME/.debug instead. A build-id the host holds is never placed.\n"
		 "--guest-as-host: the guest's events alone, as a host's: under their own names\n"
		 "(sched:sched_switch), its vCPUs as the file's CPUs, no guest machine, so that perf sched\n"
		 "(timehist, latency, map) and perf timechart read the guest's scheduler; no host\n"
		 "recording, guest perf samples or exit samples. One VM: with several, merge each one's dir.",
	.run = merge_cmd_run,
};

int merge_zstd_level(const char *session_dir, int compress)
{
	char v[32];
	uint64_t level;

	if (compress >= 0)
		return compress ? MERGE_ZSTD_LEVEL : 0;
	if (session_ini_get(session_dir, "opt_compress", v, sizeof(v)) < 0 || util_parse_u64(v, 19, &level) < 0)
		return MERGE_ZSTD_LEVEL;
	return (int)level;
}

/* stop's entry point (collector.h): the merge prints its summary on stdout. */
int merge_session(const char *session_dir, const char *out, int compress, uint64_t max_bytes, FILE *summary)
{
	struct merge_options o = { .session_dir = session_dir, .output = out,
				   .zstd_level = merge_zstd_level(session_dir, compress), .max_bytes = max_bytes };

	fflush(summary);
	return merge_run(&o);
}
