// unicorn/layout/print.hpp — the compile-time layout, printed (the run-time
// witness of every compile-time fact: `<binary> --layout`).
#pragma once

#include <cstdio>
#include <ostream>
#include <string>

#include "unicorn/base/linkage.hpp"
#include "unicorn/config/deployment.hpp"
#include "unicorn/layout/layout.hpp"

namespace unicorn {

std::string human_bytes(uint64_t b);

// The weight formats of a deployment in words: "embedding Q6_K, attention
// Q4_K, ffn Q4_K; attn_v and ffn_down Q6_K in 13 of 34 layers"; a mix's
// attn_output, attn_v and ffn_down where they differ ("..., attn_output Q4_K").
std::string scheme_text(const DeploymentConfig& c);

void print_layout(std::ostream& os, const DeploymentConfig& c, const LayoutView& L);

}  // namespace unicorn

// The code of what is declared above: here when header-only, else compiled
// once, in unicorn/separate_compilation.hpp's translation unit (base/linkage.hpp).
#if UNICORN_DEFINE_HERE

namespace unicorn {

UNICORN_DECL std::string human_bytes(uint64_t b) {
  char buf[32];
  if (b >= (uint64_t(1) << 30)) std::snprintf(buf, sizeof buf, "%.2f GiB", b / 1073741824.0);
  else if (b >= (uint64_t(1) << 20)) std::snprintf(buf, sizeof buf, "%.1f MiB", b / 1048576.0);
  else std::snprintf(buf, sizeof buf, "%.1f KiB", b / 1024.0);
  return buf;
}

UNICORN_DECL std::string scheme_text(const DeploymentConfig& c) {
  const Scheme& s = c.scheme;
  std::string t = "embedding " + std::string(format_name(s.embedding)) + ", attention " +
                  std::string(format_name(s.attention)) + ", ffn " + std::string(format_name(s.ffn));
  if (s.separate_lm_head()) t += ", LM head " + std::string(format_name(s.lm_head));
  if (s.attn_output != s.attention) t += ", attn_output " + std::string(format_name(s.attn_output));
  if (s.attn_v != s.attention) t += ", attn_v " + std::string(format_name(s.attn_v));
  if (s.ffn_down != s.ffn) t += ", ffn_down " + std::string(format_name(s.ffn_down));
  const uint32_t n = c.model.layers;
  const auto in_layers = [&](const MoreBitsLayers& m) {
    return " in " + std::to_string(m.in(mix_shape(c.model))) + " of " + std::to_string(n) + " layers";
  };
  // Rules that pick no layer of this model (IQ4_XS's attn_v on a 4B) say nothing.
  const bool v = s.attn_v_more_bits != s.attn_v && s.attn_v_layers.in(mix_shape(c.model)) > 0,
             d = s.ffn_down_more_bits != s.ffn_down && s.ffn_down_layers.in(mix_shape(c.model)) > 0;
  if (v && d && s.attn_v_layers == s.ffn_down_layers) {
    t += "; attn_v " + std::string(format_name(s.attn_v_more_bits)) + " and ffn_down " +
         std::string(format_name(s.ffn_down_more_bits)) + in_layers(s.attn_v_layers);
  } else {
    if (v) t += "; attn_v " + std::string(format_name(s.attn_v_more_bits)) + in_layers(s.attn_v_layers);
    if (d) t += "; ffn_down " + std::string(format_name(s.ffn_down_more_bits)) + in_layers(s.ffn_down_layers);
  }
  return t;
}

UNICORN_DECL void print_layout(std::ostream& os, const DeploymentConfig& c, const LayoutView& L) {
  const auto& m = c.model;
  uint64_t weights = 0, kv = 0, acts = 0;
  for (auto b : L.weight_slab_bytes) weights += b;
  for (auto b : L.kv_slab_bytes) kv += b;
  for (const auto& a : L.activations) acts += a.bytes;
  os << "model " << m.name << ": hidden " << m.hidden << ", " << m.layers << " layers ("
     << m.global_layers() << " global, 1 in " << m.global_every << "), heads " << m.heads << "/"
     << m.kv_heads << " x " << m.head_dim << ", ffn " << m.ffn << ", vocab " << m.vocab
     << ", window " << m.sliding_window << "\n";
  os << "scheme: " << scheme_text(c) << ", KV cache "
     << format_name(c.scheme.kv_cache) << "; context " << c.max_context;
  if (c.context_by_default() < c.max_context) os << " (" << c.context_by_default() << " by default)";
  os << ", prefill chunk " << c.prefill_chunk << "\n";
  os << "weights " << human_bytes(weights) << " in " << L.weight_slab_bytes.size()
     << " slabs; KV cache " << human_bytes(kv) << " in " << L.kv_slab_bytes.size()
     << " slabs (local layers keep " << L.local_kv_slots << " positions, global "
     << L.global_kv_slots << "); activations " << human_bytes(acts) << "\n\n";
  char line[160];
  std::snprintf(line, sizeof line, "%-32s %-6s %12s %7s %5s %-7s %12s %10s\n", "tensor", "format",
                "rows x cols", "", "slab", "pool", "offset", "bytes");
  os << line;
  for (const auto& t : L.tensors) {
    const auto parts = L.parts_of(t);
    for (size_t i = 0; i < parts.size(); ++i) {
      const auto& p = parts[i];
      const std::string name = (t.arena == Arena::KvCache ? "kv:" : "") + t.gguf_name() +
                               (parts.size() > 1 ? "#" + std::to_string(i) : "");
      std::snprintf(line, sizeof line, "%-32s %-6s %12llu x %-6llu %5u %-7s %12llu %10s\n",
                    name.c_str(), std::string(format_name(t.format)).c_str(),
                    (unsigned long long)p.rows, (unsigned long long)t.cols, p.slab,
                    std::string(pool_name(t.pool)).c_str(), (unsigned long long)p.offset,
                    human_bytes(p.bytes).c_str());
      os << line;
    }
  }
  os << "\nactivations (float32 but the fp16 operands, per prefill chunk; in " << pool_name(L.activation_pool) << "):\n";
  for (size_t a = 0; a < L.activations.size(); ++a) {
    std::snprintf(line, sizeof line, "  %-11s %6llu x %-7llu %10s\n",
                  std::string(kActNames[a]).c_str(), (unsigned long long)L.activations[a].rows,
                  (unsigned long long)L.activations[a].row_elems,
                  human_bytes(L.activations[a].bytes).c_str());
    os << line;
  }
}

}  // namespace unicorn

#endif  // UNICORN_DEFINE_HERE
