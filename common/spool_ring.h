/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once
/* A spool's newest bytes in shared memory (a memfd): the daemon reads a guest CPU's port into
 * it, block after block, before it writes each block to cpuN.spool; the live merge (its child)
 * maps it read-only and copies a range from it instead of reading the file back (the O_DIRECT
 * reads were ~20% of the follower's CPU at 2 MB/s per vCPU: bench/RESULTS.md).
 *
 * Layout: one 4 KiB header, then n blocks of `block` bytes; the file's byte at offset X, while
 * lo <= X < hi, is at block (X / block) % n. The writer raises lo before it reuses a block and
 * invalidates everything (lo = hi = 0) before it reuses memory any other way; a reader checks
 * lo and hi before and after its copy (a seqlock without the sequence: lo only grows while the
 * range is valid), and reads the file when the range is not, or no longer, there. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SPOOL_RING_MAGIC 0x31474e4952545600ull /* "\0VTRING1" */
#define SPOOL_RING_HDR 4096u
#define SPOOL_RING_MAX_BLOCKS 16u

struct spool_ring_hdr {
	uint64_t magic;
	uint32_t block, n;
	uint64_t lo, hi; /* file offsets: [lo, hi) is in the ring (atomics) */
};

struct spool_ring {
	int fd;
	uint8_t *map; /* SPOOL_RING_HDR + n * block bytes */
	size_t len;
	uint32_t block, n;
	bool writable;
};

/* Writer: a memfd of n blocks (n in 1..SPOOL_RING_MAX_BLOCKS, block a multiple of 4096),
 * mapped read-write, close-on-exec. */
int spool_ring_create(struct spool_ring *r, const char *name, uint32_t block, uint32_t n);
/* The memory of the block that holds file offset off. */
uint8_t *spool_ring_block(const struct spool_ring *r, uint64_t off);
/* [lo, hi) now holds the file's bytes: hi after bytes were added, lo before a block is reused. */
void spool_ring_publish(struct spool_ring *r, uint64_t lo, uint64_t hi);
/* Nothing in the ring is valid any more (before its memory is reused other than block-wise). */
void spool_ring_invalidate(struct spool_ring *r);
/* Reader: maps fd (taken) read-only and checks its header; -errno when it is no such ring. */
int spool_ring_open(struct spool_ring *r, int fd);
/* Copies the file's [off, off + len) into buf when the ring holds all of it for the whole copy:
 * true; false: read the file. */
bool spool_ring_read(const struct spool_ring *r, uint64_t off, void *buf, size_t len);
void spool_ring_close(struct spool_ring *r);
