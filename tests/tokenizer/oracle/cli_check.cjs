// Checks unicorn-tokenize against the oracle's expected ids, with
// tokenizer.json and with the vocabulary-only GGUF that tokenizer_test wrote.
// Usage: node cli_check.cjs <unicorn-tokenize> <tokenizer.json> <oracle dir>
"use strict";
const fs = require("fs");
const path = require("path");
const { execFileSync } = require("child_process");

const [cli, tokenizerJson, oracleDir] = process.argv.slice(2);
const corpus = JSON.parse(fs.readFileSync(path.join(oracleDir, "corpus.json"), "utf8"));
const expected = JSON.parse(fs.readFileSync(path.join(oracleDir, "expected.json"), "utf8"));
const chats = JSON.parse(fs.readFileSync(path.join(oracleDir, "chat.json"), "utf8"));
const decoder = new TextDecoder("utf-8", { ignoreBOM: true });
const texts = corpus.map((b) => decoder.decode(Buffer.from(b, "base64")));
// --json: arrays of texts, id arrays and conversations in and out.
const run = (args, input) =>
  JSON.parse(execFileSync(cli, ["--json", ...args], { input: JSON.stringify(input), maxBuffer: 1 << 28 }).toString("utf8"));
// The default, plain text: one text in (its bytes exactly), comma-separated ids out.
const plain = (args, text) => execFileSync(cli, args, { input: Buffer.from(text, "utf8") }).toString("utf8").trim();

let failures = 0;
const fail = (msg) => { if (++failures <= 5) console.error(msg); };
for (const file of [tokenizerJson, path.join(oracleDir, "gemma3-vocab.gguf")]) {
  const ids = run(["--tokenizer", file], texts);
  ids.forEach((x, i) => { if (JSON.stringify(x) !== JSON.stringify(expected.ids[i])) fail(`${file}: #${i} ids differ`); });
  const back = run(["--tokenizer", file, "--decode"], ids);
  back.forEach((s, i) => {
    const want = Buffer.from(expected.decoded[i], "base64").toString("utf8");
    if (s !== want) fail(`${file}: #${i} decodes differently`);
  });
  const bos = run(["--tokenizer", file, "--add-bos"], texts.slice(0, 50));
  bos.forEach((x, i) => { if (JSON.stringify(x) !== JSON.stringify(expected.ids_bos[i])) fail(`${file}: #${i} --add-bos differs`); });
}
texts.slice(0, 8).forEach((text, i) => {
  if (plain(["--tokenizer", tokenizerJson], text) !== expected.ids[i].join(",")) fail(`plain text: #${i} ids differ`);
});
for (const gen of [false, true]) {
  const ok = chats.filter((c) => c.add_generation_prompt === gen && c.rendered !== undefined);
  const got = run(["--chat", ...(gen ? ["--generation-prompt"] : [])], ok.map((c) => c.messages));
  got.forEach((s, i) => { if (s !== ok[i].rendered) fail(`--chat: conversation ${i} renders differently`); });
}
console.log(`unicorn-tokenize: ${texts.length} strings x 2 tokenizer files, ${failures} failures`);
process.exit(failures === 0 ? 0 : 1);
