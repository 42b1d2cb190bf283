// Label kernel: every shader against the scalar CPU reference
// (tests/reference/cpu_reference.hpp), in every weight and cache format, at odd
// sizes, dispatched exactly as engine/core.hpp's Recorder does (same push
// constants, same group counts). Each case gets fresh random inputs; outputs
// are poisoned with NaN (0xff bytes) first, so an element the kernel should
// write and did not, or one it should leave alone and wrote, is caught.
// Failures print kernel, format and shape. The SPIR-V check at the end ties
// every module's specialization constants (count, types and names) to the
// kernels:: struct the engine passes for it.
#include <gtest/gtest.h>

#include <array>
#include <bit>
#include <boost/hana/accessors.hpp>
#include <boost/hana/for_each.hpp>
#include <boost/hana/members.hpp>
#include <boost/hana/size.hpp>
#include <cctype>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <unistd.h>
#include <algorithm>
#include <map>
#include <set>
#include <numeric>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <unicorn/spirv.hpp>
#include <vector>

#include "ggml_quantize.hpp"
#include "temp_dir.hpp"
#include "tuning_env.hpp"
#include "reference/cpu_reference.hpp"
#include "unicorn/engine/core.hpp"
#include "unicorn/engine/kernels.hpp"
#include "unicorn/gpu/context.hpp"
#include "unicorn/gpu/kernel.hpp"
#include "unicorn/gpu/memory.hpp"
#include "unicorn/gpu/timing.hpp"

namespace unicorn {
namespace test_spirv {  // test-only shaders (tests/kernel/CMakeLists.txt)
#include "k_unit_values_q4_1.h"
#include "k_unit_values_q5_0.h"
#include "k_unit_values_q5_1.h"
#include "k_unit_values_q4_k.h"
#include "k_unit_values_q5_k.h"
#include "k_unit_values_q6_k.h"
}  // namespace test_spirv
namespace {

using detail::StepHeader;

// A test-only module by name, beside the engine's (spirv::find).
std::span<const uint32_t> find_module(const std::string& name) {
  if (name == "k_unit_values_q4_1") return test_spirv::k_unit_values_q4_1;
  if (name == "k_unit_values_q5_0") return test_spirv::k_unit_values_q5_0;
  if (name == "k_unit_values_q5_1") return test_spirv::k_unit_values_q5_1;
  if (name == "k_unit_values_q4_k") return test_spirv::k_unit_values_q4_k;
  if (name == "k_unit_values_q5_k") return test_spirv::k_unit_values_q5_k;
  if (name == "k_unit_values_q6_k") return test_spirv::k_unit_values_q6_k;
  return spirv::find(name);
}

// A prefill chunk of one stream, as the tests describe it: n_tokens rows at
// positions start_pos + t, rows logit_begin .. + logit_count with logits.
struct ChunkStep {
  uint32_t n_tokens, start_pos, logit_begin, logit_count;
};

// ------------------------------------------------------------------ harness

// One device for the whole process (validation from UNICORN_VALIDATION, as ctest sets it).
struct Device {
  gpu::Context ctx{tools::device_from_env()};
  gpu::KernelCache kernels{ctx, tools::pipeline_cache_dir()};  // the tools' folder (tuning_env.hpp)
  gpu::DescriptorArena sets{ctx};
  gpu::Stream stream{ctx};
};
Device& device() {
  static Device d;
  return d;
}

// A mapped host-visible buffer (lavapipe and APUs run kernels on these directly).
class HostBuffer {
 public:
  explicit HostBuffer(uint64_t bytes)
      : set_(device().ctx, std::array<uint64_t, 1>{bytes}, gpu::MemoryKind::HostVisible,
             "kernel test buffer") {
    poison();
  }
  template <class T = float>
  std::span<T> as() const {
    return {reinterpret_cast<T*>(set_[0].mapped), size_t(set_[0].size / sizeof(T))};
  }
  std::span<std::byte> bytes() const { return as<std::byte>(); }
  template <class T>
  void fill(std::span<const T> v) const {
    std::memcpy(set_[0].mapped, v.data(), std::min<size_t>(v.size_bytes(), set_[0].size));
  }
  void poison() const { std::memset(set_[0].mapped, 0xff, set_[0].size); }  // NaN in f32/f16/bf16
  vk::DescriptorBufferInfo info() const { return set_[0].whole(); }

 private:
  gpu::BufferSet set_;
};

// The per-step buffer as the engine writes it: StepHeader (n_tokens; the
// first logit_count rows name the rows whose logits are wanted), then the
// rows (at least n_tokens of them).
HostBuffer step_buffer(uint32_t n_tokens, std::span<const detail::StepRow> rows, uint32_t logit_count) {
  const StepHeader h{n_tokens, logit_count};
  HostBuffer b(sizeof(StepHeader) + rows.size_bytes());
  std::memcpy(b.bytes().data(), &h, sizeof h);
  std::memcpy(b.bytes().data() + sizeof h, rows.data(), rows.size_bytes());
  return b;
}
// A batched decode step: one row per (stream, position).
HostBuffer step_buffer(std::span<const detail::StepRow> rows, uint32_t logit_count = 0) {
  return step_buffer(uint32_t(rows.size()), rows, logit_count);
}
// A prefill chunk: a row per token (its id, or 0; position start_pos + t;
// stream 0).
HostBuffer step_buffer(ChunkStep c, std::span<const uint32_t> tokens = {}) {
  std::vector<detail::StepRow> rows(std::max<size_t>({tokens.size(), c.n_tokens, 1}));
  for (size_t t = 0; t < rows.size(); ++t)
    rows[t] = {t < tokens.size() ? tokens[t] : 0u, c.start_pos + uint32_t(t), 0u, 0u};
  for (uint32_t i = 0; i < c.logit_count; ++i) rows[i].logit_source = c.logit_begin + i;
  return step_buffer(c.n_tokens, rows, c.logit_count);
}

uint32_t groups(uint32_t items, uint32_t per) { return (items + per - 1) / per; }


// One dispatch of `module` specialised by `spec`, made but not run (run,
// run_recorded). Bindings past those given (a kernel's optional ones, off by a
// spec constant here, such as attention's PREP) get the first buffer.
template <class Spec>
gpu::Dispatch make_dispatch(const std::string& module, uint32_t bindings, const Spec& spec,
                            std::initializer_list<const HostBuffer*> buffers, gpu::PushWords push,
                            std::array<uint32_t, 3> g, bool barrier_after) {
  Device& d = device();
  const auto words = find_module(module);
  if (words.empty()) throw std::runtime_error("no SPIR-V module named " + module);
  const gpu::Kernel& k = d.kernels.get(module, words, bindings, spec);
  std::vector<vk::DescriptorBufferInfo> infos;
  for (const HostBuffer* b : buffers) infos.push_back(b->info());
  while (infos.size() < bindings) infos.push_back(infos.front());
  return {&k, d.sets.make(k, infos), push, {g[0], g[1], g[2]}, barrier_after};
}
// Records the dispatches in order in one command buffer (a barrier after each
// that asks for one, as the engine's passes), runs it and waits; fails the
// test on any validation error it caused.
void run_recorded(std::initializer_list<gpu::Dispatch> dispatches) {
  Device& d = device();
  const uint32_t errors_before = d.ctx.validation_errors();
  d.stream.run_once([&](vk::CommandBuffer cb) {
    for (const gpu::Dispatch& x : dispatches) gpu::record(cb, x, x.barrier_after);
  });
  EXPECT_EQ(d.ctx.validation_errors(), errors_before) << "Vulkan validation errors";
}
// Runs one dispatch of `module` specialised by `spec` and waits.
template <class Spec>
void run(const std::string& module, uint32_t bindings, const Spec& spec,
         std::initializer_list<const HostBuffer*> buffers, gpu::PushWords push,
         std::array<uint32_t, 3> g) {
  SCOPED_TRACE(module);
  run_recorded({make_dispatch(module, bindings, spec, buffers, push, g, false)});
}

// Fresh inputs for every case: one generator, seeded once, drawn from in order.
std::mt19937& rng() {
  static std::mt19937 r(20250611);
  return r;
}
std::vector<float> random_floats(size_t n, float lo = -1.f, float hi = 1.f) {
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng());
  return v;
}

bool is_poison(float x) {
  uint32_t b;
  std::memcpy(&b, &x, 4);
  return b == 0xffffffffu;
}

// The first `count` fp16 values of a buffer as floats, the fp16 poison (all
// ones) kept as the f32 poison, for compare().
std::vector<float> widen_fp16(std::span<const _Float16> h, size_t count) {
  std::vector<float> v(count);
  for (size_t i = 0; i < count; ++i) {
    uint16_t b;
    std::memcpy(&b, &h[i], 2);
    const uint32_t poison = 0xffffffffu;
    if (b == 0xffffu) std::memcpy(&v[i], &poison, 4);
    else v[i] = float(h[i]);
  }
  return v;
}
// An fp16 output against the unrounded reference: one rounding, 2^-11 of the value.
constexpr double kFp16OutputTol = 6e-4;
// attention_coop against the reference on its own fp16-rounded inputs: what
// remains is the probabilities' fp16 rounding (relative 2^-11 per weight of
// an average); against the exact reference, the inputs' rounding as well.
constexpr double kCoopAttentionTol = 2e-3, kCoopAttentionExactTol = 1e-2;

// Compares a [rows, cols] output with the reference. NaN in `want` marks an
// element the kernel must not touch (it must still hold the poison). Error is
// |got - want| / scale, scale = max |want| over the compared elements (the
// output's scale; at least `floor`).
::testing::AssertionResult compare(const std::string& what, std::span<const float> got,
                                   std::span<const double> want, size_t cols, double tol,
                                   double floor = 1e-30) {
  double scale = floor;
  for (double w : want)
    if (!std::isnan(w)) scale = std::max(scale, std::abs(w));
  double worst = -1;
  size_t at = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::isnan(want[i])) {
      if (!is_poison(got[i]))
        return ::testing::AssertionFailure()
               << what << ": wrote (" << i / cols << "," << i % cols << ") = " << got[i]
               << ", which it must leave untouched";
      continue;
    }
    if (std::isnan(got[i]))
      return ::testing::AssertionFailure()
             << what << ": (" << i / cols << "," << i % cols << ") is "
             << (is_poison(got[i]) ? "not written (still poison)" : "NaN");
    const double e = std::abs(got[i] - want[i]) / scale;
    if (e > worst) worst = e, at = i;
  }
  if (worst > tol)
    return ::testing::AssertionFailure()
           << what << ": max rel err " << worst << " at (" << at / cols << "," << at % cols
           << "): got " << got[at] << ", want " << want[at] << " (scale " << scale << ", tol "
           << tol << ")";
  return ::testing::AssertionSuccess();
}

std::string lower(std::string_view s) {
  std::string r(s);
  for (char& c : r) c = char(std::tolower(c));
  return r;
}

const Format kAllFormats[] = {Format::F32,  Format::F16,  Format::BF16, Format::Q8_0, Format::Q4_0, Format::Q4_1,
                              Format::Q5_0, Format::Q5_1, Format::Q4_K, Format::Q5_K, Format::Q6_K};
const Format kBlockFormats[] = {Format::Q8_0, Format::Q4_0, Format::Q4_1, Format::Q5_0,
                                Format::Q5_1, Format::Q4_K, Format::Q5_K, Format::Q6_K};
// The formats whose tensor-unit operands are made in fp32 (coop_operands.glsl's
// UNIT_FP32), checked through a test shader: the K-quants, Q4_1, Q5_0, Q5_1.
const Format kUnitFp32Formats[] = {Format::Q4_1, Format::Q5_0, Format::Q5_1,
                                   Format::Q4_K, Format::Q5_K, Format::Q6_K};

// Row lengths per format: floats odd (77, 100), 32-blocks not a power of two of
// blocks (96, 160); K-quants whole 256-element superblocks (256, 768).
uint32_t row_k(Format f, uint32_t for_float, uint32_t for_block, uint32_t for_k_quant) {
  return is_k_quant(f) ? for_k_quant : is_block_quantized(f) ? for_block : for_float;
}

