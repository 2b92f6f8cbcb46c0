// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "agentctl.h"
#include "collector.h"
#include "harness.h"
#include "ports.h"
#include "util.h"

/* agentctl.c reports to its owner through ops; these tests drop what it reports. */
static void drop_msg(void *userdata, const struct vt_msg *m) {}
static void drop_gone(void *userdata, int err) {}
static const struct agentctl_ops drop_ops = { .msg = drop_msg, .gone = drop_gone };

TEST(meta_names)
{
	static const char *const good[] = {
		"events/header_page", "events/header_event", "events/sched/sched_switch/format",
		"printk_formats", "saved_cmdlines", "saved_tgids", "kallsyms", "notes",
	};
	static const char *const bad[] = {
		"", "/", "../x", "events/../kallsyms", "/etc/passwd", "events/sched/sched_switch/id",
		"events/a/b/c/format", "events/a-b/c/format", "events//x/format", "events/sched/x/",
		"events/header_page/", "kallsyms/", "KALLSYMS", "events/sched/./format", "printk_formats\n",
		"events/sched/sched switch/format",
	};

	for (size_t i = 0; i < ARRAY_SIZE(good); i++)
		CHECK_INT(agentctl_meta_name_ok(good[i]), ==, 0);
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		CHECK_INT(agentctl_meta_name_ok(bad[i]), ==, -EINVAL);
}

static int meta_msg(struct vt_buf *b, const char *name, const char *data, struct vt_msg *ret)
{
	*b = (struct vt_buf){ 0 };
	vt_msg_begin(b, VT_MSG_META_FILE, 1);
	vt_put_str(b, VT_A_FILE_NAME, name);
	vt_put_bytes(b, VT_A_FILE_DATA, data, strlen(data));
	if (vt_msg_end(b) < 0)
		return -ENOMEM;
	ret->payload = b->data + VT_PROTO_HDR_SIZE;
	ret->len = (uint32_t)(b->len - VT_PROTO_HDR_SIZE);
	return 0;
}

TEST(store_meta_stays_inside)
{
	char tmpl[] = "/tmp/vt-test-agentctl.XXXXXX", path[256], name[80], cmd[128];
	struct port port;
	struct event_base *base = event_base_new();
	struct agentctl *a = NULL;
	struct vt_buf b;
	struct vt_msg m;
	struct stat st;
	int p[2], dirfd;

	CHECK(base && mkdtemp(tmpl) && pipe(p) == 0);
	port = (struct port){ .rfd = p[0], .wfd = p[1] };
	CHECK_INT(agentctl_new(&drop_ops, &port, base, &a), ==, 0);
	dirfd = open(tmpl, O_RDONLY | O_DIRECTORY);
	CHECK(dirfd >= 0);
	CHECK_INT(meta_msg(&b, "events/sched/sched_switch/format", "ID: 1\n", &m), ==, 0);
	CHECK_INT(agentctl_store_meta(a, &m, dirfd, name, sizeof(name)), ==, 0);
	vt_buf_free(&b);
	snprintf(path, sizeof(path), "%s/events/sched/sched_switch/format", tmpl);
	CHECK_INT(stat(path, &st), ==, 0);
	CHECK_INT(st.st_size, ==, 6);
	CHECK_INT(meta_msg(&b, "../escape", "x", &m), ==, 0);
	CHECK_INT(agentctl_store_meta(a, &m, dirfd, name, sizeof(name)), ==, -EINVAL);
	CHECK_STR(name, "../escape");
	vt_buf_free(&b);
	CHECK_INT(meta_msg(&b, "kallsyms\x01", "x", &m), ==, 0);
	CHECK_INT(agentctl_store_meta(a, &m, dirfd, name, sizeof(name)), ==, -EINVAL);
	CHECK_STR(name, "kallsyms?");
	vt_buf_free(&b);
	snprintf(path, sizeof(path), "/tmp/escape");
	CHECK(stat(path, &st) < 0);
	agentctl_free(a);
	event_base_free(base);
	close(dirfd);
	close(p[0]);
	close(p[1]);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpl);
	CHECK_INT(system(cmd), ==, 0);
}

