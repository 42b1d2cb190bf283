// The kernel tests' shared harness (every *_tests.cpp of tests/kernel includes it):
// one device for the process, host-visible buffers poisoned with NaN, the per-step
// buffer, dispatches made and run as engine/core.hpp's Recorder makes them, the
// seeded random inputs and weights, and compare() against the CPU reference.
//
// Label kernel: every shader against the scalar CPU reference
// (tests/reference/cpu_reference.hpp), in every weight and cache format, at odd
// sizes, dispatched exactly as engine/core.hpp's Recorder does (same push
// constants, same group counts). Each case gets fresh random inputs; outputs
// are poisoned with NaN (0xff bytes) first, so an element the kernel should
// write and did not, or one it should leave alone and wrote, is caught.
// Failures print kernel, format and shape. The SPIR-V check
// (spirv_contract_tests.cpp) ties every module's specialization constants
// (count, types and names) to the kernels:: struct the engine passes for it.
#pragma once

#include <gtest/gtest.h>

#include <array>
#include <bit>
#include <cctype>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <unistd.h>
#include <algorithm>
#include <map>
#include <set>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <unicorn/spirv.hpp>
#include <vector>

#include "ggml_quantize.hpp"
#include "tuning_env.hpp"
#include "reference/cpu_reference.hpp"
#include "unicorn/engine/core.hpp"
#include "unicorn/engine/kernels.hpp"
#include "unicorn/gpu/context.hpp"
#include "unicorn/gpu/kernel.hpp"
#include "unicorn/gpu/memory.hpp"

namespace unicorn {
namespace test_spirv {  // test-only shaders (tests/kernel/CMakeLists.txt)
#include "k_unit_values_q4_1.h"
#include "k_unit_values_q5_0.h"
#include "k_unit_values_q5_1.h"
#include "k_unit_values_q4_k.h"
#include "k_unit_values_q5_k.h"
#include "k_unit_values_q6_k.h"
#include "k_unit_values_q2_k.h"
#include "k_unit_values_q3_k.h"
#include "k_unit_values_iq4_nl.h"
#include "k_unit_values_iq4_xs.h"
}  // namespace test_spirv
namespace {

using detail::StepHeader;

// The H100's multiprocessors: tests of the tile and K-split choices pin what
// the engine picks on it, where those choices were measured.
constexpr uint32_t kH100Multiprocessors = 132;
constexpr uint32_t kH100SplitKWave = kernels::kSplitKGroupsPerMultiprocessor * kH100Multiprocessors;

// A family's module name for a format, as cmake/UnicornShaders.cmake names it
// ("matvec" and Q4_0: "matvec_q4_0"): the tests pick kernels by name, the
// engine by typed handle (engine/kernels.hpp).
std::string variant(const std::string& family, Format f) {
  std::string name = family + "_";
  for (char c : format_name(f)) name += char(std::tolower(static_cast<unsigned char>(c)));
  return name;
}

// A test-only module by name, beside the engine's (spirv::find).
std::span<const uint32_t> find_module(const std::string& name) {
  if (name == "k_unit_values_q4_1") return test_spirv::k_unit_values_q4_1;
  if (name == "k_unit_values_q5_0") return test_spirv::k_unit_values_q5_0;
  if (name == "k_unit_values_q5_1") return test_spirv::k_unit_values_q5_1;
  if (name == "k_unit_values_q4_k") return test_spirv::k_unit_values_q4_k;
  if (name == "k_unit_values_q5_k") return test_spirv::k_unit_values_q5_k;
  if (name == "k_unit_values_q6_k") return test_spirv::k_unit_values_q6_k;
  if (name == "k_unit_values_q2_k") return test_spirv::k_unit_values_q2_k;
  if (name == "k_unit_values_q3_k") return test_spirv::k_unit_values_q3_k;
  if (name == "k_unit_values_iq4_nl") return test_spirv::k_unit_values_iq4_nl;
  if (name == "k_unit_values_iq4_xs") return test_spirv::k_unit_values_iq4_xs;
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

const Format kAllFormats[] = {Format::F32,  Format::F16,  Format::BF16, Format::Q8_0,   Format::Q4_0,
                              Format::Q4_1, Format::Q5_0, Format::Q5_1, Format::Q2_K,   Format::Q3_K,
                              Format::Q4_K, Format::Q5_K, Format::Q6_K, Format::IQ4_NL, Format::IQ4_XS};
const Format kBlockFormats[] = {Format::Q8_0, Format::Q4_0, Format::Q4_1, Format::Q5_0, Format::Q5_1,
                                Format::Q2_K, Format::Q3_K, Format::Q4_K, Format::Q5_K, Format::Q6_K,
                                Format::IQ4_NL, Format::IQ4_XS};

// Row lengths per format: floats odd (77, 100), 32-blocks not a power of two of
// blocks (96, 160); K-quants and IQ4_XS whole 256-element superblocks (256, 768).
uint32_t row_k(Format f, uint32_t for_float, uint32_t for_block, uint32_t for_k_quant) {
  return has_superblocks(f) ? for_k_quant : is_block_quantized(f) ? for_block : for_float;
}

// Random weights of [rows, K] in `format`, as ggml would store them.
std::vector<std::byte> random_weights(Format format, size_t rows, size_t K) {
  std::vector<std::byte> bytes;
  tools::quantize(format, random_floats(rows * K), bytes);
  return bytes;
}

// A gtest parameter name from a case's description: every character but a
// letter or digit made '_'.
std::string test_name(std::string s) {
  for (char& ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s;
}

// A value rounded to fp16 and back, as the coop kernels round their operands.
float round_f16(float v) { return float(static_cast<_Float16>(v)); }

// The largest |got - want| over the elements `want` holds (NaN: skipped), as a
// fraction of the largest |scale_of| (the output's scale).
double max_rel_err(std::span<const float> got, std::span<const double> want, std::span<const double> scale_of) {
  double scale = 1e-30, worst = 0;
  for (double w : scale_of)
    if (!std::isnan(w)) scale = std::max(scale, std::abs(w));
  for (size_t i = 0; i < want.size(); ++i)
    if (!std::isnan(want[i])) worst = std::max(worst, std::abs(got[i] - want[i]) / scale);
  return worst;
}

}  // namespace
}  // namespace unicorn
