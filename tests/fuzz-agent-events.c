// SPDX-License-Identifier: GPL-2.0-only
/* Fuzz target: the agent's parser of CONFIG's event list (host bytes reaching the guest). */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct event_spec *ev = NULL, *ev2 = NULL;
	char *list = strndup((const char *)data, size), *bad = NULL, *canon = NULL;
	size_t n = 0, n2 = 0;

	if (!list)
		return 0;
	if (events_parse(list, &ev, &n, &bad) == 0) {
		/* The canonical form parses back to the same list. */
		int r = events_format(ev, n, &canon);

		if (r < 0 && r != -E2BIG)
			abort();
		if (r == 0 && (events_parse(canon, &ev2, &n2, NULL) < 0 || n2 != n ||
			       memcmp(ev, ev2, n * sizeof(*ev)) != 0))
			abort();
		for (size_t i = 0; i < n; i++)
			if (!ev[i].sys[0] || strlen(ev[i].sys) >= EVENTS_NAME_MAX)
				abort();
	}
	free(ev);
	free(ev2);
	free(bad);
	free(canon);
	free(list);
	return 0;
}
