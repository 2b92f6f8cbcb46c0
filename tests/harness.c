// SPDX-License-Identifier: GPL-2.0-only
#include "harness.h"

#include <stdbool.h>
#include <stdlib.h>

static struct test_case *cases, **tail = &cases;
static bool current_failed;

void test_register(struct test_case *tc)
{
	*tail = tc;
	tail = &tc->next;
}

void test_fail(const char *file, int line, const char *expr, const char *detail)
{
	current_failed = true;
	fprintf(stderr, "%s:%d: check failed: %s%s%s\n", file, line, expr, detail ? " -- " : "",
		detail ? detail : "");
}

static bool wanted(const char *name, int argc, char **argv)
{
	if (argc < 2)
		return true;
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], name))
			return true;
	return false;
}

int main(int argc, char **argv)
{
	int passed = 0, failed = 0;

	for (struct test_case *tc = cases; tc; tc = tc->next) {
		if (!wanted(tc->name, argc, argv))
			continue;
		current_failed = false;
		tc->fn();
		printf("%s %s\n", current_failed ? "FAIL" : "ok  ", tc->name);
		fflush(stdout);
		if (current_failed)
			failed++;
		else
			passed++;
	}
	printf("%d passed, %d failed\n", passed, failed);
	if (passed + failed == 0) {
		fprintf(stderr, "no test case matched\n");
		return 1;
	}
	return failed ? 1 : 0;
}
