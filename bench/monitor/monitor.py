#!/usr/bin/env python3
"""Helper for bench/monitor/run.sh (issue 4): fleet setup/cleanup in fauxqs and the daemon measurement.

  monitor.py setup   --endpoint-url URL --prefix P --bucket B [--queues 1000] [--alarmed-every 20] [--messages 3]
                     [--dlq-retention R] [--source-retention S]
      Creates queues P-q0000-dlq .. (thread pool), puts --messages messages into every --alarmed-every-th queue
      and creates bucket B. With --source-retention S > 0 each DLQ gets a source queue srcP-q0000 (outside the
      prefix) keeping messages S seconds with a RedrivePolicy naming the DLQ; --dlq-retention R > 0 sets the
      DLQs' MessageRetentionPeriod. Prints JSON {queues, alarmed_queues, messages, seconds}.
  monitor.py cleanup --endpoint-url URL --prefix P --bucket B
      Deletes every queue whose name starts with P or srcP (ListQueues prefix), and bucket B with its objects.
      Prints JSON {queues_deleted, objects_deleted}.
  monitor.py measure --pid PID --base-url http://HOST:PORT --duration S --settle-messages N [--settle-timeout S]
                     [--settle-cycles C] [--grow-every G --grow-period P --endpoint-url URL --prefix P]
      Waits until dlq_archive_messages_archived_total reaches N and no alarm is in ALARM (the alarmed queues are
      archived), or with --settle-cycles C > 0 until C collection cycles have ended (steady state: nothing is
      archived), then takes /proc/PID/stat + /metrics at t0 and t1 = t0 + S and prints a JSON object with the
      deltas. With --grow-every G > 0, every G-th queue (G/2, G/2 + G, ...) gets one message every P seconds
      during the window.

Needs boto3 >= 1.34 (fauxqs speaks the SQS JSON protocol only): run with the image's `python3`.
"""
import argparse
import json
import os
import re
import sys
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor

CLK_TCK = os.sysconf("SC_CLK_TCK")


def clients(endpoint):
    import boto3
    from botocore.config import Config
    cfg = Config(retries={"max_attempts": 10, "mode": "standard"}, max_pool_connections=32,
                 s3={"addressing_style": "path"})
    kw = dict(endpoint_url=endpoint, region_name=os.environ.get("AWS_REGION", "us-east-1"), config=cfg)
    return boto3.client("sqs", **kw), boto3.client("s3", **kw)


def queue_name(prefix, i):
    return f"{prefix}q{i:04d}-dlq"


def cmd_setup(a):
    sqs, s3 = clients(a.endpoint_url)  # boto3 clients are thread-safe; one shared client, one connection pool
    t0 = time.monotonic()
    s3.create_bucket(Bucket=a.bucket)
    alarmed = [i for i in range(a.queues) if i % a.alarmed_every == 0]
    dlq_attrs = {"MessageRetentionPeriod": str(a.dlq_retention)} if a.dlq_retention > 0 else {}

    def one(i):
        url = sqs.create_queue(QueueName=queue_name(a.prefix, i), Attributes=dlq_attrs)["QueueUrl"]
        if a.source_retention > 0:
            arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
            policy = json.dumps({"deadLetterTargetArn": arn, "maxReceiveCount": "3"})
            sqs.create_queue(QueueName=f"src{a.prefix}q{i:04d}",
                             Attributes={"MessageRetentionPeriod": str(a.source_retention), "RedrivePolicy": policy})
        if i % a.alarmed_every == 0:
            entries = [{"Id": str(k), "MessageBody": f"benchmon {a.prefix} queue {i} message {k}"}
                       for k in range(a.messages)]
            for s in range(0, len(entries), 10):
                r = sqs.send_message_batch(QueueUrl=url, Entries=entries[s:s + 10])
                if r.get("Failed"):
                    raise RuntimeError(f"send to {url}: {r['Failed']}")
        return url

    with ThreadPoolExecutor(a.threads) as ex:
        urls = list(ex.map(one, range(a.queues)))
    print(json.dumps({"queues": len(urls), "alarmed_queues": len(alarmed),
                      "messages": len(alarmed) * a.messages, "seconds": round(time.monotonic() - t0, 2)}))


