// SPDX-License-Identifier: GPL-2.0-only
/* Guest function pointers inside guest tracepoints, named (docs/perf-data.md). perf resolves
 * %ps-style pointers of an event's print format with the host kernel's symbols, so the merge
 * names them itself: for each such pointer that is a plain 8-byte field, the rewritten format
 * gains a string field "<field>_sym" (__data_loc, after the event's fixed fields) and prints it
 * with %s; each record gets the guest's name for the address from guest/kallsyms. Pointers
 * that cannot be rewritten that way are printed as hex (unsymbolize). */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "merge.h"
#include "util.h"

#define GSYM_NAME_MAX 128 /* bytes of a name written into a record, NUL included */
#define GSYM_FAR (1u << 20) /* an address farther than this past a symbol is not named by it */

/* A print-format conversion: where it is in the text, and whether it is a %p[sSfFB]. */
struct gsym_spec {
	size_t at, len;
	bool sym, with_off;
};

/* The conversions of the format string text[from, to); -EINVAL for '*' widths (args we
 * would miscount). */
static int gsym_specs(const char *t, size_t from, size_t to, struct gsym_spec *v, size_t max, size_t *ret_n)
{
	size_t n = 0;

	for (size_t i = from; i < to; i++) {
		size_t j = i + 1;

		if (t[i] == '\\') {
			i++;
			continue;
		}
		if (t[i] != '%')
			continue;
		if (j < to && t[j] == '%') {
			i = j;
			continue;
		}
		while (j < to && strchr("-+ #0123456789.lhzjtL", t[j]))
			j++;
		if (j < to && t[j] == '*')
			return -EINVAL;
		if (j >= to || n == max)
			return -EINVAL;
		v[n] = (struct gsym_spec){ .at = i, .len = j + 1 - i };
		if (t[j] == 'p' && j + 1 < to && strchr("sSfFB", t[j + 1]) && !(j + 2 < to && t[j + 2] == 'R')) {
			v[n].len++;
			v[n].sym = true;
			v[n].with_off = t[j + 1] != 's' && t[j + 1] != 'f';
		}
		i = v[n].at + v[n].len - 1;
		n++;
	}
	*ret_n = n;
	return 0;
}

/* The top-level comma-separated args after the format string: [start, end) each. */
static int gsym_args(const char *t, size_t from, size_t to, size_t (*v)[2], size_t max, size_t *ret_n)
{
	size_t n = 0, start = from;
	int depth = 0;
	bool str = false;

	for (size_t i = from; i <= to; i++) {
		char c = i < to ? t[i] : ',';

		if (str) {
			if (c == '\\')
				i++;
			else if (c == '"')
				str = false;
			continue;
		}
		if (c == '"')
			str = true;
		else if (strchr("([{", c))
			depth++;
		else if (strchr(")]}", c))
			depth--;
		else if (c == ',' && depth == 0) {
			if (n == max)
				return -EINVAL;
			v[n][0] = start, v[n][1] = i, n++;
			start = i + 1;
		}
	}
	*ret_n = n;
	return depth == 0 && !str ? 0 : -EINVAL;
}

/* "(void *)REC->name" or "REC->name" (spaces around): the field, or NULL. */
static const struct tep_format_field *gsym_arg_field(const struct tep_format *f, const char *a, size_t len)
{
	char name[TEP_FORMAT_MAX_NAME];
	size_t l;

	while (len && (*a == ' ' || *a == '\t'))
		a++, len--;
	while (len && (a[len - 1] == ' ' || a[len - 1] == '\t' || a[len - 1] == '\n'))
		len--;
	if (len > 8 && !memcmp(a, "(void *)", 8))
		a += 8, len -= 8;
	if (len <= 5 || memcmp(a, "REC->", 5))
		return NULL;
	l = len - 5;
	if (l >= sizeof(name) || !util_safe_name(a + 5, l))
		return NULL;
	memcpy(name, a + 5, l);
	name[l] = '\0';
	return tep_format_field(f, name);
}

/* Appends printf-formatted text to the growing buffer *b (cap bytes). */
static bool gsym_put(char *b, size_t cap, size_t *len, const char *s, size_t n)
{
	if (*len + n >= cap)
		return false;
	memcpy(b + *len, s, n);
	*len += n;
	b[*len] = '\0';
	return true;
}

