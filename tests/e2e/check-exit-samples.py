#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""e2e kvm-exits' check of the exit samples (tests/e2e/test-kvm-exits.sh): reads `perf script`
of the merged file (SCRIPT) and the guest's kallsyms: guest functions named from the guest's
kallsyms (at least 1000 guest kernel exit samples, 90% named, on both vCPUs of QEMU pid QPID),
and vt-zero's profile from its interrupt exits agreeing with its own cpu-clock:G samples.
  check-exit-samples.py SCRIPT QPID KALLSYMS"""
import collections, re, sys
script, qpid, kallsyms = sys.argv[1], sys.argv[2], sys.argv[3]
gsyms = {l.split()[2] for l in open(kallsyms) if len(l.split()) >= 3}
line = re.compile(r"^VM: *(\d+) +VCPU: *(\d+) +(.+?) +(guest_kvm:kvm_exit|cpu-clock:G): +(.*?) ?([0-9a-f]+) (\S+) \((.*)\)$")
# The guest's interrupt entry (asm_sysvec_*, asm_common_interrupt, ...) runs with interrupts off:
# the guest's cpu-clock, an hrtimer interrupt, never samples it, but a host interrupt exits there
# (the emulated APIC timer's; CI on 85c3566 had asm_sysvec_apic_timer_interrupt second among the
# exits, 134 of 1809). Left out of both profiles.
def irq_entry(sym):
    return sym.startswith("asm_")
exits, own = collections.Counter(), collections.Counter()
by_reason = collections.defaultdict(collections.Counter)
vcpus, ownv, kern, named, bad = set(), set(), 0, 0, []
for l in open(script):
    m = line.match(l.rstrip("\n"))
    if not m:
        continue
    vm, vcpu, comm, ev, trace, ip, sym, dso = m.groups()
    if ev == "cpu-clock:G":
        ownv.add(vcpu)
        if comm == "vt-zero" and int(ip, 16) >= 0xffff800000000000 and not irq_entry(sym):
            own[sym] += 1
        continue
    if vm != qpid:
        bad.append(f"VM {vm}, not QEMU's pid {qpid}")
    vcpus.add(vcpu)
    reason = re.search(r"reason (\S+)", trace)
    reason = reason.group(1) if reason else "?"
    if int(ip, 16) < 0xffff800000000000:
        continue # guest user space: named only with the guest's binaries (guest perf's MMAP2s)
    kern += 1
    if sym != "[unknown]": # in the guest kernel or one of its modules ([virtio_console])
        named += 1
        if sym not in gsyms:
            bad.append(f"{sym} ({dso}) is no guest kallsyms name")
    by_reason[reason][sym] += 1
    if comm == "vt-zero" and reason in ("interrupt", "EXTERNAL_INTERRUPT") and not irq_entry(sym): # asynchronous: a host interrupt
        exits[sym] += 1
print(f"guest kernel exit samples: {kern}, named {named} ({100 * named / max(kern, 1):.1f}%), vCPUs {sorted(vcpus)}", file=sys.stderr)
for r, c in sorted(by_reason.items(), key=lambda x: -sum(x[1].values())):
    print(f"  reason {r}: {sum(c.values())}, top {c.most_common(3)}", file=sys.stderr)
ex, ow = [s for s, _ in exits.most_common(2)], [s for s, _ in own.most_common(5)]
print(f"vt-zero: interrupt exits' top {exits.most_common(3)} ({sum(exits.values())}); its own cpu-clock:G top {own.most_common(5)} ({sum(own.values())})", file=sys.stderr)
if kern < 1000 or named < 0.9 * kern:
    bad.append("fewer than 1000 guest kernel exit samples, or under 90% of them named")
if vcpus != {"000", "001"} or ownv != vcpus:
    bad.append(f"exit samples on vCPUs {sorted(vcpus)}, guest perf's on {sorted(ownv)}: not both")
if sum(exits.values()) < 100 or sum(own.values()) < 100 or not ex or not ow or ex[0] != ow[0] or any(s not in ow for s in ex):
    bad.append("the interrupt exits' top 2 functions of vt-zero are not among its own top 5, the first the same")
print("\n".join(bad[:10]), file=sys.stderr)
sys.exit(1 if bad else 0)
