// SPDX-License-Identifier: GPL-2.0-only
/* The merge's inputs: every file of a session dir is opened through util_open_input, relative
 * to the dir's descriptor opened once (merge_guest_load), so a name in the dir never leads
 * outside it, never through a link, and a FIFO or a device in place of a file is refused by name
 * at once instead of blocking the merge. Absence is the caller's to judge; a refusal is said
 * here, once, as it is the same for every file. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>

#include "log.h"
#include "merge.h"
#include "util.h"

static void input_refused(const char *dir, const char *name, int r, const char *why)
{
	if (r != -ENOENT)
		log_warn("%s/%s %s: not read (a session dir's inputs are regular files beneath it)", dir, name, why);
}

int merge_input_open(int dfd, const char *dir, const char *name, int flags)
{
	char why[256];
	int fd = util_open_input(dfd, name, flags, why, sizeof(why));

	if (fd < 0)
		input_refused(dir, name, fd, why);
	return fd;
}

int merge_input_read(int dfd, const char *dir, const char *name, size_t max, char **ret_buf, size_t *ret_len)
{
	char why[256];
	int r = util_read_input_at(dfd, name, max, ret_buf, ret_len, why, sizeof(why));

	if (r < 0)
		input_refused(dir, name, r, why);
	return r;
}

int merge_input_dir(const struct merge_guest *g, const char *dir)
{
	int fd = g->dfd_open ? fcntl(g->dfd, F_DUPFD_CLOEXEC, 3) : open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	return fd < 0 ? -errno : fd;
}
