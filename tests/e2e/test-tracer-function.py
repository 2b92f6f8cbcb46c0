#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""e2e: the guest's function tracer through the whole product, read back by the real perf.

trace-collector start --tracer function --ftrace-filter 'vfs_read vfs_write' on the real test
guest (host perf record of sched:sched_switch, clock ptp); the guest reads and writes files;
stop merges. Then in the merged perf.data, `perf script` must print guest_ftrace:function
lines (the guest's ftrace-system formats under the guest_ system, docs/perf-data.md "Tracepoint ids"), every
traced ip must be vfs_read or vfs_write by the guest's own kallsyms (session guest/kallsyms),
and the guest's current_tracer must be nop again after the session (checked by the agent's
log line at stop and by a second, plain session whose file has no function lines).
  usage: test-tracer-function.py [--keep DIR]"""
import argparse
import bisect
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2elib import PERF, collector, fail, main as e2e_main, ok  # noqa: E402

FN_RE = re.compile(r"guest_ftrace:function:\s+(\S+)\s+<--\s+(\S+)")


def session(g, tmp, name, extra, go):
    run_dir, out = f"{tmp}/run-{name}", f"{tmp}/{name}.data"
    os.makedirs(run_dir)
    r = collector("start", "--name", "vt-e2e", "--dir", g.dir, "--run-dir", run_dir, "--clock", "ptp",
                  "-e", "sched:sched_switch", "--host-events", "sched:sched_switch", "-o", out, *extra,
                  timeout=180)
    if r.returncode != 0:
        fail(f"trace-collector start {' '.join(extra)} failed ({r.returncode}): {r.stderr}")
    sdir = r.stdout.strip().splitlines()[-1]
    ok(f"session {name} started: {sdir}")
    if go:
        g.say("go\n")
        g.wait("guest did its file I/O", "vt-e2e: io done", 120)
    else:
        time.sleep(1)
    r = collector("stop", "--name", "vt-e2e", "--run-dir", run_dir, timeout=300)
    if r.returncode != 0:
        fail(f"trace-collector stop failed ({r.returncode}):\n{r.stdout}{r.stderr}")
    ok(f"session {name} stopped and merged")
    return sdir, out


def kallsyms(path):
    """Sorted (address, name) of the guest's text symbols."""
    syms = []
    for line in open(path):
        f = line.split()
        if len(f) >= 3 and f[1] in "tT":
            syms.append((int(f[0], 16), f[2]))
    syms.sort()
    return syms


def symbol(syms, text):
    """The guest symbol perf's hex (or already resolved name) stands for."""
    if not re.fullmatch(r"(0x)?[0-9a-f]{8,16}", text):
        return text.split("+")[0]
    addr = int(text, 16)
    i = bisect.bisect_right(syms, (addr, "\uffff")) - 1
    return syms[i][1] if i >= 0 else "?"


def perf_lines(out):
    ps = subprocess.run([PERF, "script", "-i", out, "-F", "event,trace"], capture_output=True, text=True)
    if ps.returncode != 0:
        fail(f"perf script failed: {ps.stderr}")
    return ps.stdout.splitlines()


def check_function_lines(sdir, out):
    lines = perf_lines(out)
    fn = [FN_RE.search(l) for l in lines if "guest_ftrace:function:" in l]
    if len(fn) < 100 or None in fn:
        bad = [l for l in lines if "function" in l][:5]
        fail(f"{len(fn)} guest_ftrace:function lines (want >= 100, all 'ip <-- parent'): {bad}")
    if any(re.match(r"\s*ftrace:function", l) for l in lines):
        fail("a guest function event is named ftrace:function (host name space)")
    syms = kallsyms(f"{sdir}/guest/kallsyms")
    known = {n for _, n in syms}
    hexes = [m.group(0) for m in fn if symbol(syms, m.group(1)) != m.group(1) or symbol(syms, m.group(2)) != m.group(2)]
    if hexes:
        fail(f"{len(hexes)} function lines print addresses, not the guest's names (the merge's ip_sym/parent_ip_sym): {hexes[:3]}")
    names, parents = {}, {m.group(2) for m in fn}
    for m in fn:
        names[m.group(1)] = names.get(m.group(1), 0) + 1
    if set(names) - {"vfs_read", "vfs_write"}:
        fail(f"traced functions outside the filter: {names}")
    if parents - known:
        fail(f"callers named that are not text symbols of the guest's kallsyms: {sorted(parents - known)[:5]}")
    ok(f"perf script names them by the guest's kallsyms (no options): {len(fn)} guest_ftrace:function lines, "
       f"{names}, callers {sorted(parents)[:4]}; first: "
       f"{lines[[i for i, l in enumerate(lines) if 'guest_ftrace:function' in l][0]].strip()}")
    sw = sum("guest_sched:sched_switch" in l for l in lines)
    host = sum(re.match(r"\s*sched:sched_switch", l) is not None for l in lines)
    if not sw or not host:
        fail(f"guest sched_switch lines {sw}, host sched_switch lines {host}: both wanted")
    ok(f"events beside the tracer decode too: {sw} guest_sched:sched_switch, {host} host sched:sched_switch")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--keep")
    a = ap.parse_args()

    def body(g, tmp):
        g.wait("guest up, agent started", "vt-e2e: waiting for go", 90)
        sdir, out = session(g, tmp, "fn", ["--tracer", "function", "--ftrace-filter", "vfs_read vfs_write"], True)
        if a.keep:
            os.makedirs(a.keep, exist_ok=True)
            with open(f"{a.keep}/script.txt", "w") as f:
                f.write("\n".join(perf_lines(out)))
        check_function_lines(sdir, out)
        if not os.path.exists(f"{sdir}/guest/events/ftrace/function/format"):
            fail("no guest/events/ftrace/function/format in the session dir")
        _, out2 = session(g, tmp, "plain", [], False)
        n = sum("guest_ftrace:function" in l for l in perf_lines(out2))
        if n:
            fail(f"the next session without --tracer still has {n} function lines")
        ok("the next session without --tracer has no function lines (tracer back to nop)")

    return e2e_main("tracer function", "vt-e2e-tracer.", "guest-tracer.sh", body)


if __name__ == "__main__":
    sys.exit(main())