def list_queues(sqs, prefix):
    urls = []
    for page in sqs.get_paginator("list_queues").paginate(QueueNamePrefix=prefix, PaginationConfig={"PageSize": 1000}):
        urls += page.get("QueueUrls", [])
    return urls


def cmd_cleanup(a):
    sqs, s3 = clients(a.endpoint_url)
    objects = 0
    try:
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=a.bucket):
            keys = [{"Key": o["Key"]} for o in page.get("Contents", [])]
            if keys:
                s3.delete_objects(Bucket=a.bucket, Delete={"Objects": keys})
                objects += len(keys)
        s3.delete_bucket(Bucket=a.bucket)
    except Exception as e:  # noqa: BLE001 (best effort: report and go on with the queues)
        print(f"warning: delete bucket {a.bucket}: {e}", file=sys.stderr)
    urls = list_queues(sqs, a.prefix) + list_queues(sqs, "src" + a.prefix)

    def rm(url):
        try:
            sqs.delete_queue(QueueUrl=url)
            return 1
        except Exception as e:  # noqa: BLE001
            print(f"warning: delete {url}: {e}", file=sys.stderr)
            return 0

    with ThreadPoolExecutor(a.threads) as ex:
        n = sum(ex.map(rm, urls))
    left = len(list_queues(sqs, a.prefix)) + len(list_queues(sqs, "src" + a.prefix))
    print(json.dumps({"queues_deleted": n, "queues_left": left, "objects_deleted": objects}))


# ---- measurement -------------------------------------------------------------------------------------------------

SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def scrape(base):
    with urllib.request.urlopen(base + "/metrics", timeout=10) as r:
        text = r.read().decode()
    out = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = SAMPLE.match(line)
        if m:
            out.append((m.group(1), dict(LABEL.findall(m.group(2) or "")), float(m.group(3))))
    return out


def total(samples, name, **match):
    return sum(v for n, l, v in samples if n == name and all(l.get(k) == w for k, w in match.items()))


def by(samples, name, keys):
    d = {}
    for n, l, v in samples:
        if n == name:
            k = "/".join(l.get(x, "") for x in keys)
            d[k] = d.get(k, 0.0) + v
    return d


def proc_cpu(pid):
    with open(f"/proc/{pid}/stat") as f:
        rest = f.read().rsplit(")", 1)[1].split()
    return int(rest[11]) / CLK_TCK, int(rest[12]) / CLK_TCK  # utime, stime (fields 14, 15)


def proc_status(pid):
    d = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            d[k] = v.strip()
    kib = lambda k: int(d[k].split()[0]) if k in d else None  # noqa: E731
    return {"VmHWM_kib": kib("VmHWM"), "VmRSS_kib": kib("VmRSS"), "threads": int(d.get("Threads", 0))}


def snapshot(pid, base):
    t = time.monotonic()
    u, s = proc_cpu(pid)
    m = scrape(base)
    return {"t": t, "utime": u, "stime": s, "metrics": m, "status": proc_status(pid),
            "load": open("/proc/loadavg").read().split()[:3]}


