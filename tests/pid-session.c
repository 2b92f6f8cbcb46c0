// SPDX-License-Identifier: GPL-2.0-only
/* A synthetic guest session of sched_switch events over a given list of pids (pid-session.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "marker.h"
#include "pid-session.h"
#include "util.h"

#define PS_PAGE 4096
#define PS_EVENT 64             /* sched_switch's fields */
#define PS_RECORD (4 + PS_EVENT) /* with its 4-byte header, type_len 16 */
#define PS_ID 372

static const char ps_header_page[] =
	"\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n"
	"\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n"
	"\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n"
	"\tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;\n";
static const char ps_header_event[] =
	"# compressed entry header\n\ttype_len    :    5 bits\n\ttime_delta  :   27 bits\n"
	"\tarray       :   32 bits\n\n\tpadding     : type == 29\n\ttime_extend : type == 30\n"
	"\ttime_stamp  : type == 31\n\tdata max type_len  == 28\n";
static const char ps_format[] =
	"name: sched_switch\nID: 372\nformat:\n"
	"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
	"\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
	"\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
	"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"
	"\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;\n"
	"\tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;\n"
	"\tfield:int prev_prio;\toffset:28;\tsize:4;\tsigned:1;\n"
	"\tfield:long prev_state;\toffset:32;\tsize:8;\tsigned:1;\n"
	"\tfield:char next_comm[16];\toffset:40;\tsize:16;\tsigned:0;\n"
	"\tfield:pid_t next_pid;\toffset:56;\tsize:4;\tsigned:1;\n"
	"\tfield:int next_prio;\toffset:60;\tsize:4;\tsigned:1;\n\n"
	"print fmt: \"prev_comm=%s prev_pid=%d ==> next_comm=%s next_pid=%d\", REC->prev_comm, "
	"REC->prev_pid, REC->next_comm, REC->next_pid\n";
static const char ps_clock[] = "method=ptp\nsegments=1\nsamples=2\nerror_bound_ns=1000\n"
			       "seg0.guest_start=0\nseg0.slope=1\nseg0.offset_ns=0\n";
static const char ps_ini[] = "vm=hashflood\nsession_id=1\nncpus=1\npage_size=4096\nqemu_pid=4242\n"
			     "guest_clock=mono\nclock_method=none\nstate=stopped\n";

void pid_session_colliding(int32_t *pids, size_t n)
{
	/* The old table's slot was (pid * 2654435761) mod 2^17: low 17 bits l with l * 2654435761
	 * = g (mod 2^17) for g = 0, 1, 2... put each group in the next slot. */
	const uint32_t inv = 0x12f51u, m = (1u << 17) - 1; /* 2654435761^-1 mod 2^17 */

	for (size_t i = 0; i < n; i++) {
		uint32_t low = (uint32_t)(i / 16384 + 1) * inv & m, high = (uint32_t)(i % 16384);

		pids[i] = (int32_t)(high << 17 | low);
	}
}

void pid_session_random(int32_t *pids, size_t n, uint32_t seed)
{
	uint64_t x = seed | 1;

	for (size_t i = 0; i < n; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		/* distinct (n < 2^17): low 17 bits a permutation of i + 1, random above */
		pids[i] = (int32_t)((((uint32_t)x & 0x3fffu) << 17) | ((uint32_t)(i + 1) * 0x9e37u & 0x1ffffu));
	}
}

void pid_session_comm(size_t i, char comm[16])
{
	snprintf(comm, 16, "t%zu", i % 1000000000);
}

static void ps_event(uint8_t *r, int32_t prev, size_t prev_i, int32_t next, size_t next_i)
{
	uint32_t hdr = PS_EVENT / 4 | 1000u << 5; /* 1 us after the one before */
	uint16_t type = PS_ID;

	memset(r, 0, PS_RECORD);
	memcpy(r, &hdr, 4);
	memcpy(r + 4, &type, 2);
	memcpy(r + 8, &prev, 4);
	pid_session_comm(prev_i, (char *)r + 4 + 8);
	memcpy(r + 4 + 24, &prev, 4);
	pid_session_comm(next_i, (char *)r + 4 + 40);
	memcpy(r + 4 + 56, &next, 4);
}

static int ps_spool(int fd, const int32_t *pids, size_t n, unsigned passes, uint64_t *ret_pages)
{
	const size_t per_page = (PS_PAGE - 16) / PS_RECORD, total = (size_t)passes * n;
	uint8_t page[PS_PAGE];
	uint64_t ts = 1000000000ull, pages = 0;
	int r = 0;

	for (size_t k = 0; r == 0 && k < total; pages++) {
		uint64_t commit = 0;

		memset(page, 0, sizeof(page));
		memcpy(page, &ts, 8);
		for (size_t e = 0; e < per_page && k < total; e++, k++, commit += PS_RECORD, ts += 1000)
			ps_event(page + 16 + commit, pids[(k + n - 1) % n], (k + n - 1) % n, pids[k % n], k % n);
		memcpy(page + 8, &commit, 8);
		r = util_write_full(fd, page, PS_PAGE);
	}
	*ret_pages = pages;
	return r;
}

static int ps_put(const char *dir, const char *rel, const char *text)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	return util_write_file(path, text, strlen(text), 0644);
}

int pid_session_write(const char *dir, const int32_t *pids, size_t n, unsigned passes)
{
	char path[4096];
	uint8_t page[PS_PAGE];
	struct vt_cpu_stats st = { 0 };
	_cleanup_close_ int fd = -1;
	int r;

	snprintf(path, sizeof(path), "%s/guest/events/sched/sched_switch", dir);
	if (!n || (r = util_mkdir_p(path, 0755)) < 0 || (r = ps_put(dir, "session.ini", ps_ini)) < 0 ||
	    (r = ps_put(dir, "clock.ini", ps_clock)) < 0 || (r = ps_put(dir, "guest/events/header_page", ps_header_page)) < 0 ||
	    (r = ps_put(dir, "guest/events/header_event", ps_header_event)) < 0 ||
	    (r = ps_put(dir, "guest/events/sched/sched_switch/format", ps_format)) < 0)
		return n ? r : -EINVAL;
	snprintf(path, sizeof(path), "%s/cpu0.spool", dir);
	if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0)
		return -errno;
	vt_marker_encode(page, PS_PAGE, VT_MARKER_BEGIN, 1, 0, NULL);
	if ((r = util_write_full(fd, page, PS_PAGE)) < 0 || (r = ps_spool(fd, pids, n, passes, &st.pages_sent)) < 0)
		return r;
	st.bytes_sent = st.pages_sent * PS_PAGE;
	vt_marker_encode(page, PS_PAGE, VT_MARKER_END, 1, 0, &st);
	return util_write_full(fd, page, PS_PAGE);
}
