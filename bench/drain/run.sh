#!/usr/bin/env bash
# Drain benchmark (issue 3): dlq-archive vs the boto3 reference Lambda, both against fauxqs.
#
# Usage: bench/drain/run.sh [smoke]
#   env: N (200000; smoke: 2000)  CONCURRENCY (8)  BATCH (10000 messages per object)
#        BATCH_BYTES (8388608, uncompressed bytes per object, both sides)  GZIP_LEVEL (1)  SEED (1)
#        KEEP_DATA=1 (keep bucket and queues)  SKIP_BUILD=1 (use build/dlq-archive as is)
#        PROFILE=perf (also perf-record a second drain of A; PERF_EVENT (cpu-clock), PERF_FREQ (199 Hz);
#        inclusive per-function shares in OUT/perf-top.txt)
#        PYTHON (python3: must have boto3 >= 1.34)  OUT (bench/drain/out)  RESULTS (bench/drain/results.json)
#        BIN (build/dlq-archive)  SIDES (both; "ours" skips the reference drain, for before/after runs)
#        DLQ_RUN_DIR (where scripts/stand-ins keeps fauxqs.pid; /work/main/.run for the shared stand-ins)
#        DLQ_HTTP_CLIENT (curl|builtin: dlq-archive's HTTP client, passed through; recorded in results.json)
# Builds (scripts/build), starts fauxqs if it is not running (and stops it at the end only then), creates a
# bucket and two queues with unique bench- names, fills both with the same N messages, drains A with
# build/dlq-archive and B with reference_lambda.py, each under /usr/bin/time -v, checks both queues end empty and
# both archives hold N records, prints a table and writes results.json.
set -euo pipefail
cd "$(dirname "$0")/../.."
here=bench/drain

if [[ "${1:-}" == smoke ]]; then N=${N:-2000}; fi
N=${N:-200000}
CONCURRENCY=${CONCURRENCY:-8}
BATCH=${BATCH:-10000}
BATCH_BYTES=${BATCH_BYTES:-8388608}
GZIP_LEVEL=${GZIP_LEVEL:-1}
SEED=${SEED:-1}
PYTHON=${PYTHON:-python3}
OUT=${OUT:-$here/out}
RESULTS=${RESULTS:-$here/results.json}
mkdir -p "$OUT"

"$PYTHON" -c 'import boto3, sys; v = tuple(int(x) for x in boto3.__version__.split(".")[:2]); sys.exit(v < (1, 34))' ||
  { echo "error: $PYTHON needs boto3 >= 1.34 (fauxqs speaks the SQS JSON protocol only); set PYTHON" >&2; exit 1; }
[[ -x /usr/bin/time ]] || { echo "error: /usr/bin/time (GNU time) is missing" >&2; exit 1; }

if [[ "${SKIP_BUILD:-0}" != 1 ]]; then
  DLQ_BUILD_JOBS=${DLQ_BUILD_JOBS:-2} bash scripts/build >"$OUT/build.log" 2>&1 ||
    { tail -30 "$OUT/build.log" >&2; echo "error: build failed (log: $OUT/build.log)" >&2; exit 1; }
fi
bin=${BIN:-build/dlq-archive}
SIDES=${SIDES:-both}
[[ $SIDES == both || $SIDES == ours ]] || { echo "error: SIDES must be both or ours" >&2; exit 1; }
[[ -x $bin ]] || { echo "error: $bin missing" >&2; exit 1; }

started_fauxqs=0
if ! bash scripts/stand-ins status fauxqs >/dev/null 2>&1; then
  bash scripts/stand-ins start fauxqs
  started_fauxqs=1
fi
cleanup() {
  if [[ $started_fauxqs == 1 && "${KEEP_FAUXQS:-0}" != 1 ]]; then bash scripts/stand-ins stop fauxqs || true; fi
}
trap cleanup EXIT
# shellcheck disable=SC1090
. "$(bash scripts/stand-ins env fauxqs)"
ep=$AWS_ENDPOINT_URL
# fauxqs's own CPU (utime + stime of its Node process, in seconds) around each drain: the ceiling.
fauxqs_pid=$(cat "${DLQ_RUN_DIR:-.run}/fauxqs.pid" 2>/dev/null || true)
fauxqs_cpu() {
  if [[ -n $fauxqs_pid && -r /proc/$fauxqs_pid/stat ]]; then
    awk -v hz="$(getconf CLK_TCK)" '{ print ($14 + $15) / hz }' "/proc/$fauxqs_pid/stat"
  else
    echo -1
  fi
}

