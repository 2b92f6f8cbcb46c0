// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "tep_format.h"

static const char fmt[] = "name: sched_switch\nID: 372\nformat:\n"
	"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
	"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"
	"\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;\n"
	"\tfield:__data_loc char[] name;\toffset:24;\tsize:4;\tsigned:0;\n\n"
	"print fmt: \"prev_comm=%s\", REC->prev_comm\n";

TEST(parse)
{
	struct tep_format f;
	const struct tep_format_field *fl;

	CHECK_INT(tep_format_parse(fmt, strlen(fmt), &f), ==, 0);
	CHECK_STR(f.name, "sched_switch");
	CHECK_INT(f.id, ==, 372);
	CHECK_INT(f.n_fields, ==, 4);
	fl = tep_format_field(&f, "prev_comm");
	CHECK(fl && fl->offset == 8 && fl->size == 16 && !fl->dyn);
	fl = tep_format_field(&f, "name");
	CHECK(fl && fl->dyn == 1);
	CHECK(!tep_format_field(&f, "nope"));
}

TEST(set_id)
{
	struct tep_format f, g;
	char *out;
	size_t len;

	CHECK_INT(tep_format_parse(fmt, strlen(fmt), &f), ==, 0);
	CHECK_INT(tep_format_set_id(fmt, strlen(fmt), &f, 65535, &out, &len), ==, 0);
	CHECK(strstr(out, "\nID: 65535\n") != NULL);
	CHECK_INT(len, ==, strlen(fmt) + 2);
	CHECK_INT(tep_format_parse(out, len, &g), ==, 0);
	CHECK_INT(g.id, ==, 65535);
	CHECK(!strcmp(strstr(out, "format:"), strstr(fmt, "format:")));
	free(out);
}

TEST(rejects)
{
	struct tep_format f;
	static const char *const bad[] = {
		"name: x\nID: 0\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\n",
		"name: x\nID: 70000\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\n",
		"name: ../x\nID: 5\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\n",
		"name: x\nID: 5\nformat:\n\tfield:unsigned short common_type;\toffset:2;\tsize:2;\n",
		"name: x\nID: 5\nformat:\n\tfield:int y;\toffset:0;\tsize:2;\n",
		"name: x\nID: 5\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\n"
		"\tfield:int y;\toffset:65535;\tsize:4;\n",
		"name: x\nID: 5x\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\n",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK_INT(tep_format_parse(bad[i], strlen(bad[i]), &f), ==, -EBADMSG);
}
