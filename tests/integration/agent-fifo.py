# SPDX-License-Identifier: GPL-2.0-only
"""Helpers for test-daemon-agent.sh (the daemon with the real trace-agent over FIFO pairs).

  hold DIR                   holds every FIFO of DIR open read-write, like QEMU's pipe
                             chardev (so queued bytes survive), until killed; prints 'ready'
  stale FIFO KIND            queues the bytes an earlier session left: KIND 'data' (an old
                             begin marker, two pages, junk) or 'junk'; prints their count
  queued FIFO                prints how many bytes wait in FIFO
  mark INSTANCE TAG N        writes 'TAG cpuC seq I' (I = 1..N) into the instance's
                             trace_marker, pinned on each online CPU C in turn
  check TAG N NCPU [prefix]  reads 'perf script -F cpu,time,event,trace' on stdin: every
                             CPU's TAG lines are seq 1..N once, in order, on that CPU
                             (prefix: a prefix 1..k with k >= 1, for a killed session)
  sorted                     reads 'perf script -F time,event' on stdin: times never go
                             back; prints 'guest=G host=H switches=S back=B' (S: guest/host
                             alternations, B: times that went back)
"""
import fcntl
import os
import re
import struct
import sys
import termios
import time

PAGE = 4096
MARK_MAGIC = 0x4b52414d54524956


def hold(d):
    fds = [os.open(os.path.join(d, n), os.O_RDWR | os.O_NONBLOCK)
           for n in sorted(os.listdir(d)) if n.endswith(('.in', '.out'))]
    print('ready', len(fds), flush=True)
    while True:
        time.sleep(3600)


def stale(path, kind):
    if kind == 'data':
        head = struct.pack('<QQIIQII', MARK_MAGIC, 2**64 - 1, 1, 1, 4242, 0, PAGE)
        data = head.ljust(PAGE, b'\0')
        for i in range(2):
            data += struct.pack('<QQ', i, 64) + (b'STALEPAGE' * 500)[:PAGE - 16]
        data += b'STALEJUNK' * 111 + b'S'
    else:
        data = b'stale host bytes of a dead session\n' * 9
    fd = os.open(path, os.O_RDWR | os.O_NONBLOCK)
    os.write(fd, data)
    os.close(fd)
    print(len(data))


def queued(path):
    fd = os.open(path, os.O_RDWR | os.O_NONBLOCK)
    n = struct.unpack('i', fcntl.ioctl(fd, termios.FIONREAD, b'\0' * 4))[0]
    os.close(fd)
    print(n)


def mark(inst, tag, n):
    path = f'/sys/kernel/tracing/instances/{inst}/trace_marker'
    pad = 'x' * 100
    for cpu in sorted(os.sched_getaffinity(0)):
        os.sched_setaffinity(0, {cpu})
        fd = os.open(path, os.O_WRONLY)
        for i in range(1, n + 1):
            os.write(fd, f'{tag} cpu{cpu} seq {i} {pad}'.encode())
        os.close(fd)


def check(tag, n, ncpu, prefix):
    seqs = {c: [] for c in range(ncpu)}
    bad = 0
    pat = re.compile(r'^\s*\[(\d+)\].*\b' + re.escape(tag) + r' cpu(\d+) seq (\d+) ')
    for line in sys.stdin:
        m = pat.search(line)
        if not m:
            continue
        cpu, wrote, seq = int(m[1]), int(m[2]), int(m[3])
        if cpu != wrote or wrote not in seqs:
            bad += 1
            continue
        seqs[wrote].append(seq)
    errs = [f'{bad} lines on a CPU other than the writer'] if bad else []
    for c, s in seqs.items():
        k = len(s) if prefix else n
        if s != list(range(1, k + 1)) or (prefix and k < 1):
            first = next((i for i, v in enumerate(s) if i >= k or v != i + 1), len(s))
            errs.append(f'cpu{c}: {len(s)} lines, expected seq 1..{k if not prefix else "k>=1"};'
                        f' first difference at index {first}: {s[first:first + 3]}')
    print('; '.join(errs) if errs else
          'ok ' + ' '.join(f'cpu{c}={len(s)}' for c, s in seqs.items()))
    return 1 if errs else 0


def sorted_times():
    last, guest, host, back, switches, prev = 0.0, 0, 0, 0, 0, None
    for line in sys.stdin:
        m = re.match(r'^\s*(\d+\.\d+):\s+(\S+):', line)
        if not m:
            continue
        t = float(m[1])
        if t < last:
            back += 1
        last = t
        kind = m[2].startswith('guest_')
        guest += kind
        host += not kind
        switches += prev is not None and kind != prev
        prev = kind
    print(f'guest={guest} host={host} switches={switches} back={back}')
    return 1 if back else 0


def main(a):
    if a[0] == 'hold':
        hold(a[1])
    elif a[0] == 'stale':
        stale(a[1], a[2])
    elif a[0] == 'queued':
        queued(a[1])
    elif a[0] == 'mark':
        mark(a[1], a[2], int(a[3]))
    elif a[0] == 'check':
        return check(a[1], int(a[2]), int(a[3]), len(a) > 4 and a[4] == 'prefix')
    elif a[0] == 'sorted':
        return sorted_times()
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
