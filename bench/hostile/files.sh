#!/usr/bin/env bash
# Issue 38, files/memory/config: peak RSS (/usr/bin/time -v, or VmHWM of the
# daemon) of what a planted file or config drives:
#   audit-huge   `audit ls` over a 2 GiB file under _audit/ (sparse: no disk)
#   audit-1m     `audit ls` over a real record of a 1,000,000-message replay (~205 MB)
#   dry-run      `replay --dry-run` with the 2 GiB file under _audit/
#   config-anchor `check` of a 3.2 MB config: a 3 MiB anchor used 2,000 times
#                 (run under `ulimit -v` LIMIT_KB, default 8 GiB, and 60 s at most)
#   config-var   `check` of a 16 KB config: a 100 KB ${H} repeated 4,000 times
#   search       the daemon's /api/search with one object of 1 GiB of short
#                lines (about 1 MB gzipped) before the 5 messages searched for
#
#   bench/hostile/files.sh [DLQ_ARCHIVE_BINARY] [PHASE...]   # default build/dlq-archive, every phase
#
# Needs fauxqs (scripts/stand-ins start fauxqs, DLQ_FAUXQS_PORT honoured) for
# dry-run and search. Prints one line per phase.
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=$(realpath "${1:-build/dlq-archive}")
shift || true
phases=("$@")
((${#phases[@]})) || phases=(audit-huge audit-1m dry-run config-anchor config-var search)
LIMIT_KB=${LIMIT_KB:-8388608}
work=$(mktemp -d /tmp/dlq-hostile-files.XXXXXX)
trap 'rm -rf "$work"' EXIT

# Runs "$@" under /usr/bin/time -v (60 s at most); prints exit status, peak RSS, wall time.
measure() {
  local name=$1
  shift
  local rc=0
  (ulimit -v "$LIMIT_KB"; timeout -s KILL 60 /usr/bin/time -v "$@" >"$work/$name.out" 2>"$work/$name.err") || rc=$?
  local rss wall
  # time -v's lines are at the end; an error line may be hundreds of MB (an old build
  # printed a whole expanded value), so look at the two ends only.
  tail -c 4096 "$work/$name.err" >"$work/$name.tail"
  head -c 65536 "$work/$name.err" >"$work/$name.head"
  rss=$(awk -F: '/Maximum resident set size/ {gsub(/ /,"",$2); print $2}' "$work/$name.tail")
  wall=$(awk '/Elapsed \(wall clock\)/ {print $NF}' "$work/$name.tail")
  printf '%-14s exit %-3s peak RSS %8.1f MiB  wall %-8s %s\n' "$name" "$rc" "$(echo "${rss:-0} / 1024" | bc -l)" \
    "${wall:-killed}" "$(grep -a -m1 -oE '(error|warning): .{0,150}' "$work/$name.head" || true)"
}

archive=$work/archive
mkdir -p "$archive/dlq-archive/_audit"
huge=$archive/dlq-archive/_audit/20250101T000000Z-0000000000000000.json

for phase in "${phases[@]}"; do
  case $phase in
    audit-huge)
      truncate -s 2G "$huge"
      measure audit-huge "$BIN" audit ls --from "file://$archive"
      rm -f "$huge" ;;
    audit-1m)
      python3 - "$archive/dlq-archive/_audit/20250102T000000Z-0000000000000001.json" <<'PY'
import sys, uuid
dest = "https://sqs.us-east-1.amazonaws.com/123456789012/orders-queue"
with open(sys.argv[1], "w") as f:
    f.write('{"schema":3,"kind":"replay","caller_arn":null,"caller_error":null,'
            '"started_at":"2025-01-02T00:00:00.000Z","finished_at":"2025-01-02T00:10:00.000Z",'
            '"source":"s3://archive/dlq-archive","filter":"{}","destination":"source","transform":null,'
            '"outcome":"done","again":false,"counts":{"selected":1000000,"sent":1000000,"failed":0,"resumed":0,'
            '"already_replayed":0,"retries":0,"bytes_sent":0,"failed_again_skipped":0},'
            '"sent_by_destination":{"%s":1000000},"redrive":null,"messages":[' % dest)
    for i in range(1000000):
        f.write(('' if i == 0 else ',') + '{"message_id":"%s","new_message_id":"%s","destination":"%s","outcome":"sent"}'
                % (uuid.uuid4(), uuid.uuid4(), dest))
    f.write(']}\n')
PY
      ls -l "$archive/dlq-archive/_audit/" | awk 'NR>1 {print "  record of 1,000,000 messages: " $5 " bytes"}'
      measure audit-1m "$BIN" audit ls --from "file://$archive"
      rm -f "$archive/dlq-archive/_audit/20250102T000000Z-0000000000000001.json" ;;
    dry-run)
      # shellcheck disable=SC1090
      source "$(bash scripts/stand-ins env fauxqs)"
      queue=files-$RANDOM
      url=$(aws --endpoint-url "$AWS_ENDPOINT_URL" sqs create-queue --queue-name "$queue" --query QueueUrl --output text)
      truncate -s 2G "$huge"
      measure dry-run "$BIN" replay --from "file://$archive" --all --to-queue "$url" --dry-run
      rm -f "$huge" ;;
    config-anchor)
      python3 - "$work/anchor.yaml" <<'PY'
