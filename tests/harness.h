/* SPDX-License-Identifier: GPL-2.0-only */
/* Tiny test harness: self-registering cases, checks that print file:line and the expression.
 * Run all cases: ./test-foo   Run some: ./test-foo name1 name2 */
#pragma once

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

struct test_case {
	const char *name;
	void (*fn)(void);
	struct test_case *next;
};

void test_register(struct test_case *tc);
void test_fail(const char *file, int line, const char *expr, const char *detail);

#define TEST(nm)                                                                    \
	static void test_##nm(void);                                                \
	static struct test_case test_case_##nm = { .name = #nm, .fn = test_##nm };  \
	__attribute__((constructor)) static void test_register_##nm(void)          \
	{                                                                           \
		test_register(&test_case_##nm);                                     \
	}                                                                           \
	static void test_##nm(void)

/* A failed check ends the current case (return from the case function). */
#define CHECK(expr)                                                        \
	do {                                                               \
		if (!(expr)) {                                             \
			test_fail(__FILE__, __LINE__, #expr, NULL);        \
			return;                                            \
		}                                                          \
	} while (0)

#define CHECK_INT(a, op, b)                                                                      \
	do {                                                                                     \
		long long _a = (long long)(a), _b = (long long)(b);                              \
		if (!(_a op _b)) {                                                               \
			char _d[128];                                                            \
			snprintf(_d, sizeof(_d), "%lld %s %lld", _a, #op, _b);                   \
			test_fail(__FILE__, __LINE__, #a " " #op " " #b, _d);                    \
			return;                                                                  \
		}                                                                                \
	} while (0)

#define CHECK_STR(a, b)                                                                          \
	do {                                                                                     \
		const char *_a = (a), *_b = (b);                                                 \
		if (!_a || !_b || strcmp(_a, _b)) {                                              \
			char _d[1200];                                                            \
			snprintf(_d, sizeof(_d), "\"%s\" != \"%s\"", _a ? _a : "(null)",        \
				 _b ? _b : "(null)");                                            \
			test_fail(__FILE__, __LINE__, #a " == " #b, _d);                         \
			return;                                                                  \
		}                                                                                \
	} while (0)
