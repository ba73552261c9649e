#!/usr/bin/env bash
# Live replay benchmark (issue 29): one `replay --from-queue` pass over N
# messages in fauxqs with 1% matching. See bench/replay/README.md.
# Usage: bench/replay/live.sh   (env: N, BIN, DLQ_RUN_DIR, FIFO=1, KEEP_DATA)
set -euo pipefail
cd "$(dirname "$0")/../.."
N=${N:-10000}
BIN=${BIN:-build/dlq-archive}
RUN=${DLQ_RUN_DIR:-.run}
# shellcheck disable=SC1091
. "$RUN/fauxqs.env"
[ -x "$BIN" ] || { echo "build first: scripts/build --target dlq-archive" >&2; exit 1; }

id=$(head -c4 /dev/urandom | od -An -tx1 | tr -d ' \n')
dir=$(mktemp -d /tmp/bench-live-XXXXXX)
sqs() { aws --endpoint-url "$AWS_ENDPOINT_URL" sqs "$@"; }
sfx=""; attrs=(); fill=()
if [ -n "${FIFO:-}" ]; then sfx=".fifo"; attrs=(--attributes FifoQueue=true); fill=(--fifo --groups "$N"); fi
mkq() { sqs create-queue --queue-name "$1$sfx" "${attrs[@]}" --query QueueUrl --output text; }
depth() { sqs get-queue-attributes --queue-url "$1" --attribute-names ApproximateNumberOfMessages \
            --query Attributes.ApproximateNumberOfMessages --output text; }
now() { date +%s.%N; }

dlq=$(mkq "bench-live-dlq-$id"); target=$(mkq "bench-live-to-$id")
cleanup() {
  if [ -z "${KEEP_DATA:-}" ]; then
    for q in "$dlq" "$target"; do sqs delete-queue --queue-url "$q" >/dev/null 2>&1 || true; done
    rm -rf "$dir"
  fi
}
trap cleanup EXIT

echo "fill: $N messages (1 KiB bodies, 3 attributes)" >&2
python3 bench/drain/fill.py --endpoint-url "$AWS_ENDPOINT_URL" --queue-url "$dlq" --count "$N" "${fill[@]}" >/dev/null
# Message i's body starts "msg <i, 9 digits> ": i % 100 == 0 is 1%.
echo "replay --from-queue (1% matching)" >&2
t0=$(now)
set +e
"$BIN" --log-level warn replay --from-queue "$dlq" --body-regex '^msg [0-9]{7}00 ' --to-queue "$target" \
  --audit-to "file://$dir" --progress never >"$dir/out.txt" 2>"$dir/err.txt"
code=$?
set -e
t1=$(now)
cat "$dir/out.txt" "$dir/err.txt" >&2
python3 - "$N" "$t0" "$t1" "$code" "$(depth "$dlq")" "$(depth "$target")" "$dir/out.txt" "${FIFO:-}" <<'PY'
import json, re, sys
n, t0, t1, code, left, moved, path, fifo = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), \
    int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]), sys.argv[7], bool(sys.argv[8])
text = open(path).read()
m = re.search(r"selected (\d+), sent (\d+).*examined (\d+) of ~(\d+) present at the start, not selected (\d+)"
              r".*\((\d+) receives\)", text)
sel, sent, examined, present, not_sel, receives = map(int, m.groups())
wall = t1 - t0
res = {"messages": n, "fifo": fifo, "exit_code": code, "wall_seconds": round(wall, 2),
       "selected": sel, "sent": sent, "examined": examined, "present_at_start": present,
       "not_selected": not_sel, "receive_calls": receives,
       "examined_per_s": round(examined / wall), "receives_per_message": round(receives / n, 3),
       "dlq_depth_after": left, "target_depth_after": moved}
print(json.dumps(res, indent=2))
ok = code == 0 and examined == n and sel == n // 100 and sent == sel and left == n - sel and moved == sel
sys.exit(0 if ok else 1)
PY
