// unicorn/layout/vision_budget.hpp — the bytes of a deployment's image encoder
// (DeploymentConfig::vision), counted at compile time for the placement budget
// (layout/budget.hpp) and its checks (layout/diag.hpp).
//
// The encoder's weight formats are its file's, chosen when it loads (F32, F16,
// BF16 or Q8_0: model/vision_weights.hpp), so a deployment counts them at F16,
// what llama.cpp's converter and Google's mmproj files mostly hold; the start-up
// check counts the file's own bytes. Its activations are those of one image
// through the SigLIP pass, by the shapes of what each step writes. Every part
// is rounded up to the binding alignment, as the text model's slabs are.
//
// Where it lives: its weights in the pool of the embeddings (the whole-model
// tensors), its activations in the activations' pool.
#pragma once

#include <algorithm>
#include <cstdint>
#include <initializer_list>

#include "unicorn/config/deployment.hpp"
#include "unicorn/layout/layout.hpp"

namespace unicorn {

struct VisionBudget {
  uint64_t weights = 0;             // every tensor at F16
  uint64_t activations = 0;         // one image's buffers
  uint64_t largest_activation = 0;  // the largest one buffer (one binding)
};

constexpr VisionBudget vision_budget(const DeploymentConfig& c) {
  VisionBudget b;
  const VisionDims& v = c.vision;
  if (!c.has_vision() || !patches_tile_image(v)) return b;  // diag::check_vision names the misfit
  const uint64_t h = v.hidden, f = v.ffn, n = v.patches(), t = v.tokens_per_image;
  const auto weight = [&](uint64_t elems, uint64_t count = 1) {
    b.weights += count * detail::align_up(elems * 2, kBindingAlign);
  };
  weight(uint64_t{v.patch_inputs()} * h);  // patch convolution
  weight(h);                               // its bias
  weight(h * n);                           // position embedding
  weight(h * h, 4 * v.layers);             // q, k, v, out
  weight(h * f, 2 * v.layers);             // fc1, fc2
  weight(h, 9 * v.layers);                 // q, k, v, out and fc2 biases, two LayerNorms' weight and bias
  weight(f, v.layers);                     // fc1's bias
  weight(h, 2);                            // the final LayerNorm
  weight(h * c.model.hidden);              // the projector's input projection
  weight(h);                               // its RMSNorm
  // f32 unless said: the pixels; the residual stream, its norm, q, k, v, the
  // attention's output and the output projection's; fc1's output; the fp16
  // operand of the tensor-unit products; the pooled grid; the soft tokens.
  const auto act = [&](uint64_t bytes, uint64_t count = 1) {
    b.activations += count * detail::align_up(bytes, kBindingAlign);
    b.largest_activation = std::max(b.largest_activation, bytes);
  };
  act(uint64_t{3} * v.image_size * v.image_size * 4);
  act(n * h * 4, 7);
  act(n * f * 4);
  act(n * std::max(h, f) * 2);
  act(t * h * 4);
  act(t * c.model.hidden * 4);
  return b;
}

}  // namespace unicorn
