// SPDX-License-Identifier: GPL-2.0-only
/* A fake trace-agent for the daemon's integration tests: plays the guest end of the
 * ports the test created (FIFO pairs as QEMU holds them, or sockets it serves like QEMU's
 * socket chardev), answers the control protocol with common/proto, writes marker pages
 * and synthetic ftrace-like pages with common/marker, and can misbehave on purpose.
 *   fake-guest --dir D --cpus N [--socket] [--pages N] [--mode MODE] [--stale]
 *              [--perf [--bin GUESTPATH=FILE[@IDFILE|@0xHEX]]...]
 * MODE: normal | hostile (garbage frames, bad metadata names, random data bytes)
 *       | mute-stop (never answers STOP) | mute-start (never answers START) | silent (stops answering after START)
 *       | lossy (claims 3 more pages per CPU than it wrote) | no-probe (ERROR to probes)
 *       | trickle (answers each BINARY_REQ with one byte, a second later)
 *       | slow (answers each BINARY_REQ with 64 KiB, 1.5 s later)
 *       | late-flood (after START's OK, 3 s of nothing, then every page at once: a quiet guest
 *       that floods, as the daemon's disk budget has let its checks rest)
 *       START's progress (PROGRESS frames when START asks for them; each mode runs at most 15 s):
 *       | slow-start (events 1..6 of 6, 0.7 s apart, the settings step, then OK) | repeat-start (events 1/6 again
 *       and again, 0.5 s apart, no OK) | endless-start (events 1, 2, 3... of 1000000, 0.5 s apart,
 *       no OK) | stuck-start (events 1/6, then nothing) | slow-begin (no PROGRESS, as an older
 *       agent: one CPU's begin marker every 1.5 s, then OK)
 * --perf (FIFO ports only): guest perf on perf-path-cpuN: marker pages, and on cpu0 a task "victim"
 * whose user-mode samples ran in each --bin: an MMAP2 with its build-id, then BINARY_REQ is
 * answered with FILE's bytes. @IDFILE or @0xHEX: FILE's build-id bytes replaced by IDFILE's (a
 * host binary's, say) or HEX (20 bytes) — a guest claiming a build-id that is not its file's. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>

#include "elf_notes.h"
#include "log.h"
#include "marker.h"
#include "proto.h"
#include "util.h"

#define MAX_CPUS 64
#define FAKE_TICK_ID 1000
#define FAKE_TICK_FORMAT                                                                      \
	"name: tick\nID: 1000\nformat:\n"                                                    \
	"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"               \
	"\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"               \
	"\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"       \
	"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"                        \
	"\tfield:u64 seq;\toffset:8;\tsize:8;\tsigned:0;\n\n"                              \
	"print fmt: \"seq=%llu\", REC->seq\n"
#define PAGE 4096
#define MAX_BINS 4
#define PERF_ID 7  /* the sample id of the one perf event */
#define VICTIM 42  /* the guest task whose samples ran in the binaries */

struct fg_bin {
	char path[256];
	uint8_t *data;
	size_t len;
	uint8_t id[ELF_NOTES_BUILD_ID_MAX];
	size_t id_len;
};

struct fg {
	const char *dir, *mode;
	unsigned ncpus, pages;
	bool sock, stale, tracing;
	int ctl_r, ctl_w, ctl_listen;
	int data[MAX_CPUS], data_listen[MAX_CPUS];
	uint64_t session;
	uint64_t sent[MAX_CPUS];
	struct vt_reader rd;
	bool perf;
	int pdata[MAX_CPUS];
	struct vt_perf_stats pst[MAX_CPUS];
	struct fg_bin bins[MAX_BINS];
	unsigned nbins;
};

static bool mode(const struct fg *g, const char *m) { return !strcmp(g->mode, m); }

static int listen_at(const char *dir, const char *name)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/sock", dir);
	mkdir(sa.sun_path, 0750); /* as setup --transport socket makes it */
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/sock/%s.sock", dir, name);
	unlink(sa.sun_path);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 4) < 0) {
		log_error("cannot listen on %s: %s", sa.sun_path, strerror(errno));
		exit(1);
	}
	return fd;
}

