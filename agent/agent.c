// SPDX-License-Identifier: GPL-2.0-only
/* The agent's main loop. */
#include <errno.h>

#include "agent.h"
#include "log.h"

int agent_run(const struct agent_options *opts)
{
	(void)opts;
	log_error("the agent's control loop is not implemented yet (issue: trace-agent)");
	return -ENOSYS;
}
