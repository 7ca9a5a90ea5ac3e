#!/usr/bin/env bash
# Pushes the same work to depotfs and to reference MCP servers, in one run,
# and prints a table with the ratios. Not a test: a measurement to repeat
# whenever the ingest path changes.
#
#   bench/ingest/run.sh            # 20,000 small files, 64 MiB, 256 MiB
#   BENCH_FILES=2000 bench/ingest/run.sh
#
# Needs go, node (>= 20) and npm; installs the pinned npm packages of
# package.json into a temporary directory. The reference servers write to
# tmpfs (/dev/shm); depotfs writes its database under $TMPDIR, with its FUSE
# mount unless BENCH_NO_MOUNT=1. Every process it starts is stopped on exit.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
files=${BENCH_FILES:-20000}
work=$(mktemp -d)
shm=$(mktemp -d -p /dev/shm depotfs-bench.XXXXXX)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null || true; done
	rm -rf "$work" "$shm"
}
trap cleanup EXIT

echo "installing the pinned npm packages and building depotfs..." >&2
cp "$here/package.json" "$here/bench.mjs" "$here/ref-server.mjs" "$work/"
(cd "$work" && npm install --no-audit --no-fund --loglevel=error >/dev/null)
(cd "$repo" && go build -o "$work/depotfs" ./cmd/depotfs)
# bench NAME WORK KIND TARGET... runs one measurement into $work/NAME.json.
bench() {
	local name=$1
	shift
	(cd "$work" && BENCH_FILES=$files node bench.mjs "$@") >"$work/$name.json"
}
result() { cat "$work/$1.json"; }

n=0
# depotfs_args prints the serve flags of a fresh depotfs.
depotfs_args() {
	n=$((n + 1))
	local mount=(--no-mount)
	if [ "${BENCH_NO_MOUNT:-}" != 1 ]; then mount=(--mount "$work/mnt$n"); fi
	echo serve --db "$work/db$n/depot.db" "${mount[@]}" --max-store-size 0 --max-file-size 0
}

# start_http CMD... starts an HTTP server that prints its URL and sets url.
start_http() {
	local log="$work/log$((++n))"
	"$@" >"$log" 2>&1 &
	pids+=($!)
	for _ in $(seq 300); do
		url=$(grep -o 'http://127\.0\.0\.1:[0-9]*/mcp' "$log" | head -1 || true)
		[ -n "$url" ] && return
		kill -0 "${pids[-1]}" 2>/dev/null || break
		sleep 0.1
	done
	echo "server did not start: $*" >&2
	cat "$log" >&2
	exit 1
}

stop_last() { kill "${pids[-1]}"; wait "${pids[-1]}" 2>/dev/null || true; unset 'pids[-1]'; }

# depotfs over HTTP
run_depotfs_http() {
	# shellcheck disable=SC2046
	start_http "$work/depotfs" $(depotfs_args) --listen 127.0.0.1:0
	local rc=0
	bench "$1" "$2" depotfs "$url" || rc=$?
	stop_last
	return $rc
}
run_ref_http() {
	local dir="$shm/ref$n"
	mkdir -p "$dir"
	start_http node "$work/ref-server.mjs" "$dir"
	BENCH_DIR=/ bench "$1" "$2" ref "$url"
	stop_last
	rm -rf "$dir"
}

rate() { node -e 'const r=JSON.parse(process.argv[1]); console.log(process.argv[2]==="files" ? (r.items/r.seconds).toFixed(0) : (r.bytes/r.seconds/1048576).toFixed(1))' "$1" "$2"; }
ratio() { node -e 'console.log((process.argv[1]/process.argv[2]).toFixed(2)+"x")' "$1" "$2"; }

echo "small files over HTTP..." >&2
run_depotfs_http d_small small
run_ref_http r_small small
echo "small files over stdio..." >&2
# shellcheck disable=SC2046
bench d_stdio small depotfs stdio "$work/depotfs" $(depotfs_args) --stdio
fsdir="$shm/fs"
mkdir -p "$fsdir"/bench/d{0..99}
BENCH_DIR="$fsdir/bench" bench f_stdio small fs stdio node "$work/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js" "$fsdir"
rm -rf "$fsdir"
echo "guide_cache_files, 100 files per call..." >&2
run_depotfs_http d_batch batch || echo '{"items":0,"bytes":0,"seconds":1}' >"$work/d_batch.json"
run_ref_http r_batch batch
echo "64 MiB in chunks..." >&2
run_depotfs_http d_chunks chunks
run_ref_http r_chunks chunks
echo "256 MiB raw PUT..." >&2
head -c $((256 << 20)) /dev/urandom >"$work/put.bin"
put_sha=$(sha256sum "$work/put.bin" | cut -d' ' -f1)
BENCH_PUT_FILE="$work/put.bin" BENCH_PUT_SHA256=$put_sha run_depotfs_http d_put put ||
	echo '{"items":0,"bytes":0,"seconds":1}' >"$work/d_put.json"