static int open_fifo(const char *dir, const char *name, const char *sfx)
{
	char path[PATH_MAX];
	int fd;

	snprintf(path, sizeof(path), "%s/%s%s", dir, name, sfx);
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		log_error("cannot open %s: %s", path, strerror(errno));
		exit(1);
	}
	return fd;
}

static void send_buf(int fd, struct vt_buf *b)
{
	if (vt_msg_end(b) == 0 && fd >= 0)
		util_write_full(fd, b->data, b->len);
	vt_buf_free(b);
}

static void reply_simple(struct fg *g, uint16_t type, uint32_t seq)
{
	struct vt_buf b = { 0 };

	vt_msg_begin(&b, type, seq);
	vt_put_u32(&b, VT_A_STATE, g->tracing);
	send_buf(g->ctl_w, &b);
}

static void reply_error(struct fg *g, uint32_t seq, int err, const char *msg)
{
	struct vt_buf b = { 0 };

	vt_msg_begin(&b, VT_MSG_ERROR, seq);
	vt_put_u32(&b, VT_A_ERRNO, (uint32_t)err);
	vt_put_str(&b, VT_A_MESSAGE, msg);
	send_buf(g->ctl_w, &b);
}

static void reply_hello(struct fg *g, uint32_t seq)
{
	struct vt_buf b = { 0 };

	vt_msg_begin(&b, VT_MSG_HELLO, seq);
	vt_put_u32(&b, VT_A_VERSION, VT_PROTO_VERSION);
	vt_put_str(&b, VT_A_AGENT_VERSION, "fake-guest");
	vt_put_u32(&b, VT_A_NCPUS, g->ncpus);
	vt_put_u32(&b, VT_A_PAGE_SIZE, PAGE);
	vt_put_str(&b, VT_A_RELEASE, "6.1.0-fake");
	vt_put_str(&b, VT_A_ARCH, "x86_64");
	vt_put_str(&b, VT_A_CLOCKS, "local [global] mono mono_raw x86-tsc");
	vt_put_u32(&b, VT_A_STATE, g->tracing);
	send_buf(g->ctl_w, &b);
}

static void meta_file(struct fg *g, const char *name, const char *data)
{
	struct vt_buf b = { 0 };

	vt_msg_begin(&b, VT_MSG_META_FILE, 0);
	vt_put_str(&b, VT_A_FILE_NAME, name);
	vt_put_bytes(&b, VT_A_FILE_DATA, data, strlen(data));
	send_buf(g->ctl_w, &b);
}

static void reply_meta(struct fg *g, uint32_t seq)
{
	static const char *const good[][2] = {
		{ "events/header_page",
		  "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n"
		  "\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n"
		  "\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n"
		  "\tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;\n" },
		{ "events/header_event",
		  "# compressed entry header\n\ttype_len    :    5 bits\n\ttime_delta  :   27 bits\n"
		  "\tarray       :   32 bits\n\n\tpadding     : type == 29\n\ttime_extend : type == 30\n"
		  "\ttime_stamp : type == 31\n\tdata max type_len  == 28\n" },
		{ "events/fake/tick/format", FAKE_TICK_FORMAT },
		{ "printk_formats", "" },
		{ "saved_cmdlines", "1 init\n" },
		{ "kallsyms", "ffffffff81000000 T _stext\n" },
	};
	static const char *const bad[] = {
		"../../evil", "events/../../evil", "/tmp/evil", "events/a/b/c/d/format", "events/x-y/z/format",
		"events/sched/sched_switch/../../../../evil", "kallsyms/../../evil", "", "evil",
	};
	struct vt_buf b = { 0 };
	unsigned n = 0;

	for (size_t i = 0; i < ARRAY_SIZE(good); i++, n++)
		meta_file(g, good[i][0], good[i][1]);
	if (mode(g, "hostile"))
		for (size_t i = 0; i < ARRAY_SIZE(bad); i++, n++)
			meta_file(g, bad[i], "owned\n");
	vt_msg_begin(&b, VT_MSG_META_END, seq);
	vt_put_u32(&b, VT_A_COUNT, n);
	send_buf(g->ctl_w, &b);
}

