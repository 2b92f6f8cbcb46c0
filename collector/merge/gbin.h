/* SPDX-License-Identifier: GPL-2.0-only */
/* Guest binaries for guest user symbols: the scan of a session's guest perf streams for the ELF
 * files its user-mode samples ran in, and their install into perf's build-id cache. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "elf_notes.h"

#define GBIN_PATH_MAX 1024 /* a longer guest path is not fetched */
#define GBIN_OUT_DIR "buildids" /* OUT/buildids: the output's own build-id cache (perf --buildid-dir) */

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
/* Places the guest binary open as fd (its build-id checked on fd) in the cache at bdir as the
 * guest's path, the layout 'perf buildid-cache --add' writes; 0 when it is there already. From fd
 * only, never by a path: a hard link when fd's inode is this user's and no one else may write it,
 * else a copy (mode at most 0644) whose build-id is checked again; every directory made with
 * mkdirat below bdir's descriptor, nothing followed. */
int merge_gbin_install(const char *bdir, const char *path, const uint8_t *id, size_t len, int fd);
/* perf's default cache: $HOME/.debug. */
void merge_gbin_default_dir(char *buf, size_t size);

/* ---- gbinhost.c: the host's build-ids, which no guest binary may take ---- */
struct gbin_id {
	uint8_t len, id[ELF_NOTES_BUILD_ID_MAX];
};

struct gbin_host {
	struct gbin_id *ids; /* host.data's and its files' build-ids */
	size_t n_ids, cap_ids;
	bool sorted;
	char **paths; /* host paths host.data's MMAP/MMAP2 records name */
	size_t n_paths, cap_paths;
	uint64_t files;    /* host files whose build-id was read */
	uint64_t overflow; /* paths or ids past the bounds, not checked */
};

struct perf_event_header;
/* One host.data record: MMAP and MMAP2 (their path, an MMAP2 build-id); others are ignored. */
void merge_gbin_host_record(struct gbin_host *h, const struct perf_event_header *e);
/* host.data's BUILD_ID feature (perf's layout; bounds-checked). */
void merge_gbin_host_feature(struct gbin_host *h, const uint8_t *buf, size_t len);
/* Reads the build-id of every host file named (after the last record), and sorts. */
void merge_gbin_host_resolve(struct gbin_host *h);
void merge_gbin_host_sort(struct gbin_host *h);
bool merge_gbin_host_has(const struct gbin_host *h, const uint8_t *id, size_t len);
void merge_gbin_host_free(struct gbin_host *h);

struct gbin_settled {
	char bdir[4096];
	bool trusted; /* into the user's cache ($HOME/.debug): --trust-guest-binaries */
	unsigned installed, cached, not_sent, bad, host_ids, no_dir;
	uint64_t no_build_id, cut;
};

/* The merge's part: every binary SESSION/binaries/index lists as fetched, checked again and
 * placed in a build-id cache: OUT/buildids (out_dir, a perf.data directory; NULL: nowhere, pipe
 * output), or with trust (the merge's --trust-guest-binaries or session.ini
 * opt_trust_guest_binaries=1) perf's own cache (GBIN_TRUST_SESSION: session.ini buildid_dir, else
 * $HOME/.debug). A
 * build-id the host holds (host: host.data's and its files'; in the user's cache, one there
 * already) is never placed: counted in host_ids. -ENOENT when the session fetched none (no guest
 * perf, or --no-guest-binaries). */
enum {
	GBIN_INTO_OUTPUT = 0,   /* OUT/buildids */
	GBIN_TRUST_SESSION = 1, /* perf's cache: session.ini's buildid_dir, else $HOME/.debug */
	GBIN_TRUST_HOME = 2,    /* perf's cache, $HOME/.debug: session.ini not asked (vm.c: input only) */
};
int merge_gbin_settle(const char *dir, const char *out_dir, unsigned trust, const struct gbin_host *host,
		      struct gbin_settled *ret);
/* Whether SESSION/binaries/index lists a fetched binary (the output then is a directory). */
bool merge_gbin_any(const char *dir);
/* Whether the merge of session dir places guest binaries in the user's cache: opt
 * (--trust-guest-binaries), or, when ini (a dir the merge trusts), session.ini's
 * opt_trust_guest_binaries=1. */
bool merge_gbin_trusted(const char *dir, bool opt, bool ini);
/* session.ini's value of key in dir ("" when absent), read as an input (input.c). */
void merge_gbin_session_get(const char *dir, const char *key, char *buf, size_t size);
/* Removes OUT/buildids as the merge wrote it (directories, files, symlinks; nothing followed). */
int merge_gbin_remove_dir(int parent_fd, const char *name);
