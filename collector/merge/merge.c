// SPDX-License-Identifier: GPL-2.0-only
/* The merge: host records and per-vCPU guest events, k-way merged by time into one perf.data
 * (docs/perf-data.md). Memory stays bounded: the host is buffered one perf round at a time,
 * the guest one page per vCPU. This file loads the session, opens the output, runs the offline
 * loop over the sources (source.c; following a session while it traces: follow.c), and
 * finishes with the summary and merge.ini. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "gbin.h"
#include "merge.h"
#include "collector.h"
#include "follow.h"
#include "out.h"
#include "perf_writer.h"
#include "source.h"
#include "tdata.h"
#include "util.h"

/* The host recording, opened as an input (util_open_input: a regular file, never a FIFO): 1 with
 * *ret_fd and its name in buf, 0 when there is none, or -errno with why (after the name in buf).
 * --host-data is the user's path; session.ini's host_data names a file in the session dir, or an
 * absolute path only in a dir this merge trusts (vm.c: input only otherwise, ignored and said);
 * a name with '..' or a link is refused. */
static int host_open(const struct merge_options *o, const struct merge_vm *vm, char *buf, size_t len, int *ret_fd,
		     char *why, size_t whylen)
{
	const struct merge_guest *g = &vm->guest;
	const char *name = g->host_data[0] && g->host_data[0] != '/' ? g->host_data : "host.data";
	bool named = g->host_data[0] && g->host_data[0] != '/';
	_cleanup_close_ int dfd = -1;
	char dump[PATH_MAX];
	int fd;

	if (o->host_data || (g->host_data[0] == '/' && !vm->input_only && !o->snapshot)) {
		snprintf(buf, len, "%s", o->host_data ? o->host_data : g->host_data);
		fd = util_open_input(AT_FDCWD, buf, O_RDONLY, why, whylen);
		return fd < 0 ? fd : (*ret_fd = fd, 1);
	}
	if (o->snapshot)
		return 0; /* the session's host.data is being recorded: only a dump (host_data) */
	if (snprintf(buf, len, "%s/%s", o->session_dir, name) >= (int)len) {
		snprintf(why, whylen, "is too long a path");
		return -ENAMETOOLONG;
	}
	if ((dfd = merge_input_dir(g, o->session_dir)) < 0) {
		snprintf(why, whylen, "cannot be reached: %s", strerror(-dfd));
		return dfd;
	}
	fd = util_open_input(dfd, name, O_RDONLY, why, whylen);
	/* --flight-recorder, the daemon killed before it renamed perf's last ring dump */
	if (fd == -ENOENT && !strcmp(name, "host.data") && merge_newest_host_dump(o->session_dir, dump, sizeof(dump)) == 0) {
		log_info("%s: no %s: merging host perf's last ring dump %s", o->session_dir, buf, dump);
		snprintf(buf, len, "%s", dump);
		fd = util_open_input(dfd, strrchr(dump, '/') + 1, O_RDONLY, why, whylen);
	}
	if (fd == -ENOENT && !named)
		return 0; /* no host recording: the guest alone */
	return fd < 0 ? fd : (*ret_fd = fd, 1); /* named in session.ini: an error if missing */
}

static int merge_loop(struct merge_ctx *m)
{
	for (;;) {
		struct host_rec *q = NULL;
		uint64_t gts;
		struct merge_source *g;
		int r = merge_source_host_next(m, &q);

		if (r < 0)
			return r;
		g = merge_source_min(m, &gts);
		if (q && (!g || q->ts <= gts)) { /* the host first on ties */
			merge_host_take(&m->host);
			r = merge_source_host_emit(m, q, false);
			merge_host_release(&m->host, q);
		} else if (g) {
			/* perf must see the guest ID_INDEX (and so perf_guest) before any guest
			 * record: samples delivered before it are dropped as host-side noise. */
			if (!m->index_done && (r = merge_out_guest_index(m)) < 0)
				return r;
			r = g->kind->emit(m, g);
		} else {
			return 0;
		}
		if (r < 0)
			return r;
	}
}

