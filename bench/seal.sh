#!/bin/sh
# bench/seal.sh: what sealing content at rest costs (see bench/sealbench).
# Builds depotfs and runs the benchmark as root, printing a markdown table
# of times and ratios against the depot without a key, measured in the same
# run, and the cipher's throughput next to SHA-256's. Arguments go to
# sealbench, e.g.
#   sudo bench/seal.sh -big 256 -rounds 5
set -eu
cd "$(dirname "$0")/.."
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/depotfs" ./cmd/depotfs
go build -o "$bin/sealbench" ./bench/sealbench
"$bin/sealbench" -depotfs "$bin/depotfs" "$@"
