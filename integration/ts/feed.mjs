// The change feed through the official TypeScript SDK client, against the
// real depotfs binary over streamable HTTP: node feed.mjs DEPOTFS WORKDIR.
// .ci/ts-sdk installs the pinned SDK, builds the binary and runs it.
//
// A reader token granted only /a follows the feed three ways: a long poll
// of /a and a long poll of / (guide_changes looping on its cursor; the
// grants, not the prefix, keep /b out of the second) and a resource
// subscription to depot:///a/ (notifications/resources/updated). A writer
// token pushes FEED_CHANGES files (default 1,000) below /a, with files
// below /b between them, and the server is killed (SIGKILL) and restarted
// on the same port in the middle. Every reader must receive every one of
// the changes below /a, in revision order, exactly once, and nothing
// else. Then the server restarts keeping only 100 changes
// (--feed-history), and a cursor from before them must be told resync with
// the oldest revision kept, from which every change kept follows.
//
// Prints counts; exits 1 naming every miss.
import { createHash } from "node:crypto";
import { execFileSync, spawn } from "node:child_process";
import { appendFileSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ResourceUpdatedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

const [bin, work] = process.argv.slice(2);
if (!bin || !work) {
  console.error("usage: node feed.mjs DEPOTFS WORKDIR");
  process.exit(2);
}
const total = Number(process.env.FEED_CHANGES || 1000);
const batch = 50; // files below /a per guide_cache_files call
const outside = 10; // files below /b after each of those calls
const history = 100; // --feed-history of the last part
const db = join(work, "depot.db");
const tokens = join(work, "tokens.json");
const logFile = join(work, "depotfs.log");

const began = Date.now();
const elapsed = () => `${((Date.now() - began) / 1000).toFixed(1)} s`;
const misses = [];
function miss(msg) {
  misses.push(msg);
  console.error(`MISS: ${msg}`);
}

// deadline polls cond until it holds or ms have passed.
async function deadline(ms, what, cond) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await cond()) return true;
    await sleep(50);
  }
  miss(`${what}: not within ${ms / 1000} s`);
  return false;
}

function issue(name, grant) {
  const args = ["token", "issue", "--tokens", tokens, "--name", name, "--grant", grant];
  return execFileSync(bin, args, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] }).trim();
}

// server is the one depotfs serve the run drives; url is where it listens.
const server = { proc: null, url: "", exited: null };

async function start(port, ...extra) {
  const args = ["serve", "--no-mount", "--db", db, "--tokens", tokens, "--listen", `127.0.0.1:${port}`, ...extra];
  appendFileSync(logFile, `== depotfs ${args.join(" ")}\n`);
  const proc = spawn(bin, args, { stdio: ["ignore", "ignore", "pipe"] });
  server.proc = proc;
  server.exited = new Promise((resolve) => proc.once("exit", resolve));
  let url = "";
  let buf = "";
  proc.stderr.on("data", (chunk) => {
    appendFileSync(logFile, chunk);
    buf += chunk;
    url ||= buf.match(/msg="depotfs ready".* mcp=(http:\S+)/)?.[1] ?? "";
  });
  let gone = false;
  server.exited.then(() => (gone = true));
  const ok = await deadline(60000, "depotfs serve to get ready", () => url !== "" || gone);
  if (!ok || !url) throw new Error(`depotfs serve did not get ready (log: ${logFile})`);
  server.url = url;
  return url;
}

async function stop(signal) {
  server.proc.kill(signal);
  await server.exited;
}

async function connect(token, onUpdate) {
  const client = new Client({ name: "depotfs-ts-feed", version: "1.0.0" });
  if (onUpdate) client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => onUpdate(n.params));
  const transport = new StreamableHTTPClientTransport(new URL(server.url), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
    // A broken stream is the reader's to handle: it reconnects and reads
    // what it missed from guide_changes.
    reconnectionOptions: { initialReconnectionDelay: 100, maxReconnectionDelay: 1000, reconnectionDelayGrowFactor: 1.5, maxRetries: 0 },
  });
  await client.connect(transport, { timeout: 10000 });
  return client;
}

// call calls a depotfs tool and returns the data of its reply, or throws
// with the reply's error.
async function call(client, name, args) {
  const res = await client.callTool({ name, arguments: args }, undefined, { timeout: 60000 });
  const env = res.structuredContent;
  if (!env || !env.success) {
    const err = new Error(`${name}: ${JSON.stringify(env?.error ?? res.content).slice(0, 400)}`);
    err.type = env?.error?.type;
    throw err;
  }
  return env.data;
}

