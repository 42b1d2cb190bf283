// unicorn/engine/profile.hpp — what the recorded passes run: their plan as
// text (unicorn-bench --plan) and device time per kernel, from timestamp
// queries between dispatches (unicorn-bench --profile).
#pragma once

#include "unicorn/engine/core.hpp"

namespace unicorn::detail {

UNICORN_DECL EngineCore::Profile EngineCore::profile(std::span<const int32_t> tokens) {
  check_tokens(0, tokens);
  const Graph& g = tokens.size() == 1 ? *decode_ : *prefill_;
  return profile(g, [&] { write_step(*g.lane, chunk_rows(0, tokens, uint32_t(tokens.size()) - 1, 1), 1); });
}

UNICORN_DECL EngineCore::Profile EngineCore::profile_batch(uint32_t n) {
  if (!batch_) throw Error("profile: this engine has one stream and no batched pass");
  std::vector<StreamToken> batch;
  for (uint32_t s = 0; s < n; ++s) batch.push_back({s, 5});
  check_batch(batch);
  const Graph& g = batch_pass(n);
  return profile(g, [&] { write_step(*g.lane, batch); });
}

UNICORN_DECL std::string EngineCore::plan() const {
  std::string out = "each dispatch: kernel [workgroups x, y, z], | where a barrier follows, its constants\n";
  const auto pass = [&](const char* name, const std::optional<Graph>& g) {
    if (!g) return;
    out += "pass " + std::string(name) + ": " + std::to_string(g->dispatches.size()) + " dispatches\n";
    for (const gpu::Dispatch& d : g->dispatches)
      out += "  " + d.kernel->name() + " [" + std::to_string(d.groups[0]) + "," + std::to_string(d.groups[1]) + "," +
             std::to_string(d.groups[2]) + "]" + (d.barrier_after ? " |" : "") + "  " + d.kernel->constants() + "\n";
  };
  pass("prefill", prefill_);
  pass("decode", decode_);
  pass("batch", batch_);
  pass("batch (small steps)", batch_small_);
  pass("verify", verify_);
  return out;
}

template <class WriteStep>
UNICORN_DECL EngineCore::Profile EngineCore::profile(const Graph& g, WriteStep&& write) {
  const uint32_t n = uint32_t(g.dispatches.size());
  gpu::Timestamps ts(ctx_, n + 1);
  if (prefill_in_flight()) throw Error("profile: a prefill pass is in flight");
  write();
  g.lane->stream.run_once([&](vk::CommandBuffer cb) {
    ts.reset(cb);
    ts.write(cb, 0);
    for (uint32_t i = 0; i < n; ++i) {
      gpu::record(cb, g.dispatches[i], g.dispatches[i].barrier_after);
      ts.write(cb, i + 1);
    }
  });
  const auto ns = ts.read_ns(n + 1);
  Profile out;
  for (uint32_t i = 0; i < n; ++i) {
    const gpu::Dispatch& d = g.dispatches[i];
    const std::string& name = d.kernel->name();
    const double dt = double(ns[i + 1] - ns[i]);
    out.dispatches.push_back({name, dt * 1e-3, {d.groups[0], d.groups[1], d.groups[2]}, d.barrier_after});
    auto it = std::find_if(out.kernels.begin(), out.kernels.end(),
                           [&](const auto& k) { return k.kernel == name; });
    if (it == out.kernels.end()) it = out.kernels.insert(out.kernels.end(), KernelTime{name});
    it->ms += dt * 1e-6;
    it->dispatches++;
  }
  std::sort(out.kernels.begin(), out.kernels.end(),
            [](const auto& a, const auto& b) { return a.ms > b.ms; });
  return out;
}

}  // namespace unicorn::detail
