// SPDX-License-Identifier: GPL-2.0-only
/* The host's build-ids a guest binary must never stand in for (docs/perf-data.md, "Guest user
 * symbols"): those host.data carries (its BUILD_ID feature, MMAP2 records with a build-id) and
 * those of the host files its MMAP/MMAP2 records name, read from the files themselves. perf
 * looks a host DSO up in the build-id cache by the build-id it reads from the host's file, so a
 * guest file placed there under that build-id would give the host's samples the guest's
 * symbols. The merge collects them while it reads host.data (host.c) and refuses such guest
 * binaries when it places them (gbin.c). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gbin.h"
#include "perf_reader.h"
#include "util.h"

#define GBIN_HOST_PATHS_MAX (1u << 16) /* distinct host paths read; more are counted */
#define GBIN_HOST_IDS_MAX (1u << 17)
#define GBIN_MISC_BUILD_ID_SIZE (1 << 15) /* perf's PERF_RECORD_MISC_BUILD_ID_SIZE (tools/perf only) */

/* Without its trailing zero bytes: perf's BUILD_ID feature pads a short build-id with zeros to
 * 20 bytes, so both sides are compared trimmed (a real one that ends in zeros only matches more). */
static size_t gbin_host_trim(const uint8_t *id, size_t len)
{
	while (len > 0 && id[len - 1] == 0)
		len--;
	return len;
}

static int gbin_host_cmp_id(const void *a, const void *b)
{
	const struct gbin_id *x = a, *y = b;

	if (x->len != y->len)
		return (int)x->len - (int)y->len;
	return memcmp(x->id, y->id, x->len);
}

static int gbin_host_cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void gbin_host_add_id(struct gbin_host *h, const uint8_t *id, size_t len)
{
	struct gbin_id *v;

	if (len > ELF_NOTES_BUILD_ID_MAX || (len = gbin_host_trim(id, len)) == 0)
		return;
	if (h->n_ids == h->cap_ids) {
		size_t cap = h->cap_ids ? 2 * h->cap_ids : 64;

		if (cap > GBIN_HOST_IDS_MAX || !(v = reallocarray(h->ids, cap, sizeof(*v)))) {
			h->overflow++;
			return;
		}
		h->ids = v, h->cap_ids = cap;
	}
	h->ids[h->n_ids].len = (uint8_t)len;
	memcpy(h->ids[h->n_ids].id, id, len);
	h->n_ids++;
	h->sorted = false;
}

/* A host path to read the build-id of, once: kept in a list sorted at the end. */
static void gbin_host_add_path(struct gbin_host *h, const char *path, size_t max)
{
	size_t n = strnlen(path, max);
	char **v;

	if (n == 0 || n >= max || path[0] != '/')
		return; /* [vdso], //anon, [kernel.kallsyms]... */
	if (h->n_paths && !strncmp(h->paths[h->n_paths - 1], path, n) && !h->paths[h->n_paths - 1][n])
		return;
	if (h->n_paths == h->cap_paths) {
		size_t cap = h->cap_paths ? 2 * h->cap_paths : 256;

		if (h->n_paths >= 4 * GBIN_HOST_PATHS_MAX) {
			h->overflow++;
			return;
		}
		if (!(v = reallocarray(h->paths, cap, sizeof(*v)))) {
			h->overflow++;
			return;
		}
		h->paths = v, h->cap_paths = cap;
	}
	if (!(h->paths[h->n_paths] = strndup(path, n))) {
		h->overflow++;
		return;
	}
	h->n_paths++;
	if (h->n_paths % 4096 == 0) { /* keep the list from growing with repeats */
		size_t w = 0;

		qsort(h->paths, h->n_paths, sizeof(*h->paths), gbin_host_cmp_str);
		for (size_t i = 0; i < h->n_paths; i++)
			if (w && !strcmp(h->paths[w - 1], h->paths[i]))
				free(h->paths[i]);
			else
				h->paths[w++] = h->paths[i];
		h->n_paths = w;
	}
}