static void write_marker(struct fg *g, unsigned cpu, enum vt_marker_kind kind, uint64_t session,
			 const struct vt_cpu_stats *st)
{
	uint8_t page[PAGE];

	vt_marker_encode(page, PAGE, kind, session, cpu, st);
	util_write_full(g->data[cpu], page, PAGE);
}

/* A real ring-buffer page of fake:tick events (20 bytes each: 4-byte header with
 * type_len 4 and a 1 us delta, then common fields and a u64 sequence number). */
static void write_page(struct fg *g, unsigned cpu, uint64_t i)
{
	uint8_t page[PAGE];
	uint64_t ts = util_now_ns(CLOCK_MONOTONIC), nev = (PAGE - 16 - (i % 64) * 8) / 20 - 4;
	uint64_t size = nev * 20, commit = size;
	static uint64_t next_ts[1024]; /* per CPU: pages must not overlap in time */

	if (cpu < 1024) {
		ts = MAX(ts, next_ts[cpu]);
		next_ts[cpu] = ts + nev * 1000 + 1000;
	}
	memset(page, 0, sizeof(page));
	memcpy(page, &ts, 8);
	for (uint64_t k = 0; k < nev; k++) {
		uint8_t *e = page + 16 + k * 20;
		uint32_t hdr = 4u | ((k ? 1000u : 0u) << 5);
		uint16_t type = FAKE_TICK_ID;
		int32_t pid = 1;
		uint64_t seq = i * 1000 + k;

		memcpy(e, &hdr, 4);
		memcpy(e + 4, &type, 2);
		memcpy(e + 8, &pid, 4);
		memcpy(e + 12, &seq, 8);
	}
	if (i == 5) { /* the ring overwrote events before this page: 7 of them */
		uint64_t lost = 7;

		size -= 60; /* three whole events fewer, room for the stored count */
		commit = size | (1ull << 31) | (1ull << 30);
		memcpy(page + 16 + size, &lost, 8);
	}
	memcpy(page + 8, &commit, 8);
	util_write_full(g->data[cpu], page, PAGE);
	g->sent[cpu]++;
}

static void accept_data(struct fg *g)
{
	for (unsigned c = 0; g->sock && c < g->ncpus; c++)
		if (g->data[c] < 0)
			g->data[c] = accept4(g->data_listen[c], NULL, NULL, SOCK_CLOEXEC);
}

/* ---- guest perf (docs/protocol.md §3) ---- */

static void perf_marker(struct fg *g, unsigned cpu, enum vt_marker_kind kind)
{
	struct vt_perf_marker pm = { .nr_ids = 1, .clockid = CLOCK_MONOTONIC, .ids = { PERF_ID } };
	uint8_t page[PAGE];

	if (kind == VT_MARKER_PERF_END)
		pm.stats = g->pst[cpu];
	vt_marker_encode_perf(page, PAGE, kind, g->session, cpu, &pm);
	util_write_full(g->pdata[cpu], page, PAGE);
}

static void perf_put(struct fg *g, unsigned cpu, uint8_t *r, size_t n, bool sample)
{
	struct perf_event_header h;

	memcpy(&h, r, sizeof(h));
	h.size = (uint16_t)n;
	memcpy(r, &h, sizeof(h));
	util_write_full(g->pdata[cpu], r, n);
	g->pst[cpu].bytes_sent += n, g->pst[cpu].records++, g->pst[cpu].samples += sample;
}

/* The sideband trailer: pid/tid, time, cpu/res, id (VT_PERF_SAMPLE_ID_LEN). */
static size_t perf_trailer(uint8_t *r, size_t at, uint64_t ts, unsigned cpu)
{
	uint32_t v[2] = { VICTIM, VICTIM };
	uint64_t c = cpu, id = PERF_ID;

	memcpy(r + at, v, 8), memcpy(r + at + 8, &ts, 8), memcpy(r + at + 16, &c, 8), memcpy(r + at + 24, &id, 8);
	return at + 32;
}

