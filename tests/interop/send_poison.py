#!/usr/bin/env python3
"""Sends awkward "poison" messages to an SQS queue and prints, as a JSON array on stdout, exactly what was sent.

Runs with Debian's /usr/bin/python3 (boto3 1.26: SQS query protocol) and with the image's python3 (boto3 >= 1.34:
SQS JSON protocol), so tests can check that messages from either kind of producer archive and replay intact.

Every message carries String, Number and Binary attributes plus custom-typed ones (Number.float, String.json,
Binary.gzip). Bodies cover non-ASCII, emoji (astral plane), XML/JSON-special characters, the allowed control
characters and one message whose body plus attributes is exactly 262,144 bytes (the classic SQS maximum).
With --fifo every message gets a MessageGroupId (two groups, alternating) and a unique MessageDeduplicationId.
With --bmp-only, characters above U+FFFF are left out of bodies (fauxqs 2.4.1 wrongly rejects them with
InvalidMessageContents; real SQS and moto accept them). Attribute values keep their emoji either way.

Each element of the output: index, case, message_id, sequence_number (FIFO), body, body_bytes, body_md5,
md5_of_message_attributes (computed here with SQS's algorithm), message_attributes (BinaryValue as base64),
message_group_id, message_deduplication_id. The script checks the MD5OfMessageBody and MD5OfMessageAttributes
that SQS returns against its own and exits 3 (after printing the array) if any differ.

Usage: send_poison.py --endpoint-url URL --queue-url URL [--count N] [--fifo] [--bmp-only] [--region R]
Credentials come from the usual AWS environment variables (source .run/<stand-in>.env); defaults to test values.
Exit codes: 0 ok, 1 an SQS call failed, 2 bad arguments, 3 an MD5 differed.
"""
import argparse
import base64
import gzip
import hashlib
import json
import os
import struct
import sys
import uuid

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

MAX_MESSAGE_BYTES = 262_144  # classic SQS limit for body + message attributes

SMALL_BODIES = [
    ("ascii", "plain ascii body: order 42 failed"),
    ("latin1-cjk", "caf\u00e9 \u00fcber na\u00efve \u65e5\u672c\u8a9e \u0420\u043e\u0441\u0441\u0438\u044f \u0639\u0631\u0628\u064a"),
    ("emoji", "poison \U0001F9EA\U0001F480 \U0001F468\u200D\U0001F469\u200D\U0001F467 flag \U0001F1FA\U0001F1F8 end"),
    ("xml-json-special", "<order id=\"1\">&amp; 'q' </order> {\"k\": [1, \"\\u00e9\"]} \\ back\\slash"),
    ("json", json.dumps({"orderId": 42, "note": "\u00e9\U0001F600", "nested": {"a": [1, 2.5, None, True]}},
                        ensure_ascii=False)),
    ("whitespace-controls", "\ttab\r\ncrlf\nlf  trailing spaces  \r"),
    ("edge-code-points", "\u00a0nbsp \ue000 private \ufffd replacement \U0010FFFF max"),
    ("one-char", "x"),
]


def message_attributes(i):
    """The attributes every message gets (10 is the SQS maximum per message)."""
    return {
        "s": {"DataType": "String", "StringValue": "h\u00e9llo \u2713 \U0001F600"},
        "n": {"DataType": "Number", "StringValue": "-12345.678"},
        "b": {"DataType": "Binary", "BinaryValue": bytes([0, 1, 2, 127, 128, 254, 255]) + "\u00e9".encode()},
        "f": {"DataType": "Number.float", "StringValue": "3.14159"},
        "j": {"DataType": "String.json", "StringValue": json.dumps({"k": [1, 2, "\u00e9"]}, ensure_ascii=False)},
        "g": {"DataType": "Binary.gzip", "BinaryValue": gzip.compress(b"gzipped attribute payload", mtime=0)},
        "idx": {"DataType": "Number", "StringValue": str(i)},
        "trace.id": {"DataType": "String", "StringValue": f"trace-{i:04d}"},
    }


def attributes_size(attrs):
    """Bytes SQS counts for message attributes: name + data type + value."""
    total = 0
    for name, a in attrs.items():
        value = a.get("BinaryValue") if "BinaryValue" in a else a["StringValue"].encode()
        total += len(name.encode()) + len(a["DataType"].encode()) + len(value)
    return total