# The same PUT sent by curl, as docs/pushing.md shows: node's fetch spends
# more CPU streaming the file than depotfs spends storing it.
if command -v curl >/dev/null; then
	BENCH_PUT_FILE="$work/put.bin" BENCH_PUT_SHA256=$put_sha run_depotfs_http d_putc putcurl ||
		echo '{"items":0,"bytes":0,"seconds":1}' >"$work/d_putc.json"
else
	echo "curl not found: no curl -T rows" >&2
	echo '{"items":0,"bytes":0,"seconds":1}' >"$work/d_putc.json"
fi
start=$(date +%s.%N)
cp "$work/put.bin" "$work/copy.bin" && sync "$work/copy.bin"
cp_seconds=$(awk "BEGIN { print $(date +%s.%N) - $start }")
echo "{\"items\":1,\"bytes\":$((256 << 20)),\"seconds\":$cp_seconds}" >"$work/cp.json"
for r in d_small r_small d_stdio f_stdio d_batch r_batch d_chunks r_chunks d_put d_putc cp; do
	declare "$r=$(result $r)"
done
cp_run=$cp

cat <<TABLE
| work | depotfs | baseline | ratio | goal |
|---|---|---|---|---|
| small files, HTTP, one per call ($files) | $(rate "$d_small" files) files/s | $(rate "$r_small" files) files/s (reference SDK server) | $(ratio "$(rate "$d_small" files)" "$(rate "$r_small" files)") | >= 3,000 files/s and >= 2x |
| small files, stdio, one per call ($files) | $(rate "$d_stdio" files) files/s | $(rate "$f_stdio" files) files/s (server-filesystem) | $(ratio "$(rate "$d_stdio" files)" "$(rate "$f_stdio" files)") | >= 1.5x |
| guide_cache_files, 100 per call ($files) | $(rate "$d_batch" files) files/s | $(rate "$r_small" files) files/s (reference, one per call) | $(ratio "$(rate "$d_batch" files)" "$(rate "$r_small" files)") | >= 5x |
| same, against the reference's own 100-file call | $(rate "$d_batch" files) files/s | $(rate "$r_batch" files) files/s | $(ratio "$(rate "$d_batch" files)" "$(rate "$r_batch" files)") | — |
| 64 MiB, base64 (depotfs: 8 MiB chunks, 8 in flight; reference: one call) | $(rate "$d_chunks" mib) MiB/s | $(rate "$r_chunks" mib) MiB/s | $(ratio "$(rate "$d_chunks" mib)" "$(rate "$r_chunks" mib)") | >= 150 MB/s and >= 1.5x |
| 256 MiB raw PUT (node fetch) vs the reference's one-call push | $(rate "$d_put" mib) MiB/s | $(rate "$r_chunks" mib) MiB/s | $(ratio "$(rate "$d_put" mib)" "$(rate "$r_chunks" mib)") | >= 5x |
| 256 MiB raw PUT (node fetch) vs cp + fsync on the same disk | $(rate "$d_put" mib) MiB/s | $(rate "$cp_run" mib) MiB/s | $(ratio "$(rate "$d_put" mib)" "$(rate "$cp_run" mib)") | >= 0.5x |
| 256 MiB raw PUT (curl -T) vs the reference's one-call push | $(rate "$d_putc" mib) MiB/s | $(rate "$r_chunks" mib) MiB/s | $(ratio "$(rate "$d_putc" mib)" "$(rate "$r_chunks" mib)") | >= 5x |
| 256 MiB raw PUT (curl -T) vs cp + fsync on the same disk | $(rate "$d_putc" mib) MiB/s | $(rate "$cp_run" mib) MiB/s | $(ratio "$(rate "$d_putc" mib)" "$(rate "$cp_run" mib)") | >= 0.5x |
TABLE
