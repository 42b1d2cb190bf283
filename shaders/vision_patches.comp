#version 450
// vision_patches — the image encoder's patch embedding as an im2col: each
// PATCH x PATCH patch of the planar pixels [3, IMAGE, IMAGE] becomes one row of
// cols [patches, 3 * PATCH * PATCH], in the conv weight's (channel, y, x)
// order, so that the embedding is one product with the weight [hidden, 3, P, P]
// read as [hidden, 3 * P * P] (matmul / matmul_coop). Patches are numbered
// row-major over the patch grid (SigLIP's flatten of the conv output).
// Dispatch: (min(ceil(patches * 3 * PATCH * PATCH / 256), 65535), 1, 1): each
// thread walks the elements a grid apart.
layout(local_size_x = 256) in;
layout(constant_id = 0) const uint IMAGE = 64;  // pixels per side
layout(constant_id = 1) const uint PATCH = 4;   // pixels per patch side

layout(binding = 0) readonly buffer Pixels { float pixels[]; };  // [3, IMAGE, IMAGE]
layout(binding = 1) writeonly buffer Cols { float cols[]; };     // [patches, 3 * PATCH * PATCH]

void main() {
  const uint per_side = IMAGE / PATCH, inputs = 3 * PATCH * PATCH;
  const uint grid = gl_NumWorkGroups.x * 256;
  for (uint i = gl_GlobalInvocationID.x; i < per_side * per_side * inputs; i += grid) {
    const uint p = i / inputs, e = i % inputs;
    const uint c = e / (PATCH * PATCH), ky = e / PATCH % PATCH, kx = e % PATCH;
    const uint y = p / per_side * PATCH + ky, x = p % per_side * PATCH + kx;
    cols[i] = pixels[(c * IMAGE + y) * IMAGE + x];
  }
}
