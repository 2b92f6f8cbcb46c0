# SPDX-License-Identifier: GPL-2.0-only
# e2e: the real guest as a libvirt domain (qemu:///system, Debian's libvirt-daemon-system,
# started here if it is not running; a libvirtd that cannot run fails the test, naming why).
#   boot  a transient TCG domain (virsh create) carrying setup's <controller> and pipe
#         <channel>s when it boots; a full session judged with perf (tests/e2e/lib.sh).
#   live  a persistent domain that boots with only setup's controller; the socket channels are
#         attached live with docs/guide-setup.md's own commands, the running agent picks them up, and
#         a session is complete.
# The guest is the e2e kernel + initramfs (direct kernel boot, boot's command line) with
# guest-cmd.sh; its serial console is a pipe chardev: console.out is read into the log,
# console.in carries lib.sh's commands.
#   test-libvirt.sh boot|live N
# VT_LIBVIRT=11: run inside scripts/libvirt-11 (libvirt 11 from bookworm-backports in its own
# mount namespace): the domain's emulator is QEMU 10 (scripts/qemu-10), and the test checks that
# libvirt 11 and QEMU 10 are the ones that ran. Otherwise the system's libvirt 9.0 and QEMU 7.2.
. "$(dirname "$0")/lib.sh"

READER=
mode=${1:?usage: test-libvirt.sh boot|live N} n=${2:?usage: test-libvirt.sh boot|live N}
case $mode in boot) transport=pipe ;; live) transport=socket ;; *) echo "bad mode $mode" >&2; exit 1 ;; esac
VM_NAME=vt-e2e-lv-$mode
LIBVIRT=${VT_LIBVIRT:-9.0}
# libvirt 11's domain has a dotted name as virt-manager gives them (ubuntu22.04): every command takes it.
case $LIBVIRT in 9.0) ;; 11) VM_NAME=$VM_NAME-11.3 ;; *) echo "VT_LIBVIRT=$LIBVIRT: 9.0 or 11" >&2; exit 1 ;; esac
URI=qemu:///system
QEMU_USER=libvirt-qemu:libvirt-qemu
lv() { timeout 60 virsh -q -c "$URI" "$@"; }

# A /dev/kvm the QEMU user cannot open (root:root 0600: no udev, as in containers) makes
# libvirt 9.0 find its cached QEMU capabilities ("KVM was enabled when probing") stale on
# every lookup and re-probe QEMU (~50 s per virsh create). Debian's udev rule gives it to group kvm, which
# libvirt-qemu is in: do the same, and say so.
lv_kvm_dev() {
	[ -c /dev/kvm ] || return 0
	su -s /bin/sh -c 'test -r /dev/kvm -a -w /dev/kvm' libvirt-qemu 2>/dev/null && return 0
	getent group kvm >/dev/null || return 0
	echo "note: /dev/kvm is $(stat -c '%U:%G %a' /dev/kvm) (no udev): giving it udev's root:kvm 0660 so that libvirt keeps its QEMU capabilities" >&2
	chgrp kvm /dev/kvm && chmod 0660 /dev/kvm
}

# The system daemon: running, or started the way this machine starts services.
lv_up() { timeout 20 virsh -q -c "$URI" version --daemon >/dev/null 2>&1; }
lv_start() {
	local i
	lv_up && return 0
	command -v libvirtd >/dev/null ||
		{ echo "libvirtd is not installed (Debian's libvirt-daemon-system): run scripts/bootstrap"; return 1; }
	if [ -d /run/systemd/system ]; then
		systemctl start virtlogd.socket libvirtd.socket libvirtd.service 2>&1 || return 1
	elif [ -x /etc/init.d/libvirtd ]; then
		/etc/init.d/virtlogd start && /etc/init.d/libvirtd start || return 1
	else
		virtlogd -d && libvirtd -d || return 1
	fi
	for i in $(seq 100); do lv_up && return 0; sleep 0.2; done
	echo "libvirtd started but '$URI' does not answer; its log says:"
	tail -n 5 /var/log/libvirt/libvirtd.log 2>/dev/null
	virsh -c "$URI" version --daemon 2>&1 | tail -n 2
	return 1
}

