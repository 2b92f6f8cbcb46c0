/* SPDX-License-Identifier: GPL-2.0-only */
/* tdata.c: the output's tracing data (the host's, or a fresh one, plus the guest's formats).
 * Private to the merge (merge.c, follow.c). */
#pragma once

#include <stddef.h>

#include "out.h"

/* Into m->td: the host recording's (following: the host's tracefs formats meanwhile), or one
 * from the first guest's headers, plus each guest's events remapped to free ids as guest_<sys>
 * (the second VM's as guest2_<sys>...).
 * 0 or -errno and why. */
int merge_tdata_build(struct merge_ctx *m, char *why, size_t whylen);
/* Following, at the end: perf's own tracing data replaces the tracefs one. */
int merge_tdata_final(struct merge_ctx *m);
