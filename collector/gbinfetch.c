// SPDX-License-Identifier: GPL-2.0-only
/* At stop, with guest perf: the guest binaries its user-mode samples ran in, fetched from the
 * agent one chunk at a time (BINARY_REQ) into SESSION/binaries/HEX, each checked (size, ELF,
 * build-id) before it is kept, and listed in SESSION/binaries/index for the merge, which places
 * them in perf's build-id cache. A build-id the cache already holds is not fetched again. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "collector.h"
#include "gbin.h"
#include "log.h"
#include "util.h"

#define GBIN_SESSION_MAX (1ull << 30) /* bytes fetched per session */

struct gbinfetch {
	struct gbin_list l;
	size_t next;        /* the want being fetched */
	uint64_t off, size; /* its bytes so far, its size (0 before the first chunk) */
	int fd, dfd;        /* SESSION/binaries/HEX.part, SESSION/binaries */
	FILE *index;
	char bdir[PATH_MAX];
	uint64_t bytes, t0, t1; /* CLOCK_MONOTONIC at the scan, at the last reply */
	unsigned fetched, cached, failed;
};

static void gbinfetch_line(struct gbinfetch *f, const struct gbin_want *w, const char *status)
{
	char hex[2 * ELF_NOTES_BUILD_ID_MAX + 1];

	merge_gbin_hex(w->id, w->len, hex);
	fprintf(f->index, "%s %s %s\n", hex, status, w->path);
	fflush(f->index);
}