# Only our own domain: destroyed if it still runs, its persistent definition dropped.
lv_drop() {
	lv domstate "$VM_NAME" >/dev/null 2>&1 || return 0
	lv destroy "$VM_NAME" >/dev/null 2>&1
	lv undefine "$VM_NAME" >/dev/null 2>&1
	return 0
}
lv_cleanup() {
	lv_drop
	kill "$READER" 2>/dev/null
	e2e_cleanup
}

# lv_end: lets the guest power off; QEMU must exit within 60 s.
lv_end() {
	local i
	e2e_say end || return 1
	for i in $(seq 600); do kill -0 "$BOOT_PID" 2>/dev/null || { BOOT_PID=; return 0; }; sleep 0.1; done
	echo "QEMU $BOOT_PID still runs 60 s after 'end'" >&2
	return 1
}

# lv_settled MODE: after QEMU exits libvirt still has to reap it ("in shutdown"
# for a moment, seen in CI): waits up to 30 s for the transient domain to be gone
# (boot) or the persistent one to be "shut off" (live), then prints the state.
lv_settled() {
	local i st=
	for i in $(seq 300); do
		if st=$(virsh -c "$URI" domstate "$VM_NAME" 2>/dev/null); then
			[ "$1" != boot ] && [[ $st == "shut off"* ]] && break
		else
			[ "$1" = boot ] && { echo gone; return 0; }
		fi
		sleep 0.1
	done
	echo "${st:-gone}"
}

e2e_init "libvirt-$mode"
trap lv_cleanup EXIT
: >"$LOG"
lv_kvm_dev
how="already running"
lv_up || how="started by this test"
why=$(lv_start 2>&1) || { fail "libvirt: cannot run the system daemon ($URI): $why"; finish; exit 1; }
ok "libvirt: $URI answers, $how ($(virsh -c "$URI" version 2>/dev/null | sed -n 's/^Running hypervisor: //p'))"
daemon=$(virsh -c "$URI" version --daemon 2>/dev/null | sed -n 's/^Running against daemon: //p')
check_out "libvirt daemon $LIBVIRT.x answers ($daemon)" "^${LIBVIRT%.0}\\." echo "$daemon"
lv_drop # a domain left by an earlier run that was killed

# QEMU runs as libvirt-qemu: it must traverse $T; libvirt gives it the kernel, initrd, FIFOs.
chmod 755 "$T"
cp "$VT_E2E_KERNEL" "$T/vmlinux"
mkdir "$T/extra" && cp "$E2E_DIR/guest-cmd.sh" "$T/extra/vt-script"
(cd "$T/extra" && echo vt-script | cpio -o -H newc --quiet -R 0:0) | cat "$VT_E2E_INITRD" - >"$T/initrd"
mkfifo -m 0660 "$T/console.in" "$T/console.out"
chown "$QEMU_USER" "$T/console.in" "$T/console.out"

setup() { tc setup --name "$VM_NAME" --cpus 2 --dir "$VM" --transport "$transport" --format libvirt --owner "$QEMU_USER"; }
check "setup --format libvirt --transport $transport" eval 'setup >"$T/ch.xml"'
if [ "$mode" = boot ]; then
	devices=$(cat "$T/ch.xml")
else
	devices=$(grep '<controller' "$T/ch.xml")
fi
# libvirt 11's domain runs QEMU 10: a wrapper naming this build's cache, as libvirt gives QEMU
# no environment of ours.
emulator=
if [ "$LIBVIRT" = 11 ]; then
	printf '#!/bin/sh\nVT_CACHE=%s exec %s "$@"\n' "$VT_CACHE" "$VT_SOURCE_ROOT/scripts/qemu-10" >"$T/qemu-10"
	chmod 755 "$T/qemu-10"
	emulator="<emulator>$T/qemu-10</emulator>"
