// SPDX-License-Identifier: GPL-2.0-only
/* trace-collector start: parse options, take the VM's lock, daemonize with a pipe back
 * that carries the result, so that start itself reports any failure before tracing. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "collector.h"
#include "disk.h"
#include "log.h"
#include "perf_events.h"
#include "qemu-config.h"
#include "util.h"
#include "start-daemon.h"
#include "vmgroup.h"

#define START_USAGE                                                                                   \
	"{--name VM [--dir D] | --name VM --name VM2 ... [--vm-root ROOT] | --all [--vm-root ROOT]}\n"  \
	"       [--run-dir R] [-e EVENTS] [--buffer-kb N] [--clock auto|kvm|ptp]\n"      \
	"       [--trace-clock auto|mono|x86-tsc]\n"                                                   \
	"       [--tracer NAME [--ftrace-filter GLOBS]]\n"                                              \
	"       [--host-events LIST | --no-host | --host-data FILE]\n"                                  \
	"       [--qemu-pid PID] [-o OUT] [--max-size SIZE] [--min-free SIZE]\n"                       \
	"       [--flight-recorder SIZE | --no-live-merge] [--keep-spools] [--no-compress]\n"                         \
	"       [--timeout SEC] [--foreground]\n"         \
	"       [--probe-interval SEC] [--holdout-probes] [--kvm-debugfs DIR] [--allow-partial]\n"    \
	"       [--flush-interval SEC] [--agent-events] [--guest-perf[=EVENTS] [--guest-freq HZ] [--guest-perf-kb N]\n"  \
	"       [--no-guest-binaries | --trust-guest-binaries]]\n"                                     \
	"       [-- PERF_RECORD_ARGS...]\n"                                                          \
	"Starts a daemon that drives trace-agent in the guest over the ports in D (default\n"          \
	COLLECTOR_VM_ROOT "/VM, made by 'trace-collector setup'), spools every CPU's pages into\n"    \
	"D/sessions/<UTC time>/, records the host with perf record, and prints the session dir once\n" \
	"tracing has started. Control socket: R/VM.sock (default " COLLECTOR_RUN_DIR ").\n"            \
	"  -e EVENTS        guest events, e.g. 'sched:*,irq' (default sched,irq,timer)\n"            \
	"  --tracer NAME    also run this guest ftrace tracer, e.g. function (default nop: events only)\n" \
	"  --ftrace-filter GLOBS  functions the tracer traces, e.g. 'vfs_* schedule' (default all)\n" \
	"  --max-size SIZE  bound the session's files by SIZE (e.g. 2G): spools, host.data, the live\n" \
	"                   merge's file and what it has still to write, guest metadata and binaries,\n" \
	"                   clock samples, logs; without the live merge the output stop merges counts\n" \
	"                   too. Near it (or --min-free), the spools' pages the live merge has written\n" \
	"                   into its output are freed; the session stops only when that is not enough.\n" \
	"                   Default: a quarter of the session dir's file system, at most 16G; 0 or\n" \
	"                   none: no limit\n"                                                         \
	"  --keep-spools    never free the spools' pages (an offline 'merge' of the session dir then\n" \
	"                   covers it all): a bound stops the session instead\n"                     \
	"  --min-free SIZE  stop when free space on the session dir's file system (or -o's) falls\n"  \
	"                   below SIZE; start refuses below it. Default: 5% of that file system, at\n" \
	"                   most 1G; 0: no floor\n"                                                    \
	"  --flight-recorder SIZE  keep only the newest SIZE (at least 4M) of each guest CPU's\n"  \
	"                   stream on disk, the oldest whole pages dropped and counted; host perf\n" \
	"                   records into its overwritable ring (perf's overwrite mode), written at stop\n" \
	"                   and for each 'snapshot'\n"                                                \
	"  --no-live-merge  merge at stop, not while tracing: by default a 'merge --follow' beside the\n" \
	"                   daemon merges as the session goes (not with --flight-recorder), so stop\n" \
	"                   hands out the file in about a second at any size (--live-merge: insist)\n" \
	"  --no-compress    write the output (and snapshots) as plain perf.data: by default it is\n"  \
	"                   zstd-compressed as 'perf record -z' writes it, which perf reads as it is\n" \
	"  -o -             live view: the live merge as pipe-mode perf.data on stdout while tracing\n" \
	"                   (pipe it into perf script); start stays in the foreground until stop\n" \
	"  --timeout SEC    how long to wait for each answer of the agent (default 10; START: while\n"   \
	"                   it makes progress, at most SEC x (3 + CPUs / 4) in all)\n"               \
	"  --clock M        kvm: guest x86-tsc + KVM TSC offsets (exact); ptp: guest mono + probes;\n" \
	"                   auto (default): kvm when KVM debugfs has this QEMU and the guest has x86-tsc\n" \
	"  --trace-clock C  the guest's trace clock with ptp: mono, x86-tsc, or auto (default: mono,\n" \
	"                   unless mono steps coarsely and x86-tsc is fine)\n" \
	"  --probe-interval SEC  clock probe (and heartbeat) period while tracing, e.g. 0.5 (default 3;\n" \
	"                   --heartbeat is the same); 32 probes are taken at start and at stop\n"   \
	"  --holdout-probes also send a marked probe each period: the guest writes 'vt-probe ID'\n"  \
	"                   into its trace, the host logs send/reply times in clock.holdout (not fitted)\n" \
	"  --kvm-debugfs DIR  debugfs root for the kvm method (default /sys/kernel/debug)\n"         \
	"  --flush-interval SEC  a quiet guest ring's events reach the host within SEC (default 1,\n" \
	"                   0..3600, decimals allowed; 0: only when a ring is half full)\n"          \
	"  --agent-events   also trace the agent's own threads (by default their events are left\n"  \
	"                   out, as trace-cmd leaves out its own: moving pages makes events)\n"     \
	"  --guest-perf[=EVENTS]  also sample every guest CPU with perf in the guest (default event\n" \
	"                   cpu-clock; perf's generic names, comma separated; hardware events need a\n" \
	"                   guest PMU), with kernel and user call chains, over the perf-path ports\n" \
	"  --guest-freq HZ  guest perf samples per second per event and CPU (default 1000)\n"      \
	"  --guest-perf-kb N  each guest CPU's perf ring, KiB, a power of two (default 1024)\n"    \
	"  --no-guest-binaries  do not fetch the guest binaries its user-mode samples ran in (by\n" \
	"                   default they are fetched at stop, by build-id, into the output's own\n"  \
	"                   build-id dir OUT/buildids; the summary prints the perf command that\n"   \
	"                   names guest user functions with it)\n"                                   \
	"  --trust-guest-binaries  place them in perf's own cache $HOME/.debug instead, where every\n" \
	"                   later perf report of this user reads them; a build-id the host holds\n"  \
	"                   (host.data's, its files', one in the cache) is still refused\n"          \
	"  --allow-partial  go on when some guest CPUs cannot stream (named in status, the stop\n"   \
	"                   summary and session.ini), or some of several VMs cannot start; by default\n" \
	"                   start fails naming them\n"                                                 \
	"  --name VM --name VM2 ...  several VMs in one session: one host recording (the first VM's\n" \
	"                   daemon records the whole host for all), one output at stop; status and stop\n" \
	"                   with the --name of any of them act on the whole set\n"                   \
	"  --all            every VM dir set up under ROOT (--vm-root, default " COLLECTOR_VM_ROOT ")\n" \
	"  --vm-root ROOT   with several VMs: their dirs are ROOT/VM\n"                              \
	"  -- ARGS          host perf record's own arguments instead of '-a -e LIST', passed as they\n" \
	"                   are (keep sched:sched_switch: the merge maps vCPUs with it)\n"

static int start_run(int argc, char **argv);
const struct cmd_entry cmd_start = {
	.name = "start", .summary = "start a tracing session (daemon)", .usage = START_USAGE, .run = start_run,
};

static int start_abs(const char *in, char *out, bool must_exist)
{
	char cwd[PATH_MAX];

	if (must_exist)
		return realpath(in, out) ? 0 : -errno;
	if (in[0] == '/')
		return (size_t)snprintf(out, PATH_MAX, "%s", in) < PATH_MAX ? 0 : -ENAMETOOLONG;
	if (!getcwd(cwd, sizeof(cwd)))
		return -errno;
	return (size_t)snprintf(out, PATH_MAX, "%s/%s", cwd, in) < PATH_MAX ? 0 : -ENAMETOOLONG;
}

static bool start_events_ok(const char *e)
{
	size_t l = strlen(e);

	if (l == 0 || l > 1000)
		return false;
	return strspn(e, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_:*,") == l;
}

/* A tracer name, or function globs: the agent checks them against the guest again. */
static bool start_word_ok(const char *s, size_t max, const char *extra)
{
	static const char base[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_";
	size_t l = strlen(s), n = strspn(s, base);

	while (n < l && strchr(extra, s[n]))
		n += 1 + strspn(s + n + 1, base);
	return l <= max && n == l;
}

/* SEC with up to three decimals, 0.05 .. 3600. */
static int start_interval(const char *arg, unsigned *ret_ms)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(arg, &end);
	if (errno || end == arg || *end || !(v >= 0.05 && v <= 3600))
		return -EINVAL;
	*ret_ms = (unsigned)(v * 1000 + 0.5);
	return 0;
}

