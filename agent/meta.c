// SPDX-License-Identifier: GPL-2.0-only
/* The metadata reply: the guest files the host needs to decode the pages (docs/protocol.md). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* Sends one file; a file that is missing or too big is left out with a warning. */
static int meta_send(struct meta_ctx *c, const char *name, const char *path)
{
	_cleanup_free_ char *data = NULL;
	size_t len;
	int r = util_read_file(path, META_FILE_MAX, &data, &len);

	if (r < 0) {
		log_warn("metadata: leaving out %s: %s", path, strerror(-r));
		return r == -ENOMEM ? r : 0;
	}
	if (c->out->len + len > META_TOTAL_MAX) {
		log_warn("metadata: leaving out %s: the reply would pass %u MiB", path, META_TOTAL_MAX >> 20);
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

/* A file relative to the tracefs mount, sent under that relative name. */
static int meta_send_tracefs(struct meta_ctx *c, const char *rel)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/%s", c->a->tfs.root, rel);
	return meta_send(c, rel, path);
}

static int meta_event(const char *sys, const char *ev, void *data)
{
	char rel[2 * EVENTS_NAME_MAX + 32];

	snprintf(rel, sizeof(rel), "events/%s/%s/format", sys, ev);
	return meta_send_tracefs(data, rel);
}

int meta_reply(struct agent *a, uint32_t seq, struct vt_buf *out)
{
	static const char *const tracefs_files[] = {
		"events/header_page", "events/header_event", "printk_formats", "saved_cmdlines",
		"saved_tgids",
	};
	struct meta_ctx c = { .a = a, .out = out, .seq = seq };
	int r = 0;

	for (size_t i = 0; r == 0 && i < ARRAY_SIZE(tracefs_files); i++)
		r = meta_send_tracefs(&c, tracefs_files[i]);
	/* trace_marker lines (and probe marks) are ftrace:print events. */
	if (r == 0)
		r = meta_event("ftrace", "print", &c);
	if (r == 0)
		r = tracefs_events_foreach(&a->tfs, a->cfg.events, meta_event, &c);
	if (r == 0)
		r = meta_send(&c, "kallsyms", "/proc/kallsyms");
	if (r == 0)
		r = meta_send(&c, "notes", "/sys/kernel/notes");
	if (r < 0)
		return r;
	vt_msg_begin(out, VT_MSG_META_END, seq);
	vt_put_u32(out, VT_A_COUNT, c.count);
	return vt_msg_end(out);
}
