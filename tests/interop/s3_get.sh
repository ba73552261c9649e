#!/usr/bin/env bash
# Downloads one S3 object from a stand-in (or AWS) with Debian's AWS CLI, byte for byte.
#   tests/interop/s3_get.sh s3://BUCKET/KEY [OUT]     OUT is a file path or "-" for stdout (default "-")
# Endpoint and credentials come from the environment: source .run/moto.env (or fauxqs.env) first.
# AWS_ENDPOINT_URL is passed as --endpoint-url explicitly because awscli 2.9 (and boto3 1.26) ignore the variable.
# AWS_CLI overrides the CLI binary (default /usr/bin/aws, else aws on PATH).
# Same as: /usr/bin/aws --endpoint-url "$AWS_ENDPOINT_URL" s3 cp s3://b/k -
set -euo pipefail
(($# >= 1 && $# <= 2)) || { sed -n '2,7p' "$0" >&2; exit 2; }
src=$1 out=${2:--}
[[ $src == s3://*/* ]] || { echo "s3_get: expected s3://BUCKET/KEY, got '$src'" >&2; exit 2; }
cli=${AWS_CLI:-/usr/bin/aws}
[[ -x $cli ]] || cli=$(command -v aws) || { echo "s3_get: no aws CLI found" >&2; exit 1; }
args=()
[[ -n ${AWS_ENDPOINT_URL:-} ]] && args+=(--endpoint-url "$AWS_ENDPOINT_URL")
exec "$cli" "${args[@]}" --only-show-errors s3 cp "$src" "$out"
