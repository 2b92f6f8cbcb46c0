// SPDX-License-Identifier: GPL-2.0-only
/* The guest side of the merge: session.ini, the guest's metadata files, and one page walker
 * per vCPU spool. Everything here came from the guest and is validated before use. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "marker.h"
#include "merge.h"
#include "util.h"

#define INI_MAX (64u << 10)
#define META_MAX (16u << 20)
#define GUEST_RBUF (512u << 10) /* a vCPU's spool is read this much at a time */
#define MACHINE_PID_STAND_IN 4194305u /* above PID_MAX_LIMIT: never a real host pid */

/* Value of key in key=value text, copied into buf; -ENOENT when absent. */
static int ini_get(const char *text, const char *key, char *buf, size_t len)
{
	size_t kl = strlen(key);

	for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		const char *end = strchr(l, '\n');
		size_t vl;

		if (strncmp(l, key, kl) || l[kl] != '=')
			continue;
		vl = (size_t)((end ? end : l + strlen(l)) - (l + kl + 1));
		if (vl >= len)
			return -ENAMETOOLONG;
		memcpy(buf, l + kl + 1, vl);
		buf[vl] = '\0';
		return 0;
	}
	return -ENOENT;
}

static int ini_u64(const char *text, const char *key, uint64_t max, uint64_t *ret)
{
	char v[32];
	int r = ini_get(text, key, v, sizeof(v));

	return r < 0 ? r : util_parse_u64(v, max, ret);
}

/* session.ini's migration_N lines ("MONO_NS FROM_PID TO_PID", each from the one before, the
 * first from first_pid) into mig: those that parse and chain, in order; the rest ignored (the
 * guest's data does not depend on them). How many. */
static uint32_t parse_migrations(const char *ini, uint64_t first_pid, struct merge_migration *mig)
{
	uint64_t n = 0, prev = first_pid;
	uint32_t got = 0;

	(void)ini_u64(ini, "migrations", MERGE_MAX_MIGRATIONS, &n);
	for (uint32_t i = 0; i < n; i++) {
		char key[32], v[96], tail;
		unsigned long long mono;
		unsigned from, to;

		snprintf(key, sizeof(key), "migration_%u", i);
		if (ini_get(ini, key, v, sizeof(v)) < 0 || sscanf(v, "%llu %u %u%c", &mono, &from, &to, &tail) != 3 ||
		    from != prev || !to || to > INT32_MAX || to == from)
			break;
		mig[got++] = (struct merge_migration){ mono, from, to };
		prev = to;
	}
	return got;
}

uint32_t merge_guest_reload_migrations(struct merge_guest *g, int dfd)
{
	_cleanup_free_ char *ini = NULL;
	struct merge_migration mig[MERGE_MAX_MIGRATIONS];
	uint32_t n0 = g->nmig, n;

	if (g->machine_pid_stand_in || merge_input_read(dfd, g->dir, "session.ini", INI_MAX, &ini, NULL) < 0)
		return 0;
	n = parse_migrations(ini, g->machine_pid, mig);
	/* the daemon appends: the ones known stay as they are, the chain must go on from them */
	if (n > n0 && !memcmp(mig, g->mig, n0 * sizeof(*mig))) {
		memcpy(g->mig, mig, n * sizeof(*mig));
		g->nmig = n;
	}
	return g->nmig - n0;
}

