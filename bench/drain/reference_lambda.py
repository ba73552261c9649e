#!/usr/bin/env python3
"""Reference implementation of the "reference design's Lambda" (a boto3 DLQ-to-S3 archiver), for the drain benchmark.

Each of --workers threads (like a Lambda invocation each) repeats:
  ReceiveMessage (10 per call, every system and message attribute, long poll --wait-time) until it holds
  --batch messages or --batch-max-bytes of JSON, or a receive comes back empty
  -> one JSON line per message with json.dumps (the record fields of doc/archive-format.md)
  -> gzip -> S3 PutObject at {prefix}/{queue}/{yyyymmdd}/{queue}-{hhmmss}-{batch_id}.json.gz
  -> DeleteMessageBatch (10 per call, failed entries retried).
A worker stops after --empty-receives consecutive empty collection rounds when ApproximateNumberOfMessages is 0.

Same knobs as `dlq-archive archive`: --workers = --concurrency, --batch = --batch-max-messages, --batch-max-bytes
(default 8 MiB, as ours), --gzip-level (default 1, as ours; a stock Lambda would call gzip.compress() at level 9,
which is slower).
Needs boto3 >= 1.34 (AWS JSON protocol for SQS): the image's `python3`.

Usage: reference_lambda.py --endpoint-url URL --queue NAME --bucket B [--prefix P] [--workers 8] [--batch 10000]
Prints JSON {messages, objects, seconds, messages_per_s, requests}: requests counts HTTP requests by
"service.Operation" (boto3's before-send event: retries included, setup calls too).
"""
import argparse
import base64
import datetime as dt
import gzip
import json
import secrets
import socket
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import boto3
from botocore.config import Config


def iso_ms(ms):
    t = dt.datetime.fromtimestamp(ms / 1000.0, tz=dt.timezone.utc)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{int(ms) % 1000:03d}Z"


def now_ms():
    return int(time.time() * 1000)


def is_extended_pointer(body, mattrs):
    if "ExtendedPayloadSize" in mattrs or "SQSLargePayloadSize" in mattrs:
        return True
    return body.startswith('["software.amazon.payloadoffloading.PayloadS3Pointer"') or \
        body.startswith('["com.amazon.sqs.javamessaging.MessageS3Pointer"')


