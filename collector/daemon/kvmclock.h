/* SPDX-License-Identifier: GPL-2.0-only */
/* The kvm clock method: per-vCPU TSC offset and scaling from KVM's debugfs. */
#pragma once

#include <stdio.h>
#include <sys/types.h>

#include "tsc.h"

#define KVMCLOCK_MAX_VCPUS 256

struct kvmclock_vm {
	char dir[512];     /* <debugfs>/kvm/<pid>-<fd> */
	unsigned nvcpus;
	struct tsc_kvm vcpu[KVMCLOCK_MAX_VCPUS];
};

/* Finds the KVM debugfs dir of qemu_pid under debugfs (normally /sys/kernel/debug):
 * -ENOENT when there is none (TCG guest, no debugfs), -EMLINK when the pid has several VMs. */
int kvmclock_find(const char *debugfs, pid_t qemu_pid, char *ret_dir, size_t len);
/* Reads every vcpuN/tsc-offset (+ tsc-scaling-ratio, -frac-bits when present). */
int kvmclock_read(const char *vm_dir, struct kvmclock_vm *ret);
/* Appends one reading to kvm.samples: "host_ns vcpu offset ratio frac_bits" per vCPU. */
int kvmclock_append(FILE *f, uint64_t host_ns, const struct kvmclock_vm *vm);
