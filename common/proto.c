// SPDX-License-Identifier: GPL-2.0-only
#include "proto.h"

#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

#define ATTR_HDR 8
#define READER_MAX (VT_PROTO_HDR_SIZE + VT_PROTO_MAX_PAYLOAD + 65536)

static uint16_t get16(const uint8_t *p) { uint16_t v; memcpy(&v, p, 2); return le16toh(v); }
static uint32_t get32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return le32toh(v); }
static uint64_t get64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return le64toh(v); }
static void put16(uint8_t *p, uint16_t v) { v = htole16(v); memcpy(p, &v, 2); }
static void put32(uint8_t *p, uint32_t v) { v = htole32(v); memcpy(p, &v, 4); }

void vt_buf_free(struct vt_buf *b)
{
	free(b->data);
	*b = (struct vt_buf){ 0 };
}

static uint8_t *buf_grow(struct vt_buf *b, size_t n)
{
	uint8_t *p;

	if (b->oom)
		return NULL;
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 256;

		while (cap < b->len + n)
			cap *= 2;
		p = realloc(b->data, cap);
		if (!p) {
			b->oom = true;
			return NULL;
		}
		b->data = p;
		b->cap = cap;
	}
	p = b->data + b->len;
	b->len += n;
	return p;
}

void vt_msg_begin(struct vt_buf *b, uint16_t type, uint32_t seq)
{
	uint8_t *p;

	b->frame = b->len;
	p = buf_grow(b, VT_PROTO_HDR_SIZE);
	if (!p)
		return;
	put32(p, VT_PROTO_MAGIC);
	put16(p + 4, VT_PROTO_VERSION);
	put16(p + 6, type);
	put32(p + 8, seq);
	put32(p + 12, 0);
}

void vt_put_bytes(struct vt_buf *b, uint16_t tag, const void *data, size_t len)
{
	size_t padded = ALIGN_UP(len, (size_t)4);
	uint8_t *p;

	if (len > VT_PROTO_MAX_PAYLOAD) {
		b->oom = true;
		return;
	}
	p = buf_grow(b, ATTR_HDR + padded);
	if (!p)
		return;
	put16(p, tag);
	put16(p + 2, 0);
	put32(p + 4, (uint32_t)len);
	if (len)
		memcpy(p + ATTR_HDR, data, len);
	memset(p + ATTR_HDR + len, 0, padded - len);
}

void vt_put_str(struct vt_buf *b, uint16_t tag, const char *s)
{
	vt_put_bytes(b, tag, s, strlen(s));
}

void vt_put_u32(struct vt_buf *b, uint16_t tag, uint32_t v)
{
	v = htole32(v);
	vt_put_bytes(b, tag, &v, sizeof(v));
}

void vt_put_u64(struct vt_buf *b, uint16_t tag, uint64_t v)
{
	v = htole64(v);
	vt_put_bytes(b, tag, &v, sizeof(v));
}

int vt_msg_end(struct vt_buf *b)
{
	size_t payload;

	if (b->oom)
		return -ENOMEM;
	payload = b->len - b->frame - VT_PROTO_HDR_SIZE;
	if (payload > VT_PROTO_MAX_PAYLOAD)
		return -EMSGSIZE;
	put32(b->data + b->frame + 12, (uint32_t)payload);
	return 0;
}

int vt_hdr_decode(const uint8_t *buf, struct vt_frame_hdr *ret)
{
	struct vt_frame_hdr h = {
		.magic = get32(buf), .version = get16(buf + 4), .type = get16(buf + 6),
		.seq = get32(buf + 8), .len = get32(buf + 12),
	};

	if (h.magic != VT_PROTO_MAGIC)
		return -EBADMSG;
	*ret = h;
	if (h.version != VT_PROTO_VERSION)
		return -EPROTONOSUPPORT;
	if (h.len > VT_PROTO_MAX_PAYLOAD)
		return -EMSGSIZE;
	return 0;
}

int vt_attr_next(const struct vt_msg *m, uint32_t *off, struct vt_attr *ret)
{
	uint32_t o = *off, len;

	if (o == m->len)
		return 0;
	if (o > m->len || m->len - o < ATTR_HDR)
		return -EBADMSG;
	len = get32(m->payload + o + 4);
	if (len > m->len - o - ATTR_HDR)
		return -EBADMSG;
	ret->tag = get16(m->payload + o);
	ret->len = len;
	ret->data = m->payload + o + ATTR_HDR;
	/* The last attribute may omit its padding; others must keep 4-byte alignment. */
	o += ATTR_HDR + len;
	o = (uint32_t)MIN((uint64_t)ALIGN_UP((uint64_t)o, 4u), (uint64_t)m->len);
	*off = o;
	return 1;
}

