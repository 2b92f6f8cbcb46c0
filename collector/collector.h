/* SPDX-License-Identifier: GPL-2.0-only */
/* trace-collector private header. */
#pragma once

/* A subcommand: argv[0] is the subcommand's name. Returns the exit status. */
struct cmd_entry {
	const char *name;
	const char *summary;
	const char *usage;
	int (*run)(int argc, char **argv);
};

/* Prints "usage:" + the entry's usage text. */
void cmd_usage(const struct cmd_entry *cmd, int to_stderr);
/* For subcommands that are not there yet: says so, exits non-zero. */
int cmd_not_implemented(const struct cmd_entry *cmd);

extern const struct cmd_entry cmd_setup, cmd_start, cmd_status, cmd_stop, cmd_merge;
