#include "aws/credentials.h"

namespace dlq {

std::string Credentials::RedactedKeyId() const {
  if (access_key_id.size() <= 8) return std::string(access_key_id.size(), '*');
  return access_key_id.substr(0, 4) + std::string(access_key_id.size() - 8, '*') +
         access_key_id.substr(access_key_id.size() - 4);
}

}  // namespace dlq
