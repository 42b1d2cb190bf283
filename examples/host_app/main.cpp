// The README's host app: a Gemma 3 engine in a C++ program, through the public
// API only. `unicorn-host-app MODEL [TOKENIZER]` (the demo model carries no
// vocabulary: give it models/tokenizer.json). A test runs it (tests/cli).
#include <cstdio>
#include <unicorn/gemma3_demo.hpp>

int main(int argc, char** argv) try {
  if (argc < 2) return std::fprintf(stderr, "usage: %s MODEL [TOKENIZER]\n", argv[0]), 2;
  unicorn::Gemma3_Demo engine;  // compiled for this model: layout, kernels, passes
  engine.load(argv[1], {.tokenizer = argc > 2 ? argv[2] : ""});
  const auto print = [](std::string_view text) { std::fwrite(text.data(), 1, text.size(), stdout); };

  engine.generate("And it came to pass", {.max_tokens = 16}, print);  // greedy
  std::puts("");

  auto chat = engine.chat("You speak like the King James Bible.");  // keeps its KV cache across turns
  for (const char* question : {"Who is the shepherd?", "And what shall he give?"}) {
    chat.answer(question, {.max_tokens = 16, .sampling = {.temperature = 0.8f, .seed = 7}}, print);
    std::puts("");
  }
} catch (const std::exception& e) {
  std::fprintf(stderr, "error: %s\n", e.what());
  return 1;
}
