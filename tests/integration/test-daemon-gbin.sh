# SPDX-License-Identifier: GPL-2.0-only
# A guest that plays the attacker with its binaries (fake guest, --guest-perf; issue 29):
#  1. it sends a binary claiming the build-id of the host's /bin/bash (this script's bash, so
#     host.data names it): the merge refuses it; the output's own build-id dir (OUT/buildids,
#     read by perf --buildid-dir) holds only the honest one; $HOME/.debug is never written;
#  2. the same with --trust-guest-binaries: the honest one goes to $HOME/.debug, bash's id never;
#  3. it trickles a binary one byte a second: the fetch is cut after --timeout without progress,
#     host perf has stopped before the fetch, and the summary says why;
#  4. a second stop, and SIGTERM, cut a fetch at once (what was fetched stays);
#  5. 64 KiB chunks each in time but too slow in all: cut at the total bound (12 x --timeout).
. "$(dirname "$0")/daemon-lib.sh"

command -v perf >/dev/null || { fail "perf not installed (linux-perf): scripts/bootstrap installs it"; finish; exit 1; }
command -v readelf >/dev/null || { fail "readelf not installed (binutils)"; finish; exit 1; }
mkfifos 2
for c in 0 1; do mkfifo -m 0600 "$VMDIR/perf-path-cpu$c.in" "$VMDIR/perf-path-cpu$c.out"; done
export HOME=$T/home
mkdir -p "$HOME"
bash_bin=$(readlink -f /proc/$$/exe)
bash_id=$(readelf -n "$bash_bin" | sed -n 's/^ *Build ID: //p')
honest=1122334455667788990011223344556677889900
check "the host's bash has a build-id ($bash_bin: $bash_id)" test -n "$bash_id"
OUT=$T/out.data
mkdir -p "$T/empty" "$T/rec"
HOME=$T/rec perf record -q -N -e cpu-clock -o "$T/bash.data" -- "$bash_bin" -c \
	'i=0; while [ $i -lt 300000 ]; do i=$((i + 1)); done' >/dev/null 2>&1
check "a host recording of bash" test -s "$T/bash.data"

# has_id DIR HEX: DIR (a build-id cache) holds HEX, perf buildid-cache's layout
has_id() { test -e "$1/.build-id/${2:0:2}/${2:2}"; }
restart_guest() {
	[ -n "$FG_PID" ] && kill -9 "$FG_PID" 2>/dev/null && wait "$FG_PID" 2>/dev/null
	fake_guest --dir "$VMDIR" --cpus 2 --pages 20 --perf "$@"
}
session() { tail -n 1 <<<"$1"; }

# ---- 1. a binary claiming the host bash's build-id, default: the output's own dir ----
restart_guest --bin "/usr/bin/evil=$FAKE_GUEST@$bash_bin" --bin "/usr/bin/tool=$FAKE_GUEST@0x$honest"
out=$(start --guest-perf 2>&1); rc=$?
check "start with guest perf and host perf ($out)" test $rc -eq 0
S=$(session "$out")
wait_for 10 status_has 'cpu1 +20 '
out=$(stop 2>&1); rc=$?
check "stop succeeds" test $rc -eq 0
grep -q 'guest binaries: 2 that user-mode samples ran in: 2 fetched' "$S/stop-summary.txt" && ok "both binaries fetched" ||
	fail "fetch: $(cat "$S/stop-summary.txt")"
grep -q '1 REFUSED: their build-id is the host' <<<"$out" && ok "the one with bash's build-id refused, said" ||
	fail "refusal: $out"
cmd="perf --buildid-dir $OUT/buildids report -i $OUT"
grep -qF "guest user functions: $cmd" <<<"$out" && ok "the summary prints the perf command" || fail "command: $out"
check "OUT/buildids holds the honest binary" has_id "$OUT/buildids" "$honest"
check "OUT/buildids does not hold bash's build-id" bash -c "! test -e '$OUT/buildids/.build-id/${bash_id:0:2}/${bash_id:2}'"
check "\$HOME/.debug was not written" test ! -e "$HOME/.debug"
# perf itself, on a host recording of bash: with the output's build-id dir it names bash's
# functions exactly as without one; with a cache that holds the guest's file under bash's
# build-id (what the old install into $HOME/.debug made) it does not: the check can fail.
report() { perf "$@" report -i "$T/bash.data" --stdio --sort dso,sym -q 2>/dev/null | grep -v '^$' | head -30; }
ref=$(HOME=$T/empty report)
if [ -z "$ref" ]; then # say why, then record once more (a loaded host can leave it without samples)
	echo "perf report of bash.data gave nothing:" >&2
	HOME=$T/empty perf report -i "$T/bash.data" --stdio --sort dso,sym -q 2>&1 | head -5 >&2
	HOME=$T/rec perf record -q -N -e cpu-clock -o "$T/bash.data" -- "$bash_bin" -c \
		'i=0; while [ $i -lt 300000 ]; do i=$((i + 1)); done' >/dev/null 2>&1
	ref=$(HOME=$T/empty report)
fi
got=$(HOME=$T/empty report --buildid-dir "$OUT/buildids")
check "host bash samples are named by the host's bash with OUT/buildids" test -n "$ref" -a "$got" = "$ref"
mkdir -p "$T/evil/.build-id/${bash_id:0:2}" "$T/evil/usr/bin/bash/$bash_id"
cp "$S/binaries/$bash_id" "$T/evil/usr/bin/bash/$bash_id/elf"
ln -s "../../usr/bin/bash/$bash_id" "$T/evil/.build-id/${bash_id:0:2}/${bash_id:2}"
evil=$(HOME=$T/empty report --buildid-dir "$T/evil")
check "control: a cache with the guest's file under bash's build-id changes what perf names" test "$evil" != "$ref"
evil_rel=$(cd "$T" && HOME=$T/empty report --buildid-dir evil)
check "perf reads a relative --buildid-dir too (stop prints OUT as given)" test "$evil_rel" = "$evil"
rep=$(perf --buildid-dir "$OUT/buildids" report -i "$OUT" --stdio --sort dso 2>&1); rc=$?
check "the printed command runs (rc $rc)" test $rc -eq 0
grep -q " fetched /usr/bin/evil" "$S/binaries/index" && ok "index: evil fetched" ||
	fail "index: $(cat "$S/binaries/index")"

