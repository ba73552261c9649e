#!/usr/bin/env bash
# Guarded redrive benchmark (issue 32) on fauxqs: a bad redrive's time to stop
# against the processing window and the messages it exposed, the source's
# backlog peak against --max-backlog with a consumer at a tenth of the replay
# rate, and a clean ramped redrive's throughput against plain replay
# (--no-canary) in the same run. See bench/replay/README.md, "Guarded redrive".
# Usage: bench/replay/redrive.sh
#   env: N (clean runs, 100000), N_BAD (1000), N_BACKLOG (1000), RATE (backlog run's --rate, 200),
#        BOUND (--max-backlog, 100), CANARY (clean run, 1000), WINDOW (clean run's --window, 10s),
#        BACKLOG_FLAGS (extra replay flags for the backlog part, e.g. "--concurrency 1"),
#        BIN, CONSUMER, DLQ_RUN_DIR, KEEP_DATA, ONLY (bad|backlog|clean: one part)
set -euo pipefail
cd "$(dirname "$0")/../.."
N=${N:-100000}
N_BAD=${N_BAD:-1000}
N_BACKLOG=${N_BACKLOG:-1000}
RATE=${RATE:-200}
BOUND=${BOUND:-100}
CANARY=${CANARY:-1000}
WINDOW=${WINDOW:-10s}
read -r -a backlog_flags <<<"${BACKLOG_FLAGS:-}"
BIN=${BIN:-build/dlq-archive}
CONSUMER=${CONSUMER:-build/dlq_test_consumer}
RUN=${DLQ_RUN_DIR:-.run}
ONLY=${ONLY:-}
# shellcheck disable=SC1091
. "$RUN/fauxqs.env"
for b in "$BIN" "$CONSUMER"; do
  [ -x "$b" ] || { echo "build first: scripts/build --target dlq-archive --target dlq_test_consumer" >&2; exit 1; }
done

id=$(head -c4 /dev/urandom | od -An -tx1 | tr -d ' \n')
dir=$(mktemp -d /tmp/bench-redrive-XXXXXX)
queues=()
now() { date +%s.%N; }
cleanup() {
  # Only this script's own background jobs still running (consumers, the sampler).
  for p in $(jobs -p); do kill -TERM "$p" 2>/dev/null || true; done
  if [ -z "${KEEP_DATA:-}" ]; then
    for q in "${queues[@]}"; do
      aws --endpoint-url "$AWS_ENDPOINT_URL" sqs delete-queue --queue-url "$q" >/dev/null 2>&1 || true
    done
    rm -rf "$dir"
  fi
}
trap cleanup EXIT

