#!/bin/sh
# bench/nats-scale.sh: what a host of a 3-host NATS depot costs as the
# depot grows, beside a bolt server given the same tree in the same run
# (integration BenchmarkSeveralHostsScale): push time, RssAnon and RssFile
# empty and after the push, restart to ready, and a find over the mount
# after the restart. Needs root (FUSE mounts) and nats-server's module, as
# the integration tests do. DEPOTFS_SCALE_FILES sets the count (100,000):
#   DEPOTFS_SCALE_FILES=1000000 bench/nats-scale.sh
# The whole output (the hosts' logs on a failure) stays in the file named
# at the end.
set -eu
cd "$(dirname "$0")/.."
log=$(mktemp /tmp/nats-scale-XXXXXX.log)
status=0
go test ./integration -run '^$' -bench 'BenchmarkSeveralHostsScale$' -benchtime 1x -timeout 4h -v >"$log" 2>&1 || status=$?
grep -E '\| |NATS/bolt|^(ok|FAIL)|--- FAIL' "$log" || true
[ "$status" -eq 0 ] || grep -E 'severalhosts_scale_test.go' "$log" | grep -v '| ' | tail -20
echo "full output: $log"
exit "$status"
