# SPDX-License-Identifier: GPL-2.0-only
# Failures start reports itself, and limits and faults during a session: no agent, config
# refused, missing data ports, SIGKILL of the daemon, a guest that never answers stop, a
# silent guest (heartbeat), --max-size, disk full.
. "$(dirname "$0")/daemon-lib.sh"

mkfifos 2
# No agent in the guest: start fails by itself, quickly, saying what to check.
out=$(start --no-host --timeout 1 2>&1); rc=$?
check "start without an agent fails" test $rc -eq 1
grep -q "no answer from the agent on agent-ctl-path within 1 s .*is trace-agent running" <<<"$out" &&
	ok "start names the missing agent" || fail "no-agent message: $out"
S=$(ls -d "$VMDIR"/sessions/* | tail -n 1)
check "failed session marked state=failed" test "$(ini "$S" state)" = failed
check "session.ini says why start failed" grep -q "^start_error=no answer from the agent on agent-ctl-path" "$S/session.ini"
out=$(stop 2>&1); rc=$?
check "stop after a failed start fails" test $rc -eq 1
grep -q "no session of $VM is running: its last start failed: no answer from the agent on agent-ctl-path within 1 s .*(session $S; nothing was traced" <<<"$out" &&
	ok "stop after a failed start says no session runs and why the start failed" || fail "stop after failed start: $out"
check "no daemon left behind" test ! -e "$RUN/$VM.sock"

fake_guest --dir "$VMDIR" --cpus 2 --pages 20
out=$(start --no-host -e 'sched:nope' 2>&1); rc=$?
check "start with an event the guest lacks fails" test $rc -eq 1
grep -q "refused the configuration.*unknown event 'sched:nope'" <<<"$out" && ok "start relays the agent's error" || fail "config error: $out"
check_out "bad --clock refused" "invalid value 'sundial'" start --clock sundial
check_out "missing VM dir says to run setup" "run 'trace-collector setup --name nothere" \
	collector start --name nothere --dir "$T/nothere" --run-dir "$RUN"

# SIGKILL of the daemon: the session dir stays consistent and mergeable; a new start works.
out=$(start --no-host 2>&1); S=$(tail -n 1 <<<"$out")
wait_for 10 status_has 'cpu1 +20 '
kill -9 "$(daemon_pid)"
check "session.ini complete after SIGKILL" test "$(grep -c '=' "$S/session.ini")" -ge 17
check "session.ini still says tracing (last state written)" test "$(ini "$S" state)" = tracing
check "no session.ini.tmp left" test ! -e "$S/session.ini.tmp"
r=$(spool_check "$S/cpu0.spool" "$(ini "$S" session_id)")
grep -q 'pages=20 end=0' <<<"$r" && ok "spool readable after SIGKILL ($r)" || fail "spool after SIGKILL: $r"
out=$(stop 2>&1); rc=$?
check "stop without a daemon fails" test $rc -eq 1
grep -q "the last session of $VM is $S; merge it with 'trace-collector merge $S" <<<"$out" &&
	ok "stop without a daemon points at the last session" || fail "stop after SIGKILL: $out"
# RUN/NAME.pid planted as a link (to a file naming another dir): not followed, nothing named.
mv "$RUN/$VM.pid" "$T/pid.real" && printf '1\n%s\n' "$T/elsewhere" >"$T/pid.planted" && ln -s "$T/pid.planted" "$RUN/$VM.pid"
out=$(stop 2>&1)
check "stop without a daemon: a pid file that is a link is not followed ($out)" bash -c '! grep -q "elsewhere" <<<"$1"' _ "$out"
rm "$RUN/$VM.pid" && mv "$T/pid.real" "$RUN/$VM.pid"
out=$(start --no-host 2>&1); rc=$?
check "start after a SIGKILLed daemon works ($out)" test $rc -eq 0
stop >/dev/null 2>&1
kill -9 "$FG_PID"; FG_PID=

# A guest that never answers stop: finalized after --timeout, shortfall stated.
fake_guest --dir "$VMDIR" --cpus 2 --pages 20 --mode mute-stop
out=$(start --no-host --timeout 2 2>&1); S=$(tail -n 1 <<<"$out")
out=$(stop 2>&1); rc=$?
check "stop with a mute guest succeeds" test $rc -eq 0
grep -Eq '^missing: .*no end marker and no stop report, shortfall unknown: cpu0' <<<"$out" &&
	ok "mute guest: shortfall stated" || fail "mute summary: $out"
grep -Eq '^cpu0: 20 pages .*no end marker and no stop report: shortfall unknown' "$S/stop-summary.txt" &&
	ok "mute guest: stop-summary.txt per CPU" || fail "mute details: $(cat "$S/stop-summary.txt")"
check "mute guest: what arrived is still merged" test "$(ini "$S" state)" = merged
check "mute guest: merged file readable by perf" bash -c "perf script -i '$T/out.data' 2>/dev/null | grep -q guest_fake:tick"
grep -q "did not finish within 2 s" "$S/collector.log" && ok "log says the agent did not finish" || fail "log: $(cat "$S/collector.log")"
kill -9 "$FG_PID"; FG_PID=

# A guest whose START never comes back (QEMU 7.2's TCG can hang a guest that patches its code
# as events are enabled): start fails naming the step; beside a QEMU whose vCPU threads say
# TCG it names that bug and what to do, beside a KVM one it does not.
fake_guest --dir "$VMDIR" --cpus 2 --pages 5 --mode mute-start
for accel in tcg kvm; do
	"$FAKE_QEMU" 2 $([ $accel = tcg ] && echo --tcg) >"$T/fq.out" &
	fq=$!
	wait_for 5 grep -q ready "$T/fq.out"
	out=$(start --no-host --timeout 2 --qemu-pid $fq 2>&1); rc=$?
	kill $fq; wait $fq 2>/dev/null
	check "mute START ($accel): start fails" test $rc -ne 0
	grep -q "answered HELLO but not within 2 s while starting the agent" <<<"$out" &&
		ok "mute START ($accel): the stuck step is named" || fail "mute START ($accel): $out"
	if [ $accel = tcg ]; then
		grep -q "This VM runs under TCG: QEMU before 8.1 .*Use KVM, QEMU 8.1 or later, or '-accel tcg,thread=single', or start again with a larger --timeout" <<<"$out" &&
			ok "mute START (tcg): names QEMU's TCG code-patching bug and what to do" || fail "mute START (tcg): $out"
	else
		! grep -q "runs under TCG" <<<"$out" && ok "mute START (kvm): no TCG hint" || fail "mute START (kvm): $out"
	fi
done
# ... and when QEMU exits meanwhile (a guest kernel panic ends QEMU under -no-reboot), start says
# so within a second or two, not "stuck" at the step's --timeout.
"$FAKE_QEMU" 2 --tcg >"$T/fq.out" &
fq=$!
wait_for 5 grep -q ready "$T/fq.out"
(sleep 1; kill $fq) &
t0=$(date +%s%N)
out=$(start --no-host --timeout 20 --qemu-pid $fq 2>&1); rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
wait $fq 2>/dev/null
check "QEMU gone during START: start fails" test $rc -ne 0
check_out "... named: QEMU exited, the guest is gone" "start failed: QEMU \(pid $fq\) exited while starting the agent: the guest is gone" echo "$out"
check "... within 5 s, not at --timeout 20 ($ms ms)" test "$ms" -lt 5000
kill -9 "$FG_PID"; FG_PID=

# A libvirt domain of the VM's name: its QEMU pid comes from libvirt's run state.
fake_guest --dir "$VMDIR" --cpus 2 --pages 5
"$FAKE_QEMU" 2 >"$T/fq.out" &
fq=$!
wait_for 5 grep -q ready "$T/fq.out"
mkdir -p "$T/libvirt-run" && echo $fq >"$T/libvirt-run/$VM.pid"
out=$(VT_LIBVIRT_QEMU_RUN=$T/libvirt-run start --no-host 2>&1); S=$(tail -n 1 <<<"$out")
check "qemu_pid from libvirt's run state ($(ini "$S" qemu_pid) = $fq)" test "$(ini "$S" qemu_pid)" = "$fq"
check_out "collector.log says where the pid came from" "QEMU pid $fq from libvirt's $T/libvirt-run/$VM.pid" cat "$S/collector.log"
stop >/dev/null 2>&1
kill $fq; wait $fq 2>/dev/null
echo 999999999 >"$T/libvirt-run/$VM.pid"
out=$(VT_LIBVIRT_QEMU_RUN=$T/libvirt-run start --no-host 2>&1); S=$(tail -n 1 <<<"$out")
check "a stale libvirt pid file is ignored (qemu_pid $(ini "$S" qemu_pid), the port's holder)" test "$(ini "$S" qemu_pid)" = "$FG_PID"
stop >/dev/null 2>&1
kill -9 "$FG_PID"; FG_PID=

# A guest that goes silent while tracing: heartbeat probes notice.
fake_guest --dir "$VMDIR" --cpus 2 --pages 5 --mode silent
out=$(start --no-host --timeout 1 --heartbeat 1 2>&1); S=$(tail -n 1 <<<"$out")
check "silent agent detected" wait_for 20 status_has 'state: stopped — agent silent'
out=$(stop 2>&1)
grep -q '^stopped: agent silent' <<<"$out" && ok "summary names the silent agent" || fail "silent: $out"
kill -9 "$FG_PID"; FG_PID=

# --max-size: stops by itself and says so; the daemon keeps reading (discarding).
fake_guest --dir "$VMDIR" --cpus 2 --pages 200
out=$(start --no-host --max-size 256K 2>&1); S=$(tail -n 1 <<<"$out")
check "max-size reached stops the session" wait_for 10 status_has 'state: stopped — --max-size 262144 bytes reached'
total=$(cat "$S"/cpu*.spool | wc -c)
# the limit acts between reads: each CPU's spool may take one more read (256 KiB, collector/link/spool.c READ_MAX)
check "spools bounded near the limit ($total bytes)" test "$total" -lt $((256 * 1024 + 2 * 262144 + 8192))
out=$(stop 2>&1)
grep -q '^stopped: --max-size 262144 bytes reached' <<<"$out" && ok "summary says max-size" || fail "max-size: $out"
grep -Eq '^cut: .*bytes dropped by the host after the stop/limit: (cpu[0-9]+ [0-9]+, )*cpu0 [0-9]+' <<<"$out" && ok "summary counts dropped bytes" || fail "dropped: $out"
grep -Eq '^cpu0: .*bytes dropped by the host after the stop/limit' "$S/stop-summary.txt" && ok "stop-summary.txt counts them per CPU" ||
	fail "dropped details: $(cat "$S/stop-summary.txt")"
kill -9 "$FG_PID"; FG_PID=

# Disk full: a 1 MiB tmpfs as the VM dir, the disk budget off (--max-size none --min-free 0;
# test-daemon-disk.sh tests it): ENOSPC still ends the session cleanly.
mkdir "$T/small" && mount -t tmpfs -o size=1M,mode=0700 tmpfs "$T/small" || { fail "cannot mount a tmpfs (root needed)"; finish; exit 1; }
mkfifos 2 "$T/small"
fake_guest --dir "$T/small" --cpus 2 --pages 400
out=$(collector start --name "$VM" --dir "$T/small" --run-dir "$RUN" --no-host --max-size none --min-free 0 2>&1); rc=$?
check "start on a small disk ($out)" test $rc -eq 0
S=$(tail -n 1 <<<"$out")
check "disk full stops the session" wait_for 10 status_has 'state: stopped — disk full writing cpu[01].spool'
check "session.ini updated on the full disk" test "$(ini "$S" state)" = stopped
check_out "daemon alive after disk full" '^cpu0 ' status
out=$(stop 2>&1); rc=$?
check "stop after disk full succeeds" test $rc -eq 0
grep -q '^stopped: disk full' <<<"$out" && ok "summary says disk full" || fail "disk full: $out"
# The spool that filled the disk holds its pages; the other may hold none (its buffer came
# after: a FIFO read up to 1 MiB a wake-up, and the disk holds 1 MiB).
r="$(spool_check "$S/cpu0.spool" "$(ini "$S" session_id)") | $(spool_check "$S/cpu1.spool" "$(ini "$S" session_id)")"
grep -Eq 'pages=[1-9][0-9]* ' <<<"$r" && ok "what was spooled is kept ($r)" || fail "after disk full: $r"
finish
