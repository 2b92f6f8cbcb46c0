# SPDX-License-Identifier: GPL-2.0-only
"""Captures what the REAL trace-agent writes on agent-ctl-path, as seeds for fuzz-agentctl.

  capture-agentctl.py TRACE_AGENT OUTDIR

Runs trace-agent on this host's tracefs (its own instance) over FIFO pairs, plays the
collector's side of one session (HELLO, CONFIG, META_REQ, PROBE with and without MARK,
START, STOP, BINARY_REQ for the last 2 KiB of the agent's own file and for a wrong build-id,
and a frame type the agent does not know, which it answers with ERROR), and
writes the agent's reply bytes to OUTDIR: one seed per reply, metadata cut to the first
files so that libFuzzer can mutate them, and 'session' with the whole exchange minus the
rest of the metadata. Needs root (the agent creates an ftrace instance).
"""
import os
import struct
import subprocess
import sys
import tempfile
import threading
import time

MAGIC, VERSION = 0x31435456, 1
ERROR, OK, HELLO, CONFIG, META_REQ, META_FILE, META_END, START, STOP, STOPPED, PROBE, PROBE_REPLY = \
    1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12
BINARY_REQ, BINARY = 13, 14
A_FILE_NAME, A_BUILD_ID, A_FILE_OFFSET = 13, 34, 35
A_VERSION, A_EVENTS, A_CLOCK, A_BUFFER_KB, A_SESSION = 1, 9, 10, 11, 12
A_PROBE_ID, A_HOST_TIME, A_MARK = 19, 20, 22
META_KEPT = 4  # metadata files kept, each at most 8 KiB (kallsyms is not)


def attr(tag, data):
    pad = (-len(data)) % 4
    return struct.pack('<HHI', tag, 0, len(data)) + data + b'\0' * pad


def u32(tag, v): return attr(tag, struct.pack('<I', v))
def u64(tag, v): return attr(tag, struct.pack('<Q', v))
def string(tag, s): return attr(tag, s.encode() + b'\0')


def build_id(path):
    out = subprocess.run(['readelf', '-n', path], capture_output=True, text=True, check=True).stdout
    return bytes.fromhex([l.split()[-1] for l in out.splitlines() if 'Build ID' in l][0])


def frame(typ, seq, *attrs):
    payload = b''.join(attrs)
    return struct.pack('<IHHII', MAGIC, VERSION, typ, seq, len(payload)) + payload


class Reader:
    def __init__(self, fd):
        self.fd, self.buf = fd, b''

    def frame(self, timeout=20):
        end = time.time() + timeout
        while True:
            if len(self.buf) >= 16:
                magic, _, typ, _, length = struct.unpack_from('<IHHII', self.buf)
                if magic != MAGIC:
                    sys.exit('capture-agentctl: the agent wrote no frame: %r' % self.buf[:32])
                if len(self.buf) >= 16 + length:
                    f, self.buf = self.buf[:16 + length], self.buf[16 + length:]
                    return typ, f
            if time.time() > end:
                sys.exit('capture-agentctl: no complete frame from the agent in %ds' % timeout)
            try:
                self.buf += os.read(self.fd, 1 << 20)
            except BlockingIOError:
                time.sleep(0.01)


def main():
    agent, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    ncpu = os.cpu_count()
    d = tempfile.mkdtemp(prefix='vt-capture-ctl.')
    names = ['agent-ctl-path.in', 'agent-ctl-path.out'] + ['trace-path-cpu%d.%s' % (i, k) for i in range(ncpu) for k in ('in', 'out')]
    fds = {}
    for n in names:
        os.mkfifo(os.path.join(d, n))
        fds[n] = os.open(os.path.join(d, n), os.O_RDWR | os.O_NONBLOCK)
    stop = False

    def drain():  # the data ports: read and drop, like a spool that keeps nothing
        while not stop:
            for i in range(ncpu):
                try:
                    os.read(fds['trace-path-cpu%d.out' % i], 1 << 20)
                except BlockingIOError:
                    pass
            time.sleep(0.01)
    threading.Thread(target=drain, daemon=True).start()
    inst = 'vt_capture_%d' % os.getpid()
    p = subprocess.Popen([agent, '--ports-dir', d, '--instance', inst], stderr=subprocess.DEVNULL)
    rd, wfd = Reader(fds['agent-ctl-path.out']), fds['agent-ctl-path.in']
    seeds, session = {}, []
    try:
        def ask(name, f, until):
            os.write(wfd, f)
            while True:
                typ, got = rd.frame()
                if typ == META_FILE:
                    n = sum(1 for k in seeds if k.startswith('meta-file'))
                    if n < META_KEPT and len(got) <= 8192:
                        seeds['meta-file-%d' % n] = got
                        session.append(got)
                    continue
                seeds.setdefault(name, got)
                session.append(got)
                if typ in until:
                    return
        ask('hello', frame(HELLO, 1, u32(A_VERSION, 1)), {HELLO})
        ask('config-ok', frame(CONFIG, 2, string(A_EVENTS, 'sched:sched_switch'), string(A_CLOCK, 'mono'),
                               u32(A_BUFFER_KB, 256)), {OK, ERROR})
        ask('meta-end', frame(META_REQ, 3), {META_END, ERROR})
        ask('probe-reply', frame(PROBE, 4, u64(A_PROBE_ID, 1), u64(A_HOST_TIME, time.monotonic_ns())),
            {PROBE_REPLY, ERROR})
        ask('start-ok', frame(START, 5, u64(A_SESSION, 0x1234)), {OK, ERROR})
        ask('probe-reply-mark', frame(PROBE, 6, u64(A_PROBE_ID, 2), u64(A_HOST_TIME, time.monotonic_ns()),
                                      u32(A_MARK, 1)), {PROBE_REPLY, ERROR})
        ask('stopped', frame(STOP, 7), {STOPPED, ERROR})
        exe, bid = os.path.realpath(agent), build_id(agent)
        tail = max(0, os.path.getsize(exe) - 2048)
        ask('binary', frame(BINARY_REQ, 8, attr(A_FILE_NAME, exe.encode()), attr(A_BUILD_ID, bid), u64(A_FILE_OFFSET, tail)),
            {BINARY, ERROR})
        ask('binary-stale', frame(BINARY_REQ, 9, attr(A_FILE_NAME, exe.encode()), attr(A_BUILD_ID, bytes(20)),
                                  u64(A_FILE_OFFSET, 0)), {ERROR})
        ask('error', frame(99, 10), {ERROR})
    finally:
        stop = True
        p.terminate()
        p.wait(10)
    for name, data in seeds.items():
        with open(os.path.join(out, name), 'wb') as f:
            f.write(data)
    with open(os.path.join(out, 'session'), 'wb') as f:
        f.write(b''.join(session))
    print('capture-agentctl: %d seeds in %s (%d bytes of session)' % (len(seeds) + 1, out,
                                                                      sum(map(len, session))))


main()
