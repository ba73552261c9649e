#!/usr/bin/env python3
"""Prints, as one JSON object, what a CloudFormation stack created on the
stand-in (moto): its status, resources, the execution role's inline policy,
the replay policy's document (--replay-policy), the function's configuration and concurrency, and the archive bucket's
encryption, public access block, ownership, lifecycle and policy (each null
when the stand-in did not create or does not keep it).

Usage: stack_inspect.py STACK_NAME BUCKET  (AWS_* variables select the stand-in)
moto returns inline policy documents as Python literals; they are read with
ast.literal_eval and printed as JSON.
"""
import ast
import json
import sys

import boto3
from botocore.exceptions import ClientError


def Optional(call):
    try:
        return call()
    except ClientError as e:
        return {"error": e.response.get("Error", {}).get("Code", "?")}


def Document(doc):
    if isinstance(doc, dict):
        return doc
    try:
        return json.loads(doc)
    except ValueError:
        return ast.literal_eval(doc)


def Main(stack, bucket):
    cfn = boto3.client("cloudformation")
    out = {}
    desc = cfn.describe_stacks(StackName=stack)["Stacks"][0]
    out["status"] = desc["StackStatus"]
    out["outputs"] = {o["OutputKey"]: o.get("OutputValue") for o in desc.get("Outputs", [])}
    resources = cfn.list_stack_resources(StackName=stack)["StackResourceSummaries"]
    out["resources"] = {r["LogicalResourceId"]: {"type": r["ResourceType"], "id": r.get("PhysicalResourceId", "")}
                        for r in resources if r.get("LogicalResourceId")}
    iam = boto3.client("iam")
    role = out["resources"].get("ArchiverRole", {}).get("id")
    out["role_policies"] = {}
    if role:
        for name in iam.list_role_policies(RoleName=role)["PolicyNames"]:
            doc = iam.get_role_policy(RoleName=role, PolicyName=name)["PolicyDocument"]
            out["role_policies"][name] = Document(doc)
        out["role_trust"] = Document(iam.get_role(RoleName=role)["Role"]["AssumeRolePolicyDocument"])
    replay = out["resources"].get("ReplayPolicy", {}).get("id")
    out["replay_policy"] = None
    if replay:
        arn = replay if replay.startswith("arn:") else out["outputs"].get("ReplayPolicyArn", "")
        version = iam.get_policy(PolicyArn=arn)["Policy"]["DefaultVersionId"]
        out["replay_policy"] = Document(
            iam.get_policy_version(PolicyArn=arn, VersionId=version)["PolicyVersion"]["Document"])
    lam = boto3.client("lambda")
    fn = out["resources"].get("ArchiverFunction", {}).get("id")
    if fn:
        cfg = lam.get_function_configuration(FunctionName=fn)
        out["function"] = {k: cfg.get(k) for k in ("FunctionName", "FunctionArn", "Runtime", "Handler", "Role",
                                                    "Timeout", "MemorySize", "Architectures", "VpcConfig")}
        out["function"]["Environment"] = cfg.get("Environment", {}).get("Variables", {})
        out["concurrency"] = Optional(lambda: lam.get_function_concurrency(FunctionName=fn)).get(
            "ReservedConcurrentExecutions")
    s3 = boto3.client("s3")
    out["bucket"] = {
        "encryption": Optional(lambda: s3.get_bucket_encryption(Bucket=bucket)["ServerSideEncryptionConfiguration"]),
        "public_access_block": Optional(
            lambda: s3.get_public_access_block(Bucket=bucket)["PublicAccessBlockConfiguration"]),
        "lifecycle": Optional(lambda: s3.get_bucket_lifecycle_configuration(Bucket=bucket)["Rules"]),
        "ownership": Optional(lambda: s3.get_bucket_ownership_controls(Bucket=bucket)["OwnershipControls"]),
        "policy": Optional(lambda: Document(s3.get_bucket_policy(Bucket=bucket)["Policy"])),
    }
    json.dump(out, sys.stdout, default=str)
    sys.stdout.write("\n")


if __name__ == "__main__":
    Main(sys.argv[1], sys.argv[2])
