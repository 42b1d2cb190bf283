// fp16_pack.glsl — fp32 values packed as fp16 for the cooperative-matrix
// kernels' shared-memory tiles (needs GL_EXT_shader_explicit_arithmetic_types_float16).
// Saturating: Gemma's activations can pass 65504, which would otherwise become
// inf and then NaN in the products (include/operand.glsl rounds alike).
uint pack2(vec2 v) { return packFloat2x16(f16vec2(clamp(v, vec2(-65504.0), vec2(65504.0)))); }
uvec4 pack8(vec4 a, vec4 b) { return uvec4(pack2(a.xy), pack2(a.zw), pack2(b.xy), pack2(b.zw)); }
