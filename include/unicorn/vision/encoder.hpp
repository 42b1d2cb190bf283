// unicorn/vision/encoder.hpp — Gemma 3's image encoder (SigLIP) and projector
// recorded on Vulkan: planar pixels [3, S, S] in, [tokens_per_image, text
// hidden] soft tokens out, in a device buffer the text model reads.
//
// VisionEncoder is the run-time core (dimensions as a value; they reach the
// shaders as specialization constants); Encoder<V> is its compile-time face,
// for a deployment D (D::kConfig.vision, D::kConfig.model.hidden) or a type
// with `static constexpr VisionDims kVision` and `static constexpr uint32_t
// kTextHidden`. The whole pass is recorded once at creation, as the text
// model's passes are (engine/create.hpp): encode() writes the pixels and submits it.
//
// The pass, with the shape each step writes (n patches, H hidden, F ffn, T
// tokens, Ht text hidden):
//   cols = im2col(pixels)                          [n, 3 P P]  vision_patches
//   proj = cols Wpatch^T                           [n, H]      matmul
//   x = pos; x += proj + b_patch; h = LN1_0(x)     [n, H]      vision_layernorm
//   per layer l:
//     qkv = h [Wq; Wk; Wv]^T                       [n, 3H]     matmul
//     a = softmax((q + bq)(k + bk)^T / sqrt(d)) (v + bv), all patches, per head
//                                                  [n, H]      vision_attention(_coop)
//     proj = a Wo^T; x += proj + bo; h = LN2_l(x)  [n, H]      matmul, vision_layernorm
//     f = gelu_tanh(h W1^T + b1)                   [n, F]      matmul, vision_gelu
//     proj = f W2^T; x += proj + b2;
//     h = LN1_{l+1}(x), or encoded = post_LN(x)    [n, H]      matmul, vision_layernorm
//   pooled = rmsnorm_(1+w)(avgpool_pool(encoded))  [T, H]      vision_pool
//   soft = pooled Wproj                            [T, Ht]     matmul
// Products run on matmul_<fmt>, or on the tensor units (matmul_coop_<fmt>,
// fp16 operands, fp32 sums) where the device has them and the options allow,
// as the text model's prefill does; attention then too (vision_attention_coop).
// Weights keep their file's format (F32, F16, BF16; the layers' products also
// Q8_0); biases, norms and position embeddings go to the device in fp32.
#pragma once

#include <algorithm>
#include <cmath>
#include <concepts>
#include <cstring>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <unicorn/spirv.hpp>
#include <vector>

#include "unicorn/base/error.hpp"
#include "unicorn/config/vision_dims.hpp"
#include "unicorn/engine/kernels.hpp"
#include "unicorn/engine/step.hpp"
#include "unicorn/gpu/context.hpp"
#include "unicorn/gpu/kernel.hpp"
#include "unicorn/gpu/memory.hpp"
#include "unicorn/gpu/staging.hpp"
#include "unicorn/gpu/timing.hpp"
#include "unicorn/model/vision_weights.hpp"
#include "unicorn/vision/from_weights.hpp"
#include "unicorn/vision/kernels.hpp"
#include "unicorn/vision/tensors.hpp"

