# SPDX-License-Identifier: GPL-2.0-only
# trace-collector setup: FIFO pairs created, idempotent, refuses a non-FIFO in the way,
# its libvirt XML validates (virt-xml-validate) and real QEMU accepts its arguments.
. "$(dirname "$0")/lib.sh"

for tool in virt-xml-validate qemu-system-x86_64; do
	command -v "$tool" >/dev/null || { fail "$tool missing: run scripts/bootstrap"; finish; exit 1; }
done
tmp=$(mktemp -d /tmp/vt-setup.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
T=$TRACE_COLLECTOR
d=$tmp/vms/vm1

fifos_ok() { # DIR NCPUS
	local p
	for p in agent-ctl-path $(seq -f 'trace-path-cpu%g' 0 $(($2 - 1))) $(seq -f 'perf-path-cpu%g' 0 $(($2 - 1))); do
		[ -p "$1/$p.in" ] && [ -p "$1/$p.out" ] || { echo "no FIFO pair $1/$p" >&2; return 1; }
	done
	[ "$(find "$1" -maxdepth 1 -type p | wc -l)" -eq $((2 * (2 * $2 + 1))) ]
}
mode_of() { stat -c %a "$1"; }

"$T" setup --name vm1 --cpus 2 --dir "$d" >"$tmp/args1"
check "setup exits 0" test $? -eq 0
check "FIFO pairs for ctl + 2 CPUs (trace and perf)" fifos_ok "$d" 2
check "FIFO mode 0600" test "$(mode_of "$d/trace-path-cpu1.out")" = 600
check "dir root's, mode 0755" test "$(stat -c %U:%a "$d")" = root:755
"$T" setup --name vm1 --cpus 2 --dir "$d" >"$tmp/args2"
check "second run succeeds (idempotent)" test $? -eq 0
check "second run prints the same arguments" cmp -s "$tmp/args1" "$tmp/args2"
check "still exactly the FIFO pairs" fifos_ok "$d" 2
"$T" setup --name vm1 --cpus 2 --dir "$d" --mode 0600 >/dev/null
check "--mode applies to existing FIFOs" test "$(mode_of "$d/agent-ctl-path.in")" = 600
"$T" setup --name vm1 --cpus 2 --dir "$d" --owner nobody:nogroup >/dev/null
check "--owner exits 0" test $? -eq 0
check "FIFO owned by nobody" test "$(stat -c %U:%G "$d/trace-path-cpu0.in")" = nobody:nogroup
check "--owner: the VM dir stays root's" test "$(stat -c %U:%a "$d")" = root:755
check_out "qemu args name the debug threads" '^-name vm1,debug-threads=on \\$' cat "$tmp/args1"
check_out "qemu args use the pipe chardev" "^-chardev pipe,id=vt-cpu1,path=$d/trace-path-cpu1 \\\\$" cat "$tmp/args1"
check_out "qemu args carry the guest perf ports" "name=perf-path-cpu1" cat "$tmp/args1"
"$T" setup --name vm2 --cpus 2 --dir "$tmp/vm2" --guest-perf no >/dev/null
check "--guest-perf no: no perf-path FIFOs" test ! -e "$tmp/vm2/perf-path-cpu0.in" -a -p "$tmp/vm2/trace-path-cpu1.in"

# A regular file where a FIFO belongs: error naming it, exit non-zero, file untouched.
: >"$d/trace-path-cpu2.out"
check_out "regular file in the way is named" "$d/trace-path-cpu2.out exists and is not a FIFO" \
	"$T" setup --name vm1 --cpus 3 --dir "$d"
check "regular file in the way fails" bash -c "! '$T' setup --name vm1 --cpus 3 --dir '$d' >/dev/null 2>&1"
check "regular file left alone" test -f "$d/trace-path-cpu2.out"
check_out "bad VM name refused" "--name '../x': must be" "$T" setup --name ../x --cpus 2 --dir "$d"
# One name rule for every command: libvirt's and virt-manager's names with dots (ubuntu22.04) pass.
check_out "a name with a dot is set up" "^-name ubuntu22.04,debug-threads=on" "$T" setup --name ubuntu22.04 --cpus 1 --dir "$tmp/dotted"
for c in start stop status snapshot; do
	check_out "$c refuses the name setup refuses, in the same words" \
		"invalid VM name '\.\./x': must be 1 to 48 letters, digits, '_', '-' or '\.', not beginning" \
		"$T" $c --name ../x --run-dir "$tmp/run-none"
done
check_out "status takes a dotted name (no session: said so, no crash suspected)" "^trace-collector: error: no session running for ubuntu22.04 \\(no daemon socket [^ ]*/ubuntu22.04.sock\\)$" \
	"$T" status --name ubuntu22.04 --run-dir "$tmp/run-none"
check_out "257 CPUs refused" "--cpus '257': must be" "$T" setup --name vm1 --cpus 257 --dir "$d"
check_out "unknown transport refused" "--transport 'tcp': must be" "$T" setup --name vm1 --cpus 1 --transport tcp

# Socket transport: the dir and sock/ (QEMU's user's, where QEMU creates the sockets).
s=$tmp/vms/vm2
"$T" setup --name vm2 --cpus 2 --dir "$s" --transport socket --owner nobody:nogroup >"$tmp/sargs"
check "socket setup makes the dir and sock/ only" test -d "$s/sock" -a "$(ls -A "$s")" = sock
check "sock/ is QEMU's user's, 0750" test "$(stat -c %U:%a "$s/sock")" = nobody:750
check "socket VM dir stays root's" test "$(stat -c %U:%a "$s")" = root:755
check_out "socket chardev args" "^-chardev socket,id=vt-ctl,path=$s/sock/agent-ctl-path.sock,server=on,wait=off" cat "$tmp/sargs"

# libvirt XML, both transports, and >30 ports: validated against libvirt's schema.
validate() { # ARGS... (setup arguments)
	local xml=$tmp/domain.xml
	{
		printf "<domain type='kvm'>\n<name>vm1</name>\n<memory unit='MiB'>256</memory>\n"
		printf "<os><type arch='x86_64'>hvm</type></os>\n<devices>\n"
		"$T" setup "$@" --format libvirt
		printf "</devices>\n</domain>\n"
	} >"$xml" && virt-xml-validate "$xml" domain >/dev/null 2>&1
}
check "libvirt pipe XML validates" validate --name vm1 --cpus 2 --dir "$d"
check "libvirt unix XML validates" validate --name vm2 --cpus 2 --dir "$s" --transport socket
check "libvirt XML with 64 CPUs (9 controllers) validates" validate --name vm3 --cpus 64 --dir "$tmp/vms/vm3"
check "libvirt XML with 256 CPUs (33 controllers) validates" validate --name vm3 --cpus 256 --dir "$tmp/vms/vm3" --transport socket
check_out "libvirt 16 CPUs: 3 controllers" "^<controller type='virtio-serial' index='3'/>" "$T" setup --name vm6 --cpus 16 --dir "$tmp/vms/vm6" --format libvirt
check_out "libvirt channel addressed on its controller" "<address type='virtio-serial' controller='3' bus='0' port='5'/>" "$T" setup --name vm6 --cpus 16 --dir "$tmp/vms/vm6" --format libvirt
check_out "libvirt pipe channel" "<channel type='pipe'>" "$T" setup --name vm1 --cpus 1 --dir "$d" --format libvirt
check "validator rejects broken XML (the check can fail)" bash -c \
	"printf '<domain><name>x</name><devices><channel type=\"pipe\"/></devices></domain>' >'$tmp/bad.xml'; ! virt-xml-validate '$tmp/bad.xml' domain >/dev/null 2>&1"

# Real QEMU accepts the generated arguments (machine created, then quit), 2 and 256 CPUs.
qemu_accepts() { # MACHINE SETUP ARGS...
	local -a args
	local m=$1
	shift
	eval "args=( $("$T" setup "$@") )" || return 1
	echo quit | timeout 60 qemu-system-x86_64 -machine "$m" -accel tcg -S -display none -serial none \
		-monitor stdio -nodefaults "${args[@]}" >"$tmp/qemu.log" 2>&1 || { cat "$tmp/qemu.log" >&2; return 1; }
	! grep -qi error "$tmp/qemu.log"
}
check "QEMU accepts pipe args (2 CPUs)" qemu_accepts pc --name vm1 --cpus 2 --dir "$tmp/vms/q1"
check "QEMU accepts socket args (2 CPUs)" qemu_accepts pc --name vm2 --cpus 2 --dir "$tmp/vms/q2" --transport socket
check "QEMU accepts pipe args (16 CPUs, 3 controllers)" qemu_accepts pc --name vm4 --cpus 16 --dir "$tmp/vms/q4"
# setup --qmp with QMP events between the answers ("timestamp" before "event", as QEMU writes
# them): they are skipped, not taken for an answer
qmp_with_events() {
	local sock=$tmp/fake-qmp.sock out
	python3 "$(dirname "$0")/fake-qmp.py" "$sock" >"$tmp/fake-qmp.log" 2>&1 &
	for _ in $(seq 50); do [ -S "$sock" ] && break; sleep 0.1; done
	out=$("$T" setup --name vmq --cpus 2 --dir "$tmp/vms/qmp" --qmp "$sock" 2>&1) || { echo "$out" >&2; return 1; }
	wait
	grep -q 'QMP .*: 11 devices and chardevs added, 0 already there' <<<"$out" || { echo "$out" >&2; return 1; }
}
check "setup --qmp skips QMP events that come before an answer" qmp_with_events
for m in pc q35; do
	check "QEMU $m accepts pipe args (64 CPUs, 9 controllers behind a bridge)" qemu_accepts $m --name vm5 --cpus 64 --dir "$tmp/vms/q5"
	check "QEMU $m accepts pipe args (256 CPUs, 33 controllers behind 2 bridges)" qemu_accepts $m --name vm3 --cpus 256 --dir "$tmp/vms/q3"
done
finish
