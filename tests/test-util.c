// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "util.h"

TEST(parse_size_units)
{
	uint64_t v = 0;

	CHECK_INT(util_parse_size("4096", &v), ==, 0);
	CHECK_INT(v, ==, 4096);
	CHECK_INT(util_parse_size("64K", &v), ==, 0);
	CHECK_INT(v, ==, 65536);
	CHECK_INT(util_parse_size("16MB", &v), ==, 0);
	CHECK_INT(v, ==, 16 << 20);
	CHECK_INT(util_parse_size("2g", &v), ==, 0);
	CHECK_INT(v, ==, 2ull << 30);
}

TEST(parse_size_rejects)
{
	uint64_t v = 7;

	CHECK_INT(util_parse_size("", &v), ==, -EINVAL);
	CHECK_INT(util_parse_size("K", &v), ==, -EINVAL);
	CHECK_INT(util_parse_size("-1", &v), ==, -EINVAL);
	CHECK_INT(util_parse_size("12Q", &v), ==, -EINVAL);
	CHECK_INT(util_parse_size("99999999999999999999", &v), ==, -ERANGE);
	CHECK_INT(util_parse_size("17179869184G", &v), ==, -ERANGE);
	CHECK_INT(v, ==, 7); /* untouched on failure */
}

TEST(parse_u64_bounds)
{
	uint64_t v;

	CHECK_INT(util_parse_u64("31", 31, &v), ==, 0);
	CHECK_INT(v, ==, 31);
	CHECK_INT(util_parse_u64("32", 31, &v), ==, -ERANGE);
	CHECK_INT(util_parse_u64(" 3", 31, &v), ==, -EINVAL);
	CHECK_INT(util_parse_u64("3x", 31, &v), ==, -EINVAL);
}

TEST(safe_name)
{
	CHECK(util_safe_name("sched_switch", 12));
	CHECK(util_safe_name("cpu0", 4));
	CHECK(!util_safe_name("..", 2));
	CHECK(!util_safe_name("a/b", 3));
	CHECK(!util_safe_name("", 0));
	CHECK(!util_safe_name("a b", 3));
}

TEST(read_file_bounded)
{
	char path[] = "/tmp/vt-test-util-XXXXXX";
	int fd = mkstemp(path);
	char *buf = NULL;
	size_t len = 0;

	CHECK(fd >= 0);
	CHECK_INT(util_write_full(fd, "hello world", 11), ==, 0);
	close(fd);
	CHECK_INT(util_read_file(path, 11, &buf, &len), ==, 0);
	CHECK_INT(len, ==, 11);
	CHECK_STR(buf, "hello world");
	free(buf);
	buf = NULL;
	CHECK_INT(util_read_file(path, 10, &buf, &len), ==, -EFBIG);
	CHECK(buf == NULL);
	unlink(path);
	CHECK_INT(util_read_file(path, 10, &buf, &len), ==, -ENOENT);
}

/* Links planted at NAME and NAME.tmp: both replaced, their targets untouched. */
TEST(replace_file_through_no_link)
{
	char base[] = "/tmp/vt-test-replace-XXXXXX", victim[64], path[96], *buf = NULL;
	size_t len = 0;
	struct stat st;

	CHECK(mkdtemp(base) != NULL);
	snprintf(victim, sizeof(victim), "%s/victim", base);
	CHECK_INT(util_write_file(victim, "victim", 6, 0600), ==, 0);
	snprintf(path, sizeof(path), "%s/f.ini", base);
	CHECK_INT(symlink(victim, path), ==, 0);
	snprintf(path, sizeof(path), "%s/f.ini.tmp", base);
	CHECK_INT(symlink(victim, path), ==, 0);
	CHECK_INT(util_replace_file(base, "f.ini", "new", 3), ==, 0);
	CHECK_INT(util_read_file(victim, 64, &buf, &len), ==, 0);
	CHECK_STR(buf, "victim");
	free(buf);
	buf = NULL;
	snprintf(path, sizeof(path), "%s/f.ini", base);
	CHECK_INT(lstat(path, &st), ==, 0);
	CHECK(S_ISREG(st.st_mode));
	CHECK_INT(util_read_file(path, 64, &buf, &len), ==, 0);
	CHECK_STR(buf, "new");
	free(buf);
	buf = NULL;
	snprintf(path, sizeof(path), "%s/f.ini.tmp", base);
	CHECK_INT(lstat(path, &st), ==, -1);
	/* util_write_file refuses a link (O_NOFOLLOW) */
	CHECK_INT(symlink(victim, path), ==, 0);
	CHECK_INT(util_write_file(path, "x", 1, 0600), ==, -ELOOP);
	CHECK_INT(util_read_file(victim, 64, &buf, &len), ==, 0);
	CHECK_STR(buf, "victim");
	free(buf);
	snprintf(path, sizeof(path), "rm -rf '%s'", base);
	CHECK_INT(system(path), ==, 0);
}

