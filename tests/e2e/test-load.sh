# SPDX-License-Identifier: GPL-2.0-only
# e2e: start/stop cycles on a loaded host (tests/e2e/lib.sh). Guest vtB floods its rings through
# its own daemon the whole time (the load that made the first START after a boot hang); guest vtA
# is booted BOOTS times and traced CYCLES times per boot, so every boot's first START is one.
# Every start must succeed, or fail naming its phase (never blaming a missing agent that just
# answered) and leave a session that 'stop' names and 'merge' reads. Every stop must succeed
# with every CPU's pages. Nothing may hang: each command runs under a hard timeout.
#   test-load.sh BOOTS CYCLES      prints "load: ..." with start latency median/max
. "$(dirname "$0")/lib.sh"

boots=${1:-10} cycles=${2:-5}
e2e_init load
e2e_two_vms

vm_use B
check "boot B (the flooding guest)" e2e_boot --name vtB --timeout 3000
BOOT[B]=$BOOT_PID
check_out "start B" "^$VM/sessions/" e2e_start -e 'sched:sched_switch' --buffer-kb 1024 --no-host
e2e_say "bgflood"

ok_starts=0 named=0 unnamed=0 hangs=0 bad_stops=0
lat=()
for b in $(seq "$boots"); do
	vm_use A
	rm -f "$LOG"
	if ! e2e_boot --name vtA --timeout 600; then
		fail "boot A #$b: the guest did not come up"
		continue
	fi
	BOOT[A]=$BOOT_PID
	runs=0
	for c in $(seq "$cycles"); do
		t0=$(date +%s%N)
		msg=$(timeout 60 "$TRACE_COLLECTOR" start --name vtA --dir "$VM" --run-dir "$RUN" \
			-e 'sched:sched_switch' --no-host 2>&1)
		rc=$?
		lat+=($(( ($(date +%s%N) - t0) / 1000000 )))
		if [ $rc -eq 124 ]; then
			hangs=$((hangs + 1)); fail "boot $b cycle $c: start hung (60 s)"; continue
		fi
		if [ $rc -ne 0 ]; then
			echo "boot $b cycle $c: start failed: $msg"
			if grep -q 'is trace-agent running' <<<"$msg" || ! grep -qE 'while|cannot stream|refused' <<<"$msg"; then
				unnamed=$((unnamed + 1))
			else
				named=$((named + 1))
			fi
			sess=$(grep -o "session dir kept at [^ ]*" <<<"$msg" | cut -d' ' -f5)
			[ -n "$sess" ] && ! timeout 60 "$TRACE_COLLECTOR" merge "$sess" -o "$T/failed.data" >/dev/null 2>&1 &&
				[ $? -ne 3 ] && fail "boot $b cycle $c: merge of the failed session $sess"
			continue
		fi
		ok_starts=$((ok_starts + 1)) runs=$((runs + 1))
		e2e_say "run 20"
		sleep 0.3
		sum=$(timeout 120 "$TRACE_COLLECTOR" stop -v --name vtA --run-dir "$RUN" -o "$T/a.data" 2>&1)
		st=$?
		if [ $st -ne 0 ] || ! grep -Eq '^cpu1: ([0-9]+) pages .* guest sent \1, 0 lost' <<<"$sum"; then
			bad_stops=$((bad_stops + 1)); fail "boot $b cycle $c: stop ($st): $(tail -n 5 <<<"$sum")"
		fi
		wait_for_line=$((SECONDS + 30))
		while [ $SECONDS -lt $wait_for_line ] && [ "$(e2e_console | grep -c '^vt-e2e: workload done 20 status 0')" -lt "$runs" ]; do
			sleep 0.1
		done
	done
	check "boot $b: guest A powers off" e2e_end
	BOOT[A]=
done
vm_use B
bsum=$(timeout 300 "$TRACE_COLLECTOR" stop -v --name vtB --run-dir "$RUN" -o "$T/b.data" 2>&1)
check "B stops cleanly" test $? -eq 0
grep -E '^(elapsed|pages|losses):' <<<"$bsum"
check_out "B flooded the whole time" '^pages: [0-9]{5,} in total' echo "$bsum"
e2e_say end
sorted=$(printf '%s\n' "${lat[@]}" | sort -n)
n=${#lat[@]}
echo "load: $((boots * cycles)) cycles over $boots boots beside a flooding guest: $ok_starts started," \
	"$named failed with a named cause, $unnamed unnamed, $hangs hangs, $bad_stops bad stops;" \
	"start latency median $(sed -n "$(( (n + 1) / 2 ))p" <<<"$sorted") ms, max $(tail -n 1 <<<"$sorted") ms"
check "no start hung" test "$hangs" -eq 0
check "no unnamed start failure" test "$unnamed" -eq 0
check "every started session stopped complete" test "$bad_stops" -eq 0
check "most starts succeed ($ok_starts of $((boots * cycles)))" test "$ok_starts" -ge $((boots * cycles * 9 / 10))
finish
