// SPDX-License-Identifier: GPL-2.0-only
/* common/spool_ring: what a reader copies is the file's bytes or nothing. A writer in this
 * process fills blocks as the daemon does (lo raised before a block is reused, everything
 * invalidated before discarding); the reader maps the same memfd as the follower does; and a
 * writer thread that keeps reusing blocks while the reader copies never gets a torn copy
 * accepted. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "harness.h"
#include "spool_ring.h"
#include "util.h"

#define BLK 8192u

/* The file's byte at offset x: a pattern that tells offsets apart. */
static uint8_t byte_at(uint64_t x)
{
	return (uint8_t)(x * 131u + (x >> 13) * 7u);
}

/* Writes the file's [from, to) into the ring as the daemon does: lo raised past the block whose
 * memory the new bytes reuse, then the bytes, then hi. */
static void fill(struct spool_ring *w, uint64_t from, uint64_t to)
{
	uint64_t cur = to ? (to - 1) / BLK * BLK : 0, keep = (uint64_t)(w->n - 1) * BLK;
	uint64_t lo = cur > keep ? cur - keep : 0;

	spool_ring_publish(w, lo, from > lo ? from : lo);
	for (uint64_t x = from; x < to; x++)
		spool_ring_block(w, x)[x % BLK] = byte_at(x);
	spool_ring_publish(w, lo, to);
}

static bool copy_ok(const uint8_t *b, uint64_t off, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (b[i] != byte_at(off + i))
			return false;
	return true;
}

TEST(reads_what_the_ring_holds)
{
	struct spool_ring w, r;
	uint8_t buf[3 * BLK];

	CHECK_INT(spool_ring_create(&w, "test", BLK, 3), ==, 0);
	CHECK_INT(spool_ring_open(&r, dup(w.fd)), ==, 0);
	CHECK_INT(r.n, ==, 3);
	CHECK_INT(r.block, ==, BLK);
	CHECK(!spool_ring_read(&r, 0, buf, 16)); /* nothing published yet */
	fill(&w, 0, 2 * BLK + 100);
	CHECK(spool_ring_read(&r, 0, buf, 2 * BLK + 100)); /* across blocks */
	CHECK(copy_ok(buf, 0, 2 * BLK + 100));
	CHECK(!spool_ring_read(&r, 2 * BLK, buf, 101)); /* past hi */
	/* the fourth block reuses the first's memory: lo moves first */
	fill(&w, 2 * BLK + 100, 3 * BLK + 50);
	CHECK(!spool_ring_read(&r, 0, buf, 16));
	CHECK(!spool_ring_read(&r, BLK - 16, buf, 32)); /* partly below lo */
	CHECK(spool_ring_read(&r, BLK, buf, 2 * BLK + 50));
	CHECK(copy_ok(buf, BLK, 2 * BLK + 50));
	spool_ring_invalidate(&w);
	CHECK(!spool_ring_read(&r, 3 * BLK, buf, 16));
	spool_ring_close(&r);
	spool_ring_close(&w);
}

TEST(refuses_what_is_no_ring)
{
	struct spool_ring r;
	int fd = memfd_create("not-a-ring", MFD_CLOEXEC);

	CHECK(fd >= 0);
	CHECK_INT(ftruncate(fd, 4096 + BLK), ==, 0);
	CHECK_INT(spool_ring_open(&r, fd), ==, -EINVAL); /* no magic */
	CHECK_INT(spool_ring_open(&r, -1), ==, -EINVAL);
	CHECK_INT(spool_ring_create(&r, "bad", 1000, 2), ==, -EINVAL);
	CHECK_INT(spool_ring_create(&r, "bad", BLK, SPOOL_RING_MAX_BLOCKS + 1), ==, -EINVAL);
}

struct race {
	struct spool_ring w;
	volatile bool stop;
	uint64_t hi;
};

static void *writer(void *arg)
{
	struct race *x = arg;

	while (!x->stop) {
		uint64_t to = __atomic_load_n(&x->hi, __ATOMIC_RELAXED) + 256;

		fill(&x->w, to - 256, to);
		__atomic_store_n(&x->hi, to, __ATOMIC_RELAXED);
		sched_yield();
	}
	return NULL;
}

TEST(a_copy_overwritten_meanwhile_is_refused)
{
	struct race x = { 0 };
	struct spool_ring r;
	pthread_t t;
	uint8_t buf[BLK];
	unsigned got = 0, bad = 0;

	CHECK_INT(spool_ring_create(&x.w, "race", BLK, 2), ==, 0);
	CHECK_INT(spool_ring_open(&r, dup(x.w.fd)), ==, 0);
	CHECK_INT(pthread_create(&t, NULL, writer, &x), ==, 0);
	/* 100000 copies accepted, or 2 s (a busy host) */
	uint64_t end = util_now_ns(CLOCK_MONOTONIC) + 2000000000ull;

	for (unsigned i = 0; got < 100000 && (i % 1024 || util_now_ns(CLOCK_MONOTONIC) < end); i++) {
		/* the oldest bytes held: the next block the writer starts reuses their memory */
		uint64_t off = __atomic_load_n(&((struct spool_ring_hdr *)r.map)->lo, __ATOMIC_RELAXED) + (i * 977u) % 512;

		if (spool_ring_read(&r, off, buf, BLK / 2)) {
			got++;
			bad += !copy_ok(buf, off, BLK / 2);
		}
	}
	x.stop = true;
	pthread_join(t, NULL);
	printf("# %u copies accepted, %u torn\n", got, bad);
	CHECK_INT(bad, ==, 0);
	CHECK(got > 0);
	spool_ring_close(&r);
	spool_ring_close(&x.w);
}