fi
# The domain: boot's machine (2 vCPUs, 256 MiB, TCG with every CPU feature, kernel command
# line), no disk, no network, the serial console a pipe.
cat >"$T/domain.xml" <<EOF
<domain type='qemu'>
  <name>$VM_NAME</name>
  <memory unit='MiB'>256</memory>
  <vcpu>2</vcpu>
  <os>
    <type arch='x86_64' machine='pc'>hvm</type>
    <kernel>$T/vmlinux</kernel>
    <initrd>$T/initrd</initrd>
    <cmdline>console=ttyS0 panic=-1 loglevel=4 cryptomgr.notests=1</cmdline>
  </os>
  <features><acpi/></features>
  <cpu mode='maximum'/>
  <on_poweroff>destroy</on_poweroff>
  <on_reboot>destroy</on_reboot>
  <on_crash>destroy</on_crash>
  <devices>
    $emulator
    <serial type='pipe'><source path='$T/console'/><target port='0'/></serial>
    <controller type='usb' model='none'/>
    <memballoon model='none'/>
$devices
  </devices>
</domain>
EOF

# The console reader holds console.out open read-write: libvirt opens and closes the FIFO
# before QEMU does, which would end a plain reader at once. lib.sh's BOOT_PID is QEMU's pid.
( exec <>"$T/console.out"; exec cat ) >"$LOG" &
READER=$!
if [ "$mode" = boot ]; then
	check "virsh create (transient domain, channels at boot)" lv create "$T/domain.xml"
else
	check "virsh define + start (only the virtio-serial controller)" \
		bash -c 'timeout 60 virsh -q -c "$1" define "$2" && timeout 60 virsh -q -c "$1" start "$3"' _ "$URI" "$T/domain.xml" "$VM_NAME"
fi
qpid=$(cat "/run/libvirt/qemu/$VM_NAME.pid" 2>/dev/null)
check "libvirt's QEMU runs (pid '$qpid')" test -n "$qpid" -a -d "/proc/${qpid:-none}"
BOOT_PID=$qpid
if [ "$LIBVIRT" = 11 ]; then
	qv=$(realpath "$(cat "$VT_CACHE/qemu-10-root" 2>/dev/null)/usr/bin/qemu-system-x86_64")
	qe=$(readlink "/proc/${qpid:-none}/exe")
	check "libvirt 11's QEMU is QEMU 10 ($qe)" test "$qe" = "$qv"
fi
[ "$vt_fail" -eq 0 ] || { finish; exit 1; }
check "guest ready" e2e_wait '^vt-e2e: ready' 60
if [ "$mode" = boot ]; then
	check "agent waits for the host" e2e_wait 'trace-agent: waiting for the host' 30
else
	check "guest: no virtio-trace port at boot" e2e_wait '^vt-e2e: ports: *$' 1
	check "agent started without ports, waits for them" e2e_wait 'no control port agent-ctl-path .* waiting for it to appear' 30
	# docs/guide-setup.md, libvirt, live: the same commands, vm1 being this domain.
	(
		cd "$T" || exit 1
		export PATH=$(dirname "$TRACE_COLLECTOR"):$PATH LIBVIRT_DEFAULT_URI=$URI
		set -e
		trace-collector setup --name "$VM_NAME" --cpus 2 --dir "$VM" --transport socket --format libvirt --owner libvirt-qemu:libvirt-qemu --live "$VM_NAME"
	) >"$T/attach.log" 2>&1
	check "guide-setup.md's live attach: 5 channels attached (control, 2 trace, 2 perf) ($(tr '\n' ' ' <"$T/attach.log"))" \
		grep -q "^libvirt domain $VM_NAME: 5 channels attached, 0 already there (also in its persistent configuration)" "$T/attach.log"
	again=$(LIBVIRT_DEFAULT_URI=$URI "$TRACE_COLLECTOR" setup --name "$VM_NAME" --cpus 2 --dir "$VM" --transport socket \
		--format libvirt --owner libvirt-qemu:libvirt-qemu --live "$VM_NAME" 2>&1)
	check_out "a second live attach adds nothing" "^libvirt domain $VM_NAME: 0 channels attached, 5 already there" echo "$again"
	check_out "the running domain has the 5 channels" '^5$' \
		bash -c 'virsh -c "$1" dumpxml "$2" | grep -c "<channel type=.unix.>"' _ "$URI" "$VM_NAME"
	check_out "the persistent config has them too (--config)" '^5$' \
		bash -c 'virsh -c "$1" dumpxml --inactive "$2" | grep -c "<channel type=.unix.>"' _ "$URI" "$VM_NAME"
	for s in agent-ctl-path trace-path-cpu0 trace-path-cpu1 perf-path-cpu0 perf-path-cpu1; do
		check "QEMU created $s.sock" test -S "$VM/sock/$s.sock"
	done
