// SPDX-License-Identifier: GPL-2.0-only
/* The report's state machine (collector/report/stall.c) on hand-made event sequences: host
 * switches, wakeups, kvm exits, losses and guest switches in time order, as read.c feeds them. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "report.h"

#define MS 1000000ull
#define R 0 /* prev_state: runnable (preempted) */
#define S 1 /* asleep */

static struct report rep;
static uint32_t vm_a, vm_b;

/* VM 100: vCPU 0 = tid 1001, vCPU 1 = tid 1002. */
static void setup(uint64_t min_ns)
{
	struct report_opts o = { .min_ns = min_ns, .to = UINT64_MAX };

	report_free(&rep);
	report_init(&rep, &o);
	rep.has_wakeup = true;
	report_vm_add(&rep, 100, 2, &vm_a);
	report_vcpu_thread(&rep, vm_a, 0, 1001);
	report_vcpu_thread(&rep, vm_a, 1, 1002);
}

static void sw(uint64_t t, uint32_t cpu, int32_t prev, const char *pc, int64_t st, int32_t next, const char *nc)
{
	report_host_switch(&rep, t, cpu, prev, pc, st, next, nc);
}

static void finish(uint64_t t)
{
	report_guest_task(&rep, vm_a, 1, t, 1, "init"); /* the guest's trace goes on past the stalls */
	rep.host_last = t;
	report_end(&rep);
	report_sort_stalls(&rep);
}

/* vCPU 0 runs guest task "work" on host CPU 0, a host "hog" preempts it 10..30 ms. */
TEST(preempted_by_host_task)
{
	setup(MS);
	report_guest_switch(&rep, vm_a, 0, 0, 55, "work");
	sw(1 * MS, 0, 0, "swapper/0", R, 1001, "CPU 0/KVM");
	sw(10 * MS, 0, 1001, "CPU 0/KVM", R, 500, "hog");
	sw(30 * MS, 0, 500, "hog", S, 1001, "CPU 0/KVM");
	finish(40 * MS);
	CHECK_INT(rep.n_stalls, ==, 1);
	CHECK_INT(rep.stalls[0].vcpu, ==, 0);
	CHECK_INT(rep.stalls[0].start, ==, 10 * MS);
	CHECK_INT(rep.stalls[0].end - rep.stalls[0].start, ==, 20 * MS);
	CHECK_INT(rep.stalls[0].cause, ==, REPORT_PREEMPTED);
	CHECK_STR(rep.stalls[0].culprit.comm, "hog");
	CHECK_INT(rep.stalls[0].culprit.pid, ==, 500);
	CHECK_INT(rep.stalls[0].host_cpu, ==, 0);
	CHECK_STR(rep.stalls[0].guest_comm, "work");
	CHECK_INT(rep.stalls[0].guest_pid, ==, 55);
	CHECK_INT(rep.stalls[0].culprit_vcpu, ==, -1);
	CHECK_INT(rep.vms[vm_a].vcpus[0].stalled_ns[REPORT_PREEMPTED], ==, 20 * MS);
	CHECK_INT(rep.vms[vm_a].vcpus[0].running_ns, ==, 9 * MS + 10 * MS); /* 1..10 and 30..40 */
}

/* The culprit is the task that ran longest on the CPU, not the first one. */
TEST(culprit_is_longest_runner)
{
	setup(MS);
	report_guest_switch(&rep, vm_a, 0, 0, 55, "work");
	sw(1 * MS, 0, 0, "swapper/0", R, 1001, "CPU 0/KVM");
	sw(10 * MS, 0, 1001, "CPU 0/KVM", R, 600, "short");
	sw(11 * MS, 0, 600, "short", S, 500, "hog");
	sw(30 * MS, 0, 500, "hog", S, 1001, "CPU 0/KVM");
	finish(40 * MS);
	CHECK_INT(rep.n_stalls, ==, 1);
	CHECK_STR(rep.stalls[0].culprit.comm, "hog");
	CHECK_INT(rep.stalls[0].culprit.ns, ==, 19 * MS);
}

/* Before the thread's first host switch its state is unknown: nothing is judged there, and a
 * switch out that no switch in closes is not a stall either. */
