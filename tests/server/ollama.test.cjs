// Label server: the official `ollama` npm client (the project's npm manifest
// pins it) drives unicorn-tiny-server's Ollama API (/api/*): chat and generate,
// streamed and not, tags, show, ps and version, the options, Ollama's error
// shape, an abort mid-stream, and the API key. Greedy text must equal what the
// OpenAI routes give for the same conversation: one template, one scheduler.
"use strict";
const { test, before, after } = require("node:test");
const assert = require("node:assert/strict");
const h = require("./harness.cjs");

const { Ollama } = h.npm("ollama");
let server, client;
const model = "tiny";  // the model file's name (unicorn-server's default --alias)
const rfc3339 = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/;
const greedy = { temperature: 0 };
const hi = [{ role: "user", content: "Hello there" }];

before(async () => {
  server = await h.start(h.env("UNICORN_TINY_SERVER"), h.tinyArgs());
  client = new Ollama({ host: server.url });
});
after(async () => {
  assert.equal((await h.stop(server)).code, 0);
});

// The client's error for a refused request: its status and Ollama's message.
async function refused(promise) {
  try {
    await promise;
  } catch (e) {
    return { status: e.status_code, message: e.error ?? e.message };
  }
  assert.fail("the request was accepted");
}

function checkFinal(r, { maxEval } = {}) {
  assert.equal(r.model, model, "replies echo the request's model name");
  assert.match(r.created_at, rfc3339);
  assert.equal(r.done, true);
  assert.ok(["stop", "length"].includes(r.done_reason), r.done_reason);
  for (const k of ["total_duration", "load_duration", "prompt_eval_count", "prompt_eval_duration", "eval_count",
                   "eval_duration"])
    assert.ok(Number.isInteger(r[k]) && r[k] >= 0, `${k}: ${r[k]}`);
  assert.ok(r.prompt_eval_count > 0);
  assert.ok(r.total_duration >= r.prompt_eval_duration + r.eval_duration, "durations are parts of the total");
  if (maxEval !== undefined) {
    assert.ok(r.eval_count <= maxEval, `eval_count ${r.eval_count} > num_predict ${maxEval}`);
    if (r.done_reason === "length") assert.equal(r.eval_count, maxEval);
  }
}

async function collect(stream) {
  let text = "", final = null, chunks = 0;
  for await (const part of stream) {
    assert.match(part.created_at, rfc3339);
    if (part.done) final = part;
    else chunks++;
    text += part.message ? part.message.content : part.response;
  }
  return { text, final, chunks };
}

test("version, tags, ps and show describe the served model", async () => {
  assert.match((await client.version()).version, /^\d+\.\d+\.\d+$/);
  const tags = await client.list();
  assert.equal(tags.models.length, 1);
  const m = tags.models[0];
  assert.equal(m.name, `${model}:latest`);
  assert.equal(m.details.family, "gemma3");
  assert.deepEqual(m.details.families, ["gemma3"]);
  assert.equal(m.details.quantization_level, "Q8_0");
  assert.match(m.details.parameter_size, /^\d+(\.\d+)?[KMB]?$/);
  assert.ok(m.size > 0);
  assert.match(m.modified_at, rfc3339);
  const ps = await client.ps();
  assert.equal(ps.models[0].context_length, 256);
  for (const name of [model, `${model}:latest`]) {
    const show = await client.show({ model: name });
    assert.equal(show.details.family, "gemma3");
    assert.equal(show.model_info["general.architecture"], "gemma3");
    assert.ok(show.model_info["general.parameter_count"] > 0);
    assert.match(show.template, /\{\{ \.Prompt \}\}/);
    assert.match(show.parameters, /^num_ctx\s+256$/m);
    assert.deepEqual(show.capabilities, ["completion"]);
  }
  assert.deepEqual(await refused(client.show({ model: "llama3" })), { status: 404, message: "model 'llama3' not found" });
});

test("chat: unstreamed and streamed give the OpenAI route's greedy text, with Ollama's counts", async () => {
  const whole = await client.chat({ model, messages: hi, stream: false, options: { ...greedy, num_predict: 12 } });
  checkFinal(whole, { maxEval: 12 });
  assert.equal(whole.message.role, "assistant");
  const openai = await h.post(server, "/v1/chat/completions", { messages: hi, max_tokens: 12, temperature: 0 });
  assert.equal(whole.message.content, openai.json.choices[0].message.content);
  assert.equal(whole.prompt_eval_count, openai.json.usage.prompt_tokens);
  assert.equal(whole.eval_count, openai.json.usage.completion_tokens);
  assert.equal(whole.done_reason, openai.json.choices[0].finish_reason);

  const streamed = await collect(await client.chat({ model, messages: hi, stream: true, options: { ...greedy, num_predict: 12 } }));
  assert.equal(streamed.text, whole.message.content);
  assert.ok(streamed.chunks >= 1);
  checkFinal(streamed.final, { maxEval: 12 });
  assert.equal(streamed.final.message.content, "", "the final chunk carries no text");
  assert.equal(streamed.final.eval_count, whole.eval_count);
});

