#!/bin/sh
# bench/walk.sh: what a first walk of the mount costs the server a file,
# against the FUSE floor in the same run (see bench/walkbench): CPU, and
# heap objects and bytes allocated, which do not depend on the machine's
# load. Arguments go to walkbench, e.g.
#   sudo bench/walk.sh -files 100000 -work ls -reps 5
#   sudo bench/walk.sh -work find -cpuprofile /tmp/walk   # CPU profiles
#   sudo bench/walk.sh -work ls -memprofile /tmp/walkmem  # what each walk allocated
#   bench/walk.sh -seed -db /var/tmp/d.db -files 3000000 -batch 10000  # only write it
set -eu
cd "$(dirname "$0")/.."
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/walkbench" ./bench/walkbench
"$bin/walkbench" "$@"