/* cpu0: COMM of the victim, an MMAP2 with the build-id of each binary, user-mode samples in each. */
static void perf_records(struct fg *g)
{
	uint64_t ts = util_now_ns(CLOCK_MONOTONIC);
	uint8_t r[512];
	uint32_t v[2] = { VICTIM, VICTIM };

	memset(r, 0, sizeof(r));
	r[0] = PERF_RECORD_COMM;
	memcpy(r + 8, v, 8);
	strcpy((char *)r + 16, "victim");
	perf_put(g, 0, r, perf_trailer(r, 24, ts, 0), false);
	for (unsigned i = 0; i < g->nbins; i++) {
		struct fg_bin *b = &g->bins[i];
		uint64_t addr = 0x400000 + (uint64_t)i * 0x1000000, len = 0x100000, pgoff = 0;
		uint32_t prot = 5, flags = 2; /* PROT_READ|PROT_EXEC, MAP_PRIVATE */
		struct perf_event_header h = { .type = PERF_RECORD_MMAP2, .misc = PERF_RECORD_MISC_USER | PERF_RECORD_MISC_MMAP_BUILD_ID };
		size_t n = (72 + strlen(b->path) + 1 + 7) / 8 * 8;

		memset(r, 0, sizeof(r));
		memcpy(r, &h, sizeof(h));
		memcpy(r + 8, v, 8), memcpy(r + 16, &addr, 8), memcpy(r + 24, &len, 8), memcpy(r + 32, &pgoff, 8);
		r[40] = (uint8_t)b->id_len;
		memcpy(r + 44, b->id, b->id_len);
		memcpy(r + 64, &prot, 4), memcpy(r + 68, &flags, 4);
		strcpy((char *)r + 72, b->path);
		perf_put(g, 0, r, perf_trailer(r, n, ts, 0), false);
	}
	for (unsigned k = 0; k < 20 * g->nbins; k++) {
		struct perf_event_header h = { .type = PERF_RECORD_SAMPLE, .misc = PERF_RECORD_MISC_USER };
		uint64_t id = PERF_ID, ip = 0x400100 + (uint64_t)(k % g->nbins) * 0x1000000, t = ts + 1000 * (k + 1);
		uint64_t cpu = 0, period = 1000000, nr = 2, ctx = (uint64_t)PERF_CONTEXT_USER;

		memset(r, 0, sizeof(r));
		memcpy(r, &h, sizeof(h));
		memcpy(r + 8, &id, 8), memcpy(r + 16, &ip, 8), memcpy(r + 24, v, 8), memcpy(r + 32, &t, 8);
		memcpy(r + 40, &cpu, 8), memcpy(r + 48, &period, 8), memcpy(r + 56, &nr, 8);
		memcpy(r + 64, &ctx, 8), memcpy(r + 72, &ip, 8);
		perf_put(g, 0, r, 80, true);
	}
}

static void perf_start(struct fg *g)
{
	for (unsigned c = 0; c < g->ncpus; c++) {
		g->pst[c] = (struct vt_perf_stats){ .cpu = c };
		perf_marker(g, c, VT_MARKER_PERF_BEGIN);
	}
	perf_records(g);
}

/* BINARY_REQ: FILE_DATA of the binary with that build-id, from FILE_OFFSET (trickle: one byte). */
static void do_binary(struct fg *g, const struct vt_msg *m)
{
	struct vt_attr bid;
	uint64_t off = 0;
	struct vt_buf b = { 0 };
	struct fg_bin *f = NULL;
	size_t n;

	if (vt_msg_find(m, VT_A_BUILD_ID, &bid) < 0 || vt_msg_u64(m, VT_A_FILE_OFFSET, &off) < 0)
		return reply_error(g, m->hdr.seq, EINVAL, "malformed binary request");
	for (unsigned i = 0; i < g->nbins; i++)
		if (bid.len == g->bins[i].id_len && !memcmp(bid.data, g->bins[i].id, bid.len))
			f = &g->bins[i];
	if (!f || off > f->len)
		return reply_error(g, m->hdr.seq, ENOENT, "no such binary");
	n = MIN(f->len - off, (size_t)VT_BINARY_CHUNK);
	if (mode(g, "trickle")) {
		sleep(1);
		n = MIN(n, (size_t)1);
	} else if (mode(g, "slow")) { /* chunks that count, each in time, too slow in all */
		usleep(1500000);
		n = MIN(n, (size_t)64 << 10);
	}
	vt_msg_begin(&b, VT_MSG_BINARY, m->hdr.seq);
	vt_put_bytes(&b, VT_A_BUILD_ID, f->id, f->id_len);
	vt_put_u64(&b, VT_A_FILE_SIZE, f->len);
	vt_put_u64(&b, VT_A_FILE_OFFSET, off);
	vt_put_bytes(&b, VT_A_FILE_DATA, f->data + off, n);
	send_buf(g->ctl_w, &b);
}

