#!/usr/bin/env bash
# `cmake --install` of a configured build tree into a scratch DESTDIR: the
# binary, the service config, the systemd unit (its paths follow the tree's
# CMAKE_INSTALL_PREFIX) and the docs land where packaging/install.cmake says,
# and every path the Dockerfile's runtime stage copies out of its
# `DESTDIR=/out cmake --install` exists in such an install.
# Usage: tests/packaging/install_test.sh BUILD_DIR
set -euo pipefail
cd "$(dirname "$0")/../.."
build=$1
prefix=$(sed -n 's/^CMAKE_INSTALL_PREFIX:PATH=//p' "$build/CMakeCache.txt")
sysconf=$(sed -n 's/^CMAKE_INSTALL_SYSCONFDIR:PATH=//p' "$build/CMakeCache.txt")
sysconf=${sysconf:-etc}
[[ $sysconf == /* ]] || sysconf=$prefix/$sysconf

failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
pass() { echo "ok: $*"; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

DESTDIR=$work/root cmake --install "$build" >"$work/install.log" 2>&1 || { cat "$work/install.log" >&2; exit 1; }
root=$work/root
for f in "$prefix/bin/dlq-archive" "$sysconf/dlq-archive/dlq-archive.yaml" \
  "$prefix/share/doc/dlq-archive/README.md" "$prefix/share/doc/dlq-archive/operations.md" \
  "$prefix/share/doc/dlq-archive/copyright" "$prefix/share/doc/dlq-archive/examples/dlq-archive.yaml" \
  "$prefix/share/doc/dlq-archive/examples/prometheus-rules.yaml"; do
  [[ -e $root$f ]] && pass "installs $f" || fail "missing $f"
done
[[ -x $root$prefix/bin/dlq-archive ]] && pass "binary is executable" || fail "binary not executable"
unit=$root$prefix/lib/systemd/system/dlq-archive.service
if grep -q '^DLQ_INSTALL_SYSTEMD_UNIT:BOOL=OFF' "$build/CMakeCache.txt"; then
  [[ ! -e $unit ]] && pass "no unit with DLQ_INSTALL_SYSTEMD_UNIT=OFF" || fail "unit installed although OFF"
else
  grep -qxF "ExecStart=$prefix/bin/dlq-archive run --config $sysconf/dlq-archive/dlq-archive.yaml" "$unit" &&
    pass "unit ExecStart follows the prefix ($prefix)" || fail "unit ExecStart: $(grep ^ExecStart "$unit")"
fi
# The installed example config is the one packaging/ ships, byte for byte.
cmp -s packaging/dlq-archive.yaml "$root$sysconf/dlq-archive/dlq-archive.yaml" && pass "service config content" ||
  fail "installed service config differs from packaging/dlq-archive.yaml"

# The Dockerfile copies /out/<path> for a /usr prefix with sysconfdir /etc;
# map those onto this tree's prefix and sysconfdir.
while read -r path; do
  mapped=${path/#\/usr/$prefix}
  mapped=${mapped/#\/etc/$sysconf}
  [[ -e $root$mapped ]] && pass "Dockerfile copies $path (here $mapped)" || fail "Dockerfile copies $path: not installed"
done < <(sed -n 's|^COPY --from=build /out\(/[^ ]*\) .*|\1|p' Dockerfile)

if ((failures)); then
  echo "$failures check(s) failed" >&2
  exit 1
fi
echo "all install checks passed"
