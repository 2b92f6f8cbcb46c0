// SPDX-License-Identifier: GPL-2.0-only
/* trace-agent: streams this guest's ftrace ring buffers to the host over virtio-serial. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "config.h"
#include "log.h"
#include "util.h"

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: trace-agent [OPTIONS]\n"
		"\n"
		"Guest half of virtio-trace. Runs as root with no arguments (usually as the\n"
		"trace-agent systemd service), waits for the host's trace-collector on the\n"
		"virtio-serial port agent-ctl-path and streams the ftrace ring buffer of every\n"
		"CPU through trace-path-cpuN (and, when the host asks for guest perf, each CPU's\n"
		"perf ring through perf-path-cpuN). Tracing happens in its own ftrace instance,\n"
		"never in the top-level buffer.\n"
		"\n"
		"Legacy control: a line '1' on agent-ctl-path starts tracing with the default\n"
		"events (sched, irq, timer), a line '0' stops it.\n"
		"\n"
		"Options:\n"
		"  --tracefs DIR     tracefs mount (default: /sys/kernel/tracing, mounted if needed)\n"
		"  --ports-dir DIR   directory holding agent-ctl-path, trace-path-cpuN, perf-path-cpuN\n"
		"                    (default: /dev/virtio-ports, else found through /sys/class/virtio-ports)\n"
		"  --instance NAME   ftrace instance to create (default: virtio-trace)\n"
		"  --pipe-max SIZE   cap on each CPU's splice pipe (default: /proc/sys/fs/pipe-max-size)\n"
		"  --subbuf-kb N     ring sub-buffer size in KiB where the kernel has\n"
		"                    buffer_subbuf_size_kb (Linux 6.8+; 4..64, default 16; 0: the kernel's,\n"
		"                    one page); the unit streamed to the host\n"
		"  --no-binaries     refuse the host's requests for guest binaries (ELF files named by\n"
		"                    path and build-id, for guest user symbols in perf report)\n"
		"  -v, --verbose     more messages (repeat for debug)\n"
		"  -h, --help        this text\n"
		"      --version     print the version\n");
}

int main(int argc, char **argv)
{
	enum { OPT_TRACEFS = 256, OPT_PORTS, OPT_INSTANCE, OPT_PIPE_MAX, OPT_SUBBUF, OPT_NO_BINARIES, OPT_VERSION };
	static const struct option longopts[] = {
		{ "tracefs", required_argument, NULL, OPT_TRACEFS },
		{ "ports-dir", required_argument, NULL, OPT_PORTS },
		{ "instance", required_argument, NULL, OPT_INSTANCE },
		{ "pipe-max", required_argument, NULL, OPT_PIPE_MAX },
		{ "subbuf-kb", required_argument, NULL, OPT_SUBBUF },
		{ "no-binaries", no_argument, NULL, OPT_NO_BINARIES },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, OPT_VERSION },
		{ 0 },
	};
	struct agent_options opts = { .instance = "virtio-trace", .subbuf_kb = AGENT_SUBBUF_KB_DEFAULT };
	int c;

	log_prog = "trace-agent";
	while ((c = getopt_long(argc, argv, "vh", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_TRACEFS: opts.tracefs = optarg; break;
		case OPT_PORTS: opts.ports_dir = optarg; break;
		case OPT_INSTANCE:
			if (!util_safe_name(optarg, strlen(optarg))) {
				log_error("instance name '%s' must be made of [A-Za-z0-9_]", optarg);
				return 2;
			}
			opts.instance = optarg;
			break;
		case OPT_PIPE_MAX:
			if (util_parse_size(optarg, &opts.pipe_max) < 0 || opts.pipe_max < 4096) {
				log_error("--pipe-max '%s' is not a size of at least 4K (e.g. 1M)", optarg);
				return 2;
			}
			break;
		case OPT_SUBBUF: {
			uint64_t kb;

			if (util_parse_u64(optarg, AGENT_SUBBUF_KB_MAX, &kb) < 0 || (kb && (kb < 4 || (kb & (kb - 1))))) {
				log_error("--subbuf-kb '%s' is not 0 or a power of two from 4 to %u", optarg,
					  AGENT_SUBBUF_KB_MAX);
				return 2;
			}
			opts.subbuf_kb = (uint32_t)kb;
			break;
		}
		case OPT_NO_BINARIES: opts.no_binaries = true; break;
		case 'v': log_level++; break;
		case 'h': usage(stdout); return 0;
		case OPT_VERSION: printf("trace-agent %s\n", VT_VERSION); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind < argc) {
		log_error("unexpected argument '%s' (trace-agent takes options only; see --help)", argv[optind]);
		return 2;
	}
	return agent_run(&opts) < 0 ? 1 : 0;
}