namespace unicorn::vision {

// Throws unicorn::Error where soft tokens ([tokens, hidden], an encode()'s)
// hold a NaN or an Inf, naming the image (`what`), the first such token and
// the device: fed to the model they would be a silent wrong answer (lavapipe's
// fp32 attention at real image sizes, notes/vision_encoder.md; weights that
// overflow).
inline void check_soft_tokens(std::span<const float> soft, uint32_t hidden, const std::string& what,
                              const std::string& device) {
  const auto bad = std::ranges::find_if(soft, [](float x) { return !std::isfinite(x); });
  if (bad == soft.end()) return;
  throw Error(what + ": the image encoder's output holds " + (std::isnan(*bad) ? "NaN" : "Inf") + " (soft token " +
              std::to_string((bad - soft.begin()) / hidden) + ") on " + device +
              "; the image is not passed to the model");
}

struct EncoderOptions {
  // Products on fp16 tensor units where the device has them (gpu::DeviceInfo::
  // coopmat); false keeps them on fp32 tiles (matmul), as a golden held to
  // fp32 wants.
  bool tensor_units = true;
  // With tensor_units: attention on them too (vision_attention_coop) where the
  // head fits its tile; false keeps vision_attention (fp32 ALUs).
  bool attention_tensor_units = true;
  std::filesystem::path pipeline_dir{};  // the on-disk pipeline cache (gpu/pipeline_cache.hpp); empty: none
  // A timestamp after every dispatch, for stage_times() (unicorn-bench, encoder_timing).
  bool profile = false;
};

// Device time of one encode's dispatches of one kernel module, summed.
struct StageTime {
  std::string kernel;  // module name, e.g. "vision_attention", "matmul_coop_f16"
  uint32_t dispatches;
  double ms;
};

class VisionEncoder {
 public:
  // Checks `weights` against the dimensions (every tensor present, its shape,
  // a format the encoder takes), uploads them and records the pass.
  // Throws unicorn::Error naming what is wrong.
  VisionEncoder(const gpu::Context& ctx, const VisionDims& dims, uint32_t text_hidden,
                const HostTensors& weights, EncoderOptions options = {})
      : ctx_(ctx),
        v_(dims),
        text_hidden_(text_hidden),
        tensor_units_(options.tensor_units && ctx.info().coopmat),
        profile_(options.profile),
        attention_tensor_units_(options.attention_tensor_units),
        kernels_(ctx.kernel_cache(options.pipeline_dir)),
        sets_(ctx),
        stream_(ctx) {
    if (!patches_tile_image(v_) || !tokens_pool_patches(v_) || !vision_heads_divide(v_) || v_.layers == 0)
      throw Error("vision: " + std::string(v_.name) + " is not a valid encoder shape (image " +
                  std::to_string(v_.image_size) + ", patch " + std::to_string(v_.patch) + ", " +
                  std::to_string(v_.tokens_per_image) + " tokens, " + std::to_string(v_.heads) + " heads of " +
                  std::to_string(v_.hidden) + ")");
    if (kernels::vision_attention_shared_bytes(v_.head_dim()) > ctx.info().max_shared_memory)
      throw Error("vision: attention heads of " + std::to_string(v_.head_dim()) + " dimensions need " +
                  std::to_string(kernels::vision_attention_shared_bytes(v_.head_dim())) + " bytes of shared memory; " +
                  ctx.info().name + " has " + std::to_string(ctx.info().max_shared_memory));
    check_weights(weights);
    allocate(weights);
    upload(weights);
    record();
  }
  // From what a reader made of a file (model/vision_weights.hpp: an mmproj
  // GGUF or a Hugging Face directory): its dimensions and projection width.
  VisionEncoder(const gpu::Context& ctx, const VisionWeights& weights, EncoderOptions options = {})
      : VisionEncoder(ctx, weights.dims, weights.projection_dim, weight_table(weights).tensors, std::move(options)) {}
  VisionEncoder(const VisionEncoder&) = delete;
  VisionEncoder& operator=(const VisionEncoder&) = delete;

  // Runs the encoder on planar pixels [3, S, S] (normalised to [-1, 1], as
  // image/ makes them) and waits for it; the soft tokens are then in
  // soft_tokens_buffer().
  void encode(std::span<const float> pixels) {
    const uint64_t want = 3ull * v_.image_size * v_.image_size;
    if (pixels.size() != want)
      throw Error("vision: the encoder takes " + std::to_string(want) + " pixel values (3 x " +
                  std::to_string(v_.image_size) + " x " + std::to_string(v_.image_size) + "), got " +
                  std::to_string(pixels.size()));
    std::memcpy(host_[kPixels].mapped, pixels.data(), pixels.size_bytes());
    stream_.submit_and_wait(**pass_);
  }

  // The last encode()'s soft tokens [tokens_per_image, text_hidden]: the
  // buffer the text model reads, and a host copy (tests, tools).
  vk::DescriptorBufferInfo soft_tokens_buffer() const { return act_[kSoft].whole(); }
  std::vector<float> soft_tokens() const { return read_back(act_[kSoft]); }
  // The vision tower's output [patches, hidden], post-LayerNorm applied
  // (transformers' last_hidden_state).
  std::vector<float> vision_output() const { return read_back(act_[kEncoded]); }