/* What each option takes, for the message about a bad value (keyed by its short letter). */
static const char *start_accepted(int c)
{
	static const struct {
		int c;
		const char *what;
	} tab[] = {
		{ 'n', "a VM name; at most 16 --name (the VMs one merge takes)" },
		{ 'e', "event names: sys:event, sys:* or sys, comma separated ([A-Za-z0-9_:*,], 1..1000 chars)" },
		{ 'H', "event names: sys:event, sys:* or sys, comma separated ([A-Za-z0-9_:*,], 1..1000 chars)" },
		{ 'T', "a tracer name of the guest's available_tracers ([A-Za-z0-9_], 1..63 chars)" },
		{ 'F', "function names or globs ([A-Za-z0-9_.*?], separated by spaces or commas, at most 1000 chars)" },
		{ 'c', "auto, kvm or ptp" },
		{ 'C', "auto, mono or x86-tsc" },
		{ 'D', "an existing perf.data file" },
		{ 'o', "a file path (its directory must exist at stop)" },
		{ 'm', "a size: a number with an optional K, M, G or T suffix, e.g. 2G; 0 or none: no limit" },
		{ 'U', "a size: a number with an optional K, M, G or T suffix, e.g. 1G; 0: no floor" },
		{ 'W', "a size of at least 4M: a number with an optional K, M, G or T suffix, e.g. 256M" },
		{ 'b', "KiB per CPU, 1..4194304" },
		{ 'q', "a process id, 1..4194304" },
		{ 't', "seconds, 1..3600" },
		{ 'B', "seconds, 0.05..3600 (decimals allowed)" },
		{ 'I', "seconds: 0 (off) or 0.05..3600 (decimals allowed)" },
		{ 'K', "a directory path under 256 bytes" },
		{ 'g', "perf event names, comma separated, at most 8: cpu-clock, task-clock, page-faults, "
		       "minor-faults, major-faults, context-switches, cpu-migrations, alignment-faults, "
		       "emulation-faults, cycles, instructions, cache-references, cache-misses, branches, "
		       "branch-misses, bus-cycles, ref-cycles" },
		{ 'G', "samples per second, 1..100000" },
		{ 'k', "KiB, a power of two, 8..262144" },
	};

	for (size_t i = 0; i < ARRAY_SIZE(tab); i++)
		if (tab[i].c == c)
			return tab[i].what;
	return "see trace-collector start --help";
}

