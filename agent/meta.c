// SPDX-License-Identifier: GPL-2.0-only
/* The metadata reply: the guest files the host needs to decode the pages (docs/protocol.md). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent.h"
#include "log.h"
#include "util.h"

/* Each file fits in one frame with its name; the whole reply is bounded too. */
#define META_FILE_MAX (VT_PROTO_MAX_PAYLOAD - VT_PROTO_MAX_STR - 64)
#define META_TOTAL_MAX (256u << 20)

struct meta_ctx {
	struct agent *a;
	struct vt_buf *out;
	uint32_t seq;
	uint32_t count;
};

/* Appends one META_FILE frame, unless it would pass the reply's bound. */
static int meta_put(struct meta_ctx *c, const char *name, const char *data, size_t len)
{
	int r;

	if (c->out->len + len > META_TOTAL_MAX) {
		log_warn("metadata: leaving out %s: the reply would pass %u MiB", name, META_TOTAL_MAX >> 20);
		return 0;
	}
	vt_msg_begin(c->out, VT_MSG_META_FILE, c->seq);
	vt_put_str(c->out, VT_A_FILE_NAME, name);
	vt_put_bytes(c->out, VT_A_FILE_DATA, data, len);
	r = vt_msg_end(c->out);
	if (r == 0)
		c->count++;
	return r;
}

/* Sends one file; a file that is missing or too big is left out with a warning. */
static int meta_send(struct meta_ctx *c, const char *name, const char *path)
{
	_cleanup_free_ char *data = NULL;
	size_t len;
	uint64_t c0 = util_now_ns(CLOCK_PROCESS_CPUTIME_ID);
	int r = util_read_file(path, META_FILE_MAX, &data, &len);

	if (r < 0) {
		log_warn("metadata: leaving out %s: %s", path, strerror(-r));
		return r == -ENOMEM ? r : 0;
	}
	r = meta_put(c, name, data, len);
	log_debug("metadata: %s, %zu bytes, %" PRIu64 " us CPU", name, len,
		  (util_now_ns(CLOCK_PROCESS_CPUTIME_ID) - c0) / 1000);
	return r;
}

/* What /proc/kallsyms depends on: the boot, loaded modules (their addresses too) and
 * kptr_restrict; as 16 hex digits (FNV-1a 64), the key the host caches it under. */
static int meta_kallsyms_key(char **ret)
{
	_cleanup_free_ char *mods = NULL, *kptr = NULL, *boot = NULL;
	const char *parts[3];
	uint64_t h = 0xcbf29ce484222325ull;
	size_t len;
	int r = util_read_file("/proc/modules", META_FILE_MAX, &mods, &len);

	if (r == -ENOENT)
		mods = strdup(""); /* no module support */
	else if (r < 0)
		return r;
	if (!mods || util_read_file("/proc/sys/kernel/kptr_restrict", 64, &kptr, NULL) < 0)
		kptr = strdup("?");
	if (util_read_file("/proc/sys/kernel/random/boot_id", 64, &boot, NULL) < 0)
		boot = strdup("?");
	if (!mods || !kptr || !boot)
		return -ENOMEM;
	parts[0] = boot, parts[1] = kptr, parts[2] = mods;
	for (size_t i = 0; i < 3; i++)
		for (const char *p = parts[i]; ; p++) {
			h = (h ^ (uint8_t)*p) * 0x100000001b3ull;
			if (!*p)
				break;
		}
	return asprintf(ret, "%016" PRIx64, h) < 0 ? -ENOMEM : 0;
}

/* /proc/kallsyms, from the cache while the key is unchanged: the kernel formats ~200k lines
 * per read (0.2-0.4 s of guest CPU under TCG), every session. Symbols that come and go
 * without a module (BPF programs, ftrace trampolines) are not refreshed. */
static int meta_send_kallsyms(struct meta_ctx *c, const char *host_key)
{
	struct meta_cache *k = &c->a->kallsyms;
	_cleanup_free_ char *key = NULL;
	int r = meta_kallsyms_key(&key);

	/* The host holds this very kallsyms (same boot, modules, kptr_restrict): only the key. */
	if (r == 0 && host_key && !strcmp(host_key, key))
		return meta_put(c, "kallsyms_key", key, strlen(key));

	if (r < 0 || !k->key || strcmp(k->key, key) != 0) {
		meta_cache_free(k);
		if (r < 0)
			return meta_send(c, "kallsyms", "/proc/kallsyms"); /* no key: no cache */
		r = util_read_file("/proc/kallsyms", META_FILE_MAX, &k->data, &k->len);
		if (r < 0) {
			log_warn("metadata: leaving out /proc/kallsyms: %s", strerror(-r));
			return r == -ENOMEM ? r : 0;
		}
		k->key = TAKE_PTR(key);
		log_debug("metadata: kallsyms read, %zu bytes", k->len);
	}
	r = meta_put(c, "kallsyms", k->data, k->len);
	return r < 0 ? r : meta_put(c, "kallsyms_key", k->key, strlen(k->key));
}

void meta_cache_free(struct meta_cache *k)
{
	free(k->key);
	free(k->data);
	*k = (struct meta_cache){ 0 };
}

/* A file relative to the tracefs mount, sent under that relative name. */
static int meta_send_tracefs(struct meta_ctx *c, const char *rel)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/%s", c->a->tfs.root, rel);
	return meta_send(c, rel, path);
}

/* A file of our instance, sent under the same relative name as the top-level one. */
static int meta_send_instance(struct meta_ctx *c, const char *rel)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/%s", c->a->tfs.inst_path, rel);
	return meta_send(c, rel, path);
}

static int meta_event(const char *sys, const char *ev, void *data)
{
	char rel[2 * EVENTS_NAME_MAX + 32];

	snprintf(rel, sizeof(rel), "events/%s/%s/format", sys, ev);
	return meta_send_tracefs(data, rel);
}

/* A tracer writes ftrace-system entries (function, funcgraph_entry, kernel_stack, ...): send
 * them all but print, which always goes. */
static int meta_ftrace_event(const char *sys, const char *ev, void *data)
{
	return strcmp(ev, "print") ? meta_event(sys, ev, data) : 0;
}

int meta_reply(struct agent *a, uint32_t seq, const char *host_key, struct vt_buf *out)
{
	static const char *const tracefs_files[] = {
		"events/header_event", "printk_formats", "saved_cmdlines", "saved_tgids",
	};
	struct meta_ctx c = { .a = a, .out = out, .seq = seq };
	/* The instance's header_page: since Linux 6.8 it gives that instance's sub-buffer size
	 * (buffer_subbuf_size_kb), which the top-level one does not. */
	int r = meta_send_instance(&c, "events/header_page");

	for (size_t i = 0; r == 0 && i < ARRAY_SIZE(tracefs_files); i++)
		r = meta_send_tracefs(&c, tracefs_files[i]);
	/* trace_marker lines (and probe marks) are ftrace:print events. */
	if (r == 0)
		r = meta_event("ftrace", "print", &c);
	if (r == 0)
		r = tracefs_events_foreach(&a->tfs, a->cfg.events, meta_event, &c);
	if (r == 0 && config_has_tracer(&a->cfg))
		r = tracefs_events_foreach(&a->tfs, "ftrace", meta_ftrace_event, &c);
	if (r == 0)
		r = meta_send_kallsyms(&c, host_key);
	if (r == 0)
		r = meta_send(&c, "notes", "/sys/kernel/notes");
	if (r < 0)
		return r;
	vt_msg_begin(out, VT_MSG_META_END, seq);
	vt_put_u32(out, VT_A_COUNT, c.count);
	return vt_msg_end(out);
}
