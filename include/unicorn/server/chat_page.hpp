// unicorn/server/chat_page.hpp — the chat page the server answers GET / with
// (as llama-server does; --no-webui turns it off): one HTML file, its style
// and script inline, that talks to the server's own API (GET /v1/models, the
// SSE stream of POST /v1/chat/completions) and loads nothing else, so it works
// offline. It lives here as a raw string literal rather than as an .html file
// that CMake embeds, so that a host that includes the installed headers (or
// the source tree through add_subdirectory or FetchContent) serves it with no
// build step and no file at run time.
//
// The answer's text is HTML-escaped before the page's own small markdown
// renderer adds its tags, so model output never becomes markup; the response's
// Content-Security-Policy (chat_page()) lets only the page's own inline
// script and style run, by a nonce fresh for each response, and lets the page
// connect only to its own origin.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <string_view>

namespace unicorn::server {

// Where the page's <script> and <style> tags take the response's nonce.
inline constexpr std::string_view kChatPageNonce = "@CSP_NONCE@";

inline constexpr std::string_view kChatPageHtml = R"chat_page(<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Unicorn chat</title>
<link rel="icon" href="data:,">
<style nonce="@CSP_NONCE@">
:root {
  color-scheme: light dark;
  --bg: #f6f6f8; --panel: #ffffff; --text: #1c1c21; --muted: #6a6a75; --border: #dddde4;
  --accent: #6446e8; --accent-text: #ffffff; --user: #ece8ff; --code: #f0f0f4; --danger: #b42318;
}
@media (prefers-color-scheme: dark) {
  :root {
    --bg: #16161a; --panel: #1f1f25; --text: #e8e8ee; --muted: #9c9ca8; --border: #33333c;
    --accent: #9a85ff; --accent-text: #121216; --user: #2b2642; --code: #2a2a32; --danger: #ff8d80;
  }
}
* { box-sizing: border-box; }
html, body { height: 100%; margin: 0; }
body {
  display: flex; flex-direction: column; background: var(--bg); color: var(--text);
  font: 15px/1.55 system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans", sans-serif;
}
button, input, textarea { font: inherit; color: inherit; }
header {
  display: flex; align-items: center; gap: .75rem; padding: .55rem 1rem;
  background: var(--panel); border-bottom: 1px solid var(--border);
}
header h1 { margin: 0; font-size: 1.05rem; font-weight: 650; }
#model {
  min-width: 0; overflow: hidden; text-overflow: ellipsis; white-space: nowrap;
  color: var(--muted); font-size: .85rem; padding: .1rem .5rem; border: 1px solid var(--border); border-radius: 999px;
}
header .spacer { flex: 1; }
button {
  cursor: pointer; border: 1px solid var(--border); background: var(--panel); border-radius: 8px; padding: .4rem .8rem;
}
button:hover:not(:disabled) { border-color: var(--accent); }
button:disabled { opacity: .5; cursor: default; }
button.primary { background: var(--accent); border-color: var(--accent); color: var(--accent-text); font-weight: 600; }
button.danger { border-color: var(--danger); color: var(--danger); }
.layout { flex: 1; display: flex; min-height: 0; }
main { flex: 1; display: flex; flex-direction: column; min-width: 0; }
#messages { flex: 1; overflow-y: auto; padding: 1rem; display: flex; flex-direction: column; gap: .8rem; }
#messages:empty::before { content: "Send a message to start a conversation."; margin: auto; color: var(--muted); }
.msg {
  max-width: min(48rem, 100%); padding: .55rem .85rem; border-radius: 12px; overflow-wrap: anywhere;
  background: var(--panel); border: 1px solid var(--border);
}
.msg.user { align-self: flex-end; background: var(--user); border-color: transparent; }
.msg.user .content { white-space: pre-wrap; }
.msg.assistant { align-self: flex-start; }
.msg .role { font-size: .72rem; text-transform: uppercase; letter-spacing: .05em; color: var(--muted); }
.msg .note { font-size: .8rem; color: var(--muted); font-style: italic; }
.msg .note:empty { display: none; }
.msg[data-state="streaming"] .content::after { content: "\258D"; color: var(--accent); animation: blink 1s steps(2) infinite; }
@keyframes blink { 50% { opacity: 0; } }
.content > :first-child { margin-top: 0; }
.content > :last-child { margin-bottom: 0; }
.content p, .content ul, .content ol, .content pre, .content blockquote { margin: .5rem 0; }
.content ul, .content ol { padding-left: 1.4rem; }
.content h1, .content h2, .content h3, .content h4, .content h5, .content h6 { margin: .7rem 0 .4rem; font-size: 1.05rem; }
.content blockquote { margin-left: 0; padding-left: .8rem; border-left: 3px solid var(--border); color: var(--muted); }
.content code { font: .9em/1.45 ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; background: var(--code); padding: .08em .3em; border-radius: 4px; }
.content pre { background: var(--code); padding: .6rem .8rem; border-radius: 8px; overflow-x: auto; }
.content pre code { padding: 0; background: none; }
.content a { color: var(--accent); }
.content hr { border: 0; border-top: 1px solid var(--border); }
#error {
  margin: 0 1rem .5rem; padding: .5rem .8rem; border: 1px solid var(--danger); border-radius: 8px;
  color: var(--danger); white-space: pre-wrap;
}
#error[hidden] { display: none; }
#composer { display: flex; gap: .5rem; align-items: flex-end; padding: .75rem 1rem 1rem; border-top: 1px solid var(--border); }
#input {
  flex: 1; resize: none; min-height: 2.6rem; max-height: 40vh; padding: .55rem .75rem;
  background: var(--panel); border: 1px solid var(--border); border-radius: 10px;
}
#input:focus, #settings input:focus, #settings textarea:focus { outline: 2px solid var(--accent); outline-offset: -1px; }
#send, #stop, #attach { height: 2.6rem; }
#attachments:empty { display: none; }
#attachments { display: flex; gap: .4rem; padding: 0 1rem; }
.thumb { max-height: 4rem; max-width: 6rem; border-radius: 6px; border: 1px solid var(--border); }
#settings {
  width: 290px; flex: none; overflow-y: auto; padding: 1rem; display: flex; flex-direction: column; gap: .75rem;
  background: var(--panel); border-left: 1px solid var(--border);
}
#settings[hidden] { display: none; }
#settings h2 { margin: 0; font-size: .95rem; }
#settings label { display: flex; flex-direction: column; gap: .2rem; min-width: 0; font-size: .85rem; color: var(--muted); }
#settings input, #settings textarea {
  width: 100%; min-width: 0; padding: .35rem .5rem; background: var(--bg); border: 1px solid var(--border); border-radius: 6px;
}
#settings textarea { resize: vertical; min-height: 4.5rem; }
#settings .row { display: grid; grid-template-columns: 1fr 1fr; gap: .6rem; }
#settings .hint { font-size: .78rem; color: var(--muted); margin: 0; }
@media (max-width: 760px) {
  .layout { flex-direction: column; }
  #settings { width: auto; max-height: 45vh; border-left: 0; border-bottom: 1px solid var(--border); order: -1; }
  .msg { max-width: 100%; }
}
</style>
</head>
<body>
<header>
  <h1>Unicorn</h1>
  <span id="model" title="the model the server serves (GET /v1/models)">&hellip;</span>
  <span class="spacer"></span>
  <button id="new-chat" type="button">New chat</button>
  <button id="toggle-settings" type="button" aria-controls="settings">Settings</button>
