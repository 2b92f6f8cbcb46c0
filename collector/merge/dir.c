// SPDX-License-Identifier: GPL-2.0-only
/* Where the merge writes: OUT as a perf.data file, or, when the guest's kernel symbols go with
 * it (guest perf samples and the guest's kallsyms), a perf.data directory as perf >= 6.0 reads
 * it: OUT/data plus OUT/kcore_dir__<qemu pid>/kallsyms, from which perf names the guest
 * machine's kernel functions with no options. An existing OUT is kept as OUT.old, the way
 * perf record treats its -o. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collector.h"
#include "log.h"
#include "out.h"
#include "util.h"

#define KALLSYMS_MAX (64u << 20)

/* The newest host.data.<timestamp> perf record --switch-output wrote in dir (its names sort
 * by time), or -ENOENT. */
int merge_newest_host_dump(const char *dir, char *buf, size_t len)
{
	DIR *d = opendir(dir);
	char best[256] = "";

	if (!d)
		return -errno;
	for (struct dirent *de; (de = readdir(d));)
		if (!strncmp(de->d_name, "host.data.", 10) && strlen(de->d_name) < sizeof(best) &&
		    strspn(de->d_name + 10, "0123456789") == strlen(de->d_name + 10) && strcmp(de->d_name, best) > 0)
			snprintf(best, sizeof(best), "%s", de->d_name);
	closedir(d);
	if (!best[0])
		return -ENOENT;
	return snprintf(buf, len, "%s/%s", dir, best) < (int)len ? 0 : -ENAMETOOLONG;
}

/* A kcore_dir__* of an OUT.old being removed: a real directory of ours (opened O_NOFOLLOW, never
 * a link followed), its kallsyms and modules removed by name inside it, then itself. */
static int dir_remove_kcore(int dfd, const char *name)
{
	_cleanup_close_ int sub = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;

	if (sub < 0)
		return errno == ENOTDIR ? -ELOOP : -errno; /* a link, or a file */
	if (fstat(sub, &st) < 0)
		return -errno;
	if (st.st_uid != geteuid())
		return -EPERM;
	if ((unlinkat(sub, "kallsyms", 0) < 0 && errno != ENOENT) || (unlinkat(sub, "modules", 0) < 0 && errno != ENOENT))
		return -errno;
	return unlinkat(dfd, name, AT_REMOVEDIR) < 0 ? -errno : 0;
}

/* Removes what the perf.data directory dfd holds of a merge (data, kcore_dir__*, buildids), all
 * relative to dfd, which it closes; anything else is left alone and refused. */
