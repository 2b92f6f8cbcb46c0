// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>

#include "report.h"

int report_svg(const struct report *r, const struct report_filter *f, FILE *out)
{
	(void)r, (void)f, (void)out;
	return -ENOTSUP;
}
