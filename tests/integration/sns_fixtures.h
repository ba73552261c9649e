// Fixtures for SNS on moto: one query call, and the text of an element of its answer.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "aws/aws_client.h"
#include "moto_fixtures.h"

namespace dlq::it {

// The text of the first <tag> element of `xml` ("" when absent).
inline std::string XmlText(const std::string& xml, const std::string& tag) {
  const size_t open = xml.find("<" + tag + ">");
  const size_t close = xml.find("</" + tag + ">");
  if (open == std::string::npos || close == std::string::npos || close < open) return "";
  return xml.substr(open + tag.size() + 2, close - open - tag.size() - 2);
}

// One SNS query call for a fixture; returns the body, fails the test on an error.
inline std::string SnsCall(AwsClient& aws, const std::string& action, const FormParams& params) {
  FormParams form = {{"Action", action}, {"Version", "2010-03-31"}};
  form.insert(form.end(), params.begin(), params.end());
  AwsRequest r;
  r.operation = action;
  r.headers = {{"Content-Type", "application/x-www-form-urlencoded; charset=utf-8"}};
  r.body = EncodeForm(form);
  auto response = aws.Call(r);
  EXPECT_TRUE(response.ok()) << r.operation << ": " << response.status().ToString();
  return response.ok() ? response->body : std::string();
}

}  // namespace dlq::it