/* The build-id claimed: IDFILE's, or 20 bytes of hex after 0x. */
static int bin_claim(const char *spec, uint8_t *id, size_t *len)
{
	_cleanup_free_ char *buf = NULL;
	size_t n;

	if (!strncmp(spec, "0x", 2)) {
		for (n = 0; n < ELF_NOTES_BUILD_ID_MAX && sscanf(spec + 2 + 2 * n, "%2hhx", &id[n]) == 1; n++)
			;
		*len = n;
		return n == ELF_NOTES_BUILD_ID_MAX ? 0 : -EINVAL;
	}
	return util_read_file(spec, 256u << 20, &buf, &n) < 0 ? -EIO : elf_file_build_id_mem(buf, n, id, len);
}

/* --bin GUESTPATH=FILE[@CLAIM]: FILE's bytes; with CLAIM its build-id bytes rewritten. */
static int bin_add(struct fg *g, const char *arg)
{
	char file[PATH_MAX];
	const char *eq = strchr(arg, '='), *at = eq ? strchr(eq, '@') : NULL;
	struct fg_bin *b = &g->bins[g->nbins];
	uint8_t own[ELF_NOTES_BUILD_ID_MAX];
	size_t own_len = 0;

	if (!eq || g->nbins >= MAX_BINS || (size_t)(eq - arg) >= sizeof(b->path))
		return -EINVAL;
	snprintf(b->path, sizeof(b->path), "%.*s", (int)(eq - arg), arg);
	snprintf(file, sizeof(file), "%.*s", (int)(at ? at - eq - 1 : (long)strlen(eq + 1)), eq + 1);
	if (util_read_file(file, 256u << 20, (char **)&b->data, &b->len) < 0 ||
	    elf_file_build_id_mem(b->data, b->len, own, &own_len) < 0)
		return -ENOEXEC;
	memcpy(b->id, own, own_len), b->id_len = own_len;
	if (at) {
		if (bin_claim(at + 1, b->id, &b->id_len) < 0 || b->id_len != own_len)
			return -EINVAL;
		for (size_t k = 0; k + own_len <= b->len; k++) /* the note's bytes */
			if (!memcmp(b->data + k, own, own_len))
				memcpy(b->data + k, b->id, own_len);
	}
	g->nbins++;
	return 0;
}

static void do_start(struct fg *g, const struct vt_msg *m)
{
	uint8_t junk[1000];

	if (vt_msg_u64(m, VT_A_SESSION, &g->session) < 0) {
		reply_error(g, m->hdr.seq, EINVAL, "start without session");
		return;
	}
	accept_data(g);
	for (unsigned c = 0; c < g->ncpus; c++) {
		g->sent[c] = 0;
		if (mode(g, "slow-begin"))
			continue; /* its begin markers went out one by one already */
		/* Before our begin marker: unaligned junk and an earlier session's marker. */
		memset(junk, 0xa5, sizeof(junk));
		util_write_full(g->data[c], junk, sizeof(junk));
		write_marker(g, c, VT_MARKER_BEGIN, g->session ^ 1, NULL);
		write_marker(g, c, VT_MARKER_BEGIN, g->session, NULL);
	}
	g->tracing = true;
	if (g->perf) {
		struct vt_buf b = { 0 };

		perf_start(g);
		vt_msg_begin(&b, VT_MSG_OK, m->hdr.seq);
		vt_put_u32(&b, VT_A_STATE, g->tracing);
		vt_put_bytes(&b, VT_A_PERF_STATS, g->pst, g->ncpus * sizeof(g->pst[0]));
		send_buf(g->ctl_w, &b);
	} else {
		reply_simple(g, VT_MSG_OK, m->hdr.seq);
	}
	if (mode(g, "late-flood"))
		sleep(3);
	for (uint64_t i = 0; i < g->pages; i++)
		for (unsigned c = 0; c < g->ncpus; c++)
			write_page(g, c, i);
	if (mode(g, "hostile")) {
		uint8_t rnd[3 * PAGE + 123];

		for (size_t k = 0; k < sizeof(rnd); k++)
			rnd[k] = (uint8_t)rand();
		util_write_full(g->data[0], rnd, sizeof(rnd));
	}
}

