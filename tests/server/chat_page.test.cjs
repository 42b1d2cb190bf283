// Label browser: the chat page that unicorn-server answers GET / with
// (include/unicorn/server/chat_page.hpp), in Debian's headless chromium driven
// by puppeteer-core (tests/server/browser's npm manifest, which
// tools/browser_test.sh installs; it downloads no browser),
// against unicorn-tiny-server with one slot and an API key: the key asked for
// and sent, answers streamed in several chunks, a conversation of several
// turns with a system prompt, Stop (the server frees the slot), errors, the
// markdown renderer's escaping, and the Content-Security-Policy. With
// UNICORN_SCREENSHOT=FILE.png it also has a conversation with the demo model
// on unicorn-server and saves a screenshot of it there.
"use strict";
const { test, before, after } = require("node:test");
const assert = require("node:assert/strict");
const path = require("node:path");
const h = require("./harness.cjs");

const puppeteer = require(path.join(h.env("UNICORN_BROWSER_NPM_MODULES"), "puppeteer-core"));
const key = "page-key";
let server, browser, page;
const problems = [];  // uncaught exceptions and CSP violations in the page
const sent = [];      // the bodies of the page's chat requests

async function launch() {
  return puppeteer.launch({
    executablePath: h.env("UNICORN_CHROMIUM"),
    headless: true,
    // The sandbox needs user namespaces, which containers and root lack; the
    // browser only opens the page of the server the test started.
    args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run"],
  });
}

async function openPage(url) {
  const p = await browser.newPage();
  await p.setViewport({ width: 1100, height: 720 });
  p.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
  p.on("console", (m) => { if (/Content.Security.Policy/i.test(m.text())) problems.push(`console: ${m.text()}`); });
  p.on("request", (r) => { if (r.method() === "POST" && r.url().endsWith("/v1/chat/completions")) sent.push(JSON.parse(r.postData())); });
  const res = await p.goto(url, { waitUntil: "load" });
  return { p, res };
}

// Sets a settings box as a user does: select its text, type, leave it.
async function setField(p, id, value) {
  await p.click(`#${id}`, { clickCount: 3 });
  await p.keyboard.press("Backspace");
  if (value !== "") await p.type(`#${id}`, value);
  await p.keyboard.press("Tab");
}

const last = (selector) => page.$$eval(selector, (all) => {
  const el = all[all.length - 1];
  return el && { text: el.querySelector(".content").textContent, state: el.dataset.state, chunks: Number(el.dataset.chunks),
                 note: el.querySelector(".note").textContent };
});

// Waits until `n` answers are done; an error the page shows first fails the test with its message.
async function answered(p, n, timeout = 30000) {
  await p.waitForFunction((n) => document.querySelectorAll('.msg.assistant[data-state="done"]').length >= n ||
                                 !document.querySelector("#error").hidden, { timeout }, n);
  assert.equal(await p.$eval("#error", (e) => (e.hidden ? "" : e.textContent)), "", "the page shows no error");
}

async function ask(p, text) {
  await p.type("#input", text);
  await p.click("#send");
}

const until = async (what, condition, ms = 20000) => {
  for (const t0 = Date.now(); Date.now() - t0 < ms;) {
    if (await condition()) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`timed out waiting for ${what}`);
};

before(async () => {
  [server, browser] = await Promise.all([
    h.start(h.env("UNICORN_TINY_SERVER"), [...h.tinyArgs(), "--parallel", "1", "--api-key", key]),
    launch(),
  ]);
});
after(async () => {
  if (browser) await browser.close();
  if (server) assert.equal((await h.stop(server)).code, 0);
});

