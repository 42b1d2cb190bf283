// rope.glsl — Gemma 3's rotary embedding of one pair, shared by attn_prep
// (prefill, and every pass's queries and keys before) and decode attention
// (which does attn_prep's work for its own head): the same arithmetic in
// both, so a key rotated by either lands in the cache with the same value.
// Pairs are NeoX/"rotate_half": (i, i + head_dim / 2), angle
// position / scale * theta^(-2i / head_dim).

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

// Pair i of a head (x, y: already normalised) at position `pos`, rotated.
vec2 rope_pair(float x, float y, uint i, uint pos, uint head_dim, float theta, float scale) {
  const float inv_freq = 1.0 / pow(theta, float(2 * i) / float(head_dim));
  float sn, cs;
  sincos_reduced(float(pos) / scale * inv_freq, sn, cs);
  return vec2(x * cs - y * sn, y * cs + x * sn);
}
