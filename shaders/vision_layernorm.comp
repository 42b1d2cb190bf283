#version 450
// vision_layernorm — the image encoder's LayerNorm with weight and bias, one
// workgroup per row: out = (x - mean) / sqrt(var + EPS) * w + b (var the
// biased variance, as torch's LayerNorm), in fp32.
//   ACCUMULATE: first the residual update x += y + y_bias (a product's output
//     and its bias: the attention output projection, fc2, or the patch
//     embedding onto the position embeddings), written back to x, then the
//     norm of the new x: each residual add and the norm after it are one
//     dispatch. Without it y and y_bias are not read.
// Each thread owns elements tid, tid + THREADS, ... in every pass, so reading
// back its own writes to x needs no barrier.
// Dispatch: (rows, 1, 1), THREADS threads.
layout(local_size_x_id = 3) in;
layout(constant_id = 0) const uint DIM = 64;
layout(constant_id = 1) const float EPS = 1e-6;
layout(constant_id = 2) const uint ACCUMULATE = 0;
layout(constant_id = 3) const uint THREADS = 64;

layout(binding = 0) buffer X { float x[]; };                   // [rows, DIM], the residual stream
layout(binding = 1) readonly buffer Y { float y[]; };          // [rows, DIM] (ACCUMULATE)
layout(binding = 2) readonly buffer YBias { float y_bias[]; }; // [DIM] (ACCUMULATE)
layout(binding = 3) readonly buffer W { float w[]; };          // [DIM]
layout(binding = 4) readonly buffer B { float b[]; };          // [DIM]
layout(binding = 5) writeonly buffer Out { float out_[]; };    // [rows, DIM]

shared float partial[THREADS];

float workgroup_sum(float v) {
  const uint tid = gl_LocalInvocationID.x;
  partial[tid] = v;
  barrier();
  for (uint s = THREADS / 2; s > 0; s /= 2) {
    if (tid < s) partial[tid] += partial[tid + s];
    barrier();
  }
  const float total = partial[0];
  barrier();  // the next sum may overwrite partial[0]
  return total;
}

void main() {
  const uint row = gl_WorkGroupID.x, tid = gl_LocalInvocationID.x, base = row * DIM;
  float sum = 0.0;
  for (uint i = tid; i < DIM; i += THREADS) {
    float v = x[base + i];
    if (ACCUMULATE != 0) {
      v += y[base + i] + y_bias[i];
      x[base + i] = v;
    }
    sum += v;
  }
  const float mean = workgroup_sum(sum) / float(DIM);
  float squares = 0.0;
  for (uint i = tid; i < DIM; i += THREADS) {
    const float d = x[base + i] - mean;
    squares += d * d;
  }
  const float inv = inversesqrt(workgroup_sum(squares) / float(DIM) + EPS);
  for (uint i = tid; i < DIM; i += THREADS) out_[base + i] = (x[base + i] - mean) * inv * w[i] + b[i];
}
