// SPDX-License-Identifier: GPL-2.0-only
/* The output's tracing data: the host recording's (while following, its tracepoints' formats
 * from the host's tracefs until perf writes its own at exit), or a fresh one from the guest's
 * headers, plus the guest's remapped formats as guest_<sys>. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "log.h"
#include "merge.h"
#include "out.h"
#include "perf_reader.h"
#include "tdata.h"
#include "tracing_data.h"
#include "util.h"

/* Following: host perf writes its tracing data at exit only, so the formats of its tracepoints
 * come from the host's tracefs meanwhile (the same files perf reads), found by id. */
static int host_tracefs_format(struct tracing_data *td, uint64_t id)
{
	static const char root[] = "/sys/kernel/tracing/events";
	DIR *d = opendir(root), *sd;
	char path[PATH_MAX], *text = NULL;
	struct dirent *sys, *ev;
	size_t len;
	int r = -ENOENT;

	while (d && r == -ENOENT && (sys = readdir(d))) {
		if (sys->d_name[0] == '.' || snprintf(path, sizeof(path), "%s/%s", root, sys->d_name) >= (int)sizeof(path) ||
		    !(sd = opendir(path)))
			continue;
		while (r == -ENOENT && (ev = readdir(sd))) {
			_cleanup_free_ char *idtext = NULL;

			if (ev->d_name[0] == '.' ||
			    snprintf(path, sizeof(path), "%s/%s/%s/id", root, sys->d_name, ev->d_name) >= (int)sizeof(path) ||
			    util_read_file(path, 64, &idtext, NULL) < 0 || strtoull(idtext, NULL, 10) != id)
				continue;
			snprintf(path, sizeof(path), "%s/%s/%s/format", root, sys->d_name, ev->d_name);
			if ((r = util_read_file(path, TEP_FORMAT_MAX_TEXT, &text, &len)) == 0) {
				r = tracing_data_add_event(td, sys->d_name, text, len);
				free(text);
			}
		}
		closedir(sd);
	}
	if (d)
		closedir(d);
	return r;
}

static int follow_host_td(struct merge_ctx *m)
{
	_cleanup_free_ char *hp = NULL, *he = NULL;
	size_t hp_len, he_len;
	int r;

	if (util_read_file("/sys/kernel/tracing/events/header_page", 65536, &hp, &hp_len) < 0 ||
	    util_read_file("/sys/kernel/tracing/events/header_event", 65536, &he, &he_len) < 0)
		return -ENOENT;
	if ((r = tracing_data_init(&m->td, (uint8_t)sizeof(long), (uint32_t)sysconf(_SC_PAGESIZE), hp, hp_len,
				   he, he_len)) < 0)
		return r;
	for (size_t i = 0; i < m->host.n_attrs; i++)
		if (m->host.attrs[i].attr.type == PERF_TYPE_TRACEPOINT &&
		    (r = host_tracefs_format(&m->td, m->host.attrs[i].attr.config)) < 0 && r != -ENOENT)
			return r;
	m->have_td = true;
	return 0;
}

/* Each guest's remapped formats, as <its prefix><sys> (guest_sched, guest2_sched...), into m->td. */
static int td_add_guest(struct merge_ctx *m)
{
	for (size_t v = 0; v < m->n_vm; v++) {
		const struct merge_vm *vm = &m->vm[v];

		for (size_t i = 0; vm->guest.present && i < vm->guest.n_events; i++) {
			const struct guest_event *e = &vm->guest.events[i];
			char sys[TEP_FORMAT_MAX_NAME + sizeof(vm->sys_prefix)];
			int r;

			snprintf(sys, sizeof(sys), "%s%s", vm->sys_prefix, e->sys);
			if ((r = tracing_data_add_event(&m->td, sys, e->text, e->text_len)) < 0)
				return r;
		}
		if (vm->exits.on) { /* its exit samples' (exits.c: added there the first time) */
			char sys[sizeof(vm->sys_prefix) + 4];
			int r;

			snprintf(sys, sizeof(sys), "%skvm", vm->sys_prefix);
			if ((r = tracing_data_add_event(&m->td, sys, vm->exits.text, vm->exits.text_len)) < 0)
				return r;
		}
		if (vm->migs.on) { /* its migrations' (migration.c) */
			char sys[sizeof(vm->sys_prefix) + 16];
			int r;

			snprintf(sys, sizeof(sys), "%svirtio_trace", vm->sys_prefix);
			if ((r = tracing_data_add_event(&m->td, sys, vm->migs.text, vm->migs.text_len)) < 0)
				return r;
		}
	}
	return 0;
}

/* Following, at the end: perf's own tracing data replaces the tracefs one in the output. */
int merge_tdata_final(struct merge_ctx *m)
{
	_cleanup_free_ uint8_t *blob = NULL;
	struct tracing_data td = { 0 };
	size_t len;

	if (!m->host.present || perf_reader_feature(m->host.r, PERF_FEAT_TRACING_DATA, &blob, &len) < 0)
		return 0;
	if (tracing_data_parse(blob, len, &td) < 0)
		return -EBADMSG;
	tracing_data_free(&m->td);
	m->td = td;
	m->have_td = true;
	return td_add_guest(m);
}

/* A VM's guest events get tracepoint ids no one else has (the host's, the VMs' before it). */
static int td_remap(struct merge_ctx *m, struct merge_vm *vm, char *why, size_t whylen)
{
	struct merge_guest *g = &vm->guest;
	int r;

	if (m->td.long_size != g->layout.commit_size) {
		snprintf(why, whylen, "%sthe guest's long size (%u) differs from the host's (%u)", vm->label,
			 g->layout.commit_size, m->td.long_size);
		return -EPROTONOSUPPORT;
	}
	if ((r = merge_guest_remap(g, m->used)) < 0) {
		snprintf(why, whylen, "%sno free tracepoint ids left for the guest's events", vm->label);
		return r;
	}
	for (size_t i = 0; i < g->n_events; i++)
		m->used[g->events[i].new_id / 8] |= (uint8_t)(1u << (g->events[i].new_id % 8));
	return 0;
}

/* Host TRACING_DATA (or a fresh one from the guest's headers) plus the remapped guest events. */
int merge_tdata_build(struct merge_ctx *m, char *why, size_t whylen)
{
	_cleanup_free_ uint8_t *blob = NULL;
	size_t len;
	int r;

	if (m->host.present && m->host.follow && follow_host_td(m) < 0)
		log_warn("the host's tracefs formats are unreadable: host tracepoints undecoded until stop");
	if (m->host.present && !m->host.follow &&
	    perf_reader_feature(m->host.r, PERF_FEAT_TRACING_DATA, &blob, &len) == 0) {
		if (tracing_data_parse(blob, len, &m->td) < 0) {
			snprintf(why, whylen, "the host recording's tracing data is malformed");
			return -EBADMSG;
		}
		m->have_td = true;
	}
	merge_out_used_ids(m);
	if (!merge_vm_first(m))
		return 0;
	if (!m->have_td) {
		const struct merge_guest *g = &merge_vm_first(m)->guest;

		if ((r = tracing_data_init(&m->td, (uint8_t)g->layout.commit_size, g->page_size, g->header_page,
					   g->hp_len, g->header_event, g->he_len)) < 0)
			return r;
		m->have_td = true;
	}
	for (size_t v = 0; v < m->n_vm; v++)
		if (m->vm[v].guest.present && (r = td_remap(m, &m->vm[v], why, whylen)) < 0)
			return r;
	return td_add_guest(m);
}