static int load_session_ini(struct merge_guest *g, int dfd, char *why, size_t whylen)
{
	_cleanup_free_ char *ini = NULL;
	uint64_t ncpus, ps, pid = 0;

	if (merge_input_read(dfd, g->dir, "session.ini", INI_MAX, &ini, NULL) < 0) {
		snprintf(why, whylen, "no readable session.ini");
		return -ENOENT;
	}
	if (ini_u64(ini, "ncpus", MERGE_MAX_CPUS, &ncpus) < 0 || ncpus == 0 ||
	    ini_u64(ini, "page_size", VT_MARKER_MAX_PAGE, &ps) < 0 || ps < VT_MARKER_MIN_PAGE ||
	    ini_u64(ini, "session_id", UINT64_MAX, &g->session_id) < 0) {
		snprintf(why, whylen, "session.ini lacks a valid ncpus (1..%u), page_size or session_id",
			 MERGE_MAX_CPUS);
		return -EBADMSG;
	}
	if (ini_u64(ini, "guest_perf_freq", VT_PERF_FREQ_MAX, &pid) == 0)
		g->perf_freq = (uint32_t)pid;
	pid = 0;
	(void)ini_u64(ini, "qemu_pid", INT32_MAX, &pid);
	(void)ini_u64(ini, "started_mono_ns", UINT64_MAX, &g->started_ns);
	(void)ini_u64(ini, "stopped_mono_ns", UINT64_MAX, &g->stopped_ns);
	g->ncpus = (uint32_t)ncpus;
	g->page_size = (uint32_t)ps;
	g->machine_pid = pid ? pid : MACHINE_PID_STAND_IN;
	g->machine_pid_stand_in = pid == 0;
	if (pid)
		g->nmig = parse_migrations(ini, g->machine_pid, g->mig);
	g->session_read = true;
	if (ini_get(ini, "vm", g->vm_name, sizeof(g->vm_name)) < 0)
		g->vm_name[0] = '\0';
	if (ini_get(ini, "host_data", g->host_data, sizeof(g->host_data)) < 0)
		g->host_data[0] = '\0';
	if (ini_get(ini, "guest_perf", g->perf_events, sizeof(g->perf_events)) < 0)
		g->perf_events[0] = '\0';
	if (ini_get(ini, "guest_clock", g->guest_clock, sizeof(g->guest_clock)) < 0)
		g->guest_clock[0] = '\0';
	if (ini_get(ini, "missing_cpus", g->missing_cpus, sizeof(g->missing_cpus)) < 0 ||
	    strspn(g->missing_cpus, "0123456789,") != strlen(g->missing_cpus))
		g->missing_cpus[0] = '\0';
	return 0;
}

static int load_layout(struct merge_guest *g, int dfd, char *why, size_t whylen)
{
	if (merge_input_read(dfd, g->dir, "guest/events/header_page", META_MAX, &g->header_page, &g->hp_len) < 0 ||
	    merge_input_read(dfd, g->dir, "guest/events/header_event", META_MAX, &g->header_event, &g->he_len) < 0) {
		snprintf(why, whylen, "guest/events/header_page or header_event is missing");
		return -ENOENT;
	}
	if (ftrace_page_layout_parse(g->header_page, g->hp_len, g->header_event, g->he_len, &g->layout) < 0) {
		snprintf(why, whylen, "guest/events/header_page or header_event is malformed");
		return -EBADMSG;
	}
	if (g->layout.page_size != g->page_size) {
		snprintf(why, whylen, "guest header_page describes %u-byte pages, session.ini says %u",
			 g->layout.page_size, g->page_size);
		return -EBADMSG;
	}
	return 0;
}

static void event_fields(struct guest_event *e)
{
	static const char *const names[2][2] = { { "prev_comm", "prev_pid" }, { "next_comm", "next_pid" } };

	for (int i = 0; i < 2; i++) {
		e->comm[i] = tep_format_field(&e->fmt, names[i][0]);
		e->pid[i] = tep_format_field(&e->fmt, names[i][1]);
	}
	if (!e->comm[0] || !e->pid[0]) {
		e->comm[0] = tep_format_field(&e->fmt, "comm");
		e->pid[0] = tep_format_field(&e->fmt, "pid");
	}
	for (int i = 0; i < 2; i++)
		if (!e->comm[i] || !e->pid[i] || e->comm[i]->size != 16 || e->pid[i]->size != 4)
			e->comm[i] = e->pid[i] = NULL;
}

