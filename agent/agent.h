/* SPDX-License-Identifier: GPL-2.0-only */
/* trace-agent private header. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

struct agent_options {
	const char *tracefs;   /* NULL: find it */
	const char *ports_dir; /* NULL: /dev/virtio-ports, else sysfs lookup */
	const char *instance;  /* ftrace instance name */
	uint64_t pipe_max;     /* cap on the splice pipe size, bytes */
};

int agent_run(const struct agent_options *opts);
