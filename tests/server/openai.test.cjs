// Label server: the official `openai` npm client (the project's npm manifest
// pins it) drives unicorn-server on the built-in demo model: the model list,
// chat and text completions, streamed and not, with assertions on content,
// usage and finish_reason. Greedy content must equal what unicorn-generate
// prints for the same prompt on the same model.
"use strict";
const { test, before, after } = require("node:test");
const assert = require("node:assert/strict");
const { execFileSync } = require("node:child_process");
const path = require("node:path");
const h = require("./harness.cjs");

const mod = h.npm("openai");
const OpenAI = mod.OpenAI ?? mod.default;
let server, client;

before(async () => {
  // /health answers 503 while the model loads (the demo takes seconds), then 200.
  // The demo model's file named as the README's users name it (-m models/gemma3-demo.gguf):
  // it carries no vocabulary, and the Gemma 3 tokenizer the build carries goes with it.
  const demo = path.resolve(h.env("UNICORN_TINY_MODEL"), "../../../../models/gemma3-demo.gguf");
  server = await h.start(h.env("UNICORN_SERVER"), ["-m", demo], { until: "listening" });
  const early = await fetch(server.url + "/health");
  const body = await early.json();
  assert.ok(early.status === 503 || early.status === 200, `health while loading: ${early.status}`);
  if (early.status === 503) assert.equal(body.error.code, "loading");
  while ((await fetch(server.url + "/health")).status !== 200) await new Promise((r) => setTimeout(r, 50));
  client = new OpenAI({ baseURL: server.url + "/v1", apiKey: "unused", maxRetries: 0, timeout: 300000 });
});
after(async () => {
  const { code } = await h.stop(server);
  assert.equal(code, 0, "SIGTERM ends the server with status 0");
});

// unicorn-generate's greedy answer to one user turn (its stdout is the text).
function generated(prompt, n) {
  const out = execFileSync(h.env("UNICORN_GENERATE"), ["--chat", "-p", prompt, "-n", String(n), "--temp", "0"],
                           { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] });
  return out.replace(/\n$/, "");
}

test("models.list and models.retrieve name the served model", async () => {
  const list = await client.models.list();
  assert.equal(list.data.length, 1);
  assert.equal(list.data[0].id, "gemma3-demo");
  assert.equal(list.data[0].object, "model");
  const one = await client.models.retrieve("gemma3-demo");
  assert.equal(one.id, "gemma3-demo");
});

test("chat, unstreamed: greedy content equals unicorn-generate's; usage and finish_reason", async () => {
  const prompt = "Name three colours.";
  const r = await client.chat.completions.create({
    model: "gemma3-demo", messages: [{ role: "user", content: prompt }], max_tokens: 8, temperature: 0,
  });
  assert.equal(r.object, "chat.completion");
  assert.match(r.id, /^chatcmpl-/);
  const choice = r.choices[0];
  assert.equal(choice.message.role, "assistant");
  assert.equal(choice.message.content, generated(prompt, 8));
  assert.ok(choice.finish_reason === "length" || choice.finish_reason === "stop");
  if (choice.finish_reason === "length") assert.equal(r.usage.completion_tokens, 8);
  assert.equal(r.usage.total_tokens, r.usage.prompt_tokens + r.usage.completion_tokens);
  // <bos><start_of_turn>user\n ... <end_of_turn>\n<start_of_turn>model\n
  const tokens = await h.post(server, "/tokenize", { content: `<bos><start_of_turn>user\n${prompt}<end_of_turn>\n<start_of_turn>model\n` });
  assert.equal(r.usage.prompt_tokens, tokens.json.tokens.length);
});

