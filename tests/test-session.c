// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "harness.h"
#include "session.h"
#include "util.h"

TEST(create_write_get_set)
{
	char tmpl[] = "/tmp/vt-test-session.XXXXXX", buf[64], cmd[128];
	struct session_info s = { 0 };
	struct stat st;

	CHECK(mkdtemp(tmpl));
	CHECK_INT(session_create(tmpl, &s), ==, 0);
	CHECK_INT(stat(s.dir, &st), ==, 0);
	CHECK_INT(st.st_mode & 0777, ==, 0700);
	snprintf(s.vm, sizeof(s.vm), "vm1");
	s.session_id = 18446744073709551615ull;
	snprintf(s.state, sizeof(s.state), "starting");
	CHECK_INT(session_write(&s), ==, 0);
	CHECK_INT(session_set_state(&s, "tracing"), ==, 0);
	CHECK_INT(session_ini_get(s.dir, "state", buf, sizeof(buf)), ==, 0);
	CHECK_STR(buf, "tracing");
	CHECK_INT(session_ini_get(s.dir, "session_id", buf, sizeof(buf)), ==, 0);
	CHECK_STR(buf, "18446744073709551615");
	CHECK_INT(session_ini_set(s.dir, "state", "merged"), ==, 0);
	CHECK_INT(session_ini_get(s.dir, "state", buf, sizeof(buf)), ==, 0);
	CHECK_STR(buf, "merged");
	CHECK_INT(session_ini_get(s.dir, "vm", buf, sizeof(buf)), ==, 0); /* neighbours intact */
	CHECK_STR(buf, "vm1");
	CHECK_INT(session_ini_set(s.dir, "newkey", "x"), ==, 0);
	CHECK_INT(session_ini_get(s.dir, "newkey", buf, sizeof(buf)), ==, 0);
	CHECK_STR(buf, "x");
	CHECK_INT(session_ini_get(s.dir, "nokey", buf, sizeof(buf)), ==, -ENOENT);
	CHECK_INT(session_ini_get(s.dir, "vm", buf, 2), ==, -ENAMETOOLONG);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpl);
	CHECK_INT(system(cmd), ==, 0);
}

TEST(two_sessions_same_second_get_distinct_dirs)
{
	char tmpl[] = "/tmp/vt-test-session.XXXXXX", cmd[128];
	struct session_info a = { 0 }, b = { 0 };

	CHECK(mkdtemp(tmpl));
	CHECK_INT(session_create(tmpl, &a), ==, 0);
	CHECK_INT(session_create(tmpl, &b), ==, 0);
	CHECK(strcmp(a.dir, b.dir) != 0);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpl);
	CHECK_INT(system(cmd), ==, 0);
}
