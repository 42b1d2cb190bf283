// kv_round — a key or value element as the cache holds it (KV_F16: rounded
// to fp16, to nearest, ties to even; KV_F32: as it is), rounded in float
// arithmetic so that the stored value is exactly the one the kernel keeps:
// the conversion of an fp16 value is exact in any rounding mode, where
// packHalf2x16's and a conversion's own rounding may differ (on the H100
// they do, by an ulp). attention.comp's PREP and attn_prep.comp write the
// cache through it, so a key written by either has the same bits.
#if defined(KV_F16)
float kv_round(float x) {
  const float a = abs(x);
  if (a < 6.103515625e-05) return roundEven(x * 16777216.0) / 16777216.0;  // fp16 subnormals: 2^-24 apart
  if (a >= 65520.0) return sign(x) * (1.0 / 0.0);  // past fp16's range
  uint u = floatBitsToUint(x);
  u += 0x0FFFu + ((u >> 13) & 1u);  // drop 13 mantissa bits, ties to even
  return uintBitsToFloat(u & 0xFFFFE000u);
}
#else
float kv_round(float x) { return x; }
#endif