test("generate: the prompt goes through the chat template (with system); raw: as given", async () => {
  const request = { model, prompt: "Why is the sky blue?", system: "Be terse.", options: { ...greedy, num_predict: 10 } };
  const whole = await client.generate({ ...request, stream: false });
  checkFinal(whole, { maxEval: 10 });
  assert.equal(whole.context, undefined, "no deprecated context");
  const openai = await h.post(server, "/v1/chat/completions", {
    messages: [{ role: "system", content: "Be terse." }, { role: "user", content: "Why is the sky blue?" }],
    max_tokens: 10, temperature: 0 });
  assert.equal(whole.response, openai.json.choices[0].message.content);
  const streamed = await collect(await client.generate({ ...request, stream: true }));
  assert.equal(streamed.text, whole.response);
  checkFinal(streamed.final, { maxEval: 10 });

  const raw = await client.generate({ model, prompt: "Once upon a time", raw: true, options: { ...greedy, num_predict: 6 } });
  const text = await h.post(server, "/v1/completions", { prompt: "Once upon a time", max_tokens: 6, temperature: 0 });
  assert.equal(raw.response, text.json.choices[0].text);
  assert.equal(raw.prompt_eval_count, text.json.usage.prompt_tokens);
  // Ollama streams by default: a body without "stream" gets NDJSON lines.
  const res = await fetch(server.url + "/api/generate", { method: "POST", body: JSON.stringify({ model, prompt: "Hi", options: { num_predict: 3 } }) });
  assert.equal(res.headers.get("content-type"), "application/x-ndjson");
  const lines = (await res.text()).trim().split("\n").map((l) => JSON.parse(l));
  assert.equal(lines.at(-1).done, true);
  assert.ok(lines.slice(0, -1).every((l) => l.done === false));
});

test("an empty prompt or no messages is Ollama's load call; NAME:latest names the model", async () => {
  const loaded = await client.generate({ model, prompt: "" });
  assert.equal(loaded.done, true);
  assert.equal(loaded.done_reason, "load");
  const chat = await client.chat({ model, messages: [] });
  assert.equal(chat.done_reason, "load");
  assert.equal(chat.message.content, "");
  // The name /api/tags lists, with Ollama's default tag, names the model too.
  const tagged = await client.chat({ model: `${model}:latest`, messages: hi, options: { num_predict: 2 } });
  assert.equal(tagged.model, `${model}:latest`);
  assert.equal(tagged.done, true);
});

