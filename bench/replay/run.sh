#!/usr/bin/env bash
# Replay benchmark (issue 8): throughput of `dlq-archive replay` into fauxqs
# without --rate, and the accuracy of --rate. See bench/replay/README.md.
# Usage: bench/replay/run.sh   (env: N, RATE, RATE_N, BIN, DLQ_RUN_DIR, KEEP_DATA)
set -euo pipefail
cd "$(dirname "$0")/../.."
N=${N:-20000}          # messages archived and replayed without --rate
RATE=${RATE:-1000}     # --rate for the second run (messages per second)
RATE_N=${RATE_N:-20000}  # messages sent by the --rate run (--max)
BIN=${BIN:-build/dlq-archive}
RUN=${DLQ_RUN_DIR:-.run}
# shellcheck disable=SC1091
. "$RUN/fauxqs.env"
[ -x "$BIN" ] || { echo "build first: scripts/build" >&2; exit 1; }

id=$(head -c4 /dev/urandom | od -An -tx1 | tr -d ' \n')
dir=$(mktemp -d /tmp/bench-replay-XXXXXX)
sqs() { aws --endpoint-url "$AWS_ENDPOINT_URL" sqs "$@"; }
mkq() { sqs create-queue --queue-name "$1" --query QueueUrl --output text; }
depth() { sqs get-queue-attributes --queue-url "$1" --attribute-names ApproximateNumberOfMessages \
            --query Attributes.ApproximateNumberOfMessages --output text; }
now() { date +%s.%N; }

dlq=$(mkq "bench-replay-dlq-$id"); fast=$(mkq "bench-replay-fast-$id"); slow=$(mkq "bench-replay-rate-$id")
cleanup() {
  if [ -z "${KEEP_DATA:-}" ]; then
    for q in "$dlq" "$fast" "$slow"; do sqs delete-queue --queue-url "$q" >/dev/null 2>&1 || true; done
    rm -rf "$dir"
  fi
}
trap cleanup EXIT

echo "fill: $N messages (1 KiB bodies, 3 attributes)" >&2
python3 bench/drain/fill.py --endpoint-url "$AWS_ENDPOINT_URL" --queue-url "$dlq" --count "$N" >/dev/null
"$BIN" --log-level warn archive --queue "$dlq" --to "file://$dir" --progress never >/dev/null

echo "replay without --rate" >&2
t0=$(now)
"$BIN" --log-level warn replay --from "file://$dir" --to-queue "$fast" --progress never | tee "$dir/fast.txt" >&2
t1=$(now)
echo "replay --rate ${RATE}/s --max $RATE_N" >&2
t2=$(now)
"$BIN" --log-level warn replay --from "file://$dir" --to-queue "$slow" --rate "${RATE}/s" --max "$RATE_N" \
  --progress never | tee "$dir/rate.txt" >&2
t3=$(now)

fast_depth=$(depth "$fast"); slow_depth=$(depth "$slow")
python3 - "$N" "$RATE" "$RATE_N" "$t0" "$t1" "$t2" "$t3" "$fast_depth" "$slow_depth" "$dir" <<'PY'
import json, re, sys
n, rate, rate_n = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
t0, t1, t2, t3 = map(float, sys.argv[4:8])
fast_depth, slow_depth, d = int(sys.argv[8]), int(sys.argv[9]), sys.argv[10]
def summary(path):
    text = open(path).read()
    m = re.search(r"sent (\d+), failed (\d+).*?([\d.]+) s, (\d+) msg/s \(sending: ([\d.]+) s, (\d+) msg/s\)", text)
    return {"sent": int(m[1]), "failed": int(m[2]), "run_seconds": float(m[3]), "run_msg_per_s": int(m[4]),
            "send_seconds": float(m[5]), "send_msg_per_s": int(m[6])}
fast, slow = summary(f"{d}/fast.txt"), summary(f"{d}/rate.txt")
res = {
  "messages": n,
  "unlimited": dict(fast, wall_seconds=round(t1 - t0, 2), wall_msg_per_s=round(n / (t1 - t0)), queue_depth=fast_depth),
  "rate": dict(slow, target=rate, wall_seconds=round(t3 - t2, 2), queue_depth=slow_depth,
               achieved=round(rate_n / slow["send_seconds"], 1),
               error_pct=round(100 * (rate_n / slow["send_seconds"] - rate) / rate, 2)),
}
print(json.dumps(res, indent=2))
ok = fast["sent"] == n and fast_depth == n and slow["sent"] == rate_n and slow_depth == rate_n
sys.exit(0 if ok else 1)
PY