/* The rewritten format text (malloc'd), or NULL when nothing could be rewritten. */
static char *gsym_rewrite(struct guest_event *e, const char *t, size_t tlen, size_t *ret_len)
{
	const char *pf = strstr(t, "\nprint fmt: \"");
	struct gsym_spec spec[64];
	size_t args[64][2], nspec, nargs, q, fixed_end = 0, cap = tlen + 1024, len = 0, prev;
	const struct tep_format_field *fld[GSYM_MAX] = { 0 };
	int argi[GSYM_MAX];
	_cleanup_free_ char *out = NULL;
	char line[256];
	unsigned nsym = 0;

	if (!pf)
		return NULL;
	pf += 13; /* the format string's first byte */
	for (q = (size_t)(pf - t); q < tlen && t[q] != '"'; q++)
		if (t[q] == '\\')
			q++;
	if (q >= tlen || gsym_specs(t, (size_t)(pf - t), q, spec, ARRAY_SIZE(spec), &nspec) < 0)
		return NULL;
	while (q + 1 < tlen && t[q + 1] == ' ')
		q++;
	if (q + 1 >= tlen || t[q + 1] != ',' ||
	    gsym_args(t, q + 2, tlen - (t[tlen - 1] == '\n'), args, ARRAY_SIZE(args), &nargs) < 0 || nargs < nspec)
		return NULL;
	for (size_t i = 0; i < e->fmt.n_fields; i++) {
		const struct tep_format_field *f = &e->fmt.fields[i];

		if (f->dyn || f->size == 0)
			return NULL; /* data after the fixed fields (__data_loc, "char buf[]"): no room for ours */
		fixed_end = MAX(fixed_end, (size_t)f->offset + f->size);
	}
	for (size_t k = 0; k < nspec && nsym < GSYM_MAX; k++) {
		const struct tep_format_field *f;

		if (!spec[k].sym || !(f = gsym_arg_field(&e->fmt, t + args[k][0], args[k][1] - args[k][0])) ||
		    f->dyn || f->size != 8 || strlen(f->name) + 5 > TEP_FORMAT_MAX_NAME)
			continue;
		snprintf(line, sizeof(line), "%s_sym", f->name);
		if (tep_format_field(&e->fmt, line))
			continue;
		fld[nsym] = f;
		argi[nsym] = (int)k;
		e->sym[nsym].off = (uint16_t)f->offset;
		e->sym[nsym].with_off = spec[k].with_off;
		nsym++;
	}
	if (!nsym || fixed_end + 4 * nsym > 4096 || !(out = malloc(cap)))
		return NULL;
	e->sym_base = (uint16_t)ALIGN_UP(fixed_end, (size_t)4);
	/* the fields, ours right after them (a blank line ends a field section for libtraceevent),
	 * the blank line, then the print format with our specs and args */
	prev = (size_t)(pf - 13 - t) + 1;
	gsym_put(out, cap, &len, t, prev - 1);
	for (unsigned j = 0; j < nsym; j++) {
		int n = snprintf(line, sizeof(line), "\tfield:__data_loc char[] %s_sym;\toffset:%u;\tsize:4;\tsigned:0;\n",
				 fld[j]->name, e->sym_base + 4 * j);

		if (!gsym_put(out, cap, &len, line, (size_t)n))
			return NULL;
	}
	gsym_put(out, cap, &len, "\n", 1);
	for (size_t k = 0, j = 0, from = prev; k <= nspec; k++) {
		size_t upto = k < nspec ? spec[k].at : q + 1;

		if (!gsym_put(out, cap, &len, t + from, upto - from))
			return NULL;
		if (k == nspec)
			break;
		from = spec[k].at + spec[k].len;
		if (j < nsym && argi[j] == (int)k) {
			gsym_put(out, cap, &len, "%s", 2);
			j++;
		} else {
			gsym_put(out, cap, &len, t + spec[k].at, spec[k].len);
		}
	}
	for (size_t k = 0, j = 0; k < nargs; k++) {
		int n;

		if (!gsym_put(out, cap, &len, ", ", 2))
			return NULL;
		if (j < nsym && argi[j] == (int)k) {
			n = snprintf(line, sizeof(line), "__get_str(%s_sym)", fld[j]->name);
			j++;
			if (!gsym_put(out, cap, &len, line, (size_t)n))
				return NULL;
			continue;
		}
		while (args[k][0] < args[k][1] && t[args[k][0]] == ' ')
			args[k][0]++;
		if (!gsym_put(out, cap, &len, t + args[k][0], args[k][1] - args[k][0]))
			return NULL;
	}
	if (!gsym_put(out, cap, &len, "\n", 1))
		return NULL;
	e->n_sym = (uint8_t)nsym;
	*ret_len = len;
	return TAKE_PTR(out);
}

