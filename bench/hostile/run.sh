#!/usr/bin/env bash
# Daemon RSS, CPU and /healthz latency before, during and after each attack
# of issue 28 (slowloris, header flood, regex bomb), and the time SIGTERM
# takes during a slowloris: bench/hostile/attack.py against `dlq-archive run`
# on fauxqs, with a file:// archive holding one 1 MiB body.
#
#   bench/hostile/run.sh [DLQ_ARCHIVE_BINARY]    # default build/dlq-archive; ~1.5 min
#   bench/hostile/run.sh BINARY --round2 [PHASE...]   # issue 38's attacks (attack2.py); ~2 min
#
# Pass an older build's binary to compare. Prints attack.py's JSON; the
# daemon is SIGKILLed if SIGTERM did not end it within 60 s.
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=$(realpath "${1:-build/dlq-archive}")
shift || true
round2=0
if [[ ${1:-} == --round2 ]]; then
  round2=1
  shift
fi
bash scripts/stand-ins start fauxqs >/dev/null
# shellcheck disable=SC1090
source "$(bash scripts/stand-ins env fauxqs)"
work=$(mktemp -d /tmp/dlq-hostile.XXXXXX)
queue=hostile-$RANDOM-dlq
python3 - "$work" "$queue" "$AWS_ENDPOINT_URL" <<'PY'
import gzip, json, os, sys, urllib.request
work, queue, endpoint = sys.argv[1:4]
req = urllib.request.Request(endpoint + "/", data=json.dumps({"QueueName": queue}).encode(),
                             headers={"Content-Type": "application/x-amz-json-1.0",
                                      "X-Amz-Target": "AmazonSQS.CreateQueue",
                                      "Authorization": "AWS4-HMAC-SHA256 Credential=test/20260101/us-east-1/sqs/aws4_request, SignedHeaders=host, Signature=0"})
urllib.request.urlopen(req).read()
d = f"{work}/archive/dlq-archive/{queue}/20260101"
os.makedirs(d)
def rec(mid, body):
    return json.dumps({"schema": 1, "queue": queue, "message_id": mid, "body": body,
                       "md5_of_body": "00000000000000000000000000000000",
                       "expires_at": "2026-01-05T00:00:00Z", "archived_at": "2026-01-01T01:00:00Z"}) + "\n"
with gzip.open(f"{d}/{queue}-000000-bench.json.gz", "wt") as f:
    f.write(rec("m-dots", "." * ((1 << 20) - 1) + "!"))
    f.write(rec("m-known", "payment declined"))
PY
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat > "$work/d.yaml" <<YAML
listen: 127.0.0.1:$port
collection_interval: 5s
dashboard: { write_token: bench-hostile-token-0123456789 }
defaults:
  destination: file://$work/archive
groups:
  - name: hostile
    endpoint_url: $AWS_ENDPOINT_URL
    queues: [$queue]
YAML
"$BIN" run --config "$work/d.yaml" 2> "$work/log" &
pid=$!
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/readyz" >/dev/null && break; sleep 0.2; done
echo "binary: $BIN  pid $pid  load: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
if ((round2)); then
  python3 bench/hostile/attack2.py "$pid" "$port" "$queue" "$work/log" "$@" || true
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
else
  python3 bench/hostile/attack.py "$pid" "$port" "$queue" || true
fi
if kill -0 "$pid" 2>/dev/null && ! grep -q '^State:.*zombie' "/proc/$pid/status" 2>/dev/null; then
  kill -KILL "$pid" 2>/dev/null && echo "daemon had to be SIGKILLed" >&2
fi
rc=0
wait "$pid" 2>/dev/null || rc=$?
echo "daemon exit status: $rc$( ((rc > 128)) && echo " (signal $((rc - 128)))")" >&2
rm -rf "$work"
