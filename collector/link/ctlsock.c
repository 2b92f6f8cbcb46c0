// SPDX-License-Identifier: GPL-2.0-only
/* The daemon's control socket RUN/VM.sock (mode 0600): one request line ("status" or
 * "stop"), a reply of text lines ended by "end". Local and owner-only, still bounded. */
#include <dirent.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "ctlsock.h"
#include "log.h"
#include "util.h"

#define REQ_MAX 256
#define REPLY_MAX (1u << 20)
#define STATUS_MAX 65536
#define CLIENTS_MAX 16

struct ctlsock {
	struct ctlsock_ops ops;
	struct event_base *base;
	struct event *ev;
	int fd;
	unsigned clients;
	char path[PATH_MAX];
};

struct ctl_client {
	struct ctlsock *c;
	bool stopping; /* handed to the daemon, which answers and frees it */
};

int ctlsock_path(const char *run_dir, const char *name, char *buf, size_t size)
{
	struct sockaddr_un sa;

	if ((size_t)snprintf(buf, size, "%s/%s.sock", run_dir, name) >= MIN(size, sizeof(sa.sun_path)))
		return -ENAMETOOLONG;
	return 0;
}

static void client_free(struct bufferevent *bev, struct ctl_client *cl)
{
	cl->c->clients--;
	bufferevent_free(bev);
	free(cl);
}

static void client_event(struct bufferevent *bev, short what, void *arg)
{
	struct ctl_client *cl = arg;

	if (!cl->stopping)
		client_free(bev, cl);
}

static void client_read(struct bufferevent *bev, void *arg)
{
	struct ctl_client *cl = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	_cleanup_free_ char *line = NULL;
	char reply[STATUS_MAX];

	if (cl->stopping)
		return;
	line = evbuffer_readln(in, NULL, EVBUFFER_EOL_LF);
	if (!line) {
		if (evbuffer_get_length(in) > REQ_MAX)
			client_free(bev, cl);
		return;
	}
	if (!strcmp(line, "status")) {
		cl->c->ops.status(cl->c->ops.userdata, reply, sizeof(reply));
		bufferevent_write(bev, reply, strlen(reply));
		bufferevent_write(bev, "end\n", 4);
	} else if (!strcmp(line, "snapshot")) {
		cl->stopping = true; /* the daemon answers it (after a clock probe burst) */
		cl->c->ops.snapshot(cl->c->ops.userdata, bev);
	} else if (!strcmp(line, "stop")) {
		cl->stopping = true;
		cl->c->ops.stop(cl->c->ops.userdata, bev);
	} else {
		bufferevent_write(bev, "error: unknown request\nend\n", 27);
	}
}

static void ctlsock_accept(evutil_socket_t lfd, short what, void *arg)
{
	struct ctlsock *c = arg;
	struct bufferevent *bev;
	struct ctl_client *cl;
	int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

	if (fd < 0)
		return;
	if (c->clients >= CLIENTS_MAX || !(cl = calloc(1, sizeof(*cl)))) {
		close(fd);
		return;
	}
	bev = bufferevent_socket_new(c->base, fd, BEV_OPT_CLOSE_ON_FREE);
	if (!bev) {
		close(fd);
		free(cl);
		return;
	}
	cl->c = c;
	c->clients++;
	bufferevent_setcb(bev, client_read, NULL, client_event, cl);
	bufferevent_setwatermark(bev, EV_READ, 0, REQ_MAX + 1);
	bufferevent_enable(bev, EV_READ);
}

/* Frees a stop (or snapshot) client once its reply is written (the daemon calls this via the
 * callback). */
static void client_done_write(struct bufferevent *bev, void *arg)
{
	struct ctl_client *cl = arg;
	struct ctlsock_ops ops = cl->c->ops;

	if (evbuffer_get_length(bufferevent_get_output(bev)) == 0) {
		client_free(bev, cl);
		ops.replied(ops.userdata);
	}
}

static void client_done_event(struct bufferevent *bev, short what, void *arg)
{
	struct ctl_client *cl = arg;
	struct ctlsock_ops ops = cl->c->ops;

	client_free(bev, cl);
	ops.replied(ops.userdata);
}

