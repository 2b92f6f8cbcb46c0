#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Turns a real perf-cpuN.spool (a session of trace-collector start --guest-perf) into a seed of
tests/fuzz-guest-perf.c: the records after this session's perf begin marker, cut at a record
boundary near MAX bytes, with each record's sample id rewritten to the target's ids (event 0 ->
1, event 1 -> 2), behind a first byte FIRST (default 0: the target puts its own begin marker
first; 8: two CPUs with the same stream).

  capture-guest-perf.py SPOOL OUT [MAX [FIRST]]"""
import struct
import sys

MAGIC = b"VIRTMARK"
SAMPLE, LOST, THROTTLE, UNTHROTTLE = 9, 2, 5, 6


def main():
    spool, out = sys.argv[1], sys.argv[2]
    limit = int(sys.argv[3]) if len(sys.argv) > 3 else 16384
    first = int(sys.argv[4]) if len(sys.argv) > 4 else 0
    data = open(spool, "rb").read()
    at = data.find(MAGIC)
    if at < 0:
        sys.exit("no marker in " + spool)
    page = struct.unpack_from("<I", data, at + 36)[0]
    nr = struct.unpack_from("<I", data, at + 112)[0]
    ids = list(struct.unpack_from("<8Q", data, at + 120))[:nr]
    new = {old: i + 1 for i, old in enumerate(ids)}
    pos, end, recs = at + page, at + page, bytearray()
    while end + 8 <= len(data) and data[end:end + 8] != MAGIC:
        typ, misc, size = struct.unpack_from("<IHH", data, end)
        if size < 8 or size % 8 or end + size > len(data) or end + size - pos > limit:
            break
        rec = bytearray(data[end:end + size])
        spots = [8] if typ == SAMPLE else [size - 8]
        if typ == LOST:
            spots.append(8)
        if typ in (THROTTLE, UNTHROTTLE):
            spots += [16, 24]
        for off in spots:
            old = struct.unpack_from("<Q", rec, off)[0]
            struct.pack_into("<Q", rec, off, new.get(old, old))
        recs += rec
        end += size
    open(out, "wb").write(bytes([first]) + bytes(recs))
    print(f"{out}: {len(recs)} bytes of records from {spool} (ids {ids} -> {list(new.values())})")


main()
