// SPDX-License-Identifier: GPL-2.0-only
/* The output's header (out.c writes the records): the feature sections built from what was
 * merged — TRACING_DATA, EVENT_DESC with every attr's name, BUILD_ID (the host's and each guest
 * kernel's), NRCPUS, SAMPLE_TIME, the host's own features (CPU_TOPOLOGY padded to NRCPUS) — and
 * the header written by common/perf_writer, at the end or for a snapshot. */
#include "out.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perf_reader.h"
#include "perf_topology.h"
#include "perf_writer.h"
#include "util.h"

static void buf_string(struct util_buf *b, const char *s)
{
	static const uint8_t zero[64];
	uint32_t n = (uint32_t)ALIGN_UP(strlen(s) + 1, 64);

	util_buf_put(b, &n, 4);
	util_buf_put(b, s, strlen(s));
	util_buf_put(b, zero, n - strlen(s));
}

/* A host tracepoint's "sys:name" by its id, from the tracing data: a file perf still writes
 * (a set's snapshot) has no EVENT_DESC yet, and its formats came from tracefs (tdata.c). */
struct td_name {
	uint64_t id;
	char *name;
	struct tep_format f;
};

static int td_name_one(const char *sys, const struct td_text *t, void *ud)
{
	struct td_name *n = ud;

	if (tep_format_parse(t->data, t->len, &n->f) < 0 || n->f.id != n->id)
		return 0;
	if (asprintf(&n->name, "%s:%s", sys, n->f.name) < 0)
		n->name = NULL;
	return 1;
}

static char **host_names_desc(struct merge_ctx *m);

static char *td_name(const struct merge_ctx *m, uint64_t id)
{
	_cleanup_free_ struct td_name *n = calloc(1, sizeof(*n));

	if (!n || !m->have_td)
		return NULL;
	n->id = id;
	tracing_data_for_each(&m->td, td_name_one, n);
	return n->name;
}

static void host_names_td(struct merge_ctx *m, char **names, size_t nh)
{
	for (size_t i = 0; i < nh; i++)
		if (!names[i] && m->host.attrs[i].attr.type == PERF_TYPE_TRACEPOINT)
			names[i] = td_name(m, m->host.attrs[i].attr.config);
}

/* Names of the host's events, from its EVENT_DESC (bounds-checked), else its tracepoints' from
 * the tracing data; NULL entries when absent. */
static char **host_names(struct merge_ctx *m)
{
	char **names = host_names_desc(m);

	if (names)
		host_names_td(m, names, m->host.present ? m->host.n_attrs : 0);
	return names;
}

static char **host_names_desc(struct merge_ctx *m)
{
	_cleanup_free_ uint8_t *d = NULL;
	size_t len, off = 8, nh = m->host.present ? m->host.n_attrs : 0;
	uint32_t nr, asz;
	char **names = calloc(nh + 1, sizeof(*names));

	if (!names || !nh || perf_reader_feature(m->host.r, PERF_FEAT_EVENT_DESC, &d, &len) < 0 || len < 8)
		return names;
	memcpy(&nr, d, 4);
	memcpy(&asz, d + 4, 4);
	for (uint32_t i = 0; i < nr && i < nh; i++) {
		uint32_t nids, sl;

		if (asz > len || off > len - asz - 8)
			break;
		off += asz;
		memcpy(&nids, d + off, 4);
		memcpy(&sl, d + off + 4, 4);
		off += 8;
		if (sl > len - off || (uint64_t)nids * 8 > len - off - sl)
			break;
		names[i] = strndup((const char *)d + off, sl);
		off += sl + (size_t)nids * 8;
	}
	return names;
}

/* The name of attr i: the host's, or a VM's "<prefix><sys>:<event>", "<perf event>:G" or
 * "<prefix>kvm:kvm_exit" (its exit samples) or "<prefix>virtio_trace:migration". */
static void attr_name(const struct merge_ctx *m, char **host, size_t i, char *buf, size_t len)
{
	size_t nh = m->host.present ? m->host.n_attrs : 0;

	if (i < nh) {
		snprintf(buf, len, "%s", host[i] ? host[i] : "unknown");
		return;
	}
	i -= nh;
	for (size_t v = 0; v < m->n_vm; v++) {
		const struct merge_vm *vm = &m->vm[v];

		if (i < merge_out_vm_n_events(vm)) {
			snprintf(buf, len, "%s%s:%s", vm->sys_prefix, vm->guest.events[i].sys, vm->guest.events[i].fmt.name);
			return;
		}
		i -= merge_out_vm_n_events(vm);
		if (i < merge_out_vm_n_perf(vm)) {
			merge_out_gperf_name(&vm->gp, i, buf, len);
			return;
		}
		i -= merge_out_vm_n_perf(vm);
		if (i < merge_out_vm_n_exits(vm)) {
			snprintf(buf, len, "%skvm:kvm_exit", vm->sys_prefix);
			return;
		}
		i -= merge_out_vm_n_exits(vm);
		if (i < merge_out_vm_n_migs(vm)) {
			snprintf(buf, len, "%svirtio_trace:migration", vm->sys_prefix);
			return;
		}
		i -= merge_out_vm_n_migs(vm);
	}
	snprintf(buf, len, "unknown");
}

