# SPDX-License-Identifier: GPL-2.0-only
# Shared helpers of the trace-collector e2e tests: boot the test guest (tests/e2e/boot) with
# guest-cmd.sh as its script, drive it over the console, drive trace-collector the way users
# do, and check the merged perf.data with the real perf. Environment from meson (README.md).
. "$VT_SOURCE_ROOT/tests/integration/lib.sh"

E2E_DIR=$VT_SOURCE_ROOT/tests/e2e
# VT_E2E_GUEST=6.12: the tests boot the 6.12 image (tests/e2e/subbuf, ring sub-buffers) instead of
# Debian 12's 6.1; by hand, not in CI (QEMU 7.2's multi-threaded TCG bug panics that guest now
# and then: test-subbuf.sh).
if [ "${VT_E2E_GUEST:-}" = 6.12 ]; then
	VT_E2E_KERNEL=$VT_BUILD/tests/e2e/subbuf/vmlinux VT_E2E_INITRD=$VT_BUILD/tests/e2e/subbuf/initramfs.cpio
elif [ -n "${VT_E2E_GUEST:-}" ]; then
	echo "VT_E2E_GUEST=$VT_E2E_GUEST: only 6.12 is built besides the default (6.1)" >&2
	exit 1
fi
VM_NAME=vt-e2e
BOOT_PID=

# Every merged file a test wrote under $T is read by perf 6.1 and perf 6.12 alike, with no
# warning, when the test finishes (tests/e2e/perf-both --dir: which files those are).
finish() {
	local out
	if [ -n "${T:-}" ] && [ -d "$T" ]; then
		if out=$("$E2E_DIR/perf-both" --dir "$T" 2>&1); then
			[ -z "$out" ] || [ -n "${VT_PERF_BOTH_DEFER:-}" ] || ok "perf 6.1 and 6.12 read the merged files alike, no warning"
		else
			fail "perf 6.1 and 6.12 on the merged files"
		fi
		[ -z "$out" ] || echo "$out"
	fi
	vt_counts
}
[ -x "$PERF" ] || { fail "perf not found at $PERF (install linux-perf)"; finish; exit 1; }

# e2e_init NAME: work dir T with VM (per-VM dir), RUN (run dir), LOG (console), CIN (console in).
e2e_init() {
	T=$(mktemp -d "/tmp/vt-e2e-$1.XXXXXX")
	VM=$T/vm RUN=$T/run LOG=$T/console.log CIN=$T/console.in E2E_STATE=$T
	trap e2e_cleanup EXIT
}

