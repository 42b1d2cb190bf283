// matvec_words.glsl — a quant word of each block format as matvec.comp meets
// it with its inputs: the fields of Q4_0, Q4_K, Q4_1, Q5_x, Q6_K, Q8_0, Q2_K and
// Q3_K made floats without an int->float conversion, IQ4's nibbles looked up,
// and (INT_DOT) the words as signed bytes for integer dot products.
// Include after weights.glsl (it picks the format).
// Quant bits become floats without an int->float conversion (a slow
// instruction on NVIDIA): OR-ing bits into the mantissa of 2^23 gives
// 2^23 + v * 2^s exactly, for a field of value v at bit s (s + width <= 23).
// Subtracting 2^23 (plus the format's zero point, times 2^s) leaves
// (q - zero) * 2^s, and the 2^-s goes into the input, once per block for all
// rows. Two fields per 16 bits: s = 0, 4, 8, 12 (Q4_0, Q4_K, Q4_1) or 0, 8
// (Q8_0, Q5_K, Q5_0, Q5_1, Q6_K, Q2_K, Q3_K). IQ4_NL's and IQ4_XS's quants
// index a table. Q4_K's and Q5_K's min: d * sc * dot(q, x) -
// dmin * m * sum(x) per sub-block (Q4_1's and Q5_1's: d * dot(q, x) + m * sum(x));
// Q6_K: each half of a sub-block (16 elements) has its own scale.
const uint kMagic = 0x4B000000u;  // 2^23 as float bits
float field(uint word, uint mask, float offset) {
  return uintBitsToFloat((word & mask) | kMagic) - offset;
}
float field_signed(uint word, uint mask, uint sign_bit, float offset) {
  return uintBitsToFloat((word & mask) ^ (sign_bit | kMagic)) - offset;
}

#if defined(FMT_Q4_0)
// 2^23 + 8 * 2^s: the magic and Q4_0's zero point of 8, at s = 0, 4, 8, 12.
const float kQ4Offset0 = 8388616.0, kQ4Offset4 = 8388736.0, kQ4Offset8 = 8390656.0,
            kQ4Offset12 = 8421376.0;
