// Encode throughput of the Gemma 3 tokenizer on English text, one thread.
// Not a test: prints MB/s (the target is >= 5 MB/s in Release).
// Usage: unicorn-tokenizer-bench <tokenizer.json> [english.txt ...]
// Default text: the GPL-3 and Apache-2.0 licence texts every Debian system
// ships, repeated to 8 MiB.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "unicorn/text/tokenizer.hpp"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s <tokenizer.json> [english.txt ...]\n", argv[0]);
    return 2;
  }
  std::vector<std::string> files(argv + 2, argv + argc);
  if (files.empty()) files = {"/usr/share/common-licenses/GPL-3", "/usr/share/common-licenses/Apache-2.0"};
  std::string sample;
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    if (!in) {
      std::fprintf(stderr, "cannot read %s\n", f.c_str());
      return 2;
    }
    std::stringstream ss;
    ss << in.rdbuf();
    sample += ss.str();
  }
  std::string text;
  while (text.size() < (8u << 20)) text += sample;

  const auto t0 = std::chrono::steady_clock::now();
  const auto tok = unicorn::text::Tokenizer::from_tokenizer_json(argv[1]);
  const double load_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  double best = 1e9;
  size_t tokens = 0;
  for (int rep = 0; rep < 3; ++rep) {
    const auto a = std::chrono::steady_clock::now();
    tokens = tok.encode(text).size();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count());
  }
  const double mb = static_cast<double>(text.size()) / 1e6;
  std::printf("{\"load_s\": %.2f, \"bytes\": %zu, \"tokens\": %zu, \"bytes_per_token\": %.2f, "
              "\"encode_s\": %.3f, \"encode_MB_per_s\": %.1f}\n",
              load_s, text.size(), tokens, static_cast<double>(text.size()) / static_cast<double>(tokens), best,
              mb / best);
  return 0;
}