e2e_cleanup() {
	local pid
	pid=$(head -n 1 "$RUN/$VM_NAME.pid" 2>/dev/null)
	if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
		kill "$pid" 2>/dev/null # the daemon finalizes on SIGTERM
		for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	fi
	if [ -n "$BOOT_PID" ] && kill -0 "$BOOT_PID" 2>/dev/null; then
		kill "$BOOT_PID" 2>/dev/null # boot's trap reaps QEMU
		wait "$BOOT_PID" 2>/dev/null
	fi
	pid=$(cat "$E2E_STATE/boot.pid.$VM_NAME" 2>/dev/null) # a guest e2e_start booted again
	if [ -n "$pid" ] && e2e_alive "$pid"; then
		kill "$pid" 2>/dev/null
		for _ in $(seq 50); do e2e_alive "$pid" || break; sleep 0.1; done
	fi
	if [ "$vt_fail" -ne 0 ]; then
		[ -f "$E2E_STATE/boot.out.$VM_NAME" ] && { echo "--- the second boot's output"; cat "$E2E_STATE/boot.out.$VM_NAME"; }
		echo "--- console log ($LOG)"; tr -d '\r' <"$LOG" 2>/dev/null | tail -n 60
		for f in "$VM"/sessions/*/collector.log; do [ -f "$f" ] && { echo "--- $f"; tail -n 30 "$f"; }; done
	fi
	# VT_KEEP=DIR: the sessions and the test's own outputs ($T/*.data) copied there first.
	[ -n "${VT_KEEP:-}" ] && mkdir -p "$VT_KEEP" && cp -r "$VM/sessions" "$T"/*.data "$VT_KEEP/" 2>/dev/null; rm -rf "$T"
}

tc() { "$TRACE_COLLECTOR" "$@"; }
# e2e_start ARGS: trace-collector start for this VM. QEMU 7.2's multi-threaded TCG can hang a
# vCPU for good while the guest patches its own code (the agent enabling events; fixed in QEMU
# 8.1), and on QEMU 10 a 32-vCPU guest on 2 host cores once made no progress on its first event
# for the start's 10 s and never powered off (CI, 2026-12-02, scale-vcpus32; 0 of 5 runs by hand
# since); the daemon's hint under TCG names both ("QEMU before 8.1"). Then, once per test and
# VM, the console's last lines are printed, the guest is booted again and start tried once
# more, said on stderr. Nothing else is retried: any other failure is the test's.
e2e_start() {
	local err out st=0
	err=$(mktemp "$E2E_STATE/start.err.XXXXXX")
	# VT_E2E_REBOOT_FIRST=1: that reboot before each VM's first start, hang or not, to check
	# that a test survives it (its QEMU pid and vCPU threads taken after the start); the
	# hang's own retry stays. Only a guest e2e_boot booted can be booted again.
	if [ -n "${VT_E2E_REBOOT_FIRST:-}" ] && [ ! -e "$E2E_STATE/reboot-first.$VM_NAME" ] &&
		[ -f "$E2E_STATE/boot.args.$VM_NAME" ]; then
		: >"$E2E_STATE/reboot-first.$VM_NAME"
		echo "e2e: VT_E2E_REBOOT_FIRST: the guest is booted again before its first start" >&2
		e2e_reboot || { echo "e2e: the second boot failed" >&2; return 1; }
	fi
	out=$(tc start --name "$VM_NAME" --dir "$VM" --run-dir "$RUN" "$@" 2>"$err") || st=$?
	if [ $st -ne 0 ] && grep -q 'QEMU before 8.1' "$err" && [ ! -e "$E2E_STATE/rebooted.$VM_NAME" ]; then
		cat "$err" >&2
		echo "e2e: the guest's console, last lines:" >&2
		e2e_console | tail -n 25 >&2
		echo "e2e: start found the TCG guest stuck patching its code (QEMU ${VT_E2E_QEMU:-10}; on 7.2 QEMU's bug, fixed in 8.1): the guest is booted again and start tried once more" >&2
		: >"$E2E_STATE/rebooted.$VM_NAME"
		if e2e_reboot; then
			st=0
			out=$(tc start --name "$VM_NAME" --dir "$VM" --run-dir "$RUN" "$@" 2>"$err") || st=$?
		else
			echo "e2e: the second boot failed" >&2
		fi
	fi
	cat "$err" >&2
	rm -f "$err"
	[ -z "$out" ] || printf '%s\n' "$out"
	return $st
}
e2e_stop() { tc stop --name "$VM_NAME" --run-dir "$RUN" "$@"; }
e2e_status() { tc status --name "$VM_NAME" --run-dir "$RUN" "$@"; }
e2e_session() { ls -d "$VM"/sessions/* | tail -n 1; }
e2e_console() { tr -d '\r' 2>/dev/null <"$LOG"; }

# e2e_wait REGEX SECONDS: waits for a console line; fails (returns 1) when the guest is gone.
e2e_wait() {
	local re=$1 deadline=$((SECONDS + $2))
	while [ $SECONDS -lt $deadline ]; do
		e2e_console | grep -Eq -- "$re" && return 0
		e2e_alive "$(e2e_boot_pid)" || { echo "guest gone while waiting for /$re/" >&2; return 1; }
		sleep 0.1
	done
	echo "timed out waiting for /$re/ on the console" >&2
	return 1
}

# e2e_say LINE: one line to the guest's console (bounded: never blocks on a dead guest).
e2e_say() { timeout 5 bash -c 'echo "$1" >"$2"' _ "$1" "$CIN"; }

# e2e_boot [boot args]: boots the guest in the background, waits until its script is ready and
# the agent waits for the host.
e2e_boot() {
	{ [ $# -eq 0 ] || printf '%q ' "$@"; } >"$E2E_STATE/boot.args.$VM_NAME" # for e2e_reboot
	# a guest booted before in this test: its console lines must not answer the waits below,
	# nor its pid stand for this boot's (one e2e_reboot started and nobody ended is stopped)
	local old
	old=$(cat "$E2E_STATE/boot.pid.$VM_NAME" 2>/dev/null)
	[ -n "$old" ] && e2e_alive "$old" && kill "$old" 2>/dev/null
	rm -f "$LOG" "$E2E_STATE/boot.pid.$VM_NAME"
	e2e_boot_bg "$@"
	e2e_wait_agent && return 0
	# The guest's kernel stalled before its script was ready (RCU stalls, "timer wakeup didn't
	# happen" on a vCPU: QEMU 10's multi-threaded TCG, once in CI on 2026-12-02): QEMU's failure,
	# not the test's; booted once more per test, said on stderr. Nothing else is retried.
	{ grep -qE "rcu: INFO: rcu_(preempt|sched) detected stalls|kthread timer wakeup didn't happen" "$LOG" 2>/dev/null &&
		! grep -q '^vt-e2e: ready' "$LOG" && [ ! -e "$E2E_STATE/boot-stalled.$VM_NAME" ]; } || return 1
	: >"$E2E_STATE/boot-stalled.$VM_NAME"
	echo "e2e: the guest's kernel stalled before it was ready (RCU stall on its console: QEMU's TCG, not the test's); booting it once more" >&2
	kill "$BOOT_PID" 2>/dev/null # boot's trap reaps QEMU
	wait "$BOOT_PID" 2>/dev/null
	cp "$LOG" "$LOG.stalled" 2>/dev/null
	rm -f "$LOG"
	e2e_boot_bg "$@"
	e2e_wait_agent
}
e2e_boot_bg() { # boot args: the boot in the background, its pid in BOOT_PID
	"$VT_E2E_BOOT" --dir "$VM" --log "$LOG" --script "$E2E_DIR/guest-cmd.sh" --console-in "$CIN" \
		--timeout 150 "$@" &
	BOOT_PID=$!
}
# Under the KVM rig (VT_E2E_ACCEL=kvm: L2 inside a TCG L1) a boot takes 10-40 s on a quiet
# host and passed 60 s once in CI while the host was busy: 180 s there.
e2e_wait_agent() {
	e2e_wait '^vt-e2e: ready' "$([ "${VT_E2E_ACCEL:-}" = kvm ] && echo 180 || echo 60)" &&
		e2e_wait 'trace-agent: waiting for the host' 30
}

# Whether PID runs (an orphan's zombie does not: a reparented boot waits for init to reap it).
e2e_alive() { kill -0 "$1" 2>/dev/null && ! grep -q '^State:.Z' "/proc/$1/status" 2>/dev/null; }

# The pid of the guest's boot: e2e_boot's, or the one e2e_reboot started (kept in a file, as
# e2e_start often runs in $(...)).
e2e_boot_pid() { cat "$E2E_STATE/boot.pid.$VM_NAME" 2>/dev/null || echo "$BOOT_PID"; }

# e2e_boot_ended SECS: the guest's boot (e2e_boot's child, or e2e_reboot's) has ended, its
# QEMU reaped, within SECS.
e2e_boot_ended() {
	local pid deadline=$((SECONDS + $1))
	pid=$(e2e_boot_pid)
	while e2e_alive "$pid"; do
		[ $SECONDS -lt $deadline ] || { echo "the guest's boot (pid $pid) still runs after $1 s" >&2; return 1; }
		sleep 0.1
	done
	[ "$pid" != "$BOOT_PID" ] || wait "$BOOT_PID" 2>/dev/null
	return 0
}

# e2e_reboot: powers the guest off and boots it again with e2e_boot's arguments; the new boot
# is nobody's child (setsid, its output in $E2E_STATE/boot.out.VM): e2e_end reads its status file.
e2e_reboot() {
	local old q
	[ -f "$E2E_STATE/boot.args.$VM_NAME" ] || return 1 # not booted by e2e_boot (libvirt)
	old=$(e2e_boot_pid)
	q=$(e2e_qemu_pid)
	kill "$old" 2>/dev/null # boot's trap reaps QEMU
	for _ in $(seq 100); do
		{ [ -n "$q" ] && kill -0 "$q" 2>/dev/null; } || break
		sleep 0.1
	done
	rm -f "$LOG" "$E2E_STATE/boot.st.$VM_NAME"
	(
		eval "set -- $(cat "$E2E_STATE/boot.args.$VM_NAME")"
		# e2e_boot's command, with its pid being boot's own (setsid execs it)
		setsid "$VT_E2E_BOOT" --dir "$VM" --log "$LOG" --script "$E2E_DIR/guest-cmd.sh" --console-in "$CIN" \
			--timeout 150 --status-file "$E2E_STATE/boot.st.$VM_NAME" "$@" </dev/null >>"$E2E_STATE/boot.out.$VM_NAME" 2>&1 &
		echo $! >"$E2E_STATE/boot.pid.$VM_NAME"
	)
	e2e_wait_agent
}

# e2e_run N: runs the workload in the guest and waits for it.
e2e_run() { e2e_say "run $1" && e2e_wait "^vt-e2e: workload done $1 status 0" 90; }

# e2e_end: lets the guest power off; returns boot's status.
e2e_end() {
	local st=0 pid
	e2e_say end || true
	pid=$(cat "$E2E_STATE/boot.pid.$VM_NAME" 2>/dev/null)
	if [ -n "$pid" ]; then # booted again by e2e_reboot: not our child (boot has its own timeout)
		while e2e_alive "$pid"; do sleep 0.1; done
		st=$(cat "$E2E_STATE/boot.st.$VM_NAME" 2>/dev/null || echo 1)
		rm -f "$E2E_STATE/boot.pid.$VM_NAME"
		wait "$BOOT_PID" 2>/dev/null
	else
		wait "$BOOT_PID" || st=$?
	fi
	BOOT_PID=
	return $st
}

# QEMU's pid and its vCPU thread ids by vCPU ("CPU n/TCG" or "CPU n/KVM"), while it runs.
# The guest's QEMU pid (and e2e_vcpu_tids) change when e2e_start boots the guest again: take
# them after the start.
e2e_qemu_pid() { pgrep -f -- "-name $VM_NAME,debug-threads=on.*$VM/" | head -n 1; }
e2e_vcpu_tids() { # QPID [NCPUS]
	local q=$1 n
	for n in $(seq 0 $((${2:-2} - 1))); do
		grep -lxE "CPU $n/(TCG|KVM)" /proc/"$q"/task/*/comm | cut -d/ -f5
	done
}

