// SPDX-License-Identifier: GPL-2.0-only
/* stop's stalls line made by the live merge (collector.h report_live_*): each record it writes
 * goes through read.c's feed as it would from the file, with the file's attrs and the tracing
 * data it was given, so that stop need not read the whole output again. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "collector.h"
#include "perf_file.h"
#include "report.h"

struct report_live {
	struct report r;
	struct report_feed *f;
};

static const struct perf_attr_ids *live_attr(void *ud, size_t i)
{
	return &((const struct perf_attr_ids *)ud)[i];
}

int report_live_new(const struct perf_attr_ids *attrs, size_t n_attrs, const uint8_t *td, size_t td_len,
		    struct report_live **ret)
{
	struct report_opts o = { .min_ns = 1000000, .to = UINT64_MAX };
	struct report_live *l = calloc(1, sizeof(*l));
	char err[256];
	int q;

	if (!l)
		return -ENOMEM;
	if ((q = report_init(&l->r, &o)) < 0) {
		free(l);
		return q;
	}
	if ((q = report_feed_new(&l->r, live_attr, (void *)attrs, n_attrs, td, td_len, err, sizeof(err), &l->f)) < 0) {
		report_free(&l->r);
		free(l);
		return q;
	}
	*ret = l;
	return 0;
}

void report_live_record(void *ud, const struct perf_event_header *e)
{
	report_feed_record(((struct report_live *)ud)->f, e);
}

void report_live_finish(struct report_live *l, FILE *out)
{
	report_feed_end(l->f);
	report_sort_stalls(&l->r);
	report_summary_line(&l->r, out);
}

void report_live_free(struct report_live *l)
{
	if (!l)
		return;
	report_feed_free(l->f);
	report_free(&l->r);
	free(l);
}
