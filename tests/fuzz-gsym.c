// SPDX-License-Identifier: GPL-2.0-only
/* Fuzz target: a guest event format whose %ps pointers the merge names (collector/merge/gsym.c):
 * the format rewrite must give a text our own parser reads back with the same id, and the record
 * built for it stays inside its bounds. Input: the format text, then NUL, then record bytes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "merge.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nul = memchr(data, 0, size);
	size_t tlen = nul ? (size_t)(nul - data) : size, rlen = nul ? size - tlen - 1 : 0;
	static struct guest_event e;
	static uint8_t out[8192];
	struct merge_guest g = { 0 };
	struct tep_format f;
	char *text;
	size_t len = tlen;

	if (tlen > TEP_FORMAT_MAX_TEXT || rlen > 4096)
		return 0;
	text = malloc(tlen + 1);
	if (!text)
		return 0;
	memcpy(text, data, tlen);
	text[tlen] = '\0';
	memset(&e, 0, sizeof(e));
	if (tep_format_parse(text, len, &e.fmt) == 0 && merge_gsym_format(&e, &text, &len) == 1) {
		if (e.n_sym == 0 || e.n_sym > GSYM_MAX || tep_format_parse(text, len, &f) < 0 || f.id != e.fmt.id)
			abort();
		if (merge_gsym_record(&g, &e, nul ? nul + 1 : data, rlen, out) > (size_t)e.sym_base + GSYM_MAX * (4 + 128))
			abort();
	}
	free(text);
	return 0;
}
