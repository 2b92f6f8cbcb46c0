# SPDX-License-Identifier: GPL-2.0-only
# Debian packaging (debian/): dpkg-buildpackage -us -uc -b on a copy of the source builds the
# virtio-trace and virtio-trace-agent packages, lintian finds no error, and the packages
# unpacked in a scratch root run: trace-collector --version, the static trace-agent
# --version, man pages and the agent's unit where Debian puts them.
. "$(dirname "$0")/lib.sh"

: "${VT_SOURCE_ROOT:?}"
T=$(mktemp -d /tmp/vt-deb-test.XXXXXX)
trap 'rm -rf "$T"' EXIT
for dep in dpkg-buildpackage dh lintian git; do
	command -v $dep >/dev/null || { fail "$dep not installed: scripts/bootstrap installs it"; finish; exit 1; }
done

# The tracked files only (a build tree or a kernel cache in the checkout stays out).
mkdir "$T/src"
git -C "$VT_SOURCE_ROOT" ls-files -z | (cd "$VT_SOURCE_ROOT" && xargs -0 cp --parents -t "$T/src") ||
	{ fail "cannot copy the source"; finish; exit 1; }
(cd "$T/src" && dpkg-buildpackage -us -uc -b) >"$T/build.log" 2>&1
rc=$?
check "dpkg-buildpackage -us -uc -b succeeds (log: tail below on failure)" test $rc -eq 0
[ $rc -eq 0 ] || { tail -n 30 "$T/build.log" >&2; finish; exit 1; }
v=$(dpkg-parsechangelog -l "$T/src/debian/changelog" -S Version)
for p in virtio-trace virtio-trace-agent; do
	check "package $p built" test -s "$T/${p}_${v}_amd64.deb"
done
lint=$(lintian --tag-display-limit 0 "$T/virtio-trace_${v}_amd64.changes" 2>&1 | grep -v 'root privileges')
grep -q '^E:' <<<"$lint" && fail "lintian errors: $lint" || ok "lintian: no errors ($(grep -c '^W:' <<<"$lint") warnings)"
check_out "virtio-trace depends on linux-perf" '(^|, )linux-perf' dpkg-deb -f "$T/virtio-trace_${v}_amd64.deb" Depends

mkdir "$T/root"
for p in virtio-trace virtio-trace-agent; do
	dpkg-deb -x "$T/${p}_${v}_amd64.deb" "$T/root" || fail "cannot unpack $p"
done
check_out "packaged trace-collector runs" "^trace-collector [0-9]" "$T/root/usr/bin/trace-collector" --version
check_out "packaged trace-agent runs" "^trace-agent [0-9]" "$T/root/usr/bin/trace-agent" --version
check_out "packaged trace-agent is static" "statically linked" file "$T/root/usr/bin/trace-agent"
for f in usr/share/man/man1/trace-collector.1.gz usr/share/man/man8/trace-agent.8.gz \
	 usr/lib/systemd/system/trace-agent.service usr/share/bash-completion/completions/trace-collector \
	 usr/share/doc/virtio-trace/copyright; do
	check "packaged: /$f" test -s "$T/root/$f"
done
exe=$(sed -n 's/^ExecStart=//p' "$T/root/usr/lib/systemd/system/trace-agent.service")
check "the packaged unit runs the packaged agent ($exe)" test "$exe" = /usr/bin/trace-agent -a -x "$T/root$exe"
check "systemd-analyze verify: the packaged unit is valid" bash -c 'out=$(systemd-analyze verify --root="$1" trace-agent.service 2>&1);
	! grep -Ei "trace-agent.service:.*(not executable|no such|unknown|invalid)" <<<"$out" || { echo "$out"; exit 1; }' _ "$T/root"
check_out "packaged man page renders" "ports-dir" man -l "$T/root/usr/share/man/man8/trace-agent.8.gz"
finish
