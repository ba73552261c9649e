#!/usr/bin/env bash
# Redrive to the origin benchmark (issue 41) on moto and the fake Lambda: invocations per second of a guarded
# `replay --to-origin` into a Lambda function whose DeadLetterConfig is the archived DLQ, against plain sending
# (`--to-queue --no-canary`) of the same archive to an SQS queue in the same run; then the messages a guarded
# redrive exposes to a function that still fails every event. See bench/replay/README.md, "To the origin".
# Usage: bench/replay/origin.sh
#   env: N (messages, 1000), CANARY (10), CHUNK (the DLQ is filled and archived CHUNK at a time, 200),
#        FILL (direct: the DLQ messages sent with Lambda's attributes; fake: Event invokes the fake fails into
#        the DLQ), BIN, DLQ_RUN_DIR, KEEP_DATA
set -euo pipefail
cd "$(dirname "$0")/../.."
N=${N:-1000}
CANARY=${CANARY:-10}
CHUNK=${CHUNK:-200}
FILL=${FILL:-direct}
BIN=${BIN:-build/dlq-archive}
RUN=${DLQ_RUN_DIR:-.run}
# AWS_ENDPOINT_URL is moto, AWS_ENDPOINT_URL_LAMBDA the fake (doc/development.md, "The fake Lambda").
# shellcheck disable=SC1091
. "$RUN/fake-lambda.env"
[ -x "$BIN" ] || { echo "build first: scripts/build --target dlq-archive" >&2; exit 1; }
FAKE=$AWS_ENDPOINT_URL_LAMBDA

id=$(head -c4 /dev/urandom | od -An -tx1 | tr -d ' \n')
base="bench-origin-$id"
fn="$base-fn"
dir=$(mktemp -d /tmp/bench-origin-XXXXXX)
now() { date +%s.%N; }
fake() { curl -fsS -X "$1" ${3:+-H 'Content-Type: application/json' --data "$3"} "$FAKE$2"; }
cleanup() {
  fake DELETE "/_fake/rules?function=$fn" >/dev/null 2>&1 || true
  if [ -z "${KEEP_DATA:-}" ]; then
    python3 - "$base" <<'PY' >/dev/null 2>&1 || true
import boto3, os, sys
base = sys.argv[1]
sqs = boto3.client("sqs")
for q in ("-dlq", "-target"):
    try:
        sqs.delete_queue(QueueUrl=sqs.get_queue_url(QueueName=base + q)["QueueUrl"])
    except Exception:
        pass
boto3.client("lambda", endpoint_url=os.environ["AWS_ENDPOINT_URL_LAMBDA"]).delete_function(FunctionName=base + "-fn")
PY
    fake DELETE "/_fake/invocations?function=$fn" >/dev/null 2>&1 || true
    rm -rf "$dir"
  fi
}
trap cleanup EXIT

# fill.py setup: a role, the DLQ, a function (made through the fake, which keeps its DeadLetterConfig) and the
# target queue of the plain run; prints the target's URL. fill.py fill START COUNT: Lambda-async DLQ messages
# START.. into the DLQ: a JSON event as body, RequestID, ErrorCode and ErrorMessage.
cat >"$dir/fill.py" <<'PY'
import io, json, os, sys, uuid, zipfile
import boto3
base, mode = sys.argv[1], sys.argv[2]
sqs = boto3.client("sqs")
lam = boto3.client("lambda", endpoint_url=os.environ["AWS_ENDPOINT_URL_LAMBDA"])
if mode == "setup":
    iam = boto3.client("iam")
    role = iam.create_role(RoleName=base + "-role", AssumeRolePolicyDocument=json.dumps({
        "Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"},
                                                "Action": "sts:AssumeRole"}]}))["Role"]["Arn"]
    dlq = sqs.create_queue(QueueName=base + "-dlq")["QueueUrl"]
    target = sqs.create_queue(QueueName=base + "-target")["QueueUrl"]
    dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    z = io.BytesIO()
    with zipfile.ZipFile(z, "w") as f:
        f.writestr("app.py", "def handler(event, context):\n    return None\n")
    lam.create_function(FunctionName=base + "-fn", Runtime="python3.12", Role=role, Handler="app.handler",
                        Code={"ZipFile": z.getvalue()}, DeadLetterConfig={"TargetArn": dlq_arn})
    print(target)
    sys.exit(0)
