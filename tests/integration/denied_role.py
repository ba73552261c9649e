#!/usr/bin/env python3
"""Temporary credentials that may do everything except some actions, on the moto-auth stand-in.

Creates IAM role ROLE (trusting the caller) with an inline policy that allows "*" and denies each --deny
action, assumes it, and prints "ACCESS_KEY_ID SECRET_ACCESS_KEY SESSION_TOKEN" on one line. The caller's
credentials and region come from the environment (. .run/moto-auth.env). Used by tests/integration/lambda_test.cc.

Usage: denied_role.py --endpoint-url URL --role NAME --deny ACTION [--deny ACTION ...]
"""
import argparse
import json

import boto3


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--endpoint-url", required=True)
    p.add_argument("--role", required=True)
    p.add_argument("--deny", action="append", required=True)
    a = p.parse_args()
    sts = boto3.client("sts", endpoint_url=a.endpoint_url)
    iam = boto3.client("iam", endpoint_url=a.endpoint_url)
    caller = sts.get_caller_identity()["Arn"]
    trust = {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Principal": {"AWS": caller}, "Action": "sts:AssumeRole"}],
    }
    role = iam.create_role(RoleName=a.role, AssumeRolePolicyDocument=json.dumps(trust))["Role"]
    policy = {
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Allow", "Action": "*", "Resource": "*"},
            {"Effect": "Deny", "Action": a.deny, "Resource": "*"},
        ],
    }
    iam.put_role_policy(RoleName=a.role, PolicyName="deny", PolicyDocument=json.dumps(policy))
    creds = sts.assume_role(RoleArn=role["Arn"], RoleSessionName="dlq-lambda-test")["Credentials"]
    print(creds["AccessKeyId"], creds["SecretAccessKey"], creds["SessionToken"])


if __name__ == "__main__":
    main()