int gbinfetch_new(const char *session_dir, struct gbinfetch **ret)
{
	_cleanup_free_ struct gbinfetch *f = calloc(1, sizeof(*f));
	char path[PATH_MAX + 16];
	int r, ifd;

	if (!f)
		return -ENOMEM;
	f->fd = f->dfd = -1;
	f->t0 = f->t1 = util_now_ns(CLOCK_MONOTONIC);
	merge_gbin_default_dir(f->bdir, sizeof(f->bdir));
	if ((r = merge_gbin_scan(session_dir, &f->l)) < 0)
		return r;
	snprintf(path, sizeof(path), "%s/binaries", session_dir);
	if (mkdir(path, 0755) < 0 && errno != EEXIST)
		r = -errno;
	else if ((f->dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		r = -errno;
	else if ((ifd = openat(f->dfd, "index", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0)
		r = -errno;
	else if (!(f->index = fdopen(ifd, "w")))
		r = -errno, close(ifd);
	if (r < 0) {
		merge_gbin_list_free(&f->l);
		if (f->dfd >= 0)
			close(f->dfd);
		return r;
	}
	fprintf(f->index, "# buildid_dir %s\n# user-mode samples %" PRIu64 ", their executable mappings without a "
		"build-id %" PRIu64 ", with a path not fetched %" PRIu64 "\n", f->bdir, f->l.sampled,
		f->l.maps_no_build_id, f->l.bad_paths);
	session_ini_set(session_dir, "buildid_dir", f->bdir);
	*ret = TAKE_PTR(f);
	return 0;
}

/* Asks for the next chunk, skipping what the cache holds; false when nothing is left. */
bool gbinfetch_next(struct gbinfetch *f, struct agentctl *a)
{
	for (; f->next < f->l.n; f->next++, f->off = f->size = 0) {
		const struct gbin_want *w = &f->l.v[f->next];

		if (f->off == 0 && merge_gbin_cached(f->bdir, w->id, w->len)) {
			f->cached++;
			gbinfetch_line(f, w, "cached");
			continue;
		}
		if (f->bytes >= GBIN_SESSION_MAX) {
			f->failed++;
			gbinfetch_line(f, w, "skipped:session-bound-1GiB");
			continue;
		}
		return agentctl_send_binary_req(a, w->path, w->id, w->len, f->off) == 0;
	}
	return false;
}

/* The current file is complete: checked, renamed to HEX, listed. */
static void gbinfetch_done(struct gbinfetch *f, const struct gbin_want *w, const char *hex, char *part)
{
	uint8_t id[ELF_NOTES_BUILD_ID_MAX];
	size_t n = 0;
	int r = elf_file_build_id_fd(f->fd, f->size, id, &n);

	if (r == 0 && (n != w->len || memcmp(id, w->id, n)))
		r = -ESTALE;
	close(f->fd);
	f->fd = -1;
	if (r < 0 || renameat(f->dfd, part, f->dfd, hex) < 0) {
		log_warn("guest binary %s (build-id %s): the file sent is not an ELF file with that build-id (%s): "
			 "dropped; perf names its functions [unknown]", w->path, hex, strerror(r < 0 ? -r : errno));
		unlinkat(f->dfd, part, 0);
		f->failed++;
		gbinfetch_line(f, w, "refused:bad-elf");
		return;
	}
	f->fetched++;
	gbinfetch_line(f, w, "fetched");
}

/* A reply to the pending request: false when the fetch is over (nothing more asked). */
bool gbinfetch_on_msg(struct gbinfetch *f, struct agentctl *a, const struct vt_msg *m)
{
	const struct gbin_want *w = &f->l.v[f->next];
	char hex[2 * ELF_NOTES_BUILD_ID_MAX + 1], part[2 * ELF_NOTES_BUILD_ID_MAX + 8], err[512];
	const uint8_t *data;
	size_t len;
	uint64_t size;
	int r;

	if (f->next >= f->l.n)
		return false;
	f->t1 = util_now_ns(CLOCK_MONOTONIC);
	merge_gbin_hex(w->id, w->len, hex);
	snprintf(part, sizeof(part), "%s.part", hex);
	if (m->hdr.type == VT_MSG_ERROR) {
		agentctl_error_text(m, err, sizeof(err));
		log_warn("guest binary %s: not sent: %s; perf names its functions [unknown]", w->path, err);
		r = -EPERM;
	} else if ((r = agentctl_parse_binary(m, w->id, w->len, f->off, &data, &len, &size)) < 0 ||
		   (f->size && size != f->size)) {
		log_warn("guest binary %s: refused a malformed reply (%s)", w->path, strerror(r < 0 ? -r : EBADMSG));
		r = r < 0 ? r : -EBADMSG;
	} else {
		if (f->off == 0)
			f->fd = openat(f->dfd, part, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		f->size = size;
		r = f->fd < 0 ? -errno : util_write_full(f->fd, data, len);
		if (r < 0)
			log_warn("guest binary %s: cannot write %s: %s", w->path, part, strerror(-r));
		f->off += len;
		f->bytes += len;
	}
	if (r < 0) {
		if (f->fd >= 0)
			close(f->fd), f->fd = -1, unlinkat(f->dfd, part, 0);
		f->failed++;
		gbinfetch_line(f, w, "refused");
	} else if (f->off == f->size) {
		gbinfetch_done(f, w, hex, part);
	} else {
		return agentctl_send_binary_req(a, w->path, w->id, w->len, f->off) == 0;
	}
	f->next++, f->off = f->size = 0;
	return gbinfetch_next(f, a);
}

void gbinfetch_summary(const struct gbinfetch *f, FILE *out)
{
	fprintf(out, "guest binaries: %zu that user-mode samples ran in: %u fetched (%.1f MB), %u already in %s, "
		"%u not sent; %" PRIu64 " mappings without a build-id; scan and fetch took %.2f s\n", f->l.n, f->fetched,
		(double)f->bytes / 1e6, f->cached, f->bdir, f->failed, f->l.maps_no_build_id, (double)(f->t1 - f->t0) / 1e9);
}

/* The fetch gave up (timeout, agent gone): the rest is listed as not fetched. */
void gbinfetch_abort(struct gbinfetch *f, const char *why)
{
	for (; f->next < f->l.n; f->next++) {
		f->failed++;
		gbinfetch_line(f, &f->l.v[f->next], why);
	}
	if (f->fd >= 0)
		close(f->fd), f->fd = -1; /* its .part file is not in the index: the merge ignores it */
}

void gbinfetch_free(struct gbinfetch *f)
{
	if (!f)
		return;
	if (f->fd >= 0)
		close(f->fd);
	if (f->index)
		fclose(f->index);
	if (f->dfd >= 0)
		close(f->dfd);
	merge_gbin_list_free(&f->l);
	free(f);
}
