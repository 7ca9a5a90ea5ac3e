#!/usr/bin/env bash
# Pushes the same work to depotfs and to reference MCP servers, in one run,
# and prints a table with the ratios. Not a test: a measurement to repeat
# whenever the ingest path changes.
#
#   bench/ingest/run.sh            # 20,000 small files, 64 MiB, 256 MiB
#   BENCH_FILES=2000 bench/ingest/run.sh
#   BENCH_WORKS=small bench/ingest/run.sh   # only the one-file-per-call rows
#   BENCH_ROUNDS=3 ...        # the one-file-per-call pairs 3 times, alternating
#   BENCH_PROFILE=DIR ...     # depotfs's CPU profile and execution trace of
#                             # its last one-file-per-call runs, into DIR
#   BENCH_STRACE=1 ...        # one more run of each under strace: depotfs's
#                             # flushes per call and calls per flush
#
# The references write to tmpfs without fsync; the rows "reference + fsync"
# run the same reference servers from a copy patched to fsync each file and
# its directory before answering, as an acknowledged write of depotfs
# is on disk (their files then go under $TMPDIR, on depotfs's disk).
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
cp "$here/package.json" "$here/bench.mjs" "$here/ref-server.mjs" "$here/flushes.mjs" "$work/"
(cd "$work" && npm install --no-audit --no-fund --loglevel=error >/dev/null)
tags=()
if [ -n "${BENCH_PROFILE:-}" ]; then
	mkdir -p "$BENCH_PROFILE"
	BENCH_PROFILE=$(cd "$BENCH_PROFILE" && pwd)
	tags=(-tags benchprof) # cmd/depotfs/benchprof.go