# pair NAME VT: creates NAME-dlq and NAME-src (VisibilityTimeout VT, maxReceiveCount 2 to NAME-dlq);
# prints "DLQ_URL SRC_URL".
pair() {
  python3 - "$AWS_ENDPOINT_URL" "$1" "$2" <<'PY'
import boto3, json, sys
ep, name, vt = sys.argv[1:4]
sqs = boto3.client("sqs", endpoint_url=ep)
dlq = sqs.create_queue(QueueName=name + "-dlq")["QueueUrl"]
arn = sqs.get_queue_attributes(QueueUrl=dlq, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
src = sqs.create_queue(QueueName=name + "-src", Attributes={
    "VisibilityTimeout": vt,
    "RedrivePolicy": json.dumps({"deadLetterTargetArn": arn, "maxReceiveCount": "2"})})["QueueUrl"]
print(dlq, src)
PY
}

# fill_archive DLQ_URL DLQ_NAME COUNT DIR: COUNT messages into the DLQ, then archived (the DLQ is drained).
fill_archive() {
  python3 bench/drain/fill.py --endpoint-url "$AWS_ENDPOINT_URL" --queue-url "$1" --count "$3" >/dev/null
  "$BIN" --log-level warn archive --queue "$2" --to "file://$4" --progress never >/dev/null
}

# consumer NAME SRC_URL ARGS...: starts dlq_test_consumer in the background; its pid in $consumer_pid.
consumer() {
  local name=$1 src=$2
  shift 2
  "$CONSUMER" --queue-url "$src" --count-file "$dir/$name.consumed" "$@" >/dev/null 2>"$dir/$name.consumer.log" &
  consumer_pid=$!
}

# replay NAME ARGS...: runs the replay, its stdout/stderr in DIR/NAME.{out,err}; sets rc, t_start, t_end.
replay() {
  local name=$1
  shift
  t_start=$(now)
  set +e
  "$BIN" --log-level warn replay "$@" --progress never >"$dir/$name.out" 2>"$dir/$name.err"
  rc=$?
  set -e
  t_end=$(now)
}

# drained URL: waits (up to 10 minutes) until the queue holds nothing, visible or in flight.
drained() {
  local deadline=$((SECONDS + 600)) left
  while ((SECONDS < deadline)); do
    left=$(aws --endpoint-url "$AWS_ENDPOINT_URL" sqs get-queue-attributes --queue-url "$1" \
      --attribute-names ApproximateNumberOfMessages ApproximateNumberOfMessagesNotVisible \
      --query 'sum(map(&to_number(@), values(Attributes)))' --output text)
    [ "$left" = 0 ] && return 0
    sleep 1
  done
  echo "warning: $1 still holds $left messages" >&2
}

audit_of() { find "$1/dlq-archive/_audit" -maxdepth 1 -name "*.json" 2>/dev/null | head -1; }

results=()

# 1. Bad redrive: every message fails again. Default window (from the source's attributes: 2 x 2 s + margin 10 s).
if [ -z "$ONLY" ] || [ "$ONLY" = bad ]; then
  echo "bad redrive: $N_BAD messages, consumer fails every one" >&2
  read -r dlq src < <(pair "bench-redrive-bad-$id" 2)
  queues+=("$dlq" "$src")
  mkdir -p "$dir/bad"
  fill_archive "$dlq" "bench-redrive-bad-$id-dlq" "$N_BAD" "$dir/bad"
  consumer bad "$src" --fail .
  replay bad --from "file://$dir/bad" --all --to-queue "$src" --canary 10
  kill -TERM "$consumer_pid"; wait "$consumer_pid" || true
  results+=("$(python3 - "$dir/bad" "$rc" "$t_start" "$t_end" "$dir/bad.consumed" "$(audit_of "$dir/bad")" <<'PY'
import json, sys
d, rc, t0, t1, consumed, audit = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), sys.argv[5], sys.argv[6]
bodies = set()
for line in open(consumed):
    try:
        bodies.add(json.loads(line)["body"])
    except ValueError:
        pass
a = json.load(open(audit)) if audit else {}
r = a.get("redrive", {})
print(json.dumps({"part": "bad", "exit_code": rc, "seconds_to_stop": round(t1 - t0, 2),
                  "window_s": r.get("window_s"), "canary": r.get("canary"), "refailed": r.get("refailed"),
                  "exposed_messages": len(bodies), "dlq_receives": r.get("dlq_receives"),
                  "sent": a.get("counts", {}).get("sent")}))
PY
)")
fi

# 2. Backlog: --rate RATE/s into a consumer at RATE/10 per second, --max-backlog BOUND; depth sampled 4 times a second.
if [ -z "$ONLY" ] || [ "$ONLY" = backlog ]; then
  slow=$(python3 -c "print(max(1, $RATE // 10))")
  echo "backlog: $N_BACKLOG messages at --rate $RATE/s, consumer at $slow/s, --max-backlog $BOUND" >&2
  read -r dlq src < <(pair "bench-redrive-backlog-$id" 30)
  queues+=("$dlq" "$src")
  mkdir -p "$dir/backlog"
  fill_archive "$dlq" "bench-redrive-backlog-$id-dlq" "$N_BACKLOG" "$dir/backlog"
  consumer backlog "$src" --rate "$slow/s"
  python3 - "$AWS_ENDPOINT_URL" "$src" "$dir/backlog.stop" >"$dir/backlog.samples" <<'PY' &
import boto3, os, sys, time
ep, url, stop = sys.argv[1:4]
sqs = boto3.client("sqs", endpoint_url=ep)
while not os.path.exists(stop):
    a = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages"])["Attributes"]
    print(f"{time.time():.2f} {a['ApproximateNumberOfMessages']}", flush=True)
    time.sleep(0.25)
PY
  sampler=$!
  replay backlog --from "file://$dir/backlog" --all --to-queue "$src" --canary 10 --window 5s --check 2s \
    --rate "$RATE/s" --max-backlog "$BOUND" "${backlog_flags[@]}"
  touch "$dir/backlog.stop"; wait "$sampler" || true
  kill -TERM "$consumer_pid"; wait "$consumer_pid" || true
  results+=("$(python3 - "$rc" "$t_start" "$t_end" "$dir/backlog.samples" "$(audit_of "$dir/backlog")" "$BOUND" "$RATE" "$slow" "$N_BACKLOG" "${BACKLOG_FLAGS:-}" <<'PY'
import json, sys
rc, t0, t1, samples, audit, bound, rate, slow, n = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), \
    sys.argv[4], sys.argv[5], int(sys.argv[6]), int(sys.argv[7]), int(sys.argv[8]), int(sys.argv[9])
