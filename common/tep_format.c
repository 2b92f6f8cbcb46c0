// SPDX-License-Identifier: GPL-2.0-only
#include "tep_format.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

/* Finds "key" in [s, s+len) and parses the decimal number after it (up to ';'). */
static int field_number(const char *s, size_t len, const char *key, uint32_t *ret)
{
	size_t kl = strlen(key);
	const char *p = memmem(s, len, key, kl);
	uint64_t v = 0;
	size_t i;

	if (!p)
		return -EBADMSG;
	i = (size_t)(p - s) + kl;
	if (i >= len || s[i] < '0' || s[i] > '9')
		return -EBADMSG;
	for (; i < len && s[i] >= '0' && s[i] <= '9'; i++) {
		v = v * 10 + (uint64_t)(s[i] - '0');
		if (v > UINT32_MAX)
			return -EBADMSG;
	}
	*ret = (uint32_t)v;
	return 0;
}

/* The declared name: the last identifier before the first ';' (array brackets skipped). */
static int field_name(const char *decl, size_t len, char *name)
{
	size_t end = len, start;

	while (end > 0 && decl[end - 1] == ']') {
		while (end > 0 && decl[end - 1] != '[')
			end--;
		if (end == 0)
			return -EBADMSG;
		end--;
	}
	while (end > 0 && decl[end - 1] == ' ')
		end--;
	start = end;
	while (start > 0 && (decl[start - 1] == '_' || (decl[start - 1] >= '0' && decl[start - 1] <= '9') ||
			     (decl[start - 1] >= 'a' && decl[start - 1] <= 'z') ||
			     (decl[start - 1] >= 'A' && decl[start - 1] <= 'Z')))
		start--;
	if (end == start || end - start >= TEP_FORMAT_MAX_NAME)
		return -EBADMSG;
	memcpy(name, decl + start, end - start);
	name[end - start] = '\0';
	return 0;
}

int tep_format_parse_field(const char *line, size_t len, uint32_t max_end, struct tep_format_field *ret)
{
	struct tep_format_field f = { 0 };
	const char *p = memmem(line, len, "field:", 6);
	const char *semi;
	size_t rest;

	if (!p)
		return 0;
	p += 6;
	rest = len - (size_t)(p - line);
	semi = memchr(p, ';', rest);
	if (!semi || field_name(p, (size_t)(semi - p), f.name) < 0)
		return -EBADMSG;
	if (memmem(p, (size_t)(semi - p), "__data_loc", 10))
		f.dyn = 1;
	else if (memmem(p, (size_t)(semi - p), "__rel_loc", 9))
		f.dyn = 2;
	rest -= (size_t)(semi - p);
	if (field_number(semi, rest, "offset:", &f.offset) < 0 || field_number(semi, rest, "size:", &f.size) < 0)
		return -EBADMSG;
	if ((uint64_t)f.offset + f.size > max_end)
		return -EBADMSG;
	*ret = f;
	return 1;
}

static int format_line(struct tep_format *f, const char *text, const char *line, size_t len)
{
	struct tep_format_field fld;
	int r;

	if (len >= 6 && !memcmp(line, "name: ", 6)) {
		if (len - 6 >= TEP_FORMAT_MAX_NAME || !util_safe_name(line + 6, len - 6))
			return -EBADMSG;
		memcpy(f->name, line + 6, len - 6);
		f->name[len - 6] = '\0';
		return 0;
	}
	if (len >= 4 && !memcmp(line, "ID: ", 4)) {
		f->id_at = (size_t)(line + 4 - text);
		f->id_len = len - 4;
		if (f->id_len == 0 || f->id_len > 5 || field_number(line, len, "ID: ", &f->id) < 0)
			return -EBADMSG;
		for (size_t i = 0; i < f->id_len; i++)
			if (line[4 + i] < '0' || line[4 + i] > '9')
				return -EBADMSG;
		return 0;
	}
	r = tep_format_parse_field(line, len, UINT16_MAX, &fld);
	if (r <= 0)
		return r;
	if (f->n_fields >= TEP_FORMAT_MAX_FIELDS)
		return -EBADMSG;
	f->fields[f->n_fields++] = fld;
	return 0;
}

int tep_format_parse(const char *text, size_t len, struct tep_format *ret)
{
	_cleanup_free_ struct tep_format *f = calloc(1, sizeof(*f));
	const struct tep_format_field *ct;
	size_t pos = 0;

	if (!f)
		return -ENOMEM;
	if (len > TEP_FORMAT_MAX_TEXT)
		return -EBADMSG;
	while (pos < len) {
		const char *nl = memchr(text + pos, '\n', len - pos);
		size_t ll = nl ? (size_t)(nl - (text + pos)) : len - pos;
		int r = format_line(f, text, text + pos, ll);

		if (r < 0)
			return r;
		pos += ll + 1;
	}
	ct = tep_format_field(f, "common_type");
	if (!f->name[0] || f->id == 0 || f->id > UINT16_MAX || !ct || ct->size != 2 ||
	    ct->offset != 0)
		return -EBADMSG;
	*ret = *f;
	return 0;
}

const struct tep_format_field *tep_format_field(const struct tep_format *f, const char *name)
{
	for (size_t i = 0; i < f->n_fields; i++)
		if (!strcmp(f->fields[i].name, name))
			return &f->fields[i];
	return NULL;
}

int tep_format_set_id(const char *text, size_t len, const struct tep_format *f, uint32_t new_id,
		      char **ret_text, size_t *ret_len)
{
	char num[16];
	int nl = snprintf(num, sizeof(num), "%u", new_id);
	size_t out_len;
	char *out;

	if (f->id_at + f->id_len > len || f->id_at == 0)
		return -EINVAL;
	out_len = len - f->id_len + (size_t)nl;
	out = malloc(out_len + 1);
	if (!out)
		return -ENOMEM;
	memcpy(out, text, f->id_at);
	memcpy(out + f->id_at, num, (size_t)nl);
	memcpy(out + f->id_at + nl, text + f->id_at + f->id_len, len - f->id_at - f->id_len);
	out[out_len] = '\0';
	*ret_text = out;
	*ret_len = out_len;
	return 0;
}
