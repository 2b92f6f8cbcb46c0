// SPDX-License-Identifier: GPL-2.0-only
/* Layout (perf's write_cpu_topology, docs/perf-data.md): u32 n then n strings (core siblings),
 * u32 n then n strings (thread siblings); then, if the section goes on, {u32 core_id, u32
 * socket_id} per CPU; then, if it goes on, u32 n then n strings (die siblings) and u32 die_id
 * per CPU. A string is u32 len then len bytes. */
#include "perf_topology.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* Skips a u32 count and that many strings at *off; false when they run past len. */
static bool topology_skip_strings(const uint8_t *d, size_t len, size_t *off)
{
	uint32_t n, sl;

	if (len - *off < 4)
		return false;
	memcpy(&n, d + *off, 4);
	*off += 4;
	for (uint32_t i = 0; i < n; i++) {
		if (len - *off < 4)
			return false;
		memcpy(&sl, d + *off, 4);
		*off += 4;
		if (len - *off < sl)
			return false;
		*off += sl;
	}
	return true;
}

/* n times the u32 -1 at p. */
static uint8_t *topology_fill(uint8_t *p, size_t n)
{
	memset(p, 0xff, n * 4);
	return p + n * 4;
}

int perf_topology_pad(const uint8_t *d, size_t len, uint32_t host_cpus, uint32_t cpus, uint8_t **ret,
		      size_t *ret_len)
{
	size_t off = 0, ids, dies = 0, extra = (size_t)cpus - host_cpus;
	uint8_t *out, *p;

	if (cpus < host_cpus)
		return -EINVAL;
	if (!topology_skip_strings(d, len, &off) || !topology_skip_strings(d, len, &off))
		return -EBADMSG;
	ids = off; /* the per-CPU ids start here, if the section has them */
	if (off < len) {
		if (len - off < (size_t)host_cpus * 8)
			return -EBADMSG;
		off += (size_t)host_cpus * 8;
		dies = off;
		if (off < len && (!topology_skip_strings(d, len, &off) || len - off != (size_t)host_cpus * 4))
			return -EBADMSG;
	}
	if (!(out = malloc(len + extra * 12 + 1)))
		return -ENOMEM;
	p = out;
	memcpy(p, d, ids), p += ids;
	if (ids < len) {
		memcpy(p, d + ids, dies - ids), p += dies - ids;
		p = topology_fill(p, extra * 2);
		if (dies < len) {
			memcpy(p, d + dies, len - dies), p += len - dies;
			p = topology_fill(p, extra);
		}
	}
	*ret = out;
	*ret_len = (size_t)(p - out);
	return 0;
}