test("chat, streamed with include_usage: the deltas make the unstreamed text", async () => {
  const request = {
    messages: [{ role: "system", content: "You are terse." }, { role: "user", content: "Why is the sky blue?" }],
    max_tokens: 10, temperature: 0,
  };
  const whole = await client.chat.completions.create(request);
  const stream = await client.chat.completions.create({ ...request, stream: true, stream_options: { include_usage: true } });
  let text = "", finish = null, usage = null, chunks = 0, role = null;
  for await (const chunk of stream) {
    chunks++;
    assert.equal(chunk.object, "chat.completion.chunk");
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) {
      if (c.delta.role) role = c.delta.role;
      text += c.delta.content ?? "";
      if (c.finish_reason) finish = c.finish_reason;
    }
  }
  assert.equal(role, "assistant");
  assert.ok(chunks >= 3, `${chunks} chunks`);
  assert.equal(text, whole.choices[0].message.content);
  assert.equal(finish, whole.choices[0].finish_reason);
  assert.deepEqual(usage.completion_tokens, whole.usage.completion_tokens);
  assert.equal(usage.prompt_tokens, whole.usage.prompt_tokens);
});

// Log-probabilities, computed on the GPU: one entry per generated token, the
// alternatives in order, the greedy choice the most likely; the entries'
// tokens make the text; streamed, they arrive with the deltas.
test("logprobs: chat (top_logprobs) and completions (logprobs: N), streamed and not", async () => {
  const messages = [{ role: "user", content: "Say something about the sea." }];
  const r = await client.chat.completions.create({ messages, max_tokens: 8, temperature: 0, logprobs: true, top_logprobs: 3 });
  const content = r.choices[0].logprobs.content;
  assert.equal(content.length, r.usage.completion_tokens);
  assert.equal(content.map((c) => c.token).join(""), r.choices[0].message.content);
  for (const c of content) {
    assert.equal(c.top_logprobs.length, 3);
    assert.ok(c.logprob <= 0);
    assert.ok(c.top_logprobs[0].logprob >= c.top_logprobs[1].logprob && c.top_logprobs[1].logprob >= c.top_logprobs[2].logprob);
    assert.equal(c.token, c.top_logprobs[0].token, "greedy: the most likely token is chosen");
    assert.equal(c.logprob, c.top_logprobs[0].logprob);
    assert.deepEqual(c.bytes, [...Buffer.from(c.token, "utf8")]);
  }
  const none = await client.chat.completions.create({ messages, max_tokens: 2, temperature: 0 });
  assert.equal(none.choices[0].logprobs, null, "not asked: null");

  const stream = await client.chat.completions.create({ messages, max_tokens: 8, temperature: 0, logprobs: true, stream: true });
  const streamed = [];
  let text = "";
  for await (const chunk of stream)
    for (const c of chunk.choices) {
      text += c.delta.content ?? "";
      if (c.logprobs) streamed.push(...c.logprobs.content);
    }
  assert.equal(text, r.choices[0].message.content);
  assert.deepEqual(streamed.map((c) => [c.token, c.logprob]), content.map((c) => [c.token, c.logprob]));
  assert.ok(streamed.every((c) => c.top_logprobs.length === 0), "top_logprobs not asked: none");

  const t = await client.completions.create({ prompt: "The sea is", max_tokens: 6, temperature: 0, logprobs: 2 });
  const lp = t.choices[0].logprobs;
  assert.equal(lp.tokens.length, t.usage.completion_tokens);
  assert.equal(lp.tokens.join(""), t.choices[0].text);
  assert.equal(lp.token_logprobs.length, lp.tokens.length);
  lp.top_logprobs.forEach((alternatives, i) => {
    assert.equal(Object.keys(alternatives).length, 2);
    assert.equal(Math.max(...Object.values(alternatives)), lp.token_logprobs[i]);
  });
  assert.deepEqual(lp.text_offset, lp.tokens.map((_, i) => Buffer.byteLength(lp.tokens.slice(0, i).join(""))));
});