/* --guest-perf[=EVENTS]: the names are checked here and again by the agent against the guest. */
static int start_guest_perf(struct start_opts *o, const char *arg)
{
	struct perf_event_spec ev[VT_PERF_MAX_EVENTS];
	char bad[80];
	size_t n;

	o->perf.events = arg ? arg : VT_PERF_DEFAULT_EVENTS;
	if (strlen(o->perf.events) > 512 || perf_events_parse(o->perf.events, ev, &n, bad, sizeof(bad)) < 0 || !n)
		return -EINVAL;
	return 0;
}

static int start_parse_one(struct start_opts *o, int c, const char **dir, const char **run)
{
	uint64_t v;

	switch (c) {
	case 'n':
		if (o->nnames >= ARRAY_SIZE(o->names))
			return -E2BIG;
		o->name = o->names[o->nnames++] = optarg;
		return 0;
	case 'a': o->all = true; return 0;
	case 'V': o->vm_root = optarg; return 0;
	case 'd': *dir = optarg; return 0;
	case 'R': *run = optarg; return 0;
	case 'e': o->events = optarg; return start_events_ok(optarg) ? 0 : -EINVAL;
	case 'T': o->tracer = optarg; return *optarg && start_word_ok(optarg, 63, "") ? 0 : -EINVAL;
	case 'F': o->ftrace_filter = optarg; return start_word_ok(optarg, 1000, ".*? ,") ? 0 : -EINVAL;
	case 'c': o->clock = optarg;
		return !strcmp(optarg, "auto") || !strcmp(optarg, "kvm") || !strcmp(optarg, "ptp") ? 0 : -EINVAL;
	case 'C': o->trace_clock = optarg;
		return !strcmp(optarg, "auto") || !strcmp(optarg, "mono") || !strcmp(optarg, "x86-tsc") ? 0 : -EINVAL;
	case 'H': o->host_events = optarg; return start_events_ok(optarg) ? 0 : -EINVAL;
	case 'N': o->no_host = true; return 0;
	case 'D': return start_abs(optarg, o->host_data, true);
	case 'o':
		if (!strcmp(optarg, "-")) /* the live merge to stdout: start stays in the foreground */
			return o->live_stdout = o->live_merge = o->live_explicit = o->foreground = true, 0;
		return start_abs(optarg, o->out, false);
	case 'f': o->foreground = true; return 0;
	case 'm': o->max_size_given = true; return disk_parse_size(optarg, &o->max_size);
	case 'U': o->min_free_given = true; return util_parse_size(optarg, &o->min_free);
	case 'W': return util_parse_size(optarg, &o->flight_recorder) < 0 || o->flight_recorder < (4u << 20) ? -EINVAL : 0;
	case 'L': o->live_merge = o->live_explicit = true; return 0;
	case 'M': o->no_live_merge = true; return 0;
	case 'Y': o->keep_spools = true; return 0;
	case 'y': o->zstd_level = 0; return 0;
	case 'b': if (util_parse_u64(optarg, 1u << 22, &v) < 0 || !v) return -EINVAL; o->buffer_kb = (uint32_t)v; return 0;
	case 'q': if (util_parse_u64(optarg, 1u << 22, &v) < 0 || !v) return -EINVAL; o->qemu_pid = (pid_t)v; return 0;
	case 't': if (util_parse_u64(optarg, 3600, &v) < 0 || !v) return -EINVAL; o->timeout_s = (unsigned)v; return 0;
	case 'B': return start_interval(optarg, &o->probe_interval_ms);
	case 'Z': o->holdout = true; return 0;
	case 'A': o->allow_partial = true; return 0;
	case 'x': o->perf.no_binaries = true; return 0;
	case 'X': o->perf.trust_binaries = true; return 0;
	case 'S': o->agent_events = true; return 0;
	case 'I': return !strcmp(optarg, "0") ? (o->flush_ms = 0, 0) : start_interval(optarg, &o->flush_ms);
	case 'K': o->kvm_debugfs = optarg; return strlen(optarg) < 256 ? 0 : -EINVAL;
	case 'g': return start_guest_perf(o, optarg);
	case 'G': if (util_parse_u64(optarg, VT_PERF_FREQ_MAX, &v) < 0 || !v) return -EINVAL; o->perf.freq = (uint32_t)v; return 0;
	case 'k':
		if (util_parse_u64(optarg, VT_PERF_RING_KB_MAX, &v) < 0 || v < VT_PERF_RING_KB_MIN || (v & (v - 1)))
			return -EINVAL;
		o->perf.ring_kb = (uint32_t)v;
		return 0;
	}
	return -EINVAL;
}