/* perf script and report resolve %ps-style pointers with the host kernel's symbols (their
 * libtraceevent resolver is the host machine), which names guest addresses wrongly: print
 * guest function pointers as hex instead (same length), to be looked up in guest/kallsyms. */
static void unsymbolize(char *text, size_t len)
{
	char *p = strstr(text, "\nprint fmt: ");

	if (!p)
		return;
	for (p += 12; (p = strstr(p, "%p")) && p + 3 <= text + len; p += 3)
		if (strchr("sSfFB", p[2]) && p[2] && p[3] != 'R')
			memcpy(p, "%lx", 3);
}

/* perf 6.1's own libtraceevent refuses "(REC)->field" (it wants "REC->"): the guest kernel's
 * ftrace func_repeats format has it since Linux 5.13, and perf 6.1 then warns on every read of
 * the file ("Error: expected type 4 but read 5"). " REC " is the same length and parses in both
 * 6.1 and 6.12 (tests/e2e/perf-both, e2e tracer-function). */
static void unparen_rec(char *text)
{
	char *p = strstr(text, "\nprint fmt: ");

	for (; p && (p = strstr(p, "(REC)")); p += 5)
		memcpy(p, " REC ", 5);
}

static int add_format(struct merge_guest *g, int dfd, const char *sys, const char *ev)
{
	_cleanup_free_ char *text = NULL;
	char path[4 * TEP_FORMAT_MAX_NAME];
	struct guest_event *e;
	const struct tep_format_field *cp;
	size_t len;

	snprintf(path, sizeof(path), "guest/events/%s/%s/format", sys, ev);
	if (g->n_events >= MERGE_MAX_EVENTS || merge_input_read(dfd, g->dir, path, TEP_FORMAT_MAX_TEXT, &text, &len) < 0)
		return -EBADMSG;
	e = &g->events[g->n_events];
	memset(e, 0, sizeof(*e));
	if (tep_format_parse(text, len, &e->fmt) < 0 || strcmp(e->fmt.name, ev) || g->by_id[e->fmt.id] >= 0)
		return -EBADMSG;
	cp = tep_format_field(&e->fmt, "common_pid");
	if (!cp || cp->size != 4 || cp->offset + 4 > 64)
		return -EBADMSG;
	e->pid_off = (uint16_t)cp->offset;
	snprintf(e->sys, sizeof(e->sys), "%s", sys);
	if (merge_gsym_format(e, &text, &len) > 0)
		g->gsym_events++;
	unsymbolize(text, len); /* the pointers left: hex */
	unparen_rec(text);
	e->text = TAKE_PTR(text);
	e->text_len = len;
	event_fields(e);
	g->by_id[e->fmt.id] = (int32_t)g->n_events++;
	return 0;
}

static int load_system(struct merge_guest *g, int dfd, const char *sys)
{
	char path[2 * TEP_FORMAT_MAX_NAME];
	struct dirent *de;
	DIR *d;
	int fd;

	snprintf(path, sizeof(path), "guest/events/%s", sys);
	fd = merge_input_open(dfd, g->dir, path, O_RDONLY | O_DIRECTORY);
	if (fd < 0 || !(d = fdopendir(fd))) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	while ((de = readdir(d))) {
		size_t nl = strlen(de->d_name);

		if (de->d_name[0] == '.')
			continue;
		if (nl >= TEP_FORMAT_MAX_NAME || !util_safe_name(de->d_name, nl) ||
		    add_format(g, dfd, sys, de->d_name) < 0)
			g->loss.dropped_formats++;
	}
	closedir(d);
	return 0;
}