run_id=$(date +%H%M%S)-$$
qa=bench-drain-a-$run_id
qb=bench-drain-b-$run_id
bucket=bench-drain-$run_id
echo "== drain benchmark: N=$N CONCURRENCY=$CONCURRENCY BATCH=$BATCH BATCH_BYTES=$BATCH_BYTES gzip=$GZIP_LEVEL" \
  "http client=${DLQ_HTTP_CLIENT:-default}"
echo "   fauxqs $ep, queues $qa $qb, bucket $bucket"

# Python helper: setup / depth checks.
sqs_py() {
  "$PYTHON" - "$@" <<'EOF'
import json, sys, boto3
from botocore.config import Config
cmd, ep = sys.argv[1], sys.argv[2]
sqs = boto3.client("sqs", endpoint_url=ep, region_name="us-east-1")
s3 = boto3.client("s3", endpoint_url=ep, region_name="us-east-1", config=Config(s3={"addressing_style": "path"}))
if cmd == "setup":
    bucket, queues = sys.argv[3], sys.argv[4:]
    s3.create_bucket(Bucket=bucket)
    for q in queues:
        print(sqs.create_queue(QueueName=q, Attributes={"MessageRetentionPeriod": "345600"})["QueueUrl"])
elif cmd == "depth":
    out = {}
    for q in sys.argv[3:]:
        url = sqs.get_queue_url(QueueName=q)["QueueUrl"]
        names = ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
        a = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=names)["Attributes"]
        out[q] = int(a["ApproximateNumberOfMessages"]) + int(a["ApproximateNumberOfMessagesNotVisible"])
    print(json.dumps(out))
elif cmd == "delete":  # bucket (emptied first: fauxqs keeps everything in memory), then queues
    bucket = sys.argv[3]
    try:
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket):
            keys = [{"Key": o["Key"]} for o in page.get("Contents", [])]
            if keys:
                s3.delete_objects(Bucket=bucket, Delete={"Objects": keys})
        s3.delete_bucket(Bucket=bucket)
    except Exception as e:
        print(f"warning: delete bucket {bucket}: {e}", file=sys.stderr)
    for q in sys.argv[4:]:
        try:
            sqs.delete_queue(QueueUrl=sqs.get_queue_url(QueueName=q)["QueueUrl"])
        except Exception as e:
            print(f"warning: delete {q}: {e}", file=sys.stderr)
EOF
}

queues=("$qa")
[[ $SIDES == both ]] && queues+=("$qb")
mapfile -t urls < <(sqs_py setup "$ep" "$bucket" "${queues[@]}")

echo "== fill: $N messages into each of ${#queues[@]} queue(s) (same data, seed $SEED)"
fill_args=()
for u in "${urls[@]}"; do fill_args+=(--queue-url "$u"); done
"$PYTHON" $here/fill.py --endpoint-url "$ep" "${fill_args[@]}" --count "$N" --seed "$SEED" | tee "$OUT/fill.json"
depth=$(sqs_py depth "$ep" "${queues[@]}")
echo "   depth after fill: $depth"

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
echo "== drain A with $bin (load average $load_before)"
fx0=$(fauxqs_cpu)
/usr/bin/time -v -o "$OUT/ours.time" \
  $bin --endpoint-url "$ep" --region us-east-1 --log-level warn archive --queue "$qa" --to "s3://$bucket/ours" \
  --concurrency "$CONCURRENCY" --batch-max-messages "$BATCH" --batch-max-bytes "$BATCH_BYTES" \
  --gzip-level "$GZIP_LEVEL" --output json --progress never >"$OUT/ours.json" 2>"$OUT/ours.stderr" ||
  { echo "error: dlq-archive failed (exit $?):" >&2; cat "$OUT/ours.stderr" "$OUT/ours.json" >&2; exit 1; }

fx1=$(fauxqs_cpu)
load_mid=$(cut -d' ' -f1-3 /proc/loadavg)
if [[ $SIDES == both ]]; then
  echo "== drain B with reference_lambda.py (load average $load_mid)"
  /usr/bin/time -v -o "$OUT/ref.time" \
    "$PYTHON" $here/reference_lambda.py --endpoint-url "$ep" --queue "$qb" --bucket "$bucket" --prefix ref \
    --workers "$CONCURRENCY" --batch "$BATCH" --batch-max-bytes "$BATCH_BYTES" --gzip-level "$GZIP_LEVEL" \
    >"$OUT/ref.json" 2>"$OUT/ref.stderr" ||
    { echo "error: reference_lambda.py failed:" >&2; cat "$OUT/ref.stderr" >&2; exit 1; }
else
  rm -f "$OUT/ref.json" "$OUT/ref.time"
fi
fx2=$(fauxqs_cpu)
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