# e2e_stop_end OUT [ARGS]: stop into OUT (its output in $sum, printed), then the guest powers off.
e2e_stop_end() {
	sum=$(e2e_stop -o "$1" "${@:2}" 2>&1)
	check "stop exits 0" test $? -eq 0
	echo "$sum"
	check "guest powers off cleanly" e2e_end
}

# --- checks on a merged perf.data, by the real perf ---
# e2e_markers FILE N: the guest's numbered lines 0..N-1, each exactly once, in time order.
# e2e_perf_lost FILE: perf report's "Total Lost Samples" over every event of FILE.
e2e_perf_lost() {
	"$PERF" report -i "$1" --stdio 2>/dev/null | awk '/^# Total Lost Samples:/ { n += $5 } END { print n + 0 }'
}

e2e_markers() {
	local got
	got=$("$PERF" script -i "$1" -F event,trace 2>/dev/null |
		sed -n 's/.*guest_ftrace:print:.*vt-e2e line \([0-9]*\) cpu.*/\1/p' | tr '\n' ' ')
	[ "$got" = "$(seq -s ' ' 0 $(($2 - 1))) " ] && return 0
	echo "markers in $1: $(wc -w <<<"$got") found; first mismatch near: $(diff <(tr ' ' '\n' <<<"$got") <(seq 0 $(($2 - 1))) | head -n 5 | tr '\n' ' ')" >&2
	return 1
}
# e2e_interleaved FILE: host and guest events both present, and a guest event between two host ones.
e2e_interleaved() {
	"$PERF" script -i "$1" -F event 2>/dev/null | awk '
		/guest_/ { g++; if (h) between = 1; next }
		/:/ { h++; if (between) ok = 1 }
		END { printf "host %d, guest %d events, interleaved %s\n", h, g, ok ? "yes" : "no" > "/dev/stderr"; exit !(h && g && ok) }'
}
# e2e_no_warnings FILE [SUMMARY]: perf script and perf report print nothing on stderr. With
# the merge SUMMARY, perf's "lost N chunks" warning is accepted when the summary states that
# host perf record lost events (a busy shared host; what matters is that it is not silent).
e2e_no_warnings() {
	local e
	e=$("$PERF" script -i "$1" 2>&1 >/dev/null; "$PERF" report -i "$1" --stdio 2>&1 >/dev/null)
	if [ -n "${2:-}" ] && grep -q 'host events lost by perf record .*: [1-9]' <<<"$2"; then
		echo "host perf record lost events (stated by the merge): perf's lost-chunks warning accepted" >&2
		e=$(grep -vE '^(Warning:|Processed [0-9]+ events and lost [0-9]+ chunks!|Check IO/CPU overload!|)$' <<<"$e")
	fi
	[ -z "$e" ] || { echo "perf said: $(head -c 600 <<<"$e")" >&2; return 1; }
}
# e2e_same_script A B: perf script prints the same for both files.
e2e_same_script() { cmp -s <("$PERF" script -i "$1" 2>&1) <("$PERF" script -i "$2" 2>&1); }

