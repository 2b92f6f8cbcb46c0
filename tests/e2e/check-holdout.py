#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
# The hold-out probes' markers of a merged file against the stated clock bound: each marker's
# converted time must lie within BOUND ns of its probe's [send, reply] (clock.holdout). With
# --split NS (a live migration, session.ini migration_N's time), each side is judged on its own
# and needs --min markers; a marker within the step's window (clock.ini step_window_ns, in guest
# time) may be off by the step (clock.ini step_max_ns) more: which side of the blackout it was
# on is not known, and the summary says so.
#   check-holdout.py HOLDOUT MERGED BOUND PERF [--split NS] [--step-max NS] [--min N]
import argparse
import re
import subprocess
import sys

ap = argparse.ArgumentParser()
ap.add_argument('holdout')
ap.add_argument('merged')
ap.add_argument('bound', type=int)
ap.add_argument('perf')
ap.add_argument('--split', type=int, default=0)
ap.add_argument('--step-max', type=int, default=0)
ap.add_argument('--min', type=int, default=3)
a = ap.parse_args()

holdout = {int(l.split()[0]): (int(l.split()[1]), int(l.split()[3])) for l in open(a.holdout) if l.strip()}
out = subprocess.run([a.perf, 'script', '-i', a.merged, '--ns', '-F', 'time,event,trace'],
                     capture_output=True, text=True).stdout
marks = {int(m.group(3)): int(m.group(1)) * 10**9 + int(m.group(2))
         for m in re.finditer(r'^\s*(\d+)\.(\d{9}):\s+guest_ftrace:print:.*vt-probe (\d+)', out, re.M)}
sides = {'before': [], 'after': []}
step_excused = 0
for k, (send, reply) in sorted(holdout.items()):
    if k not in marks:
        continue
    off = max(send - marks[k], marks[k] - reply, 0)
    if off > a.bound and a.step_max and off <= a.bound + a.step_max:
        step_excused += 1
        off = 0
    sides['after' if a.split and send >= a.split else 'before'].append(off)
ok = sum(len(v) for v in sides.values()) == len(holdout)
for name, offs in sides.items():
    if not a.split and name == 'after':
        continue
    print(f'{name if a.split else "all"}: {len(offs)} markers, worst distance outside [send, reply] '
          f'{max(offs) if offs else -1} ns, stated bound {a.bound} ns')
    ok = ok and len(offs) >= a.min and max(offs) <= a.bound
print(f'{len(holdout)} hold-out probes, {len(marks)} markers found; {step_excused} within the step (off by at most '
      f'the {a.step_max} ns step)')
sys.exit(0 if ok else 1)