start, count, how = int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
dlq = sqs.get_queue_url(QueueName=base + "-dlq")["QueueUrl"]
def event(i):
    return json.dumps({"order": i, "customer": f"c-{i % 97:03d}", "items": [{"sku": f"sku-{i % 13}", "qty": 1 + i % 4}],
                       "note": "x" * 200})
if how == "fake":
    import urllib.request
    fake = os.environ["AWS_ENDPOINT_URL_LAMBDA"]
    def control(method, path, body=None):
        rq = urllib.request.Request(fake + path, method=method, data=body and body.encode(),
                                    headers={"Content-Type": "application/json"})
        urllib.request.urlopen(rq).read()
    control("POST", f"/_fake/rules?function={base}-fn",
            json.dumps({"rules": [{"fail_if_contains": "{", "error_message": "bug before the fix"}]}))
    for i in range(start, start + count):
        lam.invoke(FunctionName=base + "-fn", InvocationType="Event", Payload=event(i).encode())
    control("DELETE", f"/_fake/rules?function={base}-fn")
    control("DELETE", f"/_fake/invocations?function={base}-fn")
else:
    for first in range(start, start + count, 10):
        entries = [{"Id": str(i), "MessageBody": event(i), "MessageAttributes": {
            "RequestID": {"DataType": "String", "StringValue": str(uuid.uuid4())},
            "ErrorCode": {"DataType": "Number", "StringValue": "200"},
            "ErrorMessage": {"DataType": "String", "StringValue": "bug before the fix"}}}
                   for i in range(first, min(start + count, first + 10))]
        r = sqs.send_message_batch(QueueUrl=dlq, Entries=entries)
        if r.get("Failed"):
            sys.exit(f"send_message_batch: {r['Failed']}")
PY
echo "setup: function $fn, $N messages into its DLQ ($FILL), archived $CHUNK at a time" >&2
target=$(python3 "$dir/fill.py" "$base" setup)
# moto's SQS calls slow down with the queue's depth (a receive takes about 0.9 s at 1,000 messages), so the
# DLQ is filled and archived CHUNK messages at a time, into the same archive.
mkdir -p "$dir/archive"
t_fill=$(now)
for ((start = 0; start < N; start += CHUNK)); do
  python3 "$dir/fill.py" "$base" fill "$start" "$((N - start < CHUNK ? N - start : CHUNK))" "$FILL"
  "$BIN" --log-level warn archive --queue "$base-dlq" --to "file://$dir/archive" --progress never >>"$dir/archive.out"
done
echo "filled and archived in $(python3 -c "print(round($(now) - $t_fill, 1))") s: $(grep -o 'archived [0-9]*' "$dir/archive.out" | awk '{s += $2} END {print s}') archived" >&2

# replay NAME ARGS...: the replay's stdout and stderr in DIR/NAME.out; sets rc, t_start, t_end.
replay() {
  local name=$1
  shift
  fake DELETE "/_fake/invocations?function=$fn" >/dev/null
  t_start=$(now)
  set +e
  "$BIN" --log-level warn replay --from "file://$dir/archive" --all "$@" --progress never >"$dir/$name.out" 2>&1
  rc=$?
  set -e
  t_end=$(now)
  fake GET "/_fake/invocations?function=$fn" >"$dir/$name.invocations"
}

# 1. Guarded redrive to the origin, the function fixed (every invocation succeeds).
echo "guarded --to-origin, the function fixed: $N messages, --canary $CANARY" >&2
replay origin --to-origin --canary "$CANARY" --window 1s --check 1s
origin=("$rc" "$t_start" "$t_end")
# 1b. The same to the origin without the guard (--again: 1 delivered them all), to tell sending from the guard's waits.
echo "unguarded --to-origin --no-canary --again: $N messages" >&2
replay unguarded --to-origin --no-canary --again
unguarded=("$rc" "$t_start" "$t_end")
# 2. Plain sending of the same archive to an SQS queue on the same moto.
echo "plain --to-queue --no-canary: $N messages" >&2
replay plain --to-queue "$target" --no-canary
plain=("$rc" "$t_start" "$t_end")
depth=$(aws --endpoint-url "$AWS_ENDPOINT_URL" sqs get-queue-attributes --queue-url "$target" --attribute-names ApproximateNumberOfMessages \
  --query Attributes.ApproximateNumberOfMessages --output text)
