#!/usr/bin/env python3
"""fake-lambda: the Lambda Invoke API for tests, in front of moto (which keeps functions but cannot run them).

Started by scripts/stand-ins (name fake-lambda); see doc/development.md, "The fake Lambda".

  POST /2015-03-31/functions/{FunctionName}/invocations[?Qualifier=Q]   Invoke, answered here
  /_fake/rules         POST {"rules":[...]} replaces the outcome rules; DELETE clears them (all succeed).
                       A rule: {"function", "fail_if_contains", "error_type", "error_message", "throttle_first",
                       "invocation_type" (only "Event" or only "RequestResponse" invocations)}
  /_fake/invocations   GET lists the invocations seen (JSON array); DELETE clears the list
                       ?function=NAME on either: only that function's rules (POST: each rule is for NAME)
                       or invocations, so tests running at once on one fake leave each other's alone
  /_fake/health        GET: 200 once listening
  anything else        forwarded to moto and moto's answer returned (DeadLetterConfig added, see below)

A failed Event invocation goes where Lambda sends it: a record to the function's OnFailure destination
(PutFunctionEventInvokeConfig: an SQS queue, or an S3 bucket under aws/lambda/async/<function>/...), else the
event to its DeadLetterConfig queue, else nowhere.

moto 5.2.1 drops DeadLetterConfig from CreateFunction and UpdateFunctionConfiguration. The fake keeps the
TargetArn of every such request it forwards (by function name) and adds DeadLetterConfig to the function
configurations moto answers without one, so functions must be created through the fake to have a DLQ.
Signatures are not checked. Every request is logged to stderr.
"""

import argparse
import datetime
import http.client
import json
import os
import sys
import threading
import time
import urllib.parse
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import boto3
import botocore.config
import botocore.exceptions

API = "/2015-03-31/functions/"
EVENT_LIMIT = 1024 * 1024  # async Invoke: 1 MB (API_Invoke.html)
SYNC_LIMIT = 6 * 1024 * 1024  # RequestResponse: 6 MB
ERROR_MESSAGE_LIMIT = 1024  # the DLQ's ErrorMessage attribute: truncated to 1 KB (dlq.html)
HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "proxy-connection", "upgrade"}


def log(text):
    sys.stderr.write(f"{datetime.datetime.now().isoformat(timespec='milliseconds')} {text}\n")
    sys.stderr.flush()


class State:
    """Rules, throttle counters, recorded invocations and remembered dead-letter targets, under one lock."""

    def __init__(self):
        self.lock = threading.Lock()
        self.rules = []  # [rule as posted, invokes it still throttles]
        self.invocations = []
        self.dead_letter = {}  # function name -> DeadLetterConfig.TargetArn

    def set_rules(self, rules, function=None):
        """Replaces all rules, or (function given) that function's, each then for that function."""
        if function:
            rules = [dict(r, function=function) for r in rules]
        with self.lock:
            kept = [r for r in self.rules if function and r[0].get("function", "*") != function]
            self.rules = kept + [[r, int(r.get("throttle_first", 0) or 0)] for r in rules]

    def decide(self, function, payload, invocation_type):
        """-> ("throttled", rule) | ("failed", rule) | ("ok", None); takes one throttle from the first rule with any.

        A rule with "invocation_type" ("Event" or "RequestResponse") applies to that type of invocation only."""
        with self.lock:
            matching = [r for r in self.rules if r[0].get("function", "*") in ("*", function)
                        and r[0].get("invocation_type", invocation_type) == invocation_type]
            for r in matching:
                if r[1] > 0:
                    r[1] -= 1
                    return "throttled", r[0]
            for r in matching:
                text = r[0].get("fail_if_contains")
                if text is not None and str(text).encode() in payload:
                    return "failed", r[0]
        return "ok", None

    def record(self, entry):
        with self.lock:
            self.invocations.append(entry)

    def update(self, entry, **fields):
        with self.lock:
            entry.update(fields)

    def snapshot(self, function=None):
        with self.lock:
            return json.dumps([i for i in self.invocations if not function or i["function"] == function]).encode()

    def forget(self, function=None):
        with self.lock:
            self.invocations = [i for i in self.invocations if function and i["function"] != function]


