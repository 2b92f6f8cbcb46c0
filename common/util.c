// SPDX-License-Identifier: GPL-2.0-only
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

int util_pread_full(int fd, void *buf, size_t len, uint64_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = pread(fd, (char *)buf + done, len - done, (off_t)(off + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		done += (size_t)n;
	}
	return 0;
}

int util_copy_range(int in, int out, uint64_t from, uint64_t to)
{
	loff_t a = (loff_t)from, b = (loff_t)from;
	_cleanup_free_ uint8_t *buf = NULL;

	while ((uint64_t)a < to) {
		ssize_t k = copy_file_range(in, &a, out, &b, (size_t)MIN(to - (uint64_t)a, 1ull << 30), 0);

		if (k > 0)
			continue;
		if (k == 0)
			return -EIO; /* in is shorter than asked */
		if (errno == EINTR)
			continue;
		if (errno != EXDEV && errno != ENOSYS && errno != EINVAL && errno != EOPNOTSUPP)
			return -errno;
		break; /* another file system (Linux 5.19+), or none that copies: read and write */
	}
	if ((uint64_t)a < to && !(buf = malloc(UTIL_COPY_BUF)))
		return -ENOMEM;
	while ((uint64_t)a < to) {
		size_t n = (size_t)MIN(to - (uint64_t)a, UTIL_COPY_BUF);
		int r = util_pread_full(in, buf, n, (uint64_t)a);

		for (size_t done = 0; r == 0 && done < n;) {
			ssize_t w = pwrite(out, buf + done, n - done, a + (off_t)done);

			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0)
				r = w < 0 ? -errno : -EIO;
			else
				done += (size_t)w;
		}
		if (r < 0)
			return r;
		a += (loff_t)n;
	}
	return 0;
}

int util_write_full(int fd, const void *buf, size_t len)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = write(fd, (const char *)buf + done, len - done);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EIO;
		done += (size_t)n;
	}
	return 0;
}

int util_replace_file(const char *dir, const char *name, const char *text, size_t len)
{
	_cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), fd = -1;
	char tmp[NAME_MAX + 1];
	int r;

	if (dfd < 0)
		return -errno;
	if (snprintf(tmp, sizeof(tmp), "%s.tmp", name) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	/* a NAME.tmp already there (a crash, or planted: a link, a hard link) goes first */
	if (unlinkat(dfd, tmp, 0) < 0 && errno != ENOENT)
		return -errno;
	fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	r = util_write_full(fd, text, len);
	if (r == 0 && fsync(fd) < 0)
		r = -errno;
	if (r == 0 && renameat(dfd, tmp, dfd, name) < 0)
		r = -errno;
	if (r < 0)
		unlinkat(dfd, tmp, 0);
	return r;
}

ssize_t util_xfer_step(ssize_t n)
{
	if (n > 0)
		return n;
	if (n == 0)
		return -EPIPE;
	if (errno == EINTR)
		return 0;
	return -errno;
}

