#!/usr/bin/env bash
# Before/after on the drain (issue 11): two dlq-archive binaries, ROUNDS rounds of run.sh with SIDES=ours,
# alternating A, B, A, B, ... on the same settings so both see the same machine; prints each run and the
# medians (CPU µs/message, user/sys, minor page faults, msg/s, peak RSS, load average before each run).
#
# Usage: bench/drain/ab.sh BIN_A BIN_B
#   env: ROUNDS (5)  N (40000)  OUT ($TMPDIR or /tmp, dlq-bench-ab)  DLQ_RUN_DIR (.run), and run.sh's env
#        (CONCURRENCY, BATCH, ...). Copy a binary aside before rebuilding it: run.sh runs it in place.
set -euo pipefail
cd "$(dirname "$0")/../.."
(($# == 2)) || { sed -n 2,8p "$0" >&2; exit 2; }
for b in "$1" "$2"; do [[ -x $b ]] || { echo "error: $b is not an executable" >&2; exit 2; }; done
ROUNDS=${ROUNDS:-5}
out=${OUT:-${TMPDIR:-/tmp}/dlq-bench-ab}
rm -rf "$out"
mkdir -p "$out"
for i in $(seq 1 "$ROUNDS"); do
  for side in A B; do
    bin=$1
    [[ $side == B ]] && bin=$2
    o=$out/$side-$i
    BIN=$bin OUT=$o RESULTS=$o/results.json DLQ_RUN_DIR=${DLQ_RUN_DIR:-.run} SIDES=ours SKIP_BUILD=1 \
      N=${N:-40000} bash bench/drain/run.sh >"$o.log" 2>&1 || { echo "error: run $side-$i failed (log: $o.log)" >&2; exit 1; }
    faults=$(sed -n 's/.*Minor (reclaiming a frame) page faults: //p' "$o/ours.time")
    python3 - "$o/results.json" "$side-$i" "$faults" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
o = r["ours"]
print(f"{sys.argv[2]}: {o['cpu_us_per_message']:6.1f} us/msg  user {o['cpu_user_s']} s  sys {o['cpu_sys_s']} s"
      f"  faults {sys.argv[3]}  {o['messages_per_s']} msg/s  receivers {o.get('receivers')}"
      f"  load {r['load_average']['before_ours'].split()[0]}")
PY
  done
done
python3 - "$out" "$1" "$2" <<'PY'
import glob, json, statistics, sys
out, a, b = sys.argv[1:4]
for side, path in (("A", a), ("B", b)):
    rs = [json.load(open(f)) for f in sorted(glob.glob(f"{out}/{side}-*/results.json"))]
    o = [r["ours"] for r in rs]
    med = lambda k: statistics.median(x[k] for x in o)
    print(f"{side} {path}: CPU us/msg median {med('cpu_us_per_message')} (runs {[x['cpu_us_per_message'] for x in o]}),"
          f" user {med('cpu_user_s')} s, sys {med('cpu_sys_s')} s, {med('messages_per_s')} msg/s,"
          f" peak RSS {med('max_rss_mib')} MiB")
PY
