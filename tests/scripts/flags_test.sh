#!/usr/bin/env bash
# The development scripts' bad flags: a one-line error naming the problem and exit 2, before any build or test runs.
#   scripts/test --bogus          -> "unknown option --bogus", 2
#   scripts/build --target        -> "error: --target needs a target name ...", 2 (it used to die on `set -u`)
set -uo pipefail
cd "$(dirname "$0")/../.."

failures=0
expect() {  # expect NAME WANT_RC WANT_TEXT COMMAND...
  local name=$1 want_rc=$2 want_text=$3 out rc
  shift 3
  out=$("$@" 2>&1 >/dev/null)
  rc=$?
  if [[ $rc -eq $want_rc && $out == *"$want_text"* && $(printf '%s\n' "$out" | wc -l) -eq 1 ]]; then
    echo "ok: $name"
  else
    echo "FAIL: $name: exit $rc (want $want_rc), stderr: $out" >&2
    failures=$((failures + 1))
  fi
}
expect "scripts/test with an unknown option" 2 "unknown option --bogus" bash scripts/test --bogus
expect "scripts/build --target without a name" 2 "error: --target needs a target name" bash scripts/build --target
((failures == 0))
