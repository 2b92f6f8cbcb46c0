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

static void unlink_in(const char *dir, const char *name)
{
	char p[PATH_MAX];

	if (snprintf(p, sizeof(p), "%s/%s", dir, name) < (int)sizeof(p))
		unlink(p);
}

/* Removes a perf.data directory this merge could have written (data, kcore_dir__*, buildids); anything
 * else in it is left alone and refused. */
static int dir_remove_ours(const char *path)
{
	_cleanup_close_ int dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d;
	struct dirent *e;
	int r = 0;

	if (dfd < 0 || !(d = fdopendir(dfd)))
		return -errno;
	dfd = -1; /* the DIR owns it */
	while (r == 0 && (e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (!strcmp(e->d_name, "data"))
			r = unlinkat(dirfd(d), "data", 0) < 0 ? -errno : 0;
		else if (!strcmp(e->d_name, GBIN_OUT_DIR))
			r = merge_gbin_remove_dir(dirfd(d), GBIN_OUT_DIR);
		else if (!strncmp(e->d_name, "kcore_dir", 9)) {
			char sub[PATH_MAX + 256];

			if (snprintf(sub, sizeof(sub), "%s/%s", path, e->d_name) >= (int)sizeof(sub)) {
				r = -ENAMETOOLONG;
				break;
			}
			unlink_in(sub, "kallsyms");
			unlink_in(sub, "modules");
			r = rmdir(sub) < 0 ? -errno : 0;
		} else
			r = -ENOTEMPTY;
	}
	closedir(d);
	return r < 0 ? r : rmdir(path) < 0 ? -errno : 0;
}

/* OUT exists: it becomes OUT.old (an older OUT.old goes first). */
static int out_backup(const char *out)
{
	char old[PATH_MAX];
	struct stat st;
	int r = 0;

	if (lstat(out, &st) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (snprintf(old, sizeof(old), "%s.old", out) >= (int)sizeof(old))
		return -ENAMETOOLONG;
	if (lstat(old, &st) == 0)
		r = S_ISDIR(st.st_mode) ? dir_remove_ours(old) : unlink(old) < 0 ? -errno : 0;
	if (r < 0) {
		log_error("%s exists and %s cannot be replaced (%s): move it away, or choose another -o", out, old,
			  strerror(-r));
		return r;
	}
	if (rename(out, old) < 0) {
		log_error("cannot move the existing %s to %s: %s", out, old, strerror(errno));
		return -errno;
	}
	return 0;
}

/* Whether any VM's guest kernel symbols or binaries go with the output. */
static bool dir_wanted(const struct merge_ctx *m)
{
	for (size_t v = 0; v < m->n_vm; v++)
		if (m->vm[v].gp.present && (m->vm[v].gp.ktext || merge_gbin_any(m->vm[v].dir)))
			return true;
	return false;
}

int merge_dir_prepare(struct merge_ctx *m, const char *out, char *data, size_t len)
{
	int r = out_backup(out);

	if (r < 0)
		return r;
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

	if (!vm->gp.present || !vm->gp.ktext)
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
