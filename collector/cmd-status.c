// SPDX-License-Identifier: GPL-2.0-only
/* trace-collector status: asks the running daemon over its control socket. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "collector.h"
#include "ctlsock.h"
#include "log.h"
#include "qemu-config.h"
#include "session.h"
#include "util.h"
#include "vmgroup.h"

static double status_watch_s; /* status --watch */

/* status --watch: the status again every period, on a cleared terminal (or one after
 * another when stdout is no terminal), until the daemon is gone. */
static int status_watch(const char *sock)
{
	struct timespec nap = { (time_t)status_watch_s, (long)((status_watch_s - (double)(time_t)status_watch_s) * 1e9) };
	bool tty = isatty(STDOUT_FILENO);

	for (unsigned n = 0;; n++) {
		_cleanup_free_ char *reply = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&reply, &len);
		int r;

		if (!f)
			return 1;
		r = ctlsock_request(sock, "status", f, NULL, 0);
		fclose(f);
		if (r < 0) {
			printf("the session ended (no daemon at %s): 'trace-collector stop' writes its perf.data\n", sock);
			return n ? 0 : 1;
		}
		printf("%s(every %.1f s; Ctrl-C to quit)\n%s", tty ? "\033[H\033[2J" : n ? "\n" : "", status_watch_s,
		       reply ? reply : "");
		fflush(stdout);
		nanosleep(&nap, NULL);
	}
}

static int status_run(int argc, char **argv);
const struct cmd_entry cmd_status = {
	.name = "status", .summary = "show a running session's per-CPU rates and losses",
	.usage = "[--name VM] [--run-dir R] [--watch[=SEC]]\n"
		 "Per-CPU and total pages, bytes, MB/s over the last seconds, ring losses seen so far,\n"
		 "transport losses (known once the CPU's end marker arrived), the session's age, the\n"
		 "clock's state and error bound, spool size, host perf. A VM started with others\n"
		 "(start --name A --name B ...): every VM of the set, under its name.\n"
		 "  --watch[=SEC]   refresh every SEC seconds (default 2) like top, until the session\n"
		 "                  ends or Ctrl-C\n",
	.run = status_run,
};

/* Shared by snapshot and stop: one request to the daemon at sock, its reply in *ret_reply
 * (free it; NULL when nothing came). */
int status_request(const char *sock, const char *request, char **ret_reply)
{
	size_t len = 0;
	FILE *f;
	int r;

	*ret_reply = NULL;
	if (!(f = open_memstream(ret_reply, &len)))
		return -ENOMEM;
	r = ctlsock_request(sock, request, f, NULL, 0);
	fclose(f);
	return r;
}

/* Shared by status and stop: --name/--run-dir to a socket path, with a clear error. */
int status_socket(const char *run_dir, const char *name, char *buf, size_t size)
{
	int r = ctlsock_find(run_dir, name, buf, size);

	if (r == -EUCLEAN)
		log_error("several sessions are running in %s: say which with --name VM", run_dir);
	else if (r < 0 && name)
		log_error("no session running for %s (no daemon socket %s/%s.sock) — start one with 'trace-collector start --name %s'",
			  name, run_dir, name, name);
	else if (r < 0)
		log_error("no session running (no daemon socket in %s)", run_dir);
	return r;
}

int status_parse(int argc, char **argv, const struct cmd_entry *cmd, const char **name,
		 const char **run_dir, const char **out, int *compress)
{
	static const struct option lopts[] = {
		{ "name", 1, 0, 'n' }, { "run-dir", 1, 0, 'R' }, { "output", 1, 0, 'o' },
		{ "compress", 0, 0, 'z' }, { "zstd", 0, 0, 'z' }, { "no-compress", 0, 0, 'Z' }, { "watch", 2, 0, 'w' }, { "help", 0, 0, 'h' }, {},
	};
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, out ? "o:zh" : "h", lopts, NULL)) != -1) {
		if (c == 'n')
			*name = optarg;
		else if (c == 'R')
			*run_dir = optarg;
		else if (c == 'o' && out)
			*out = optarg;
		else if ((c == 'z' || c == 'Z') && compress)
			*compress = c == 'z';
		else if (c == 'w' && !out) {
			char *end = NULL;

			status_watch_s = optarg ? strtod(optarg, &end) : 2.0;
			if (optarg && (*end || !(status_watch_s >= 0.1 && status_watch_s <= 3600))) {
				log_error("invalid value '%.32s' for option --watch: it takes seconds, 0.1..3600", optarg);
				return -EINVAL;
			}
		}
		else if (c == 'h') {
			cmd_usage(cmd, 0);
			return 1;
		} else {
			cmd_bad_option(cmd);
			return -EINVAL;
		}
	}
	if (optind < argc) {
		log_error("unexpected argument '%s' (see trace-collector %s --help)", argv[optind], cmd->name);
		return -EINVAL;
	}
	if (*name && !qemu_config_vm_name_ok(*name)) {
		log_error("invalid VM name '%s': must be " QEMU_CONFIG_VM_NAME_RULE, *name);
		return -EINVAL;
	}
	return 0;
}

/* No daemon to ask (never started, or killed): point at the last session, still mergeable. */
void status_last_session(const char *run_dir, const char *name)
{
	char dir[PATH_MAX], state[16], why[PATH_MAX + 32];

	if (!name || vmgroup_session_of(run_dir, name, dir, sizeof(dir)) < 0)
		return;
	if (session_ini_get(dir, "state", state, sizeof(state)) == 0 && !strcmp(state, "failed")) {
		if (session_ini_get(dir, "start_error", why, sizeof(why)) < 0 || !why[0])
			snprintf(why, sizeof(why), "see %s/collector.log", dir);
		log_error("no session of %s is running: its last start failed: %s (session %s; nothing was traced, "
			  "so there is nothing to stop or merge: fix that, then run 'trace-collector start' again)",
			  name, why, dir);
		return;
	}
	log_error("the last session of %s is %s; merge it with 'trace-collector merge %s -o %s.data'",
		  name, dir, dir, name);
}

void status_no_answer(const char *run_dir, const char *name, const char *sock, int r, const char *what)
{
	if (r == -ENOENT)
		log_error("no session running for %s (no daemon socket %s)", name ? name : "this VM", sock);
	else if (r == -ECONNREFUSED)
		log_error("no daemon listens on %s any more (a socket left by a daemon that is gone: killed or "
			  "crashed)", sock);
	else
		log_error("the daemon at %s did not answer %s: %s", sock, what, strerror(-r));
	status_last_session(run_dir, name);
}

static int status_run(int argc, char **argv)
{
	const char *name = NULL, *run_dir = COLLECTOR_RUN_DIR;
	char sock[PATH_MAX], leader[PATH_MAX];
	int r = status_parse(argc, argv, &cmd_status, &name, &run_dir, NULL, NULL);

	if (r)
		return r > 0 ? 0 : 2;
	if (status_watch_s <= 0 && vmgroup_find(run_dir, name, leader, sizeof(leader)) == 1)
		return vmgroup_status(leader, stdout); /* one of several VMs: every VM's */
	if (status_socket(run_dir, name, sock, sizeof(sock)) < 0)
		return 1;
	if (status_watch_s > 0)
		return status_watch(sock);
	r = ctlsock_request(sock, "status", stdout, NULL, 0);
	if (r < 0) {
		status_no_answer(run_dir, name, sock, r, "status");
		return 1;
	}
	return 0;
}
