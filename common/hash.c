// SPDX-License-Identifier: GPL-2.0-only
/* Keyed hash table for guest-chosen keys (hash.h). */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "hash.h"

#define HASH_MIN_SLOTS 16
#define HASH_GROWTH_ROOM 4 /* slots_max: this many times the slots max entries need at load 1/2 */

static inline uint64_t rotl(uint64_t x, unsigned b)
{
	return x << b | x >> (64 - b);
}

/* One SipRound over the state v[4]. */
static inline void sip_round(uint64_t v[4])
{
	v[0] += v[1], v[1] = rotl(v[1], 13), v[1] ^= v[0], v[0] = rotl(v[0], 32);
	v[2] += v[3], v[3] = rotl(v[3], 16), v[3] ^= v[2];
	v[0] += v[3], v[3] = rotl(v[3], 21), v[3] ^= v[0];
	v[2] += v[1], v[1] = rotl(v[1], 17), v[1] ^= v[2], v[2] = rotl(v[2], 32);
}

/* SipHash-1-3 of one 8-byte message m (little-endian bytes), key (k0, k1). */
static uint64_t sip13_u64(uint64_t k0, uint64_t k1, uint64_t m)
{
	uint64_t v[4] = { k0 ^ 0x736f6d6570736575ull, k1 ^ 0x646f72616e646f6dull, k0 ^ 0x6c7967656e657261ull,
			  k1 ^ 0x7465646279746573ull };
	const uint64_t last = 8ull << 56; /* the length byte of an 8-byte message, no tail */

	v[3] ^= m, sip_round(v), v[0] ^= m;
	v[3] ^= last, sip_round(v), v[0] ^= last;
	v[2] ^= 0xff;
	sip_round(v), sip_round(v), sip_round(v);
	return v[0] ^ v[1] ^ v[2] ^ v[3];
}

uint64_t hash_mix(const struct hash *h, uint64_t key)
{
	return sip13_u64(h->k0, h->k1, key);
}

/* A fresh random key. Without getrandom (an old kernel, no entropy yet) a weaker one from the
 * clock and addresses: the walks stay bounded whatever the key. */
static void hash_rekey(struct hash *h)
{
	uint64_t k[2];
	struct timespec ts;

	if (getrandom(k, sizeof(k), GRND_NONBLOCK) == (ssize_t)sizeof(k)) {
		h->k0 = k[0], h->k1 = k[1];
		return;
	}
	clock_gettime(CLOCK_MONOTONIC, &ts);
	h->k0 = sip13_u64(h->k0 ^ (uint64_t)ts.tv_nsec, (uintptr_t)h, (uint64_t)ts.tv_sec);
	h->k1 = sip13_u64(h->k1 ^ (uint64_t)getpid(), (uintptr_t)&ts, h->k0);
}

static size_t pow2_at_least(size_t n)
{
	size_t p = HASH_MIN_SLOTS;

	while (p < n && p <= SIZE_MAX / 2)
		p *= 2;
	return p;
}

/* Where key is (1) or would go (0) in slot[], or -ENOSPC: neither within the probe bound. */
static int hash_find(const struct hash_slot *slot, size_t mask, uint64_t k0, uint64_t k1, uint64_t key,
		     size_t *ret_i)
{
	size_t i = (size_t)sip13_u64(k0, k1, key), probes = mask < HASH_PROBE_MAX ? mask + 1 : HASH_PROBE_MAX;

	for (size_t p = 0; p < probes; p++, i++) {
		const struct hash_slot *s = &slot[i & mask];

		if (!s->used || s->key == key) {
			*ret_i = i & mask;
			return s->used;
		}
	}
	return -ENOSPC;
}

int hash_init(struct hash *h, size_t expect, size_t max)
{
	size_t need = max > SIZE_MAX / 4 ? SIZE_MAX / 4 : max;

	*h = (struct hash){ .max = max };
	h->slots_max = pow2_at_least(2 * need);
	if (h->slots_max <= SIZE_MAX / HASH_GROWTH_ROOM / sizeof(*h->slot))
		h->slots_max *= HASH_GROWTH_ROOM;
	h->mask = pow2_at_least(2 * (expect < need ? expect : need)) - 1;
	hash_rekey(h);
	h->slot = calloc(h->mask + 1, sizeof(*h->slot));
	return h->slot ? 0 : -ENOMEM;
}

void hash_free(struct hash *h)
{
	free(h->slot);
	h->slot = NULL;
	h->n = 0;
}

int hash_get(const struct hash *h, uint64_t key, uint32_t *ret_val)
{
	size_t i;

	if (!h->slot || hash_find(h->slot, h->mask, h->k0, h->k1, key, &i) != 1)
		return -ENOENT;
	if (ret_val)
		*ret_val = h->slot[i].val;
	return 0;
}

/* Twice the slots under a new key; -ENOSPC (the table as it was) at slots_max or when an entry
 * finds no slot within the bound. */
static int hash_grow(struct hash *h)
{
	size_t slots = (h->mask + 1) * 2, i;
	struct hash nt = *h;

	if (slots > h->slots_max)
		return -ENOSPC;
	if (!(nt.slot = calloc(slots, sizeof(*nt.slot))))
		return -ENOMEM;
	nt.mask = slots - 1;
	hash_rekey(&nt);
	for (size_t j = 0; j <= h->mask; j++) {
		if (!h->slot[j].used)
			continue;
		if (hash_find(nt.slot, nt.mask, nt.k0, nt.k1, h->slot[j].key, &i) != 0) {
			free(nt.slot);
			return -ENOSPC;
		}
		nt.slot[i] = h->slot[j];
	}
	free(h->slot);
	*h = nt;
	return 0;
}

int hash_put(struct hash *h, uint64_t key, uint32_t val, uint32_t *ret_val)
{
	size_t i = 0;
	int r;

	if (!h->slot)
		return -ENOMEM;
	r = hash_find(h->slot, h->mask, h->k0, h->k1, key, &i);
	if (r == 1) {
		if (ret_val)
			*ret_val = h->slot[i].val;
		return 0;
	}
	if (h->n >= h->max) {
		h->refused++;
		return -ENOSPC;
	}
	/* Over half full, or no free slot near: grow (a new key spreads the keys anew). */
	while (r < 0 || 2 * (h->n + 1) > h->mask + 1) {
		int g = hash_grow(h);

		if (g == -ENOMEM)
			return g;
		if (g < 0)
			break; /* at the largest size: a slot within the bound still does */
		r = hash_find(h->slot, h->mask, h->k0, h->k1, key, &i);
	}
	if (r < 0) {
		h->refused++;
		return -ENOSPC;
	}
	h->slot[i] = (struct hash_slot){ .key = key, .val = val, .used = 1 };
	h->n++;
	return 1;
}