if [[ "${PROFILE:-}" == perf ]]; then
  echo "== profile: refill A, drain it again under perf record"
  "$PYTHON" $here/fill.py --endpoint-url "$ep" --queue-url "${urls[0]}" --count "$N" --seed "$((SEED + 1))" >/dev/null
  # DWARF unwinding: the Release build has no frame pointers. 199 Hz (PERF_FREQ) keeps perf.data small for N=200k.
  perf record -e "${PERF_EVENT:-cpu-clock}" -F "${PERF_FREQ:-199}" --call-graph dwarf,16384 -o "$OUT/perf.data" -- \
    $bin --endpoint-url "$ep" --region us-east-1 --log-level warn archive --queue "$qa" --to "s3://$bucket/prof" \
    --concurrency "$CONCURRENCY" --batch-max-messages "$BATCH" --batch-max-bytes "$BATCH_BYTES" \
    --gzip-level "$GZIP_LEVEL" --output json --progress never >"$OUT/prof.json" 2>"$OUT/perf.stderr"
  perf report -i "$OUT/perf.data" --children --sort symbol --stdio -g none --percent-limit 1 \
    >"$OUT/perf-report.txt" 2>/dev/null || true
  grep -v '^#' "$OUT/perf-report.txt" | grep -v '^$' | sed 's/ *- *- *$//' | cut -c1-150 | sed -n 1,80p \
    >"$OUT/perf-top.txt" || true
  echo "   perf report head: $OUT/perf-top.txt"
fi

echo "== verify"
depth_end=$(sqs_py depth "$ep" "${queues[@]}")
count_a=$("$PYTHON" $here/count_archive.py --endpoint-url "$ep" --bucket "$bucket" --prefix ours --queue "$qa")
count_b=null
if [[ $SIDES == both ]]; then
  count_b=$("$PYTHON" $here/count_archive.py --endpoint-url "$ep" --bucket "$bucket" --prefix ref --queue "$qb")
fi
echo "   depth after drains: $depth_end"
echo "   ours: $count_a"
echo "   ref:  $count_b"
[[ "${KEEP_DATA:-0}" == 1 ]] || sqs_py delete "$ep" "$bucket" "${queues[@]}"

"$PYTHON" - "$OUT" "$RESULTS" "$N" "$CONCURRENCY" "$BATCH" "$BATCH_BYTES" "$GZIP_LEVEL" "$depth_end" "$count_a" \
  "$count_b" "$load_before" "$load_mid" "$load_after" "$fx0" "$fx1" "$fx2" "$bin" <<'EOF'
import json, re, sys, datetime, os, platform
out, results, n, conc, batch, batch_bytes, gz = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:8])
depth_end, count_a, count_b = (json.loads(x) for x in sys.argv[8:11])
loads = dict(zip(("before_ours", "before_ref", "after_ref"), sys.argv[11:14]))
fx = [float(x) for x in sys.argv[14:17]]
binary = sys.argv[17]

def gnu_time(path):
    t = open(path).read()
    def num(label):
        return float(re.search(re.escape(label) + r": ([0-9.]+)", t).group(1))
    wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)", t).group(1)
    secs = 0.0
    for part in wall.split(":"):
        secs = secs * 60 + float(part)
    return {"user_s": num("User time (seconds)"), "sys_s": num("System time (seconds)"),
            "max_rss_mib": round(num("Maximum resident set size (kbytes)") / 1024, 1), "wall_s": secs}

both = os.path.exists(f"{out}/ref.json")
ours_t = gnu_time(f"{out}/ours.time")
ours_doc = json.load(open(f"{out}/ours.json"))
ours_j = ours_doc["queues"][0]
fill = json.load(open(f"{out}/fill.json"))

def side(t, archived, own_seconds, count, requests, fauxqs_cpu_s):
    cpu = t["user_s"] + t["sys_s"]
    per = lambda v: round(v / archived, 4) if archived else None
    return {"archived": archived, "wall_s": t["wall_s"], "own_seconds": own_seconds,
            "messages_per_s": round(archived / t["wall_s"], 1) if t["wall_s"] else None,
            "cpu_user_s": t["user_s"], "cpu_sys_s": t["sys_s"],
            "cpu_us_per_message": round(cpu / archived * 1e6, 2) if archived else None,
            "max_rss_mib": t["max_rss_mib"], "archive": count,
            # HTTP requests by API (retries included), and per archived message.
            "requests": requests, "requests_per_message": {k: per(v) for k, v in requests.items()},
            "requests_per_message_total": per(sum(requests.values())),
            # fauxqs's own CPU while this side drained (-1: its pid was not found).
            "fauxqs_cpu_s": round(fauxqs_cpu_s, 2) if fauxqs_cpu_s >= 0 else None,
            "fauxqs_cpu_us_per_message": round(fauxqs_cpu_s / archived * 1e6, 1)
            if fauxqs_cpu_s >= 0 and archived else None}

