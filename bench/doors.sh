#!/bin/sh
# bench/doors.sh: the HTTP doors benchmark (see bench/doorbench). Builds
# depotfs and runs the benchmark as root, printing markdown tables of
# ratios against baselines measured in the same run: a resource link's GET
# against http.FileServer on tmpfs, rclone over WebDAV against the FUSE
# mount and tmpfs. Arguments go to doorbench, e.g.
#   sudo bench/doors.sh -link 100 -files 20000 -big 256
set -eu
cd "$(dirname "$0")/.."
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/depotfs" ./cmd/depotfs
go build -o "$bin/doorbench" ./bench/doorbench
"$bin/doorbench" -depotfs "$bin/depotfs" "$@"
