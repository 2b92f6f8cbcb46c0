// SPDX-License-Identifier: GPL-2.0-only
/* The event list of a CONFIG message: "sys:event,sys:*,sys". Host bytes: bounded, fuzzed. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "util.h"

/* Copies one name component; "" allowed only where wild is set ("*"). */
static int events_component(const char *s, size_t len, char *dst, bool wild)
{
	if (wild && len == 1 && s[0] == '*') {
		dst[0] = '\0';
		return 0;
	}
	if (len >= EVENTS_NAME_MAX || !util_safe_name(s, len))
		return -EINVAL;
	memcpy(dst, s, len);
	dst[len] = '\0';
	return 0;
}

static int events_item(const char *s, size_t len, struct event_spec *ret)
{
	const char *colon = memchr(s, ':', len);
	size_t slen = colon ? (size_t)(colon - s) : len;

	if (events_component(s, slen, ret->sys, false) < 0)
		return -EINVAL;
	if (!colon) {
		ret->name[0] = '\0';
		return 0;
	}
	return events_component(colon + 1, len - slen - 1, ret->name, true);
}

static void events_set_bad(const char *s, size_t len, char **ret_bad)
{
	if (!ret_bad)
		return;
	*ret_bad = strndup(s, MIN(len, (size_t)VT_PROTO_MAX_STR));
}

int events_parse(const char *list, struct event_spec **ret, size_t *ret_n, char **ret_bad)
{
	_cleanup_free_ struct event_spec *ev = NULL;
	size_t n = 0;
	const char *p = list;

	if (!list || strlen(list) > VT_PROTO_MAX_STR)
		return -EINVAL;
	ev = calloc(EVENTS_MAX, sizeof(*ev));
	if (!ev)
		return -ENOMEM;
	while (*p) {
		size_t len = strcspn(p, ",");

		if (len > 0) {
			if (n == EVENTS_MAX || events_item(p, len, &ev[n]) < 0) {
				events_set_bad(p, len, ret_bad);
				return -EINVAL;
			}
			n++;
		}
		p += len;
		if (*p == ',')
			p++;
	}
	if (n == 0) {
		events_set_bad("", 0, ret_bad);
		return -EINVAL;
	}
	*ret = TAKE_PTR(ev);
	*ret_n = n;
	return 0;
}

int events_format(const struct event_spec *ev, size_t n, char **ret)
{
	size_t cap = n * (2 * EVENTS_NAME_MAX + 2) + 1, len = 0;
	char *s = malloc(cap);

	if (!s)
		return -ENOMEM;
	s[0] = '\0';
	for (size_t i = 0; i < n; i++)
		len += (size_t)snprintf(s + len, cap - len, "%s%s:%s", i ? "," : "", ev[i].sys,
					ev[i].name[0] ? ev[i].name : "*");
	/* "sys" grows to "sys:*": keep within what a string attribute may carry. */
	if (len > VT_PROTO_MAX_STR) {
		free(s);
		return -E2BIG;
	}
	*ret = s;
	return 0;
}