fx_ours = fx[1] - fx[0] if min(fx[0], fx[1]) >= 0 else -1
fx_ref = fx[2] - fx[1] if min(fx[1], fx[2]) >= 0 else -1
ours = side(ours_t, ours_j["archived"], ours_j["elapsed_ms"] / 1000, count_a, ours_doc.get("requests", {}), fx_ours)
ours.update({"objects": ours_j["objects"], "deleted": ours_j["deleted"], "duplicates": ours_j["duplicates"],
             "binary": binary,
             # Receivers receiving at the end: the governor's level (older builds: not reported).
             "receivers": ours_j.get("receivers")})
ref, ratio = None, None
if both:
    ref_t = gnu_time(f"{out}/ref.time")
    ref_j = json.load(open(f"{out}/ref.json"))
    ref = side(ref_t, ref_j["messages"], ref_j["seconds"], count_b, ref_j.get("requests", {}), fx_ref)
    ref["objects"] = ref_j["objects"]
    ratio = round(ours["messages_per_s"] / ref["messages_per_s"], 2) if ref["messages_per_s"] else None
checks = {
    "queues_empty": all(v == 0 for v in depth_end.values()),
    "ours_all_N_archived": count_a["unique_message_ids"] == n,
    "ours_records_valid": count_a["bad_records"] == 0 and count_a["unparseable_lines"] == 0,
    "ours_exit_0_drained": ours_doc.get("exit_code") == 0 and ours_j.get("drained") is True,
}
if both:
    checks["ref_all_N_archived"] = count_b["unique_message_ids"] == n
    checks["ref_records_valid"] = count_b["bad_records"] == 0 and count_b["unparseable_lines"] == 0
targets = {
    "cpu_us_per_message_le_15": ours["cpu_us_per_message"] is not None and ours["cpu_us_per_message"] <= 15,
    "peak_rss_lt_64_mib": ours["max_rss_mib"] < 64,
}
if both:
    targets["cpu_25x_less_than_reference"] = bool(ours["cpu_us_per_message"] and ref["cpu_us_per_message"] and
                                                  ref["cpu_us_per_message"] / ours["cpu_us_per_message"] >= 25)
res = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"), "host": platform.node(),
       "cpus": os.cpu_count(), "load_average": loads,
       "params": {"N": n, "CONCURRENCY": conc, "BATCH": batch, "BATCH_BYTES": batch_bytes, "GZIP_LEVEL": gz,
                  "DLQ_HTTP_CLIENT": os.environ.get("DLQ_HTTP_CLIENT") or "default"},
       "fill": fill, "ours": ours, "reference": ref, "throughput_ratio": ratio, "checks": checks, "targets": targets}
json.dump(res, open(results, "w"), indent=2)
print()
sides = [("dlq-archive", ours)] + ([("reference", ref)] if both else [])
print(f"{'':34}" + "".join(f"{name:>14}" for name, _ in sides))
rows = [("messages archived", "archived", "{:.0f}"), ("wall seconds", "wall_s", "{:.2f}"),
        ("messages/s (wall)", "messages_per_s", "{:.0f}"), ("CPU user s", "cpu_user_s", "{:.2f}"),
        ("CPU sys s", "cpu_sys_s", "{:.2f}"), ("CPU us/message", "cpu_us_per_message", "{:.1f}"),
        ("peak RSS MiB", "max_rss_mib", "{:.1f}"), ("objects", "objects", "{:.0f}"),
        ("fauxqs CPU us/message", "fauxqs_cpu_us_per_message", "{}"),
        ("requests/message (all)", "requests_per_message_total", "{}")]
for label, k, f in rows:
    print(f"{label:34}" + "".join(f"{f.format(d[k]) if d[k] is not None else '-':>14}" for _, d in sides))
apis = sorted(set().union(*(d["requests"].keys() for _, d in sides)))
for api in apis:
    cells = "".join(f"{d['requests_per_message'].get(api, 0):>14}" for _, d in sides)
    print(f"{'  ' + api + ' /message':34}{cells}")
if both:
    print(f"{'throughput ratio':34}{ratio:>14}")
print(f"checks:  {checks}")
print(f"targets: {targets}")
print(f"load average (1/5/15 min): {loads}")
print(f"written: {results}")
sys.exit(0 if all(checks.values()) else 1)
EOF
