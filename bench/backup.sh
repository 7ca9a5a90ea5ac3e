#!/bin/sh
# bench/backup.sh: the backup benchmark (see bench/backupbench). Builds
# depotfs and prints markdown tables: backup throughput against cp of the
# database file on the same disk, and writers' p99 latency during an online
# backup against without, both measured in the same run. Arguments go to
# backupbench, e.g.
#   bench/backup.sh -files 128 -size 8388608 -dir /srv/scratch
set -eu
cd "$(dirname "$0")/.."
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/depotfs" ./cmd/depotfs
go build -o "$bin/backupbench" ./bench/backupbench
"$bin/backupbench" -depotfs "$bin/depotfs" "$@"
