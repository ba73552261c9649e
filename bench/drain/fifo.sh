#!/usr/bin/env bash
# FIFO DLQ drain benchmark (issue 7): build/dlq-archive draining a standard queue and FIFO queues with 1 and 100
# message groups (same N messages each) from fauxqs into fauxqs's S3, with default archive flags.
#
# Usage: bench/drain/fifo.sh [smoke]
#   env: N (20000; smoke: 1000)  RUNS (3; smoke: 1)  GROUPS_LIST ("1 100": FIFO group counts, each a case)
#        EXTRA_GROUPS ("10": more FIFO cases reported separately; "" for none. On fauxqs, 10 groups give 10
#        messages per receive then block, the shape of one group on real SQS: see README "FIFO DLQs")
#        SEED (1)  PYTHON (python3: boto3 >= 1.34)  OUT (${TMPDIR:-/tmp}/dlq-bench-fifo: outside the tree)
#        STANDIN (fauxqs; or moto: slow, but it returns up to 10 messages of one group per receive as SQS does)
#        RESULTS (OUT/fifo-results.json)  VERIFY_ARCHIVE=1 (also download and check every archive with
#        count_archive.py: slow for the 1-group case, one object per message)  KEEP_DATA=1  BIN (build/dlq-archive)
# Never builds and never stops fauxqs (starts it if it is not running). Per run, in order standard, FIFO cases:
# creates a queue, fills it with fill.py, checks the depth is N, drains it with
#   BIN --endpoint-url EP archive --queue Q --to s3://BUCKET/RUN-CASE --output json --progress never
# under /usr/bin/time -v, checks exit 0, archived and deleted >= N (at least once) and the queue ends at 0 visible + 0 in flight,
# then deletes the queue. Prints a table of medians over RUNS and writes RESULTS. Exit 1 if a check failed.
set -euo pipefail
cd "$(dirname "$0")/../.."
here=bench/drain

if [[ "${1:-}" == smoke ]]; then N=${N:-1000}; RUNS=${RUNS:-1}; fi
N=${N:-20000}
RUNS=${RUNS:-3}
GROUPS_LIST=${GROUPS_LIST:-1 100}
EXTRA_GROUPS=${EXTRA_GROUPS-10}
SEED=${SEED:-1}
PYTHON=${PYTHON:-python3}
OUT=${OUT:-${TMPDIR:-/tmp}/dlq-bench-fifo}
RESULTS=${RESULTS:-$OUT/fifo-results.json}
BIN=${BIN:-build/dlq-archive}
mkdir -p "$OUT"

"$PYTHON" -c 'import boto3, sys; v = tuple(int(x) for x in boto3.__version__.split(".")[:2]); sys.exit(v < (1, 34))' ||
  { echo "error: $PYTHON needs boto3 >= 1.34 (fauxqs speaks the SQS JSON protocol only); set PYTHON" >&2; exit 1; }
[[ -x /usr/bin/time ]] || { echo "error: /usr/bin/time (GNU time) is missing" >&2; exit 1; }

# The binary is rebuilt by others: wait for it if it is missing or being relinked.
wait_bin() {
  for _ in $(seq 1 60); do
    if [[ -x $BIN ]] && "$BIN" --help >/dev/null 2>&1; then return 0; fi
    sleep 5
  done
  echo "error: $BIN missing or not runnable for 5 minutes" >&2
  exit 1
}
wait_bin

STANDIN=${STANDIN:-fauxqs}
if ! bash scripts/stand-ins status "$STANDIN" >/dev/null 2>&1; then
  bash scripts/stand-ins start "$STANDIN"  # left running
fi
# shellcheck disable=SC1090
. "$(bash scripts/stand-ins env "$STANDIN")"
ep=$AWS_ENDPOINT_URL

run_id=$(date +%H%M%S)-$$
bucket=bench-fifo-$run_id
cases=(std)
for g in $GROUPS_LIST $EXTRA_GROUPS; do cases+=("fifo$g"); done
echo "== FIFO drain benchmark: N=$N RUNS=$RUNS cases: ${cases[*]}; $STANDIN $ep, bucket $bucket, $BIN"

