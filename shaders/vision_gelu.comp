#version 450
#extension GL_GOOGLE_include_directive : require
// vision_gelu — the image encoder's MLP activation, in place on fc1's
// output: h = gelu_tanh(h + bias) (SigLIP's gelu_pytorch_tanh; fc1's bias
// is added here, the product itself has none).
// Dispatch: (min(ceil(rows * DIM / 256), 65535), 1, 1): each thread walks the
// elements a grid apart (4,096 x 4,304 at 896 pixels would need 68,864
// workgroups, past the 65,535 every device must take).
#include "include/gelu.glsl"

layout(local_size_x = 256) in;
layout(constant_id = 0) const uint DIM = 128;   // features per row (the MLP's intermediate size)
layout(constant_id = 1) const uint ROWS = 256;  // rows (patches)

layout(binding = 0) buffer H { float h[]; };                 // [ROWS, DIM]
layout(binding = 1) readonly buffer Bias { float bias[]; };  // [DIM]

void main() {
  const uint grid = gl_NumWorkGroups.x * 256;
  for (uint i = gl_GlobalInvocationID.x; i < ROWS * DIM; i += grid) h[i] = gelu_tanh(h[i] + bias[i % DIM]);
}