  // With EncoderOptions::profile: the last encode()'s device time per kernel
  // module, in the order each first ran.
  std::vector<StageTime> stage_times() const {
    if (!timestamps_) throw Error("vision: stage_times() needs an encoder made with EncoderOptions::profile");
    const std::vector<double> ns = timestamps_->read_ns(uint32_t(dispatches_.size() + 1));
    std::vector<StageTime> out;
    for (size_t i = 0; i < dispatches_.size(); ++i) {
      const std::string& name = dispatches_[i].kernel->name();
      auto it = std::find_if(out.begin(), out.end(), [&](const StageTime& t) { return t.kernel == name; });
      if (it == out.end()) it = out.insert(out.end(), StageTime{name, 0, 0.0});
      it->dispatches++;
      it->ms += (ns[i + 1] - ns[i]) / 1e6;
    }
    return out;
  }

  const VisionDims& dims() const { return v_; }
  uint32_t text_hidden() const { return text_hidden_; }
  bool tensor_units() const { return tensor_units_; }  // whether the products run on them
  bool attention_on_tensor_units() const { return attention_coop_; }  // vision_attention_coop
  // Floating-point operations of one encode (2 per multiply-add), for rates.
  static uint64_t flops(const VisionDims& v, uint32_t text_hidden) {
    const uint64_t n = v.patches(), H = v.hidden, F = v.ffn;
    const uint64_t per_layer = 2 * n * H * (4 * H + 2 * F) + 4 * n * n * H;
    return 2 * n * v.patch_inputs() * H + v.layers * per_layer + 2ull * v.tokens_per_image * H * text_hidden;
  }

 private:
  // Activations (device-local), by job.
  enum Act : uint32_t { kCols, kX, kH, kQkv, kAttn, kProj, kFfn, kEncoded, kPooled, kSoft, kActs };
  // Host-visible buffers: the pixels, the two step headers the products read
  // (n_tokens: patches, then soft tokens), the read-back.
  enum Host : uint32_t { kPixels, kPatchStep, kTokenStep, kReadBack, kHosts };
  // A weight on the device: its buffer index, format and [rows, cols].
  struct Matrix {
    uint32_t buffer;
    Format format;
    uint32_t rows, cols;
  };
  struct Layer {
    Matrix qkv, out, fc1, fc2;
    uint32_t qkv_bias, out_bias, fc1_bias, fc2_bias, ln1_w, ln1_b, ln2_w, ln2_b;  // fp32 vectors
  };

  static const HostTensor& get(const HostTensors& w, std::string_view name) {
    const auto it = w.find(name);
    if (it == w.end()) throw Error("vision: the encoder's weights have no tensor " + std::string(name));
    return it->second;
  }

  // The layers' products may be Q8_0 (ggml's blocks of 32 along a row); every
  // other tensor is F32, F16 or BF16: vectors go to the device in fp32, and
  // the patch embedding's rows (3 P P = 588 at 896 pixels) and the projector's
  // (transposed at upload) are no whole blocks.
  static bool layer_product(std::string_view name) {
    return name.starts_with("vision_tower.encoder.layers.") &&
           (name.ends_with("_proj.weight") || name.ends_with("fc1.weight") || name.ends_with("fc2.weight"));
  }
  static bool float_format(Format f) { return f == Format::F32 || f == Format::F16 || f == Format::BF16; }

  void check_weights(const HostTensors& w) const {
    for (const ExpectedTensor& e : expected_vision_tensors(v_, text_hidden_)) {
      const HostTensor& t = get(w, e.name);
      if (t.shape != e.shape)
        throw Error("vision: tensor " + e.name + " has shape " + shape_text(t.shape) + ", the encoder " +
                    std::string(v_.name) + " with text hidden size " + std::to_string(text_hidden_) +
                    " needs " + shape_text(e.shape));
      uint64_t elems = 1;
      for (uint64_t d : t.shape) elems *= d;
      const bool q8 = t.format == Format::Q8_0 && layer_product(e.name);
      if (!q8 && !float_format(t.format))
        throw Error("vision: tensor " + e.name + " is " + std::string(format_name(t.format)) +
                    "; the image encoder takes it in F32, F16 or BF16" + (layer_product(e.name) ? " or Q8_0" : ""));
      if (q8 && t.shape.back() % 32)
        throw Error("vision: tensor " + e.name + " is Q8_0, but its rows of " + std::to_string(t.shape.back()) +
                    " values are not whole blocks of 32");
      const uint64_t bytes = q8 ? elems / 32 * 34 : elems * vision_element_bytes(t.format);
      if (t.bytes.size() != bytes)
        throw Error("vision: tensor " + e.name + " holds " + std::to_string(t.bytes.size()) + " bytes, its shape " +
                    shape_text(t.shape) + " in " + std::string(format_name(t.format)) + " needs " +
                    std::to_string(bytes));
    }
    for (uint32_t l = 0; l < v_.layers; ++l) {
      const Format q = get(w, names::layer(l, "self_attn.q_proj.weight")).format;
      for (const char* p : {"k_proj", "v_proj"})
        if (get(w, names::layer(l, std::string("self_attn.") + p + ".weight")).format != q)
          throw Error("vision: layer " + std::to_string(l) + "'s q, k and v projections differ in format: the "
                      "encoder runs them as one product");
    }
  }

