// SPDX-License-Identifier: GPL-2.0-only
/* Finding virtio-serial ports by name: /dev/virtio-ports/NAME (udev), else
 * /sys/class/virtio-ports/vportNpM/name -> /dev/vportNpM, or a test directory. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "agent.h"
#include "log.h"
#include "util.h"

#define PORTS_UDEV_DIR "/dev/virtio-ports"
#define PORTS_SYSFS_DIR "/sys/class/virtio-ports"

int ports_find(struct ports *p, const char *dir_opt)
{
	*p = (struct ports){ 0 };
	if (dir_opt || access(PORTS_UDEV_DIR "/agent-ctl-path", F_OK) == 0) {
		p->dir = strdup(dir_opt ? dir_opt : PORTS_UDEV_DIR);
		return p->dir ? 0 : -ENOMEM;
	}
	if (access(PORTS_SYSFS_DIR, F_OK) == 0)
		return 0;
	log_error("no virtio-serial ports: neither %s nor %s exists; add the virtio-serial "
		  "channels to the VM (see 'trace-collector setup --help') and load virtio_console",
		  PORTS_UDEV_DIR, PORTS_SYSFS_DIR);
	return -ENOENT;
}

void ports_free(struct ports *p)
{
	free(p->dir);
	p->dir = NULL;
}

const char *ports_where(const struct ports *p)
{
	return p->dir ? p->dir : PORTS_SYSFS_DIR "/*/name";
}

/* Without udev: the vportNpM whose sysfs name file says name. */
static int ports_sysfs_lookup(const char *name, char *path, size_t size)
{
	DIR *d = opendir(PORTS_SYSFS_DIR);
	struct dirent *de;
	int r = -ENOENT;

	if (!d)
		return -errno;
	while (r == -ENOENT && (de = readdir(d))) {
		_cleanup_free_ char *s = NULL;
		char f[512];

		if (de->d_name[0] == '.')
			continue;
		snprintf(f, sizeof(f), PORTS_SYSFS_DIR "/%s/name", de->d_name);
		if (util_read_file(f, 4096, &s, NULL) < 0)
			continue;
		s[strcspn(s, "\n")] = '\0';
		if (!strcmp(s, name)) {
			snprintf(path, size, "/dev/%s", de->d_name);
			r = 0;
		}
	}
	closedir(d);
	return r;
}

static bool ports_is_fifo(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISFIFO(st.st_mode);
}

/* A test ports dir may hold the FIFO pair 'trace-collector setup' makes for QEMU's pipe
 * chardev instead of NAME: we are the guest side, so we read NAME.in (host -> guest) and
 * write NAME.out (guest -> host). O_RDWR|O_NONBLOCK: opening never blocks, like QEMU's end. */
static int ports_open_fifos(const char *path, struct port_fds *ret)
{
	char in[4096 + 8], out[4096 + 8];
	struct port_fds f = { -1, -1 };

	snprintf(in, sizeof(in), "%s.in", path);
	snprintf(out, sizeof(out), "%s.out", path);
	if (!ports_is_fifo(in) || !ports_is_fifo(out))
		return -ENOENT;
	f.wr = open(out, O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (f.wr < 0)
		return -errno;
	f.rd = open(in, O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (f.rd < 0) {
		int r = -errno;

		close(f.wr);
		return r;
	}
	*ret = f;
	return 0;
}

/* One fd both ways (device or socket): dup'd so that rd and wr are closed independently. */
static int ports_split(int fd, struct port_fds *ret)
{
	int wr = fcntl(fd, F_DUPFD_CLOEXEC, 0);

	if (wr < 0) {
		int r = -errno;

		close(fd);
		return r;
	}
	*ret = (struct port_fds){ .rd = fd, .wr = wr };
	return 0;
}

int ports_open(const struct ports *p, const char *name, struct port_fds *ret)
{
	char path[4096];
	struct stat st;
	int fd = -1, r;

	if (p->dir)
		snprintf(path, sizeof(path), "%s/%s", p->dir, name);
	else if ((r = ports_sysfs_lookup(name, path, sizeof(path))) < 0)
		return r;
	if (stat(path, &st) < 0) {
		r = -errno;
		return p->dir && r == -ENOENT ? ports_open_fifos(path, ret) : r;
	}
	if (S_ISSOCK(st.st_mode)) {
		r = util_unix_connect(path, 0, &fd);
		return r < 0 ? r : ports_split(fd, ret);
	}
	fd = open(path, O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	return ports_split(fd, ret);
}

void ports_close(struct port_fds *f)
{
	if (f->rd >= 0)
		close(f->rd);
	if (f->wr >= 0)
		close(f->wr);
	f->rd = f->wr = -1;
}