fi
(cd "$repo" && go build "${tags[@]}" -o "$work/depotfs" ./cmd/depotfs)
# fsync_patch FILE makes every awaited writeFile of FILE open, write, fsync
# and close the file, then fsync its directory (a copy of each reference).
fsync_patch() {
	node - "$1" <<'JS'
const fs = require("node:fs");
const [file] = process.argv.slice(2);
let src = fs.readFileSync(file, "utf8");
const helper = `
import { open as __open } from "node:fs/promises";
import { dirname as __dirnameOf } from "node:path";
async function __durable(dest, data, opts) {
  const flag = (opts && typeof opts === "object" && opts.flag) || "w";
  const encoding = typeof opts === "string" ? opts : opts && opts.encoding;
  const h = await __open(dest, flag);
  try { await h.writeFile(data, encoding); await h.sync(); } finally { await h.close(); }
  const d = await __open(__dirnameOf(dest), "r");
  try { await d.sync(); } finally { await d.close(); }
}
`;
const n = src.split(/\bawait (?:fs\.)?writeFile\(/).length - 1;
if (n === 0) throw new Error(`fsync patch: no writeFile in ${file}`);
src = src.replace(/\bawait (fs\.)?writeFile\(/g, "await __durable(");
const lines = src.split("\n");
const last = lines.findLastIndex((l) => /^import .* from /.test(l));
lines.splice(last + 1, 0, helper);
fs.writeFileSync(file, lines.join("\n"));
console.error(`fsync patch: ${n} writeFile call(s) in ${file}`);
JS
}
mkdir -p "$work/fsync"
cp -r "$work/node_modules" "$work/ref-server.mjs" "$work/fsync/"
fsync_patch "$work/fsync/ref-server.mjs"
fsync_patch "$work/fsync/node_modules/@modelcontextprotocol/server-filesystem/dist/lib.js"
# bench NAME WORK KIND TARGET... runs one measurement into $work/NAME.json.
bench() {
	local name=$1
	shift
	(cd "$work" && BENCH_FILES=$files BENCH_SERVER_PID=${server_pid:-} node bench.mjs "$@") >"$work/$name.json"
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
	server_pid=$!
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

stop_last() {
	kill "${pids[-1]}"
	wait "${pids[-1]}" 2>/dev/null || true
	unset 'pids[-1]'
	server_pid=
}

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
# cpu_us JSON prints the server's CPU microseconds a file, or ? when unknown.
cpu_us() { node -e 'const r=JSON.parse(process.argv[1]); console.log(r.server_cpu == null ? "?" : (r.server_cpu/r.items*1e6).toFixed(0))' "$1"; }
# cpu NAME prints the server CPU microseconds a file of measurement NAME.
cpu() { cpu_us "$(result "$1")"; }
ratio() { node -e 'console.log((process.argv[1]/process.argv[2]).toFixed(2)+"x")' "$1" "$2"; }

# run_depotfs_http_prof NAME WORK runs depotfs over HTTP with its CPU profile
# and trace going to $BENCH_PROFILE/http.*, ended by SIGUSR1 after the work.
run_depotfs_http_prof() {
	local prof=$BENCH_PROFILE/http
	# shellcheck disable=SC2046
	DEPOTFS_CPUPROFILE=$prof.cpu.prof DEPOTFS_TRACE=$prof.trace start_http "$work/depotfs" $(depotfs_args) --listen 127.0.0.1:0
	bench "$1" "$2" depotfs "$url"
	kill -USR1 "${pids[-1]}"
	for _ in $(seq 600); do
		[ -e "$prof.cpu.prof" ] && [ -e "$prof.trace" ] && break
		sleep 0.1
	done
	stop_last
}
# run_ref_http_fsync NAME WORK runs the fsync-patched reference on $work's disk.
run_ref_http_fsync() {
	local dir="$work/reffs$n"
	mkdir -p "$dir"
	start_http node "$work/fsync/ref-server.mjs" "$dir"
	BENCH_DIR=/ bench "$1" "$2" ref "$url"
	stop_last
	rm -rf "$dir"
}
# run_fs_stdio NAME PREFIX DIR runs server-filesystem from PREFIX over DIR.
run_fs_stdio() {
	mkdir -p "$3"/bench/d{0..99}
	BENCH_DIR="$3/bench" bench "$1" small fs stdio node "$2/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js" "$3"
	rm -rf "$3"
}

rounds=${BENCH_ROUNDS:-1}
small_rows=""
for round in $(seq "$rounds"); do
	echo "round $round of $rounds: small files over HTTP..." >&2
	run_depotfs_http "d_small$round" small
	run_ref_http "r_small$round" small
	run_ref_http_fsync "rf_small$round" small
	echo "round $round of $rounds: small files over stdio..." >&2
	# shellcheck disable=SC2046
	bench "d_stdio$round" small depotfs stdio "$work/depotfs" $(depotfs_args) --stdio
	run_fs_stdio "f_stdio$round" "$work" "$shm/fs"
	run_fs_stdio "ff_stdio$round" "$work/fsync" "$work/fsfs"
	d=$(rate "$(result "d_small$round")" files) r=$(rate "$(result "r_small$round")" files)
	rf=$(rate "$(result "rf_small$round")" files)
	ds=$(rate "$(result "d_stdio$round")" files) fs=$(rate "$(result "f_stdio$round")" files)
	ffs=$(rate "$(result "ff_stdio$round")" files)
	small_rows+="| small files, HTTP, one per call ($files), round $round | $d files/s | $r files/s (reference SDK server) | $(ratio "$d" "$r") | >= 1.0x |
| same, against the reference + fsync | $d files/s | $rf files/s | $(ratio "$d" "$rf") | — |
| server CPU a file, HTTP | $(cpu "d_small$round") µs | $(cpu "r_small$round") µs, + fsync $(cpu "rf_small$round") µs | | |
| small files, stdio, one per call ($files), round $round | $ds files/s | $fs files/s (server-filesystem) | $(ratio "$ds" "$fs") | >= 1.0x |
| same, against server-filesystem + fsync | $ds files/s | $ffs files/s | $(ratio "$ds" "$ffs") | — |
| server CPU a file, stdio | $(cpu "d_stdio$round") µs | $(cpu "f_stdio$round") µs, + fsync $(cpu "ff_stdio$round") µs | | |
"
done
for r in small stdio; do
	cp "$work/d_$r$rounds.json" "$work/d_$r.json"
done
cp "$work/r_small$rounds.json" "$work/r_small.json"
if [ -n "${BENCH_PROFILE:-}" ]; then
	echo "profiled runs of depotfs (not in the table) into $BENCH_PROFILE..." >&2
	run_depotfs_http_prof d_prof small
	# shellcheck disable=SC2046
	DEPOTFS_CPUPROFILE=$BENCH_PROFILE/stdio.cpu.prof DEPOTFS_TRACE=$BENCH_PROFILE/stdio.trace \
		bench d_sprof small depotfs stdio "$work/depotfs" $(depotfs_args) --stdio
	echo "profiled: HTTP $(rate "$(result d_prof)" files) files/s, stdio $(rate "$(result d_sprof)" files) files/s" >&2
fi
flush_rows=""
if [ -n "${BENCH_STRACE:-}" ] && ! command -v strace >/dev/null; then
	echo "strace not found: no rows of depotfs's flushes" >&2
elif [ -n "${BENCH_STRACE:-}" ]; then
	echo "depotfs under strace of its flushes (not in the table)..." >&2
	trace=(strace --seccomp-bpf -f -T -y -e trace=fsync,fdatasync)
	# shellcheck disable=SC2046
	start_http "${trace[@]}" -o "$work/strace_http" "$work/depotfs" $(depotfs_args) --listen 127.0.0.1:0
	bench d_strace small depotfs "$url"
	# strace leaves a command it started running when it is killed: stop
	# depotfs, then wait for strace to see it exit.
	kill "$(cat "/proc/${pids[-1]}/task/${pids[-1]}/children")"
	wait "${pids[-1]}" 2>/dev/null || true
	unset 'pids[-1]'
	flush_rows+=$(cd "$work" && node flushes.mjs strace_http "$files" "$(node -e 'console.log(JSON.parse(process.argv[1]).seconds)' "$(result d_strace)")" "HTTP, $(rate "$(result d_strace)" files) files/s")$'\n'
	# shellcheck disable=SC2046
	bench d_sstrace small depotfs stdio "${trace[@]}" -o "$work/strace_stdio" "$work/depotfs" $(depotfs_args) --stdio
	flush_rows+=$(cd "$work" && node flushes.mjs strace_stdio "$files" "$(node -e 'console.log(JSON.parse(process.argv[1]).seconds)' "$(result d_sstrace)")" "stdio, $(rate "$(result d_sstrace)" files) files/s")$'\n'
fi
small_table() {
	printf '| work | depotfs | baseline | ratio | goal |\n|---|---|---|---|---|\n%s' "$small_rows"
	if [ -n "$flush_rows" ]; then
		printf '\n| depotfs under strace | flush | per call | calls per flush | mean ms | p90 ms | of the wall time |\n|---|---|---|---|---|---|---|\n%s' "$flush_rows"
	fi
}
for r in d_small r_small d_stdio; do
	declare "$r=$(result $r)"
done
if [ "${BENCH_WORKS:-all}" = small ]; then
	small_table
	exit 0
fi
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
for r in d_batch r_batch d_chunks r_chunks d_put d_putc cp; do
	declare "$r=$(result $r)"
done
cp_run=$cp

small_table
cat <<TABLE
| guide_cache_files, 100 per call ($files) | $(rate "$d_batch" files) files/s | $(rate "$r_small" files) files/s (reference, one per call) | $(ratio "$(rate "$d_batch" files)" "$(rate "$r_small" files)") | >= 5x |
| same, against the reference's own 100-file call | $(rate "$d_batch" files) files/s | $(rate "$r_batch" files) files/s | $(ratio "$(rate "$d_batch" files)" "$(rate "$r_batch" files)") | — |
| 64 MiB, base64 (depotfs: 8 MiB chunks, 8 in flight; reference: one call) | $(rate "$d_chunks" mib) MiB/s | $(rate "$r_chunks" mib) MiB/s | $(ratio "$(rate "$d_chunks" mib)" "$(rate "$r_chunks" mib)") | >= 150 MB/s and >= 1.5x |
| 256 MiB raw PUT (node fetch) vs the reference's one-call push | $(rate "$d_put" mib) MiB/s | $(rate "$r_chunks" mib) MiB/s | $(ratio "$(rate "$d_put" mib)" "$(rate "$r_chunks" mib)") | >= 5x |
| 256 MiB raw PUT (node fetch) vs cp + fsync on the same disk | $(rate "$d_put" mib) MiB/s | $(rate "$cp_run" mib) MiB/s | $(ratio "$(rate "$d_put" mib)" "$(rate "$cp_run" mib)") | >= 0.5x |
| 256 MiB raw PUT (curl -T) vs the reference's one-call push | $(rate "$d_putc" mib) MiB/s | $(rate "$r_chunks" mib) MiB/s | $(ratio "$(rate "$d_putc" mib)" "$(rate "$r_chunks" mib)") | >= 5x |
| 256 MiB raw PUT (curl -T) vs cp + fsync on the same disk | $(rate "$d_putc" mib) MiB/s | $(rate "$cp_run" mib) MiB/s | $(ratio "$(rate "$d_putc" mib)" "$(rate "$cp_run" mib)") | >= 0.5x |
TABLE
