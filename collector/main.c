// SPDX-License-Identifier: GPL-2.0-only
/* trace-collector: host half of virtio-trace; subcommands dispatched by table. */
#include <stdio.h>
#include <string.h>

#include "collector.h"
#include "config.h"
#include "log.h"
#include "util.h"

static const struct cmd_entry *const commands[] = {
	&cmd_setup, &cmd_start, &cmd_status, &cmd_snapshot, &cmd_stop, &cmd_merge, &cmd_report,
};

static void usage(FILE *f)
{
	fprintf(f, "Usage: trace-collector [-v] COMMAND [OPTIONS]\n\n"
		   "Collects a KVM/QEMU guest's ftrace over virtio-serial and merges it with the\n"
		   "host's perf record into one perf.data.\n\nCommands:\n");
	for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
		fprintf(f, "  %-8s %s\n", commands[i]->name, commands[i]->summary);
	fprintf(f, "\nRun 'trace-collector COMMAND --help' for a command's options.\n"
		   "  -v, --verbose   more messages\n  -h, --help      this text\n  --version       print the version\n");
}

int main(int argc, char **argv)
{
	int i = 1;

	log_prog = "trace-collector";
	for (; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(argv[i], "--version")) {
			printf("trace-collector %s\n", VT_VERSION);
			return 0;
		} else if (!strcmp(argv[i], "-v") || !strcmp(argv[i], "--verbose")) {
			log_level++;
		} else {
			log_error("unknown option '%s' (see trace-collector --help)", argv[i]);
			return 2;
		}
	}
	if (i >= argc) {
		usage(stderr);
		return 2;
	}
	for (size_t c = 0; c < ARRAY_SIZE(commands); c++)
		if (!strcmp(argv[i], commands[c]->name))
			return commands[c]->run(argc - i, argv + i);
	log_error("unknown command '%s' (commands: setup, start, status, snapshot, stop, merge, report)", argv[i]);
	return 2;
}