static void progress(struct fg *g, uint32_t seq, uint32_t step, uint32_t done, uint32_t total)
{
	struct vt_buf b = { 0 };

	vt_msg_begin(&b, VT_MSG_PROGRESS, seq);
	vt_put_u32(&b, VT_A_STEP, step);
	vt_put_u32(&b, VT_A_DONE, done);
	vt_put_u32(&b, VT_A_TOTAL, total);
	send_buf(g->ctl_w, &b);
}

/* The START modes' reports before their OK (or instead of it): true when START goes on. */
static bool start_progress(struct fg *g, const struct vt_msg *m)
{
	uint32_t want = 0, seq = m->hdr.seq;

	vt_msg_u32(m, VT_A_WANT_PROGRESS, &want);
	if (mode(g, "slow-begin")) {
		if (vt_msg_u64(m, VT_A_SESSION, &g->session) < 0)
			return true;
		accept_data(g);
		for (unsigned c = 0; c < g->ncpus; c++) {
			usleep(1500000);
			write_marker(g, c, VT_MARKER_BEGIN, g->session, NULL);
		}
		return true;
	}
	if (!mode(g, "repeat-start") && !mode(g, "endless-start") && !mode(g, "stuck-start") && !mode(g, "slow-start"))
		return true;
	if (!want)
		return mode(g, "slow-start");
	for (uint32_t i = 1; mode(g, "slow-start") && i <= 6; i++) {
		progress(g, seq, VT_STEP_EVENTS, i, 6);
		usleep(700000);
	}
	if (mode(g, "slow-start"))
		progress(g, seq, VT_STEP_SETTINGS, 0, 0);
	for (uint32_t i = 1; mode(g, "repeat-start") && i <= 30; i++) {
		progress(g, seq, VT_STEP_EVENTS, 1, 6);
		usleep(500000);
	}
	for (uint32_t i = 1; mode(g, "endless-start") && i <= 30; i++) {
		progress(g, seq, VT_STEP_EVENTS, i, 1000000);
		usleep(500000);
	}
	if (mode(g, "stuck-start"))
		progress(g, seq, VT_STEP_EVENTS, 1, 6);
	return mode(g, "slow-start");
}

static void do_stop(struct fg *g, const struct vt_msg *m)
{
	struct vt_cpu_stats st[MAX_CPUS];
	struct vt_buf b = { 0 };

	for (unsigned c = 0; c < g->ncpus; c++) {
		uint64_t claimed = g->sent[c] + (mode(g, "lossy") ? 3 : 0);

		st[c] = (struct vt_cpu_stats){ .cpu = c, .pages_sent = claimed, .bytes_sent = claimed * PAGE,
					       .entries = 1000 + c, .overrun = 7, .read_events = 900 };
		write_marker(g, c, VT_MARKER_END, g->session, &st[c]);
		if (g->perf)
			perf_marker(g, c, VT_MARKER_PERF_END);
	}
	g->tracing = false;
	vt_msg_begin(&b, VT_MSG_STOPPED, m->hdr.seq);
	vt_put_u64(&b, VT_A_SESSION, g->session);
	vt_put_bytes(&b, VT_A_CPU_STATS, st, g->ncpus * sizeof(st[0]));
	if (g->perf)
		vt_put_bytes(&b, VT_A_PERF_STATS, g->pst, g->ncpus * sizeof(g->pst[0]));
	send_buf(g->ctl_w, &b);
}

