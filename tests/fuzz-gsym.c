// SPDX-License-Identifier: GPL-2.0-only
/* Fuzz target: guest bytes the merge names guest code with (collector/merge/gsym.c): a guest
 * event format whose %ps pointers it rewrites (the new text must parse back with the same id),
 * guest/kallsyms (text symbols sorted, _text, module extents sorted and disjoint), and the
 * record built from both (inside its bounds). Input: format, NUL, record bytes, NUL, kallsyms. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz-session.h"
#include "merge.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The part of [*p, end) up to the next NUL (or the end); *p moves past it. */
static const uint8_t *part(const uint8_t **p, const uint8_t *end, size_t *len)
{
	const uint8_t *s = *p, *nul = memchr(s, 0, (size_t)(end - s));

	*len = (size_t)((nul ? nul : end) - s);
	*p = nul ? nul + 1 : end;
	return s;
}

static void check_table(const struct gsym_table *s)
{
	for (size_t i = 1; i < s->n; i++)
		if (s->addr[i - 1] > s->addr[i])
			abort();
	for (size_t i = 0; i < s->n_mods; i++)
		if (s->mods[i].start > s->mods[i].end || (i && s->mods[i - 1].end > s->mods[i].start) ||
		    !memchr(s->mods[i].name, 0, sizeof(s->mods[i].name)))
			abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool ready;
	static struct guest_event e;
	static uint8_t out[8192];
	const uint8_t *p = data, *end = data + size, *fmt, *rec, *ks;
	size_t tlen, rlen, klen, len;
	struct merge_guest g = { 0 };
	struct tep_format f;
	char *text;

	if (!ready) {
		fuzz_session_setup("guest/events");
		ready = true;
	}
	fmt = part(&p, end, &tlen);
	rec = part(&p, end, &rlen);
	ks = part(&p, end, &klen);
	if (tlen > TEP_FORMAT_MAX_TEXT || rlen > 4096 || !(text = malloc(tlen + 1)))
		return 0;
	memcpy(text, fmt, tlen);
	text[tlen] = '\0';
	len = tlen;
	fuzz_put("guest/kallsyms", ks, klen);
	merge_gsym_load(&g, fuzz_dir);
	if (g.gsym)
		check_table(g.gsym);
	memset(&e, 0, sizeof(e));
	if (tep_format_parse(text, len, &e.fmt) == 0 && merge_gsym_format(&e, &text, &len) == 1) {
		if (e.n_sym == 0 || e.n_sym > GSYM_MAX || tep_format_parse(text, len, &f) < 0 || f.id != e.fmt.id)
			abort();
		if (merge_gsym_record(&g, &e, rec, rlen, out) > (size_t)e.sym_base + GSYM_MAX * (4 + 128))
			abort();
	}
	merge_gsym_free(&g);
	free(text);
	return 0;
}
