// The reference: a plain MCP server on the official TypeScript SDK that
// writes each file to a directory (tmpfs in run.sh), with no durability,
// no index and no limits. Usage: node ref-server.mjs DIR (prints its URL).
import http from "node:http";
import { randomUUID } from "node:crypto";
import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { z } from "zod";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";

const root = process.argv[2];

function newServer() {
  const server = new McpServer({ name: "reference", version: "1.0.0" });
  const file = { path: z.string(), content: z.string(), encoding: z.enum(["utf-8", "base64"]).optional() };
  const write = async ({ path: p, content, encoding }) => {
    const dest = path.join(root, path.normalize("/" + p));
    await mkdir(path.dirname(dest), { recursive: true });
    await writeFile(dest, Buffer.from(content, encoding === "base64" ? "base64" : "utf8"));
  };
  server.registerTool("write_file", { inputSchema: file }, async (args) => {
    await write(args);
    return { content: [{ type: "text", text: `wrote ${args.path}` }] };
  });
  server.registerTool("write_files", { inputSchema: { files: z.array(z.object(file)) } }, async ({ files }) => {
    for (const f of files) await write(f);
    return { content: [{ type: "text", text: `wrote ${files.length} files` }] };
  });
  return server;
}

const sessions = new Map();
const httpServer = http.createServer(async (req, res) => {
  const chunks = [];
  for await (const c of req) chunks.push(c);
  const body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString("utf8")) : undefined;
  let transport = sessions.get(req.headers["mcp-session-id"]);
  if (!transport) {
    transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => sessions.set(id, transport),
    });
    await newServer().connect(transport);
  }
  await transport.handleRequest(req, res, body);
});
httpServer.listen(0, "127.0.0.1", () => {
  console.log(`http://127.0.0.1:${httpServer.address().port}/mcp`);
});