static int event_desc(struct merge_ctx *m, struct util_buf *b)
{
	char **names = host_names(m);
	uint32_t nr = (uint32_t)m->n_attrs, asz = PERF_ATTR_SIZE;
	size_t nh = m->host.present ? m->host.n_attrs : 0;

	if (!names)
		return -ENOMEM;
	util_buf_put(b, &nr, 4);
	util_buf_put(b, &asz, 4);
	for (size_t i = 0; i < m->n_attrs; i++) {
		const struct perf_attr_ids *a = &m->attrs[i];
		uint32_t nids = (uint32_t)a->n_ids;
		char name[2 * TEP_FORMAT_MAX_NAME + 32];

		attr_name(m, names, i, name, sizeof(name));
		util_buf_put(b, &a->attr, PERF_ATTR_SIZE);
		util_buf_put(b, &nids, 4);
		buf_string(b, name);
		util_buf_put(b, a->ids, a->n_ids * 8);
	}
	for (size_t i = 0; i < nh; i++)
		free(names[i]);
	free(names);
	return b->oom ? -ENOMEM : 0;
}

static void nrcpus(struct merge_ctx *m, uint32_t out[2])
{
	_cleanup_free_ uint8_t *d = NULL;
	size_t len;

	out[0] = out[1] = 1;
	for (size_t v = 0; v < m->n_vm; v++)
		if (m->vm[v].guest.present)
			out[0] = out[1] = MAX(out[0], m->vm[v].guest.ncpus);
	if (m->host.present && perf_reader_feature(m->host.r, PERF_FEAT_NRCPUS, &d, &len) == 0 && len >= 8) {
		uint32_t h[2];

		memcpy(h, d, 8);
		out[0] = MAX(out[0], h[0]);
		out[1] = MAX(out[1], h[1]);
	}
}

static bool feature_rewritten(unsigned bit)
{
	return bit == PERF_FEAT_TRACING_DATA || bit == PERF_FEAT_EVENT_DESC || bit == PERF_FEAT_NRCPUS ||
	       bit == PERF_FEAT_SAMPLE_TIME || bit == PERF_FEAT_COMPRESSED;
}

struct feats {
	struct perf_writer_feature f[PERF_FEAT_BITS];
	uint8_t *owned[PERF_FEAT_BITS];
	size_t n;
};

static void feats_free(struct feats *fs)
{
	for (size_t i = 0; i < fs->n; i++)
		free(fs->owned[i]);
}

static int feats_add(struct feats *fs, unsigned bit, uint8_t *owned, const void *d, size_t len)
{
	fs->owned[fs->n] = owned;
	fs->f[fs->n++] = (struct perf_writer_feature){ bit, d, len };
	return 0;
}

/* BUILD_ID entry of the guest kernel (perf header.c write_buildid): header (type 0, misc
 * GUEST_KERNEL | BUILD_ID_SIZE), s32 pid = machine_pid, u8 id[20], u8 size, 3 reserved, then the
 * name perf gives the guest's kernel map ("[guest.kernel.kallsyms.<pid>]", machine.c) padded
 * to 64. */
static void guest_build_id(const struct merge_guest *g, struct util_buf *b)
{
	static const uint8_t zero[64];
	char name[64];
	uint8_t id[24] = { 0 };
	int32_t pid = (int32_t)g->machine_pid;
	size_t nl = (size_t)snprintf(name, sizeof(name), "[guest.kernel.kallsyms.%d]", pid) + 1;
	size_t padded = ALIGN_UP(nl, 64);
	struct perf_event_header h = { .type = 0, .misc = PERF_RECORD_MISC_GUEST_KERNEL | (1u << 15),
				       .size = (uint16_t)(8 + 4 + 24 + padded) };

	memcpy(id, g->build_id, g->build_id_len);
	id[20] = (uint8_t)g->build_id_len;
	util_buf_put(b, &h, 8);
	util_buf_put(b, &pid, 4);
	util_buf_put(b, id, 24);
	util_buf_put(b, name, nl);
	util_buf_put(b, zero, padded - nl);
}

static bool vm_has_build_id(const struct merge_vm *vm)
{
	return vm->guest.present && vm->guest.build_id_len;
}

/* The host's BUILD_ID entries, kept, plus each guest kernel's. */
static int build_ids(struct merge_ctx *m, struct util_buf *b)
{
	_cleanup_free_ uint8_t *d = NULL;
	size_t len;

	if (m->host.present && perf_reader_feature(m->host.r, PERF_FEAT_BUILD_ID, &d, &len) == 0)
		util_buf_put(b, d, len);
	for (size_t v = 0; v < m->n_vm && !m->as_host; v++) /* as a host's: no guest kernel */
		if (vm_has_build_id(&m->vm[v]))
			guest_build_id(&m->vm[v].guest, b);
	return b->oom ? -ENOMEM : 0;
}

