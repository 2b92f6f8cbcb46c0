/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <unistd.h>

/* ports.c: the per-VM FIFO pairs (NAME.in / NAME.out) or sockets (sock/NAME.sock). */
#define PORT_SOCK_DIR "sock"
#define PORT_DRAIN_MAX (16u << 20)
enum port_kind { PORT_FIFO, PORT_SOCKET };
struct port {
	char name[64];
	char base[PATH_MAX]; /* DIR/NAME */
	enum port_kind kind;
	int rfd, wfd;        /* equal for sockets; -1 when closed */
};
int ports_detect(const char *dir, enum port_kind *ret);
void port_init(struct port *p, const char *dir, const char *name, enum port_kind kind);
int port_open(struct port *p, bool writable);
void port_close(struct port *p);
uint64_t port_drain(struct port *p);
pid_t port_peer_pid(const struct port *p);
/* FIFOs: a process other than us and `except` that holds p's FIFO open (a second QEMU: a live
 * migration's destination), 0 none; sockets: 0. */
pid_t port_other_holder(const struct port *p, pid_t except);
/* Sockets: a second connection to p's name (-errno), its server's pid in *ret_pid. */
int port_connect_again(const struct port *p, pid_t *ret_pid);
/* p uses fd (owned from now on) instead of its old descriptors, which are closed (inline: the
 * link layer's users that take no other part of ports.c call it). */
static inline void port_adopt(struct port *p, int fd)
{
	if (p->wfd >= 0 && p->wfd != p->rfd)
		close(p->wfd);
	if (p->rfd >= 0)
		close(p->rfd);
	p->rfd = p->wfd = fd;
}
const char *port_path(const struct port *p, bool reading, char *buf, size_t size);
/* Why a socket port was refused (-ELOOP: a link; -EACCES: not QEMU's), said in buf with what to
 * do: true; false for any other r. */
bool port_refused(const struct port *p, int r, const char *vm_dir, const char *name, char *buf, size_t len);
