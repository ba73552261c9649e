#include "cloudwatch/cloudwatch_client.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <functional>
#include <pugixml.hpp>
#include <set>

#include "common/strings.h"
#include "common/time_util.h"
#include "common/xml.h"

namespace dlq {
namespace {

constexpr std::string_view kVersion = "2010-08-01";
constexpr size_t kMaxDimensions = 30;

std::string_view LocalName(const pugi::xml_node& node) {
  return XmlLocalName(node);
}
pugi::xml_node Child(const pugi::xml_node& parent, std::string_view name) {
  return XmlChild(parent, name);
}
std::string ChildText(const pugi::xml_node& parent, std::string_view name) {
  return XmlChildText(parent, name, /*trim=*/true);
}

// The <member> children of `list`.
std::vector<pugi::xml_node> Members(const pugi::xml_node& list) {
  std::vector<pugi::xml_node> out;
  if (!list) return out;
  for (pugi::xml_node c = list.first_child(); c; c = c.next_sibling()) {
    if (c.type() == pugi::node_element && LocalName(c) == "member") out.push_back(c);
  }
  return out;
}

std::optional<double> ParseDouble(std::string_view s) {
  s = Trim(s);
  double v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
  return v;
}

std::string FormatDouble(double v) {
  return fmt::format("{}", v);
}

void AddDimensions(FormParams& params, const std::string& prefix, const std::vector<MetricDimension>& dims) {
  for (size_t i = 0; i < dims.size(); ++i) {
    std::string p = fmt::format("{}.Dimensions.member.{}", prefix, i + 1);
    params.emplace_back(p + ".Name", dims[i].name);
    params.emplace_back(p + ".Value", dims[i].value);
  }
}

Status ValidateDatum(const MetricDatum& d, size_t index) {
  if (d.metric_name.empty()) return InvalidArgument(fmt::format("PutMetricData: datum {} has no metric name", index));
  if (!std::isfinite(d.value)) {
    return InvalidArgument(fmt::format("PutMetricData: metric {} has a non-finite value", d.metric_name));
  }
  if (d.dimensions.size() > kMaxDimensions) {
    return InvalidArgument(fmt::format("PutMetricData: metric {} has {} dimensions, more than {}", d.metric_name,
                                       d.dimensions.size(), kMaxDimensions));
  }
  return Status::Ok();
}

}  // namespace

MetricDataQuery SqsQueueMetricQuery(std::string id, std::string queue_name, std::string metric_name, std::string stat,
                                    std::chrono::seconds period) {
  MetricDataQuery q;
  q.id = std::move(id);
  q.metric_namespace = "AWS/SQS";
  q.metric_name = std::move(metric_name);
  q.dimensions.push_back({"QueueName", std::move(queue_name)});
  q.stat = std::move(stat);
  q.period = period;
  return q;
}

FormParams BuildGetMetricDataParams(const std::vector<MetricDataQuery>& queries, SystemTime start, SystemTime end,
                                    const std::string& next_token) {
  FormParams params;
  params.emplace_back("Action", "GetMetricData");
  params.emplace_back("Version", std::string(kVersion));
  for (size_t i = 0; i < queries.size(); ++i) {
    const MetricDataQuery& q = queries[i];
    std::string p = fmt::format("MetricDataQueries.member.{}", i + 1);
    params.emplace_back(p + ".Id", q.id);
    params.emplace_back(p + ".MetricStat.Metric.Namespace", q.metric_namespace);
    params.emplace_back(p + ".MetricStat.Metric.MetricName", q.metric_name);
    AddDimensions(params, p + ".MetricStat.Metric", q.dimensions);
    params.emplace_back(p + ".MetricStat.Period", std::to_string(q.period.count()));
    params.emplace_back(p + ".MetricStat.Stat", q.stat);
    if (!q.unit.empty()) params.emplace_back(p + ".MetricStat.Unit", q.unit);
    params.emplace_back(p + ".ReturnData", "true");
  }
  params.emplace_back("StartTime", FormatIso8601(start));
  params.emplace_back("EndTime", FormatIso8601(end));
  params.emplace_back("ScanBy", "TimestampAscending");
  if (!next_token.empty()) params.emplace_back("NextToken", next_token);
  return params;
}

FormParams BuildPutMetricDataParams(const std::string& metric_namespace, std::span<const MetricDatum> datums) {
  FormParams params;
  params.emplace_back("Action", "PutMetricData");
  params.emplace_back("Version", std::string(kVersion));
  params.emplace_back("Namespace", metric_namespace);
  for (size_t i = 0; i < datums.size(); ++i) {
    const MetricDatum& d = datums[i];
    std::string p = fmt::format("MetricData.member.{}", i + 1);
    params.emplace_back(p + ".MetricName", d.metric_name);
    AddDimensions(params, p, d.dimensions);
    params.emplace_back(p + ".Value", FormatDouble(d.value));
    if (!d.unit.empty()) params.emplace_back(p + ".Unit", d.unit);
    if (d.timestamp) params.emplace_back(p + ".Timestamp", FormatIso8601(*d.timestamp));
  }
  return params;
}

Result<GetMetricDataPage> ParseGetMetricDataResponse(std::string_view xml) {
  constexpr std::string_view kWhat = "GetMetricData response";
  pugi::xml_document doc;
  pugi::xml_parse_result parsed = doc.load_buffer(xml.data(), xml.size(), pugi::parse_default, pugi::encoding_utf8);
  if (!parsed)
    return Internal(fmt::format("{}: malformed XML at offset {}: {}", kWhat, parsed.offset, parsed.description()));
  pugi::xml_node root = doc.document_element();
  if (!root || LocalName(root) != "GetMetricDataResponse") {
    return Internal(fmt::format("{}: unexpected root element <{}>", kWhat, root ? LocalName(root) : ""));
  }
  pugi::xml_node result = Child(root, "GetMetricDataResult");
  if (!result) return Internal(fmt::format("{}: missing <GetMetricDataResult>", kWhat));

  GetMetricDataPage page;
  page.next_token = ChildText(result, "NextToken");
  for (const pugi::xml_node& m : Members(Child(result, "MetricDataResults"))) {
    MetricDataSeries s;
    s.id = ChildText(m, "Id");
    if (s.id.empty()) return Internal(fmt::format("{}: result without <Id>", kWhat));
    s.label = ChildText(m, "Label");
    s.status_code = ChildText(m, "StatusCode");
    for (const pugi::xml_node& t : Members(Child(m, "Timestamps"))) {
      auto ts = ParseIso8601(Trim(t.text().get()));
      if (!ts) return Internal(fmt::format("{}: bad timestamp '{}' in {}", kWhat, t.text().get(), s.id));
      s.timestamps.push_back(*ts);
    }
    for (const pugi::xml_node& v : Members(Child(m, "Values"))) {
      auto value = ParseDouble(v.text().get());
      if (!value) return Internal(fmt::format("{}: bad value '{}' in {}", kWhat, v.text().get(), s.id));
      s.values.push_back(*value);
    }
    if (s.timestamps.size() != s.values.size()) {
      return Internal(
          fmt::format("{}: {} has {} timestamps but {} values", kWhat, s.id, s.timestamps.size(), s.values.size()));
    }
    page.results.push_back(std::move(s));
  }
  return page;
}

Result<std::map<std::string, MetricDataSeries>> CloudWatchClient::GetMetricData(
    const std::vector<MetricDataQuery>& queries, SystemTime start, SystemTime end) {
  if (queries.empty()) return std::map<std::string, MetricDataSeries>{};
  if (queries.size() > kMaxQueriesPerGet) {
    return InvalidArgument(
        fmt::format("GetMetricData: {} queries, more than {} per call", queries.size(), kMaxQueriesPerGet));
  }
  std::set<std::string> ids;
  for (const MetricDataQuery& q : queries) {
    if (q.id.empty() || !ids.insert(q.id).second) {
      return InvalidArgument(fmt::format("GetMetricData: query id '{}' is empty or repeated", q.id));
    }
  }
  if (end <= start) return InvalidArgument("GetMetricData: end time must be after start time");

  std::map<std::string, MetricDataSeries> out;
  std::string token;
  std::set<std::string> seen_tokens;
  for (;;) {
    AwsRequest r;
    r.operation = "GetMetricData";
    r.resource = fmt::format("cloudwatch {} queries", queries.size());
    r.method = "POST";
    r.path = "/";
    r.headers.emplace_back("Content-Type", "application/x-www-form-urlencoded; charset=utf-8");
    r.body = EncodeForm(BuildGetMetricDataParams(queries, start, end, token));
    DLQ_ASSIGN_OR_RETURN(HttpResponse response, client_.Call(r));
    auto page = ParseGetMetricDataResponse(response.body);
    if (!page.ok()) return page.status();
    for (MetricDataSeries& s : page->results) {
      auto [it, inserted] = out.try_emplace(s.id, s);
      if (inserted) continue;
      MetricDataSeries& acc = it->second;
      acc.timestamps.insert(acc.timestamps.end(), s.timestamps.begin(), s.timestamps.end());
      acc.values.insert(acc.values.end(), s.values.begin(), s.values.end());
      if (acc.status_code == "Complete" || acc.status_code.empty()) acc.status_code = s.status_code;
    }
    token = std::move(page->next_token);
    if (token.empty()) break;
    if (!seen_tokens.insert(token).second) {
      return Internal("GetMetricData: CloudWatch returned the same NextToken twice");
    }
  }
  for (const MetricDataQuery& q : queries) {
    auto [it, inserted] = out.try_emplace(q.id);
    if (inserted) it->second.id = q.id;  // no datapoints at all
  }
  return out;
}

Status CloudWatchClient::PutMetricData(const std::string& metric_namespace, const std::vector<MetricDatum>& datums) {
  if (metric_namespace.empty() || StartsWith(metric_namespace, "AWS/")) {
    return InvalidArgument(fmt::format("PutMetricData: bad namespace '{}'", metric_namespace));
  }
  for (size_t i = 0; i < datums.size(); ++i) DLQ_RETURN_IF_ERROR(ValidateDatum(datums[i], i));

  // Sends datums [begin, begin + count), halving batches whose body is too large.
  std::function<Status(size_t, size_t)> send = [&](size_t begin, size_t count) -> Status {
    std::span<const MetricDatum> batch(datums.data() + begin, count);
    std::string body = EncodeForm(BuildPutMetricDataParams(metric_namespace, batch));
    if (body.size() > kMaxPutBodyBytes && count > 1) {
      DLQ_RETURN_IF_ERROR(send(begin, count / 2));
      return send(begin + count / 2, count - count / 2);
    }
    AwsRequest r;
    r.operation = "PutMetricData";
    r.resource = fmt::format("cloudwatch namespace {}", metric_namespace);
    r.method = "POST";
    r.path = "/";
    r.headers.emplace_back("Content-Type", "application/x-www-form-urlencoded; charset=utf-8");
    r.body = std::move(body);
    return client_.Call(r).status();
  };
  for (size_t begin = 0; begin < datums.size(); begin += kMaxDatumsPerPut) {
    DLQ_RETURN_IF_ERROR(send(begin, std::min(kMaxDatumsPerPut, datums.size() - begin)));
  }
  return Status::Ok();
}

}  // namespace dlq
