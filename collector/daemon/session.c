// SPDX-License-Identifier: GPL-2.0-only
/* The session dir (<vm dir>/sessions/<UTC timestamp>/) and its session.ini, always
 * rewritten whole (tmp + fsync + rename) so a crash never leaves it half written. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "collector.h"
#include "session.h"
#include "util.h"

#define INI_MAX (256u << 10)
#define RESERVE_SIZE (256u << 10)

/* A file of zeros kept until the disk fills up: deleting it leaves room to finalize. */
static void session_make_reserve(const char *dir)
{
	char path[PATH_MAX + 16], zero[4096] = { 0 };
	_cleanup_close_ int fd = -1;

	snprintf(path, sizeof(path), "%s/.reserve", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	for (unsigned i = 0; fd >= 0 && i < RESERVE_SIZE / sizeof(zero); i++)
		if (util_write_full(fd, zero, sizeof(zero)) < 0)
			break;
}

void session_release_reserve(const struct session_info *s)
{
	char path[PATH_MAX + 16];

	snprintf(path, sizeof(path), "%s/.reserve", s->dir);
	unlink(path);
}

int session_create(const char *vm_dir, struct session_info *s)
{
	char parent[PATH_MAX], stamp[32];
	time_t now = time(NULL);
	struct tm tm;
	int r;

	gmtime_r(&now, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", &tm);
	if ((size_t)snprintf(parent, sizeof(parent), "%s/sessions", vm_dir) >= sizeof(parent))
		return -ENAMETOOLONG;
	r = util_mkdir_p(parent, 0700);
	if (r < 0)
		return r;
	for (unsigned i = 0; i < 100; i++) {
		int n = i == 0 ? snprintf(s->dir, sizeof(s->dir), "%s/%s", parent, stamp)
			       : snprintf(s->dir, sizeof(s->dir), "%s/%s-%u", parent, stamp, i);

		if ((size_t)n >= sizeof(s->dir))
			return -ENAMETOOLONG;
		if (mkdir(s->dir, 0700) == 0) {
			session_make_reserve(s->dir);
			return 0;
		}
		if (errno != EEXIST)
			return -errno;
	}
	return -EEXIST;
}

static void ini_u64(FILE *f, const char *k, uint64_t v) { fprintf(f, "%s=%llu\n", k, (unsigned long long)v); }
static void ini_str(FILE *f, const char *k, const char *v) { fprintf(f, "%s=%s\n", k, v); }

static int ini_replace(const char *dir, const char *text, size_t len)
{
	return util_replace_file(dir, "session.ini", text, len);
}

/* ARGS as one line a shell takes back: each one in single quotes. */
static void ini_argv(FILE *f, const char *k, char **argv, unsigned argc)
{
	fprintf(f, "%s=", k);
	for (unsigned i = 0; i < argc; i++) {
		fputs(i ? " '" : "'", f);
		for (const char *p = argv[i]; *p; p++) {
			if (*p == '\'')
				fputs("'\\''", f);
			else
				fputc(*p == '\n' ? ' ' : *p, f);
		}
		fputc('\'', f);
	}
	fputc('\n', f);
}

/* The whole configuration the session ran with (trace-collector start's options). */
static void session_write_opts(FILE *f, const struct start_opts *o)
{
	ini_str(f, "opt_events", o->events);
	ini_str(f, "opt_tracer", o->tracer);
	ini_str(f, "opt_ftrace_filter", o->ftrace_filter);
	ini_str(f, "opt_clock", o->clock);
	ini_u64(f, "opt_buffer_kb", o->buffer_kb);
	ini_u64(f, "opt_flush_interval_ms", o->flush_ms);
	ini_u64(f, "opt_agent_events", o->agent_events);
	ini_u64(f, "opt_probe_interval_ms", o->probe_interval_ms);
	ini_u64(f, "opt_holdout_probes", o->holdout);
	ini_u64(f, "opt_allow_partial", o->allow_partial);
	ini_u64(f, "opt_max_size", o->max_size); /* bytes; 0: no limit */
	ini_str(f, "opt_max_size_from", o->max_size_given ? "option" : "default (a quarter of the file system, at most 16 GiB)");
	ini_u64(f, "opt_min_free", o->min_free);
	ini_str(f, "opt_min_free_from", o->min_free_given ? "option" : "default (5% of the file system, at most 1 GiB)");
	ini_u64(f, "opt_flight_recorder", o->flight_recorder);
	ini_u64(f, "opt_live_merge", o->live_merge);
	ini_u64(f, "opt_keep_spools", o->keep_spools);
	ini_u64(f, "opt_compress", (uint64_t)o->zstd_level); /* zstd level, 0: plain (merge_zstd_level) */
	ini_u64(f, "opt_trust_guest_binaries", o->perf.trust_binaries); /* the merge reads it */
	ini_u64(f, "opt_timeout_s", o->timeout_s);
	ini_u64(f, "opt_qemu_pid", (uint64_t)o->qemu_pid);
	ini_str(f, "opt_host", o->no_host ? "none" : o->host_data[0] ? "file" : o->host_perf_argc ? "perf-args" : "events");
	ini_str(f, "opt_host_events", o->host_events ? o->host_events : "");
	ini_str(f, "opt_host_data", o->host_data);
	ini_argv(f, "opt_host_perf_args", o->host_perf_argv, o->host_perf_argc);
	ini_str(f, "opt_kvm_debugfs", o->kvm_debugfs);
	ini_str(f, "opt_guest_perf", o->perf.events ? o->perf.events : "");
	ini_u64(f, "opt_guest_freq", o->perf.freq);
	ini_u64(f, "opt_guest_perf_kb", o->perf.ring_kb);
}

int session_write(const struct session_info *s)
{
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	int r;

	if (!f)
		return -ENOMEM;
	ini_str(f, "vm", s->vm);
	ini_u64(f, "session_id", s->session_id);
	ini_u64(f, "ncpus", s->ncpus);
	ini_u64(f, "page_size", s->page_size);
	/* the guest's machine is the first QEMU's pid; each migration names the next one */
	ini_u64(f, "qemu_pid", (uint64_t)(s->nmig ? s->mig[0].from : s->qemu_pid));
	if (s->nmig) {
		ini_u64(f, "qemu_pid_now", (uint64_t)s->qemu_pid);
		ini_u64(f, "migrations", s->nmig);
		for (unsigned i = 0; i < s->nmig; i++)
			fprintf(f, "migration_%u=%llu %d %d\n", i, (unsigned long long)s->mig[i].mono_ns,
				(int)s->mig[i].from, (int)s->mig[i].to);
	}
	ini_str(f, "guest_clock", s->guest_clock);
	ini_str(f, "guest_clock_res", s->guest_clock_res);
	ini_str(f, "clock_method", s->clock_method);
	ini_u64(f, "clock_samples", s->clock_samples);
	ini_u64(f, "clock_error_bound_ns", s->clock_error_bound_ns);
	ini_u64(f, "clock_phc_probes", s->clock_phc_probes);
	ini_str(f, "events", s->events);
	/* guest perf events (perf-cpuN.spool), in the agent's order; "" = none; the merge reads it */
	ini_str(f, "guest_perf", s->opts && s->opts->perf.events ? s->opts->perf.events : "");
	ini_u64(f, "guest_perf_freq", s->opts ? s->opts->perf.freq : 0);
	ini_u64(f, "started_realtime_ns", s->started_realtime_ns);
	ini_u64(f, "started_mono_ns", s->started_mono_ns);
	ini_u64(f, "stopped_mono_ns", s->stopped_mono_ns);
	ini_str(f, "host_data", s->host_data);
	/* KVM's mediated PMU on the host (its parameter; "" none): host hardware events got :H, and
	 * every VM of this host then has a mediated vPMU or none (hostevents.c) */
	ini_str(f, "host_mediated_pmu", s->host_mediated_pmu);
	ini_str(f, "state", s->state);
	ini_str(f, "guest_release", s->guest_release);
	ini_str(f, "guest_arch", s->guest_arch);
	ini_str(f, "stop_reason", s->stop_reason);
	ini_str(f, "output", s->output);
	ini_str(f, "missing_cpus", s->missing_cpus);
	if (s->start_error[0])
		ini_str(f, "start_error", s->start_error);
	if (s->opts && s->opts->group) { /* one of several VMs (collector/vmgroup.c); the leader's group_leader is "" */
		ini_str(f, "group", s->opts->group);
		ini_str(f, "group_leader", s->opts->group_leader);
	}
	if (s->opts)
		session_write_opts(f, s->opts);
	if (fclose(f) != 0)
		return -ENOMEM;
	r = ini_replace(s->dir, text, len);
	return r;
}

int session_migrated(struct session_info *s, uint64_t mono_ns, pid_t to)
{
	if (s->nmig >= SESSION_MAX_MIGRATIONS)
		return -ENOSPC;
	s->mig[s->nmig++] = (struct session_migration){ mono_ns, s->qemu_pid, to };
	s->qemu_pid = to;
	return session_write(s);
}

int session_set_state(struct session_info *s, const char *state)
{
	snprintf(s->state, sizeof(s->state), "%s", state);
	return session_write(s);
}

static int ini_load(const char *dir, char **ret)
{
	char path[PATH_MAX + 16];

	char why[200];

	/* a regular file only: a FIFO planted as session.ini does not hold the command */
	snprintf(path, sizeof(path), "%s/session.ini", dir);
	return util_read_input_at(AT_FDCWD, path, INI_MAX, ret, NULL, why, sizeof(why));
}

/* Finds "key=" at a line start; returns the value start or NULL. */
static char *ini_find(char *text, const char *key, char **ret_line)
{
	size_t kl = strlen(key);

	for (char *line = text; line && *line; line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
		if (!strncmp(line, key, kl) && line[kl] == '=') {
			*ret_line = line;
			return line + kl + 1;
		}
	}
	return NULL;
}

int session_ini_get(const char *dir, const char *key, char *buf, size_t size)
{
	_cleanup_free_ char *text = NULL;
	char *v, *line;
	size_t n;
	int r = ini_load(dir, &text);

	if (r < 0)
		return r;
	v = ini_find(text, key, &line);
	if (!v)
		return -ENOENT;
	n = strcspn(v, "\n");
	if (n >= size)
		return -ENAMETOOLONG;
	memcpy(buf, v, n);
	buf[n] = '\0';
	return 0;
}

int session_ini_set(const char *dir, const char *key, const char *value)
{
	_cleanup_free_ char *text = NULL, *out = NULL;
	size_t len = 0;
	char *v, *line;
	FILE *f;
	int r = ini_load(dir, &text);

	if (r < 0)
		return r;
	f = open_memstream(&out, &len);
	if (!f)
		return -ENOMEM;
	v = ini_find(text, key, &line);
	if (v) {
		char *end = v + strcspn(v, "\n");

		fprintf(f, "%.*s%s=%s%s", (int)(line - text), text, key, value, *end ? end : "\n");
	} else {
		size_t tl = strlen(text); /* a NUL ends the text for readers too */

		fprintf(f, "%s%s%s=%s\n", text, tl && text[tl - 1] != '\n' ? "\n" : "", key, value);
	}
	if (fclose(f) != 0)
		return -ENOMEM;
	return ini_replace(dir, out, len);
}
