// The image encoder's own shaders (shaders/vision_*.comp) one at a time against
// a scalar CPU reference in double, at odd sizes (partial tiles, rows that do
// not fill a workgroup), dispatched as vision/encoder.hpp's VisionEncoder does.
// Outputs are poisoned with NaN first, so an element not written is caught.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <unicorn/spirv.hpp>
#include <vector>

#include "reference/cpu_reference.hpp"
#include "tuning_env.hpp"
#include "unicorn/gpu/context.hpp"
#include "unicorn/gpu/kernel.hpp"
#include "unicorn/gpu/memory.hpp"
#include "unicorn/vision/kernels.hpp"

namespace unicorn {
namespace {

struct KernelDevice {
  gpu::Context ctx{tools::device_from_env()};
  std::shared_ptr<gpu::KernelCache> kernels = ctx.kernel_cache({});
  gpu::DescriptorArena sets{ctx};
  gpu::Stream stream{ctx};
};
KernelDevice& kernel_device() {
  static KernelDevice d;
  return d;
}

// A host-visible buffer of floats, NaN until written.
class Floats {
 public:
  explicit Floats(size_t n)
      : set_(kernel_device().ctx, std::array<uint64_t, 1>{n * 4}, gpu::MemoryKind::HostVisible, "vision kernel test"),
        n_(n) {
    std::memset(set_[0].mapped, 0xff, n * 4);
  }
  Floats(const std::vector<float>& v) : Floats(v.size()) { std::memcpy(set_[0].mapped, v.data(), v.size() * 4); }
  std::vector<float> read() const {
    std::vector<float> v(n_);
    std::memcpy(v.data(), set_[0].mapped, n_ * 4);
    return v;
  }
  vk::DescriptorBufferInfo info() const { return set_[0].whole(); }

