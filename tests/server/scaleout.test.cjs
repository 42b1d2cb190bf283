// Label scaleout: three unicorn-tiny-server processes behind HAProxy on
// loopback, with no cluster code of ours: HAProxy's health checks
// (GET /health), its hashing on a session header, and its retries do the
// work. Checks: a killed or still loading server gets no traffic; a
// conversation's turns reach one server, which reuses its KV cache (the cached
// share of prompt tokens with and without affinity); a server killed mid-load
// loses only the streams it had started; a drained server (SIGTERM) finishes
// its streams while new requests go to the others. Bounded: every request has
// a deadline, every wait a limit, and `after` kills whatever still runs.
"use strict";
const { test, before, after } = require("node:test");
const assert = require("node:assert/strict");
const { spawn } = require("node:child_process");
const fs = require("node:fs");
const net = require("node:net");
const os = require("node:os");
const path = require("node:path");
const h = require("./harness.cjs");

const binary = () => h.env("UNICORN_TINY_SERVER");
const NAMES = ["s1", "s2", "s3"];
const servers = [];        // by index; a restarted server keeps its port
let haproxy, dir;
const front = {};          // ports: the frontends (affinity, roundrobin) and HAProxy's runtime API (stats)

// HAProxy as docs/server.md shows it, with short check intervals for a test.
// A request whose server failed before answering is sent to another one
// (option redispatch 1: at each retry): the connection was refused, or closed
// with no answer (a killed server), or the answer was a 503 (loading,
// stopping or full: the server did not start the work). A stream whose first
// event went out is not retried: HAProxy has passed it on to the client.
function config(ports) {
  const servers = (names) => names.map((n, i) => `  server ${n} 127.0.0.1:${ports[i]}`).join("\n");
  return `global
  stats socket ipv4@127.0.0.1:${front.stats} level operator
defaults
  mode http
  timeout connect 1s
  timeout client 30s
  timeout server 30s
  timeout check 1s
  retries 3
  option redispatch 1
  retry-on conn-failure empty-response response-timeout 503
  option httpchk GET /health
  http-check expect status 200
  default-server check inter 100ms fall 2 rise 2
frontend affinity
  bind 127.0.0.1:${front.affinity}
  default_backend affinity
frontend roundrobin
  bind 127.0.0.1:${front.roundrobin}
  default_backend roundrobin
backend affinity
  balance hdr(X-Session-Id)
  hash-type consistent
  http-response set-header X-Served-By %[srv_name]
${servers(NAMES)}
backend roundrobin
  balance roundrobin
  http-response set-header X-Served-By %[srv_name]
${servers(NAMES)}
`;
}

function freePort() {
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.on("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const { port } = probe.address();
      probe.close(() => resolve(port));
    });
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
async function waitFor(what, check, ms = 10000) {
  for (const t0 = Date.now(); Date.now() - t0 < ms; await sleep(25)) {
    if (await check()) return;
  }
  assert.fail(`waited ${ms} ms for ${what}`);
}