static void summary_clock(const struct merge_guest *g)
{
	if (g->clock_aligned)
		printf("  clock:  aligned (%s, %zu segments, %" PRIu64 " samples, error bound %" PRIu64 " ns)%s%s\n",
		       g->clock.method, g->clock.n, g->clock.samples, g->clock.error_bound_ns,
		       g->clock_recovered ? ": recovered, " : "", g->clock_recovered ? g->clock_why : "");
	else if (g->present)
		printf("  clock:  UNALIGNED (%s: guest times used as host times)\n",
		       g->clock_why[0] ? g->clock_why : "no usable clock.ini");
	if (g->window_hi != UINT64_MAX || g->window_lo)
		printf("  window: guest times kept in [%" PRIu64 ", %" PRIu64 "] (session start/stop ± error bound); "
		       "%" PRIu64 " outside, clamped\n", g->window_lo, g->window_hi, g->loss.outside_window);
	else if (g->clock_aligned)
		printf("  window: not checked (session.ini has no started_mono_ns)\n");
}

static void summary_vcpu(const struct merge_ctx *m, const struct merge_vm *vm)
{
	const struct merge_vcpu *v = &vm->vcpu;

	if (!vm->guest.present)
		return;
	if (m->as_host)
		printf("  as host: the guest's events as a host's (their own names, vCPU n as CPU n, no guest machine: "
		       "perf sched and perf timechart read them); no host recording, guest perf or exit samples\n");
	else if (v->why[0])
		printf("  vcpu:   FALLBACK: guest sample cpu = vCPU number, because %s\n", v->why);
	else
		printf("  vcpu:   guest sample cpu = host CPU of QEMU's \"CPU n/KVM\" (or /TCG) thread (%u/%u vCPU threads found, "
		       "%" PRIu64 " host switches followed)\n", v->named, v->n, v->switches);
	if (v->fallback_samples && !v->why[0])
		printf("          %" PRIu64 " guest records fell back to the vCPU number (thread never seen switching)\n",
		       v->fallback_samples);
}

static void summary_build_id(const struct merge_guest *g)
{
	char hex[2 * ELF_NOTES_BUILD_ID_MAX + 1] = "";

	if (!g->present)
		return;
	for (size_t i = 0; i < g->build_id_len; i++)
		snprintf(hex + 2 * i, 3, "%02x", g->build_id[i]);
	if (g->build_id_len)
		printf("  kernel: guest build-id %s ([guest.kernel.kallsyms.%" PRIu64 "])\n", hex, g->machine_pid);
	else
		printf("  kernel: no guest build-id (%s)\n", g->notes_why);
}

/* The losses of vm (with the host's rows when host), and whether any. */
static void summary_losses(const struct merge_ctx *m, const struct merge_vm *vm, bool host)
{
	const struct merge_losses *l = &vm->guest.loss;
	const struct merge_gperf *gp = &vm->gp;
	const struct { const char *what; uint64_t n; } loss[] = {
		{ "ring pages with missed events (LOST_SAMPLES written)", l->ring_missed_pages },
		{ "events lost in the guest ring (stored counts)", l->ring_lost_events },
		{ "events lost in the guest ring (end marker's overrun beyond the stored counts)", l->ring_lost_unstored },
		{ "pages missing in transport (sent - received)", l->transport_missing_pages },
		{ "damaged pages dropped: unreadable spool", l->damaged_read },
		{ "damaged pages dropped: marker-like page not of this session", l->damaged_marker },
		{ "damaged pages dropped: bad ring page header", l->damaged_header },
		{ "malformed events dropped", l->bad_events },
		{ "events with an unknown id dropped", l->unknown_event_ids },
		{ "events going back in time dropped", l->backwards_ts },
		{ "oversized events dropped", l->oversized_events },
		{ "event formats dropped", l->dropped_formats },
		{ "vCPU spools without this session's begin marker", l->dropped_cpus },
		{ "stale bytes skipped before begin markers", l->stale_bytes },
		{ "oldest pages dropped by the flight recorder (--flight-recorder: the newest kept)", l->fr_dropped_pages },
		{ "oldest pages freed from the spools near the disk bound after the live merge wrote them (the "
		  "session's live output has them, this merge does not; start --keep-spools keeps them)", l->released_pages },
		{ "host records out of order", host ? m->host.out_of_order : 0 },
		{ "host events lost by perf record (buffer overflow; give perf a bigger -m after '--' on start)", host ? m->host.lost : 0 },
		{ "guest times outside the session window, clamped", l->outside_window },
		{ "vCPU spools without an end marker (what the guest had not sent is missing, amount unknown)", l->no_end_cpus },
		{ "guest task names not kept (the task table was full; counted per event)", l->tasks_not_kept },
		{ "guest perf samples lost in the guest's perf ring (its LOST records are in the file)", gp->lost },
		{ "guest perf records dropped: malformed", gp->bad_records },
		{ "guest perf records dropped: unknown id", gp->unknown_ids },
		{ "guest perf streams without an end marker (amount missing unknown)", gp->no_end_cpus },
		{ "oldest guest perf records dropped by the flight recorder (their task records kept aside)", gp->fr_records },
		{ "guest perf task records the flight recorder had no room to keep", gp->fr_not_kept },
	};
	bool any = false;

	for (size_t i = 0; i < ARRAY_SIZE(loss); i++)
		any = any || loss[i].n;
	printf("  losses:%s\n", any ? "" : " none");
	for (size_t i = 0; i < ARRAY_SIZE(loss); i++)
		if (loss[i].n)
			printf("          %s: %" PRIu64 "\n", loss[i].what, loss[i].n);
}