void merge_gbin_host_record(struct gbin_host *h, const struct perf_event_header *e)
{
	const uint8_t *r = (const uint8_t *)e;

	if (e->type == PERF_RECORD_MMAP && e->size > 40) {
		gbin_host_add_path(h, (const char *)r + 40, e->size - 40u);
	} else if (e->type == PERF_RECORD_MMAP2 && e->size > 72) {
		if ((e->misc & PERF_RECORD_MISC_MMAP_BUILD_ID) && r[40] > 0 && r[40] <= ELF_NOTES_BUILD_ID_MAX)
			gbin_host_add_id(h, r + 44, r[40]);
		gbin_host_add_path(h, (const char *)r + 72, e->size - 72u);
	}
}

/* perf's BUILD_ID feature: entries of a header (type, misc, size), s32 pid, 24 bytes of id (20,
 * then with PERF_RECORD_MISC_BUILD_ID_SIZE in misc its size), the file name. */
void merge_gbin_host_feature(struct gbin_host *h, const uint8_t *buf, size_t len)
{
	size_t off = 0;

	while (off + 36 <= len) {
		struct perf_event_header eh;
		size_t n = 20;

		memcpy(&eh, buf + off, sizeof(eh));
		if (eh.size < 36 || eh.size > len - off)
			break;
		if ((eh.misc & GBIN_MISC_BUILD_ID_SIZE) && buf[off + 32] > 0 && buf[off + 32] <= 20)
			n = buf[off + 32];
		gbin_host_add_id(h, buf + off + 12, n);
		off += eh.size;
	}
}

/* The build-ids of the host files named: what perf reads from them when it reports. */
void merge_gbin_host_resolve(struct gbin_host *h)
{
	size_t w = 0;

	if (h->n_paths)
		qsort(h->paths, h->n_paths, sizeof(*h->paths), gbin_host_cmp_str);
	for (size_t i = 0; i < h->n_paths; i++) {
		uint8_t id[ELF_NOTES_BUILD_ID_MAX];
		size_t n = 0;
		struct stat st;
		char why[128];
		int fd;

		if (w && !strcmp(h->paths[w - 1], h->paths[i])) {
			free(h->paths[i]);
			continue;
		}
		h->paths[w++] = h->paths[i];
		if (w > GBIN_HOST_PATHS_MAX) {
			h->overflow++;
			continue;
		}
		/* host.data names them (another user's, in a dir merged as input): a regular file
		 * only, a device is never opened (util_open_input looks with O_PATH first) */
		fd = util_open_input(AT_FDCWD, h->paths[i], O_RDONLY, why, sizeof(why));
		if (fd < 0)
			continue;
		if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
		    elf_file_build_id_fd(fd, (uint64_t)st.st_size, id, &n) == 0)
			gbin_host_add_id(h, id, n), h->files++;
		close(fd);
	}
	h->n_paths = w;
	merge_gbin_host_sort(h);
}

void merge_gbin_host_sort(struct gbin_host *h)
{
	if (!h->sorted && h->n_ids)
		qsort(h->ids, h->n_ids, sizeof(*h->ids), gbin_host_cmp_id);
	h->sorted = true;
}

bool merge_gbin_host_has(const struct gbin_host *h, const uint8_t *id, size_t len)
{
	struct gbin_id key = { 0 };

	if (len > ELF_NOTES_BUILD_ID_MAX || (len = gbin_host_trim(id, len)) == 0 || !h->n_ids)
		return false;
	key.len = (uint8_t)len;
	memcpy(key.id, id, len);
	if (h->sorted)
		return bsearch(&key, h->ids, h->n_ids, sizeof(*h->ids), gbin_host_cmp_id) != NULL;
	for (size_t i = 0; i < h->n_ids; i++)
		if (!gbin_host_cmp_id(&key, &h->ids[i]))
			return true;
	return false;
}

void merge_gbin_host_free(struct gbin_host *h)
{
	for (size_t i = 0; i < h->n_paths; i++)
		free(h->paths[i]);
	free(h->paths);
	free(h->ids);
	*h = (struct gbin_host){ 0 };
}
