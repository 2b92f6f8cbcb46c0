// SPDX-License-Identifier: GPL-2.0-only
/* Fuzz target: HEADER_TRACING_DATA blobs and every event format inside them (guest formats go
 * through the same tep_format parser and ID rewrite). */
#include <stdint.h>
#include <stdlib.h>

#include "tep_format.h"
#include "tracing_data.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int each(const char *sys, const struct td_text *t, void *ud)
{
	struct tep_format *f = ud;
	char *out;
	size_t len;

	if (tep_format_parse(t->data, t->len, f) == 0 && tep_format_set_id(t->data, t->len, f, 65000, &out, &len) == 0) {
		if (tep_format_parse(out, len, f) != 0 || f->id != 65000)
			abort();
		free(out);
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tracing_data td;
	struct tep_format *f = malloc(sizeof(*f));
	uint8_t *blob;
	size_t len;

	if (f && tep_format_parse((const char *)data, size, f) == 0)
		(void)tep_format_field(f, "common_pid");
	if (f && tracing_data_parse(data, size, &td) == 0) {
		tracing_data_for_each(&td, each, f);
		if (tracing_data_add_event(&td, "guest_x", "name: y\n", 8) == 0 &&
		    tracing_data_build(&td, &blob, &len) == 0)
			free(blob);
		tracing_data_free(&td);
	}
	free(f);
	return 0;
}
