/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

#include <stddef.h>

/* kcache.c: the VM's cached guest kallsyms (VM_DIR/cache/kallsyms and kallsyms.key). */
#define KCACHE_KEY_LEN 16
/* The cached kallsyms' key, or -ENOENT. */
int kcache_key(const char *vm_dir, char key[KCACHE_KEY_LEN + 1]);
/* After META: a kallsyms that came caches it; a kallsyms_key alone that matches the cache puts
 * the cached copy into the session. *what says which; -errno when the session has none. */
int kcache_settle(const char *vm_dir, int guest_dirfd, char *what, size_t whatlen);
