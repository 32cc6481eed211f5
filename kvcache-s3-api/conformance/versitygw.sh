#!/usr/bin/env bash
# Prints the path of Versity Gateway's binary (versitygw), built from its Go module into
# deploy/target/bin the first time (minutes on two cores; Go's module and build caches are
# reused), for the S3 API's conformance run and benchmark.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
version=${VERSITYGW_VERSION:-v1.8.0}
bin=$root/deploy/target/bin
binary=$bin/versitygw-$version
if [[ ! -x $binary ]]; then
  go=$(command -v go || echo /usr/local/go/bin/go)
  [[ -x $go ]] || { echo "building versitygw needs Go (https://go.dev/dl)" >&2; exit 1; }
  echo "building versitygw $version into $bin (minutes on 2 cores; once)" >&2
  mkdir -p "$bin"
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  GOBIN=$work "$go" install "github.com/versity/versitygw/cmd/versitygw@$version" >&2
  mv "$work/versitygw" "$binary"
fi
echo "$binary"
