// SPDX-License-Identifier: GPL-2.0-only
/* The kvm clock method on a fixture debugfs tree (these machines cannot boot a KVM guest). */
#include <errno.h>
#include <stdlib.h>

#include "harness.h"
#include "kvmclock.h"

#define FIXTURE VT_SOURCE_ROOT "/tests/fixtures/kvm-debugfs"

TEST(find_vm_dir)
{
	char dir[512];

	CHECK_INT(kvmclock_find(FIXTURE, 4242, dir, sizeof(dir)), ==, 0);
	CHECK_STR(dir, FIXTURE "/kvm/4242-11");
	CHECK_INT(kvmclock_find(FIXTURE, 4243, dir, sizeof(dir)), ==, -ENOENT);
	CHECK_INT(kvmclock_find("/nonexistent", 4242, dir, sizeof(dir)), ==, -ENOENT);
}

TEST(read_vcpus)
{
	struct kvmclock_vm *vm = calloc(1, sizeof(*vm));

	CHECK(vm);
	CHECK_INT(kvmclock_read(FIXTURE "/kvm/4242-11", vm), ==, 0);
	CHECK_INT(vm->nvcpus, ==, 2);
	CHECK_INT(vm->vcpu[0].offset, ==, -1234567890123ll);
	CHECK_INT(vm->vcpu[0].ratio, ==, 225179981368524ll);
	CHECK_INT(vm->vcpu[0].frac_bits, ==, 48);
	CHECK_INT(vm->vcpu[1].offset, ==, 5000);
	CHECK_INT(vm->vcpu[1].ratio, ==, 0); /* no scaling files: unscaled */
	/* Guest TSC of vCPU 0 back to the host TSC it was derived from. */
	CHECK_INT(tsc_guest_to_host(&vm->vcpu[0], 97530863319752ull), >=, 123456789012344ll);
	CHECK_INT(tsc_guest_to_host(&vm->vcpu[1], 1005000), ==, 1000000);
	free(vm);
}