  // Device buffers: sizes_ grows as tensors are placed; a vector's index.
  uint32_t place(uint64_t bytes) {
    sizes_.push_back(bytes);
    return uint32_t(sizes_.size() - 1);
  }
  uint32_t place_vector(uint64_t elems) { return place(elems * 4); }
  Matrix place_matrix(Format f, uint32_t rows, uint32_t cols) {
    const uint64_t elems = uint64_t(rows) * cols;
    return {place(f == Format::Q8_0 ? elems / 32 * 34 : elems * vision_element_bytes(f)), f, rows, cols};
  }

  void allocate(const HostTensors& w) {
    const uint32_t H = v_.hidden, F = v_.ffn;
    patch_ = place_matrix(get(w, names::kPatchWeight).format, H, v_.patch_inputs());
    patch_bias_ = place_vector(H);
    position_ = place_vector(uint64_t(v_.patches()) * H);
    for (uint32_t l = 0; l < v_.layers; ++l) {
      Layer L{};
      L.qkv = place_matrix(get(w, names::layer(l, "self_attn.q_proj.weight")).format, 3 * H, H);
      L.out = place_matrix(get(w, names::layer(l, "self_attn.out_proj.weight")).format, H, H);
      L.fc1 = place_matrix(get(w, names::layer(l, "mlp.fc1.weight")).format, F, H);
      L.fc2 = place_matrix(get(w, names::layer(l, "mlp.fc2.weight")).format, H, F);
      L.qkv_bias = place_vector(3 * H);
      for (uint32_t* b : {&L.out_bias, &L.ln1_w, &L.ln1_b, &L.ln2_w, &L.ln2_b, &L.fc2_bias}) *b = place_vector(H);
      L.fc1_bias = place_vector(F);
      layers_.push_back(L);
    }
    post_w_ = place_vector(H);
    post_b_ = place_vector(H);
    soft_norm_ = place_vector(H);
    // The projector's [H, Ht] is stored transposed, [Ht, H]: the products' [out, in].
    projection_ = place_matrix(get(w, names::kProjection).format, text_hidden_, H);
    weights_ = gpu::BufferSet(ctx_, sizes_, gpu::MemoryKind::DeviceLocal, "the image encoder's weights");

    const uint64_t n = v_.patches(), T = v_.tokens_per_image;
    uint64_t act[kActs];
    act[kCols] = n * v_.patch_inputs();
    act[kX] = act[kH] = act[kAttn] = act[kProj] = act[kEncoded] = n * H;
    act[kQkv] = 3 * n * H;
    act[kFfn] = n * F;
    act[kPooled] = T * H;
    act[kSoft] = T * text_hidden_;
    for (uint64_t& a : act) a *= 4;
    act_ = gpu::BufferSet(ctx_, act, gpu::MemoryKind::DeviceLocal, "the image encoder's activations");
    const uint64_t largest_out = std::max(n * H, T * text_hidden_) * 4;
    const uint64_t host[kHosts] = {3ull * v_.image_size * v_.image_size * 4, 16, 16, largest_out};
    host_ = gpu::BufferSet(ctx_, host, gpu::MemoryKind::HostVisible, "the image encoder's host buffers");
    const detail::StepHeader patch_step{uint32_t(n), 0}, token_step{uint32_t(T), 0};
    std::memcpy(host_[kPatchStep].mapped, &patch_step, sizeof patch_step);
    std::memcpy(host_[kTokenStep].mapped, &token_step, sizeof token_step);
  }

