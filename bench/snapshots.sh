#!/bin/sh
# bench/snapshots.sh: the snapshot benchmark (see bench/snapshotbench).
# Builds depotfs and runs the benchmark as root, printing markdown tables:
# snapshot creation time at -files files against a one-file write, and a
# find+sha256sum walk of /.snapshots/S against the live tree, measured in
# the same run. Arguments go to snapshotbench, e.g.
#   sudo bench/snapshots.sh -files 100000
set -eu
cd "$(dirname "$0")/.."
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/depotfs" ./cmd/depotfs
go build -o "$bin/snapshotbench" ./bench/snapshotbench
"$bin/snapshotbench" -depotfs "$bin/depotfs" "$@"