/* One VM's part of the summary (with several, under a line naming it). */
static void summary_vm(const struct merge_ctx *m, const struct merge_vm *vm)
{
	const struct merge_guest *g = &vm->guest;

	if (m->n_vm > 1 && !g->present) {
		printf("  == vm %s (%s): LEFT OUT (its guest data is not usable: see the warning above)\n", vm->name,
		       vm->dir);
		return;
	}
	if (m->n_vm > 1)
		printf("  == vm %s (%s): merged, its events %s*\n", vm->name, vm->dir, vm->sys_prefix);
	if (!g->present && vm->unusable[0]) { /* the stop's summary takes "not merged" as a warning */
		printf("  guest:  0 samples written: its data not merged (%s); the spools stay in the "
		       "session dir\n", vm->unusable);
		return;
	}
	printf("  guest:  %" PRIu64 " samples written, %zu event formats, %zu task names, %u vCPUs\n",
	       vm->samples, g->n_events, g->n_tasks, g->ncpus);
	if (g->missing_cpus[0])
		printf("  NOT TRACED: guest CPUs %s (they could not stream; start --allow-partial)\n", g->missing_cpus);
	for (size_t i = 0; g->present && i < g->n_events; i++)
		if (g->events[i].count)
			printf("          %s%s:%s %" PRIu64 "\n", vm->sys_prefix, g->events[i].sys, g->events[i].fmt.name,
			       g->events[i].count);
	if (g->present && g->machine_pid_stand_in)
		printf("  vm pid: qemu_pid unknown, stand-in machine_pid %" PRIu64 " used\n", g->machine_pid);
	else if (g->present)
		printf("  vm pid: %" PRIu64 "\n", g->machine_pid);
	merge_gperf_summary(&vm->gp, g);
	merge_exits_summary(m, vm);
	merge_migs_summary(vm);
	summary_clock(g);
	summary_vcpu(m, vm);
	if (!m->as_host)
		summary_build_id(g);
	summary_losses(m, vm, m->n_vm == 1);
}

/* The perf.data directory's parts: the data and each guest's kcore_dir. */
static void summary_dir(const struct merge_ctx *m, const char *out)
{
	size_t kcores = 0;

	for (size_t v = 0; v < m->n_vm; v++)
		kcores += m->vm[v].kcore_written;
	if (m->n_vm == 1 && kcores) {
		printf("  output: a perf.data directory: %s/data and %s/kcore_dir__%" PRIu64 "/kallsyms (the guest's "
		       "kernel symbols; perf -i %s reads both)\n", out, out, m->vm[0].guest.machine_pid, out);
		return;
	}
	printf("  output: a perf.data directory: %s/data", out);
	for (size_t v = 0; v < m->n_vm; v++) /* only what was written */
		if (m->vm[v].kcore_written)
			printf(", %s/kcore_dir__%" PRIu64 "/kallsyms (%s)", out, m->vm[v].guest.machine_pid, m->vm[v].name);
	if (kcores)
		printf(" (each guest's kernel symbols, by its QEMU pid; perf -i %s reads them all)\n", out);
	else
		printf(" (and %s/" GBIN_OUT_DIR "; no guest kernel symbols: perf -i %s reads it)\n", out, out);
}

