#!/usr/bin/env python3
"""Checks an archive against what send_poison.py sent: downloads every object under s3://BUCKET/PREFIX with the
AWS CLI (`aws s3 cp ... -`), gunzips it, parses the JSON lines and compares each record with the sent message,
attribute for attribute (body byte for byte, every message attribute's DataType and value, MD5s, FIFO ids).
Also checks every key against the default layout {prefix}/{queue}/{yyyymmdd}/{queue}-{hhmmss}-{batch_id}.json.gz.

Usage: verify_archive.py --aws /usr/bin/aws --endpoint-url URL --bucket B --prefix P --queue Q --sent sent.json
Exit 0 when every sent message is archived intact (duplicates allowed), 4 with the differences otherwise.
"""
import argparse
import gzip
import hashlib
import json
import re
import subprocess
import sys


def aws(args, cli, endpoint):
    return subprocess.run([cli, "--endpoint-url", endpoint, *args], check=True, capture_output=True).stdout


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--aws", default="/usr/bin/aws")
    p.add_argument("--endpoint-url", required=True)
    p.add_argument("--bucket", required=True)
    p.add_argument("--prefix", required=True)
    p.add_argument("--queue", required=True)
    p.add_argument("--sent", required=True)
    args = p.parse_args()
    sent = json.load(open(args.sent, encoding="utf-8"))
    listing = aws(["s3api", "list-objects-v2", "--bucket", args.bucket, "--prefix", args.prefix + "/"],
                  args.aws, args.endpoint_url)
    keys = [o["Key"] for o in (json.loads(listing) if listing.strip() else {}).get("Contents", [])]
    problems = []
    layout = re.compile(r"^%s/%s/\d{8}/%s-\d{6}-[0-9a-f]{8,}\.json\.gz$" %
                        (re.escape(args.prefix), re.escape(args.queue), re.escape(args.queue)))
    records = {}
    for key in keys:
        if not layout.match(key):
            problems.append(f"key {key} does not follow the layout")
        raw = aws(["s3", "cp", f"s3://{args.bucket}/{key}", "-"], args.aws, args.endpoint_url)
        for n, line in enumerate(gzip.decompress(raw).decode("utf-8").splitlines(), 1):
            rec = json.loads(line)
            if rec.get("schema") != 1 or rec.get("queue") != args.queue:
                problems.append(f"{key}:{n}: schema/queue wrong: {rec.get('schema')} {rec.get('queue')}")
            records.setdefault(rec["message_id"], rec)
    for s in sent:
        rec = records.get(s["message_id"])
        if rec is None:
            problems.append(f"message {s['message_id']} ({s['case']}) is not in the archive")
            continue
        if rec["body"] != s["body"]:
            problems.append(f"{s['message_id']}: body differs")
        if hashlib.md5(rec["body"].encode("utf-8")).hexdigest() != s["body_md5"] or rec["md5_of_body"] != s["body_md5"]:
            problems.append(f"{s['message_id']}: body md5 differs")
        if (rec.get("md5_of_message_attributes") or "") != (s.get("md5_of_message_attributes") or ""):
            problems.append(f"{s['message_id']}: md5_of_message_attributes {rec.get('md5_of_message_attributes')} "
                            f"!= {s.get('md5_of_message_attributes')}")
        got = rec.get("message_attributes") or {}
        want = s.get("message_attributes") or {}
        if set(got) != set(want):
            problems.append(f"{s['message_id']}: attribute names {sorted(got)} != {sorted(want)}")
        for name, w in want.items():
            g = got.get(name, {})
            for field in ("DataType", "StringValue", "BinaryValue"):
                if w.get(field) != g.get(field):
                    problems.append(f"{s['message_id']}: attribute {name}.{field} {g.get(field)!r} != {w.get(field)!r}")
        attrs = rec.get("attributes") or {}
        for field, attr in (("message_group_id", "MessageGroupId"), ("message_deduplication_id", "MessageDeduplicationId")):
            if s.get(field) and attrs.get(attr) != s[field]:
                problems.append(f"{s['message_id']}: {attr} {attrs.get(attr)!r} != {s[field]!r}")
        if "SentTimestamp" not in attrs or not rec.get("sent_at") or not rec.get("expires_at"):
            problems.append(f"{s['message_id']}: SentTimestamp/sent_at/expires_at missing")
    print(json.dumps({"objects": len(keys), "records": len(records), "sent": len(sent), "problems": problems[:50]}))
    return 4 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
