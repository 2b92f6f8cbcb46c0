/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

#include <stddef.h>
#include <stdio.h>

struct event_base;

/* ctlsock.c: the daemon's control socket RUN/VM.sock (line protocol). It calls its owner
 * through ops only (it never sees struct daemon). */
struct ctlsock;
struct bufferevent;
struct ctlsock_ops {
	void *userdata;
	/* "status": fill the reply. */
	void (*status)(void *userdata, char *buf, size_t size);
	/* "stop", "snapshot": the owner answers later with ctlsock_finish_stop(client, text). */
	void (*stop)(void *userdata, struct bufferevent *client);
	void (*snapshot)(void *userdata, struct bufferevent *client);
	/* A stop or snapshot client was answered (or went away) and freed. */
	void (*replied)(void *userdata);
};
int ctlsock_path(const char *run_dir, const char *name, char *buf, size_t size);
int ctlsock_listen(const struct ctlsock_ops *ops, struct event_base *base, const char *path, struct ctlsock **ret);
void ctlsock_free(struct ctlsock *c);
/* Client side: sends one request line, copies the reply (to "end\n") to out. */
int ctlsock_request(const char *path, const char *request, FILE *out, char *last, size_t lastsize);
/* Resolves --name (or the only session in run_dir) to a socket path. */
/* fn(vm, ud) for each VM with a control socket in run_dir (VM.sock; names of up to 79 bytes)
 * until it returns nonzero, which is returned; 0 after all, -ENOENT without run_dir. */
int ctlsock_each(const char *run_dir, int (*fn)(const char *vm, void *ud), void *ud);
int ctlsock_find(const char *run_dir, const char *name, char *buf, size_t size);
/* Writes the stop reply to the waiting client, which is then freed. */
void ctlsock_finish_stop(struct bufferevent *client, const char *text);
