// SPDX-License-Identifier: GPL-2.0-only
/* Guest pointers named in guest tracepoints (collector/merge/gsym.c): real format files of this
 * host's tracefs rewritten, then read back by libtraceevent (perf's own parser) with a record. */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


#include "harness.h"
#include "merge.h"
#include "util.h"

/* path's format, without its "args[]" line when drop_args (the 6.1 guests' function format:
 * the flexible args[] came later), rewritten. */
static int rewrite_fmt(const char *path, bool drop_args, struct guest_event *e, char **text, size_t *len)
{
	int r = util_read_file(path, TEP_FORMAT_MAX_TEXT, text, len);
	char *a;

	if (r < 0)
		return r;
	if (drop_args && (a = strstr(*text, "\tfield:unsigned long args[];"))) {
		size_t l = strcspn(a, "\n") + 1;

		memmove(a, a + l, strlen(a + l) + 1);
		*len -= l;
	}
	memset(e, 0, sizeof(*e));
	if ((r = tep_format_parse(*text, *len, &e->fmt)) < 0)
		return r;
	return merge_gsym_format(e, text, len);
}

static int rewrite(const char *path, struct guest_event *e, char **text, size_t *len)
{
	return rewrite_fmt(path, false, e, text, len);
}

#define FUNCTION_FORMAT "/sys/kernel/tracing/events/ftrace/function/format"

TEST(function_format)
{
	_cleanup_free_ char *text = NULL, *with_args = NULL;
	struct guest_event e;
	size_t len;

	CHECK_INT(rewrite_fmt(FUNCTION_FORMAT, true, &e, &text, &len), ==, 1);
	CHECK_INT(e.n_sym, ==, 2);
	CHECK_INT(e.sym_base, ==, 24);
	CHECK(strstr(text, "\tfield:__data_loc char[] ip_sym;\toffset:24;\tsize:4;\tsigned:0;\n") != NULL);
	CHECK(strstr(text, "signed:0;\n\nprint fmt: \" %s <-- %s\", __get_str(ip_sym), __get_str(parent_ip_sym)\n") != NULL);
	/* this host's own format ends in a flexible args[] (data after the fixed fields): left alone */
	CHECK_INT(rewrite(FUNCTION_FORMAT, &e, &with_args, &len), ==, strstr(with_args, "args[]") ? 0 : 1);
}

/* timer_start: %p (left alone), %ps, and a __print_flags with braces and commas among the args. */
TEST(timer_start_format)
{
	_cleanup_free_ char *text = NULL;
	struct guest_event e;
	size_t len;
	struct tep_format f;

	CHECK_INT(rewrite("/sys/kernel/tracing/events/timer/timer_start/format", &e, &text, &len), ==, 1);
	CHECK_INT(e.n_sym, ==, 1);
	CHECK(strstr(text, "\"timer=%p function=%s expires=%lu") != NULL);
	CHECK(strstr(text, ", REC->timer, __get_str(function_sym), REC->expires,") != NULL);
	CHECK(strstr(text, "{ 0x00200000, \"I\" })\n") != NULL);
	CHECK_INT(tep_format_parse(text, len, &f), ==, 0);
	CHECK(tep_format_field(&f, "function_sym") != NULL);
	CHECK_INT(tep_format_field(&f, "function_sym")->dyn, ==, 1);
}

/* An event with a __data_loc field has no fixed end to append after: left as it is. */
TEST(dynamic_event_left_alone)
{
	static const char fmt[] = "name: x\nID: 7\nformat:\n"
		"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
		"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"
		"\tfield:__data_loc char[] name;\toffset:8;\tsize:4;\tsigned:0;\n"
		"\tfield:unsigned long fn;\toffset:16;\tsize:8;\tsigned:0;\n\n"
		"print fmt: \"%s %ps\", __get_str(name), (void *)REC->fn\n";
	_cleanup_free_ char *text = strdup(fmt);
	struct guest_event e = { 0 };
	size_t len = sizeof(fmt) - 1;

	CHECK_INT(tep_format_parse(text, len, &e.fmt), ==, 0);
	CHECK_INT(merge_gsym_format(&e, &text, &len), ==, 0);
	CHECK_INT(e.n_sym, ==, 0);
	CHECK(!strcmp(text, fmt));
}

/* A record gets its names from the kallsyms table: name, name+0xoff for %pS, hex when unknown. */
TEST(record_names)
{
	char dir[] = "/tmp/vt-test-gsym.XXXXXX", path[PATH_MAX + 32], cmd[PATH_MAX + 32];
	_cleanup_free_ char *text = NULL;
	struct merge_guest g = { 0 };
	struct guest_event e;
	uint8_t rec[24] = { 1, 0 }, out[1024];
	uint64_t ip = 0xffffffff81000010ull, parent = 0xfffffffff0000000ull;
	uint32_t loc[2];
	size_t len, n;
	FILE *f;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/guest", dir);
	CHECK_INT(mkdir(path, 0755), ==, 0);
	snprintf(path, sizeof(path), "%s/guest/kallsyms", dir);
	f = fopen(path, "w");
	CHECK(f != NULL);
	fprintf(f, "ffffffff81000000 T _text\nffffffff81000000 T startup_64\nffffffff81000040 d some_data\n"
		   "ffffffffc0232000 t pipe_to_sg\t[virtio_console]\n");
	fclose(f);
	merge_gsym_load(&g, dir);
	CHECK(g.gsym != NULL);
	CHECK_INT(g.gsym->ktext, ==, 0xffffffff81000000ull);
	CHECK_INT(g.gsym->n_mods, ==, 1u);
	CHECK(!strcmp(g.gsym->mods[0].name, "[virtio_console]"));
	CHECK_INT(g.gsym->mods[0].start, ==, 0xffffffffc0232000ull);
	CHECK_INT(g.gsym->mods[0].end, ==, 0xffffffffc0233000ull);
	CHECK_INT(rewrite_fmt(FUNCTION_FORMAT, true, &e, &text, &len), ==, 1);
	memcpy(rec + 8, &ip, 8);
	memcpy(rec + 16, &parent, 8);
	n = merge_gsym_record(&g, &e, rec, sizeof(rec), out);
	memcpy(loc, out + e.sym_base, 8);
	CHECK_INT(loc[0] & 0xffff, ==, e.sym_base + 8u);
	CHECK(!strcmp((char *)out + (loc[0] & 0xffff), "startup_64"));            /* %ps: no offset */
	CHECK_INT(loc[0] >> 16, ==, (uint32_t)strlen("startup_64") + 1);
	CHECK(!strcmp((char *)out + (loc[1] & 0xffff), "0xfffffffff0000000")); /* far from any symbol */
	CHECK_INT(n, ==, (loc[1] & 0xffff) + (loc[1] >> 16));
	CHECK(!memcmp(out, rec, 24));
	e.sym[0].with_off = true; /* %pS */
	merge_gsym_record(&g, &e, rec, sizeof(rec), out);
	memcpy(loc, out + e.sym_base, 8);
	CHECK(!strcmp((char *)out + (loc[0] & 0xffff), "startup_64+0x10"));
	merge_gsym_free(&g);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	CHECK_INT(system(cmd), ==, 0);
}
