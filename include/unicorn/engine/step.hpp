// unicorn/engine/step.hpp — what one submission carries between host and
// device: the streams' tokens a caller hands a pass (StreamToken, PromptChunk,
// PromptImage) and the host-visible rows the shaders read (StepHeader and StepRow mirror
// shaders/include/step.glsl; SamplerState mirrors shaders/include/sampler.glsl).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "unicorn/config/sampling.hpp"

namespace unicorn::gpu {
struct Buffer;  // unicorn/gpu/memory.hpp (not included: this header stays free of Vulkan's)
}

namespace unicorn {

// One stream's token in a batched decode step.
struct StreamToken {
  uint32_t stream;
  int32_t token;
};

// An image in a stream's prompt: its soft tokens (the image encoder's output)
// are the embeddings of the stream's rows at positions [pos, pos + rows),
// taken as they are (Gemma 3 scales only text embeddings by sqrt(hidden)), and
// those rows see each other whatever their order (attention inside one image
// is bidirectional), causal towards everything else. The prompt holds the
// image-token id at those positions (the stream keeps it as its token there).
// An image goes through one prefill pass whole: the engine's chunking keeps
// it in one chunk, and refuses one longer than a chunk.
struct PromptImage {
  uint32_t pos;                    // the stream position of its first soft token
  uint32_t rows;                   // its soft tokens (VisionDims::tokens_per_image)
  const gpu::Buffer* soft_tokens;  // float32 [rows, hidden] from `offset` bytes on; outlives the call
  uint64_t offset = 0;             // bytes
};

// One stream's run of prompt tokens in a prefill pass that may hold several
// streams' (EngineCore::prefill(std::span<const PromptChunk>)).
struct PromptChunk {
  uint32_t stream;
  std::span<const int32_t> tokens;  // fed from the stream's position on
  bool ends_prompt = false;         // choose the stream's next token from the last one's logits
  // The images of the stream's prompt, by stream position: those whose
  // positions this chunk feeds must lie in it whole; the others are ignored,
  // so a prompt's chunks may all pass the prompt's whole list.
  std::span<const PromptImage> images = {};
};

// A chosen token's log-probability and the most likely tokens' (largest
// first), as SamplingParams::logprobs and top_logprobs ask.
struct TokenLogprobs {
  struct Alternative {
    int32_t token;
    float logprob;
    bool operator==(const Alternative&) const = default;
  };
  float logprob = 0.0f;
  std::vector<Alternative> top;
};

}  // namespace unicorn

namespace unicorn::detail {

// Mirrors shaders/include/step.glsl: the header, then one StepRow per token.
struct StepHeader {
  uint32_t n_tokens;
  uint32_t logit_count;
};
struct StepRow {
  uint32_t token;  // kEmbeddedRow: an image's soft token, its x row written before the pass
  uint32_t pos;
  uint32_t stream;
  uint32_t logit_source;  // in rows i < logit_count: the token row logit row i takes
  uint32_t sees_ahead = 0;  // positions after its own it also attends to (0: causal; an image's rows: to its end)
  // No token id: embed.comp writes nothing into this row's x (no embedding
  // part holds the id), whose embedding the host copied there (an image's soft token).
  static constexpr uint32_t kEmbeddedRow = 0xffffffffu;
};

// Mirrors SamplerRow in shaders/include/sampler.glsl: one per logit row, each
// followed by its history (kMaxPenaltyHistory distinct ids, then as many
// counts) and its logit biases (kMaxLogitBias ids, then as many biases).
struct SamplerState {
  float temperature;
  uint32_t top_k;
  float top_p;
  float min_p;
  float repeat_penalty;
  uint32_t seed;
  uint32_t counter;
  uint32_t history_len;
  uint32_t key;  // which random stream the draw takes (the engine writes 0: see write_sampler)
  float presence_penalty;
  float frequency_penalty;
  uint32_t bias_len;  // logit biases after the history (kMaxLogitBias ids, then as many biases)
  uint32_t logprobs;  // 0: none; else 1 + the alternatives wanted (shaders/logprobs.comp)
  uint32_t target = kNoTarget;  // the token whose log-probability is wanted; kNoTarget: the chosen one
  uint32_t masked = 0;  // 1: only the tokens the stream's allowed-token mask sets may be chosen
  static constexpr uint32_t kNoTarget = 0xffffffffu;
};
inline constexpr uint32_t kMaxPenaltyHistory = kMaxRepeatLastN;  // unicorn/config/sampling.hpp
inline constexpr uint64_t kSamplerBiasOffset = sizeof(SamplerState) + 8ull * kMaxPenaltyHistory;
inline constexpr uint64_t kSamplerRowBytes = kSamplerBiasOffset + 8ull * kMaxLogitBias;
// shaders/logprobs.comp's row: the chosen token's log-probability, the
// alternatives' count, then (id bits, log-probability) per alternative.
inline constexpr uint32_t kLogprobRowFloats = 2 + 2 * kMaxTopLogprobs;
// An allowed-token mask (EngineCore::constrain): one bit per token of a
// vocabulary of `vocab`, token i in word i / 32, bit i % 32 (LSB first).
constexpr uint32_t token_mask_words(uint32_t vocab) { return (vocab + 31) / 32; }

}  // namespace unicorn::detail