  // Host-side layout work before the copy: fp32 vectors, and the projector's
  // transpose (element bytes moved, not converted).
  static std::vector<std::byte> as_f32(std::initializer_list<const HostTensor*> parts) {
    uint64_t elems = 0;
    for (const HostTensor* t : parts) elems += t->bytes.size() / vision_element_bytes(t->format);
    std::vector<std::byte> out(elems * 4);
    uint64_t at = 0;
    for (const HostTensor* t : parts) {
      const uint64_t e = t->bytes.size() / vision_element_bytes(t->format);
      for (uint64_t i = 0; i < e; ++i, ++at) {
        const float f = vision_element(*t, i);
        std::memcpy(out.data() + 4 * at, &f, 4);
      }
    }
    return out;
  }
  // Q8_0 blocks { f16 d; int8 q[32] } in the device's planar layout
  // (quant/formats.hpp): every block's quants, then every block's scale.
  static std::vector<std::byte> q8_0_planar(std::initializer_list<const HostTensor*> parts) {
    uint64_t blocks = 0;
    for (const HostTensor* t : parts) blocks += t->bytes.size() / 34;
    std::vector<std::byte> out(blocks * 34);
    uint64_t b = 0;
    for (const HostTensor* t : parts)
      for (uint64_t i = 0; i < t->bytes.size() / 34; ++i, ++b) {
        std::memcpy(&out[32 * b], &t->bytes[34 * i + 2], 32);
        std::memcpy(&out[32 * blocks + 2 * b], &t->bytes[34 * i], 2);
      }
    return out;
  }
  static std::vector<std::byte> transposed(const HostTensor& t) {
    const uint64_t rows = t.shape[0], cols = t.shape[1], e = vision_element_bytes(t.format);
    std::vector<std::byte> out(t.bytes.size());
    for (uint64_t r = 0; r < rows; ++r)
      for (uint64_t c = 0; c < cols; ++c) std::memcpy(&out[(c * rows + r) * e], &t.bytes[(r * cols + c) * e], e);
    return out;
  }

  void upload(const HostTensors& w) {
    gpu::StagingRing ring(ctx_, kStagingBytes);
    const auto put = [&](uint32_t buffer, uint64_t offset, std::span<const std::byte> bytes) {
      const gpu::Buffer& dst = weights_[buffer];
      for (uint64_t done = 0; done < bytes.size(); done += ring.slot_bytes()) {
        const uint64_t n = std::min<uint64_t>(ring.slot_bytes(), bytes.size() - done);
        ring.submit(bytes.subspan(done, n), [&](vk::CommandBuffer cb, uint32_t slot) {
          cb.copyBuffer(ring.buffer(slot).handle, dst.handle, vk::BufferCopy{0, offset + done, n});
        });
      }
    };
    const auto put_f32 = [&](uint32_t buffer, std::initializer_list<const HostTensor*> parts) {
      put(buffer, 0, as_f32(parts));
    };
    // A product's weight, from one tensor or several stacked by rows (q, k, v).
    const auto put_matrix = [&](const Matrix& m, std::initializer_list<const HostTensor*> parts) {
      if (m.format == Format::Q8_0) return put(m.buffer, 0, q8_0_planar(parts));
      uint64_t at = 0;
      for (const HostTensor* t : parts) put(m.buffer, at, t->bytes), at += t->bytes.size();
    };
    const auto& t = [&](std::string_view name) -> const HostTensor& { return get(w, name); };
    put(patch_.buffer, 0, t(names::kPatchWeight).bytes);
    put_f32(patch_bias_, {&t(names::kPatchBias)});
    put_f32(position_, {&t(names::kPosition)});
    for (uint32_t l = 0; l < v_.layers; ++l) {
      const Layer& L = layers_[l];
      const auto lt = [&](const char* leaf) -> const HostTensor& { return get(w, names::layer(l, leaf)); };
      put_matrix(L.qkv, {&lt("self_attn.q_proj.weight"), &lt("self_attn.k_proj.weight"), &lt("self_attn.v_proj.weight")});
      put_f32(L.qkv_bias, {&lt("self_attn.q_proj.bias"), &lt("self_attn.k_proj.bias"), &lt("self_attn.v_proj.bias")});
      put_matrix(L.out, {&lt("self_attn.out_proj.weight")});
      put_f32(L.out_bias, {&lt("self_attn.out_proj.bias")});
      put_matrix(L.fc1, {&lt("mlp.fc1.weight")});
      put_f32(L.fc1_bias, {&lt("mlp.fc1.bias")});
      put_matrix(L.fc2, {&lt("mlp.fc2.weight")});
      put_f32(L.fc2_bias, {&lt("mlp.fc2.bias")});
      put_f32(L.ln1_w, {&lt("layer_norm1.weight")});
      put_f32(L.ln1_b, {&lt("layer_norm1.bias")});
      put_f32(L.ln2_w, {&lt("layer_norm2.weight")});
      put_f32(L.ln2_b, {&lt("layer_norm2.bias")});
    }
    put_f32(post_w_, {&t(names::kPostNormWeight)});
    put_f32(post_b_, {&t(names::kPostNormBias)});
    put_f32(soft_norm_, {&t(names::kSoftNorm)});
    put(projection_.buffer, 0, transposed(t(names::kProjection)));
    ring.wait_all();
  }