static int start_disk(struct start_opts *o);
static int start_group_parse(struct start_opts *o, const char *dir, const char *run);

/* The options into *o, the VM dir and run dir given in *dir and *run; 1: --help printed. */
static int start_options(int argc, char **argv, struct start_opts *o, const char **dir, const char **run)
{
	static const struct option lopts[] = {
		{ "name", 1, 0, 'n' }, { "dir", 1, 0, 'd' }, { "run-dir", 1, 0, 'R' }, { "events", 1, 0, 'e' },
		{ "buffer-kb", 1, 0, 'b' }, { "clock", 1, 0, 'c' }, { "trace-clock", 1, 0, 'C' }, { "host-events", 1, 0, 'H' },
		{ "host-perf-args", 1, 0, 'P' }, { "no-host", 0, 0, 'N' }, { "host-data", 1, 0, 'D' },
		{ "qemu-pid", 1, 0, 'q' }, { "output", 1, 0, 'o' }, { "max-size", 1, 0, 'm' }, { "min-free", 1, 0, 'U' },
		{ "foreground", 0, 0, 'f' }, { "timeout", 1, 0, 't' }, { "heartbeat", 1, 0, 'B' },
		{ "probe-interval", 1, 0, 'B' }, { "holdout-probes", 0, 0, 'Z' }, { "kvm-debugfs", 1, 0, 'K' },
		{ "tracer", 1, 0, 'T' }, { "ftrace-filter", 1, 0, 'F' }, { "allow-partial", 0, 0, 'A' },
		{ "flush-interval", 1, 0, 'I' }, { "guest-perf", 2, 0, 'g' }, { "guest-freq", 1, 0, 'G' },
		{ "guest-perf-kb", 1, 0, 'k' }, { "no-guest-binaries", 0, 0, 'x' },
		{ "trust-guest-binaries", 0, 0, 'X' },
		{ "agent-events", 0, 0, 'S' }, { "flight-recorder", 1, 0, 'W' }, { "live-merge", 0, 0, 'L' },
		{ "no-live-merge", 0, 0, 'M' }, { "keep-spools", 0, 0, 'Y' }, { "no-compress", 0, 0, 'y' }, { "all", 0, 0, 'a' }, { "vm-root", 1, 0, 'V' },
		{ "help", 0, 0, 'h' }, {},
	};
	int c, r, li;

	optind = 1;
	while ((li = -1, c = getopt_long(argc, argv, "e:o:h", lopts, &li)) != -1) {
		if (c == 'h') {
			cmd_usage(&cmd_start, 0);
			return 1;
		}
		if (c == 'P') {
			log_error("--host-perf-args was replaced by perf record's own arguments after '--', passed as "
				  "they are (e.g. trace-collector start --name vm1 -- -a -e cycles -c 10000)");
			return -EINVAL;
		}
		if (c == '?' || (r = start_parse_one(o, c, dir, run)) < 0) {
			if (c == '?')
				cmd_bad_option(&cmd_start);
			else
				log_error("invalid value '%.64s%s' for option %s%s: it takes %s",
					  optarg ? optarg : "", optarg && strlen(optarg) > 64 ? "..." : "", li >= 0 ? "--" : "-", li >= 0 ? lopts[li].name : (char[]){ (char)c, 0 },
					  start_accepted(c));
			return -EINVAL;
		}
	}
	return 0;
}