static int load_formats(struct merge_guest *g, int dfd)
{
	struct dirent *de;
	DIR *d;
	int fd = merge_input_open(dfd, g->dir, "guest/events", O_RDONLY | O_DIRECTORY);

	g->events = calloc(MERGE_MAX_EVENTS, sizeof(*g->events));
	g->by_id = malloc(65536 * sizeof(*g->by_id));
	if (!g->events || !g->by_id) {
		if (fd >= 0)
			close(fd);
		return -ENOMEM;
	}
	memset(g->by_id, 0xff, 65536 * sizeof(*g->by_id));
	if (fd < 0 || !(d = fdopendir(fd))) {
		if (fd >= 0)
			close(fd);
		return -ENOENT;
	}
	while ((de = readdir(d))) {
		size_t nl = strlen(de->d_name);

		if (de->d_name[0] == '.' || !strncmp(de->d_name, "header_", 7))
			continue;
		if (nl >= TEP_FORMAT_MAX_NAME - 8 || !util_safe_name(de->d_name, nl))
			g->loss.dropped_formats++;
		else
			load_system(g, dfd, de->d_name);
	}
	closedir(d);
	return 0;
}

/* Whether the page at off of c's spool is this session's begin marker for c's CPU. */
static bool is_begin(struct merge_guest *g, struct guest_cpu *c, uint64_t off, uint64_t size)
{
	struct vt_marker m;

	return off + g->page_size <= size && pread(c->fd, c->page, g->page_size, (off_t)off) == g->page_size &&
	       vt_marker_decode(c->page, g->page_size, &m) == 1 && m.kind == VT_MARKER_BEGIN &&
	       m.session_id == g->session_id && m.cpu == c->cpu;
}

/* Finds this session's begin marker: the spool's first page, as the daemon writes it, or
 * anywhere after stale bytes (a reused spool). Only that search reads a byte twice. */
static int find_begin(struct merge_guest *g, struct guest_cpu *c, uint64_t size)
{
	static const uint64_t pat[2] = { VT_MARKER_MAGIC, VT_MARKER_COMMIT };
	_cleanup_free_ uint8_t *buf = NULL;
	uint64_t off = 0;

	if (is_begin(g, c, 0, size)) {
		g->loss.bytes_read += g->page_size;
		c->data_off = g->page_size;
		return 0;
	}
	if (!(buf = malloc(1u << 20)))
		return -ENOMEM;
	while (off < size) {
		ssize_t n = pread(c->fd, buf, 1u << 20, (off_t)off);
		const uint8_t *p = buf;

		g->loss.bytes_read += n > 0 ? (uint64_t)n : 0;
		if (n <= 0)
			return -ENOENT;
		while ((p = memmem(p, (size_t)(buf + n - p), pat, sizeof(pat)))) {
			uint64_t at = off + (uint64_t)(p - buf);

			if (is_begin(g, c, at, size)) {
				g->loss.stale_bytes += at;
				c->data_off = at + g->page_size;
				return 0;
			}
			p++;
		}
		if ((size_t)n < sizeof(pat))
			return -ENOENT;
		off += (uint64_t)n - (sizeof(pat) - 1);
	}
	return -ENOENT;
}


/* KEY of the daemon's note cpuN.SUFFIX about the hole at the front of cpuN.spool, or 0: cpuN.fr's
 * flush_pages (flush marker pages among the flight recorder's), cpuN.released's released (bytes
 * freed behind the live merge). */
static uint64_t cpu_note(const struct merge_guest *g, int dfd, unsigned cpu, const char *suffix, const char *key)
{
	_cleanup_free_ char *text = NULL;
	char name[48], val[32];
	uint64_t n;

	snprintf(name, sizeof(name), "cpu%u.%s", cpu, suffix);
	if (merge_input_read(dfd, g->dir, name, 256, &text, NULL) < 0 || ini_get(text, key, val, sizeof(val)) < 0 ||
	    util_parse_u64(val, UINT64_MAX, &n) < 0)
		return 0;
	return n;
}

static void cpu_close(struct guest_cpu *c)
{
	if (c->fd >= 0)
		close(c->fd);
	if (c->direct_fd >= 0)
		close(c->direct_fd);
	c->fd = c->direct_fd = -1;
}

