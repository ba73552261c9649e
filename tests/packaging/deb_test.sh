#!/usr/bin/env bash
# The .deb from scripts/package-deb, inspected without installing it:
# dpkg-deb --field/--contents/--control and dpkg -x. Asserts the files, the
# conffile, Depends from dpkg-shlibdeps, every hardening directive of the unit,
# `systemd-analyze verify` on the unit (skipped, saying so, when systemd-analyze
# is missing) and its `systemd-analyze security` exposure. The extracted
# binary runs, and it rejects a broken config with exit 2.
# Usage: tests/packaging/deb_test.sh [DEB]   (default: builds one with scripts/package-deb)
set -euo pipefail
cd "$(dirname "$0")/../.."

deb=${1:-}
if [[ -z $deb ]]; then
  deb=$(bash scripts/package-deb | tail -n 1)
fi
[[ -f $deb ]] || { echo "FAIL: no package at $deb" >&2; exit 1; }

failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
pass() { echo "ok: $*"; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# File name and control fields.
version=$(dpkg-deb --field "$deb" Version)
arch=$(dpkg-deb --field "$deb" Architecture)
[[ $(basename "$deb") == "dlq-archive_${version}_${arch}.deb" ]] && pass "file name $(basename "$deb")" ||
  fail "file name $(basename "$deb") is not dlq-archive_${version}_${arch}.deb"
[[ $(dpkg-deb --field "$deb" Package) == dlq-archive ]] && pass "Package: dlq-archive" || fail "Package field"
depends=$(dpkg-deb --field "$deb" Depends)
for d in libc6 libcurl4 libssl3 libstdc++6 libtcmalloc-minimal4 libre2-9 ca-certificates; do
  [[ $depends == *"$d"* ]] && pass "Depends has $d" || fail "Depends lacks $d: $depends"
done

# Contents.
dpkg-deb --contents "$deb" >"$work/contents"
for f in ./usr/bin/dlq-archive ./usr/lib/systemd/system/dlq-archive.service ./etc/dlq-archive/dlq-archive.yaml \
  ./usr/share/doc/dlq-archive/README.md ./usr/share/doc/dlq-archive/operations.md \
  ./usr/share/doc/dlq-archive/configuration.md ./usr/share/doc/dlq-archive/copyright \
  ./usr/share/doc/dlq-archive/examples/dlq-archive.yaml; do
  grep -q " $f\$" "$work/contents" && pass "contains $f" || fail "missing $f"
done
grep -q -- '-rwxr-xr-x root/root .* ./usr/bin/dlq-archive$' "$work/contents" && pass "binary 0755 root:root" ||
  fail "binary mode/owner: $(grep ' ./usr/bin/dlq-archive$' "$work/contents")"
if grep -q ' ./usr/etc/\| ./usr/local/' "$work/contents"; then fail "files under /usr/etc or /usr/local"; fi

# Control: the config is a conffile; maintainer scripts are executable.
dpkg-deb --control "$deb" "$work/control"
grep -qx /etc/dlq-archive/dlq-archive.yaml "$work/control/conffiles" && pass "conffile /etc/dlq-archive/dlq-archive.yaml" ||
  fail "conffiles: $(cat "$work/control/conffiles" 2>/dev/null)"
for s in postinst prerm postrm; do
  [[ -x $work/control/$s ]] && sh -n "$work/control/$s" && pass "$s executable, valid sh" || fail "$s"
done
if grep -q 'rm -rf' "$work/control/postrm"; then fail "postrm deletes files (file:// archives may be there)"; fi

# Extract and read the unit.
dpkg -x "$deb" "$work/root"
unit=$work/root/usr/lib/systemd/system/dlq-archive.service
for line in 'DynamicUser=yes' 'ProtectSystem=strict' 'ProtectHome=yes' 'NoNewPrivileges=yes' 'PrivateTmp=yes' \
  'PrivateDevices=yes' 'CapabilityBoundingSet=' 'RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX' \
  'SystemCallFilter=@system-service' 'StateDirectory=dlq-archive' 'MemoryDenyWriteExecute=yes' \
  'ExecStart=/usr/bin/dlq-archive run --config /etc/dlq-archive/dlq-archive.yaml' \
  'ExecReload=/bin/kill -HUP $MAINPID' 'RestartPreventExitStatus=2' 'KillSignal=SIGTERM'; do
  grep -qxF -- "$line" "$unit" && pass "unit: $line" || fail "unit lacks: $line"
done

# The packaged binary runs, and the packaged config parses (check's exit 2 is
# an invalid config; anything else means it got past parsing).
"$work/root/usr/bin/dlq-archive" --version >"$work/version" 2>&1 && grep -q "$version" "$work/version" &&
  pass "dlq-archive --version: $(head -n 1 "$work/version")" || fail "dlq-archive --version: $(cat "$work/version")"
printf 'groups: []\nbogus: 1\n' >"$work/bad.yaml"
rc=0
"$work/root/usr/bin/dlq-archive" run --config "$work/bad.yaml" >"$work/bad.out" 2>&1 || rc=$?
[[ $rc == 2 ]] && pass "run with a broken config exits 2" || fail "run with a broken config: exit $rc: $(cat "$work/bad.out")"

# The Dockerfile's runtime stage (after the last FROM) installs every package
# the .deb depends on, and runs as a numeric non-root user.
runtime=$(awk '/^FROM /{stage=""} {stage=stage $0 "\n"} END{printf "%s", stage}' Dockerfile)
for d in $(tr ',' '\n' <<<"$depends" | sed -e 's/(.*)//' -e 's/|.*//' -e 's/ //g'); do
  grep -qw -- "$d" <<<"$runtime" && pass "Dockerfile runtime installs $d" || fail "Dockerfile runtime stage lacks $d"
done
grep -qE '^USER [1-9][0-9]*:[1-9][0-9]*$' <<<"$runtime" && pass "Dockerfile runs as a numeric non-root user" ||
  fail "Dockerfile runtime USER is not numeric non-root"

# systemd-analyze verify: with the packaged paths mapped into the extracted tree.
if command -v systemd-analyze >/dev/null 2>&1; then
  mkdir -p "$work/units"
  sed -e "s|/usr/bin/dlq-archive|$work/root/usr/bin/dlq-archive|g" "$unit" >"$work/units/dlq-archive.service"
  # verify exits 0 on unknown keys and unparsable values (it only warns): any output fails.
  if systemd-analyze verify "$work/units/dlq-archive.service" >"$work/verify" 2>&1 && [[ ! -s $work/verify ]]; then
    pass "systemd-analyze verify (no warnings)"
  else
    fail "systemd-analyze verify: $(cat "$work/verify")"
  fi
  # The exposure score (0 safest .. 10), judged offline from the file alone.
  if systemd-analyze security --offline=yes "$work/units/dlq-archive.service" >"$work/security" 2>&1; then
    score=$(sed -n 's/.*Overall exposure level for dlq-archive.service: \([0-9.]*\).*/\1/p' "$work/security")
    if [[ -n $score ]] && awk -v s="$score" 'BEGIN { exit !(s <= 2.0) }'; then
      pass "systemd-analyze security: exposure $score (<= 2.0)"
    else
      fail "systemd-analyze security: exposure '${score:-?}' above 2.0: $(tail -n 3 "$work/security")"
    fi
  else
    echo "note: systemd-analyze security --offline unsupported here: $(tail -n 1 "$work/security")"
  fi
else
  echo "SKIPPED: systemd-analyze verify (systemd-analyze is not installed)"
fi

if ((failures)); then
  echo "$failures check(s) failed" >&2
  exit 1
fi
echo "all package checks passed"
