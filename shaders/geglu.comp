#version 450
#extension GL_GOOGLE_include_directive : require
#define STEP_BINDING 2
#include "include/step.glsl"
// geglu — gate = gelu_tanh(gate) * up, elementwise over [n, F] (Gemma's
// hidden_activation "gelu_pytorch_tanh"). With HALF_OUT the product goes to
// binding 3 instead, as the fp16 operand of the down projection
// (include/operand.glsl); gate is then only read.
// Dispatch: (ceil(F / 64), n_tokens, 1).
layout(local_size_x = 64) in;
layout(constant_id = 0) const uint F = 1;
layout(constant_id = 1) const uint HALF_OUT = 0;
#include "include/operand.glsl"

layout(binding = 0) buffer GateBuf { float g[]; };
layout(binding = 1) readonly buffer UpBuf { float u[]; };
layout(binding = 3) writeonly buffer OutBufH { float16_t oh[]; };  // HALF_OUT

#include "include/gelu.glsl"

void main() {
  const uint i = gl_GlobalInvocationID.x, t = gl_GlobalInvocationID.y;
  if (i >= F || t >= n_tokens) return;
  const uint e = t * F + i;
  const float r = gelu_tanh(g[e]) * u[e];
  if (HALF_OUT != 0)
    oh[e] = OPERAND_FP16(r);
  else
    g[e] = r;
}
