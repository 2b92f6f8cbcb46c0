// SPDX-License-Identifier: GPL-2.0-only
/* Guest binaries for guest user symbols (docs/protocol.md, BINARY_REQ): the host names a file
 * by the path and build-id a guest perf MMAP2 record gave it, and gets it back a chunk at a
 * time. Only a regular ELF file whose build-id is the one named is sent: the host learns
 * build-ids only from the guest's own mappings, so it cannot ask for any other file. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent.h"
#include "elf_notes.h"
#include "log.h"
#include "util.h"

/* Opens path as the file with build-id (want, want_len): the fd, or a negative errno with why. */
static int binary_open(const char *path, const uint8_t *want, size_t want_len, uint64_t *ret_size,
		       const char **why)
{
	_cleanup_close_ int fd = -1;
	uint8_t id[ELF_NOTES_BUILD_ID_MAX];
	size_t n = 0;
	struct stat st;
	int r;

	*why = "cannot open it";
	if (path[0] != '/')
		return *why = "not an absolute path", -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return *why = "not a regular file", -EINVAL;
	if ((uint64_t)st.st_size > VT_BINARY_MAX)
		return *why = "larger than the 256 MiB a guest binary may be", -EFBIG;
	r = elf_file_build_id_fd(fd, (uint64_t)st.st_size, id, &n);
	if (r < 0)
		return *why = r == -ENOENT ? "an ELF file without a build-id" : "not an ELF file with a readable build-id", r;
	if (n != want_len || memcmp(id, want, n))
		return *why = "its build-id is not the one asked for (the file changed since it was mapped?)", -ESTALE;
	*ret_size = (uint64_t)st.st_size;
	return TAKE_FD(fd);
}

void binary_reply(struct agent *a, const struct vt_msg *m, struct vt_buf *out)
{
	_cleanup_free_ char *path = NULL;
	_cleanup_free_ uint8_t *data = NULL;
	_cleanup_close_ int fd = -1;
	struct vt_attr bid;
	uint64_t off = 0, size = 0;
	const char *why = "";
	size_t len, mark;
	int r;

	if (a->opts->no_binaries) {
		reply_error(out, m->hdr.seq, EPERM, "guest binaries are not sent: trace-agent runs with --no-binaries");
		return;
	}
	if (vt_msg_str(m, VT_A_FILE_NAME, PATH_MAX, &path) < 0 || vt_msg_find(m, VT_A_BUILD_ID, &bid) < 0 ||
	    bid.len == 0 || bid.len > ELF_NOTES_BUILD_ID_MAX || vt_msg_u64(m, VT_A_FILE_OFFSET, &off) < 0) {
		reply_error(out, m->hdr.seq, EINVAL, "binary request without a path, a build-id of 1 to 20 bytes and an offset");
		return;
	}
	fd = binary_open(path, bid.data, bid.len, &size, &why);
	if (fd < 0) {
		reply_error(out, m->hdr.seq, -fd, "guest binary %s: %s (%s)", path, why, strerror(-fd));
		return;
	}
	if (off > size) {
		reply_error(out, m->hdr.seq, EINVAL, "guest binary %s: offset %llu past its %llu bytes", path,
			      (unsigned long long)off, (unsigned long long)size);
		return;
	}
	len = (size_t)MIN(size - off, (uint64_t)VT_BINARY_CHUNK);
	data = malloc(MAX(len, (size_t)1));
	if (!data || (r = util_pread_full(fd, data, len, off)) < 0) {
		r = data ? r : -ENOMEM;
		reply_error(out, m->hdr.seq, -r, "guest binary %s: cannot read it: %s", path, strerror(-r));
		return;
	}
	mark = out->len;
	vt_msg_begin(out, VT_MSG_BINARY, m->hdr.seq);
	vt_put_bytes(out, VT_A_BUILD_ID, bid.data, bid.len);
	vt_put_u64(out, VT_A_FILE_SIZE, size);
	vt_put_u64(out, VT_A_FILE_OFFSET, off);
	vt_put_bytes(out, VT_A_FILE_DATA, data, len);
	if (vt_msg_end(out) < 0) {
		out->len = mark; /* no half frame: only the error */
		out->oom = false;
		reply_error(out, m->hdr.seq, ENOMEM, "guest binary %s: no memory for a %zu-byte reply", path, len);
		return;
	}
	if (off == 0)
		log_info("guest binary %s: %llu bytes to the host", path, (unsigned long long)size);
}
