#version 450
// vision_pool — the projector's first half: the encoder's output rows, a
// PER_SIDE x PER_SIDE grid of patches (row-major), averaged POOL x POOL into
// (PER_SIDE / POOL)^2 soft tokens (row-major), each then RMS-normalised with
// weight (1 + w) as Gemma's norms: t / sqrt(mean(t^2) + EPS) * (1 + w).
// The linear map into the text model's hidden size follows on matmul.
// One workgroup per token. Dispatch: (tokens, 1, 1), THREADS threads.
layout(local_size_x_id = 4) in;
layout(constant_id = 0) const uint DIM = 64;       // vision hidden size
layout(constant_id = 1) const uint PER_SIDE = 16;  // patches per side
layout(constant_id = 2) const uint POOL = 4;       // patches per side of one token
layout(constant_id = 3) const float EPS = 1e-6;
layout(constant_id = 4) const uint THREADS = 64;

layout(binding = 0) readonly buffer X { float x[]; };      // [PER_SIDE^2, DIM]
layout(binding = 1) readonly buffer W { float w[]; };      // [DIM], Hugging Face's w (1 + w applied here)
layout(binding = 2) buffer Out { float out_[]; };  // [tokens, DIM]

shared float partial[THREADS];

void main() {
  const uint token = gl_WorkGroupID.x, tid = gl_LocalInvocationID.x;
  const uint tokens_per_side = PER_SIDE / POOL;
  const uint y0 = token / tokens_per_side * POOL, x0 = token % tokens_per_side * POOL;
  float squares = 0.0;
  for (uint i = tid; i < DIM; i += THREADS) {
    float sum = 0.0;
    for (uint dy = 0; dy < POOL; ++dy)
      for (uint dx = 0; dx < POOL; ++dx) sum += x[((y0 + dy) * PER_SIDE + x0 + dx) * DIM + i];
    const float mean = sum / float(POOL * POOL);
    out_[token * DIM + i] = mean;
    squares += mean * mean;
  }
  partial[tid] = squares;
  barrier();
  for (uint s = THREADS / 2; s > 0; s /= 2) {
    if (tid < s) partial[tid] += partial[tid + s];
    barrier();
  }
  const float inv = inversesqrt(partial[0] / float(DIM) + EPS);
  // Each thread rescales the elements it wrote itself.
  for (uint i = tid; i < DIM; i += THREADS) out_[token * DIM + i] *= inv * (1.0 + w[i]);
}
