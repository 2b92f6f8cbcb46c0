// SPDX-License-Identifier: GPL-2.0-only
/* Fuzz target: a merged perf.data through trace-collector report (collector/report/): the
 * reader (formats, ID_INDEX, COMM, samples), the state machine, and all three outputs. Seeds:
 * real merged files cut by tests/fuzz/capture-report.py, one of two VMs (merge A --guest B, kept
 * by e2e report-merged-vms with VT_KEEP: guest_sched and guest2_sched events, each VM's vCPU
 * the culprit of the other's stalls). */
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "report.h"
#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct report_opts o = { .min_ns = size ? data[0] * 100000ull : 0, .to = UINT64_MAX, .bands = true };
	struct report_filter f = { .vcpu = -1, .top = 10 };
	struct report r;
	char err[512];
	int fd = memfd_create("fuzz-report", MFD_CLOEXEC);
	FILE *null = fopen("/dev/null", "w");

	if (fd < 0 || !null || util_write_full(fd, data, size) < 0 || report_init(&r, &o) < 0) {
		if (fd >= 0)
			close(fd);
		if (null)
			fclose(null);
		return 0;
	}
	if (report_read_fd(&r, fd, err, sizeof(err)) == 0) { /* fd is the reader's now */
		report_sort_stalls(&r);
		report_text(&r, &f, null);
		report_json(&r, &f, null);
		report_svg(&r, &f, null);
		report_summary_line(&r, null);
		f.vcpu = 1;
		report_text(&r, &f, null);
	}
	report_free(&r);
	fclose(null);
	return 0;
}
