// What to say when an archive cannot be read at all: the error (credentials
// never appear in it) and what to check, by its code: the policy's
// s3:ListBucket / s3:GetObject on the exact ARNs, the credentials, the
// bucket's name and region, or the directory's permissions. `named_by` is
// where the reader took the destination from ("--from", "group orders's
// destination"), for the hints that say where to fix a name.
#pragma once

#include <string>
#include <string_view>

#include "archive/destination.h"
#include "common/status.h"

namespace dlq {

std::string ReadFailure(const Status& st, const Destination& from, std::string_view named_by = "--from");

}  // namespace dlq