#define MERGE_BIG_RECORDS (1ull << 30)
static void summary(const struct merge_ctx *m, const char *out)
{
	uint64_t bytes_read = 0;
	bool any_guest = false;
	struct stat st;

	printf("merge summary\n");
	printf("  host:   %s, %" PRIu64 " samples in, %" PRIu64 " written\n",
	       m->host.present ? "recording merged" : "none (guest only)", m->host.samples, m->host_written);
	if (m->host.stale_build_ids)
		printf("          %" PRIu64 " MMAP2 records' stale build-id flag cleared (the kernel left it from "
		       "another perf event with build-ids; perf 6.1 would overflow on them)\n", m->host.stale_build_ids);
	if (m->n_vm > 1)
		printf("  guests: %zu VMs, each its own perf guest machine (machine_pid = its QEMU pid), %" PRIu64
		       " guest samples written\n", m->n_vm, m->guest_samples);
	for (size_t v = 0; v < m->n_vm; v++) {
		summary_vm(m, &m->vm[v]);
		bytes_read += m->vm[v].guest.loss.bytes_read;
		any_guest = any_guest || m->vm[v].guest.present;
	}
	if (m->n_vm > 1 && (m->host.out_of_order || m->host.lost))
		printf("  host losses:\n          host records out of order: %" PRIu64 "\n          host events lost by "
		       "perf record (buffer overflow; give perf a bigger -m after '--' on start): %" PRIu64 "\n",
		       m->host.out_of_order, m->host.lost);
	if (stat(out, &st) == 0)
		printf("  output: %s (%lld bytes%s)\n", out, (long long)st.st_size, m->zstd ? ", zstd" : "");
	/* perf keeps each decompressed chunk of a zstd file until it is done with the file (6.1 and
	 * 6.12 alike: a 22.7 MB output of 2.9 GB of records took perf script 2.85 GB; bench/RESULTS.md) */
	if (m->zstd && m->w && perf_writer_records_bytes(m->w) >= MERGE_BIG_RECORDS)
		printf("  memory: its records are %.1f GB decompressed, and perf holds all of them in memory "
		       "as it reads a compressed file: reading it needs about that much RAM (a session merged "
		       "again with --no-compress needs none of it, but that much disk)\n",
		       (double)perf_writer_records_bytes(m->w) / 1e9);
	if (any_guest)
		printf("  input read: %" PRIu64 " bytes of guest spools (one pass)\n", bytes_read);
}

static int merge_prepare(struct merge_ctx *m, const struct merge_options *o)
{
	char why[512] = "", path[PATH_MAX] = "";
	int r;

	if ((r = merge_vm_load(m, o)) < 0)
		return r;
	if (o->guest_as_host) /* the guest alone */
		r = 0;
	else if ((r = host_open(o, &m->vm[0], path, sizeof(path), &m->host_fd, why, sizeof(why))) < 0) {
		log_error("%s %s: cannot use it as the host recording", path, why);
		return r;
	}
	if (r > 0 &&
	    (r = o->host_data && o->host_prefix ? merge_host_open_prefix(&m->host, m->host_fd, o->host_prefix, why, sizeof(why)) :
		 (o->follow ? merge_host_open_follow : merge_host_open)(&m->host, m->host_fd, why, sizeof(why))) < 0) {
		log_error("%s: cannot use the host recording: %s", path, why);
		return r;
	}
	if (!m->host.present && !merge_vm_first(m)) {
		log_error("%s: neither guest data nor a host recording to merge", o->session_dir);
		return -ENOENT;
	}
	if ((r = merge_tdata_build(m, why, sizeof(why))) < 0) {
		log_error("%s: %s", o->session_dir, why);
		return r;
	}
	if ((r = merge_vm_prepare(m, m->host_fd)) < 0)
		return r;
	if ((r = merge_sources(m)) < 0)
		return r;
	return merge_out_attrs(m);
}

int merge_clock_state(const char *session_dir, char *why, size_t whylen)
{
	struct merge_guest g = { 0 };
	int r = merge_guest_load(&g, session_dir, why, whylen);

	if (r >= 0 && g.present) {
		r = g.clock_aligned;
		snprintf(why, whylen, "%s", g.clock_why[0] ? g.clock_why : "no usable clock.ini");
	}
	merge_guest_free(&g);
	return r < 0 ? r : r ? 1 : 0;
}

/* Guest binaries fetched at stop go into the output's own build-id cache (OUT/buildids; with
 * --trust-guest-binaries perf's, $HOME/.debug), never under a build-id the host holds; the
 * summary says where and how perf reads them. */
