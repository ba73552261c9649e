// S3ObjectStore: ObjectStore over one S3 bucket. Keys are full object keys
// (the archive layout adds any prefix). Thread-safe; the S3Client must
// outlive the store.
#pragma once

#include <string>

#include "s3/object_store.h"
#include "s3/s3_client.h"

namespace dlq {

class S3ObjectStore final : public ObjectStore {
 public:
  // `page_size`: keys per List page (ListObjectsV2 max-keys); 0: S3's default (1000).
  S3ObjectStore(S3Client& client, std::string bucket, int page_size = 0)
      : client_(client), bucket_(std::move(bucket)), page_size_(page_size) {}

  Status Put(const std::string& key, std::string_view data, const PutOptions& options) override;
  Result<std::string> Get(const std::string& key,
                          std::optional<std::pair<uint64_t, uint64_t>> range = std::nullopt) override;
  Result<ObjectInfo> Head(const std::string& key) override;
  Result<ListPage> List(const std::string& prefix, const std::string& delimiter, const std::string& token) override;
  Status Delete(const std::string& key) override;
  Result<DestinationCheck> CheckWritable() override;
  std::string Describe() const override { return "s3://" + bucket_; }

  const std::string& bucket() const { return bucket_; }

 private:
  S3Client& client_;
  std::string bucket_;
  int page_size_;
};

}  // namespace dlq