TEST(unknown_before_first_switch_and_at_end)
{
	setup(MS);
	report_guest_switch(&rep, vm_a, 0, 0, 55, "work");
	sw(20 * MS, 0, 500, "hog", S, 1001, "CPU 0/KVM"); /* the first we see: switched in */
	sw(50 * MS, 0, 1001, "CPU 0/KVM", R, 500, "hog"); /* out, never back in */
	report_guest_task(&rep, vm_a, 0, 60 * MS, 55, "work");
	rep.host_last = 70 * MS;
	report_end(&rep);
	CHECK_INT(rep.n_stalls, ==, 0);
	CHECK_INT(rep.vms[vm_a].vcpus[0].n_stalls, ==, 0);
	CHECK_INT(rep.vms[vm_a].vcpus[0].first_switch, ==, 20 * MS);
	CHECK_INT(rep.vms[vm_a].vcpus[0].running_ns, ==, 30 * MS);
}

/* An idle guest vCPU whose thread sleeps on the host is no stall; neither is an interval in
 * which the guest's switch to idle lands (a guest time a little late after conversion). */
TEST(idle_is_not_a_stall)
{
	setup(MS);
	report_guest_switch(&rep, vm_a, 0, 0, 0, "swapper/0");
	sw(1 * MS, 0, 0, "swapper/0", R, 1001, "CPU 0/KVM");
	sw(10 * MS, 0, 1001, "CPU 0/KVM", S, 0, "swapper/0");
	sw(30 * MS, 0, 0, "swapper/0", R, 1001, "CPU 0/KVM");
	report_guest_switch(&rep, vm_a, 0, 31 * MS, 55, "work");
	sw(40 * MS, 0, 1001, "CPU 0/KVM", S, 0, "swapper/0");
	report_guest_switch(&rep, vm_a, 0, 40 * MS + 100000, 0, "swapper/0"); /* converted late */
	sw(60 * MS, 0, 0, "swapper/0", R, 1001, "CPU 0/KVM");
	finish(70 * MS);
	CHECK_INT(rep.n_stalls, ==, 0);
	CHECK_INT(rep.vms[vm_a].vcpus[0].off_idle_ns, ==, 40 * MS);
}

/* A switched-out interval the guest traced in on that vCPU is no stall: its thread ran, the host
 * recording lacks the switch in (a flight recorder's overwritten host ring). A record of another
 * vCPU, or one within the conversion margin of an edge, changes nothing. */
TEST(guest_traced_inside_is_not_a_stall)
{
	setup(MS);
	report_guest_switch(&rep, vm_a, 0, 0, 55, "work");
	sw(1 * MS, 0, 0, "swapper/0", R, 1001, "CPU 0/KVM");
	sw(10 * MS, 0, 1001, "CPU 0/KVM", S, 0, "swapper/0");
	report_guest_task(&rep, vm_a, 0, 500 * MS, 55, "work"); /* vCPU 0 traced: it ran */
	sw(1500 * MS, 0, 0, "swapper/0", R, 1001, "CPU 0/KVM");
	sw(1600 * MS, 0, 1001, "CPU 0/KVM", S, 0, "swapper/0");
	report_guest_task(&rep, vm_a, 1, 1700 * MS, 56, "other"); /* vCPU 1's: not this one's */
	report_guest_task(&rep, vm_a, 0, 1602 * MS, 55, "work");  /* 2 ms in: a conversion's error */
	sw(1800 * MS, 0, 0, "swapper/0", R, 1001, "CPU 0/KVM");
	finish(1900 * MS);
	CHECK_INT(rep.vms[vm_a].vcpus[0].ran_unseen, ==, 1);
	CHECK_INT(rep.n_stalls, ==, 1);
	CHECK_INT(rep.stalls[0].start, ==, 1600 * MS);
	CHECK_INT(rep.stalls[0].cause, ==, REPORT_HOST_BLOCKED);
}

/* Asleep on the host (host_blocked): the waker is the culprit. Woken but then mostly waiting
 * for its CPU: preempted by what ran there. */
