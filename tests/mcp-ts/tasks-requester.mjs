// A requester of the MCP Tasks extension as an application builds one from the official
// packages: `@modelcontextprotocol/client` 2.x on protocol 2026-07-28 and
// `@modelcontextprotocol/ext-tasks`, whose session needs the host's own raw request path
// for the task wire shapes (`rawDispatch`) and the per-request framing. Every answer that
// path carries is kept, to be checked against the extension's published schemas.

import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { createTaskSessionFromClient } from "@modelcontextprotocol/ext-tasks/client";
import {
  CancelTaskResultV2Schema,
  CreateTaskResultV2Schema,
  GetTaskResultV2Schema,
} from "@modelcontextprotocol/ext-tasks/core/v2";

const CLIENT_INFO = { name: "cairnloop-tasks-e2e", version: "1.0.0" };
const CAPABILITIES = { extensions: { "io.modelcontextprotocol/tasks": {} } };

/**
 * A transport that hands the SDK client everything but the answers to the host's own raw
 * requests, which it routes back to their callers.
 */
class Coordinated {
  #pending = new Map();
  #next = 0;

  constructor(inner) {
    this.inner = inner;
    inner.onmessage = (message, extra) => {
      const waiting = message.id !== undefined && !("method" in message) && this.#pending.get(message.id);
      if (waiting) {
        this.#pending.delete(message.id);
        waiting(message);
        return;
      }
      this.onmessage?.(message, extra);
    };
    inner.onclose = () => this.onclose?.();
    inner.onerror = (error) => this.onerror?.(error);
  }

  start() { return this.inner.start(); }
  send(message, options) { return this.inner.send(message, options); }
  close() { return this.inner.close(); }
  get sessionId() { return this.inner.sessionId; }
  setProtocolVersion(version) { this.inner.setProtocolVersion?.(version); }

  /** Sends `request` as a JSON-RPC request of its own and resolves with its answer. */
  async raw(request) {
    const id = `host-${++this.#next}`;
    const answered = new Promise((resolve) => this.#pending.set(id, resolve));
    await this.inner.send({ jsonrpc: "2.0", ...request, id });
    return answered;
  }
}

/** The extension's schema for what `method` answers, or none. */
function schemaFor(method, result) {
  if (method === "tools/call") return result?.resultType === "task" ? CreateTaskResultV2Schema : undefined;
  if (method === "tasks/get") return GetTaskResultV2Schema;
  if (method === "tasks/cancel") return CancelTaskResultV2Schema;
  return undefined;
}

/**
 * A task session of `client` whose raw path is `send` (a request in, its JSON-RPC answer
 * out), every answer kept and checkable against the extension's schemas.
 */
function taskSession(client, endpointId, send) {
  const answers = [];
  const session = createTaskSessionFromClient(client, {
    endpointId,
    rawDispatch: async (request) => {
      const response = await send(request);
      answers.push({ method: request.method, response });
      return "error" in response
        ? { kind: "error", error: response.error }
        : { kind: "result", result: response.result };
    },
    v2RequestFraming: { protocolVersion: "2026-07-28", clientInfo: CLIENT_INFO, clientCapabilities: CAPABILITIES },
  });
  const invalid = () =>
    answers.flatMap(({ method, response }) => {
      const schema = schemaFor(method, response.result);
      if (schema === undefined || response.result === undefined) return [];
      const checked = schema.safeParse(response.result);
      return checked.success ? [] : [{ method, issues: checked.error.issues }];
    });
  return {
    client,
    session,
    answers,
    invalid,
    close: async () => {
      await session.close?.();
      await client.close();
    },
  };
}

/**
 * A task session over a gateway served on stdio by `command args`. `answers` keeps every
 * raw answer as `{ method, response }`; `invalid()` lists those that fail the extension's
 * schemas (empty when all conform).
 */
export async function stdioTaskSession(command, args) {
  const coordinated = new Coordinated(new StdioClientTransport({ command, args, stderr: "ignore" }));
  const client = new Client(CLIENT_INFO, { capabilities: CAPABILITIES, versionNegotiation: { mode: "auto" } });
  await client.connect(coordinated);
  return taskSession(client, "cairnloop-gateway-stdio", (request) => coordinated.raw(request));
}

/** The JSON-RPC answer with `id` in a Streamable HTTP response: a JSON body or an event stream. */
async function answerOf(response, id) {
  const text = await response.text();
  if (!(response.headers.get("content-type") ?? "").includes("text/event-stream")) return JSON.parse(text);
  for (const line of text.split("\n")) {
    if (!line.startsWith("data:")) continue;
    const message = JSON.parse(line.slice(5));
    if (message.id === id) return message;
  }
  throw new Error(`no answer to ${id} in ${text.slice(0, 200)}`);
}

/**
 * A task session over a gateway served on Streamable HTTP at `url`, each request with the
 * bearer token `bearer`. The raw path posts each task request on its own, with the headers
 * protocol 2026-07-28 asks for (`Mcp-Method`, and `Mcp-Name`: the tool or the task).
 */
export async function httpTaskSession(url, bearer) {
  const client = new Client(CLIENT_INFO, { capabilities: CAPABILITIES, versionNegotiation: { mode: "auto" } });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${bearer}` } },
  }));
  let next = 0;
  return taskSession(client, `cairnloop-gateway-http-${url}`, async (request) => {
    const id = `host-${++next}`;
    const headers = {
      authorization: `Bearer ${bearer}`,
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": "2026-07-28",
      "mcp-method": request.method,
    };
    // The name the request acts on: the tool called, or the task followed.
    const name = request.method === "tools/call" ? request.params?.name : request.params?.taskId;
    if (name !== undefined) headers["mcp-name"] = name;
    const response = await fetch(url, { method: "POST", headers, body: JSON.stringify({ jsonrpc: "2.0", ...request, id }) });
    return answerOf(response, id);
  });
}