int merge_gsym_format(struct guest_event *e, char **text, size_t *len)
{
	size_t nl = 0;
	char *n = gsym_rewrite(e, *text, *len, &nl);
	struct tep_format f;

	if (!n) {
		e->n_sym = 0;
		return 0;
	}
	if (tep_format_parse(n, nl, &f) < 0 || f.id != e->fmt.id) { /* our own text must parse */
		free(n);
		e->n_sym = 0;
		return 0;
	}
	free(*text);
	*text = n;
	*len = nl;
	return 1;
}

static int gsym_cmp(const void *a, const void *b)
{
	uint64_t x = **(const uint64_t *const *)a, y = **(const uint64_t *const *)b;

	return x < y ? -1 : x > y;
}

/* One "ADDR t NAME\t[MOD]" line: widens MOD's extent (bounded, names checked). */
static void gsym_module_line(struct gsym_table *s, uint64_t a, const char *mod)
{
	size_t len = strlen(mod), i;

	if (len < 3 || len >= sizeof(s->mods[0].name) || mod[0] != '[' || mod[len - 1] != ']' ||
	    !util_safe_name(mod + 1, len - 2))
		return;
	for (i = 0; i < s->n_mods && strcmp(s->mods[i].name, mod); i++)
		;
	if (i == s->n_mods) {
		if (i == GSYM_MODULES_MAX)
			return;
		s->n_mods++;
		memcpy(s->mods[i].name, mod, len + 1);
		s->mods[i].start = UINT64_MAX;
	}
	s->mods[i].start = MIN(s->mods[i].start, a & ~0xfffull);
	s->mods[i].end = MAX(s->mods[i].end, (a & ~0xfffull) + 0x1000);
}

