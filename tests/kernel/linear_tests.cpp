// The products against the CPU reference: matvec.comp (one token and batched
// decode, matvec_dot's integer dot products, K split into slices, the fused
// gate and up with GeGLU, the SIGNAL that lets the post-norm wait), matmul.comp,
// matmul_coop.comp and matmul_coop_splitk.comp (cooperative matrices, their
// tile choice and the fp32 operands of k_unit_values.comp), and the coop
// products' timing (UNICORN_PERF=1).
#include "kernel_harness.hpp"
#include "unicorn/engine/product_plan.hpp"

#include "unicorn/gpu/timing.hpp"

namespace unicorn {
namespace {

// The formats whose tensor-unit operands are made in fp32 (coop_operands.glsl's
// UNIT_FP32), checked through a test shader: the K-quants, Q4_1, Q5_0, Q5_1,
// IQ4_NL, IQ4_XS.
const Format kUnitFp32Formats[] = {Format::Q4_1, Format::Q5_0, Format::Q5_1, Format::Q2_K,   Format::Q3_K,
                                   Format::Q4_K, Format::Q5_K, Format::Q6_K, Format::IQ4_NL, Format::IQ4_XS};

// ------------------------------------------------- matvec / matmul (linear)

// matvec_dot's inputs: each block of 32 as signed bytes q = round(x * 127 / amax)
// times amax / 127, the values its integer dot products meet (the same float
// operations as the shader, rounding to nearest even).
std::vector<float> as_q8_blocks(std::span<const float> x) {
  std::vector<float> out(x.size());
  for (size_t b = 0; b < x.size(); b += 32) {
    float amax = 0;
    for (size_t j = b; j < b + 32; ++j) amax = std::max(amax, std::abs(x[j]));
    const float inv = amax > 0 ? 127.0f / amax : 0.0f, d = amax * (1.0f / 127.0f);
    for (size_t j = b; j < b + 32; ++j) out[j] = d * std::nearbyint(x[j] * inv);
  }
  return out;
}
// Inputs whose x * 127 / amax lies near a half-way point between two bytes,
// moved to a quarter past the lower one: a device's division need not be
// correctly rounded (GLSL allows 2.5 ulp), so there it may take the other
// byte, which as_q8_blocks cannot foresee (the H200 did, by 2.6e-4 of the
// scale, once the random inputs changed).
std::vector<float> clear_of_byte_ties(std::vector<float> x) {
  for (size_t b = 0; b < x.size(); b += 32) {
    float amax = 0;
    for (size_t j = b; j < b + 32; ++j) amax = std::max(amax, std::abs(x[j]));
    if (amax == 0) continue;
    for (size_t j = b; j < b + 32; ++j) {
      const float q = x[j] * (127.0f / amax), below = std::floor(q);
      if (std::abs(q - below - 0.5f) < 0.01f) x[j] = (below + 0.25f) * (amax / 127.0f);
    }
  }
  return x;
}

struct LinearCase {
  std::string kernel;  // "matvec", "matvec_dot" (block formats, integer dot products) or "matmul"
  Format format;
  uint32_t K, M, n;
  uint32_t row_set = 0;      // 1: rows counted by step.logit_count
  uint32_t logit_count = 0;  // with row_set 1
  uint32_t tokens = 1, tile = 1;  // matvec: token rows per workgroup, per pass (batched decode)
  std::string name() const {
    std::ostringstream s;
    s << variant(kernel.c_str(), format) << " K=" << K << " M=" << M << " n=" << n;
    if (row_set) s << " ROW_SET=1 logit_count=" << logit_count;
    if (tokens > 1) s << " TOKENS=" << tokens << " TILE=" << tile;
    return s.str();
  }
};

class Linear : public ::testing::TestWithParam<LinearCase> {};

// The weight goes in as two parts (rows [s, M) first, then [0, s)), each its own
// buffer with push {row_begin, rows}, both writing into one [n, M] output: the
// first dispatch must fill exactly its columns, the second the rest.
TEST_P(Linear, MatchesReference) {
  const LinearCase& c = GetParam();
  const bool vec = c.kernel.starts_with("matvec"), int_dot = c.kernel == "matvec_dot";
  if (int_dot && !device().ctx.info().int_dot) GTEST_SKIP() << "no VK_KHR_shader_integer_dot_product";
  const uint32_t active = c.row_set ? c.logit_count : c.n;
  const auto bytes = random_weights(c.format, c.M, c.K);
  const auto W = reference::dequantize(c.format, bytes, size_t(c.M) * c.K);  // [M, K]
  const auto drawn = random_floats(size_t(c.n) * c.K);                         // [n, K]
  const auto xs = int_dot ? clear_of_byte_ties(drawn) : drawn;
  HostBuffer x(xs.size() * 4), y(size_t(c.n) * c.M * 4);
  x.fill<float>(xs);
  const auto step = step_buffer({c.n, 7, 0, c.logit_count});
  const auto x_met = int_dot ? as_q8_blocks(xs) : xs;
  const auto full = reference::linear(std::span(x_met).first(size_t(active) * c.K), W, c.K, c.M);
  // The error scale: a sum's rounding follows the size of its terms, not of its
  // result, so outputs that cancel (a single row's can be small) are judged
  // against a sixteenth of the largest row's sum of |w x| as well.
  double terms = 0;
  for (uint32_t t = 0; t < active; ++t)
    for (uint32_t r = 0; r < c.M; ++r) {
      double row = 0;
      for (uint32_t k = 0; k < c.K; ++k) row += std::abs(double(W[size_t(r) * c.K + k]) * x_met[size_t(t) * c.K + k]);
      terms = std::max(terms, row);
    }
  const double floor = terms / 16;

  // (For the large-M case the first part is the big one.)
  const uint32_t split = c.M > 65535 ? 100 : c.M / 3;
  const uint32_t part_begin[] = {split, 0}, part_rows[] = {c.M - split, split};
  std::vector<double> want(size_t(c.n) * c.M, NAN);  // [n, M]; NaN: untouched so far
  // matvec: several output rows per row group (the engine's count, and an odd
  // one); for the first part, row groups of several subgroups (split-K) with two
  // blocks per pass, for the second, row groups of a fraction of a subgroup:
  // half of one, or on a CPU device one lane, the engine's shape there.
  const uint32_t rows_per_group = c.M % 2 ? kernels::kMatVecRows : 3;
  const uint32_t sg = device().ctx.info().subgroup_size;
  const bool cpu = device().ctx.info().cpu();
  for (int p = 0; p < 2; ++p) {
    const uint32_t rb = part_begin[p], rows = part_rows[p];
    if (rows == 0) continue;
    const uint64_t rbytes = row_bytes(c.format, c.K);
    HostBuffer w(rows * rbytes);
    w.fill<std::byte>(
        reference::to_device_layout(c.format, std::span(bytes).subspan(rb * rbytes, rows * rbytes)));
    // Group counts as the Recorder: n here plays min(n, logit_rows), so with
    // ROW_SET 1 the groups cover more rows than logit_count and must exit.
    std::array<uint32_t, 3> g;
    const uint32_t lanes = p == 0 ? 128 : cpu ? 1 : sg / 2, unroll = p == 0 ? 2 : 1;
    if (vec) {  // rows_per_group rows per row group, 128 / lanes row groups per workgroup
      const uint32_t gs = groups(rows, rows_per_group * 128 / lanes);
      const uint32_t gx = std::min<uint32_t>(gs, 65535);
      g = {gx, groups(gs, gx), groups(c.n, c.tokens)};
    } else {
      g = {groups(rows, 64), groups(c.n, 64), 1};  // 64 x 64 tiles
    }
    const auto name = variant(c.kernel.c_str(), c.format);
    if (vec)
      run(name, kernels::kMatVecBindings,
          kernels::MatVec{c.K, c.M, c.row_set, rows_per_group, lanes, unroll, 0, c.tokens, c.tile, 1, 0},
          {&w, &x, &y, &step, &w}, {rb, rows}, g);
    else
      run(name, kernels::kLinearBindings, kernels::Linear{c.K, c.M, c.row_set},
          {&w, &x, &y, &step}, {rb, rows}, g);
    for (uint32_t t = 0; t < active; ++t)
      for (uint32_t r = rb; r < rb + rows; ++r) want[size_t(t) * c.M + r] = full[size_t(t) * c.M + r];
    ASSERT_TRUE(compare(c.name() + " part rows [" + std::to_string(rb) + "," +
                            std::to_string(rb + rows) + ")",
                        y.as<float>(), want, c.M, 1e-5, floor));
    if (vec && c.tokens > 1) {
      // Batched: what one token per workgroup gives, with other rows per row
      // group too (the engine's batched shape) — bit for bit for the block
      // formats (the same operations in the same order); float formats may
      // contract differently per shape on some compilers (NVIDIA's does).
      const bool exact = is_block_quantized(c.format);
      HostBuffer y1(size_t(c.n) * c.M * 4);
      const uint32_t gs = groups(rows, kernels::kMatVecRows * 128 / lanes);
      run(name, kernels::kMatVecBindings,
          kernels::MatVec{c.K, c.M, c.row_set, kernels::kMatVecRows, lanes, unroll, 0, 1, 1, 1, 0},
          {&w, &x, &y1, &step, &w}, {rb, rows}, {gs, 1, c.n});
      for (uint32_t t = 0; t < active; ++t)
        for (uint32_t r = rb; r < rb + rows; ++r) {
          const float a = y.as<float>()[size_t(t) * c.M + r], b = y1.as<float>()[size_t(t) * c.M + r];
          if (exact)
            ASSERT_EQ(std::bit_cast<uint32_t>(a), std::bit_cast<uint32_t>(b))
                << c.name() << ": token " << t << " row " << r << " differs from the single-token shape";
          else
            ASSERT_LE(std::abs(a - b), 1e-6f * std::max(1.0f, std::abs(b)))
                << c.name() << ": token " << t << " row " << r << " differs from the single-token shape";
        }
    }
  }
}

std::vector<LinearCase> linear_cases() {
  std::vector<LinearCase> v;
  // Row lengths (two block counts) and row counts (one row, an odd count,
  // more than a workgroup): four of the six pairs, each length with the most
  // rows and with one of the others. Every (K, M) is a pipeline for lavapipe
  // to compile on a fresh machine (notes/build_time.md).
  for (const char* kernel : {"matvec", "matmul"})
    for (Format f : kAllFormats) {
      const uint32_t k1 = row_k(f, 77, 96, 256), k2 = row_k(f, 100, 160, 768);
      for (auto [K, M] : {std::pair{k1, 1u}, std::pair{k2, 37u}, std::pair{k1, 130u}, std::pair{k2, 130u}}) {
        const auto ns = std::string(kernel) == "matvec" ? std::vector<uint32_t>{1, 3}
                                                        : std::vector<uint32_t>{1, 5, 19, 70};
        for (uint32_t n : ns) v.push_back({kernel, f, K, M, n});
      }
      // The LM head: rows counted by logit_count (fewer than the chunk's tokens).
      const uint32_t K = row_k(f, 77, 96, 256);
      if (std::string(kernel) == "matvec") {
        v.push_back({kernel, f, K, 37, 3, 1, 1});
        v.push_back({kernel, f, K, 37, 3, 1, 2});
      } else {
        v.push_back({kernel, f, K, 37, 19, 1, 5});
        v.push_back({kernel, f, K, 130, 33, 1, 17});
      }
    }
  // An LM-head-sized row count (the 2-D grid starts past 65535 workgroups).
  v.push_back({"matvec", Format::Q4_0, 32, 65700, 1});
  // matvec_dot: Q4_0's quants against inputs as bytes, in every shape above.
  for (uint32_t K : {96u, 768u})
    for (uint32_t M : {1u, 37u, 130u})
      for (uint32_t n : {1u, 3u}) v.push_back({"matvec_dot", Format::Q4_0, K, M, n});
  v.push_back({"matvec_dot", Format::Q4_0, 96, 37, 3, 1, 2});
  v.push_back({"matvec_dot", Format::Q4_0, 768, 130, 7, 0, 0, 4, 4});
  v.push_back({"matvec_dot", Format::Q4_0, 768, 37, 6, 1, 5, 6, 4});
  // The other block formats on bytes: Q4_K, Q5_K, Q4_1 and Q5_1 (mins against
  // the bytes' sums), Q5_0 (a zero point), Q6_K (two scales a block), Q8_0
  // (signed bytes), IQ4_NL and IQ4_XS (table values as signed bytes), Q2_K
  // and Q3_K (a min or zero point per 16 elements). Each format's arithmetic
  // in both of the kernel's input paths, which the Q4_0 shapes above run in
  // every shape: one token a workgroup (its inputs staged once), and a batched
  // step (inputs quantized per block); the Q4_K_M file's Q6_K LM head over
  // logit rows.
  for (Format f : kBlockFormats) {
    if (f == Format::Q4_0) continue;
    const uint32_t K = row_k(f, 0, 160, 768);
    v.push_back({"matvec_dot", f, K, 37, 3});
    v.push_back({"matvec_dot", f, K, 130, 7, 0, 0, 4, 4});
  }
  v.push_back({"matvec_dot", Format::Q6_K, 256, 37, 3, 1, 2});
  // Batched decode: several token rows per workgroup, a last pass of fewer than
  // TILE, two workgroups' runs of tokens, and the LM head's logit rows. Every
  // format runs the last (logit rows, a last pass of 2 of TILE 4); the first
  // two run on one format of each weight path: float rows, 32-weight blocks,
  // 256-weight super-blocks (the batching is the same code for all formats).
  for (Format f : kAllFormats) {
    const uint32_t K = row_k(f, 100, 160, 768);
    if (f == Format::F32 || f == Format::Q4_0 || f == Format::Q4_K) {
      v.push_back({"matvec", f, K, 37, 5, 0, 0, 5, 2});
      v.push_back({"matvec", f, K, 130, 7, 0, 0, 4, 4});
    }
    v.push_back({"matvec", f, K, 37, 6, 1, 5, 6, 4});
  }
  return v;
}

// matvec_dot with K split over workgroups (long rows, one token): each split
// writes its partial sums to its own slice of the output, and the slices add up
// to the product. Rows in two parts, as above; 25 or 40 blocks in 3 uneven splits;
// the engine's rows per row group for split products (and for Q4_0 kMatVecRows).
TEST(MatVecDot, SplitKSlicesAddUpToTheProduct) {
  if (!device().ctx.info().int_dot) GTEST_SKIP() << "no VK_KHR_shader_integer_dot_product";
  // 25 blocks; the K-quants (a K file's long rows, the down projections, are
  // Q4_K, Q5_K or Q6_K): 40. Q4_0 also with kMatVecRows.
  struct Case {
    Format format;
    uint32_t K, rows_per_group;
  };
  const uint32_t split_rows = kernels::kMatVecDotSplitRows;
  for (auto [format, K, rows_per_group] :
       {Case{Format::Q4_0, 800, split_rows}, {Format::Q4_0, 800, kernels::kMatVecRows}, {Format::Q8_0, 800, split_rows},
        {Format::Q4_K, 1280, split_rows}, {Format::Q5_K, 1280, split_rows}, {Format::Q6_K, 1280, split_rows},
        {Format::IQ4_XS, 1280, split_rows}, {Format::Q2_K, 1280, split_rows}, {Format::Q3_K, 1280, split_rows}}) {
    const std::string module = variant("matvec_dot", format);
    SCOPED_TRACE(module + " rows per row group " + std::to_string(rows_per_group));
    const uint32_t M = 130, splits = 3, lanes = kernels::kMatVecDotLanes;
    const auto bytes = random_weights(format, M, K);
    const auto W = reference::dequantize(format, bytes, size_t(M) * K);
    const auto xs = clear_of_byte_ties(random_floats(K));
    const auto x_met = as_q8_blocks(xs);
    const auto full = reference::linear(x_met, W, K, M);
    HostBuffer x(K * 4), y(size_t(splits) * M * 4);
    x.fill<float>(xs);
    const auto step = step_buffer({1, 7, 0, 0});
    const uint32_t split = 50, begins[] = {split, 0}, counts[] = {M - split, split};
    const uint64_t rbytes = row_bytes(format, K);
    for (int p = 0; p < 2; ++p) {
      HostBuffer w(counts[p] * rbytes);
      w.fill<std::byte>(reference::to_device_layout(
          format, std::span(bytes).subspan(begins[p] * rbytes, counts[p] * rbytes)));
      run(module, kernels::kMatVecBindings,
          kernels::MatVec{K, M, 0, rows_per_group, lanes, 1, 0, 1, 1, splits, M}, {&w, &x, &y, &step, &w},
          {begins[p], counts[p]}, {groups(counts[p], rows_per_group * 128 / lanes), 1, splits});
    }
    std::vector<float> sum(M, 0.0f);
    for (uint32_t s = 0; s < splits; ++s)
      for (uint32_t r = 0; r < M; ++r) sum[r] += y.as<float>()[size_t(s) * M + r];
    std::vector<double> want(full.begin(), full.end());
    EXPECT_TRUE(compare(module + " K=" + std::to_string(K) + " in 3 splits", sum, want, M, 1e-5));
  }
}

// A one-token decode step's output projection and its add_norm with no
// barrier between them (Tuning::decode_norm_wait): every matvec workgroup
// counts itself in a counter once its outputs are written (SIGNAL), and the
// rmsnorm waits for the count (WAIT) before it reads them. Its x and xn are
// bit for bit those of the same two dispatches with a barrier between them,
// and the counter (push word 2 picks it) is back at 0 after each run, so the
// recorded pair runs again. K split into slices, and unsplit; with and
// without the chained pre-norm.
TEST(MatVecNorm, WaitingNormGivesTheBarriersBits) {
  struct Case {
    const char* module;
    Format format;
    uint32_t rows_per_group, lanes, splits;
    bool chain;
  };
  std::vector<Case> cases = {{"matvec_q8_0", Format::Q8_0, kernels::kMatVecRows, 32, 1, true},
                             {"matvec_q4_k", Format::Q4_K, kernels::kMatVecRows, 128, 1, false}};
  if (device().ctx.info().int_dot)
    cases.push_back({"matvec_dot_q4_0", Format::Q4_0, kernels::kMatVecDotSplitRows, kernels::kMatVecDotLanes, 3, true});
  const uint32_t K = 768, M = 640, counter = 5;  // M: the residual row's length
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.module) + " splits " + std::to_string(c.splits) + (c.chain ? " chained" : ""));
    HostBuffer w(M * row_bytes(c.format, K));
    w.fill<std::byte>(reference::to_device_layout(c.format, random_weights(c.format, M, K)));
    const auto residual = random_floats(M, -3.f, 3.f);
    HostBuffer x(K * 4), nw(M * 4), nw2(M * 4), counters(16 * 4);
    x.fill<float>(random_floats(K));
    nw.fill<float>(random_floats(M, 0.5f, 1.5f));
    nw2.fill<float>(random_floats(M, 0.5f, 1.5f));
    counters.fill<uint32_t>(std::vector<uint32_t>(16, 0));
    const auto step = step_buffer({1, 7, 0, 0});
    const std::array<uint32_t, 3> g{groups(M, c.rows_per_group * 128 / c.lanes), 1, c.splits};
    const uint32_t count = g[0] * g[1] * g[2];
    // Pass `waits` records the pair as a decode step does with decode_norm_wait.
    auto step_pair = [&](bool waits, HostBuffer& y, HostBuffer& x_out, HostBuffer& xn_out) {
      x_out.fill<float>(residual);
      xn_out.poison();
      y.poison();
      run_recorded({make_dispatch(c.module, kernels::kMatVecBindings,
                                  kernels::MatVec{K, M, 0, c.rows_per_group, c.lanes, 1, 0, 1, 1, c.splits, M,
                                                  waits ? 1u : 0u},
                                  {&w, &x, &y, &step, &w, &counters}, {0, M, counter}, g, !waits),
                    make_dispatch("rmsnorm", kernels::kRmsNormBindings,
                                  kernels::RmsNorm{M, 1e-6f, 1, 0, c.chain, 0, c.splits, M, waits ? 1u : 0u,
                                                   kernels::rmsnorm_threads(M, device().ctx.info().subgroup_size,
                                                                            device().ctx.info().cpu())},
                                  {&y, &nw, &x_out, &step, &nw2, &xn_out, &counters}, {1, counter, count},
                                  {1, 1, 1}, true)});
    };
    HostBuffer y(size_t(c.splits) * M * 4), x_want(M * 4), xn_want(M * 4);
    step_pair(false, y, x_want, xn_want);
    HostBuffer y2(size_t(c.splits) * M * 4), x_got(M * 4), xn_got(M * 4);
    for (int round = 0; round < 2; ++round) {
      step_pair(true, y2, x_got, xn_got);
      for (uint32_t i = 0; i < M; ++i) {
        ASSERT_EQ(std::bit_cast<uint32_t>(x_got.as<float>()[i]), std::bit_cast<uint32_t>(x_want.as<float>()[i]))
            << "round " << round << ": x[" << i << "] " << x_got.as<float>()[i] << ", behind a barrier "
            << x_want.as<float>()[i];
        ASSERT_EQ(std::bit_cast<uint32_t>(xn_got.as<float>()[i]), std::bit_cast<uint32_t>(xn_want.as<float>()[i]))
            << "round " << round << ": xn[" << i << "] " << xn_got.as<float>()[i] << ", behind a barrier "
            << xn_want.as<float>()[i];
      }
      for (uint32_t i = 0; i < 16; ++i)
        ASSERT_EQ(counters.as<uint32_t>()[i], 0u) << "round " << round << ": counter " << i << " left set";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Kernel, Linear, ::testing::ValuesIn(linear_cases()),
                         [](const auto& info) { return test_name(info.param.name()); });

// ------------------------------------------- matmul_coop (cooperative matrices)
//
// Runs where the device offers cooperative matrices (gpu::DeviceInfo::coopmat:
// the H100 through the device tool); skips elsewhere (lavapipe). The kernel
// rounds X and W to fp16 and accumulates in fp32, so the reference does the
// same rounding and accumulates in double. A product of two fp16 values is
// exact in fp32, so what remains is fp32 accumulation in the tensor units'
// order: |error| <= K * 2^-24 * sum |x w| in the worst case, about
// sqrt(K) * 2^-24 * |x w| typically, far below 1e-4 of the output's scale for
// these K. The same outputs are also held to the unrounded reference at 4e-3
// of scale: the cost of fp16 inputs (relative rounding 2^-11 per input, errors
// of random sign over K terms).

// The tiles the coop tests run: the engine's (kernels::kCoopTiles) with X in
// fp32 and in fp16, or with UNICORN_COOP_SWEEP=1 a wider set of candidates
// (shape, subgroup grid, one shared buffer, producer subgroups) to check and
// time side by side in one device run (the perf test then times Q4_0 only).
std::vector<kernels::CoopTile> coop_tiles_under_test() {
  std::vector<kernels::CoopTile> v;
  if (!tools::env_flag("UNICORN_COOP_SWEEP")) {
    for (bool x_half : {false, true})
      for (kernels::CoopTile t : kernels::kCoopTiles) v.push_back((t.x_half = x_half, t));
    // Split over K (partial sums, one slice of Y each), up to kProjSlices.
    const uint32_t splits[] = {3, 2, kProjSlices};
    for (size_t i = 0; i < std::size(kernels::kCoopTiles); ++i) {
      kernels::CoopTile t = kernels::kCoopTiles[i];
      t.splits = splits[i % std::size(splits)];
      t.x_half = i % 2 == 0;
      v.push_back(t);
    }
    return v;
  }
  // tokens, rows, warps_tokens, warps_rows, stages, producers, X in fp16, splits of K
  return {{128, 256, 2, 8, 1, 0, true, 1}, {128, 256, 2, 8, 1, 0, true, 2}, {128, 256, 2, 8, 1, 0, true, 3},
          {128, 256, 2, 8, 1, 0, true, 4}, {128, 128, 2, 4, 2, 8, true, 1}, {128, 128, 2, 4, 2, 8, true, 2},
          {128, 128, 2, 4, 2, 8, true, 3}, {128, 128, 2, 4, 2, 8, true, 4}, {64, 64, 2, 2, 2, 0, true, 1},
          {64, 64, 2, 2, 2, 0, true, 2}};
}
std::string tile_name(const kernels::CoopTile& t) {
  return std::to_string(t.tokens) + "x" + std::to_string(t.rows) + "/" + std::to_string(t.warps_tokens) +
         "x" + std::to_string(t.warps_rows) + (t.stages == 1 ? " s1" : "") +
         (t.producers ? " +" + std::to_string(t.producers) : "") + (t.x_half ? " x16" : " x32") +
         (t.splits > 1 ? " k/" + std::to_string(t.splits) : "");
}

// A split tile's output: the float sum of its slices in order (as rmsnorm
// adds them); an element no slice wrote stays poison, one only some wrote is NaN.
std::vector<float> sum_slices(std::span<const float> y, size_t slice, uint32_t splits) {
  std::vector<float> sum(y.begin(), y.begin() + slice);
  for (size_t i = 0; i < slice; ++i) {
    uint32_t unwritten = is_poison(y[i]);
    for (uint32_t s = 1; s < splits; ++s) {
      unwritten += is_poison(y[s * slice + i]);
      sum[i] += y[s * slice + i];
    }
    if (unwritten == splits) sum[i] = y[i];
    else if (unwritten) sum[i] = NAN;
  }
  return sum;
}

// X as EngineCore's fp16 operand holds it (Act::Operand, x_half): rows past
// the active ones stay NaN (poison), which must reach no output.
uint64_t fp16_x_bytes(uint32_t n, uint32_t K) { return uint64_t(n) * K * 2; }
void fill_fp16_rows(const HostBuffer& b, std::span<const float> rows) {
  auto h = b.as<_Float16>();
  for (size_t i = 0; i < rows.size(); ++i) h[i] = static_cast<_Float16>(rows[i]);
}

class LinearCoop : public ::testing::TestWithParam<LinearCase> {};

TEST_P(LinearCoop, MatchesFp16RoundedReference) {
  const auto& info = device().ctx.info();
  if (!info.coopmat) GTEST_SKIP() << info.name << ": " << info.coopmat_note;
  const LinearCase& c = GetParam();
  const uint32_t active = c.row_set ? c.logit_count : c.n;
  const auto bytes = random_weights(c.format, c.M, c.K);
  const auto W = reference::dequantize(c.format, bytes, size_t(c.M) * c.K);  // [M, K]
  const auto xs = random_floats(size_t(c.n) * c.K);                            // [n, K]
  std::vector<float> W16(W.size()), x16(xs.size());
  std::transform(W.begin(), W.end(), W16.begin(), round_f16);
  std::transform(xs.begin(), xs.end(), x16.begin(), round_f16);
  const size_t slice = size_t(c.n) * c.M;  // Y's elements; a split tile writes up to kProjSlices of them
  HostBuffer x(xs.size() * 4), y(slice * kProjSlices * 4), xh(fp16_x_bytes(c.n, c.K));
  x.fill<float>(xs);
  fill_fp16_rows(xh, std::span(xs).first(size_t(active) * c.K));
  const auto step = step_buffer({c.n, 7, 0, c.logit_count});
  const auto rows_x = [&](const std::vector<float>& v) { return std::span(v).first(size_t(active) * c.K); };
  const auto full16 = reference::linear(rows_x(x16), W16, c.K, c.M);
  const auto full = reference::linear(rows_x(xs), W, c.K, c.M);

  // Two parts, as in Linear: rows [s, M) first, then [0, s); every tile the
  // engine may pick: matmul_coop's (kernels::kCoopTiles, prefill) and
  // matmul_coop_splitk's (kernels::kSplitKTiles, batched decode).
  const uint32_t split = c.M / 3;
  const uint32_t part_begin[] = {split, 0}, part_rows[] = {c.M - split, split};
  auto check_tile = [&](const std::string& kernel, const auto& spec, uint32_t tile_tokens,
                        uint32_t tile_rows, const std::string& tile_label, const HostBuffer& x,
                        uint32_t splits = 1) {
    std::vector<double> want(size_t(c.n) * c.M, NAN), want32(size_t(c.n) * c.M, NAN);
    y.poison();  // every output of the part must be written, the others left alone
    const std::string tile = kernel + " tile " + tile_label;
    for (int p = 0; p < 2; ++p) {
      const uint32_t rb = part_begin[p], rows = part_rows[p];
      if (rows == 0) continue;
      const uint64_t rbytes = row_bytes(c.format, c.K);
      HostBuffer w(rows * rbytes);
      w.fill<std::byte>(
          reference::to_device_layout(c.format, std::span(bytes).subspan(rb * rbytes, rows * rbytes)));
      if (kernel == "matmul_coop_splitk")  // binding 4: a pair's second tensor, here unused
        run(variant(kernel.c_str(), c.format), kernels::kLinearSplitKBindings, spec,
            {&w, &x, &y, &step, &w}, {rb, rows}, {groups(rows, tile_rows), groups(c.n, tile_tokens), splits});
      else
        run(variant(kernel.c_str(), c.format), kernels::kLinearBindings, spec, {&w, &x, &y, &step},
            {rb, rows}, {groups(rows, tile_rows), groups(c.n, tile_tokens), splits});
      for (uint32_t t = 0; t < active; ++t)
        for (uint32_t r = rb; r < rb + rows; ++r) {
          want[size_t(t) * c.M + r] = full16[size_t(t) * c.M + r];
          want32[size_t(t) * c.M + r] = full[size_t(t) * c.M + r];
        }
      const std::string what = c.name() + " " + tile + " part rows [" + std::to_string(rb) + "," +
                               std::to_string(rb + rows) + ")";
      const auto got = sum_slices(y.as<float>(), slice, splits);
      ASSERT_TRUE(compare(what + " vs fp16-rounded inputs", got, want, c.M, 1e-4));
      ASSERT_TRUE(compare(what + " vs fp32 inputs", got, want32, c.M, 4e-3));
    }
    // The observed errors, for the record (the report quotes them).
    const auto got = sum_slices(y.as<float>(), slice, splits);
    std::printf("[coop] %s %s: max err %.2e of scale vs fp16-rounded reference, %.2e vs fp32\n",
                c.name().c_str(), tile.c_str(), max_rel_err(got, want, want), max_rel_err(got, want32, want32));
  };
  for (const kernels::CoopTile& tile : coop_tiles_under_test())
    if (!tile.x_half || kernels::x_half_fits(c.K))
      check_tile("matmul_coop",
                 kernels::linear_coop(c.K, c.M, c.row_set, info.coop_m, info.coop_n, info.coop_k,
                                      info.subgroup_size, tile, uint32_t(slice)),
                 tile.tokens, tile.rows, tile_name(tile), tile.x_half ? xh : x, tile.splits);
  // matmul_coop_splitk also in three ranges of K across workgroups (an output
  // projection's splits): with K = 96, one step a range, most subgroups idle.
  for (const kernels::SplitKTile& tile : kernels::kSplitKTiles)
    for (bool x_half : {false, true})
      for (uint32_t splits : {1u, 3u})
        if (!x_half || kernels::x_half_fits(c.K))
          check_tile("matmul_coop_splitk",
                     kernels::linear_coop_splitk(c.K, c.M, c.row_set, info.coop_m, info.coop_n, info.coop_k,
                                                 info.subgroup_size, tile, x_half, splits, uint32_t(slice)),
                     tile.tokens, tile.rows,
                     std::to_string(tile.tokens) + "x" + std::to_string(tile.rows) + "/" +
                         std::to_string(tile.split) + (x_half ? " fp16 X" : "") +
                         (splits > 1 ? " " + std::to_string(splits) + " splits" : ""),
                     x_half ? xh : x, splits);
}

std::vector<LinearCase> linear_coop_cases() {
  std::vector<LinearCase> v;
  for (Format f : kAllFormats) {
    const bool block = is_block_quantized(f);
    // Odd K (scalar loads, a partial last step), K % 8 == 0 but not % 32, and
    // a long K (vector loads, many double-buffered steps).
    for (uint32_t K : has_superblocks(f) ? std::vector<uint32_t>{256, 768, 1024}
                      : block       ? std::vector<uint32_t>{96, 160, 1024}
                                    : std::vector<uint32_t>{77, 104, 1024})
      for (uint32_t M : {37u, 300u})
        for (uint32_t n : {1u, 70u, 200u}) v.push_back({"matmul_coop", f, K, M, n});
    v.push_back({"matmul_coop", f, row_k(f, 77, 96, 256), 130, 33, 1, 17});  // logit rows
  }
  return v;
}

INSTANTIATE_TEST_SUITE_P(Kernel, LinearCoop, ::testing::ValuesIn(linear_coop_cases()),
                         [](const auto& info) { return test_name(info.param.name()); });

// The cooperative-matrix kernels' operands made in fp32 (K-quants, Q4_1,
// Q5_0, Q5_1, IQ4_NL, IQ4_XS: load_k_unit, then k_unit_values, what they
// round to fp16 and stage) through a test shader that runs without tensor
// units, for weight 1 and the fused pair's weight 2: bit for bit ggml's
// dequantisation. Odd row counts: a Q6_K, Q3_K or Q5_0 part then ends 2 bytes
// past a word. (LinearCoop and SplitKPair check the whole kernels where the
// device has tensor units.)
struct KUnitSpec {
  BOOST_HANA_DEFINE_STRUCT(KUnitSpec, (uint32_t, K));
};
TEST(KUnitValues, MatchGgmlDequantizationBitForBit) {
  for (Format f : kUnitFp32Formats)
    for (uint32_t K : {row_k(f, 0, 96, 256), row_k(f, 0, 160, 768)}) {
      const uint32_t rows = 5;
      const auto w1 = random_weights(f, rows, K), w2 = random_weights(f, rows, K);
      const auto W1 = reference::dequantize(f, w1, size_t(rows) * K), W2 = reference::dequantize(f, w2, size_t(rows) * K);
      HostBuffer b1(w1.size()), b2(w2.size()), out(size_t(2) * rows * K * 4);
      b1.fill<std::byte>(reference::to_device_layout(f, w1));
      b2.fill<std::byte>(reference::to_device_layout(f, w2));
      const std::string module = lower("k_unit_values_" + std::string(format_name(f)));
      run(module, 3, KUnitSpec{K}, {&b1, &out, &b2}, {rows}, {groups(2 * rows * K / 16, 64), 1, 1});
      for (size_t i = 0; i < size_t(2) * rows * K; ++i) {
        const float want = i < W1.size() ? W1[i] : W2[i - W1.size()];
        ASSERT_EQ(std::bit_cast<uint32_t>(out.as<float>()[i]), std::bit_cast<uint32_t>(want))
            << module << " K=" << K << ": weight " << (i < W1.size() ? 1 : 2) << " element " << i % W1.size()
            << " (row " << i % W1.size() / K << ", column " << i % K << "): got " << out.as<float>()[i]
            << ", want " << want;
      }
    }
}

// The tile rule's splits of K: only where the consumer adds partial sums
// (max_splits), only as many as leave each range its steps, and only where
// they fill more of the last wave than the tile alone.
TEST(CoopTile, SplitsKOnlyWhereTheTilesLeaveTheGpuIdle) {
  EXPECT_EQ(kernels::coop_max_splits(96, kProjSlices), 1u);
  EXPECT_EQ(kernels::coop_max_splits(1024, kProjSlices), 4u);     // 32 steps: 4 of 8
  EXPECT_EQ(kernels::coop_max_splits(512, kProjSlices), 2u);
  EXPECT_EQ(kernels::coop_max_splits(21504, 1), 1u);
  EXPECT_EQ(kernels::coop_max_splits(128, kProjSlices, 1), 4u);    // one step each
  const auto fill = [](const kernels::CoopTile& t, uint32_t tokens, uint32_t rows, uint32_t wave) {
    const uint64_t g = uint64_t((rows + t.rows - 1) / t.rows) * ((tokens + t.tokens - 1) / t.tokens) * t.splits;
    return double(g) / double((g + wave - 1) / wave * wave);
  };
  // Gemma 3 27B's down projection: 84 workgroups of 128 x 256 on 132.
  const auto down = kernels::coop_tile(512, 5376, true, 132, 4);
  EXPECT_GT(down.splits, 1u);
  EXPECT_GT(fill(down, 512, 5376, 132), 0.9);
  EXPECT_EQ(kernels::coop_tile(512, 5376, true, 132, 1).splits, 1u);
  // Tiles that already fill whole waves are not split.
  EXPECT_EQ(kernels::coop_tile(512, 256 * 33, true, 132, 4).splits, 1u);
  // The up projection after the gate's workgroups (same tile): Gemma 3 27B's
  // 336 + 336 fill 5.09 waves of 132, 336 + 672 fill 7.6 of 8.
  const auto wide = kernels::kCoopTiles[0];
  EXPECT_EQ(kernels::coop_splits_after(wide, 512, 21504, 336, 132, 2), 2u);
  EXPECT_EQ(kernels::coop_splits_after(wide, 512, 21504, 336, 132, 1), 1u);
  EXPECT_EQ(kernels::coop_splits_after(wide, 512, 15360, 240, 132, 2), 1u);  // 12B: a tie keeps one
  // Allowing splits never lowers the work done per wave (peak x fill).
  const auto rate = [&](const kernels::CoopTile& t, uint32_t rows, uint32_t wave) {
    for (size_t i = 0; i < std::size(kernels::kCoopTiles); ++i)
      if (kernels::kCoopTiles[i].tokens == t.tokens && kernels::kCoopTiles[i].rows == t.rows)
        return kernels::kCoopTilePeak[i] * fill(t, 512, rows, wave);
    ADD_FAILURE() << "not a kCoopTiles tile";
    return 0.0;
  };
  for (uint32_t rows : {1152u, 2560u, 3840u, 5376u, 21504u})
    for (uint32_t wave : {32u, 132u, 1000u}) {
      const auto t = kernels::coop_tile(512, rows, true, wave, 4);
      EXPECT_TRUE(t.x_half);
      EXPECT_GE(rate(t, rows, wave), rate(kernels::coop_tile(512, rows, true, wave, 1), rows, wave) - 1e-9)
          << rows << " rows, " << wave << " workgroups a wave";
    }
}

// The matrix-vector kernel's plan (engine/product_plan.hpp) on an H100's
// facts: the 27B's down projection (K = 21,504) splits K in three for one
// token, 8 rows a row group, on integer dot products (the 4B's, 4 rows: the
// H100 has too many multiprocessors for 8); a verify pass of 9 rows
// splits it as the step does (its rows sum in the step's order); a batched
// step of 9 streams does not split; a CPU device's row groups are one lane.
TEST(MatVecPlan, TheStepsChoicesOnAnH100) {
  gpu::DeviceInfo h100{};
  h100.type = vk::PhysicalDeviceType::eDiscreteGpu;
  h100.subgroup_size = 32;
  h100.max_shared_memory = 48 * 1024;
  h100.multiprocessors = kH100Multiprocessors;
  const Tuning tuning{};
  const detail::MatVecAsk down{.format = Format::Q4_0, .in_features = 21504, .out_features = 5376, .tokens = 1,
                               .one_token_order = false, .pair = false, .slice_capacity = kProjSlices};
  const detail::MatVecPlan step = detail::plan_matvec(h100, tuning, true, down);
  EXPECT_TRUE(step.int_dot);
  EXPECT_EQ(step.splits, 3u);
  EXPECT_EQ(step.rows, kernels::kMatVecDotSplitRows);
  EXPECT_EQ(step.lanes, kernels::kMatVecDotLanes);
  EXPECT_EQ(step.tile, 1u);
  detail::MatVecAsk verify = down;
  verify.tokens = 9, verify.one_token_order = true;
  const detail::MatVecPlan v = detail::plan_matvec(h100, tuning, true, verify);
  EXPECT_TRUE(v.int_dot);
  EXPECT_EQ(v.splits, step.splits) << "a verify row sums as the step does";
  EXPECT_EQ(v.lanes, step.lanes);
  EXPECT_EQ(v.unroll, step.unroll);
  EXPECT_EQ(v.tokens, 9u);
  EXPECT_EQ(v.tile, kernels::kMatVecBatchTile);
  detail::MatVecAsk batch = verify;
  batch.one_token_order = false;
  EXPECT_EQ(detail::plan_matvec(h100, tuning, true, batch).splits, 1u);
  EXPECT_FALSE(detail::plan_matvec(h100, tuning, false, down).int_dot) << "integer dot products turned off";
  // The 4B's down projection (K = 10,240) splits in two: 160 workgroups at 8
  // rows, under the H100's floor of 3.4 a multiprocessor (448), so 4 rows;
  // a GPU of 40 multiprocessors has work for all of them at 8.
  detail::MatVecAsk down_4b = down;
  down_4b.in_features = 10240, down_4b.out_features = 2560;
  const detail::MatVecPlan h100_4b = detail::plan_matvec(h100, tuning, true, down_4b);
  EXPECT_EQ(h100_4b.splits, 2u);
  EXPECT_EQ(h100_4b.rows, kernels::kMatVecRows);
  gpu::DeviceInfo smaller = h100;
  smaller.multiprocessors = 40;
  EXPECT_EQ(detail::plan_matvec(smaller, tuning, true, down_4b).rows, kernels::kMatVecDotSplitRows);
  // Too long a row for the shared memory of one token's bytes: floats, unsplit.
  gpu::DeviceInfo small = h100;
  small.max_shared_memory = 4096;
  detail::MatVecAsk long_row = down;
  long_row.slice_capacity = 1;
  EXPECT_FALSE(detail::plan_matvec(small, tuning, true, long_row).int_dot);
  gpu::DeviceInfo cpu = h100;
  cpu.type = vk::PhysicalDeviceType::eCpu;
  cpu.subgroup_size = 8;
  EXPECT_EQ(detail::plan_matvec(cpu, tuning, false, down).lanes, 1u) << "a CPU device's row groups are one lane";
}

// matmul_coop_splitk's splits of K across workgroups: the output projections
// and a step's q, k and v, where their row tiles leave the GPU idle, never
// more than the consumer adds or than leave each subgroup its steps, and the
// same for every tile of one row count.
TEST(SplitKTile, SplitsKWhereTheRowTilesLeaveTheGpuIdle) {
  const kernels::SplitKTile small = kernels::kSplitKTiles[0], large = kernels::kSplitKTiles[1];
  EXPECT_EQ(kernels::splitk_splits(10240, 2560, small, kProjSlices, kH100SplitKWave), 3u);  // 4B down: 80 tiles -> 240
  EXPECT_EQ(kernels::splitk_splits(2048, 2560, small, kProjSlices, kH100SplitKWave), 3u);   // 4B o: 64 steps, 3 ranges
  EXPECT_EQ(kernels::splitk_splits(21504, 5376, small, kProjSlices, kH100SplitKWave), 3u);  // 27B down: 168 tiles -> 504 of 528
  EXPECT_EQ(kernels::splitk_splits(2560, 10240, small, kProjSlices, kH100SplitKWave), 4u);  // 320 tiles: 1,280 fill 97 % of 5 waves
  EXPECT_EQ(kernels::splitk_splits(10240, 2560, small, 1, kH100SplitKWave), 1u);            // a consumer of one sum
  EXPECT_EQ(kernels::splitk_splits(256, 2560, small, kProjSlices, kH100SplitKWave), 1u);    // 8 steps: 2 a subgroup
  EXPECT_EQ(kernels::splitk_splits(512, 1152, small, kProjSlices, kH100SplitKWave), 2u);    // 16 steps: two ranges of 2 a subgroup
  EXPECT_EQ(kernels::splitk_splits(512, 1152, small, 1, kH100SplitKWave), 1u);
  // q, k and v of a batched step, their rows together (they share waves),
  // into the decode lane's slices, which attention's PREP adds.
  EXPECT_EQ(kernels::splitk_splits(2560, 2048 + 2 * 1024, small, detail::kDecodeQkvSlices, kH100SplitKWave), 2u);  // 4B: 128 tiles -> 256
  EXPECT_EQ(kernels::splitk_splits(1152, 1024 + 2 * 256, small, detail::kDecodeQkvSlices, kH100SplitKWave), 4u);   // 1B: 48 tiles -> 192
  EXPECT_EQ(kernels::splitk_splits(5376, 4096 + 2 * 2048, small, detail::kDecodeQkvSlices, kH100SplitKWave), 1u);  // 27B: 256 tiles fill a wave
  // M: hidden sizes (the output projections) and q + k + v rows together
  // (the 1B's 1,536, the 4B's 4,096, the 12B's and 27B's 8,192).
  for (uint32_t K : {1024u, 1152u, 2048u, 2560u, 5376u, 10240u, 21504u})
    for (uint32_t M : {1152u, 1536u, 2560u, 4096u, 5376u, 8192u})
      EXPECT_EQ(kernels::splitk_splits(K, M, small, kProjSlices, kH100SplitKWave),
                kernels::splitk_splits(K, M, large, kProjSlices, kH100SplitKWave))
          << K << " x " << M << ": the small-step tile must sum a row in the large one's order";
}

// Throughput on prefill-sized products (UNICORN_PERF=1; the H100 run reports
// it): device-local buffers, random data, the median of timed repetitions.
// FLOP = 2 n K M. Every tile of kernels::kCoopTiles (the one the engine picks
// marked; with UNICORN_COOP_SWEEP=1 the candidates instead, Q4_0 only), on
// Gemma 3 1B and 27B shapes; the fp32 matmul on one for comparison.
TEST(LinearCoopPerf, PrefillShapes) {
  auto& d = device();
  const auto& info = d.ctx.info();
  if (!info.coopmat) GTEST_SKIP() << info.name << ": " << info.coopmat_note;
  if (!tools::env_flag("UNICORN_PERF")) GTEST_SKIP() << "set UNICORN_PERF=1 to measure";
  // proj: an output projection (into Act::Proj), which may split K.
  struct Shape { uint32_t n, K, M; bool proj = false; };
  const Shape shapes[] = {{512, 1152, 1024},        {512, 1152, 256},          {512, 1024, 1152, true},  // 1B
                          {512, 1152, 6912},        {512, 6912, 1152, true},   {512, 2560, 2048},  // 4B
                          {512, 2560, 1024},        {512, 2048, 2560, true},   {512, 2560, 10240},
                          {512, 10240, 2560, true}, {512, 3840, 4096},         {512, 3840, 2048},  // 12B
                          {512, 4096, 3840, true},  {512, 3840, 15360},        {512, 15360, 3840, true},
                          {512, 5376, 4096},        {512, 4096, 5376, true},   {512, 5376, 21504},  // 27B
                          {512, 21504, 5376, true}};
  const bool sweep = tools::env_flag("UNICORN_COOP_SWEEP");  // the candidates, Q4_0 only
  const auto tiles = coop_tiles_under_test();
  for (Format f : {Format::Q4_0, Format::Q8_0, Format::F16})
    for (const Shape& s : shapes) {
      if (sweep && f != Format::Q4_0) continue;
      std::vector<std::byte> ggml;
      tools::quantize(f, random_floats(size_t(s.M) * s.K), ggml);
      const auto wbytes = reference::to_device_layout(f, ggml);  // one part: the whole tensor
      const auto xs = random_floats(size_t(s.n) * s.K);
      const uint64_t slice = uint64_t(s.n) * s.M;
      const uint64_t sizes[] = {wbytes.size(), xs.size() * 4, slice * kProjSlices * 4, fp16_x_bytes(s.n, s.K)};
      gpu::BufferSet dev(d.ctx, sizes, gpu::MemoryKind::DeviceLocal, "perf buffers");
      HostBuffer wup(wbytes.size()), xup(xs.size() * 4), xhup(sizes[3]);
      wup.fill<std::byte>(wbytes);
      xup.fill<float>(xs);
      fill_fp16_rows(xhup, xs);
      d.stream.run_once([&](vk::CommandBuffer cb) {
        cb.copyBuffer(wup.info().buffer, dev[0].handle, vk::BufferCopy{0, 0, wbytes.size()});
        cb.copyBuffer(xup.info().buffer, dev[1].handle, vk::BufferCopy{0, 0, xs.size() * 4});
        cb.copyBuffer(xhup.info().buffer, dev[3].handle, vk::BufferCopy{0, 0, sizes[3]});
      });
      const auto step = step_buffer({s.n, 0, 0, 0});
      const bool with_fp32 = f == Format::Q4_0 && s.M == 21504;
      for (size_t v = 0; v < tiles.size() + with_fp32; ++v) {
        const bool coop = v < tiles.size();
        const kernels::CoopTile tile = coop ? tiles[v] : kernels::CoopTile{64, 64, 0, 0};
        if (tile.splits > kernels::coop_max_splits(s.K, s.proj ? kProjSlices : 1)) continue;
        const std::string name = variant(coop ? "matmul_coop" : "matmul", f);
        const auto spec = kernels::linear_coop(s.K, s.M, 0, info.coop_m, info.coop_n,
                                               info.coop_k, info.subgroup_size, tile, uint32_t(slice));
        const gpu::Kernel& k =
            coop ? d.kernels.get(name, spirv::find(name), kernels::kLinearBindings, spec)
                 : d.kernels.get(name, spirv::find(name), kernels::kLinearBindings,
                                 kernels::Linear{s.K, s.M, 0});
        const bool x16 = coop && tile.x_half;
        const vk::DescriptorBufferInfo b[] = {dev[0].whole(), dev[x16 ? 3 : 1].whole(), dev[2].whole(), step.info()};
        const vk::DescriptorSet set = d.sets.make(k, b);
        const gpu::Dispatch dispatch{&k, set, {0, s.M}, {groups(s.M, tile.rows), groups(s.n, tile.tokens), tile.splits}};
        // Batches of about 30 ms (sized from the first): batches of 20
        // dispatches of the small shapes ran at a quarter of their speed in
        // some processes (notes/coop_gemm.md, step 7).
        int reps = coop ? 20 : 3;
        gpu::Timestamps ts(d.ctx, 2);
        std::vector<double> ms;
        for (int r = 0; r < 5; ++r) {  // the first two runs warm up
          d.stream.run_once([&](vk::CommandBuffer cb) {
            ts.reset(cb);
            ts.write(cb, 0);
            for (int i = 0; i < reps; ++i) gpu::record(cb, dispatch);
            ts.write(cb, 1);
          });
          const auto ns = ts.read_ns(2);
          const double each = (ns[1] - ns[0]) * 1e-6 / reps;
          if (r >= 2) ms.push_back(each);
          if (r == 0 && coop) reps = std::clamp(int(30.0 / std::max(each, 1e-4)), 20, 4000);
        }
        std::sort(ms.begin(), ms.end());
        const double tflops = 2.0 * s.n * s.K * s.M / (ms[1] * 1e-3) / 1e12;
        const auto picked = kernels::coop_tile(s.n, s.M, tile.x_half, kH100Multiprocessors,
                                               kernels::coop_max_splits(s.K, s.proj ? kProjSlices : 1));
        const bool is_picked = coop && tile_name(tile) == tile_name(picked);
        std::printf("[perf] %-16s n=%u K=%u M=%u tile %s%s: %.3f ms, %.1f TFLOP/s = %.1f%% "
                    "of 989.4 (H100 SXM dense fp16)\n", name.c_str(), s.n, s.K, s.M,
                    coop ? tile_name(tile).c_str() : "64x64 fp32", is_picked ? " (picked)" : "",
                    ms[1], tflops, 100.0 * tflops / 989.4);
      }
    }
}

// ------------------------------------------- matvec, fused gate, up, GeGLU

struct PairCase {
  Format format;
  uint32_t K, F, lanes;  // lanes 0: the engine's choice
  bool int_dot = false;  // matvec_dot (the quants against the inputs as bytes)
  std::string kernel() const { return variant(int_dot ? "matvec_dot" : "matvec", format); }
};
class MatVecPair : public ::testing::TestWithParam<PairCase> {};

// Rows [begin, begin + count) of a fused pair's gate and up weights (ggml
// blocks of K columns), in the device layout: one part of each.
struct PairPart {
  HostBuffer gate, up;
};
PairPart pair_part(Format f, std::span<const std::byte> gate_w, std::span<const std::byte> up_w, uint32_t K,
                   uint32_t begin, uint32_t count) {
  const uint64_t rb = row_bytes(f, K);
  PairPart part{HostBuffer(count * rb), HostBuffer(count * rb)};
  part.gate.fill<std::byte>(reference::to_device_layout(f, gate_w.subspan(begin * rb, count * rb)));
  part.up.fill<std::byte>(reference::to_device_layout(f, up_w.subspan(begin * rb, count * rb)));
  return part;
}

// gate = gelu(x Wg^T) * (x Wu^T) for one token, in two parts ([s, F) first),
// against the reference linear and geglu.
TEST_P(MatVecPair, MatchesLinearThenGeglu) {
  const PairCase& c = GetParam();
  if (c.int_dot && !device().ctx.info().int_dot) GTEST_SKIP() << "no VK_KHR_shader_integer_dot_product";
  const auto gate_w = random_weights(c.format, c.F, c.K), up_w = random_weights(c.format, c.F, c.K);
  const auto G = reference::dequantize(c.format, gate_w, size_t(c.F) * c.K);
  const auto U = reference::dequantize(c.format, up_w, size_t(c.F) * c.K);
  const auto drawn = random_floats(c.K, -2.f, 2.f);
  const auto xs = c.int_dot ? clear_of_byte_ties(drawn) : drawn;
  const auto x_met = c.int_dot ? as_q8_blocks(xs) : xs;
  const auto g = reference::linear(x_met, G, c.K, c.F), u = reference::linear(x_met, U, c.K, c.F);
  const std::vector<float> gf(g.begin(), g.end()), uf(u.begin(), u.end());
  const auto full = reference::geglu(gf, uf);
  HostBuffer x(xs.size() * 4), y(size_t(c.F) * 4);
  x.fill<float>(xs);
  const auto step = step_buffer({1, 3, 0, 0});
  const uint32_t sg = device().ctx.info().subgroup_size, rows = kernels::kMatVecRows;
  const bool cpu = device().ctx.info().cpu();
  const uint32_t lanes = c.lanes ? c.lanes : kernels::matvec_lanes(c.format, c.K, c.F, rows, sg, cpu);
  const uint32_t split = c.F / 3, begins[] = {split, 0}, counts[] = {c.F - split, split};
  std::vector<double> want(c.F, NAN);
  for (int p = 0; p < 2; ++p) {
    PairPart w = pair_part(c.format, gate_w, up_w, c.K, begins[p], counts[p]);
    const uint32_t gs = groups(counts[p], rows * 128 / lanes);
    run(c.kernel(), kernels::kMatVecBindings,
        kernels::MatVec{c.K, c.F, 0, rows, lanes, 1, 1, 1, 1, 1, 0}, {&w.gate, &x, &y, &step, &w.up},
        {begins[p], counts[p]}, {gs, 1, 1});
    for (uint32_t r = begins[p]; r < begins[p] + counts[p]; ++r) want[r] = full[r];
    ASSERT_TRUE(compare(c.kernel() + " pair K=" + std::to_string(c.K) +
                            " F=" + std::to_string(c.F) + " lanes=" + std::to_string(lanes),
                        y.as<float>(), want, c.F, 1e-5));
  }
}
std::vector<PairCase> pair_cases() {
  std::vector<PairCase> v;
  for (Format f : kBlockFormats)
    for (uint32_t lanes : {0u, 128u}) v.push_back({f, row_k(f, 0, 160, 768), 301, lanes});
  for (uint32_t lanes : {kernels::kMatVecDotLanes, 128u}) v.push_back({Format::Q4_0, 160, 301, lanes, true});
  v.push_back({Format::Q4_K, 768, 301, kernels::kMatVecDotLanes, true});  // a Q4_K_M file's gate and up
  return v;
}
INSTANTIATE_TEST_SUITE_P(Kernel, MatVecPair, ::testing::ValuesIn(pair_cases()),
                         [](const auto& info) {
                           return test_name(info.param.kernel() +
                                            " lanes " + std::to_string(info.param.lanes));
                         });

// matmul_coop_splitk's PAIR (batched decode on tensor units): gate and up in
// one tile, gelu(gate) * up written as fp32 or as the down projection's fp16
// operand, for n token rows (the tile's rows past n, and the spare row after
// them, stay poison), every tile, fp32 and fp16 X, in two parts ([s, F) first).
struct SplitKPairCase {
  Format format;
  uint32_t K, F, n;
};
class SplitKPair : public ::testing::TestWithParam<SplitKPairCase> {};

TEST_P(SplitKPair, MatchesLinearThenGeglu) {
  const auto& info = device().ctx.info();
  if (!info.coopmat) GTEST_SKIP() << info.name << ": " << info.coopmat_note;
  const SplitKPairCase& c = GetParam();
  const auto gate_w = random_weights(c.format, c.F, c.K), up_w = random_weights(c.format, c.F, c.K);
  auto G = reference::dequantize(c.format, gate_w, size_t(c.F) * c.K);
  auto U = reference::dequantize(c.format, up_w, size_t(c.F) * c.K);
  const auto xs = random_floats(size_t(c.n) * c.K, -2.f, 2.f);
  std::vector<float> x16(xs.size());
  std::transform(G.begin(), G.end(), G.begin(), round_f16);
  std::transform(U.begin(), U.end(), U.begin(), round_f16);
  std::transform(xs.begin(), xs.end(), x16.begin(), round_f16);
  const auto g = reference::linear(x16, G, c.K, c.F), u = reference::linear(x16, U, c.K, c.F);
  const std::vector<float> gf(g.begin(), g.end()), uf(u.begin(), u.end());
  const auto full = reference::geglu(gf, uf);  // [n, F]
  HostBuffer x(xs.size() * 4), xh(fp16_x_bytes(c.n, c.K)), y(size_t(c.n + 1) * c.F * 4);
  x.fill<float>(xs);
  fill_fp16_rows(xh, xs);
  const auto step = step_buffer({c.n, 3, 0, 0});
  const uint32_t split = c.F / 3, begins[] = {split, 0}, counts[] = {c.F - split, split};
  for (const kernels::SplitKTile& tile : kernels::kSplitKTiles)
    for (bool x_half : {false, true})
      for (bool half_out : {false, true}) {
        const std::string what = variant("matmul_coop_splitk", c.format) + " pair K=" +
                                 std::to_string(c.K) + " F=" + std::to_string(c.F) + " n=" + std::to_string(c.n) +
                                 " tile " + std::to_string(tile.tokens) + "x" + std::to_string(tile.rows) + "/" +
                                 std::to_string(tile.split) + (x_half ? " fp16 X" : "") +
                                 (half_out ? " fp16 out" : "");
        y.poison();
        std::vector<double> want(size_t(c.n + 1) * c.F, NAN);
        for (int p = 0; p < 2; ++p) {
          PairPart w = pair_part(c.format, gate_w, up_w, c.K, begins[p], counts[p]);
          run(variant("matmul_coop_splitk", c.format), kernels::kLinearSplitKBindings,
              kernels::linear_coop_splitk_pair(c.K, c.F, info.coop_m, info.coop_n, info.coop_k,
                                               info.subgroup_size, tile, x_half, half_out),
              {&w.gate, x_half ? &xh : &x, &y, &step, &w.up}, {begins[p], counts[p]},
              {groups(counts[p], tile.rows / 2), groups(c.n, tile.tokens), 1});
          for (uint32_t t = 0; t < c.n; ++t)
            for (uint32_t r = begins[p]; r < begins[p] + counts[p]; ++r)
              want[size_t(t) * c.F + r] = full[size_t(t) * c.F + r];
        }
        const size_t count = size_t(c.n + 1) * c.F;
        const std::vector<float> got =
            half_out ? widen_fp16(y.as<_Float16>(), count)
                     : std::vector<float>(y.as<float>().begin(), y.as<float>().begin() + count);
        // fp32 products of the same fp16 inputs; an fp16 output adds one rounding.
        ASSERT_TRUE(compare(what, got, want, c.F, half_out ? 2e-3 : 1e-4));
      }
}
std::vector<SplitKPairCase> splitk_pair_cases() {
  std::vector<SplitKPairCase> v;
  for (Format f : kBlockFormats)
    for (uint32_t K : {row_k(f, 0, 160, 768), 1024u})
      for (uint32_t n : {5u, 20u}) v.push_back({f, K, 301, n});
  return v;
}
INSTANTIATE_TEST_SUITE_P(Kernel, SplitKPair, ::testing::ValuesIn(splitk_pair_cases()),
                         [](const auto& info) {
                           const auto& c = info.param;
                           return test_name(variant("matmul_coop_splitk", c.format) + " K " +
                                            std::to_string(c.K) + " n " + std::to_string(c.n));
                         });

}  // namespace
}  // namespace unicorn
