// unicorn/sampling.hpp — how the next token is chosen (on the GPU, shaders/sample.comp).
#pragma once

#include <cstdint>

namespace unicorn {

// Defaults are greedy decoding. Applied in Hugging Face's order: repetition
// penalty, temperature, top-k, top-p, min-p, then a seeded draw.
struct SamplingParams {
  float temperature = 0.0f;     // 0: greedy
  uint32_t top_k = 0;           // 0: off
  float top_p = 1.0f;           // 1: off
  float min_p = 0.0f;           // 0: off; keep tokens with p >= min_p * p(most likely)
  float repeat_penalty = 1.0f;  // 1: off; applies to the last repeat_last_n tokens
  uint32_t repeat_last_n = 64;
  uint32_t seed = 0;            // same seed, same prompt, same device: same tokens
};

}  // namespace unicorn