static int gsym_mod_cmp(const void *a, const void *b)
{
	const struct gsym_module *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* Sorts the text symbols (by a permutation: names travel with their addresses). */
static void gsym_sort(struct gsym_table *s)
{
	uint64_t **order = calloc(s->n + 1, sizeof(*order)), *a = malloc((s->n + 1) * sizeof(*a));
	const char **nm = malloc((s->n + 1) * sizeof(*nm));

	for (size_t i = 0; order && i < s->n; i++)
		order[i] = &s->addr[i];
	if (order && a && nm) {
		qsort(order, s->n, sizeof(*order), gsym_cmp);
		for (size_t i = 0; i < s->n; i++) {
			size_t k = (size_t)(order[i] - s->addr);

			a[i] = s->addr[k];
			nm[i] = s->name[k];
		}
		free(s->addr), free(s->name);
		s->addr = a, s->name = nm;
	} else {
		free(a), free(nm);
		s->n = 0;
	}
	free(order);
}

/* The 16 hex digits a kallsyms line starts with (strtoull was a tenth of the load). */
static bool gsym_hex16(const char *l, uint64_t *ret)
{
	uint64_t a = 0;

	for (int i = 0; i < 16; i++) {
		char c = l[i];
		unsigned d;

		if (c >= '0' && c <= '9')
			d = (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			d = (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			d = (unsigned)(c - 'A' + 10);
		else
			return false;
		a = a << 4 | d;
	}
	*ret = a;
	return true;
}

void merge_gsym_load(struct merge_guest *g, const char *dir)
{
	struct gsym_table *s = calloc(1, sizeof(*s));
	_cleanup_close_ int dfd = merge_input_dir(g, dir);
	size_t cap = 0, len;

	if (!s || dfd < 0 || merge_input_read(dfd, dir, "guest/kallsyms", 64u << 20, &s->text, &len) < 0) {
		free(s);
		return;
	}
	for (const char *c = s->text, *end = s->text + len; (c = memchr(c, '\n', (size_t)(end - c))); c++)
		cap++;
	s->addr = calloc(cap + 1, sizeof(*s->addr));
	s->name = calloc(cap + 1, sizeof(*s->name));
	s->mods = calloc(GSYM_MODULES_MAX, sizeof(*s->mods));
	for (char *l = s->text, *next, *tab; s->addr && s->name && s->mods && *l; l = next) {
		uint64_t a;

		next = l + strcspn(l, "\n");
		if (*next)
			*next++ = '\0';
		if (strlen(l) < 20 || l[16] != ' ' || l[18] != ' ' || !gsym_hex16(l, &a))
			continue;
		if ((tab = strchr(l + 19, '\t'))) { /* "name\t[module]" */
			*tab = '\0';
			gsym_module_line(s, a, tab + 1);
		} else if (!strcmp(l + 19, "_text") && (l[17] == 'T' || l[17] == 't')) {
			s->ktext = a;
		}
		if (!strchr("TtWw", l[17]))
			continue; /* text symbols only */
		s->addr[s->n] = a;
		s->name[s->n] = l + 19;
		s->n++;
	}
	if (s->n)
		gsym_sort(s);
	if (s->n_mods)
		qsort(s->mods, s->n_mods, sizeof(*s->mods), gsym_mod_cmp);
	/* overlapping extents (a damaged file) are cut so that perf's maps stay disjoint */
	for (size_t i = 1; i < s->n_mods; i++)
		if (s->mods[i].start < s->mods[i - 1].end)
			s->mods[i - 1].end = s->mods[i].start;
	g->gsym = s;
}

void merge_gsym_free(struct merge_guest *g)
{
	if (!g->gsym)
		return;
	free(g->gsym->text);
	free(g->gsym->mods);
	free(g->gsym->addr);
	free(g->gsym->name);
	free(g->gsym);
	g->gsym = NULL;
}

/* snprintf(buf, size, "%.*s", max, name) without the format's cost. */
static size_t gsym_copy(const char *name, size_t max, char *buf, size_t size)
{
	size_t n = strnlen(name, max);

	if (size) {
		size_t k = MIN(n, size - 1);

		memcpy(buf, name, k);
		buf[k] = 0;
	}
	return n;
}

/* The guest's name for addr, as %ps (name) or %pS (name+0xoff) prints it; hex when unknown. */
static size_t gsym_name(const struct gsym_table *s, uint64_t addr, bool with_off, char *buf, size_t size)
{
	size_t lo = 0, hi = s ? s->n : 0;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->addr[mid] <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || addr - s->addr[lo - 1] > GSYM_FAR)
		return (size_t)snprintf(buf, size, "0x%" PRIx64, addr);
	if (with_off && addr != s->addr[lo - 1])
		return (size_t)snprintf(buf, size, "%.100s+0x%" PRIx64, s->name[lo - 1], addr - s->addr[lo - 1]);
	return gsym_copy(s->name[lo - 1], 120, buf, size); /* once per such field of every record */
}

size_t merge_gsym_record(const struct merge_guest *g, const struct guest_event *e, const uint8_t *data, size_t len,
			 uint8_t *out)
{
	size_t at = e->sym_base + 4u * e->n_sym;

	memcpy(out, data, MIN(len, (size_t)e->sym_base));
	if (len < e->sym_base)
		memset(out + len, 0, e->sym_base - len);
	for (unsigned j = 0; j < e->n_sym; j++) {
		char name[GSYM_NAME_MAX];
		uint64_t addr = 0;
		size_t n;
		uint32_t loc;

		if ((size_t)e->sym[j].off + 8 <= len)
			memcpy(&addr, data + e->sym[j].off, 8);
		n = MIN(gsym_name(g->gsym, addr, e->sym[j].with_off, name, sizeof(name)), sizeof(name) - 1) + 1;
		loc = (uint32_t)(n << 16 | at);
		memcpy(out + e->sym_base + 4 * j, &loc, 4);
		memcpy(out + at, name, n);
		at += n;
	}
	return at;
}