test("GET / is the page, without the API key, under a CSP that forbids remote scripts", async () => {
  const opened = await openPage(server.url + "/");
  page = opened.p;
  const headers = opened.res.headers();
  assert.equal(opened.res.status(), 200);
  assert.equal(headers["content-type"], "text/html; charset=utf-8");
  const csp = headers["content-security-policy"];
  assert.match(csp, /script-src 'nonce-[0-9a-f]{32}';/);
  assert.doesNotMatch(csp, /unsafe-inline|https?:|\*/);
  // A script from elsewhere is refused by the browser.
  const refused = await page.evaluate(() => new Promise((resolve) => {
    document.addEventListener("securitypolicyviolation", (e) => resolve(e.effectiveDirective), { once: true });
    const s = document.createElement("script");
    s.src = "https://cdn.example/script.js";
    document.head.append(s);
  }));
  assert.equal(refused, "script-src-elem");
  problems.length = 0;  // that violation was the test's own
  // The models list needs the key: the page says so, then names the model once it has it.
  await page.waitForFunction(() => document.querySelector("#model").textContent === "model unknown");
  const error = await page.$eval("#error", (e) => e.textContent);
  assert.match(error, /^HTTP 401: invalid API key/);
  assert.match(error, /API key in Settings/);
  await setField(page, "api_key", key);
  await page.waitForFunction(() => document.querySelector("#model").textContent === "tiny");
  assert.equal(await page.$eval("#error", (e) => e.hidden), true);
});

test("an answer streams in several chunks; the conversation goes on with a system prompt", async () => {
  await setField(page, "max_tokens", "24");
  await setField(page, "seed", "7");
  await setField(page, "temperature", "0.8");
  await ask(page, "Tell me a story.");
  await answered(page, 1);
  const first = await last(".msg.assistant");
  assert.ok(first.text.length > 0, "the answer has text");
  assert.ok(first.chunks > 1, `the answer came in ${first.chunks} chunks`);  // SSE events the page read
  console.log(`first answer: ${first.text.length} characters in ${first.chunks} chunks`);
  assert.deepEqual(sent[0].messages, [{ role: "user", content: "Tell me a story." }]);
  assert.equal(sent[0].stream, true);
  assert.equal(sent[0].max_tokens, 24);
  assert.equal(sent[0].seed, 7);
  assert.equal(sent[0].temperature, 0.8);

  await page.type("#system", "You are terse.");
  await ask(page, "And then?");
  await answered(page, 2);
  assert.deepEqual(sent[1].messages.map((m) => m.role), ["system", "user", "assistant", "user"]);
  assert.equal(sent[1].messages[0].content, "You are terse.");
  assert.ok(sent[1].messages[2].content.length > 0, "the first answer goes back to the server");
  assert.equal(await page.$$eval(".msg.user", (all) => all.length), 2);
});

test("Stop ends a long answer at once, and the server frees the slot", async () => {
  await page.click("#new-chat");
  await setField(page, "system", "");
  await setField(page, "max_tokens", "220");
  await ask(page, "Go on.");
  // The text shows while the answer streams (220 tokens take seconds on lavapipe).
  const early = await (await page.waitForFunction(() => {
    const a = document.querySelector(".msg.assistant");
    return Number(a?.dataset.chunks) >= 2 && { text: a.querySelector(".content").textContent, state: a.dataset.state };
  })).jsonValue();
  assert.equal(early.state, "streaming");
  assert.ok(early.text.length > 0);
  await page.click("#stop");
  await page.waitForSelector('.msg.assistant[data-state="stopped"]');
  const stopped = await last(".msg.assistant");
  assert.equal(stopped.note, "stopped");
  assert.ok(stopped.text.startsWith(early.text));
  await new Promise((r) => setTimeout(r, 300));
  assert.equal((await last(".msg.assistant")).text, stopped.text, "no text after Stop");
  assert.equal(await page.$eval("#send", (b) => b.hidden), false);
  let m;
  await until("the completion to end", async () => (m = await h.metrics(server)).unicorn_completions_in_flight === 0);
  assert.equal(m.unicorn_client_disconnects_total, 1);
  assert.equal(m['unicorn_requests_total{endpoint="chat_completions",status="499"}'], 1);
  assert.equal(m.unicorn_slots_busy, 0);
  assert.ok(m.unicorn_generated_tokens_total < 2 * 24 + 220, `generation stopped early (${m.unicorn_generated_tokens_total} tokens in all)`);
  console.log(`stopped after ${stopped.chunks} chunks; ${m.unicorn_generated_tokens_total} tokens generated in the three answers`);
  // What was shown stays in the conversation, for the next turn. (Not sent
  // here: on a loaded machine Stop may land late, and a long answer with the
  // next question could pass the tiny model's 256-token context.)
  assert.deepEqual(await page.evaluate(() => conversation.map((t) => t.role)), ["user", "assistant"]);
  assert.ok(await page.evaluate(() => conversation[1].content.length > 0));
  // The one slot takes the next question at once.
  await page.click("#new-chat");
  await setField(page, "max_tokens", "4");
  await ask(page, "Short, please.");
  await answered(page, 1, 10000);
});

