// SPDX-License-Identifier: GPL-2.0-only
/* common/hash: SipHash-1-3 against an independent implementation's values, insert/lookup/grow,
 * the probe bound (refused and counted, never a long walk), keys a guest would pick to collide;
 * and the merge of a guest stream whose 64K pids clustered in the old task table, against the
 * same stream over random pids (tests/pid-session.c): every task named either way. */
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "hash.h"
#include "merge.h"
#include "perf_reader.h"
#include "pid-session.h"
#include "util.h"

/* The walk length of key: slots from where it hashes to where it sits (0: its own slot). */
static size_t walk(const struct hash *h, uint64_t key)
{
	size_t i = (size_t)hash_mix(h, key) & h->mask, p = 0;

	while (h->slot[(i + p) & h->mask].key != key || !h->slot[(i + p) & h->mask].used)
		p++;
	return p;
}

TEST(siphash13_vectors)
{
	/* CPython 3.11 hashes bytes with SipHash-1-3; PYTHONHASHSEED=0 makes its key zero:
	 * PYTHONHASHSEED=0 python3 -c 'print(hex(hash(bytes(range(8))) % 2**64))' */
	struct hash h = { 0 };

	CHECK(hash_mix(&h, 0x0706050403020100ull) == 0xead411e67ebe2eeaull);
	CHECK(hash_mix(&h, 0) == 0xbd60acb658c79e45ull);
	CHECK(hash_mix(&h, 0xdeadbeefcafef00dull) == 0xe7e4856b726e5c87ull);
}

TEST(random_key_per_table)
{
	struct hash a, b;

	CHECK_INT(hash_init(&a, 4, 4), ==, 0);
	CHECK_INT(hash_init(&b, 4, 4), ==, 0);
	CHECK(a.k0 != b.k0 || a.k1 != b.k1);
	CHECK(hash_mix(&a, 42) != hash_mix(&b, 42));
	hash_free(&a), hash_free(&b);
	hash_free(&a); /* twice: accepted */
}

TEST(insert_lookup_grow)
{
	struct hash h;
	uint32_t v = 0;

	CHECK_INT(hash_init(&h, 4, 100000), ==, 0);
	CHECK_INT(h.mask + 1, ==, 16);
	for (uint32_t i = 0; i < 10000; i++)
		CHECK_INT(hash_put(&h, i * 7919ull, i, NULL), ==, 1);
	CHECK_INT(h.n, ==, 10000);
	CHECK(h.mask + 1 >= 2 * h.n);
	for (uint32_t i = 0; i < 10000; i++) {
		CHECK_INT(hash_get(&h, i * 7919ull, &v), ==, 0);
		CHECK_INT(v, ==, i);
	}
	CHECK_INT(hash_get(&h, 1, &v), ==, -ENOENT);
	CHECK_INT(hash_get(&h, 10000 * 7919ull, NULL), ==, -ENOENT);
	/* a key already there keeps its value and says which */
	CHECK_INT(hash_put(&h, 5 * 7919ull, 99, &v), ==, 0);
	CHECK_INT(v, ==, 5);
	CHECK_INT(hash_get(&h, 5 * 7919ull, &v), ==, 0);
	CHECK_INT(v, ==, 5);
	CHECK_INT(h.refused, ==, 0);
	hash_free(&h);
	CHECK_INT(hash_get(&h, 0, NULL), ==, -ENOENT);
}

TEST(max_entries_refused_and_counted)
{
	struct hash h;

	CHECK_INT(hash_init(&h, 100, 10), ==, 0);
	for (uint32_t i = 0; i < 10; i++)
		CHECK_INT(hash_put(&h, i, i, NULL), ==, 1);
	CHECK_INT(hash_put(&h, 10, 10, NULL), ==, -ENOSPC);
	CHECK_INT(hash_put(&h, 11, 11, NULL), ==, -ENOSPC);
	CHECK_INT(h.refused, ==, 2);
	CHECK_INT(hash_put(&h, 3, 0, NULL), ==, 0); /* known keys still answer */
	CHECK_INT(hash_get(&h, 10, NULL), ==, -ENOENT);
	CHECK_INT(h.n, ==, 10);
	hash_free(&h);
}