const poll = (client, prefix, since, waitMs) => call(client, "guide_changes", { prefix, since, wait_ms: waitMs, max: 1000 });

// Log is what one reader received, in order.
class Log {
  constructor(name, cursor) {
    this.name = name;
    this.cursor = cursor;
    this.changes = [];
    this.pushed = 0; // changes a notification brought
    this.caughtUp = 0; // changes a subscriber read from guide_changes after (re)subscribing
    this.resyncs = 0;
    this.late = 0; // notifications of a change not received, arriving after a later one
    this.revisions = new Set();
    this.sessions = 0;
    this.errors = [];
  }
  add(changes, cursor) {
    for (const c of changes ?? []) {
      this.changes.push(c);
      this.revisions.add(c.revision);
    }
    this.cursor = Math.max(this.cursor, cursor);
  }
  fail(err) {
    if (this.errors.length < 5) this.errors.push(String(err?.message ?? err).slice(0, 160));
  }
}

// ctl.done stops the readers; a reader that lost its session waits for
// ctl.held before it connects again.
const ctl = { done: false, held: Promise.resolve() };

async function longPoll(token, prefix, log) {
  while (!ctl.done) {
    let client;
    try {
      client = await connect(token);
      log.sessions++;
      while (!ctl.done) {
        const page = await poll(client, prefix, log.cursor, 500);
        if (page.resync) log.resyncs++;
        log.add(page.changes, page.cursor);
      }
    } catch (err) {
      log.fail(err);
    } finally {
      await client?.close().catch(() => {});
    }
    if (!ctl.done) await sleep(50);
    await ctl.held;
  }
}

// subscribe follows uri with a resource subscription: after subscribing,
// and after a notification saying some were lost, it reads what it missed
// from guide_changes (from the last revision it has), then takes the
// notifications newer than that. A restarted server forgets the
// subscription: a failed ping or a broken stream makes it connect and
// subscribe again.
//
// The subscriber makes its guide_changes calls on the subscription's own
// session, and pings on it without pause, while its GET stream carries the
// notifications: depotfs writes a session's resource notifications to its
// GET stream only, in order, never to the response of one of its requests
// (mcp-go alone hands them to whichever stream takes them first, and drops
// one a request took just as it ended). FEED_SHARED=0 makes the calls on a
// second session instead.
const shared = process.env.FEED_SHARED !== "0";
async function subscribe(token, uri, prefix, log) {
  while (!ctl.done) {
    const queue = [];
    let wake = () => {};
    let broken = null;
    let client;
    let calls; // the session guide_changes and pings go through
    const catchUp = async () => {
      for (;;) {
        const page = await poll(calls, prefix, log.cursor, 0);
        if (page.resync) log.resyncs++;
        log.caughtUp += page.changes?.length ?? 0;
        log.add(page.changes, page.cursor);
        if (!page.more) return;
      }
    };
    try {
      client = await connect(token, (params) => {
        queue.push(params._meta ?? {});
        wake();
      });
      client.onerror = (err) => {
        broken = err;
        wake();
      };
      calls = shared ? client : await connect(token);
      log.sessions++;
      await client.subscribeResource({ uri }, { timeout: 10000 });
      await catchUp();
      if (shared) {
        (async () => {
          while (!ctl.done && !broken) await calls.ping({ timeout: 10000 }).catch(() => {});
        })();
      }
      while (!ctl.done && !broken) {
        if (queue.length === 0) {
          const woke = await Promise.race([new Promise((r) => (wake = () => r(true))), sleep(300).then(() => false)]);
          if (!woke && !broken && !ctl.done) await calls.ping({ timeout: 10000 }); // quiet: is the server still there?
          continue;
        }
        const m = queue.shift();
        if (m.resync) {
          await catchUp();
          continue;
        }
        if (m.revision <= log.cursor) {
          // Received already (a notification of a change read from
          // guide_changes), or arriving after a later one.
          if (!log.revisions.has(m.revision) && m.path?.startsWith("/a/")) log.late++;
          continue;
        }
        log.pushed++;
        const c = { path: m.path, kind: m.kind, type: m.type, revision: m.revision, size: m.size, sha256: m.sha256 };
        if (m.from) c.from = m.from;
        log.add([c], m.revision);
      }
      if (broken) throw broken;
    } catch (err) {
      log.fail(err);
    } finally {
      await client?.close().catch(() => {});
      if (calls !== client) await calls?.close().catch(() => {});
    }
    if (!ctl.done) await sleep(50);
    await ctl.held;
  }
}

