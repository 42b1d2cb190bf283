// Label server: a loopback load test of unicorn-tiny-server (8 slots). Two
// rounds of 64 concurrent clients, a quarter of which go away mid-request.
// Checks: no crash; resident memory flat across rounds; every completed
// stream equal to the same request run alone (same seed: batch invariance);
// /metrics counts equal to what the clients saw. Bounded: 2 rounds, 64
// clients each, every request with a deadline. Two rounds are what the memory
// check needs (the second allocates nothing that stays); a third repeated the
// same checks for another third of the test's time (notes/build_time.md).
"use strict";
const { test, before, after } = require("node:test");
const assert = require("node:assert/strict");
const h = require("./harness.cjs");

const CLIENTS = 64, ROUNDS = 2, SPECS = 16;
let server;

before(async () => { server = await h.start(h.env("UNICORN_TINY_SERVER"), [...h.tinyArgs(), "--queue", "64"]); });
after(async () => {
  const { code } = await h.stop(server);
  assert.equal(code, 0, "SIGTERM ends the server with status 0");
});

// A small deterministic generator, so a failure replays.
function rng(seed) {
  let s = seed >>> 0;
  return () => ((s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32);
}
const words = ["sea", "ship", "storm", "harbour", "light", "tide", "sail", "wind", "rope", "gull", "salt", "night"];

// Sixteen requests: chat and text, greedy and sampled, some with stop strings,
// prompts from one to three chunks.
function specs() {
  const r = rng(7);
  const out = [];
  for (let i = 0; i < SPECS; i++) {
    const n = 3 + Math.floor(r() * 40);
    const text = Array.from({ length: n }, () => words[Math.floor(r() * words.length)]).join(" ");
    const body = { max_tokens: 8 + Math.floor(r() * 32), seed: 1000 + i, temperature: i % 3 === 0 ? 0 : 0.8, top_k: 40 };
    if (i % 4 === 1) body.stop = ["ea"];
    if (i % 5 === 2) body.presence_penalty = 0.7;
    const chat = i % 4 !== 3;
    if (chat) body.messages = [{ role: "user", content: text }];
    else body.prompt = text;
    out.push({ route: chat ? "/v1/chat/completions" : "/v1/completions", body });
  }
  return out;
}

async function waitIdle() {
  for (;;) {
    const m = await h.metrics(server);
    if (m.unicorn_completions_in_flight === 0) return m;
    await new Promise((r) => setTimeout(r, 20));
  }
}

test("64 concurrent clients with disconnects: no crash, flat memory, batch invariance, metrics agree",
     { timeout: 480000 }, async () => {
  const all = specs();
  // Each request alone, streamed: the reference.
  const ref = [];
  for (const s of all) {
    const out = await h.streamEvents(server, s.route, { ...s.body, stream_options: { include_usage: true } });
    assert.equal(out.status, 200);
    assert.ok(out.done);
    ref.push(h.streamed(out));
  }
  assert.ok(ref.some((x) => x.finish === "stop") && ref.some((x) => x.finish === "length"), "both finish reasons occur");

  const rss = [];
  let before = await waitIdle();
  const totals = { completed: 0, streamAborted: 0, wholeAborted: 0 };
  for (let round = 0; round < ROUNDS; round++) {
    const r = rng(100 + round);
    const seen = { completed: 0, streamAborted: 0, wholeAborted: 0, promptTokens: 0, completionTokens: 0 };
    const clients = Array.from({ length: CLIENTS }, async (_, c) => {
      const k = (c * 7 + round) % SPECS, s = all[k];
      const leaves = r() < 0.25;
      const streamed = c % 4 !== 0;
      seen.promptTokens += ref[k].usage.prompt_tokens;
      if (streamed) {
        // Leave after the first chunk, where the reference has many more to come.
        const leaveAt = leaves && ref[k].usage.completion_tokens >= 8 ? 0 : -1;
        const out = await h.streamEvents(server, s.route, { ...s.body, stream_options: { include_usage: true } },
                                         { onChunk: (_, i) => (i === leaveAt ? "abort" : undefined) });
        if (out.aborted) { seen.streamAborted++; return; }
        assert.equal(out.status, 200, JSON.stringify(out.json));
        assert.ok(out.done, "the stream ends with [DONE]");
        const got = h.streamed(out);
        // The usage says whether the prompt came from a slot's cache (prompt_tokens_details), for a failure's report.
        const report = `spec ${k} (client ${c}, round ${round}): text differs from the request alone; ` +
                       `usage ${JSON.stringify(got.usage)}, alone ${JSON.stringify(ref[k].usage)}`;
        assert.equal(got.text, ref[k].text, report);
        assert.equal(got.finish, ref[k].finish, `spec ${k}: finish_reason`);
        assert.equal(got.usage.completion_tokens, ref[k].usage.completion_tokens, `spec ${k}: completion_tokens`);
        seen.completed++;
        seen.completionTokens += got.usage.completion_tokens;
      } else if (leaves) {
        await h.postThenLeave(server, s.route, s.body, 20 + Math.floor(r() * 100));
        seen.wholeAborted++;
      } else {
        const res = await fetch(server.url + s.route, {
          method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(s.body),
        });
        const j = await res.json();
        assert.equal(res.status, 200, JSON.stringify(j));
        const text = j.choices[0].message ? j.choices[0].message.content : j.choices[0].text;
        assert.equal(text, ref[k].text, `spec ${k} (client ${c}, round ${round}, unstreamed): text differs; ` +
                     `usage ${JSON.stringify(j.usage)}, alone ${JSON.stringify(ref[k].usage)}`);
        assert.equal(j.choices[0].finish_reason, ref[k].finish);
        seen.completed++;
        seen.completionTokens += j.usage.completion_tokens;
      }
    });
    const t0 = Date.now();
    await Promise.all(clients);
    const after = await waitIdle();
    rss.push(h.rssKiB(server.proc.pid));
    const d = (name) => (after[name] ?? 0) - (before[name] ?? 0);
    const both = (status) => d(`unicorn_requests_total{endpoint="chat_completions",status="${status}"}`) +
                             d(`unicorn_requests_total{endpoint="completions",status="${status}"}`);
    const ok200 = both(200), gone = both(499);
    // The server answers 200 when it sent the whole answer, 499 when the client
    // left first. An unstreamed client that left may have been answered just
    // before (the server sent a 200 the client did not read).
    const statuses = Object.keys(after).filter((k) => k.startsWith("unicorn_requests_total") && d(k))
                           .map((k) => `${k.slice(22)} ${d(k)}`).join(", ");
    assert.equal(ok200 + gone, CLIENTS, `every request ended as a 200 or a 499 (${statuses})`);
    assert.ok(ok200 >= seen.completed && ok200 <= seen.completed + seen.wholeAborted,
              `200s: server ${ok200}, clients completed ${seen.completed} (+${seen.wholeAborted} left unstreamed)`);
    assert.ok(gone >= seen.streamAborted, `499s ${gone} < streams left ${seen.streamAborted}`);
    assert.equal(d("unicorn_client_disconnects_total"), gone);
    assert.ok(d('unicorn_completions_total{outcome="cancelled"}') <= gone, "only a departed client cancels");
    assert.equal(d("unicorn_prompt_tokens_total"), seen.promptTokens, "prompt tokens in");
    assert.ok(d("unicorn_generated_tokens_total") >= seen.completionTokens, "tokens out");
    assert.equal(d('unicorn_completions_total{outcome="error"}'), 0);
    console.log(`round ${round}: ${CLIENTS} clients in ${Date.now() - t0} ms: ${seen.completed} completed, ` +
                `${seen.streamAborted} streams and ${seen.wholeAborted} unstreamed requests left; ` +
                `${d("unicorn_decode_steps_total")} steps, mean batch ` +
                `${(d("unicorn_decode_step_streams_total") / d("unicorn_decode_steps_total")).toFixed(2)}; RSS ${rss.at(-1)} KiB`);
    for (const key of Object.keys(seen)) totals[key] = (totals[key] ?? 0) + seen[key];
    before = after;
  }
  assert.ok(totals.streamAborted > 0 && totals.completed > 0, "the rounds had disconnects and completions");
  // Memory: the rounds after the first allocate nothing that stays.
  assert.ok(rss[ROUNDS - 1] <= rss[0] + 4096, `resident memory grew across rounds: ${rss.join(" -> ")} KiB`);
  assert.equal((await fetch(server.url + "/health")).status, 200);
});