/* n keys whose walks start at slot `at` under h's key (found by trying). */
static void colliding_keys(const struct hash *h, size_t at, uint64_t *keys, size_t n)
{
	for (uint64_t k = 1; n; k++)
		if (((size_t)hash_mix(h, k) & h->mask) == at)
			keys[--n] = k;
}

TEST(probe_bound_at_largest_size)
{
	/* Someone who knew the key: 300 keys for one slot, in a table not allowed to grow. */
	struct hash h;
	uint64_t keys[300], next = 0;
	size_t kept = 0;

	CHECK_INT(hash_init(&h, 1024, 2048), ==, 0);
	h.slots_max = h.mask + 1;
	colliding_keys(&h, 7, keys, 300);
	for (size_t i = 0; i < 300; i++) {
		int r = hash_put(&h, keys[i], (uint32_t)i, NULL);

		CHECK(r == 1 || r == -ENOSPC);
		kept += r == 1;
	}
	CHECK_INT(kept, ==, HASH_PROBE_MAX);
	CHECK_INT(h.refused, ==, 300 - HASH_PROBE_MAX);
	for (size_t i = 0; i < 300; i++) {
		uint32_t v;

		CHECK_INT(hash_get(&h, keys[i], &v), ==, i < HASH_PROBE_MAX ? 0 : -ENOENT);
		CHECK(i >= HASH_PROBE_MAX || v == i);
		CHECK(i >= HASH_PROBE_MAX || walk(&h, keys[i]) < HASH_PROBE_MAX);
	}
	/* a key of another slot past the cluster still goes in */
	colliding_keys(&h, 7 + HASH_PROBE_MAX + 1, &next, 1);
	CHECK_INT(hash_put(&h, next, 1, NULL), ==, 1);
	hash_free(&h);
}

TEST(probe_bound_grows_with_new_key)
{
	/* The same cluster where the table may grow: the bound grows it under a new key, and every
	 * key goes in. */
	struct hash h;
	uint64_t keys[300];
	size_t slots;

	CHECK_INT(hash_init(&h, 1024, 65536), ==, 0);
	slots = h.mask + 1;
	colliding_keys(&h, 7, keys, 300);
	for (size_t i = 0; i < 300; i++)
		CHECK_INT(hash_put(&h, keys[i], (uint32_t)i, NULL), ==, 1);
	CHECK(h.mask + 1 > slots);
	CHECK_INT(h.refused, ==, 0);
	for (size_t i = 0; i < 300; i++) {
		uint32_t v;

		CHECK_INT(hash_get(&h, keys[i], &v), ==, 0);
		CHECK_INT(v, ==, i);
		CHECK_INT(walk(&h, keys[i]), <, 32);
	}
	hash_free(&h);
}

TEST(adversarial_low_bits)
{
	/* 64K keys sharing their low 17 bits, and the 64K pids that clustered in the merge's old
	 * task table: all in, all found, every walk short. */
	struct hash h;
	int32_t *pids = calloc(65536, sizeof(*pids));
	size_t worst = 0;

	CHECK(pids);
	pid_session_colliding(pids, 65536);
	for (int set = 0; set < 2; set++) {
		CHECK_INT(hash_init(&h, 64, 65536), ==, 0);
		for (uint32_t j = 0; j < 65536; j++)
			CHECK_INT(hash_put(&h, set ? (uint64_t)(uint32_t)pids[j] : (uint64_t)j << 17 | 0x1abcd, j, NULL), ==, 1);
		CHECK_INT(h.n, ==, 65536);
		CHECK_INT(h.refused, ==, 0);
		for (uint32_t j = 0; j < 65536; j++) {
			uint64_t k = set ? (uint64_t)(uint32_t)pids[j] : (uint64_t)j << 17 | 0x1abcd;
			uint32_t v;

			CHECK_INT(hash_get(&h, k, &v), ==, 0);
			CHECK_INT(v, ==, j);
			worst = MAX(worst, walk(&h, k));
		}
		hash_free(&h);
	}
	free(pids);
	CHECK_INT(worst, <, 64); /* load 1/2 with a random key: far below the bound */
}

