#!/bin/sh
# bench/mount.sh: the mount benchmark (see bench/mountbench). Builds depotfs
# and runs the benchmark as root, printing markdown tables of time ratios
# against tmpfs measured in the same run. Arguments go to mountbench, e.g.
#   sudo bench/mount.sh -files 20000
set -eu
cd "$(dirname "$0")/.."
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/depotfs" ./cmd/depotfs
go build -o "$bin/mountbench" ./bench/mountbench
"$bin/mountbench" -depotfs "$bin/depotfs" "$@"