class Grower(threading.Thread):
    """Sends one message to every G-th queue every P seconds until stopped (the growing DLQs)."""

    def __init__(self, a):
        super().__init__(daemon=True)
        self.a, self.stop, self.sent, self.errors = a, threading.Event(), 0, []
        self.sqs, _ = clients(a.endpoint_url)
        self.urls = [self.sqs.get_queue_url(QueueName=queue_name(a.prefix, i))["QueueUrl"]
                     for i in range(a.grow_every // 2, a.queues, a.grow_every)]

    def run(self):
        while not self.stop.is_set():
            for url in self.urls:
                try:
                    self.sqs.send_message(QueueUrl=url, MessageBody=f"benchmon growing {self.sent}")
                    self.sent += 1
                except Exception as e:  # noqa: BLE001 (counted and reported)
                    self.errors.append(str(e))
            self.stop.wait(self.a.grow_period)


def settle(a, base):
    """Waits for the state the window should measure; returns (seconds, archived, settled)."""
    t_settle = time.monotonic()
    archived, settled = 0.0, False
    cycles0 = total(scrape(base), "dlq_archive_collection_duration_seconds_count")
    while time.monotonic() - t_settle < a.settle_timeout:
        m = scrape(base)
        archived = total(m, "dlq_archive_messages_archived_total")
        if a.settle_cycles > 0:
            # Steady state: the first cycles' learning passes (if any) have ended.
            settled = total(m, "dlq_archive_collection_duration_seconds_count") - cycles0 >= a.settle_cycles
        else:
            # Also wait for every alarm to return to OK: while in ALARM, each sweep re-runs an archive on the queue.
            settled = archived >= a.settle_messages and total(m, "dlq_archive_alarm_state", state="ALARM") == 0
        if settled:
            break
        time.sleep(2)
    return time.monotonic() - t_settle, archived, settled


def cmd_measure(a):
    base, pid = a.base_url, a.pid
    # Settle: the alarmed queues are archived on the first evaluation (or, in steady state, learnt); wait for
    # that so the window measures the steady state (queues being watched), not the archive runs.
    settle_s, archived, settled = settle(a, base)
    grower = Grower(a) if a.grow_every > 0 else None
    time.sleep(1)
    s0 = snapshot(pid, base)
    if grower:
        grower.start()
    # Sample RSS while waiting (VmHWM is the peak anyway; the samples show whether it grows).
    rss = []
    while time.monotonic() - s0["t"] < a.duration:
        time.sleep(min(5, max(0.1, a.duration - (time.monotonic() - s0["t"]))))
        rss.append(proc_status(pid)["VmRSS_kib"])
    if grower:
        grower.stop.set()
        grower.join()
    s1 = snapshot(pid, base)
    dt = s1["t"] - s0["t"]
    m0, m1 = s0["metrics"], s1["metrics"]
    cyc = total(m1, "dlq_archive_collection_duration_seconds_count") - \
        total(m0, "dlq_archive_collection_duration_seconds_count")
    cyc_sum = total(m1, "dlq_archive_collection_duration_seconds_sum") - \
        total(m0, "dlq_archive_collection_duration_seconds_sum")
    cpu = (s1["utime"] + s1["stime"]) - (s0["utime"] + s0["stime"])
    r0 = by(m0, "dlq_archive_aws_requests_total", ["service", "operation", "code"])
    r1 = by(m1, "dlq_archive_aws_requests_total", ["service", "operation", "code"])
    per_min = {k: round((r1.get(k, 0) - r0.get(k, 0)) / (dt / 60), 1) for k in sorted(set(r0) | set(r1))
               if r1.get(k, 0) - r0.get(k, 0) > 0}
    errors_window = {k: v for k, v in per_min.items() if not k.endswith("/OK")}
    # Collection histogram buckets at t1 (cumulative over the process life).
    buckets = {l["le"]: v for n, l, v in m1 if n == "dlq_archive_collection_duration_seconds_bucket"}
    out = {
        "settle_seconds": round(settle_s, 1),
        "settled": settled,
        "grown_queues": len(grower.urls) if grower else 0,
        "grown_messages": grower.sent if grower else 0,
        "grow_errors": grower.errors[:5] if grower else [],
        "queues_in_window": a.queues,
        "window_seconds": round(dt, 1),
        "cycles": cyc,
        "cycles_expected": round(dt / a.collection_interval, 2),
        "cpu_seconds_window": round(cpu, 3),
        "cpu_user_seconds_window": round(s1["utime"] - s0["utime"], 3),
        "cpu_sys_seconds_window": round(s1["stime"] - s0["stime"], 3),
        "cpu_ms_per_cycle": round(1000 * cpu / cyc, 1) if cyc else None,
        "cpu_percent_of_one_core": round(100 * cpu / dt, 2),
        "cpu_seconds_total_at_end": round(s1["utime"] + s1["stime"], 3),
        "collection_seconds_mean_window": round(cyc_sum / cyc, 4) if cyc else None,
        "collection_count_total": total(m1, "dlq_archive_collection_duration_seconds_count"),
        "collection_seconds_sum_total": round(total(m1, "dlq_archive_collection_duration_seconds_sum"), 3),
        "collection_buckets_total": buckets,
        "aws_requests_per_minute": round(sum(per_min.values()), 1),
        "aws_requests_per_minute_by_op": per_min,
        "aws_requests_per_queue_per_minute_by_op": {k: round(v / a.queues, 4) for k, v in per_min.items()},
        "aws_requests_per_queue_per_hour_by_op": {k: round(60 * v / a.queues, 3) for k, v in per_min.items()},
        "aws_requests_per_cycle": round(sum(r1.get(k, 0) - r0.get(k, 0) for k in r1) / cyc, 1) if cyc else None,
        "aws_non_ok_per_minute": errors_window,
        "aws_requests_total_at_end": by(m1, "dlq_archive_aws_requests_total", ["service", "operation", "code"]),
        "aws_retries_total_at_end": by(m1, "dlq_archive_aws_retries_total", ["service", "operation"]),
        "peak_rss_mib": round(s1["status"]["VmHWM_kib"] / 1024, 1),
        "rss_mib_start": round(s0["status"]["VmRSS_kib"] / 1024, 1),
        "rss_mib_end": round(s1["status"]["VmRSS_kib"] / 1024, 1),
        "rss_mib_samples": [round(x / 1024, 1) for x in rss if x],
        "threads": s1["status"]["threads"],
        "queues_watched": total(m1, "dlq_archive_queues_watched"),
        "messages_archived_total": total(m1, "dlq_archive_messages_archived_total"),
        "messages_deleted_total": total(m1, "dlq_archive_messages_deleted_total"),
        "messages_failed_total": total(m1, "dlq_archive_messages_failed_total"),
        "objects_total": total(m1, "dlq_archive_objects_total"),
        "archive_runs_total": by(m1, "dlq_archive_archive_runs_total", ["result"]),
        "queues_in_alarm_at_end": int(total(m1, "dlq_archive_alarm_state", state="ALARM")),
        "queues_with_visible_messages_at_end": sum(1 for n, l, v in m1 if n == "dlq_archive_queue_messages"
                                                   and l.get("state") == "visible" and v > 0),
        "load_start": s0["load"],
        "load_end": s1["load"],
    }
    print(json.dumps(out, indent=1))


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    for name in ("setup", "cleanup"):
        q = sub.add_parser(name)
        q.add_argument("--endpoint-url", required=True)
        q.add_argument("--prefix", required=True)
        q.add_argument("--bucket", required=True)
        q.add_argument("--threads", type=int, default=16)
        if name == "setup":
            q.add_argument("--queues", type=int, default=1000)
            q.add_argument("--alarmed-every", type=int, default=20)
            q.add_argument("--messages", type=int, default=3)
            q.add_argument("--dlq-retention", type=int, default=0)
            q.add_argument("--source-retention", type=int, default=0)
    q = sub.add_parser("measure")
    q.add_argument("--pid", type=int, required=True)
    q.add_argument("--base-url", required=True)
    q.add_argument("--duration", type=float, default=90)
    q.add_argument("--collection-interval", type=float, default=10)
    q.add_argument("--settle-messages", type=float, required=True)
    q.add_argument("--settle-timeout", type=float, default=300)
    q.add_argument("--settle-cycles", type=int, default=0)
    q.add_argument("--queues", type=int, default=1000)
    q.add_argument("--grow-every", type=int, default=0)
    q.add_argument("--grow-period", type=float, default=900)
    q.add_argument("--endpoint-url")
    q.add_argument("--prefix")
    a = p.parse_args()
    {"setup": cmd_setup, "cleanup": cmd_cleanup, "measure": cmd_measure}[a.cmd](a)


if __name__ == "__main__":
    main()
