// unicorn/layout/placement_print.hpp — the compile-time placement, printed: bytes per
// pool and tensor group against the hardware profile (`<binary> --placement`,
// the run-time witness of the placement checks), the image encoder's and the
// draft's bytes on lines of their own.
#pragma once

#include <cstdio>
#include <ostream>
#include <string>

#include "unicorn/config/deployment.hpp"
#include "unicorn/layout/budget.hpp"
#include "unicorn/layout/print.hpp"

namespace unicorn {

inline void print_placement(std::ostream& os, const DeploymentConfig& c, const Budget& b) {
  os << "placement of " << c.model.name << " (" << scheme_text(c) << ", KV cache "
     << format_name(c.scheme.kv_cache) << "; context " << c.max_context << ", "
     << c.streams << (c.streams == 1 ? " stream" : " streams") << ") on " << c.hardware.name
     << "\n";
  const auto cell = [](uint64_t v) { return v ? human_bytes(v) : std::string("-"); };
  char line[256];
  std::snprintf(line, sizeof line, "%-8s %11s %11s %11s %11s %11s %11s %11s %11s %14s\n", "pool",
                "capacity", "embeddings", "attention", "ffn", "kv cache", "activations", "total",
                "headroom", "total bytes");
  os << line;
  for (Pool p : kPools) {
    const uint64_t cap = c.hardware.capacity_of(p), need = b.need(p);
    if (!cap && !need) continue;  // a pool this machine lacks and nothing asks for
    const auto& g = b[p].group_bytes;
    const std::string capacity = cap == kUnbounded ? "unbounded" : cell(cap);
    const std::string headroom = cap == kUnbounded ? "-"
                                 : need > cap      ? "OVER " + human_bytes(need - cap)
                                                   : human_bytes(cap - need);
    std::snprintf(line, sizeof line, "%-8s %11s %11s %11s %11s %11s %11s %11s %11s %14llu\n",
                  std::string(pool_name(p)).c_str(), capacity.c_str(),
                  cell(g[size_t(Group::Embeddings)]).c_str(), cell(g[size_t(Group::Attention)]).c_str(),
                  cell(g[size_t(Group::Ffn)]).c_str(), cell(g[size_t(Group::KvCache)]).c_str(),
                  cell(g[size_t(Group::Activations)]).c_str(), cell(need).c_str(), headroom.c_str(),
                  (unsigned long long)need);
    os << line;
  }
  if (c.has_vision()) {
    const VisionBudget v = vision_budget(c);
    os << "image encoder " << c.vision.name << ": " << human_bytes(v.weights) << " of weights (counted at F16) in "
       << pool_name(c.placement.pool_of(Group::Embeddings, -1)) << ", " << human_bytes(v.activations)
       << " of activations in " << pool_name(c.placement.pool_of(Group::Activations, -1))
       << " (in the totals above)\n";
  }
  if (c.has_draft()) {
    const DeploymentConfig& d = *c.draft;
    os << "draft " << d.model.name << " (" << scheme_text(d) << "; context " << d.max_context << ", up to "
       << c.draft_max << " tokens a round):";
    const char* sep = " ";
    for (Pool p : kPools)
      if (b[p].draft_bytes) {
        os << sep << human_bytes(b[p].draft_bytes) << " in " << pool_name(p);
        sep = ", ";
      }
    os << " (its weights, KV cache and activations; in the totals above)\n";
  }
  if (c.hardware.vram_and_gtt_share_one_heap)
    os << "Vram and Gtt are one heap on this profile: together "
       << human_bytes(b.need(Pool::Vram) + b.need(Pool::Gtt)) << " of "
       << human_bytes(c.hardware.capacity_of(Pool::Vram)) << "\n";
}

}  // namespace unicorn
