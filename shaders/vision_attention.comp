#version 450
// vision_attention — the image encoder's self-attention: every patch attends
// to every patch (no mask), softmax(q k^T * SCALE) v per head, with q, k and
// v's biases added as they are read (the q, k and v products are one matmul
// over their weights stacked, without bias). In fp32, tiled: a workgroup holds
// ROWS query rows of one head, one row per thread, and walks the keys in
// tiles of KEYS rows of k and v staged in shared memory, keeping each row's
// running maximum, sum and output (online softmax), so no score matrix of
// patches x patches is ever stored (4,096 x 4,096 per head at 896 pixels).
// Dispatch: (ceil(patches / ROWS), HEADS, 1), ROWS threads.
layout(local_size_x_id = 5) in;
layout(constant_id = 0) const uint PATCHES = 256;
layout(constant_id = 1) const uint HEADS = 4;
layout(constant_id = 2) const uint HEAD_DIM = 16;
layout(constant_id = 3) const float SCALE = 0.25;  // head_dim^-0.5
layout(constant_id = 4) const uint KEYS = 32;      // keys per shared tile
layout(constant_id = 5) const uint ROWS = 64;      // query rows per workgroup (threads)

layout(binding = 0) readonly buffer QKV { float qkv[]; };    // [PATCHES, 3 * HEADS * HEAD_DIM]: q | k | v
layout(binding = 1) readonly buffer Bias { float bias[]; };  // [3 * HEADS * HEAD_DIM]
layout(binding = 2) writeonly buffer Out { float out_[]; };  // [PATCHES, HEADS * HEAD_DIM]

shared float ks[KEYS][HEAD_DIM];
shared float vs[KEYS][HEAD_DIM];

void main() {
  const uint hidden = HEADS * HEAD_DIM, stride = 3 * hidden;
  const uint head = gl_WorkGroupID.y, tid = gl_LocalInvocationID.x;
  const uint row = gl_WorkGroupID.x * ROWS + tid;
  const bool in_range = row < PATCHES;  // threads past the last row still load tiles
  const uint q0 = head * HEAD_DIM, k0 = hidden + q0, v0 = 2 * hidden + q0;
  float q[HEAD_DIM], acc[HEAD_DIM], s[KEYS];
  for (uint d = 0; d < HEAD_DIM; ++d) {
    q[d] = in_range ? (qkv[row * stride + q0 + d] + bias[q0 + d]) * SCALE : 0.0;
    acc[d] = 0.0;
  }
  float row_max = -1.0 / 0.0, row_sum = 0.0;
  for (uint key0 = 0; key0 < PATCHES; key0 += KEYS) {
    const uint keys = min(KEYS, PATCHES - key0);
    for (uint e = tid; e < keys * HEAD_DIM; e += ROWS) {
      const uint j = e / HEAD_DIM, d = e % HEAD_DIM, at = (key0 + j) * stride;
      ks[j][d] = qkv[at + k0 + d] + bias[k0 + d];
      vs[j][d] = qkv[at + v0 + d] + bias[v0 + d];
    }
    barrier();
    float tile_max = row_max;
    for (uint j = 0; j < keys; ++j) {
      float dot_qk = 0.0;
      for (uint d = 0; d < HEAD_DIM; ++d) dot_qk += q[d] * ks[j][d];
      s[j] = dot_qk;
      tile_max = max(tile_max, dot_qk);
    }
    const float rescale = exp(row_max - tile_max);  // 0 on the first tile (row_max = -inf)
    row_sum *= rescale;
    for (uint d = 0; d < HEAD_DIM; ++d) acc[d] *= rescale;
    for (uint j = 0; j < keys; ++j) {
      const float p = exp(s[j] - tile_max);
      row_sum += p;
      for (uint d = 0; d < HEAD_DIM; ++d) acc[d] += p * vs[j][d];
    }
    row_max = tile_max;
    barrier();  // the tile is read by all before the next overwrites it
  }
  if (!in_range) return;
  const float inv = 1.0 / row_sum;
  for (uint d = 0; d < HEAD_DIM; ++d) out_[row * hidden + q0 + d] = acc[d] * inv;
}
