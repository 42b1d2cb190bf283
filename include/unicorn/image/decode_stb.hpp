// unicorn/image/decode_stb.hpp — PNG and BMP through stb_image (Debian's
// libstb, linked as a library, so no stb implementation is compiled here).
//
// PNG and BMP are lossless, so any correct decoder gives Pillow's pixels; the
// conversion to RGB is Pillow's convert("RGB"), which transformers'
// Gemma3ImageProcessor applies: gray is copied to R, G and B, and alpha is
// dropped (not composited over a background). A 16-bit channel keeps its high
// byte, as Pillow reads 16-bit RGB(A) and gray-alpha PNGs.
#pragma once

#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include <stb_image.h>

#include "unicorn/base/error.hpp"
#include "unicorn/image/rgb_image.hpp"

namespace unicorn::image::detail {

struct StbFree {
  void operator()(void* p) const { stbi_image_free(p); }
};

// channels: stb's count in the file (1 gray, 2 gray + alpha, 3 RGB, 4 RGBA).
template <class T>
inline RgbImage stb_to_rgb(const T* in, uint32_t width, uint32_t height, int channels) {
  constexpr int kShift = sizeof(T) == 2 ? 8 : 0;  // a 16-bit sample's high byte
  RgbImage out{.width = width, .height = height, .pixels = std::vector<uint8_t>(size_t(width) * height * 3)};
  const size_t n = size_t(width) * height;
  uint8_t* o = out.pixels.data();
  for (size_t i = 0; i < n; ++i, o += 3, in += channels) {
    if (channels <= 2) {
      o[0] = o[1] = o[2] = uint8_t(in[0] >> kShift);
    } else {
      o[0] = uint8_t(in[0] >> kShift);
      o[1] = uint8_t(in[1] >> kShift);
      o[2] = uint8_t(in[2] >> kShift);
    }
  }
  return out;
}

inline uint32_t big_endian32(std::span<const std::byte> b, size_t at) {
  return uint32_t(b[at]) << 24 | uint32_t(b[at + 1]) << 16 | uint32_t(b[at + 2]) << 8 | uint32_t(b[at + 3]);
}
inline uint32_t little_endian(std::span<const std::byte> b, size_t at, int n) {
  uint32_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = v << 8 | uint32_t(b[at + i]);
  return v;
}

struct HeaderSize {
  uint64_t width = 0, height = 0;
};

// The PNG's dimensions from its IHDR chunk, which must come first.
inline HeaderSize check_png_header(std::span<const std::byte> bytes, const std::string& name, const DecodeLimits& limits) {
  if (bytes.size() < 33 || big_endian32(bytes, 8) != 13 || big_endian32(bytes, 12) != 0x49484452u)  // "IHDR"
    throw Error(name + ": PNG header is corrupt or truncated (no IHDR chunk of 13 bytes after the signature)");
  const HeaderSize size{.width = big_endian32(bytes, 16), .height = big_endian32(bytes, 20)};
  check_dimensions(name, "PNG", size.width, size.height, limits);
  return size;
}

// The BMP's dimensions from its info header, and for the uncompressed layouts
// a check that every row is there: stb_image reads missing bytes as zeros,
// where Pillow stops ("image file is truncated").
inline HeaderSize check_bmp_header(std::span<const std::byte> bytes, const std::string& name, const DecodeLimits& limits) {
  if (bytes.size() < 26) throw Error(name + ": BMP header is truncated (" + std::to_string(bytes.size()) + " bytes)");
  const uint32_t data_offset = little_endian(bytes, 10, 4);
  const uint32_t info_size = little_endian(bytes, 14, 4);
  uint64_t width = 0, height = 0, bits = 0, compression = 0;
  if (info_size == 12) {  // OS/2's core header: 16-bit sizes
    width = little_endian(bytes, 18, 2);
    height = little_endian(bytes, 20, 2);
    bits = little_endian(bytes, 24, 2);
  } else {
    if (bytes.size() < 34) throw Error(name + ": BMP header is truncated (" + std::to_string(bytes.size()) + " bytes)");
    width = uint64_t(std::abs(int64_t(int32_t(little_endian(bytes, 18, 4)))));
    height = uint64_t(std::abs(int64_t(int32_t(little_endian(bytes, 22, 4)))));  // negative: rows top down
    bits = little_endian(bytes, 28, 2);
    compression = little_endian(bytes, 30, 4);
  }
  check_dimensions(name, "BMP", width, height, limits);
  if (compression == 0 || compression == 3 || compression == 6) {  // rows as they are, or bit fields
    const uint64_t row = (bits * width + 31) / 32 * 4;
    if (uint64_t(data_offset) + row * height > bytes.size())
      throw Error(name + ": BMP data is truncated (" + std::to_string(bytes.size()) + " bytes, its " +
                  std::to_string(width) + " x " + std::to_string(height) + " pixels of " + std::to_string(bits) +
                  " bits end at byte " + std::to_string(uint64_t(data_offset) + row * height) + ")");
  }
  return {.width = width, .height = height};
}

// format: "PNG" or "BMP", for messages; the caller has sniffed the signature.
inline RgbImage decode_stb(std::span<const std::byte> bytes, const std::string& name, const char* format,
                           const DecodeLimits& limits) {
  if (bytes.size() > size_t(INT_MAX))
    throw Error(name + ": " + format + " file of " + std::to_string(bytes.size()) + " bytes is too large");
  const HeaderSize header = format == std::string_view("PNG") ? check_png_header(bytes, name, limits)
                                                               : check_bmp_header(bytes, name, limits);
  const auto* data = reinterpret_cast<const stbi_uc*>(bytes.data());
  const int size = int(bytes.size());
  const auto w = int(header.width), h = int(header.height);
  const bool wide = stbi_is_16_bit_from_memory(data, size) != 0;
  int dw = 0, dh = 0, dc = 0;
  std::unique_ptr<void, StbFree> pixels(wide ? static_cast<void*>(stbi_load_16_from_memory(data, size, &dw, &dh, &dc, 0))
                                             : static_cast<void*>(stbi_load_from_memory(data, size, &dw, &dh, &dc, 0)));
  if (!pixels)
    throw Error(name + ": " + format + " data is corrupt or truncated (stb_image: " + stbi_failure_reason() + ")");
  if (dw != w || dh != h || dc < 1 || dc > 4)
    throw Error(name + ": " + format + " decoded as " + std::to_string(dw) + " x " + std::to_string(dh) + " x " +
                std::to_string(dc) + ", its header said " + std::to_string(w) + " x " + std::to_string(h));
  if (wide) return stb_to_rgb(static_cast<const uint16_t*>(pixels.get()), uint32_t(w), uint32_t(h), dc);
  return stb_to_rgb(static_cast<const uint8_t*>(pixels.get()), uint32_t(w), uint32_t(h), dc);
}

}  // namespace unicorn::image::detail
