// One measurement: node bench.mjs WORK KIND TARGET...
//
// WORK is small (one file per call), batch (100 files per call), chunks
// (64 MiB in 8 MiB base64 chunks, or one call for a server without chunks),
// put (256 MiB through guide_begin_upload and an HTTP PUT from node) or
// putcurl (the same PUT sent by curl). KIND says which tools the server has: depotfs, ref (ref-server.mjs) or fs
// (@modelcontextprotocol/server-filesystem). TARGET is an MCP endpoint URL
// or, after "stdio", a command line. Prints one JSON line:
// {"work", "kind", "items", "bytes", "seconds", "server_cpu"}, the last the
// server's CPU seconds during the work (null when its pid is unknown).
import { createHash, randomBytes } from "node:crypto";
import { execFile } from "node:child_process";
import { createReadStream, existsSync, readFileSync, statSync } from "node:fs";
import { promisify } from "node:util";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [work, kind, ...target] = process.argv.slice(2);
const inFlight = 8;
const files = Number(process.env.BENCH_FILES || 20000);
const dir = process.env.BENCH_DIR || "/bench";

// profiles are the files a depotfs built with -tags benchprof writes when
// SIGUSR1 ends its profiling (cmd/depotfs/benchprof.go); run.sh sets them.
const profiles = ["DEPOTFS_CPUPROFILE", "DEPOTFS_TRACE"].map((k) => process.env[k]).filter(Boolean);

let transport;
async function connect() {
  const client = new Client({ name: "bench-ingest", version: "1.0.0" });
  transport = target[0] === "stdio"
    // The whole environment, so a server started over stdio sees the
    // profile settings (the SDK passes only a few variables by default).
    ? new StdioClientTransport({ command: target[1], args: target.slice(2), stderr: "ignore", env: process.env })
    : new StreamableHTTPClientTransport(new URL(target[0]));
  await client.connect(transport);
  return client;
}

// serverCPU returns the CPU seconds (user and system) the server has used
// so far: BENCH_SERVER_PID's for a server over HTTP (run.sh starts it), the
// child's over stdio; null when unknown.
function serverCPU() {
  const pid = target[0] === "stdio" ? transport.pid : Number(process.env.BENCH_SERVER_PID);
  if (!pid) return null;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime in USER_HZ ticks
  } catch {
    return null;
  }
}

// endProfiles asks a server started over stdio to end its profiles and
// waits until they are written.
async function endProfiles() {
  if (target[0] !== "stdio" || profiles.length === 0) return;
  process.kill(transport.pid, "SIGUSR1");
  for (let i = 0; i < 600 && !profiles.every((f) => existsSync(f)); i++) {
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function call(client, name, args) {
  const res = await client.callTool({ name, arguments: args }, undefined, { timeout: 600000 });
  if (res.isError) throw new Error(`${name}: ${JSON.stringify(res.content).slice(0, 500)}`);
  return res;
}

// pool runs fn(0..n-1) with inFlight calls at once.
async function pool(n, fn) {
  let next = 0;
  await Promise.all(Array.from({ length: inFlight }, async () => {
    for (let i = next++; i < n; i = next++) await fn(i);
  }));
}

// smallFile is file i: 64 to 2048 bytes of text.
function smallFile(i) {
  const size = 64 + ((i * 7919) % 1985);
  return { path: `${dir}/d${i % 100}/f${i}.txt`, content: randomBytes(size).toString("base64").slice(0, size) };
}

const writeTool = { depotfs: "guide_cache_file", ref: "write_file", fs: "write_file" }[kind];
const batchTool = { depotfs: "guide_cache_files", ref: "write_files" }[kind];

const works = {
  async small(client) {
    const items = Array.from({ length: files }, (_, i) => smallFile(i));
    const start = performance.now();
    await pool(files, (i) => call(client, writeTool, items[i]));
    return { items: files, bytes: items.reduce((n, f) => n + f.content.length, 0), start };
  },
  async batch(client) {
    const per = 100;
    const items = Array.from({ length: files }, (_, i) => smallFile(i));
    const start = performance.now();
    await pool(Math.ceil(files / per), (b) => call(client, batchTool, { files: items.slice(b * per, (b + 1) * per) }));
    return { items: files, bytes: items.reduce((n, f) => n + f.content.length, 0), start };
  },
  async chunks(client) {
    const size = 64 << 20, chunk = 8 << 20;
    const data = randomBytes(size);
    const sha256 = createHash("sha256").update(data).digest("hex");
    const path = `${dir}/big.bin`;
    const start = performance.now();
    if (kind !== "depotfs") {
      await call(client, writeTool, { path, content: data.toString("base64"), encoding: "base64" });
      return { items: 1, bytes: size, start };
    }
    const count = size / chunk;
    await pool(count, (i) => {
      const part = data.subarray(i * chunk, (i + 1) * chunk);
      return call(client, "guide_read_file", {
        path, upload_id: `bench-${process.pid}`, chunk_index: i, chunk_count: count, sha256,
        content: part.toString("base64"), encoding: "base64",
      });
    });
    return { items: 1, bytes: size, start };
  },
  async put(client) {
    const file = process.env.BENCH_PUT_FILE;
    const size = statSync(file).size;
    const sha256 = process.env.BENCH_PUT_SHA256;
    const start = performance.now();
    const res = await call(client, "guide_begin_upload", { path: `${dir}/put.bin`, size, sha256 });
    const up = res.structuredContent.data;
    const headers = { "content-length": String(size) };
    if (process.env.BENCH_TOKEN) headers.authorization = `Bearer ${process.env.BENCH_TOKEN}`;
    const reply = await fetch(up.upload_url, { method: "PUT", body: createReadStream(file), duplex: "half", headers });
    if (!reply.ok) throw new Error(`PUT ${reply.status}: ${await reply.text()}`);
    return { items: 1, bytes: size, start };
  },
  // putcurl is put with the bytes sent by curl -T, as docs/pushing.md
  // shows: node's fetch spends more CPU streaming a file than the server
  // spends storing it, so put measures the client as much as the server.
  async putcurl(client) {
    const file = process.env.BENCH_PUT_FILE;
    const size = statSync(file).size;
    const start = performance.now();
    const res = await call(client, "guide_begin_upload", { path: `${dir}/put.bin`, size, sha256: process.env.BENCH_PUT_SHA256 });
    const args = ["-sS", "-f", "-T", file, "-o", "/dev/null", res.structuredContent.data.upload_url];
    if (process.env.BENCH_TOKEN) args.unshift("-H", `Authorization: Bearer ${process.env.BENCH_TOKEN}`);
    await promisify(execFile)("curl", args);
    return { items: 1, bytes: size, start };
  },
};

const client = await connect();
const cpu0 = serverCPU();
const r = await works[work](client);
const seconds = (performance.now() - r.start) / 1000;
const cpu1 = serverCPU();
await endProfiles();
// server_cpu counts the work's setup too (the file contents are made before
// r.start), which a server does not see.
const server_cpu = cpu0 === null || cpu1 === null ? null : cpu1 - cpu0;
console.log(JSON.stringify({ work, kind, items: r.items, bytes: r.bytes, seconds, server_cpu }));
await client.close();
