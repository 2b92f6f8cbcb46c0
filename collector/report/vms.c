// SPDX-License-Identifier: GPL-2.0-only
/* The report's VMs and their vCPU threads: the VMs of the file (by QEMU pid, and the QEMUs each
 * migrated to), the map of QEMU vCPU threads (tid -> VM and vCPU, open addressing), and the vCPU
 * threads of QEMUs not in the file. stall.c follows what these threads do. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"
#include "util.h"

static size_t map_slot(const struct report *r, int32_t tid)
{
	size_t i = ((uint32_t)tid * 2654435761u) & (r->map_cap - 1);

	while (r->map_tid[i] && r->map_tid[i] != tid)
		i = (i + 1) & (r->map_cap - 1);
	return i;
}

/* (vm, vcpu) of a vCPU thread, or NULL. */
struct report_vcpu *report_map_find(const struct report *r, int32_t tid, uint32_t *ret_vm)
{
	size_t i;
	uint32_t v;

	if (tid <= 0)
		return NULL;
	i = map_slot(r, tid);
	if (!r->map_tid[i])
		return NULL;
	v = r->map_val[i];
	if (ret_vm)
		*ret_vm = v >> 16;
	return &r->vms[v >> 16].vcpus[v & 0xffff];
}

static int map_grow(struct report *r)
{
	int32_t *ot = r->map_tid;
	uint32_t *ov = r->map_val;
	size_t oc = r->map_cap;

	r->map_cap *= 2;
	r->map_tid = calloc(r->map_cap, sizeof(*r->map_tid));
	r->map_val = calloc(r->map_cap, sizeof(*r->map_val));
	if (!r->map_tid || !r->map_val) {
		free(r->map_tid);
		free(r->map_val);
		r->map_tid = ot, r->map_val = ov, r->map_cap = oc;
		return -ENOMEM;
	}
	for (size_t i = 0; i < oc; i++)
		if (ot[i] > 0) {
			size_t s = map_slot(r, ot[i]);

			r->map_tid[s] = ot[i];
			r->map_val[s] = ov[i];
		}
	free(ot);
	free(ov);
	return 0;
}

long report_vm_find(const struct report *r, int32_t machine_pid)
{
	for (size_t i = 0; i < r->n_vms; i++)
		if (r->vms[i].machine_pid == machine_pid)
			return (long)i;
	return -1;
}

long report_vm_of_qemu(const struct report *r, int32_t pid)
{
	long vm = report_vm_find(r, pid);

	for (size_t i = 0; vm < 0 && pid > 0 && i < r->n_vms; i++)
		for (uint32_t k = 0; k < r->vms[i].n_migrations; k++)
			if (r->vms[i].qemu_to[k] == pid)
				return (long)i;
	return vm;
}

/* A vCPU thread no longer the VM's (its QEMU migrated away): out of the map, a tombstone
 * (-1) in its slot so that the probes past it go on. */
void report_map_forget(struct report *r, int32_t tid)
{
	size_t i;

	if (tid <= 0)
		return;
	i = map_slot(r, tid);
	if (r->map_tid[i] == tid)
		r->map_tid[i] = -1;
}

/* A guest's name: printable ASCII only, the rest '?' (the guest or the file may be hostile). */
void report_comm_clean(char *dst, const char *src)
{
	size_t i;

	for (i = 0; i < REPORT_COMM - 1 && src && src[i]; i++)
		dst[i] = (unsigned char)src[i] >= 0x20 && (unsigned char)src[i] < 0x7f ? src[i] : '?';
	dst[i] = '\0';
	if (!i)
		snprintf(dst, REPORT_COMM, "?");
}

void report_vm_name(struct report *r, uint32_t vm, const char *name)
{
	if (vm < r->n_vms)
		report_comm_clean(r->vms[vm].name, name);
}

const char *report_vm_label(const struct report *r, long vm, int32_t machine_pid, char *buf, size_t len)
{
	if (vm >= 0 && (size_t)vm < r->n_vms && r->vms[vm].name[0])
		snprintf(buf, len, "%s", r->vms[vm].name);
	else
		snprintf(buf, len, "%d", vm >= 0 && (size_t)vm < r->n_vms ? r->vms[vm].machine_pid : machine_pid);
	return buf;
}

