// operand.glsl — writing the fp16 operand of prefill's tensor-unit products
// (Act::Operand; matmul_coop with X_HALF) from the kernel that produces the
// values, so the products read half the bytes and convert nothing. Saturated
// to the fp16 range (Gemma's activations can pass 65504) and rounded once:
// the value matmul_coop's own conversion of an fp32 X gives (pack2 in
// coop_operands.glsl). A kernel declares its output binding a second time with
// fp16 members; HALF_OUT picks which one it writes.
#extension GL_EXT_shader_16bit_storage : require
#define OPERAND_FP16(v) float16_t(clamp((v), -65504.0, 65504.0))
#define OPERAND_FP16X4(v) f16vec4(clamp((v), vec4(-65504.0), vec4(65504.0)))