# ---- 2. --trust-guest-binaries: $HOME/.debug, still never under the host's build-id ----
out=$(start --guest-perf --trust-guest-binaries 2>&1); rc=$?
check "start --trust-guest-binaries ($out)" test $rc -eq 0
wait_for 10 status_has 'cpu1 +20 '
out=$(stop 2>&1); rc=$?
check "stop succeeds (trusted)" test $rc -eq 0
grep -q '1 REFUSED: their build-id is the host' <<<"$out" && ok "trusted: bash's build-id still refused" ||
	fail "trusted refusal: $out"
check "\$HOME/.debug holds the honest binary" has_id "$HOME/.debug" "$honest"
check "\$HOME/.debug does not hold bash's build-id" bash -c "! test -e '$HOME/.debug/.build-id/${bash_id:0:2}/${bash_id:2}'"
got=$(report)
check "trusted: host bash samples are still named by the host's bash" test "$got" = "$ref"
grep -q 'guest user functions: perf --buildid-dir' <<<"$out" && fail "trusted: no --buildid-dir needed: $out" ||
	ok "trusted: no --buildid-dir command"

# ---- 3. a guest that trickles one byte a second: cut after --timeout without progress ----
restart_guest --mode trickle --bin "/usr/bin/tool=$FAKE_GUEST@0x$honest"
out=$(start --guest-perf --timeout 2 2>&1); rc=$?
check "start (trickle) ($out)" test $rc -eq 0
S=$(session "$out")
wait_for 10 status_has 'cpu1 +20 '
stop >"$T/stop.out" 2>&1 &
stop_pid=$!
wait_for 20 status_has 'fetching guest binaries'
check_out "host perf stopped before the fetch" '^host perf: stopped, host.data' status
wait "$stop_pid"; rc=$?
out=$(cat "$T/stop.out")
check "stop ends against a trickling guest" test $rc -eq 0
grep -q 'CUT: no progress from the agent within 2 s' <<<"$out" && ok "the summary says why the fetch was cut" ||
	fail "trickle summary: $out"
grep -q 'replies shorter than 64 KiB that were no file.s end' "$S/stop-summary.txt" && ok "the short replies are counted" ||
	fail "short replies: $(cat "$S/stop-summary.txt")"
grep -q "^$honest cut:no-progress /usr/bin/tool" "$S/binaries/index" && ok "index: cut:no-progress" ||
	fail "index: $(cat "$S/binaries/index")"
check "no .part file left" bash -c "! ls '$S/binaries/' | grep -q part"
grep -q '^  guest binaries: .*1 cut' "$S/stop-summary.txt" && ok "the merge counts the cut binary" ||
	fail "merge cut: $(cat "$S/stop-summary.txt")"

# ---- 4. a second stop, then SIGTERM, end a trickling fetch at once ----
out=$(start --guest-perf --no-host --timeout 60 2>&1)
S=$(session "$out")
wait_for 10 status_has 'cpu1 +20 '
stop >"$T/stop1.out" 2>&1 &
stop_pid=$!
wait_for 20 status_has 'fetching guest binaries'
out=$(stop 2>&1); rc=$?
check "a second stop succeeds" test $rc -eq 0
grep -q "CUT: a second 'stop' ended the fetch" <<<"$out" && ok "second stop: the summary says it cut the fetch" ||
	fail "second stop: $out"
wait "$stop_pid"; rc=$?
check "the first stop is told it was taken over (rc $rc)" grep -q 'taken over by a later' "$T/stop1.out"
out=$(start --guest-perf --no-host --timeout 60 2>&1)
S=$(session "$out")
wait_for 10 status_has 'cpu1 +20 '
pid=$(daemon_pid)
stop >/dev/null 2>&1 &
stop_pid=$!
wait_for 20 status_has 'fetching guest binaries'
kill -TERM "$pid"
check "SIGTERM ends the daemon during the fetch" wait_for 10 bash -c "! kill -0 $pid"
wait "$stop_pid"
grep -q 'a signal (SIGTERM or SIGINT) ended the fetch' "$S/collector.log" && ok "log: SIGTERM cut the fetch" ||
	fail "SIGTERM: $(tail -5 "$S/collector.log")"
grep -q "^$honest cut:signal /usr/bin/tool" "$S/binaries/index" && ok "index: cut:signal" ||
	fail "index: $(cat "$S/binaries/index")"

# ---- 5. chunks that count, each in time, too slow in all: the total bound ----
restart_guest --mode slow --bin "/usr/bin/big=$TRACE_COLLECTOR@0x$honest"
out=$(start --guest-perf --no-host --timeout 2 2>&1)
S=$(session "$out")
wait_for 10 status_has 'cpu1 +20 '
out=$(stop 2>&1); rc=$?
check "stop ends against a slow guest" test $rc -eq 0
grep -q 'CUT: the fetch.s total bound of 24 s (12 x --timeout) was reached' <<<"$out" &&
	ok "the summary names the total bound" || fail "slow summary: $out"
grep -q "^$honest cut:total-bound /usr/bin/big" "$S/binaries/index" && ok "index: cut:total-bound" ||
	fail "index: $(cat "$S/binaries/index")"
finish
