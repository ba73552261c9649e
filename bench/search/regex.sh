#!/usr/bin/env bash
# bench/search: --body-regex with RE2 (what search uses) against std::regex
# (ECMAScript, what it used before issue 28) on the bench/search archive
# (gen_archive.cc). First the engines alone on every body (regex_engines.cc,
# CPU of one thread, counts must agree), then `dlq-archive search --body-regex
# P --output count` end to end (best wall of RUNS, with its CPU), also with
# DLQ_OLD_BINARY when set (a dlq-archive built from a commit before RE2).
# Usage: bench/search/regex.sh [DIR]   (env: DLQ_BUILD_DIR=build RUNS=3 DLQ_OLD_BINARY=)
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${DLQ_BUILD_DIR:-build}
RUNS=${RUNS:-3}
DIR=${1:-/tmp/dlq-bench-search}
PATTERNS=('order-[0-9]+' '"status":\s*"failed"' 'order [0-9]+ failed: Payment' '"type":"(Timeout|Throttled)"')

ninja -C "$BUILD" dlq-archive dlq_search_bench_gen dlq_search_regex_bench >/dev/null
if [[ ! -d $DIR/dlq-archive ]]; then
  mkdir -p "$DIR"
  "$BUILD/dlq_search_bench_gen" "$DIR"
fi
echo "$(date -u +%FT%TZ); $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')); load $(cut -d' ' -f1-3 /proc/loadavg)"
RUNS=$RUNS "$BUILD/dlq_search_regex_bench" "$DIR" "${PATTERNS[@]}"

# search NAME BINARY: each pattern end to end, best wall of RUNS with its CPU.
search() {
  local name=$1 binary=$2 p best t wall user sys i
  echo "$name: search --body-regex P --output count (best wall of $RUNS; CPU = user + sys of that run)"
  for p in "${PATTERNS[@]}"; do
    best=""
    for ((i = 0; i < RUNS; i++)); do
      t=$( { time "$binary" search --from "file://$DIR" --body-regex "$p" --output count >"$COUNT"; } 2>&1)
      read -r wall user sys <<<"$t"
      if [[ -z $best ]] || (($(echo "$wall < ${best%% *}" | bc -l))); then best="$wall $(echo "$user + $sys" | bc -l)"; fi
    done
    printf '%-34s count %-7s wall %6.2f s  cpu %6.2f s\n' "$p" "$(cat "$COUNT")" ${best}
  done
}
COUNT=$(mktemp)
trap 'rm -f "$COUNT"' EXIT
TIMEFORMAT='%R %U %S'
search "RE2 ($BUILD/dlq-archive)" "$BUILD/dlq-archive"
if [[ -n ${DLQ_OLD_BINARY:-} ]]; then search "std::regex ($DLQ_OLD_BINARY)" "$DLQ_OLD_BINARY"; fi