static int open_cpu(struct merge_guest *g, int dfd, struct guest_cpu *c)
{
	char name[32];
	struct stat st;

	snprintf(name, sizeof(name), "cpu%u.spool", c->cpu);
	c->page = malloc(g->page_size);
	if (!c->page || posix_memalign((void **)&c->rbuf, 4096, MAX(GUEST_RBUF, g->page_size)) != 0)
		return -ENOMEM;
	c->fd = merge_input_open(dfd, g->dir, name, O_RDONLY);
	if (c->fd < 0 || fstat(c->fd, &st) < 0 || find_begin(g, c, (uint64_t)st.st_size) < 0)
		return -ENOENT;
	/* following: the same inode again with O_DIRECT (by its descriptor; -1 where unsupported) */
	c->direct_fd = g->follow ? util_reopen(c->fd, O_RDONLY | O_CLOEXEC | O_DIRECT) : -1;
	c->direct_fd = c->direct_fd < 0 ? -1 : c->direct_fd;
	c->data_end = c->data_off + ((uint64_t)st.st_size - c->data_off) / g->page_size * g->page_size;
	c->pos = c->data_off;
	/* --flight-recorder: the daemon freed the oldest blocks (a hole); the first whole page
	 * after it is the first one kept. ENXIO: nothing but hole up to the end. */
	if (c->data_end > c->data_off) {
		off_t at = lseek(c->fd, (off_t)c->data_off, SEEK_DATA);
		uint64_t data = at < 0 ? (errno == ENXIO ? c->data_end : c->data_off) : (uint64_t)at;

		if (data > c->data_off) {
			uint64_t skip = MIN((data - c->data_off + g->page_size - 1) / g->page_size * g->page_size,
					    c->data_end - c->data_off);
			uint64_t released;

			c->pos += skip;
			c->pages_dropped = skip / g->page_size;
			released = MIN((cpu_note(g, dfd, c->cpu, "released", "released") + g->page_size - 1) / g->page_size,
				       c->pages_dropped);
			/* of them, flush marker pages (cpuN.fr): not ring pages the guest sent */
			c->pages_dropped -= MIN(cpu_note(g, dfd, c->cpu, "fr", "flush_pages"), c->pages_dropped);
			released = MIN(released, c->pages_dropped);
			g->loss.released_pages += released;
			g->loss.fr_dropped_pages += c->pages_dropped - released;
		}
	}
	return 0;
}

int merge_guest_load(struct merge_guest *g, const char *dir, char *why, size_t whylen)
{
	char owhy[256];
	int dfd = util_open_input(AT_FDCWD, dir, O_RDONLY | O_DIRECTORY, owhy, sizeof(owhy)), r;

	g->dir = dir;
	if (dfd < 0) {
		snprintf(why, whylen, "the session dir %s", owhy);
		return dfd;
	}
	g->dfd = dfd, g->dfd_open = true; /* closed by merge_guest_free */
	if ((r = load_session_ini(g, dfd, why, whylen)) < 0 || (r = load_layout(g, dfd, why, whylen)) < 0)
		return r;
	if ((r = load_formats(g, dfd)) < 0) {
		snprintf(why, whylen, "no guest/events directory of event formats");
		return r;
	}
	merge_meta_tasks(g, dfd);
	merge_meta_notes(g, dfd);
	g->followed = g->follow;
	if (g->follow && merge_meta_clock_live(g, dfd) < 0)
		snprintf(g->clock_why, sizeof(g->clock_why), "no usable clock.samples yet");
	else if (!g->scan_only && !g->follow)
		merge_meta_clock(g, dfd); /* may fit clock.samples and write clock.ini */
	else
		g->window_hi = UINT64_MAX; /* times unconverted, unchecked */
	g->cpus = calloc(g->ncpus, sizeof(*g->cpus));
	if (!g->cpus)
		return -ENOMEM;
	for (uint32_t i = 0; i < g->ncpus; i++) {
		g->cpus[i].cpu = i;
		g->cpus[i].fd = g->cpus[i].direct_fd = -1;
		if (open_cpu(g, dfd, &g->cpus[i]) < 0) {
			g->loss.dropped_cpus++;
			g->cpus[i].data_end = g->cpus[i].pos = 0;
			cpu_close(&g->cpus[i]); /* dropped: not walked, not counted again */
		}
	}
	g->present = true;
	return 0;
}

