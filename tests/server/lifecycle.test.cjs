// Label server: overload, departures, keys, flags, the chat page's route and shutdown, on
// unicorn-tiny-server (compiled for 8 slots of 256 tokens).
"use strict";
const { test } = require("node:test");
const assert = require("node:assert/strict");
const { spawnSync } = require("node:child_process");
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");
const h = require("./harness.cjs");

const binary = () => h.env("UNICORN_TINY_SERVER");
const long = { messages: [{ role: "user", content: "go on" }], max_tokens: 200, temperature: 0.8, seed: 1 };

test("past the slots and the queue the answer is 503 with Retry-After", async () => {
  const s = await h.start(binary(), [...h.tinyArgs(), "--parallel", "1", "--queue", "1"]);
  try {
    let first;
    const started = new Promise((resolve) => {
      first = h.streamEvents(s, "/v1/chat/completions", long, { onChunk: () => resolve() });
    });
    await started;  // it holds the one slot
    const queued = h.post(s, "/v1/chat/completions", { ...long, max_tokens: 2 });
    for (;;) {  // until the second waits in the queue
      if ((await h.metrics(s)).unicorn_queue_depth === 1) break;
      await new Promise((r) => setTimeout(r, 10));
    }
    const refused = await h.post(s, "/v1/chat/completions", { ...long, max_tokens: 2 });
    assert.equal(refused.status, 503);
    assert.equal(refused.headers.get("retry-after"), "1");
    assert.equal(refused.json.error.code, "queue_full");
    assert.equal((await queued).status, 200);
    assert.ok((await first).done);
    const m = await h.metrics(s);
    assert.equal(m['unicorn_rejected_total{reason="queue_full"}'], 1);
  } finally {
    assert.equal((await h.stop(s)).code, 0);
  }
});

test("a client that leaves mid-stream, or while waiting unstreamed, frees its slot", async () => {
  const s = await h.start(binary(), [...h.tinyArgs(), "--parallel", "1"]);
  try {
    const out = await h.streamEvents(s, "/v1/chat/completions", long, { onChunk: (_, i) => (i === 1 ? "abort" : undefined) });
    assert.ok(out.aborted);
    await h.postThenLeave(s, "/v1/chat/completions", long, 50);
    // The one slot serves the next request at once (not after 200 tokens twice).
    const t0 = Date.now();
    const next = await h.post(s, "/v1/chat/completions", { ...long, max_tokens: 3 });
    assert.equal(next.status, 200);
    let m;
    for (;;) {
      m = await h.metrics(s);
      if (m.unicorn_completions_in_flight === 0) break;
      await new Promise((r) => setTimeout(r, 10));
    }
    assert.equal(m.unicorn_client_disconnects_total, 2);
    assert.equal(m['unicorn_requests_total{endpoint="chat_completions",status="499"}'], 2);
    assert.equal(m['unicorn_completions_total{outcome="cancelled"}'], 2);
    assert.equal(m.unicorn_slots_busy, 0);
    assert.ok(m.unicorn_generated_tokens_total < 200, `the departed requests stopped early (${m.unicorn_generated_tokens_total} tokens)`);
    console.log(`next request answered in ${Date.now() - t0} ms`);
  } finally {
    assert.equal((await h.stop(s)).code, 0);
  }
});

test("a client that left frees its place in the queue at once", async () => {
  const s = await h.start(binary(), [...h.tinyArgs(), "--parallel", "1", "--queue", "2"]);
  try {
    let first;
    const started = new Promise((resolve) => {
      first = h.streamEvents(s, "/v1/chat/completions", { ...long, max_tokens: 240, ignore_eos: true },
                             { onChunk: () => resolve() });
    });
    await started;  // it holds the one slot
    const untilQueued = async (n) => {
      for (const t0 = Date.now(); Date.now() - t0 < 20000;) {
        if ((await h.metrics(s)).unicorn_queue_depth === n) return;
        await new Promise((r) => setTimeout(r, 10));
      }
      assert.fail(`the queue never held ${n}`);
    };
    // Two clients wait in the queue, then leave (one closes, one resets).
    await Promise.all([h.postThenLeave(s, "/v1/chat/completions", long, 100),
                       h.postThenLeave(s, "/v1/chat/completions", long, 100, { reset: true })]);
    await untilQueued(0);
    // Their places are free: two more wait, not a 503.
    const a = h.post(s, "/v1/chat/completions", { ...long, max_tokens: 2 });
    const b = h.post(s, "/v1/chat/completions", { ...long, max_tokens: 2 });
    await untilQueued(2);
    const third = await h.post(s, "/v1/chat/completions", { ...long, max_tokens: 2 });
    assert.equal(third.status, 503, "past the queue of 2");
    assert.equal((await a).status, 200);
    assert.equal((await b).status, 200);
    assert.ok((await first).done);
    const m = await h.metrics(s);
    assert.equal(m['unicorn_completions_total{outcome="cancelled"}'], 2, "the two that left");
    assert.equal(m['unicorn_rejected_total{reason="queue_full"}'], 1);
  } finally {
    assert.equal((await h.stop(s)).code, 0);
  }
});

