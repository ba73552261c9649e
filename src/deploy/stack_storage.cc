// Where the archive lives: the bucket (--create-bucket) and the Glue
// database and table for Athena (stack_internal.h).
#include <fmt/format.h>

#include <optional>
#include <string>
#include <vector>

#include "archive/key_layout.h"
#include "common/strings.h"
#include "deploy/stack_internal.h"
#include "query/athena_ddl.h"

namespace dlq::stack_internal {
namespace {

// A location under the archive bucket, following the bucket parameter or resource.
TemplateValue InBucket(const std::string& text, const std::string& bucket) {
  const std::string head = "s3://" + bucket + "/";
  if (StartsWith(text, head)) {
    return Sub(fmt::format("s3://${{{}}}/{}", kBucket, SubLiteral(text.substr(head.size()))));
  }
  return TemplateValue(text);
}

// The Glue database and table: `ddl`'s table definition (BuildAthenaTable),
// its locations following the ArchiveBucket parameter or resource.
Status AddGlueTable(TemplateValue& res, const StackOptions& o, const std::string& bucket, const std::string& prefix,
                    bool hive, const std::vector<StackQueue>& queues) {
  AthenaDdlOptions ddl;
  ddl.from = fmt::format("s3://{}/{}", bucket, prefix);
  ddl.layout = hive ? ArchiveLayout::kHive : ArchiveLayout::kDefault;
  ddl.database = o.athena_database;
  ddl.table = o.athena_table;
  ddl.first_day = o.first_day;
  for (const StackQueue& q : queues) ddl.queues.push_back(q.name);
  DLQ_ASSIGN_OR_RETURN(AthenaTable table, BuildAthenaTable(ddl));
  auto columns = [](const std::vector<AthenaColumn>& cols) {
    TemplateValue list = TemplateValue::List();
    for (const AthenaColumn& c : cols) list.Add(TemplateValue::Map().Set("Name", c.name).Set("Type", c.type));
    return list;
  };
  TemplateValue table_params = TemplateValue::Map().Set("EXTERNAL", "TRUE");
  for (const auto& [k, v] : table.properties) table_params.Set(k, InBucket(v, table.bucket));
  TemplateValue serde_params = TemplateValue::Map();
  for (const auto& [k, v] : table.serde_properties) serde_params.Set(k, v);
  res.Set("GlueDatabase",
          TemplateValue::Map()
              .Set("Type", "AWS::Glue::Database")
              .Set("Properties", TemplateValue::Map()
                                     .Set("CatalogId", Ref("AWS::AccountId"))
                                     .Set("DatabaseInput", TemplateValue::Map()
                                                               .Set("Name", table.database)
                                                               .Set("Description", "dlq-archive archive (Athena)"))));
  res.Set("GlueTable",
          TemplateValue::Map()
              .Set("Type", "AWS::Glue::Table")
              .Set("Properties",
                   TemplateValue::Map()
                       .Set("CatalogId", Ref("AWS::AccountId"))
                       .Set("DatabaseName", Ref("GlueDatabase"))
                       .Set("TableInput",
                            TemplateValue::Map()
                                .Set("Name", table.name)
                                .Set("TableType", "EXTERNAL_TABLE")
                                .Set("Parameters", std::move(table_params))
                                .Set("PartitionKeys", columns(table.partitions))
                                .Set("StorageDescriptor",
                                     TemplateValue::Map()
                                         .Set("Columns", columns(table.columns))
                                         .Set("Location", InBucket(table.location, table.bucket))
                                         .Set("InputFormat", table.input_format)
                                         .Set("OutputFormat", table.output_format)
                                         .Set("SerdeInfo", TemplateValue::Map()
                                                               .Set("SerializationLibrary", table.serde)
                                                               .Set("Parameters", std::move(serde_params)))))));
  return Status::Ok();
}

}  // namespace

void AddArchiveBucket(TemplateValue& res, const StackOptions& o, const std::string& bucket, const std::string& prefix,
                      const PutOptions& put, const std::optional<KmsKey>& kms) {
  TemplateValue by_default = TemplateValue::Map();
  if (put.sse == "aws:kms") {
    by_default.Set("SSEAlgorithm", "aws:kms");
    if (kms) by_default.Set("KMSMasterKeyID", kms->arn);
  } else {
    by_default.Set("SSEAlgorithm", "AES256");
  }
  TemplateValue rule =
      TemplateValue::Map().Set("Id", "dlq-archive-lifecycle").Set("Status", "Enabled").Set("Prefix", prefix + "/");
  if (o.transition_days > 0) {
    rule.Set("Transitions", TemplateValue::List({TemplateValue::Map()
                                                     .Set("StorageClass", o.transition_storage_class)
                                                     .Set("TransitionInDays", o.transition_days)}));
  }
  if (o.expiration_days > 0) rule.Set("ExpirationInDays", o.expiration_days);
  // Versioning keeps what a mistaken delete or overwrite removed, this long.
  rule.Set("NoncurrentVersionExpiration", TemplateValue::Map().Set("NoncurrentDays", Ref("NoncurrentVersionDays")));
  rule.Set("AbortIncompleteMultipartUpload", TemplateValue::Map().Set("DaysAfterInitiation", o.abort_multipart_days));
  res.Set(kBucket,
          TemplateValue::Map()
              .Set("Type", "AWS::S3::Bucket")
              .Set("DeletionPolicy", "Retain")  // the archive outlives the stack
              .Set("UpdateReplacePolicy", "Retain")
              .Set("Properties",
                   TemplateValue::Map()
                       .Set("BucketName", bucket)
                       .Set("VersioningConfiguration", TemplateValue::Map().Set("Status", "Enabled"))
                       .Set("BucketEncryption",
                            TemplateValue::Map().Set(
                                "ServerSideEncryptionConfiguration",
                                TemplateValue::List({TemplateValue::Map()
                                                         .Set("ServerSideEncryptionByDefault", std::move(by_default))
                                                         .Set("BucketKeyEnabled", put.sse == "aws:kms")})))
                       .Set("PublicAccessBlockConfiguration", TemplateValue::Map()
                                                                  .Set("BlockPublicAcls", true)
                                                                  .Set("BlockPublicPolicy", true)
                                                                  .Set("IgnorePublicAcls", true)
                                                                  .Set("RestrictPublicBuckets", true))
                       .Set("OwnershipControls",
                            TemplateValue::Map().Set("Rules", TemplateValue::List({TemplateValue::Map().Set(
                                                                  "ObjectOwnership", "BucketOwnerEnforced")})))
                       .Set("LifecycleConfiguration",
                            TemplateValue::Map().Set("Rules", TemplateValue::List({std::move(rule)})))
                       .Set("Tags", Tags())));
  res.Set("ArchiveBucketPolicy",
          TemplateValue::Map()
              .Set("Type", "AWS::S3::BucketPolicy")
              .Set("Properties",
                   TemplateValue::Map()
                       .Set("Bucket", Ref(kBucket))
                       .Set("PolicyDocument",
                            TemplateValue::Map()
                                .Set("Version", "2012-10-17")
                                .Set("Statement",
                                     TemplateValue::List(
                                         {TemplateValue::Map()
                                              .Set("Sid", "DenyInsecureTransport")
                                              .Set("Effect", "Deny")
                                              .Set("Principal", "*")
                                              .Set("Action", "s3:*")
                                              .Set("Resource",
                                                   TemplateValue::List({GetAtt(kBucket, "Arn"),
                                                                        Sub(fmt::format("${{{}.Arn}}/*", kBucket))}))
                                              .Set("Condition", TemplateValue::Map().Set(
                                                                    "Bool", TemplateValue::Map().Set(
                                                                                "aws:SecureTransport", "false")))})))));
}

// The same table definition as `dlq-archive ddl`, for the default and hive layouts.
Status StackBuilder::AddAthena() {
  athena_ = o_.athena && (hive_ || default_layout_);
  if (o_.athena && !athena_) {
    out_.warnings.push_back(
        fmt::format("key_template '{}' is neither default nor hive: no Glue table (Athena's "
                    "partition projection needs one of the two layouts)",
                    group_->key_template_text));
  }
  if (!athena_) return Status::Ok();
  return AddGlueTable(res_, o_, dest_.bucket, prefix_, hive_, queues_);
}

}  // namespace dlq::stack_internal