TEST(mkdir_p_nested)
{
	char base[] = "/tmp/vt-test-mkdir-XXXXXX";
	char path[256];
	struct stat st;

	CHECK(mkdtemp(base) != NULL);
	snprintf(path, sizeof(path), "%s/a/b/c", base);
	CHECK_INT(util_mkdir_p(path, 0700), ==, 0);
	CHECK_INT(stat(path, &st), ==, 0);
	CHECK(S_ISDIR(st.st_mode));
	CHECK_INT(util_mkdir_p(path, 0700), ==, 0); /* idempotent */
	snprintf(path, sizeof(path), "rm -rf '%s'", base);
	CHECK_INT(system(path), ==, 0);
}

/* A real non-blocking pipe: a partial write, EAGAIN when full, EPIPE with no reader. */
TEST(xfer_step_pipe)
{
	static char big[1 << 20];
	int fds[2];
	ssize_t n;

	CHECK_INT(pipe2(fds, O_NONBLOCK | O_CLOEXEC), ==, 0);
	signal(SIGPIPE, SIG_IGN);
	n = util_xfer_step(write(fds[1], big, sizeof(big)));
	CHECK(n > 0 && n < (ssize_t)sizeof(big));
	CHECK_INT(util_xfer_step(write(fds[1], big, sizeof(big))), ==, -EAGAIN);
	close(fds[0]);
	CHECK_INT(util_xfer_step(write(fds[1], big, 1)), ==, -EPIPE);
	CHECK_INT(util_xfer_step(0), ==, -EPIPE);
	errno = EINTR;
	CHECK_INT(util_xfer_step(-1), ==, 0);
	close(fds[1]);
}

/* Runs as root in scripts/test; uid 65534 stands for another user. */
TEST(trusted_dir_owner_mode_links)
{
	char base[] = "/tmp/vt-test-trust-XXXXXX", sub[64], link[64], why[512];

	CHECK(mkdtemp(base) != NULL);
	snprintf(sub, sizeof(sub), "%s/vm", base);
	CHECK_INT(mkdir(sub, 0755), ==, 0);
	CHECK_INT(util_trusted_dir(sub, why, sizeof(why)), ==, 0);
	CHECK_INT(util_trusted_dir("vm", why, sizeof(why)), ==, -EINVAL);
	CHECK_INT(chmod(sub, 0777), ==, 0);
	CHECK_INT(util_trusted_dir(sub, why, sizeof(why)), ==, -EPERM);
	CHECK(strstr(why, "can be written by every user") != NULL);
	CHECK_INT(chmod(sub, 0775), ==, 0);
	CHECK_INT(util_trusted_dir(sub, why, sizeof(why)), ==, -EPERM);
	CHECK(strstr(why, "its group") != NULL);
	CHECK_INT(chmod(sub, 01777), ==, 0); /* sticky, like /tmp */
	CHECK_INT(util_trusted_dir(sub, why, sizeof(why)), ==, 0);
	CHECK_INT(chmod(sub, 0755), ==, 0);
	if (geteuid() == 0) {
		CHECK_INT(chown(sub, 65534, 65534), ==, 0);
		CHECK_INT(util_trusted_dir(sub, why, sizeof(why)), ==, -EPERM);
		CHECK(strstr(why, "owned by uid 65534") != NULL);
		CHECK_INT(chown(sub, 0, 0), ==, 0);
		/* Another user's link on the way is refused even though its target is fine. */
		snprintf(link, sizeof(link), "%s/link", base);
		CHECK_INT(symlink(sub, link), ==, 0);
		CHECK_INT(util_trusted_dir(link, why, sizeof(why)), ==, 0);
		CHECK_INT(lchown(link, 65534, 65534), ==, 0);
		CHECK_INT(util_trusted_dir(link, why, sizeof(why)), ==, -EPERM);
		unlink(link);
	}
	rmdir(sub);
	rmdir(base);
}