import sys
with open(sys.argv[1], "w") as f:
    f.write("defaults:\n  destination: s3://bucket/p\ngroups:\n  - name: g\n    queues:\n      - &big " + "q" * (3 << 20) + "\n")
    f.write("      - *big\n" * 1999)
PY
      measure config-anchor "$BIN" check --config "$work/anchor.yaml" ;;
    config-var)
      python3 - "$work/var.yaml" <<'PY'
import sys
with open(sys.argv[1], "w") as f:
    f.write("defaults:\n  destination: s3://bucket/p\n  key_template: '" + "${H}" * 4000 + "'\ngroups:\n  - name: g\n    queues: [q]\n")
PY
      H=$(head -c 102400 /dev/zero | tr '\0' h)
      export H
      measure config-var "$BIN" check --config "$work/var.yaml"
      unset H ;;
    search)
      # shellcheck disable=SC1090
      source "$(bash scripts/stand-ins env fauxqs)"
      queue=files-search-$RANDOM
      aws --endpoint-url "$AWS_ENDPOINT_URL" sqs create-queue --queue-name "$queue" >/dev/null
      python3 - "$archive" "$queue" <<'PY'
import gzip, json, os, sys, zlib
archive, queue = sys.argv[1:3]
d = f"{archive}/dlq-archive/{queue}/20260101"
os.makedirs(d)
# First in key order: 1 GiB of short lines, written as one gzip member in 64 MiB steps.
with open(f"{d}/{queue}-000000-slow.json.gz", "wb") as raw:
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    chunk = b"x\n" * (32 << 20)
    for _ in range(16):
        raw.write(z.compress(chunk))
    raw.write(z.flush())
def rec(mid, body):
    return json.dumps({"schema": 1, "queue": queue, "message_id": mid, "body": body,
                       "md5_of_body": "00000000000000000000000000000000",
                       "expires_at": "2026-01-05T00:00:00Z", "archived_at": "2026-01-01T01:00:00Z"}) + "\n"
with gzip.open(f"{d}/{queue}-000001-real.json.gz", "wt") as f:
    for i in range(5):
        f.write(rec(f"m-{i}", f"payment declined {i}"))
print(f"  slow object: {os.path.getsize(f'{d}/{queue}-000000-slow.json.gz')} bytes gzipped, 1 GiB of 2-byte lines")
PY
      port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
      cat >"$work/d.yaml" <<YAML
listen: 127.0.0.1:$port
collection_interval: 60s
defaults:
  destination: file://$archive
groups:
  - name: files
    endpoint_url: $AWS_ENDPOINT_URL
    queues: [$queue]
YAML
      "$BIN" run --config "$work/d.yaml" 2>"$work/daemon.log" &
      pid=$!
      for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/readyz" >/dev/null && break; sleep 0.2; done
      start=$(date +%s.%N)
      body=$(curl -s "http://127.0.0.1:$port/api/search?queue=$queue&q=payment")
      end=$(date +%s.%N)
      hwm=$(awk '/VmHWM/ {print $2}' "/proc/$pid/status")
      kill -TERM "$pid"
      wait "$pid" || true
      printf '%-14s %.2f s  daemon VmHWM %.1f MiB  %s\n' search "$(echo "$end - $start" | bc -l)" \
        "$(echo "$hwm / 1024" | bc -l)" \
        "$(python3 -c 'import json,sys; d=json.loads(sys.argv[1]); print({k: d.get(k) for k in ("count","complete","stopped","objects_scanned","objects_total","skipped_lines","cut_short")})' "$body")" ;;
    *) echo "unknown phase $phase" >&2; exit 2 ;;
  esac
done