# --- guest perf: the vt-spin tasks of guest-cmd.sh "spin" ---
# Guest times of vt-spin samples and of its markers: "vcpu kind time" lines (kind s|b|e).
# perf script -F vcpu,comm,time,event,trace prints "VCPU:001 COMM TIME: EVENT: ...".
e2e_spin_lines() {
	"$PERF" script -i "$1" -F vcpu,comm,time,event,trace 2>/dev/null | awk '
		{ v = $1; sub(/^VCPU: */, "", v); t = ""; for (i = 2; i <= NF; i++) if ($i ~ /^[0-9]+\.[0-9]+:$/) { t = $i; break } sub(/:$/, "", t) }
		$2 == "vt-spin" && /cpu-clock:G/ { print v + 0, "s", t; next }
		/vt-e2e spin begin cpu/ { print $NF + 0, "b", t; next }
		/vt-e2e spin end cpu/ { print $(NF - 1) + 0, "e", t }'
}

# spin "MS [f]": the guest's vt-spin tasks, waited for.
e2e_spin() { e2e_say "spin $1" && e2e_wait "^vt-e2e: spin done ${1%% *} status 0" 60; }

# Every vt-spin sample of a vCPU lies within [begin - bound, end + bound] of that vCPU's markers.
e2e_spin_in_window() { # FILE BOUND_NS
	e2e_spin_lines "$1" | awk -v b="$2" '
		{ t[NR] = $3; v[NR] = $1; k[NR] = $2 }
		$2 == "b" { lo[$1] = $3 } $2 == "e" { hi[$1] = $3 }
		END {
			for (i = 1; i <= NR; i++) if (k[i] == "s") {
				n[v[i]]++
				if (!(v[i] in lo) || !(v[i] in hi) || t[i] < lo[v[i]] - b / 1e9 || t[i] > hi[v[i]] + b / 1e9) {
					if (++bad <= 10)
						printf "vcpu%d: vt-spin sample at %s: %.0f ns before begin, %.0f ns after end\n", v[i], t[i],
							(lo[v[i]] - t[i]) * 1e9, (t[i] - hi[v[i]]) * 1e9 > "/dev/stderr"
				}
			}
			for (c in n) printf "vcpu%d: %d vt-spin samples in [%s, %s]\n", c, n[c], lo[c], hi[c] > "/dev/stderr"
			printf "%d outside their window (bound %d ns)\n", bad, b > "/dev/stderr"
			exit !(n[0] > 100 && n[1] > 100 && !bad)
		}'
}


