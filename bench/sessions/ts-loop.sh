#!/usr/bin/env bash
# Runs the official TypeScript SDK client 1,000 times against a fresh
# depotfs on its defaults, each run ending with client.close(), which sends
# no DELETE (as the Inspector CLIs and most scripts do too), and prints how
# many runs were refused and how many sessions the server holds after.
# An honest client that never ends its sessions must never be refused.
#
#   bench/sessions/ts-loop.sh                 # no authentication, 1,000 runs
#   TS_LOOP_RUNS=200 TS_LOOP_TOKEN=1 bench/sessions/ts-loop.sh   # with a token
#
# Needs go, node (>= 20) and npm; installs the pinned npm package of
# package.json into a temporary directory. Every process it starts is
# stopped on exit.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
runs=${TS_LOOP_RUNS:-1000}
work=$(mktemp -d)
pid=
cleanup() {
	if [ -n "$pid" ]; then kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true; fi
	rm -rf "$work"
}
trap cleanup EXIT

echo "installing the pinned npm package and building depotfs..." >&2
cp "$here/package.json" "$here/loop.mjs" "$work/"
(cd "$work" && npm install --no-audit --no-fund --loglevel=error >/dev/null)
(cd "$repo" && go build -o "$work/depotfs" ./cmd/depotfs)

args=(serve --db "$work/db/depot.db" --no-mount --listen 127.0.0.1:0)
token=
if [ -n "${TS_LOOP_TOKEN:-}" ]; then
	token=$("$work/depotfs" token issue --tokens "$work/tokens.json" --name ts-loop --grant '*:/:rw' 2>/dev/null | head -1)
	args+=(--tokens "$work/tokens.json")
fi
"$work/depotfs" "${args[@]}" >"$work/log" 2>&1 &
pid=$!
url=
for _ in $(seq 300); do
	url=$(grep -o 'http://127\.0\.0\.1:[0-9]*/mcp' "$work/log" | head -1 || true)
	[ -n "$url" ] && break
	kill -0 "$pid" 2>/dev/null || break
	sleep 0.1
done
if [ -z "$url" ]; then
	echo "depotfs did not start:" >&2
	cat "$work/log" >&2
	exit 1
fi

echo "running the TypeScript SDK client $runs times against $url..." >&2
start=$(date +%s)
result=$(cd "$work" && node loop.mjs "$url" "$runs" "$token")
took=$(($(date +%s) - start))
auth=()
[ -n "$token" ] && auth=(-H "Authorization: Bearer $token")
live=$(curl -s "${auth[@]}" "${url%/mcp}/metrics" | awk '$1 == "depotfs_mcp_sessions_live" { print $2 }')
echo "$result" | node -e '
const r = JSON.parse(require("fs").readFileSync(0, "utf8"));
console.log(`runs: ${r.runs}  refused: ${r.refused}  runs with a session: ${r.withSession}  sessions live after: ${process.argv[1]}  seconds: ${process.argv[2]}`);
if (r.firstError) console.log(`first refusal: ${r.firstError}`);
process.exit(r.refused === 0 ? 0 : 1);
' "$live" "$took"