int vt_msg_validate(const struct vt_msg *m)
{
	struct vt_attr a;
	uint32_t off = 0;
	int r;

	while ((r = vt_attr_next(m, &off, &a)) > 0)
		;
	return r;
}

int vt_msg_find(const struct vt_msg *m, uint16_t tag, struct vt_attr *ret)
{
	struct vt_attr a;
	uint32_t off = 0;
	int r;

	while ((r = vt_attr_next(m, &off, &a)) > 0) {
		if (a.tag == tag) {
			*ret = a;
			return 0;
		}
	}
	return r < 0 ? r : -ENOENT;
}

int vt_msg_u32(const struct vt_msg *m, uint16_t tag, uint32_t *ret)
{
	struct vt_attr a;
	int r = vt_msg_find(m, tag, &a);

	if (r < 0)
		return r;
	if (a.len != 4)
		return -EBADMSG;
	*ret = get32(a.data);
	return 0;
}

int vt_msg_u64(const struct vt_msg *m, uint16_t tag, uint64_t *ret)
{
	struct vt_attr a;
	int r = vt_msg_find(m, tag, &a);

	if (r < 0)
		return r;
	if (a.len != 8)
		return -EBADMSG;
	*ret = get64(a.data);
	return 0;
}

int vt_msg_str(const struct vt_msg *m, uint16_t tag, size_t max, char **ret)
{
	struct vt_attr a;
	char *s;
	int r = vt_msg_find(m, tag, &a);

	if (r < 0)
		return r;
	if (a.len > max || memchr(a.data, '\0', a.len))
		return -EBADMSG;
	s = malloc(a.len + 1);
	if (!s)
		return -ENOMEM;
	memcpy(s, a.data, a.len);
	s[a.len] = '\0';
	*ret = s;
	return 0;
}

const char *vt_msg_type_name(uint16_t type)
{
	static const char *const names[VT_MSG_TYPE_MAX] = {
		[VT_MSG_ERROR] = "error", [VT_MSG_OK] = "ok", [VT_MSG_HELLO] = "hello",
		[VT_MSG_CONFIG] = "config", [VT_MSG_META_REQ] = "meta-request",
		[VT_MSG_META_FILE] = "meta-file", [VT_MSG_META_END] = "meta-end",
		[VT_MSG_START] = "start", [VT_MSG_STOP] = "stop", [VT_MSG_STOPPED] = "stopped",
		[VT_MSG_PROBE] = "probe", [VT_MSG_PROBE_REPLY] = "probe-reply",
		[VT_MSG_BINARY_REQ] = "binary-req", [VT_MSG_BINARY] = "binary",
		[VT_MSG_FLUSH] = "flush", [VT_MSG_PROGRESS] = "progress",
	};

	if (type < VT_MSG_TYPE_MAX && names[type])
		return names[type];
	return "unknown";
}

const char *vt_start_step_name(uint32_t step)
{
	static const char *const names[VT_STEP_MAX] = {
		[VT_STEP_EVENTS] = "enabling events", [VT_STEP_SETTINGS] = "setting clock, ring size and tracer",
		[VT_STEP_RESET] = "emptying the rings", [VT_STEP_THREADS] = "starting CPU threads",
		[VT_STEP_BEGIN] = "writing begin markers", [VT_STEP_NOTRACE] = "leaving its own threads out",
		[VT_STEP_TRACING_ON] = "turning tracing on",
	};

	if (step < VT_STEP_MAX && names[step])
		return names[step];
	return "an unknown step";
}

int vt_reader_init(struct vt_reader *r)
{
	*r = (struct vt_reader){ 0 };
	r->cap = 65536;
	r->buf = malloc(r->cap);
	return r->buf ? 0 : -ENOMEM;
}

void vt_reader_free(struct vt_reader *r)
{
	free(r->buf);
	*r = (struct vt_reader){ 0 };
}