 private:
  gpu::BufferSet set_;
  size_t n_;
};

template <class Spec>
void dispatch(const std::string& module, uint32_t bindings, const Spec& spec, std::initializer_list<const Floats*> b,
              std::array<uint32_t, 3> groups) {
  KernelDevice& d = kernel_device();
  const gpu::Kernel& k = d.kernels->get(module, spirv::find(module), bindings, spec);
  std::vector<vk::DescriptorBufferInfo> infos;
  for (const Floats* f : b) infos.push_back(f->info());
  const gpu::Dispatch dp{&k, d.sets.make(k, infos), {}, {groups[0], groups[1], groups[2]}, true};
  d.stream.run_once([&](vk::CommandBuffer cb) { gpu::record(cb, dp); });
}

std::vector<float> random_floats(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (float& f : v) f = u(rng);
  return v;
}

// Largest |got - want| relative to max(1, |want|); NaN counts as infinite.
double worst(const std::vector<float>& got, const std::vector<double>& want) {
  double m = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double e = std::abs(double(got[i]) - want[i]) / std::max(1.0, std::abs(want[i]));
    m = std::isnan(e) ? INFINITY : std::max(m, e);
  }
  return m;
}

uint32_t groups_of(uint64_t items, uint32_t per) { return uint32_t((items + per - 1) / per); }

TEST(VisionKernel, PatchesCutTheImageIntoRowsInTheConvWeightsOrder) {
  const uint32_t image = 20, patch = 5, per_side = image / patch, inputs = 3 * patch * patch;
  const auto pixels = random_floats(3 * image * image, 1);
  const Floats px(pixels), cols(size_t(per_side) * per_side * inputs);
  dispatch("vision_patches", kernels::kVisionPatchesBindings, kernels::VisionPatches{image, patch}, {&px, &cols},
           {kernels::vision_elementwise_groups(uint64_t(per_side) * per_side * inputs), 1, 1});
  std::vector<double> want;
  for (uint32_t py = 0; py < per_side; ++py)
    for (uint32_t px_ = 0; px_ < per_side; ++px_)
      for (uint32_t c = 0; c < 3; ++c)
        for (uint32_t ky = 0; ky < patch; ++ky)
          for (uint32_t kx = 0; kx < patch; ++kx)
            want.push_back(pixels[(c * image + py * patch + ky) * image + px_ * patch + kx]);
  EXPECT_EQ(worst(cols.read(), want), 0.0) << "vision_patches image " << image << " patch " << patch;
}

TEST(VisionKernel, LayerNormAddsTheResidualAndNormalisesWithWeightAndBias) {
  const uint32_t rows = 5, dim = 72;  // 72: the real head dim's multiple, not a multiple of the 64 threads
  for (uint32_t accumulate : {0u, 1u}) {
    const auto x0 = random_floats(rows * dim, 2, -3, 3), y = random_floats(rows * dim, 3),
               y_bias = random_floats(dim, 4), w = random_floats(dim, 5, 0.5f, 1.5f), b = random_floats(dim, 6);
    const Floats x(x0), yb(y), ybb(y_bias), wb(w), bb(b), out(rows * dim);
    const float eps = 1e-6f;
    dispatch("vision_layernorm", kernels::kVisionLayerNormBindings,
             kernels::VisionLayerNorm{dim, eps, accumulate, kernels::kVisionRowThreads}, {&x, &yb, &ybb, &wb, &bb, &out},
             {rows, 1, 1});
    std::vector<double> want_x(rows * dim), want(rows * dim);
    for (uint32_t r = 0; r < rows; ++r) {
      double mean = 0, var = 0;
      for (uint32_t i = 0; i < dim; ++i) {
        const size_t at = size_t(r) * dim + i;
        want_x[at] = double(x0[at]) + (accumulate ? double(y[at]) + y_bias[i] : 0.0);
        mean += want_x[at] / dim;
      }
      for (uint32_t i = 0; i < dim; ++i) var += (want_x[r * dim + i] - mean) * (want_x[r * dim + i] - mean) / dim;
      for (uint32_t i = 0; i < dim; ++i)
        want[r * dim + i] = (want_x[r * dim + i] - mean) / std::sqrt(var + eps) * w[i] + b[i];
    }
    EXPECT_LT(worst(out.read(), want), 1e-5) << "vision_layernorm dim " << dim << " accumulate " << accumulate;
    EXPECT_LT(worst(x.read(), want_x), 1e-6) << "vision_layernorm's residual, accumulate " << accumulate;
  }
}

TEST(VisionKernel, AttentionSeesEveryPatchWithBiasesOnQKV) {
  // 70 patches: two query tiles of 64 (the second mostly empty), key tiles of
  // 32 with a partial last one; 3 heads of 12.
  const uint32_t n = 70, heads = 3, hd = 12, H = heads * hd;
  const float scale = 1.0f / std::sqrt(float(hd));
  const auto qkv = random_floats(size_t(n) * 3 * H, 7, -2, 2), bias = random_floats(3 * H, 8);
  const Floats qb(qkv), bb(bias), out(size_t(n) * H);
  dispatch("vision_attention", kernels::kVisionAttentionBindings,
           kernels::VisionAttention{n, heads, hd, scale, kernels::kVisionAttentionKeys, kernels::kVisionAttentionRows},
           {&qb, &bb, &out}, {groups_of(n, kernels::kVisionAttentionRows), heads, 1});
  std::vector<double> want(size_t(n) * H);
  const auto at = [&](uint32_t t, uint32_t part, uint32_t h, uint32_t d) {
    return double(qkv[size_t(t) * 3 * H + part * H + h * hd + d]) + bias[part * H + h * hd + d];
  };
  for (uint32_t h = 0; h < heads; ++h)
    for (uint32_t t = 0; t < n; ++t) {
      std::vector<double> s(n);
      double m = -INFINITY, sum = 0;
      for (uint32_t j = 0; j < n; ++j) {
        double dot = 0;
        for (uint32_t d = 0; d < hd; ++d) dot += at(t, 0, h, d) * at(j, 1, h, d);
        s[j] = dot * scale;
        m = std::max(m, s[j]);
      }
      for (double& v : s) sum += (v = std::exp(v - m));
      for (uint32_t d = 0; d < hd; ++d) {
        double o = 0;
        for (uint32_t j = 0; j < n; ++j) o += s[j] / sum * at(j, 2, h, d);
        want[size_t(t) * H + h * hd + d] = o;
      }
    }
  EXPECT_LT(worst(out.read(), want), 1e-5) << "vision_attention patches " << n << " heads " << heads << " dim " << hd;
}

// The CPU reference of attention over all patches: out [n, heads * hd].
std::vector<double> attention_reference(const std::vector<float>& qkv, const std::vector<float>& bias, uint32_t n,
                                        uint32_t heads, uint32_t hd) {
  const uint32_t H = heads * hd;
  const double scale = 1.0 / std::sqrt(double(hd));
  std::vector<double> want(size_t(n) * H);
  const auto at = [&](uint32_t t, uint32_t part, uint32_t h, uint32_t d) {
    return double(qkv[size_t(t) * 3 * H + part * H + h * hd + d]) + bias[part * H + h * hd + d];
  };
  for (uint32_t h = 0; h < heads; ++h)
    for (uint32_t t = 0; t < n; ++t) {
      std::vector<double> s(n);
      double m = -INFINITY, sum = 0;
      for (uint32_t j = 0; j < n; ++j) {
        double dot = 0;
        for (uint32_t d = 0; d < hd; ++d) dot += at(t, 0, h, d) * at(j, 1, h, d);
        s[j] = dot * scale;
        m = std::max(m, s[j]);
      }
      for (double& v : s) sum += (v = std::exp(v - m));
      for (uint32_t d = 0; d < hd; ++d) {
        double o = 0;
        for (uint32_t j = 0; j < n; ++j) o += s[j] / sum * at(j, 2, h, d);
        want[size_t(t) * H + h * hd + d] = o;
      }
    }
  return want;
}

// On the tensor units: fp16 Q, K, V and P, so a looser bar. 72-dim heads
// (SigLIP So400m's, padded to 80) and 16 (the tiny model's); 150 patches: a
// partial row tile and a partial key tile.
TEST(VisionKernel, AttentionOnTensorUnitsSeesEveryPatch) {
  const auto& info = kernel_device().ctx.info();
  if (!info.coopmat) GTEST_SKIP() << info.name << ": " << info.coopmat_note;
  for (uint32_t hd : {72u, 16u}) {
    const uint32_t n = 150, heads = 2, H = heads * hd;
    ASSERT_TRUE(kernels::vision_attention_coop_fits(hd, info.coop_m, info.coop_n, info.coop_k, info.subgroup_size,
                                                    info.max_shared_memory))
        << "head dim " << hd;
    const auto qkv = random_floats(size_t(n) * 3 * H, 13, -2, 2), bias = random_floats(3 * H, 14);
    const Floats qb(qkv), bb(bias), out(size_t(n) * H);
    const uint32_t rows = kernels::kVisionAttentionCoopGroups * info.coop_m;
    dispatch("vision_attention_coop", kernels::kVisionAttentionCoopBindings,
             kernels::VisionAttentionCoop{n, heads, hd, kernels::vision_attention_coop_pad(hd, info.coop_n, info.coop_k),
                                          1.0f / std::sqrt(float(hd)), rows, kernels::kVisionAttentionCoopKeys,
                                          info.coop_m, info.coop_n, info.coop_k, info.subgroup_size,
                                          kernels::kVisionAttentionCoopGroups * info.subgroup_size},
             {&qb, &bb, &out}, {groups_of(n, rows), heads, 1});
    EXPECT_LT(worst(out.read(), attention_reference(qkv, bias, n, heads, hd)), 2e-2)
        << "vision_attention_coop patches " << n << " heads " << heads << " dim " << hd;
  }
}

TEST(VisionKernel, GeluAddsTheBiasThenAppliesGeluTanh) {
  const uint32_t rows = 3, dim = 100;
  const auto h0 = random_floats(rows * dim, 9, -4, 4), bias = random_floats(dim, 10);
  const Floats h(h0), b(bias);
  // One workgroup for 300 elements: the threads walk them a grid apart, as
  // at the real shape, whose 17.6 M elements take the 65,535 groups' limit.
  static_assert(kernels::vision_elementwise_groups(4096ull * 4304) == 65535);
  dispatch("vision_gelu", kernels::kVisionGeluBindings, kernels::VisionGelu{dim, rows}, {&h, &b}, {1, 1, 1});
  std::vector<double> want(rows * dim);
  for (size_t i = 0; i < want.size(); ++i) want[i] = reference::gelu_tanh(double(h0[i]) + bias[i % dim]);
  EXPECT_LT(worst(h.read(), want), 1e-5) << "vision_gelu rows " << rows << " dim " << dim;
}

TEST(VisionKernel, PoolAveragesThePatchGridThenRmsNormsWithOnePlusW) {
  const uint32_t dim = 72, per_side = 6, pool = 3, tps = per_side / pool;
  const auto x = random_floats(per_side * per_side * dim, 11, -2, 2), w = random_floats(dim, 12);
  const Floats xb(x), wb(w), out(tps * tps * dim);
  const float eps = 1e-6f;
  dispatch("vision_pool", kernels::kVisionPoolBindings,
           kernels::VisionPool{dim, per_side, pool, eps, kernels::kVisionRowThreads}, {&xb, &wb, &out},
           {tps * tps, 1, 1});
  std::vector<double> want(tps * tps * dim);
  for (uint32_t ty = 0; ty < tps; ++ty)
    for (uint32_t tx = 0; tx < tps; ++tx) {
      double* row = &want[(ty * tps + tx) * dim];
      double ms = 0;
      for (uint32_t i = 0; i < dim; ++i) {
        double s = 0;
        for (uint32_t dy = 0; dy < pool; ++dy)
          for (uint32_t dx = 0; dx < pool; ++dx) s += x[((ty * pool + dy) * per_side + tx * pool + dx) * dim + i];
        row[i] = s / (pool * pool);
        ms += row[i] * row[i] / dim;
      }
      for (uint32_t i = 0; i < dim; ++i) row[i] = row[i] / std::sqrt(ms + eps) * (1.0 + w[i]);
    }
  EXPECT_LT(worst(out.read(), want), 1e-5) << "vision_pool grid " << per_side << " pool " << pool;
}

}  // namespace
}  // namespace unicorn
