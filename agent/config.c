// SPDX-License-Identifier: GPL-2.0-only
/* The session configuration the host sends (CONFIG): copies, defaults, queries. Below both
 * control.c, which parses it, and tracefs.c, which applies it. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"

void config_free(struct agent_config *c)
{
	free(c->events);
	free(c->clock);
	free(c->tracer);
	free(c->ftrace_filter);
	free(c->perf_events);
	*c = (struct agent_config){ 0 };
}

static int config_dup(const char *s, char **ret)
{
	*ret = s ? strdup(s) : NULL;
	return s && !*ret ? -ENOMEM : 0;
}

int config_set(struct agent_config *c, const struct agent_config *v)
{
	struct agent_config n = { .buffer_kb = v->buffer_kb, .flush_ms = v->flush_ms,
				  .perf_freq = v->perf_freq, .perf_ring_kb = v->perf_ring_kb,
				  .agent_events = v->agent_events };

	if (config_dup(v->events, &n.events) < 0 || config_dup(v->clock, &n.clock) < 0 ||
	    config_dup(v->tracer, &n.tracer) < 0 || config_dup(v->ftrace_filter, &n.ftrace_filter) < 0 ||
	    config_dup(v->perf_events, &n.perf_events) < 0) {
		config_free(&n);
		return -ENOMEM;
	}
	config_free(c);
	*c = n;
	return 0;
}

int config_default(struct agent_config *c, uint32_t buffer_kb)
{
	char events[] = AGENT_DEFAULT_EVENTS, clock[] = AGENT_DEFAULT_CLOCK;

	return config_set(c, &(struct agent_config){ .events = events, .clock = clock, .buffer_kb = buffer_kb,
						     .flush_ms = AGENT_FLUSH_MS_DEFAULT,
						     .perf_freq = VT_PERF_DEFAULT_FREQ,
						     .perf_ring_kb = VT_PERF_DEFAULT_RING_KB });
}

bool config_has_tracer(const struct agent_config *c)
{
	return c->tracer && strcmp(c->tracer, "nop") != 0;
}
