#version 450
// check_finite — --check-tensors: find the first NaN or Inf in a weight
// tensor part as the device holds it (engine/check_tensors.hpp records one
// dispatch per part, every part of every tensor in one submission).
//   KIND 0: F32 values; 1: F16 values; 2: BF16 values;
//   KIND 3: a block format's f16 scales, which follow the part's quants
//           (planar layout, weights.glsl): pc.first_half is where they start.
// Block quants are integers; only a scale can be NaN or Inf, and then every
// element of its block is. The answer is the lowest bad value index (element,
// or block for KIND 3) times two, plus one for NaN (zero for Inf), folded into
// result[pc.slot] by atomicMin; the host fills it with 0xffffffff first.
// Dispatch: 1-D grid of 64-wide groups striding over pc.count values; each
// invocation stops at its first bad value (later ones can only be higher).
#extension GL_EXT_shader_16bit_storage : require

layout(local_size_x = 64) in;
layout(constant_id = 0) const uint KIND = 0;

layout(binding = 0) readonly buffer Words { uint W32[]; };
layout(binding = 0) readonly buffer Halves { uint16_t W16[]; };
layout(binding = 1) buffer Result { uint result[]; };
// count: values to check; first_half: the first value's uint16 index (KIND 3);
// slot: this part's entry in result.
layout(push_constant) uniform Push { uint count; uint first_half; uint slot; } pc;

// 0: finite; 1: Inf; 2: NaN.
uint classify(uint i) {
  if (KIND == 0) {
    const uint b = W32[i];
    if ((b & 0x7f800000u) != 0x7f800000u) return 0u;
    return (b & 0x007fffffu) != 0u ? 2u : 1u;
  }
  const uint h = uint(W16[KIND == 3 ? pc.first_half + i : i]);
  if (KIND == 2) {  // bf16: 8 exponent bits, 7 mantissa bits
    if ((h & 0x7f80u) != 0x7f80u) return 0u;
    return (h & 0x007fu) != 0u ? 2u : 1u;
  }
  if ((h & 0x7c00u) != 0x7c00u) return 0u;  // f16: 5 exponent bits, 10 mantissa bits
  return (h & 0x03ffu) != 0u ? 2u : 1u;
}

void main() {
  const uint stride = gl_NumWorkGroups.x * 64u;
  for (uint i = gl_GlobalInvocationID.x; i < pc.count; i += stride) {
    const uint c = classify(i);
    if (c != 0u) {
      atomicMin(result[pc.slot], i * 2u + (c - 1u));
      return;
    }
  }
}
