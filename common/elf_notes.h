/* SPDX-License-Identifier: GPL-2.0-only */
/* ELF note sequences (the kernel's /sys/kernel/notes): finds the GNU build-id. Hostile input:
 * every size is bounds-checked. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#define ELF_NOTES_BUILD_ID_MAX 20 /* what perf's BUILD_ID record holds */

/* The NT_GNU_BUILD_ID descriptor of the first "GNU" note: 0 with *ret_len bytes in ret_id;
 * -ENOENT when there is none, -EBADMSG when a note header or size runs past the buffer,
 * -EMSGSIZE when the build-id is empty or longer than ELF_NOTES_BUILD_ID_MAX. */
int elf_notes_build_id(const void *buf, size_t len, uint8_t ret_id[ELF_NOTES_BUILD_ID_MAX], size_t *ret_len);
