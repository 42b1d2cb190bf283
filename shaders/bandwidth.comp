#version 450
// bandwidth — reads a buffer once with 16-byte loads and writes one sum per
// workgroup (so the reads cannot be optimised away): the device's read
// bandwidth, the roofline that decode speed is compared with.
// Dispatch: (groups, 1, 1); each invocation strides over the whole buffer.
layout(local_size_x = 256) in;
layout(binding = 0) readonly buffer Src { uvec4 src[]; };
layout(binding = 1) writeonly buffer Dst { uint sums[]; };
layout(push_constant) uniform Push { uint count; } pc;  // uvec4 elements

shared uint partial[256];

void main() {
  const uint stride = gl_NumWorkGroups.x * 256;
  uint acc = 0;
  for (uint i = gl_GlobalInvocationID.x; i < pc.count; i += stride) {
    const uvec4 v = src[i];
    acc += v.x ^ v.y ^ v.z ^ v.w;
  }
  partial[gl_LocalInvocationID.x] = acc;
  barrier();
  if (gl_LocalInvocationID.x == 0) {
    uint s = 0;
    for (uint i = 0; i < 256; ++i) s += partial[i];
    sums[gl_WorkGroupID.x] = s;
  }
}
