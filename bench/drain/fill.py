#!/usr/bin/env python3
"""Fills one or more SQS queues (fauxqs or moto) with N identical-per-index benchmark messages.

Message i is a pure function of (seed, i): a 1 KiB body of varied printable ASCII (including `"` and `\\`, so
JSON escaping is exercised) and three message attributes: `s` String, `n` Number, `b` Binary (16 bytes). Every
queue named with --queue-url receives exactly the same messages, so two queues filled by one run hold the same
data. Sends with SendMessageBatch (10 per call) from a thread pool.

--client raw (default): AWS JSON 1.0 requests over keep-alive http.client connections, one per thread, with a
placeholder SigV4 Authorization header (its credential scope names region and service, which is all fauxqs and
moto use; neither checks the signature outside moto-auth). About 5x less client CPU than boto3, which matters on
a 2-core machine shared with the server. --client boto3: the same calls through boto3 (>= 1.34, AWS JSON
protocol: fauxqs speaks nothing else; run with the image's `python3`).

--fifo: the queues are FIFO queues; message i gets MessageGroupId `g<i mod G>` (G = --groups, default 1) and
MessageDeduplicationId `<run>-<i>` (<run>: --dedup-prefix, default a random token per invocation, because a FIFO
queue silently drops a repeated deduplication id for 5 minutes, so refilling with the same ids would send nothing;
bodies and attributes are the same as without --fifo). Order within a group
is the send order, which with several threads is not i's order.

Usage: fill.py --endpoint-url URL --queue-url URL [--queue-url URL2] [--count N] [--seed S] [--threads T]
               [--client raw|boto3] [--fifo [--groups G]]
Prints JSON {messages, queues, seconds, messages_per_s} (messages = per queue).
"""
import argparse
import base64
import http.client
import json
import urllib.parse
import random
import string
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import boto3
from botocore.config import Config

BODY_BYTES = 1024
ALPHABET = string.ascii_letters + string.digits + string.punctuation + " "


class Corpus:
    """A pool of random printable text; message i is a slice of it at an index-derived offset."""

    def __init__(self, seed):
        rng = random.Random(seed)
        self.pool = "".join(rng.choices(ALPHABET, k=1 << 20))
        self.seed = seed

    def message(self, i):
        rng = random.Random((self.seed << 32) ^ i)
        off = rng.randrange(len(self.pool) - BODY_BYTES)
        head = f"msg {i:09d} seed {self.seed} "
        body = head + self.pool[off:off + BODY_BYTES - len(head)]
        assert len(body.encode("ascii")) == BODY_BYTES
        attrs = {
            "s": {"DataType": "String", "StringValue": f"order-{rng.randrange(10**9)}-\"quoted\""},
            "n": {"DataType": "Number", "StringValue": str(rng.randrange(-10**6, 10**6))},
            "b": {"DataType": "Binary", "BinaryValue": rng.randbytes(16)},
        }
        return body, attrs


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--endpoint-url", required=True)
    p.add_argument("--queue-url", action="append", required=True)
    p.add_argument("--count", type=int, default=200_000)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--threads", type=int, default=16)
    p.add_argument("--region", default="us-east-1")
    p.add_argument("--client", choices=["raw", "boto3"], default="raw")
    p.add_argument("--fifo", action="store_true", help="FIFO queues: set MessageGroupId and MessageDeduplicationId")
    p.add_argument("--groups", type=int, default=1, help="message groups with --fifo (message i: group i mod G)")
    p.add_argument("--dedup-prefix", default=None, help="with --fifo: deduplication ids are PREFIX-i (default random)")
    args = p.parse_args()
    if args.groups < 1:
        p.error("--groups must be >= 1")
    if args.dedup_prefix is None:
        args.dedup_prefix = f"{args.seed}-{random.SystemRandom().getrandbits(48):012x}"
    ep = urllib.parse.urlsplit(args.endpoint_url)
    if args.client == "raw" and ep.scheme != "http":
        p.error("--client raw supports http:// endpoints only (stand-ins); use --client boto3")

    corpus = Corpus(args.seed)
    cfg = Config(retries={"max_attempts": 10, "mode": "standard"}, max_pool_connections=4)
    local = threading.local()

    def client():
        c = getattr(local, "sqs", None)
        if c is None:
            # boto3.client() is not thread-safe on the default session: one session per thread.
            c = boto3.session.Session().client("sqs", endpoint_url=args.endpoint_url, region_name=args.region,
                                               config=cfg)
            local.sqs = c
        return c

    def raw_send(url, entries):
        conn = getattr(local, "conn", None)
        if conn is None:
            conn = local.conn = http.client.HTTPConnection(ep.hostname, ep.port or 80, timeout=60)
        wire = [{"Id": e["Id"], "MessageBody": e["MessageBody"],
                 "MessageAttributes": {k: ({"DataType": v["DataType"],
                                            "BinaryValue": base64.b64encode(v["BinaryValue"]).decode()}
                                           if "BinaryValue" in v else v) for k, v in e["MessageAttributes"].items()},
                 **{k: e[k] for k in ("MessageGroupId", "MessageDeduplicationId") if k in e}}
                for e in entries]
        payload = json.dumps({"QueueUrl": url, "Entries": wire}).encode()
        headers = {"Content-Type": "application/x-amz-json-1.0", "X-Amz-Target": "AmazonSQS.SendMessageBatch",
                   "X-Amz-Date": time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()),
                   "Authorization": "AWS4-HMAC-SHA256 Credential=testing/%s/%s/sqs/aws4_request, "
                                    "SignedHeaders=host;x-amz-date, Signature=%s"
                                    % (time.strftime("%Y%m%d", time.gmtime()), args.region, "0" * 64)}
        for attempt in range(5):
            try:
                conn.request("POST", "/", body=payload, headers=headers)
                resp = conn.getresponse()
                data = resp.read()
                break
            except (http.client.HTTPException, OSError):
                conn.close()
                if attempt == 4:
                    raise
                time.sleep(0.1)
        if resp.status != 200:
            raise RuntimeError(f"SendMessageBatch {url}: HTTP {resp.status}: {data[:300]!r}")
        return json.loads(data)

    def send_chunk(start):
        entries = []
        for i in range(start, min(start + 10, args.count)):
            body, attrs = corpus.message(i)
            entry = {"Id": str(i - start), "MessageBody": body, "MessageAttributes": attrs}
            if args.fifo:
                entry["MessageGroupId"] = f"g{i % args.groups}"
                entry["MessageDeduplicationId"] = f"{args.dedup_prefix}-{i}"
            entries.append(entry)
        for url in args.queue_url:
            pending = entries
            for _ in range(10):
                if args.client == "raw":
                    r = raw_send(url, pending)
                else:
                    r = client().send_message_batch(QueueUrl=url, Entries=pending)
                failed = {f["Id"] for f in r.get("Failed", [])}
                if not failed:
                    break
                pending = [e for e in pending if e["Id"] in failed]
                time.sleep(0.05)
            else:
                raise RuntimeError(f"send to {url} failed for chunk {start}: {r.get('Failed')}")
        return len(entries)

    t0 = time.monotonic()
    sent = 0
    with ThreadPoolExecutor(max_workers=args.threads) as pool:
        for n in pool.map(send_chunk, range(0, args.count, 10)):
            sent += n
    secs = time.monotonic() - t0
    print(json.dumps({"messages": sent, "queues": len(args.queue_url), "fifo": args.fifo,
                      "groups": args.groups if args.fifo else None, "seconds": round(secs, 3),
                      "messages_per_s": round(sent * len(args.queue_url) / secs, 1) if secs else None}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
