#!/usr/bin/env bash
# Monitor benchmark (issue 4): the `dlq-archive run` daemon watching 1,000 DLQs in fauxqs.
#
# Usage: bench/monitor/run.sh
#   env: QUEUES (1000)  ALARMED_EVERY (20: every 20th queue gets messages, 5%)  MESSAGES (3 per alarmed queue)
#        DURATION (90: measured window, seconds)  COLLECTION_INTERVAL (10)  SWEEP_INTERVAL (30)
#        READY_TIMEOUT (300)  SKIP_BUILD=1 (use build/dlq-archive as is)  KEEP_DATA=1 (keep queues and bucket)
#        PYTHON (python3: needs boto3 >= 1.34)  OUT (bench/monitor/out)  RESULTS (bench/monitor/results.json)
#        STAND_IN (fauxqs | moto)  MODE (archive | steady)
#   MODE=steady (issue 31): the daemon's defaults (COLLECTION_INTERVAL 60, SWEEP_INTERVAL 300, a state_dir),
#        DURATION 600 (one discovery), measured after SETTLE_CYCLES (2) collection cycles instead of after an
#        archive; DLQ_RETENTION / SOURCE_RETENTION (seconds; SOURCE_RETENTION > 0 gives every DLQ a source
#        queue, which fauxqs cannot report: it lacks ListDeadLetterSourceQueues); GROW_EVERY (0: unchanged;
#        G: every G-th queue gets a message every GROW_PERIOD (300) seconds during the window);
#        CLOUDWATCH_AGE=1 sets the group's cloudwatch_age (GetMetricData per queue per cycle; moto only).
# Builds (scripts/build, DLQ_BUILD_JOBS=1 by default), starts fauxqs if it is not running (and stops it at the end
# only then), creates the queues benchmon-<run>-q0000-dlq.. and a bucket, writes a config (OUT/config.yaml),
# starts the daemon, waits for /readyz and for the alarmed queues to be archived, measures DURATION seconds of
# steady state (CPU from /proc/PID/stat, peak RSS from /proc/PID/status, the rest from /metrics), stops the
# daemon with SIGTERM, deletes queues and bucket, prints a table and writes results.json.
# Exit 1 when a check fails: not ready, not all queues watched, alarmed messages not archived, AWS errors,
# daemon exit code != 0 after SIGTERM, or warn/error lines in the daemon log.
set -euo pipefail
cd "$(dirname "$0")/../.."
here=bench/monitor

QUEUES=${QUEUES:-1000}
ALARMED_EVERY=${ALARMED_EVERY:-20}
MESSAGES=${MESSAGES:-3}
DURATION=${DURATION:-90}
COLLECTION_INTERVAL=${COLLECTION_INTERVAL:-10}
SWEEP_INTERVAL=${SWEEP_INTERVAL:-30}
READY_TIMEOUT=${READY_TIMEOUT:-300}
PYTHON=${PYTHON:-python3}
STAND_IN=${STAND_IN:-fauxqs}
MODE=${MODE:-archive}
if [[ $MODE == steady ]]; then
  COLLECTION_INTERVAL=${COLLECTION_INTERVAL_STEADY:-60}
  SWEEP_INTERVAL=${SWEEP_INTERVAL_STEADY:-300}
  DURATION=${DURATION_STEADY:-600}
fi
SETTLE_CYCLES=${SETTLE_CYCLES:-2}
DLQ_RETENTION=${DLQ_RETENTION:-0}
SOURCE_RETENTION=${SOURCE_RETENTION:-0}
GROW_EVERY=${GROW_EVERY:-0}
GROW_PERIOD=${GROW_PERIOD:-300}
CLOUDWATCH_AGE=${CLOUDWATCH_AGE:-0}
OUT=${OUT:-$here/out}
RESULTS=${RESULTS:-$here/results.json}
mkdir -p "$OUT"

"$PYTHON" -c 'import boto3, sys; v = tuple(int(x) for x in boto3.__version__.split(".")[:2]); sys.exit(v < (1, 34))' ||
  { echo "error: $PYTHON needs boto3 >= 1.34 (fauxqs speaks the SQS JSON protocol only); set PYTHON" >&2; exit 1; }

