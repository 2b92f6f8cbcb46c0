// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "elf_notes.h"
#include "harness.h"
#include "util.h"

/* Appends one note (name with NUL, desc) padded to 4; returns the new length. */
static size_t note(uint8_t *p, size_t off, uint32_t type, const char *name, const void *desc, uint32_t dl)
{
	uint32_t h[3] = { (uint32_t)strlen(name) + 1, dl, type };

	memcpy(p + off, h, 12);
	off += 12;
	memcpy(p + off, name, h[0]);
	off += ALIGN_UP((size_t)h[0], 4);
	memcpy(p + off, desc, dl);
	return off + ALIGN_UP((size_t)dl, 4);
}

TEST(real_kernel_notes)
{
	_cleanup_free_ char *buf = NULL;
	uint8_t id[ELF_NOTES_BUILD_ID_MAX];
	size_t len, n = 0;

	CHECK_INT(util_read_file(VT_SOURCE_ROOT "/tests/fixtures/notes/host-6.18", 4096, &buf, &len), ==, 0);
	CHECK_INT(elf_notes_build_id(buf, len, id, &n), ==, 0);
	CHECK_INT(n, ==, 20);
	CHECK_INT(id[0], ==, 0x48);
	CHECK_INT(id[19], ==, 0x44);
}

TEST(build_id_after_other_notes)
{
	uint8_t buf[256] = { 0 }, id[ELF_NOTES_BUILD_ID_MAX];
	static const uint8_t bid[16] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };
	size_t len = note(buf, 0, 0x101, "Linux", "abc", 3), n = 0;

	len = note(buf, len, 3, "GNX", bid, 16);    /* right type, wrong owner */
	len = note(buf, len, 1, "GNU", bid, 16);    /* right owner, wrong type */
	len = note(buf, len, 3, "GNU", bid, 16);
	CHECK_INT(elf_notes_build_id(buf, len, id, &n), ==, 0);
	CHECK_INT(n, ==, 16);
	CHECK(!memcmp(id, bid, 16));
}

TEST(rejects)
{
	uint8_t buf[256] = { 0 }, id[ELF_NOTES_BUILD_ID_MAX], big[24] = { 0 };
	size_t len, n = 77;
	uint32_t huge[3] = { 4, 0xfffffffdu, 3 };

	CHECK_INT(elf_notes_build_id(buf, 0, id, &n), ==, -ENOENT);
	len = note(buf, 0, 0x101, "Linux", "abc", 3);
	CHECK_INT(elf_notes_build_id(buf, len, id, &n), ==, -ENOENT);
	CHECK_INT(elf_notes_build_id(buf, len - 1, id, &n), ==, -EBADMSG); /* desc cut */
	CHECK_INT(elf_notes_build_id(buf, len + 5, id, &n), ==, -EBADMSG); /* trailing half header */
	memcpy(buf, huge, 12);
	memcpy(buf + 12, "GNU", 4);
	CHECK_INT(elf_notes_build_id(buf, 64, id, &n), ==, -EBADMSG);
	len = note(buf, 0, 3, "GNU", big, 24);
	CHECK_INT(elf_notes_build_id(buf, len, id, &n), ==, -EMSGSIZE);
	len = note(buf, 0, 3, "GNU", big, 0);
	CHECK_INT(elf_notes_build_id(buf, len, id, &n), ==, -EMSGSIZE);
	CHECK_INT(n, ==, 77); /* untouched on failure */
}

/* readelf's "Build ID: <hex>" line for path, the independent reader. */
static int readelf_build_id(const char *path, char *hex, size_t size)
{
	char cmd[512], line[256];
	FILE *f;
	int r = -ENOENT;

	snprintf(cmd, sizeof(cmd), "readelf -n '%s' 2>/dev/null", path);
	f = popen(cmd, "r");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f))
		if (r < 0 && sscanf(line, " Build ID: %64s", hex) == 1 && strlen(hex) < size)
			r = 0;
	pclose(f);
	return r;
}

static void hexify(const uint8_t *id, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", id[i]);
}

/* Real binaries of this machine: the test itself (ours, PIE), a static one and a shared library
 * when there (Debian's busybox-static, libc); their build-id as readelf reads it, also from only
 * the file's first 4 KiB (where the linker puts the note), and -ENOEXEC / -EBADMSG past them. */
TEST(real_elf_files)
{
	char self[PATH_MAX] = "";
	const char *paths[] = { self, "/bin/busybox", "/lib/x86_64-linux-gnu/libc.so.6" };
	unsigned seen = 0;

	CHECK(realpath("/proc/self/exe", self) != NULL); /* readelf's own /proc/self is readelf */

	for (size_t i = 0; i < ARRAY_SIZE(paths); i++) {
		_cleanup_free_ char *buf = NULL;
		char want[80], got[80];
		uint8_t id[ELF_NOTES_BUILD_ID_MAX];
		size_t len, n = 0;

		if (util_read_file(paths[i], 64u << 20, &buf, &len) < 0 || readelf_build_id(paths[i], want, sizeof(want)) < 0)
			continue;
		CHECK_INT(elf_file_build_id_mem(buf, len, id, &n), ==, 0);
		hexify(id, n, got);
		CHECK_STR(got, want);
		CHECK_INT(elf_file_build_id_mem(buf, MIN(len, (size_t)4096), id, &n), ==, 0);
		CHECK_INT(elf_file_build_id_mem(buf, 40, id, &n), ==, -ENOEXEC);
		buf[5] = 2; /* big endian: not read */
		CHECK_INT(elf_file_build_id_mem(buf, len, id, &n), ==, -ENOEXEC);
		buf[5] = 1;
		memset(buf + 0x38, 0xff, 2); /* e_phnum 65535 (ELF64) */
		CHECK_INT(elf_file_build_id_mem(buf, len, id, &n), ==, -EBADMSG);
		seen++;
	}
	CHECK_INT(seen, >=, 1u); /* at least the test's own executable, with readelf (binutils) */
}
