// SPDX-License-Identifier: GPL-2.0-only
/* Guest binaries in a build-id cache (collector/merge/gbin.c): which guest paths may be placed,
 * the layout (checked by perf itself in the guest-perf e2e test), the merge's settling of
 * SESSION/binaries/index with a real ELF file (this test's own executable) into perf's cache
 * (trusted) or the output's OUT/buildids, and the refusal of a build-id the host holds
 * (collector/merge/gbinhost.c: host.data's MMAP2 and BUILD_ID feature, the files it names). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <linux/perf_event.h>
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
	CHECK_INT(merge_gbin_settle(dir, NULL, true, NULL, &st), ==, 0); /* trusted: session.ini's buildid_dir */
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
	CHECK_INT(merge_gbin_install(path, "/bin/vt test", id, len, -1), ==, 0); /* there already */
	CHECK_INT(merge_gbin_install(path, "/../x", id, len, 0), ==, -EINVAL);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	CHECK_INT(system(cmd), ==, 0);
}

/* A session dir whose binaries/index lists this executable as the guest's /bin/vt; its hex. */
static void session_with_self(char *dir, char *hex)
{
	char path[PATH_MAX], target[PATH_MAX], cmd[3 * PATH_MAX];
	uint8_t id[ELF_NOTES_BUILD_ID_MAX];
	size_t len = 0;
	FILE *f;

	CHECK(mkdtemp(dir) != NULL);
	CHECK_INT(self_build_id(id, &len), ==, 0);
	merge_gbin_hex(id, len, hex);
	snprintf(path, sizeof(path), "%s/binaries", dir);
	CHECK_INT(mkdir(path, 0755), ==, 0);
	CHECK(realpath("/proc/self/exe", target) != NULL);
	snprintf(cmd, sizeof(cmd), "cp '%s' %s/binaries/%s", target, dir, hex);
	CHECK_INT(system(cmd), ==, 0);
	snprintf(path, sizeof(path), "%s/binaries/index", dir);
	f = fopen(path, "w");
	CHECK(f != NULL);
	fprintf(f, "%s fetched /bin/vt\n0708 cut:no-progress /bin/slow\n", hex);
	fclose(f);
}

/* Default: the output's own OUT/buildids, nothing in $HOME/.debug; removed with the output. */
TEST(settle_into_output)
{
	char dir[] = "/tmp/vt-test-gbin.XXXXXX", hex[48], path[PATH_MAX + 64], cmd[PATH_MAX + 16];
	struct gbin_host host = { 0 };
	struct gbin_settled st;
	int dfd;

	session_with_self(dir, hex);
	CHECK(merge_gbin_any(dir));
	CHECK(!merge_gbin_trusted(dir, false, true));
	snprintf(path, sizeof(path), "%s/out", dir);
	CHECK_INT(mkdir(path, 0700), ==, 0);
	CHECK_INT(merge_gbin_settle(dir, path, false, &host, &st), ==, 0);
	CHECK_INT(st.installed, ==, 1u);
	CHECK_INT(st.cut, ==, 1u);
	CHECK_INT(st.host_ids, ==, 0u);
	snprintf(path, sizeof(path), "%s/out/" GBIN_OUT_DIR "/.build-id/%.2s/%s/elf", dir, hex, hex + 2);
	CHECK_INT(access(path, R_OK), ==, 0);
	CHECK(!strstr(st.bdir, ".debug"));
	/* no output directory (a pipe): nothing placed, said */
	CHECK_INT(merge_gbin_settle(dir, NULL, false, &host, &st), ==, 0);
	CHECK_INT(st.no_dir, ==, 1u);
	snprintf(path, sizeof(path), "%s/out", dir);
	dfd = open(path, O_RDONLY | O_DIRECTORY);
	CHECK(dfd >= 0);
	CHECK_INT(merge_gbin_remove_dir(dfd, GBIN_OUT_DIR), ==, 0);
	CHECK_INT(faccessat(dfd, GBIN_OUT_DIR, F_OK, 0), ==, -1);
	close(dfd);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	CHECK_INT(system(cmd), ==, 0);
}