/* What follows the options: perf record's own arguments after '--', passed as they are (never
 * split); nothing else. */
static int start_perf_args(int argc, char **argv, struct start_opts *o)
{
	if (optind < argc && optind > 0 && !strcmp(argv[optind - 1], "--")) {
		size_t total = 0;

		o->host_perf_argv = argv + optind;
		o->host_perf_argc = (unsigned)(argc - optind);
		for (unsigned i = 0; i < o->host_perf_argc; i++)
			total += strlen(o->host_perf_argv[i]) + 1;
		if (o->host_perf_argc > 48 || total > 4096) {
			log_error("too many perf record arguments after '--' (%u, %zu bytes): at most 48 and 4096 bytes",
				  o->host_perf_argc, total);
			return -EINVAL;
		}
		optind = argc;
	}
	if (optind < argc) {
		log_error("unexpected argument '%.64s': perf record's own arguments go after '--' "
			  "(e.g. trace-collector start --name vm1 -- -a -e cycles)", argv[optind]);
		return -EINVAL;
	}
	return 0;
}

/* The options together: a VM name, no two that exclude each other; the live merge's default. */
static int start_check(struct start_opts *o)
{
	bool several = o->nnames > 1 || o->all;

	if (!several && o->vm_root) {
		log_error("--vm-root is for several VMs (--name VM --name VM2 ..., or --all): for one, name its dir with --dir");
		return -EINVAL;
	}
	if (!several && (!o->name || !qemu_config_vm_name_ok(o->name))) {
		log_error(o->name ? "invalid VM name '%s': must be " QEMU_CONFIG_VM_NAME_RULE :
				    "missing --name VM (see trace-collector start --help)", o->name);
		return -EINVAL;
	}
	if (o->flight_recorder && o->host_data[0]) {
		log_error("--flight-recorder bounds the guest's streams and the host recording; --host-data names "
			  "a finished recording: drop it, or use --no-host");
		return -EINVAL;
	}
	if (o->live_explicit && o->no_live_merge) {
		log_error("--no-live-merge excludes %s", o->live_stdout ? "-o - (the live view is the live merge)" :
			  "--live-merge");
		return -EINVAL;
	}
	if (o->live_explicit && (o->flight_recorder || o->host_data[0])) {
		log_error("%s merges the guest's streams with host perf while tracing; %s",
			  o->live_stdout ? "-o -" : "--live-merge",
			  o->flight_recorder ? "with --flight-recorder the window is merged at stop: drop one of them" :
			  "--host-data names a finished recording: drop it, or use --no-host");
		return -EINVAL;
	}
	/* The live merge is the default: stop then hands out the file at once. A flight recorder's
	 * window and a finished host recording are merged at stop instead. */
	o->live_merge = !o->no_live_merge && !o->flight_recorder && !o->host_data[0];
	if ((o->no_host + !!o->host_events + !!o->host_perf_argc + !!o->host_data[0]) > 1) {
		log_error("--host-events, --no-host, --host-data and perf record arguments after '--' exclude each other");
		return -EINVAL;
	}
	return 0;
}

