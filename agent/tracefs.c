// SPDX-License-Identifier: GPL-2.0-only
/* tracefs: finding the mount, our own instance, events, clock, buffer size, ring stats. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/stat.h>

#include "agent.h"
#include "log.h"
#include "marker.h"
#include "util.h"

#define TRACEFS_SMALL_FILE (1u << 16)

static bool tracefs_is_mount(const char *dir)
{
	char p[4096];

	snprintf(p, sizeof(p), "%s/instances", dir);
	return access(p, F_OK) == 0;
}

/* --tracefs DIR, else /sys/kernel/tracing, else debugfs's tracing, else mount tracefs. */
static int tracefs_find(const char *opt, char **ret)
{
	static const char *const where[] = { "/sys/kernel/tracing", "/sys/kernel/debug/tracing" };

	if (opt) {
		if (!tracefs_is_mount(opt))
			return -ENOENT;
		*ret = strdup(opt);
		return *ret ? 0 : -ENOMEM;
	}
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < ARRAY_SIZE(where); i++) {
			if (tracefs_is_mount(where[i])) {
				*ret = strdup(where[i]);
				return *ret ? 0 : -ENOMEM;
			}
		}
		if (pass == 0 && mount("nodev", where[0], "tracefs", 0, NULL) < 0)
			log_debug("cannot mount tracefs on %s: %m", where[0]);
	}
	return -ENOENT;
}

static int tracefs_mkinstance(struct tracefs *t, const char *name)
{
	if (mkdir(t->inst_path, 0700) == 0)
		return 0;
	if (errno != EEXIST)
		return -errno;
	/* Left over by an agent that died: take it back from a clean state. */
	log_warn("ftrace instance %s exists already (an earlier agent died?): recreating it", name);
	if (rmdir(t->inst_path) < 0 || mkdir(t->inst_path, 0700) < 0)
		return -errno;
	return 0;
}

/* One agent per instance: a second one would remove the first's instance under its pumps
 * (and a kernel such as 6.18 then faults freeing the ring pages still in a pipe). The claim is
 * an abstract unix socket, gone with the process however it ends; no file system needed. */
static int tracefs_claim(struct tracefs *t, const char *instance)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int n = snprintf(sa.sun_path + 1, sizeof(sa.sun_path) - 1, "trace-agent:%s", instance);

	t->claim_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (t->claim_fd < 0)
		return -errno;
	if (bind(t->claim_fd, (struct sockaddr *)&sa, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n)) < 0) {
		int r = -errno;

		close(t->claim_fd);
		t->claim_fd = -1;
		return r;
	}
	return 0;
}

