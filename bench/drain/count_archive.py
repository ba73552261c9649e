#!/usr/bin/env python3
"""Counts the records of an archive: downloads every object under s3://BUCKET/PREFIX/ with boto3, gunzips it and
parses each JSON line. Checks schema 1, the queue name, and MD5(body) == md5_of_body on every record. Lines that
are not valid JSON are counted (unparseable_lines, with up to 3 examples) and their message_id is still found by
a regular expression, so a writer bug shows up as bad data, not as a missing message.

Usage: count_archive.py --endpoint-url URL --bucket B --prefix P --queue Q
Prints JSON {objects, records, unique_message_ids, bad_records, compressed_bytes, uncompressed_bytes,
unparseable_lines, unparseable_examples}.
"""
import argparse
import gzip
import hashlib
import json
import re
import sys
from concurrent.futures import ThreadPoolExecutor

import boto3
from botocore.config import Config

ID_RE = re.compile(r'"message_id":"([^"\\]*)"')


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--endpoint-url", required=True)
    p.add_argument("--region", default="us-east-1")
    p.add_argument("--bucket", required=True)
    p.add_argument("--prefix", required=True)
    p.add_argument("--queue", required=True)
    args = p.parse_args()
    s3 = boto3.client("s3", endpoint_url=args.endpoint_url, region_name=args.region,
                      config=Config(s3={"addressing_style": "path"}, max_pool_connections=8))
    keys = []
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=args.bucket, Prefix=args.prefix.strip("/") + "/"):
        keys += [o["Key"] for o in page.get("Contents", [])]

    def load(key):
        return key, s3.get_object(Bucket=args.bucket, Key=key)["Body"].read()

    out = {"objects": len(keys), "records": 0, "unique_message_ids": 0, "bad_records": 0, "compressed_bytes": 0,
           "uncompressed_bytes": 0, "unparseable_lines": 0, "unparseable_examples": []}
    ids = set()
    with ThreadPoolExecutor(max_workers=4) as pool:
        for key, raw in pool.map(load, keys):
            data = gzip.decompress(raw)
            out["compressed_bytes"] += len(raw)
            out["uncompressed_bytes"] += len(data)
            for line in data.decode("utf-8", errors="replace").split("\n"):
                if not line.strip():
                    continue
                try:
                    rec = json.loads(line)
                except ValueError as e:
                    out["unparseable_lines"] += 1
                    m = ID_RE.search(line)
                    if m:
                        ids.add(m.group(1))
                    if len(out["unparseable_examples"]) < 3:
                        out["unparseable_examples"].append(
                            {"key": key, "error": str(e), "near": line[max(0, e.pos - 40):e.pos + 20]})
                    continue
                out["records"] += 1
                ids.add(rec["message_id"])
                if rec.get("schema") != 1 or rec.get("queue") != args.queue or \
                        hashlib.md5(rec["body"].encode("utf-8")).hexdigest() != rec["md5_of_body"]:
                    out["bad_records"] += 1
    out["unique_message_ids"] = len(ids)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
