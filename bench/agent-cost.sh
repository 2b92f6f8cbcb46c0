#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# What the agent costs where it runs: its CPU time (utime+stime of all its threads, from
# wait4's rusage, i.e. /proc/PID/stat's fields at µs resolution) as % of
# one CPU, and the events it makes itself (events recorded while it streams ÷ events
# recorded with no reader at all), against a read()/write() copy loop (cat trace_pipe_raw).
# Runs on this machine's own tracefs, in instances vt_agent_test_bench*, as root, with
# events sched, irq, timer and a small fixed workload (per CPU, ITERATIONS
# forks of 'sleep 0.005', pinned).
#   bench/agent-cost.sh [ITERATIONS] [ROUNDS]      (defaults 400 and 5)
# The agent is driven over unix-socket ports by a small python host (the protocol of
# docs/protocol.md); data is read and thrown away.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
agent=${TRACE_AGENT:-$top/build/agent/trace-agent}
iters=${1:-400}
rounds=${2:-5}
[ "$(id -u)" -eq 0 ] || { echo "agent-cost: run as root" >&2; exit 1; }
[ -x "$agent" ] || { echo "agent-cost: no $agent: build first (ninja -C build)" >&2; exit 1; }
[ -d /sys/kernel/tracing/instances ] || mount -t tracefs nodev /sys/kernel/tracing
exec python3 - "$agent" "$iters" "$rounds" <<'PY'
import os, socket, struct, subprocess, sys, tempfile, threading, time

agent, iters, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
T = "/sys/kernel/tracing"
ncpu = os.sysconf("SC_NPROCESSORS_CONF")
EVENTS = "sched,irq,timer"

def spawn(argv):
    null = [(os.POSIX_SPAWN_OPEN, fd, "/dev/null", os.O_WRONLY, 0) for fd in (1, 2)]
    return os.posix_spawnp(argv[0], argv, os.environ, file_actions=null)

def reap_cpu(pid, sig):
    # utime+stime of the whole process, all threads, microsecond resolution (wait4).
    os.kill(pid, sig)
    _, _, ru = os.wait4(pid, 0)
    return ru.ru_utime + ru.ru_stime

def workload():
    procs = [subprocess.Popen(["taskset", "-c", str(c), "sh", "-c",
              f"i=0; while [ $i -lt {iters} ]; do sleep 0.005; i=$((i+1)); done"])
             for c in range(ncpu)]
    for p in procs:
        p.wait()

def ring_stats(inst):
    tot = {"entries": 0, "overrun": 0, "read events": 0}
    for c in range(ncpu):
        for line in open(f"{T}/instances/{inst}/per_cpu/cpu{c}/stats"):
            k, _, v = line.partition(":")
            if k in tot:
                tot[k] += int(float(v.split()[0]))
    return tot

def frame(typ, seq, attrs=()):
    body = b""
    for tag, data in attrs:
        body += struct.pack("<HHI", tag, 0, len(data)) + data + b"\0" * (-len(data) % 4)
    return struct.pack("<IHHII", 0x31435456, 1, typ, seq, len(body)) + body

def recv_frame(s):
    def exact(n):
        b = b""
        while len(b) < n:
            c = s.recv(n - len(b))
            if not c:
                raise EOFError
            b += c
        return b
    magic, ver, typ, seq, ln = struct.unpack("<IHHII", exact(16))
    body, attrs, off = exact(ln), {}, 0
    while off + 8 <= ln:
        tag, _, al = struct.unpack_from("<HHI", body, off)
        attrs[tag] = body[off + 8:off + 8 + al]
        off += 8 + al + (-al % 4)
    return typ, attrs

def drain(lsock):
    c, _ = lsock.accept()
    while c.recv(1 << 20):
        pass

def run_native():
    inst = "vt_agent_test_bench_native"
    d = f"{T}/instances/{inst}"
    os.mkdir(d)
    try:
        open(f"{d}/buffer_size_kb", "w").write("65536")
        for e in EVENTS.split(","):
            open(f"{d}/events/{e}/enable", "w").write("1")
        workload()
        open(f"{d}/tracing_on", "w").write("0")
        st = ring_stats(inst)
        return 0.0, st["entries"] + st["overrun"]
    finally:
        open(f"{d}/events/enable", "w").write("0")
        os.rmdir(d)

def run_cat():
    inst = "vt_agent_test_bench_cat"
    d = f"{T}/instances/{inst}"
    os.mkdir(d)
    try:
        for e in EVENTS.split(","):
            open(f"{d}/events/{e}/enable", "w").write("1")
        cats = [spawn(["taskset", "-c", str(c), "cat", f"{d}/per_cpu/cpu{c}/trace_pipe_raw"])
                for c in range(ncpu)]
        t0 = time.monotonic()
        workload()
        open(f"{d}/tracing_on", "w").write("0")
        time.sleep(0.2)
        wall = time.monotonic() - t0
        cpu = sum(reap_cpu(p, 9) for p in cats)
        st = ring_stats(inst)
        return 100.0 * cpu / wall, st["entries"] + st["overrun"] + st["read events"]
    finally:
        open(f"{d}/events/enable", "w").write("0")
        os.rmdir(d)

def run_agent():
    tmp = tempfile.mkdtemp(prefix="vt-agent-bench-")
    def listen(name):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(f"{tmp}/{name}"); s.listen(2)
        return s
    ctl_l = listen("agent-ctl-path")
    data_l = [listen(f"trace-path-cpu{c}") for c in range(ncpu)]
    ag = spawn([agent, "--ports-dir", tmp, "--instance", "vt_agent_test_bench"])
    try:
        ctl, _ = ctl_l.accept()
        ctl.sendall(frame(4, 1, [(9, EVENTS.encode()), (10, b"mono")]))
        assert recv_frame(ctl)[0] == 2
        th = [threading.Thread(target=drain, args=(l,)) for l in data_l]
        for t in th:
            t.start()
        ctl.sendall(frame(8, 2, [(12, struct.pack("<Q", 1))]))
        assert recv_frame(ctl)[0] == 2
        t0 = time.monotonic()
        workload()
        ctl.sendall(frame(9, 3))
        typ, attrs = recv_frame(ctl)
        assert typ == 10
        wall = time.monotonic() - t0
        for t in th:
            t.join()
        cpu = reap_cpu(ag, 15)   # its whole life: setup, the session, teardown
        ag = None
        ev = 0
        for i in range(ncpu):
            s = struct.unpack_from("<Ii8Q", attrs[18], 72 * i)
            ev += s[4] + s[5] + s[9]   # entries + overrun + read events
        return 100.0 * cpu / wall, ev
    finally:
        if ag:
            os.kill(ag, 15); os.waitpid(ag, 0)
        subprocess.run(["rm", "-rf", tmp])

res = {"native": [], "agent": [], "cat": []}
for r in range(rounds):
    for name, fn in (("native", run_native), ("agent", run_agent), ("cat", run_cat)):
        res[name].append(fn())
        print(f"round {r + 1} {name:6s}: reader CPU {res[name][-1][0]:6.2f}% of one CPU, "
              f"events {res[name][-1][1]}", flush=True)
nat = sum(e for _, e in res["native"]) / rounds
for name in ("agent", "cat"):
    cpu = sum(c for c, _ in res[name]) / rounds
    ev = sum(e for _, e in res[name]) / rounds
    print(f"{name:6s}: reader CPU {cpu:.2f}% of one CPU (mean of {rounds}), "
          f"events {ev:.0f} vs native {nat:.0f} ({100.0 * (ev - nat) / nat:+.1f}% self-caused)")
PY
