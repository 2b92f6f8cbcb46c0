#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# The peer: trace-cmd 3.1.6 (Debian's, dynamic: copied with its libraries into an initramfs)
# as 'trace-cmd agent -N' in the e2e guest kernel, reached over QEMU user networking (no
# vsock here). The agent's data sockets use ephemeral ports: the guest's
# ip_local_port_range is pinned to 30000-30015, and trace-cmd searches data ports from
# 1500 up: 1500-1515 and 30000-30015 are forwarded from the host.
#   bench/tracecmd-guest.sh OUTDIR [SECS]      (as root; after ninja -C build)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
out=${1:?usage: tracecmd-guest.sh OUTDIR [SECS]} secs=${2:-5}
mkdir -p "$out"
kroot=$(cat "${VT_CACHE:-/work/vt-cache}/kernel-root")
kver=$(ls "$kroot/lib/modules" | head -n 1)
st=$(mktemp -d /tmp/vt-tc.XXXXXX)
qpid=
trap '[ -n "$qpid" ] && kill $qpid 2>/dev/null; rm -rf "$st"' EXIT
mkdir -p "$st/root/bin" "$st/root/lib/modules"
cp "$(command -v busybox)" "$st/root/bin/busybox"
cp /usr/bin/trace-cmd "$top/build/bench/dhry" "$st/root/bin/"
for l in $(ldd /usr/bin/trace-cmd | grep -o '/[^ ]*'); do
	mkdir -p "$st/root$(dirname "$l")"; cp -L "$l" "$st/root$l"
done
cp "$(find "$kroot/lib/modules/$kver" -name e1000.ko)" "$st/root/lib/modules/"
cat >"$st/root/init" <<INIT
#!/bin/busybox sh
/bin/busybox mkdir -p /proc /sys /dev /tmp /sbin /usr/bin /usr/sbin /var/lib/trace-cmd /etc
/bin/busybox --install -s
mount -t devtmpfs devtmpfs /dev
exec 0</dev/console 1>/dev/console 2>&1
mount -t proc proc /proc; mount -t sysfs sysfs /sys; mount -t tracefs nodev /sys/kernel/tracing
insmod /lib/modules/e1000.ko
ifconfig lo 127.0.0.1 up; ifconfig eth0 10.0.2.15 netmask 255.255.255.0 up; route add default gw 10.0.2.2
echo "30000 30015" >/proc/sys/net/ipv4/ip_local_port_range
trace-cmd agent -N 10.0.2.2 -p 823 &
echo "vt-tc: agent started"
read -t 120 w
echo "vt-tc: dhry start"
/bin/dhry $secs
echo "vt-tc: dhry end"
read -t 120 w
/bin/dhry $secs
echo "vt-tc: done"
poweroff -f
INIT
chmod 755 "$st/root/init"
(cd "$st/root" && find . | cpio -o -H newc --quiet -R 0:0) >"$st/initrd"
fwd=hostfwd=tcp:127.0.0.1:18823-:823
for p in $(seq 1500 1515); do fwd="$fwd,hostfwd=tcp:127.0.0.1:$p-:$p"; done
mkfifo "$st/in"; exec 3<>"$st/in"
qemu-system-x86_64 -m 256 -smp 2 -nographic -no-reboot -accel tcg -cpu max -kernel "$top/build/tests/e2e/vmlinux" \
	-initrd "$st/initrd" -append "console=ttyS0 panic=-1 loglevel=4" -nic user,model=e1000,$fwd <"$st/in" >"$out/console.log" 2>&1 &
qpid=$!
for i in $(seq 120); do grep -q "vt-tc: agent started" "$out/console.log" && break; sleep 0.5; done
sleep 2
cd "$out"
echo "+ trace-cmd record -A 127.0.0.1:18823 -N -e sched -e timer -e kmem" >"$out/record.log"
timeout $((secs * 4 + 60)) trace-cmd record -A 127.0.0.1:18823 -N -e sched -e timer -e kmem -o host.dat sh -c "echo go >&3; sleep 1; while ! grep -q 'vt-tc: dhry end' console.log; do sleep 0.5; done" >>"$out/record.log" 2>&1 || echo "record exit $?" >>"$out/record.log"
echo next >&3
for i in $(seq 120); do grep -q "vt-tc: done" "$out/console.log" && break; sleep 0.5; done
grep "^dhry\|vt-tc" "$out/console.log" || true
ls -la "$out"