/* The whole of fd, at most max bytes (NUL-terminated copy); -EFBIG past max. */
static int util_read_fd(int fd, size_t max, char **ret_buf, size_t *ret_len)
{
	_cleanup_free_ char *buf = NULL;
	size_t cap = 4096, len = 0;

	/* tracefs files report size 0: grow as we read, never past max. */
	for (;;) {
		ssize_t n;

		if (!buf || len == cap) {
			char *nb;

			if (buf)
				cap *= 2;
			if (cap > max + 1)
				cap = max + 1;
			if (buf && len == cap)
				return -EFBIG;
			nb = realloc(buf, cap + 1);
			if (!nb)
				return -ENOMEM;
			buf = nb;
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (len > max)
			return -EFBIG;
	}
	buf[len] = '\0';
	*ret_buf = TAKE_PTR(buf);
	if (ret_len)
		*ret_len = len;
	return 0;
}

int util_read_file_at(int dirfd, const char *path, size_t max, char **ret_buf, size_t *ret_len)
{
	_cleanup_close_ int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	return util_read_fd(fd, max, ret_buf, ret_len);
}

/* What a file that is not the kind wanted is, for a message. */
static const char *util_kind(mode_t mode)
{
	return S_ISFIFO(mode) ? "a FIFO" : S_ISCHR(mode) ? "a character device" : S_ISBLK(mode) ? "a block device" :
	       S_ISSOCK(mode) ? "a socket" : S_ISLNK(mode) ? "a symbolic link" : S_ISDIR(mode) ? "a directory" :
	       S_ISREG(mode) ? "a regular file" : "a special file";
}

/* Whether path, relative, stays beneath its directory: no leading '/', no ".." component. */
static bool util_beneath(const char *path)
{
	if (path[0] == '/' || !path[0])
		return false;
	for (const char *c = path; *c;) {
		size_t l = strcspn(c, "/");

		if (l == 2 && c[0] == '.' && c[1] == '.')
			return false;
		c += l;
		c += strspn(c, "/");
	}
	return true;
}

/* Whether name in dirfd is a link of ours (root's) in a directory of ours no one else may write:
 * one only we can have made (a snapshot dir's guest -> ../guest), followed like util_trusted_dir
 * follows root's links; another user's link, or any link in another user's dir, is not. */
static bool util_own_link(int dirfd, const char *name)
{
	struct stat d, l;
	uid_t me = geteuid();

	return fstat(dirfd, &d) == 0 && d.st_uid == me && !(d.st_mode & (S_IWGRP | S_IWOTH)) &&
	       fstatat(dirfd, name, &l, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(l.st_mode) && l.st_uid == me;
}

/* O_PATH descriptor of path's last component below dirfd, every directory on the way opened
 * O_NOFOLLOW (a link on the way is refused unless util_own_link), the last one too (fstat tells a
 * link: never followed). */
static int util_walk_beneath(int dirfd, const char *path, char *why, size_t whylen)
{
	_cleanup_close_ int cur = -1;
	char comp[NAME_MAX + 1];

	for (const char *c = path + strspn(path, "/");;) {
		size_t l = strcspn(c, "/");
		const char *next = c + l + strspn(c + l, "/");
		int fd;

		if (l > NAME_MAX) {
			snprintf(why, whylen, "has a component longer than %d bytes", NAME_MAX);
			return -ENAMETOOLONG;
		}
		memcpy(comp, c, l);
		comp[l] = '\0';
		fd = openat(cur >= 0 ? cur : dirfd, comp, O_PATH | O_NOFOLLOW | O_CLOEXEC | (*next ? O_DIRECTORY : 0));
		if (fd < 0 && *next && (errno == ENOTDIR || errno == ELOOP) && util_own_link(cur >= 0 ? cur : dirfd, comp))
			fd = openat(cur >= 0 ? cur : dirfd, comp, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0) {
			int r = -errno;

			if (*next && (r == -ENOTDIR || r == -ELOOP))
				snprintf(why, whylen, "cannot be reached: %.*s is not a directory (a link is not followed)",
					 (int)(c + l - path), path);
			else
				snprintf(why, whylen, "cannot be opened: %s", strerror(-r));
			return r;
		}
		if (cur >= 0)
			close(cur);
		cur = fd;
		if (!*next)
			return TAKE_FD(cur);
		c = next;
	}
}

int util_open_input(int dirfd, const char *path, int flags, char *why, size_t whylen)
{
	bool want_dir = flags & O_DIRECTORY;
	_cleanup_close_ int fd = -1;
	struct stat st;
	int r;

	why[0] = '\0';
	if (dirfd != AT_FDCWD && !util_beneath(path)) {
		snprintf(why, whylen, "leads outside its directory (an absolute path or '..'): not read");
		return -EPERM;
	}
	fd = dirfd == AT_FDCWD ? open(path, O_PATH | O_CLOEXEC) : util_walk_beneath(dirfd, path, why, whylen);
	if (fd < 0) {
		r = dirfd == AT_FDCWD ? -errno : fd;
		if (dirfd == AT_FDCWD)
			snprintf(why, whylen, "cannot be opened: %s", strerror(-r));
		return r;
	}
	if (fstat(fd, &st) < 0) {
		r = -errno;
		snprintf(why, whylen, "cannot be examined: %s", strerror(-r));
		return r;
	}
	if (want_dir ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode)) {
		snprintf(why, whylen, "is %s, not a %s%s", util_kind(st.st_mode), want_dir ? "directory" : "regular file",
			 S_ISLNK(st.st_mode) ? " (a link is not followed)" : "");
		return S_ISLNK(st.st_mode) ? -ELOOP : want_dir ? -ENOTDIR : S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
	}
	/* the inode checked, opened for reading by its descriptor: no path is looked up again */
	r = util_reopen(fd, (flags & ~O_NOFOLLOW) | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (r < 0)
		snprintf(why, whylen, "cannot be opened: %s", strerror(-r));
	return r;
}

int util_read_input_at(int dirfd, const char *path, size_t max, char **ret_buf, size_t *ret_len, char *why,
		       size_t whylen)
{
	_cleanup_close_ int fd = util_open_input(dirfd, path, O_RDONLY, why, whylen);
	int r;

	if (fd < 0)
		return fd;
	if ((r = util_read_fd(fd, max, ret_buf, ret_len)) < 0)
		snprintf(why, whylen, "cannot be read: %s", r == -EFBIG ? "larger than the bound" : strerror(-r));
	return r;
}

int util_read_file(const char *path, size_t max, char **ret_buf, size_t *ret_len)
{
	return util_read_file_at(AT_FDCWD, path, max, ret_buf, ret_len);
}

int util_reopen(int fd, int flags)
{
	char path[48];
	int r;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	r = open(path, flags);
	return r < 0 ? -errno : r;
}

int util_write_file(const char *path, const void *buf, size_t len, mode_t mode)
{
	_cleanup_close_ int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, mode);
	int r;

	if (fd < 0)
		return -errno;
	r = util_write_full(fd, buf, len);
	if (r < 0)
		return r;
	if (close(TAKE_FD(fd)) < 0)
		return -errno;
	return 0;
}

int util_parse_u64(const char *s, uint64_t max, uint64_t *ret)
{
	char *end;
	unsigned long long v;

	if (!s || !*s || *s == '-' || *s == '+' || *s == ' ')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno == ERANGE)
		return -ERANGE;
	if (*end)
		return -EINVAL;
	if (v > max)
		return -ERANGE;
	*ret = v;
	return 0;
}

