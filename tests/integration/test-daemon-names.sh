# SPDX-License-Identifier: GPL-2.0-only
# What the user reads names things as they are: after a --max-size cut the stop line and the
# cut line give the same time (the stop's wait for the agent after the cut said apart).
. "$(dirname "$0")/daemon-lib.sh"

mkfifos 2

# 1. A cut: the guest floods past --max-size at once; the agent's end then takes --timeout.
fake_guest --dir "$VMDIR" --cpus 2 --pages 200
out=$(start --no-host --max-size 256K 2>&1); S=$(tail -n 1 <<<"$out")
check "cut: the session stops by itself" wait_for 10 status_has 'state: stopped — --max-size'
out=$(stop 2>&1)
stopped=$(sed -n 's/^stopped: --max-size 262144 bytes reached after \([0-9.]*\) s.*/\1/p' <<<"$out")
cut=$(sed -n 's/^cut: --max-size .*, \([0-9.]*\) s into the session;.*/\1/p' <<<"$out")
check "cut: the stop line and the cut line give one time (stopped after '$stopped' s, cut '$cut' s into the session)" \
	test -n "$stopped" -a "$stopped" = "$cut"
grep -Eq '^stopped: --max-size 262144 bytes reached after [0-9.]+ s \(finalized [0-9.]+ s in\); ' <<<"$out" &&
	ok "cut: the stop line says when the session was finalized after it" || fail "stop line: $out"
kill -9 "$FG_PID"; wait "$FG_PID" 2>/dev/null; FG_PID=

finish
