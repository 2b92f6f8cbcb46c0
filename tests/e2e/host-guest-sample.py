# SPDX-License-Identifier: GPL-2.0-only
"""Makes a host recording hold one guest-mode sample, as a KVM host's `perf record -e cycles:G`
would: the first sample of IN (a real host perf.data) is rewritten to cpumode GUEST_KERNEL,
pid/tid QEMU_PID and ip ADDR (a guest kernel function's address), written to OUT.

  host-guest-sample.py IN OUT QEMU_PID ADDR

No KVM on these hosts: this stands in for the real thing (docs/perf-data.md gives the
recipe for a KVM host). Reads the file's own attrs for the sample layout."""
import struct
import sys

SAMPLE, MISC_GUEST_KERNEL, MISC_CPUMODE_MASK = 9, 4, 7
IDENTIFIER, IP, TID = 1 << 16, 1 << 0, 1 << 1


def main():
    src, dst, qpid, addr = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4], 16)
    data = bytearray(open(src, 'rb').read())
    if data[:8] != b'PERFILE2':
        sys.exit('host-guest-sample: %s is not a perf.data file' % src)
    attr_size, = struct.unpack_from('<Q', data, 16)
    attrs_off, attrs_size, data_off, data_size = struct.unpack_from('<QQQQ', data, 24)
    types = set()
    for a in range(attrs_off, attrs_off + attrs_size, attr_size):
        types.add(struct.unpack_from('<Q', data, a + 24)[0])  # perf_event_attr.sample_type
    # id (IDENTIFIER), ip, pid/tid lead every sample when all attrs have them
    if len({t & IDENTIFIER for t in types}) != 1 or not all(t & IP and t & TID for t in types):
        sys.exit('host-guest-sample: the attrs do not all lead with [id,] ip, pid/tid: %s' % [hex(t) for t in types])
    st = types.pop()
    off = data_off
    while off < data_off + data_size:
        typ, misc, size = struct.unpack_from('<IHH', data, off)
        if size < 8:
            sys.exit('host-guest-sample: a record of size %d at %d' % (size, off))
        if typ == SAMPLE:
            p = off + 8 + (8 if st & IDENTIFIER else 0)
            struct.pack_into('<Q', data, p, addr)
            struct.pack_into('<II', data, p + 8, qpid, qpid)
            struct.pack_into('<H', data, off + 4, (misc & ~MISC_CPUMODE_MASK) | MISC_GUEST_KERNEL)
            open(dst, 'wb').write(data)
            print('host-guest-sample: sample at byte %d of %s now guest kernel, pid %d, ip %#x' % (off, dst, qpid, addr))
            return
        off += size
    sys.exit('host-guest-sample: no sample in %s' % src)


main()