int util_parse_size(const char *s, uint64_t *ret)
{
	static const struct { char c; unsigned shift; } units[] = {
		{ 'K', 10 }, { 'M', 20 }, { 'G', 30 }, { 'T', 40 },
	};
	char num[32];
	size_t len;
	unsigned shift = 0;
	uint64_t v;
	int r;

	if (!s)
		return -EINVAL;
	len = strlen(s);
	if (len == 0 || len >= sizeof(num))
		return -EINVAL;
	memcpy(num, s, len + 1);
	if (len > 1 && (num[len - 1] == 'B' || num[len - 1] == 'b'))
		num[--len] = '\0';
	for (size_t i = 0; i < ARRAY_SIZE(units); i++) {
		if (len > 1 && (num[len - 1] == units[i].c || num[len - 1] == units[i].c + 32)) {
			shift = units[i].shift;
			num[--len] = '\0';
			break;
		}
	}
	r = util_parse_u64(num, UINT64_MAX >> shift, &v);
	if (r < 0)
		return r;
	*ret = v << shift;
	return 0;
}

int util_mkdir_p(const char *path, mode_t mode)
{
	char buf[PATH_MAX];
	size_t len = strlen(path);
	struct stat st;

	if (len == 0 || len >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, path, len + 1);
	for (char *p = buf + 1; ; p++) {
		if (*p == '/' || *p == '\0') {
			char saved = *p;

			*p = '\0';
			if (mkdir(buf, mode) < 0) {
				if (errno != EEXIST || lstat(buf, &st) < 0)
					return -errno;
				/* An existing component: a directory, or a link only root can have made. */
				if (S_ISLNK(st.st_mode) && st.st_uid != 0)
					return -ELOOP;
			}
			*p = saved;
			if (!saved)
				break;
		}
	}
	return 0;
}