// want is every file written below /a: path -> {revision, size, sha256}.
const want = new Map();
let outsideWritten = 0;
let lastA = 0; // the revision of the last file written below /a

// write pushes files below dir (named by index from..to-1) in one call and
// returns the depot's revision after it.
async function write(writer, dir, from, to) {
  const files = [];
  for (let i = from; i < to; i++) files.push({ path: `${dir}/f${String(i).padStart(5, "0")}`, content: `file ${i} of ${dir}` });
  const data = await call(writer, "guide_cache_files", { files });
  for (const f of data.files) {
    if (dir !== "/a") continue;
    const content = files.find((x) => x.path === f.path).content;
    lastA = Math.max(lastA, f.revision);
    want.set(f.path, { revision: f.revision, size: Buffer.byteLength(content), sha256: createHash("sha256").update(content).digest("hex") });
  }
  if (dir !== "/a") outsideWritten += files.length;
  return data.revision;
}

// writeRange writes the files from..to-1 below /a, batch by batch, each
// followed by files below /b, and returns the depot's revision after them.
async function writeRange(writer, from, to) {
  let rev = 0;
  for (let i = from; i < to; i += batch) {
    await write(writer, "/a", i, Math.min(i + batch, to));
    rev = await write(writer, "/b", outsideWritten, outsideWritten + outside);
  }
  return rev;
}

// check says what a reader missed: every file of want, created, once, in
// revision order, with its size and hash, and nothing else.
function check(log) {
  const seen = new Map();
  let prev = 0;
  let bad = 0;
  for (const c of log.changes) {
    const w = want.get(c.path);
    if (c.revision <= prev) {
      if (bad++ < 5) miss(`${log.name}: ${c.path} at revision ${c.revision} came after revision ${prev}: out of order or again`);
    } else if (!w) {
      if (bad++ < 5) miss(`${log.name}: ${JSON.stringify(c)} is not one of the files written below /a`);
    } else if (c.kind !== "created" || c.type !== "file" || c.revision !== w.revision || c.size !== w.size || c.sha256 !== w.sha256) {
      if (bad++ < 5) miss(`${log.name}: ${JSON.stringify(c)}; want created at ${w.revision}, ${w.size} bytes, sha256 ${w.sha256}`);
    }
    prev = Math.max(prev, c.revision);
    seen.set(c.path, (seen.get(c.path) ?? 0) + 1);
  }
  const missing = [...want.keys()].filter((p) => !seen.has(p));
  const twice = [...seen].filter(([, n]) => n > 1).map(([p]) => p);
  if (missing.length) miss(`${log.name}: ${missing.length} of ${want.size} changes never received, first ${missing.slice(0, 3).join(", ")}`);
  if (twice.length) miss(`${log.name}: ${twice.length} changes received more than once, first ${twice.slice(0, 3).join(", ")}`);
  if (log.resyncs) miss(`${log.name}: told to resync ${log.resyncs} times with every change kept`);
  console.log(`${log.name}: ${log.changes.length} changes received, ${want.size - missing.length} of ${want.size} below /a, ${bad} wrong; ` +
    (log.pushed || log.caughtUp ? `${log.pushed} pushed by notifications, ${log.caughtUp} read from guide_changes after (re)subscribing, ${log.late} notifications out of order; ` : "") +
    `${log.sessions} sessions; reconnection errors: ${JSON.stringify(log.errors)}`);
}

async function refused(what, f, type) {
  try {
    await f();
    miss(`${what}: accepted; want it refused`);
  } catch (err) {
    if (type && err.type !== type) miss(`${what}: refused with ${err.message}; want a ${type} error`);
    else console.log(`${what}: refused (${err.message.slice(0, 120)})`);
  }
}

