// SPDX-License-Identifier: GPL-2.0-only
/* Guest binaries for guest user symbols (docs/perf-data.md, "Guest user symbols"): which ELF
 * files the guest's user-mode samples ran in (the scan: the daemon asks the agent for them at
 * stop), and their install into perf's build-id cache, where perf report looks a guest DSO up
 * by the build-id of its MMAP2 record (the merge: SESSION/binaries/ → BUILDID_DIR). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gbin.h"
#include "merge.h"
#include "util.h"

#define GBIN_MAPS_MAX (1u << 18)
#define GBIN_PIDS_MAX (1u << 20)
#define GBIN_FORK_DEPTH 64

struct gbin_map {
	uint32_t pid;
	uint8_t len, id[ELF_NOTES_BUILD_ID_MAX];
	char *path;
};

struct gbin_fork {
	uint32_t pid, ppid;
};

struct gbin_scan {
	struct gbin_map *maps;
	size_t n_maps, cap_maps;
	uint32_t *hit;
	size_t n_hit, cap_hit;
	struct gbin_fork *forks;
	size_t n_forks, cap_forks;
	uint64_t samples;
};

static int cmp_u32(const void *a, const void *b);

/* Sorts and dedups n pids in place; the new count. */
static size_t gbin_unique(uint32_t *v, size_t n)
{
	size_t w = 0;

	if (n == 0)
		return 0; /* v may be NULL: qsort's is nonnull */
	qsort(v, n, sizeof(*v), cmp_u32);
	for (size_t i = 0; i < n; i++)
		if (!w || v[w - 1] != v[i])
			v[w++] = v[i];
	return w;
}

static int grow(void **v, size_t *cap, size_t n, size_t size, size_t max)
{
	void *p;

	if (n < *cap)
		return 0;
	if (n >= max)
		return -ENOSPC;
	p = reallocarray(*v, *cap ? *cap * 2 : 256, size);
	if (!p)
		return -ENOMEM;
	*v = p;
	*cap = *cap ? *cap * 2 : 256;
	return 0;
}