static bool guest_has_build_id(const struct merge_ctx *m)
{
	for (size_t v = 0; v < m->n_vm; v++)
		if (vm_has_build_id(&m->vm[v]))
			return true;
	return false;
}

/* The host's CPU_TOPOLOGY for the output's cpus (NRCPUS raised to the guest's vCPUs): padded, as
 * perf 6.1 reads it for NRCPUS' count (perf_topology.h); left out when it does not parse.
 * Takes d. */
static void feats_host_topology(struct merge_ctx *m, struct feats *fs, uint8_t *d, size_t len, uint32_t cpus)
{
	_cleanup_free_ uint8_t *nr = NULL;
	uint8_t *t;
	size_t nlen, tlen;
	uint32_t host_cpus;

	if (perf_reader_feature(m->host.r, PERF_FEAT_NRCPUS, &nr, &nlen) < 0 || nlen < 4) {
		free(d); /* no count of the host's own: perf reads it for cpus */
		return;
	}
	memcpy(&host_cpus, nr, 4);
	if (host_cpus == cpus) {
		feats_add(fs, PERF_FEAT_CPU_TOPOLOGY, d, d, len);
		return;
	}
	if (perf_topology_pad(d, len, host_cpus, cpus, &t, &tlen) == 0)
		feats_add(fs, PERF_FEAT_CPU_TOPOLOGY, t, t, tlen);
	free(d);
}

static int feats_host(struct merge_ctx *m, struct feats *fs, uint32_t cpus)
{
	for (unsigned bit = 0; m->host.present && bit < PERF_FEAT_BITS; bit++) {
		uint8_t *d;
		size_t len;

		if (feature_rewritten(bit) || (bit == PERF_FEAT_BUILD_ID && guest_has_build_id(m)) ||
		    !perf_reader_has_feature(m->host.r, bit))
			continue;
		if (perf_reader_feature(m->host.r, bit, &d, &len) < 0)
			continue; /* an unreadable optional section is left out */
		if (!len) { /* perf still records (a live snapshot): its bit set, no section yet; perf
			     * 6.1 stops reading the header's features at an empty one (COMPRESSED too) */
			free(d);
			continue;
		}
		if (bit == PERF_FEAT_CPU_TOPOLOGY)
			feats_host_topology(m, fs, d, len, cpus);
		else
			feats_add(fs, bit, d, d, len);
	}
	return 0;
}

/* The header's feature sections for what was written so far: in fs, which owns them. */
static int out_feats(struct merge_ctx *m, struct feats *fs, uint32_t cpus[2], uint64_t stime[2])
{
	struct util_buf desc = { 0 }, bids = { 0 };
	uint8_t *td = NULL;
	size_t td_len = 0;
	int r;

	if (m->have_td && (r = tracing_data_build(&m->td, &td, &td_len)) < 0)
		return r;
	if (td)
		feats_add(fs, PERF_FEAT_TRACING_DATA, td, td, td_len);
	if ((r = event_desc(m, &desc)) < 0) {
		free(desc.p);
		return r;
	}
	feats_add(fs, PERF_FEAT_EVENT_DESC, desc.p, desc.p, desc.len);
	if (guest_has_build_id(m)) {
		if ((r = build_ids(m, &bids)) < 0) {
			free(bids.p);
			return r;
		}
		feats_add(fs, PERF_FEAT_BUILD_ID, bids.p, bids.p, bids.len);
	}
	nrcpus(m, cpus);
	feats_add(fs, PERF_FEAT_NRCPUS, NULL, cpus, 2 * sizeof(*cpus));
	stime[0] = m->first_sample, stime[1] = m->last_sample;
	if (m->first_sample != UINT64_MAX)
		feats_add(fs, PERF_FEAT_SAMPLE_TIME, NULL, stime, 2 * sizeof(*stime));
	feats_host(m, fs, cpus[0]);
	return 0;
}

/* A FINISHED_ROUND and the header: the writer's own (the end), or a snapshot's at path, the
 * writer going on. */
static int header_write(struct merge_ctx *m, const char *snapshot_path)
{
	static const struct perf_event_header round = { .type = PERF_REC_FINISHED_ROUND, .size = 8 };
	struct feats fs = { .n = 0 };
	uint32_t cpus[2];
	uint64_t stime[2];
	int r;

	if ((r = perf_writer_record(m->w, &round)) < 0)
		return r;
	if ((r = out_feats(m, &fs, cpus, stime)) == 0)
		r = snapshot_path ? perf_writer_snapshot(m->w, snapshot_path, m->attrs, m->n_attrs, fs.f, fs.n)
				  : perf_writer_finish(m->w, m->attrs, m->n_attrs, fs.f, fs.n);
	feats_free(&fs);
	return r;
}

int merge_header_finish(struct merge_ctx *m)
{
	return header_write(m, NULL);
}

int merge_header_snapshot(struct merge_ctx *m, const char *path)
{
	return header_write(m, path);
}
