// SPDX-License-Identifier: GPL-2.0-only
/* Fuzz target: the merge's readers of the guest's saved_cmdlines and saved_tgids (guest bytes
 * stored as received in SESSION/guest/) and the task table they fill (common/hash.c: pids the
 * guest chose, colliding ones in seed colliding-pids). Input: cmdlines text, a NUL byte, tgids
 * text. */
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "merge.h"
#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char tmpl[] = "/tmp/vt-fuzz-tasks-XXXXXX";

static void session_dir_remove(void)
{
	char path[sizeof(tmpl) + 32];

	snprintf(path, sizeof(path), "%s/guest/saved_cmdlines", tmpl);
	unlink(path);
	snprintf(path, sizeof(path), "%s/guest/saved_tgids", tmpl);
	unlink(path);
	snprintf(path, sizeof(path), "%s/guest", tmpl);
	rmdir(path);
	rmdir(tmpl);
}

static int session_dir(void)
{
	static int dfd = -1;
	char sub[sizeof(tmpl) + 8];

	if (dfd >= 0)
		return dfd;
	if (!mkdtemp(tmpl))
		abort();
	atexit(session_dir_remove);
	snprintf(sub, sizeof(sub), "%s/guest", tmpl);
	if (mkdir(sub, 0700) < 0)
		abort();
	dfd = open(tmpl, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		abort();
	return dfd;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nul = memchr(data, '\0', size);
	size_t n1 = nul ? (size_t)(nul - data) : size;
	struct merge_guest *g = calloc(1, sizeof(*g));
	int dfd = session_dir();

	if (!g)
		return 0;
	/* Write both files relative to the session dir, as the daemon stores them. */
	for (int i = 0; i < 2; i++) {
		const char *name = i ? "guest/saved_tgids" : "guest/saved_cmdlines";
		const uint8_t *p = i ? (nul ? nul + 1 : data + size) : data;
		size_t len = i ? (nul ? size - n1 - 1 : 0) : n1;
		int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

		if (fd < 0 || util_write_full(fd, p, len) < 0)
			abort();
		close(fd);
	}
	merge_meta_tasks(g, dfd);
	for (int32_t pid = -1; pid < 64; pid++) {
		(void)merge_meta_tgid(g, pid);
		bool first;

		(void)merge_meta_task_see(g, pid, "fuzz\x01name", 9, &first);
	}
	/* the tasks the input named (a hostile guest's pids, colliding ones too), and their
	 * neighbours in the old table's terms (not in the table) */
	for (size_t i = 0; i < g->n_tasks && i < 4096; i++) {
		int32_t pid = g->tasks[i].pid;
		bool first;

		if (merge_meta_tgid(g, pid) < 0)
			abort();
		(void)merge_meta_task_see(g, pid, "renamed", 7, &first);
		(void)merge_meta_tgid(g, (int32_t)((uint32_t)pid ^ (1u << 30)));
	}
	merge_meta_tasks_free(g);
	free(g);
	return 0;
}