TEST(blocked_waker_and_woken_then_preempted)
{
	setup(MS);
	report_guest_switch(&rep, vm_a, 0, 0, 55, "work");
	sw(1 * MS, 1, 0, "swapper/1", R, 77, "iothread");
	sw(1 * MS, 0, 0, "swapper/0", R, 1001, "CPU 0/KVM");
	sw(10 * MS, 0, 1001, "CPU 0/KVM", S, 0, "swapper/0");
	report_host_wakeup(&rep, 18 * MS, 1, 77, 1001, 0);
	sw(19 * MS, 0, 0, "swapper/0", R, 1001, "CPU 0/KVM");
	/* second: asleep 2 ms, then 20 ms behind "hog" on CPU 0 */
	sw(30 * MS, 0, 1001, "CPU 0/KVM", S, 0, "swapper/0");
	report_host_wakeup(&rep, 32 * MS, 1, 77, 1001, 0);
	sw(32 * MS + 1000, 0, 0, "swapper/0", R, 500, "hog");
	sw(52 * MS, 0, 500, "hog", S, 1001, "CPU 0/KVM");
	finish(60 * MS);
	CHECK_INT(rep.n_stalls, ==, 2);
	CHECK_INT(rep.stalls[0].start, ==, 30 * MS);
	CHECK_INT(rep.stalls[0].cause, ==, REPORT_PREEMPTED);
	CHECK_STR(rep.stalls[0].culprit.comm, "hog");
	CHECK_INT(rep.stalls[0].woken_at, ==, 32 * MS);
	CHECK_INT(rep.stalls[1].start, ==, 10 * MS);
	CHECK_INT(rep.stalls[1].cause, ==, REPORT_HOST_BLOCKED);
	CHECK_STR(rep.stalls[1].culprit.comm, "iothread");
	CHECK_INT(rep.stalls[1].culprit.pid, ==, 77);
}

/* No sched_wakeup recorded: host_blocked with no culprit, and the reason says why. */
TEST(blocked_without_wakeup_says_why)
{
	setup(MS);
	rep.has_wakeup = false;
	report_guest_switch(&rep, vm_a, 0, 0, 55, "work");
	sw(1 * MS, 0, 0, "swapper/0", R, 1001, "CPU 0/KVM");
	sw(10 * MS, 0, 1001, "CPU 0/KVM", S, 0, "swapper/0");
	sw(19 * MS, 0, 0, "swapper/0", R, 1001, "CPU 0/KVM");
	finish(30 * MS);
	CHECK_INT(rep.n_stalls, ==, 1);
	CHECK_INT(rep.stalls[0].cause, ==, REPORT_HOST_BLOCKED);
	CHECK_INT(rep.stalls[0].culprit.pid, ==, -1); /* its CPU idled: nothing took it */
	CHECK(rep.stalls[0].why && strstr(rep.stalls[0].why, "sched_wakeup"));
}

/* Asleep at the switch out, its wakeup not recorded (this host's perf loses events of the idle
 * task's context), a hog on its CPU meanwhile: host_blocked, the hog named, and why. */
TEST(blocked_wakeup_missing_names_who_ran)
{
	setup(MS);
	report_guest_switch(&rep, vm_a, 0, 0, 55, "work");
	sw(1 * MS, 0, 0, "swapper/0", R, 1001, "CPU 0/KVM");
	sw(10 * MS, 0, 1001, "CPU 0/KVM", S, 500, "hog");
	sw(60 * MS, 0, 500, "hog", S, 1001, "CPU 0/KVM");
	finish(70 * MS);
	CHECK_INT(rep.n_stalls, ==, 1);
	CHECK_INT(rep.stalls[0].cause, ==, REPORT_HOST_BLOCKED);
	CHECK_STR(rep.stalls[0].culprit.comm, "hog");
	CHECK(rep.stalls[0].why && strstr(rep.stalls[0].why, "lacks it"));
}

