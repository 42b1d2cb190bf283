// Label vision: images through the server. unicorn-tiny-vision-server (the
// tiny model of fixtures/tiny with its image encoder) takes OpenAI image_url
// parts as data: URLs and Ollama's images, streamed and not; the prompt cache
// reuses an image only where the same bytes sit at the same place; bad images
// and fetched URLs are 400s that say why.
"use strict";
const test = require("node:test");
const assert = require("node:assert/strict");
const fs = require("node:fs");
const path = require("node:path");
const h = require("../server/harness.cjs");

const fixtures = path.join(__dirname, "fixtures");
const png = fs.readFileSync(path.join(fixtures, "tiny", "image.png"));
const other = fs.readFileSync(path.join(fixtures, "pixels", "gray_300x200.png"));
const dataUrl = (bytes, type = "image/png") => `data:${type};base64,${bytes.toString("base64")}`;
const ask = (image, text = "what?", extra = {}) => ({
  messages: [{ role: "user", content: [{ type: "text", text }, { type: "image_url", image_url: { url: image } }] }],
  max_tokens: 4, temperature: 0, ...extra,
});
let server;

test.before(async () => {
  server = await h.start(h.env("UNICORN_TINY_VISION_SERVER"),
                         ["--model", path.join(fixtures, "tiny"), "--tokenizer", path.join(fixtures, "tiny_vision_tokenizer.json")]);
  assert.match(server.log, /image encoder from /);
});
test.after(async () => { if (server) assert.equal((await h.stop(server)).code, 0); });

test("an image_url part is seen: the answer depends on the image, and repeats", async () => {
  const a = await h.post(server, "/v1/chat/completions", ask(dataUrl(png)));
  assert.equal(a.status, 200, a.text);
  // 16 soft tokens and the markers around them count as prompt tokens.
  assert.ok(a.json.usage.prompt_tokens > 16 + 2, JSON.stringify(a.json.usage));
  const again = await h.post(server, "/v1/chat/completions", ask(dataUrl(png)));
  assert.equal(again.json.choices[0].message.content, a.json.choices[0].message.content);
  const b = await h.post(server, "/v1/chat/completions", ask(dataUrl(other), "what?", { logprobs: true }));
  assert.equal(b.status, 200, b.text);
  const a2 = await h.post(server, "/v1/chat/completions", ask(dataUrl(png), "what?", { logprobs: true }));
  assert.notDeepEqual(b.json.choices[0].logprobs, a2.json.choices[0].logprobs,
                      "two images gave the same log-probabilities: the image is not seen");
  // Streamed: the same text.
  const s = h.streamed(await h.streamEvents(server, "/v1/chat/completions", ask(dataUrl(png))));
  assert.equal(s.text, a.json.choices[0].message.content);
});

test("the prompt cache reuses an image only where the same bytes sit at the same place", async () => {
  const cached = (r) => r.json.usage.prompt_tokens_details?.cached_tokens ?? 0;
  const first = await h.post(server, "/v1/chat/completions", ask(dataUrl(png), "describe it"));
  const same = await h.post(server, "/v1/chat/completions", ask(dataUrl(png), "describe it"));
  assert.ok(cached(same) > 16, `the same image was not reused: ${JSON.stringify(same.json.usage)}`);
  const changed = await h.post(server, "/v1/chat/completions", ask(dataUrl(other), "describe it"));
  // Only the text before the image is reused: its 16 rows and what follows are fed again.
  assert.ok(cached(changed) > 0 && cached(changed) <= cached(same) - 16,
            `another image's rows were reused: ${JSON.stringify(changed.json.usage)} after ${JSON.stringify(same.json.usage)}`);
  assert.equal(first.json.choices[0].message.content, same.json.choices[0].message.content);
});

test("Ollama's images are seen as OpenAI's image parts are", async () => {
  const o = await h.post(server, "/api/chat", {
    model: "tiny", stream: false, options: { temperature: 0, num_predict: 4 },
    messages: [{ role: "user", content: "what?", images: [png.toString("base64")] }],
  });
  assert.equal(o.status, 200, o.text);
  const chat = await h.post(server, "/v1/chat/completions", {
    messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: dataUrl(png) } }, { type: "text", text: "what?" }] }],
    max_tokens: 4, temperature: 0,
  });
  assert.equal(o.json.message.content, chat.json.choices[0].message.content);
});

test("bad images are 400s that say why", async () => {
  const cases = [
    [dataUrl(Buffer.from("not an image at all")), /image 1: .*(format|not)/i],
    [dataUrl(png.subarray(0, 100)), /image 1: /],
    ["https://example.com/cat.png", /fetches nothing/],
    ["data:image/png;base64,@@@@", /base64/],
  ];
  for (const [url, why] of cases) {
    const r = await h.post(server, "/v1/chat/completions", ask(url));
    assert.equal(r.status, 400, url.slice(0, 40));
    assert.match(r.json.error.message, why);
  }
  // The server still answers.
  assert.equal((await h.post(server, "/v1/chat/completions", ask(dataUrl(png)))).status, 200);
});