// HAProxy's runtime API: `show stat` as {"backend/server": row}.
function haproxyCommand(command) {
  return new Promise((resolve, reject) => {
    const s = net.connect(front.stats, "127.0.0.1", () => s.end(command + "\n"));
    let out = "";
    s.setTimeout(5000, () => s.destroy(new Error(`haproxy did not answer ${command}`)));
    s.on("data", (d) => { out += d; });
    s.on("error", reject);
    s.on("close", () => resolve(out));
  });
}
async function stats() {
  const lines = (await haproxyCommand("show stat")).trim().split("\n");
  const names = lines[0].replace(/^# /, "").split(",");
  const out = {};
  for (const line of lines.slice(1)) {
    const row = Object.fromEntries(line.split(",").map((v, i) => [names[i], v]));
    out[`${row.pxname}/${row.svname}`] = row;
  }
  return out;
}
const status = async (name) => { const s = await stats(); return [s[`affinity/${name}`].status, s[`roundrobin/${name}`].status]; };
const upInBoth = async (name) => (await status(name)).every((s) => s === "UP");
const downInBoth = async (name) => (await status(name)).every((s) => s.startsWith("DOWN"));

// A chat completion through a frontend, streamed or whole, with a deadline:
// its status, the server that answered (X-Served-By), the answer, and for a
// stream its events, whether [DONE] ended it and whether it was cut.
async function ask(port, body, { stream = false, session, onFirstChunk } = {}) {
  const headers = { "content-type": "application/json" };
  if (session) headers["x-session-id"] = session;
  const res = await fetch(`http://127.0.0.1:${port}/v1/chat/completions`, {
    method: "POST", headers, signal: AbortSignal.timeout(20000),
    body: JSON.stringify(stream ? { ...body, stream, stream_options: { include_usage: true } } : body),
  });
  const out = { status: res.status, servedBy: res.headers.get("x-served-by"), chunks: [], done: false, cut: false };
  if (!stream || res.status !== 200) {
    out.text = await res.text();
    try { out.json = JSON.parse(out.text); } catch { /* HAProxy's own error page */ }
    return out;
  }
  try {
    for await (const data of h.sseData(res.body)) {
      if (data === "[DONE]") { out.done = true; continue; }
      out.chunks.push(JSON.parse(data));
      if (out.chunks.length === 1 && onFirstChunk) onFirstChunk(out);
    }
  } catch {
    out.cut = true;  // the connection ended mid-stream
  }
  return out;
}
const answered = (r) => r.status === 200 && (r.json ? r.json.choices.length === 1 : r.done);

before(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "scaleout-"));
  servers.push(...await Promise.all(NAMES.map(() => h.start(binary(), h.tinyArgs()))));
  front.affinity = await freePort();
  front.roundrobin = await freePort();
  front.stats = await freePort();
  const file = path.join(dir, "haproxy.cfg");
  fs.writeFileSync(file, config(servers.map((s) => s.port)));
  const proc = spawn(h.env("UNICORN_HAPROXY"), ["-db", "-f", file], { stdio: ["ignore", "ignore", "pipe"] });
  haproxy = { proc, log: "", exited: null };
  proc.stderr.on("data", (d) => { haproxy.log += d; });
  haproxy.exit = new Promise((resolve) => proc.on("exit", (code, signal) => resolve((haproxy.exited = { code, signal }))));
  await waitFor("HAProxy to check every server", async () => {
    if (haproxy.exited) assert.fail(`haproxy exited (${haproxy.exited.code ?? haproxy.exited.signal}):\n${haproxy.log}`);
    try {
      const s = await stats();
      return NAMES.every((n) => s[`affinity/${n}`].check_status === "L7OK" && s[`roundrobin/${n}`].check_status === "L7OK");
    } catch { return false; }  // not listening yet
  });
});