/* Asleep in the host during a KVM exit: vm_exit with the reason; exit time by reason. */
TEST(vm_exit)
{
	setup(MS);
	report_guest_switch(&rep, vm_a, 0, 0, 55, "work");
	sw(1 * MS, 0, 0, "swapper/0", R, 1001, "CPU 0/KVM");
	report_host_kvm(&rep, 9 * MS, 1001, true, 30);
	sw(10 * MS, 0, 1001, "CPU 0/KVM", S, 0, "swapper/0");
	report_host_wakeup(&rep, 24 * MS, 0, 0, 1001, 0);
	sw(25 * MS, 0, 0, "swapper/0", R, 1001, "CPU 0/KVM");
	report_host_kvm(&rep, 26 * MS, 1001, false, 0);
	finish(30 * MS);
	CHECK_INT(rep.n_stalls, ==, 1);
	CHECK_INT(rep.stalls[0].cause, ==, REPORT_VM_EXIT);
	CHECK_INT(rep.stalls[0].exit_reason, ==, 30);
	CHECK_STR(rep.stalls[0].culprit.comm, "swapper/0");
	CHECK_INT(rep.vms[vm_a].vcpus[0].exit_ns, ==, 17 * MS);
	CHECK_INT(rep.vms[vm_a].vcpus[0].n_exits, ==, 1);
}

/* Two VMs in one file: the culprit that is VM 200's vCPU 1 thread is named so. */
TEST(culprit_is_other_vms_vcpu)
{
	setup(MS);
	report_vm_add(&rep, 200, 2, &vm_b);
	report_vcpu_thread(&rep, vm_b, 1, 2002);
	report_guest_switch(&rep, vm_a, 0, 0, 55, "work");
	sw(1 * MS, 3, 0, "swapper/3", R, 1001, "CPU 0/KVM");
	sw(10 * MS, 3, 1001, "CPU 0/KVM", R, 2002, "CPU 1/KVM");
	sw(25 * MS, 3, 2002, "CPU 1/KVM", R, 1001, "CPU 0/KVM");
	finish(30 * MS);
	CHECK_INT(rep.n_stalls, ==, 1);
	CHECK_INT(rep.stalls[0].culprit.pid, ==, 2002);
	CHECK_INT(rep.stalls[0].culprit_vm, ==, (int)vm_b);
	CHECK_INT(rep.stalls[0].culprit_machine_pid, ==, 200);
	CHECK_INT(rep.stalls[0].culprit_vcpu, ==, 1);
	CHECK_INT(rep.stalls[0].host_cpu, ==, 3);
}

/* A QEMU with no guest data in the file (named from host COMM records) is named too. */
TEST(culprit_is_foreign_vcpu)
{
	setup(MS);
	report_foreign_thread(&rep, 300, 3001, 0);
	report_guest_switch(&rep, vm_a, 1, 0, 56, "work");
	sw(1 * MS, 1, 0, "swapper/1", R, 1002, "CPU 1/KVM");
	sw(10 * MS, 1, 1002, "CPU 1/KVM", R, 3001, "CPU 0/KVM");
	sw(25 * MS, 1, 3001, "CPU 0/KVM", R, 1002, "CPU 1/KVM");
	finish(30 * MS);
	CHECK_INT(rep.n_stalls, ==, 1);
	CHECK_INT(rep.stalls[0].vcpu, ==, 1);
	CHECK_INT(rep.stalls[0].culprit_vm, ==, -1);
	CHECK_INT(rep.stalls[0].culprit_machine_pid, ==, 300);
	CHECK_INT(rep.stalls[0].culprit_vcpu, ==, 0);
}

/* A host loss makes every thread's state unknown: the interval across it is not judged. */
TEST(host_loss_drops_the_interval)
{
	setup(MS);
	report_guest_switch(&rep, vm_a, 0, 0, 55, "work");
	sw(1 * MS, 0, 0, "swapper/0", R, 1001, "CPU 0/KVM");
	sw(10 * MS, 0, 1001, "CPU 0/KVM", R, 500, "hog");
	report_host_lost(&rep, 15 * MS);
	sw(30 * MS, 0, 500, "hog", S, 1001, "CPU 0/KVM");
	finish(40 * MS);
	CHECK_INT(rep.n_stalls, ==, 0);
	CHECK_INT(rep.vms[vm_a].vcpus[0].n_stalls, ==, 0);
}

/* A stall after the guest's last record is not judged (its task is no longer known). */
TEST(after_last_guest_record_not_judged)
{
	setup(MS);
	report_guest_switch(&rep, vm_a, 0, 0, 55, "work");
	sw(1 * MS, 0, 0, "swapper/0", R, 1001, "CPU 0/KVM");
	sw(10 * MS, 0, 1001, "CPU 0/KVM", R, 500, "hog");
	sw(30 * MS, 0, 500, "hog", S, 1001, "CPU 0/KVM");
	rep.host_last = 40 * MS;
	report_end(&rep);
	CHECK_INT(rep.n_stalls, ==, 0);
	CHECK_INT(rep.vms[vm_a].not_judged, ==, 1);
}

