#!/bin/sh
# bench/full.sh: a write into a full store with a snapshot of the whole
# tree against the same write without one (see bench/fullbench).
# Arguments go to fullbench, e.g.
#   bench/full.sh -files 100000
set -eu
cd "$(dirname "$0")/.."
exec go run ./bench/fullbench "$@"
