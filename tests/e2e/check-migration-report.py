#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""e2e migrate-pipe's check of the migration in the merged file (tests/e2e/test-migrate.sh):
perf script shows one guest_virtio_trace:migration, QEMU SRC -> DST with a blackout within 1 ms
of the clock's own step (STEP_NS), and trace-collector report (its --json in REPORT) names a
"migration" stall of that length from the blackout's start on every vCPU and follows each vCPU
on the destination QEMU's thread (one of DST_TIDS, its threads read while it ran) after it.
  check-migration-report.py PERF DATA REPORT_JSON SRC DST STEP_NS DST_TIDS"""
import json, re, subprocess, sys

perf, data, rep, src, dst, step, tids = sys.argv[1:8]
src, dst, step, tids = int(src), int(dst), int(step), {int(t) for t in tids.split(",") if t}
bad = []
out = subprocess.run([perf, "script", "-i", data, "-F", "+machine_pid,+vcpu"], capture_output=True, text=True).stdout
lines = [l for l in out.splitlines() if "guest_virtio_trace:migration:" in l]
print("\n".join(lines) or "no guest_virtio_trace:migration sample", file=sys.stderr)
m = re.search(r" (\d+\.\d+): +guest_virtio_trace:migration: QEMU (\d+) -> (\d+), blackout (\d+) ns at (\d+)", lines[0]) if len(lines) == 1 else None
if not m:
    bad.append(f"{len(lines)} guest_virtio_trace:migration samples, not one")
else:
    f, t, b, at = int(m.group(2)), int(m.group(3)), int(m.group(4)), int(m.group(5))
    if (f, t) != (src, dst):
        bad.append(f"the sample names QEMU {f} -> {t}, not {src} -> {dst}")
    if abs(b - step) > 1000000:
        bad.append(f"its blackout {b} ns is not within 1 ms of the clock's step {step} ns")
    r = json.load(open(rep))
    vcpus = {v["vcpu"]: v for v in r["vcpus"]}
    for c, v in sorted(vcpus.items()):
        st = [s for s in r["stalls"] if s["vcpu"] == c and s["cause"] == "migration"]
        print(f"vCPU {c}: migration stalls {[(s['start_ns'], s['duration_ns']) for s in st]}, thread {v['tid']}, "
              f"last host switch {v['last_switch_ns']}", file=sys.stderr)
        if len(st) != 1 or st[0]["duration_ns"] != b or st[0]["start_ns"] != at or \
                (st[0]["migration_from_pid"], st[0]["migration_to_pid"]) != (src, dst):
            bad.append(f"vCPU {c}: not one migration stall of {b} ns at {at}, QEMU {src} -> {dst}")
        if not (st and v["tid"] in tids and v["last_switch_ns"] > st[0]["start_ns"] + b):
            bad.append(f"vCPU {c}: the report does not follow the destination's thread after the migration")
print("\n".join(bad), file=sys.stderr)
sys.exit(1 if bad else 0)