static void do_probe(struct fg *g, const struct vt_msg *m)
{
	struct vt_buf b = { 0 };
	uint64_t id = 0, host = 0;

	if (mode(g, "no-probe")) {
		reply_error(g, m->hdr.seq, EOPNOTSUPP, "clock 'global' has no user-space reading");
		return;
	}
	vt_msg_u64(m, VT_A_PROBE_ID, &id);
	vt_msg_u64(m, VT_A_HOST_TIME, &host);
	vt_msg_begin(&b, VT_MSG_PROBE_REPLY, m->hdr.seq);
	vt_put_u64(&b, VT_A_PROBE_ID, id);
	vt_put_u64(&b, VT_A_HOST_TIME, host);
	vt_put_u64(&b, VT_A_GUEST_TIME, util_now_ns(CLOCK_MONOTONIC));
	vt_put_str(&b, VT_A_CLOCK, "mono");
	send_buf(g->ctl_w, &b);
}

/* Hostile control traffic: garbage, oversized and malformed frames, unexpected frames. */
static void hostile_ctl(struct fg *g)
{
	uint8_t hdr[16] = { 'V', 'T', 'C', '1', 1, 0, VT_MSG_META_FILE, 0, 9, 0, 0, 0 };
	uint32_t huge = VT_PROTO_MAX_PAYLOAD + 1;
	uint8_t bad_attr[16 + 12] = { 'V', 'T', 'C', '1', 1, 0, VT_MSG_OK, 0, 0, 0, 0, 0, 12, 0, 0, 0,
				      1, 0, 0, 0, 0xff, 0xff, 0xff, 0x7f };
	struct vt_buf b = { 0 };

	util_write_full(g->ctl_w, "this is not a frame\x01\x02\x03", 22);
	memcpy(hdr + 12, &huge, 4);
	util_write_full(g->ctl_w, hdr, sizeof(hdr));
	util_write_full(g->ctl_w, bad_attr, sizeof(bad_attr));
	vt_msg_begin(&b, 77, 5);
	send_buf(g->ctl_w, &b);
	reply_hello(g, 6);
	meta_file(g, "../outside", "late and evil\n");
	vt_msg_begin(&b, VT_MSG_STOPPED, 7);
	vt_put_u64(&b, VT_A_SESSION, g->session);
	vt_put_bytes(&b, VT_A_CPU_STATS, "short", 5);
	send_buf(g->ctl_w, &b);
}

static void handle(struct fg *g, const struct vt_msg *m)
{
	if (mode(g, "silent") && g->tracing)
		return;
	switch (m->hdr.type) {
	case VT_MSG_HELLO: reply_hello(g, m->hdr.seq); break;
	case VT_MSG_CONFIG: {
		_cleanup_free_ char *ev = NULL;

		vt_msg_str(m, VT_A_EVENTS, 4096, &ev);
		if (ev && strstr(ev, "nope"))
			reply_error(g, m->hdr.seq, ENOENT, "unknown event 'sched:nope'");
		else
			reply_simple(g, VT_MSG_OK, m->hdr.seq);
		break;
	}
	case VT_MSG_META_REQ: reply_meta(g, m->hdr.seq); break;
	case VT_MSG_START:
		if (mode(g, "mute-start") || !start_progress(g, m))
			break;
		do_start(g, m);
		if (mode(g, "hostile"))
			hostile_ctl(g);
		break;
	case VT_MSG_STOP:
		if (!mode(g, "mute-stop"))
			do_stop(g, m);
		break;
	case VT_MSG_PROBE: do_probe(g, m); break;
	case VT_MSG_BINARY_REQ: do_binary(g, m); break;
	default: reply_error(g, m->hdr.seq, EOPNOTSUPP, "unknown frame type"); break;
	}
}

