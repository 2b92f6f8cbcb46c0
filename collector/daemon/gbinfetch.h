/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

#include <stdbool.h>
#include <stdio.h>

/* gbinfetch.c: at stop, after host perf stopped, the guest binaries that guest user-mode samples
 * ran in, from the agent into SESSION/binaries/ (the merge places them in OUT/buildids, or with
 * trust in perf's build-id cache $HOME/.debug). */
struct gbinfetch;
struct agentctl;
struct vt_msg;
#define GBIN_TOTAL_TIMEOUTS 12 /* the whole fetch: at most this many --timeout */
/* Scans the session's guest perf streams and opens SESSION/binaries/index. */
int gbinfetch_new(const char *session_dir, bool trust, struct gbinfetch **ret);
/* Sends the next request; false when nothing is left to fetch. */
bool gbinfetch_next(struct gbinfetch *f, struct agentctl *a);
/* Takes the reply (BINARY or ERROR) to the pending request and sends the next; false when done. */
bool gbinfetch_on_msg(struct gbinfetch *f, struct agentctl *a, const struct vt_msg *m);
/* Whether that reply was progress (re-arms the wait): not a short chunk that is no file's end. */
bool gbinfetch_progress(const struct gbinfetch *f);
/* Ends the fetch: the rest listed with status ("cut:WHAT", said with why in the summary). */
void gbinfetch_abort(struct gbinfetch *f, const char *status, const char *why);
void gbinfetch_summary(const struct gbinfetch *f, FILE *out);
/* What the fetch did not bring: binaries not sent, binaries cut (and why, "" when none). */
void gbinfetch_missing(const struct gbinfetch *f, unsigned *not_sent, unsigned *cut, const char **cut_why);
void gbinfetch_free(struct gbinfetch *f);
