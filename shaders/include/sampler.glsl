// sampler.glsl — the sampler's per-row state, written by the host before each
// step: one SamplerRow per logit row (a batched decode step samples each row
// for its own stream, with that stream's penalty history and random stream).
// Mirrors unicorn::detail::SamplerState, kMaxPenaltyHistory and kMaxLogitBias (engine/step.hpp).
const uint MAX_PENALTY_HISTORY = 1024;
const uint MAX_LOGIT_BIAS = 1024;  // kMaxLogitBias (unicorn/config/sampling.hpp)
struct SamplerRow {
  float temperature;
  uint top_k;           // 0: off
  float top_p;          // 1: off
  float min_p;          // 0: off
  float repeat_penalty; // 1: off
  uint seed;
  uint counter;         // advances with every token the row's stream chooses
  uint history_len;
  uint key;             // which random stream the draw takes (the engine writes 0)
  float presence_penalty;   // 0: off
  float frequency_penalty;  // 0: off
  uint bias_len;
  uint logprobs;        // 0: none; else 1 + the alternatives wanted (logprobs.comp)
  uint target;          // whose log-probability logprobs.comp gives; ~0u: the chosen token's
  uint masked;          // 1: tokens outside the row's stream's allowed-token mask are banned (logits_max.comp)
  uint history[MAX_PENALTY_HISTORY];        // distinct recent token ids the penalties apply to
  uint history_count[MAX_PENALTY_HISTORY];  // how often each occurs in the window
  uint bias_id[MAX_LOGIT_BIAS];             // distinct token ids with a logit bias
  float bias[MAX_LOGIT_BIAS];               // added to their logits; <= -100 bans the token
};
layout(binding = SAMPLER_BINDING) readonly buffer Params { SamplerRow sampling[]; };