// Random weights of [rows, K] in `format`, as ggml would store them.
std::vector<std::byte> random_weights(Format format, size_t rows, size_t K) {
  std::vector<std::byte> bytes;
  tools::quantize(format, random_floats(rows * K), bytes);
  return bytes;
}

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
    s << kernels::variant(kernel.c_str(), format) << " K=" << K << " M=" << M << " n=" << n;
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
    const auto name = kernels::variant(c.kernel.c_str(), c.format);
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
  // (signed bytes). Each format's arithmetic in both of the kernel's input
  // paths, which the Q4_0 shapes above run in every shape: one token a
  // workgroup (its inputs staged once), and a batched step (inputs quantized
  // per block); the Q4_K_M file's Q6_K LM head over logit rows.
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
        {Format::Q4_K, 1280, split_rows}, {Format::Q5_K, 1280, split_rows}, {Format::Q6_K, 1280, split_rows}}) {
    const std::string module = kernels::variant("matvec_dot", format);
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

// A one-token decode step's q, k and v products and its attention with no
// barrier between them (Tuning::decode_attention_wait): the products' workgroups
// count themselves in a counter (SIGNAL) and every attention workgroup waits
// for the count (WAIT) before it reads the projections, then counts itself,
// the last one setting the counter back to 0. Its output and the key and value
// it writes into the cache are bit for bit those behind a barrier, twice in a
// row (so the recorded step runs again), with an F32 and an F16 cache.
TEST(AttentionWait, WaitingAttentionGivesTheBarriersBits) {
  const uint32_t H = 256, heads = 4, kvh = 2, hd = 64, slots = 16, pos = 9, counter = 3;
  const uint32_t qd = heads * hd, kd = kvh * hd, sg = device().ctx.info().subgroup_size;
  const Format wf = Format::Q8_0;
  auto weights = [&](uint32_t rows) {
    auto w = std::make_unique<HostBuffer>(rows * row_bytes(wf, H));
    w->fill<std::byte>(reference::to_device_layout(wf, random_weights(wf, rows, H)));
    return w;
  };
  const auto wq = weights(qd), wk = weights(kd), wv = weights(kd);
  HostBuffer x(H * 4), qw(hd * 4), kw(hd * 4), counters(16 * 4);
  x.fill<float>(random_floats(H));
  qw.fill<float>(random_floats(hd, 0.5f, 1.5f));
  kw.fill<float>(random_floats(hd, 0.5f, 1.5f));
  counters.fill<uint32_t>(std::vector<uint32_t>(16, 0));
  const auto step = step_buffer({1, pos, 0, 0});
  const uint32_t per_group = kernels::kMatVecRows * 128 / 32;
  const uint32_t count = groups(qd, per_group) + 2 * groups(kd, per_group);
  for (Format kv : {Format::F32, Format::F16}) {
    SCOPED_TRACE(format_name(kv));
    const size_t cache_bytes = size_t(kvh) * slots * hd * (kv == Format::F16 ? 2 : 4);
    std::vector<std::byte> cache(cache_bytes);  // earlier positions' keys and values
    const auto values = random_floats(cache_bytes / 2);
    for (size_t i = 0; i < values.size(); ++i) {
      const _Float16 h = static_cast<_Float16>(values[i]);
      if (kv == Format::F16) std::memcpy(cache.data() + 2 * i, &h, 2);
      else if (i < cache_bytes / 4) std::memcpy(cache.data() + 4 * i, &values[i], 4);
    }
    auto run_step = [&](bool waits, HostBuffer& q, HostBuffer& k, HostBuffer& v, HostBuffer& kc, HostBuffer& vc,
                        HostBuffer& o) {
      kc.fill<std::byte>(cache), vc.fill<std::byte>(cache);
      q.poison(), k.poison(), v.poison(), o.poison();
      auto product = [&](const HostBuffer& w, HostBuffer& y, uint32_t rows, bool barrier) {
        return make_dispatch("matvec_q8_0", kernels::kMatVecBindings,
                             kernels::MatVec{H, rows, 0, kernels::kMatVecRows, 32, 1, 0, 1, 1, 1, rows, waits ? 1u : 0u},
                             {&w, &x, &y, &step, &w, &counters}, {0, rows, counter}, {groups(rows, per_group), 1, 1},
                             barrier);
      };
      const uint32_t query_heads = kernels::attention_query_heads(heads, kvh, 1, 2);  // a pair where the group allows
      kernels::Attention spec{heads, kvh, hd, slots, 0, 0.125f, sg, 0, kernels::attention_threads(sg, hd, device().ctx.info().cpu()), 1, 1e4f, 1.f,
                              1e-6f, waits ? 1u : 0u, query_heads};
      run_recorded({product(*wq, q, qd, false), product(*wk, k, kd, false), product(*wv, v, kd, !waits),
                    make_dispatch(kernels::variant("attention", kv), kernels::kAttentionBindings, spec,
                                  {&q, &kc, &vc, &o, &step, &k, &v, &qw, &kw, &counters}, {0, kvh, counter, count},
                                  {1, heads / query_heads, 1}, true)});
    };
    HostBuffer q(qd * 4), k(kd * 4), v(kd * 4), kc(cache_bytes), vc(cache_bytes), o(qd * 4);
    run_step(false, q, k, v, kc, vc, o);
    HostBuffer q2(qd * 4), k2(kd * 4), v2(kd * 4), kc2(cache_bytes), vc2(cache_bytes), o2(qd * 4);
    for (int round = 0; round < 2; ++round) {
      run_step(true, q2, k2, v2, kc2, vc2, o2);
      for (uint32_t i = 0; i < qd; ++i)
        ASSERT_EQ(std::bit_cast<uint32_t>(o2.as<float>()[i]), std::bit_cast<uint32_t>(o.as<float>()[i]))
            << "round " << round << ": o[" << i << "] " << o2.as<float>()[i] << ", behind a barrier "
            << o.as<float>()[i];
      ASSERT_TRUE(std::ranges::equal(kc2.bytes(), kc.bytes())) << "round " << round << ": the key cache differs";
      ASSERT_TRUE(std::ranges::equal(vc2.bytes(), vc.bytes())) << "round " << round << ": the value cache differs";
      ASSERT_FALSE(std::ranges::equal(kc.bytes(), std::span(cache))) << "attention wrote no key";
      for (uint32_t i = 0; i < 16; ++i)
        ASSERT_EQ(counters.as<uint32_t>()[i], 0u) << "round " << round << ": counter " << i << " left set";
    }
  }
}

std::string test_name(std::string s) {
  for (char& ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s;
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

float round_f16(float v) { return float(static_cast<_Float16>(v)); }

double max_rel_err(std::span<const float> got, std::span<const double> want, std::span<const double> scale_of) {
  double scale = 1e-30, worst = 0;
  for (double w : scale_of)
    if (!std::isnan(w)) scale = std::max(scale, std::abs(w));
  for (size_t i = 0; i < want.size(); ++i)
    if (!std::isnan(want[i])) worst = std::max(worst, std::abs(got[i] - want[i]) / scale);
  return worst;
}

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
        run(kernels::variant(kernel.c_str(), c.format), kernels::kLinearSplitKBindings, spec,
            {&w, &x, &y, &step, &w}, {rb, rows}, {groups(rows, tile_rows), groups(c.n, tile_tokens), splits});
      else
        run(kernels::variant(kernel.c_str(), c.format), kernels::kLinearBindings, spec, {&w, &x, &y, &step},
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
    for (uint32_t K : is_k_quant(f) ? std::vector<uint32_t>{256, 768, 1024}
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
// Q5_0, Q5_1: load_k_unit, then k_unit_values, what they round to fp16 and
// stage) through a test shader that runs without tensor units, for weight 1
// and the fused pair's weight 2: bit for bit ggml's dequantisation. Odd row
// counts: a Q6_K or Q5_0 part then ends 2 bytes past a word. (LinearCoop and SplitKPair check the whole kernels where the
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

// matmul_coop_splitk's splits of K across workgroups: the output projections
// and a step's q, k and v, where their row tiles leave the GPU idle, never
// more than the consumer adds or than leave each subgroup its steps, and the
// same for every tile of one row count.
TEST(SplitKTile, SplitsKWhereTheRowTilesLeaveTheGpuIdle) {
  const kernels::SplitKTile small = kernels::kSplitKTiles[0], large = kernels::kSplitKTiles[1];
  EXPECT_EQ(kernels::splitk_splits(10240, 2560, small, kProjSlices), 3u);  // 4B down: 80 tiles -> 240
  EXPECT_EQ(kernels::splitk_splits(2048, 2560, small, kProjSlices), 3u);   // 4B o: 64 steps, 3 ranges
  EXPECT_EQ(kernels::splitk_splits(21504, 5376, small, kProjSlices), 3u);  // 27B down: 168 tiles -> 504 of 528
  EXPECT_EQ(kernels::splitk_splits(2560, 10240, small, kProjSlices), 4u);  // 320 tiles: 1,280 fill 97 % of 5 waves
  EXPECT_EQ(kernels::splitk_splits(10240, 2560, small, 1), 1u);            // a consumer of one sum
  EXPECT_EQ(kernels::splitk_splits(256, 2560, small, kProjSlices), 1u);    // 8 steps: 2 a subgroup
  EXPECT_EQ(kernels::splitk_splits(512, 1152, small, kProjSlices), 2u);    // 16 steps: two ranges of 2 a subgroup
  EXPECT_EQ(kernels::splitk_splits(512, 1152, small, 1), 1u);
  // q, k and v of a batched step, their rows together (they share waves),
  // into the decode lane's slices, which attention's PREP adds.
  EXPECT_EQ(kernels::splitk_splits(2560, 2048 + 2 * 1024, small, detail::kDecodeQkvSlices), 2u);  // 4B: 128 tiles -> 256
  EXPECT_EQ(kernels::splitk_splits(1152, 1024 + 2 * 256, small, detail::kDecodeQkvSlices), 4u);   // 1B: 48 tiles -> 192
  EXPECT_EQ(kernels::splitk_splits(5376, 4096 + 2 * 2048, small, detail::kDecodeQkvSlices), 1u);  // 27B: 256 tiles fill a wave
  // M: hidden sizes (the output projections) and q + k + v rows together
  // (the 1B's 1,536, the 4B's 4,096, the 12B's and 27B's 8,192).
  for (uint32_t K : {1024u, 1152u, 2048u, 2560u, 5376u, 10240u, 21504u})
    for (uint32_t M : {1152u, 1536u, 2560u, 4096u, 5376u, 8192u})
      EXPECT_EQ(kernels::splitk_splits(K, M, small, kProjSlices), kernels::splitk_splits(K, M, large, kProjSlices))
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
        const std::string name = kernels::variant(coop ? "matmul_coop" : "matmul", f);
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
        const auto picked = kernels::coop_tile(s.n, s.M, tile.x_half, kernels::kCoopWaveGroups,
                                               kernels::coop_max_splits(s.K, s.proj ? kProjSlices : 1));
        const bool is_picked = coop && tile_name(tile) == tile_name(picked);
        std::printf("[perf] %-16s n=%u K=%u M=%u tile %s%s: %.3f ms, %.1f TFLOP/s = %.1f%% "
                    "of 989.4 (H100 SXM dense fp16)\n", name.c_str(), s.n, s.K, s.M,
                    coop ? tile_name(tile).c_str() : "64x64 fp32", is_picked ? " (picked)" : "",
                    ms[1], tflops, 100.0 * tflops / 989.4);
      }
    }
}

// ------------------------------------------------------------------ staging

// The staging ring carries many times what its slots hold, every piece landing
// where it belongs: each slot reused while the others are in flight, pieces
// that fill a slot and pieces that do not, the last one short, and pieces
// large enough to be copied by several threads (the loader's path for every
// weight; the engine's slots are 8 MiB, these 1 MiB).
TEST(StagingRing, CarriesManyTimesWhatItsSlotsHold) {
  Device& d = device();
  constexpr uint64_t kSlot = 1u << 20;
  const uint64_t total = kSlot * gpu::StagingRing::kSlots * 3 + 12345;
  std::vector<std::byte> source(total);
  for (size_t i = 0; i < total; ++i) source[i] = std::byte(uint8_t(i * 131 + (i >> 11)));
  HostBuffer target(total);
  const vk::Buffer to = target.info().buffer;
  {
    gpu::StagingRing ring(d.ctx, kSlot);
    uint64_t done = 0;
    for (uint32_t piece = 0; done < total; ++piece) {
      const uint64_t n = std::min<uint64_t>(piece % 3 == 1 ? kSlot - 4099 : kSlot, total - done);
      ring.submit(std::span<const std::byte>(source).subspan(done, n), [&](vk::CommandBuffer cb, uint32_t slot) {
        cb.copyBuffer(ring.buffer(slot).handle, to, vk::BufferCopy{0, done, n});
      });
      done += n;
    }
    ring.wait_all();
    EXPECT_GT(ring.timing().submissions, 3u * gpu::StagingRing::kSlots);
  }
  size_t wrong = 0, first = total;
  const auto got = target.bytes();
  for (size_t i = 0; i < total; ++i)
    if (got[i] != source[i]) ++wrong, first = std::min(first, i);
  EXPECT_EQ(wrong, 0u) << "the first wrong byte is at " << first;
}

// ------------------------------------------------------------------ convert

struct ConvertCase {
  Format target;
  detail::SourceType source;
  float add;
  uint32_t first;  // destination offset, in elements (or blocks)
  std::string name() const {
    static const char* kSrc[] = {"F32", "F16", "BF16", "ggml blocks"};
    std::ostringstream s;
    s << kernels::variant("convert", target) << " from " << kSrc[uint32_t(source)]
      << " ADD=" << add << " first=" << first;
    return s.str();
  }
};

class Convert : public ::testing::TestWithParam<ConvertCase> {};

// Source values: random, plus (for the block formats) one block whose Q8_0
// quants land exactly on .5 ties (d = 1: x = j - 15.5, max 127) and one block
// of zeros (d = 0, the `id = 0` path; all ones with ADD = 1).
std::vector<float> convert_source_values(size_t n) {
  auto x = random_floats(n, -2.f, 2.f);
  if (n >= 96) {
    for (int j = 0; j < 32; ++j) x[32 + j] = j == 31 ? 127.f : float(j) - 15.5f;
    for (int j = 0; j < 32; ++j) x[64 + j] = 0.f;
  }
  return x;
}

TEST_P(Convert, MatchesGgmlQuantizerBitForBit) {
  const ConvertCase& c = GetParam();
  const uint32_t block = format_info(c.target).block_elems;
  const uint32_t count = block == 1 ? 1001 : 37;  // elements, or blocks
  const size_t elems = size_t(count) * block;

  // Source bytes as safetensors holds them (or, for ggml blocks, as a GGUF file
  // does), and the target's bytes as ggml's quantizer makes them.
  auto values = convert_source_values(elems);
  std::vector<std::byte> src, want;
  if (c.source == detail::SourceType::GgmlBlocks) {
    tools::quantize(c.target, values, src);
    want = src;
  } else {
    const auto src_format = c.source == detail::SourceType::F32   ? Format::F32
                            : c.source == detail::SourceType::F16 ? Format::F16
                                                                  : Format::BF16;
    tools::quantize(src_format, values, src);
    const auto back = reference::dequantize(src_format, src, elems);
    std::vector<float> decoded(elems);  // [elems] what the source bytes hold, + add
    for (size_t i = 0; i < elems; ++i) decoded[i] = back[i] + c.add;  // float add, as the shader
    tools::quantize(c.target, decoded, want);
  }

  // The destination part: `first` units, the range, one spare unit that must
  // stay poison; read back in ggml's layout to compare.
  const uint64_t unit = format_info(c.target).block_bytes;
  const uint32_t part_units = c.first + count + 1;
  HostBuffer s((src.size() + 3) / 4 * 4), d(part_units * unit);
  s.fill<std::byte>(src);
  const uint32_t gs = groups(count, 64);
  const uint32_t gx = std::min<uint32_t>(gs, 65535), gy = groups(gs, gx);
  run(kernels::variant("convert", c.target), kernels::kConvertBindings,
      kernels::Convert{uint32_t(c.source), c.add}, {&s, &d}, {count, c.first, part_units},
      {gx, gy, 1});

  const auto got = reference::from_device_layout(c.target, d.bytes());
  for (uint64_t i = 0; i < c.first * unit; ++i)
    ASSERT_EQ(uint8_t(got[i]), 0xff) << c.name() << ": wrote byte " << i << " before `first`";
  for (uint64_t i = (c.first + count) * unit; i < got.size(); ++i)
    ASSERT_EQ(uint8_t(got[i]), 0xff) << c.name() << ": wrote byte " << i << " past the range";
  size_t differ = 0;
  std::ostringstream first_diffs;
  for (size_t i = 0; i < want.size(); ++i)
    if (got[c.first * unit + i] != want[i]) {
      if (differ < 8)
        first_diffs << " byte " << i << " (block " << i / unit << "): got 0x" << std::hex
                    << int(got[c.first * unit + i]) << " want 0x" << int(want[i]) << std::dec
                    << ";";
      ++differ;
    }
  EXPECT_EQ(differ, 0u) << c.name() << ": " << differ << " of " << want.size()
                        << " bytes differ from tools::quantize:" << first_diffs.str();
}

std::vector<ConvertCase> convert_cases() {
  std::vector<ConvertCase> v;
  for (Format f : kAllFormats)
    for (auto s : {detail::SourceType::F32, detail::SourceType::F16, detail::SourceType::BF16})
      if (!is_block_quantized(f) || quantized_on_device(f))  // the others come only from GGUF blocks (the loader refuses floats)
      for (float add : {0.f, 1.f})
        for (uint32_t first : {0u, 5u}) v.push_back({f, s, add, first});
  // GGUF blocks moving into the planar device layout.
  for (Format f : kBlockFormats)
    for (uint32_t first : {0u, 5u}) v.push_back({f, detail::SourceType::GgmlBlocks, 0.f, first});
  return v;
}

INSTANTIATE_TEST_SUITE_P(Kernel, Convert, ::testing::ValuesIn(convert_cases()),
                         [](const auto& info) { return test_name(info.param.name()); });

// -------------------------------------------------------------------- embed

struct EmbedCase {
  Format format;
  uint32_t H;
  std::string name() const {
    return kernels::variant("embed", format) + " H=" + std::to_string(H);
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
    run(kernels::variant("embed", c.format), kernels::kEmbedBindings, spec, {&w, &step, &x},
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

// ------------------------------------------------------------------ rmsnorm

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

// ---------------------------------------------------------------- attn_prep

// A KV cache part as raw element bits (f16 in the low half), so contents can be
// checked bit for bit; all ones is the poison an unwritten element holds.
uint32_t kv_bits(const HostBuffer& b, bool f16, size_t i) {
  return f16 ? b.as<uint16_t>()[i] : b.as<uint32_t>()[i];
}
uint32_t to_kv_bits(float x, bool f16) {
  if (f16) {
    const _Float16 h = static_cast<_Float16>(x);
    uint16_t u;
    std::memcpy(&u, &h, 2);
    return u;
  }
  uint32_t u;
  std::memcpy(&u, &x, 4);
  return u;
}
float from_kv_bits(uint32_t u, bool f16) {
  if (f16) return reference::half_to_float(uint16_t(u));
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
// How far a cache element stored from the float32 value `want` +- `tol` may lie
// from `want`: an f16 cache adds half an f16 ulp (2^-11 relative, 2^-25 in the
// subnormal range).
double kv_tolerance(double want, double tol, bool f16) {
  return tol + (f16 ? (std::abs(want) + tol) * 0x1p-11 + 0x1p-25 : 0.0);
}

struct RopeCase {
  uint32_t hd;
  float theta, scale;
  uint32_t start_pos;
  Format kv = Format::F32;
  uint32_t heads_per_group = 4;  // attn_prep's HEADS_PER_GROUP: 4 for chunks, 1 for decode
  std::string name() const {
    std::ostringstream s;
    s << kernels::variant("attn_prep", kv) << " rope heads=4 kv=2 hd=" << hd << " theta=" << theta
      << " scale=" << scale << " start_pos=" << start_pos << " HEADS_PER_GROUP=" << heads_per_group;
    return s.str();
  }
  // theta^(2/hd) a power of two: every inv_freq, and p * inv_freq, is exact in float32.
  bool exact_frequencies() const {
    const double e = std::log2(double(theta)) * 2.0 / hd;
    return e == std::round(e) && std::exp2(std::log2(double(theta))) == double(theta);
  }
};
class Rope : public ::testing::TestWithParam<RopeCase> {};

// RoPE accuracy, through attn_prep: q_norm / k_norm (reference::rmsnorm per
// head), then the rotation; queries checked in place, keys in the cache (slot
// p % SLOTS of a 5-slot ring), values there bit for bit.
// Tolerance. The angle p * inv_freq is float32 by the model's definition, and
// Vulkan's pow() is not correctly rounded: inv_freq may differ from the
// reference's by a few ulp, which at p = 1e5 moves the angle by ~5e-3 rad (one
// float32 ulp of the angle itself is 7.8e-3 there). So at large positions a
// pair may rotate by up to angle * 2^-20 more or less than the reference, and
// the test allows exactly that (times the normalised pair's radius), plus 1e-4
// absolute. Where every inv_freq is a power of two (theta = 2^16, hd = 32;
// theta = 2^64, hd = 128) the angle is exact, and only 1e-4 absolute is
// allowed: that pins the large-angle sin/cos (the shader's Cody-Waite
// reduction) against double precision. The norm's float32 error (~1e-6 of
// values below ~4) is far inside 1e-4; an f16 cache adds half an f16 ulp.
TEST_P(Rope, MatchesReference) {
  const RopeCase& c = GetParam();
  const bool f16 = c.kv == Format::F16;
  const uint32_t heads = 4, kvh = 2, n = 3, slots = 5, half = c.hd / 2;
  const float eps = 1e-6f;
  const size_t q_row = size_t(heads) * c.hd, kv_row = size_t(kvh) * c.hd;
  const auto qs = random_floats(n * q_row, -2.f, 2.f), ks = random_floats(n * kv_row, -2.f, 2.f),
             vs = random_floats(n * kv_row, -2.f, 2.f);
  const auto qw = random_floats(c.hd, 0.5f, 1.5f), kw = random_floats(c.hd, 0.5f, 1.5f);
  // q has a spare row n: it must stay poison (the dispatch covers one token more).
  HostBuffer q((n + 1) * q_row * 4), k(ks.size() * 4), v(vs.size() * 4), qwb(c.hd * 4),
      kwb(c.hd * 4), kc(kv_row * slots * (f16 ? 2 : 4)), vc(kv_row * slots * (f16 ? 2 : 4));
  q.fill<float>(qs);
  k.fill<float>(ks);
  v.fill<float>(vs);
  qwb.fill<float>(qw);
  kwb.fill<float>(kw);
  const auto step = step_buffer({n, c.start_pos, 0, 0});
  // A head's threads must be whole subgroups (kernels::attn_prep_heads_per_group).
  const uint32_t heads_per_group = std::min(c.heads_per_group, 128 / device().ctx.info().subgroup_size);
  run(kernels::variant("attn_prep", c.kv), kernels::kAttnPrepBindings,
      kernels::AttnPrep{heads, kvh, c.hd, slots, c.theta, c.scale, eps, heads_per_group},
      {&q, &k, &v, &kc, &vc, &step, &qwb, &kwb}, {0, kvh},
      {n + 1, kernels::attn_prep_groups(heads + kvh, heads_per_group), 1});

  // Checks one [n, nheads * hd] tensor: got(t, e) against norm + rope of `in`.
  auto check = [&](const char* what, std::span<const float> in, std::span<const float> w,
                   uint32_t nheads, auto&& got) {
    const size_t row = size_t(nheads) * c.hd;
    const auto want = reference::norm_rope(in, w, nheads, c.hd, double(eps), c.theta, c.scale,
                                           c.start_pos);
    std::vector<double> normed(in.size());
    reference::rmsnorm(in, w, c.hd, double(eps), false, normed);
    double worst = -1;
    size_t at = 0;
    float got_at = 0;
    for (size_t e = 0; e < want.size(); ++e) {
      const size_t t = e / row, h = e % row / c.hd, i = e % c.hd % half;
      const size_t base = (t * nheads + h) * c.hd;
      const double angle = reference::rope_angle(uint32_t(c.start_pos + t), uint32_t(i), c.hd,
                                                 c.theta, c.scale);
      const double radius = std::hypot(normed[base + i], normed[base + i + half]);
      const double tol =
          1e-4 + (c.exact_frequencies() ? 0.0 : std::abs(angle) * 0x1p-20 * radius);
      const float g = got(t, e % row);
      if (std::isnan(g)) {
        ADD_FAILURE() << c.name() << " " << what << ": (" << t << "," << e % row
                      << ") not written";
        return;
      }
      const double err = std::abs(g - want[e]) / kv_tolerance(want[e], tol, f16 && what[0] == 'k');
      if (err > worst) worst = err, at = e, got_at = g;
    }
    EXPECT_LE(worst, 1.0) << c.name() << " " << what << ": error " << worst
                          << " x tolerance at (" << at / row << "," << at % row << "): got "
                          << got_at << ", want " << want[at];
  };
  check("q", qs, qw, heads, [&](size_t t, size_t e) { return q.as<float>()[t * q_row + e]; });
  // Cache: [kv head][slot][hd]; token t went to slot (start_pos + t) % SLOTS.
  auto cache_index = [&](size_t t, size_t e) {
    return (e / c.hd * slots + (c.start_pos + t) % slots) * c.hd + e % c.hd;
  };
  check("keys", ks, kw, kvh,
        [&](size_t t, size_t e) { return from_kv_bits(kv_bits(kc, f16, cache_index(t, e)), f16); });
  std::set<size_t> written;
  for (size_t t = 0; t < n; ++t)
    for (size_t e = 0; e < kv_row; ++e) {
      const size_t i = cache_index(t, e);
      written.insert(i);
      ASSERT_EQ(kv_bits(vc, f16, i), to_kv_bits(vs[t * kv_row + e], f16))
          << c.name() << ": value (" << t << "," << e << ") in the cache";
    }
  const uint32_t poison = f16 ? 0xffffu : 0xffffffffu;
  for (size_t i = 0; i < kv_row * slots; ++i)
    if (!written.count(i)) {
      ASSERT_EQ(kv_bits(kc, f16, i), poison) << c.name() << ": wrote key cache element " << i;
      ASSERT_EQ(kv_bits(vc, f16, i), poison) << c.name() << ": wrote value cache element " << i;
    }
  for (size_t e = n * q_row; e < (n + 1) * q_row; ++e)
    ASSERT_TRUE(is_poison(q.as<float>()[e])) << c.name() << ": wrote q's spare row";
}

std::vector<RopeCase> rope_cases() {
  std::vector<RopeCase> v;
  for (uint32_t hd : {32u, 256u})
    for (float theta : {1e4f, 1e6f})
      for (float scale : {1.f, 8.f})
        for (uint32_t p : {0u, 100000u}) v.push_back({hd, theta, scale, p});
  for (float scale : {1.f, 8.f}) {
    v.push_back({32, 65536.f, scale, 100000});
    v.push_back({128, 0x1p64f, scale, 100000});
  }
  // An f16 cache at a large position, and Gemma 3's 128k-context end.
  v.push_back({256, 1e6f, 8.f, 100000, Format::F16});
  v.push_back({128, 0x1p64f, 1.f, 100000, Format::F16});
  v.push_back({256, 1e6f, 8.f, 131069});
  // Decode's shape (a head per workgroup, a pair per thread) and two heads a
  // workgroup, on the large angles.
  v.push_back({256, 1e6f, 8.f, 100000, Format::F16, 1});
  v.push_back({128, 0x1p64f, 1.f, 100000, Format::F32, 1});
  v.push_back({32, 65536.f, 8.f, 100000, Format::F32, 1});
  v.push_back({256, 1e6f, 8.f, 131069, Format::F32, 2});
  return v;
}
INSTANTIATE_TEST_SUITE_P(Kernel, Rope, ::testing::ValuesIn(rope_cases()),
                         [](const auto& info) { return test_name(info.param.name()); });

// ----------------------------------------------------- attn_prep + attention

struct AttnCase {
  Format kv;  // F16 or F32
  uint32_t heads, kv_heads, hd, window;
  std::vector<uint32_t> chunks;  // token counts of successive steps from position 0
  std::vector<uint32_t> parts = {};  // kv heads per cache part; empty: one per part
  uint32_t index = 0;  // in attention_cases(): which tile shapes it runs
  std::string name() const {
    std::ostringstream s;
    s << "attention_" << lower(format_name(kv)) << " heads=" << heads << " kv=" << kv_heads
      << " hd=" << hd << " WINDOW=" << window;
    if (!parts.empty()) {
      s << " parts=";
      for (uint32_t p : parts) s << p << "_";
    }
    return s.str();
  }
};
class Attention : public ::testing::TestWithParam<AttnCase> {};

// The attention_tiled shapes the device holds for a head dim and cache precision.
std::vector<kernels::AttentionTile> attention_tiled_tiles(uint32_t hd, bool f16) {
  std::vector<kernels::AttentionTile> tiles;
  for (kernels::AttentionTile t : {kernels::AttentionTile{8, 16}, {16, 16}, {16, 32}, {32, 16}, {32, 32}})
    if (kernels::attention_tiled_shape_ok(hd, t) &&
        kernels::attention_tiled_shared_bytes(hd, f16 ? 2 : 4, t) <= device().ctx.info().max_shared_memory)
      tiles.push_back(t);
  return tiles;
}
// attention_coop's shapes where the device has cooperative matrices: the
// engine's pick for this head dim first, then the other shapes that fit.
std::vector<kernels::AttentionTile> attention_coop_tiles(uint32_t hd) {
  const auto& info = device().ctx.info();
  std::vector<kernels::AttentionTile> tiles;
  if (!info.coopmat) return tiles;
  const kernels::AttentionTile pick = kernels::attention_coop_shape(hd, info.coop_m, info.coop_n, info.coop_k,
                                                                    info.subgroup_size, info.max_shared_memory);
  if (pick.rows) tiles.push_back(pick);
  for (kernels::AttentionTile t : {kernels::AttentionTile{16, 16}, {32, 32}, {16, 64}, {64, 16}, {32, 32, 2}, {16, 32, 2},
                                   {16, 64, 2}, {64, 32, 1}})
    if (kernels::attention_coop_shape_ok(hd, info.coop_m, info.coop_n, info.coop_k, info.subgroup_size, t) &&
        kernels::attention_coop_shared_bytes(hd, info.coop_m, info.subgroup_size, t) <= info.max_shared_memory &&
        (t.rows != pick.rows || t.keys != pick.keys || t.split != pick.split))
      tiles.push_back(t);
  return tiles;
}

// A sequence of chunks from position 0: attn_prep then attention per step, per
// cache part (by default one part per kv head, so head_begin > 0 — no query
// groups — is exercised; some cases give a part several heads). Local layers
// get the tightest ring the engine's rule allows (window + longest chunk - 1
// slots), so it wraps several times; global layers hold every position. Each
// attn_prep dispatch covers one token more than the chunk (the Recorder records
// for the longest chunk). After each step: the queries, normed and rotated in
// place, and the keys this step wrote, against reference::norm_rope (keys within
// float32 error plus the cache's rounding); the values, and every cache element
// this step must not touch, bit for bit; the output against reference::attention
// over the whole history of reference queries and keys (normed, rotated,
// rounded to the cache's precision).
TEST_P(Attention, AttnPrepAndAttentionMatchReference) {
  const AttnCase& c = GetParam();
  const bool f16 = c.kv == Format::F16;
  const uint32_t total = std::accumulate(c.chunks.begin(), c.chunks.end(), 0u);
  const uint32_t longest = *std::max_element(c.chunks.begin(), c.chunks.end());
  const uint32_t slots = c.window ? c.window + longest - 1 : total;
  const float scale = 1.0f / std::sqrt(float(c.hd));
  const float theta = c.window ? 1e4f : 1e6f, rope_scale = c.window ? 1.f : 8.f, eps = 1e-6f;
  std::vector<uint32_t> part_heads = c.parts;
  if (part_heads.empty()) part_heads.assign(c.kv_heads, 1);
  ASSERT_EQ(std::accumulate(part_heads.begin(), part_heads.end(), 0u), c.kv_heads);
  const uint32_t parts = uint32_t(part_heads.size());
  std::vector<uint32_t> part_begin(parts, 0);
  for (uint32_t p = 1; p < parts; ++p) part_begin[p] = part_begin[p - 1] + part_heads[p - 1];
  const size_t kv_row = size_t(c.kv_heads) * c.hd, q_row = size_t(c.heads) * c.hd;
  const size_t elem = f16 ? 2 : 4;
  std::vector<HostBuffer> kc, vc;
  std::vector<std::vector<uint32_t>> want_kc, want_vc;  // expected bits; per part [heads][SLOTS][HEAD_DIM]
  const uint32_t poison = f16 ? 0xffffu : 0xffffffffu;
  for (uint32_t p = 0; p < parts; ++p) {
    const size_t cache_elems = size_t(part_heads[p]) * slots * c.hd;
    kc.emplace_back(cache_elems * elem);
    vc.emplace_back(cache_elems * elem);
    want_kc.emplace_back(cache_elems, poison);
    want_vc.emplace_back(cache_elems, poison);
  }
  auto round_kv = [&](float x) { return f16 ? float(static_cast<_Float16>(x)) : x; };
  std::vector<float> k_hist, v_hist;  // [positions, kv_heads * hd], reference, in cache precision
  std::vector<float> k_stored;  // [positions, kv_heads * hd], what attn_prep stored (checked)
  size_t rounded_other_way = 0;
  const auto qw = random_floats(c.hd, 0.5f, 1.5f), kw = random_floats(c.hd, 0.5f, 1.5f);
  HostBuffer qwb(c.hd * 4), kwb(c.hd * 4);
  qwb.fill<float>(qw);
  kwb.fill<float>(kw);
  // attn_prep as the engine records it: four heads a workgroup for a chunk, one for a decode step.
  auto prep_spec = [&](uint32_t n) {
    return kernels::AttnPrep{c.heads, c.kv_heads, c.hd, slots, theta, rope_scale, eps,
                             kernels::attn_prep_heads_per_group(n == 1, device().ctx.info().subgroup_size)};
  };
  // The engine's workgroup for this device (on a CPU device, fewer threads
  // than a GPU's: kernels::attention_threads); on a CPU device HALF_OUT below
  // runs a GPU's, so lavapipe checks both.
  const bool cpu = device().ctx.info().cpu();
  // One query head a workgroup here; HALF_OUT below pairs them where the kv
  // group allows (kernels::attention_query_heads, forced), PREP runs every
  // grouping it allows, each bit for bit the one-head output.
  const kernels::Attention attn_spec{c.heads, c.kv_heads, c.hd, slots, c.window, scale,
                                     device().ctx.info().subgroup_size, 0,
                                     kernels::attention_threads(device().ctx.info().subgroup_size, c.hd, cpu),
                                     0, 0.f, 0.f, 0.f, 0, 1};
  const uint32_t group = c.heads / c.kv_heads, paired_heads = kernels::attention_query_heads(c.heads, c.kv_heads, 1, 2);
  const std::string prep = kernels::variant("attn_prep", c.kv),
                    attn = kernels::variant("attention", c.kv),
                    tiled = kernels::variant("attention_tiled", c.kv);
  const std::vector<kernels::AttentionTile> tiles = attention_tiled_tiles(c.hd, f16);
  ASSERT_FALSE(tiles.empty()) << c.name() << ": no attention_tiled shape fits this device";
  // attention_coop, where the device has cooperative matrices.
  const auto& info = device().ctx.info();
  const std::string coop = kernels::variant("attention_coop", c.kv);
  const std::vector<kernels::AttentionTile> coop_tiles = attention_coop_tiles(c.hd);

  double coop_worst = 0;
  uint32_t pos = 0;
  for (uint32_t n : c.chunks) {
    const std::string at = c.name() + " SLOTS=" + std::to_string(slots) +
                           " start_pos=" + std::to_string(pos) + " n=" + std::to_string(n);
    const auto ks = random_floats(n * kv_row, -2.f, 2.f), vs = random_floats(n * kv_row);
    const auto qs = random_floats(n * q_row, -4.f, 4.f);  // [n, heads * hd]
    // q and o have a spare row n: it must stay poison.
    HostBuffer k(ks.size() * 4), v(vs.size() * 4), q((n + 1) * q_row * 4), o((n + 1) * q_row * 4);
    k.fill<float>(ks);
    v.fill<float>(vs);
    q.fill<float>(qs);
    const auto step = step_buffer({n, pos, 0, 0});
    // A decode step also runs attention with PREP (attn_prep's work inside),
    // from the raw projections, on copies of the caches as they are now.
    std::vector<HostBuffer> kc_prep, vc_prep;
    if (n == 1)
      for (uint32_t p = 0; p < parts; ++p) {
        kc_prep.emplace_back(kc[p].bytes().size());
        vc_prep.emplace_back(vc[p].bytes().size());
        std::memcpy(kc_prep[p].bytes().data(), kc[p].bytes().data(), kc[p].bytes().size());
        std::memcpy(vc_prep[p].bytes().data(), vc[p].bytes().data(), vc[p].bytes().size());
      }
    for (uint32_t p = 0; p < parts; ++p)
      run(prep, kernels::kAttnPrepBindings, prep_spec(n),
          {&q, &k, &v, &kc[p], &vc[p], &step, &qwb, &kwb}, {part_begin[p], part_heads[p]},
          {n + 1, kernels::attn_prep_groups((part_begin[p] == 0 ? c.heads : 0) + c.kv_heads,
                                            prep_spec(n).heads_per_group), 1});

    // Queries in place, keys in the cache: within 1e-5 (float32 error of values
    // below ~4) plus the angle's float32 error (angle * 2^-20 * the normed pair's
    // radius, as in the Rope test), plus the cache's rounding for keys.
    const auto q_ref = reference::norm_rope(qs, qw, c.heads, c.hd, double(eps), theta, rope_scale, pos);
    const auto k_ref = reference::norm_rope(ks, kw, c.kv_heads, c.hd, double(eps), theta, rope_scale, pos);
    std::vector<double> q_normed(qs.size()), k_normed(ks.size());
    reference::rmsnorm(qs, qw, c.hd, double(eps), false, q_normed);
    reference::rmsnorm(ks, kw, c.hd, double(eps), false, k_normed);
    auto rope_tol = [&](std::span<const double> normed, size_t t, size_t e) {  // e: [heads * hd]
      const uint32_t half = c.hd / 2, i = uint32_t(e % c.hd % half);
      const size_t base = t * (normed.size() / n) + e / c.hd * c.hd;
      const double angle = reference::rope_angle(pos + uint32_t(t), i, c.hd, theta, rope_scale);
      return 1e-5 + angle * 0x1p-20 * std::hypot(normed[base + i], normed[base + i + half]);
    };
    for (uint32_t t = 0; t < n; ++t)
      for (size_t e = 0; e < q_row; ++e) {
        const float got = q.as<float>()[t * q_row + e];
        ASSERT_LE(std::abs(got - q_ref[t * q_row + e]), rope_tol(q_normed, t, e))
            << at << ": query (" << t << "," << e << ") after attn_prep: got " << got << ", want "
            << q_ref[t * q_row + e];
      }
    for (size_t e = n * q_row; e < (n + 1) * q_row; ++e)
      ASSERT_TRUE(is_poison(q.as<float>()[e])) << at << ": attn_prep wrote q's spare row";
    // The attention reference's keys: the reference's, rounded to the cache's
    // precision. Where an f16 cache element rounded the other way (the float32
    // result and the exact one straddle a rounding boundary: one f16 ulp, a few
    // elements in a thousand) it takes the cache's value, which the check
    // above has pinned to the exact key.
    const size_t hist_begin = k_hist.size();
    k_stored.resize(hist_begin + k_ref.size());
    for (double x : k_ref) k_hist.push_back(round_kv(float(x)));
    for (float x : vs) v_hist.push_back(round_kv(x));
    for (uint32_t t = 0; t < n; ++t)
      for (uint32_t p = 0; p < parts; ++p)
        for (uint32_t h = 0; h < part_heads[p]; ++h)
          for (uint32_t d = 0; d < c.hd; ++d) {
            const size_t i = (size_t(h) * slots + (pos + t) % slots) * c.hd + d;
            const size_t e = t * kv_row + size_t(part_begin[p] + h) * c.hd + d;
            const uint32_t bits = kv_bits(kc[p], f16, i);
            const float got = from_kv_bits(bits, f16);
            ASSERT_LE(std::abs(got - k_ref[e]),
                      kv_tolerance(k_ref[e], rope_tol(k_normed, t, e % kv_row), f16))
                << at << ": key of token " << t << " kv head " << part_begin[p] + h << " d " << d
                << ": got " << got << ", want " << k_ref[e];
            if (f16 && got != k_hist[hist_begin + e]) ++rounded_other_way, k_hist[hist_begin + e] = got;
            k_stored[hist_begin + e] = got;
            want_kc[p][i] = bits;
            want_vc[p][i] = to_kv_bits(vs[e], f16);
          }
    // The caches, whole: this step's values, and nothing else changed.
    for (uint32_t p = 0; p < parts; ++p)
      for (size_t i = 0; i < want_kc[p].size(); ++i) {
        ASSERT_EQ(kv_bits(kc[p], f16, i), want_kc[p][i]) << at << ": key cache part " << p << " element " << i;
        ASSERT_EQ(kv_bits(vc[p], f16, i), want_vc[p][i]) << at << ": value cache part " << p << " element " << i;
      }

    for (uint32_t p = 0; p < parts; ++p)
      run(attn, kernels::kAttentionBindings, attn_spec, {&q, &kc[p], &vc[p], &o, &step},
          {part_begin[p], part_heads[p]}, {n, c.heads, 1});
    std::vector<float> q_ref_f(q_ref.begin(), q_ref.end());
    auto want = reference::attention(q_ref_f, k_hist, v_hist, c.heads, c.kv_heads, c.hd, c.window,
                                     scale, pos);
    want.resize(want.size() + q_row, NAN);  // the spare row stays poison
    ASSERT_TRUE(compare(at, o.as<float>(), want, q_row, 1e-5));
    // HALF_OUT: the same outputs as the output projection's fp16 operand, on
    // every other case (both cache formats, every head dim but 64, windows and
    // parts among them): one pipeline fewer for lavapipe to compile on the
    // others, a second at head dim 256 (notes/build_time.md).
    if (c.index % 2 == 1) {
      auto attn_half = attn_spec;
      attn_half.half_out = 1;
      attn_half.query_heads = paired_heads;
      if (cpu) attn_half.threads = kernels::attention_threads(device().ctx.info().subgroup_size, c.hd, false);
      o.poison();
      for (uint32_t p = 0; p < parts; ++p)
        run(attn, kernels::kAttentionBindings, attn_half, {&q, &kc[p], &vc[p], &o, &step},
            {part_begin[p], part_heads[p]}, {n, c.heads / paired_heads, 1});
      ASSERT_TRUE(compare(at + " HALF_OUT", widen_fp16(o.as<_Float16>(), want.size()), want, q_row, kFp16OutputTol));
      if (paired_heads > 1) {  // and one head a workgroup writes the same fp16 bits (a server's fixed passes pair by rows)
        const std::vector<_Float16> paired(o.as<_Float16>().begin(), o.as<_Float16>().begin() + n * q_row);
        attn_half.query_heads = 1;
        o.poison();
        for (uint32_t p = 0; p < parts; ++p)
          run(attn, kernels::kAttentionBindings, attn_half, {&q, &kc[p], &vc[p], &o, &step},
              {part_begin[p], part_heads[p]}, {n, c.heads, 1});
        for (size_t i = 0; i < paired.size(); ++i)
          ASSERT_EQ(std::bit_cast<uint16_t>(o.as<_Float16>()[i]), std::bit_cast<uint16_t>(paired[i]))
              << at << " HALF_OUT element " << i << ": two query heads a workgroup differ from one";
      }
    }
    if (n == 1) {  // PREP: the same output, and the same key and value in the cache
      HostBuffer q_raw((n + 1) * q_row * 4);
      q_raw.fill<float>(qs);
      auto fused = attn_spec;
      fused.prep = 1, fused.theta = theta, fused.rope_scale = rope_scale, fused.eps = eps;
      std::vector<uint32_t> one_head;  // the output bits with one query head a workgroup
      for (uint32_t query_heads = 1; query_heads <= kernels::kAttentionMaxQueryHeads; query_heads *= 2) {
        if (group % query_heads) continue;
        fused.query_heads = query_heads;
        o.poison();
        for (uint32_t p = 0; p < parts; ++p)
          run(attn, kernels::kAttentionBindings, fused,
              {&q_raw, &kc_prep[p], &vc_prep[p], &o, &step, &k, &v, &qwb, &kwb}, {part_begin[p], part_heads[p]},
              {n, c.heads / query_heads, 1});
        std::vector<uint32_t> bits;
        for (const float x : o.as<float>()) bits.push_back(std::bit_cast<uint32_t>(x));
        if (query_heads == 1) one_head = bits;
        else
          ASSERT_TRUE(std::ranges::equal(bits, one_head)) << at << " PREP: " << query_heads << " query heads a workgroup differ from one";
      }
      ASSERT_TRUE(compare(at + " PREP", o.as<float>(), want, q_row, 1e-5));
      for (uint32_t p = 0; p < parts; ++p)
        for (size_t i = 0; i < want_kc[p].size(); ++i) {
          const float a = from_kv_bits(kv_bits(kc_prep[p], f16, i), f16), b = from_kv_bits(want_kc[p][i], f16);
          if (want_kc[p][i] == poison) {
            ASSERT_EQ(kv_bits(kc_prep[p], f16, i), poison) << at << " PREP: key cache part " << p << " element " << i;
            continue;
          }
          ASSERT_LE(std::abs(a - b), (f16 ? 1e-3f : 1e-6f) * std::max(1.0f, std::abs(b)))
              << at << " PREP: key cache part " << p << " element " << i << ": " << a << " against attn_prep's " << b;
          ASSERT_EQ(kv_bits(vc_prep[p], f16, i), want_vc[p][i]) << at << " PREP: value cache part " << p << " element " << i;
        }
      // q, k and v in partial sums (a batched step's products split over K:
      // QKV_SLICES), added in order: the same output and cache bits as PREP
      // on their sums. The slices lie apart by strides unlike a row's, the
      // q's unlike the k's and v's. (After the checks above: these runs
      // rewrite the token's cache slot with the sums' key and value.)
      {
        constexpr uint32_t kSlices = 3;
        const uint32_t q_slice = 2 * q_row + 3, kv_slice = 3 * kv_row + 5;
        auto split = [&](const std::vector<float>& whole, uint32_t slice, std::vector<float>& sums) {
          std::vector<float> pieces(size_t(kSlices) * slice, std::numeric_limits<float>::quiet_NaN());
          const auto r0 = random_floats(whole.size(), -1.f, 1.f), r1 = random_floats(whole.size(), -1.f, 1.f);
          sums.resize(whole.size());
          for (size_t i = 0; i < whole.size(); ++i) {
            pieces[i] = r0[i], pieces[slice + i] = r1[i], pieces[2 * slice + i] = whole[i] - r0[i] - r1[i];
            sums[i] = (pieces[i] + pieces[slice + i]) + pieces[2 * slice + i];
          }
          return pieces;
        };
        std::vector<float> q_sum, k_sum, v_sum;
        const auto q_parts = split(std::vector<float>(qs.begin(), qs.begin() + q_row), q_slice, q_sum);
        const auto k_parts = split(ks, kv_slice, k_sum), v_parts = split(vs, kv_slice, v_sum);
        HostBuffer q_split(q_parts.size() * 4), k_split(k_parts.size() * 4), v_split(v_parts.size() * 4);
        q_split.fill<float>(q_parts), k_split.fill<float>(k_parts), v_split.fill<float>(v_parts);
        HostBuffer q_whole(q_row * 4), k_whole(k_sum.size() * 4), v_whole(v_sum.size() * 4);
        q_whole.fill<float>(q_sum), k_whole.fill<float>(k_sum), v_whole.fill<float>(v_sum);
        auto sliced = fused;
        sliced.query_heads = 1;
        auto bits_of = [&](const kernels::Attention& spec, HostBuffer& qb, HostBuffer& kb, HostBuffer& vb) {
          o.poison();
          for (uint32_t p = 0; p < parts; ++p)
            run(attn, kernels::kAttentionBindings, spec, {&qb, &kc_prep[p], &vc_prep[p], &o, &step, &kb, &vb, &qwb, &kwb},
                {part_begin[p], part_heads[p]}, {n, c.heads, 1});
          std::vector<uint32_t> bits;
          for (const float x : o.as<float>()) bits.push_back(std::bit_cast<uint32_t>(x));
          for (uint32_t p = 0; p < parts; ++p)
            for (size_t i = 0; i < want_kc[p].size(); ++i)
              bits.push_back(kv_bits(kc_prep[p], f16, i)), bits.push_back(kv_bits(vc_prep[p], f16, i));
          return bits;
        };
        const auto whole_bits = bits_of(sliced, q_whole, k_whole, v_whole);
        sliced.qkv_slices = kSlices, sliced.q_slice = q_slice, sliced.kv_slice = kv_slice;
        ASSERT_TRUE(std::ranges::equal(bits_of(sliced, q_split, k_split, v_split), whole_bits))
            << at << " PREP: q, k and v in " << kSlices << " partial sums differ from their sums";
      }
    }
    // The tiled kernel on the same step (dispatched for one token more than the
    // chunk, as the Recorder does for its longest chunk: the spare row's tile
    // must write nothing), in two of the tile shapes the device holds, taken in
    // turn by case, the second with HALF_OUT: every shape and both outputs run
    // on several cases. (Every shape on every case was ten pipelines a case
    // for lavapipe to compile, half of this suite's time on a fresh machine:
    // notes/build_time.md.)
    for (const uint32_t half_out : {0u, 1u}) {
      const kernels::AttentionTile tile = tiles[(c.index + half_out) % tiles.size()];
      o.poison();
      const kernels::AttentionTiled spec{c.heads, c.kv_heads, c.hd, slots, c.window, scale,
                                         tile.rows, tile.keys, half_out};
      for (uint32_t p = 0; p < parts; ++p)
        run(tiled, kernels::kAttentionTiledBindings, spec, {&q, &kc[p], &vc[p], &o, &step},
            {part_begin[p], part_heads[p]}, {groups((n + 1) * (c.heads / c.kv_heads), tile.rows), part_heads[p], 1});
      const std::string what = at + " " + tiled + " rows=" + std::to_string(tile.rows) +
                               " keys=" + std::to_string(tile.keys);
      ASSERT_TRUE(half_out ? compare(what + " HALF_OUT", widen_fp16(o.as<_Float16>(), want.size()), want,
                                     q_row, kFp16OutputTol)
                           : compare(what, o.as<float>(), want, q_row, 1e-5));
    }
    // The tensor-unit kernel rounds the scaled queries, the keys, the values
    // and the probabilities to fp16: against the reference with the same
    // inputs rounded (all but the probabilities' rounding, relative 2^-11 per
    // weight of an average), and against the exact one at fp16 input error.
    if (!coop_tiles.empty()) {
      std::vector<float> q16(q_ref.size()), k16(k_hist.size()), v16(v_hist.size());
      std::transform(q_ref.begin(), q_ref.end(), q16.begin(), [&](double x) { return round_f16(float(x) * scale); });
      std::transform(k_hist.begin(), k_hist.end(), k16.begin(), round_f16);
      std::transform(v_hist.begin(), v_hist.end(), v16.begin(), round_f16);
      auto want16 = reference::attention(q16, k16, v16, c.heads, c.kv_heads, c.hd, c.window, 1.0f, pos);
      want16.resize(want16.size() + q_row, NAN);
      for (const kernels::AttentionTile tile : coop_tiles)
        for (uint32_t variant = 0; variant < 3; ++variant) {  // fp32 out; fp16 out; row tiles in pairs
          const uint32_t half_out = variant == 1, pairs = variant == 2;
          o.poison();
          const kernels::AttentionCoop spec{c.heads, c.kv_heads, c.hd, slots, c.window, scale,
                                            tile.rows, tile.keys, half_out, info.coop_m, info.coop_n,
                                            info.coop_k, info.subgroup_size,
                                            kernels::attention_coop_threads(tile, info.coop_m, info.subgroup_size), pairs,
                                            tile.split};
          const uint32_t row_tiles = groups((n + 1) * (c.heads / c.kv_heads), tile.rows);
          for (uint32_t p = 0; p < parts; ++p)
            run(coop, kernels::kAttentionCoopBindings, spec, {&q, &kc[p], &vc[p], &o, &step},
                {part_begin[p], part_heads[p]}, {pairs ? groups(row_tiles, 2) : row_tiles, part_heads[p], 1});
          const std::string what = at + " " + coop + " rows=" + std::to_string(tile.rows) +
                                   " keys=" + std::to_string(tile.keys) + " split=" + std::to_string(tile.split) +
                                   (half_out ? " HALF_OUT" : "") + (pairs ? " PAIRS" : "");
          const auto got = half_out ? widen_fp16(o.as<_Float16>(), want.size())
                                    : std::vector<float>(o.as<float>().begin(), o.as<float>().end());
          ASSERT_TRUE(compare(what, got, want16, q_row, kCoopAttentionTol + (half_out ? kFp16OutputTol : 0)));
          ASSERT_TRUE(compare(what + " vs exact", got, want, q_row, kCoopAttentionExactTol));
          coop_worst = std::max(coop_worst, max_rel_err(got, want16, want16));
        }
    }
    pos += n;
  }
  if (!coop_tiles.empty()) std::printf("[ attention_coop ] %s: max rel err %.2e vs fp16-rounded inputs\n", c.name().c_str(), coop_worst);
  EXPECT_LE(rounded_other_way, k_hist.size() / 100) << c.name() << ": f16 keys rounded the other way";

  // The caches: slot s holds the latest position p with p % SLOTS == s, bit for bit.
  for (uint32_t p = 0; p < parts; ++p)
    for (uint32_t h = 0; h < part_heads[p]; ++h)
      for (uint32_t s = 0; s < std::min(slots, total); ++s) {
        const uint32_t last = (total - 1 - s) / slots * slots + s;
        for (uint32_t d = 0; d < c.hd; ++d) {
          const size_t i = (size_t(h) * slots + s) * c.hd + d;
          const size_t e = size_t(last) * kv_row + size_t(part_begin[p] + h) * c.hd + d;
          ASSERT_EQ(from_kv_bits(kv_bits(vc[p], f16, i), f16), v_hist[e])
              << prep << " kv head " << part_begin[p] + h << " slot " << s << " d " << d;
          ASSERT_EQ(from_kv_bits(kv_bits(kc[p], f16, i), f16), k_stored[e])
              << prep << " key, kv head " << part_begin[p] + h << " slot " << s << " d " << d;
        }
      }
}

// The tile the engine picks: 8 rows for a small model's chunk, 16 for a large
// one (more where small heads need them); as many keys as fit (an f16 cache
// fits twice the keys); fewer rows or keys on a device with less shared memory
// (lavapipe: 32 KiB); none where no tile fits (Vulkan's minimum, 16 KiB, with
// 256-dim heads), so attention.comp serves prefill too.
TEST(AttentionTiledShape, FollowsTheChunkAndTheDevice) {
  using kernels::AttentionTile;
  auto same = [](AttentionTile a, AttentionTile b) { return a.rows == b.rows && a.keys == b.keys; };
  EXPECT_EQ(kernels::attention_tiled_rows(512, 4), 8u);    // 1B: 128 workgroups of 16 rows
  EXPECT_EQ(kernels::attention_tiled_rows(512, 32), 16u);  // 27B
  EXPECT_TRUE(same(kernels::attention_tiled_shape(256, 2, 49152, 8), {8, 32}));
  EXPECT_TRUE(same(kernels::attention_tiled_shape(256, 2, 49152, 16), {16, 32}));
  EXPECT_TRUE(same(kernels::attention_tiled_shape(256, 4, 49152, 16), {16, 16}));
  EXPECT_TRUE(same(kernels::attention_tiled_shape(128, 2, 49152, 16), {16, 32}));
  EXPECT_TRUE(same(kernels::attention_tiled_shape(256, 2, 32768, 16), {16, 16}));
  EXPECT_TRUE(same(kernels::attention_tiled_shape(256, 4, 32768, 16), {8, 16}));
  EXPECT_TRUE(same(kernels::attention_tiled_shape(32, 4, 32768, 8), {16, 32}));  // the tiny model
  EXPECT_TRUE(same(kernels::attention_tiled_shape(256, 4, 16384, 16), {}));
  EXPECT_TRUE(same(kernels::attention_tiled_shape(256, 2, 49152, 0), {}));  // UNICORN_ATTENTION_ROWS=0
  for (uint32_t hd : {32u, 64u, 96u, 128u, 256u})
    for (uint32_t rows : {8u, 16u, 32u}) {
      const AttentionTile t = kernels::attention_tiled_shape(hd, 2, 49152, rows);
      EXPECT_TRUE(!t.rows || kernels::attention_tiled_shape_ok(hd, t)) << "hd=" << hd << " rows=" << rows;
    }
}

// attention_coop's tile: the most rows x keys that fit (on a tie more rows),
// in whole subgroups of the matrix's rows; 64 x 32 for the 27B's 128-dim
// heads in 48 KiB, 48 x 16 for 256-dim heads; none where no tile fits.
// attn_prep: four heads a workgroup for a chunk, one for a decode step; a
// head's threads stay whole subgroups (two heads with 64-lane subgroups).
TEST(AttnPrepShape, HeadsPerWorkgroup) {
  EXPECT_EQ(kernels::attn_prep_heads_per_group(false, 32), 4u);
  EXPECT_EQ(kernels::attn_prep_heads_per_group(false, 8), 4u);
  EXPECT_EQ(kernels::attn_prep_heads_per_group(false, 64), 2u);
  EXPECT_EQ(kernels::attn_prep_heads_per_group(false, 128), 1u);
  EXPECT_EQ(kernels::attn_prep_heads_per_group(true, 32), 1u);
  EXPECT_EQ(kernels::attn_prep_groups(32 + 16, 4), 12u);  // 27B: query and kv heads of a token
  EXPECT_EQ(kernels::attn_prep_groups(4 + 1, 4), 2u);
}

TEST(AttentionCoopShape, MostRowsTimesKeysThatFit) {
  auto same = [](kernels::AttentionTile a, kernels::AttentionTile b) {
    return a.rows == b.rows && a.keys == b.keys && a.split == b.split;
  };
  // The 27B's 128-dim heads: 64 rows x 32 keys, two subgroups per 16 rows;
  // 256-dim heads: 48 x 16, one (16 keys do not split in two 16-key matrices).
  EXPECT_TRUE(same(kernels::attention_coop_shape(128, 16, 16, 16, 32, 49152), {64, 32, 2}));
  EXPECT_TRUE(same(kernels::attention_coop_shape(128, 16, 16, 16, 32, 49152, 64, 64, 1), {64, 32, 1}));
  EXPECT_TRUE(same(kernels::attention_coop_shape(256, 16, 16, 16, 32, 49152), {48, 16, 1}));
  EXPECT_TRUE(same(kernels::attention_coop_shape(128, 16, 16, 16, 32, 65536), {64, 48, 1}));  // 48 keys: 24 a subgroup
  EXPECT_TRUE(same(kernels::attention_coop_shape(256, 16, 16, 16, 32, 16384), {}));
  // Row tiles in pairs where one each would be more workgroups than a wave:
  // the 27B's pp512 (16 row tiles x 16 kv heads), not the 4B's (22 x 4).
  EXPECT_TRUE(kernels::attention_coop_pairs(16 * 16, 132));
  EXPECT_FALSE(kernels::attention_coop_pairs(22 * 4, 132));
  // 64-lane subgroups (RDNA3 wave64): twice the partial maxima.
  EXPECT_TRUE(same(kernels::attention_coop_shape(128, 16, 16, 16, 64, 49152), {64, 32, 2}));
  EXPECT_EQ(kernels::attention_coop_shared_bytes(128, 16, 64, {64, 32, 1}),
            kernels::attention_coop_shared_bytes(128, 16, 32, {64, 32, 1}) + 4 * 4 * 32);
  // Not a whole number of matrices, more named accumulators than the kernel
  // has, a split of 16 keys, or probabilities that overflow the key tile.
  EXPECT_FALSE(kernels::attention_coop_shape_ok(120, 16, 16, 16, 32, {64, 32}));
  EXPECT_FALSE(kernels::attention_coop_shape_ok(512, 16, 16, 16, 32, {16, 16}));
  EXPECT_TRUE(kernels::attention_coop_shape_ok(512, 16, 16, 16, 32, {16, 32, 2}));
  EXPECT_FALSE(kernels::attention_coop_shape_ok(128, 16, 16, 16, 32, {64, 80}));
  EXPECT_FALSE(kernels::attention_coop_shape_ok(128, 16, 16, 16, 32, {40, 32}));
  EXPECT_FALSE(kernels::attention_coop_shape_ok(128, 16, 16, 16, 32, {64, 16, 2}));
  EXPECT_FALSE(kernels::attention_coop_shape_ok(16, 16, 16, 16, 32, {64, 32, 2}));
  for (uint32_t hd : {32u, 64u, 96u, 128u, 256u})
    for (uint32_t bytes : {16384u, 32768u, 49152u, 65536u}) {
      const kernels::AttentionTile t = kernels::attention_coop_shape(hd, 16, 16, 16, 32, bytes);
      EXPECT_TRUE(!t.rows || (kernels::attention_coop_shape_ok(hd, 16, 16, 16, 32, t) &&
                              kernels::attention_coop_shared_bytes(hd, 16, 32, t) <= bytes))
          << "hd=" << hd << " bytes=" << bytes;
    }
}

std::vector<AttnCase> attention_cases() {
  // 97 positions: prefill chunks, decode steps, more than one 64-key tile.
  const std::vector<uint32_t> chunks = {20, 1, 13, 1, 1, 30, 5, 1, 25};
  // Four factors of two levels each (cache format, window, query groups, head
  // dim) in half of their 16 combinations: those with an even count of second
  // levels. Each pair of factors still meets in all four of its combinations
  // (a 2^(4-1) design of resolution IV), and each case is seven pipelines for
  // lavapipe to compile on a fresh machine, 4.5 s at head dim 256
  // (notes/build_time.md).
  std::vector<AttnCase> v;
  for (Format kv : {Format::F16, Format::F32})
    for (uint32_t window : {0u, 24u})
      for (auto [h, kvh] : {std::pair{4u, 2u}, std::pair{8u, 1u}})
        for (uint32_t hd : {32u, 256u}) {
          const int second_levels = (kv == Format::F32) + (window != 0) + (h == 8) + (hd == 256);
          if (second_levels % 2 == 0) v.push_back({kv, h, kvh, hd, window, chunks});
        }
  // Prefill chunks of many row tiles, with query groups of 2 (27B's) and 4
  // (1B's): the ring of a local layer wraps inside a chunk, and a chunk starts
  // mid-prompt with keys before it in the cache. Cache format and window
  // crossed, the shape the parity of the two, so each factor pair meets in
  // all its combinations.
  const std::vector<uint32_t> long_chunks = {70, 1, 45, 3};
  for (Format kv : {Format::F16, Format::F32})
    for (uint32_t window : {0u, 40u}) {
      if ((kv == Format::F32) == (window != 0))
        v.push_back({kv, 4, 2, 128, window, long_chunks});
      else
        v.push_back({kv, 4, 1, 256, window, long_chunks});
    }
  // A window wider than a tile, and a head_dim that is no multiple of 64.
  v.push_back({Format::F16, 4, 2, 96, 70, chunks});
  v.push_back({Format::F32, 4, 2, 96, 0, chunks});
  // Cache parts of several kv heads: the second starts at head 1 (no query groups).
  v.push_back({Format::F16, 8, 4, 64, 24, chunks, {1, 3}});
  v.push_back({Format::F32, 8, 4, 256, 0, chunks, {3, 1}});
  v.push_back({Format::F32, 8, 4, 32, 24, chunks, {4}});
  for (size_t i = 0; i < v.size(); ++i) v[i].index = uint32_t(i);
  return v;
}
INSTANTIATE_TEST_SUITE_P(Kernel, Attention, ::testing::ValuesIn(attention_cases()),
                         [](const auto& info) { return test_name(info.param.name()); });

// A batched decode step: three rows of three streams, each at its own position,
// over a cache of 3 streams x 2 kv heads = 6 rows in two parts, [0, 4) and
// [4, 6) (a part boundary inside stream 1). attn_prep writes each row's key
// and value into its own stream's rows at slot pos % SLOTS and nothing else
// (every other element bit for bit unchanged); attention reads each row's own
// stream up to its own position: against reference::attention over that
// stream's cache, with the kernel's rotated queries and stored keys as inputs.
TEST(AttentionStreams, EachRowItsOwnStreamAndPosition) {
  const uint32_t heads = 4, kvh = 2, hd = 32, slots = 16;
  const std::vector<detail::StepRow> rows = {{0, 7, 2}, {0, 3, 0}, {0, 12, 1}};
  const uint32_t n = uint32_t(rows.size()), q_row = heads * hd, kv_row = kvh * hd;
  const uint32_t part_begin[] = {0, 4}, part_rows[] = {4, 2};
  const float scale = 1.0f / std::sqrt(float(hd)), theta = 1e4f, eps = 1e-6f;
  std::vector<std::vector<float>> k_old, v_old;
  std::vector<HostBuffer> kc, vc;
  for (uint32_t p = 0; p < 2; ++p) {
    const size_t elems = size_t(part_rows[p]) * slots * hd;
    k_old.push_back(random_floats(elems, -2.f, 2.f));
    v_old.push_back(random_floats(elems));
    kc.emplace_back(elems * 4);
    vc.emplace_back(elems * 4);
    kc[p].fill<float>(k_old[p]);
    vc[p].fill<float>(v_old[p]);
  }
  const auto qs = random_floats(n * q_row, -4.f, 4.f), ks = random_floats(n * kv_row, -2.f, 2.f),
             vs = random_floats(n * kv_row);
  const auto qw = random_floats(hd, 0.5f, 1.5f), kw = random_floats(hd, 0.5f, 1.5f);
  HostBuffer q(qs.size() * 4), k(ks.size() * 4), v(vs.size() * 4), o(qs.size() * 4), qwb(hd * 4), kwb(hd * 4);
  q.fill<float>(qs);
  k.fill<float>(ks);
  v.fill<float>(vs);
  qwb.fill<float>(qw);
  kwb.fill<float>(kw);
  const auto step = step_buffer(rows);
  const std::string prep = kernels::variant("attn_prep", Format::F32), attn = kernels::variant("attention", Format::F32);
  for (uint32_t p = 0; p < 2; ++p)
    run(prep, kernels::kAttnPrepBindings, kernels::AttnPrep{heads, kvh, hd, slots, theta, 1.f, eps, 1},
        {&q, &k, &v, &kc[p], &vc[p], &step, &qwb, &kwb}, {part_begin[p], part_rows[p]},
        {n, kernels::attn_prep_groups((part_begin[p] == 0 ? heads : 0) + kvh, 1), 1});

  // The caches: element (cache row R, slot, d), R = stream * kvh + kv head.
  auto at = [&](uint32_t R, uint32_t slot, uint32_t d) {
    const uint32_t p = R < part_begin[1] ? 0 : 1;
    return (size_t(R - part_begin[p]) * slots + slot) * hd + d;
  };
  auto part_of = [&](uint32_t R) { return R < part_begin[1] ? 0u : 1u; };
  for (uint32_t R = 0; R < 6; ++R)
    for (uint32_t slot = 0; slot < slots; ++slot) {
      const uint32_t stream = R / kvh, h = R % kvh, p = part_of(R);
      const auto row = std::find_if(rows.begin(), rows.end(), [&](const detail::StepRow& r) {
        return r.stream == stream && r.pos % slots == slot;
      });
      const uint32_t t = uint32_t(row - rows.begin());
      const auto k_ref = row == rows.end() ? std::vector<double>{}
                         : reference::norm_rope(std::span(ks).subspan(t * kv_row, kv_row), kw, kvh, hd,
                                                double(eps), theta, 1.f, row->pos);
      for (uint32_t d = 0; d < hd; ++d) {
        const size_t i = at(R, slot, d);
        const float got_k = kc[p].as<float>()[i], got_v = vc[p].as<float>()[i];
        if (row == rows.end()) {
          ASSERT_EQ(std::bit_cast<uint32_t>(got_k), std::bit_cast<uint32_t>(k_old[p][i]))
              << "attn_prep wrote key row " << R << " slot " << slot << ", no step row's";
          ASSERT_EQ(std::bit_cast<uint32_t>(got_v), std::bit_cast<uint32_t>(v_old[p][i]))
              << "attn_prep wrote value row " << R << " slot " << slot << ", no step row's";
        } else {
          ASSERT_NEAR(got_k, k_ref[h * hd + d], 1e-4) << "key of step row " << t << " kv head " << h;
          ASSERT_EQ(got_v, vs[t * kv_row + h * hd + d]) << "value of step row " << t << " kv head " << h;
        }
      }
    }

  // One query head a workgroup, then two (a kv group's both): the same bits.
  std::vector<float> one_head;
  for (uint32_t query_heads : {1u, 2u}) {
    for (uint32_t p = 0; p < 2; ++p)
      run(attn, kernels::kAttentionBindings,
          kernels::Attention{heads, kvh, hd, slots, 0, scale, device().ctx.info().subgroup_size, 0,
                             kernels::attention_threads(device().ctx.info().subgroup_size, hd,
                                                        device().ctx.info().cpu()),
                             0, 0.f, 0.f, 0.f, 0, query_heads},
          {&q, &kc[p], &vc[p], &o, &step}, {part_begin[p], part_rows[p]}, {n, heads / query_heads, 1});
    if (query_heads == 1) {
      one_head.assign(o.as<float>().begin(), o.as<float>().end());
      std::ranges::fill(o.as<float>(), 0.f);
      continue;
    }
    for (size_t i = 0; i < one_head.size(); ++i)
      ASSERT_EQ(std::bit_cast<uint32_t>(o.as<float>()[i]), std::bit_cast<uint32_t>(one_head[i]))
          << "attention output " << i << ": two query heads a workgroup differ from one";
  }
  for (uint32_t t = 0; t < n; ++t) {
    const uint32_t pos = rows[t].pos;
    std::vector<float> k_hist, v_hist;  // [pos + 1, kvh * hd] of the row's stream (slot = position)
    for (uint32_t j = 0; j <= pos; ++j)
      for (uint32_t h = 0; h < kvh; ++h)
        for (uint32_t d = 0; d < hd; ++d) {
          const uint32_t R = rows[t].stream * kvh + h;
          k_hist.push_back(kc[part_of(R)].as<float>()[at(R, j, d)]);
          v_hist.push_back(vc[part_of(R)].as<float>()[at(R, j, d)]);
        }
    const auto q_t = q.as<float>().subspan(t * q_row, q_row);
    const auto want = reference::attention(q_t, k_hist, v_hist, heads, kvh, hd, 0, scale, pos);
    ASSERT_TRUE(compare("attention, step row " + std::to_string(t) + " (stream " +
                            std::to_string(rows[t].stream) + ", position " + std::to_string(pos) + ")",
                        o.as<float>().subspan(t * q_row, q_row), want, q_row, 1e-5));
  }
}


// A prefill chunk of several streams' segments (EngineCore::prefill of
// several prompt chunks): each segment starts at a multiple of the tile's
// tokens and the rows between segments repeat the previous segment's last
// row, as the engine lays them out. Every row's output must be bit for bit
// what its segment gives as a chunk of its own, in every tile shape of
// attention_tiled and (with tensor units) attention_coop, with row tiles in
// pairs, on a global and a sliding-window layer over a ring that wraps.
TEST(AttentionStreams, ChunkOfSeveralStreamsMatchesEachAlone) {
  const auto& info = device().ctx.info();
  const uint32_t heads = 4, kvh = 2, G = heads / kvh, hd = 64, streams = 3, q_row = heads * hd;
  const float scale = 1.0f / std::sqrt(float(hd));
  struct Segment {
    uint32_t stream, pos, n;
  };
  const Segment segments[] = {{2, 5, 11}, {0, 40, 7}, {1, 0, 9}};
  std::vector<std::vector<float>> qs;  // per segment [n, heads * hd]
  for (const Segment& g : segments) qs.push_back(random_floats(size_t(g.n) * q_row, -4.f, 4.f));
  const std::string tiled = kernels::variant("attention_tiled", Format::F16),
                    coop = kernels::variant("attention_coop", Format::F16);
  for (uint32_t window : {0u, 16u}) {
    const uint32_t slots = window ? window + 32 : 64, cache_rows = streams * kvh;
    const size_t cache_elems = size_t(cache_rows) * slots * hd;
    std::vector<_Float16> k16(cache_elems), v16(cache_elems);
    const auto kf = random_floats(cache_elems, -2.f, 2.f), vf = random_floats(cache_elems);
    std::transform(kf.begin(), kf.end(), k16.begin(), [](float x) { return _Float16(x); });
    std::transform(vf.begin(), vf.end(), v16.begin(), [](float x) { return _Float16(x); });
    HostBuffer kc(cache_elems * 2), vc(cache_elems * 2);
    kc.fill<_Float16>(k16);
    vc.fill<_Float16>(v16);
    // One dispatch of `module` over `rows` with queries `q`: the outputs [rows, heads * hd].
    const auto attend = [&](const std::string& module, uint32_t bindings, const auto& spec, uint32_t tile_rows,
                            bool pairs, std::span<const detail::StepRow> rows, const std::vector<float>& q) {
      const uint32_t n = uint32_t(rows.size());
      HostBuffer qb(q.size() * 4), o(q.size() * 4);
      qb.fill<float>(q);
      const auto step = step_buffer(rows);
      const uint32_t row_tiles = groups(n * G, tile_rows);
      run(module, bindings, spec, {&qb, &kc, &vc, &o, &step}, {0, cache_rows},
          {pairs ? groups(row_tiles, 2) : row_tiles, cache_rows, 1});
      return std::vector<float>(o.as<float>().begin(), o.as<float>().begin() + q.size());
    };
    const auto check = [&](const std::string& what, const std::string& module, uint32_t bindings, const auto& spec,
                           uint32_t tile_rows, bool pairs) {
      const uint32_t align = std::lcm(tile_rows, G) / G;
      std::vector<detail::StepRow> joint;
      std::vector<float> joint_q;
      std::vector<size_t> begin;
      for (size_t s = 0; s < std::size(segments); ++s) {
        while (joint.size() % align) {  // twins of the previous segment's last row
          joint.push_back(joint.back());
          joint_q.insert(joint_q.end(), joint_q.end() - q_row, joint_q.end());
        }
        begin.push_back(joint.size());
        const Segment& g = segments[s];
        for (uint32_t t = 0; t < g.n; ++t) joint.push_back({0, g.pos + t, g.stream, 0});
        joint_q.insert(joint_q.end(), qs[s].begin(), qs[s].end());
      }
      const auto together = attend(module, bindings, spec, tile_rows, pairs, joint, joint_q);
      for (size_t s = 0; s < std::size(segments); ++s) {
        const Segment& g = segments[s];
        std::vector<detail::StepRow> own;
        for (uint32_t t = 0; t < g.n; ++t) own.push_back({0, g.pos + t, g.stream, 0});
        const auto alone = attend(module, bindings, spec, tile_rows, pairs, own, qs[s]);
        for (uint32_t t = 0; t < g.n; ++t) {
          const float* a = alone.data() + size_t(t) * q_row;
          const float* b = together.data() + (begin[s] + t) * q_row;
          ASSERT_TRUE(std::all_of(a, a + q_row, [](float x) { return std::isfinite(x); }))
              << what << " window " << window << ": segment " << s << " alone left row " << t << " unwritten";
          ASSERT_EQ(std::memcmp(a, b, q_row * 4), 0)
              << what << " window " << window << ": stream " << g.stream << " position " << g.pos + t
              << " differs in a chunk of three streams (segments aligned to " << align << " tokens)";
        }
      }
    };
    const auto tiles = attention_tiled_tiles(hd, true);
    ASSERT_FALSE(tiles.empty());
    for (const kernels::AttentionTile t : tiles)
      check(tiled + " rows=" + std::to_string(t.rows) + " keys=" + std::to_string(t.keys), tiled,
            kernels::kAttentionTiledBindings,
            kernels::AttentionTiled{heads, kvh, hd, slots, window, scale, t.rows, t.keys, 0}, t.rows, false);
    for (const kernels::AttentionTile t : attention_coop_tiles(hd))
      for (uint32_t pairs : {0u, 1u})
        check(coop + " rows=" + std::to_string(t.rows) + " keys=" + std::to_string(t.keys) + " split=" +
                  std::to_string(t.split) + (pairs ? " PAIRS" : ""),
              coop, kernels::kAttentionCoopBindings,
              kernels::AttentionCoop{heads, kvh, hd, slots, window, scale, t.rows, t.keys, 0, info.coop_m,
                                     info.coop_n, info.coop_k, info.subgroup_size,
                                     kernels::attention_coop_threads(t, info.coop_m, info.subgroup_size), pairs,
                                     t.split},
              t.rows, pairs != 0);
  }
}
// ------------------------------------------- matvec, fused gate, up, GeGLU

struct PairCase {
  Format format;
  uint32_t K, F, lanes;  // lanes 0: the engine's choice
  bool int_dot = false;  // matvec_dot (the quants against the inputs as bytes)
  std::string kernel() const { return kernels::variant(int_dot ? "matvec_dot" : "matvec", format); }
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
        const std::string what = kernels::variant("matmul_coop_splitk", c.format) + " pair K=" +
                                 std::to_string(c.K) + " F=" + std::to_string(c.F) + " n=" + std::to_string(c.n) +
                                 " tile " + std::to_string(tile.tokens) + "x" + std::to_string(tile.rows) + "/" +
                                 std::to_string(tile.split) + (x_half ? " fp16 X" : "") +
                                 (half_out ? " fp16 out" : "");
        y.poison();
        std::vector<double> want(size_t(c.n + 1) * c.F, NAN);
        for (int p = 0; p < 2; ++p) {
          PairPart w = pair_part(c.format, gate_w, up_w, c.K, begins[p], counts[p]);
          run(kernels::variant("matmul_coop_splitk", c.format), kernels::kLinearSplitKBindings,
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
                           return test_name(kernels::variant("matmul_coop_splitk", c.format) + " K " +
                                            std::to_string(c.K) + " n " + std::to_string(c.n));
                         });

// -------------------------------------------------------------------- geglu

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

// ------------------------------------------------------------------- sample

// The sampler's parameters and penalty history, as the engine writes them, for
// `rows` logit rows: the same state in each, row r drawing as stream r.
HostBuffer sampler_buffer(detail::SamplerState st, std::span<const uint32_t> history = {},
                          uint32_t rows = 1, std::span<const uint32_t> counts = {}) {
  st.history_len = uint32_t(history.size());
  HostBuffer b(detail::kSamplerRowBytes * rows);
  std::vector<std::byte> bytes(detail::kSamplerRowBytes * rows);
  for (uint32_t r = 0; r < rows; ++r) {
    st.key = r;
    std::byte* p = bytes.data() + r * detail::kSamplerRowBytes;
    std::memcpy(p, &st, sizeof st);
    if (!history.empty()) std::memcpy(p + sizeof st, history.data(), history.size_bytes());
    if (!counts.empty()) std::memcpy(p + sizeof st + 4 * detail::kMaxPenaltyHistory, counts.data(), counts.size_bytes());
  }
  b.fill<std::byte>(bytes);
  return b;
}
detail::SamplerState greedy_state() { return {0.f, 0, 1.f, 0.f, 1.f, 0, 0, 0, 0}; }

// logits_max then sample, dispatched as the Recorder does ((PARTS, rows, 1),
// then (rows, 1, 1)), on `l` [rows, V] (penalised in place) with the sampler
// parameters `params`; `dispatch_rows` plays the graph's logit rows. Returns
// the partials buffer [rows, PARTS] of vec2 (max, index bits).
HostBuffer logits_max_then_sample(const HostBuffer& l, const HostBuffer& out, const HostBuffer& params,
                                  uint32_t V, uint32_t parts, uint32_t dispatch_rows,
                                  uint32_t logit_count, const HostBuffer* masks = nullptr,
                                  const HostBuffer* step_rows = nullptr) {
  HostBuffer partials(size_t(dispatch_rows) * parts * 8);
  const auto chunk = step_buffer({dispatch_rows, 0, 0, logit_count});
  const HostBuffer& step = step_rows ? *step_rows : chunk;
  run("logits_max", kernels::kLogitsMaxBindings, kernels::LogitsMax{V, parts},
      {&l, &partials, &params, &step, masks ? masks : &l}, {}, {parts, dispatch_rows, 1});
  run("sample", kernels::kSampleBindings, kernels::Sample{V, parts},
      {&l, &out, &params, &step, &partials}, {}, {dispatch_rows, 1, 1});
  return partials;
}

// logits_max's partial results of one row: slice j = [j * SLICE, min(V, +SLICE)),
// SLICE = ceil(V / PARTS); (largest logit, its lowest index), or (-inf, ~0u)
// for an empty slice. Checked bit for bit.
::testing::AssertionResult check_partials(const std::string& what, const HostBuffer& partials,
                                          uint32_t row, std::span<const float> logits,
                                          uint32_t parts) {
  const uint32_t V = uint32_t(logits.size()), slice = (V + parts - 1) / parts;
  const auto got = partials.as<uint32_t>();
  for (uint32_t j = 0; j < parts; ++j) {
    const uint32_t lo = std::min(V, j * slice), hi = std::min(V, lo + slice);
    float m = -INFINITY;
    uint32_t id = 0xffffffffu;
    if (lo < hi) id = lo + reference::argmax(logits.subspan(lo, hi - lo)), m = logits[id];
    uint32_t mb;
    std::memcpy(&mb, &m, 4);
    const size_t at = (size_t(row) * parts + j) * 2;
    if (got[at] != mb || got[at + 1] != id) {
      float gm;
      std::memcpy(&gm, &got[at], 4);
      return ::testing::AssertionFailure()
             << what << ": partial of row " << row << " slice " << j << " [" << lo << "," << hi
             << ") is (" << gm << ", " << got[at + 1] << "), want (" << m << ", " << id << ")";
    }
  }
  return ::testing::AssertionSuccess();
}

struct GreedyCase {
  uint32_t V, parts;
};
class Greedy : public ::testing::TestWithParam<GreedyCase> {};

// Temperature 0 is argmax. Rows: (0) small integers, so the maximum repeats
// (lowest index wins, also across slices); (1) continuous values with the
// maximum planted twice; (2) all equal -> 0; (3) continuous, the maximum the
// very last logit (in the last, possibly short, slice); (4) past logit_count:
// neither kernel may write it. logits_max's partials are checked too.
TEST_P(Greedy, FirstMaximumOfEachLogitRow) {
  const uint32_t V = GetParam().V, parts = GetParam().parts, rows = 5, logit_count = 4;
  const std::string what = "logits_max+sample (greedy) V=" + std::to_string(V) +
                           " PARTS=" + std::to_string(parts);
  std::vector<float> logits(size_t(rows) * V);  // [rows, V]
  std::uniform_int_distribution<int> small(0, 40);
  for (uint32_t i = 0; i < V; ++i) logits[i] = float(small(rng()));
  const auto cont = random_floats(V, -10.f, 10.f);
  std::copy(cont.begin(), cont.end(), logits.begin() + V);
  std::uniform_int_distribution<uint32_t> where(0, V - 1);
  const uint32_t a = where(rng()), b = where(rng());
  logits[V + a] = logits[V + b] = 11.f;
  std::fill(logits.begin() + 2 * V, logits.begin() + 3 * V, 0.25f);
  const auto cont2 = random_floats(V, -10.f, 10.f);
  std::copy(cont2.begin(), cont2.end(), logits.begin() + 3 * V);
  logits[4 * V - 1] = 10.5f;
  const auto last = random_floats(V);
  std::copy(last.begin(), last.end(), logits.begin() + 4 * V);

  HostBuffer l(logits.size() * 4), best(rows * 4);
  l.fill<float>(logits);
  const auto params = sampler_buffer(greedy_state(), {}, rows);
  const auto partials = logits_max_then_sample(l, best, params, V, parts, rows, logit_count);
  for (uint32_t r = 0; r < logit_count; ++r) {
    const auto row = std::span<const float>(logits).subspan(size_t(r) * V, V);
    EXPECT_TRUE(check_partials(what, partials, r, row, parts));
    EXPECT_EQ(best.as<uint32_t>()[r], reference::argmax(row)) << what << " row " << r;
  }
  EXPECT_EQ(best.as<uint32_t>()[3], V - 1) << what << ": the maximum in the last slice";
  for (uint32_t j = 0; j < parts * 2; ++j)
    EXPECT_EQ(partials.as<uint32_t>()[size_t(logit_count) * parts * 2 + j], 0xffffffffu)
        << what << ": logits_max wrote row 4, past logit_count";
  EXPECT_EQ(best.as<uint32_t>()[4], 0xffffffffu) << what << ": sample wrote row 4, past logit_count";
  for (size_t i = 0; i < logits.size(); ++i)
    if (l.as<float>()[i] != logits[i]) {
      ADD_FAILURE() << what << ": logits_max changed logit " << i << " without a penalty";
      break;
    }
}
INSTANTIATE_TEST_SUITE_P(
    Kernel, Greedy,
    ::testing::Values(GreedyCase{512, kernels::kLogitParts}, GreedyCase{1000, kernels::kLogitParts},
                      // V % PARTS != 0: the last slice holds one logit, two slices none.
                      GreedyCase{1001, kernels::kLogitParts},
                      GreedyCase{100, kernels::kLogitParts},  // V < PARTS: many empty slices
                      GreedyCase{5000, 7},                     // short last slice (710 of 715)
                      GreedyCase{512, kernels::logit_parts(512)},  // the tiny models' one slice
                      GreedyCase{262144, kernels::kLogitParts}),
    [](const auto& info) {
      return "sample_greedy_V" + std::to_string(info.param.V) + "_PARTS" +
             std::to_string(info.param.parts);
    });

// Draws `rows` samples at once (one per row, each its own random stream) from
// the same logits; returns the chosen ids.
std::vector<uint32_t> draw(const std::vector<float>& row, uint32_t rows, detail::SamplerState st,
                           std::span<const uint32_t> history = {},
                           uint32_t parts = kernels::kLogitParts) {
  const uint32_t V = uint32_t(row.size());
  std::vector<float> logits;
  for (uint32_t r = 0; r < rows; ++r) logits.insert(logits.end(), row.begin(), row.end());
  HostBuffer l(logits.size() * 4), out(rows * 4);
  l.fill<float>(logits);
  const auto params = sampler_buffer(st, history, rows);
  logits_max_then_sample(l, out, params, V, parts, rows, rows);
  const auto ids = out.as<uint32_t>();
  return {ids.begin(), ids.end()};
}

// Draws `batches` x `rows` tokens from a row of V logits at -60 but logits 2,
// 1 and 0 at ids[0..2] (temperature 0.8, the rest of `st` as given): each
// live token's frequency within 5 standard deviations of softmax(l / T), and
// no other token drawn.
void expect_frequencies(uint32_t V, std::array<uint32_t, 3> ids, detail::SamplerState st, int batches,
                        uint32_t rows, const char* what) {
  std::vector<float> row(V, -60.f);
  const float logit[] = {2.0f, 1.0f, 0.0f};
  for (size_t i = 0; i < 3; ++i) row[ids[i]] = logit[i];
  st.temperature = 0.8f;
  double z = 0;
  for (float v : logit) z += std::exp(v / st.temperature);
  std::map<uint32_t, int> count;
  for (int b = 0; b < batches; ++b) {
    st.counter = uint32_t(b);
    for (uint32_t id : draw(row, rows, st)) count[id]++;
  }
  const double n = double(batches) * rows;
  for (size_t i = 0; i < 3; ++i) {
    const double p = std::exp(logit[i] / st.temperature) / z, sd = std::sqrt(n * p * (1 - p));
    EXPECT_NEAR(count[ids[i]], n * p, 5 * sd) << what << ": token " << ids[i];
  }
  EXPECT_EQ(count[ids[0]] + count[ids[1]] + count[ids[2]], int(n)) << what;
}

// Frequencies follow softmax(l / T): three live tokens, 2048 draws.
TEST(Sample, FrequenciesFollowTheDistribution) {
  expect_frequencies(1000, {10, 500, 999}, {0.8f, 0, 1.f, 0.f, 1.f, 1234, 0, 0}, 8, 256,
                     "a token of probability ~e^-75 was drawn");
}

// The same through top-k's candidates (sample.comp gathers the logits a top-k
// cut keeps and runs top-p's bisection and the draw over them): top-k 3 keeps
// the three live tokens, top-p 0.99 all three of them.
TEST(Sample, TopKCandidatesFollowTheDistribution) {
  expect_frequencies(32768, {10, 16384, 32767}, {0.8f, 3, 0.99f, 0.f, 1.f, 4321, 0, 0}, 4, 256,
                     "top-k 3, top-p 0.99");
}

// Top-k keeps its cut's ties: 600 equal top logits with top-k 5 (candidates
// in shared memory) and 3000 (more than it holds: the whole-row way) are all
// drawn from, and never a token below them.
TEST(Sample, TopKKeepsTiesOnEitherPath) {
  for (uint32_t ties : {600u, 3000u}) {
    std::vector<float> row(20000, -5.f);
    for (uint32_t i = 0; i < ties; ++i) row[i * 6] = 1.0f;
    const auto ids = draw(row, 256, {1.0f, 5, 1.f, 0.f, 1.f, 99, 0, 0});
    std::set<uint32_t> seen;
    for (uint32_t id : ids) {
      EXPECT_TRUE(id % 6 == 0 && id / 6 < ties) << ties << " ties: drew token " << id << ", below the cut";
      seen.insert(id);
    }
    EXPECT_GT(seen.size(), 150u) << ties << " ties: 256 draws from them look degenerate";
  }
}

// Every draw lies in the set that top-k, top-p and min-p keep (computed here
// on the CPU), the same seed and counter give the same draws, another seed
// other draws.
TEST(Sample, FiltersAndSeeds) {
  const uint32_t V = 5000;
  const auto row = random_floats(V, -4.f, 4.f);
  const detail::SamplerState st{0.9f, 40, 0.8f, 0.02f, 1.f, 77, 5, 0, 0};
  // Reference kept set: temperature, top-k, top-p, min-p (Hugging Face's order).
  std::vector<uint32_t> order(V);
  std::iota(order.begin(), order.end(), 0u);
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return row[a] > row[b]; });
  const double m = row[order[0]];
  std::vector<uint32_t> kept(order.begin(), order.begin() + st.top_k);
  double total = 0, run_mass = 0;
  for (uint32_t id : kept) total += std::exp((row[id] - m) / st.temperature);
  size_t keep_p = 0;
  while (run_mass < st.top_p * total) run_mass += std::exp((row[kept[keep_p++]] - m) / st.temperature);
  kept.resize(keep_p);
  std::erase_if(kept, [&](uint32_t id) { return std::exp((row[id] - m) / st.temperature) < st.min_p; });
  const std::set<uint32_t> allowed(kept.begin(), kept.end());

  const auto a = draw(row, 256, st), b = draw(row, 256, st);
  auto other = st;
  other.seed = 78;
  const auto c = draw(row, 256, other);
  EXPECT_EQ(a, b) << "same seed and counter must give the same tokens";
  EXPECT_NE(a, c) << "another seed must give other tokens";
  std::set<uint32_t> seen;
  for (uint32_t id : a) {
    EXPECT_TRUE(allowed.count(id)) << "drew token " << id << ", outside the " << allowed.size()
                                   << " tokens top-k/top-p/min-p keep";
    seen.insert(id);
  }
  EXPECT_GT(seen.size(), 3u) << "256 draws from " << allowed.size() << " tokens look degenerate";
  // Top-k 40 over 7 slices: no bound from the slices' maxima (k > slices),
  // the cut from the whole row, then the same candidates.
  for (uint32_t id : draw(row, 256, st, {}, 7))
    EXPECT_TRUE(allowed.count(id)) << "7 slices: drew token " << id << ", outside the kept set";
}

// The repetition penalty divides positive logits and multiplies negative ones
// of the history tokens (greedy here, so the effect is exact).
TEST(Sample, RepetitionPenalty) {
  std::vector<float> row(512, -50.f);
  row[5] = 10.f, row[7] = 6.f, row[9] = -1.f, row[11] = -1.5f;
  auto st = greedy_state();
  st.repeat_penalty = 2.0f;
  const uint32_t hist1[] = {5};
  EXPECT_EQ(draw(row, 1, st, hist1)[0], 7u) << "10 / 2 = 5 < 6";
  const uint32_t hist2[] = {5, 7};
  EXPECT_EQ(draw(row, 1, st, hist2)[0], 5u) << "5 > 3";
  std::vector<float> neg(512, -50.f);
  neg[9] = -1.f, neg[11] = -1.5f;
  const uint32_t hist3[] = {9};
  EXPECT_EQ(draw(neg, 1, st, hist3)[0], 11u) << "-1 * 2 = -2 < -1.5";
}

// OpenAI's penalties (the server's presence_penalty and frequency_penalty):
// each history token's logit loses frequency x its count, plus presence once,
// after the repetition penalty; other logits are untouched.
TEST(Sample, PresenceAndFrequencyPenalties) {
  const uint32_t V = 3000;
  std::vector<float> row(V, -50.f);
  row[5] = 10.f, row[7] = 9.f, row[9] = 8.f, row[11] = -2.f;
  const uint32_t hist[] = {5, 7, 11}, counts[] = {3, 1, 2};
  auto st = greedy_state();
  st.presence_penalty = 0.5f;
  st.frequency_penalty = 1.0f;
  st.repeat_penalty = 2.0f;
  HostBuffer l(V * 4), out(4);
  l.fill<float>(row);
  logits_max_then_sample(l, out, sampler_buffer(st, hist, 1, counts), V, kernels::kLogitParts, 1, 1);
  const auto got = l.as<float>();
  EXPECT_EQ(got[5], 10.f / 2 - 3 - 0.5f);   // 1.5
  EXPECT_EQ(got[7], 9.f / 2 - 1 - 0.5f);    // 3.0
  EXPECT_EQ(got[11], -2.f * 2 - 2 - 0.5f);  // -6.5
  EXPECT_EQ(got[9], 8.f) << "not in the history";
  EXPECT_EQ(out.as<uint32_t>()[0], 9u) << "8 now leads";
  // Negative penalties favour the history, as OpenAI's do.
  st.repeat_penalty = 1.f;
  st.presence_penalty = -3.f;
  st.frequency_penalty = 0.f;
  l.fill<float>(row);
  logits_max_then_sample(l, out, sampler_buffer(st, hist, 1, counts), V, kernels::kLogitParts, 1, 1);
  EXPECT_EQ(l.as<float>()[7], 12.f);
  EXPECT_EQ(out.as<uint32_t>()[0], 5u) << "13 leads";
}

// logits_max applies the penalty in place, each slice its own history tokens:
// a history longer than the workgroup (300 ids over a 5001-logit row whose last
// slice is short, the row maximum among them), checked against
// reference::repetition_penalty element by element (untouched logits bit for
// bit), with the partials and the greedy choice over the penalised row.
TEST(Sample, RepetitionPenaltyAcrossSlices) {
  const uint32_t V = 5001, parts = kernels::kLogitParts, rows = 2;
  auto row = random_floats(V, -8.f, 8.f);
  std::vector<uint32_t> ids(V);
  std::iota(ids.begin(), ids.end(), 0u);
  std::shuffle(ids.begin(), ids.end(), rng());
  std::vector<uint32_t> history(ids.begin(), ids.begin() + 300);  // distinct, as the engine's
  std::erase(history, V - 1);
  history.push_back(V - 1);  // the last slice, which holds only this logit
  row[V - 1] = 9.f;  // the maximum, penalised to 9 / 1.5 = 6
  const uint32_t top = reference::argmax(row);
  auto st = greedy_state();
  st.repeat_penalty = 1.5f;
  std::vector<float> logits;
  for (uint32_t r = 0; r < rows; ++r) logits.insert(logits.end(), row.begin(), row.end());
  HostBuffer l(logits.size() * 4), out(rows * 4);
  l.fill<float>(logits);
  const auto params = sampler_buffer(st, history, rows);
  const auto partials = logits_max_then_sample(l, out, params, V, parts, rows, rows);
  auto want = row;
  reference::repetition_penalty(want, history, st.repeat_penalty);
  const std::set<uint32_t> penalised(history.begin(), history.end());
  for (uint32_t r = 0; r < rows; ++r) {
    for (uint32_t i = 0; i < V; ++i) {
      const float got = l.as<float>()[size_t(r) * V + i];
      if (penalised.count(i))
        ASSERT_NEAR(got, want[i], std::abs(want[i]) * 1e-6) << "row " << r << " logit " << i;
      else
        ASSERT_EQ(got, want[i]) << "row " << r << " logit " << i << " is not in the history";
    }
    const auto got_row = l.as<float>().subspan(size_t(r) * V, V);
    EXPECT_TRUE(check_partials("logits_max (penalty)", partials, r, got_row, parts));
    EXPECT_EQ(out.as<uint32_t>()[r], reference::argmax(want)) << "row " << r;
  }
  EXPECT_NE(reference::argmax(want), top) << "the test's premise: the penalty moves the maximum";
}

// Sampling (temperature > 0) draws from the penalised logits: token 3 leads by
// 0.1 before the penalty and trails token 4 by ~2.9 after it; at T = 0.1
// (e^-29 odds) all 64 draws are 4; without the penalty they are mixed (73% 3).
TEST(Sample, PenaltyAppliesToDraws) {
  std::vector<float> row(3000, -60.f);
  row[3] = 3.0f, row[4] = 2.9f;
  detail::SamplerState st{0.1f, 0, 1.f, 0.f, 100.f, 99, 1, 0, 0};
  const uint32_t hist[] = {3};
  for (uint32_t id : draw(row, 64, st, hist)) ASSERT_EQ(id, 4u);
  st.repeat_penalty = 1.f;
  std::set<uint32_t> seen;
  for (uint32_t id : draw(row, 64, st, hist)) seen.insert(id);
  EXPECT_EQ(seen, (std::set<uint32_t>{3, 4}));
}

// Logit biases (OpenAI's logit_bias) on the GPU, before the penalties: -100
// bans the greedy choice and every draw of it, +80 makes a far token the only
// one drawn at T = 1, and a token both biased and in the penalty history gets
// both (the bias first). Tokens at both ends of the row and in several
// slices, in a row of Gemma 3's 262,144 tokens.
TEST(Sample, LogitBias) {
  const uint32_t V = 262144;
  std::vector<float> row(V, -60.f);
  row[3] = 4.f, row[V - 1] = 3.9f, row[100000] = 3.8f;
  const auto with_bias = [&](detail::SamplerState st, std::vector<std::pair<uint32_t, float>> bias,
                             std::span<const uint32_t> history = {}) {
    st.bias_len = uint32_t(bias.size());
    const uint32_t rows = 8;
    std::vector<float> logits;
    for (uint32_t r = 0; r < rows; ++r) logits.insert(logits.end(), row.begin(), row.end());
    HostBuffer l(logits.size() * 4), out(rows * 4);
    l.fill<float>(logits);
    // The engine's row: the state, the history, then the biases (ids, then values).
    std::vector<std::byte> bytes(detail::kSamplerRowBytes * rows);
    for (uint32_t r = 0; r < rows; ++r) {
      st.key = r;
      st.history_len = uint32_t(history.size());
      std::byte* p = bytes.data() + r * detail::kSamplerRowBytes;
      std::memcpy(p, &st, sizeof st);
      if (!history.empty()) std::memcpy(p + sizeof st, history.data(), history.size_bytes());
      for (size_t i = 0; i < bias.size(); ++i) {
        std::memcpy(p + detail::kSamplerBiasOffset + 4 * i, &bias[i].first, 4);
        std::memcpy(p + detail::kSamplerBiasOffset + 4ull * kMaxLogitBias + 4 * i, &bias[i].second, 4);
      }
    }
    HostBuffer params(bytes.size());
    params.fill<std::byte>(bytes);
    logits_max_then_sample(l, out, params, V, kernels::kLogitParts, rows, rows);
    const auto ids = out.as<uint32_t>();
    return std::vector<uint32_t>(ids.begin(), ids.end());
  };
  for (uint32_t id : with_bias(greedy_state(), {})) EXPECT_EQ(id, 3u);
  for (uint32_t id : with_bias(greedy_state(), {{3, -100.f}})) EXPECT_EQ(id, V - 1) << "3 is banned";
  for (uint32_t id : with_bias(greedy_state(), {{3, -100.f}, {V - 1, -0.2f}})) EXPECT_EQ(id, 100000u);
  for (uint32_t id : with_bias(greedy_state(), {{7, 70.f}})) EXPECT_EQ(id, 7u);
  detail::SamplerState warm{1.f, 0, 1.f, 0.f, 1.f, 5, 0, 0, 0};
  for (uint32_t id : with_bias(warm, {{3, -100.f}, {V - 1, -100.f}})) EXPECT_EQ(id, 100000u) << "only one left near the top";
  for (uint32_t id : with_bias(warm, {{50000, 80.f}})) EXPECT_EQ(id, 50000u);
  // Biased to 6 (first), then a repetition penalty of 3 on positive logits: 2, below 3.9.
  const uint32_t hist[] = {7};
  detail::SamplerState penalised = greedy_state();
  penalised.repeat_penalty = 3.f;
  for (uint32_t id : with_bias(penalised, {{7, 66.f}}, hist)) EXPECT_EQ(id, 3u);
  for (uint32_t id : with_bias(penalised, {{7, 75.f}}, hist)) EXPECT_EQ(id, 7u) << "(-60 + 75) / 3 = 5 > 4";
}

// Allowed-token masks (structured output: EngineCore::constrain) after the
// biases: a masked row chooses only among its stream's allowed tokens, greedy
// or drawn, and leaves the others at -inf for sample and logprobs; an
// unmasked row ignores its stream's mask. Rows take streams out of order (the
// mask is the row's stream's, not the row's), in a row of Gemma 3's vocabulary.
TEST(Sample, AllowedTokenMask) {
  const uint32_t V = 262144, rows = 3, words = detail::token_mask_words(V);
  std::vector<float> row(V, -60.f);
  row[3] = 4.f, row[V - 1] = 3.9f, row[100000] = 3.8f;
  std::vector<uint32_t> masks(size_t(rows) * words, 0);
  const auto allow = [&](uint32_t stream, uint32_t id) { masks[size_t(stream) * words + id / 32] |= 1u << (id % 32); };
  allow(2, V - 1), allow(2, 100000), allow(2, 5);  // row 0's stream
  allow(1, 50000);                                // row 1's stream, but row 1 is not masked
  allow(0, 50000), allow(0, 7);                   // row 2's stream
  const detail::StepRow step_rows[rows] = {{0, 0, 2, 0}, {0, 0, 1, 1}, {0, 0, 0, 2}};
  for (const bool drawn : {false, true}) {
    std::vector<float> logits;
    for (uint32_t r = 0; r < rows; ++r) logits.insert(logits.end(), row.begin(), row.end());
    logits[size_t(2) * V + 7] = -61.f;  // row 2: 50000 (-60) beats 7 whatever the draw
    HostBuffer l(logits.size() * 4), out(rows * 4), m(masks.size() * 4);
    l.fill<float>(logits);
    m.fill<uint32_t>(masks);
    detail::SamplerState st = greedy_state();
    if (drawn) st.temperature = 0.5f, st.seed = 9;
    std::vector<std::byte> bytes(detail::kSamplerRowBytes * rows);
    for (uint32_t r = 0; r < rows; ++r) {
      st.key = r;
      st.masked = r != 1;
      std::memcpy(bytes.data() + r * detail::kSamplerRowBytes, &st, sizeof st);
    }
    HostBuffer params(bytes.size());
    params.fill<std::byte>(bytes);
    const auto step = step_buffer(step_rows, rows);
    logits_max_then_sample(l, out, params, V, kernels::kLogitParts, rows, rows, &m, &step);
    const auto ids = out.as<uint32_t>();
    const std::string how = drawn ? "drawn at T = 0.5" : "greedy";
    if (!drawn) EXPECT_EQ(ids[0], V - 1) << how << ": 3 is the largest but not allowed";
    EXPECT_TRUE(ids[0] == V - 1 || ids[0] == 100000) << how << ": " << ids[0];
    if (!drawn) EXPECT_EQ(ids[1], 3u) << how << ": the unmasked row";
    EXPECT_TRUE(ids[1] == 3 || ids[1] == V - 1 || ids[1] == 100000) << how << ": the unmasked row, " << ids[1];
    EXPECT_EQ(ids[2], 50000u) << how;
    const auto after = l.as<float>();
    EXPECT_EQ(after[3], -INFINITY) << "banned tokens are -inf for logprobs";
    EXPECT_EQ(after[5], -60.f) << "allowed tokens keep their logits";
    EXPECT_EQ(after[size_t(V) + 3], 4.f) << "the unmasked row is untouched";
    EXPECT_EQ(after[size_t(2) * V + V - 1], -INFINITY);
  }
}

// logprobs after sample, as the Recorder dispatches it: per row, the chosen
// token's log-probability and the `top` most likely (largest first, the lower
// id first among equals) against a log-softmax in double on the host; a row
// that asks for none is left as it was. Gemma 3's vocabulary and a small one,
// ties at the top, greedy and drawn rows.
TEST(Sample, Logprobs) {
  for (const uint32_t V : {262144u, 512u}) {
    const uint32_t parts = kernels::logit_parts(V), rows = 3;
    std::vector<float> logits(size_t(rows) * V);
    uint32_t x = 12345;
    for (float& l : logits) {
      x = x * 1664525u + 1013904223u;
      l = float(x >> 8) / float(1u << 24) * 20.f - 10.f;
    }
    for (uint32_t r = 0; r < rows; ++r) {  // three tokens tie at the top
      logits[size_t(r) * V + 9] = logits[size_t(r) * V + 4] = logits[size_t(r) * V + V - 2] = 12.5f;
      logits[size_t(r) * V + 200] = 12.25f;
    }
    HostBuffer l(logits.size() * 4), chosen(rows * 4), out(size_t(rows) * detail::kLogprobRowFloats * 4);
    l.fill<float>(logits);
    out.fill<float>(std::vector<float>(size_t(rows) * detail::kLogprobRowFloats, 7.f));
    const uint32_t asked[rows] = {0, 1 + 5, 1 + 20};
    std::vector<std::byte> bytes(detail::kSamplerRowBytes * rows);
    for (uint32_t r = 0; r < rows; ++r) {
      detail::SamplerState st = greedy_state();
      if (r == 2) st.temperature = 1.f, st.seed = 3;
      st.key = r;
      st.logprobs = asked[r];
      std::memcpy(bytes.data() + r * detail::kSamplerRowBytes, &st, sizeof st);
    }
    HostBuffer params(bytes.size());
    params.fill<std::byte>(bytes);
    const HostBuffer partials = logits_max_then_sample(l, chosen, params, V, parts, rows, rows);
    const auto step = step_buffer({rows, 0, 0, rows});
    run("logprobs", kernels::kLogprobsBindings, kernels::Logprobs{V, parts},
        {&l, &partials, &params, &step, &chosen, &out}, {}, {rows, 1, 1});
    const auto got = out.as<float>();
    for (uint32_t j = 0; j < detail::kLogprobRowFloats; ++j) ASSERT_EQ(got[j], 7.f) << "row 0 asked for none";
    for (uint32_t r = 1; r < rows; ++r) {
      const std::span<const float> row(logits.data() + size_t(r) * V, V);
      double m = -INFINITY, sum = 0;
      for (float v : row) m = std::max<double>(m, v);
      for (float v : row) sum += std::exp(double(v) - m);
      const double log_z = m + std::log(sum);
      const uint32_t c = chosen.as<uint32_t>()[r];
      const float* g = got.data() + size_t(r) * detail::kLogprobRowFloats;
      EXPECT_NEAR(g[0], row[c] - log_z, 2e-4) << "V " << V << " row " << r << " chosen " << c;
      uint32_t top;
      std::memcpy(&top, &g[1], 4);
      ASSERT_EQ(top, asked[r] - 1);
      std::vector<uint32_t> order(V);
      std::iota(order.begin(), order.end(), 0u);
      std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return row[a] > row[b]; });
      for (uint32_t j = 0; j < top; ++j) {
        uint32_t id;
        std::memcpy(&id, &g[2 + 2 * j], 4);
        EXPECT_EQ(id, order[j]) << "V " << V << " row " << r << " alternative " << j;
        EXPECT_NEAR(g[3 + 2 * j], row[order[j]] - log_z, 2e-4);
      }
      EXPECT_EQ(std::vector<uint32_t>(order.begin(), order.begin() + 4), (std::vector<uint32_t>{4, 9, V - 2, 200}));
    }
  }
}

// ---------------------------------------------------------- SPIR-V vs structs

// What the engine knows of a module: its constants struct's fields (is each a
// float? its name) and its binding count, from the module name's kernel prefix.
struct ModuleContract {
  std::vector<bool> float_fields;
  uint32_t bindings;
  std::vector<std::string> field_names;
};

template <class Spec>
ModuleContract contract(uint32_t bindings) {
  ModuleContract m{{}, bindings, {}};
  boost::hana::for_each(boost::hana::members(Spec{}), [&](const auto& v) {
    m.float_fields.push_back(std::is_same_v<std::decay_t<decltype(v)>, float>);
  });
  boost::hana::for_each(boost::hana::accessors<Spec>(), [&](auto pair) {
    m.field_names.emplace_back(boost::hana::to<char const*>(boost::hana::first(pair)));
  });
  static_assert(decltype(boost::hana::size(boost::hana::members(Spec{})))::value > 0);
  return m;
}

std::optional<ModuleContract> contract_of(std::string_view module) {
  namespace k = kernels;
  const std::pair<std::string_view, ModuleContract> table[] = {
      {"embed_", contract<k::Embed>(k::kEmbedBindings)},
      {"matvec_", contract<k::MatVec>(k::kMatVecBindings)},
      {"matmul_coop_splitk_", contract<k::LinearCoopSplitK>(k::kLinearSplitKBindings)},
      {"matmul_coop_", contract<k::LinearCoop>(k::kLinearBindings)},
      {"matmul_", contract<k::Linear>(k::kLinearBindings)},
      {"convert_", contract<k::Convert>(k::kConvertBindings)},
      {"attn_prep_", contract<k::AttnPrep>(k::kAttnPrepBindings)},
      {"attention_tiled_", contract<k::AttentionTiled>(k::kAttentionTiledBindings)},
      {"attention_coop_", contract<k::AttentionCoop>(k::kAttentionCoopBindings)},
      {"attention_", contract<k::Attention>(k::kAttentionBindings)},
      {"rmsnorm", contract<k::RmsNorm>(k::kRmsNormBindings)},
      {"geglu", contract<k::Geglu>(k::kGegluBindings)},
      {"logits_max", contract<k::LogitsMax>(k::kLogitsMaxBindings)},
      {"sample", contract<k::Sample>(k::kSampleBindings)},
      {"logprobs", contract<k::Logprobs>(k::kLogprobsBindings)},
      {"bandwidth", ModuleContract{{}, 2}},
      {"check_finite", contract<k::CheckFinite>(k::kCheckFiniteBindings)},
  };
  for (const auto& [prefix, c] : table)
    if (prefix.back() == '_' ? module.starts_with(prefix) : module == prefix) return c;
  return std::nullopt;
}

// The module's spec constants (id -> is float, and its GLSL name where the
// module keeps names) and highest binding + 1, read from the SPIR-V:
// OpDecorate SpecId / Binding, OpSpecConstant*, OpType* and OpName.
struct ModuleFacts {
  std::map<uint32_t, bool> spec_ids;  // SpecId -> float?
  std::map<uint32_t, std::string> spec_names;  // SpecId -> name
  uint32_t bindings = 0;
};

ModuleFacts parse_spirv(std::span<const uint32_t> w) {
  constexpr uint32_t kOpName = 5, kOpTypeInt = 21, kOpTypeFloat = 22, kOpSpecConstantTrue = 48,
                     kOpSpecConstantFalse = 49, kOpSpecConstant = 50, kOpDecorate = 71,
                     kDecorationSpecId = 1, kDecorationBinding = 33;
  std::map<uint32_t, uint32_t> spec_id_of;  // result id -> SpecId
  std::map<uint32_t, uint32_t> type_of;     // spec constant id -> type id
  std::map<uint32_t, bool> float_type;      // type id -> float?
  std::map<uint32_t, std::string> name_of;  // result id -> OpName
  ModuleFacts f;
  for (size_t i = 5; i < w.size();) {
    const uint32_t op = w[i] & 0xffff, count = w[i] >> 16;
    if (count == 0 || i + count > w.size()) throw Error("SPIR-V: malformed instruction");
    if (op == kOpName && count > 2) {  // a nul-terminated string in the words after the target
      const char* text = reinterpret_cast<const char*>(&w[i + 2]);
      name_of[w[i + 1]] = std::string(text, strnlen(text, 4 * (count - 2)));
    }
    if (op == kOpDecorate && w[i + 2] == kDecorationSpecId) spec_id_of[w[i + 1]] = w[i + 3];
    if (op == kOpDecorate && w[i + 2] == kDecorationBinding)
      f.bindings = std::max(f.bindings, w[i + 3] + 1);
    if (op == kOpTypeInt) float_type[w[i + 1]] = false;
    if (op == kOpTypeFloat) float_type[w[i + 1]] = true;
    if (op == kOpSpecConstant || op == kOpSpecConstantTrue || op == kOpSpecConstantFalse)
      type_of[w[i + 2]] = w[i + 1];
    i += count;
  }
  for (const auto& [id, spec_id] : spec_id_of) {
    f.spec_ids[spec_id] = float_type[type_of[id]];
    if (name_of.count(id)) f.spec_names[spec_id] = name_of[id];
  }
  return f;
}

TEST(Spirv, SpecConstantsMatchTheKernelStructs) {
  ASSERT_GT(std::size(spirv::kModules), 0u);
  for (const auto& m : spirv::kModules) {
    SCOPED_TRACE(std::string(m.name));
    const auto c = contract_of(m.name);
    ASSERT_TRUE(c) << "module " << m.name
                   << " has no kernels:: struct mapped in kernel_tests.cpp (contract_of)";
    ASSERT_GE(m.words.size(), 5u);
    ASSERT_EQ(m.words[0], 0x07230203u) << m.name << ": not SPIR-V";
    const ModuleFacts f = parse_spirv(m.words);
    uint32_t expect = 0;
    for (const auto& [id, is_float] : f.spec_ids) {
      EXPECT_EQ(id, expect) << m.name << ": constant_id " << id << " leaves a gap (expected "
                            << expect << ")";
      expect = id + 1;
    }
    ASSERT_EQ(f.spec_ids.size(), c->float_fields.size())
        << m.name << " declares " << f.spec_ids.size()
        << " specialization constants but its kernels:: struct has " << c->float_fields.size()
        << " fields";
    for (const auto& [id, is_float] : f.spec_ids)
      if (id < c->float_fields.size())
        EXPECT_EQ(is_float, c->float_fields[id])
            << m.name << ": constant_id " << id << " is " << (is_float ? "float" : "an integer")
            << " in the shader, the other in the struct";
    // The same names on both sides: the GLSL constant is the field in capitals.
    for (const auto& [id, name] : f.spec_names)
      if (id < c->field_names.size()) {
        std::string field = c->field_names[id];
        for (char& ch : field) ch = char(std::toupper(static_cast<unsigned char>(ch)));
        EXPECT_EQ(name, field) << m.name << ": constant_id " << id << " is " << name << " in the shader but "
                               << c->field_names[id] << " in its kernels:: struct";
      }
    // The float variants of matmul_coop_splitk never fuse a pair, so they
    // leave its binding 4, their last, unused (a pipeline layout may hold more
    // bindings than a module uses); matvec's leave it as a gap below binding
    // 5, the counters.
    std::string_view name = m.name;
    if (name.ends_with("_nv")) name.remove_suffix(3);  // the NV form of a cooperative-matrix module
    const bool float_variant = name.ends_with("_f32") || name.ends_with("_f16") || name.ends_with("_bf16");
    const bool float_pair = name.starts_with("matmul_coop_splitk_") && float_variant;
    EXPECT_EQ(f.bindings, c->bindings - (float_pair ? 1 : 0))
        << m.name << ": binding count differs from kernels::k*Bindings";
  }
}

// ------------------------------------------------------------ check_finite

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

// ------------------------------------------------------------ pipeline cache

// The on-disk pipeline cache: written after new pipelines, read back by the
// next cache, and a damaged or foreign file is ignored (with a reason) and
// replaced — never handed to the driver.
TEST(PipelineCache, WrittenReadBackAndDamagedFilesIgnored) {
  Device& d = device();
  const unicorn::test::TempDir tmp("unicorn-pipeline-cache");
  const std::filesystem::path dir = tmp / "cache";  // made by the first cache that saves
  const auto build = [&](gpu::KernelCache& cache) {
    const auto words = spirv::find("geglu");
    return cache.get("geglu", words, kernels::kGegluBindings, kernels::Geglu{96, 0}).pipeline();
  };
  std::filesystem::path file;
  {
    gpu::KernelCache cache(d.ctx, dir);
    EXPECT_EQ(cache.disk_stats().loaded_bytes, 0u);
    EXPECT_TRUE(build(cache));
    cache.save();
    file = cache.disk_stats().path;
    EXPECT_GT(cache.disk_stats().saved_bytes, 0u);
  }
  ASSERT_TRUE(std::filesystem::exists(file)) << file;
  EXPECT_EQ(file.parent_path(), dir);
  const uint64_t size = std::filesystem::file_size(file);
  {
    gpu::KernelCache cache(d.ctx, dir);
    EXPECT_EQ(cache.disk_stats().loaded_bytes, size);
    EXPECT_EQ(cache.disk_stats().ignored, "");
    EXPECT_TRUE(build(cache));
  }
  const auto bytes_of = [&] {
    std::ifstream in(file, std::ios::binary);
    return std::vector<char>(std::istreambuf_iterator<char>(in), {});
  };
  const auto write = [&](const std::vector<char>& bytes) {
    std::ofstream(file, std::ios::binary | std::ios::trunc).write(bytes.data(), std::streamsize(bytes.size()));
  };
  std::vector<char> good = bytes_of();
  std::vector<char> foreign = good;
  foreign[16] ^= 0x5a;  // one byte of the pipelineCacheUUID
  const std::pair<std::vector<char>, std::string> damaged[] = {
      {{'n', 'o', 'p', 'e'}, "shorter than a pipeline cache header"},
      {std::vector<char>(64, 0), "not a Vulkan pipeline cache"},
      {foreign, "written by another device or driver"},
  };
  for (const auto& [bytes, why] : damaged) {
    SCOPED_TRACE(why);
    write(bytes);
    {
      gpu::KernelCache cache(d.ctx, dir);
      EXPECT_EQ(cache.disk_stats().loaded_bytes, 0u);
      EXPECT_EQ(cache.disk_stats().ignored, why);
      EXPECT_TRUE(build(cache));
    }  // replaced on the way out
    gpu::KernelCache again(d.ctx, dir);
    EXPECT_EQ(again.disk_stats().ignored, "");
    EXPECT_GT(again.disk_stats().loaded_bytes, 0u);
  }
  {
    gpu::KernelCache off(d.ctx, std::filesystem::path{});
    EXPECT_EQ(off.disk_stats().path, "");
    EXPECT_TRUE(build(off));
  }
}

}  // namespace
}  // namespace unicorn