static void hello_msg(struct vt_buf *b, uint32_t ncpus, uint32_t page, struct vt_msg *ret)
{
	*b = (struct vt_buf){ 0 };
	vt_msg_begin(b, VT_MSG_HELLO, 1);
	vt_put_u32(b, VT_A_NCPUS, ncpus);
	vt_put_u32(b, VT_A_PAGE_SIZE, page);
	vt_put_str(b, VT_A_RELEASE, "6.1\nstate=merged");
	vt_msg_end(b);
	ret->payload = b->data + VT_PROTO_HDR_SIZE;
	ret->len = (uint32_t)(b->len - VT_PROTO_HDR_SIZE);
}

TEST(hello_bounds)
{
	struct agent_hello h;
	struct vt_buf b;
	struct vt_msg m;

	hello_msg(&b, 4, 4096, &m);
	CHECK_INT(agentctl_parse_hello(&m, &h), ==, 0);
	CHECK_INT(h.ncpus, ==, 4);
	CHECK_STR(h.release, "6.1?state=merged"); /* no line injection into session.ini */
	vt_buf_free(&b);
	hello_msg(&b, 0, 4096, &m);
	CHECK_INT(agentctl_parse_hello(&m, &h), ==, -ERANGE);
	vt_buf_free(&b);
	hello_msg(&b, COLLECTOR_MAX_CPUS + 1, 4096, &m);
	CHECK_INT(agentctl_parse_hello(&m, &h), ==, -ERANGE);
	vt_buf_free(&b);
	hello_msg(&b, 2, 6000, &m);
	CHECK_INT(agentctl_parse_hello(&m, &h), ==, -EDOM);
	vt_buf_free(&b);
	hello_msg(&b, 2, 2048, &m);
	CHECK_INT(agentctl_parse_hello(&m, &h), ==, -EDOM);
	vt_buf_free(&b);
	hello_msg(&b, 2, 65536, &m); /* a 64 KiB ring sub-buffer: the largest taken */
	CHECK_INT(agentctl_parse_hello(&m, &h), ==, 0);
	vt_buf_free(&b);
	hello_msg(&b, 2, 131072, &m); /* larger: what the host would hold per CPU stream is bounded */
	CHECK_INT(agentctl_parse_hello(&m, &h), ==, -EDOM);
	vt_buf_free(&b);
}

/* A PROGRESS frame with step, done, total (each < 0: left out) parsed. */
static int progress_parse(int64_t step, int64_t done, int64_t total, struct agent_progress *ret)
{
	struct vt_buf b = { 0 };
	struct vt_msg m;
	int r;

	vt_msg_begin(&b, VT_MSG_PROGRESS, 3);
	if (step >= 0)
		vt_put_u32(&b, VT_A_STEP, (uint32_t)step);
	if (done >= 0)
		vt_put_u32(&b, VT_A_DONE, (uint32_t)done);
	if (total >= 0)
		vt_put_u32(&b, VT_A_TOTAL, (uint32_t)total);
	vt_msg_end(&b);
	m = (struct vt_msg){ .payload = b.data + VT_PROTO_HDR_SIZE, .len = (uint32_t)(b.len - VT_PROTO_HDR_SIZE) };
	r = agentctl_parse_progress(&m, ret);
	vt_buf_free(&b);
	return r;
}

TEST(progress_bounds)
{
	struct agent_progress p = { 0 };

	CHECK_INT(progress_parse(VT_STEP_EVENTS, 12, 47, &p), ==, 0);
	CHECK(p.step == VT_STEP_EVENTS && p.done == 12 && p.total == 47);
	CHECK_INT(progress_parse(VT_STEP_TRACING_ON, 0, 0, &p), ==, 0);
	CHECK_STR(vt_start_step_name(p.step), "turning tracing on");
	CHECK_INT(progress_parse(0, 0, 0, &p), ==, -ERANGE);
	CHECK_INT(progress_parse(VT_STEP_MAX, 0, 0, &p), ==, -ERANGE);
	CHECK_INT(progress_parse(VT_STEP_BEGIN, 33, 32, &p), ==, -ERANGE);
	CHECK_INT(progress_parse(VT_STEP_EVENTS, 1, AGENTCTL_PROGRESS_MAX + 1, &p), ==, -ERANGE);
	CHECK_INT(progress_parse(VT_STEP_EVENTS, 1, -1, &p), ==, -EBADMSG);
	CHECK_INT(progress_parse(-1, 1, 2, &p), ==, -EBADMSG);
	CHECK(p.step == VT_STEP_TRACING_ON); /* untouched on failure */
	CHECK_STR(vt_start_step_name(99), "an unknown step");
}

