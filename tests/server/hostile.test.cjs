// Label server: malformed and hostile requests against unicorn-tiny-server.
// Each must be answered with a 4xx (an OpenAI error object where there is a
// body), never a 5xx and never a crash; the server must serve normally after
// every one of them.
"use strict";
const { test, before, after } = require("node:test");
const assert = require("node:assert/strict");
const h = require("./harness.cjs");

let server;
before(async () => { server = await h.start(h.env("UNICORN_TINY_SERVER"), [...h.tinyArgs(), "--max-body", "1000000"]); });
after(async () => {
  const { code } = await h.stop(server);
  assert.equal(code, 0, "SIGTERM ends the server with status 0");
});

const hi = [{ role: "user", content: "hi" }];
const chat = (extra) => JSON.stringify({ messages: hi, max_tokens: 2, ...extra });
const http = (head, body = "") =>
  `${head}\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
const postRaw = (route, body) => http(`POST ${route} HTTP/1.1`, body);

// Raw bytes on the wire: the HTTP parser's refusals.
const wire = [
  ["garbage bytes", Buffer.from([0, 1, 2, 3, 255, 254, 13, 10, 13, 10])],
  ["a bare line", "hello\r\n\r\n"],
  ["no version", "GET /health\r\n\r\n"],
  ["HTTP/2.0 version", "GET /health HTTP/2.0\r\n\r\n"],
  ["HTTP/0.9", "GET /health HTTP/0.9\r\n\r\n"],
  ["a header without a colon", "GET /health HTTP/1.1\r\nHost x\r\n\r\n"],
  ["a space before the colon", "GET /health HTTP/1.1\r\nHost : x\r\n\r\n"],
  ["a control character in a header", "GET /health HTTP/1.1\r\nHost: a\x01b\r\n\r\n"],
  ["headers past 32 KiB", `GET /health HTTP/1.1\r\nX-Big: ${"a".repeat(40000)}\r\n\r\n`],
  ["a 100 KiB target", `GET /${"a".repeat(100000)} HTTP/1.1\r\n\r\n`],
  ["a negative Content-Length", "POST /v1/completions HTTP/1.1\r\nContent-Length: -1\r\n\r\n"],
  ["a non-numeric Content-Length", "POST /v1/completions HTTP/1.1\r\nContent-Length: ten\r\n\r\n"],
  ["two Content-Lengths", "POST /v1/completions HTTP/1.1\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}"],
  ["a body past --max-body", "POST /v1/completions HTTP/1.1\r\nContent-Length: 2000000\r\n\r\n"],
  ["a chunked body past --max-body", "POST /v1/completions HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n" +
                                     "F4240\r\n" + "a".repeat(1000001) + "\r\n0\r\n\r\n"],
  ["a bad chunk size", "POST /v1/completions HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n"],
  ["Content-Length and chunked together",
   "POST /v1/completions HTTP/1.1\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n"],
  ["an unknown transfer encoding", "POST /v1/completions HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n{}"],
  ["a body cut short", "POST /v1/completions HTTP/1.1\r\nContent-Length: 100\r\n\r\n{\"prompt\":"],
  ["a header cut short", "POST /v1/completions HTTP/1.1\r\nContent-Le"],
  ["a NUL in the target", "GET /hea\0lth HTTP/1.1\r\n\r\n"],
  ["a path outside the routes", "GET /../../etc/passwd HTTP/1.1\r\n\r\n"],
  ["an unknown method", "BREW /v1/models HTTP/1.1\r\n\r\n"],
];

// Well-formed HTTP, bad requests.
const requests = [
  ["an empty body", postRaw("/v1/chat/completions", "")],
  ["a JSON null", postRaw("/v1/chat/completions", "null")],
  ["a JSON array", postRaw("/v1/chat/completions", "[]")],
  ["truncated JSON", postRaw("/v1/chat/completions", '{"messages":[')],
  ["invalid UTF-8 in JSON", (() => {
    const body = Buffer.concat([Buffer.from('{"messages":[{"role":"user","content":"'), Buffer.from([0xff]), Buffer.from('"}]}')]);
    return Buffer.concat([Buffer.from(`POST /v1/chat/completions HTTP/1.1\r\nContent-Length: ${body.length}\r\n\r\n`), body]);
  })()],
  ["a number past double", postRaw("/v1/chat/completions", chat({ temperature: 1 }).replace("1}", "1e999}"))],
  ["JSON nested 100000 deep", postRaw("/v1/chat/completions", `{"messages":${"[".repeat(100000)}${"]".repeat(100000)}}`)],
  ["no messages", postRaw("/v1/chat/completions", "{}")],
  ["messages not an array", postRaw("/v1/chat/completions", '{"messages":"hi"}')],
  ["a tool message", postRaw("/v1/chat/completions", JSON.stringify({ messages: [{ role: "tool", content: "x" }] }))],
  ["an image part", postRaw("/v1/chat/completions", JSON.stringify({ messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: "http://x" } }] }] }))],
  ["two user turns in a row", postRaw("/v1/chat/completions", JSON.stringify({ messages: [...hi, ...hi] }))],
  ["temperature -1", postRaw("/v1/chat/completions", chat({ temperature: -1 }))],
  ["temperature as a string", postRaw("/v1/chat/completions", chat({ temperature: "hot" }))],
  ["top_p 0", postRaw("/v1/chat/completions", chat({ top_p: 0 }))],
  ["max_tokens 0", postRaw("/v1/chat/completions", chat({ max_tokens: 0 }))],
  ["max_tokens 1e12", postRaw("/v1/chat/completions", chat({ max_tokens: 1e12 }))],
  ["n past the slots", postRaw("/v1/chat/completions", chat({ n: 9 }))],
  ["n = 0", postRaw("/v1/chat/completions", chat({ n: 0 }))],
  ["logprobs not a boolean", postRaw("/v1/chat/completions", chat({ logprobs: "yes" }))],
  ["top_logprobs 21", postRaw("/v1/chat/completions", chat({ logprobs: true, top_logprobs: 21 }))],
  ["a tool with no name", postRaw("/v1/chat/completions", chat({ tools: [{ type: "function", function: {} }] }))],
  ["tool_choice naming no tool", postRaw("/v1/chat/completions", chat({ tools: [{ type: "function", function: { name: "f" } }],
                                                                      tool_choice: { type: "function", function: { name: "g" } } }))],
  ["a response_format of XML", postRaw("/v1/chat/completions", chat({ response_format: { type: "xml" } }))],
  ["a schema with a pattern", postRaw("/v1/chat/completions", chat({ response_format: { type: "json_schema",
                                                                     json_schema: { name: "x", schema: { type: "string", pattern: "a+" } } } }))],
  ["a grammar with no root", postRaw("/v1/chat/completions", chat({ grammar: 'start ::= "a"' }))],
  ["a left-recursive grammar", postRaw("/v1/chat/completions", chat({ grammar: 'root ::= root "a" | "b"' }))],
  ["a schema whose $ref goes nowhere", postRaw("/v1/chat/completions", chat({ json_schema: { $ref: "#/$defs/none" } }))],
  ["a grammar 100000 groups deep", postRaw("/v1/chat/completions", chat({ grammar: "root ::= " + "(".repeat(100000) + '"a"' + ")".repeat(100000) }))],
  ["an unknown field", postRaw("/v1/chat/completions", chat({ frobnicate: true }))],
  ["stream_options without stream", postRaw("/v1/chat/completions", chat({ stream_options: { include_usage: true } }))],
  ["seventeen stop strings", postRaw("/v1/chat/completions", chat({ stop: Array.from({ length: 17 }, (_, i) => `s${i}`) }))],
  ["a seed that is not an integer", postRaw("/v1/chat/completions", chat({ seed: 1.5 }))],
  ["presence_penalty 5", postRaw("/v1/chat/completions", chat({ presence_penalty: 5 }))],
  ["an unknown model", postRaw("/v1/chat/completions", chat({ model: "gpt-4o" }))],
  ["a prompt past the context", postRaw("/v1/chat/completions", JSON.stringify({ messages: [{ role: "user", content: "word ".repeat(400) }] }))],
  ["a completion with no prompt", postRaw("/v1/completions", "{}")],
  ["a token id past the vocabulary", postRaw("/v1/completions", JSON.stringify({ prompt: [1, 600] }))],
  ["a negative token id", postRaw("/v1/completions", JSON.stringify({ prompt: [-4] }))],
  ["two prompts", postRaw("/v1/completions", JSON.stringify({ prompt: ["a", "b"] }))],
  ["echo not a boolean", postRaw("/v1/completions", JSON.stringify({ prompt: "a", echo: "yes" }))],
  ["max_tokens 0 without echo", postRaw("/v1/completions", JSON.stringify({ prompt: "a", max_tokens: 0 }))],
  ["best_of 2", postRaw("/v1/completions", JSON.stringify({ prompt: "a", best_of: 2 }))],
  ["GET on a completion route", http("GET /v1/chat/completions HTTP/1.1")],
  ["DELETE on the models", http("DELETE /v1/models HTTP/1.1")],
  ["POST on /health", postRaw("/health", "{}")],
  ["an unknown route", postRaw("/v1/embeddings", JSON.stringify({ input: "x" }))],
  ["an unknown model id", http("GET /v1/models/gpt-4o HTTP/1.1")],
  ["tokenize without content", postRaw("/tokenize", "{}")],
  ["tokenize of a number", postRaw("/tokenize", '{"content":5}')],
  ["tokenize with an unknown field", postRaw("/tokenize", '{"content":"a","x":1}')],
  ["detokenize of a string", postRaw("/detokenize", '{"tokens":"abc"}')],
  ["detokenize past the vocabulary", postRaw("/detokenize", '{"tokens":[99999]}')],
  ["detokenize of 1e20", postRaw("/detokenize", '{"tokens":[1e20]}')],
  ["a chat body on the text route", postRaw("/v1/completions", chat({}))],
];

test(`${wire.length + requests.length} malformed or hostile requests: each a 4xx, never a 5xx or a crash`,
     { timeout: 120000 }, async () => {
  let n = 0;
  for (const [what, bytes] of [...wire, ...requests]) {
    const r = await h.raw(server, bytes);
    assert.ok(r.status !== null, `${what}: the server closed without an answer`);
    assert.ok(r.status >= 400 && r.status < 500, `${what}: status ${r.status}\n${r.text.slice(0, 300)}`);
    // The first response's body (bytes the parser did not take may make more).
    const head = r.text.slice(0, r.text.indexOf("\r\n\r\n"));
    const length = Number(/content-length: (\d+)/i.exec(head)?.[1] ?? 0);
    const body = r.text.substr(head.length + 4, length);
    if (length) {
      const j = JSON.parse(body);
      assert.ok(j.error && typeof j.error.message === "string" && j.error.type, `${what}: ${body}`);
    }
    assert.equal(r.text.length, head.length + 4 + length, `${what}: more than one response\n${r.text}`);
    n++;
    // Still serving.
    assert.equal((await fetch(server.url + "/health")).status, 200, `after ${what}`);
  }
  console.log(`${n} hostile requests, each answered with a 4xx`);
  const m = await h.metrics(server);
  const fivexx = Object.entries(m).filter(([k, v]) => /status="5/.test(k) && v > 0);
  assert.deepEqual(fivexx, [], "no 5xx in /metrics");
  // And a normal request still works.
  const ok = await h.post(server, "/v1/chat/completions", { messages: hi, max_tokens: 3 });
  assert.equal(ok.status, 200);
});

test("a client that connects and sends nothing is closed after --timeout, without a response", async () => {
  const quick = await h.start(h.env("UNICORN_TINY_SERVER"), [...h.tinyArgs(), "--timeout", "1"]);
  try {
    const t0 = Date.now();
    const r = await h.raw(quick, "", { end: false, timeoutMs: 5000 });
    assert.equal(r.status, null);
    assert.ok(Date.now() - t0 >= 900, "closed only after the idle timeout");
    assert.equal((await fetch(quick.url + "/health")).status, 200);
  } finally {
    assert.equal((await h.stop(quick)).code, 0);
  }
});