  template <class Spec>
  const gpu::Kernel& kernel(const kernels::Shader<Spec>& shader, const Spec& spec) {
    return kernels_->get(std::string(spirv::name(shader.module)), spirv::words(shader.module), shader.bindings, spec);
  }
  void add(const gpu::Kernel& k, std::span<const vk::DescriptorBufferInfo> b, gpu::PushWords push,
           std::array<uint32_t, 3> g) {
    dispatches_.push_back({&k, sets_.make(k, b), push, {g[0], g[1], g[2]}, true});
  }
  static uint32_t groups(uint64_t items, uint32_t per) { return uint32_t((items + per - 1) / per); }
  vk::DescriptorBufferInfo w(uint32_t i) const { return weights_[i].whole(); }
  vk::DescriptorBufferInfo a(Act i) const { return act_[i].whole(); }

  // out [rows, m.rows] = in [rows, m.cols] m^T: rows are the patches or the
  // soft tokens (the step header the product reads says how many).
  void linear(Act in, Act out, const Matrix& m, Host step, uint32_t rows) {
    const auto& info = ctx_.info();
    const vk::DescriptorBufferInfo b[] = {w(m.buffer), a(in), a(out), host_[step].whole()};
    const gpu::PushWords push{0, m.rows};
    if (tensor_units_) {
      const kernels::CoopTile tile = kernels::coop_tile(rows, m.rows, false, info.multiprocessors);
      const auto& k = kernel(kernels::matmul_coop(m.format),
                             kernels::linear_coop(m.cols, m.rows, 0, info.coop_m, info.coop_n, info.coop_k,
                                                  info.subgroup_size, tile));
      return add(k, b, push, {groups(m.rows, tile.rows), groups(rows, tile.tokens), 1});
    }
    const auto& k = kernel(kernels::matmul(m.format),
                           kernels::Linear{.in_features = m.cols, .out_features = m.rows, .row_set = 0});
    add(k, b, push, {groups(m.rows, 64), groups(rows, 64), 1});
  }

  // x += y + y_bias (when y is given), then out = LayerNorm(x) with weight, bias.
  void layer_norm(uint32_t weight, uint32_t bias, Act out, const uint32_t* y_bias) {
    const kernels::VisionLayerNorm spec{.dim = v_.hidden, .eps = v_.layer_norm_eps, .accumulate = y_bias ? 1u : 0u,
                                        .threads = kernels::kVisionRowThreads};
    const auto& k = kernel(kernels::kVisionLayerNorm, spec);
    const vk::DescriptorBufferInfo b[] = {a(kX), a(kProj), w(y_bias ? *y_bias : weight), w(weight), w(bias), a(out)};
    add(k, b, {}, {v_.patches(), 1, 1});
  }