test("a client that half-closes after its request (nc -N) gets its answer", async () => {
  const s = await h.start(binary(), h.tinyArgs());
  try {
    const body = (extra) => JSON.stringify({ ...long, max_tokens: 8, ...extra });
    const request = (version, b) => `POST /v1/chat/completions HTTP/${version}\r\nHost: x\r\n` +
      `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(b)}\r\n\r\n${b}`;
    for (let i = 0; i < 4; i++) {
      for (const version of ["1.1", "1.0"]) {
        const whole = await h.raw(s, request(version, body({ seed: i })));  // written, then shut for sending
        const answer = whole.text.slice(whole.text.lastIndexOf("HTTP/1."));  // past an interim 100 Continue
        assert.match(answer, /^HTTP\/1\.[01] 200/, `HTTP/${version}: ${whole.text.slice(0, 200)}`);
        assert.equal(JSON.parse(answer.slice(answer.indexOf("\r\n\r\n") + 4)).choices[0].index, 0);
      }
      const streamed = await h.raw(s, request("1.1", body({ seed: i, stream: true })));
      assert.equal(streamed.status, 200);
      assert.match(streamed.text, /data: \[DONE\]/);
    }
    const m = await h.metrics(s);
    assert.equal(m['unicorn_completions_total{outcome="cancelled"}'] ?? 0, 0);
  } finally {
    assert.equal((await h.stop(s)).code, 0);
  }
});

test("--cors-origin: preflights are granted to the named origin only; answers carry the grant", async () => {
  const origin = "http://page.example";
  const s = await h.start(binary(), [...h.tinyArgs(), "--cors-origin", origin, "--api-key", "k"]);
  const plain = await h.start(binary(), h.tinyArgs());
  try {
    const preflight = (server, from, route = "/v1/chat/completions") => fetch(server.url + route, {
      method: "OPTIONS",
      headers: { origin: from, "access-control-request-method": "POST",
                 "access-control-request-headers": "authorization,content-type" },
    });
    const granted = await preflight(s, origin);  // a preflight carries no key
    assert.equal(granted.status, 204);
    assert.equal(granted.headers.get("access-control-allow-origin"), origin);
    assert.match(granted.headers.get("access-control-allow-methods"), /POST/);
    assert.equal(granted.headers.get("access-control-allow-headers"), "authorization,content-type");
    assert.equal((await preflight(s, origin, "/v1/models")).headers.get("access-control-allow-methods"), "GET, OPTIONS");
    const other = await preflight(s, "http://elsewhere.example");
    assert.equal(other.status, 204);
    assert.equal(other.headers.get("access-control-allow-origin"), null);
    assert.equal((await preflight(s, origin, "/nowhere")).status, 404);
    const post = (server, from, extra = {}) => h.post(server, "/v1/chat/completions", { ...long, max_tokens: 2 },
                                                      { origin: from, authorization: "Bearer k", ...extra });
    const answered = await post(s, origin);
    assert.equal(answered.status, 200);
    assert.equal(answered.headers.get("access-control-allow-origin"), origin);
    const refused = await post(s, origin, { authorization: "Bearer no" });
    assert.equal(refused.status, 401);
    assert.equal(refused.headers.get("access-control-allow-origin"), origin, "the page can read why");
    const stream = await fetch(s.url + "/v1/chat/completions", {
      method: "POST", headers: { origin, authorization: "Bearer k", "content-type": "application/json" },
      body: JSON.stringify({ ...long, max_tokens: 2, stream: true }),
    });
    assert.equal(stream.headers.get("access-control-allow-origin"), origin);
    await stream.text();
    assert.equal((await post(s, "http://elsewhere.example")).headers.get("access-control-allow-origin"), null);
    // Without --cors-origin: OPTIONS says what is allowed and grants nothing.
    const off = await preflight(plain, origin);
    assert.equal(off.status, 204);
    assert.equal(off.headers.get("allow"), "POST, OPTIONS");
    assert.equal(off.headers.get("access-control-allow-origin"), null);
    assert.equal((await post(plain, origin)).headers.get("access-control-allow-origin"), null);
  } finally {
    assert.equal((await h.stop(s)).code, 0);
    assert.equal((await h.stop(plain)).code, 0);
  }
});