// Scoring a text as lm-evaluation-harness's local-completions does: echo,
// logprobs, max_tokens 0. The prompt's tokens come back with their
// log-probabilities (the first null), and the last one's equals what the
// same prefix gives the token when it is generated.
test("completions with echo and logprobs score the prompt", async () => {
  const ids = (await h.post(server, "/tokenize", { content: "The sea is", add_special: true })).json.tokens;
  const next = await client.completions.create({ prompt: ids, max_tokens: 1, temperature: 0, logprobs: 1 });
  const piece = next.choices[0].logprobs.tokens[0];
  const pieces = (await h.post(server, "/tokenize", { content: piece, with_pieces: true })).json.tokens;
  assert.equal(pieces.length, 1, `"${piece}" is one token`);
  const scored = await client.completions.create({ prompt: [...ids, pieces[0].id], max_tokens: 0, echo: true, logprobs: 1 });
  const lp = scored.choices[0].logprobs;
  assert.equal(scored.usage.completion_tokens, 0);
  assert.equal(lp.tokens.length, ids.length + 1);
  assert.equal(lp.token_logprobs[0], null);
  assert.equal(lp.top_logprobs[0], null);
  assert.ok(lp.token_logprobs.slice(1).every((x) => x <= 0));
  assert.ok(Math.abs(lp.token_logprobs.at(-1) - next.choices[0].logprobs.token_logprobs[0]) < 1e-3,
            `${lp.token_logprobs.at(-1)} vs ${next.choices[0].logprobs.token_logprobs[0]}`);
  assert.equal(scored.choices[0].text, (await h.post(server, "/detokenize", { tokens: [...ids, pieces[0].id] })).json.content);
  // echo with new tokens: the prompt's text, then the answer's.
  const more = await client.completions.create({ prompt: "The sea is", max_tokens: 3, temperature: 0, echo: true, logprobs: 0 });
  assert.ok(more.choices[0].text.startsWith("The sea is"));
  assert.equal(more.choices[0].logprobs.tokens.length, ids.length + more.usage.completion_tokens);
});

test("completions: a string prompt and its token ids give the same text", async () => {
  const prompt = "The capital of France is";
  const a = await client.completions.create({ model: "gemma3-demo", prompt, max_tokens: 6, temperature: 0 });
  const ids = (await h.post(server, "/tokenize", { content: prompt, add_special: true })).json.tokens;
  assert.equal(ids[0], 2, "add_special puts <bos> first");
  const b = await client.completions.create({ model: "gemma3-demo", prompt: ids, max_tokens: 6, temperature: 0 });
  assert.equal(a.object, "text_completion");
  assert.ok(a.choices[0].text.length > 0);
  assert.equal(a.choices[0].text, b.choices[0].text);
  assert.equal(a.usage.prompt_tokens, ids.length);
  assert.equal(b.usage.prompt_tokens, ids.length);
  const detok = await h.post(server, "/detokenize", { tokens: ids.slice(1) });
  assert.equal(detok.json.content, prompt);
  // Streamed: the same text, chunk by chunk.
  const stream = await client.completions.create({ prompt, max_tokens: 6, temperature: 0, stream: true });
  let text = "";
  for await (const chunk of stream) text += chunk.choices[0]?.text ?? "";
  assert.equal(text, a.choices[0].text);
});

test("a stop string ends the text before it, with finish_reason stop", async () => {
  const request = { messages: [{ role: "user", content: "Count." }], max_tokens: 12, temperature: 0 };
  const full = (await client.chat.completions.create(request)).choices[0].message.content;
  assert.ok(full.length >= 4, `premise: a longer answer (${JSON.stringify(full)})`);
  const stop = full.slice(Math.floor(full.length / 2), Math.floor(full.length / 2) + 2);
  const cut = await client.chat.completions.create({ ...request, stop: [stop] });
  assert.equal(cut.choices[0].finish_reason, "stop");
  assert.equal(cut.choices[0].message.content, full.slice(0, full.indexOf(stop)));
});

test("seeded sampling: the same seed gives the same text, another seed other text", async () => {
  const request = { messages: [{ role: "user", content: "Tell me a story." }], max_tokens: 16, temperature: 1, top_p: 1 };
  const a = await client.chat.completions.create({ ...request, seed: 42 });
  const b = await client.chat.completions.create({ ...request, seed: 42 });
  const c = await client.chat.completions.create({ ...request, seed: 43 });
  assert.equal(a.choices[0].message.content, b.choices[0].message.content);
  assert.notEqual(a.choices[0].message.content, c.choices[0].message.content);
});

