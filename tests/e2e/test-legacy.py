#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""e2e (b): the original virtio-trace README flow against the real agent in a real guest.

echo 1 > DIR/agent-ctl-path.in, read the guest's pages from DIR/trace-path-cpuN.out,
echo 0, then check each stream is begin marker + ftrace ring pages + end marker
(docs/protocol.md section 2) and that every numbered line of the guest workload arrived
exactly once, on the CPU it was written from. An independent reader (struct), not
common/marker.c.   usage: test-legacy.py   (environment from meson)"""
import os
import re
import struct
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2elib  # noqa: E402
from e2elib import fail  # noqa: E402

NCPUS = 2
LINES = 200
MAGIC = 0x4B52414D54524956
HEAD = struct.Struct("<QQIIQII")           # magic commit kind version session cpu page_size
STATS = struct.Struct("<IiQQQQQQQQ")       # struct vt_cpu_stats, 72 bytes
assert HEAD.size + STATS.size == 112
LINE_RE = re.compile(rb"vt-e2e line (\d+) cpu (\d+)")


class Stream:
    """Accumulates one trace-path-cpuN.out FIFO until its end marker."""

    def __init__(self, path, cpu):
        self.cpu, self.path = cpu, path
        self.fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        self.buf = bytearray()
        self.page_size = None

    def pump(self):
        while True:
            try:
                chunk = os.read(self.fd, 1 << 20)
            except BlockingIOError:
                return
            if not chunk:
                return
            self.buf += chunk

    def marker(self, off):
        if len(self.buf) < off + HEAD.size:
            return None
        head = HEAD.unpack_from(self.buf, off)
        return head if head[0] == MAGIC and head[1] == (1 << 64) - 1 else None

    def has_begin(self):
        head = self.marker(0)
        if head and self.page_size is None:
            self.page_size = head[6]
        return head is not None and head[2] == 1

    def has_end(self):
        ps = self.page_size
        if not ps or len(self.buf) < 2 * ps:
            return False
        last = len(self.buf) // ps * ps - ps
        head = self.marker(last)
        return head is not None and head[2] == 2


def check_stream(s, lines_seen):
    """Validates one stream; records (line, cpu) pairs found in its ring pages."""
    buf, ps = bytes(s.buf), s.page_size
    if not ps or ps < 4096 or ps & (ps - 1) or ps > 1 << 20:
        fail(f"cpu{s.cpu}: implausible page size {ps} in the begin marker")
    if len(buf) % ps:
        fail(f"cpu{s.cpu}: {len(buf)} bytes is not a whole number of {ps}-byte pages")
    pages = [buf[i:i + ps] for i in range(0, len(buf), ps)]
    begin, end = HEAD.unpack_from(pages[0]), HEAD.unpack_from(pages[-1])
    if begin[2:4] != (1, 1) or begin[5] != s.cpu:
        fail(f"cpu{s.cpu}: bad begin marker kind/version/cpu {begin[2:4]} {begin[5]}")
    if any(pages[0][112:]):
        fail(f"cpu{s.cpu}: begin marker page not zero past its 112-byte head")
    if end[2:4] != (2, 1) or end[5] != s.cpu or end[4] != begin[4] or end[6] != ps:
        fail(f"cpu{s.cpu}: end marker {end} does not match begin {begin}")
    stats = STATS.unpack_from(pages[-1], HEAD.size)
    ring = pages[1:-1]
    for n, page in enumerate(ring):
        if HEAD.unpack_from(page)[0] == MAGIC:
            fail(f"cpu{s.cpu}: a marker inside the stream at ring page {n}")
        commit = struct.unpack_from("<Q", page, 8)[0] & ((1 << 27) - 1)
        if commit > ps - 16:
            fail(f"cpu{s.cpu}: ring page {n} commit {commit} past page size {ps}")
        for m in LINE_RE.finditer(page[16:16 + commit]):
            lines_seen.append((int(m.group(1)), int(m.group(2)), s.cpu))
    if stats[0] != s.cpu or stats[1] != 0:
        fail(f"cpu{s.cpu}: end marker stats cpu/error {stats[0]}/{stats[1]}")
    if stats[2] != len(ring) or stats[3] != len(ring) * ps:
        fail(f"cpu{s.cpu}: {len(ring)} ring pages arrived, end marker says {stats[2]} pages /"
             f" {stats[3]} bytes sent")
    print(f"ok   cpu{s.cpu}: session {begin[4]:#x}, page {ps}, {len(ring)} ring pages,"
          f" entries {stats[4]} overrun {stats[5]}")


def check_lines(lines_seen):
    nums = sorted(n for n, _, _ in lines_seen)
    if nums != list(range(LINES)):
        missing = sorted(set(range(LINES)) - set(nums))
        dup = sorted({n for n in nums if nums.count(n) > 1})
        fail(f"workload lines: {len(nums)} found, missing {missing[:10]}, duplicated {dup[:10]}")
    wrong = [(n, c, s) for n, c, s in lines_seen if c != s]
    if wrong:
        fail(f"lines written on one CPU arrived on another's stream: {wrong[:5]}")
    print(f"ok   all {LINES} workload lines arrived once, each on its own CPU's stream")


class LegacyGuest(e2elib.Guest):
    """The guest behind `trace-collector setup`: its control FIFO and one Stream per CPU."""
    CONSOLE_TAIL = None
    GRACE = 0

    def prepare(self):
        subprocess.run([os.environ["TRACE_COLLECTOR"], "setup", "--name", "vt-e2e", "--cpus",
                        str(NCPUS), "--dir", self.dir], check=True, stdout=subprocess.DEVNULL)
        self.streams = [Stream(f"{self.dir}/trace-path-cpu{c}.out", c) for c in range(NCPUS)]

    def tick(self):
        for s in self.streams:
            s.pump()


def run(g, tmp):
    ctl = f"{g.dir}/agent-ctl-path.in"
    g.wait("guest agent started and guest script waiting", "vt-e2e: waiting for go", 60)
    g.say("1\n", ctl)                                   # echo 1 > agent-ctl-path.in
    g.wait("begin marker on every CPU's stream", lambda: all(s.has_begin() for s in g.streams), 30)
    g.say("go\n")
    g.wait("guest workload done", "vt-e2e: workload done", 60)
    g.say("0\n", ctl)                                   # echo 0 > agent-ctl-path.in
    g.wait("end marker on every CPU's stream", lambda: all(s.has_end() for s in g.streams), 30)
    g.say("end\n")
    if g.boot.wait(timeout=60) != 0:
        fail(f"boot exited with status {g.boot.returncode}")
    print("ok   guest powered off")
    seen = []
    for s in g.streams:
        s.pump()
        check_stream(s, seen)
    check_lines(seen)


if __name__ == "__main__":
    sys.exit(e2elib.main("legacy flow", "vt-e2e-legacy.", "guest-legacy.sh", run, boot_timeout=90,
                         guest=LegacyGuest, needs=()))