bool merge_gbin_path_ok(const char *path)
{
	size_t n = strnlen(path, GBIN_PATH_MAX);

	if (n == 0 || n >= GBIN_PATH_MAX || path[0] != '/')
		return false;
	for (const char *c = path; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			return false;
	for (const char *c = path; *c;) {
		size_t l;

		while (*c == '/')
			c++;
		l = strcspn(c, "/");
		if ((l == 1 && c[0] == '.') || (l == 2 && c[0] == '.' && c[1] == '.') || l > NAME_MAX)
			return false;
		c += l;
	}
	return path[n - 1] != '/';
}

void merge_gbin_hex(const uint8_t *id, size_t len, char *out)
{
	for (size_t i = 0; i < len; i++)
		sprintf(out + 2 * i, "%02x", id[i]);
	out[2 * len] = '\0';
}

/* One validated guest perf record (the scan reads MMAP2, FORK and user-mode SAMPLE records). */
static int gbin_record(struct gbin_scan *s, const uint8_t *r)
{
	struct perf_event_header h;
	uint32_t pid, prot;
	int e;

	memcpy(&h, r, sizeof(h));
	if (h.type == PERF_RECORD_SAMPLE && (h.misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_USER) {
		memcpy(&pid, r + 24, 4); /* after id and ip: pid */
		s->samples++;
		if (s->n_hit && s->hit[s->n_hit - 1] == pid)
			return 0;
		if (s->n_hit == s->cap_hit)
			s->n_hit = gbin_unique(s->hit, s->n_hit);
		if ((e = grow((void **)&s->hit, &s->cap_hit, s->n_hit, sizeof(*s->hit), GBIN_PIDS_MAX)) < 0)
			return e;
		s->hit[s->n_hit++] = pid;
	} else if (h.type == PERF_RECORD_FORK) {
		struct gbin_fork f;

		memcpy(&f, r + 8, sizeof(f));
		if (f.pid == f.ppid)
			return 0; /* a thread */
		if ((e = grow((void **)&s->forks, &s->cap_forks, s->n_forks, sizeof(*s->forks), GBIN_PIDS_MAX)) < 0)
			return e;
		s->forks[s->n_forks++] = f;
	} else if (h.type == PERF_RECORD_MMAP2) {
		struct gbin_map *m;
		const char *name = (const char *)r + 72; /* NUL inside the record: checked by the reader */

		memcpy(&pid, r + 8, 4);
		memcpy(&prot, r + 64, 4);
		if (!(prot & PROT_EXEC) || name[0] != '/')
			return 0;
		if ((e = grow((void **)&s->maps, &s->cap_maps, s->n_maps, sizeof(*s->maps), GBIN_MAPS_MAX)) < 0)
			return e;
		m = &s->maps[s->n_maps];
		*m = (struct gbin_map){ .pid = pid };
		if ((h.misc & PERF_RECORD_MISC_MMAP_BUILD_ID) && r[40] > 0 && r[40] <= ELF_NOTES_BUILD_ID_MAX) {
			m->len = r[40];
			memcpy(m->id, r + 44, m->len);
		}
		if (!(m->path = strdup(name)))
			return -ENOMEM;
		s->n_maps++;
	}
	return 0;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static int cmp_want(const void *a, const void *b)
{
	const struct gbin_want *x = a, *y = b;
	int c = memcmp(x->id, y->id, ELF_NOTES_BUILD_ID_MAX);

	return c ? c : (int)x->len - (int)y->len;
}

static int cmp_fork(const void *a, const void *b)
{
	return cmp_u32(&((const struct gbin_fork *)a)->pid, &((const struct gbin_fork *)b)->pid);
}

static bool gbin_has(const uint32_t *v, size_t n, uint32_t pid)
{
	return n && bsearch(&pid, v, n, sizeof(*v), cmp_u32);
}

/* The sampled processes and their ancestors up to their last exec (forks copy the maps). */
static void gbin_closure(struct gbin_scan *s)
{
	size_t n = s->n_hit = gbin_unique(s->hit, s->n_hit);

	if (s->n_forks)
		qsort(s->forks, s->n_forks, sizeof(*s->forks), cmp_fork);
	for (size_t i = 0; i < n; i++) {
		struct gbin_fork key = { .pid = s->hit[i] }, *f;

		for (int d = 0; d < GBIN_FORK_DEPTH; d++) {
			f = s->n_forks ? bsearch(&key, s->forks, s->n_forks, sizeof(*f), cmp_fork) : NULL;
			if (!f || grow((void **)&s->hit, &s->cap_hit, s->n_hit, sizeof(*s->hit), GBIN_PIDS_MAX) < 0)
				break;
			key.pid = f->ppid;
			s->hit[s->n_hit++] = key.pid;
		}
	}
	s->n_hit = gbin_unique(s->hit, s->n_hit);
}

static int gbin_wants(struct gbin_scan *s, struct gbin_list *l)
{
	size_t w = 0;

	l->v = calloc(MAX(s->n_maps, (size_t)1), sizeof(*l->v));
	if (!l->v)
		return -ENOMEM;
	for (size_t i = 0; i < s->n_maps; i++) {
		const struct gbin_map *m = &s->maps[i];

		if (!gbin_has(s->hit, s->n_hit, m->pid))
			continue;
		if (!m->len) {
			l->maps_no_build_id++;
			continue;
		}
		if (!merge_gbin_path_ok(m->path)) {
			l->bad_paths++;
			continue;
		}
		l->v[w].len = m->len;
		memcpy(l->v[w].id, m->id, m->len);
		snprintf(l->v[w].path, sizeof(l->v[w].path), "%s", m->path);
		w++;
	}
	qsort(l->v, w, sizeof(*l->v), cmp_want);
	l->n = 0;
	for (size_t i = 0; i < w; i++)
		if (!l->n || cmp_want(&l->v[l->n - 1], &l->v[i]))
			l->v[l->n++] = l->v[i];
	return 0;
}

int merge_gbin_scan(const char *dir, struct gbin_list *ret)
{
	struct merge_guest g = { .scan_only = true }; /* at stop, before the daemon writes clock.ini */
	struct merge_gperf gp = { 0 };
	struct gbin_scan s = { 0 };
	char why[256];
	int r = merge_guest_load(&g, dir, why, sizeof(why));

	*ret = (struct gbin_list){ 0 };
	if (r >= 0)
		r = merge_gperf_load(&gp, &g, dir);
	for (uint32_t i = 0; r >= 0 && gp.present && i < gp.ncpus_total; i++)
		while (r >= 0 && merge_gperf_peek(&gp, &g, &gp.cpus[i])) {
			r = gbin_record(&s, gp.cpus[i].rec);
			gp.cpus[i].head_valid = false;
		}
	if (r == -ENOSPC)
		r = 0; /* bounded: what was seen so far */
	if (r >= 0) {
		ret->sampled = s.samples;
		gbin_closure(&s);
		r = gbin_wants(&s, ret);
	}
	for (size_t i = 0; i < s.n_maps; i++)
		free(s.maps[i].path);
	free(s.maps);
	free(s.hit);
	free(s.forks);
	merge_gperf_free(&gp);
	merge_guest_free(&g);
	return r;
}

void merge_gbin_list_free(struct gbin_list *l)
{
	free(l->v);
	*l = (struct gbin_list){ 0 };
}

/* BDIR/.build-id/xx/rest (perf's link to the cached file's directory) into buf. */
static void gbin_link(const char *bdir, const uint8_t *id, size_t len, char *buf, size_t size)
{
	char hex[2 * ELF_NOTES_BUILD_ID_MAX + 1];

	merge_gbin_hex(id, len, hex);
	snprintf(buf, size, "%s/.build-id/%.2s/%s", bdir, hex, hex + 2);
}

bool merge_gbin_cached(const char *bdir, const uint8_t *id, size_t len)
{
	char path[PATH_MAX + 64];

	gbin_link(bdir, id, len, path, sizeof(path) - 8);
	strcat(path, "/elf");
	return access(path, R_OK) == 0;
}

/* The directory bdir/rel, each component made (0755) with mkdirat relative to the one above and
 * opened O_NOFOLLOW: nothing in the cache is reached through a link. Its fd or -errno. */
static int gbin_mkdirs_at(int base, const char *rel)
{
	_cleanup_close_ int cur = fcntl(base, F_DUPFD_CLOEXEC, 3);
	char comp[NAME_MAX + 1];

	if (cur < 0)
		return -errno;
	for (const char *c = rel + strspn(rel, "/"); *c; c += strspn(c, "/")) {
		size_t l = strcspn(c, "/");
		int fd;

		if (l > NAME_MAX)
			return -ENAMETOOLONG;
		memcpy(comp, c, l);
		comp[l] = '\0';
		if (mkdirat(cur, comp, 0755) < 0 && errno != EEXIST)
			return -errno;
		if ((fd = openat(cur, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
			return -errno;
		close(cur);
		cur = fd;
		c += l;
	}
	return TAKE_FD(cur);
}

/* dirfd/elf from the binary open as src (its build-id checked on src): a hard link only to an
 * inode of this user's that no one else may write; else a copy (mode at most 0644, and no more
 * than src's), checked again after it was written, so that what the cache holds is what was
 * checked even if src's owner rewrote it meanwhile. 0 (there already too) or -errno. */
static int gbin_place(int dirfd, int src, const struct stat *sb, const uint8_t *id, size_t len)
{
	uint8_t got[ELF_NOTES_BUILD_ID_MAX];
	_cleanup_close_ int fd = -1;
	char proc[48];
	size_t n = 0;
	int r;

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", src);
	if (sb->st_uid == geteuid() && !(sb->st_mode & (S_IWGRP | S_IWOTH)) &&
	    (linkat(AT_FDCWD, proc, dirfd, "elf", AT_SYMLINK_FOLLOW) == 0 || errno == EEXIST))
		return 0;
	fd = openat(dirfd, "elf", O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, sb->st_mode & 0644);
	if (fd < 0)
		return errno == EEXIST ? 0 : -errno;
	r = util_copy_range(src, fd, 0, (uint64_t)sb->st_size);
	if (r == 0 && (elf_file_build_id_fd(fd, (uint64_t)sb->st_size, got, &n) < 0 || n != len || memcmp(got, id, n)))
		r = -ESTALE;
	if (r < 0)
		unlinkat(dirfd, "elf", 0);
	return r;
}

/* perf buildid-cache's layout: BDIR/PATH/HEX/elf and BDIR/.build-id/xx/rest -> ../../PATH/HEX,
 * all made relative to BDIR's descriptor (mkdirat, O_NOFOLLOW, O_EXCL: no link followed). */
int merge_gbin_install(const char *bdir, const char *path, const uint8_t *id, size_t len, int fd)
{
	char hex[2 * ELF_NOTES_BUILD_ID_MAX + 1], rel[PATH_MAX], target[PATH_MAX];
	_cleanup_close_ int base = -1, dir = -1, xx = -1;
	struct stat sb;
	int r;

	if (!merge_gbin_path_ok(path) || len == 0 || len > ELF_NOTES_BUILD_ID_MAX)
		return -EINVAL;
	if (merge_gbin_cached(bdir, id, len))
		return 0;
	if (fd < 0 || fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode))
		return -EBADF;
	merge_gbin_hex(id, len, hex);
	if ((size_t)snprintf(rel, sizeof(rel), "%s/%s", path, hex) >= sizeof(rel))
		return -ENAMETOOLONG;
	snprintf(target, sizeof(target), "../..%s/%s", path, hex);
	if ((r = util_mkdir_p(bdir, 0755)) < 0)
		return r;
	if ((base = open(bdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return -errno;
	if ((dir = gbin_mkdirs_at(base, rel)) < 0)
		return dir;
	if ((r = gbin_place(dir, fd, &sb, id, len)) < 0)
		return r;
	snprintf(rel, sizeof(rel), ".build-id/%.2s", hex);
	if ((xx = gbin_mkdirs_at(base, rel)) < 0)
		return xx;
	if (symlinkat(target, xx, hex + 2) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

void merge_gbin_default_dir(char *buf, size_t size)
{
	const char *home = getenv("HOME");

	snprintf(buf, size, "%s/.debug", home && home[0] ? home : "/root");
}

/* "HEX" of 2..40 lowercase hex digits into id. */
static int gbin_unhex(const char *hex, uint8_t *id, size_t *ret_len)
{
	size_t n = strlen(hex);

	if (n < 2 || n > 2 * ELF_NOTES_BUILD_ID_MAX || n % 2 || strspn(hex, "0123456789abcdef") != n)
		return -EINVAL;
	for (size_t i = 0; i < n / 2; i++)
		sscanf(hex + 2 * i, "%2hhx", &id[i]);
	*ret_len = n / 2;
	return 0;
}

/* Whether the host's own file at the guest's path carries that build-id (trust mode: perf
 * would read the guest's copy for the host's file). */
static bool gbin_host_file_has(const char *path, const uint8_t *id, size_t len)
{
	uint8_t hid[ELF_NOTES_BUILD_ID_MAX];
	char why[128];
	_cleanup_close_ int fd = util_open_input(AT_FDCWD, path, O_RDONLY, why, sizeof(why)); /* no device opened */
	struct stat st;
	size_t n = 0;

	return fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
	       elf_file_build_id_fd(fd, (uint64_t)st.st_size, hid, &n) == 0 && n == len && !memcmp(hid, id, n);
}

/* One "HEX fetched PATH" line: the file checked again (it sat on disk), the host's build-ids
 * refused (-EEXIST), then installed (1: it was there already). */
static int gbin_settle_one(int dfd, const struct gbin_settled *st, const struct gbin_host *host,
			   const char *hex, const char *path, const char *dir)
{
	uint8_t want[ELF_NOTES_BUILD_ID_MAX], id[ELF_NOTES_BUILD_ID_MAX];
	size_t wl = 0, n = 0;
	_cleanup_close_ int fd = -1;
	char bdir[PATH_MAX + 16];
	struct stat sb;
	int r;

	if (gbin_unhex(hex, want, &wl) < 0 || !merge_gbin_path_ok(path))
		return -EINVAL;
	snprintf(bdir, sizeof(bdir), "%s/binaries", dir);
	fd = merge_input_open(dfd, bdir, hex, O_RDONLY); /* a regular file, no link; installed from fd */
	if (fd < 0 || fstat(fd, &sb) < 0)
		return fd < 0 ? fd : -errno;
	if (!S_ISREG(sb.st_mode) || (uint64_t)sb.st_size > VT_BINARY_MAX)
		return -EINVAL;
	if ((r = elf_file_build_id_fd(fd, (uint64_t)sb.st_size, id, &n)) < 0)
		return r;
	if (n != wl || memcmp(id, want, n))
		return -ESTALE;
	if ((host && merge_gbin_host_has(host, id, n)) || (st->trusted && gbin_host_file_has(path, id, n)))
		return -EEXIST;
	if (st->trusted && merge_gbin_cached(st->bdir, id, n))
		return 1;
	return merge_gbin_install(st->bdir, path, id, n, fd);
}

void merge_gbin_session_get(const char *dir, const char *key, char *buf, size_t size)
{
	_cleanup_free_ char *ini = NULL;
	_cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	char pat[64];
	const char *p;

	buf[0] = '\0';
	snprintf(pat, sizeof(pat), "\n%s=", key);
	if (dfd >= 0 && merge_input_read(dfd, dir, "session.ini", 1u << 20, &ini, NULL) == 0 && (p = strstr(ini, pat)))
		snprintf(buf, size, "%.*s", (int)strcspn(p + strlen(pat), "\n"), p + strlen(pat));
}

bool merge_gbin_trusted(const char *dir, bool opt, bool ini)
{
	char v[16];

	if (opt || !ini)
		return opt;
	merge_gbin_session_get(dir, "opt_trust_guest_binaries", v, sizeof(v));
	return !strcmp(v, "1");
}

/* Trusted: session.ini's buildid_dir (where the daemon looked) when ini may say, else $HOME/.debug. */
static void gbin_session_bdir(const char *dir, bool ini, char *buf, size_t size)
{
	buf[0] = '\0';
	if (ini)
		merge_gbin_session_get(dir, "buildid_dir", buf, size);
	if (buf[0] != '/')
		merge_gbin_default_dir(buf, size);
}

/* SESSION/binaries (a directory, no link) and its index, or -ENOENT. */
static int gbin_index(const char *dir, int *ret_dfd, char **ret_text)
{
	_cleanup_close_ int sdfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int dfd = sdfd < 0 ? -1 : merge_input_open(sdfd, dir, "binaries", O_RDONLY | O_DIRECTORY);
	char bdir[PATH_MAX + 16];

	snprintf(bdir, sizeof(bdir), "%s/binaries", dir);
	if (dfd < 0 || merge_input_read(dfd, bdir, "index", 16u << 20, ret_text, NULL) < 0) {
		if (dfd >= 0)
			close(dfd);
		return -ENOENT;
	}
	*ret_dfd = dfd;
	return 0;
}

bool merge_gbin_any(const char *dir)
{
	_cleanup_free_ char *text = NULL;
	_cleanup_close_ int dfd = -1;

	return gbin_index(dir, &dfd, &text) == 0 && strstr(text, " fetched /");
}

static void gbin_settle_line(struct gbin_settled *st, int dfd, const struct gbin_host *host, char *line,
			     const char *dir)
{
	char hex[64], status[64];
	int pos = 0, r;

	if (sscanf(line, "# user-mode samples %*u, their executable mappings without a build-id %" SCNu64,
		   &st->no_build_id) == 1 || line[0] == '#')
		return;
	if (sscanf(line, "%63s %63s %n", hex, status, &pos) < 2 || !pos)
		return;
	if (!strcmp(status, "cached")) {
		st->cached++;
	} else if (!strncmp(status, "cut:", 4)) {
		st->cut++;
	} else if (strcmp(status, "fetched")) {
		st->not_sent++;
	} else if (!st->bdir[0]) {
		st->no_dir++;
	} else if ((r = gbin_settle_one(dfd, st, host, hex, line + pos, dir)) == -EEXIST) {
		st->host_ids++;
	} else if (r == 1) {
		st->cached++;
	} else if (r == 0) {
		st->installed++;
	} else {
		st->bad++;
	}
}

int merge_gbin_settle(const char *dir, const char *out_dir, unsigned trust, const struct gbin_host *host,
		      struct gbin_settled *ret)
{
	_cleanup_free_ char *text = NULL;
	_cleanup_close_ int dfd = -1;

	*ret = (struct gbin_settled){ .trusted = trust != GBIN_INTO_OUTPUT };
	if (gbin_index(dir, &dfd, &text) < 0)
		return -ENOENT;
	if (trust != GBIN_INTO_OUTPUT)
		gbin_session_bdir(dir, trust == GBIN_TRUST_SESSION, ret->bdir, sizeof(ret->bdir));
	else if (out_dir)
		snprintf(ret->bdir, sizeof(ret->bdir), "%s/" GBIN_OUT_DIR, out_dir);
	for (char *line = text, *next; *line; line = next) {
		next = line + strcspn(line, "\n");
		if (*next)
			*next++ = '\0';
		gbin_settle_line(ret, dfd, host, line, dir);
	}
	return 0;
}

/* Removes what dfd holds, depth at most 64 (paths are checked: far fewer levels). */
static int gbin_remove_at(int dfd, int depth)
{
	DIR *d = fdopendir(dfd);
	struct dirent *e;
	int r = 0;

	if (!d) {
		close(dfd);
		return -errno;
	}
	while (r == 0 && (e = readdir(d))) {
		struct stat st;
		int sub;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			r = -errno;
		} else if (!S_ISDIR(st.st_mode)) {
			r = unlinkat(dirfd(d), e->d_name, 0) < 0 ? -errno : 0;
		} else if (depth >= 64) {
			r = -ELOOP;
		} else if ((sub = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
			r = -errno;
		} else if ((r = gbin_remove_at(sub, depth + 1)) == 0) {
			r = unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR) < 0 ? -errno : 0;
		}
	}
	closedir(d);
	return r;
}

int merge_gbin_remove_dir(int parent_fd, const char *name)
{
	int fd = openat(parent_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC), r;

	if (fd < 0)
		return -errno;
	r = gbin_remove_at(fd, 0);
	return r < 0 ? r : unlinkat(parent_fd, name, AT_REMOVEDIR) < 0 ? -errno : 0;
}