/* vm's binaries; whether the summary is to print the perf command that reads them. */
static bool merge_gbin_summary_vm(struct merge_ctx *m, const struct merge_vm *vm, const struct merge_options *o)
{
	/* an input-only dir (vm.c): neither trust nor the cache's place from its session.ini */
	bool trust = merge_gbin_trusted(vm->dir, o->trust_binaries, !vm->input_only);
	unsigned how = !trust ? GBIN_INTO_OUTPUT : vm->input_only ? GBIN_TRUST_HOME : GBIN_TRUST_SESSION;
	struct gbin_settled st;

	if (merge_gbin_any(vm->dir)) /* reads the host files' build-ids: only when it matters */
		merge_host_build_ids(&m->host);
	if (merge_gbin_settle(vm->dir, m->out_dir && !m->pipe ? o->output : NULL, how, &m->host.ids, &st) < 0)
		return false;
	printf("  %sguest binaries: %u in %s%s (%u placed now, %u there before), %u not sent", vm->label,
	       st.installed + st.cached, !st.bdir[0] ? "no build-id directory (the output is no perf.data directory)" :
	       o->follow && !trust ? "the output's " GBIN_OUT_DIR "/ (live.data's, stop moves it with the output)" : st.bdir,
	       trust ? " (perf's own cache: --trust-guest-binaries)" : "", st.installed, st.cached, st.not_sent + st.bad);
	if (st.cut)
		printf(", %" PRIu64 " cut (the fetch ended early: see the stop summary)", st.cut);
	if (st.host_ids)
		printf(", %u REFUSED: their build-id is the host's (host.data's or a host file's; perf reads the "
		       "host's file for it, or names nothing)", st.host_ids);
	if (st.no_dir)
		printf(", %u not placed (no perf.data directory)", st.no_dir);
	if (st.no_build_id)
		printf("; %" PRIu64 " mappings without a build-id: perf names their functions [unknown]", st.no_build_id);
	printf("\n");
	if (st.bad)
		log_warn("%u guest binaries in %s/binaries failed their check again (build-id, size, path): not used",
			 st.bad, vm->dir);
	return st.installed + st.cached && !trust && !o->follow;
}

static void merge_gbin_summary(struct merge_ctx *m, const struct merge_options *o)
{
	bool command = false;

	for (size_t v = 0; v < m->n_vm; v++)
		command = merge_gbin_summary_vm(m, &m->vm[v], o) || command;
	if (command)
		printf("  guest user functions: perf --buildid-dir %s/" GBIN_OUT_DIR " report -i %s\n", o->output,
		       o->output);
}

/* stop's disk budget for the output, less what merge_dir_finish adds beside the data (each
 * guest's kallsyms). */
static uint64_t merge_data_budget(const struct merge_ctx *m, const struct merge_options *o)
{
	struct stat st;
	uint64_t extra = 0;

	for (size_t v = 0; m->out_dir && v < m->n_vm; v++) {
		const struct merge_guest *g = &m->vm[v].guest;

		if (g->dfd_open && fstatat(g->dfd, "guest/kallsyms", &st, AT_SYMLINK_NOFOLLOW) == 0)
			extra += (uint64_t)st.st_size;
	}
	return o->max_bytes > extra ? o->max_bytes - extra : 1; /* 1: nothing fits */
}

/* The output opened: with -o - while following, pipe-mode perf.data on a dup of stdout (the
 * summary and logs go to stderr); else OUT prepared (a perf.data directory or a file) and its
 * writer, within stop's disk budget. data names what is written. 0 or -errno (said). */
static int merge_open(struct merge_ctx *m, const struct merge_options *o, int *out_fd, char *data, size_t len)
{
	int r;

	/* -o - (following only): pipe-mode perf.data on stdout, for 'perf script -i -'; the
	 * summary and logs go to stderr. */
	m->pipe = o->follow && !strcmp(o->output, "-");
	if (m->pipe && ((*out_fd = dup(1)) < 0 || dup2(2, 1) < 0))
		return -errno;
	if ((r = merge_prepare(m, o)) < 0)
		return r;
	if (m->pipe) {
		snprintf(data, len, "standard output");
		if ((r = merge_follow_preamble(m, *out_fd)) < 0)
			log_error("standard output: cannot write the pipe-mode header: %s", strerror(-r));
		return r;
	}
	if ((r = merge_dir_prepare(m, o->output, data, len)) < 0)
		return r;
	if ((r = perf_writer_open(data, o->zstd_level, &m->w)) < 0) {
		log_error("%s: cannot create: %s", data, strerror(-r));
		return r;
	}
	if (o->max_bytes)
		perf_writer_set_limit(m->w, merge_data_budget(m, o));
	return 0;
}

