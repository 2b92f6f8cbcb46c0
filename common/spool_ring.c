// SPDX-License-Identifier: GPL-2.0-only
/* A spool's newest bytes in shared memory (spool_ring.h). */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "spool_ring.h"

static struct spool_ring_hdr *hdr(const struct spool_ring *r)
{
	return (struct spool_ring_hdr *)r->map;
}

int spool_ring_create(struct spool_ring *r, const char *name, uint32_t block, uint32_t n)
{
	*r = (struct spool_ring){ .fd = -1 };
	if (!n || n > SPOOL_RING_MAX_BLOCKS || !block || block % 4096)
		return -EINVAL;
	r->len = SPOOL_RING_HDR + (size_t)block * n;
	r->fd = memfd_create(name, MFD_CLOEXEC);
	if (r->fd < 0 || ftruncate(r->fd, (off_t)r->len) < 0)
		goto fail;
	r->map = mmap(NULL, r->len, PROT_READ | PROT_WRITE, MAP_SHARED, r->fd, 0);
	if (r->map == MAP_FAILED) {
		r->map = NULL;
		goto fail;
	}
	r->block = block, r->n = n, r->writable = true;
	hdr(r)->block = block;
	hdr(r)->n = n;
	__atomic_store_n(&hdr(r)->magic, SPOOL_RING_MAGIC, __ATOMIC_RELEASE);
	return 0;
fail:;
	int e = errno;

	spool_ring_close(r);
	return -e;
}

uint8_t *spool_ring_block(const struct spool_ring *r, uint64_t off)
{
	return r->map + SPOOL_RING_HDR + (size_t)((off / r->block) % r->n) * r->block;
}

void spool_ring_publish(struct spool_ring *r, uint64_t lo, uint64_t hi)
{
	if (!r->map)
		return;
	/* lo first: a reader that sees the new hi sees a lo that excludes the reused block */
	__atomic_store_n(&hdr(r)->lo, lo, __ATOMIC_SEQ_CST);
	__atomic_store_n(&hdr(r)->hi, hi, __ATOMIC_SEQ_CST);
	__atomic_thread_fence(__ATOMIC_SEQ_CST); /* before the block's memory is written again */
}

void spool_ring_invalidate(struct spool_ring *r)
{
	spool_ring_publish(r, 0, 0);
}

int spool_ring_open(struct spool_ring *r, int fd)
{
	struct stat st;
	const struct spool_ring_hdr *h;

	*r = (struct spool_ring){ .fd = fd };
	if (fstat(fd, &st) < 0 || st.st_size < (off_t)SPOOL_RING_HDR) {
		spool_ring_close(r);
		return -EINVAL;
	}
	r->len = (size_t)st.st_size;
	r->map = mmap(NULL, r->len, PROT_READ, MAP_SHARED, fd, 0);
	if (r->map == MAP_FAILED) {
		r->map = NULL;
		spool_ring_close(r);
		return -EINVAL;
	}
	h = hdr(r);
	if (__atomic_load_n(&h->magic, __ATOMIC_ACQUIRE) != SPOOL_RING_MAGIC || !h->n || h->n > SPOOL_RING_MAX_BLOCKS ||
	    !h->block || h->block % 4096 || r->len != SPOOL_RING_HDR + (size_t)h->block * h->n) {
		spool_ring_close(r);
		return -EINVAL;
	}
	r->block = h->block, r->n = h->n;
	return 0;
}

/* [off, off + len) within [lo, hi) and within the n blocks back from hi. */
static bool held(const struct spool_ring *r, uint64_t off, size_t len)
{
	uint64_t lo = __atomic_load_n(&hdr(r)->lo, __ATOMIC_SEQ_CST);
	uint64_t hi = __atomic_load_n(&hdr(r)->hi, __ATOMIC_SEQ_CST);
	uint64_t span = (uint64_t)r->block * r->n;

	return lo < hi && hi - lo <= span && off >= lo && off + len >= off && off + len <= hi;
}

bool spool_ring_read(const struct spool_ring *r, uint64_t off, void *buf, size_t len)
{
	uint8_t *out = buf;
	uint64_t at = off;
	size_t left = len;

	if (!r->map || !len || !held(r, off, len))
		return false;
	while (left) {
		size_t in = (size_t)(at % r->block), n = r->block - in < left ? r->block - in : left;

		memcpy(out, spool_ring_block(r, at) + in, n);
		out += n, at += n, left -= n;
	}
	__atomic_thread_fence(__ATOMIC_SEQ_CST); /* the copy before the second look */
	return held(r, off, len);
}

void spool_ring_close(struct spool_ring *r)
{
	if (r->map)
		munmap(r->map, r->len);
	if (r->fd >= 0)
		close(r->fd);
	*r = (struct spool_ring){ .fd = -1 };
}
