/* SPDX-License-Identifier: GPL-2.0-only */
/* follow.c: merge --follow, the daemon's live merge. Private to the merge (merge.c). */
#pragma once

#include "out.h"

/* Merges while the session traces, by the daemon's words on o->follow_fd, until "end"; prints
 * the summary's "live:" line. data names the output (for the errors). 0 or -errno (said). */
int merge_follow(struct merge_ctx *m, const struct merge_options *o, const char *data);
/* Pipe mode (-o -): the writer on fd, the attrs and the tracing data before any event. */
int merge_follow_preamble(struct merge_ctx *m, int fd);
