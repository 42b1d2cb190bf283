#version 450
#extension GL_GOOGLE_include_directive : require
// rope — rotary position embedding in place, NeoX/Hugging Face "rotate_half"
// layout: element i pairs with i + head_dim/2. Position p = start_pos + t;
// angle = p / SCALE * THETA^(-2i / head_dim) (linear scaling divides positions).
// Dispatch: (ceil(HEADS * HD / 2 / 64), n_tokens, 1).
#define STEP_BINDING 1
#include "include/step.glsl"

layout(local_size_x = 64) in;
layout(constant_id = 0) const uint HEADS = 1;
layout(constant_id = 1) const uint HD = 2;
layout(constant_id = 2) const float THETA = 10000.0;
layout(constant_id = 3) const float SCALE = 1.0;

layout(binding = 0) buffer VecBuf { float v[]; };  // [n, HEADS * HD]

// sin/cos of a large float32 angle: reduce by 2*pi first, since GPU sin/cos lose
// accuracy far from zero. Three-part Cody-Waite: C1 and C2 carry 8 significant
// bits each, so k * C1 and k * C2 are exact for k < 2^16 (angles below ~4e5,
// past Gemma 3's 128k context) and each subtraction is exact or nearly so,
// whether or not the driver fuses them. (A two-part split with fma() relied on
// a fused fma, which Vulkan does not guarantee: lavapipe computes it as a
// multiply and an add, and the angle 1e5 came out 1.4e-3 off; tests/kernel.)
void sincos_reduced(float a, out float s, out float c) {
  const float C1 = 6.28125;                // 2*pi, first 8 bits
  const float C2 = 0.00193023681640625;    // next 8 bits
  const float C3 = 5.0703634e-06;          // 2*pi - C1 - C2, to float32
  const float k = round(a * 0.159154943091895336);
  precise float r = a - k * C1;
  r = r - k * C2;
  r = r - k * C3;
  s = sin(r);
  c = cos(r);
}

void main() {
  const uint half_hd = HD / 2;
  const uint pair = gl_GlobalInvocationID.x, t = gl_GlobalInvocationID.y;
  if (pair >= HEADS * half_hd || t >= n_tokens) return;
  const uint h = pair / half_hd, i = pair % half_hd;
  // inv_freq as Hugging Face computes it in float32: 1 / theta^(2i / d).
  const float inv_freq = 1.0 / pow(THETA, float(2 * i) / float(HD));
  const float pos = float(start_pos + t) / SCALE;
  float s, c;
  sincos_reduced(pos * inv_freq, s, c);
  const uint base = t * HEADS * HD + h * HD;
  const float a = v[base + i], b = v[base + i + half_hd];
  v[base + i] = a * c - b * s;
  v[base + i + half_hd] = b * c + a * s;
}
