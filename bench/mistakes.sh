#!/bin/sh
# bench/mistakes.sh: replays the mistaken agent calls of
# integration/testdata/mistakes.jsonl against a real depotfs daemon (HTTP,
# every tool profile, a FUSE mount; run as root) and prints the tally: how
# many refusals name the fix, how many are unclear, internal errors, and
# calls accepted silently. Add a case by adding a line to that file.
#   sudo bench/mistakes.sh          # the tally
#   sudo bench/mistakes.sh -v       # also every reply
set -eu
cd "$(dirname "$0")/.."
out=$(mktemp)
trap 'rm -f "$out"' EXIT
status=0
go test -count=1 -run 'TestMistakenCalls$' -v ./integration >"$out" 2>&1 || status=$?
if [ "${1:-}" = -v ]; then
	grep 'mistakes_test.go' "$out" || true
else
	grep -E 'mistakes_test.go:[0-9]+: .*(refused|accepted|internal error|does not say|only [0-9]+ cases)' "$out" | grep -v -e ': {' -e TALLY || true
fi
tally=$(sed -n 's/.*TALLY //p' "$out")
if [ -z "$tally" ]; then
	tail -20 "$out"
	exit 1
fi
echo "$tally"
exit $status