# 3. The bug still there: every payload fails; the same guarded redrive again (--again: 1 delivered them all).
echo "guarded --to-origin --again, the function failing every event" >&2
fake POST "/_fake/rules?function=$fn" '{"rules":[{"fail_if_contains":"{","error_message":"bug still there"}]}' >/dev/null
replay bad --to-origin --again --canary "$CANARY" --window 1s --check 1s
bad=("$rc" "$t_start" "$t_end")
fake DELETE "/_fake/rules?function=$fn" >/dev/null

set +e
python3 - "$N" "$CANARY" "$FILL" "$dir" "$depth" "${origin[@]}" "${plain[@]}" "${bad[@]}" "${unguarded[@]}" >"$dir/results.json" <<'PY'
import collections, json, re, sys
n, canary, fill, d, depth = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4], int(sys.argv[5])
runs = {name: (int(sys.argv[i]), float(sys.argv[i + 1]), float(sys.argv[i + 2]))
        for name, i in (("origin", 6), ("plain", 9), ("bad", 12), ("unguarded", 15))}
def summary(name):
    text = open(f"{d}/{name}.out").read()
    m = re.search(r"sent (\d+), failed (\d+)", text)
    s = re.search(r"\(sending: ([\d.]+) s, (\d+) msg/s\)", text)
    rc, t0, t1 = runs[name]
    out = {"exit_code": rc, "sent": int(m[1]) if m else None, "failed": int(m[2]) if m else None,
           "wall_seconds": round(t1 - t0, 2), "wall_per_s": round(n / (t1 - t0)),
           "send_seconds": float(s[1]) if s else None, "send_per_s": int(s[2]) if s else None}
    inv = json.load(open(f"{d}/{name}.invocations"))
    by = collections.Counter(f"{i['type']}/{i['outcome']}" for i in inv)
    return out, inv, dict(by)
origin, inv, by = summary("origin")
origin.update(invocations=len(inv), distinct_payloads=len({i["payload"] for i in inv}), by_type=by)
unguarded, uinv, uby = summary("unguarded")
unguarded.update(invocations=len(uinv), by_type=uby)
plain, _, _ = summary("plain")
plain.update(queue_depth=depth)
bad, bad_inv, bad_by = summary("bad")
bad.update(reached_function=len(bad_inv), by_type=bad_by, seconds_to_stop=bad.pop("wall_seconds"))
for k in ("wall_per_s", "send_seconds", "send_per_s"):
    bad.pop(k)
archived = sum(int(m) for m in re.findall(r"archived (\d+)", open(f"{d}/archive.out").read()))
res = {"messages": n, "archived": archived, "canary": canary, "fill": fill, "window": "1s", "check": "1s",
       "guarded_to_origin": origin, "unguarded_to_origin": unguarded, "plain_to_queue": plain, "bug_still_there": bad}
print(json.dumps(res, indent=2))
ok = (origin["exit_code"] == 0 and origin["sent"] == n and len(inv) == n and origin["distinct_payloads"] == n
      and by == {"RequestResponse/ok": canary, "Event/ok": n - canary}
      and unguarded["exit_code"] == 0 and unguarded["sent"] == n and uby == {"Event/ok": n}
      and plain["exit_code"] == 0 and plain["sent"] == n and depth == n
      and bad["exit_code"] == 5 and len(bad_inv) <= canary)
if not ok:
    print("a count is off", file=sys.stderr)
sys.exit(0 if ok else 1)
PY
rc=$?
set -e
cat "$dir/results.json"
cp "$dir/results.json" bench/replay/origin_results.json
exit $rc
