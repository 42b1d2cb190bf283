// unicorn/quant/formats.hpp — the block formats weights take on the device.
//
// They are GGUF's (ggml's) formats bit for bit, so the same GGUF file runs in
// llama.cpp for comparison and every value is ggml's. Block formats are held
// planar on the device: within each tensor part, every block's quants first
// (16 bytes for Q4_0, 32 for Q8_0), then every block's f16 scale — same bytes,
// same total size, but a block's quants are one aligned 16-byte load, which
// decoding needs to stream weights near the memory bandwidth (ggml's 18- and
// 34-byte blocks are only 2-byte aligned). The loader moves GGUF blocks into
// this layout on the GPU (shaders/convert.comp); shaders read it through
// shaders/include/weights.glsl.
// The numeric values of Format are ggml_type ids as written in GGUF files.
#pragma once

#include <cstdint>
#include <string_view>

namespace unicorn {

enum class Format : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q8_0 = 8,
  BF16 = 30,
};

struct FormatInfo {
  Format format;
  std::string_view name;
  uint32_t block_elems;  // elements per block (1 for plain floats)
  uint32_t block_bytes;  // bytes per block
};

// Q8_0: { f16 d; int8 q[32]; }            x = d * q
// Q4_0: { f16 d; uint8 nibbles[16]; }     x = d * (q - 8), q[i] = low nibble of
//        byte i for i < 16, high nibble of byte i-16 for i >= 16
inline constexpr FormatInfo kFormats[] = {
    {Format::F32, "F32", 1, 4},
    {Format::F16, "F16", 1, 2},
    {Format::BF16, "BF16", 1, 2},
    {Format::Q8_0, "Q8_0", 32, 34},
    {Format::Q4_0, "Q4_0", 32, 18},
};

constexpr const FormatInfo* find_format(uint32_t ggml_type) {
  for (const auto& f : kFormats)
    if (static_cast<uint32_t>(f.format) == ggml_type) return &f;
  return nullptr;
}

constexpr const FormatInfo& format_info(Format format) {
  for (const auto& f : kFormats)
    if (f.format == format) return f;
  return kFormats[0];  // unreachable for valid enum values
}

constexpr std::string_view format_name(Format format) { return format_info(format).name; }

// Bytes of one row of `elems` elements; elems must be a multiple of the block size.
constexpr uint64_t row_bytes(Format format, uint64_t elems) {
  const auto& f = format_info(format);
  return elems / f.block_elems * f.block_bytes;
}

constexpr bool is_block_quantized(Format format) { return format_info(format).block_elems > 1; }

}  // namespace unicorn