static void read_ctl(struct fg *g)
{
	enum vt_read_result res;
	struct vt_msg m;
	uint8_t *p;
	size_t room;
	char legacy;
	ssize_t n;

	if (vt_reader_space(&g->rd, &p, &room) < 0)
		exit(1);
	n = read(g->ctl_r, p, room);
	if (n <= 0) {
		if (g->sock) { /* the host went away: wait for it again, as QEMU does */
			close(g->ctl_r);
			g->ctl_r = g->ctl_w = -1;
			for (unsigned c = 0; c < g->ncpus; c++) {
				if (g->data[c] >= 0)
					close(g->data[c]);
				g->data[c] = -1;
			}
			return;
		}
		exit(n < 0);
	}
	vt_reader_commit(&g->rd, (size_t)n);
	while ((res = vt_reader_next(&g->rd, &m, &legacy)) != VT_READ_NEED_MORE)
		if (res == VT_READ_MSG)
			handle(g, &m);
}

static void setup(struct fg *g)
{
	char name[32];

	for (unsigned c = 0; c < g->ncpus; c++) {
		snprintf(name, sizeof(name), "trace-path-cpu%u", c);
		g->data[c] = g->sock ? -1 : open_fifo(g->dir, name, ".out");
		g->data_listen[c] = g->sock ? listen_at(g->dir, name) : -1;
		snprintf(name, sizeof(name), "perf-path-cpu%u", c);
		g->pdata[c] = g->perf ? open_fifo(g->dir, name, ".out") : -1;
	}
	if (g->sock) {
		g->ctl_listen = listen_at(g->dir, "agent-ctl-path");
		g->ctl_r = g->ctl_w = -1;
	} else {
		g->ctl_r = open_fifo(g->dir, "agent-ctl-path", ".in");
		g->ctl_w = open_fifo(g->dir, "agent-ctl-path", ".out");
	}
	if (g->stale && !g->sock) { /* an earlier session's leftovers, as QEMU's FIFOs keep them */
		uint8_t page[PAGE];

		vt_marker_encode(page, PAGE, VT_MARKER_BEGIN, 12345, 0, NULL);
		for (unsigned c = 0; c < g->ncpus; c++) {
			util_write_full(g->data[c], "stale bytes", 11);
			util_write_full(g->data[c], page, PAGE);
		}
		util_write_full(g->ctl_w, "stale control bytes\n", 20);
	}
	fprintf(stdout, "ready\n");
	fflush(stdout);
}

static void serve(struct fg *g)
{
	for (;;) {
		struct pollfd pfd = { .fd = g->ctl_r >= 0 ? g->ctl_r : g->ctl_listen, .events = POLLIN };

		if (poll(&pfd, 1, -1) < 0 && errno != EINTR)
			exit(1);
		if (g->ctl_r >= 0) {
			read_ctl(g);
			continue;
		}
		g->ctl_r = g->ctl_w = accept4(g->ctl_listen, NULL, NULL, SOCK_CLOEXEC);
		vt_reader_free(&g->rd);
		vt_reader_init(&g->rd);
	}
}

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "dir", 1, 0, 'd' }, { "cpus", 1, 0, 'c' }, { "socket", 0, 0, 's' }, { "pages", 1, 0, 'p' },
		{ "mode", 1, 0, 'm' }, { "stale", 0, 0, 'S' }, { "perf", 0, 0, 'P' }, { "bin", 1, 0, 'b' }, {},
	};
	struct fg g = { .mode = "normal", .ncpus = 2, .pages = 100 };
	int c;

	log_prog = "fake-guest";
	signal(SIGPIPE, SIG_IGN);
	while ((c = getopt_long(argc, argv, "", lopts, NULL)) != -1) {
		if (c == 'd') g.dir = optarg;
		else if (c == 'c') g.ncpus = (unsigned)atoi(optarg);
		else if (c == 's') g.sock = true;
		else if (c == 'p') g.pages = (unsigned)atoi(optarg);
		else if (c == 'm') g.mode = optarg;
		else if (c == 'S') g.stale = true;
		else if (c == 'P') g.perf = true;
		else if (c == 'b' && bin_add(&g, optarg) < 0) {
			log_error("--bin %s: not GUESTPATH=ELF_FILE[@IDFILE|@0x<40 hex digits>]", optarg);
			return 2;
		}
		else if (c == 'b') continue;
		else return 2;
	}
	if (!g.dir || g.ncpus == 0 || g.ncpus > MAX_CPUS || (g.perf && g.sock))
		return 2;
	vt_reader_init(&g.rd);
	setup(&g);
	serve(&g);
	return 0;
}