</header>
<div class="layout">
  <main>
    <div id="messages" aria-live="polite"></div>
    <div id="error" role="alert" hidden></div>
    <div id="attachments" aria-label="Images for the next message"></div>
    <form id="composer">
      <button id="attach" type="button" title="Add an image to the next message" hidden>Image</button>
      <input id="image" type="file" accept="image/png,image/jpeg,image/gif,image/webp,image/bmp" multiple hidden>
      <textarea id="input" rows="1" placeholder="Message (Enter sends, Shift+Enter: new line)" aria-label="Message"></textarea>
      <button id="send" class="primary" type="submit">Send</button>
      <button id="stop" class="danger" type="button" hidden>Stop</button>
    </form>
  </main>
  <aside id="settings" aria-label="Settings">
    <h2>Settings</h2>
    <label>System prompt<textarea id="system" placeholder="none"></textarea></label>
    <div class="row">
      <label>Temperature<input id="temperature" type="number" min="0" max="2" step="0.05" value="0.8"></label>
      <label>Top p<input id="top_p" type="number" min="0.01" max="1" step="0.01" value="0.95"></label>
    </div>
    <div class="row">
      <label>Max tokens<input id="max_tokens" type="number" min="1" step="1" value="512"></label>
      <label>Seed<input id="seed" type="number" step="1" placeholder="random"></label>
    </div>
    <label>API key<input id="api_key" type="password" autocomplete="off" placeholder="none"></label>
    <p class="hint">The key is sent as <code>Authorization: Bearer</code> and kept for this tab only.
      Settings apply to the next message.</p>
  </aside>
