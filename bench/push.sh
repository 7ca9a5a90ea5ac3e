#!/bin/sh
# bench/push.sh: `depotfs push` of a directory of 20,000 small files to a
# depot on a 3-node NATS cluster and to one on bolt, in the same run
# (integration BenchmarkSeveralHostsPushTree); prints both times and the
# ratio nats/bolt. Needs root (FUSE mounts) and nats-server's module, as
# the integration tests do. DEPOTFS_PUSH_FILES changes the count:
#   DEPOTFS_PUSH_FILES=2000 bench/push.sh
set -eu
cd "$(dirname "$0")/.."
go test ./integration -run '^$' -bench 'BenchmarkSeveralHostsPushTree$' -benchtime 1x -timeout 2h -v |
	grep -E 'push of|nats/bolt|^(ok|FAIL)'
