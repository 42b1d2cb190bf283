// check_finite.comp (--check-tensors): the first NaN or Inf in every weight
// format.
#include "kernel_harness.hpp"

namespace unicorn {
namespace {

// --check-tensors' scan: the lowest index of a NaN or Inf (times two, plus one
// for NaN) in F32, F16 and BF16 values and in a block format's scales, which
// follow its quants; quants that look like NaN as f16 are not values and are
// ignored. A grid smaller than the values exercises the invocations' stride.
TEST(CheckFinite, FirstBadValueInEveryFormat) {
  using Kind = kernels::FiniteCheck;
  struct Case {
    Kind kind;
    uint32_t bytes_per_value;
    uint32_t quant_halves;  // BlockScales: uint16s of quants per block before the scales
    const char* name;
  };
  const Case cases[] = {{Kind::F32, 4, 0, "F32"}, {Kind::F16, 2, 0, "F16"}, {Kind::BF16, 2, 0, "BF16"},
                        {Kind::BlockScales, 2, 16, "Q8_0 scales"}, {Kind::BlockScales, 2, 8, "Q4_0 scales"}};
  const uint32_t count = 1000;
  for (const Case& c : cases)
    for (const auto& planted : std::vector<std::vector<std::pair<uint32_t, bool>>>{
             {}, {{997, true}}, {{3, false}, {500, true}}, {{0, true}, {1, false}}, {{640, false}, {641, true}}}) {
      SCOPED_TRACE(std::string(c.name) + ", " + std::to_string(planted.size()) + " planted");
      const uint32_t first_half = c.kind == Kind::BlockScales ? count * c.quant_halves : 0;
      HostBuffer values(first_half * 2 + uint64_t(count) * c.bytes_per_value);
      auto halves = values.as<uint16_t>();
      // Quants: every pattern, NaN-looking ones included; values: finite, from
      // a generator of this test's own (the shared one feeds the other cases).
      for (uint32_t i = 0; i < first_half; ++i) halves[i] = uint16_t(0x7c00 + i % 0x400);
      std::mt19937 own(uint32_t(c.kind) * 7919u + uint32_t(planted.size()));
      std::uniform_real_distribution<float> u(-1.f, 1.f);
      std::vector<float> finite(count);
      for (float& x : finite) x = u(own);
      for (uint32_t i = 0; i < count; ++i) {
        if (c.kind == Kind::F32) values.as<float>()[i] = finite[i];
        else if (c.kind == Kind::BF16) halves[i] = tools::to_bf16_bits(finite[i]);
        else halves[first_half + i] = tools::to_f16_bits(finite[i]);
      }
      uint32_t expect = 0xffffffffu;
      for (const auto& [at, nan] : planted) {
        if (c.kind == Kind::F32) values.as<float>()[at] = nan ? std::nanf("") : -INFINITY;
        else if (c.kind == Kind::BF16) halves[at] = nan ? 0x7fc1 : 0xff80;
        else halves[first_half + at] = nan ? 0x7e01 : 0x7c00;
        expect = std::min(expect, at * 2 + (nan ? 1u : 0u));
      }
      HostBuffer result(8);
      result.poison();  // 0xffffffff: nothing found
      run("check_finite", kernels::kCheckFiniteBindings, kernels::CheckFinite{uint32_t(c.kind)},
          {&values, &result}, {count, first_half, 1}, {3, 1, 1});
      EXPECT_EQ(result.as<uint32_t>()[1], expect);
      EXPECT_EQ(result.as<uint32_t>()[0], 0xffffffffu) << "another part's slot was written";
    }
}

}  // namespace
}  // namespace unicorn
