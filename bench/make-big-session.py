#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
# Grows a captured session dir (tests/integration/capture-session) into a large synthetic one:
# each vCPU spool repeats its real ring pages N times with the page base timestamp shifted
# forward, so every copy stays time-ordered.  make-big-session.py SRC DST PAGES_PER_CPU
import os, shutil, struct, sys

src, dst, want = sys.argv[1], sys.argv[2], int(sys.argv[3])
shutil.copytree(src, dst)
ini = dict(l.split('=', 1) for l in open(os.path.join(src, 'session.ini')).read().split())
ps, ncpus = int(ini['page_size']), int(ini['ncpus'])
MAGIC = struct.pack('<QQ', 0x4b52414d54524956, 0xffffffffffffffff)
for c in range(ncpus):
    d = open(os.path.join(src, 'cpu%d.spool' % c), 'rb').read()
    b = d.find(MAGIC)
    pages = [d[o:o + ps] for o in range(b + ps, len(d) - ps, ps)]
    end = bytearray(d[len(d) - ps:])
    pages = [p for p in pages if p[:16] != MAGIC and struct.unpack_from('<Q', p, 8)[0] & 0x7ffffff > 64]
    t0 = struct.unpack_from('<Q', pages[0], 0)[0]
    span = struct.unpack_from('<Q', pages[-1], 0)[0] - t0 + 50_000_000
    with open(os.path.join(dst, 'cpu%d.spool' % c), 'wb') as f:
        f.write(d[b:b + ps])
        n = 0
        while n < want:
            for p in pages:
                q = bytearray(p)
                struct.pack_into('<Q', q, 0, struct.unpack_from('<Q', p, 0)[0] + (n // len(pages)) * span)
                f.write(q)
                n += 1
                if n == want:
                    break
        struct.pack_into('<Q', end, 48, want)   # stats.pages_sent (marker head 40 + cpu, error)
        f.write(end)
