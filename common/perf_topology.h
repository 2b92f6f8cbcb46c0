/* SPDX-License-Identifier: GPL-2.0-only */
/* HEADER_CPU_TOPOLOGY (feature 13) fitted to a larger HEADER_NRCPUS.
 *
 * perf 6.1 reads the topology's per-CPU part (core id, socket id, later die id) for as many
 * CPUs as NRCPUS says, past the end of the section if it is shorter, and gives up on the
 * header's remaining features when a socket id read there is out of range: SAMPLE_TIME,
 * CLOCKID, DIR_FORMAT, COMPRESSED (a compressed file then cannot be read at all). A merge
 * whose NRCPUS is raised to the guest's vCPUs copies the host's section padded here instead. */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* The section d (len bytes, written for host_cpus CPUs) with entries for cpus CPUs: the host's
 * own, then core, die and socket id -1 for each CPU past them (perf prints -1: not a host CPU).
 * 0 and a malloc'd *ret (*ret_len bytes); -EBADMSG when d does not parse as a topology of
 * host_cpus CPUs (leave it out then), -EINVAL when cpus < host_cpus, -ENOMEM. */
int perf_topology_pad(const uint8_t *d, size_t len, uint32_t host_cpus, uint32_t cpus, uint8_t **ret,
		      size_t *ret_len);
