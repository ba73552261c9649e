#!/usr/bin/env python3
"""Provisions an IAM user with an access key on a moto server started with INITIAL_NO_AUTH_ACTION_COUNT=3.

Makes exactly three authenticated-counted calls (CreateUser, PutUserPolicy, CreateAccessKey), which use up
moto's unauthenticated allowance, then checks that SigV4 is enforced: a call signed with the new key succeeds
and one signed with a wrong secret is rejected. Prints "ACCESS_KEY_ID SECRET_ACCESS_KEY" on stdout; diagnostics
(never the secret) go to stderr. Exit 0 on success, 1 on any failure.
Usage: stand-ins-moto-auth.py --endpoint-url URL [--region us-east-1] [--user dlq-archive-test]
"""
import argparse
import json
import sys

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

SETUP_CALLS = 3  # keep in step with INITIAL_NO_AUTH_ACTION_COUNT in scripts/stand-ins
ALLOW_ALL = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}


def client(service, args, key_id, secret):
    return boto3.client(
        service,
        endpoint_url=args.endpoint_url,
        region_name=args.region,
        aws_access_key_id=key_id,
        aws_secret_access_key=secret,
        config=Config(retries={"max_attempts": 1}),
    )


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--endpoint-url", required=True)
    p.add_argument("--region", default="us-east-1")
    p.add_argument("--user", default="dlq-archive-test")
    args = p.parse_args()

    # Bootstrap credentials: any value works while moto's no-auth allowance lasts.
    iam = client("iam", args, "AKIAIOSFODNN7BOOTSTR", "bootstrap")
    try:
        user = iam.create_user(UserName=args.user)["User"]
        iam.put_user_policy(UserName=args.user, PolicyName="allow-all", PolicyDocument=json.dumps(ALLOW_ALL))
        key = iam.create_access_key(UserName=args.user)["AccessKey"]
    except ClientError as e:
        print(f"stand-ins-moto-auth: IAM setup failed ({e.response['Error'].get('Code')}): the no-auth allowance "
              f"was probably used up by another client before setup", file=sys.stderr)
        return 1
    key_id, secret = key["AccessKeyId"], key["SecretAccessKey"]

    try:
        ident = client("sts", args, key_id, secret).get_caller_identity()
        client("sqs", args, key_id, secret).list_queues()
    except ClientError as e:
        print(f"stand-ins-moto-auth: call with the new key failed: {e.response['Error'].get('Code')}", file=sys.stderr)
        return 1
    try:
        client("sqs", args, key_id, secret + "x").list_queues()
        print("stand-ins-moto-auth: a wrong secret was accepted: SigV4 is not enforced", file=sys.stderr)
        return 1
    except ClientError as e:
        # moto answers auth failures with a query-protocol XML body even to JSON-protocol requests, so newer
        # botocore reports Code "403" and the real code sits in Message.
        err = e.response["Error"]
        code = next((c for c in ("SignatureDoesNotMatch", "InvalidClientTokenId")
                     if c == err.get("Code") or c in err.get("Message", "")), err.get("Code"))
        if code not in ("SignatureDoesNotMatch", "InvalidClientTokenId"):
            print(f"stand-ins-moto-auth: wrong secret gave unexpected error {code}", file=sys.stderr)
            return 1
    print(f"stand-ins-moto-auth: user {user['Arn']} key {key_id} (caller {ident['Arn']}); wrong secret -> {code}",
          file=sys.stderr)
    print(key_id, secret)
    return 0


if __name__ == "__main__":
    sys.exit(main())