TEST(mkdir_p_refuses_other_users_link)
{
	char base[] = "/tmp/vt-test-mkdirp-XXXXXX", link[64], path[96];

	CHECK(mkdtemp(base) != NULL);
	snprintf(link, sizeof(link), "%s/l", base);
	CHECK_INT(symlink("/tmp", link), ==, 0);
	snprintf(path, sizeof(path), "%s/x", link);
	if (geteuid() == 0) {
		CHECK_INT(lchown(link, 65534, 65534), ==, 0);
		CHECK_INT(util_mkdir_p(path, 0700), ==, -ELOOP);
	}
	unlink(link);
	rmdir(base);
}

/* An input is read only as a regular file beneath its directory: a FIFO, a link (on the way or
 * at the end), an absolute path or ".." is refused at once, named; nothing blocks. */
TEST(open_input_regular_beneath)
{
	char base[] = "/tmp/vt-test-input-XXXXXX", p[96], why[256];
	_cleanup_free_ char *text = NULL;
	int dfd, fd;

	CHECK(mkdtemp(base) != NULL);
	snprintf(p, sizeof(p), "%s/sub", base);
	CHECK_INT(mkdir(p, 0700), ==, 0);
	snprintf(p, sizeof(p), "%s/sub/file", base);
	CHECK_INT(util_write_file(p, "abc", 3, 0600), ==, 0);
	snprintf(p, sizeof(p), "%s/fifo", base);
	CHECK_INT(mkfifo(p, 0600), ==, 0);
	snprintf(p, sizeof(p), "%s/link", base);
	CHECK_INT(symlink("sub/file", p), ==, 0);
	snprintf(p, sizeof(p), "%s/dlink", base);
	CHECK_INT(symlink("sub", p), ==, 0);
	dfd = open(base, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	CHECK(dfd >= 0);
	CHECK_INT(util_read_input_at(dfd, "sub/file", 16, &text, NULL, why, sizeof(why)), ==, 0);
	CHECK_STR(text, "abc");
	CHECK_INT(util_open_input(dfd, "fifo", O_RDONLY, why, sizeof(why)), ==, -EINVAL);
	CHECK_STR(why, "is a FIFO, not a regular file");
	CHECK_INT(util_open_input(dfd, "link", O_RDONLY, why, sizeof(why)), ==, -ELOOP);
	CHECK(strstr(why, "a symbolic link") != NULL);
	if (geteuid() == 0) { /* our own link in our own dir is followed (a snapshot's guest), another's not */
		CHECK((fd = util_open_input(dfd, "dlink/file", O_RDONLY, why, sizeof(why))) >= 0);
		close(fd);
		snprintf(p, sizeof(p), "%s/dlink", base);
		CHECK_INT(lchown(p, 65534, 65534), ==, 0);
		CHECK_INT(util_open_input(dfd, "dlink/file", O_RDONLY, why, sizeof(why)), ==, -ENOTDIR);
		CHECK(strstr(why, "dlink is not a directory") != NULL);
	}
	CHECK_INT(util_open_input(dfd, "sub/../sub/file", O_RDONLY, why, sizeof(why)), ==, -EPERM);
	CHECK_INT(util_open_input(dfd, "/etc/passwd", O_RDONLY, why, sizeof(why)), ==, -EPERM);
	CHECK_INT(util_open_input(dfd, "none", O_RDONLY, why, sizeof(why)), ==, -ENOENT);
	CHECK_INT(util_open_input(dfd, "sub", O_RDONLY, why, sizeof(why)), ==, -EISDIR);
	CHECK((fd = util_open_input(dfd, "sub", O_RDONLY | O_DIRECTORY, why, sizeof(why))) >= 0);
	close(fd);
	snprintf(p, sizeof(p), "%s/fifo", base);
	CHECK_INT(util_open_input(AT_FDCWD, p, O_RDONLY, why, sizeof(why)), ==, -EINVAL); /* a user's path too */
	snprintf(p, sizeof(p), "%s/link", base);
	CHECK((fd = util_open_input(AT_FDCWD, p, O_RDONLY, why, sizeof(why))) >= 0); /* the user's link is followed */
	close(fd);
	close(dfd);
	snprintf(p, sizeof(p), "rm -rf %s", base);
	CHECK_INT(system(p), ==, 0);
}
