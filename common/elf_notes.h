/* SPDX-License-Identifier: GPL-2.0-only */
/* ELF note sequences (the kernel's /sys/kernel/notes) and ELF files (guest binaries): finds the
 * GNU build-id. Hostile input: every size is bounds-checked. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#define ELF_NOTES_BUILD_ID_MAX 20 /* what perf's BUILD_ID record holds */

/* The NT_GNU_BUILD_ID descriptor of the first "GNU" note: 0 with *ret_len bytes in ret_id;
 * -ENOENT when there is none, -EBADMSG when a note header or size runs past the buffer,
 * -EMSGSIZE when the build-id is empty or longer than ELF_NOTES_BUILD_ID_MAX. */
int elf_notes_build_id(const void *buf, size_t len, uint8_t ret_id[ELF_NOTES_BUILD_ID_MAX], size_t *ret_len);

/* Reads len bytes at off of an ELF file into buf: 0, or a negative errno (-EIO when short). */
typedef int (*elf_read_fn)(void *ctx, void *buf, size_t len, uint64_t off);

#define ELF_FILE_NOTE_MAX (64u << 10) /* a PT_NOTE segment larger than this is skipped */
#define ELF_FILE_PHNUM_MAX 4096u

/* The GNU build-id of an ELF file of size bytes (ELF32 or ELF64, little endian), from its
 * PT_NOTE segments: 0 with *ret_len bytes in ret_id; -ENOEXEC when it is not such an ELF file,
 * -EBADMSG when its header or program headers run past size, -ENOENT when no note segment
 * holds a build-id; a read error as read returns it. */
int elf_file_build_id(elf_read_fn read, void *ctx, uint64_t size, uint8_t ret_id[ELF_NOTES_BUILD_ID_MAX],
		      size_t *ret_len);
/* The same for an open file of size bytes (read with pread). */
int elf_file_build_id_fd(int fd, uint64_t size, uint8_t ret_id[ELF_NOTES_BUILD_ID_MAX], size_t *ret_len);
/* The same over a buffer holding the whole file. */
int elf_file_build_id_mem(const void *buf, size_t len, uint8_t ret_id[ELF_NOTES_BUILD_ID_MAX], size_t *ret_len);