test("errors are the client's typed OpenAI errors", async () => {
  await assert.rejects(
    client.chat.completions.create({ messages: [{ role: "user", content: "x" }], n: 99 }),
    (e) => e instanceof OpenAI.BadRequestError && e.status === 400 && e.error?.param === "n");
  await assert.rejects(
    client.chat.completions.create({ model: "gpt-4o", messages: [{ role: "user", content: "x" }] }),
    (e) => e instanceof OpenAI.NotFoundError && e.status === 404 && e.code === "model_not_found");
  await assert.rejects(
    client.chat.completions.create({ messages: [{ role: "user", content: "x".repeat(20000) }] }),
    (e) => e instanceof OpenAI.BadRequestError && e.code === "context_length_exceeded");
});

// --- structured output and tool calls (the grammar-constrained sampler) ---

const { zodResponseFormat, zodFunction } = h.npm("openai/helpers/zod");
const z = h.npm("zod");

test("structured output: the client's parse() with a zod schema gets an object that validates", async () => {
  const Verse = z.object({
    book: z.enum(["Genesis", "Exodus", "Psalms"]),
    chapter: z.number().int().min(1).max(150),
    blessed: z.boolean(),
    mood: z.enum(["joy", "wrath", "peace"]).nullable(),
    tags: z.array(z.enum(["light", "water", "earth"])).max(2),
  });
  const r = await client.chat.completions.parse({
    messages: [{ role: "user", content: "Describe a verse as JSON." }],
    response_format: zodResponseFormat(Verse, "verse"), temperature: 0.7, seed: 7, max_tokens: 80,
  });
  const choice = r.choices[0];
  assert.equal(choice.finish_reason, "stop", choice.message.content);
  assert.deepEqual(Verse.parse(choice.message.parsed), choice.message.parsed);
  assert.deepEqual(JSON.parse(choice.message.content), choice.message.parsed);
  assert.deepEqual(Object.keys(choice.message.parsed), ["book", "chapter", "blessed", "mood", "tags"],
                   "properties in the schema's order");
});

