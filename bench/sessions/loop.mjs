// Runs the official TypeScript SDK client RUNS times against URL: each run
// a new Client and transport, one tool call, then client.close(), which
// (like most clients) does not send DELETE, so the server never hears the
// session end. Prints one JSON line: runs, refused, the first error, and
// whether the runs had sessions at all.
//
//   node loop.mjs URL RUNS [TOKEN]
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, runs = "1000", token] = process.argv.slice(2);
const headers = token ? { Authorization: `Bearer ${token}` } : {};
let refused = 0, withSession = 0, firstError = null;
for (let i = 0; i < Number(runs); i++) {
  const client = new Client({ name: "depotfs-ts-loop", version: "1" });
  const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
  try {
    await client.connect(transport);
    if (transport.sessionId) withSession++;
    const res = await client.callTool({ name: "guide_cache_stats", arguments: {} });
    if (res.isError) throw new Error(`guide_cache_stats: ${JSON.stringify(res.content).slice(0, 300)}`);
  } catch (err) {
    refused++;
    firstError ??= `run ${i + 1}: ${err.message}`;
  } finally {
    await client.close();
  }
}
console.log(JSON.stringify({ runs: Number(runs), refused, withSession, firstError }));
