# SPDX-License-Identifier: GPL-2.0-only
# What a user gets without the source tree: 'meson install' into a scratch root (prefix and
# DESTDIR honoured) installs both binaries, the agent's unit, the man pages, the bash
# completion and the docs; every option of every --help appears in the man page's source
# (doc/*.scd) and in the rendered page; the completion offers start's options.
. "$(dirname "$0")/lib.sh"

: "${TRACE_COLLECTOR:?}" "${TRACE_AGENT:?}" "${VT_SOURCE_ROOT:?}" "${VT_BUILD_ROOT:?}"
T=$(mktemp -d /tmp/vt-install-test.XXXXXX)
trap 'rm -rf "$T"' EXIT

# options PROGRAM ARGS...: every -x / --long-option its help text names, one per line.
options() { "$@" --help 2>&1 | grep -Eo '(^|[ [|,(])--?[A-Za-z][A-Za-z0-9-]*' | sed 's/^[ [|,(]//' | sort -u; }

for cmd in "" setup start status stop merge; do
	scd=$VT_SOURCE_ROOT/doc/trace-collector.1.scd
	for o in $(options "$TRACE_COLLECTOR" $cmd); do
		grep -qF -- "*$o*" "$scd" && ok "trace-collector(1) documents ${cmd:-global} $o" ||
			fail "trace-collector ${cmd:-} --help names $o, doc/trace-collector.1.scd does not"
	done
done
n=$(options "$TRACE_COLLECTOR" start | wc -l)
check "start --help names at least 20 options ($n)" test "$n" -ge 20
for o in $(options "$TRACE_AGENT"); do
	grep -qF -- "*$o*" "$VT_SOURCE_ROOT/doc/trace-agent.8.scd" && ok "trace-agent(8) documents $o" ||
		fail "trace-agent --help names $o, doc/trace-agent.8.scd does not"
done

command -v scdoc >/dev/null || { fail "scdoc not installed: scripts/bootstrap installs it"; finish; exit 1; }
meson configure "$VT_BUILD_ROOT" | grep -Eq '^ *man +(auto|enabled)' || fail "the build has man pages disabled"
out=$(meson install -C "$VT_BUILD_ROOT" --no-rebuild --destdir "$T/root" 2>&1) ||
	{ fail "meson install --destdir failed: $out"; finish; exit 1; }
prefix=$(meson configure "$VT_BUILD_ROOT" | awk '$1 == "prefix" { print $2 }')
R=$T/root$prefix
for f in bin/trace-collector bin/trace-agent lib/systemd/system/trace-agent.service \
	 share/man/man1/trace-collector.1 share/man/man8/trace-agent.8 \
	 share/bash-completion/completions/trace-collector share/doc/virtio-trace/README.md \
	 share/doc/virtio-trace/LICENSE share/doc/virtio-trace/docs/protocol.md; do
	check "installed under DESTDIR/prefix: $f" test -s "$R/$f"
done
outside=$(find "$T/root" -type f ! -path "$R/*" | head -n 3)
check "every installed file is under DESTDIR/prefix ($outside)" test -z "$outside"
check_out "installed trace-collector runs" "^trace-collector [0-9]" "$R/bin/trace-collector" --version
exe=$(sed -n 's/^ExecStart=//p' "$R/lib/systemd/system/trace-agent.service")
check "the installed unit runs the installed agent ($exe)" test "$exe" = "$prefix/bin/trace-agent" -a -x "$T/root$exe"

# The rendered pages: man reads them; every start option is in the text.
page=$(MANWIDTH=200 man -l "$R/share/man/man1/trace-collector.1" 2>"$T/man.err")
check "man renders trace-collector(1) with no warnings" test ! -s "$T/man.err"
for o in $(options "$TRACE_COLLECTOR" start); do
	grep -qF -- "$o" <<<"$page" || fail "rendered trace-collector(1) lacks $o"
done
ok "rendered trace-collector(1) names every start option"
check_out "man renders trace-agent(8)" "ports-dir" env MANWIDTH=200 man -l "$R/share/man/man8/trace-agent.8"

# The completion: 'trace-collector start --flu<TAB>' completes to --flush-interval.
out=$(bash -c '. "$1"; COMP_WORDS=(trace-collector start --flu); COMP_CWORD=2; _trace_collector; echo "${COMPREPLY[*]}"' \
	sh "$R/share/bash-completion/completions/trace-collector")
check "completion: start --flu -> --flush-interval ($out)" test "$out" = "--flush-interval"
for o in $(options "$TRACE_COLLECTOR" start); do
	grep -qF -- " $o " <<<" $(tr -s ' \t\n"=' ' ' <"$R/share/bash-completion/completions/trace-collector") " ||
		fail "completion lacks start's $o"
done
ok "completion offers every start option"
finish