int merge_guest_remap(struct merge_guest *g, const uint8_t *used)
{
	uint32_t next = 65535;

	for (size_t i = 0; i < g->n_events; i++) {
		struct guest_event *e = &g->events[i];
		char *text;
		size_t len;
		int r;

		while (next > 0 && (used[next / 8] & (1u << (next % 8))))
			next--;
		if (next == 0)
			return -ENOSPC;
		e->new_id = next--;
		if ((r = tep_format_set_id(e->text, e->text_len, &e->fmt, e->new_id, &text, &len)) < 0)
			return r;
		free(e->text);
		e->text = text;
		e->text_len = len;
	}
	return 0;
}

/* Whether c's spool has another whole page; following a session, a spool without its end
 * marker may have grown (else c->blocked: later, not at the end). */
static bool page_there(struct merge_guest *g, struct guest_cpu *c)
{
	struct stat st;

	if (c->pos + g->page_size <= c->data_end)
		return true;
	if (!g->followed)
		return false;
	if (g->follow && c->stat_gen == g->follow_gen) { /* looked since the last wait: no fstat per record */
		c->blocked = true;
		return false;
	}
	c->stat_gen = g->follow_gen;
	if (fstat(c->fd, &st) == 0 && (uint64_t)st.st_size > c->data_end)
		c->data_end = c->data_off + ((uint64_t)st.st_size - c->data_off) / g->page_size * g->page_size;
	if (c->pos + g->page_size <= c->data_end)
		return true;
	c->blocked = g->follow; /* after the end: the spool's end */
	return false;
}

/* The page at `at` of c's spool (below c->data_end), from c->rbuf: one pread brings up to
 * GUEST_RBUF of whole pages. A page per pread cost ×3 the CPU when the host was busy (the
 * copy out of a cold page cache, bench/RESULTS.md). NULL when it cannot be read. */
static const uint8_t *page_at(struct merge_guest *g, struct guest_cpu *c, uint64_t at)
{
	size_t want;
	ssize_t n;

	if (at >= c->rb_off && at + g->page_size <= c->rb_off + c->rb_len)
		return c->rbuf + (at - c->rb_off);
	want = (size_t)MIN((uint64_t)MAX(GUEST_RBUF, g->page_size), c->data_end - at) / g->page_size * g->page_size;
	c->rb_off = at, c->rb_len = 0;
	n = -1;
	if (want && c->direct_fd >= 0 && !(at % 4096) && !(want % 4096) &&
	    (n = pread(c->direct_fd, c->rbuf, want, (off_t)at)) < 0 && errno == EINVAL) {
		close(c->direct_fd);
		c->direct_fd = -1;
	}
	if (n < (ssize_t)g->page_size && want) /* no O_DIRECT, or it came short: buffered */
		n = pread(c->fd, c->rbuf, want, (off_t)at);
	if (n < (ssize_t)g->page_size)
		return NULL;
	c->rb_len = (size_t)n / g->page_size * g->page_size;
	return c->rbuf;
}