sqs_py() {
  "$PYTHON" - "$@" <<'EOF'
import json, sys, boto3
from botocore.config import Config
cmd, ep = sys.argv[1], sys.argv[2]
sqs = boto3.client("sqs", endpoint_url=ep, region_name="us-east-1")
s3 = boto3.client("s3", endpoint_url=ep, region_name="us-east-1", config=Config(s3={"addressing_style": "path"}))
if cmd == "bucket":
    s3.create_bucket(Bucket=sys.argv[3])
elif cmd == "queue":  # name, fifo (0/1)
    attrs = {"MessageRetentionPeriod": "345600"}
    if sys.argv[4] == "1":
        attrs.update({"FifoQueue": "true", "ContentBasedDeduplication": "false"})
    print(sqs.create_queue(QueueName=sys.argv[3], Attributes=attrs)["QueueUrl"])
elif cmd == "depth":  # url -> {"visible": v, "in_flight": f}
    names = ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
    a = sqs.get_queue_attributes(QueueUrl=sys.argv[3], AttributeNames=names)["Attributes"]
    print(json.dumps({"visible": int(a[names[0]]), "in_flight": int(a[names[1]])}))
elif cmd == "delete-queue":
    sqs.delete_queue(QueueUrl=sys.argv[3])
elif cmd == "delete-bucket":  # emptied first: fauxqs keeps everything in memory
    bucket = sys.argv[3]
    try:
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket):
            keys = [{"Key": o["Key"]} for o in page.get("Contents", [])]
            for i in range(0, len(keys), 1000):
                s3.delete_objects(Bucket=bucket, Delete={"Objects": keys[i:i + 1000]})
        s3.delete_bucket(Bucket=bucket)
    except Exception as e:
        print(f"warning: delete bucket {bucket}: {e}", file=sys.stderr)
EOF
}

sqs_py bucket "$ep" "$bucket"
cleanup() { [[ "${KEEP_DATA:-0}" == 1 ]] || sqs_py delete-bucket "$ep" "$bucket"; }
trap cleanup EXIT

runs_file=$OUT/runs.jsonl
: >"$runs_file"
failed=0
for run in $(seq 1 "$RUNS"); do
  for c in "${cases[@]}"; do
    if [[ $c == std ]]; then groups=0; q=bench-fifo-$run_id-r$run-std; else groups=${c#fifo}; q=bench-fifo-$run_id-r$run-g$groups.fifo; fi
    url=$(sqs_py queue "$ep" "$q" "$((groups > 0))")
    fill_args=()
    ((groups > 0)) && fill_args=(--fifo --groups "$groups")
    "$PYTHON" $here/fill.py --endpoint-url "$ep" --queue-url "$url" --count "$N" --seed "$SEED" "${fill_args[@]}" \
      >"$OUT/fill-r$run-$c.json"
    depth0=$(sqs_py depth "$ep" "$url")
    wait_bin
    load=$(cut -d' ' -f1-3 /proc/loadavg)
    tag=r$run-$c
    echo "-- run $run $c: $q filled ($depth0, fill $(cut -c1-200 "$OUT/fill-$tag.json" | sed 's/.*"seconds": \([0-9.]*\).*/\1 s/')), load $load"
    rc=0
    /usr/bin/time -v -o "$OUT/$tag.time" \
      "$BIN" --endpoint-url "$ep" archive --queue "$q" --to "s3://$bucket/$tag" --output json --progress never \
      >"$OUT/$tag.json" 2>"$OUT/$tag.stderr" || rc=$?
    depth1=$(sqs_py depth "$ep" "$url")
    count='null'
    if [[ "${VERIFY_ARCHIVE:-0}" == 1 ]]; then
      count=$("$PYTHON" $here/count_archive.py --endpoint-url "$ep" --bucket "$bucket" --prefix "$tag" --queue "$q")
    fi
    [[ "${KEEP_DATA:-0}" == 1 ]] || sqs_py delete-queue "$ep" "$url"
    line=$("$PYTHON" - "$OUT" "$tag" "$c" "$groups" "$run" "$N" "$rc" "$depth0" "$depth1" "$load" "$count" <<'EOF'
import json, re, sys, datetime
out, tag, case, groups, run, n, rc = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]), int(sys.argv[7])
depth0, depth1, load, count = json.loads(sys.argv[8]), json.loads(sys.argv[9]), sys.argv[10], json.loads(sys.argv[11])
t = open(f"{out}/{tag}.time").read()
num = lambda label: float(re.search(re.escape(label) + r": ([0-9.]+)", t).group(1))
wall = 0.0
for part in re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)", t).group(1).split(":"):
    wall = wall * 60 + float(part)
try:
    q = json.load(open(f"{out}/{tag}.json"))["queues"][0]
except Exception:
    q = {}
# Drain phase from the log: archive.start to the last archive.object (excludes the end-of-queue detection).
stamps = {}
for l in open(f"{out}/{tag}.stderr"):
    m = re.match(r"(\S+Z) \w+\s+archive\.(start|object)\b", l)
    if m:
        ts = datetime.datetime.fromisoformat(m.group(1).replace("Z", "+00:00")).timestamp()
        stamps.setdefault(m.group(2), []).append(ts)
drain_s = (max(stamps["object"]) - min(stamps["start"])) if stamps.get("object") and stamps.get("start") else None
archived = q.get("archived", 0)
elapsed = q.get("elapsed_ms", 0) / 1000
rec = {"case": case, "groups": groups, "run": run, "n": n, "exit": rc, "result": q.get("result"),
       "archived": archived, "deleted": q.get("deleted"), "duplicates": q.get("duplicates"), "objects": q.get("objects"),
       "receive_calls": q.get("receive_calls"), "elapsed_s": elapsed, "wall_s": wall,
       "msg_per_s": round(archived / elapsed, 1) if elapsed else None,
       "drain_phase_s": round(drain_s, 3) if drain_s else None,
       "drain_phase_msg_per_s": round(archived / drain_s, 1) if drain_s else None,
       "cpu_user_s": num("User time (seconds)"), "cpu_sys_s": num("System time (seconds)"),
       "max_rss_mib": round(num("Maximum resident set size (kbytes)") / 1024, 1),
       "depth_before": depth0, "depth_after": depth1, "load_before": load,
       "fill": json.load(open(f"{out}/fill-{tag}.json")), "archive_check": count}