/* Stalls under --min-ms count in the totals, not in the list. */
TEST(min_filter)
{
	setup(5 * MS);
	report_guest_switch(&rep, vm_a, 0, 0, 55, "work");
	sw(1 * MS, 0, 0, "swapper/0", R, 1001, "CPU 0/KVM");
	sw(10 * MS, 0, 1001, "CPU 0/KVM", R, 500, "hog");
	sw(12 * MS, 0, 500, "hog", S, 1001, "CPU 0/KVM");
	sw(20 * MS, 0, 1001, "CPU 0/KVM", R, 500, "hog");
	sw(30 * MS, 0, 500, "hog", S, 1001, "CPU 0/KVM");
	finish(40 * MS);
	CHECK_INT(rep.n_stalls, ==, 1);
	CHECK_INT(rep.vms[vm_a].vcpus[0].n_stalls, ==, 2);
	CHECK_INT(rep.vms[vm_a].vcpus[0].stalled_ns[REPORT_PREEMPTED], ==, 12 * MS);
	CHECK_INT(rep.vms[vm_a].vcpus[0].culprits[0].n, ==, 2);
}

/* A switch in with no switch out before it (lost in between) is not an interval. */
TEST(inconsistent_pairs_dropped)
{
	setup(MS);
	report_guest_switch(&rep, vm_a, 0, 0, 55, "work");
	sw(1 * MS, 0, 0, "swapper/0", R, 1001, "CPU 0/KVM");
	sw(10 * MS, 1, 0, "swapper/1", R, 1001, "CPU 0/KVM"); /* in again, elsewhere */
	sw(20 * MS, 1, 1001, "CPU 0/KVM", R, 500, "hog");
	sw(21 * MS, 2, 1001, "CPU 0/KVM", R, 501, "hog2"); /* out twice */
	sw(40 * MS, 2, 501, "hog2", S, 1001, "CPU 0/KVM");
	finish(50 * MS);
	CHECK_INT(rep.vms[vm_a].vcpus[0].dropped_intervals, ==, 2);
	CHECK_INT(rep.n_stalls, ==, 1);
	CHECK_INT(rep.stalls[0].start, ==, 21 * MS);
}

/* VM 200 (vCPU 1 = tid 2002) beside VM 100; B's guest (its own events) runs guest task comm
 * (pid gpid) on vCPU 1 from t. */
static void vm_b_running(uint64_t t, int32_t gpid, const char *comm)
{
	if (report_vm_find(&rep, 200) < 0) {
		report_vm_add(&rep, 200, 2, &vm_b);
		report_vcpu_thread(&rep, vm_b, 1, 2002);
	}
	report_guest_switch(&rep, vm_b, 1, t, gpid, comm);
}

/* A's vCPU 0 is preempted on host CPU 3 by B's vCPU 1 thread 10..25 ms. */
static void a_preempted_by_b(void)
{
	report_guest_switch(&rep, vm_a, 0, 0, 55, "work");
	sw(1 * MS, 3, 0, "swapper/3", R, 1001, "CPU 0/KVM");
	sw(10 * MS, 3, 1001, "CPU 0/KVM", R, 2002, "CPU 1/KVM");
	sw(25 * MS, 3, 2002, "CPU 1/KVM", R, 1001, "CPU 0/KVM");
}

static void text_of(char *buf, size_t len)
{
	struct report_filter f = { .vcpu = -1, .top = 10 };
	FILE *m = fmemopen(buf, len, "w");

	report_text(&rep, &f, m);
	fclose(m);
}

static void json_of(char *buf, size_t len)
{
	struct report_filter f = { .vcpu = -1, .top = 10 };
	FILE *m = fmemopen(buf, len, "w");

	report_json(&rep, &f, m);
	fclose(m);
}

/* The culprit is B's vCPU 1 thread, and B's guest had switched that vCPU to "busy-x": the stall
 * names B, its vCPU and the task, in text, JSON and the picture's tooltip. */
