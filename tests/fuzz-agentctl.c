// SPDX-License-Identifier: GPL-2.0-only
/* Fuzz target: the agent's bytes on agent-ctl-path as the daemon takes them. The input goes
 * through a socketpair into the real agentctl (its libevent read loop, the frame reader,
 * validation, its error replies), and every well-formed frame is handled the way
 * daemon.c's phases handle it: hello, ERROR text, probe replies, START's PROGRESS, OK /
 * STOPPED CPU stats, and META_FILE storage under a scratch session's guest/ directory (name
 * checks, directory creation, size caps). */
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agentctl.h"
#include "collector.h"
#include "log.h"
#include "ports.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct agentctl *agent;
static int guest_dirfd = -1;

/* What the daemon's frame handler does with a frame's guest bytes, whatever the phase. */
static void fuzz_msg(void *userdata, const struct vt_msg *m)
{
	struct vt_cpu_stats stats[COLLECTOR_MAX_CPUS];
	uint64_t id, host, guest, mono, lo, hi;
	struct agent_hello h;
	char text[512], name[80];
	unsigned n;

	(void)userdata;
	switch (m->hdr.type) {
	case VT_MSG_HELLO:
		if (agentctl_parse_hello(m, &h) == 0 && (!h.ncpus || h.ncpus > COLLECTOR_MAX_CPUS))
			abort();
		break;
	case VT_MSG_ERROR:
		agentctl_error_text(m, text, sizeof(text));
		for (const char *p = text; *p; p++)
			if (*p < 0x20 || *p > 0x7e)
				abort(); /* error text reaches the terminal: printable only */
		break;
	case VT_MSG_PROBE_REPLY:
		(void)agentctl_parse_probe_reply(m, &id, &host, &guest, &mono);
		if (agentctl_parse_probe_phc(m, &lo, &hi) == 0 &&
		    (lo > hi || hi > (uint64_t)INT64_MAX || hi - lo > AGENTCTL_PHC_SPAN_MAX))
			abort();
		break;
	case VT_MSG_PROGRESS: {
		struct agent_progress p;

		if (agentctl_parse_progress(m, &p) == 0 &&
		    (!p.step || p.step >= VT_STEP_MAX || p.done > p.total || p.total > AGENTCTL_PROGRESS_MAX ||
		     !strcmp(vt_start_step_name(p.step), "an unknown step")))
			abort();
		break;
	}
	case VT_MSG_OK:
	case VT_MSG_STOPPED:
		n = (unsigned)(m->hdr.seq % COLLECTOR_MAX_CPUS) + 1;
		if (agentctl_parse_stopped(m, 1, stats, n, &n) == 0 && n > COLLECTOR_MAX_CPUS)
			abort();
		break;
	case VT_MSG_META_FILE:
		(void)agentctl_store_meta(agent, m, guest_dirfd, name, sizeof(name));
		break;
	case VT_MSG_BINARY: {
		/* the chunk the frame claims to be, so that the fuzzer passes the request match */
		struct vt_attr bid;
		const uint8_t *data;
		size_t len;
		uint64_t off = 0, size;

		if (vt_msg_find(m, VT_A_BUILD_ID, &bid) < 0)
			break;
		(void)vt_msg_u64(m, VT_A_FILE_OFFSET, &off);
		if (agentctl_parse_binary(m, bid.data, bid.len, off, &data, &len, &size) == 0 &&
		    (len > VT_BINARY_CHUNK || size > VT_BINARY_MAX || off > size || len > size - off ||
		     data < m->payload || data + len > m->payload + m->len))
			abort();
		break;
	}
	default:
		break;
	}
}

static void fuzz_gone(void *userdata, int err) {}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	remove(path);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char dir[] = "/tmp/vt-fuzz-agentctl.XXXXXX", path[64];
	struct port port = { .rfd = -1, .wfd = -1 };
	struct event_base *base = NULL;
	char sink[65536];
	size_t off = 0;
	int sp[2], rounds = 0;

	log_level = -1; /* the daemon's warnings about bad frames are expected */
	if (!mkdtemp(dir))
		return 0;
	snprintf(path, sizeof(path), "%s/guest", dir);
	if (mkdir(path, 0700) < 0 || (guest_dirfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		goto out;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sp) < 0)
		goto out;
	port.rfd = port.wfd = sp[0];
	base = event_base_new();
	if (base && agentctl_new(&(struct agentctl_ops){ .msg = fuzz_msg, .gone = fuzz_gone }, &port, base, &agent) == 0) {
		/* Pieces of varying size, so frames split across reads occur. */
		while (off < size && rounds++ < 100000) {
			size_t want = size - off;
			ssize_t w;

			if (want > 3000 + off % 5000)
				want = 3000 + off % 5000;
			w = write(sp[1], data + off, want);
			if (w > 0)
				off += (size_t)w;
			event_base_loop(base, EVLOOP_NONBLOCK);
			while (read(sp[1], sink, sizeof(sink)) > 0)
				; /* the agentctl's error replies */
			if (w <= 0 && errno != EAGAIN)
				break;
		}
		shutdown(sp[1], SHUT_WR);
		event_base_loop(base, EVLOOP_NONBLOCK); /* EOF: daemon_agent_gone */
		agentctl_free(agent);
		agent = NULL;
	}
	if (base)
		event_base_free(base);
	close(sp[0]);
	close(sp[1]);
out:
	if (guest_dirfd >= 0)
		close(guest_dirfd);
	guest_dirfd = -1;
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	return 0;
}