class Archiver:
    def __init__(self, args):
        self.args = args
        self.cfg = Config(retries={"max_attempts": 6, "mode": "standard"},
                          s3={"addressing_style": "path"}, max_pool_connections=4)
        self.local = threading.local()
        self.lock = threading.Lock()
        self.requests = {}
        sqs = self.clients()[0]
        self.queue_url = sqs.get_queue_url(QueueName=args.queue)["QueueUrl"]
        qa = sqs.get_queue_attributes(QueueUrl=self.queue_url, AttributeNames=["All"])["Attributes"]
        arn = qa.get("QueueArn", "")
        parts = arn.split(":")
        self.region = parts[3] if len(parts) >= 6 else args.region
        self.account_id = parts[4] if len(parts) >= 6 else ""
        self.retention_ms = int(qa.get("MessageRetentionPeriod", "345600")) * 1000
        self.host = socket.gethostname()
        self.prefix = "/".join(p for p in args.prefix.split("/") if p)
        self.messages = 0
        self.objects = 0

    def clients(self):
        c = getattr(self.local, "c", None)
        if c is None:
            s = boto3.session.Session()
            c = self.local.c = (
                s.client("sqs", endpoint_url=self.args.endpoint_url, region_name=self.args.region, config=self.cfg),
                s.client("s3", endpoint_url=self.args.endpoint_url, region_name=self.args.region, config=self.cfg))
            for client in c:
                client.meta.events.register("before-send", self.count_request)
        return c

    def count_request(self, event_name, **kwargs):
        # event_name: "before-send.sqs.ReceiveMessage"; one event per HTTP request, retries included.
        name = event_name.split(".", 1)[1]
        with self.lock:
            self.requests[name] = self.requests.get(name, 0) + 1

    def record(self, m):
        attrs = m.get("Attributes", {})
        mattrs = {}
        for name, v in m.get("MessageAttributes", {}).items():
            if v["DataType"].startswith("Binary"):
                mattrs[name] = {"DataType": v["DataType"], "BinaryValue": base64.b64encode(v["BinaryValue"]).decode()}
            else:
                mattrs[name] = {"DataType": v["DataType"], "StringValue": v["StringValue"]}
        archived = now_ms()
        sent = int(attrs["SentTimestamp"]) if "SentTimestamp" in attrs else None
        return {
            "schema": 1,
            "queue": self.args.queue,
            "queue_url": self.queue_url,
            "region": self.region,
            "account_id": self.account_id,
            "message_id": m["MessageId"],
            "body": m["Body"],
            "md5_of_body": m["MD5OfBody"],
            "md5_of_message_attributes": m.get("MD5OfMessageAttributes", ""),
            "attributes": attrs,
            "message_attributes": mattrs,
            "sent_at": iso_ms(sent) if sent is not None else None,
            "expires_at": iso_ms(sent + self.retention_ms) if sent is not None else iso_ms(archived),
            "archived_at": iso_ms(archived),
            "receive_count": int(attrs.get("ApproximateReceiveCount", "0")),
            "source_queue_arn": attrs.get("DeadLetterQueueSourceArn"),
            "extended_client_pointer": is_extended_pointer(m["Body"], mattrs),
            "archiver": {"version": "reference-lambda", "host": self.host},
        }

    def collect(self):
        """Receives until the batch holds --batch messages or --batch-max-bytes of JSON, or a receive is empty.
        Returns (JSON lines, receipt handles)."""
        sqs = self.clients()[0]
        lines, handles, size = [], [], 0
        while len(lines) < self.args.batch and size < self.args.batch_max_bytes:
            r = sqs.receive_message(QueueUrl=self.queue_url, MaxNumberOfMessages=min(10, self.args.batch - len(lines)),
                                    WaitTimeSeconds=self.args.wait_time, VisibilityTimeout=self.args.visibility,
                                    MessageSystemAttributeNames=["All"], MessageAttributeNames=["All"])
            msgs = r.get("Messages", [])
            if not msgs:
                break
            for m in msgs:
                line = json.dumps(self.record(m), ensure_ascii=False, separators=(",", ":")) + "\n"
                lines.append(line)
                handles.append(m["ReceiptHandle"])
                size += len(line)
        return lines, handles

    def archive(self, lines, handles, started):
        sqs, s3 = self.clients()
        gz = gzip.compress("".join(lines).encode("utf-8"), compresslevel=self.args.gzip_level)
        q = self.args.queue
        name = f"{q}-{started:%H%M%S}-{secrets.token_hex(8)}.json.gz"
        key = "/".join(p for p in (self.prefix, q, f"{started:%Y%m%d}", name) if p)
        s3.put_object(Bucket=self.args.bucket, Key=key, Body=gz, ContentType="application/gzip")
        for i in range(0, len(handles), 10):
            pending = [{"Id": str(j), "ReceiptHandle": h} for j, h in enumerate(handles[i:i + 10])]
            for _ in range(4):
                r = sqs.delete_message_batch(QueueUrl=self.queue_url, Entries=pending)
                failed = {f["Id"] for f in r.get("Failed", [])}
                pending = [e for e in pending if e["Id"] in failed]
                if not pending:
                    break
            if pending:
                print(f"warning: {len(pending)} archived messages not deleted", file=sys.stderr)
        with self.lock:
            self.messages += len(handles)
            self.objects += 1

    def worker(self):
        sqs = self.clients()[0]
        empty_rounds = 0
        while True:
            started = dt.datetime.now(dt.timezone.utc)
            lines, handles = self.collect()
            if handles:
                empty_rounds = 0
                self.archive(lines, handles, started)
                continue
            empty_rounds += 1
            if empty_rounds >= self.args.empty_receives:
                a = sqs.get_queue_attributes(QueueUrl=self.queue_url, AttributeNames=["ApproximateNumberOfMessages"])
                if int(a["Attributes"]["ApproximateNumberOfMessages"]) == 0:
                    return
                empty_rounds = 0


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--endpoint-url", required=True)
    p.add_argument("--region", default="us-east-1")
    p.add_argument("--queue", required=True)
    p.add_argument("--bucket", required=True)
    p.add_argument("--prefix", default="dlq-archive")
    p.add_argument("--workers", type=int, default=8)
    p.add_argument("--batch", type=int, default=10000)
    p.add_argument("--batch-max-bytes", type=int, default=8 << 20)
    p.add_argument("--gzip-level", type=int, default=1)
    p.add_argument("--wait-time", type=int, default=2)
    p.add_argument("--visibility", type=int, default=900)
    p.add_argument("--empty-receives", type=int, default=3)
    args = p.parse_args()

    t0 = time.monotonic()
    a = Archiver(args)
    with ThreadPoolExecutor(max_workers=args.workers) as pool:
        futures = [pool.submit(a.worker) for _ in range(args.workers)]
        for f in futures:
            f.result()
    secs = time.monotonic() - t0
    print(json.dumps({"messages": a.messages, "objects": a.objects, "seconds": round(secs, 3),
                      "messages_per_s": round(a.messages / secs, 1) if secs else None,
                      "requests": dict(sorted(a.requests.items()))}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
