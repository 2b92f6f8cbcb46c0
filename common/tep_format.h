/* SPDX-License-Identifier: GPL-2.0-only */
/* Event format files (events/<sys>/<ev>/format, events/header_page): the parts the merge needs. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#define TEP_FORMAT_MAX_FIELDS 128
#define TEP_FORMAT_MAX_NAME 64
#define TEP_FORMAT_MAX_TEXT (1u << 20)

struct tep_format_field {
	char name[TEP_FORMAT_MAX_NAME];
	uint32_t offset;
	uint32_t size;
	uint8_t dyn; /* 0 fixed, 1 __data_loc (offset from record start), 2 __rel_loc (from field end) */
};

struct tep_format {
	char name[TEP_FORMAT_MAX_NAME];
	uint32_t id;
	size_t n_fields;
	struct tep_format_field fields[TEP_FORMAT_MAX_FIELDS];
	/* Where the ID number sits in the text, for the rewrite. */
	size_t id_at, id_len;
};

/* Parses one "field:TYPE NAME;\toffset:N;\tsize:N;..." line (len bytes, no newline needed).
 * Returns 1 and fills *ret for a field line, 0 for another line, -EBADMSG when malformed or when
 * offset + size passes max_end (an event record: UINT16_MAX; header_page's data: a sub-buffer). */
int tep_format_parse_field(const char *line, size_t len, uint32_t max_end, struct tep_format_field *ret);
/* Parses a format file: name (safe name), ID (1..65535) and fields; common_type must exist.
 * -EBADMSG on anything malformed or out of bounds. */
int tep_format_parse(const char *text, size_t len, struct tep_format *ret);
/* Field by name, or NULL. */
const struct tep_format_field *tep_format_field(const struct tep_format *f, const char *name);
/* A copy of text with the ID line's number replaced by new_id (malloc'd, *ret_len bytes). */
int tep_format_set_id(const char *text, size_t len, const struct tep_format *f, uint32_t new_id,
		      char **ret_text, size_t *ret_len);
