# SPDX-License-Identifier: GPL-2.0-only
# Helpers for the shell integration tests: checks that name what failed, a final count.
set -u
vt_pass=0
vt_fail=0

ok() { vt_pass=$((vt_pass + 1)); echo "ok   $*"; }
fail() { vt_fail=$((vt_fail + 1)); echo "FAIL $*" >&2; }
# check DESCRIPTION COMMAND...: passes when the command succeeds.
check() { local d=$1; shift; if "$@"; then ok "$d"; else fail "$d (command: $*)"; fi; }
# check_out DESCRIPTION REGEX COMMAND...: passes when the command's output matches.
check_out() {
	local d=$1 re=$2; shift 2
	local out
	out=$("$@" 2>&1)
	if grep -Eq -- "$re" <<<"$out"; then ok "$d"; else fail "$d: /$re/ not in output of '$*': $out"; fi
}
finish() { echo "$vt_pass passed, $vt_fail failed"; [ "$vt_fail" -eq 0 ]; }
