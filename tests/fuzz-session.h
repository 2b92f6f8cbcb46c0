/* SPDX-License-Identifier: GPL-2.0-only */
/* A scratch session dir for the fuzz targets that read one (fuzz-merge, fuzz-session-ini):
 * the ring layout of the host capture in tests/fixtures/ring-overrun (header_page and
 * header_event under guest/events/), files put in by relative name, everything removed at
 * exit (nftw: whatever the target wrote). */
#pragma once
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "util.h"

static const char fuzz_header_page[] =
	"\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n"
	"\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n"
	"\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n"
	"\tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;\n";
static const char fuzz_header_event[] =
	"# compressed entry header\n\ttype_len    :    5 bits\n\ttime_delta  :   27 bits\n"
	"\tarray       :   32 bits\n\n\tpadding     : type == 29\n\ttime_extend : type == 30\n"
	"\ttime_stamp  : type == 31\n\tdata max type_len  == 28\n";

static char fuzz_dir[] = "/tmp/vt-fuzz-session-XXXXXX";

static void fuzz_put(const char *rel, const void *p, size_t len)
{
	char path[sizeof(fuzz_dir) + 64];

	snprintf(path, sizeof(path), "%s/%s", fuzz_dir, rel);
	if (util_write_file(path, p, len, 0600) < 0)
		abort();
}

static int fuzz_rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	remove(path);
	return 0;
}

static void fuzz_cleanup(void)
{
	nftw(fuzz_dir, fuzz_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* Makes the dir with SUBDIR (relative, e.g. "guest/events") and the ring layout. */
static void fuzz_session_setup(const char *subdir)
{
	char path[sizeof(fuzz_dir) + 64];

	if (!mkdtemp(fuzz_dir))
		abort();
	atexit(fuzz_cleanup);
	snprintf(path, sizeof(path), "%s/%s", fuzz_dir, subdir);
	if (util_mkdir_p(path, 0700) < 0)
		abort();
	fuzz_put("guest/events/header_page", fuzz_header_page, sizeof(fuzz_header_page) - 1);
	fuzz_put("guest/events/header_event", fuzz_header_event, sizeof(fuzz_header_event) - 1);
	log_level = -1; /* the readers' complaints are expected here */
}
