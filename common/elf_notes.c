// SPDX-License-Identifier: GPL-2.0-only
#include "elf_notes.h"
#include "util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define NT_GNU_BUILD_ID_TYPE 3

/* Elf64_Nhdr and Elf32_Nhdr are the same: three u32 words. */
struct note_hdr {
	uint32_t namesz, descsz, type;
};
_Static_assert(sizeof(struct note_hdr) == 12, "ELF note header is 12 bytes");

/* Note name and desc sizes are padded to 4 bytes (no overflow: computed in size_t). */
static size_t pad4(uint32_t n)
{
	return ((size_t)n + 3) & ~(size_t)3;
}

int elf_notes_build_id(const void *buf, size_t len, uint8_t ret_id[ELF_NOTES_BUILD_ID_MAX], size_t *ret_len)
{
	const uint8_t *p = buf;
	size_t off = 0;

	while (len - off >= sizeof(struct note_hdr)) {
		struct note_hdr h;
		size_t name_len, desc_len;

		memcpy(&h, p + off, sizeof(h));
		off += sizeof(h);
		name_len = pad4(h.namesz);
		desc_len = pad4(h.descsz);
		if (name_len > len - off || desc_len > len - off - name_len)
			return -EBADMSG;
		if (h.type == NT_GNU_BUILD_ID_TYPE && h.namesz == 4 && !memcmp(p + off, "GNU", 4)) {
			if (h.descsz == 0 || h.descsz > ELF_NOTES_BUILD_ID_MAX)
				return -EMSGSIZE;
			memcpy(ret_id, p + off + name_len, h.descsz);
			*ret_len = h.descsz;
			return 0;
		}
		off += name_len + desc_len;
	}
	return off == len ? -ENOENT : -EBADMSG;
}

/* The fields of Elf32_Ehdr / Elf64_Ehdr and of their program headers that the search reads. */
struct elf_layout {
	size_t ehdr_len, phoff_at, phoff_len, phentsize_at, phnum_at;
	size_t ph_len, p_offset_at, p_filesz_at, p_size_len;
};

static const struct elf_layout elf_layouts[2] = {
	{ 52, 28, 4, 42, 44, 32, 4, 16, 4 }, /* ELFCLASS32 */
	{ 64, 32, 8, 54, 56, 56, 8, 32, 8 }, /* ELFCLASS64 */
};

static uint64_t get_le(const uint8_t *p, size_t len)
{
	uint64_t v = 0;

	for (size_t i = len; i-- > 0;)
		v = v << 8 | p[i];
	return v;
}

/* One PT_NOTE segment [off, off + len): 0 with the build-id, else why not. */
static int elf_file_note(elf_read_fn read, void *ctx, uint64_t off, uint64_t len, uint8_t ret_id[ELF_NOTES_BUILD_ID_MAX],
			 size_t *ret_len)
{
	uint8_t *buf;
	int r;

	if (len == 0 || len > ELF_FILE_NOTE_MAX)
		return -ENOENT;
	buf = malloc((size_t)len);
	if (!buf)
		return -ENOMEM;
	r = read(ctx, buf, (size_t)len, off);
	if (r == 0)
		r = elf_notes_build_id(buf, (size_t)len, ret_id, ret_len);
	free(buf);
	return r;
}

int elf_file_build_id(elf_read_fn read, void *ctx, uint64_t size, uint8_t ret_id[ELF_NOTES_BUILD_ID_MAX],
		      size_t *ret_len)
{
	const struct elf_layout *l;
	uint8_t eh[64], ph[56];
	uint64_t phoff, phentsize, phnum;
	int r;

	if (size < 52)
		return -ENOEXEC;
	if ((r = read(ctx, eh, 52, 0)) < 0)
		return r;
	if (memcmp(eh, "\177ELF", 4) || (eh[4] != 1 && eh[4] != 2) || eh[5] != 1 /* ELFDATA2LSB */)
		return -ENOEXEC;
	l = &elf_layouts[eh[4] - 1];
	if (l->ehdr_len > size || (l->ehdr_len > 52 && (r = read(ctx, eh + 52, l->ehdr_len - 52, 52)) < 0))
		return l->ehdr_len > size ? -EBADMSG : r;
	phoff = get_le(eh + l->phoff_at, l->phoff_len);
	phentsize = get_le(eh + l->phentsize_at, 2);
	phnum = get_le(eh + l->phnum_at, 2);
	if (phnum > ELF_FILE_PHNUM_MAX || (phnum && phentsize < l->ph_len) || phoff > size ||
	    phnum * phentsize > size - phoff)
		return -EBADMSG;
	r = -ENOENT;
	for (uint64_t i = 0; i < phnum; i++) {
		uint64_t off, len;
		int nr;

		if ((nr = read(ctx, ph, l->ph_len, phoff + i * phentsize)) < 0)
			return nr;
		if (get_le(ph, 4) != 4 /* PT_NOTE */)
			continue;
		off = get_le(ph + l->p_offset_at, l->p_size_len);
		len = get_le(ph + l->p_filesz_at, l->p_size_len);
		if (off > size || len > size - off)
			continue; /* a note past the end: look on */
		nr = elf_file_note(read, ctx, off, len, ret_id, ret_len);
		if (nr == 0 || nr == -ENOMEM || nr == -EMSGSIZE)
			return nr;
		if (nr != -ENOENT && nr != -EBADMSG)
			return nr; /* a read error */
	}
	return r;
}

static int elf_fd_read(void *ctx, void *buf, size_t len, uint64_t off)
{
	return util_pread_full(*(int *)ctx, buf, len, off);
}

int elf_file_build_id_fd(int fd, uint64_t size, uint8_t ret_id[ELF_NOTES_BUILD_ID_MAX], size_t *ret_len)
{
	return elf_file_build_id(elf_fd_read, &fd, size, ret_id, ret_len);
}

struct elf_mem {
	const uint8_t *p;
	size_t len;
};

static int elf_mem_read(void *ctx, void *buf, size_t len, uint64_t off)
{
	const struct elf_mem *m = ctx;

	if (off > m->len || len > m->len - off)
		return -EIO;
	memcpy(buf, m->p + off, len);
	return 0;
}

int elf_file_build_id_mem(const void *buf, size_t len, uint8_t ret_id[ELF_NOTES_BUILD_ID_MAX], size_t *ret_len)
{
	struct elf_mem m = { buf, len };

	return elf_file_build_id(elf_mem_read, &m, len, ret_id, ret_len);
}