static int reader_reserve(struct vt_reader *r, size_t want)
{
	uint8_t *nb;
	size_t cap;

	if (r->off > 0 && (r->off == r->len || r->cap - r->len < want)) {
		memmove(r->buf, r->buf + r->off, r->len - r->off);
		r->len -= r->off;
		r->off = 0;
	}
	if (r->cap - r->len >= want)
		return 0;
	if (r->len + want > READER_MAX)
		return -ENOBUFS;
	cap = r->cap;
	while (cap < r->len + want)
		cap *= 2;
	cap = MIN(cap, (size_t)READER_MAX);
	nb = realloc(r->buf, cap);
	if (!nb)
		return -ENOMEM;
	r->buf = nb;
	r->cap = cap;
	return 0;
}

int vt_reader_space(struct vt_reader *r, uint8_t **ret_ptr, size_t *ret_len)
{
	size_t want = 4096, avail = r->len - r->off;
	struct vt_frame_hdr h;
	int e;

	/* Make room for the whole frame being received, so one read can complete it. */
	if (avail >= VT_PROTO_HDR_SIZE && vt_hdr_decode(r->buf + r->off, &h) == 0 &&
	    VT_PROTO_HDR_SIZE + (size_t)h.len > avail)
		want = MAX(want, VT_PROTO_HDR_SIZE + (size_t)h.len - avail);
	e = reader_reserve(r, want);
	if (e < 0)
		return e;
	*ret_ptr = r->buf + r->len;
	*ret_len = r->cap - r->len;
	return 0;
}

void vt_reader_commit(struct vt_reader *r, size_t n)
{
	r->len += n;
}

int vt_reader_feed(struct vt_reader *r, const void *data, size_t len)
{
	while (len > 0) {
		uint8_t *p;
		size_t room, n;
		int e = vt_reader_space(r, &p, &room);

		if (e < 0)
			return e;
		n = MIN(room, len);
		memcpy(p, data, n);
		vt_reader_commit(r, n);
		data = (const uint8_t *)data + n;
		len -= n;
	}
	return 0;
}

/* Could a frame or a legacy line start at p (given what is buffered)? */
static bool reader_is_start(const struct vt_reader *r, size_t p)
{
	static const uint8_t magic[4] = { 'V', 'T', 'C', '1' };
	size_t avail = r->len - p;

	if (memcmp(r->buf + p, magic, MIN(avail, sizeof(magic))) == 0)
		return true;
	return (r->buf[p] == '0' || r->buf[p] == '1') && (p == 0 || r->buf[p - 1] == '\n');
}

enum vt_read_result vt_reader_next(struct vt_reader *r, struct vt_msg *ret_msg, char *ret_legacy)
{
	for (;;) {
		size_t avail = r->len - r->off;
		const uint8_t *p = r->buf + r->off;
		struct vt_frame_hdr h;
		size_t skip;
		int e;

		if (avail == 0)
			return VT_READ_NEED_MORE;
		if (p[0] == '\n' || p[0] == '\r') {
			r->off++;
			continue;
		}
		if (p[0] == '0' || p[0] == '1') {
			size_t n = 1;

			if (avail < 2)
				return VT_READ_NEED_MORE;
			if (p[1] == '\r') {
				if (avail < 3)
					return VT_READ_NEED_MORE;
				n = 2;
			}
			if (p[n] == '\n') {
				*ret_legacy = (char)p[0];
				r->off += n + 1;
				return VT_READ_LEGACY;
			}
		} else if (p[0] == 'V') {
			if (avail < VT_PROTO_HDR_SIZE) {
				if (memcmp(p, "VTC1", MIN(avail, (size_t)4)) == 0)
					return VT_READ_NEED_MORE;
			} else {
				e = vt_hdr_decode(p, &h);
				if (e == 0) {
					if (avail < VT_PROTO_HDR_SIZE + (size_t)h.len)
						return VT_READ_NEED_MORE;
					ret_msg->hdr = h;
					ret_msg->payload = p + VT_PROTO_HDR_SIZE;
					ret_msg->len = h.len;
					r->off += VT_PROTO_HDR_SIZE + h.len;
					return VT_READ_MSG;
				}
				if (e != -EBADMSG) {
					ret_msg->hdr = h;
					ret_msg->payload = NULL;
					ret_msg->len = 0;
					r->off += VT_PROTO_HDR_SIZE;
					r->garbage_bytes += VT_PROTO_HDR_SIZE;
					return VT_READ_TOOBIG;
				}
			}
		}
		/* Not a frame: skip to the next place one could start. */
		for (skip = 1; r->off + skip < r->len && !reader_is_start(r, r->off + skip); skip++)
			;
		r->off += skip;
		r->garbage_bytes += skip;
		return VT_READ_GARBAGE;
	}
}
