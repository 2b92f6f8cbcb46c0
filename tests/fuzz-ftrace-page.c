// SPDX-License-Identifier: GPL-2.0-only
/* Fuzz target: guest ring-buffer pages and the header_page/header_event texts that drive them.
 * Input: HEADER_PAGE \0 HEADER_EVENT \0 PAGE..., or a bare page read with this host's layout. */
#include <stdint.h>
#include <string.h>

#include "ftrace_page.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char hp[] = "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n"
			 "\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n"
			 "\tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;\n";
static const char he[] = "\ttype_len    :    5 bits\n\ttime_delta  :   27 bits\n\tpadding     : type == 29\n"
			 "\ttime_extend : type == 30\n\ttime_stamp : type == 31\n\tdata max type_len  == 28\n";

static void walk(const struct ftrace_page_layout *l, const uint8_t *p, size_t n)
{
	for (; n >= l->page_size; p += l->page_size, n -= l->page_size) {
		struct ftrace_page it;
		struct ftrace_event ev;
		volatile uint8_t sink = 0;

		if (ftrace_page_begin(&it, l, p, l->page_size) < 0)
			continue;
		while (ftrace_page_next(&it, &ev) == 1)
			if (ev.len)
				sink ^= ev.data[0] ^ ev.data[ev.len - 1];
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *z1 = memchr(data, 0, size), *z2;
	struct ftrace_page_layout l;

	if (z1 && (z2 = memchr(z1 + 1, 0, size - (size_t)(z1 + 1 - data)))) {
		if (ftrace_page_layout_parse((const char *)data, (size_t)(z1 - data), (const char *)z1 + 1,
					     (size_t)(z2 - z1 - 1), &l) == 0)
			walk(&l, z2 + 1, size - (size_t)(z2 + 1 - data));
	}
	if (ftrace_page_layout_parse(hp, strlen(hp), he, strlen(he), &l) == 0)
		walk(&l, data, size);
	return 0;
}