async function main() {
  const writerToken = issue("writer", "*:/:rw");
  const readerToken = issue("reader-a", "*:/a:r");
  await start(0);
  const port = new URL(server.url).port;
  console.log(`depotfs serve on ${server.url}; ${total} changes below /a, ${outside} below /b after each ${batch}`);

  let writer = await connect(writerToken);
  // /a and /b exist before the readers start, from r0.
  const seed = await call(writer, "guide_cache_files", { files: ["/a/.keep", "/b/.keep"].map((path) => ({ path, content: "keep" })) });
  const r0 = seed.revision;

  const probe = await connect(readerToken);
  await refused("guide_changes of /b with a token granted /a", () => poll(probe, "/b", r0, 0), "security");
  await refused("resources/subscribe to depot:///b/ with a token granted /a", () => probe.subscribeResource({ uri: "depot:///b/" }));
  await probe.close();

  const logs = [new Log("long poll of /a", r0), new Log("long poll of / (granted /a)", r0), new Log("subscriber to depot:///a/", r0)];
  const readers = [
    longPoll(readerToken, "/a", logs[0]),
    longPoll(readerToken, "/", logs[1]),
    subscribe(readerToken, "depot:///a/", "/a", logs[2]),
  ];
  // A reader is at the last change below /a when its cursor is: the long
  // polls' cursors move past the changes below /b too, the subscriber's
  // only with what it hears of.
  const caughtUp = () => {
    const rev = lastA;
    return deadline(120000, `every reader at revision ${rev}, the last below /a`, () => logs.every((l) => l.cursor >= rev));
  };

  const half = Math.floor(total / 2);
  await writeRange(writer, 0, batch);
  await caughtUp(); // every reader is reading
  await writeRange(writer, batch, half);
  const pushedBefore = logs[2].pushed;
  const caughtUpBefore = logs[2].caughtUp;
  // The kill comes right after the last write of the first half, while
  // the readers may still be reading it: they resume from their cursors.
  // They connect again only once a batch has been written after the
  // restart, so the subscriber must read it from guide_changes: no
  // notification of it reached it.
  let release;
  ctl.held = new Promise((r) => (release = r));
  await writer.close();
  await stop("SIGKILL");
  await start(port);
  console.log(`killed depotfs (SIGKILL) after ${half} changes below /a and restarted it on ${server.url}`);
  writer = await connect(writerToken);
  await writeRange(writer, half, half + batch);
  release();
  await writeRange(writer, half + batch, total);
  await caughtUp();
  console.log(`every reader at the last change below /a after ${elapsed()}`);
  ctl.done = true;
  await Promise.all(readers);
  for (const l of logs) check(l);
  if (pushedBefore === 0) miss("subscriber: no notification before the restart; every change came from guide_changes");
  if (logs[2].pushed === pushedBefore) miss("subscriber: no notification after the restart; every change came from guide_changes");
  if (logs[2].caughtUp - caughtUpBefore < batch) miss(`subscriber: read ${logs[2].caughtUp - caughtUpBefore} changes from guide_changes after the restart; want at least the ${batch} written before it subscribed again`);

  // Resync: keep only the last changes; a cursor from before them is told so.
  await writer.close();
  await stop("SIGTERM");
  await start(port, "--feed-history", String(history));
  writer = await connect(writerToken);
  want.clear();
  const rev = await writeRange(writer, total, total + 150);
  const late = await connect(readerToken);
  const page = await poll(late, "/a", r0, 0);
  if (!page.resync || page.oldest !== page.revision - history || (page.changes?.length ?? 0) !== 0 || page.revision !== rev) {
    miss(`guide_changes since ${r0} keeping ${history} changes at revision ${rev}: ${JSON.stringify(page)}; want resync with oldest ${rev - history}`);
  } else {
    console.log(`resync: guide_changes since ${r0} with ${history} changes kept at revision ${rev} says resync, oldest ${page.oldest}, cursor ${page.cursor}`);
    const before = await poll(late, "/a", page.oldest - 1, 0);
    if (!before.resync || before.oldest !== page.oldest) miss(`guide_changes since ${page.oldest - 1}: ${JSON.stringify(before).slice(0, 300)}; want resync with oldest ${page.oldest}`);
    const kept = new Log("long poll of /a from the oldest revision kept", page.oldest);
    for (let more = true; more; ) {
      const p = await poll(late, "/a", kept.cursor, 0);
      if (p.resync) kept.resyncs++;
      kept.add(p.changes, p.cursor);
      more = p.more;
    }
    for (const [p, w] of want) if (w.revision <= page.oldest) want.delete(p);
    check(kept);
  }
  await late.close();
  await writer.close();
  await stop("SIGTERM");
}

try {
  await main();
} catch (err) {
  miss(`run failed: ${err.stack ?? err}`);
  ctl.done = true;
  if (server.proc && server.proc.exitCode === null) await stop("SIGTERM");
}
if (misses.length) {
  console.error(`ts-sdk feed: FAILED, ${misses.length} misses (server log: ${logFile})`);
  process.exit(1);
}
console.log(`ts-sdk feed: every reader received every change below its prefix, in order, once; resync named the oldest revision (${elapsed()})`);
process.exit(0);
