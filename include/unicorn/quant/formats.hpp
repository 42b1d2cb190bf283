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
// shaders/include/weights.glsl. The K-quants (Q2_K to Q6_K) have 256-element
// superblocks; on the device they too are planar, per tensor part, in 32-element
// sub-blocks whose quants are one aligned load (notes/kquants.md,
// notes/low_bit_kquants.md).
// Q4_1, Q5_0 and Q5_1 (32-element blocks with a min or a fifth bit) are held
// as Q4_K's and Q5_K's sub-blocks are (notes/legacy_quants.md). IQ4_NL and
// IQ4_XS (nibbles that index a fixed table of 16 int8 values) are held as
// Q4_0's blocks and Q4_K's sub-blocks are (notes/iq4.md).
// The numeric values of Format are ggml_type ids as written in GGUF files.
#pragma once

#include <cstdint>
#include <string_view>

namespace unicorn {

enum class Format : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  IQ4_NL = 20,
  IQ4_XS = 23,
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
// Q4_1: { f16 d; f16 m; uint8 nibbles[16]; }  x = d * q + m, q as Q4_0's
// Q5_0: { f16 d; uint8 qh[4]; uint8 nibbles[16]; }  x = d * (q - 16), q = nibble
//        (as Q4_0's) + 16 * bit j of qh (as a little-endian uint32) for element j
// Q5_1: { f16 d; f16 m; uint8 qh[4]; uint8 nibbles[16]; }  x = d * q + m, q as Q5_0's
//        (in float: the product rounded, then m added, as ggml's dequantize_row_*)
// Q4_K: { f16 d; f16 dmin; uint8 scales[12]; uint8 qs[128]; }, 256 elements in
//        8 sub-blocks of 32. Sub-block j has a 6-bit scale sc and min m packed in
//        scales (j < 4: sc = scales[j] & 63, m = scales[j+4] & 63; else
//        sc = scales[j+4] & 15 | (scales[j-4] >> 6) << 4,
//        m = scales[j+4] >> 4 | (scales[j] >> 6) << 4), and
//        x = (d * sc) * q - dmin * m, q = the low (even j) or high (odd j)
//        nibble of qs[32 (j/2) + l] for its element l.
// Q5_K: { f16 d; f16 dmin; uint8 scales[12]; uint8 qh[32]; uint8 qs[128]; }: Q4_K's
//        scales and nibbles (qs) with a fifth bit, (qh[l] >> j) & 1 for element
//        l of sub-block j: x = (d * sc) * q - dmin * m, q = nibble + 16 * bit.
// Q6_K: { uint8 ql[128]; uint8 qh[64]; int8 scales[16]; f16 d; }, 256 elements:
//        element e = 128 h + 32 g + l (h < 2, g < 4, l < 32) has q = 4 low bits
//        from ql[64 h + l + 32 (g & 1)] (low nibble for g < 2, high after) and 2
//        high bits (qh[32 h + l] >> 2g) & 3; x = (d * scales[e / 16]) * (q - 32).
// Q2_K: { uint8 scales[16]; uint8 qs[64]; f16 d; f16 dmin; }, 256 elements in
//        16 groups of 16: element e = 128 n + 32 j + 16 h + l (n < 2, j < 4,
//        h < 2, l < 16) has q = (qs[32 n + 16 h + l] >> 2j) & 3 and group
//        g = 8 n + 2 j + h = e / 16; x = (d * (scales[g] & 15)) * q - dmin * (scales[g] >> 4).
// Q3_K: { uint8 hmask[32]; uint8 qs[64]; uint8 scales[12]; f16 d; }, 256
//        elements in 16 groups of 16: q = Q2_K's 2 bits, less 4 unless bit
//        4 n + j of hmask[16 h + l] is set (q in -4 .. 3); group g's 6-bit
//        scale sc = (scales[g % 8] >> 4 (g / 8)) & 15 | ((scales[8 + g % 4] >>
//        2 (g / 4)) & 3) << 4, and x = (d * (sc - 32)) * q.
// IQ4_NL: { f16 d; uint8 nibbles[16]; }  x = d * kIq4Values[q], q as Q4_0's
// IQ4_XS: { f16 d; uint16 scales_h; uint8 scales_l[4]; uint8 qs[128]; }, 256
//        elements in 8 sub-blocks of 32. Sub-block j's 6-bit scale is
//        ls = (scales_l[j/2] >> 4 (j%2)) & 15 | ((scales_h >> 2j) & 3) << 4, and
//        x = (d * (ls - 32)) * kIq4Values[q], q the low (l < 16) or high nibble
//        of qs[16 j + l % 16] for its element l (Q4_0's order per sub-block).
inline constexpr FormatInfo kFormats[] = {
    {Format::F32, "F32", 1, 4},
    {Format::F16, "F16", 1, 2},
    {Format::BF16, "BF16", 1, 2},
    {Format::Q8_0, "Q8_0", 32, 34},
    {Format::Q4_0, "Q4_0", 32, 18},
    {Format::Q4_1, "Q4_1", 32, 20},
    {Format::Q5_0, "Q5_0", 32, 22},
    {Format::Q5_1, "Q5_1", 32, 24},
    {Format::Q2_K, "Q2_K", 256, 84},
    {Format::Q3_K, "Q3_K", 256, 110},
    {Format::Q4_K, "Q4_K", 256, 144},
    {Format::Q5_K, "Q5_K", 256, 176},
    {Format::Q6_K, "Q6_K", 256, 210},
    {Format::IQ4_NL, "IQ4_NL", 32, 18},
    {Format::IQ4_XS, "IQ4_XS", 256, 136},
};

// The 16 values IQ4_NL's and IQ4_XS's nibbles select (ggml's kvalues_iq4nl):
// a non-uniform grid, denser near zero where weights are.
inline constexpr int8_t kIq4Values[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                          1,    13,   25,  38,  53,  69,  89,  113};

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

// ggml's K-quants: 256-element superblocks, held on the device as 32-element
// sub-blocks with per-superblock scales (weights.glsl).
constexpr bool is_k_quant(Format format) {
  return format == Format::Q2_K || format == Format::Q3_K || format == Format::Q4_K || format == Format::Q5_K ||
         format == Format::Q6_K;
}

// 256-element superblocks: the K-quants and IQ4_XS. A row of such a format is
// a whole number of them (llama-quantize falls back to another format where not).
constexpr bool has_superblocks(Format format) { return format_info(format).block_elems == 256; }

// Nibbles that index kIq4Values rather than count steps.
constexpr bool is_iq4(Format format) { return format == Format::IQ4_NL || format == Format::IQ4_XS; }

// The f16 values at the end of a block-format part on the device, per block
// (superblock): d (Q8_0, Q4_0, Q5_0, Q3_K, Q6_K, IQ4_NL, IQ4_XS), or d and
// dmin (Q2_K, Q4_K, Q5_K), or d and m (Q4_1, Q5_1). They follow all other
// bytes of the part (check_tensors reads them there).
constexpr uint32_t trailing_halves(Format format) {
  return format == Format::Q2_K || format == Format::Q4_K || format == Format::Q5_K || format == Format::Q4_1 ||
                 format == Format::Q5_1
             ? 2
             : 1;
}

// Block formats the engine quantizes F32/F16/BF16 weights to on the GPU
// (shaders/convert.comp, ggml's reference quantizers); the K-quants and IQ4
// formats it reads only from a GGUF file's blocks (ggml's quantizers for them
// are searches).
constexpr bool quantized_on_device(Format format) {
  return is_block_quantized(format) && !has_superblocks(format) && !is_iq4(format);
}

}  // namespace unicorn
