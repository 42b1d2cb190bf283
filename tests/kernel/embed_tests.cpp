// embed.comp: the token embedding rows of every weight format against the CPU
// reference.
#include "kernel_harness.hpp"

namespace unicorn {
namespace {

struct EmbedCase {
  Format format;
  uint32_t H;
  std::string name() const {
    return variant("embed", format) + " H=" + std::to_string(H);
  }
};
class Embed : public ::testing::TestWithParam<EmbedCase> {};

// A 50-row table in two parts, rows [20, 50) dispatched first: it must write
// exactly the tokens whose id falls in it; then rows [0, 20) fill in the rest.
TEST_P(Embed, MatchesReference) {
  const EmbedCase& c = GetParam();
  const uint32_t V = 50, split = 20;
  const std::vector<uint32_t> tokens = {3, 49, 20, 19, 0, 27, 27, 41, 5};
  const uint32_t n = uint32_t(tokens.size());
  const auto bytes = random_weights(c.format, V, c.H);
  const auto table = reference::dequantize(c.format, bytes, size_t(V) * c.H);  // [V, H]
  const float scale = std::sqrt(float(c.H));
  const auto ref = reference::embed(table, c.H, tokens, scale);  // [n, H]
  HostBuffer x(size_t(n + 1) * c.H * 4);  // one spare row past the chunk
  const auto step = step_buffer({n, 0, 0, 0}, tokens);
  const kernels::Embed spec{c.H, scale};
  std::vector<double> want(size_t(n + 1) * c.H, NAN);
  const uint32_t begins[] = {split, 0}, rows[] = {V - split, split};
  const uint64_t rb = row_bytes(c.format, c.H);
  for (int p = 0; p < 2; ++p) {
    HostBuffer w(rows[p] * rb);
    w.fill<std::byte>(
        reference::to_device_layout(c.format, std::span(bytes).subspan(begins[p] * rb, rows[p] * rb)));
    run(variant("embed", c.format), kernels::kEmbedBindings, spec, {&w, &step, &x},
        {begins[p], rows[p]}, {groups(c.H, 64), n, 1});
    for (uint32_t t = 0; t < n; ++t)
      if (tokens[t] >= begins[p] && tokens[t] < begins[p] + rows[p])
        for (uint32_t i = 0; i < c.H; ++i) want[size_t(t) * c.H + i] = ref[size_t(t) * c.H + i];
    ASSERT_TRUE(compare(c.name() + " part rows [" + std::to_string(begins[p]) + "," +
                            std::to_string(begins[p] + rows[p]) + ")",
                        x.as<float>(), want, c.H, 1e-7));
  }
}

std::vector<EmbedCase> embed_cases() {
  std::vector<EmbedCase> v;
  for (Format f : kAllFormats) {
    v.push_back({f, row_k(f, 96, 96, 256)});
    if (!is_block_quantized(f)) v.push_back({f, 100});
  }
  return v;
}
INSTANTIATE_TEST_SUITE_P(Kernel, Embed, ::testing::ValuesIn(embed_cases()),
                         [](const auto& info) { return test_name(info.param.name()); });

}  // namespace
}  // namespace unicorn