test("logit_bias: +100 makes a token the answer, -100 bans tokens; an id past the vocabulary is a 400", async () => {
  const s = await h.start(binary(), h.tinyArgs());
  try {
    const ask = (extra) => h.post(s, "/v1/completions", { prompt: [2, 300, 301], max_tokens: 6, ignore_eos: true, ...extra });
    const piece = async (ids) => (await h.post(s, "/detokenize", { tokens: ids })).json.content;
    const forced = await ask({ temperature: 0, logit_bias: { 300: 100 } });
    assert.equal(forced.status, 200, forced.text);
    assert.equal(forced.json.choices[0].text, await piece([300, 300, 300, 300, 300, 300]));
    // Every token but 300 and 301 banned: a sampled answer is made of those two.
    const banned = Object.fromEntries(Array.from({ length: 512 }, (_, id) => [id, -100]).filter(([id]) => id !== 300 && id !== 301));
    const escape = (t) => t.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
    const only = new RegExp(`^(?:${escape(await piece([300]))}|${escape(await piece([301]))})+$`);
    for (const seed of [1, 2, 3]) {
      const r = await ask({ temperature: 1.5, seed, logit_bias: banned });
      assert.equal(r.status, 200, r.text);
      assert.match(r.json.choices[0].text, only, `seed ${seed}`);
    }
    const past = await ask({ logit_bias: { 600: 1 } });
    assert.equal(past.status, 400);
    assert.equal(past.json.error.param, "logit_bias.600");
  } finally {
    assert.equal((await h.stop(s)).code, 0);
  }
});

test("a model without a vocabulary is refused naming --tokenizer", () => {
  const r = spawnSync(binary(), ["--model", h.env("UNICORN_TINY_MODEL"), "--port", "0"], { encoding: "utf8", timeout: 60000 });
  assert.equal(r.status, 1);
  assert.match(r.stderr, /carries no vocabulary: give --tokenizer FILE/);
  assert.doesNotMatch(r.stderr, /LoadOptions/);
});

test("--api-key: completions and models need the Bearer key; /health and /metrics do not", async () => {
  const s = await h.start(binary(), [...h.tinyArgs(), "--api-key", "s3cret"]);
  try {
    const none = await fetch(s.url + "/v1/models");
    assert.equal(none.status, 401);
    assert.equal((await none.json()).error.type, "authentication_error");
    const wrong = await h.post(s, "/v1/completions", { prompt: "a" }, { authorization: "Bearer s3creT" });
    assert.equal(wrong.status, 401);
    const right = await h.post(s, "/v1/completions", { prompt: "a", max_tokens: 2 }, { authorization: "Bearer s3cret" });
    assert.equal(right.status, 200);
    // The scheme is case-insensitive, and one or more spaces follow it (RFC 9110 11.4).
    for (const authorization of ["bearer s3cret", "BEARER  s3cret"]) {
      const ok = await h.post(s, "/v1/completions", { prompt: "a", max_tokens: 2 }, { authorization });
      assert.equal(ok.status, 200, authorization);
    }
    for (const authorization of ["Basic s3cret", "Bearer", "Bearers3cret", "Bearer  s3cre"]) {
      const no = await h.post(s, "/v1/completions", { prompt: "a", max_tokens: 2 }, { authorization });
      assert.equal(no.status, 401, authorization);
    }
    assert.equal((await fetch(s.url + "/health")).status, 200);
    assert.equal((await fetch(s.url + "/metrics")).status, 200);
    const OpenAI = h.npm("openai").OpenAI;
    const client = new OpenAI({ baseURL: s.url + "/v1", apiKey: "s3cret", maxRetries: 0 });
    assert.equal((await client.models.list()).data.length, 1);
    const bad = new OpenAI({ baseURL: s.url + "/v1", apiKey: "nope", maxRetries: 0 });
    await assert.rejects(bad.models.list(), (e) => e instanceof OpenAI.AuthenticationError);
  } finally {
    assert.equal((await h.stop(s)).code, 0);
  }
});

