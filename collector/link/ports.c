// SPDX-License-Identifier: GPL-2.0-only
/* The per-VM ports: FIFO pairs as QEMU's pipe chardev holds them (host reads NAME.out,
 * writes NAME.in) or unix sockets served by QEMU's socket chardev (sock/NAME.sock, in the
 * directory setup gives QEMU's user: the one place of the VM dir that user may write). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "ports.h"
#include "util.h"

static bool is_type(const char *path, mode_t type)
{
	struct stat st;

	return stat(path, &st) == 0 && (st.st_mode & S_IFMT) == type;
}

/* Which transport DIR was set up for: FIFO pair or socket of agent-ctl-path. */
int ports_detect(const char *dir, enum port_kind *ret)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/agent-ctl-path.out", dir);
	if (is_type(path, S_IFIFO)) {
		*ret = PORT_FIFO;
		return 0;
	}
	snprintf(path, sizeof(path), "%s/" PORT_SOCK_DIR "/agent-ctl-path.sock", dir);
	if (is_type(path, S_IFSOCK)) {
		*ret = PORT_SOCKET;
		return 0;
	}
	return -ENOENT;
}

void port_init(struct port *p, const char *dir, const char *name, enum port_kind kind)
{
	*p = (struct port){ .kind = kind, .rfd = -1, .wfd = -1 };
	snprintf(p->name, sizeof(p->name), "%s", name);
	snprintf(p->base, sizeof(p->base), "%s/%s%s", dir, kind == PORT_SOCKET ? PORT_SOCK_DIR "/" : "", name);
}

const char *port_path(const struct port *p, bool reading, char *buf, size_t size)
{
	const char *sfx = p->kind == PORT_SOCKET ? ".sock" : reading ? ".out" : ".in";

	if ((size_t)snprintf(buf, size, "%s%s", p->base, sfx) >= size)
		buf[0] = '\0';
	return buf;
}

/* O_NOFOLLOW and a check of what was opened: QEMU's user owns the FIFO, never its name. */
static int fifo_open(const char *path)
{
	struct stat st;
	int fd;

	/* O_RDWR: opening never blocks and we never see EOF, like QEMU's own end. */
	fd = open(path, O_RDWR | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ELOOP ? -ENOENT : -errno;
	if (fstat(fd, &st) < 0 || !S_ISFIFO(st.st_mode)) {
		close(fd);
		return -ENOENT;
	}
	return fd;
}

/* A socket QEMU made in sock/: the name opened O_PATH | O_NOFOLLOW (a link is refused, -ELOOP),
 * what it opened checked (a socket with one name, made by the owner of sock/, QEMU's user, or by
 * root) and connected through that descriptor (/proc/self/fd/N), so a name swapped after the
 * check never reaches another socket; its server must run as sock/'s owner or root
 * (SO_PEERCRED). -EACCES when it is not QEMU's. */
static int sock_open(const char *path)
{
	_cleanup_close_ int dfd = -1, pfd = -1, fd = -1;
	const char *slash = strrchr(path, '/');
	char dir[PATH_MAX], via[64];
	struct stat st, dst;
	struct ucred cred;
	socklen_t len = sizeof(cred);
	int r;

	if (!slash || snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path) >= (int)sizeof(dir))
		return -ENAMETOOLONG;
	dfd = open(dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0 || fstat(dfd, &dst) < 0)
		return -ENOENT;
	pfd = openat(dfd, slash + 1, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (pfd < 0 || fstat(pfd, &st) < 0)
		return -ENOENT;
	if (S_ISLNK(st.st_mode))
		return -ELOOP;
	if (!S_ISSOCK(st.st_mode))
		return -ENOENT;
	/* a hard link keeps its owner and adds a name: another service's socket is neither */
	if (st.st_nlink != 1 || (st.st_uid != dst.st_uid && st.st_uid != 0))
		return -EACCES;
	snprintf(via, sizeof(via), "/proc/self/fd/%d", pfd);
	if ((r = util_unix_connect(via, SOCK_NONBLOCK, &fd)) < 0)
		return r;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 || (cred.uid != 0 && cred.uid != dst.st_uid))
		return -EACCES;
	return TAKE_FD(fd);
}

/* Opens the port; writable also opens NAME.in for FIFO pairs. */
int port_open(struct port *p, bool writable)
{
	char path[PATH_MAX];
	int fd;

	port_close(p);
	fd = p->kind == PORT_SOCKET ? sock_open(port_path(p, true, path, sizeof(path)))
				    : fifo_open(port_path(p, true, path, sizeof(path)));
	if (fd < 0)
		return fd;
	p->rfd = fd;
	if (p->kind == PORT_SOCKET) {
		p->wfd = fd;
		return 0;
	}
	if (!writable)
		return 0;
	fd = fifo_open(port_path(p, false, path, sizeof(path)));
	if (fd < 0) {
		port_close(p);
		return fd;
	}
	p->wfd = fd;
	return 0;
}

