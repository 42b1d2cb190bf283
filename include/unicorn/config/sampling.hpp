// unicorn/config/sampling.hpp — how the next token is chosen (on the GPU, shaders/sample.comp).
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace unicorn {

// Defaults are greedy decoding. Applied in llama.cpp's order: the logit
// biases, then Hugging Face's: penalties (repetition, then OpenAI's frequency
// and presence), temperature, top-k, top-p, min-p, then a seeded draw. The penalties look at the last
// repeat_last_n tokens of the stream, prompt included (as llama.cpp's do).
struct SamplingParams {
  float temperature = 0.0f;     // 0: greedy
  uint32_t top_k = 0;           // 0: off
  float top_p = 1.0f;           // 1: off
  float min_p = 0.0f;           // 0: off; keep tokens with p >= min_p * p(most likely)
  float repeat_penalty = 1.0f;  // 1: off; divides positive logits, multiplies negative ones
  uint32_t repeat_last_n = 64;
  uint32_t seed = 0;            // same seed, same prompt, same device: same tokens, on any stream
  float presence_penalty = 0.0f;   // 0: off; subtracted once from each token in the window
  float frequency_penalty = 0.0f;  // 0: off; subtracted per occurrence in the window
  // OpenAI's logit_bias: (token id, bias) added to the token's logit; a bias
  // of -100 or less bans the token (its logit becomes -inf). Distinct ids.
  std::vector<std::pair<int32_t, float>> logit_bias;
  // OpenAI's logprobs: each chosen token's log-probability, and the
  // top_logprobs most likely tokens' (EngineCore::logprobs). Of the logits
  // the sampler chose from (biases and penalties applied), before the
  // temperature; computed on the GPU, only those numbers read back.
  bool logprobs = false;
  uint32_t top_logprobs = 0;  // at most kMaxTopLogprobs

  bool operator==(const SamplingParams&) const = default;
};

// The longest penalty window (repeat_last_n) the sampler's history holds.
inline constexpr uint32_t kMaxRepeatLastN = 1024;
// The most alternatives a token's log-probabilities name (OpenAI's limit).
inline constexpr uint32_t kMaxTopLogprobs = 20;
// The most logit biases one stream's sampler holds.
inline constexpr uint32_t kMaxLogitBias = 1024;

// Whether the biases are ids of a vocabulary of `vocab` tokens, distinct,
// finite and at most kMaxLogitBias; the reason they are not, or empty.
inline std::string logit_bias_problem(const std::vector<std::pair<int32_t, float>>& bias, uint32_t vocab) {
  if (bias.size() > kMaxLogitBias)
    return "logit_bias: " + std::to_string(bias.size()) + " tokens; at most " + std::to_string(kMaxLogitBias);
  for (size_t i = 0; i < bias.size(); ++i) {
    const auto [id, value] = bias[i];
    if (id < 0 || uint32_t(id) >= vocab)
      return "logit_bias: token " + std::to_string(id) + " is outside the vocabulary [0, " + std::to_string(vocab) + ")";
    if (!std::isfinite(value)) return "logit_bias: token " + std::to_string(id) + "'s bias is not a finite number";
    for (size_t j = 0; j < i; ++j)
      if (bias[j].first == id) return "logit_bias: token " + std::to_string(id) + " is biased twice";
  }
  return "";
}

// The values the sampler takes (the engine refuses others with
// sampling_params_rule's sentence): finite numbers, temperature >= 0,
// 0 < top-p <= 1, 0 <= min-p <= 1, repeat penalty > 0, and a penalty window
// the history buffer holds.
inline bool sampling_params_valid(const SamplingParams& p, uint32_t max_history = kMaxRepeatLastN) {
  return std::isfinite(p.temperature) && p.temperature >= 0 && p.top_p > 0 && p.top_p <= 1 && p.min_p >= 0 &&
         p.min_p <= 1 && std::isfinite(p.repeat_penalty) && p.repeat_penalty > 0 && p.repeat_last_n <= max_history &&
         std::isfinite(p.presence_penalty) && std::isfinite(p.frequency_penalty) &&
         p.top_logprobs <= kMaxTopLogprobs && (p.logprobs || p.top_logprobs == 0);
}
inline std::string sampling_params_rule(uint32_t max_history = kMaxRepeatLastN) {
  return "sampling: a finite temperature >= 0, 0 < top-p <= 1, 0 <= min-p <= 1, a finite repeat penalty > 0, "
         "finite presence and frequency penalties, repeat-last-n <= " + std::to_string(max_history) +
         " and top-logprobs <= " + std::to_string(kMaxTopLogprobs) + " (with logprobs on) are required";
}

}  // namespace unicorn
