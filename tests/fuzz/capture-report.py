#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
# Seeds of fuzz-report from a real merged perf.data: the header, attrs, ids and features kept,
# the data cut to the user records (ID_INDEX...), QEMU's "CPU n/..." COMMs and the samples in
# [FROM, TO] (ns, perf's time column) with the guest's samples before TO: a real stall in a few KB.
#   capture-report.py MERGED.data FROM_NS TO_NS OUT
import struct
import sys

src, t0, t1, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
b = open(src, 'rb').read()
magic, hsize, asz, a_off, a_len, d_off, d_len, e_off, e_len = struct.unpack_from('<9Q', b, 0)
feats = b[72:104]
attrs, ids = [], {}
for i in range(a_len // asz):
    o = a_off + i * asz
    attr = b[o:o + asz - 16]
    io, il = struct.unpack_from('<2Q', b, o + asz - 16)
    idl = b[io:io + il]
    attrs.append((attr, idl))
    st = struct.unpack_from('<Q', attr, 24)[0]
    for k in range(il // 8):
        ids[struct.unpack_from('<Q', idl, 8 * k)[0]] = st

def sample_time(rec):
    st = ids.get(struct.unpack_from('<Q', rec, 8)[0])
    if st is None:
        return None
    off = 8 + 8 * bin(st & (0x10000 | 0x1 | 0x2)).count('1')  # IDENTIFIER, IP, TID
    return struct.unpack_from('<Q', rec, off)[0]

data, p = bytearray(), d_off
while p + 8 <= d_off + d_len:
    typ, misc, size = struct.unpack_from('<IHH', b, p)
    rec = b[p:p + size]
    p += size
    keep = typ >= 64 and typ != 68  # user records but FINISHED_ROUND
    if typ == 3 and rec[16:20] == b'CPU ':
        keep = True
    if typ == 9:
        t = sample_time(rec)
        st = ids.get(struct.unpack_from('<Q', rec, 8)[0], 0)
        keep = t is not None and (t0 <= t <= t1 or (t <= t1 and not st & 0x1))  # guest (no IP): all before TO
    if keep:
        data += rec
# features: table of (offset, size) per set bit, then bodies
bits = [i for i in range(256) if feats[i // 8] >> (i % 8) & 1]
ft = [struct.unpack_from('<2Q', b, d_off + d_len + 16 * k) for k in range(len(bits))]
o = bytearray(104)
ids_at = []
for attr, idl in attrs:
    ids_at.append(len(o))
    o += idl
na_off = len(o)
for (attr, idl), at in zip(attrs, ids_at):
    o += attr + struct.pack('<2Q', at, len(idl))
nd_off = len(o)
o += data
table_at = len(o)
o += bytes(16 * len(ft))
for k, (fo, fl) in enumerate(ft):
    struct.pack_into('<2Q', o, table_at + 16 * k, len(o), fl)
    o += b[fo:fo + fl]
struct.pack_into('<9Q', o, 0, magic, hsize, asz, na_off, len(attrs) * asz, nd_off, len(data), 0, 0)
o[72:104] = feats
open(out, 'wb').write(o)
print(f'{out}: {len(o)} bytes, {len(data)} bytes of records')
