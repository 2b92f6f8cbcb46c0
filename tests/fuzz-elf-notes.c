// SPDX-License-Identifier: GPL-2.0-only
/* Fuzz target: guest/notes (the guest kernel's /sys/kernel/notes) and guest binaries (the ELF
 * files the agent sends for guest user symbols) → build-id. */
#include <stdint.h>
#include <stdlib.h>

#include "elf_notes.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t id[ELF_NOTES_BUILD_ID_MAX];
	size_t n = 0;

	if (elf_notes_build_id(data, size, id, &n) == 0 && (n == 0 || n > sizeof(id)))
		abort();
	n = 0;
	if (elf_file_build_id_mem(data, size, id, &n) == 0 && (n == 0 || n > sizeof(id)))
		abort();
	return 0;
}
