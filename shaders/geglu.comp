#version 450
#extension GL_GOOGLE_include_directive : require
#define STEP_BINDING 2
#include "include/step.glsl"
// geglu — gate = gelu_tanh(gate) * up, elementwise over [n, F] (Gemma's
// hidden_activation "gelu_pytorch_tanh").
// Dispatch: (ceil(F / 64), n_tokens, 1).
layout(local_size_x = 64) in;
layout(constant_id = 0) const uint F = 1;

layout(binding = 0) buffer GateBuf { float g[]; };
layout(binding = 1) readonly buffer UpBuf { float u[]; };

#include "include/gelu.glsl"

void main() {
  const uint i = gl_GlobalInvocationID.x, t = gl_GlobalInvocationID.y;
  if (i >= F || t >= n_tokens) return;
  const uint e = t * F + i;
  g[e] = gelu_tanh(g[e]) * u[e];
}
