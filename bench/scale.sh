#!/bin/sh
# bench/scale.sh: the growth table (see bench/scalebench). Builds depotfs,
# grows a depot by pushes to each size and measures memory, restart,
# snapshot and walks against the FUSE floor and tmpfs in the same run.
# Arguments go to scalebench, e.g.
#   sudo bench/scale.sh -files 20000,100000,300000
#   sudo DEPOTFS_SOAK=1 bench/scale.sh      # adds 1,000,000 and 10,000,000
#   sudo bench/scale.sh -files 100000 -profile /tmp/prof   # heap and CPU profiles
#   sudo bench/scale.sh -seeded /var/tmp/d.db -files 3000000  # a depot written by
#                                            # bench/walk.sh -seed (see seeded.go)
#   sudo bench/scale.sh -seeded /var/tmp/d.db -files 3000000 -seeded-push 20000
#                                            # then push 20,000 files into it
set -eu
cd "$(dirname "$0")/.."
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
# -profile needs the server's pprof handlers, only in a -tags pprof build.
tags=
case " $* " in *" -profile"*) tags=pprof ;; esac
go build -tags "$tags" -o "$bin/depotfs" ./cmd/depotfs
go build -o "$bin/scalebench" ./bench/scalebench
"$bin/scalebench" -depotfs "$bin/depotfs" "$@"
