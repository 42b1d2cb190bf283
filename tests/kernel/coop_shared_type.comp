#version 450
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
// Conversion test input (not a kernel): one NV matrix type (16 x 16 fp16)
// serves as both A and B, so the KHR form needs two types. The B values pass
// through a variable, a copy and an array, to exercise role propagation.
// With -DCONFLICT one value is used as A and as B: the rewrite must refuse.
layout(local_size_x = 32) in;
layout(binding = 0) buffer Buf { float16_t h[]; float f[]; };
layout(binding = 1) buffer Out { float o[]; };
void main() {
  fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> a, b[2];
  coopMatLoadNV(a, h, 0, 16, false);
  coopMatLoadNV(b[0], h, 256, 16, true);
  b[1] = b[0] * float16_t(2.0);
  fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> c = fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>(0.0);
#ifdef CONFLICT
  c = coopMatMulAddNV(a, a, c);
#else
  c = coopMatMulAddNV(a, b[1], c);
#endif
  coopMatStoreNV(c, o, 0, 16, false);
}
