#version 450
#extension GL_GOOGLE_include_directive : require
// embed — x[t, :] = embedding[token_t, :] * sqrt(hidden), for the tokens of this
// chunk whose id falls in the bound part of the embedding (split by rows).
// A row with no id (StepRow::kEmbeddedRow: an image's soft token, which
// Gemma 3 does not scale) falls in no part: its x row keeps the embedding the
// host copied there before the pass (EngineCore::copy_soft_tokens).
// Dispatch: (ceil(HIDDEN / 64), n_tokens, 1) per embedding part.
layout(local_size_x = 64) in;
layout(constant_id = 0) const uint HIDDEN = 1;    // hidden size
layout(constant_id = 1) const float SCALE = 1.0;  // sqrt(HIDDEN) in float32, as Hugging Face's fp32 Gemma 3
layout(push_constant) uniform Push { uint row_begin; uint rows; } pc;

#define WEIGHT_BINDING 0
#define WEIGHT_PART_BLOCKS (pc.rows * (HIDDEN / 32u))
#include "include/weights.glsl"
#define STEP_BINDING 1
#include "include/step.glsl"

layout(binding = 2) writeonly buffer XBuf { float x[]; };  // [n, HIDDEN]

void main() {
  const uint i = gl_GlobalInvocationID.x, t = gl_GlobalInvocationID.y;
  if (i >= HIDDEN || t >= n_tokens) return;
  const uint id = step_rows[t].token;
  if (id < pc.row_begin || id >= pc.row_begin + pc.rows) return;
  x[t * HIDDEN + i] = weight_at((id - pc.row_begin) * HIDDEN + i) * SCALE;
}