void ctlsock_finish_stop(struct bufferevent *bev, const char *text)
{
	void *arg;

	bufferevent_getcb(bev, NULL, NULL, NULL, &arg);
	bufferevent_write(bev, text, strlen(text));
	bufferevent_write(bev, "end\n", 4);
	bufferevent_setcb(bev, NULL, client_done_write, client_done_event, arg);
	bufferevent_enable(bev, EV_WRITE);
}

int ctlsock_listen(const struct ctlsock_ops *ops, struct event_base *base, const char *path, struct ctlsock **ret)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	_cleanup_close_ int fd = -1;
	struct ctlsock *c;
	mode_t old;
	int r;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	unlink(path); /* stale: the caller holds the VM's lock */
	old = umask(0177);
	r = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
	umask(old);
	if (r < 0 || chmod(path, 0600) < 0 || listen(fd, 8) < 0)
		return -errno;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	*c = (struct ctlsock){ .ops = *ops, .base = base, .fd = TAKE_FD(fd) };
	snprintf(c->path, sizeof(c->path), "%s", path);
	c->ev = event_new(base, c->fd, EV_READ | EV_PERSIST, ctlsock_accept, c);
	if (!c->ev || event_add(c->ev, NULL) < 0) {
		ctlsock_free(c);
		return -ENOMEM;
	}
	*ret = c;
	return 0;
}

void ctlsock_free(struct ctlsock *c)
{
	if (!c)
		return;
	if (c->ev)
		event_free(c->ev);
	if (c->fd >= 0) {
		close(c->fd);
		unlink(c->path);
	}
	free(c);
}

/* Client: sends request, copies reply lines to out until "end"; last reply line in last. */
int ctlsock_request(const char *path, const char *request, FILE *out, char *last, size_t lastsize)
{
	_cleanup_close_ int fd = -1;
	char buf[4096];
	size_t total = 0, ll = 0;
	bool ended = false;
	FILE *f;
	int r = util_unix_connect(path, 0, &fd);

	if (r < 0)
		return r;
	if (dprintf(fd, "%s\n", request) < 0)
		return -EIO;
	f = fdopen(TAKE_FD(fd), "r");
	if (!f)
		return -errno;
	if (last && lastsize)
		last[0] = '\0';
	while (!ended && total < REPLY_MAX && fgets(buf, sizeof(buf), f)) {
		total += strlen(buf);
		if (!strcmp(buf, "end\n")) {
			ended = true;
			break;
		}
		fputs(buf, out);
		if (last && lastsize) {
			snprintf(last, lastsize, "%s", buf);
			ll = strlen(last);
		}
	}
	fclose(f);
	if (ll && last[ll - 1] == '\n')
		last[ll - 1] = '\0';
	return ended ? 0 : -EPIPE;
}

/* --name given: its socket; else the only *.sock in run_dir. */
int ctlsock_each(const char *run_dir, int (*fn)(const char *vm, void *ud), void *ud)
{
	struct dirent *de;
	int r = 0;
	DIR *dir = opendir(run_dir);

	if (!dir)
		return -ENOENT;
	while (r == 0 && (de = readdir(dir))) {
		size_t l = strlen(de->d_name);
		char vm[80];

		if (l <= 5 || l - 5 >= sizeof(vm) || strcmp(de->d_name + l - 5, ".sock"))
			continue;
		snprintf(vm, sizeof(vm), "%.*s", (int)(l - 5), de->d_name);
		r = fn(vm, ud);
	}
	closedir(dir);
	return r;
}

struct ctlsock_found {
	const char *run_dir;
	char *buf;
	size_t size;
	unsigned n;
};

static int ctlsock_found_one(const char *vm, void *ud)
{
	struct ctlsock_found *f = ud;

	f->n++;
	snprintf(f->buf, f->size, "%s/%s.sock", f->run_dir, vm);
	return 0;
}

int ctlsock_find(const char *run_dir, const char *name, char *buf, size_t size)
{
	struct ctlsock_found f = { .run_dir = run_dir, .buf = buf, .size = size };
	int r;

	if (name)
		return ctlsock_path(run_dir, name, buf, size);
	if ((r = ctlsock_each(run_dir, ctlsock_found_one, &f)) < 0)
		return r;
	return f.n == 1 ? 0 : f.n == 0 ? -ENOENT : -EUCLEAN;
}