// Byte j of a block holds element j (low nibble) and j + 16 (high nibble). In
// quant word k, bits 0-3, 4-7, 8-11, 12-15 are elements 4k, 4k+16, 4k+1,
// 4k+17, and the same again in the upper half for 4k+2, 4k+18, 4k+3, 4k+19.
// Each token's inputs meet the word's fields as they are made (the same
// arithmetic for any TILE, and few live registers): lo = inputs 4k..4k+3 scaled by (1, 2^-8, 1, 2^-8); hi = inputs 4k+16..4k+19
// scaled by (2^-4, 2^-12, 2^-4, 2^-12).
float word_dot(uint w, vec4 lo, vec4 hi) {
  const uint u = w >> 16;
  return field(w, 0x000Fu, kQ4Offset0) * lo.x + field(w, 0x00F0u, kQ4Offset4) * hi.x +
         field(w, 0x0F00u, kQ4Offset8) * lo.y + field(w, 0xF000u, kQ4Offset12) * hi.y +
         field(u, 0x000Fu, kQ4Offset0) * lo.z + field(u, 0x00F0u, kQ4Offset4) * hi.z +
         field(u, 0x0F00u, kQ4Offset8) * lo.w + field(u, 0xF000u, kQ4Offset12) * hi.w;
}
#elif defined(FMT_Q4_K) || defined(FMT_Q4_1)
// Q4_K's and Q4_1's quants are Q4_0's nibbles with no zero point (the min goes
// in per (sub-)block): 2^23 alone at every s. The same word order as Q4_0.
const float kQ4Offset = 8388608.0;
float word_dot(uint w, vec4 lo, vec4 hi) {
  const uint u = w >> 16;
  return field(w, 0x000Fu, kQ4Offset) * lo.x + field(w, 0x00F0u, kQ4Offset) * hi.x +
         field(w, 0x0F00u, kQ4Offset) * lo.y + field(w, 0xF000u, kQ4Offset) * hi.y +
         field(u, 0x000Fu, kQ4Offset) * lo.z + field(u, 0x00F0u, kQ4Offset) * hi.z +
         field(u, 0x0F00u, kQ4Offset) * lo.w + field(u, 0xF000u, kQ4Offset) * hi.w;
}
#elif defined(FIFTH_BIT)
// Quant word k (low 4 bits) and the fifth bits `h` (already shifted: element
// 4k+c's at bit 8c, 4k+16+c's at bit 8c+4) as two words of 5-bit bytes:
// c0 = elements 4k .. 4k+3, c1 = elements 4k+16 .. 4k+19. Q5_K and Q5_1 have
// no zero point (the min goes in per (sub-)block): 2^23 alone at s = 0, 8;
// Q5_0's is 16: 2^23 + 16 * 2^s.
#if defined(FMT_Q5_0)
const float kByteOffset0 = 8388624.0, kByteOffset8 = 8392704.0;
#else
const float kByteOffset0 = 8388608.0, kByteOffset8 = 8388608.0;
#endif
void q5_words(uint w, uint h, out uint c0, out uint c1) {
  c0 = (w & 0x0F0F0F0Fu) | ((h & 0x01010101u) << 4);
  c1 = ((w >> 4) & 0x0F0F0F0Fu) | (((h >> 4) & 0x01010101u) << 4);
}
#elif defined(FMT_Q6_K)
// 2^23 + 32 * 2^s: Q6_K's 6-bit q - 32, at s = 0, 8.
const float kByteOffset0 = 8388640.0, kByteOffset8 = 8396800.0;
// Quant word k (low 4 bits) and the matching high bits `h` (already shifted:
// the k-th 2-bit planes at bits 0 and 2 of each byte) as two words of bytes:
// c0 = elements 4k .. 4k+3, c1 = elements 4k+16 .. 4k+19 (6 bits each).
void q6_words(uint w, uint h, out uint c0, out uint c1) {
  c0 = (w & 0x0F0F0F0Fu) | ((h & 0x03030303u) << 4);
  c1 = ((w >> 4) & 0x0F0F0F0Fu) | (((h >> 2) & 0x03030303u) << 4);
}
#elif defined(FMT_Q8_0)
// 2^23 + 128 * 2^s: int8 q is read as q + 128 (sign bit flipped), at s = 0, 8.
const float kQ8Offset0 = 8388736.0, kQ8Offset8 = 8421376.0;
// Quant word k of half h holds elements 16h + 4k .. +3: w0 of half 0, w1 of
// half 1, for inputs x0, x1 scaled by (1, 2^-8, 1, 2^-8).
float word_dot(uint w0, uint w1, vec4 x0, vec4 x1) {
  const uint u0 = w0 >> 16, u1 = w1 >> 16;
  return (field_signed(w0, 0x00FFu, 0x0080u, kQ8Offset0) * x0.x + field_signed(w0, 0xFF00u, 0x8000u, kQ8Offset8) * x0.y +
          field_signed(u0, 0x00FFu, 0x0080u, kQ8Offset0) * x0.z + field_signed(u0, 0xFF00u, 0x8000u, kQ8Offset8) * x0.w) +
         (field_signed(w1, 0x00FFu, 0x0080u, kQ8Offset0) * x1.x + field_signed(w1, 0xFF00u, 0x8000u, kQ8Offset8) * x1.y +
          field_signed(u1, 0x00FFu, 0x0080u, kQ8Offset0) * x1.z + field_signed(u1, 0xFF00u, 0x8000u, kQ8Offset8) * x1.w);
}
#elif defined(LOW_BIT_K)
// Q2_K's and Q3_K's quants as bytes: for quant word k, the elements 4k ..
// 4k+3 of each half (h = 0: lo, 1: hi) of sub-block `low`, `high` (Q3_K),
// one a byte: Q2_K's 0 .. 3, Q3_K's 0 .. 7 (q + 4).
uint low_k_bytes(uvec2 low, uint high, uint k, uint h) {
  uint c = (low[h] >> (2u * k)) & 0x03030303u;
#if defined(FMT_Q3_K)
  c |= ((high >> (k + 4u * h)) & 0x01010101u) << 2;
#endif
  return c;
}
// 2^23 + zero * 2^s, s = 0, 8: Q3_K's zero point of 4; Q2_K has none (its min
// goes in per half).
#if defined(FMT_Q3_K)
const float kByteOffset0 = 8388612.0, kByteOffset8 = 8389632.0;
#else
const float kByteOffset0 = 8388608.0, kByteOffset8 = 8388608.0;
#endif
#elif defined(IQ4_TABLE)
// IQ4_NL's and IQ4_XS's nibbles pick table values, so no field trick: four
// nibbles (one a byte, 0..15: elements 4k .. 4k+3 or 4k+16 .. 4k+19 of quant
// word k) become the table's floats, or, for integer dot products, its values
// as signed bytes (kIq4Values fits in int8).
vec4 iq4_values(uint c) {
  return vec4(kIq4Values[c & 0xffu], kIq4Values[(c >> 8) & 0xffu], kIq4Values[(c >> 16) & 0xffu], kIq4Values[c >> 24]);
}
#if defined(INT_DOT)
const uint kIq4Bytes[16] = uint[](0x81u, 0x98u, 0xADu, 0xBFu, 0xCFu, 0xDDu, 0xEAu, 0xF6u,
                                  0x01u, 0x0Du, 0x19u, 0x26u, 0x35u, 0x45u, 0x59u, 0x71u);
uint iq4_bytes(uint c) {
  return kIq4Bytes[c & 0xffu] | (kIq4Bytes[(c >> 8) & 0xffu] << 8) | (kIq4Bytes[(c >> 16) & 0xffu] << 16) |
         (kIq4Bytes[c >> 24] << 24);
}
#endif
#endif

#if defined(FIFTH_BIT) || defined(FMT_Q6_K) || defined(LOW_BIT_K)
// One word of byte-wide quants (Q5_x's 5 bits, Q6_K's 6, Q2_K's and Q3_K's 2
// and 3) against inputs x scaled by (1, 2^-8, 1, 2^-8); the family's
// kByteOffset0/8 hold 2^23 and its zero point at s = 0, 8.
float word_dot_bytes(uint c, vec4 x) {
  const uint u = c >> 16;
  return field(c, 0x00FFu, kByteOffset0) * x.x + field(c, 0xFF00u, kByteOffset8) * x.y +
         field(u, 0x00FFu, kByteOffset0) * x.z + field(u, 0xFF00u, kByteOffset8) * x.w;
}
#endif