TEST(culprit_other_vms_guest_task)
{
	static char out[16384];
	FILE *m;

	setup(MS);
	vm_b_running(0, 66, "early");
	vm_b_running(5 * MS, 77, "busy-x"); /* the task B's vCPU 1 ran while A's vCPU 0 waited */
	a_preempted_by_b();
	vm_b_running(28 * MS, 0, "swapper/1"); /* B's trace goes on past it (idle later: not the task then) */
	finish(30 * MS);
	CHECK_INT(rep.n_stalls, ==, 1);
	CHECK_INT(rep.stalls[0].vcpu, ==, 0);
	CHECK_INT(rep.stalls[0].culprit.pid, ==, 2002);
	CHECK_INT(rep.stalls[0].culprit_vm, ==, (int)vm_b);
	CHECK_INT(rep.stalls[0].culprit_vcpu, ==, 1);
	CHECK_INT(rep.stalls[0].culprit.g.pid, ==, 77);
	CHECK_STR(rep.stalls[0].culprit.g.comm, "busy-x");
	text_of(out, sizeof(out));
	CHECK(strstr(out, "CPU 1/KVM (2002) = VM 200 vCPU 1 running busy-x (77)"));
	json_of(out, sizeof(out));
	CHECK(strstr(out, "\"culprit_vm\":200,\"culprit_vcpu\":1,"));
	CHECK(strstr(out, "\"culprit_vm_name\":null,\"culprit_guest_comm\":\"busy-x\",\"culprit_guest_pid\":77"));
	m = fmemopen(out, sizeof(out), "w");
	report_svg(&rep, &(struct report_filter){ .vcpu = -1, .top = 10 }, m);
	fclose(m);
	CHECK(strstr(out, "culprit CPU 1/KVM (2002) = VM 200 vCPU 1 running busy-x (77) on host CPU 3"));
}

/* With a VM name (QEMU's process name) the VM is named by it; the guest's task name is cleaned
 * of what a terminal would obey. */
TEST(culprit_vm_named_and_guest_name_cleaned)
{
	static char out[16384];

	setup(MS);
	vm_b_running(0, 77, "\x1b[2Jspin\n");
	report_vm_name(&rep, vm_b, "vm-b");
	a_preempted_by_b();
	vm_b_running(28 * MS, 77, "x");
	finish(30 * MS);
	CHECK_INT(rep.n_stalls, ==, 1);
	CHECK_STR(rep.stalls[0].culprit.g.comm, "?[2Jspin?");
	text_of(out, sizeof(out));
	CHECK(strstr(out, "CPU 1/KVM (2002) = VM vm-b vCPU 1 running ?[2Jspin? (77)"));
	CHECK(strstr(out, "  vCPU 1 (VM vm-b, QEMU 200, thread 2002)"));
	json_of(out, sizeof(out));
	CHECK(strstr(out, "\"culprit_vm_name\":\"vm-b\""));
}

/* B's guest task is not known before its first event, nor after its trace's last one: the VM
 * and vCPU are named, the task not. */
TEST(culprit_guest_task_unknown)
{
	static char out[16384];

	setup(MS);
	report_vm_add(&rep, 200, 2, &vm_b);
	report_vcpu_thread(&rep, vm_b, 1, 2002);
	a_preempted_by_b();
	finish(30 * MS);
	CHECK_INT(rep.n_stalls, ==, 1);
	CHECK_INT(rep.stalls[0].culprit_vcpu, ==, 1);
	CHECK_INT(rep.stalls[0].culprit.g.pid, ==, -1);
	text_of(out, sizeof(out));
	CHECK(strstr(out, "CPU 1/KVM (2002) = VM 200 vCPU 1 "));
	CHECK(!strstr(out, "vCPU 1 running"));
	json_of(out, sizeof(out));
	CHECK(strstr(out, "\"culprit_guest_comm\":null,\"culprit_guest_pid\":-1"));

	setup(MS); /* B's only event is at 0: at 25 ms its task is no longer known */
	vm_b_running(0, 77, "busy-x");
	a_preempted_by_b();
	finish(30 * MS);
	CHECK_INT(rep.n_stalls, ==, 1);
	CHECK_INT(rep.stalls[0].culprit_vcpu, ==, 1);
	CHECK_INT(rep.stalls[0].culprit.g.pid, ==, -1);
}