  void record() {
    const uint32_t n = v_.patches(), H = v_.hidden, T = v_.tokens_per_image;
    const auto& patches = kernel(kernels::kVisionPatches,
                                 kernels::VisionPatches{.image = v_.image_size, .patch = v_.patch});
    const vk::DescriptorBufferInfo pb[] = {host_[kPixels].whole(), a(kCols)};
    add(patches, pb, {}, {kernels::vision_elementwise_groups(uint64_t(n) * v_.patch_inputs()), 1, 1});
    linear(kCols, kProj, patch_, kPatchStep, n);                    // proj [n, H]
    layer_norm(layers_[0].ln1_w, layers_[0].ln1_b, kH, &patch_bias_);  // x = pos + proj + b; h = LN1(x)
    const auto& info = ctx_.info();
    const float scale = 1.0f / std::sqrt(float(v_.head_dim()));
    // Attention on the tensor units where the products are and the head fits
    // the tile, else in fp32 on the ALUs.
    attention_coop_ = tensor_units_ && attention_tensor_units_ && kernels::vision_attention_coop_fits(v_.head_dim(), info.coop_m, info.coop_n,
                                                                         info.coop_k, info.subgroup_size,
                                                                         info.max_shared_memory);
    const uint32_t coop_rows = kernels::kVisionAttentionCoopGroups * info.coop_m;
    const auto& attention =
        attention_coop_
            ? kernel(kernels::kVisionAttentionCoop,
                     kernels::VisionAttentionCoop{.patches = n, .heads = v_.heads, .head_dim = v_.head_dim(),
                                                  .pad_dim = kernels::vision_attention_coop_pad(v_.head_dim(), info.coop_n, info.coop_k),
                                                  .scale = scale, .rows = coop_rows,
                                                  .keys = kernels::kVisionAttentionCoopKeys, .tm = info.coop_m,
                                                  .tn = info.coop_n, .tk = info.coop_k,
                                                  .subgroup_size = info.subgroup_size,
                                                  .threads = kernels::kVisionAttentionCoopGroups * info.subgroup_size})
            : kernel(kernels::kVisionAttention,
                     kernels::VisionAttention{.patches = n, .heads = v_.heads, .head_dim = v_.head_dim(),
                                              .scale = scale, .keys = kernels::kVisionAttentionKeys,
                                              .rows = kernels::kVisionAttentionRows});
    const uint32_t attention_rows = attention_coop_ ? coop_rows : kernels::kVisionAttentionRows;
    const auto& gelu = kernel(kernels::kVisionGelu, kernels::VisionGelu{.dim = v_.ffn, .rows = n});
    for (uint32_t l = 0; l < v_.layers; ++l) {
      const Layer& L = layers_[l];
      linear(kH, kQkv, L.qkv, kPatchStep, n);  // qkv [n, 3H]
      const vk::DescriptorBufferInfo ab[] = {a(kQkv), w(L.qkv_bias), a(kAttn)};
      add(attention, ab, {}, {groups(n, attention_rows), v_.heads, 1});  // attn [n, H]
      linear(kAttn, kProj, L.out, kPatchStep, n);            // proj [n, H]
      layer_norm(L.ln2_w, L.ln2_b, kH, &L.out_bias);         // x += proj + bo; h = LN2(x)
      linear(kH, kFfn, L.fc1, kPatchStep, n);                // f [n, F]
      const vk::DescriptorBufferInfo gb[] = {a(kFfn), w(L.fc1_bias)};
      add(gelu, gb, {}, {kernels::vision_elementwise_groups(uint64_t(n) * v_.ffn), 1, 1});  // f = gelu(f + b1)
      linear(kFfn, kProj, L.fc2, kPatchStep, n);             // proj [n, H]
      if (l + 1 < v_.layers)
        layer_norm(layers_[l + 1].ln1_w, layers_[l + 1].ln1_b, kH, &L.fc2_bias);  // x += proj + b2; h = LN1'(x)
      else
        layer_norm(post_w_, post_b_, kEncoded, &L.fc2_bias);  // encoded = post_LN(x) [n, H]
    }
    const auto& pool = kernel(kernels::kVisionPool,
                              kernels::VisionPool{.dim = H, .per_side = v_.patches_per_side(), .pool = v_.pool(),
                                                  .eps = v_.soft_norm_eps, .threads = kernels::kVisionRowThreads});
    const vk::DescriptorBufferInfo qb[] = {a(kEncoded), w(soft_norm_), a(kPooled)};
    add(pool, qb, {}, {T, 1, 1});                             // pooled [T, H]
    linear(kPooled, kSoft, projection_, kTokenStep, T);       // soft [T, Ht]

    pass_ = std::make_unique<vk::raii::CommandBuffer>(stream_.allocate());
    const vk::CommandBuffer cb = **pass_;
    cb.begin(vk::CommandBufferBeginInfo{});
    gpu::Stream::full_barrier(cb);  // the host's pixels, the last pass's reads of x
    cb.copyBuffer(weights_[position_].handle, act_[kX].handle, vk::BufferCopy{0, 0, uint64_t(n) * H * 4});
    gpu::Stream::full_barrier(cb);
    if (profile_) {
      timestamps_ = std::make_unique<gpu::Timestamps>(ctx_, uint32_t(dispatches_.size() + 1));
      timestamps_->reset(cb);
      timestamps_->write(cb, 0);
    }
    for (size_t i = 0; i < dispatches_.size(); ++i) {
      gpu::record(cb, dispatches_[i], dispatches_[i].barrier_after);
      if (profile_) timestamps_->write(cb, uint32_t(i + 1));
    }
    gpu::Stream::full_barrier(cb);  // the soft tokens, for whoever reads them next
    cb.end();
  }

