#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
# Checks chromium's screenshot of 'trace-collector report --svg' against the SVG's own mapping
# (data-* on <svg> and each lane) and the --json stalls: every lane has guest-band pixels, each
# stall of 3+ pixels has its red mark at its x, and the mark strip is white where no stall is.
#   check-report-png.py SHOT.png PICTURE.svg REPORT.json
import json, re, struct, sys, zlib

def png(path):
    b = open(path, 'rb').read()
    assert b[:8] == b'\x89PNG\r\n\x1a\n', 'not a PNG'
    p, idat, w = 8, b'', 0
    while p < len(b):
        n, typ = struct.unpack_from('>I4s', b, p)
        body = b[p + 8:p + 8 + n]
        if typ == b'IHDR':
            w, h, depth, ctype, _, _, inter = struct.unpack('>IIBBBBB', body)
            assert depth == 8 and ctype in (2, 6) and not inter, (depth, ctype, inter)
            bpp = 3 if ctype == 2 else 4
        elif typ == b'IDAT':
            idat += body
        p += 12 + n
    raw, rows, prev, stride = zlib.decompress(idat), [], bytearray(w * bpp), w * bpp
    for y in range(h):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            c = prev[i - bpp] if i >= bpp else 0
            u = prev[i]
            if f == 1: line[i] = (line[i] + a) & 255
            elif f == 2: line[i] = (line[i] + u) & 255
            elif f == 3: line[i] = (line[i] + (a + u) // 2) & 255
            elif f == 4:
                pa, pb, pc = abs(u - c), abs(a - c), abs(a + u - 2 * c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else u if pb <= pc else c)) & 255
        rows.append(line)
        prev = line
    return w, h, lambda x, y: tuple(rows[y][x * bpp:x * bpp + 3])

w, h, px = png(sys.argv[1])
svg = open(sys.argv[2]).read()
attr = lambda n: float(re.search(r'<svg [^>]*\b%s="([0-9.]+)"' % n, svg).group(1))
t0, t1, left, plot, band = attr('data-from-ns'), attr('data-to-ns'), attr('data-left'), attr('data-plot-width'), attr('data-band')
lanes = {int(v): float(y) for v, y in re.findall(r'<g class="lane" data-vcpu="(\d+)" data-y="([0-9.]+)"', svg)}
stalls = json.load(open(sys.argv[3]))['stalls']
red = lambda c: c[0] > 180 and c[1] < 60 and c[2] < 60
x_of = lambda t: left + plot * (t - t0) / (t1 - t0)
bad = 0
for v, y in lanes.items():
    mid = int(y + band / 2)
    coloured = sum(1 for x in range(int(left), int(left + plot)) if px(x, mid) != (255, 255, 255))
    print(f'lane vCPU {v} at y {y}: {coloured} of {int(plot)} pixels drawn', file=sys.stderr)
    bad += coloured < plot / 2
    strip = int(y - 5)
    marks = [x for x in range(int(left), int(left + plot)) if red(px(x, strip))]
    mine = [s for s in stalls if s['vcpu'] == v]
    for s in mine:
        a, b = x_of(s['start_ns']), x_of(s['start_ns'] + s['duration_ns'])
        if b - a >= 3 and not red(px(int((a + b) / 2), strip)):
            bad += 1
            print(f'vCPU {v}: no red mark at x {int((a + b) / 2)} for the stall at {s["start_ns"]}', file=sys.stderr)
    stray = [x for x in marks if not any(x_of(s['start_ns']) - 2 <= x <= x_of(s['start_ns'] + s['duration_ns']) + 2 for s in mine)]
    print(f'vCPU {v}: {len(mine)} stalls, {len(marks)} red mark pixels, {len(stray)} stray', file=sys.stderr)
    bad += len(stray) > 0
bad += len(lanes) != 2
sys.exit(1 if bad else 0)