</div>
<script nonce="@CSP_NONCE@">
"use strict";
const $ = (id) => document.getElementById(id);
const ui = {
  messages: $("messages"), error: $("error"), composer: $("composer"), input: $("input"), send: $("send"),
  stop: $("stop"), model: $("model"), settings: $("settings"), system: $("system"), temperature: $("temperature"),
  topP: $("top_p"), maxTokens: $("max_tokens"), seed: $("seed"), apiKey: $("api_key"),
  attach: $("attach"), image: $("image"), attachments: $("attachments"),
};
let images = [];  // data: URLs of the images the next message shows (a model that sees them)
let conversation = [];  // sent with each request: user and assistant turns, alternating
let controller = null;  // the AbortController of the answer being streamed

// --- markdown: the text is escaped first; only the tags added here are markup ---

const escapeHtml = (s) => s.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);

// Bold and italics, on escaped text.
function emphasis(s) {
  return s
    .replace(/\*\*(?=\S)([\s\S]*?\S)\*\*/g, "<strong>$1</strong>")
    .replace(/(^|[^\w])__(?=\S)([\s\S]*?\S)__(?!\w)/g, "$1<strong>$2</strong>")
    .replace(/\*(?=[^\s*])([^*]*?[^\s*])\*/g, "<em>$1</em>")
    .replace(/(^|[^\w])_(?=[^\s_])([^_]*?[^\s_])_(?!\w)/g, "$1<em>$2</em>");
}

