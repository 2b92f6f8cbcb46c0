// SPDX-License-Identifier: GPL-2.0-only
/* Host perf's event lists beside KVM's mediated PMU (collector/daemon/hostevents.c). This host
 * has no mediated PMU (Linux 6.20+): the arguments are checked here, the kernel's refusal is not
 * (docs/status.md). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "hostevents.h"

static const char *guard(const char *in, struct hostevents_guarded *g)
{
	static char out[1024];

	*g = (struct hostevents_guarded){ 0 };
	return hostevents_guard(in, out, sizeof(out), g) == 0 ? out : "(error)";
}

TEST(hardware_events_get_H)
{
	struct hostevents_guarded g;

	CHECK_STR(guard("cycles", &g), "cycles:H");
	CHECK_INT(g.changed, ==, 1);
	CHECK_STR(guard("cycles,instructions:u,sched:sched_switch", &g), "cycles:H,instructions:uH,sched:sched_switch");
	CHECK_INT(g.changed, ==, 2);
	CHECK_STR(guard("L1-dcache-load-misses,LLC-loads:k,r003c,branch-misses", &g),
		  "L1-dcache-load-misses:H,LLC-loads:kH,r003c:H,branch-misses:H");
	CHECK_INT(g.changed, ==, 4);
	CHECK_STR(guard("cpu/event=0x3c,umask=0x00/,cpu_core/cycles/u", &g), "cpu/event=0x3c,umask=0x00/H,cpu_core/cycles/uH");
	CHECK_INT(g.changed, ==, 2);
}

TEST(others_left_alone)
{
	struct hostevents_guarded g;

	/* tracepoints (the daemon's defaults), software events, uncore PMUs, explicit H */
	CHECK_STR(guard("sched:sched_switch,sched:sched_wakeup,kvm:kvm_entry,kvm:kvm_exit", &g),
		  "sched:sched_switch,sched:sched_wakeup,kvm:kvm_entry,kvm:kvm_exit");
	CHECK_STR(guard("cpu-clock,task-clock,page-faults,uncore_imc/cas_count_read/", &g),
		  "cpu-clock,task-clock,page-faults,uncore_imc/cas_count_read/");
	CHECK_STR(guard("cycles:H,instructions:uH", &g), "cycles:H,instructions:uH");
	CHECK_INT(g.changed, ==, 0);
	CHECK_INT(g.guest, ==, 0);
	/* a tracepoint whose event name looks like modifiers is no hardware event */
	CHECK_STR(guard("kvm:ukh", &g), "kvm:ukh");
	CHECK_STR(guard("rx_bytes", &g), "rx_bytes");
}

TEST(guest_mode_counted_not_changed)
{
	struct hostevents_guarded g;

	CHECK_STR(guard("cycles:G,instructions", &g), "cycles:G,instructions:H");
	CHECK_INT(g.guest, ==, 1);
	CHECK_INT(g.changed, ==, 1);
}

TEST(groups)
{
	struct hostevents_guarded g;

	CHECK_STR(guard("{cycles,instructions}:u,sched:sched_switch", &g), "{cycles:H,instructions:H}:u,sched:sched_switch");
	CHECK_INT(g.changed, ==, 2);
	*(&g) = (struct hostevents_guarded){ 0 };
	CHECK_INT(hostevents_guard("{cycles,instructions", (char[64]){ 0 }, 64, &g), ==, -EINVAL);
}

TEST(bounded_output)
{
	struct hostevents_guarded g = { 0 };
	char small[8];

	CHECK_INT(hostevents_guard("cycles", small, sizeof(small), &g), ==, -ENOBUFS); /* "cycles:H" + NUL is 9 */
	CHECK_INT(hostevents_guard("cycles", small, 0, &g), ==, -ENOBUFS);
}

/* The module parameters, under a sys root made here. */
TEST(mediated_pmu_parameter)
{
	char root[] = "/tmp/vt-hostevents.XXXXXX", path[256], which[64] = "";
	FILE *f;

	CHECK(mkdtemp(root) != NULL);
	CHECK(!hostevents_mediated_pmu(root, which, sizeof(which)));
	snprintf(path, sizeof(path), "mkdir -p %s/module/kvm_amd/parameters %s/module/kvm/parameters", root, root);
	CHECK_INT(system(path), ==, 0);
	snprintf(path, sizeof(path), "%s/module/kvm/parameters/enable_mediated_pmu", root);
	CHECK((f = fopen(path, "w")) != NULL);
	fputs("N\n", f);
	fclose(f);
	CHECK(!hostevents_mediated_pmu(root, which, sizeof(which)));
	snprintf(path, sizeof(path), "%s/module/kvm_amd/parameters/enable_mediated_pmu", root);
	CHECK((f = fopen(path, "w")) != NULL);
	fputs("Y\n", f);
	fclose(f);
	CHECK(hostevents_mediated_pmu(root, which, sizeof(which)));
	CHECK_STR(which, "kvm_amd.enable_mediated_pmu");
	snprintf(path, sizeof(path), "rm -rf %s", root);
	CHECK_INT(system(path), ==, 0);
}