if [[ "${SKIP_BUILD:-0}" != 1 ]]; then
  DLQ_BUILD_JOBS=${DLQ_BUILD_JOBS:-1} bash scripts/build >"$OUT/build.log" 2>&1 ||
    { tail -30 "$OUT/build.log" >&2; echo "error: build failed (log: $OUT/build.log)" >&2; exit 1; }
fi
bin=build/dlq-archive
[[ -x $bin ]] || { echo "error: $bin missing" >&2; exit 1; }

started_stand_in=0
if ! bash scripts/stand-ins status "$STAND_IN" >/dev/null 2>&1; then
  bash scripts/stand-ins start "$STAND_IN"
  started_stand_in=1
fi
# shellcheck disable=SC1090
. "$(bash scripts/stand-ins env "$STAND_IN")"
ep=$AWS_ENDPOINT_URL

run_id=$(date +%H%M%S)$$
prefix=benchmon-$run_id-
bucket=benchmon-$run_id
daemon_pid=
cleanup() {
  if [[ -n $daemon_pid ]] && kill -0 "$daemon_pid" 2>/dev/null; then kill -TERM "$daemon_pid"; wait "$daemon_pid" || true; fi
  if [[ "${KEEP_DATA:-0}" != 1 && -n ${setup_done:-} ]]; then
    "$PYTHON" $here/monitor.py cleanup --endpoint-url "$ep" --prefix "$prefix" --bucket "$bucket" || true
  fi
  if [[ $started_stand_in == 1 && "${KEEP_FAUXQS:-0}" != 1 ]]; then bash scripts/stand-ins stop "$STAND_IN" || true; fi
}
trap cleanup EXIT

echo "== monitor benchmark ($MODE): $QUEUES queues, every ${ALARMED_EVERY}th with $MESSAGES messages; $STAND_IN $ep"
echo "   prefix $prefix, bucket $bucket, load average $(cut -d' ' -f1-3 /proc/loadavg)"
setup_done=1
"$PYTHON" $here/monitor.py setup --endpoint-url "$ep" --prefix "$prefix" --bucket "$bucket" --queues "$QUEUES" \
  --alarmed-every "$ALARMED_EVERY" --messages "$MESSAGES" --dlq-retention "$DLQ_RETENTION" \
  --source-retention "$SOURCE_RETENTION" | tee "$OUT/setup.json"
expected_messages=$("$PYTHON" -c 'import json,sys; print(json.load(open(sys.argv[1]))["messages"])' "$OUT/setup.json")