/* Everything merged: the header and features, the guest's kallsyms beside, the summary and
 * merge.ini. 0, 1 (written, guest clock unaligned) or -errno (said). */
static int merge_finish(struct merge_ctx *m, const struct merge_options *o, const char *data)
{
	int r;

	if (!m->index_done && (r = merge_out_guest_index(m)) < 0)
		return r;
	if ((r = merge_header_finish(m)) < 0) {
		log_error("%s: cannot write: %s", data, strerror(-r));
		return r;
	}
	if (!m->pipe && (r = merge_dir_finish(m, o->output)) < 0) {
		log_error("%s: cannot add the guest's kallsyms (perf would not name guest kernel functions): %s",
			  o->output, strerror(-r));
		return r;
	}
	for (size_t v = 0; o->snapshot && v < m->n_vm; v++) { /* cut while tracing: no end markers yet, by design */
		m->vm[v].guest.loss.no_end_cpus = 0;
		m->vm[v].gp.no_end_cpus = 0;
	}
	summary(m, data);
	if (o->snapshot)
		printf("  snapshot: each stream as far as its spool held when the snapshot was taken; the "
		       "session goes on\n");
	merge_gbin_summary(m, o);
	if (m->out_dir)
		summary_dir(m, o->output);
	merge_vm_info(m, o->output);
	for (size_t v = 0; v < m->n_vm; v++) {
		const struct merge_guest *g = &m->vm[v].guest;

		if (!g->present || g->clock_aligned)
			continue;
		log_error("%sguest clock UNALIGNED (%s): %s has the guest's events at guest times, not on the "
			  "host's timeline; see the session's clock.samples and collector.log", m->vm[v].label,
			  g->clock_why[0] ? g->clock_why : "no usable clock.ini", o->output);
		r = 1; /* written, but not aligned */
	}
	return r;
}

/* Following: stop's stalls line for the output, into SESSION/live-stalls.txt (stop prints it
 * instead of reading the output again); written as a .tmp, never through a link, and renamed. */
static void merge_stalls_line(struct merge_ctx *m, const struct merge_options *o)
{
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	int r;

	if (!f)
		return;
	report_live_finish(m->stalls, f);
	if (fclose(f) < 0 || !text)
		return;
	if ((r = util_replace_file(o->session_dir, "live-stalls.txt", text, len)) < 0)
		log_warn("%s/live-stalls.txt: cannot write it (stop reads the output for its stalls line): %s",
			 o->session_dir, strerror(-r));
}

/* Everything the merge holds; an unfinished output (r < 0) is removed. */
static void merge_free(struct merge_ctx *m, const struct merge_options *o, int r, int out_fd)
{
	perf_writer_free(m->w); /* an unfinished file is removed */
	if (r == -EFBIG && m->out_dir)
		rmdir(o->output); /* and the perf.data directory made for it */
	if (out_fd >= 0)
		close(out_fd);
	if (m->host_fd >= 0)
		close(m->host_fd);
	report_live_free(m->stalls);
	merge_out_free(m);
	merge_host_free(&m->host);
	merge_vm_free(m);
	free(m->src);
}

int merge_run(const struct merge_options *o)
{
	_cleanup_free_ struct merge_ctx *m = calloc(1, sizeof(*m));
	char data[PATH_MAX];
	int r, out_fd = -1;

	if (!m)
		return -ENOMEM;
	m->first_sample = UINT64_MAX;
	m->host_fd = -1;
	m->zstd = o->zstd_level;
	m->as_host = o->guest_as_host;
	r = merge_open(m, o, &out_fd, data, sizeof(data));
	if (r == 0 && o->follow)
		r = merge_follow(m, o, data);
	else if (r == 0 && (r = merge_loop(m)) < 0)
		log_error("merge failed: %s", m->host.err[0] ? m->host.err : strerror(-r));
	if (r == 0)
		r = merge_finish(m, o, data);
	if (r >= 0 && m->stalls)
		merge_stalls_line(m, o);
	merge_free(m, o, r, out_fd);
	return r;
}