/* A PROBE_REPLY with the PHC bracket lo, hi (each < 0: left out) parsed. */
static int phc_parse(int64_t lo, int64_t hi, uint64_t *ret_lo, uint64_t *ret_hi)
{
	struct vt_buf b = { 0 };
	struct vt_msg m;
	int r;

	vt_msg_begin(&b, VT_MSG_PROBE_REPLY, 4);
	vt_put_u64(&b, VT_A_PROBE_ID, 7);
	vt_put_u64(&b, VT_A_HOST_TIME, 1000);
	vt_put_u64(&b, VT_A_GUEST_TIME, 2000);
	if (lo >= 0)
		vt_put_u64(&b, VT_A_PHC_LO, (uint64_t)lo);
	if (hi >= 0)
		vt_put_u64(&b, VT_A_PHC_HI, (uint64_t)hi);
	vt_msg_end(&b);
	m = (struct vt_msg){ .payload = b.data + VT_PROTO_HDR_SIZE, .len = (uint32_t)(b.len - VT_PROTO_HDR_SIZE) };
	r = agentctl_parse_probe_phc(&m, ret_lo, ret_hi);
	vt_buf_free(&b);
	return r;
}

TEST(probe_phc_bounds)
{
	uint64_t lo = 0, hi = 0;

	CHECK_INT(phc_parse(-1, -1, &lo, &hi), ==, -ENOENT); /* no ptp_kvm, or an older agent */
	CHECK_INT(phc_parse(1796642070076700809, 1796642070076707000, &lo, &hi), ==, 0);
	CHECK(lo == 1796642070076700809ull && hi == 1796642070076707000ull);
	CHECK_INT(phc_parse(5, -1, &lo, &hi), ==, -EBADMSG);
	CHECK_INT(phc_parse(-1, 5, &lo, &hi), ==, -EBADMSG);
	CHECK_INT(phc_parse(6, 5, &lo, &hi), ==, -EBADMSG);
	CHECK_INT(phc_parse(5, 5 + (int64_t)AGENTCTL_PHC_SPAN_MAX + 1, &lo, &hi), ==, -EBADMSG);
	CHECK_INT(phc_parse(5, 5 + (int64_t)AGENTCTL_PHC_SPAN_MAX, &lo, &hi), ==, 0);
}

TEST(stopped_stats)
{
	struct vt_cpu_stats in[3] = { { .cpu = 0, .pages_sent = 10 }, { .cpu = 1, .pages_sent = 20 },
				      { .cpu = 2, .pages_sent = 30 } }, out[2];
	struct vt_buf b = { 0 };
	struct vt_msg m;
	unsigned n = 0;

	vt_msg_begin(&b, VT_MSG_STOPPED, 1);
	vt_put_u64(&b, VT_A_SESSION, 42);
	vt_put_bytes(&b, VT_A_CPU_STATS, in, sizeof(in));
	CHECK_INT(vt_msg_end(&b), ==, 0);
	m.payload = b.data + VT_PROTO_HDR_SIZE;
	m.len = (uint32_t)(b.len - VT_PROTO_HDR_SIZE);
	CHECK_INT(agentctl_parse_stopped(&m, 43, out, 2, &n), ==, -ESRCH);
	CHECK_INT(agentctl_parse_stopped(&m, 42, out, 2, &n), ==, 0);
	CHECK_INT(n, ==, 2); /* bounded by the caller's array */
	CHECK_INT(out[1].pages_sent, ==, 20);
	vt_buf_free(&b);
}
