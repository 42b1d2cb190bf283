#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_control_flow_attributes : require
// k_unit_values — the cooperative-matrix kernels' weight operands made in fp32
// (shaders/include/coop_operands.glsl: load_k_unit, k_unit_values) run
// without tensor units, so lavapipe checks what matmul_coop and
// matmul_coop_splitk stage before their fp16 rounding. Built once per format
// whose operands are made in fp32 (the K-quants, Q4_1, Q5_0, Q5_1) by
// tests/kernel/CMakeLists.txt for linear_tests.cpp's KUnitValues.
// Output [2][rows][IN_FEATURES]: every value of weight 1 (binding 0), then of weight 2
// (binding 2, the fused pair's up), one 16-value unit per invocation.
layout(local_size_x = 64) in;
layout(constant_id = 0) const uint IN_FEATURES = 256;
layout(push_constant) uniform Push { uint rows; } pc;
#define WEIGHT_BINDING 0
#define WEIGHT2_BINDING 2
#define WEIGHT_PART_BLOCKS (pc.rows * (IN_FEATURES / 32u))
#include "include/weights.glsl"
#include "include/coop_operands.glsl"
layout(binding = 1) writeonly buffer Out { float values[]; };

void main() {
  const uint units = pc.rows * (IN_FEATURES / 16u), unit = gl_GlobalInvocationID.x;
  if (unit >= 2u * units) return;
  const bool second = unit >= units;
  const uint u = unit % units, row = u / (IN_FEATURES / 16u), half_k = u % 2u, k0 = (u % (IN_FEATURES / 16u)) / 2u * 32u;
  vec4 v[4];
  k_unit_values(load_k_unit(row, k0, half_k, true, second), half_k, v);
  const uint at = (second ? units * 16u : 0u) + row * IN_FEATURES + k0 + 16u * half_k;
  [[unroll]] for (uint e = 0; e < 16u; ++e) values[at + e] = v[e / 4u][e % 4u];
}