static int dir_remove_ours(int dfd)
{
	DIR *d = fdopendir(dfd);
	struct dirent *e;
	int r = 0;

	if (!d) {
		close(dfd);
		return -errno;
	}
	while (r == 0 && (e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (!strcmp(e->d_name, "data"))
			r = unlinkat(dirfd(d), "data", 0) < 0 ? -errno : 0;
		else if (!strcmp(e->d_name, GBIN_OUT_DIR))
			r = merge_gbin_remove_dir(dirfd(d), GBIN_OUT_DIR);
		else if (!strncmp(e->d_name, "kcore_dir", 9))
			r = dir_remove_kcore(dirfd(d), e->d_name);
		else
			r = -ENOTEMPTY;
	}
	closedir(d);
	return r;
}

/* OUT.old (name in the directory parent) as an earlier merge left it, removed: a file or a
 * link by its name; a directory through its descriptor, opened O_NOFOLLOW, and only when it is
 * ours, never through a link, so nothing outside it is removed. 0 or -errno, why said. */
static int dir_remove_old(int parent, const char *name, const char *out, char *why, size_t len)
{
	struct stat st;
	int dfd, r;

	if (fstatat(parent, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		r = errno == ENOENT ? 0 : -errno;
	else if (!S_ISDIR(st.st_mode))
		r = unlinkat(parent, name, 0) < 0 && errno != ENOENT ? -errno : 0;
	else if ((dfd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
		r = -errno;
	else if (fstat(dfd, &st) == 0 && st.st_uid != geteuid()) {
		close(dfd);
		snprintf(why, len, "%s.old is a directory of uid %u, not ours (uid %u): it is not removed (what another "
			 "user made may link anywhere); remove it yourself, or choose another -o", out, (unsigned)st.st_uid,
			 (unsigned)geteuid());
		return -EPERM;
	} else if ((r = dir_remove_ours(dfd)) == 0)
		r = unlinkat(parent, name, AT_REMOVEDIR) < 0 ? -errno : 0;
	if (r < 0)
		snprintf(why, len, "%s.old cannot be replaced (%s%s): move it away, or choose another -o", out,
			 r == -ELOOP || r == -EPERM ? "it holds a link or another user's directory, not followed: " : "",
			 strerror(-r));
	return r;
}

int merge_dir_keep_old(const char *out, char *why, size_t len)
{
	const char *slash = strrchr(out, '/'), *base = slash ? slash + 1 : out;
	char dir[PATH_MAX], old[NAME_MAX + 1];
	_cleanup_close_ int parent = -1;
	struct stat st;
	int r;

	snprintf(why, len, "%s: %s", out, strerror(ENAMETOOLONG));
	if (snprintf(old, sizeof(old), "%s.old", base) >= (int)sizeof(old) ||
	    snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - out) + 1 : 1, slash ? out : ".") >= (int)sizeof(dir))
		return -ENAMETOOLONG;
	parent = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (parent < 0 || fstatat(parent, base, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		r = -errno;
		snprintf(why, len, "%s: %s", out, strerror(-r));
		return r == -ENOENT && parent >= 0 ? 0 : r;
	}
	if ((r = dir_remove_old(parent, old, out, why, len)) < 0)
		return r;
	if (renameat(parent, base, parent, old) < 0) {
		r = -errno;
		snprintf(why, len, "cannot move it to %s.old: %s", out, strerror(-r));
		return r;
	}
	return 0;
}

/* Whether any VM's guest kernel symbols or binaries go with the output. */
static bool dir_wanted(const struct merge_ctx *m)
{
	for (size_t v = 0; v < m->n_vm; v++)
		if (merge_out_vm_ktext(&m->vm[v]) || (m->vm[v].gp.present && merge_gbin_any(m->vm[v].dir)))
			return true;
	return false;
}

int merge_dir_prepare(struct merge_ctx *m, const char *out, char *data, size_t len)
{
	char why[PATH_MAX + 256];
	int r = merge_dir_keep_old(out, why, sizeof(why));

	if (r < 0) {
		log_error("%s exists: %s", out, why);
		return r;
	}
	/* guest binaries go in OUT/buildids (merge_gbin_settle) */
	m->out_dir = dir_wanted(m);
	if (!m->out_dir) {
		snprintf(data, len, "%s", out);
		return 0;
	}
	if (mkdir(out, 0700) < 0) {
		log_error("%s: cannot create the perf.data directory: %s", out, strerror(errno));
		return -errno;
	}
	if (snprintf(data, len, "%s/data", out) >= (int)len)
		return -ENAMETOOLONG;
	return 0;
}

/* OUT/kcore_dir__<its qemu pid>/kallsyms from a VM's session dir. */
static int dir_kcore(struct merge_vm *vm, const char *out)
{
	_cleanup_free_ char *text = NULL;
	_cleanup_close_ int dfd = -1;
	char dst[PATH_MAX];
	size_t n;
	int r;

	if (!merge_out_vm_ktext(vm))
		return 0;
	if ((dfd = merge_input_dir(&vm->guest, vm->dir)) < 0)
		return dfd;
	if ((r = merge_input_read(dfd, vm->dir, "guest/kallsyms", KALLSYMS_MAX, &text, &n)) < 0)
		return r;
	snprintf(dst, sizeof(dst), "%s/kcore_dir__%llu", out, (unsigned long long)vm->guest.machine_pid);
	if (mkdir(dst, 0700) < 0 && errno != EEXIST)
		return -errno;
	if (snprintf(dst, sizeof(dst), "%s/kcore_dir__%llu/kallsyms", out,
		     (unsigned long long)vm->guest.machine_pid) >= (int)sizeof(dst))
		return -ENAMETOOLONG;
	if ((r = util_write_file(dst, text, n, 0600)) < 0)
		return r;
	vm->kcore_written = true; /* the summary names it */
	return 0;
}

int merge_dir_finish(struct merge_ctx *m, const char *out)
{
	int r = 0;

	for (size_t v = 0; m->out_dir && v < m->n_vm && r >= 0; v++)
		r = dir_kcore(&m->vm[v], out);
	return r;
}
