/* SPDX-License-Identifier: GPL-2.0-only */
/* Small helpers: ownership cleanup, full reads/writes, bounded file reads, parsing. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/types.h>
#include <unistd.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define ALIGN_UP(x, a) (((x) + ((a) - 1)) & ~((__typeof__(x))(a) - 1))
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))

static inline void freep(void *p) { free(*(void **)p); }
static inline void closep(int *fd) { if (*fd >= 0) close(*fd); }

#define _cleanup_(f) __attribute__((cleanup(f)))
#define _cleanup_free_ _cleanup_(freep)
#define _cleanup_close_ _cleanup_(closep)

/* Hand ownership on: returns the value and resets the variable. */
#define TAKE_PTR(p) ({ __typeof__(p) _p = (p); (p) = NULL; _p; })
#define TAKE_FD(fd) ({ int _fd = (fd); (fd) = -1; _fd; })

/* Write all len bytes; returns 0 or -errno. Retries EINTR and short writes. */
int util_write_full(int fd, const void *buf, size_t len);
/* DIR/NAME replaced whole: written to a new DIR/NAME.tmp (one already there is removed first;
 * O_EXCL | O_NOFOLLOW, mode 0600), fsynced, renamed over NAME, all relative to DIR opened once;
 * the temporary file removed on any failure. 0 or -errno. */
int util_replace_file(const char *dir, const char *name, const char *text, size_t len);
/* Reads exactly len bytes at off (retrying EINTR and short reads): 0, -EIO at the end of the
 * file, or -errno. */
int util_pread_full(int fd, void *buf, size_t len, uint64_t off);
#define UTIL_COPY_BUF (1u << 20)
/* Bytes [from, to) of in into out at the same offsets: copy_file_range (a reflink, or an
 * in-kernel copy), else pread and pwrite (another file system, or one that does not copy). */
int util_copy_range(int in, int out, uint64_t from, uint64_t to);
/* Classifies one write()/splice() result n to a non-blocking fd (call it before errno can
 * change): n when bytes moved, 0 to retry (EINTR), -EAGAIN to wait for POLLOUT, -EPIPE when
 * nothing moved, else -errno. */
ssize_t util_xfer_step(ssize_t n);
/* Read a whole file of at most max bytes (NUL-terminated copy); -EFBIG past max. */
/* A growable byte buffer: a put that cannot grow it sets oom (sticky) and adds nothing. */
struct util_buf {
	uint8_t *p;
	size_t len, cap;
	bool oom;
};
void util_buf_put(struct util_buf *b, const void *d, size_t n);

int util_read_file(const char *path, size_t max, char **ret_buf, size_t *ret_len);
/* Same, relative to a directory fd. */
int util_read_file_at(int dirfd, const char *path, size_t max, char **ret_buf, size_t *ret_len);
/* An input file opened for reading (flags: O_RDONLY, maybe O_DIRECT; O_DIRECTORY for a directory)
 * only if it is a regular file (a directory with O_DIRECTORY), never blocking on a FIFO and never
 * opening a device: the name is opened O_PATH, checked with fstat, then reopened by its
 * descriptor with O_NONBLOCK | O_NOCTTY | O_CLOEXEC. Relative to a directory fd, path must stay
 * beneath it (no leading '/', no ".."), and no link is followed on the way (but our own link in
 * our own directory no one else may write, such as a snapshot dir's guest -> ../guest) or at
 * its end; with
 * AT_FDCWD (a path the user gave) links are followed. The new fd, or -errno with why set to a
 * predicate for a message ("DIR/cpu1.spool" + " is a FIFO, not a regular file"): -ENOENT when
 * it does not exist, -ELOOP a link, -EINVAL a FIFO, device or socket, -EPERM outside dirfd. */
int util_open_input(int dirfd, const char *path, int flags, char *why, size_t whylen);
/* util_read_file_at through util_open_input (why as there). */
int util_read_input_at(int dirfd, const char *path, size_t max, char **ret_buf, size_t *ret_len, char *why,
		       size_t whylen);
/* The file open as fd, opened again with flags (by /proc/self/fd: the same inode, whatever its
 * path names now); the new fd or -errno. */
int util_reopen(int fd, int flags);
/* Write a whole file (O_TRUNC), mode for creation; never through a symbolic link (O_NOFOLLOW). */
int util_write_file(const char *path, const void *buf, size_t len, mode_t mode);
/* Parse "123", "64K", "16M", "2G" (binary units) into bytes; -EINVAL/-ERANGE. */
int util_parse_size(const char *s, uint64_t *ret);
/* Parse a decimal unsigned integer with bounds; -EINVAL/-ERANGE. */
int util_parse_u64(const char *s, uint64_t max, uint64_t *ret);
/* mkdir -p with mode for the directories it creates. */
int util_mkdir_p(const char *path, mode_t mode);
/* 0 when path and every directory above it are root's (or ours) and no other user can write
 * them (a sticky directory such as /tmp aside): nobody else can plant a link under it. Else
 * -errno with why (a sentence naming the component) filled in. */
int util_trusted_dir(const char *path, char *why, size_t size);
/* True when s is a non-empty name made of [A-Za-z0-9_] only (safe as a file name). */
bool util_safe_name(const char *s, size_t len);
/* Connects a stream socket to the unix socket at path; extra_flags may hold SOCK_NONBLOCK
 * (then a connect still in progress counts as done). 0 or -errno. */
int util_unix_connect(const char *path, int extra_flags, int *ret_fd);
/* Monotonic / realtime clocks in ns. */
uint64_t util_now_ns(int clockid);
