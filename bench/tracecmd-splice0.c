// SPDX-License-Identifier: GPL-2.0-only
/*
 * LD_PRELOAD shim for bench/tracecmd-fifo.sh --fix-splice: trace-cmd's host reader of a guest
 * FIFO (3.1.6 with libtracefs 1.6.4, and 3.3.1 with 1.8.1: tracefs_cpu_pipe on a tracefs_cpu made
 * by tracefs_cpu_alloc_fd, whose pipe_size nothing sets) calls splice() with length 0, which moves
 * nothing, so the FIFOs are read only by the final flush at stop. A zero length becomes 1 MiB
 * here; every other call is passed on unchanged.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/types.h>

ssize_t splice(int fd_in, loff_t *off_in, int fd_out, loff_t *off_out, size_t len, unsigned int flags)
{
	static ssize_t (*real)(int, loff_t *, int, loff_t *, size_t, unsigned int);

	if (!real)
		real = (ssize_t (*)(int, loff_t *, int, loff_t *, size_t, unsigned int))dlsym(RTLD_NEXT, "splice");
	return real(fd_in, off_in, fd_out, off_out, len ? len : 1 << 20, flags);
}
