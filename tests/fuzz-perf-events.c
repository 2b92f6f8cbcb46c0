// SPDX-License-Identifier: GPL-2.0-only
/* Fuzz target: CONFIG's PERF_EVENTS list as the agent parses it (host bytes reaching the guest):
 * at most VT_PERF_MAX_EVENTS known names, no repeats, and the names joined parse back alike. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "perf_events.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct perf_event_spec ev[VT_PERF_MAX_EVENTS], ev2[VT_PERF_MAX_EVENTS], one;
	char *list = strndup((const char *)data, size), bad[80], joined[VT_PERF_MAX_EVENTS * 32 + 1] = "";
	size_t n = 0, n2 = 0;

	if (!list)
		return 0;
	if (perf_events_parse(list, ev, &n, bad, sizeof(bad)) == 0) {
		if (n > VT_PERF_MAX_EVENTS)
			abort();
		for (size_t i = 0; i < n; i++) {
			if (perf_events_lookup(ev[i].name, &one) < 0 || one.config != ev[i].config ||
			    one.type != ev[i].type)
				abort();
			for (size_t j = 0; j < i; j++)
				if (!strcmp(ev[i].name, ev[j].name))
					abort();
			if (i)
				strcat(joined, ",");
			strcat(joined, ev[i].name);
		}
		if (perf_events_parse(joined, ev2, &n2, bad, sizeof(bad)) < 0 || n2 != n ||
		    memcmp(ev, ev2, n * sizeof(ev[0])) != 0)
			abort();
	} else if (!memchr(bad, 0, sizeof(bad))) {
		abort(); /* the bad item is a bounded string */
	}
	free(list);
	return 0;
}
