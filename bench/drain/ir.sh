#!/usr/bin/env bash
# Instructions per message of the in-process drain (BM_DrainPath/100000) under callgrind, for one or more dlq_bench
# binaries: a count that does not move with the machine's load, for compute-path changes too small for the timed
# benchmarks to resolve on a shared VM (issue 11). Prints, per binary, the whole run's instructions per message and
# the inclusive share of the drain's main stages.
#
# Usage: bench/drain/ir.sh BIN [BIN ...]      (copy a binary aside before rebuilding it)
#   env: FILTER (BM_DrainPath/100000/), MESSAGES (100000: what FILTER drains), OUT (/tmp/dlq-ir)
# Needs valgrind (apt install valgrind). Each binary takes 2-4 minutes.
# Caveats: callgrind counts instructions, not time: cache misses, page faults and system calls are not in it, and
# valgrind's CPU has no SHA extensions, so OpenSSL's SHA-256 runs its AVX2 code here (more instructions than with
# SHA-NI). Thread interleavings differ between runs by about 1% of the total.
set -euo pipefail
(($# >= 1)) || { sed -n 2,11p "$0" >&2; exit 2; }
command -v valgrind >/dev/null || { echo "error: valgrind not found (apt install valgrind)" >&2; exit 2; }
FILTER=${FILTER:-BM_DrainPath/100000/}
MESSAGES=${MESSAGES:-100000}
OUT=${OUT:-/tmp/dlq-ir}
mkdir -p "$OUT"
stages='PROGRAM TOTALS|dlq::sqs::ParseReceiveMessageResponse\(|dlq::VerifyMessages\(|dlq::AppendRecordJson\(dlq::Message|dlq::GzipCompressInto\(|dlq::Md5\(|dlq::SignRequest\(dlq::HttpRequest&, dlq::Credentials const&, dlq::SigningOptions const&\)|dlq::AwsClient::Call\(|InstantAws::Send\('
for bin in "$@"; do
  [[ -x $bin ]] || { echo "error: $bin is not an executable" >&2; exit 2; }
  out=$OUT/$(basename "$bin").$$.callgrind
  valgrind --tool=callgrind --callgrind-out-file="$out" "$bin" --benchmark_filter="$FILTER" >/dev/null 2>&1
  echo "== $bin"
  callgrind_annotate --inclusive=yes "$out" 2>/dev/null | grep -E "$stages" |
    awk -v n="$MESSAGES" '{ ir = $1; gsub(",", "", ir); name = $0; sub(/^ *[0-9,]+ +\([^)]*\) +/, "", name);
                            sub(/^\?\?\?:/, "", name); gsub(/\(anonymous namespace\)/, "{anon}", name);
                            sub(/\(.*/, "", name); printf "%10.0f instructions/message  %s\n", ir / n, name }'
done
