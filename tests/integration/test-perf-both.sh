#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# tests/e2e/perf-both (run on every merged file of the e2e suite) on merged files the real
# pipeline wrote (tests/fuzz/report/real-*: guest and host records, zstd, two VMs) and on a
# host recording of perf 6.1's own; then with a reader that drops one record, changes one
# comm or warns, standing in for perf 6.12: each must fail, named.
. "$VT_SOURCE_ROOT/tests/integration/lib.sh"
both=$VT_SOURCE_ROOT/tests/e2e/perf-both
T=$(mktemp -d /tmp/vt-perf-both.XXXXXX)
trap 'rm -rf "$T"' EXIT
real=("$VT_SOURCE_ROOT"/tests/fuzz/report/real-*)
check "${#real[@]} real merged files" test "${#real[@]}" -ge 4
check_out "perf 6.1 and 6.12 read every real merged file alike" "^ok .*real-two-vms-merged alike.*179 guest" "$both" "${real[@]}"
check "a host recording of perf 6.1 itself (tasks exit while it records)" \
	perf record -q -o "$T/host.data" -e sched:sched_switch -a -- sh -c 'for i in 1 2 3 4 5; do /bin/true; done; sleep 0.2'
check_out "perf 6.12 loses the comm of an exited task's last records: accepted, counted" \
	"after their task exited, 6.12 without comm" "$both" "$T/host.data"

# Readers that differ: perf 6.1 with its script output changed (the stand-in's mode in $1).
cat >"$T/reader" <<'EOS'
#!/bin/bash
mode=$(cat "$(dirname "$0")/mode")
if [ "$1" = script ]; then
	case $mode in
	drop) /usr/bin/perf "$@" | awk '!/PERF_RECORD_/ && ++n == 7 { next } { print }' ;;
	comm) /usr/bin/perf "$@" | awk '/guest_sched:sched_switch/ && !done { sub(/VCPU:[0-9]+ +[^ ]+/, "& x"); done = 1 } { print }' ;;
	warn) /usr/bin/perf "$@"; echo "Warning: a stand-in's warning" >&2 ;;
	esac
	exit "${PIPESTATUS[0]}"
fi
exec /usr/bin/perf "$@"
EOS
chmod +x "$T/reader"
f=$VT_SOURCE_ROOT/tests/fuzz/report/real-two-vms-merged
for m in drop:'differ at record [0-9]+' comm:"differ at record [0-9]+: 6.1 '[^']*' / 6.12 '[^']* x " warn:'warned: Warning: a stand-in'; do
	echo "${m%%:*}" >"$T/mode"
	out=$(PERF_BOTH_612=$T/reader "$both" "$f" 2>&1)
	st=$?
	check "a reader that does '${m%%:*}' fails perf-both (exit $st)" test $st -eq 1
	check_out "  and it is named: ${m#*:}" "^FAIL .*${m#*:}" echo "$out"
done
finish