test("a refused request shows the server's error and gives the question back", async () => {
  await page.click("#new-chat");
  await setField(page, "temperature", "5");
  await ask(page, "Hot?");
  await page.waitForFunction(() => !document.querySelector("#error").hidden);
  assert.match(await page.$eval("#error", (e) => e.textContent), /^HTTP 400: 'temperature' must be in \[0\.0, 2\.0\], not 5/);
  assert.equal(await page.$eval("#input", (e) => e.value), "Hot?");
  assert.equal(await page.$$eval(".msg", (all) => all.length), 0);
  await page.$eval("#input", (e) => { e.value = ""; });
  await setField(page, "temperature", "0.8");
});

test("markup in an answer is shown as text; the markdown renders", async () => {
  // The answer comes from the test (through the browser's request interception)
  // in the server's SSE shape, a few characters per event.
  const answer = [
    "Look: <script>window.pwned = 1</script> and <img src=x onerror=\"window.pwned = 2\">.",
    "",
    "**bold**, *italic*, `<b>code</b>` and snake_case_name.",
    "",
    "```js",
    "if (a < b && c) alert(\"x\");",
    "```",
    "",
    "- one [docs](https://example.com/a?b=1&c=\"2\")",
    "- two [bad](javascript:window.pwned=3)",
    "",
    "3. third",
    "4. fourth",
  ].join("\n");
  const events = [];
  for (let i = 0; i < answer.length; i += 7)
    events.push(`data: ${JSON.stringify({ object: "chat.completion.chunk", choices: [{ index: 0, delta: { content: answer.slice(i, i + 7) }, finish_reason: null }] })}\n\n`);
  events.push(`data: ${JSON.stringify({ object: "chat.completion.chunk", choices: [{ index: 0, delta: {}, finish_reason: "stop" }] })}\n\n`, "data: [DONE]\n\n");
  await page.click("#new-chat");
  await page.setRequestInterception(true);
  const respond = (r) => {
    if (r.method() === "POST" && r.url().endsWith("/v1/chat/completions"))
      r.respond({ status: 200, contentType: "text/event-stream", body: events.join("") });
    else r.continue();
  };
  page.on("request", respond);
  try {
    await ask(page, "<img src=y onerror=\"window.pwned = 4\"> hi");
    await answered(page, 1);
  } finally {
    page.off("request", respond);
    await page.setRequestInterception(false);
  }
  const shown = await page.$eval(".msg.assistant .content", (c) => ({
    text: c.textContent,
    elements: [...c.querySelectorAll("*")].map((e) => e.tagName.toLowerCase()),
    strong: c.querySelector("strong")?.textContent,
    em: c.querySelector("em")?.textContent,
    code: c.querySelector("p code")?.textContent,
    pre: c.querySelector("pre code")?.textContent,
    bullets: [...c.querySelectorAll("ul > li")].map((li) => li.textContent),
    numbered: [...c.querySelectorAll("ol > li")].map((li) => li.textContent),
    start: c.querySelector("ol")?.getAttribute("start"),
    links: [...c.querySelectorAll("a")].map((a) => ({ href: a.getAttribute("href"), rel: a.rel, text: a.textContent })),
  }));
  assert.ok(shown.text.includes("<script>window.pwned = 1</script>"), shown.text);
  assert.ok(shown.text.includes("<img src=x onerror=\"window.pwned = 2\">"), shown.text);
  for (const tag of ["script", "img", "b"]) assert.ok(!shown.elements.includes(tag), `no <${tag}> element: ${shown.elements}`);
  assert.equal(await page.evaluate(() => window.pwned), undefined);
  assert.equal(await page.$eval(".msg.user .content", (c) => c.children.length), 0, "the question is text too");
  assert.equal(await page.$eval(".msg.user .content", (c) => c.textContent), "<img src=y onerror=\"window.pwned = 4\"> hi");
  assert.equal(shown.strong, "bold");
  assert.equal(shown.em, "italic");
  assert.equal(shown.code, "<b>code</b>");
  assert.ok(shown.text.includes("snake_case_name"), "underscores inside a word are not emphasis");
  assert.equal(shown.pre, "if (a < b && c) alert(\"x\");");
  assert.deepEqual(shown.numbered, ["third", "fourth"]);
  assert.equal(shown.start, "3");
  assert.equal(shown.bullets.length, 2);
  assert.deepEqual(shown.links, [{ href: "https://example.com/a?b=1&c=\"2\"", rel: "noopener noreferrer", text: "docs" }]);
  assert.ok(shown.bullets[1].includes("[bad](javascript:window.pwned=3)"), "a javascript: link stays text");
});