struct pid_at {
	int32_t pid;
	uint32_t i;
};

static int pid_at_cmp(const void *a, const void *b)
{
	const struct pid_at *x = a, *y = b;

	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

/* Merges the session of pids (2 passes) and reads the output: every pid's COMM and its name. */
static int merge_pids(const int32_t *pids, size_t n, char (*names)[16], uint64_t *ret_samples, uint64_t *ret_comms)
{
	char dir[] = "/tmp/vt-test-hash-XXXXXX", out[64], err[256], cmd[128];
	struct merge_options o = { .session_dir = dir, .output = out };
	const struct perf_event_header *e;
	struct perf_reader *rd = NULL;
	_cleanup_free_ struct pid_at *by_pid = calloc(n, sizeof(*by_pid));
	int r;

	if (!by_pid || !mkdtemp(dir))
		return -errno;
	for (size_t i = 0; i < n; i++)
		by_pid[i] = (struct pid_at){ .pid = pids[i], .i = (uint32_t)i };
	qsort(by_pid, n, sizeof(*by_pid), pid_at_cmp);
	snprintf(out, sizeof(out), "%s/out.data", dir);
	*ret_samples = *ret_comms = 0;
	if ((r = pid_session_write(dir, pids, n, 2)) < 0 || (r = merge_run(&o)) != 0 ||
	    (r = perf_reader_open(out, &rd, err, sizeof(err))) < 0)
		goto out;
	while ((r = perf_reader_next(rd, &e)) == 1) {
		struct pid_at key, *at;

		*ret_samples += e->type == PERF_RECORD_SAMPLE;
		if (e->type != PERF_RECORD_COMM)
			continue;
		memcpy(&key.pid, (const uint8_t *)e + 8, 4);
		if ((at = bsearch(&key, by_pid, n, sizeof(*by_pid), pid_at_cmp)))
			snprintf(names[at->i], 16, "%s", (const char *)e + 16);
		(*ret_comms)++;
	}
out:
	perf_reader_free(rd);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		r = r < 0 ? r : -EIO;
	return r;
}

TEST(merge_colliding_pids_as_random)
{
	const size_t n = 65536;
	int32_t *coll = calloc(n, sizeof(*coll)), *rnd = calloc(n, sizeof(*rnd));
	char (*names)[16] = calloc(n, 16), want[16];
	uint64_t s_coll, c_coll, s_rnd, c_rnd;

	CHECK(coll && rnd && names);
	pid_session_colliding(coll, n);
	pid_session_random(rnd, n, 42);
	CHECK_INT(merge_pids(coll, n, names, &s_coll, &c_coll), ==, 0);
	for (size_t i = 0; i < n; i++) {
		pid_session_comm(i, want);
		CHECK_STR(names[i], want);
	}
	memset(names, 0, n * 16);
	CHECK_INT(merge_pids(rnd, n, names, &s_rnd, &c_rnd), ==, 0);
	for (size_t i = 0; i < n; i++) {
		pid_session_comm(i, want);
		CHECK_STR(names[i], want);
	}
	CHECK_INT(s_coll, ==, 2 * n);
	CHECK_INT(s_coll, ==, s_rnd);
	CHECK_INT(c_coll, ==, c_rnd);
	CHECK_INT(c_coll, >=, n);
	free(coll), free(rnd), free(names);
}