test("structured output: json_object, llama-server's grammar, streamed and not", async () => {
  const r = await client.chat.completions.create({
    messages: [{ role: "user", content: "Give me a JSON object." }], response_format: { type: "json_object" },
    temperature: 0, max_tokens: 24,
  });
  if (r.choices[0].finish_reason === "stop") {
    const v = JSON.parse(r.choices[0].message.content);
    assert.ok(v && typeof v === "object" && !Array.isArray(v));
  } else {  // cut by max_tokens: a prefix of a JSON object
    assert.match(r.choices[0].message.content, /^\s*\{/);
  }
  const grammar = 'root ::= "The " animal " is " colour "."\nanimal ::= "lamb" | "lion" | "dove"\ncolour ::= "white" | "golden"';
  const whole = await h.post(server, "/v1/chat/completions",
    { messages: [{ role: "user", content: "An animal?" }], grammar, temperature: 0.8, seed: 3 });
  assert.equal(whole.status, 200, JSON.stringify(whole.json));
  assert.match(whole.json.choices[0].message.content, /^The (lamb|lion|dove) is (white|golden)\.$/);
  assert.equal(whole.json.choices[0].finish_reason, "stop");
  const stream = await client.chat.completions.create({
    messages: [{ role: "user", content: "An animal?" }], grammar, temperature: 0.8, seed: 3, stream: true,
  });
  let text = "";
  for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? "";
  assert.equal(text, whole.json.choices[0].message.content, "streamed: the same text");
});

test("structured output: what cannot be honoured is a 400 naming it", async () => {
  const bad = [
    [{ response_format: { type: "json_schema", json_schema: { name: "x", schema: { type: "string", pattern: "^a+$" } } } },
     /pattern/],
    [{ grammar: "root ::= undefined-rule" }, /undefined-rule/],
    [{ response_format: { type: "xml" } }, /response_format\.type/],
    [{ grammar: 'root ::= "a"', response_format: { type: "json_object" } }, /one of/],
  ];
  for (const [fields, message] of bad) {
    const r = await h.post(server, "/v1/chat/completions", { messages: [{ role: "user", content: "x" }], ...fields });
    assert.equal(r.status, 400, JSON.stringify(fields));
    assert.match(r.json.error.message, message);
  }
});

const weatherTool = {
  type: "function",
  function: {
    name: "get_weather", description: "The weather in a city",
    parameters: { type: "object", properties: { city: { type: "string", enum: ["Paris", "Rome", "Jerusalem"] },
                                                  unit: { type: "string", enum: ["C", "F"] } },
                  required: ["city", "unit"], additionalProperties: false },
  },
};

test("tool calls: tool_choice required and named give calls whose arguments validate; streamed the same", async () => {
  for (const tool_choice of ["required", { type: "function", function: { name: "get_weather" } }]) {
    const request = { messages: [{ role: "user", content: "Weather in Rome?" }], tools: [weatherTool], tool_choice,
                      parallel_tool_calls: false, temperature: 0, max_tokens: 100 };
    const r = await client.chat.completions.create(request);
    const choice = r.choices[0];
    assert.equal(choice.finish_reason, "tool_calls", JSON.stringify(choice));
    assert.equal(choice.message.content, null);
    assert.equal(choice.message.tool_calls.length, 1, "parallel_tool_calls: false");
    const call = choice.message.tool_calls[0];
    assert.match(call.id, /^call_[0-9a-f]{24}$/);
    assert.equal(call.type, "function");
    assert.equal(call.function.name, "get_weather");
    const args = JSON.parse(call.function.arguments);
    assert.ok(["Paris", "Rome", "Jerusalem"].includes(args.city) && ["C", "F"].includes(args.unit), call.function.arguments);
    if (tool_choice !== "required") continue;  // (each request is ~100 demo-model tokens on lavapipe: one streamed)
    const stream = await client.chat.completions.create({ ...request, stream: true });
    const calls = [];
    let finish = null;
    for await (const chunk of stream) {
      for (const d of chunk.choices[0]?.delta?.tool_calls ?? []) calls[d.index] = d;
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    assert.equal(finish, "tool_calls");
    assert.deepEqual(calls.map((c) => c.function), choice.message.tool_calls.map((c) => c.function));
  }
});

test("tool calls: the client's runTools helper calls the function and sends its result back", async () => {
  const seen = [];
  // A named tool_choice: the runner calls it once, then returns.
  const runner = client.chat.completions.runTools({
    messages: [{ role: "user", content: "Weather in Paris?" }], temperature: 0, max_tokens: 100, parallel_tool_calls: false,
    tools: [{ type: "function", function: { ...weatherTool.function, parse: JSON.parse,
                                            function: (args) => { seen.push(args); return { celsius: 21 }; } } }],
    tool_choice: { type: "function", function: { name: "get_weather" } },
  });
  await runner.done();
  assert.equal(seen.length, 1, "the function ran once");
  assert.ok(["Paris", "Rome", "Jerusalem"].includes(seen[0].city) && ["C", "F"].includes(seen[0].unit));
  const tool = runner.messages.find((m) => m.role === "tool");
  assert.equal(tool.content, JSON.stringify({ celsius: 21 }));
  // The conversation with the call and its result is accepted as OpenAI sends it
  // (the response's message as it came, refusal: null included; not the
  // client's own `parsed` fields).
  const messages = runner.messages.map(({ parsed, ...m }) => ({
    ...m, tool_calls: m.tool_calls?.map(({ function: { parsed_arguments, ...f }, ...c }) => ({ ...c, function: f })),
  }));
  const r = await client.chat.completions.create({
    messages, tools: [weatherTool], tool_choice: "none", temperature: 0, max_tokens: 8,
  });
  assert.equal(typeof r.choices[0].message.content, "string");
});

test("tool calls: zodFunction with parse() gives parsed arguments", async () => {
  const r = await client.chat.completions.parse({
    messages: [{ role: "user", content: "Weather?" }], temperature: 0, max_tokens: 100, parallel_tool_calls: false,
    tool_choice: { type: "function", function: { name: "get_weather" } },
    tools: [zodFunction({ name: "get_weather", parameters: z.object({ city: z.enum(["Paris", "Rome"]), days: z.boolean() }) })],
  });
  const call = r.choices[0].message.tool_calls[0];
  assert.equal(call.function.name, "get_weather");
  assert.ok(["Paris", "Rome"].includes(call.function.parsed_arguments.city));
  assert.equal(typeof call.function.parsed_arguments.days, "boolean");
});
