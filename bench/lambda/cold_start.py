#!/usr/bin/env python3
"""Cold start: process start to the first GET /runtime/invocation/next.

Serves a fake Runtime API on 127.0.0.1 that answers the first /next with 410
(so the runtime exits), spawns the runtime, and takes the time between the
spawn and the arrival of that request. Runs each contender RUNS times:

  dlq-archive   the packaged bootstrap (unpacked zip), clean environment
  python-boto3  python3 importing boto3 and building SQS and S3 clients, then
                polling /next with urllib: what a Python function doing the
                same job pays before its first poll

Usage: bench/lambda/cold_start.py UNPACKED_ZIP_DIR [RUNS]
Prints one JSON document with the median, p90, min and max in ms (wall time to
the first /next), the median CPU time of the process, and the load average.
"""
import http.server
import json
import os
import statistics
import subprocess
import sys
import threading
import time

PY_RUNTIME = r'''
import os, urllib.request
import boto3
sqs = boto3.client("sqs")
s3 = boto3.client("s3")
try:
    urllib.request.urlopen("http://%s/2018-06-01/runtime/invocation/next" % os.environ["AWS_LAMBDA_RUNTIME_API"])
except Exception:
    pass
'''


class Handler(http.server.BaseHTTPRequestHandler):
    arrived = None

    def do_GET(self):
        if Handler.arrived is None:
            Handler.arrived = time.perf_counter()
        self.send_response(410)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self):
        self.send_response(202)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def scheduler():
    """The policy the measurement ran under: "SCHED_FIFO" when started with
    `chrt -f N` (the other jobs of a shared machine then cannot delay it),
    else "SCHED_OTHER" (the wall times include waiting for a CPU)."""
    return {os.SCHED_FIFO: "SCHED_FIFO", os.SCHED_RR: "SCHED_RR"}.get(os.sched_getscheduler(0), "SCHED_OTHER")


def measure(cmd, cwd, env, runs):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    env = dict(env, AWS_LAMBDA_RUNTIME_API="127.0.0.1:%d" % server.server_address[1])
    out, cpu = [], []
    for _ in range(runs):
        Handler.arrived = None
        start = time.perf_counter()
        p = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _, _, usage = os.wait4(p.pid, 0)
        if Handler.arrived is None:
            raise SystemExit("no /next request from %s" % cmd)
        out.append((Handler.arrived - start) * 1000)
        cpu.append((usage.ru_utime + usage.ru_stime) * 1000)
    server.shutdown()
    out.sort()
    return {"runs": runs, "median_ms": round(statistics.median(out), 2),
            "p90_ms": round(out[int(0.9 * (runs - 1))], 2), "min_ms": round(out[0], 2), "max_ms": round(out[-1], 2),
            # CPU time of the whole process (to its exit), less sensitive to a loaded machine
            "cpu_median_ms": round(statistics.median(cpu), 2)}


def main():
    unpacked = sys.argv[1]
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    base = {"PATH": "/usr/bin:/bin", "AWS_REGION": "us-east-1", "AWS_DEFAULT_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "x",
            "AWS_SECRET_ACCESS_KEY": "y", "DLQ_ARCHIVE_DESTINATION": "s3://bench-bucket/p",
            "DLQ_ARCHIVE_QUEUES": "a-dlq", "AWS_LAMBDA_FUNCTION_NAME": "dlq-archive",
            "LAMBDA_TASK_ROOT": os.path.abspath(unpacked)}  # Lambda sets it
    result = {
        "dlq-archive": measure(["./bootstrap"], unpacked, base, runs),
        "python-boto3": measure([sys.executable, "-c", PY_RUNTIME], unpacked, base, runs),
    }
    import boto3  # noqa: F401  (version for the record)
    result["python"] = sys.version.split()[0]
    result["boto3"] = boto3.__version__
    result["load_average"] = os.getloadavg()
    result["cpus"] = os.cpu_count()
    result["scheduler"] = scheduler()
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