test("GET / is the chat page, with no API key, under a CSP with a fresh nonce; --no-webui: 404", async () => {
  const [s, off] = await Promise.all([h.start(binary(), [...h.tinyArgs(), "--api-key", "s3cret"]),
                                      h.start(binary(), [...h.tinyArgs(), "--no-webui"])]);
  try {
    const nonces = [];
    for (const route of ["/", "/index.html", "/?from=bookmark"]) {
      const r = await fetch(s.url + route);
      assert.equal(r.status, 200, route);
      assert.equal(r.headers.get("content-type"), "text/html; charset=utf-8");
      assert.equal(r.headers.get("cache-control"), "no-store");
      assert.equal(r.headers.get("x-content-type-options"), "nosniff");
      const csp = r.headers.get("content-security-policy");
      const nonce = /script-src 'nonce-([0-9a-f]{32})'/.exec(csp)[1];
      assert.match(csp, /default-src 'none'/);
      assert.match(csp, /connect-src 'self'/);
      const html = await r.text();
      assert.match(html, /^<!doctype html>/);
      assert.equal(html.split(`nonce="${nonce}"`).length - 1, 2, "the inline style and script carry the nonce");
      assert.doesNotMatch(html, /@CSP_NONCE@|<script[^>]* src=|<link[^>]* href="http/);
      nonces.push(nonce);
    }
    assert.equal(new Set(nonces).size, 3, "each response has its own nonce");
    assert.equal((await fetch(s.url + "/v1/models")).status, 401, "the API still needs the key");
    const post = await h.post(s, "/", {});
    assert.equal(post.status, 405);
    assert.equal(post.headers.get("allow"), "GET");
    const m = await h.metrics(s);
    assert.equal(m['unicorn_requests_total{endpoint="webui",status="200"}'], 3);
    for (const route of ["/", "/index.html"]) {
      const r = await fetch(off.url + route);
      assert.equal(r.status, 404, route);
      assert.equal((await r.json()).error.code, "not_found");
    }
  } finally {
    assert.equal((await h.stop(s)).code, 0);
    assert.equal((await h.stop(off)).code, 0);
  }
});

test("flags may lower the compiled slots and context, never raise them", async () => {
  const run = (args) => spawnSync(binary(), [...h.tinyArgs(), "--port", "0", ...args], { encoding: "utf8", timeout: 60000 });
  const slots = run(["--parallel", "9"]);
  assert.equal(slots.status, 2);
  assert.match(slots.stderr, /compiled for 8 slots/);
  const np = run(["-np", "0"]);
  assert.equal(np.status, 2);
  const ctx = run(["--ctx-size", "257"]);
  assert.equal(ctx.status, 2);
  assert.match(ctx.stderr, /compiled for 256 tokens per slot/);
  const mode = run(["--batch-invariance", "sometimes"]);
  assert.equal(mode.status, 2);
  assert.match(mode.stderr, /batch-invariance/);
  const overlap = run(["--prefill-overlap", "on"]);  // one, all or off
  assert.equal(overlap.status, 2);
  assert.match(overlap.stderr, /prefill-overlap/);
  // --layout: the compiled engine's layout, with or without --model, nothing served.
  for (const layout of [run(["--layout"]), spawnSync(binary(), ["--layout"], { encoding: "utf8", timeout: 60000 })]) {
    assert.equal(layout.status, 0, layout.stderr);
    assert.match(layout.stdout, /context 256, prefill chunk 32/);
  }
  // Lowered: 2 slots of 64 tokens; a 70-token prompt no longer fits.
  const s = await h.start(binary(), [...h.tinyArgs(), "-np", "2", "-c", "64", "--batch-invariance", "always",
                                     "--prefill-overlap", "all"]);
  try {
    assert.match(s.log, /2 slots of 64 tokens/);
    assert.equal((await h.metrics(s)).unicorn_slots, 2);
    const r = await h.post(s, "/v1/completions", { prompt: Array(70).fill(300) });
    assert.equal(r.status, 400);
    assert.equal(r.json.error.code, "context_length_exceeded");
    // Random weights may choose <eos> early: the first seed that does not shows the context's end.
    let fits;
    for (let seed = 1; seed <= 20; seed++) {
      fits = await h.post(s, "/v1/completions", { prompt: Array.from({ length: 60 }, (_, i) => 300 + i), max_tokens: 100, seed });
      assert.equal(fits.status, 200);
      if (fits.json.choices[0].finish_reason === "length") break;
    }
    assert.equal(fits.json.choices[0].finish_reason, "length");
    assert.equal(fits.json.usage.prompt_tokens + fits.json.usage.completion_tokens, 64, "the context ends it");
    // A port in use is a clear error, exit status 1.
    const busy = spawnSync(binary(), [...h.tinyArgs(), "--port", String(s.port)], { encoding: "utf8", timeout: 60000 });
    assert.equal(busy.status, 1);
    assert.match(busy.stderr, /cannot listen on 127\.0\.0\.1:\d+/);
  } finally {
    assert.equal((await h.stop(s)).code, 0);
  }
});

// tools/serve_bench.cpp, the speed table's client: prompts drawn again from
// one seed come from the slots' prompt cache, and it says so; by default each
// run draws from a seed of its own.
test("unicorn-serve-bench counts the prompt tokens the server took from its cache",
     { skip: !process.env.UNICORN_SERVE_BENCH && "unicorn-serve-bench not built (UNICORN_BUILD_TOOLS)" }, async () => {
  const s = await h.start(binary(), h.tinyArgs());
  try {
    const json = path.join(os.tmpdir(), `serve-bench-${process.pid}.json`);
    const bench = (args) => {
      const r = spawnSync(h.env("UNICORN_SERVE_BENCH"), ["--port", String(s.port), "--clients", "4", "--requests", "1",
        "--prompt", "40", "--tokens", "4", "--vocab", "512", "--json", json, ...args], { encoding: "utf8", timeout: 120000 });
      assert.equal(r.status, 0, r.stderr);
      const out = JSON.parse(fs.readFileSync(json, "utf8"));
      fs.rmSync(json);
      return out;
    };
    const first = bench(["--seed", "7"]), again = bench(["--seed", "7"]), other = bench([]);
    assert.equal(first.seed, 7);
    assert.equal(first.runs[0].generated_tokens, 16);
    assert.ok(first.runs[0].cached_prompt_tokens <= 4, JSON.stringify(first.runs[0]));  // <bos> at most
    assert.equal(again.runs[0].cached_prompt_tokens, 4 * 39, "the same prompts again: all but each last token cached");
    assert.notEqual(other.seed, 7);
    assert.ok(other.runs[0].cached_prompt_tokens < 20, JSON.stringify(other.runs[0]));
  } finally {
    assert.equal((await h.stop(s)).code, 0);
  }
});

test("SIGTERM: no new connections, the running stream finishes, exit 0; a second signal cancels", async () => {
  const s = await h.start(binary(), h.tinyArgs());
  assert.match(s.log, /listening on http:\/\/127\.0\.0\.1:/, "loopback unless --host says otherwise");
  // No --parallel: as many slots as free device memory holds, said at start-up (all 8 on lavapipe).
  assert.match(s.log, /8 slots of 256 tokens \([\d.]+ MiB of KV cache each\): as many as [\d.]+ GiB of free device memory holds, of the 8 compiled/);
  let stopping;
  const out = await h.streamEvents(s, "/v1/chat/completions", { ...long, max_tokens: 60 }, {
    onChunk: (_, i) => { if (i === 0) stopping = h.stop(s, "SIGTERM"); },
  });
  assert.ok(out.done, "the stream in flight ends with [DONE]");
  assert.equal(h.streamed(out).finish === "length" || h.streamed(out).finish === "stop", true);
  assert.equal((await stopping).code, 0);
  await assert.rejects(fetch(s.url + "/health"), "nothing listens any more");

  const t = await h.start(binary(), h.tinyArgs());
  let signals = 0;
  const cut = await h.streamEvents(t, "/v1/chat/completions", { ...long, max_tokens: 250 }, {
    onChunk: () => { if (signals < 2) { signals++; t.proc.kill("SIGINT"); } },
  });
  const { code } = await t.exit;
  assert.equal(code, 0, "SIGINT twice: running requests cancelled, exit 0");
  const last = cut.chunks.at(-1);
  assert.ok(cut.chunks.length < 250, "the stream was cut short");
  assert.ok(last && (last.error || last.choices), "the stream ends with an error event or its last chunk");
});