/* An MMAP2 record of host.data naming path (no build-id in it). */
static void host_mmap2(struct gbin_host *h, const char *path)
{
	uint8_t r[256] = { 0 };
	struct perf_event_header eh = { .type = PERF_RECORD_MMAP2, .size = (uint16_t)((72 + strlen(path) + 1 + 7) / 8 * 8) };

	memcpy(r, &eh, sizeof(eh));
	strcpy((char *)r + 72, path);
	merge_gbin_host_record(h, (const struct perf_event_header *)r);
}

/* A guest binary whose build-id is a host file's that host.data names: refused in both modes
 * (perf reads a host DSO's build-id from the host's file and looks it up in the cache first). */
TEST(host_build_id_refused)
{
	char dir[] = "/tmp/vt-test-gbin.XXXXXX", hex[48], self[PATH_MAX], path[PATH_MAX + 64], cmd[PATH_MAX + 16];
	struct gbin_host host = { 0 };
	struct gbin_settled st;

	session_with_self(dir, hex);
	CHECK(realpath("/proc/self/exe", self) != NULL);
	host_mmap2(&host, "[vdso]");
	host_mmap2(&host, "/nonexistent/lib.so");
	host_mmap2(&host, self);
	host_mmap2(&host, self);
	merge_gbin_host_resolve(&host);
	CHECK_INT(host.files, ==, 1u);
	snprintf(path, sizeof(path), "%s/out", dir);
	CHECK_INT(mkdir(path, 0700), ==, 0);
	CHECK_INT(merge_gbin_settle(dir, path, false, &host, &st), ==, 0);
	CHECK_INT(st.installed, ==, 0u);
	CHECK_INT(st.host_ids, ==, 1u);
	snprintf(path, sizeof(path), "%s/out/" GBIN_OUT_DIR "/.build-id/%.2s/%s", dir, hex, hex + 2);
	CHECK_INT(access(path, F_OK), ==, -1);
	snprintf(path, sizeof(path), "%s/cache", dir); /* trusted: the same, and the cache untouched */
	setenv("HOME", dir, 1);
	CHECK_INT(merge_gbin_settle(dir, NULL, true, &host, &st), ==, 0);
	CHECK_INT(st.host_ids, ==, 1u);
	snprintf(path, sizeof(path), "%s/.debug", dir);
	CHECK_INT(access(path, F_OK), ==, -1);
	merge_gbin_host_free(&host);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	CHECK_INT(system(cmd), ==, 0);
}

/* host.data's BUILD_ID feature: entries with and without their size; a short last entry ends it. */
TEST(host_feature)
{
	uint8_t buf[3 * 64] = { 0 }, id[20], id16[16];
	struct perf_event_header eh = { .misc = 0, .size = 64 };
	struct gbin_host host = { 0 };

	for (int i = 0; i < 20; i++)
		id[i] = (uint8_t)(0x40 + i);
	memcpy(id16, id, 16);
	memcpy(buf, &eh, sizeof(eh));
	memcpy(buf + 12, id, 20);
	strcpy((char *)buf + 36, "/usr/bin/a");
	eh.misc = 1 << 15; /* PERF_RECORD_MISC_BUILD_ID_SIZE */
	memcpy(buf + 64, &eh, sizeof(eh));
	memcpy(buf + 64 + 12, id16, 16);
	buf[64 + 32] = 16;
	eh.size = 4000; /* runs past the buffer: ignored */
	memcpy(buf + 128, &eh, sizeof(eh));
	merge_gbin_host_feature(&host, buf, sizeof(buf));
	merge_gbin_host_sort(&host);
	CHECK_INT(host.n_ids, ==, 2u);
	CHECK(merge_gbin_host_has(&host, id, 20));
	CHECK(merge_gbin_host_has(&host, id16, 16));
	CHECK(!merge_gbin_host_has(&host, id, 19));
	merge_gbin_host_free(&host);
}
