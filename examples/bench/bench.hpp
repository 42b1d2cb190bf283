// examples/bench/bench.hpp — what unicorn-bench's modes share: the options
// of a run, a grammar constraint's host side, run statistics and the table
// header, and each mode's entry point. main.cpp parses the flags, picks the
// engine and times pp and tg; batch.cpp (--batch, --invariance), image.cpp
// (--image) and speculative.cpp (--draft) hold the other modes.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "catalog.hpp"
#include "options.hpp"  // examples/generate: --products, as the generator takes it
#include "unicorn/engine.hpp"
#include "unicorn/engine/pick.hpp"
#include "unicorn/grammar/matcher.hpp"

namespace unicorn::examples::bench {

using Clock = std::chrono::steady_clock;

struct Options {
  std::string model;
  uint32_t prompt = 512, generate = 128, repetitions = 5;
  uint32_t depth = 0;  // tokens already in the context before pp and tg (llama-bench's -d)
  uint32_t batch = 0;  // streams decoding together; 0: the single-stream pp/tg runs
  bool json = false, profile = false;
  bool plan = false;  // print the recorded passes and stop
  BenchPlacement placement = BenchPlacement::Vram;
  std::optional<Format> lm_head;  // a separate LM head in this format; none: tied to the embedding
  Products products = Products::by_scheme;
  bool sample = false;  // decode with llama.cpp's default sampling instead of greedy
  std::optional<uint32_t> logprobs;  // each token's log-probability and this many alternatives (the server's logprobs)
  bool invariance = false;  // with --batch: check bits instead of timing (run_invariance)
  // Structured output: every generated token constrained by a grammar (GBNF)
  // or a JSON schema, its mask computed on the host as the server does; the
  // vocabulary is the tokenizer's (--tokenizer).
  std::string grammar, json_schema, tokenizer;
  // An image through the encoder (--mmproj, or the one beside the model), and
  // a prompt that holds it: the image's own costs beside the text's.
  std::string image, mmproj;
  // Speculative decoding: a draft model's file, the most tokens it drafts a
  // round, a forced acceptance rate (the mechanics' speed whatever the
  // weights), and a text whose tokens are the prompts (real acceptance).
  std::string draft, text;
  uint32_t draft_max = 8;
  std::optional<double> draft_accept;
};

// The grammar of --grammar or --json-schema (its matcher's state restarts
// whenever a document ends), and the host time of each token's mask.
struct Constraint {
  std::shared_ptr<const grammar::Grammar> rules;
  std::shared_ptr<const grammar::Vocabulary> vocabulary;
  std::optional<grammar::Matcher> matcher;
  std::vector<uint32_t> mask;
  std::vector<double> mask_us;  // allowed_tokens and the mask's copy to the engine, per token
  uint32_t documents = 0;       // ended, so far
  // Before a token: the mask of what may come next, to the engine.
  void before(AnyEngine& engine) {
    const auto t0 = Clock::now();
    if (!matcher || matcher->ended() || matcher->exhausted()) {
      documents += matcher.has_value();
      matcher.emplace(rules, vocabulary);
    }
    mask.assign(engine.mask_words(), 0);
    matcher->allowed_tokens(mask);
    engine.constrain(0, mask);
    mask_us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
  }
  // After it: the chosen token advances the grammar (it was allowed).
  void after(int32_t token) {
    if (!matcher->accept(token))
      throw Error("internal: token " + std::to_string(token) + " was chosen but the grammar does not allow it");
  }
};
struct Stats {
  double median = 0, min = 0, max = 0;
};
std::optional<Constraint> make_constraint(const Options& o);

Stats stats(std::vector<double> v);
std::string fmt_stats(const Stats& s);
// Whether entry `e` runs the file for these options: its placement, streams
// and LM head are the options', and the file fits it (engine/pick.hpp:
// every hyperparameter, and every tensor's type and shape).
bool matches(const Entry& e, const ModelFile& file, const Options& o);
// The lines every table starts with.
void print_header(const nlohmann::json& j);

// The modes besides pp and tg (main.cpp's run): their comments are at their code.
int run_invariance(AnyEngine& engine, const Options& o, std::mt19937& rng);
int run_batch(AnyEngine& engine, const Options& o, std::mt19937& rng, double roofline, nlohmann::json& j);
int run_image(AnyEngine& engine, const Options& o, nlohmann::json& j);
int run_speculative(AnyEngine& target, gpu::Context& ctx, const Options& o, const EngineOptions& options,
                    const SamplingParams& sampling, std::vector<int32_t> prompt, nlohmann::json& j);

}  // namespace unicorn::examples::bench
