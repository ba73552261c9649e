#!/usr/bin/env python3
"""Receives every visible message from an SQS queue and prints them as a JSON array; optionally compares them with
what send_poison.py printed.

Runs with /usr/bin/python3 (boto3 1.26, query protocol) and the image's python3 (JSON protocol).
Each element: message_id, body, body_md5 (computed), md5_of_body and md5_of_message_attributes (as SQS reported),
attributes (system attributes), message_attributes (BinaryValue as base64).

Usage: receive_all.py --endpoint-url URL --queue-url URL [--expect sent.json] [--delete] [--max N] [--idle S]
  --expect FILE  compare with send_poison.py's output (by message_id: body, MD5s, attributes, FIFO ids);
                 exit 4 listing the differences if anything is missing, extra or different.
  --delete       delete what was received (default: leave it; visibility timeout 60 s hides it meanwhile).
  --idle S       stop after S seconds without new messages (default 2).
Exit codes: 0 ok, 1 an SQS call failed, 4 comparison failed.
"""
import argparse
import base64
import hashlib
import json
import os
import sys
import time

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError


def encode_attrs(attrs):
    out = {}
    for name, a in (attrs or {}).items():
        if "BinaryValue" in a:
            out[name] = {"DataType": a["DataType"], "BinaryValue": base64.b64encode(a["BinaryValue"]).decode()}
        else:
            out[name] = {"DataType": a["DataType"], "StringValue": a["StringValue"]}
    return out


def receive(sqs, queue_url, max_messages, idle_secs, delete):
    got, seen = [], set()
    last_new = time.monotonic()
    while len(got) < max_messages and time.monotonic() - last_new < idle_secs:
        resp = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=1,
                                   VisibilityTimeout=60, AttributeNames=["All"], MessageAttributeNames=["All"])
        msgs = resp.get("Messages", [])
        if delete and msgs:
            # One call per reply: a call per message was most of this script's time on moto.
            entries = [{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(msgs)]
            failed = sqs.delete_message_batch(QueueUrl=queue_url, Entries=entries).get("Failed", [])
            if failed:
                raise RuntimeError(f"DeleteMessageBatch failed for {failed}")
        for m in msgs:
            if m["MessageId"] in seen:
                continue
            seen.add(m["MessageId"])
            last_new = time.monotonic()
            got.append({
                "message_id": m["MessageId"],
                "body": m["Body"],
                "body_md5": hashlib.md5(m["Body"].encode()).hexdigest(),
                "md5_of_body": m.get("MD5OfBody"),
                "md5_of_message_attributes": m.get("MD5OfMessageAttributes"),
                "attributes": m.get("Attributes", {}),
                "message_attributes": encode_attrs(m.get("MessageAttributes")),
            })
    return got


def compare(sent, got):
    problems = []
    by_id = {m["message_id"]: m for m in got}
    for s in sent:
        r = by_id.pop(s["message_id"], None)
        tag = f"#{s['index']} ({s['case']}) {s['message_id']}"
        if r is None:
            problems.append(f"{tag}: not received")
            continue
        if r["body"] != s["body"]:
            problems.append(f"{tag}: body differs ({len(r['body'].encode())} vs {s['body_bytes']} bytes)")
        if r["md5_of_body"] != s["body_md5"]:
            problems.append(f"{tag}: MD5OfBody {r['md5_of_body']} != {s['body_md5']}")
        if r["md5_of_message_attributes"] != s["md5_of_message_attributes"]:
            problems.append(f"{tag}: MD5OfMessageAttributes {r['md5_of_message_attributes']} != "
                            f"{s['md5_of_message_attributes']}")
        if r["message_attributes"] != s["message_attributes"]:
            problems.append(f"{tag}: message attributes differ: {r['message_attributes']}")
        for field, attr in (("message_group_id", "MessageGroupId"),
                            ("message_deduplication_id", "MessageDeduplicationId")):
            if s.get(field) is not None and r["attributes"].get(attr) != s[field]:
                problems.append(f"{tag}: {attr} {r['attributes'].get(attr)!r} != {s[field]!r}")
    for mid in by_id:
        problems.append(f"{mid}: received but not in the expected list")
    return problems


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--endpoint-url", default=os.environ.get("AWS_ENDPOINT_URL"))
    p.add_argument("--queue-url", required=True)
    p.add_argument("--expect")
    p.add_argument("--delete", action="store_true")
    p.add_argument("--max", type=int, default=10_000)
    p.add_argument("--idle", type=float, default=2.0)
    p.add_argument("--region", default=os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
                   or "us-east-1")
    args = p.parse_args()
    if not args.endpoint_url:
        p.error("--endpoint-url (or AWS_ENDPOINT_URL) is required")
    sqs = boto3.client(
        "sqs",
        endpoint_url=args.endpoint_url,
        region_name=args.region,
        aws_access_key_id=os.environ.get("AWS_ACCESS_KEY_ID", "testing"),
        aws_secret_access_key=os.environ.get("AWS_SECRET_ACCESS_KEY", "testing"),
        aws_session_token=os.environ.get("AWS_SESSION_TOKEN") or None,
        config=Config(retries={"max_attempts": 2}),
    )
    try:
        got = receive(sqs, args.queue_url, args.max, args.idle, args.delete)
    except (ClientError, BotoCoreError, RuntimeError) as e:
        print(f"receive_all: {e}", file=sys.stderr)
        return 1
    print(json.dumps(got, ensure_ascii=False, indent=1))
    if args.expect:
        with open(args.expect, encoding="utf-8") as f:
            problems = compare(json.load(f), got)
        for line in problems:
            print(f"receive_all: {line}", file=sys.stderr)
        if problems:
            return 4
        print(f"receive_all: all {len(got)} messages match", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
