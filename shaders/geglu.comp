#version 450
#extension GL_GOOGLE_include_directive : require
#define STEP_BINDING 2
#include "include/step.glsl"
// geglu — gate = gelu_tanh(gate) * up, elementwise over [n, FFN] (Gemma's
// hidden_activation "gelu_pytorch_tanh"). With HALF_OUT the product goes to
// binding 3 instead, as the fp16 operand of the down projection
// (include/operand.glsl); gate is then only read. A thread takes 4
// consecutive elements (16-byte loads) when FFN % 4 == 0, else one. With
// UP_SLICES > 1, up is that many partial sums SLICE elements apart (an up
// projection split over K, matmul_coop's SPLITS), added in order.
// Dispatch: (ceil(kernels::geglu_threads(FFN) / 64), n_tokens, 1).
layout(local_size_x = 64) in;
layout(constant_id = 0) const uint FFN = 1;
layout(constant_id = 1) const uint HALF_OUT = 0;
layout(constant_id = 2) const uint UP_SLICES = 1;
layout(constant_id = 3) const uint SLICE = 0;
#include "include/operand.glsl"

layout(binding = 0) buffer GateBuf { float g[]; };
layout(binding = 0) buffer GateBuf4 { vec4 g4[]; };
layout(binding = 1) readonly buffer UpBuf { float u[]; };
layout(binding = 1) readonly buffer UpBuf4 { vec4 u4[]; };
layout(binding = 3) writeonly buffer OutBufH { float16_t oh[]; };   // HALF_OUT
layout(binding = 3) writeonly buffer OutBufH4 { f16vec4 oh4[]; };

#include "include/gelu.glsl"

void main() {
  const uint i = gl_GlobalInvocationID.x, t = gl_GlobalInvocationID.y;
  if (t >= n_tokens) return;
  if (FFN % 4 == 0) {
    if (i >= FFN / 4) return;
    const uint e = t * (FFN / 4) + i;
    const vec4 gv = g4[e];
    vec4 uv = u4[e];
    for (uint s = 1; s < UP_SLICES; ++s) uv += u4[s * (SLICE / 4) + e];
    const vec4 r = vec4(gelu_tanh(gv.x), gelu_tanh(gv.y), gelu_tanh(gv.z), gelu_tanh(gv.w)) * uv;
    if (HALF_OUT != 0)
      oh4[e] = OPERAND_FP16X4(r);
    else
      g4[e] = r;
    return;
  }
  if (i >= FFN) return;
  const uint e = t * FFN + i;
  float uv = u[e];
  for (uint s = 1; s < UP_SLICES; ++s) uv += u[s * SLICE + e];
  const float r = gelu_tanh(g[e]) * uv;
  if (HALF_OUT != 0)
    oh[e] = OPERAND_FP16(r);
  else
    g[e] = r;
}