class Backend:
    """boto3 clients on moto (thread-safe once made), one per region for SQS."""

    def __init__(self, endpoint, region):
        self.endpoint = endpoint
        self.region = region
        self.lock = threading.Lock()
        self.clients = {}
        self.lambda_ = self.client("lambda", region)

    def client(self, service, region):
        with self.lock:
            key = (service, region)
            if key not in self.clients:
                self.clients[key] = boto3.session.Session().client(
                    service, endpoint_url=self.endpoint, region_name=region, aws_access_key_id="testing",
                    aws_secret_access_key="testing",
                    config=botocore.config.Config(retries={"max_attempts": 2, "mode": "standard"}))
            return self.clients[key]


def split_function(raw):
    """A name, name:qualifier, partial ARN (account:function:name[:q]) or ARN -> (name, qualifier)."""
    parts = raw.split(":")
    if raw.startswith("arn:") and len(parts) >= 7:
        return parts[6], parts[7] if len(parts) > 7 else ""
    if len(parts) >= 3 and parts[1] == "function":
        return parts[2], parts[3] if len(parts) > 3 else ""
    if len(parts) == 2:
        return parts[0], parts[1]
    return raw, ""


def add_dead_letter(obj, dead_letter):
    """Adds DeadLetterConfig to every function configuration in `obj` that lacks one and has a remembered target."""
    changed = False
    if isinstance(obj, list):
        for item in obj:
            changed |= add_dead_letter(item, dead_letter)
    elif isinstance(obj, dict):
        if "FunctionName" in obj and "FunctionArn" in obj and not obj.get("DeadLetterConfig"):
            target = dead_letter.get(obj["FunctionName"])
            if target:
                obj["DeadLetterConfig"] = {"TargetArn": target}
                changed = True
        for value in obj.values():
            if isinstance(value, (dict, list)):
                changed |= add_dead_letter(value, dead_letter)
    return changed


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fake-lambda"

    # ------------------------------------------------------------------ plumbing

    def log_message(self, fmt, *args):
        log(f"{self.address_string()} {fmt % args}")

    def body(self):
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def answer(self, status, body=b"", headers=(), request_id=None):
        if isinstance(body, str):
            body = body.encode()
        self.log_request(status, len(body))
        self.send_response_only(status)
        self.send_header("Date", self.date_time_string())
        self.send_header("x-amzn-RequestId", request_id or str(uuid.uuid4()))
        for k, v in headers:
            self.send_header(k, v)
        if body and not any(k.lower() == "content-type" for k, _ in headers):
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if body and self.command != "HEAD":
            self.wfile.write(body)

    def error(self, status, code, message, request_id=None, extra=None):
        doc = {"Type": "User", "message": message}
        doc.update(extra or {})
        self.answer(status, json.dumps(doc), [("x-amzn-ErrorType", code)], request_id)

    def route(self):
        url = urllib.parse.urlsplit(self.path)
        if url.path.startswith("/_fake/"):
            return self.control(url.path, url.query)
        parts = url.path.split("/")
        # ['', '2015-03-31', 'functions', NAME, 'invocations']
        if self.command == "POST" and len(parts) == 5 and url.path.startswith(API) and parts[4] == "invocations":
            query = urllib.parse.parse_qs(url.query)
            return self.invoke(urllib.parse.unquote(parts[3]), (query.get("Qualifier") or [""])[0])
        return self.forward(url)

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = route

    # ------------------------------------------------------------------ control API

    def control(self, path, query):
        state = self.server.state
        function = (urllib.parse.parse_qs(query).get("function") or [None])[0]
        if path == "/_fake/health" and self.command == "GET":
            return self.answer(200, json.dumps({"ok": True, "moto": self.server.backend.endpoint}))
        if path == "/_fake/rules" and self.command == "POST":
            try:
                rules = json.loads(self.body() or b"{}").get("rules", [])
                if not isinstance(rules, list) or not all(isinstance(r, dict) for r in rules):
                    raise ValueError("rules must be a list of objects")
            except (ValueError, AttributeError) as e:
                return self.answer(400, json.dumps({"error": str(e)}))
            state.set_rules(rules, function)
            return self.answer(200, json.dumps({"rules": len(rules)}))
        if path == "/_fake/rules" and self.command == "DELETE":
            self.body()
            state.set_rules([], function)
            return self.answer(200, b'{"rules":0}')
        if path == "/_fake/invocations" and self.command == "GET":
            return self.answer(200, state.snapshot(function))
        if path == "/_fake/invocations" and self.command == "DELETE":
            self.body()
            state.forget(function)
            return self.answer(200, b"{}")
        self.body()
        return self.answer(404, json.dumps({"error": f"no control endpoint {self.command} {path}"}))

    # ------------------------------------------------------------------ forwarding to moto

    def forward(self, url):
        body = self.body()
        backend = self.server.backend
        target = urllib.parse.urlsplit(backend.endpoint)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP and k.lower() != "host"}
        headers["Content-Length"] = str(len(body))
        conn = http.client.HTTPConnection(target.hostname, target.port, timeout=60)
        try:
            conn.request(self.command, self.path, body=body, headers=headers)
            response = conn.getresponse()
            status, reply, reply_headers = response.status, response.read(), response.getheaders()
        except OSError as e:
            return self.error(502, "ServiceException", f"fake-lambda: moto at {backend.endpoint} did not answer: {e}")
        finally:
            conn.close()
        reply = self.track_dead_letter(url, body, status, reply)
        keep = [(k, v) for k, v in reply_headers if k.lower() not in HOP_BY_HOP | {"date", "server"}]
        request_id = next((v for k, v in keep if k.lower() == "x-amzn-requestid"), None)
        keep = [(k, v) for k, v in keep if k.lower() != "x-amzn-requestid"]
        self.answer(status, reply, keep, request_id)

    def track_dead_letter(self, url, body, status, reply):
        """Remembers DeadLetterConfig from CreateFunction / UpdateFunctionConfiguration; adds it to moto's answers."""
        state = self.server.state
        parts = url.path.rstrip("/").split("/")
        name = None
        if self.command == "POST" and url.path.rstrip("/") == API.rstrip("/"):
            name = "create"
        elif self.command == "PUT" and len(parts) == 5 and parts[4] == "configuration":
            name = split_function(urllib.parse.unquote(parts[3]))[0]
        elif self.command == "DELETE" and len(parts) == 4 and url.path.startswith(API) and 200 <= status < 300:
            function, qualifier = split_function(urllib.parse.unquote(parts[3]))
            if not qualifier and "Qualifier" not in url.query:
                with state.lock:
                    state.dead_letter.pop(function, None)
        if name and 200 <= status < 300:
            try:
                request = json.loads(body or b"{}")
                if name == "create":
                    name = request.get("FunctionName", "")
                    name = split_function(name)[0]
                if "DeadLetterConfig" in request:
                    target = (request.get("DeadLetterConfig") or {}).get("TargetArn", "")
                    with state.lock:
                        if target:
                            state.dead_letter[name] = target
                        else:
                            state.dead_letter.pop(name, None)
            except (ValueError, AttributeError):
                pass
        if not 200 <= status < 300 or not reply.startswith(b"{"):
            return reply
        try:
            doc = json.loads(reply)
        except ValueError:
            return reply
        with state.lock:
            dead_letter = dict(state.dead_letter)
        return json.dumps(doc).encode() if add_dead_letter(doc, dead_letter) else reply

    # ------------------------------------------------------------------ Invoke

    def invoke(self, raw_function, query_qualifier):
        state, backend = self.server.state, self.server.backend
        request_id = str(uuid.uuid4())
        payload = self.body()
        kind = self.headers.get("X-Amz-Invocation-Type") or "RequestResponse"
        function, arn_qualifier = split_function(raw_function)
        qualifier = query_qualifier or arn_qualifier
        entry = {"function": function, "qualifier": qualifier, "type": kind,
                 "payload": payload.decode("utf-8", "replace"), "payload_bytes": len(payload),
                 "request_id": request_id, "outcome": "", "sent_to": ""}

        def done(outcome, **fields):
            entry.update(outcome=outcome, **fields)
            state.record(entry)

        if kind not in ("Event", "RequestResponse", "DryRun"):
            done("invalid-request")
            return self.error(400, "InvalidParameterValueException",
                              f"1 validation error detected: Value '{kind}' at 'invocationType' failed to satisfy "
                              "constraint: Member must satisfy enum value set: [Event, RequestResponse, DryRun]",
                              request_id)
        limit = EVENT_LIMIT if kind == "Event" else SYNC_LIMIT
        if len(payload) > limit:
            done("too-large", payload="")
            return self.error(413, "RequestEntityTooLargeException",
                              f"Request must be smaller than {limit} bytes for the InvokeFunction operation",
                              request_id)
        try:
            args = {"FunctionName": function}
            if qualifier:
                args["Qualifier"] = qualifier
            config = backend.lambda_.get_function_configuration(**args)
        except botocore.exceptions.ClientError as e:
            status = e.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 500)
            code = e.response.get("Error", {}).get("Code", "ServiceException")
            message = e.response.get("Error", {}).get("Message", str(e))
            done("not-found" if status == 404 else "error")
            return self.error(status, code, message, request_id)
        except botocore.exceptions.BotoCoreError as e:
            done("error")
            return self.error(502, "ServiceException", f"fake-lambda: moto did not answer: {e}", request_id)
        if kind == "DryRun":
            done("dry-run")
            return self.answer(204, b"", [], request_id)
        if payload:
            try:
                json.loads(payload)
            except ValueError as e:
                done("invalid-request")
                return self.error(400, "InvalidRequestContentException",
                                  f"Could not parse request body into json: {e}", request_id)

        outcome, rule = state.decide(function, payload, kind)
        if outcome == "throttled":
            done("throttled")
            return self.error(429, "TooManyRequestsException", "Rate Exceeded.", request_id,
                              {"message": "Rate Exceeded.",
                               "Reason": "ReservedFunctionConcurrentInvocationLimitExceeded"})
        version = config.get("Version") or "$LATEST"
        if outcome == "ok":
            done("ok")
            if kind == "Event":
                return self.answer(202, b"", [], request_id)
            return self.answer(200, b"null", [("X-Amz-Executed-Version", version)], request_id)

        error_type = str(rule.get("error_type") or "Error")
        error_message = str(rule.get("error_message") or f"fake-lambda: the payload contains "
                                                             f"{rule.get('fail_if_contains')!r}")
        done("failed", error_type=error_type, error_message=error_message)
        if kind == "RequestResponse":
            return self.answer(200, json.dumps({"errorMessage": error_message, "errorType": error_type}),
                               [("X-Amz-Function-Error", "Unhandled"), ("X-Amz-Executed-Version", version)],
                               request_id)
        failure = Failure(backend, state, entry, config, qualifier or version, payload, request_id, error_type,
                          error_message)
        delay = self.server.dlq_delay_ms
        if delay > 0:
            threading.Timer(delay / 1000.0, failure.deliver).start()
        else:
            failure.deliver()  # before the 202, so a test finds the message as soon as Invoke returns
        return self.answer(202, b"", [], request_id)


