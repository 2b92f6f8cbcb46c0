/* SPDX-License-Identifier: GPL-2.0-only */
/* A table of u64 keys → u32 values for keys a guest chooses (pids, tids): each table hashes with
 * its own random key through SipHash-1-3, so no one who does not know the key can make keys
 * collide, and every walk is bounded: an insert finds a free slot within HASH_PROBE_MAX slots
 * (growing the table first if it must) or is refused and counted, never a long walk.
 * Open addressing, linear probing, no removal. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#define HASH_PROBE_MAX 256

struct hash_slot {
	uint64_t key;
	uint32_t val;
	uint32_t used;
};

struct hash {
	struct hash_slot *slot;
	size_t mask;      /* slots - 1 */
	size_t slots_max; /* the table grows up to this many slots */
	size_t n, max;    /* entries; the most it takes */
	uint64_t k0, k1;  /* SipHash key, random */
	uint64_t refused; /* inserts refused: over max, or no free slot within HASH_PROBE_MAX */
};

/* A table sized for expect entries (it grows), taking at most max. 0 or -ENOMEM. */
int hash_init(struct hash *h, size_t expect, size_t max);
/* Accepts a zeroed or freed table. */
void hash_free(struct hash *h);
/* SipHash-1-3 of key under the table's key: where key's walk starts (masked). */
uint64_t hash_mix(const struct hash *h, uint64_t key);
/* key's value: 0, or -ENOENT. */
int hash_get(const struct hash *h, uint64_t key, uint32_t *ret_val);
/* Adds key → val: 1 added; 0 key was there (*ret_val: its value, when asked); -ENOSPC refused
 * (h->refused counts it: full, or no free slot near its place even at the largest size);
 * -ENOMEM. */
int hash_put(struct hash *h, uint64_t key, uint32_t val, uint32_t *ret_val);
