// Fixtures made on moto with the raw APIs, for the tests of the CloudWatch
// Logs and Lambda clients and of the cause lookup: log groups with their
// events, IAM roles, Lambda functions and event source mappings. Each fails
// the calling test on an error.
#pragma once

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "aws/aws_client.h"
#include "cloudwatch/cloudwatch_client.h"
#include "common/json_writer.h"
#include "common/strings.h"
#include "harness.h"

namespace dlq::it {

inline int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// One AWS JSON 1.1 CloudWatch Logs call for a fixture; fails the test on an error.
inline void LogsCall(AwsClient& aws, const std::string& operation, const std::string& body) {
  AwsRequest r;
  r.operation = operation;
  r.headers = {{"Content-Type", "application/x-amz-json-1.1"}, {"X-Amz-Target", "Logs_20140328." + operation}};
  r.body = body;
  auto response = aws.Call(r);
  ASSERT_TRUE(response.ok()) << operation << ": " << response.status().ToString();
}

struct LogLine {
  std::string stream;
  int64_t timestamp_ms;
  std::string message;
};

// Creates the group and its streams and writes the lines (in time order per stream).
inline void WriteLogs(AwsClient& aws, const std::string& group, const std::vector<LogLine>& lines) {
  LogsCall(aws, "CreateLogGroup", fmt::format(R"({{"logGroupName":"{}"}})", group));
  std::vector<std::string> streams;
  for (const LogLine& l : lines) {
    if (std::find(streams.begin(), streams.end(), l.stream) == streams.end()) streams.push_back(l.stream);
  }
  for (const std::string& stream : streams) {
    LogsCall(aws, "CreateLogStream", fmt::format(R"({{"logGroupName":"{}","logStreamName":"{}"}})", group, stream));
    JsonWriter w;
    w.BeginObject().Key("logGroupName").String(group).Key("logStreamName").String(stream);
    w.Key("logEvents").BeginArray();
    for (const LogLine& l : lines) {
      if (l.stream != stream) continue;
      w.BeginObject().Key("timestamp").Int(l.timestamp_ms).Key("message").String(l.message).EndObject();
    }
    w.EndArray().EndObject();
    LogsCall(aws, "PutLogEvents", w.Take());
  }
}

// A REST-JSON Lambda call for a fixture; returns the body, fails the test on an error.
inline std::string LambdaCall(AwsClient& aws, const std::string& method, const std::string& path,
                              const std::string& body) {
  AwsRequest r;
  r.operation = method + " " + path;
  r.method = method;
  r.path = path;
  r.headers = {{"Content-Type", "application/json"}};
  r.body = body;
  auto response = aws.Call(r);
  EXPECT_TRUE(response.ok()) << path << ": " << response.status().ToString();
  return response.ok() ? response->body : std::string();
}

// An IAM role moto's Lambda accepts (it checks the role exists), through IAM's Query API.
inline std::string CreateRole(AwsServices& svc, const std::string& endpoint, const std::string& name) {
  AwsClient iam(ServiceEndpoint{"iam", "us-east-1", endpoint, false}, svc.transport(), svc.credentials(),
                DefaultClock());
  AwsRequest r;
  r.operation = "CreateRole";
  r.headers = {{"Content-Type", "application/x-www-form-urlencoded; charset=utf-8"}};
  r.body = EncodeForm(
      {{"Action", "CreateRole"},
       {"Version", "2010-05-08"},
       {"RoleName", name},
       {"AssumeRolePolicyDocument", R"({"Version":"2012-10-17","Statement":[{"Effect":"Allow",)"
                                    R"("Principal":{"Service":"lambda.amazonaws.com"},"Action":"sts:AssumeRole"}]})"}});
  auto response = iam.Call(r);
  EXPECT_TRUE(response.ok()) << response.status().ToString();
  const std::string& xml = response.ok() ? response->body : std::string();
  const size_t open = xml.find("<Arn>");
  const size_t close = xml.find("</Arn>");
  EXPECT_TRUE(open != std::string::npos && close != std::string::npos) << xml;
  return open == std::string::npos || close == std::string::npos ? std::string()
                                                                 : xml.substr(open + 5, close - open - 5);
}

// A deployment package: a zip holding app.py, base64 (python3's zipfile).
inline std::string ZipBase64() {
  auto r = RunShell(
      "python3 -c 'import base64,io,zipfile; b=io.BytesIO(); z=zipfile.ZipFile(b,\"w\"); "
      "z.writestr(\"app.py\",\"def handler(event, context):\\n    return None\\n\"); z.close(); "
      "print(base64.b64encode(b.getvalue()).decode())'",
      /*merge_stderr=*/false);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  return std::string(Trim(r.out));
}

inline std::string QueueArn(AwsServices& svc, const std::string& url) {
  auto a = svc.sqs().GetQueueAttributes(url, {"QueueArn"});
  EXPECT_TRUE(a.ok()) << a.status().ToString();
  return a.ok() ? a->at("QueueArn") : std::string();
}

}  // namespace dlq::it