# At least once: a stand-in may hand one message to two receives at once (moto does, now and then), so a
# run may archive and delete a copy twice; with VERIFY_ARCHIVE the archive must hold exactly the N ids.
checks = {"exit_0": rc == 0, "archived_ge_n": archived >= n, "deleted_ge_n": (q.get("deleted") or 0) >= n,
          "filled_n": depth0["visible"] + depth0["in_flight"] == n,
          "queue_empty_after": depth1["visible"] == 0 and depth1["in_flight"] == 0}
if count is not None:
    checks["archive_has_n_ids"] = count.get("unique_message_ids") == n and count.get("bad_records") == 0 \
        and count.get("unparseable_lines") == 0
rec["checks"] = checks
rec["ok"] = all(checks.values())
print(json.dumps(rec))
print(f"   exit {rc} archived {archived} objects {rec['objects']} elapsed {elapsed:.2f}s -> {rec['msg_per_s']} msg/s "
      f"(drain phase {rec['drain_phase_s']}s -> {rec['drain_phase_msg_per_s']} msg/s), after: {depth1} "
      + ("ok" if rec["ok"] else f"CHECK FAILED {checks}"), file=sys.stderr)
EOF
)
    echo "$line" >>"$runs_file"
    grep -q '"ok": true' <<<"$line" || { failed=1; sed -n 1,20p "$OUT/$tag.stderr" | cut -c1-300 >&2; }
  done
done

"$PYTHON" - "$runs_file" "$RESULTS" "$N" "$RUNS" "$GROUPS_LIST" <<'EOF'
import json, sys, statistics, datetime, os, platform
runs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
results, n, nruns, main_groups = sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), [int(g) for g in sys.argv[5].split()]
cases = list(dict.fromkeys(r["case"] for r in runs))
med = lambda xs: statistics.median(xs) if xs else None
summary = {}
for c in cases:
    rs = [r for r in runs if r["case"] == c]
    summary[c] = {"groups": rs[0]["groups"], "runs": len(rs), "ok": all(r["ok"] for r in rs),
                  "msg_per_s": med([r["msg_per_s"] for r in rs if r["msg_per_s"]]),
                  "msg_per_s_all": [r["msg_per_s"] for r in rs],
                  "elapsed_s": med([r["elapsed_s"] for r in rs]),
                  "drain_phase_msg_per_s": med([r["drain_phase_msg_per_s"] for r in rs if r["drain_phase_msg_per_s"]]),
                  "objects": med([r["objects"] for r in rs if r["objects"] is not None]),
                  "loads": [r["load_before"] for r in rs]}
std = summary["std"]
for c, s in summary.items():
    s["ratio_vs_std"] = round(s["msg_per_s"] / std["msg_per_s"], 3) if s["msg_per_s"] and std["msg_per_s"] else None
    s["drain_phase_ratio_vs_std"] = (round(s["drain_phase_msg_per_s"] / std["drain_phase_msg_per_s"], 3)
                                     if s["drain_phase_msg_per_s"] and std["drain_phase_msg_per_s"] else None)
target = {f"fifo{g}_ge_half_std": (summary.get(f"fifo{g}", {}).get("ratio_vs_std") or 0) >= 0.5 for g in main_groups}
res = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"), "host": platform.node(),
       "cpus": os.cpu_count(), "n": n, "runs": nruns, "summary": summary, "target_met": target, "all_runs": runs}
json.dump(res, open(results, "w"), indent=2)
print()
print(f"N={n}, {nruns} run(s) per case, medians (msg/s = archived / elapsed_ms of the run; drain phase = start to last object)")
print(f"{'case':10}{'msg/s':>10}{'ratio':>8}{'elapsed s':>11}{'phase msg/s':>13}{'ratio':>8}{'objects':>9}  checks  load before each run")
for c, s in summary.items():
    print(f"{c:10}{s['msg_per_s']:>10.0f}{s['ratio_vs_std']:>8.3f}{s['elapsed_s']:>11.2f}"
          f"{(s['drain_phase_msg_per_s'] or 0):>13.0f}{(s['drain_phase_ratio_vs_std'] or 0):>8.3f}{s['objects']:>9.0f}"
          f"  {'ok' if s['ok'] else 'FAILED'}  {' | '.join(s['loads'])}")
print(f"target (FIFO >= 0.5 x standard, msg/s): {target}")
print(f"written: {results}")
EOF
exit $failed
