// SPDX-License-Identifier: GPL-2.0-only
/* At stop, with guest perf, after host perf stopped: the guest binaries its user-mode samples
 * ran in, fetched from the agent one chunk at a time (BINARY_REQ) into SESSION/binaries/HEX, each
 * checked (size, ELF, build-id) before it is kept, and listed in SESSION/binaries/index for the
 * merge, which places them in the output's own build-id dir (OUT/buildids), or with
 * --trust-guest-binaries in perf's cache $HOME/.debug (then a build-id the cache holds is not
 * fetched). The guest cannot make it last: the daemon gives it GBIN_TOTAL_TIMEOUTS × --timeout in
 * all, and only a reply of GBIN_MIN_CHUNK bytes or more (or a file's last) re-arms the wait
 * for the next one; a signal or a second stop cuts it at once. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agentctl.h"
#include "gbin.h"
#include "gbinfetch.h"
#include "log.h"
#include "session.h"
#include "util.h"

#define GBIN_SESSION_MAX (1ull << 30) /* bytes fetched per session */
#define GBIN_MIN_CHUNK (64u << 10)     /* a shorter reply that is not a file's end is no progress */

struct gbinfetch {
	struct gbin_list l;
	size_t next;        /* the want being fetched */
	uint64_t off, size; /* its bytes so far, its size (0 before the first chunk) */
	int fd, dfd;        /* SESSION/binaries/HEX.part, SESSION/binaries */
	FILE *index;
	char bdir[PATH_MAX];
	uint64_t bytes, t0, t1; /* CLOCK_MONOTONIC at the scan, at the last reply */
	unsigned fetched, cached, failed, cut;
	bool trust;        /* --trust-guest-binaries: skip what $HOME/.debug holds */
	bool progress;     /* the last reply counts as progress */
	uint64_t short_replies; /* replies below GBIN_MIN_CHUNK that were no file's end */
	char cut_why[160]; /* why the fetch was cut, "" when it was not */
};

static void gbinfetch_line(struct gbinfetch *f, const struct gbin_want *w, const char *status)
{
	char hex[2 * ELF_NOTES_BUILD_ID_MAX + 1];

	merge_gbin_hex(w->id, w->len, hex);
	fprintf(f->index, "%s %s %s\n", hex, status, w->path);
	fflush(f->index);
}

int gbinfetch_new(const char *session_dir, bool trust, struct gbinfetch **ret)
{
	_cleanup_free_ struct gbinfetch *f = calloc(1, sizeof(*f));
	char path[PATH_MAX + 16];
	int r, ifd;

	if (!f)
		return -ENOMEM;
	f->fd = f->dfd = -1;
	f->t0 = f->t1 = util_now_ns(CLOCK_MONOTONIC);
	f->trust = trust;
	if (trust)
		merge_gbin_default_dir(f->bdir, sizeof(f->bdir));
	else
		snprintf(f->bdir, sizeof(f->bdir), "the output's " GBIN_OUT_DIR "/ (merge)");
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
	if (trust)
		session_ini_set(session_dir, "buildid_dir", f->bdir);
	*ret = TAKE_PTR(f);
	return 0;
}

/* Asks for the next chunk, skipping what the cache holds; false when nothing is left. */
bool gbinfetch_next(struct gbinfetch *f, struct agentctl *a)
{
	for (; f->next < f->l.n; f->next++, f->off = f->size = 0) {
		const struct gbin_want *w = &f->l.v[f->next];

		if (f->off == 0 && f->trust && merge_gbin_cached(f->bdir, w->id, w->len)) {
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

/* A chunk of len bytes at f->off: written to the .part file; -EFBIG past the session's bound. */
static int gbinfetch_chunk(struct gbinfetch *f, const struct gbin_want *w, const char *part, const uint8_t *data,
			   size_t len, uint64_t size)
{
	int r;

	if (f->bytes + len > GBIN_SESSION_MAX) {
		log_warn("guest binary %s: the session's bound of %llu MiB fetched is reached: cut", w->path,
			 GBIN_SESSION_MAX >> 20);
		return -EFBIG;
	}
	if (f->off == 0)
		f->fd = openat(f->dfd, part, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
	f->size = size;
	r = f->fd < 0 ? -errno : util_write_full(f->fd, data, len);
	if (r < 0)
		log_warn("guest binary %s: cannot write %s: %s", w->path, part, strerror(-r));
	f->off += len;
	f->bytes += len;
	/* a guest that trickles bytes does not keep the fetch alive */
	f->progress = len >= GBIN_MIN_CHUNK || f->off == f->size;
	if (!f->progress)
		f->short_replies++;
	return r;
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
	f->progress = true; /* an answer that ends a file (an error, a refusal) counts */
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
		r = gbinfetch_chunk(f, w, part, data, len, size);
	}
	if (r == -EFBIG) {
		gbinfetch_abort(f, "cut:session-bound-1GiB", "the session's bound of 1 GiB fetched was reached");
		return false;
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

bool gbinfetch_progress(const struct gbinfetch *f)
{
	return f->progress;
}

void gbinfetch_summary(const struct gbinfetch *f, FILE *out)
{
	if (f->trust)
		fprintf(out, "guest binaries: %zu that user-mode samples ran in: %u fetched (%.1f MB), %u already in %s, "
			"%u not sent", f->l.n, f->fetched, (double)f->bytes / 1e6, f->cached, f->bdir, f->failed);
	else
		fprintf(out, "guest binaries: %zu that user-mode samples ran in: %u fetched (%.1f MB, for %s), "
			"%u not sent", f->l.n, f->fetched, (double)f->bytes / 1e6, f->bdir, f->failed);
	if (f->cut)
		fprintf(out, ", %u CUT: %s", f->cut, f->cut_why);
	fprintf(out, "; %" PRIu64 " mappings without a build-id; scan and fetch took %.2f s\n", f->l.maps_no_build_id,
		(double)(util_now_ns(CLOCK_MONOTONIC) - f->t0) / 1e9);
	if (f->short_replies)
		fprintf(out, "guest binaries: %" PRIu64 " replies shorter than %u KiB that were no file's end: no "
			"progress (the agent sends 4 MiB chunks)\n", f->short_replies, GBIN_MIN_CHUNK >> 10);
}

void gbinfetch_missing(const struct gbinfetch *f, unsigned *not_sent, unsigned *cut, const char **cut_why)
{
	*not_sent = f->failed;
	*cut = f->cut;
	*cut_why = f->cut_why;
}

/* The fetch gave up (status "cut:..." with why, or "refused:agent-gone"): the files fetched
 * stay, the rest is listed with status. */
void gbinfetch_abort(struct gbinfetch *f, const char *status, const char *why)
{
	bool cut = !strncmp(status, "cut:", 4);
	size_t cur = f->next;

	if (cut && !f->cut_why[0] && f->next < f->l.n)
		snprintf(f->cut_why, sizeof(f->cut_why), "%s", why);
	for (; f->next < f->l.n; f->next++) {
		cut ? f->cut++ : f->failed++;
		gbinfetch_line(f, &f->l.v[f->next], status);
	}
	if (f->fd >= 0) { /* a file half fetched is no use: the merge would not take it */
		char hex[2 * ELF_NOTES_BUILD_ID_MAX + 1], part[2 * ELF_NOTES_BUILD_ID_MAX + 8];

		close(f->fd), f->fd = -1;
		if (cur < f->l.n) {
			merge_gbin_hex(f->l.v[cur].id, f->l.v[cur].len, hex);
			snprintf(part, sizeof(part), "%s.part", hex);
			unlinkat(f->dfd, part, 0);
		}
	}
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
