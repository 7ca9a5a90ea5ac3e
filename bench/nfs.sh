#!/bin/sh
# bench/nfs.sh: the NFS benchmark (see bench/nfsbench). Builds depotfs and
# runs the benchmark as root, printing a markdown table of ratios against
# the FUSE mount and tmpfs measured in the same run. Arguments go to
# nfsbench, e.g.
#   sudo bench/nfs.sh -files 20000 -big 256
set -eu
cd "$(dirname "$0")/.."
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/depotfs" ./cmd/depotfs
go build -o "$bin/nfsbench" ./bench/nfsbench
"$bin/nfsbench" -depotfs "$bin/depotfs" "$@"
