// unicorn/quant/scheme.hpp — which block format each tensor role uses.
//
// A scheme is a structural value. Norm weights are always F32 (they are tiny and
// llama.cpp writes them so). The LM head is tied to the embedding (Gemma 3): by
// default it reads the embedding tensor in the embedding's format; a scheme may
// instead keep a quantized copy for the output projection only
// (`with_lm_head`), made from the embedding at load time — the LM head is read
// whole for every token, the embedding only row by row.
#pragma once

#include "unicorn/quant/formats.hpp"

namespace unicorn {

struct Scheme {
  Format embedding;   // token_embd: gathered per token, and read whole as the LM head
  Format attention;   // attn_q, attn_k, attn_v, attn_output
  Format ffn;         // ffn_gate, ffn_up, ffn_down
  Format kv_cache;    // F16 by default; F32 for reference checks
  Format lm_head = embedding;  // the output projection; another format: a separate copy

  constexpr bool separate_lm_head() const { return lm_head != embedding; }
  // This scheme with the LM head read from a `format` copy of the embedding.
  constexpr Scheme with_lm_head(Format format) const {
    Scheme s = *this;
    s.lm_head = format;
    return s;
  }
  constexpr bool operator==(const Scheme&) const = default;
};

namespace schemes {
// Every weight in one format, F16 KV cache: llama.cpp's `--outtype` files.
constexpr Scheme all(Format f, Format kv = Format::F16) { return {f, f, f, kv}; }
inline constexpr Scheme kF32 = all(Format::F32, Format::F32);  // reference checks
inline constexpr Scheme kF16 = all(Format::F16);
inline constexpr Scheme kBF16 = all(Format::BF16);
inline constexpr Scheme kQ8_0 = all(Format::Q8_0);
inline constexpr Scheme kQ4_0 = all(Format::Q4_0);
// All matrices in one K-quant (Q4_K, Q6_K: llama.cpp's Q4_K_M mix; Q5_K: Q5_K_M's); for
// kernel and model tests. Only from GGUF files: the loader does not quantize to them.
inline constexpr Scheme kQ4_K = all(Format::Q4_K);
inline constexpr Scheme kQ5_K = all(Format::Q5_K);
inline constexpr Scheme kQ6_K = all(Format::Q6_K);
// Google's official QAT GGUF releases: Q4_0 weights, F16 embedding.
inline constexpr Scheme kQ4_0_QAT{Format::F16, Format::Q4_0, Format::Q4_0, Format::F16};
// The same file, with the LM head from a Q8_0 copy of the F16 embedding.
inline constexpr Scheme kQ4_0_QAT_Q8Head = kQ4_0_QAT.with_lm_head(Format::Q8_0);
}  // namespace schemes

constexpr bool is_kv_format(Format f) { return f == Format::F16 || f == Format::F32; }

}  // namespace unicorn