void port_close(struct port *p)
{
	if (p->wfd >= 0 && p->wfd != p->rfd)
		close(p->wfd);
	if (p->rfd >= 0)
		close(p->rfd);
	p->rfd = p->wfd = -1;
}

/* Reads and drops what is queued (bytes of an earlier session), at most PORT_DRAIN_MAX;
 * returns their count. */
uint64_t port_drain(struct port *p)
{
	char buf[65536];
	uint64_t total = 0;
	ssize_t n;

	if (p->rfd < 0)
		return 0;
	/* Bounded: a guest writing as fast as it is read must not hold the daemon here. */
	while (total < PORT_DRAIN_MAX &&
	       ((n = read(p->rfd, buf, sizeof(buf))) > 0 || (n < 0 && errno == EINTR)))
		if (n > 0)
			total += (uint64_t)n;
	return total;
}

/* The first process holding p's FIFO other than us and `except` (0: none). */
static pid_t fifo_holder(const struct port *p, pid_t except)
{
	char path[PATH_MAX], link[64], fdpath[64 + 258];
	struct stat want, st;
	struct dirent *de, *fe;
	DIR *proc, *fds;
	pid_t found = 0, self = getpid();

	if (stat(port_path(p, true, path, sizeof(path)), &want) < 0 || !(proc = opendir("/proc")))
		return 0;
	while (!found && (de = readdir(proc))) {
		pid_t pid = (pid_t)atoi(de->d_name);

		if (pid <= 0 || pid == self || pid == except)
			continue;
		snprintf(link, sizeof(link), "/proc/%d/fd", pid);
		if (!(fds = opendir(link)))
			continue;
		while (!found && (fe = readdir(fds))) {
			snprintf(fdpath, sizeof(fdpath), "%s/%s", link, fe->d_name);
			if (fe->d_name[0] != '.' && stat(fdpath, &st) == 0 &&
			    st.st_dev == want.st_dev && st.st_ino == want.st_ino)
				found = pid;
		}
		closedir(fds);
	}
	closedir(proc);
	return found;
}

/* The process holding the other end (QEMU): SO_PEERCRED for sockets, /proc scan for FIFOs. */
pid_t port_peer_pid(const struct port *p)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);

	if (p->kind == PORT_FIFO)
		return fifo_holder(p, 0);
	if (p->rfd >= 0 && getsockopt(p->rfd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0)
		return cred.pid;
	return 0;
}

pid_t port_other_holder(const struct port *p, pid_t except)
{
	return p->kind == PORT_FIFO ? fifo_holder(p, except) : 0;
}

/* A socket port: a second connection to its name as it is now, with its server's pid (the
 * process that bound it: a migration's destination rebinds the name). Same checks as
 * port_open's. The caller owns the fd. */
int port_connect_again(const struct port *p, pid_t *ret_pid)
{
	char path[PATH_MAX];
	struct ucred cred;
	socklen_t len = sizeof(cred);
	int fd;

	if (p->kind != PORT_SOCKET)
		return -EOPNOTSUPP;
	if ((fd = sock_open(port_path(p, true, path, sizeof(path)))) < 0)
		return fd;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
		close(fd);
		return -EACCES;
	}
	*ret_pid = cred.pid;
	return fd;
}

/* Why a socket port was refused (a link, or not QEMU's), in buf: true; false for other errors. */
bool port_refused(const struct port *p, int r, const char *vm_dir, const char *name, char *buf, size_t len)
{
	char path[PATH_MAX + 8], target[PATH_MAX] = "", to[PATH_MAX + 16] = "";
	ssize_t n;

	port_path(p, true, path, sizeof(path));
	if (r == -ELOOP) {
		if ((n = readlink(path, target, sizeof(target) - 1)) > 0) /* it may have gone meanwhile */
			snprintf(to, sizeof(to), " (to %.*s)", (int)n, target);
		snprintf(buf, len, "%s is a symbolic link%s: refused, the daemon connects only to a socket QEMU made "
			 "there, never through a link; remove the link and restart QEMU (QEMU's user, the owner of %s/"
			 PORT_SOCK_DIR ", or root put it there)", path, to, vm_dir);
		return true;
	}
	if (r == -EACCES) {
		snprintf(buf, len, "%s is not QEMU's socket: it, or the process serving it, does not belong to the owner "
			 "of %s/" PORT_SOCK_DIR " (QEMU's user) nor to root; re-run 'trace-collector setup --name %s "
			 "--transport socket --owner USER:GROUP' and restart QEMU", path, vm_dir, name);
		return true;
	}
	return false;
}
