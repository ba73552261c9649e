#include "replay/checkpoint.h"

#include <fmt/format.h>
#include <simdjson.h>

#include "common/crypto.h"
#include "common/file_util.h"
#include "common/json_writer.h"
#include "common/log.h"

namespace dlq {

std::string CheckpointIdentityText(std::string_view source, std::string_view filter, std::string_view destination,
                                   std::string_view transform) {
  return fmt::format("source={}\nfilter={}\ndestination={}\ntransform={}\n", source, filter, destination, transform);
}

std::string CheckpointIdentity(std::string_view identity_text) {
  return Sha256Hex(identity_text);
}

std::string ChainNext(std::string_view chain, std::string_view message_id) {
  std::string buf;
  buf.reserve(chain.size() + 1 + message_id.size());
  buf.append(chain);
  buf.push_back('\n');
  buf.append(message_id);
  return Sha256Hex(buf);
}

std::string SerializeCheckpoint(const CheckpointState& s) {
  JsonWriter w;
  w.BeginObject().Key("version").Int(kCheckpointVersion);
  w.Key("identity").String(s.identity).Key("identity_text").String(s.identity_text);
  w.Key("done").Uint(s.done).Key("sent").Uint(s.sent).Key("failed").Uint(s.failed);
  w.Key("chain").String(s.chain);
  w.Key("failed_ids").BeginArray();
  for (const std::string& id : s.failed_ids) w.String(id);
  w.EndArray().EndObject();
  std::string out = w.Take();
  out += '\n';
  return out;
}

Result<CheckpointState> ParseCheckpoint(std::string_view text) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  auto bad = [](std::string_view why) { return InvalidArgument(fmt::format("not a replay checkpoint: {}", why)); };
  if (parser.parse(text.data(), text.size()).get(doc) != simdjson::SUCCESS) return bad("invalid JSON");
  simdjson::dom::object obj;
  if (doc.get_object().get(obj) != simdjson::SUCCESS) return bad("not a JSON object");
  int64_t version = 0;
  if (obj["version"].get_int64().get(version) != simdjson::SUCCESS) return bad("no \"version\"");
  if (version != kCheckpointVersion) {
    return bad(fmt::format("version {} (this build reads version {})", version, kCheckpointVersion));
  }
  CheckpointState s;
  auto str = [&](const char* field, std::string& out) -> Status {
    std::string_view v;
    if (obj[field].get_string().get(v) != simdjson::SUCCESS) return bad(fmt::format("\"{}\" must be a string", field));
    out.assign(v);
    return Status::Ok();
  };
  auto num = [&](const char* field, uint64_t& out) -> Status {
    if (obj[field].get_uint64().get(out) != simdjson::SUCCESS) {
      return bad(fmt::format("\"{}\" must be a non-negative integer", field));
    }
    return Status::Ok();
  };
  DLQ_RETURN_IF_ERROR(str("identity", s.identity));
  DLQ_RETURN_IF_ERROR(str("identity_text", s.identity_text));
  DLQ_RETURN_IF_ERROR(str("chain", s.chain));
  DLQ_RETURN_IF_ERROR(num("done", s.done));
  DLQ_RETURN_IF_ERROR(num("sent", s.sent));
  DLQ_RETURN_IF_ERROR(num("failed", s.failed));
  simdjson::dom::array ids;
  if (obj["failed_ids"].get_array().get(ids) != simdjson::SUCCESS) return bad("\"failed_ids\" must be an array");
  for (simdjson::dom::element e : ids) {
    std::string_view id;
    if (e.get_string().get(id) != simdjson::SUCCESS) return bad("\"failed_ids\" must hold strings");
    s.failed_ids.emplace_back(id);
  }
  if (s.identity != CheckpointIdentity(s.identity_text)) return bad("identity does not match identity_text");
  if ((s.done == 0) != s.chain.empty()) return bad("\"chain\" does not agree with \"done\"");
  if (s.failed_ids.size() > s.done) return bad("more failed ids than finished items");
  return s;
}

Result<std::optional<CheckpointState>> LoadCheckpoint(const std::string& path) {
  auto text = ReadFileAtMost(path, kMaxCheckpointBytes, "checkpoint");
  if (!text.ok() && text.status().code() == ErrorCode::kNotFound) return std::optional<CheckpointState>();
  if (!text.ok()) return text.status();
  auto parsed = ParseCheckpoint(*text);
  if (!parsed.ok()) return parsed.status().WithContext(fmt::format("checkpoint {}", path));
  return std::optional<CheckpointState>(std::move(parsed).value());
}

Status SaveCheckpoint(const std::string& path, const CheckpointState& state, mode_t mode) {
  Status st = WriteFileAtomically(path, SerializeCheckpoint(state), mode);
  return st.ok() ? st : st.WithContext("checkpoint");
}

}  // namespace dlq