static int start_parse(int argc, char **argv, struct start_opts *o)
{
	const char *dir = NULL, *run = COLLECTOR_RUN_DIR;
	char buf[PATH_MAX];
	int r;

	*o = (struct start_opts){ .events = "sched,irq,timer", .tracer = "nop", .ftrace_filter = "",
				   .clock = "auto", .trace_clock = "auto", .timeout_s = 10, .zstd_level = MERGE_ZSTD_LEVEL,
				   .probe_interval_ms = 3000, .kvm_debugfs = "/sys/kernel/debug", .flush_ms = 1000,
				   .perf = { .freq = VT_PERF_DEFAULT_FREQ, .ring_kb = VT_PERF_DEFAULT_RING_KB } };
	if ((r = start_options(argc, argv, o, &dir, &run)) != 0 || (r = start_perf_args(argc, argv, o)) < 0 ||
	    (r = start_check(o)) < 0)
		return r;
	if (o->nnames > 1 || o->all)
		return start_group_parse(o, dir, run);
	if (!dir) {
		snprintf(buf, sizeof(buf), "%s/%s", COLLECTOR_VM_ROOT, o->name);
		dir = buf;
	}
	if (start_abs(dir, o->vm_dir, true) < 0) {
		log_error("no VM dir %s — run 'trace-collector setup --name %s --cpus N' first", dir, o->name);
		return -ENOENT;
	}
	if ((r = start_disk(o)) < 0)
		return r;
	return start_abs(run, o->run_dir, false);
}

/* --max-size and --min-free from the session dir's file system when not given; a file system
 * already below its floor is refused. */
static int start_disk(struct start_opts *o)
{
	char path[PATH_MAX + 16], a[32], b[32];
	uint64_t size, avail;
	int r;

	snprintf(path, sizeof(path), "%s/sessions", o->vm_dir);
	r = disk_fs(access(path, F_OK) == 0 ? path : o->vm_dir, &size, &avail);
	if (r < 0) {
		log_error("cannot read the file system of %s: %s", o->vm_dir, strerror(-r));
		return r;
	}
	if (!o->max_size_given)
		o->max_size = disk_default_max(size);
	if (!o->min_free_given)
		o->min_free = disk_default_floor(size);
	if (avail < o->min_free) {
		log_error("only %s free on the file system of %s, below --min-free %s%s: free space there, or "
			  "pass a smaller --min-free", disk_size_str(avail, a, sizeof(a)), o->vm_dir,
			  disk_size_str(o->min_free, b, sizeof(b)), o->min_free_given ? "" : " (the default: 5% of it, at most 1 GiB)");
		return -ENOSPC;
	}
	return 0;
}


static int start_group(const struct start_opts *o);

static int start_run(int argc, char **argv)
{
	struct start_opts o;
	char dir[PATH_MAX + 64];
	int r = start_parse(argc, argv, &o), lock_fd, fd;
	pid_t pid;

	if (r)
		return r > 0 ? 0 : 2;
	if (o.nnames > 1 || o.all)
		return start_group(&o);
	if (o.foreground) {
		lock_fd = start_lock(&o);
		return lock_fd < 0 ? 1 : daemon_run(&o, lock_fd, -1);
	}
	if (start_spawn(&o, &pid, &fd) < 0)
		return 1;
	r = start_wait(fd, pid, NULL, dir, sizeof(dir), NULL, 0);
	if (r == 0)
		printf("%s\n", dir);
	return r;
}

/* ---- several VMs in one session (vmgroup.c) ---- */

/* What one session of several VMs cannot take, checked once for all. */
static int start_group_parse(struct start_opts *o, const char *dir, const char *run)
{
	const char *why = dir ? "--dir names one VM's dir: with several VMs their dirs are ROOT/VM (--vm-root ROOT)" :
			  o->all && o->nnames ? "--all and --name exclude each other" :
			  o->qemu_pid ? "--qemu-pid names one VM's QEMU: with several VMs each one's is found from its ports" :
			  o->foreground ? "--foreground runs one daemon in this process: several VMs run one each" :
			  o->flight_recorder ? "--flight-recorder is not yet for several VMs: trace them one by one" :
			  o->live_explicit ? "the live merge (--live-merge, -o -) is for one VM: several VMs are merged at stop" :
			  NULL;

	if (why) {
		log_error("%s", why);
		return -EINVAL;
	}
	for (unsigned i = 0; i < o->nnames; i++) {
		if (!qemu_config_vm_name_ok(o->names[i])) {
			log_error("invalid VM name '%s': must be " QEMU_CONFIG_VM_NAME_RULE, o->names[i]);
			return -EINVAL;
		}
		for (unsigned j = 0; j < i; j++)
			if (!strcmp(o->names[i], o->names[j])) {
				log_error("--name %s is given twice", o->names[i]);
				return -EINVAL;
			}
	}
	o->live_merge = false; /* the live merge is single-guest: the set is merged at stop */
	o->no_live_merge = true;
	if (!o->vm_root)
		o->vm_root = COLLECTOR_VM_ROOT;
	return start_abs(run, o->run_dir, false);
}