# Two VMs in one test (A and B): vm_use A|B points the globals above at that VM; BOOT[A|B]
# holds each one's boot pid (set it after e2e_boot); the EXIT trap cleans up both.
e2e_two_vms() {
	declare -gA BOOT=()
	trap e2e_two_cleanup EXIT
}
vm_use() {
	VM_NAME=vt$1 VM=$T/vm$1 RUN=$T/run$1 LOG=$T/console$1.log CIN=$T/console$1.in
	BOOT_PID=${BOOT[$1]:-}
}
# e2e_pin_two_vms: each VM's QEMU pid and vCPU threads into the test's QPID[A|B] and TIDS[A|B]
# (declare -A), vCPU 0's thread pinned on host CPU 1 and vCPU 1's on CPU 0. After the boots, and
# again after the starts: a start may have booted its guest again (e2e_start).
e2e_pin_two_vms() {
	local v
	for v in A B; do
		vm_use $v
		QPID[$v]=$(e2e_qemu_pid)
		TIDS[$v]=$(e2e_vcpu_tids "${QPID[$v]}" 2 | tr '\n' ' ')
		set -- ${TIDS[$v]}
		check "$v: vCPU threads found (${TIDS[$v]})" test $# -eq 2
		check "$v: vCPU 0 on host CPU 1, vCPU 1 on CPU 0" bash -c 'taskset -p -c 1 "$1" && taskset -p -c 0 "$2"' _ "$@" >/dev/null
	done
}
e2e_two_cleanup() {
	local v
	for v in A B; do
		vm_use $v
		[ "$vt_fail" -ne 0 ] && echo "=== VM $v"
		( T=$T/none; e2e_cleanup ) # e2e_cleanup removes $T: keep ours until both are done
	done
	rm -rf "$T"
}
# Several VMs in one session (start --name vtA --name vtB ...): VMS=(A B ...) named vtX under
# ROOT=$T/vms, one run dir RUN=$T/run. e2e_set_init sets them (and the cleanup: every daemon
# killed, every guest's QEMU), set_use X points the e2e_* helpers at VM X, e2e_set_boot SECS
# boots them all at once with guest-cmd.sh (QEMU's own timeout SECS) and waits for each agent.
e2e_set_init() {
	VMS=("$@") ROOT=$T/vms RUN=$T/run
	declare -gA BOOT=()
	mkdir -p "$ROOT"
	trap e2e_set_cleanup EXIT
}
set_use() { VM_NAME=vt$1 VM=$ROOT/vt$1 LOG=$T/console$1.log CIN=$T/console$1.in BOOT_PID=${BOOT[$1]:-}; }
e2e_set_boot() {
	local v
	for v in "${VMS[@]}"; do
		set_use $v
		"$VT_E2E_BOOT" --dir "$VM" --log "$LOG" --script "$E2E_DIR/guest-cmd.sh" --console-in "$CIN" \
			--timeout "$1" --name "$VM_NAME" &
		BOOT[$v]=$!
	done
	for v in "${VMS[@]}"; do
		set_use $v
		e2e_wait '^vt-e2e: ready' 200 && e2e_wait 'trace-agent: waiting for the host' 60 || { echo "boot $v failed"; return 1; }
	done
}
e2e_set_cleanup() {
	local v f pid
	for f in "$RUN"/*.pid; do
		pid=$(head -n 1 "$f" 2>/dev/null)
		[ -n "$pid" ] && kill "$pid" 2>/dev/null
	done
	sleep 0.5
	for v in "${VMS[@]}"; do
		set_use $v
		[ "${vt_fail:-0}" -ne 0 ] && echo "=== VM $v"
		( T=$T/none; e2e_cleanup )
	done
	[ -n "${CG:-}" ] && rmdir "$CG" 2>/dev/null
	rm -rf "$T"
}