fi

mapfile -t tids < <(e2e_vcpu_tids "$qpid")
check "QEMU names its 2 vCPU threads (${tids[*]})" test "${#tids[@]}" -eq 2
check_out "start: prints the session dir" "^$VM/sessions/[0-9TZ]+\$" e2e_start -e 'sched,irq,timer' --buffer-kb 512
check "guest workload ($n lines)" e2e_run "$n"
st=$(e2e_status)
echo "$st"
check_out "status: pages arrived" '^cpu[01] +[1-9][0-9]* +[1-9]' echo "$st"
check_out "status: host perf running" '^host perf: running' echo "$st"
out=$T/out.data
sum=$(e2e_stop -v -o "$out" 2>&1)
stop_st=$?
echo "$sum"
check "stop exits 0" test "$stop_st" -eq 0
for c in 0 1; do
	check_out "summary: cpu$c all pages arrived" "^cpu$c: ([0-9]+) pages .* spooled, guest sent \\1, 0 lost in transport; ring overrun 0, dropped 0 events" echo "$sum"
done
check_out "summary: losses all 0" '^losses: ring overrun 0 events, ring dropped 0 events, ring missed-events 0 .*, transport 0 pages$' echo "$sum"
check_out "summary: clock aligned" 'clock: +aligned \(ptp, [0-9]+ segments, [0-9]+ samples, error bound [0-9]+ ns\)$' echo "$sum"
check_out "summary: vm pid is libvirt's QEMU ($qpid), found from the ports" "vm pid: $qpid\$" echo "$sum"
check_out "summary: vCPU → host CPU from QEMU's vCPU threads (no fallback)" 'vcpu: +guest sample cpu = host CPU .*\(2/2 vCPU threads found' echo "$sum"
check "summary: no FALLBACK" bash -c '! grep -q FALLBACK <<<"$1"' _ "$sum"
check_out "summary: host recording merged" 'host: +recording merged' echo "$sum"
check "perf script/report: no warnings" e2e_no_warnings "$out" "$sum"
check "all $n markers present once, in order" e2e_markers "$out" "$n"
check "guest and host events interleaved by time" e2e_interleaved "$out"
check_out "perf script -F +machine_pid,+vcpu: guest lines carry libvirt's QEMU pid" "^VM: *$qpid +VCPU: *00[01] " "$PERF" script -i "$out" -F +machine_pid,+vcpu
check_out "guest events of both vCPUs" "^VCPU: *001 " "$PERF" script -i "$out" -F vcpu,event
check "every guest sample's cpu is its vCPU thread's host CPU" \
	python3 "$VT_SOURCE_ROOT/tests/integration/check-vcpu-cpu.py" --allow-still "$out" "${tids[@]}"
check_out "perf report --sort comm,pid: guest events reported" "of event 'guest_sched:sched_switch'" "$PERF" report -i "$out" --stdio --sort comm,pid
check "guest powers off (QEMU exits)" lv_end
check "guest reached 'vt-e2e: done'" e2e_wait '^vt-e2e: done' 1
if [ "$mode" = boot ]; then
	check_out "the transient domain is gone" '^gone$' lv_settled boot
else
	check_out "the persistent domain is shut off" '^shut off' lv_settled live
fi
finish
