// SPDX-License-Identifier: GPL-2.0-only
#include "kvmclock.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

int kvmclock_find(const char *debugfs, pid_t qemu_pid, char *ret_dir, size_t len)
{
	char path[512], found[800] = "";
	DIR *d;
	struct dirent *de;
	int n = 0;

	snprintf(path, sizeof(path), "%s/kvm", debugfs);
	d = opendir(path);
	if (!d)
		return -ENOENT;
	while ((de = readdir(d))) {
		long pid, fd;
		char tail;

		if (sscanf(de->d_name, "%ld-%ld%c", &pid, &fd, &tail) != 2 || pid != qemu_pid)
			continue;
		if ((size_t)snprintf(found, sizeof(found), "%s/%.255s", path, de->d_name) >= sizeof(found)) {
			closedir(d);
			return -ENAMETOOLONG;
		}
		n++;
	}
	closedir(d);
	if (n == 0)
		return -ENOENT;
	if (n > 1)
		return -EMLINK;
	if (strlen(found) >= len)
		return -ENAMETOOLONG;
	strcpy(ret_dir, found);
	return 0;
}

static int read_num(const char *dir, unsigned vcpu, const char *name, bool is_signed, uint64_t *ret)
{
	char path[640];
	_cleanup_free_ char *buf = NULL;
	char *end;
	int r;

	snprintf(path, sizeof(path), "%s/vcpu%u/%s", dir, vcpu, name);
	r = util_read_file(path, 64, &buf, NULL);
	if (r < 0)
		return r;
	errno = 0;
	*ret = is_signed ? (uint64_t)strtoll(buf, &end, 10) : strtoull(buf, &end, 10);
	if (errno || end == buf || (*end && *end != '\n'))
		return -EBADMSG;
	return 0;
}

int kvmclock_read(const char *vm_dir, struct kvmclock_vm *ret)
{
	struct kvmclock_vm vm = { 0 };
	int r;

	if (strlen(vm_dir) >= sizeof(vm.dir))
		return -ENAMETOOLONG;
	strcpy(vm.dir, vm_dir);
	for (unsigned i = 0; i < KVMCLOCK_MAX_VCPUS; i++) {
		uint64_t off, ratio = 0, frac = 0;

		r = read_num(vm_dir, i, "tsc-offset", true, &off);
		if (r == -ENOENT)
			break;
		if (r < 0)
			return r;
		r = read_num(vm_dir, i, "tsc-scaling-ratio", false, &ratio);
		if (r < 0 && r != -ENOENT)
			return r;
		r = read_num(vm_dir, i, "tsc-scaling-ratio-frac-bits", false, &frac);
		if (r < 0 && r != -ENOENT)
			return r;
		if (frac > 63)
			return -EBADMSG;
		vm.vcpu[i] = (struct tsc_kvm){ .offset = (int64_t)off, .ratio = ratio, .frac_bits = (uint32_t)frac };
		vm.nvcpus = i + 1;
	}
	if (vm.nvcpus == 0)
		return -ENOENT;
	*ret = vm;
	return 0;
}

int kvmclock_append(FILE *f, uint64_t host_ns, const struct kvmclock_vm *vm)
{
	for (unsigned i = 0; i < vm->nvcpus; i++)
		fprintf(f, "%" PRIu64 " %u %" PRId64 " %" PRIu64 " %u\n", host_ns, i, vm->vcpu[i].offset,
			vm->vcpu[i].ratio, vm->vcpu[i].frac_bits);
	return ferror(f) ? -EIO : 0;
}
