/* SPDX-License-Identifier: GPL-2.0-only */
/* Guest binaries for guest user symbols: the scan of a session's guest perf streams for the ELF
 * files its user-mode samples ran in, and their install into perf's build-id cache. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "elf_notes.h"

#define GBIN_PATH_MAX 1024 /* a longer guest path is not fetched */

struct gbin_want {
	uint8_t len, id[ELF_NOTES_BUILD_ID_MAX];
	char path[GBIN_PATH_MAX];
};

struct gbin_list {
	struct gbin_want *v; /* distinct build-ids, sorted */
	size_t n;
	uint64_t sampled;           /* user-mode samples seen */
	uint64_t maps_no_build_id;  /* executable file mappings of sampled processes without one */
	uint64_t bad_paths;         /* ... whose path is not a plain absolute path */
};

/* The binaries the guest perf samples of session dir ran in: the executable file mappings
 * (MMAP2 records with a build-id) of every process with a user-mode sample and of the
 * processes it was forked from. 0 (an empty list without guest perf) or a negative errno. */
int merge_gbin_scan(const char *dir, struct gbin_list *ret);
void merge_gbin_list_free(struct gbin_list *l);
/* An absolute path of at most GBIN_PATH_MAX bytes, no control characters, no "." or ".."
 * component: the only guest paths placed under the build-id cache. */
bool merge_gbin_path_ok(const char *path);
void merge_gbin_hex(const uint8_t *id, size_t len, char *out);
/* Whether perf's build-id cache at bdir holds build-id id. */
bool merge_gbin_cached(const char *bdir, const uint8_t *id, size_t len);
/* Places file (a guest binary whose build-id was checked) in the cache at bdir as the guest's
 * path, the layout 'perf buildid-cache --add' writes; 0 when it is there already. */
int merge_gbin_install(const char *bdir, const char *path, const uint8_t *id, size_t len, const char *file);
/* perf's default cache: $HOME/.debug. */
void merge_gbin_default_dir(char *buf, size_t size);

struct gbin_settled {
	char bdir[4096];
	unsigned installed, cached, not_sent, bad;
	uint64_t no_build_id;
};

/* The merge's part: every binary SESSION/binaries/index lists as fetched, checked again and
 * placed in the build-id cache (session.ini buildid_dir, else $HOME/.debug). -ENOENT when the
 * session fetched none (no guest perf, or --no-guest-binaries). */
int merge_gbin_settle(const char *dir, struct gbin_settled *ret);