test("options: num_predict bounds eval_count, a seed repeats its text, stop ends the text, num_ctx bounds both", async () => {
  for (const n of [1, 5]) {
    const r = await client.chat({ model, messages: hi, options: { num_predict: n, temperature: 1, seed: 3 } });
    checkFinal(r, { maxEval: n });
  }
  const seeded = { model, messages: hi, options: { temperature: 1, top_k: 50, top_p: 0.95, min_p: 0.01, seed: 42,
                                                  repeat_penalty: 1.1, repeat_last_n: 32, presence_penalty: 0.2,
                                                  frequency_penalty: 0.1, num_predict: 16 } };
  const a = await client.chat(seeded), b = await client.chat(seeded);
  assert.equal(a.message.content, b.message.content, "same seed, same text");
  const other = await client.chat({ ...seeded, options: { ...seeded.options, seed: 43 } });
  console.log(`seed 42: ${JSON.stringify(a.message.content)}; seed 43: ${JSON.stringify(other.message.content)}`);

  // A stop string from the middle of the greedy text ends it just before.
  const full = (await client.generate({ model, prompt: "Tell me a story", options: { ...greedy, num_predict: 24 } })).response;
  assert.ok(full.length >= 8, `greedy text too short to cut: ${JSON.stringify(full)}`);
  const stop = full.slice(Math.floor(full.length / 2), Math.floor(full.length / 2) + 3);
  const cut = await client.generate({ model, prompt: "Tell me a story", options: { ...greedy, num_predict: 24, stop: [stop] } });
  assert.equal(cut.response, full.slice(0, full.indexOf(stop)));
  assert.equal(cut.done_reason, "stop");

  // num_ctx: the prompt and the answer within it; more than the server's context is refused.
  const small = await client.chat({ model, messages: hi, options: { ...greedy, num_ctx: 0 } }).catch((e) => e);
  assert.equal(small.status_code, 400);
  const prompt = (await client.chat({ model, messages: hi, options: { num_predict: 1 } })).prompt_eval_count;
  const fits = await client.chat({ model, messages: hi, options: { ...greedy, num_ctx: prompt + 3 } });
  assert.ok(fits.eval_count <= 3, `eval_count ${fits.eval_count} within num_ctx`);
  if (fits.eval_count === 3) assert.equal(fits.done_reason, "length");
  const big = await refused(client.chat({ model, messages: hi, options: { num_ctx: 4096 } }));
  assert.equal(big.status, 400);
  assert.match(big.message, /^options\.num_ctx: 4096 tokens is more than this server's context of 256/);
  // Ollama's loading and placement options are accepted and change nothing.
  const placed = await client.chat({ model, messages: hi, keep_alive: "5m",
                                     options: { ...greedy, num_predict: 12, num_gpu: 99, num_thread: 4, use_mmap: true,
                                                num_batch: 512, typical_p: 1, mirostat: 0 } });
  const plain = await client.chat({ model, messages: hi, options: { ...greedy, num_predict: 12 } });
  assert.equal(placed.message.content, plain.message.content);
});

test("format: a JSON schema gives an object that validates; \"json\" a JSON object", async () => {
  const schema = { type: "object", properties: { colour: { enum: ["red", "green"] }, ok: { type: "boolean" } },
                   required: ["colour", "ok"], additionalProperties: false };
  for (const stream of [false, true]) {
    const r = await client.chat({ model, messages: hi, format: schema, stream, options: { temperature: 0.8, seed: 5 } });
    let content = "";
    if (stream) for await (const part of r) content += part.message.content;
    else content = r.message.content;
    const v = JSON.parse(content);
    assert.deepEqual(Object.keys(v), ["colour", "ok"], content);
    assert.ok(["red", "green"].includes(v.colour) && typeof v.ok === "boolean", content);
  }
  const json = await client.generate({ model, prompt: "Hi", format: "json", stream: false,
                                       options: { temperature: 0, num_predict: 40 } });
  if (json.done_reason === "stop") assert.equal(typeof JSON.parse(json.response), "object");
  else assert.match(json.response, /^\s*\{/, "cut by num_predict: the start of an object");
});

test("bad input is a 400 in Ollama's shape, naming why", async () => {
  const cases = [
    [{ model, messages: hi, format: { type: "string", pattern: "^a" } }, /format.*pattern/],
    [{ model, messages: hi, format: "yaml" }, /^format: must be "json" or a JSON schema/],
    [{ model, messages: [{ role: "user", content: "what is this?", images: ["aGk="] }] },
     /^images: this model has no vision encoder/],
    [{ model, messages: hi, options: { temperature: "hot" } }, /options\.temperature/],
    [{ model, messages: hi, options: { flux_capacitor: 1 } }, /^options\.flux_capacitor is not an option/],
    [{ model, messages: hi, options: { typical_p: 0.5 } }, /^options\.typical_p/],
    [{ model, messages: hi, tools: [{ type: "function", function: { name: "f" } }] }, /^tools:/],
    [{ model, messages: hi, think: true }, /^think:/],
    [{ model, messages: [{ role: "user", content: "a" }, { role: "user", content: "b" }] }, /alternate/],
    [{ messages: hi }, /^model is required$/],
  ];
  for (const [request, message] of cases) {
    const r = await refused(client.chat({ ...request, stream: false }));
    assert.equal(r.status, 400, JSON.stringify(request));
    assert.match(r.message, message);
  }
  const images = await refused(client.generate({ model, prompt: "What is this?", images: ["aGk="] }));
  assert.equal(images.status, 400);
  assert.match(images.message, /^images: this model has no vision encoder \(1 image sent to a text-only Gemma 3/);
  const rawSystem = await refused(client.generate({ model, prompt: "x", raw: true, system: "s" }));
  assert.equal(rawSystem.message, "raw mode does not support template, system, or context");
  assert.deepEqual(await refused(client.chat({ model: "llama3", messages: hi })), { status: 404, message: "model 'llama3' not found" });
  // A refused request is an ordinary JSON 400, not a stream, even where it would have streamed.
  const res = await h.post(server, "/api/chat", { model, messages: hi, options: { top_p: 0 } });
  assert.equal(res.status, 400);
  assert.deepEqual(Object.keys(res.json), ["error"]);
  const malformed = await h.post(server, "/api/generate", "{");
  assert.equal(malformed.status, 400);
  assert.match(malformed.json.error, /not valid JSON/);
  const wrong = await fetch(server.url + "/api/chat");
  assert.equal(wrong.status, 405);
  assert.equal(wrong.headers.get("allow"), "POST");
  assert.match((await wrong.json()).error, /GET \/api\/chat is not allowed/);
  const missing = await fetch(server.url + "/api/pull", { method: "POST", body: "{}" });
  assert.equal(missing.status, 404);
  assert.deepEqual(await missing.json(), { error: "no route /api/pull" });
});

test("a client that aborts mid-stream frees its slot; nothing is lost for the next", async () => {
  const before = await h.metrics(server);
  const stream = await client.chat({ model, messages: hi, stream: true,
                                     options: { temperature: 0.8, seed: 1, num_predict: 200 } });
  let parts = 0;
  await assert.rejects(async () => {
    for await (const part of stream) {
      assert.equal(part.done, false);
      if (++parts === 2) stream.abort();
    }
  }, (e) => e.name === "AbortError");
  // The session ends at its failed write; the scheduler drops the job at its next step.
  let m;
  const count = (k) => (m[k] ?? 0) - (before[k] ?? 0);
  for (const t0 = Date.now(); Date.now() - t0 < 10000;) {
    m = await h.metrics(server);
    if (m.unicorn_completions_in_flight === 0 && count('unicorn_completions_total{outcome="cancelled"}') === 1) break;
    await new Promise((r) => setTimeout(r, 10));
  }
  assert.equal(count('unicorn_requests_total{endpoint="api_chat",status="499"}'), 1);
  assert.equal(count("unicorn_client_disconnects_total"), 1);
  assert.equal(count('unicorn_completions_total{outcome="cancelled"}'), 1);
  assert.ok(count("unicorn_generated_tokens_total") < 200, "the aborted answer stopped early");
  assert.equal(m.unicorn_slots_busy, 0);
  // The server still serves, both APIs.
  const next = await client.chat({ model, messages: hi, options: { ...greedy, num_predict: 4 } });
  checkFinal(next, { maxEval: 4 });
  assert.equal((await h.post(server, "/v1/chat/completions", { messages: hi, max_tokens: 2 })).status, 200);
  assert.ok(m['unicorn_requests_total{endpoint="api_generate",status="200"}'] >= 1, "metrics name the Ollama routes");
});

test("--api-key applies to /api/* as to /v1/*", async () => {
  const s = await h.start(h.env("UNICORN_TINY_SERVER"), [...h.tinyArgs(), "--api-key", "s3cret"]);
  try {
    const anonymous = new Ollama({ host: s.url });
    const denied = await refused(anonymous.list());
    assert.equal(denied.status, 401);
    assert.match(denied.message, /^invalid API key/);
    assert.equal((await refused(anonymous.chat({ model, messages: hi }))).status, 401);
    const keyed = new Ollama({ host: s.url, headers: { Authorization: "Bearer s3cret" } });
    assert.equal((await keyed.list()).models.length, 1);
    const r = await keyed.chat({ model, messages: hi, options: { num_predict: 2 } });
    checkFinal(r, { maxEval: 2 });
  } finally {
    assert.equal((await h.stop(s)).code, 0);
  }
});

test("a stream cut by the server (a second Ctrl-C) ends with Ollama's error line; the server exits 0", async () => {
  const s = await h.start(h.env("UNICORN_TINY_SERVER"), h.tinyArgs());
  const stream = await new Ollama({ host: s.url }).chat({ model, messages: hi, stream: true,
                                                         options: { temperature: 0.8, seed: 1, num_predict: 250 } });
  let signals = 0, parts = 0, error = null;
  try {
    for await (const part of stream) {
      parts++;
      if (signals < 2) { signals++; s.proc.kill("SIGINT"); }
      assert.equal(part.done, false);
    }
  } catch (e) {
    error = e.message;  // the client throws on an {"error"} line
  }
  assert.equal(error, "the server is shutting down");
  assert.ok(parts < 250, "the stream was cut short");
  assert.deepEqual(await s.exit, { code: 0, signal: null });
});
