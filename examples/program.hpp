// What a program binary's own translation unit tells the program code that a
// build compiles once for every deployment (examples/*/program.cpp): the
// binary's name and defaults, from unicorn_add_generator / unicorn_add_server
// and the target's compile definitions.
#pragma once

#include <algorithm>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace unicorn::examples {

struct ProgramInfo {
  const char* name = "";                        // the binary's name, for messages
  const char* default_model = nullptr;          // run with no --model (the built-in demo model), or none
  const char* default_model_about = nullptr;    // what that model is, said when it runs
  const char* default_tokenizer = nullptr;      // its tokenizer.json
  bool start_interactive = false;               // start in the multi-turn chat (unicorn-chat)
};

// llama.cpp's multi-letter single-dash spellings (-cnv, -sys, -ngl, -np) as
// the long options they stand for. CLI11 reads one dash and several letters as
// one-letter flags in a row (-cnv as -c nv), so they are rewritten before
// parsing. Returns the arguments after the program's name, last to first, as
// CLI11's App::parse(std::vector<std::string>&) takes them.
using Spellings = std::vector<std::pair<std::string_view, std::string_view>>;
inline std::vector<std::string> llama_cpp_args(int argc, char** argv, const Spellings& spellings) {
  std::vector<std::string> args(argv + 1, argv + argc);
  for (auto& a : args)
    for (const auto& [from, to] : spellings)
      if (a == from) a = to;
  std::reverse(args.begin(), args.end());
  return args;
}

}  // namespace unicorn::examples

#ifdef UNICORN_BINARY_NAME
namespace {
// This binary's ProgramInfo, from its compile definitions (a binary's own
// translation unit only: the macros differ between binaries).
unicorn::examples::ProgramInfo this_program() {
  unicorn::examples::ProgramInfo p;
  p.name = UNICORN_BINARY_NAME;
#ifdef UNICORN_DEFAULT_MODEL
  p.default_model = UNICORN_DEFAULT_MODEL;
  p.default_model_about = UNICORN_DEFAULT_MODEL_ABOUT;
  p.default_tokenizer = UNICORN_DEFAULT_TOKENIZER;
#endif
#ifdef UNICORN_START_INTERACTIVE
  p.start_interactive = true;
#endif
  return p;
}
}  // namespace
#endif
