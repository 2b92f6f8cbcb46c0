// SPDX-License-Identifier: GPL-2.0-only
#include "elf_notes.h"

#include <errno.h>
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