/* The set's names: every --name, or with --all every VM dir under the root. */
static int start_group_names(const struct start_opts *o, struct vmgroup *g)
{
	unsigned n = 0;
	int r;

	if (!o->all) {
		for (unsigned i = 0; i < o->nnames; i++)
			snprintf(g->vm[g->n++].name, sizeof(g->vm[0].name), "%s", o->names[i]);
		return 0;
	}
	r = vmgroup_scan(o->vm_root, g);
	if (r == -E2BIG) {
		log_error("--all: %u VM dirs in %s, and one session takes at most %u (the merge's bound): name them "
			  "with --name", g->n, o->vm_root, VMGROUP_MAX_VMS);
		return r;
	}
	if (r < 0) {
		log_error("--all: cannot list the VM dirs in %s: %s", o->vm_root, strerror(-r));
		return r;
	}
	for (unsigned i = 0; i < g->n; i++) /* a dir setup could not have made is no VM's */
		if (qemu_config_vm_name_ok(g->vm[i].name))
			g->vm[n++] = g->vm[i];
	g->n = n;
	if (!n) {
		log_error("--all: no VM dir in %s: set each VM up with 'trace-collector setup --name VM --cpus N'", o->vm_root);
		return -ENOENT;
	}
	return 0;
}

/* VM i's options: the set's, its own dir and disk budget; false (why said) when it cannot start. */
static bool start_group_vm(const struct start_opts *o, struct vmgroup *g, unsigned i, struct start_opts *vo)
{
	struct vmgroup_vm *vm = &g->vm[i];
	char dir[PATH_MAX + 80];

	*vo = *o;
	vo->name = vm->name;
	vo->nnames = 0;
	vo->all = false;
	vo->group = g->id;
	snprintf(dir, sizeof(dir), "%s/%s", o->vm_root, vm->name);
	if (start_abs(dir, vo->vm_dir, true) < 0)
		snprintf(vm->why, sizeof(vm->why), "no VM dir %.300s: run 'trace-collector setup --name %s --cpus N' first",
			 dir, vo->name);
	else if (start_disk(vo) < 0)
		snprintf(vm->why, sizeof(vm->why), "its session dir's file system has too little free space (said above)");
	else
		return true;
	vm->role = VMGROUP_FAILED;
	return false;
}

/* The first VM that starts records the host for all: 0, or -1 when none may go on. */
static int start_group_leader(struct vmgroup *g, struct start_opts *vo, bool partial)
{
	for (unsigned i = 0; i < g->n; i++) {
		pid_t pid;
		int fd;

		if (g->vm[i].role == VMGROUP_FAILED)
			continue;
		if (start_spawn(&vo[i], &pid, &fd) < 0)
			snprintf(g->vm[i].why, sizeof(g->vm[i].why), "its daemon could not start (said above)");
		else if (start_wait(fd, pid, g->vm[i].name, g->vm[i].dir, sizeof(g->vm[i].dir), g->vm[i].why,
				    sizeof(g->vm[i].why)) == 0) {
			g->vm[i].role = VMGROUP_LEADER;
			g->leader = i;
			return 0;
		}
		g->vm[i].role = VMGROUP_FAILED;
		if (!partial)
			return -1;
	}
	return -1;
}