after(async () => {
  const ends = [];
  for (const s of servers) {
    if (s.exited) continue;
    s.proc.kill("SIGKILL");
    ends.push(s.exit);
  }
  if (haproxy && !haproxy.exited) {
    haproxy.proc.kill("SIGKILL");
    ends.push(haproxy.exit);
  }
  await Promise.all(ends);
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

// A conversation: a first message of some length (a document, a system
// prompt), then each turn's prompt is the last one's, its answer and a short
// new message. Per mode its own words, so that one mode's prompts are not in
// the caches the other left. One conversation at a time: round robin then
// sends each turn to the next server (with concurrent conversations its
// choice follows which one finishes first, and may repeat a turn's server by
// accident).
function rng(seed) {
  let s = seed >>> 0;
  return () => ((s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32);
}
const words = ["sea", "ship", "storm", "harbour", "light", "tide", "sail", "wind", "rope", "gull", "salt", "night"];
async function conversations(port, mode, n, turns) {
  // Prompt and cached tokens over all turns, and over the turns after the
  // first (those a cache can serve).
  const tally = { prompt: 0, cached: 0, laterPrompt: 0, laterCached: 0, servers: new Set() };
  for (let c = 0; c < n; c++) {
    const r = rng(1000 * (mode === "affinity" ? 1 : 2) + c);
    const messages = [], served = new Set();
    let before = 0;  // the last turn's prompt tokens
    for (let t = 0; t < turns; t++) {
      const said = Array.from({ length: t === 0 ? 10 : 3 }, () => words[Math.floor(r() * words.length)]).join(" ");
      messages.push({ role: "user", content: t === 0 ? `${mode} ${c}: ${said}` : said });
      const res = await ask(port, { messages, max_tokens: 4, temperature: 0.8, seed: 10 * c + t }, { session: `${mode}-${c}` });
      assert.equal(res.status, 200, res.text);
      messages.push({ role: "assistant", content: res.json.choices[0].message.content });
      tally.prompt += res.json.usage.prompt_tokens;
      const cached = res.json.usage.prompt_tokens_details.cached_tokens;
      tally.cached += cached;
      if (t > 0) tally.laterPrompt += res.json.usage.prompt_tokens, tally.laterCached += cached;
      served.add(res.servedBy);
      // On the server of the last turn, at least the last turn's prompt comes from its cache.
      if (mode === "affinity") assert.ok(cached >= before, `conversation ${c} turn ${t}: ${cached} cached, last prompt ${before}`);
      before = res.json.usage.prompt_tokens;
    }
    if (mode === "affinity") assert.equal(served.size, 1, `conversation ${c}: every turn on one server (${[...served]})`);
    for (const s of served) tally.servers.add(s);
  }
  return tally;
}

test("affinity on X-Session-Id: a conversation's turns reach one server, which reuses its cache", { timeout: 60000 }, async () => {
  const N = 4, TURNS = 3;
  const hashed = await conversations(front.affinity, "affinity", N, TURNS);
  const spread = await conversations(front.roundrobin, "roundrobin", N, TURNS);
  const share = (t) => t.laterCached / t.laterPrompt;
  const shares = (t) => `${(100 * share(t)).toFixed(1)}% (${t.laterCached}/${t.laterPrompt}; ` +
                        `all turns ${(100 * t.cached / t.prompt).toFixed(1)}%, ${t.cached}/${t.prompt})`;
  console.log(`cached share of prompt tokens after the first turn, ${N} conversations of ${TURNS} turns: ` +
              `affinity ${shares(hashed)} on ${[...hashed.servers].sort()}, round robin ${shares(spread)}`);
  assert.ok(hashed.servers.size >= 2, `the conversations spread over the servers (${[...hashed.servers]})`);
  assert.ok(share(hashed) > share(spread) + 0.2, "affinity keeps the cache in use");
});

test("a server killed mid-load (SIGKILL): only the streams it had started are lost", { timeout: 60000 }, async () => {
  const victim = servers[2];
  const was = await stats();
  // 10 requests a server: 8 run (its slots), 2 wait in its queue. s3 is
  // killed once two of its streams have started.
  let started = 0;
  const requests = Array.from({ length: 30 }, (_, i) => ask(front.roundrobin, {
    messages: [{ role: "user", content: `request ${i}` }], max_tokens: 16, ignore_eos: true, temperature: 0.8, seed: i,
  }, {
    stream: i % 2 === 0,
    onFirstChunk: (out) => {
      if (out.servedBy === "s3" && ++started === 2) victim.proc.kill("SIGKILL");
    },
  }));
  const results = await Promise.all(requests);
  assert.ok(started >= 2, "s3 streamed before it was killed");
  assert.equal((await victim.exit).signal, "SIGKILL");
  const cut = results.filter((r) => !answered(r));
  assert.ok(cut.length >= 2, "the two streams that had started are cut");
  for (const r of cut) {
    assert.equal(r.servedBy, "s3", `only s3's requests fail: ${JSON.stringify({ status: r.status, text: r.text })}`);
    assert.ok(r.cut && r.chunks.length >= 1, "a stream that had started, cut");
  }
  const now = await stats();
  const d = (row, field) => Number(now[row][field]) - Number(was[row][field]);
  const sent = d("roundrobin/s3", "stot");
  const retried = d("roundrobin/BACKEND", "wretr"), redispatched = d("roundrobin/BACKEND", "wredis");
  console.log(`kill: 30 requests, ${sent} sent to s3; ${cut.length} streams it had started were cut, ` +
              `${results.length - cut.length} answered (${retried} retries, ${redispatched} redispatched)`);
  assert.ok(redispatched >= 1, "a request s3 had not answered went to another server");
});

test("a killed server, then one still loading (/health 503), gets no traffic; once ready it does", { timeout: 60000 }, async () => {
  await waitFor("s3 down in HAProxy", () => downInBoth("s3"));
  const some = (port, k, tag) => Promise.all(Array.from({ length: k }, (_, i) => ask(port,
    { messages: [{ role: "user", content: `${tag} ${i}` }], max_tokens: 2 }, { session: `${tag}-${i}` })));
  const whileDown = [...await some(front.roundrobin, 6, "down"), ...await some(front.affinity, 6, "down")];
  for (const r of whileDown) {
    assert.equal(r.status, 200, r.text);
    assert.notEqual(r.servedBy, "s3");
  }
  // Restarted on its port: it listens at once and loads the model (/health 503).
  const port = servers[2].port;
  servers[2] = await h.start(binary(), h.tinyArgs(), { until: "listening", port });
  let whileLoading = 0;
  while (!/ready on http/.test(servers[2].log) && !servers[2].exited) {
    for (const r of await some(front.roundrobin, 3, "loading")) {
      assert.equal(r.status, 200, r.text);
      assert.notEqual(r.servedBy, "s3");
      whileLoading++;
    }
  }
  await waitFor("s3 up in HAProxy", () => upInBoth("s3"));
  const back = await some(front.roundrobin, 6, "back");
  assert.ok(back.every((r) => r.status === 200));
  assert.ok(back.some((r) => r.servedBy === "s3"), "a ready server gets requests again");
  const m = await h.metrics(servers[2]);
  assert.ok(m['unicorn_requests_total{endpoint="health",status="503"}'] >= 1, "HAProxy checked it while it loaded");
  assert.equal(m['unicorn_requests_total{endpoint="chat_completions",status="503"}'] ?? 0, 0,
               "no completion reached it while it loaded");
  console.log(`health: ${whileDown.length} requests while s3 was down, ${whileLoading} while it loaded ` +
              `(${m['unicorn_requests_total{endpoint="health",status="503"}']} checks answered 503), none on s3`);
});

test("a drained server (SIGTERM) finishes its streams while new requests go to the others", { timeout: 60000 }, async () => {
  const drained = servers[1];
  let stopping = null;
  const streams = Array.from({ length: 12 }, (_, i) => ask(front.roundrobin, {
    messages: [{ role: "user", content: `stream ${i}` }], max_tokens: 24, ignore_eos: true, temperature: 0.8, seed: i,
  }, {
    stream: true,
    onFirstChunk: (out) => { if (out.servedBy === "s2" && !stopping) stopping = h.stop(drained, "SIGTERM"); },
  }));
  await waitFor("a stream on s2", () => stopping !== null, 20000);
  // unicorn-server closes its listener as soon as it sees SIGTERM (http.hpp
  // begin_shutdown): /health is not answered 503 but refused, and HAProxy's
  // check fails at connect.
  const seen = new Set();
  await waitFor("s2 to refuse /health", async () => {
    const health = await fetch(drained.url + "/health", { signal: AbortSignal.timeout(2000) }).then((r) => r.status, () => "refused");
    seen.add(health);
    return health === "refused";
  }, 2000);
  const moved = [];
  while (!drained.exited) {
    const batch = await Promise.all(Array.from({ length: 3 }, (_, i) => ask(front.roundrobin,
      { messages: [{ role: "user", content: `new ${moved.length + i}` }], max_tokens: 2 })));
    for (const r of batch) {
      assert.equal(r.status, 200, r.text);
      assert.notEqual(r.servedBy, "s2", "no new request goes to the draining server");
    }
    moved.push(...batch);
  }
  assert.equal((await stopping).code, 0, "the drained server exits 0");
  const results = await Promise.all(streams);
  const onDrained = results.filter((r) => r.servedBy === "s2");
  for (const r of results) {
    assert.ok(r.done && !r.cut, `every stream ends with [DONE] (${r.servedBy})`);
    assert.equal(r.chunks.at(-1).usage.completion_tokens, 24);
  }
  assert.ok(onDrained.length >= 1);
  console.log(`drain: /health on s2 after SIGTERM: ${[...seen].join(", ")}; ` +
              `${onDrained.length} streams on s2 finished with [DONE] after SIGTERM; ` +
              `${moved.length} new requests meanwhile, all on s1/s3`);
});
