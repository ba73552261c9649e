#!/usr/bin/env python3
"""A consumer that always fails: receives from a source queue and never deletes, releasing each message at once
(visibility 0), until the queue is empty, so every message exceeds the redrive policy's maxReceiveCount and SQS
moves it to the dead-letter queue. Prints how many receives it made.

Usage: fail_consumer.py --endpoint-url URL --queue-url URL [--max-rounds N]
Runs with /usr/bin/python3 (boto3 1.26) and python3 (boto3 >= 1.34).
"""
import argparse
import os
import sys
import time

import boto3
from botocore.config import Config


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--endpoint-url", default=os.environ.get("AWS_ENDPOINT_URL"))
    p.add_argument("--queue-url", required=True)
    p.add_argument("--region", default=os.environ.get("AWS_REGION", "us-east-1"))
    p.add_argument("--max-rounds", type=int, default=200)
    args = p.parse_args()
    sqs = boto3.client("sqs", endpoint_url=args.endpoint_url, region_name=args.region,
                       config=Config(retries={"max_attempts": 5}))
    receives = 0
    empty = 0
    for _ in range(args.max_rounds):
        r = sqs.receive_message(QueueUrl=args.queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=0,
                                VisibilityTimeout=0, AttributeNames=["All"])
        msgs = r.get("Messages", [])
        receives += 1
        if not msgs:
            n = int(sqs.get_queue_attributes(QueueUrl=args.queue_url, AttributeNames=["ApproximateNumberOfMessages",
                    "ApproximateNumberOfMessagesNotVisible"])["Attributes"]["ApproximateNumberOfMessages"])
            if n == 0:
                empty += 1
                if empty >= 2:
                    print(receives)
                    return 0
            time.sleep(0.2)
            continue
        empty = 0
    print(f"source queue not empty after {args.max_rounds} rounds", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