/* The others all at once, each naming the leader's host recording; how many failed. */
static unsigned start_group_members(struct vmgroup *g, struct start_opts *vo)
{
	const struct start_opts *lo = &vo[g->leader];
	pid_t pid[VMGROUP_MAX_VMS];
	int fd[VMGROUP_MAX_VMS];
	unsigned failed = 0;

	for (unsigned i = 0; i < g->n; i++) {
		fd[i] = -1;
		if (i == g->leader || g->vm[i].role == VMGROUP_FAILED)
			continue;
		if (!lo->no_host && !lo->host_data[0] &&
		    snprintf(vo[i].host_data, sizeof(vo[i].host_data), "%s/host.data", g->vm[g->leader].dir) >=
			    (int)sizeof(vo[i].host_data)) {
			snprintf(g->vm[i].why, sizeof(g->vm[i].why), "the leader's session dir path is too long");
			g->vm[i].role = VMGROUP_FAILED;
			failed++;
			continue;
		}
		snprintf(vo[i].group_leader, sizeof(vo[i].group_leader), "%s", g->vm[g->leader].dir);
		vo[i].host_events = NULL;
		vo[i].host_perf_argv = NULL;
		vo[i].host_perf_argc = 0;
		vo[i].out[0] = '\0';
		if (start_spawn(&vo[i], &pid[i], &fd[i]) < 0) {
			snprintf(g->vm[i].why, sizeof(g->vm[i].why), "its daemon could not start (said above)");
			g->vm[i].role = VMGROUP_FAILED;
			failed++;
		}
	}
	for (unsigned i = 0; i < g->n; i++) {
		if (fd[i] < 0)
			continue;
		if (start_wait(fd[i], pid[i], g->vm[i].name, g->vm[i].dir, sizeof(g->vm[i].dir), g->vm[i].why,
			       sizeof(g->vm[i].why)) == 0) {
			g->vm[i].role = VMGROUP_MEMBER;
		} else {
			g->vm[i].role = VMGROUP_FAILED;
			failed++;
		}
	}
	return failed;
}

/* Says which VMs are not traced; without --allow-partial stops the ones that started. */
static int start_group_failed(struct vmgroup *g, bool partial, bool stop)
{
	char list[1024] = "";
	size_t at = 0;

	for (unsigned i = 0; i < g->n; i++) {
		if (g->vm[i].role != VMGROUP_FAILED)
			continue;
		at += (size_t)snprintf(list + at, at < sizeof(list) ? sizeof(list) - at : 0, "%s%s", at ? ", " : "", g->vm[i].name);
		if (partial)
			log_warn("%s: not traced: %s", g->vm[i].name, g->vm[i].why);
		else
			log_error("%s: cannot be traced: %s", g->vm[i].name, g->vm[i].why);
	}
	if (partial)
		return 0;
	if (stop) {
		for (unsigned i = 0; i < g->n; i++) /* their sessions are kept, stopped, not merged */
			if (g->vm[i].role != VMGROUP_FAILED)
				log_info("%s: stopping its session %s", g->vm[i].name, g->vm[i].dir);
		vmgroup_stop_daemons(g, false, NULL);
	}
	log_error("start failed: %s cannot be traced, so no VM of the set is (--allow-partial goes on without %s)",
		  list, strchr(list, ',') ? "them" : "it");
	return 1;
}

static int start_group(const struct start_opts *o)
{
	_cleanup_free_ struct vmgroup *g = calloc(1, sizeof(*g));
	_cleanup_free_ struct start_opts *vo = NULL;
	unsigned failed = 0, traced = 0;
	uint64_t id;

	if (!g || start_group_names(o, g) < 0 || !(vo = calloc(g->n, sizeof(*vo))))
		return 1;
	if (getrandom(&id, sizeof(id), 0) != sizeof(id))
		id = util_now_ns(CLOCK_REALTIME) ^ (uint64_t)getpid();
	snprintf(g->id, sizeof(g->id), "%016llx", (unsigned long long)id);
	snprintf(g->run_dir, sizeof(g->run_dir), "%s", o->run_dir);
	snprintf(g->out, sizeof(g->out), "%s", o->out);
	snprintf(g->state, sizeof(g->state), "running");
	for (unsigned i = 0; i < g->n; i++)
		failed += !start_group_vm(o, g, i, &vo[i]);
	if (failed && !o->allow_partial)
		return start_group_failed(g, false, false);
	if (start_group_leader(g, vo, o->allow_partial) < 0)
		return start_group_failed(g, false, false);
	if (start_group_members(g, vo) && !o->allow_partial)
		return start_group_failed(g, false, true);
	start_group_failed(g, true, false);
	if (vmgroup_write(g) < 0) {
		vmgroup_stop_daemons(g, false, NULL);
		return 1;
	}
	printf("%s\n", g->vm[g->leader].dir);
	for (unsigned i = 0; i < g->n; i++) {
		traced += g->vm[i].role != VMGROUP_FAILED;
		if (g->vm[i].role == VMGROUP_MEMBER)
			printf("%s\n", g->vm[i].dir);
	}
	printf("group %s: %u of %u VMs traced, host recorded by %s for all; status and stop with the --name of "
	       "any of them\n", g->id, traced, g->n, g->vm[g->leader].name);
	return 0;
}
