#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Checks a merged perf.data: every guest sample's cpu is the host CPU its vCPU thread was on.

  check-vcpu-cpu.py [--allow-still] MERGED TID_OF_VCPU0 [TID_OF_VCPU1 ...]

Reads `perf script` (the reader under test is perf itself). A vCPU thread's host CPU is the cpu
of the latest host sched:sched_switch naming its tid (as prev or next) at or before the guest
sample; before its first switch, the cpu of that first switch; with no switch at all, the vCPU
number. Prints counts; exits 1 on any mismatch or when no vCPU ever changed host CPU (the test
would prove nothing then) unless --allow-still (a real guest whose vCPU threads happened to stay
put: the e2e tests then also check that vCPU and host CPU differ somewhere or say so)."""
import re
import subprocess
import sys

HOST = re.compile(r'^\s*\[(\d+)\]\s+[\d.]+:\s+sched:sched_switch:.*prev_pid=(\d+) .*next_pid=(\d+) ')
GUEST = re.compile(r'^VCPU:\s*(\d+)\s+\[(\d+)\]\s+[\d.]+:\s+guest_')


def main():
    args = sys.argv[1:]
    still = bool(args) and args[0] == '--allow-still'
    if still:
        args = args[1:]
    merged, tids = args[0], [int(t) for t in args[1:]]
    vcpu_of = {t: v for v, t in enumerate(tids)}
    out = subprocess.run(['perf', 'script', '-i', merged, '--ns', '-F', 'cpu,time,event,trace,vcpu'],
                         capture_output=True, text=True, check=True).stdout.splitlines()
    first = {}
    for line in out:
        m = HOST.match(line)
        if m:
            for pid in (int(m.group(2)), int(m.group(3))):
                if pid in vcpu_of and vcpu_of[pid] not in first:
                    first[vcpu_of[pid]] = int(m.group(1))
    state = dict(first)
    ok = bad = 0
    seen = {}
    for line in out:
        m = HOST.match(line)
        if m:
            for pid in (int(m.group(2)), int(m.group(3))):
                if pid in vcpu_of:
                    state[vcpu_of[pid]] = int(m.group(1))
            continue
        m = GUEST.match(line)
        if not m:
            continue
        vcpu, cpu = int(m.group(1)), int(m.group(2))
        want = state.get(vcpu, vcpu)
        seen.setdefault(vcpu, set()).add(cpu)
        if cpu == want:
            ok += 1
        else:
            bad += 1
            if bad <= 5:
                print(f'mismatch: vCPU {vcpu} sample on cpu {cpu}, thread was on {want}: {line}')
    moved = sum(1 for s in seen.values() if len(s) > 1)
    print(f'guest samples: {ok} on the right host CPU, {bad} wrong; vCPUs seen on several CPUs: {moved}')
    return 0 if ok and not bad and (moved or still) else 1


if __name__ == '__main__':
    sys.exit(main())
