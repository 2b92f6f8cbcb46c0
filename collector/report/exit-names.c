// SPDX-License-Identifier: GPL-2.0-only
/* The names of KVM's VM exit reasons, for the report's stall causes and exit counts. */
#include <stdint.h>

#include "report.h"
#include "util.h"

/* Exit codes: AMD's VMCB EXITCODE (APM vol. 2, appendix C), Intel's basic exit reason (SDM
 * vol. 3, appendix C), the values Linux's kvm_exit tracepoint records. */
struct exit_name {
	int64_t code;
	const char *name;
};
static const struct exit_name svm_exits[] = {
	{ 0x000, "read_cr0" }, { 0x003, "read_cr3" }, { 0x004, "read_cr4" }, { 0x008, "read_cr8" },
	{ 0x010, "write_cr0" }, { 0x013, "write_cr3" }, { 0x014, "write_cr4" }, { 0x018, "write_cr8" },
	{ 0x020, "read_dr0" }, { 0x027, "read_dr7" }, { 0x030, "write_dr0" }, { 0x037, "write_dr7" },
	{ 0x041, "db_excp" }, { 0x043, "bp_excp" }, { 0x046, "ud_excp" }, { 0x047, "nm_excp" },
	{ 0x04d, "gp_excp" }, { 0x04e, "pf_excp" }, { 0x051, "ac_excp" }, { 0x052, "mc_excp" },
	{ 0x060, "intr" }, { 0x061, "nmi" }, { 0x062, "smi" }, { 0x063, "init" }, { 0x064, "vintr" },
	{ 0x065, "cr0_sel_write" }, { 0x06e, "rdtsc" }, { 0x06f, "rdpmc" }, { 0x070, "pushf" },
	{ 0x071, "popf" }, { 0x072, "cpuid" }, { 0x073, "rsm" }, { 0x074, "iret" }, { 0x075, "swint" },
	{ 0x076, "invd" }, { 0x077, "pause" }, { 0x078, "hlt" }, { 0x079, "invlpg" }, { 0x07a, "invlpga" },
	{ 0x07b, "io" }, { 0x07c, "msr" }, { 0x07d, "task_switch" }, { 0x07e, "ferr_freeze" },
	{ 0x07f, "shutdown" }, { 0x080, "vmrun" }, { 0x081, "vmmcall" }, { 0x082, "vmload" },
	{ 0x083, "vmsave" }, { 0x084, "stgi" }, { 0x085, "clgi" }, { 0x086, "skinit" }, { 0x087, "rdtscp" },
	{ 0x088, "icebp" }, { 0x089, "wbinvd" }, { 0x08a, "monitor" }, { 0x08b, "mwait" },
	{ 0x08c, "mwait_cond" }, { 0x08d, "xsetbv" }, { 0x08e, "rdpru" }, { 0x08f, "efer_write_trap" },
	{ 0x090, "cr0_write_trap" }, { 0x094, "cr4_write_trap" }, { 0x098, "cr8_write_trap" },
	{ 0x0a0, "invlpgb" }, { 0x0a2, "tlbsync" }, { 0x0a3, "invpcid" }, { 0x400, "npf" },
	{ 0x401, "avic_incomplete_ipi" }, { 0x402, "avic_unaccelerated_access" }, { 0x403, "vmgexit" },
	{ -1, "err" },
};
static const struct exit_name vmx_exits[] = {
	{ 0, "exception_nmi" }, { 1, "external_interrupt" }, { 2, "triple_fault" }, { 3, "init_signal" },
	{ 4, "sipi_signal" }, { 7, "interrupt_window" }, { 8, "nmi_window" }, { 9, "task_switch" },
	{ 10, "cpuid" }, { 12, "hlt" }, { 13, "invd" }, { 14, "invlpg" }, { 15, "rdpmc" }, { 16, "rdtsc" },
	{ 18, "vmcall" }, { 19, "vmclear" }, { 20, "vmlaunch" }, { 21, "vmptrld" }, { 22, "vmptrst" },
	{ 23, "vmread" }, { 24, "vmresume" }, { 25, "vmwrite" }, { 26, "vmoff" }, { 27, "vmon" },
	{ 28, "cr_access" }, { 29, "dr_access" }, { 30, "io_instruction" }, { 31, "msr_read" },
	{ 32, "msr_write" }, { 33, "invalid_state" }, { 34, "msr_load_fail" }, { 36, "mwait_instruction" },
	{ 37, "monitor_trap_flag" }, { 39, "monitor_instruction" }, { 40, "pause_instruction" },
	{ 41, "mce_during_vmentry" }, { 43, "tpr_below_threshold" }, { 44, "apic_access" },
	{ 45, "eoi_induced" }, { 46, "gdtr_idtr" }, { 47, "ldtr_tr" }, { 48, "ept_violation" },
	{ 49, "ept_misconfig" }, { 50, "invept" }, { 51, "rdtscp" }, { 52, "preemption_timer" },
	{ 53, "invvpid" }, { 54, "wbinvd" }, { 55, "xsetbv" }, { 56, "apic_write" }, { 57, "rdrand" },
	{ 58, "invpcid" }, { 59, "vmfunc" }, { 60, "encls" }, { 61, "rdseed" }, { 62, "pml_full" },
	{ 63, "xsaves" }, { 64, "xrstors" }, { 67, "umwait" }, { 68, "tpause" }, { 74, "bus_lock" },
	{ 75, "notify" },
};

const char *report_exit_name(const struct report *r, int64_t reason)
{
	const struct exit_name *t = r->kvm_isa == 2 ? svm_exits : r->kvm_isa == 1 ? vmx_exits : NULL;
	size_t n = r->kvm_isa == 2 ? ARRAY_SIZE(svm_exits) : ARRAY_SIZE(vmx_exits);

	if (!t)
		return NULL;
	if (r->kvm_isa == 1 && reason >= 0)
		reason &= 0xffff; /* the basic exit reason, without VMX's flag bits */
	for (size_t i = 0; i < n; i++)
		if (t[i].code == reason)
			return t[i].name;
	return NULL;
}
