// Label fault (builds with UNICORN_FAULT_INJECTION only): the device is lost
// under the server (UNICORN_INJECT_FAULT=device-lost@1, the first queue
// submission: the first prompt's prefill). The requests in flight end with a
// 500 that says what failed, streamed or not, and the server exits 1 for its
// supervisor to restart it; it never hangs.
"use strict";
const { test } = require("node:test");
const assert = require("node:assert/strict");
const h = require("./harness.cjs");

test("a lost device fails the requests in flight with a 500 and ends the server", async () => {
  process.env.UNICORN_INJECT_FAULT = "device-lost@1";
  const s = await h.start(h.env("UNICORN_TINY_SERVER"), h.tinyArgs());
  delete process.env.UNICORN_INJECT_FAULT;
  const request = { messages: [{ role: "user", content: "hello" }], max_tokens: 8, temperature: 0 };
  // The two requests race the fault. One that the server had read is
  // answered: a 500 if it met the fault, a 503 "shutting down" if it waited
  // for its turn or arrived as the server stopped. Only a connection still in
  // the listen queue when the server closed it (reset), or one made after
  // (refused), goes unanswered: the kernel's, not ours.
  const unreached = (e) => ({ unreached: String(e.cause?.code ?? e.cause?.message ?? e.message) });
  const [whole, streamed] = await Promise.all([
    h.post(s, "/v1/chat/completions", request).catch(unreached),
    h.streamEvents(s, "/v1/chat/completions", request).catch(unreached),
  ]);
  assert.ok(!(whole.unreached && streamed.unreached), `neither request reached the server: ${whole.unreached}`);
  for (const r of [whole, streamed]) {
    if (r.unreached) {
      assert.match(r.unreached, /ECONNREFUSED|ECONNRESET/, r.unreached);
      continue;
    }
    // The one that met the fault says what failed; one still waiting for its
    // turn is refused as the server stops.
    assert.ok([500, 503].includes(r.status), `status ${r.status}`);
    if (r.status === 503) assert.equal(r.json.error.code, "shutting_down");
    if (r.status === 500) {
      assert.equal(r.json.error.code, "engine_error");
      assert.match(r.json.error.message, /VK_ERROR_DEVICE_LOST/);
    }
  }
  assert.ok(whole.status === 500 || streamed.status === 500, "no request saw the fault");
  const deadline = setTimeout(() => s.proc.kill("SIGKILL"), 20000);
  const exit = await s.exit;
  clearTimeout(deadline);
  assert.equal(exit.code, 1, `exit ${JSON.stringify(exit)}:\n${s.log}`);
  assert.match(s.log, /the engine failed \(.*VK_ERROR_DEVICE_LOST.*\)/);
});
