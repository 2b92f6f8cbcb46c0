# SPDX-License-Identifier: GPL-2.0-only
# Helpers for the shell integration tests: checks that name what failed, a final count.
set -u
# The perf the tests read what they write with: Debian 12's, or with VT_TEST_PERF=6.12 perf 6.12
# from bookworm-backports (scripts/bootstrap unpacks it, scripts/perf-6.12 runs it). Not VT_PERF:
# that names the perf the daemon records the host with (a path; VT_PERF=scripts/perf-6.12 works).
case ${VT_TEST_PERF:-} in
'') PERF=/usr/bin/perf ;;
6.12) PERF=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/scripts/perf-6.12 ;;
*) echo "VT_TEST_PERF=$VT_TEST_PERF: only perf 6.12 is unpacked besides Debian 12's (scripts/bootstrap)" >&2; exit 1 ;;
esac
vt_pass=0
vt_fail=0

ok() { vt_pass=$((vt_pass + 1)); echo "ok   $*"; }
fail() { vt_fail=$((vt_fail + 1)); echo "FAIL $*" >&2; }
# check DESCRIPTION COMMAND...: passes when the command succeeds.
check() { local d=$1; shift; if "$@"; then ok "$d"; else fail "$d (command: $*)"; fi; }
# check_out DESCRIPTION REGEX COMMAND...: passes when the command's output matches.
check_out() {
	local d=$1 re=$2; shift 2
	local out cmd="$*"
	out=$("$@" 2>&1)
	if grep -Eq -- "$re" <<<"$out"; then
		ok "$d"
	elif [ "$out" = "${vt_last_out-}" ]; then # a loop of checks on one output: printed once
		fail "$d: /$re/ not in output of '${cmd:0:80}': the same output as the check before"
	else
		fail "$d: /$re/ not in output of '${cmd:0:80}': $out"
		vt_last_out=$out
	fi
}
vt_counts() { echo "$vt_pass passed, $vt_fail failed"; [ "$vt_fail" -eq 0 ]; }
finish() { vt_counts; } # tests/e2e/lib.sh's checks the merged files first
