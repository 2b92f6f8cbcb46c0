// SPDX-License-Identifier: GPL-2.0-only
/* Guest binaries in perf's build-id cache (collector/merge/gbin.c): which guest paths may be
 * placed, the layout (checked by perf itself in the guest-perf e2e test), and the merge's
 * settling of SESSION/binaries/index with a real ELF file (this test's own executable). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gbin.h"
#include "harness.h"
#include "util.h"

TEST(path_ok)
{
	static const char *good[] = { "/bin/busybox", "/usr/lib/x86_64-linux-gnu/libc.so.6", "/a b/c", "/x..y/.z" };
	static const char *bad[] = { "", "bin/busybox", "/", "/bin/", "/../etc/passwd", "/bin/../../x", "/./x",
				     "/bin/.", "/tab\there", "/nl\nx", "/del\x7f" };
	char longp[GBIN_PATH_MAX + 8];

	for (size_t i = 0; i < ARRAY_SIZE(good); i++)
		CHECK(merge_gbin_path_ok(good[i]));
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		CHECK(!merge_gbin_path_ok(bad[i]));
	memset(longp, 'a', sizeof(longp) - 1);
	longp[0] = '/';
	longp[sizeof(longp) - 1] = '\0';
	CHECK(!merge_gbin_path_ok(longp));
}

static int self_build_id(uint8_t *id, size_t *len)
{
	_cleanup_free_ char *buf = NULL;
	size_t n;
	int r = util_read_file("/proc/self/exe", 64u << 20, &buf, &n);

	return r < 0 ? r : elf_file_build_id_mem(buf, n, id, len);
}

TEST(install_and_settle)
{
	char dir[] = "/tmp/vt-test-gbin.XXXXXX", path[PATH_MAX], hex[48], target[PATH_MAX], cmd[3 * PATH_MAX];
	uint8_t id[ELF_NOTES_BUILD_ID_MAX], other[ELF_NOTES_BUILD_ID_MAX] = { 1, 2, 3 };
	size_t len = 0;
	struct gbin_settled st;
	ssize_t n;
	FILE *f;

	CHECK(mkdtemp(dir) != NULL);
	CHECK_INT(self_build_id(id, &len), ==, 0);
	merge_gbin_hex(id, len, hex);
	/* a session dir: binaries/HEX (a copy of this executable), binaries/index, session.ini */
	snprintf(path, sizeof(path), "%s/binaries", dir);
	CHECK_INT(mkdir(path, 0755), ==, 0);
	CHECK(realpath("/proc/self/exe", target) != NULL); /* cp's own /proc/self is cp */
	snprintf(cmd, sizeof(cmd), "cp '%s' %s/binaries/%s && cp '%s' %s/binaries/0102", target, dir, hex, target, dir);
	CHECK_INT(system(cmd), ==, 0);
	snprintf(path, sizeof(path), "%s/session.ini", dir);
	f = fopen(path, "w");
	CHECK(f != NULL);
	fprintf(f, "vm=t\nbuildid_dir=%s/cache\n", dir);
	fclose(f);
	snprintf(path, sizeof(path), "%s/binaries/index", dir);
	f = fopen(path, "w");
	CHECK(f != NULL);
	fprintf(f, "# buildid_dir x\n# user-mode samples 9, their executable mappings without a build-id 2, with a path "
		   "not fetched 0\n%s fetched /bin/vt test\n0102 fetched /bin/other\n%s fetched /../escape\n"
		   "0304 cached /bin/y\n0506 refused /bin/z\n", hex, hex);
	fclose(f);
	CHECK_INT(merge_gbin_settle(dir, &st), ==, 0);
	CHECK_INT(st.installed, ==, 1u);
	CHECK_INT(st.bad, ==, 2u); /* 0102 is not that file's build-id; /../escape is not a plain path */
	CHECK_INT(st.cached, ==, 1u);
	CHECK_INT(st.not_sent, ==, 1u);
	CHECK_INT(st.no_build_id, ==, 2u);
	/* perf buildid-cache's layout */
	snprintf(path, sizeof(path), "%s/cache/.build-id/%.2s/%s", dir, hex, hex + 2);
	n = readlink(path, target, sizeof(target) - 1);
	CHECK(n > 0);
	target[n > 0 ? n : 0] = '\0';
	snprintf(cmd, sizeof(cmd), "../../bin/vt test/%s", hex);
	CHECK(!strcmp(target, cmd));
	snprintf(path, sizeof(path), "%s/cache/bin/vt test/%s/elf", dir, hex);
	CHECK_INT(access(path, R_OK), ==, 0);
	snprintf(path, sizeof(path), "%s/cache", dir);
	CHECK(merge_gbin_cached(path, id, len));
	CHECK(!merge_gbin_cached(path, other, 3));
	CHECK_INT(merge_gbin_install(path, "/bin/vt test", id, len, "/nonexistent"), ==, 0); /* there already */
	CHECK_INT(merge_gbin_install(path, "/../x", id, len, "/proc/self/exe"), ==, -EINVAL);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	CHECK_INT(system(cmd), ==, 0);
}