  std::vector<float> read_back(const gpu::Buffer& src) const {
    stream_.run_once([&](vk::CommandBuffer cb) {
      cb.copyBuffer(src.handle, host_[kReadBack].handle, vk::BufferCopy{0, 0, src.size});
    });
    std::vector<float> out(src.size / 4);
    std::memcpy(out.data(), host_[kReadBack].mapped, src.size);
    return out;
  }

  // Staging slots of the upload: the largest matrix of the real shape (fc1,
  // 4,304 x 1,152 in F16) is 9.9 MB, a few pieces.
  static constexpr uint64_t kStagingBytes = 8ull << 20;

  const gpu::Context& ctx_;
  VisionDims v_;
  uint32_t text_hidden_;
  bool tensor_units_;
  bool profile_;
  bool attention_tensor_units_;
  bool attention_coop_ = false;
  std::shared_ptr<gpu::KernelCache> kernels_;
  gpu::DescriptorArena sets_;
  mutable gpu::Stream stream_;  // read_back runs on it too
  std::vector<uint64_t> sizes_;
  Matrix patch_{}, projection_{};
  uint32_t patch_bias_ = 0, position_ = 0, post_w_ = 0, post_b_ = 0, soft_norm_ = 0;
  std::vector<Layer> layers_;
  gpu::BufferSet weights_, act_, host_;
  std::vector<gpu::Dispatch> dispatches_;
  std::unique_ptr<gpu::Timestamps> timestamps_;  // with profile_
  std::unique_ptr<vk::raii::CommandBuffer> pass_;
};

// What Encoder<V> takes: a deployment that names an encoder, or a plain type
// carrying the encoder's dimensions and the text model's hidden size.
template <class V>
concept VisionDeployment = requires {
  { V::kConfig.vision } -> std::convertible_to<VisionDims>;
  { V::kConfig.model.hidden } -> std::convertible_to<uint32_t>;
};
template <class V>
concept VisionShape = requires {
  { V::kVision } -> std::convertible_to<VisionDims>;
  { V::kTextHidden } -> std::convertible_to<uint32_t>;
};

template <class V>
  requires VisionDeployment<V> || VisionShape<V>
class Encoder : public VisionEncoder {
 public:
  static constexpr VisionDims kDims = [] {
    if constexpr (VisionShape<V>) return VisionDims(V::kVision);
    else return VisionDims(V::kConfig.vision);
  }();
  static constexpr uint32_t kTextHidden = [] {
    if constexpr (VisionShape<V>) return uint32_t(V::kTextHidden);
    else return uint32_t(V::kConfig.model.hidden);
  }();
  static_assert(!kDims.name.empty(), "unicorn: Encoder<D>: the deployment names no image encoder (with_vision)");
  static_assert(patches_tile_image(kDims), "unicorn: Encoder<D>: the patch size does not divide the image size");
  static_assert(tokens_pool_patches(kDims),
                "unicorn: Encoder<D>: tokens_per_image is not a square whose side divides the patches per side");
  static_assert(vision_heads_divide(kDims), "unicorn: Encoder<D>: the heads do not divide the hidden size");

  Encoder(const gpu::Context& ctx, const HostTensors& weights, EncoderOptions options = {})
      : VisionEncoder(ctx, kDims, kTextHidden, weights, std::move(options)) {}
  // A file's encoder, checked against the compiled one field by field
  // (check_vision_fits) and against the text model's width.
  Encoder(const gpu::Context& ctx, const VisionWeights& weights, EncoderOptions options = {}, bool gguf = true)
      : VisionEncoder(ctx, kDims, kTextHidden, checked(weights, gguf).tensors, std::move(options)) {}

 private:
  static WeightTable checked(const VisionWeights& w, bool gguf) {
    check_vision_fits(w, kDims, gguf);
    if (w.projection_dim != kTextHidden)
      throw Error(w.source + ": the projector maps to " + std::to_string(w.projection_dim) +
                  ", but this engine's text model is " + std::to_string(kTextHidden) + " wide");
    return weight_table(w);
  }
};

}  // namespace unicorn::vision
