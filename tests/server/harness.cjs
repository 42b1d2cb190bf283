// Shared by the server's client tests (tests/server/*.test.cjs): starts a
// server binary on a free port and waits until it is ready, stops it, reads
// its resident memory, and makes raw or streamed HTTP requests. Node's own
// modules, plus the packages of the project's npm manifest
// (UNICORN_NPM_MODULES: the real `openai` client).
"use strict";
const { spawn } = require("node:child_process");
const fs = require("node:fs");
const net = require("node:net");
const path = require("node:path");

const env = (name) => {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set: run the server tests through ctest`);
  return v;
};
const npm = (name) => require(path.join(env("UNICORN_NPM_MODULES"), name));

// The tiny model's server (8 slots of 256 tokens) or the demo model's.
const tinyArgs = () => ["--model", env("UNICORN_TINY_MODEL"), "--tokenizer", env("UNICORN_TINY_TOKENIZER")];

// Starts `binary` on `port` (0: any free port) with `args`; resolves once it
// printed that it is ready (or, with until: "listening", as soon as it listens).
function start(binary, args = [], { until = "ready", port = 0 } = {}) {
  const proc = spawn(binary, ["--port", String(port), "--quiet", ...args], { stdio: ["ignore", "ignore", "pipe"] });
  const server = { proc, log: "", port: 0, exited: null };
  server.exit = new Promise((resolve) => proc.on("exit", (code, signal) => resolve((server.exited = { code, signal }))));
  return new Promise((resolve, reject) => {
    proc.stderr.on("data", (d) => {
      server.log += d;
      const listening = /listening on http:\/\/[^:]+:(\d+)/.exec(server.log);
      if (listening) server.port = Number(listening[1]);
      if (server.port && (until === "listening" || /ready on http/.test(server.log))) {
        server.url = `http://127.0.0.1:${server.port}`;
        resolve(server);
      }
    });
    server.exit.then(({ code, signal }) =>
      reject(new Error(`${path.basename(binary)} exited (${code ?? signal}) before it was ready:\n${server.log}`)));
  });
}

// SIGTERM (or `signal`), then the exit status.
async function stop(server, signal = "SIGTERM") {
  if (!server.exited) server.proc.kill(signal);
  return server.exit;
}

// Resident memory in KiB (Linux).
function rssKiB(pid) {
  const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"));
  return Number(m[1]);
}

async function post(server, route, body, headers = {}) {
  const res = await fetch(server.url + route, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  const text = await res.text();
  let json = null;
  try { json = JSON.parse(text); } catch { /* not JSON */ }
  return { status: res.status, headers: res.headers, text, json };
}

// The data of each server-sent event in a response body, as it arrives
// (one "data: ..." line per event, events ended by a blank line).
async function* sseData(body) {
  const decoder = new TextDecoder();
  let buffered = "";
  for await (const bytes of body) {
    buffered += decoder.decode(bytes, { stream: true });
    let cut;
    while ((cut = buffered.indexOf("\n\n")) >= 0) {
      const event = buffered.slice(0, cut);
      buffered = buffered.slice(cut + 2);
      if (!event.startsWith("data: ")) throw new Error(`not an SSE data line: ${event}`);
      yield event.slice(6);
    }
  }
}

// A streamed completion read as server-sent events: the parsed chunks, and
// whether "data: [DONE]" ended them. `onChunk(chunk, index)` may return
// "abort" to drop the connection there.
async function streamEvents(server, route, body, { onChunk } = {}) {
  const controller = new AbortController();
  const res = await fetch(server.url + route, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ ...body, stream: true }),
    signal: controller.signal,
  });
  const out = { status: res.status, chunks: [], done: false, aborted: false };
  if (res.status !== 200) {
    out.json = await res.json();
    return out;
  }
  try {
    for await (const data of sseData(res.body)) {
      if (data === "[DONE]") { out.done = true; continue; }
      const chunk = JSON.parse(data);
      out.chunks.push(chunk);
      if (onChunk && onChunk(chunk, out.chunks.length - 1) === "abort") {
        out.aborted = true;
        controller.abort();
        return out;
      }
    }
  } catch (e) {
    if (!out.aborted) throw e;
  }
  return out;
}

// The text of a streamed chat or text completion, and its finish reason.
function streamed(out) {
  let text = "", finish = null, usage = null;
  for (const c of out.chunks) {
    if (c.usage) usage = c.usage;
    for (const ch of c.choices) {
      text += ch.delta ? ch.delta.content ?? "" : ch.text ?? "";
      if (ch.finish_reason) finish = ch.finish_reason;
    }
  }
  return { text, finish, usage };
}

// Sends raw bytes on a fresh connection, half-closes it and returns what came
// back (the final status line's code, past any interim 1xx, or null when the
// server just closed).
function raw(server, bytes, { end = true, timeoutMs = 10000 } = {}) {
  return new Promise((resolve, reject) => {
    const socket = net.connect(server.port, "127.0.0.1");
    let reply = Buffer.alloc(0);
    const timer = setTimeout(() => { socket.destroy(); reject(new Error("no answer in time")); }, timeoutMs);
    socket.on("connect", () => {
      socket.write(bytes);
      if (end) socket.end();
    });
    socket.on("data", (d) => { reply = Buffer.concat([reply, d]); });
    socket.on("error", () => {});  // a reset after the server answered and closed
    socket.on("close", () => {
      clearTimeout(timer);
      const text = reply.toString("latin1");
      const m = /^(?:HTTP\/1\.[01] 1\d\d [^\r]*\r\n\r\n)*HTTP\/1\.[01] (\d{3})/.exec(text);
      resolve({ status: m ? Number(m[1]) : null, text });
    });
  });
}

// Sends a whole JSON POST on a raw connection and closes it after `ms`
// milliseconds, unread: a client that gives up on an unstreamed request (the
// server has the request, whatever the timing). With reset, the connection
// ends with a reset (a killed process, SO_LINGER 0) rather than a close.
function postThenLeave(server, route, body, ms, { reset = false } = {}) {
  return new Promise((resolve) => {
    const payload = JSON.stringify(body);
    const socket = net.connect(server.port, "127.0.0.1", () => {
      socket.write(`POST ${route} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n` +
                   `Content-Length: ${Buffer.byteLength(payload)}\r\n\r\n${payload}`);
      setTimeout(() => { if (reset) socket.resetAndDestroy(); else socket.destroy(); resolve(); }, ms);
    });
    socket.on("error", () => {});
  });
}

// The server's /metrics as {"name{labels}": value}.
async function metrics(server) {
  const text = await (await fetch(server.url + "/metrics")).text();
  const out = {};
  for (const line of text.split("\n")) {
    if (!line || line.startsWith("#")) continue;
    const cut = line.lastIndexOf(" ");
    out[line.slice(0, cut)] = Number(line.slice(cut + 1));
  }
  return out;
}

module.exports = { env, npm, tinyArgs, start, stop, rssKiB, post, sseData, streamEvents, streamed, raw, postThenLeave,
                   metrics };
