#!/usr/bin/env bash
# DLQ_HTTP_CLIENT=curl vs builtin on the drain (issue 11): ROUNDS rounds of run.sh with SIDES=ours, the two
# clients alternating (curl, builtin, curl, ...), same settings; prints each run and the medians.
#
# Usage: bench/drain/http_client.sh
#   env: ROUNDS (5)  N (20000)  OUT (bench/drain/out/http-client)  DLQ_RUN_DIR (/work/main/.run)
#        and whatever run.sh takes (SKIP_BUILD=1 to use build/dlq-archive as is).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${ROUNDS:-5}
out=${OUT:-bench/drain/out/http-client}
rm -rf "$out"
mkdir -p "$out"
for i in $(seq 1 "$ROUNDS"); do
  for c in curl builtin; do
    o=$out/$c-$i
    DLQ_HTTP_CLIENT=$c OUT=$o RESULTS=$o/results.json DLQ_RUN_DIR=${DLQ_RUN_DIR:-/work/main/.run} SIDES=ours \
      N=${N:-20000} bash bench/drain/run.sh >"$o.log" 2>&1 || { echo "error: run $c-$i failed (log: $o.log)" >&2; exit 1; }
    SKIP_BUILD=1  # build once at most
    export SKIP_BUILD
  done
done
python3 - "$out" <<'PY'
import glob, json, statistics, sys
runs = {}
for f in sorted(glob.glob(f"{sys.argv[1]}/*/results.json")):
    r = json.load(open(f))
    runs.setdefault(r["params"]["DLQ_HTTP_CLIENT"], []).append(r)
for client, rs in runs.items():
    o = [r["ours"] for r in rs]
    med = lambda k: statistics.median(x[k] for x in o)
    print(f"{client:8} CPU us/msg runs {[x['cpu_us_per_message'] for x in o]} median {med('cpu_us_per_message')}"
          f" (user {med('cpu_user_s')} s, sys {med('cpu_sys_s')} s), msg/s {med('messages_per_s')},"
          f" peak RSS {med('max_rss_mib')} MiB, requests/msg {med('requests_per_message_total')},"
          f" load before each {[r['load_average']['before_ours'].split()[0] for r in rs]}")
PY
