#!/usr/bin/env python3
"""Cold start of several unpacked Lambda packages, side by side.

Runs cold_start.measure on each package in turn, ROUNDS times (alternating,
so that a change in the machine's load hits them alike), RUNS spawns per
round, and prints for each package the median of the round medians (wall time
to the first /next, and CPU time of the process), the rounds themselves, and
the load average before and after.

Usage: bench/lambda/compare.py ROUNDS RUNS NAME=UNPACKED_DIR [NAME=UNPACKED_DIR ...]
"""
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cold_start  # noqa: E402


def main():
    rounds, runs = int(sys.argv[1]), int(sys.argv[2])
    packages = dict(arg.split("=", 1) for arg in sys.argv[3:])
    load_before = os.getloadavg()
    seen = {name: {"wall": [], "cpu": []} for name in packages}
    for _ in range(rounds):
        for name, unpacked in packages.items():
            env = {"PATH": "/usr/bin:/bin", "AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "x",
                   "AWS_SECRET_ACCESS_KEY": "y", "DLQ_ARCHIVE_DESTINATION": "s3://bench-bucket/p",
                   "DLQ_ARCHIVE_QUEUES": "a-dlq", "AWS_LAMBDA_FUNCTION_NAME": "dlq-archive",
                   "LAMBDA_TASK_ROOT": os.path.abspath(unpacked)}
            r = cold_start.measure(["./bootstrap"], unpacked, env, runs)
            seen[name]["wall"].append(r["median_ms"])
            seen[name]["cpu"].append(r["cpu_median_ms"])
    result = {name: {"libraries": len(os.listdir(os.path.join(packages[name], "lib"))),
                     "wall_median_ms": round(statistics.median(s["wall"]), 2), "wall_rounds_ms": s["wall"],
                     "cpu_median_ms": round(statistics.median(s["cpu"]), 2), "cpu_rounds_ms": s["cpu"]}
              for name, s in seen.items()}
    result.update({"rounds": rounds, "runs_per_round": runs, "load_average_before": load_before,
                   "load_average_after": os.getloadavg(), "cpus": os.cpu_count(),
                   "scheduler": cold_start.scheduler()})
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