/* Loads the next ring page of c; false at the end marker or the end of the spool. */
static bool next_page(struct merge_guest *g, struct guest_cpu *c)
{
	while (!c->have_end && page_there(g, c)) {
		struct vt_marker m;
		struct vt_flush_marker f;
		uint64_t at = c->pos;
		const uint8_t *pg = page_at(g, c, at);
		int r;

		c->pos += g->page_size;
		if (!pg) {
			g->loss.damaged_read++;
			return false;
		}
		g->loss.bytes_read += g->page_size;
		r = vt_marker_decode(pg, g->page_size, &m);
		if (r == 1 && m.kind == VT_MARKER_END && m.session_id == g->session_id) {
			c->have_end = true;
			c->pages_sent = m.stats.pages_sent;
			c->end_overrun = m.stats.overrun;
			return false;
		}
		if (r == 1 && m.kind == VT_MARKER_FLUSH && m.session_id == g->session_id) {
			c->flush_markers++; /* a FLUSH's answer, not a ring page */
			/* Every event of this CPU up to its time is in the pages before it. */
			if (vt_marker_decode_flush(pg, g->page_size, &m, &f) == 0 && f.guest_time > c->bound_raw)
				c->bound_raw = f.guest_time;
			continue;
		}
		if (r != 0 || ftrace_page_begin(&c->it, &g->layout, pg, g->page_size) < 0) {
			if (r != 0)
				g->loss.damaged_marker++;
			else
				g->loss.damaged_header++;
			c->pages_bad++;
			continue;
		}
		c->pages_read++;
		if (c->it.missed) {
			g->loss.ring_missed_pages++;
			/* A count the kernel had no room to store: one event at least; the end marker's
			 * overrun settles the rest. */
			c->pending_lost = c->it.lost_known && c->it.lost ? c->it.lost : 1;
			if (c->it.lost_known)
				g->loss.ring_lost_events += c->it.lost;
			c->ring_lost_written += c->pending_lost;
			c->lost_ts = c->it.ts;
		}
		return true;
	}
	return false;
}

static bool dyn_ok(const struct tep_format_field *f, const struct ftrace_event *ev)
{
	uint32_t v, off, len;

	if (f->size != 4 || f->offset + 4 > ev->len)
		return false;
	memcpy(&v, ev->data + f->offset, 4);
	off = v & 0xffff;
	len = v >> 16;
	if (f->dyn == 2)
		off += f->offset + 4;
	return off <= ev->len && len <= ev->len - off;
}

/* The event's fields lie inside it; its id is known. Returns the event index or -1. */
static int event_check(struct merge_guest *g, const struct ftrace_event *ev)
{
	const struct guest_event *e;
	uint16_t id;
	int32_t idx;

	if (ev->len < 8) {
		g->loss.bad_events++;
		return -1;
	}
	memcpy(&id, ev->data, 2);
	idx = g->by_id[id];
	if (idx < 0) {
		g->loss.unknown_event_ids++;
		return -1;
	}
	if (ev->len > 65000) {
		g->loss.oversized_events++;
		return -1;
	}
	e = &g->events[idx];
	for (size_t i = 0; i < e->fmt.n_fields; i++) {
		const struct tep_format_field *f = &e->fmt.fields[i];

		if (f->offset + f->size > ev->len || (f->dyn && !dyn_ok(f, ev))) {
			g->loss.bad_events++;
			return -1;
		}
	}
	return idx;
}

/* again: converted before (its time outside the window counted then) */
static uint64_t guest_time(struct merge_guest *g, struct guest_cpu *c, uint64_t raw, bool again)
{
	uint64_t t = again ? merge_meta_bound_time(g, c->cpu, raw, false) : merge_meta_time(g, c->cpu, raw);

	c->conv_raw = raw;
	c->conv_prev = c->last_ts;
	c->conv_gen = g->clock_gen;

	if (t == 0)
		t = 1;
	if (t < c->last_ts)
		t = c->last_ts; /* a clock segment boundary never moves a CPU backwards */
	c->last_ts = t;
	return t;
}

