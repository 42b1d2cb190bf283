// Deterministic tokenizer test corpus: an array of Buffers (raw bytes, so
// that invalid UTF-8 can be part of it). Same seed, same corpus, everywhere.
"use strict";

// mulberry32: tiny seeded PRNG, so the corpus does not depend on Math.random.
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const PHRASES = {
  english: [
    "The quick brown fox jumps over the lazy dog.",
    "It was the best of times, it was the worst of times.",
    "Don't panic — it's only a test, isn't it?",
    "Mr. O'Neil paid $1,234.56 for 3 tickets on 2024-03-15.",
    "Supercalifragilisticexpialidocious antidisestablishmentarianism",
    "e-mail: someone@example.com, web: https://example.org/a/b?c=d&e=f#g",
  ],
  french: ["Où est la bibliothèque ? Ça coûte 12,50 €.", "L'été dernier, nous sommes allés à Québec."],
  german: ["Donaudampfschifffahrtsgesellschaftskapitänsmütze", "Grüße aus Köln: Straße, Maß und Fuß."],
  spanish: ["¿Dónde está el niño? ¡Qué sorpresa!", "El pingüino comió ñoquis en Mañana."],
  vietnamese: ["Tiếng Việt có dấu: người, được, những, thường."],
  polish: ["Zażółć gęślą jaźń. Łódź i Wrocław."],
  turkish: ["İstanbul'da ılık bir gün; şekerli çay içtik."],
  russian: ["Съешь же ещё этих мягких французских булок, да выпей чаю.", "Москва — столица России."],
  ukrainian: ["Гей, хлопці, де ви? Їжак і ґудзик."],
  greek: ["Ξεσκεπάζω την ψυχοφθόρα βδελυγμία.", "Καλημέρα κόσμε, τι κάνεις;"],
  arabic: ["مرحبا بالعالم، كيف حالك اليوم؟", "اللغة العربية جميلة جداً ١٢٣٤٥"],
  hebrew: ["שלום עולם, מה שלומך?", "עברית נכתבת מימין לשמאל."],
  hindi: ["नमस्ते दुनिया, आप कैसे हैं?", "हिन्दी देवनागरी लिपि में लिखी जाती है। १२३"],
  thai: ["สวัสดีชาวโลก คุณสบายดีไหม", "ภาษาไทยไม่มีการเว้นวรรคระหว่างคำ"],
  chinese: ["你好，世界！今天天气很好。", "我们在北京大学学习中文和数学。", "繁體中文：龍、龜、鬱。"],
  japanese: ["こんにちは世界。カタカナとひらがなと漢字。", "東京スカイツリーは高さ634メートルです。"],
  korean: ["안녕하세요, 세계! 오늘 날씨가 좋네요.", "한국어 형태소 분석기는 어렵습니다."],
  other: ["Ελληνικά + English + Русский mix", "ქართული ენა", "Հայերեն լեզու", "ᚠᚢᚦᚨᚱᚲ runes", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝕞𝕒𝕥𝕙 ∑∫∂√∞≠≤"],
};

const EMOJI = [
  "😀", "😂", "🥲", "👍", "👍🏽", "👩‍💻", "👨‍👩‍👧‍👦", "🏳️‍🌈", "🇫🇷", "🇯🇵", "1️⃣", "❤️", "🫠", "🧑🏿‍🚀",
  "👩‍❤️‍💋‍👨", "🐈‍⬛", "✈️", "☕", "🦄", "🤷‍♀️",
];

const CODE = [
  "#include <vector>\nint main() {\n\tstd::vector<int> v{1, 2, 3};\n\treturn v.size() > 2 ? 0 : 1;\n}\n",
  "def fib(n):\n    if n < 2:\n        return n\n    return fib(n - 1) + fib(n - 2)\n",
  "const add = (a, b) => a + b;\nconsole.log(`sum: ${add(1, 2)}`);\n",
  "fn main() {\n    let xs: Vec<u32> = (0..10).map(|x| x * x).collect();\n    println!(\"{:?}\", xs);\n}\n",
  "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Println(\"hello\")\n}\n",
  "SELECT id, name FROM users WHERE age >= 18 ORDER BY name ASC LIMIT 10;",
  "<html>\n  <body>\n    <div class=\"x\"><b>bold</b> and <i>italic</i></div>\n  </body>\n</html>",
  "{\"key\": [1, 2.5, -3e10, true, null], \"nested\": {\"a\": \"b\"}}",
  "for f in *.txt; do\n  grep -n 'TODO' \"$f\" | awk -F: '{print $1}' >> out.log\ndone",
  "    return x;\r\n}\r\n",
  "if (a && b || !c) { x += y << 2; } else { x >>= 1; }",
  "| col1 | col2 |\n|------|------|\n| 1    | 2    |",
];

const SPECIALS = [
  "<start_of_turn>", "<end_of_turn>", "<bos>", "<eos>", "<pad>", "<unk>", "<mask>", "[multimodal]",
  "<unused0>", "<unused42>", "<start_of_image>", "<end_of_image>", "<image_soft_token>", "<table>",
  "</td>", "<b>", "</code>", "<start_of_tur", "<end_of_turn", "<<bos>>", "<bos", "bos>", "▁", "▁▁▁",
];

const WORDS = ("the of and to in is was for that on with as by at from it his an were are which this " +
  "be or has had first one their its new after who they two her she been other when there all during " +
  "into school time may years more most only over city some world would where later up such used many").split(" ");

function buildCorpus(seed = 20250301) {
  const r = rng(seed);
  const pick = (a) => a[Math.floor(r() * a.length)];
  const int = (lo, hi) => lo + Math.floor(r() * (hi - lo + 1));
  const out = [];
  const str = (s) => out.push(Buffer.from(s, "utf8"));
  const allPhrases = Object.values(PHRASES).flat();

  // Fixed edge cases first.
  ["", " ", "  ", "\n", "\t", "\r\n", "a", "A", "0", "é", "中", "😀", "▁", "\u0000", "\u00a0", "\ufeff",
   "\ufffd", " leading", "trailing ", "  both  ", ...SPECIALS].forEach(str);
  for (const p of allPhrases) str(p);
  for (const c of CODE) str(c);
  for (const e of EMOJI) { str(e); str(e + e + e); str("I " + e + " it"); }

  // Mixed-language sentences.
  for (let i = 0; i < 500; ++i) {
    const n = int(1, 4);
    const parts = [];
    for (let k = 0; k < n; ++k) parts.push(pick(allPhrases));
    const seps = [" ", "  ", "\n", "\n\n", "\t", " — ", "", ", "];
    str(parts.join(pick(seps)));
  }
  // Whitespace runs around words.
  const ws = [" ", "\t", "\n", "\r", "\u3000", "\u00a0"];
  for (let i = 0; i < 250; ++i) {
    let s = "";
    const n = int(1, 8);
    for (let k = 0; k < n; ++k) {
      let run = "";
      const len = int(0, 40);
      for (let m = 0; m < len; ++m) run += r() < 0.6 ? pick(ws.slice(0, 3)) : pick(ws);
      s += run + (r() < 0.8 ? pick(WORDS) : pick(allPhrases));
    }
    str(s);
  }
  // Digits and numbers.
  for (let i = 0; i < 150; ++i) {
    let d = "";
    const len = int(1, 60);
    for (let k = 0; k < len; ++k) d += String(int(0, 9));
    const forms = [d, d + "." + int(0, 999), "-" + d, "$" + d + ",00", "+1 (" + d.slice(0, 3) + ") 555-0199",
      d.replace(/(\d)(?=(\d{3})+$)/g, "$1,"), "v" + int(0, 9) + "." + int(0, 99) + "." + int(0, 999), "0x" + d];
    str(pick(forms));
  }
  // Special-token text embedded in prose and chat-formatted text.
  for (let i = 0; i < 200; ++i) {
    let s = "";
    const n = int(1, 5);
    for (let k = 0; k < n; ++k) {
      s += pick(SPECIALS) + (r() < 0.5 ? pick(WORDS) : pick(allPhrases)) + (r() < 0.3 ? "\n" : r() < 0.5 ? " " : "");
    }
    str(s);
  }
  for (let i = 0; i < 60; ++i) {
    str("<bos><start_of_turn>user\n" + pick(allPhrases) + "<end_of_turn>\n<start_of_turn>model\n" +
        pick(allPhrases) + "<end_of_turn>\n");
  }
  // Code with indentation variants.
  for (let i = 0; i < 150; ++i) {
    let c = pick(CODE);
    if (r() < 0.5) c = c.replace(/\t/g, "    ");
    if (r() < 0.3) c = c.replace(/ {4}/g, "\t\t");
    if (r() < 0.3) c = c + "\n\n\n" + pick(CODE);
    str(c);
  }
  // Emoji sequences.
  for (let i = 0; i < 150; ++i) {
    let s = "";
    const n = int(1, 8);
    for (let k = 0; k < n; ++k) s += pick(EMOJI) + (r() < 0.4 ? " " : "") + (r() < 0.3 ? pick(WORDS) : "");
    str(s);
  }
  // Long words (the heap-based BPE path) and repeated characters.
  const letters = "abcdefghijklmnopqrstuvwxyzäöüßéèçñ";
  for (let i = 0; i < 100; ++i) {
    const len = int(49, 400);
    let w = "";
    for (let k = 0; k < len; ++k) w += letters[int(0, letters.length - 1)];
    str(w);
  }
  for (let i = 0; i < 50; ++i) {
    str(pick(["a", "z", "ab", "-", "=", "中", "é", ".", "0", "😀", " ", "\t", "\n", "▁"]).repeat(int(2, 700)));
  }
  // Random code points from many blocks (some outside the vocabulary: byte fallback).
  const blocks = [[0x20, 0x7e], [0xa0, 0x24f], [0x370, 0x3ff], [0x400, 0x4ff], [0x590, 0x6ff], [0x900, 0x97f],
    [0xe00, 0xe7f], [0x1100, 0x11ff], [0x2000, 0x2bff], [0x3040, 0x30ff], [0x4e00, 0x9fff], [0xac00, 0xd7a3],
    [0xe000, 0xf8ff], [0xfb00, 0xfffd], [0x10000, 0x1ffff], [0x20000, 0x2a6df], [0xe0000, 0xe007f],
    [0xf0000, 0x10fffd], [0x0, 0x1f]];
  for (let i = 0; i < 250; ++i) {
    let s = "";
    const len = int(1, 30);
    const b = pick(blocks);
    for (let k = 0; k < len; ++k) {
      const blk = r() < 0.7 ? b : pick(blocks);
      let cp = int(blk[0], blk[1]);
      if (cp >= 0xd800 && cp <= 0xdfff) cp = 0x41;
      s += String.fromCodePoint(cp);
    }
    str(s);
  }
  // Invalid UTF-8: stray continuations, truncated sequences, overlongs,
  // encoded surrogates, bytes that never occur, mixed into valid text.
  const bad = [[0x80], [0xbf], [0xc0, 0x80], [0xc1, 0xbf], [0xe0, 0x80, 0x80], [0xed, 0xa0, 0x80], [0xf4, 0x90, 0x80, 0x80],
    [0xf5], [0xff], [0xfe], [0xe2, 0x82], [0xf0, 0x9f, 0x98], [0xc3], [0xe4, 0xb8], [0xf0, 0x9f], [0xc3, 0x28],
    [0xe2, 0x28, 0xa1], [0xf0, 0x28, 0x8c, 0xbc]];
  for (let i = 0; i < 200; ++i) {
    const parts = [];
    const n = int(1, 6);
    for (let k = 0; k < n; ++k) {
      parts.push(r() < 0.5 ? Buffer.from(pick(bad)) : Buffer.from(pick(r() < 0.5 ? WORDS : allPhrases) + (r() < 0.5 ? " " : ""), "utf8"));
    }
    out.push(Buffer.concat(parts));
  }
  // A few long documents (one BPE piece can span a whole paragraph).
  for (let i = 0; i < 12; ++i) {
    let s = "";
    const target = int(2000, 20000);
    while (s.length < target) s += pick(allPhrases) + (r() < 0.1 ? "\n\n" : " ");
    str(s);
  }
  return out;
}

module.exports = { buildCorpus, PHRASES };
