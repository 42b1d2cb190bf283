// What a program binary's own translation unit tells the program code that a
// build compiles once for every deployment (examples/*/program.cpp): the
// binary's name and defaults, from unicorn_add_generator / unicorn_add_server
// and the target's compile definitions.
#pragma once

namespace unicorn::examples {

struct ProgramInfo {
  const char* name = "";                        // the binary's name, for messages
  const char* default_model = nullptr;          // run with no --model (the built-in demo model), or none
  const char* default_model_about = nullptr;    // what that model is, said when it runs
  const char* default_tokenizer = nullptr;      // its tokenizer.json
  bool start_interactive = false;               // start in the multi-turn chat (unicorn-chat)
};

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