int tracefs_open(struct tracefs *t, const char *root_opt, const char *instance)
{
	int r;

	*t = (struct tracefs){ .inst_fd = -1, .claim_fd = -1 };
	r = tracefs_claim(t, instance);
	if (r == -EADDRINUSE) {
		log_error("another trace-agent runs with ftrace instance '%s': stop it first, or give this one "
			  "another --instance", instance);
		return r;
	}
	if (r < 0)
		log_warn("cannot claim ftrace instance '%s' (%s): not checking for another agent", instance,
			 strerror(-r));
	r = tracefs_find(root_opt, &t->root);
	if (r < 0) {
		log_error("no tracefs %s%s: mount it with 'mount -t tracefs nodev /sys/kernel/tracing' "
			  "(the guest kernel needs CONFIG_FTRACE)", root_opt ? "at " : "found",
			  root_opt ? root_opt : "");
		return r;
	}
	if (asprintf(&t->inst_path, "%s/instances/%s", t->root, instance) < 0) {
		t->inst_path = NULL;
		return -ENOMEM;
	}
	r = tracefs_mkinstance(t, instance);
	if (r < 0) {
		log_error("cannot create ftrace instance %s: %s", t->inst_path, strerror(-r));
		free(t->inst_path);
		t->inst_path = NULL;
		return r;
	}
	t->inst_fd = open(t->inst_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (t->inst_fd < 0) {
		r = -errno;
		log_error("cannot open ftrace instance %s: %m", t->inst_path);
		return r;
	}
	/* A new instance records at once: nothing is traced until a session starts. */
	r = tracefs_set_on(t, false);
	if (r < 0)
		log_warn("cannot turn tracing off in %s: %s", t->inst_path, strerror(-r));
	log_info("tracing in ftrace instance %s", t->inst_path);
	return 0;
}

void tracefs_close(struct tracefs *t)
{
	if (t->inst_fd >= 0) {
		(void)tracefs_set_on(t, false);
		(void)tracefs_write(t, "current_tracer", "nop");
		(void)tracefs_write(t, "events/enable", "0");
		close(t->inst_fd);
		t->inst_fd = -1;
	}
	if (t->inst_path && rmdir(t->inst_path) < 0)
		log_warn("cannot remove ftrace instance %s: %m (remove it with rmdir)", t->inst_path);
	free(t->inst_path);
	free(t->root);
	config_free(&t->applied);
	if (t->claim_fd >= 0)
		close(t->claim_fd);
	*t = (struct tracefs){ .inst_fd = -1, .claim_fd = -1 };
}

int tracefs_write(const struct tracefs *t, const char *rel, const char *val)
{
	_cleanup_close_ int fd = openat(t->inst_fd, rel, O_WRONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	return util_write_full(fd, val, strlen(val));
}

int tracefs_read(const struct tracefs *t, const char *rel, size_t max, char **ret)
{
	return util_read_file_at(t->inst_fd, rel, max, ret, NULL);
}

int tracefs_set_on(const struct tracefs *t, bool on)
{
	return tracefs_write(t, "tracing_on", on ? "1" : "0");
}

int tracefs_reset(const struct tracefs *t)
{
	_cleanup_close_ int fd = openat(t->inst_fd, "trace", O_WRONLY | O_TRUNC | O_CLOEXEC);

	return fd < 0 ? -errno : 0;
}

/* Leaves the agent's own threads out of the instance's events (set_event_notrace_pid, Linux
 * 5.8+), as trace-cmd leaves out its own: moving a page through virtio_console allocates, frees
 * and wakes in the mover's context, and those events would fill the ring being measured.
 * Markers (trace_marker) are not events and still go in. exclude = false clears the list
 * (START with --agent-events); STOP leaves it.
 *
 * A START adds its threads to the list rather than rewriting it: opening the file with O_TRUNC
 * unregisters the kernel's pid-filter probes and the write registers them again, each a
 * static-key patch of the guest's code on four scheduler tracepoints (QEMU 7.2's multi-threaded
 * TCG hangs on such patches now and then, a KVM guest pays IPI rounds). The kernel keeps an
 * exited thread's tid in the list (it drops exited tasks only with the event-fork option), so
 * the list is rewritten when a tid of an earlier session's thread now names another task (its
 * events would be left out) or when TRACEFS_LISTED_MAX tids have piled up. */
static bool tid_in(const int *v, size_t n, int tid)
{
	for (size_t i = 0; i < n; i++)
		if (v[i] == tid)
			return true;
	return false;
}

int tracefs_exclude_self(struct tracefs *t, bool exclude)
{
	int now[TRACEFS_LISTED_MAX];
	size_t n_now = 0, n_new = 0, len = 0;
	char list[4096] = "";
	bool rewrite = !exclude || t->listed_unknown;
	DIR *d;

	if (exclude) {
		d = opendir("/proc/self/task");
		if (!d)
			return -errno;
		for (struct dirent *de; (de = readdir(d)) && n_now < ARRAY_SIZE(now);) {
			int tid = atoi(de->d_name);

			if (tid > 0)
				now[n_now++] = tid;
		}
		closedir(d);
		for (size_t i = 0; i < t->n_listed && !rewrite; i++) {
			char path[32];

			snprintf(path, sizeof(path), "/proc/%d", t->listed[i]);
			rewrite = !tid_in(now, n_now, t->listed[i]) && access(path, F_OK) == 0;
			if (rewrite)
				log_info("set_event_notrace_pid rewritten: tid %d of an earlier session's thread now names another task",
					 t->listed[i]);
		}
		for (size_t i = 0; i < n_now; i++)
			n_new += !tid_in(t->listed, t->n_listed, now[i]);
		rewrite = rewrite || t->n_listed + n_new > ARRAY_SIZE(t->listed);
	}
	if (rewrite)
		t->n_listed = 0;
	for (size_t i = 0; i < n_now; i++) {
		int n;

		if (tid_in(t->listed, t->n_listed, now[i]))
			continue;
		n = snprintf(list + len, sizeof(list) - len, "%d ", now[i]);
		if (n < 0 || (size_t)n >= sizeof(list) - len)
			break; /* 4 KiB of tids: the rest of a 500-CPU agent is traced */
		len += (size_t)n;
		t->listed[t->n_listed++] = now[i];
	}
	if (!rewrite && !len)
		return 0; /* every thread is listed already */
	{
		_cleanup_close_ int fd = openat(t->inst_fd, "set_event_notrace_pid",
						O_WRONLY | (rewrite ? O_TRUNC : 0) | O_CLOEXEC);
		int r;

		if (fd < 0)
			return -errno;
		r = len ? util_write_full(fd, list, len) : 0;
		t->listed_unknown = r < 0;
		return r;
	}
}

int tracefs_subbuf_set(const struct tracefs *t, uint32_t kb)
{
	char v[16];

	snprintf(v, sizeof(v), "%u", kb);
	return tracefs_write(t, "buffer_subbuf_size_kb", v); /* -ENOENT: a kernel before 6.8 */
}

uint32_t tracefs_page_size(const struct tracefs *t)
{
	_cleanup_free_ char *s = NULL;
	uint64_t kb;

	if (tracefs_read(t, "buffer_subbuf_size_kb", 64, &s) == 0 &&
	    util_parse_u64(strtok(s, "\n"), UINT32_MAX / 1024, &kb) == 0 && kb >= 4) /* the host bounds it */
		return (uint32_t)kb * 1024;
	return (uint32_t)sysconf(_SC_PAGESIZE);
}

/* Finds clock name in trace_clock's list; *ret_current gets the bracketed one. */
static int tracefs_clock_scan(const struct tracefs *t, const char *name, char **ret_current,
			      char **ret_list)
{
	_cleanup_free_ char *s = NULL;
	char *tok, *save = NULL;
	int r, found = -ENOENT;

	r = tracefs_read(t, "trace_clock", TRACEFS_SMALL_FILE, &s);
	if (r < 0)
		return r;
	if (ret_list && !(*ret_list = strndup(s, strcspn(s, "\n"))))
		return -ENOMEM;
	for (tok = strtok_r(s, " \n", &save); tok; tok = strtok_r(NULL, " \n", &save)) {
		bool cur = tok[0] == '[';

		if (cur) {
			tok++;
			tok[strcspn(tok, "]")] = '\0';
			if (ret_current && !(*ret_current = strdup(tok)))
				return -ENOMEM;
		}
		if (name && !strcmp(tok, name))
			found = 0;
	}
	return name ? found : 0;
}

static int tracefs_event_exists(const struct tracefs *t, const struct event_spec *e)
{
	char p[2 * EVENTS_NAME_MAX + 16];

	if (e->name[0])
		snprintf(p, sizeof(p), "events/%s/%s/enable", e->sys, e->name);
	else
		snprintf(p, sizeof(p), "events/%s/enable", e->sys);
	return faccessat(t->inst_fd, p, F_OK, 0) == 0 ? 0 : -ENOENT;
}

static int tracefs_check_events(const struct tracefs *t, const char *list, char **ret_msg)
{
	_cleanup_free_ struct event_spec *ev = NULL;
	_cleanup_free_ char *bad = NULL;
	size_t n;
	int r = events_parse(list, &ev, &n, &bad);

	if (r == -EINVAL) {
		if (asprintf(ret_msg, "bad event '%s': use sys:event, sys:* or sys, names of "
			     "[A-Za-z0-9_], comma separated", bad ? bad : "") < 0)
			*ret_msg = NULL;
		return r;
	}
	if (r < 0)
		return r;
	for (size_t i = 0; i < n; i++) {
		if (tracefs_event_exists(t, &ev[i]) == 0)
			continue;
		if (asprintf(ret_msg, "unknown event '%s:%s' (the guest's available_events lists "
			     "what it has)", ev[i].sys, ev[i].name[0] ? ev[i].name : "*") < 0)
			*ret_msg = NULL;
		return -ENOENT;
	}
	return 0;
}

/* Whether name is one word of the instance's available_tracers. */
static int tracefs_check_tracer(const struct tracefs *t, const char *name, char **ret_msg)
{
	_cleanup_free_ char *list = NULL;
	int r = tracefs_read(t, "available_tracers", TRACEFS_SMALL_FILE, &list);
	char *tok, *save = NULL;

	if (r == 0 && util_safe_name(name, strlen(name)))
		for (tok = strtok_r(list, " \n", &save); tok; tok = strtok_r(NULL, " \n", &save))
			if (!strcmp(tok, name))
				return 0;
	if (asprintf(ret_msg, "unknown tracer '%s' (the guest's ftrace instance offers: %s)", name,
		     list && r == 0 ? list : "none: no available_tracers") < 0)
		*ret_msg = NULL;
	else
		(*ret_msg)[strcspn(*ret_msg, "\n")] = '\0';
	return -ENOENT;
}

/* Function globs: words of [A-Za-z0-9_.*?] separated by spaces or commas, no commands. */
static int tracefs_check_filter(const char *f, char **ret_msg)
{
	static const char ok[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.*? ,";

	if (strspn(f, ok) == strlen(f) && strlen(f) < VT_PROTO_MAX_STR)
		return 0;
	if (asprintf(ret_msg, "bad ftrace filter '%s': use function names or globs (a-z, 0-9, _ . * ?) "
		     "separated by spaces or commas", f) < 0)
		*ret_msg = NULL;
	return -EINVAL;
}

int tracefs_config_check(const struct tracefs *t, const struct agent_config *c, char **ret_msg)
{
	_cleanup_free_ char *list = NULL;
	int r;

	*ret_msg = NULL;
	if (c->events) {
		r = tracefs_check_events(t, c->events, ret_msg);
		if (r < 0)
			return r;
	}
	if (c->clock) {
		r = tracefs_clock_scan(t, c->clock, NULL, &list);
		if (r < 0) {
			if (asprintf(ret_msg, "unknown trace clock '%s' (the guest has: %s)", c->clock,
				     list ? list : "?") < 0)
				*ret_msg = NULL;
			return r;
		}
	}
	if (c->buffer_kb && (c->buffer_kb < AGENT_BUFFER_KB_MIN || c->buffer_kb > AGENT_BUFFER_KB_MAX)) {
		if (asprintf(ret_msg, "buffer size %u KiB per CPU is out of range (%u..%u)", c->buffer_kb,
			     AGENT_BUFFER_KB_MIN, AGENT_BUFFER_KB_MAX) < 0)
			*ret_msg = NULL;
		return -ERANGE;
	}
	if (c->tracer) {
		r = tracefs_check_tracer(t, c->tracer, ret_msg);
		if (r < 0)
			return r;
	}
	return c->ftrace_filter ? tracefs_check_filter(c->ftrace_filter, ret_msg) : 0;
}

/* The events of a START being enabled, counted for its progress. */
struct tracefs_enabling {
	const struct tracefs *t;
	const struct tracefs_progress *progress;
	uint32_t done, total;
};

static int tracefs_count_one(const char *sys, const char *ev, void *data)
{
	(void)sys, (void)ev;
	((struct tracefs_enabling *)data)->total++;
	return 0;
}

static int tracefs_enable_one(const char *sys, const char *ev, void *data)
{
	struct tracefs_enabling *e = data;
	char p[2 * EVENTS_NAME_MAX + 16];
	int r;

	snprintf(p, sizeof(p), "events/%s/%s/enable", sys, ev);
	r = tracefs_write(e->t, p, "1");
	if (r == 0 && e->progress) {
		e->done++;
		e->progress->fn(e->progress->data, VT_STEP_EVENTS, e->done, MAX(e->total, e->done));
	}
	return r;
}

/* Enables the events of list, each one a patch of the guest's code: reported one by one. */
static int tracefs_enable_events(const struct tracefs *t, const char *list, const struct tracefs_progress *progress)
{
	struct tracefs_enabling e = { .t = t, .progress = progress };
	int r = tracefs_write(t, "events/enable", "0");

	if (r == 0 && progress) {
		(void)tracefs_events_foreach(t, list, tracefs_count_one, &e);
		progress->fn(progress->data, VT_STEP_EVENTS, 0, e.total);
	}
	return r == 0 ? tracefs_events_foreach(t, list, tracefs_enable_one, &e) : r;
}

/* Whether field differs between the applied config and c (a NULL in c keeps it). */
static bool tracefs_str_changed(const char *applied, const char *want)
{
	return want && (!applied || strcmp(applied, want) != 0);
}

/* Equal strings, NULL meaning the default (for tracer and filter, where NULL is a value). */
static bool tracefs_same(const char *a, const char *b)
{
	return (!a && !b) || (a && b && !strcmp(a, b));
}

/* One glob with the space that ends it: the kernel parses (and refuses) a word only once it
 * is ended; an unended last word is parsed at close(), whose error nobody sees. */
static int tracefs_filter_glob(int fd, const char *glob)
{
	char w[VT_PROTO_MAX_STR + 2];

	snprintf(w, sizeof(w), "%s ", glob);
	return util_write_full(fd, w, strlen(w));
}

/* Replaces set_ftrace_filter by the globs of f (NULL or "": every function). One write per
 * glob: the kernel refuses a glob that matches nothing with EINVAL. */
static int tracefs_filter_write(const struct tracefs *t, const char *f)
{
	_cleanup_close_ int fd = openat(t->inst_fd, "set_ftrace_filter", O_WRONLY | O_TRUNC | O_CLOEXEC);
	_cleanup_free_ char *copy = f ? strdup(f) : NULL;
	char *tok, *save = NULL;
	int r = 0;

	if (fd < 0 && !f)
		return 0; /* no filter wanted: a kernel without (or refusing) filters has none of ours */
	if (fd < 0)
		return -errno;
	if (f && !copy)
		return -ENOMEM;
	for (tok = copy ? strtok_r(copy, " ,", &save) : NULL; r == 0 && tok; tok = strtok_r(NULL, " ,", &save))
		r = tracefs_filter_glob(fd, tok);
	return r;
}

/* Writes only what differs from the last config applied to the instance: re-enabling the
 * same events patches every tracepoint again, which costs ~0.1 s per session under TCG. */
static int tracefs_apply_diff(const struct tracefs *t, const struct agent_config *old,
			      const struct agent_config *c, const struct tracefs_progress *progress,
			      const char **ret_file)
{
	char kb[32];
	int r = 0;

	*ret_file = "events";
	if (tracefs_str_changed(old->events, c->events))
		r = tracefs_enable_events(t, c->events, progress);
	if (r == 0 && progress)
		progress->fn(progress->data, VT_STEP_SETTINGS, 0, 0);
	if (r == 0 && tracefs_str_changed(old->clock, c->clock) && (*ret_file = "trace_clock"))
		r = tracefs_write(t, "trace_clock", c->clock);
	if (r == 0 && c->buffer_kb && c->buffer_kb != old->buffer_kb && (*ret_file = "buffer_size_kb")) {
		snprintf(kb, sizeof(kb), "%u", c->buffer_kb);
		r = tracefs_write(t, "buffer_size_kb", kb);
	}
	if (r == 0 && !tracefs_same(old->ftrace_filter, c->ftrace_filter) &&
	    (*ret_file = "set_ftrace_filter"))
		r = tracefs_filter_write(t, c->ftrace_filter);
	/* Before any trace_pipe_raw is open: the kernel refuses a tracer change while one is. */
	if (r == 0 && !tracefs_same(old->tracer, c->tracer) && (*ret_file = "current_tracer"))
		r = tracefs_write(t, "current_tracer", c->tracer ? c->tracer : "nop");
	return r;
}

void tracefs_tracer_reset(struct tracefs *t)
{
	if (!t->applied.tracer)
		return;
	if (tracefs_write(t, "current_tracer", "nop") < 0)
		log_warn("cannot set current_tracer of %s back to nop: %m", t->inst_path);
	free(t->applied.tracer);
	t->applied.tracer = NULL;
}

int tracefs_filter_try(struct tracefs *t, const char *filter, char **ret_msg)
{
	char *copy = NULL;
	int r;

	if (tracefs_same(t->applied.ftrace_filter, filter))
		return 0;
	if (filter && !(copy = strdup(filter)))
		return -ENOMEM;
	r = tracefs_filter_write(t, filter);
	if (r < 0) {
		free(copy);
		if (tracefs_filter_write(t, t->applied.ftrace_filter) < 0) {
			free(t->applied.ftrace_filter); /* unknown now: written again at START */
			t->applied.ftrace_filter = strdup("?");
		}
		if (asprintf(ret_msg, r == -EINVAL ? "ftrace filter '%s' matches no function of the guest "
			     "(its available_filter_functions lists them)" :
			     "cannot set ftrace filter '%s' in %s: %s%s", filter, t->inst_path, strerror(-r),
			     r == -EPERM ? " (kernel lockdown?)" : "") < 0)
			*ret_msg = NULL;
		return r;
	}
	free(t->applied.ftrace_filter);
	t->applied.ftrace_filter = copy;
	return 0;
}

/* After a failed write the instance is in an unknown state: no tracer, and everything is
 * written again next time (the filter's "?" never equals a config). */
static void tracefs_applied_unknown(struct tracefs *t)
{
	(void)tracefs_write(t, "current_tracer", "nop");
	config_free(&t->applied);
	t->applied.ftrace_filter = strdup("?");
}

int tracefs_config_apply(struct tracefs *t, const struct agent_config *c, const struct tracefs_progress *progress,
			 char **ret_msg)
{
	const char *file = "config";
	int r = tracefs_config_check(t, c, ret_msg);

	if (r < 0)
		return r;
	r = tracefs_apply_diff(t, &t->applied, c, progress, &file);
	if (r == 0)
		r = config_set(&t->applied, &(struct agent_config){
			.events = c->events, .clock = c->clock, .tracer = c->tracer,
			.ftrace_filter = c->ftrace_filter,
			.buffer_kb = c->buffer_kb ? c->buffer_kb : t->applied.buffer_kb });
	if (r < 0) {
		tracefs_applied_unknown(t);
		if (asprintf(ret_msg, "cannot apply the config to %s (%s): %s%s", t->inst_path, file,
			     strerror(-r), r == -EPERM ? " (kernel lockdown?)" : "") < 0)
			*ret_msg = NULL;
	}
	return r;
}

static int tracefs_foreach_sys(const struct tracefs *t, const char *sys,
			       int (*fn)(const char *, const char *, void *), void *data)
{
	char p[EVENTS_NAME_MAX + 16];
	struct dirent *de;
	DIR *d;
	int fd, r = 0;

	snprintf(p, sizeof(p), "events/%s", sys);
	fd = openat(t->inst_fd, p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -errno;
	}
	while (r == 0 && (de = readdir(d))) {
		if (de->d_type != DT_DIR || de->d_name[0] == '.' ||
		    !util_safe_name(de->d_name, strlen(de->d_name)))
			continue;
		r = fn(sys, de->d_name, data);
	}
	closedir(d);
	return r;
}

int tracefs_events_foreach(const struct tracefs *t, const char *list,
			   int (*fn)(const char *sys, const char *ev, void *data), void *data)
{
	_cleanup_free_ struct event_spec *ev = NULL;
	size_t n;
	int r = events_parse(list, &ev, &n, NULL);

	for (size_t i = 0; r == 0 && i < n; i++)
		r = ev[i].name[0] ? fn(ev[i].sys, ev[i].name, data)
				  : tracefs_foreach_sys(t, ev[i].sys, fn, data);
	return r;
}

int tracefs_cpu_stats(const struct tracefs *t, unsigned cpu, struct vt_cpu_stats *s)
{
	static const struct {
		const char *key;
		size_t off;
	} keys[] = {
		{ "entries", offsetof(struct vt_cpu_stats, entries) },
		{ "overrun", offsetof(struct vt_cpu_stats, overrun) },
		{ "commit overrun", offsetof(struct vt_cpu_stats, commit_overrun) },
		{ "bytes", offsetof(struct vt_cpu_stats, bytes) },
		{ "dropped events", offsetof(struct vt_cpu_stats, dropped_events) },
		{ "read events", offsetof(struct vt_cpu_stats, read_events) },
	};
	_cleanup_free_ char *buf = NULL;
	char p[64], *line, *save = NULL;
	int r;

	snprintf(p, sizeof(p), "per_cpu/cpu%u/stats", cpu);
	r = tracefs_read(t, p, TRACEFS_SMALL_FILE, &buf);
	if (r < 0)
		return r;
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *colon = strchr(line, ':');
		uint64_t v;

		if (!colon)
			continue;
		*colon = '\0';
		for (size_t i = 0; i < ARRAY_SIZE(keys); i++)
			if (!strcmp(line, keys[i].key) &&
			    util_parse_u64(colon + 1 + strspn(colon + 1, " "), UINT64_MAX, &v) == 0)
				memcpy((char *)s + keys[i].off, &v, sizeof(v));
	}
	return 0;
}