port=$("$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat >"$OUT/config.yaml" <<YAML
# Written by bench/monitor/run.sh (run $run_id).
listen: 127.0.0.1:$port
collection_interval: ${COLLECTION_INTERVAL}s
sweep_interval: ${SWEEP_INTERVAL}s
log: { level: warn, format: json }
$([[ $MODE == steady ]] && echo "state_dir: $OUT/state-$run_id")
groups:
  - name: benchmon
    region: ${AWS_REGION:-us-east-1}
    endpoint_url: $ep
    prefixes: [$prefix]
    destination: s3://$bucket/dlq-archive
$([[ $CLOUDWATCH_AGE == 1 ]] && echo "    cloudwatch_age: true")
YAML
$bin check --config "$OUT/config.yaml" >"$OUT/check.txt" 2>&1 || true  # informative only (exit 1 = UNSAFE queues)

base=http://127.0.0.1:$port
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
t_start=$(date +%s.%N)
# The group's endpoint_url covers SQS only; --endpoint-url sends S3 to fauxqs too.
$bin --endpoint-url "$ep" run --config "$OUT/config.yaml" >"$OUT/daemon.stdout" 2>"$OUT/daemon.log" &
daemon_pid=$!
echo "== daemon pid $daemon_pid on $base (load average $load_start); waiting for /readyz"
ready=0
while (( $(echo "$(date +%s.%N) - $t_start < $READY_TIMEOUT" | bc) )); do
  kill -0 "$daemon_pid" 2>/dev/null || { echo "error: daemon exited early:" >&2; tail -20 "$OUT/daemon.log" >&2; exit 1; }
  if [[ $(curl -s -o /dev/null -w '%{http_code}' "$base/readyz" || true) == 200 ]]; then ready=1; break; fi
  sleep 0.2
done
t_ready=$(date +%s.%N)
ready_s=$(echo "$t_ready - $t_start" | bc)
[[ $ready == 1 ]] || { echo "error: not ready after ${READY_TIMEOUT}s: $(curl -s "$base/readyz")" >&2; exit 1; }
read -r ut st < <(awk '{print $14, $15}' "/proc/$daemon_pid/stat")  # no spaces in the comm "dlq-archive"
cpu_ready=$(echo "($ut + $st) / $(getconf CLK_TCK)" | bc -l)
curl -s "$base/metrics" >"$OUT/metrics-ready.txt"
printf '   ready after %.1f s, %.2f s CPU so far\n' "$ready_s" "$cpu_ready"

settle_args=(--settle-messages "$expected_messages")
if [[ $MODE == steady ]]; then
  settle_args=(--settle-messages 0 --settle-cycles "$SETTLE_CYCLES" --settle-timeout $((SETTLE_CYCLES * COLLECTION_INTERVAL + 300)))
  echo "== measuring ${DURATION}s of steady state (after $SETTLE_CYCLES collection cycles)"
else
  echo "== measuring ${DURATION}s of steady state (after $expected_messages messages are archived)"
fi
"$PYTHON" $here/monitor.py measure --pid "$daemon_pid" --base-url "$base" --duration "$DURATION" \
  --collection-interval "$COLLECTION_INTERVAL" "${settle_args[@]}" --queues "$QUEUES" \
  --grow-every "$GROW_EVERY" --grow-period "$GROW_PERIOD" --endpoint-url "$ep" --prefix "$prefix" >"$OUT/measure.json"
curl -s "$base/metrics" >"$OUT/metrics-end.txt"
curl -s "$base/api/queues" >"$OUT/api-queues.json" || true
uptime_end=$(uptime)

kill -TERM "$daemon_pid"
t_term=$(date +%s.%N)
rc=0; wait "$daemon_pid" || rc=$?
stop_s=$(echo "$(date +%s.%N) - $t_term" | bc)
daemon_pid=

"$PYTHON" - "$OUT" "$RESULTS" <<EOF
import json, sys, subprocess
out, results = sys.argv[1], sys.argv[2]
m = json.load(open(f"{out}/measure.json"))
setup = json.load(open(f"{out}/setup.json"))
log = open(f"{out}/daemon.log").read().splitlines()
levels = {}  # "level event" -> count
for line in log:
    try:
        j = json.loads(line)
        k = f'{j.get("level", "?")} {j.get("event", "?")}'
    except ValueError:
        k = "unparsed"
    levels[k] = levels.get(k, 0) + 1
# Expected at warn: one alarm_transition per alarmed queue. fauxqs answers ListDeadLetterSourceQueues with
# InvalidAction (not implemented by the stand-in); the daemon treats unknown sources as 14 days.
EXPECTED_LOG = ("warn alarm_transition",)
EXPECTED_AWS_ERRORS = ("sqs/ListDeadLetterSourceQueues/InvalidAction",)
steady = "$MODE" == "steady"
r = {
    "run_id": "$run_id",
    "mode": "$MODE",
    "stand_in": "$STAND_IN",
    "dlq_retention_s": $DLQ_RETENTION,
    "source_retention_s": $SOURCE_RETENTION,
    "grow_every": $GROW_EVERY,
    "grow_period_s": $GROW_PERIOD,
    "cloudwatch_age": $CLOUDWATCH_AGE == 1,
    "binary": "$bin",
    "binary_mtime": subprocess.run(["date", "-u", "-r", "$bin", "+%Y-%m-%dT%H:%M:%SZ"], capture_output=True,
                                   text=True).stdout.strip(),
    "git_head": subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip(),
    "queues_created": setup["queues"],
    "alarmed_queues": setup["alarmed_queues"],
    "messages_put": setup["messages"],
    "setup_seconds": setup["seconds"],
    "collection_interval_s": $COLLECTION_INTERVAL,
    "sweep_interval_s": $SWEEP_INTERVAL,
    "seconds_to_ready": round($ready_s, 1),
    "cpu_seconds_to_ready": round($cpu_ready, 2),
    **m,
    "sigterm_exit_code": $rc,
    "sigterm_stop_seconds": round($stop_s, 2),
    "daemon_log_lines_by_level": levels,
    "load_at_daemon_start": "$load_start".split(),
    "uptime_at_end": "$uptime_end".strip(),
}
receives = sum(v for k, v in r["aws_requests_per_minute_by_op"].items() if k.startswith("sqs/ReceiveMessage/"))
checks = {
    "ready": True,
    "all_queues_watched": r["queues_watched"] == r["queues_created"],
    "no_failed_messages": r["messages_failed_total"] == 0,
    "no_aws_errors": not any(not k.endswith("/OK") and k not in EXPECTED_AWS_ERRORS
                             for k in r["aws_requests_total_at_end"]),
    "sigterm_exit_0": $rc == 0,
    "no_unexpected_log_lines": not any(k not in EXPECTED_LOG for k in levels),
}
if steady:
    checks["settled"] = r["settled"]
    if not r["grow_every"]:
        checks["no_receive_in_window"] = receives == 0
else:
    checks["alarmed_messages_archived"] = r["messages_archived_total"] >= r["messages_put"] > 0
    checks["alarmed_messages_deleted"] = r["messages_deleted_total"] >= r["messages_put"]
r["checks"] = checks
json.dump(r, open(results, "w"), indent=1)
open(results, "a").write("\n")
rows = [
    ("queues created / watched", f"{r['queues_created']} / {r['queues_watched']:.0f}"),
    ("alarmed queues / messages put", f"{r['alarmed_queues']} / {r['messages_put']}"),
    ("messages archived / deleted / failed", f"{r['messages_archived_total']:.0f} / {r['messages_deleted_total']:.0f} / {r['messages_failed_total']:.0f}"),
    ("archive objects, runs", f"{r['objects_total']:.0f}, {r['archive_runs_total']}"),
    ("seconds to /readyz (CPU s)", f"{r['seconds_to_ready']} ({r['cpu_seconds_to_ready']})"),
    ("settle (archive) seconds", f"{r['settle_seconds']}"),
    ("measured window s / cycles", f"{r['window_seconds']} / {r['cycles']:.0f} (expected {r['cycles_expected']})"),
    ("CPU ms per cycle (user+sys)", f"{r['cpu_ms_per_cycle']} ({r['cpu_user_seconds_window']} + {r['cpu_sys_seconds_window']} s in window)"),
    ("CPU % of one core", f"{r['cpu_percent_of_one_core']}"),
    ("collection duration mean s (window)", f"{r['collection_seconds_mean_window']}"),
    ("AWS requests per minute", f"{r['aws_requests_per_minute']}"),
    ("  by service/operation/code", ", ".join(f"{k} {v}" for k, v in r['aws_requests_per_minute_by_op'].items())),
    ("  per queue per hour", ", ".join(f"{k} {v}" for k, v in r['aws_requests_per_queue_per_hour_by_op'].items())),
    ("grown queues / messages sent in window", f"{r['grown_queues']} / {r['grown_messages']}"),
    ("AWS requests per cycle", f"{r['aws_requests_per_cycle']}"),
    ("AWS non-OK calls since start", ", ".join(f"{k} {v:.0f}" for k, v in r['aws_requests_total_at_end'].items() if not k.endswith("/OK")) or "none"),
    ("peak RSS MiB (VmHWM)", f"{r['peak_rss_mib']} (RSS {r['rss_mib_start']} -> {r['rss_mib_end']})"),
    ("threads", f"{r['threads']}"),
    ("SIGTERM: exit code, seconds", f"{r['sigterm_exit_code']}, {r['sigterm_stop_seconds']}"),
    ("daemon log lines (level event: n)", f"{levels}"),
    ("uptime at end", r["uptime_at_end"]),
]
w = max(len(a) for a, _ in rows)
print()
for a, b in rows:
    print(f"{a:<{w}}  {b}")
print()
for k, v in checks.items():
    print(f"check {k}: {'ok' if v else 'FAILED'}")
sys.exit(0 if all(checks.values()) else 1)
EOF