test("on a narrow screen the settings fold away and nothing overflows", async () => {
  await page.setViewport({ width: 380, height: 700 });
  await page.reload({ waitUntil: "load" });
  assert.equal(await page.$eval("#settings", (s) => s.hidden), true);
  await page.click("#toggle-settings");
  assert.equal(await page.$eval("#settings", (s) => s.hidden), false);
  assert.ok(await page.evaluate(() => document.documentElement.scrollWidth <= 380), "no sideways scrolling");
  assert.deepEqual(problems, []);
});

test("with a model that sees images the page attaches one and sends it as an image_url part", async () => {
  assert.equal(await page.$eval("#attach", (e) => e.hidden), true, "the text-only model's page offers images");
  const fixtures = h.env("UNICORN_VISION_FIXTURES");
  const vision = await h.start(h.env("UNICORN_TINY_VISION_SERVER"), [
    "--model", path.join(fixtures, "tiny"), "--tokenizer", path.join(fixtures, "tiny_vision_tokenizer.json")]);
  const { p } = await openPage(vision.url + "/");
  try {
    await p.waitForSelector("#attach:not([hidden])", { timeout: 10000 });
    await (await p.$("#image")).uploadFile(path.join(fixtures, "tiny", "image.png"));
    await p.waitForSelector("#attachments img.thumb");
    await p.type("#input", "what is it?");
    await p.keyboard.press("Enter");
    await answered(p, 1);
    const body = sent[sent.length - 1];
    const content = body.messages[body.messages.length - 1].content;
    assert.deepEqual(content[0], { type: "text", text: "what is it?" });
    assert.equal(content[1].type, "image_url");
    assert.match(content[1].image_url.url, /^data:image\/png;base64,iVBOR/);
    assert.equal(await p.$$eval(".msg.user img.thumb", (all) => all.length), 1, "the question shows its image");
    assert.equal(await p.$$eval("#attachments img", (all) => all.length), 0, "the image went with the message");
  } finally {
    await p.close();
    await h.stop(vision);
  }
});

test("a conversation with the demo model, saved as a screenshot (UNICORN_SCREENSHOT)", { skip: !process.env.UNICORN_SCREENSHOT }, async () => {
  // The demo model's file as the README's users name it; the build's Gemma 3 tokenizer goes with it.
  const demo = path.resolve(h.env("UNICORN_TINY_MODEL"), "../../../../models/gemma3-demo.gguf");
  const s = await h.start(h.env("UNICORN_SERVER"), ["-m", demo]);
  try {
    const { p } = await openPage(s.url + "/");
    await p.setViewport({ width: 1000, height: 640 });
    await p.waitForFunction(() => document.querySelector("#model").textContent === "gemma3-demo");
    await setField(p, "temperature", "0.6");
    await setField(p, "seed", "3");
    await setField(p, "max_tokens", "32");
    await p.type("#system", "Answer in the words of the King James Bible.");
    await ask(p, "What did God say on the first day?");
    await answered(p, 1, 120000);
    await ask(p, "And what of the light?");
    // Mid-answer: the second answer streaming, Stop in place of Send.
    await p.waitForFunction(() => Number(document.querySelectorAll(".msg.assistant")[1]?.dataset.chunks) >= 14, { timeout: 120000 });
    await p.screenshot({ path: process.env.UNICORN_SCREENSHOT });
    await p.click("#stop");
    await p.close();
  } finally {
    assert.equal((await h.stop(s)).code, 0);
  }
});
