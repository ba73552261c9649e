#include "s3/xml_codec.h"

#include <fmt/format.h>

#include <charconv>
#include <cstring>
#include <pugixml.hpp>

#include "common/markup.h"
#include "common/strings.h"
#include "common/time_util.h"
#include "common/xml.h"

namespace dlq {
namespace {

std::string_view LocalName(const pugi::xml_node& node) {
  return XmlLocalName(node);
}
pugi::xml_node Child(const pugi::xml_node& parent, std::string_view name) {
  return XmlChild(parent, name);
}
std::string ChildText(const pugi::xml_node& parent, std::string_view name) {
  return XmlChildText(parent, name, /*trim=*/false);
}

// The document element, or an empty node when `xml` does not parse.
pugi::xml_node Parse(pugi::xml_document& doc, std::string_view xml, std::string* error) {
  pugi::xml_parse_result r =
      doc.load_buffer(xml.data(), xml.size(), pugi::parse_default & ~pugi::parse_pi, pugi::encoding_utf8);
  if (!r) {
    *error = fmt::format("malformed XML at offset {}: {}", r.offset, r.description());
    return {};
  }
  pugi::xml_node root = doc.document_element();
  if (!root) *error = "XML document has no root element";
  return root;
}

std::optional<uint64_t> ParseU64(std::string_view s) {
  s = Trim(s);
  uint64_t v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

// S3's encoding-type=url uses form encoding: '+' is a space.
std::string FormDecode(std::string_view s) {
  std::string plus_decoded(s);
  for (char& c : plus_decoded) {
    if (c == '+') c = ' ';
  }
  return UriDecode(plus_decoded);
}

S3XmlError ErrorFromNode(const pugi::xml_node& root) {
  S3XmlError e;
  e.code = ChildText(root, "Code");
  e.message = ChildText(root, "Message");
  e.request_id = ChildText(root, "RequestId");
  e.region = ChildText(root, "Region");
  return e;
}

Status UnexpectedRoot(std::string_view what, const pugi::xml_node& root) {
  return Internal(fmt::format("{}: unexpected XML root element <{}>", what, LocalName(root)));
}

}  // namespace

std::optional<S3XmlError> ParseS3Error(std::string_view xml) {
  pugi::xml_document doc;
  std::string error;
  pugi::xml_node root = Parse(doc, xml, &error);
  if (!root) return std::nullopt;
  if (LocalName(root) == "ErrorResponse") root = Child(root, "Error");
  if (!root || LocalName(root) != "Error") return std::nullopt;
  return ErrorFromNode(root);
}

Result<ListObjectsV2Result> ParseListObjectsV2(std::string_view xml) {
  constexpr std::string_view kWhat = "ListObjectsV2 response";
  pugi::xml_document doc;
  std::string error;
  pugi::xml_node root = Parse(doc, xml, &error);
  if (!root) return Internal(fmt::format("{}: {}", kWhat, error));
  if (LocalName(root) != "ListBucketResult") return UnexpectedRoot(kWhat, root);

  const bool url_encoded = IEquals(Trim(ChildText(root, "EncodingType")), "url");
  auto decode = [&](const std::string& s) { return url_encoded ? FormDecode(s) : s; };

  ListObjectsV2Result out;
  std::string truncated = std::string(Trim(ChildText(root, "IsTruncated")));
  out.is_truncated = IEquals(truncated, "true");
  out.next_continuation_token = ChildText(root, "NextContinuationToken");
  if (out.is_truncated && out.next_continuation_token.empty()) {
    return Internal(fmt::format("{}: IsTruncated is true but NextContinuationToken is missing", kWhat));
  }
  for (pugi::xml_node c = root.first_child(); c; c = c.next_sibling()) {
    if (c.type() != pugi::node_element) continue;
    std::string_view name = LocalName(c);
    if (name == "Contents") {
      ObjectInfo info;
      pugi::xml_node key = Child(c, "Key");
      if (!key) return Internal(fmt::format("{}: <Contents> without <Key>", kWhat));
      info.key = decode(key.text().get());
      std::string size_text = ChildText(c, "Size");
      auto size = ParseU64(size_text);
      if (!size) return Internal(fmt::format("{}: bad <Size> '{}' for key '{}'", kWhat, size_text, info.key));
      info.size = *size;
      info.etag = UnquoteEtag(ChildText(c, "ETag"));
      std::string modified = ChildText(c, "LastModified");
      if (!modified.empty()) {
        auto t = ParseIso8601(Trim(modified));
        if (!t) return Internal(fmt::format("{}: bad <LastModified> '{}' for key '{}'", kWhat, modified, info.key));
        info.last_modified = *t;
      }
      out.objects.push_back(std::move(info));
    } else if (name == "CommonPrefixes") {
      pugi::xml_node prefix = Child(c, "Prefix");
      if (!prefix) return Internal(fmt::format("{}: <CommonPrefixes> without <Prefix>", kWhat));
      out.common_prefixes.push_back(decode(prefix.text().get()));
    }
  }
  return out;
}

Result<std::string> ParseInitiateMultipartUpload(std::string_view xml) {
  constexpr std::string_view kWhat = "CreateMultipartUpload response";
  pugi::xml_document doc;
  std::string error;
  pugi::xml_node root = Parse(doc, xml, &error);
  if (!root) return Internal(fmt::format("{}: {}", kWhat, error));
  if (LocalName(root) != "InitiateMultipartUploadResult") return UnexpectedRoot(kWhat, root);
  std::string upload_id(Trim(ChildText(root, "UploadId")));
  if (upload_id.empty()) return Internal(fmt::format("{}: missing <UploadId>", kWhat));
  return upload_id;
}

Result<CompleteMultipartUploadResult> ParseCompleteMultipartUpload(std::string_view xml) {
  constexpr std::string_view kWhat = "CompleteMultipartUpload response";
  pugi::xml_document doc;
  std::string error;
  pugi::xml_node root = Parse(doc, xml, &error);
  if (!root) return Internal(fmt::format("{}: {}", kWhat, error));
  if (LocalName(root) == "Error") {
    S3XmlError e = ErrorFromNode(root);
    bool transient = e.code == "InternalError" || e.code == "ServiceUnavailable" || e.code == "SlowDown" ||
                     e.code == "RequestTimeout";
    std::string message =
        fmt::format("{}: HTTP 200 with an error body: {}: {}", kWhat, e.code.empty() ? "(no code)" : e.code, e.message);
    Status st = transient ? Unavailable(std::move(message)) : Internal(std::move(message));
    return st.WithAws(AwsErrorInfo{e.code, 200, e.request_id});
  }
  // S3 answers <CompleteMultipartUploadResult>; some compatible servers
  // (moto) name it <CompleteMultipartUploadResponse> with the same children.
  if (LocalName(root) != "CompleteMultipartUploadResult" && LocalName(root) != "CompleteMultipartUploadResponse") {
    return UnexpectedRoot(kWhat, root);
  }
  CompleteMultipartUploadResult out;
  out.etag = UnquoteEtag(Trim(ChildText(root, "ETag")));
  out.location = ChildText(root, "Location");
  if (out.etag.empty()) return Internal(fmt::format("{}: missing <ETag>", kWhat));
  return out;
}

std::string BuildCompleteMultipartUploadXml(const std::vector<CompletedPart>& parts) {
  std::string xml = "<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">";
  for (const CompletedPart& p : parts) {
    xml += fmt::format("<Part><PartNumber>{}</PartNumber><ETag>&quot;{}&quot;</ETag></Part>", p.part_number,
                       XmlEscape(p.etag));
  }
  xml += "</CompleteMultipartUpload>";
  return xml;
}

std::string BuildCreateBucketConfigurationXml(std::string_view region) {
  if (region.empty() || region == "us-east-1") return "";
  return fmt::format(
      "<CreateBucketConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
      "<LocationConstraint>{}</LocationConstraint></CreateBucketConfiguration>",
      XmlEscape(region));
}

std::string XmlEscape(std::string_view text) {
  return EscapeMarkup(text, "&apos;");
}

std::string UnquoteEtag(std::string_view etag) {
  etag = Trim(etag);
  if (StartsWith(etag, "W/")) etag.remove_prefix(2);
  if (etag.size() >= 2 && etag.front() == '"' && etag.back() == '"') etag = etag.substr(1, etag.size() - 2);
  return std::string(etag);
}

}  // namespace dlq