// One block's inline markdown. Code spans and links are set aside first (\u0000n\u0000),
// so that emphasis never reaches into them.
function inline(text) {
  const held = [];
  const hold = (html) => `\u0000${held.push(html) - 1}\u0000`;
  let s = escapeHtml(text)
    .replace(/`([^`]+)`/g, (_, code) => hold(`<code>${code}</code>`))
    .replace(/\[([^\]]+)\]\(([^()\s]+)\)/g, (whole, label, url) =>
      /^(https?:\/\/|mailto:)/i.test(url)
        ? hold(`<a href="${url}" target="_blank" rel="noopener noreferrer">${emphasis(label)}</a>`)
        : whole);
  s = emphasis(s).replace(/\n/g, "<br>");
  return s.replace(/\u0000(\d+)\u0000/g, (_, i) => held[Number(i)]);
}

const listItem = /^\s*([-*+]|\d{1,9}[.)])\s+(.*)$/;
const fence = /^\s*(`{3,}|~{3,})\s*([\w+#.-]*)\s*$/;
const rule = /^\s*([-*_])(\s*\1){2,}\s*$/;

// Markdown to HTML: fenced code (an unclosed fence runs to the end, as while
// streaming), headings, lists, quotes, rules and paragraphs.
function renderMarkdown(source) {
  const lines = source.replace(/\u0000/g, "").replace(/\r\n?/g, "\n").split("\n");
  const out = [];
  const startsBlock = (line) => fence.test(line) || rule.test(line) || listItem.test(line) || /^(#{1,6})\s|^\s*>/.test(line);
  for (let i = 0; i < lines.length;) {
    const line = lines[i];
    let m;
    if ((m = fence.exec(line))) {
      const body = [];
      for (i++; i < lines.length && !lines[i].trim().startsWith(m[1]); i++) body.push(lines[i]);
      i++;
      const lang = m[2] ? ` class="language-${escapeHtml(m[2])}"` : "";
      out.push(`<pre><code${lang}>${escapeHtml(body.join("\n"))}</code></pre>`);
    } else if (!line.trim()) {
      i++;
    } else if ((m = /^(#{1,6})\s+(.*)$/.exec(line))) {
      out.push(`<h${m[1].length}>${inline(m[2].replace(/\s+#+\s*$/, ""))}</h${m[1].length}>`);
      i++;
    } else if (rule.test(line)) {
      out.push("<hr>");
      i++;
    } else if (listItem.test(line)) {
      const ordered = /\d/.test(listItem.exec(line)[1]);
      const items = [];
      for (; i < lines.length; i++) {
        const item = listItem.exec(lines[i]);
        if (item && /\d/.test(item[1]) === ordered) items.push(item[2]);
        else if (item || !lines[i].trim() || startsBlock(lines[i])) break;
        else items[items.length - 1] += "\n" + lines[i].trim();  // a continued item
      }
      const start = ordered ? parseInt(listItem.exec(line)[1], 10) : 1;
      const tag = ordered ? "ol" : "ul";
      out.push(`<${tag}${start !== 1 ? ` start="${start}"` : ""}>${items.map((t) => `<li>${inline(t)}</li>`).join("")}</${tag}>`);
    } else if (/^\s*>/.test(line)) {
      const quoted = [];
      for (; i < lines.length && /^\s*>/.test(lines[i]); i++) quoted.push(lines[i].replace(/^\s*>\s?/, ""));
      out.push(`<blockquote>${renderMarkdown(quoted.join("\n"))}</blockquote>`);
    } else {
      const para = [];
      for (; i < lines.length && lines[i].trim() && !(para.length && startsBlock(lines[i])); i++) para.push(lines[i]);
      out.push(`<p>${inline(para.join("\n"))}</p>`);
    }
  }
  return out.join("");
}

// --- settings, kept in the browser (the API key for this tab only) ---

const fields = { system: ui.system, temperature: ui.temperature, top_p: ui.topP, max_tokens: ui.maxTokens, seed: ui.seed };
try {
  const saved = JSON.parse(localStorage.getItem("unicorn-chat-settings") || "{}");
  for (const [name, el] of Object.entries(fields)) if (typeof saved[name] === "string") el.value = saved[name];
  ui.apiKey.value = sessionStorage.getItem("unicorn-chat-key") || "";
} catch { /* storage unavailable: the defaults */ }
function saveSettings() {
  try {
    localStorage.setItem("unicorn-chat-settings", JSON.stringify(Object.fromEntries(Object.entries(fields).map(([k, el]) => [k, el.value]))));
    sessionStorage.setItem("unicorn-chat-key", ui.apiKey.value);
  } catch { /* storage unavailable */ }
}
for (const el of Object.values(fields)) el.addEventListener("change", saveSettings);
ui.apiKey.addEventListener("change", () => { saveSettings(); loadModel(); });
ui.settings.hidden = window.innerWidth <= 760;
$("toggle-settings").addEventListener("click", () => { ui.settings.hidden = !ui.settings.hidden; });

// The sampling fields of a request; an empty box leaves the server's default.
function sampling() {
  const out = {};
  const number = (el, name, integer) => {
    const text = el.value.trim();
    if (!text) return;
    const x = Number(text);
    if (!Number.isFinite(x) || (integer && !Number.isInteger(x))) throw new Error(`${name} must be ${integer ? "an integer" : "a number"}, not "${text}"`);
    out[name] = x;
  };
  number(ui.temperature, "temperature", false);
  number(ui.topP, "top_p", false);
  number(ui.maxTokens, "max_tokens", true);
  number(ui.seed, "seed", true);
  return out;
}

// --- talking to the server ---

function headers() {
  const h = { "content-type": "application/json" };
  const key = ui.apiKey.value.trim();
  if (key) h.authorization = `Bearer ${key}`;
  return h;
}

// The server's OpenAI error object as a message.
async function apiError(res) {
  let message = `HTTP ${res.status}`;
  try {
    const body = await res.json();
    if (body && body.error && body.error.message) message += `: ${body.error.message}`;
  } catch { /* not JSON */ }
  if (res.status === 401) message += "\nEnter the server's API key in Settings.";
  return new Error(message);
}

function showError(message) {
  ui.error.textContent = message;
  ui.error.hidden = !message;
}

async function loadModel() {
  try {
    const res = await fetch("v1/models", { headers: headers() });
    if (!res.ok) throw await apiError(res);
    const list = await res.json();
    const id = list.data && list.data.length ? list.data[0].id : "no model";
    // Images only where the model sees them (Ollama's capabilities, on the same server).
    const show = await fetch("api/show", { method: "POST", headers: headers(), body: JSON.stringify({ model: id }) });
    const sees = show.ok && ((await show.json()).capabilities || []).includes("vision");
    // The page changes at once, when it knows everything: a name shown means the error is gone.
    ui.model.textContent = id;
    ui.attach.hidden = !sees;
    showError("");
  } catch (e) {
    ui.model.textContent = "model unknown";
    showError(e.message);
  }
}

// Reads a server-sent event stream, calling onEvent with each event's JSON, until "data: [DONE]".
async function readEvents(res, onEvent) {
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let buffered = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) throw new Error("the answer's stream ended early");
    buffered += decoder.decode(value, { stream: true }).replace(/\r\n?/g, "\n");
    for (let cut; (cut = buffered.indexOf("\n\n")) >= 0;) {
      const event = buffered.slice(0, cut);
      buffered = buffered.slice(cut + 2);
      const data = event.split("\n").filter((l) => l.startsWith("data:")).map((l) => l.slice(5).trimStart()).join("\n");
      if (!data) continue;
      if (data === "[DONE]") return;
      onEvent(JSON.parse(data));
    }
  }
}

// --- the conversation ---

function addMessage(role) {
  const root = document.createElement("div");
  root.className = `msg ${role}`;
  const label = document.createElement("div");
  label.className = "role";
  label.textContent = role === "user" ? "You" : "Assistant";
  const content = document.createElement("div");
  content.className = "content";
  const note = document.createElement("div");
  note.className = "note";
  root.append(label, content, note);
  ui.messages.append(root);
  return { root, content, note };
}

function scrollToEnd(force) {
  const m = ui.messages;
  if (force || m.scrollHeight - m.scrollTop - m.clientHeight < 80) m.scrollTop = m.scrollHeight;
}

function setBusy(busy) {
  ui.send.hidden = busy;
  ui.stop.hidden = !busy;
}

async function send() {
  const text = ui.input.value;
  if (!text.trim() || controller) return;
  let params;
  try {
    params = sampling();
  } catch (e) {
    return showError(e.message);
  }
  showError("");
  const turns = conversation;  // "New chat" starts another; this answer belongs to this one
  const question = addMessage("user");
  question.content.textContent = text;
  const shown = images;
  for (const url of shown) question.content.append(thumbnail(url));
  turns.push({ role: "user", content: shown.length
    ? [{ type: "text", text }, ...shown.map((url) => ({ type: "image_url", image_url: { url } }))] : text });
  setImages([]);
  ui.input.value = "";
  resizeInput();
  const answer = addMessage("assistant");
  answer.root.dataset.state = "streaming";
  answer.root.dataset.chunks = "0";
  scrollToEnd(true);
  const system = ui.system.value.trim() ? [{ role: "system", content: ui.system.value }] : [];
  let reply = "", chunks = 0, finish = null;
  const own = (controller = new AbortController());
  setBusy(true);
  try {
    const res = await fetch("v1/chat/completions", {
      method: "POST", headers: headers(), signal: own.signal,
      body: JSON.stringify({ messages: [...system, ...turns], stream: true, ...params }),
    });
    if (!res.ok) throw await apiError(res);
    await readEvents(res, (event) => {
      if (event.error) throw new Error(`the server stopped the answer: ${event.error.message}`);
      const choice = event.choices && event.choices[0];
      if (!choice) return;
      if (choice.delta && choice.delta.content) {
        reply += choice.delta.content;
        answer.root.dataset.chunks = String(++chunks);
        answer.content.innerHTML = renderMarkdown(reply);
        scrollToEnd(false);
      }
      if (choice.finish_reason) finish = choice.finish_reason;
    });
    answer.root.dataset.state = "done";
    if (finish === "length") answer.note.textContent = "stopped at the token limit";
    if (!reply) answer.note.textContent = "(an empty answer)";
  } catch (e) {
    const stopped = e.name === "AbortError";
    answer.root.dataset.state = stopped ? "stopped" : "error";
    answer.note.textContent = stopped ? "stopped" : "incomplete";
    if (!stopped) showError(e.message);
  } finally {
    own.abort();  // after an error mid-stream: close the connection, so the server frees the slot
    controller = null;
    setBusy(false);
  }
  if (reply || answer.root.dataset.state === "done") {
    turns.push({ role: "assistant", content: reply });
  } else {  // no answer: take the question back, so that the turns still alternate
    turns.pop();
    question.root.remove();
    answer.root.remove();
    if (turns === conversation && !ui.input.value) ui.input.value = text, setImages(shown);
    resizeInput();
  }
  ui.input.focus();
}

function thumbnail(url) {
  const img = document.createElement("img");
  img.className = "thumb";
  img.alt = "an image";
  img.src = url;
  return img;
}
function setImages(urls) {
  images = urls;
  ui.attachments.replaceChildren(...urls.map(thumbnail));
}
ui.attach.addEventListener("click", () => ui.image.click());
ui.image.addEventListener("change", async () => {
  const read = (file) => new Promise((resolve, reject) => {
    const r = new FileReader();
    r.onload = () => resolve(r.result);
    r.onerror = () => reject(new Error(`${file.name}: cannot be read`));
    r.readAsDataURL(file);
  });
  try {
    setImages([...images, ...await Promise.all([...ui.image.files].map(read))]);
  } catch (e) {
    showError(e.message);
  }
  ui.image.value = "";
});

function resizeInput() {
  ui.input.style.height = "auto";
  ui.input.style.height = `${ui.input.scrollHeight + 2}px`;
}

ui.composer.addEventListener("submit", (e) => { e.preventDefault(); send(); });
ui.input.addEventListener("keydown", (e) => {
  if (e.key === "Enter" && !e.shiftKey && !e.isComposing) { e.preventDefault(); send(); }
});
ui.input.addEventListener("input", resizeInput);
ui.stop.addEventListener("click", () => { if (controller) controller.abort(); });
$("new-chat").addEventListener("click", () => {
  if (controller) controller.abort();
  conversation = [];
  setImages([]);
  ui.messages.replaceChildren();
  showError("");
  ui.input.focus();
});
loadModel();
ui.input.focus();
</script>
</body>
</html>
)chat_page";

// The page for one response, and the Content-Security-Policy that goes with
// it: the page's own inline script and style (by a nonce), connections to its
// own origin only, no plugins, forms, frames or base URL; nothing remote.
struct ChatPage {
  std::string html;
  std::string csp;
};

inline ChatPage chat_page() {
  // The nonce must be unguessable to whoever can put text on the page (a
  // model's answer): the system's random source, not a seeded generator.
  static constexpr char kHex[] = "0123456789abcdef";
  std::random_device random;
  std::string nonce;
  for (int word = 0; word < 4; ++word)
    for (uint32_t bits = random(), i = 0; i < 8; ++i, bits >>= 4) nonce += kHex[bits & 15];
  ChatPage page{std::string(kChatPageHtml),
                "default-src 'none'; script-src 'nonce-" + nonce + "'; style-src 'nonce-" + nonce +
                    "'; connect-src 'self'; img-src data:; base-uri 'none'; form-action 'none'; "
                    "frame-ancestors 'none'"};
  for (size_t at = 0; (at = page.html.find(kChatPageNonce, at)) != std::string::npos; at += nonce.size())
    page.html.replace(at, kChatPageNonce.size(), nonce);
  return page;
}

}  // namespace unicorn::server
