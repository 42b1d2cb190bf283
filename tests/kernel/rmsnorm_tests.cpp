// rmsnorm.comp against the CPU reference: plain and in place, added into the
// residual (ACCUMULATE), chained into the next norm (CHAIN), the fp16 operand
// (HALF_OUT), the slices of a product split over K, the logit rows only
// (ROW_SET).
#include "kernel_harness.hpp"

namespace unicorn {
namespace {

struct NormCase {
  uint32_t D, rows_per_token, accumulate, row_set;
  bool in_place = false;  // in and out the same buffer
  uint32_t chain = 0;     // then normalise the updated row with w2 into out2
  uint32_t half_out = 0;  // the normalised output (out, or out2 with CHAIN) as fp16
  uint32_t slices = 1;    // the input as partial sums to add (a split output projection)
  bool gpu_workgroup = false;  // a GPU's 256 threads where the device's own differ (a CPU device)
  std::string name() const {
    std::ostringstream s;
    s << "rmsnorm D=" << D << " rows_per_token=" << rows_per_token << " ACCUMULATE=" << accumulate
      << " ROW_SET=" << row_set << " CHAIN=" << chain << (in_place ? " in_place" : "")
      << (half_out ? " HALF_OUT" : "") << (slices > 1 ? " SLICES=" + std::to_string(slices) : "")
      << (gpu_workgroup ? " gpu_workgroup" : "");
    return s.str();
  }
};
class RmsNorm : public ::testing::TestWithParam<NormCase> {};

// Six bindings always (in, w, out, step, w2, out2), as the Recorder binds them;
// without CHAIN out2 must stay poison. With CHAIN the residual update
// x += norm(y) * w is checked in `out` and norm(x) * w2 in `out2`. With
// SLICES the input is the float sum of the slices, added in order.
TEST_P(RmsNorm, MatchesReference) {
  const NormCase& c = GetParam();
  const uint32_t n = 7, logit_begin = 4, logit_count = 2;
  const uint32_t per_row = c.rows_per_token, D = c.D;
  const size_t row_elems = size_t(per_row) * D;
  const auto slices = random_floats(c.slices * n * row_elems, -3.f, 3.f);  // [slices][n * rows_per_token, D]
  std::vector<float> xs(slices.begin(), slices.begin() + n * row_elems);   // their sum
  for (uint32_t s = 1; s < c.slices; ++s)
    for (size_t i = 0; i < xs.size(); ++i) xs[i] += slices[s * xs.size() + i];
  const auto ws = random_floats(D, 0.5f, 1.5f);             // [D] = 1 + w_hf
  const auto w2s = random_floats(D, 0.5f, 1.5f);            // [D] the chained norm's weight
  const auto init = random_floats(n * row_elems);           // out's prior contents (ACCUMULATE)
  HostBuffer x(slices.size() * 4), w(ws.size() * 4), y(xs.size() * 4), w2(w2s.size() * 4),
      y2(xs.size() * 4);
  x.fill<float>(slices);
  w.fill<float>(ws);
  w2.fill<float>(w2s);
  if (c.accumulate) y.fill<float>(init);
  const HostBuffer& out = c.in_place ? x : y;
  const auto step = step_buffer({n, 0, logit_begin, logit_count});
  const auto& info = device().ctx.info();
  const kernels::RmsNorm spec{D, 1e-6f, c.accumulate, c.row_set, c.chain, c.half_out, c.slices,
                              uint32_t(xs.size()), 0,
                              kernels::rmsnorm_threads(D, info.subgroup_size, info.cpu() && !c.gpu_workgroup)};
  // The Recorder dispatches min(n, logit_rows) * rows_per_token groups for ROW_SET 1; n here.
  run("rmsnorm", kernels::kRmsNormBindings, spec, {&x, &w, &out, &step, &w2, &y2}, {per_row},
      {n * per_row, 1, 1});

  const uint32_t first = c.row_set ? logit_begin : 0, count = c.row_set ? logit_count : n;
  std::vector<double> want(xs.size(), NAN);  // [n * rows_per_token, D]
  for (size_t i = 0; i < want.size(); ++i) {
    if (c.in_place) want[i] = xs[i];
    else if (c.accumulate) want[i] = init[i];
  }
  std::vector<double> want2(xs.size(), NAN);  // out2: untouched without CHAIN
  std::vector<double> ref(size_t(count) * row_elems);
  for (size_t i = 0; i < ref.size(); ++i) ref[i] = c.accumulate ? init[i] : 0.0;
  const auto in = std::span(xs).subspan(first * row_elems, count * row_elems);
  if (c.chain) {
    std::vector<double> ref2(ref.size());
    reference::rmsnorm_chain(in, ws, w2s, D, double(1e-6f), ref, ref2);
    std::copy(ref2.begin(), ref2.end(), want2.begin());
  } else {
    reference::rmsnorm(in, ws, D, double(1e-6f), c.accumulate != 0, ref);
  }
  std::copy(ref.begin(), ref.end(), want.begin());  // ROW_SET 1: input row logit_begin + i -> row i
  const bool half_out = c.half_out && !c.chain, half_out2 = c.half_out && c.chain;
  EXPECT_TRUE(half_out ? compare(c.name() + " out (fp16)", widen_fp16(out.as<_Float16>(), want.size()), want,
                                 D, kFp16OutputTol)
                       : compare(c.name() + " out", out.as<float>(), want, D, 1e-5));
  EXPECT_TRUE(half_out2 ? compare(c.name() + " out2 (fp16)", widen_fp16(y2.as<_Float16>(), want2.size()),
                                  want2, D, kFp16OutputTol)
                        : compare(c.name() + " out2", y2.as<float>(), want2, D, 1e-5));
}

INSTANTIATE_TEST_SUITE_P(
    Kernel, RmsNorm,
    ::testing::Values(NormCase{96, 1, 0, 0}, NormCase{96, 1, 1, 0}, NormCase{32, 4, 0, 0},
                      NormCase{32, 4, 1, 0}, NormCase{32, 4, 0, 0, true},
                      NormCase{1152, 1, 0, 0}, NormCase{1152, 1, 1, 0}, NormCase{96, 1, 0, 1},
                      NormCase{1152, 1, 0, 1}, NormCase{96, 1, 1, 1}, NormCase{1000, 1, 1, 0},
                      // CHAIN: x += norm(y) * w; xn = norm(x) * w2 (and without ACCUMULATE).
                      NormCase{96, 1, 1, 0, false, 1}, NormCase{1152, 1, 1, 0, false, 1},
                      NormCase{1000, 1, 1, 0, false, 1}, NormCase{96, 1, 0, 0, false, 1},
                      NormCase{32, 4, 1, 0, false, 1},
                      // Gemma 3 27B's hidden size: 21 elements per thread.
                      NormCase{5376, 1, 1, 0, false, 1},
                      // The fp16 operand of prefill's products: norm(x), and the chained xn.
                      NormCase{96, 1, 0, 0, false, 0, 1}, NormCase{1152, 1, 1, 0, false, 1, 1},
                      NormCase{5376, 1, 1, 0, false, 1, 1},
                      // The post-norms after an output projection split over K.
                      NormCase{1152, 1, 1, 0, false, 1, 1, 3}, NormCase{96, 1, 1, 0, false, 0, 0, 4},
                      NormCase{1000, 1, 1, 0, false, 1, 0, 2},
                      // On a CPU device the engine's workgroup is smaller (kernels::rmsnorm_threads):
                      // a GPU's there too.
                      NormCase{96, 1, 1, 0, false, 1, 0, 4, true}, NormCase{32, 4, 0, 0, true, 0, 0, 1, true},
                      NormCase{1000, 1, 1, 0, false, 1, 1, 2, true}),
    [](const auto& info) { return test_name(info.param.name()); });

}  // namespace
}  // namespace unicorn