/* One component: a directory (or root's link) no other user can change. */
static int util_trusted_component(const char *path, const struct stat *st, char *why, size_t size)
{
	uid_t me = geteuid();

	if (st->st_uid != 0 && st->st_uid != me) {
		snprintf(why, size, "%s is owned by uid %u, not root", path, (unsigned)st->st_uid);
		return -EPERM;
	}
	if (S_ISLNK(st->st_mode))
		return 0;
	if (!S_ISDIR(st->st_mode)) {
		snprintf(why, size, "%s is not a directory", path);
		return -ENOTDIR;
	}
	if ((st->st_mode & (S_IWGRP | S_IWOTH)) && !(st->st_mode & S_ISVTX)) {
		snprintf(why, size, "%s can be written by %s (mode %04o)", path,
			 st->st_mode & S_IWOTH ? "every user" : "its group", (unsigned)(st->st_mode & 07777));
		return -EPERM;
	}
	return 0;
}

/* Checks each component of buf, an absolute path (modified while walking, restored). */
static int util_trusted_walk(char *buf, char *why, size_t size)
{
	struct stat st;
	int r;

	for (char *p = buf + 1; ; p++) {
		if (*p == '/' || *p == '\0') {
			char saved = *p;

			*p = '\0';
			if (lstat(buf, &st) < 0) {
				r = -errno;
				snprintf(why, size, "cannot examine %s: %s", buf, strerror(-r));
				return r;
			}
			if ((r = util_trusted_component(buf, &st, why, size)) < 0)
				return r;
			*p = saved;
			if (!saved)
				return 0;
		}
	}
}

int util_trusted_dir(const char *path, char *why, size_t size)
{
	char real[PATH_MAX], buf[PATH_MAX];
	int r;

	why[0] = '\0';
	if (path[0] != '/' || strlen(path) >= sizeof(buf)) {
		snprintf(why, size, "%s is not an absolute path", path);
		return -EINVAL;
	}
	/* Links on the way must be root's; then every component of the real path. */
	strcpy(buf, path);
	if ((r = util_trusted_walk(buf, why, size)) < 0)
		return r;
	if (!realpath(path, real)) {
		r = -errno;
		snprintf(why, size, "cannot resolve %s: %s", path, strerror(-r));
		return r;
	}
	return util_trusted_walk(real, why, size);
}

bool util_safe_name(const char *s, size_t len)
{
	if (!s || len == 0)
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'))
			return false;
	}
	return true;
}

uint64_t util_now_ns(int clockid)
{
	struct timespec ts;

	clock_gettime(clockid, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int util_unix_connect(const char *path, int extra_flags, int *ret_fd)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	_cleanup_close_ int fd = -1;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | extra_flags, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 &&
	    !((extra_flags & SOCK_NONBLOCK) && errno == EINPROGRESS))
		return -errno;
	*ret_fd = TAKE_FD(fd);
	return 0;
}

void util_buf_put(struct util_buf *b, const void *d, size_t n)
{
	if (b->oom)
		return;
	if (b->len + n > b->cap) {
		size_t cap = MAX(b->cap * 2, b->len + n + 4096);
		uint8_t *np = realloc(b->p, cap);

		if (!np) {
			b->oom = true;
			return;
		}
		b->p = np, b->cap = cap;
	}
	memcpy(b->p + b->len, d, n);
	b->len += n;
}
