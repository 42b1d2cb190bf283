// geglu.comp against the CPU reference: the f32 and fp16 outputs and the sum of
// up's slices.
#include "kernel_harness.hpp"

namespace unicorn {
namespace {

class Geglu : public ::testing::TestWithParam<uint32_t> {};

TEST_P(Geglu, MatchesReference) {
  const uint32_t F = GetParam(), n = 3;
  const auto gs = random_floats(size_t(n + 1) * F, -6.f, 6.f);  // [n + 1, F]; row n spare
  const auto us = random_floats(size_t(n + 1) * F);
  HostBuffer g(gs.size() * 4), u(us.size() * 4);
  g.fill<float>(gs);
  u.fill<float>(us);
  const auto step = step_buffer({n, 0, 0, 0});
  run("geglu", kernels::kGegluBindings, kernels::Geglu{F, 0}, {&g, &u, &step, &g}, {},
      {groups(kernels::geglu_threads(F), 64), n, 1});
  auto want = reference::geglu(std::span(gs).first(n * F), std::span(us).first(n * F));
  want.insert(want.end(), gs.end() - F, gs.end());
  EXPECT_TRUE(compare("geglu F=" + std::to_string(F) + " n=3", g.as<float>(), want, F, 1e-5));
}

// HALF_OUT: the product goes to binding 3 as the down projection's fp16
// operand, saturated at 65504 (element 1: 300 * 300 -> 65504, not inf); gate
// is left as it was, and the operand's spare row stays poison.
TEST_P(Geglu, WritesTheFp16Operand) {
  const uint32_t F = GetParam(), n = 3;
  auto gs = random_floats(size_t(n) * F, -6.f, 6.f);
  auto us = random_floats(size_t(n) * F);
  gs[1] = 300.f, us[1] = 300.f;
  HostBuffer g(gs.size() * 4), u(us.size() * 4), out(size_t(n + 1) * F * 2);
  g.fill<float>(gs);
  u.fill<float>(us);
  const auto step = step_buffer({n, 0, 0, 0});
  run("geglu", kernels::kGegluBindings, kernels::Geglu{F, 1}, {&g, &u, &step, &out}, {},
      {groups(kernels::geglu_threads(F), 64), n, 1});
  auto want = reference::geglu(gs, us);
  want[1] = 65504.0;
  want.resize(size_t(n + 1) * F, NAN);
  const auto got = widen_fp16(out.as<_Float16>(), want.size());
  EXPECT_EQ(got[1], 65504.f);
  want[1] = NAN;  // checked; keep the saturated value out of the scale
  auto rest = got;
  rest[1] = std::bit_cast<float>(0xffffffffu);
  EXPECT_TRUE(compare("geglu HALF_OUT F=" + std::to_string(F), rest, want, F, kFp16OutputTol));
  std::vector<double> gate_kept(gs.begin(), gs.end());
  EXPECT_TRUE(compare("geglu HALF_OUT gate", g.as<float>(), gate_kept, F, 0));
}
// UP_SLICES: up as two partial sums (an up projection split over K), added
// in order before the product; the fp16 operand as the prefill writes it.
TEST_P(Geglu, AddsTheSlicesOfUp) {
  const uint32_t F = GetParam(), n = 3, slice = n * F;
  const auto gs = random_floats(size_t(n) * F, -6.f, 6.f);
  const auto parts = random_floats(2 * size_t(slice));  // [2][n, F]
  std::vector<float> us(parts.begin(), parts.begin() + slice);
  for (size_t i = 0; i < us.size(); ++i) us[i] += parts[slice + i];
  HostBuffer g(gs.size() * 4), u(parts.size() * 4), out(size_t(n) * F * 2);
  g.fill<float>(gs);
  u.fill<float>(parts);
  const auto step = step_buffer({n, 0, 0, 0});
  run("geglu", kernels::kGegluBindings, kernels::Geglu{F, 1, 2, slice}, {&g, &u, &step, &out}, {},
      {groups(kernels::geglu_threads(F), 64), n, 1});
  const auto want = reference::geglu(gs, us);
  EXPECT_TRUE(compare("geglu UP_SLICES=2 F=" + std::to_string(F), widen_fp16(out.as<_Float16>(), want.size()),
                      want, F, kFp16OutputTol));
}
INSTANTIATE_TEST_SUITE_P(Kernel, Geglu, ::testing::Values(192u, 100u, 98u),  // 98: one element a thread
                         [](const auto& info) { return "geglu_F" + std::to_string(info.param); });

}  // namespace
}  // namespace unicorn