int report_vm_add(struct report *r, int32_t machine_pid, uint32_t n_vcpus, uint32_t *ret_vm)
{
	long f = report_vm_find(r, machine_pid);
	struct report_vm *vm, *nv;

	if (!n_vcpus || n_vcpus > REPORT_MAX_VCPUS)
		return -EINVAL;
	if (f >= 0) {
		vm = &r->vms[f];
		if (n_vcpus > vm->n_vcpus) {
			struct report_vcpu *c = realloc(vm->vcpus, n_vcpus * sizeof(*c));

			if (!c)
				return -ENOMEM;
			memset(c + vm->n_vcpus, 0, (n_vcpus - vm->n_vcpus) * sizeof(*c));
			for (uint32_t i = vm->n_vcpus; i < n_vcpus; i++)
				c[i].tid = -1;
			vm->vcpus = c;
			vm->n_vcpus = n_vcpus;
		}
		*ret_vm = (uint32_t)f;
		return 0;
	}
	if (r->n_vms >= 256)
		return -E2BIG;
	nv = realloc(r->vms, (r->n_vms + 1) * sizeof(*nv));
	if (!nv)
		return -ENOMEM;
	r->vms = nv;
	vm = &r->vms[r->n_vms];
	memset(vm, 0, sizeof(*vm));
	vm->machine_pid = machine_pid;
	vm->n_vcpus = n_vcpus;
	vm->vcpus = calloc(n_vcpus, sizeof(*vm->vcpus));
	if (!vm->vcpus)
		return -ENOMEM;
	for (uint32_t i = 0; i < n_vcpus; i++)
		vm->vcpus[i].tid = -1;
	*ret_vm = (uint32_t)r->n_vms++;
	return 0;
}

int report_vcpu_thread(struct report *r, uint32_t vm, uint32_t vcpu, int32_t tid)
{
	struct report_vcpu *v;
	size_t s;

	if (vm >= r->n_vms || vcpu >= r->vms[vm].n_vcpus || tid <= 0)
		return -EINVAL;
	v = &r->vms[vm].vcpus[vcpu];
	if (v->tid == tid || report_map_find(r, tid, NULL))
		return 0; /* known, or another vCPU's already (a reused tid: keep the first) */
	if (v->tid > 0)
		return 0;
	if ((r->map_n + 1) * 2 > r->map_cap && map_grow(r) < 0)
		return -ENOMEM;
	s = map_slot(r, tid);
	r->map_tid[s] = tid;
	r->map_val[s] = vm << 16 | vcpu;
	r->map_n++;
	v->tid = tid;
	r->vms[vm].threads_named++;
	return 0;
}

int report_foreign_thread(struct report *r, int32_t pid, int32_t tid, int32_t vcpu)
{
	struct report_foreign *f;

	for (size_t i = 0; i < r->n_foreign; i++)
		if (r->foreign[i].tid == tid)
			return 0;
	if (r->n_foreign >= 65536)
		return -E2BIG;
	f = realloc(r->foreign, (r->n_foreign + 1) * sizeof(*f));
	if (!f)
		return -ENOMEM;
	r->foreign = f;
	r->foreign[r->n_foreign++] = (struct report_foreign){ tid, pid, vcpu };
	return 0;
}

long report_vcpu_of(const struct report *r, int32_t tid, int32_t *ret_vcpu, int32_t *ret_machine_pid)
{
	uint32_t vm;
	const struct report_vcpu *v = report_map_find(r, tid, &vm);

	if (v) {
		*ret_vcpu = (int32_t)(v - r->vms[vm].vcpus);
		*ret_machine_pid = r->vms[vm].machine_pid;
		return (long)vm;
	}
	for (size_t i = 0; i < r->n_foreign; i++)
		if (r->foreign[i].tid == tid) {
			*ret_vcpu = r->foreign[i].vcpu;
			*ret_machine_pid = r->foreign[i].pid;
			return -1;
		}
	*ret_vcpu = -1;
	*ret_machine_pid = -1;
	return -1;
}