def md5_of_message_attributes(attrs):
    """SQS's MD5OfMessageAttributes: names sorted; each of name, type, value length-prefixed (4-byte big endian),
    with a transport byte (1 = string, 2 = binary) before the value."""
    h = hashlib.md5()

    def put(b):
        h.update(struct.pack(">I", len(b)) + b)

    for name in sorted(attrs):
        a = attrs[name]
        put(name.encode())
        put(a["DataType"].encode())
        if "BinaryValue" in a:
            h.update(b"\x02")
            put(a["BinaryValue"])
        else:
            h.update(b"\x01")
            put(a["StringValue"].encode())
    return h.hexdigest()


def bmp(text):
    return "".join(c for c in text if ord(c) <= 0xFFFF)


def big_body(size_bytes, bmp_only):
    """A body of exactly size_bytes UTF-8 bytes, with multi-byte characters at both ends."""
    head, tail = "BIG \u00e9\U0001F600 ", " \U0001F600\u00e9 END"
    if bmp_only:
        head, tail = "BIG \u00e9\u2713 ", " \u2713\u00e9 END"
    fill = size_bytes - len(head.encode()) - len(tail.encode())
    pattern = "0123456789abcdefghijklmnopqrstuvwxyz-"
    return head + (pattern * (fill // len(pattern) + 1))[:fill] + tail


def plan(count, bmp_only):
    """count messages: the small cases, then the big one, then small cases again."""
    cases = [(name, body) for name, body in SMALL_BODIES]
    cases.append(("max-size", None))
    out = []
    for i in range(count):
        name, body = cases[i] if i < len(cases) else SMALL_BODIES[(i - len(cases)) % len(SMALL_BODIES)]
        attrs = message_attributes(i)
        if body is None:
            body = big_body(MAX_MESSAGE_BYTES - attributes_size(attrs), bmp_only)
        elif bmp_only:
            body = bmp(body)
        out.append((name, body, attrs))
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--endpoint-url", default=os.environ.get("AWS_ENDPOINT_URL"))
    p.add_argument("--queue-url", required=True)
    p.add_argument("--count", type=int, default=len(SMALL_BODIES) + 1)
    p.add_argument("--fifo", action="store_true")
    p.add_argument("--bmp-only", action="store_true", help="no characters above U+FFFF in bodies (for fauxqs)")
    p.add_argument("--region", default=os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
                   or "us-east-1")
    args = p.parse_args()
    if args.count < 1:
        p.error("--count must be >= 1")
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
    run_id = uuid.uuid4().hex[:12]
    sent, mismatches = [], 0
    for i, (case, body, attrs) in enumerate(plan(args.count, args.bmp_only)):
        req = {"QueueUrl": args.queue_url, "MessageBody": body, "MessageAttributes": attrs}
        if args.fifo:
            req["MessageGroupId"] = f"group-{i % 2}"
            req["MessageDeduplicationId"] = f"dedup-{run_id}-{i}"
        try:
            resp = sqs.send_message(**req)
        except (ClientError, BotoCoreError) as e:
            print(f"send_poison: SendMessage #{i} ({case}) failed: {e}", file=sys.stderr)
            print(json.dumps(sent, ensure_ascii=False, indent=1))
            return 1
        body_md5 = hashlib.md5(body.encode()).hexdigest()
        attrs_md5 = md5_of_message_attributes(attrs)
        if resp.get("MD5OfMessageBody") != body_md5 or resp.get("MD5OfMessageAttributes") != attrs_md5:
            mismatches += 1
            print(f"send_poison: MD5 mismatch on #{i} ({case}): body {resp.get('MD5OfMessageBody')} vs {body_md5}, "
                  f"attributes {resp.get('MD5OfMessageAttributes')} vs {attrs_md5}", file=sys.stderr)
        sent.append({
            "index": i,
            "case": case,
            "message_id": resp["MessageId"],
            "sequence_number": resp.get("SequenceNumber"),
            "body": body,
            "body_bytes": len(body.encode()),
            "body_md5": body_md5,
            "md5_of_message_attributes": attrs_md5,
            "message_attributes": {
                name: ({"DataType": a["DataType"], "BinaryValue": base64.b64encode(a["BinaryValue"]).decode()}
                       if "BinaryValue" in a else dict(a))
                for name, a in attrs.items()
            },
            "message_group_id": req.get("MessageGroupId"),
            "message_deduplication_id": req.get("MessageDeduplicationId"),
        })
    print(json.dumps(sent, ensure_ascii=False, indent=1))
    return 3 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