static bool peek_event(struct merge_guest *g, struct guest_cpu *c)
{
	for (;;) {
		struct ftrace_event ev;
		int r;

		if (!c->in_page) {
			if (!next_page(g, c))
				return false;
			c->in_page = true;
			if (c->pending_lost) {
				c->lost_ts = guest_time(g, c, MAX(c->lost_ts, c->last_raw_ts), false);
				return true;
			}
		}
		r = ftrace_page_next(&c->it, &ev);
		if (r <= 0) {
			if (r < 0)
				g->loss.bad_events++; /* the rest of this page is unreadable */
			c->in_page = false;
			continue;
		}
		if (ev.ts < c->last_raw_ts) {
			g->loss.backwards_ts++;
			continue;
		}
		if (event_check(g, &ev) < 0)
			continue;
		c->last_raw_ts = ev.ts;
		c->head = ev;
		c->head_ts = guest_time(g, c, ev.ts, false);
		c->head_valid = true;
		return true;
	}
}

#define CONV_FIXED UINT64_MAX /* conv_gen of a time not converted from the guest's */

/* The head (or the loss before it) converted by an older fit: converted again, from the
 * CPU's time before it, as if the new fit had been there when it was read. */
static void guest_reconvert(struct merge_guest *g, struct guest_cpu *c)
{
	uint64_t t;

	c->last_ts = c->conv_prev;
	t = guest_time(g, c, c->conv_raw, true);
	if (c->pending_lost)
		c->lost_ts = t;
	else
		c->head_ts = t;
}

bool merge_guest_peek(struct merge_guest *g, struct guest_cpu *c)
{
	if (c->head_valid || c->pending_lost) {
		if (c->conv_gen != CONV_FIXED && c->conv_gen != g->clock_gen)
			guest_reconvert(g, c);
		return true;
	}
	if (c->fd < 0)
		return false;
	c->blocked = false;
	if (peek_event(g, c))
		return true;
	if (c->blocked)
		return false; /* following: more may come */
	if (!c->final_lost_done) {
		c->final_lost_done = true;
		/* A spool that opened but never reached its end marker (daemon killed, QEMU gone):
		 * what the guest had not sent yet is missing, by an amount nobody knows. */
		if (!c->have_end)
			g->loss.no_end_cpus++;
		if (c->have_end && c->pages_sent > c->pages_read + c->pages_bad + c->pages_dropped) {
			uint64_t missing = c->pages_sent - c->pages_read - c->pages_bad - c->pages_dropped;
			uint64_t per_page = c->pages_read ? MAX(c->events / c->pages_read, 1) : 1;

			g->loss.transport_missing_pages += missing;
			c->pending_lost = missing * per_page;
		}
		/* Events overwritten after the last page read, or counts no page had room for. */
		if (c->have_end && c->end_overrun > c->ring_lost_written) {
			g->loss.ring_lost_unstored += c->end_overrun - c->ring_lost_written;
			c->pending_lost += c->end_overrun - c->ring_lost_written;
		}
		if (c->pending_lost) {
			c->lost_ts = c->last_ts ? c->last_ts : 1;
			c->conv_gen = CONV_FIXED; /* at the last time written, whatever the fit */
			return true;
		}
	}
	return false;
}

void merge_guest_free(struct merge_guest *g)
{
	if (!g)
		return;
	for (uint32_t i = 0; g->cpus && i < g->ncpus; i++) {
		cpu_close(&g->cpus[i]);
		free(g->cpus[i].page);
		free(g->cpus[i].rbuf);
	}
	for (size_t i = 0; g->events && i < g->n_events; i++)
		free(g->events[i].text);
	free(g->cpus);
	free(g->events);
	free(g->by_id);
	merge_meta_tasks_free(g);
	free(g->header_page);
	free(g->header_event);
	clock_apply_free(&g->clock);
	clock_apply_free(&g->perf_clock);
	clock_kvm_free(g->kvm);
	free(g->kvm);
	g->kvm = NULL;
	merge_gsym_free(g);
	if (g->dfd_open)
		close(g->dfd);
	memset(g, 0, sizeof(*g));
}

uint64_t merge_guest_bound(struct merge_guest *g, struct guest_cpu *c)
{
	uint64_t t = c->bound_raw > c->last_raw_ts ? merge_meta_bound_time(g, c->cpu, c->bound_raw, false) : 0;

	return MAX(t, c->last_ts);
}