class Failure:
    """Where a failed Event invocation ends up once Lambda's retries are exhausted (see doc/development.md)."""

    def __init__(self, backend, state, entry, config, qualifier, payload, request_id, error_type, error_message):
        self.backend, self.state, self.entry, self.config = backend, state, entry, config
        self.qualifier, self.payload, self.request_id = qualifier, payload, request_id
        self.error_type, self.error_message = error_type, error_message

    def deliver(self):
        try:
            self.deliver_or_raise()
        except Exception as e:  # noqa: BLE001: a failed delivery is recorded, as Lambda counts DeadLetterErrors
            log(f"delivery for {self.request_id} failed: {e}")
            self.state.update(self.entry, delivery_error=str(e))

    def event_invoke_config(self):
        args = {"FunctionName": self.config["FunctionName"]}
        try:
            return self.backend.lambda_.get_function_event_invoke_config(**args)
        except botocore.exceptions.ClientError as e:
            if e.response.get("ResponseMetadata", {}).get("HTTPStatusCode") == 404:
                return {}
            raise

    def queue_url(self, arn):
        parts = arn.split(":")
        if len(parts) != 6 or parts[2] != "sqs":
            raise ValueError(f"{arn} is not an SQS queue ARN (only SQS targets are supported)")
        sqs = self.backend.client("sqs", parts[3])
        return sqs, sqs.get_queue_url(QueueName=parts[5], QueueOwnerAWSAccountId=parts[4])["QueueUrl"]

    def deliver_or_raise(self):
        invoke_config = self.event_invoke_config()
        destination = ((invoke_config.get("DestinationConfig") or {}).get("OnFailure") or {}).get("Destination")
        if destination:
            retries = invoke_config.get("MaximumRetryAttempts")
            now = datetime.datetime.now(datetime.timezone.utc)
            try:
                request_payload = json.loads(self.payload) if self.payload else None
            except ValueError:
                request_payload = self.payload.decode("utf-8", "replace")
            record = {
                "version": "1.0",
                "timestamp": now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z",
                "requestContext": {
                    "requestId": self.request_id,
                    "functionArn": f"{self.config['FunctionArn']}:{self.qualifier}",
                    "condition": "RetriesExhausted",
                    "approximateInvokeCount": 1 + (2 if retries is None else int(retries)),
                },
                "requestPayload": request_payload,
                "responseContext": {"statusCode": 200, "executedVersion": self.config.get("Version") or "$LATEST",
                                    "functionError": "Unhandled"},
                "responsePayload": {"errorMessage": self.error_message, "errorType": self.error_type},
            }
            parts = destination.split(":")
            if len(parts) == 6 and parts[2] == "s3":
                # An S3 destination (on failure only): one object per event under Lambda's fixed prefix
                # (invocation-async-retain-records.html).
                bucket = parts[5]
                key = (f"aws/lambda/async/{self.config['FunctionName']}/{now:%Y/%m/%d}/"
                       f"{now:%Y-%m-%dT%H.%M.%S}-{uuid.uuid4()}")
                self.backend.client("s3", self.backend.region).put_object(
                    Bucket=bucket, Key=key, Body=json.dumps(record).encode())
                self.state.update(self.entry, sent_to=f"s3://{bucket}/{key}", sent_as="destination-record")
                return
            sqs, url = self.queue_url(destination)
            sqs.send_message(QueueUrl=url, MessageBody=json.dumps(record))
            self.state.update(self.entry, sent_to=url, sent_as="destination-record")
            return
        target = (self.config.get("DeadLetterConfig") or {}).get("TargetArn")
        if not target:
            with self.state.lock:
                target = self.state.dead_letter.get(self.config["FunctionName"], "")
        if not target:
            self.state.update(self.entry, sent_as="discarded")  # no DLQ, no destination: Lambda drops the event
            return
        sqs, url = self.queue_url(target)
        message = self.error_message.encode()[:ERROR_MESSAGE_LIMIT].decode("utf-8", "ignore")
        sqs.send_message(
            QueueUrl=url, MessageBody=self.payload.decode("utf-8"),
            MessageAttributes={
                "RequestID": {"DataType": "String", "StringValue": self.request_id},
                "ErrorCode": {"DataType": "Number", "StringValue": "200"},
                "ErrorMessage": {"DataType": "String", "StringValue": message or "Unhandled"},
            })
        self.state.update(self.entry, sent_to=url, sent_as="dead-letter")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--port", type=int, default=int(os.environ.get("DLQ_FAKE_LAMBDA_PORT", "5003")))
    p.add_argument("--moto-endpoint", default=f"http://127.0.0.1:{os.environ.get('DLQ_MOTO_PORT', '5000')}")
    p.add_argument("--region", default=os.environ.get("DLQ_STANDIN_REGION", "us-east-1"))
    a = p.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", a.port), Handler)
    server.daemon_threads = True
    server.state = State()
    server.backend = Backend(a.moto_endpoint, a.region)
    server.dlq_delay_ms = int(os.environ.get("DLQ_FAKE_LAMBDA_DLQ_DELAY_MS", "0") or 0)
    log(f"fake-lambda on 127.0.0.1:{a.port}, moto {a.moto_endpoint}, region {a.region}, "
        f"DLQ delay {server.dlq_delay_ms} ms")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