depths = [int(l.split()[1]) for l in open(samples) if len(l.split()) == 2 and t0 <= float(l.split()[0]) <= t1]
a = json.load(open(audit)) if audit else {}
r = a.get("redrive", {})
print(json.dumps({"part": "backlog", "flags": sys.argv[10], "exit_code": rc, "messages": n, "rate": rate, "consumer_rate": slow,
                  "bound": bound, "backlog_peak": max(depths) if depths else None, "samples": len(depths),
                  "over_bound_samples": sum(1 for d in depths if d > bound), "paused_s": r.get("paused_s"),
                  "seconds": round(t1 - t0, 2)}))
PY
)")
fi

# 3. Throughput: the same archive of N messages replayed plainly (--no-canary) and guarded (canary CANARY,
#    default ramp, --window WINDOW), each into its own source queue with a consumer at full speed. The backlog
#    bound is set above N in the guarded run so both measure sending, not the consumer.
if [ -z "$ONLY" ] || [ "$ONLY" = clean ]; then
  echo "clean: $N messages, plain replay then guarded redrive" >&2
  read -r dlq src_plain < <(pair "bench-redrive-clean-$id" 30)
  read -r dlq2 src_guarded < <(pair "bench-redrive-clean2-$id" 30)
  queues+=("$dlq" "$src_plain" "$dlq2" "$src_guarded")
  mkdir -p "$dir/clean" "$dir/plain-audit" "$dir/guarded-audit"
  fill_archive "$dlq" "bench-redrive-clean-$id-dlq" "$N" "$dir/clean"
  consumer plain "$src_plain"
  replay plain --from "file://$dir/clean" --all --to-queue "$src_plain" --no-canary --audit-to "file://$dir/plain-audit"
  plain=("$rc" "$t_start" "$t_end")
  drained "$src_plain"
  kill -TERM "$consumer_pid"; wait "$consumer_pid" || true
  consumer guarded "$src_guarded"
  replay guarded --from "file://$dir/clean" --all --to-queue "$src_guarded" --canary "$CANARY" --window "$WINDOW" \
    --max-backlog "$((N + 1))" --audit-to "file://$dir/guarded-audit"
  drained "$src_guarded"
  kill -TERM "$consumer_pid"; wait "$consumer_pid" || true
  results+=("$(python3 - "$N" "${plain[@]}" "$rc" "$t_start" "$t_end" "$(audit_of "$dir/guarded-audit")" \
      "$dir/plain.consumed" "$dir/guarded.consumed" "$dir/plain.out" "$dir/guarded.out" <<'PY'
import json, sys
n = int(sys.argv[1])
prc, p0, p1, grc, g0, g1 = int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5]), \
    float(sys.argv[6]), float(sys.argv[7])
a = json.load(open(sys.argv[8])) if sys.argv[8] else {}
r = a.get("redrive", {})
def ok_once(path):
    seen = {}
    for line in open(path):
        try:
            m = json.loads(line)
        except ValueError:
            continue
        if m["outcome"] == "ok":
            seen[m["message_id"]] = seen.get(m["message_id"], 0) + 1
    return len(seen), sum(1 for c in seen.values() if c > 1)
pc, pd = ok_once(sys.argv[9])
gc, gd = ok_once(sys.argv[10])
import re
def sending(path):
    m = re.search(r"\(sending: ([\d.]+) s, (\d+) msg/s\)", open(path).read())
    return (float(m[1]), int(m[2])) if m else (None, None)
ps, pr = sending(sys.argv[11])
gs, gr = sending(sys.argv[12])
print(json.dumps({"part": "clean", "messages": n,
                  "plain": {"exit_code": prc, "seconds": round(p1 - p0, 2), "msg_per_s": round(n / (p1 - p0)),
                            "send_seconds": ps, "send_msg_per_s": pr, "consumed": pc, "consumed_twice": pd},
                  "guarded": {"exit_code": grc, "seconds": round(g1 - g0, 2), "msg_per_s": round(n / (g1 - g0)),
                              "send_seconds": gs, "send_msg_per_s": gr,
                              "consumed": gc, "consumed_twice": gd, "canary": r.get("canary"),
                              "ramp": r.get("ramp"), "window_s": r.get("window_s"), "refailed": r.get("refailed"),
                              "dlq_receives": r.get("dlq_receives"), "paused_s": r.get("paused_s")}}))
PY
)")
fi

printf '%s\n' "${results[@]}" | python3 -c '
import json, sys
print(json.dumps([json.loads(l) for l in sys.stdin if l.strip()], indent=2))'
