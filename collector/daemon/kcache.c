// SPDX-License-Identifier: GPL-2.0-only
/* The guest's kallsyms crosses the link once per boot and module set, not per session: the VM
 * dir keeps the last one (cache/kallsyms + cache/kallsyms.key); META_REQ names that key, and an
 * agent whose kallsyms has the same key sends only kallsyms_key, which the session then gets
 * from the cache. The key is the agent's (boot id, kptr_restrict, /proc/modules), 16 hex digits. */
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kcache.h"
#include "log.h"
#include "util.h"

#define KCACHE_MAX (64u << 20)

static bool kcache_key_ok(const char *k, size_t len)
{
	return len == KCACHE_KEY_LEN && strspn(k, "0123456789abcdef") == len;
}

int kcache_key(const char *vm_dir, char key[KCACHE_KEY_LEN + 1])
{
	_cleanup_free_ char *text = NULL;
	char path[PATH_MAX + 32];
	size_t len;

	snprintf(path, sizeof(path), "%s/cache/kallsyms.key", vm_dir);
	if (util_read_file(path, 64, &text, &len) < 0 || !kcache_key_ok(text, len))
		return -ENOENT;
	memcpy(key, text, KCACHE_KEY_LEN + 1);
	return 0;
}

/* data into dir/name through dir/name.tmp and a rename. */
static int kcache_put(const char *dir, const char *name, const char *data, size_t len)
{
	char tmp[PATH_MAX + 64], dst[PATH_MAX + 64];
	int r;

	snprintf(tmp, sizeof(tmp), "%s/%s.tmp", dir, name);
	snprintf(dst, sizeof(dst), "%s/%s", dir, name);
	if ((r = util_write_file(tmp, data, len, 0600)) < 0)
		return r;
	return rename(tmp, dst) < 0 ? -errno : 0;
}

static int kcache_write_at(int dirfd, const char *name, const char *data, size_t len)
{
	_cleanup_close_ int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);

	if (fd < 0)
		return -errno;
	return util_write_full(fd, data, len);
}

int kcache_settle(const char *vm_dir, int guest_dirfd, char *what, size_t whatlen)
{
	_cleanup_free_ char *key = NULL, *syms = NULL;
	char cdir[PATH_MAX + 16], path[PATH_MAX + 32], cached[KCACHE_KEY_LEN + 1];
	size_t klen = 0, slen = 0;
	int r;

	snprintf(what, whatlen, "no kallsyms key from the agent: kallsyms not cached");
	if (util_read_file_at(guest_dirfd, "kallsyms_key", 64, &key, &klen) < 0 || !kcache_key_ok(key, klen))
		return 0;
	snprintf(cdir, sizeof(cdir), "%s/cache", vm_dir);
	if (util_read_file_at(guest_dirfd, "kallsyms", KCACHE_MAX, &syms, &slen) == 0) {
		if ((r = util_mkdir_p(cdir, 0700)) < 0 || (r = kcache_put(cdir, "kallsyms", syms, slen)) < 0 ||
		    (r = kcache_put(cdir, "kallsyms.key", key, klen)) < 0)
			snprintf(what, whatlen, "kallsyms (%zu bytes) received; cannot cache it in %s: %s", slen, cdir,
				 strerror(-r));
		else
			snprintf(what, whatlen, "kallsyms (%zu bytes) received and cached (key %s)", slen, key);
		return 0;
	}
	if (kcache_key(vm_dir, cached) < 0 || strcmp(cached, key)) {
		snprintf(what, whatlen, "the agent sent kallsyms key %s but no kallsyms, and the cache does not hold it",
			 key);
		return -ENOENT;
	}
	snprintf(path, sizeof(path), "%s/kallsyms", cdir);
	if ((r = util_read_file(path, KCACHE_MAX, &syms, &slen)) < 0 ||
	    (r = kcache_write_at(guest_dirfd, "kallsyms", syms, slen)) < 0) {
		snprintf(what, whatlen, "cannot copy the cached kallsyms (%s)", strerror(-r));
		return r;
	}
	snprintf(what, whatlen, "kallsyms unchanged (key %s): %zu bytes from the VM's cache, not the link", key, slen);
	return 0;
}
