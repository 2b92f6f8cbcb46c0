#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
# A QMP client for the e2e tests: one command on a QEMU monitor socket, its answer printed as
# JSON; "migrate" runs a whole live migration and waits for its end.
#   qmp.py SOCK CMD [JSON-ARGUMENTS]     e.g. qmp.py q.sock query-status
#   qmp.py SOCK migrate URI [TIMEOUT] [DEST_SOCK]
#                                        migrate to URI, wait (default 120 s), print
#                                        query-migrate's final answer (status, downtime, total-time);
#                                        with the destination's monitor DEST_SOCK also
#                                        "stop_ts"/"resume_ts": the source's STOP and the
#                                        destination's RESUME events' times (host realtime, s): the
#                                        guest's TSC stands still between them under TCG
#   qmp.py SOCK migrate-cancel-after URI MS   start the migration, cancel it MS ms later, wait
#                                        for its end, print the final query-migrate
# Exit status: 0 when QEMU answered (migrate: when it completed; migrate-cancel-after: when it
# ended cancelled or failed), 1 otherwise.
import json
import socket
import sys
import time


class Qmp:
    def __init__(self, path, timeout=60.0):  # a QEMU in the KVM rig's L1 answers slowly
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.s.connect(path)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        self.s.settimeout(timeout)
        self.f = self.s.makefile('r')
        self.events = []
        json.loads(self.f.readline())  # the greeting
        self.cmd('qmp_capabilities')

    def wait_event(self, name, timeout):
        """The first event NAME (already received, or within timeout s), else None."""
        deadline = time.monotonic() + timeout
        while True:
            for e in self.events:
                if e.get('event') == name:
                    return e
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            self.s.settimeout(left)
            try:
                line = self.f.readline()
            except (socket.timeout, TimeoutError):
                return None
            if not line:
                return None
            r = json.loads(line)
            if 'event' in r:
                self.events.append(r)

    def cmd(self, name, args=None):
        msg = {'execute': name}
        if args:
            msg['arguments'] = args
        self.s.sendall((json.dumps(msg) + '\n').encode())
        while True:
            line = self.f.readline()
            if not line:
                raise EOFError('QEMU closed its monitor')
            r = json.loads(line)
            if 'event' in r:
                self.events.append(r)
                continue
            if 'error' in r:
                raise RuntimeError('%s: %s' % (name, r['error'].get('desc', r['error'])))
            return r.get('return')


def wait_migration(q, timeout):
    deadline = time.monotonic() + timeout
    while True:
        r = q.cmd('query-migrate')
        if r.get('status') in ('completed', 'failed', 'cancelled'):
            return r
        if time.monotonic() > deadline:
            raise TimeoutError('migration still %s after %s s' % (r.get('status'), timeout))
        time.sleep(0.05)


def main(argv):
    if len(argv) < 3:
        sys.stderr.write('usage: qmp.py SOCK CMD [JSON-ARGUMENTS] (see its header)\n')
        return 1
    q = Qmp(argv[1])
    if argv[2] == 'migrate':
        dst = Qmp(argv[5]) if len(argv) > 5 else None
        q.cmd('migrate', {'uri': argv[3]})
        r = wait_migration(q, float(argv[4]) if len(argv) > 4 else 120.0)
        if dst:
            stop, resume = q.wait_event('STOP', 5.0), dst.wait_event('RESUME', 30.0)
            for key, e in (('stop_ts', stop), ('resume_ts', resume)):
                if e:
                    r[key] = e['timestamp']['seconds'] + e['timestamp']['microseconds'] / 1e6
        print(json.dumps(r))
        return 0 if r.get('status') == 'completed' else 1
    if argv[2] == 'migrate-cancel-after':
        q.cmd('migrate', {'uri': argv[3]})
        time.sleep(int(argv[4]) / 1000.0)
        q.cmd('migrate_cancel')
        r = wait_migration(q, 60.0)
        print(json.dumps(r))
        return 0 if r.get('status') in ('cancelled', 'failed') else 1
    r = q.cmd(argv[2], json.loads(argv[3]) if len(argv) > 3 else None)
    print(json.dumps(r))
    return 0


if __name__ == '__main__':
    try:
        sys.exit(main(sys.argv))
    except (OSError, EOFError, RuntimeError, TimeoutError, ValueError) as e:
        sys.stderr.write('qmp.py: %s\n' % e)
        sys.exit(1)
