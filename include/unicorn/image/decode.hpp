// unicorn/image/decode.hpp — untrusted image bytes to 8-bit RGB: the format
// by its signature, then the library that decodes it (PNG and BMP: stb_image;
// JPEG: libjpeg-turbo; GIF: giflib, first frame; WebP: libwebp), each of
// which checks the header's dimensions against DecodeLimits before decoding.
//
// Every malformed input ends in unicorn::Error naming the file and what is
// wrong with it. The RGB is what Pillow's Image.open(...).convert("RGB")
// gives, which is what transformers' Gemma3ImageProcessor starts from
// (docs/images.md says where the two differ). A host links what the
// unicorn::unicorn target names: libstb, libjpeg, giflib, libwebp, libwebpdemux.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "unicorn/base/error.hpp"
#include "unicorn/image/decode_gif.hpp"
#include "unicorn/image/decode_jpeg.hpp"
#include "unicorn/image/decode_stb.hpp"
#include "unicorn/image/decode_webp.hpp"
#include "unicorn/image/rgb_image.hpp"
#include "unicorn/io/mapped_file.hpp"

namespace unicorn::image {

using namespace std::string_view_literals;

enum class ImageFormat { Png, Jpeg, Bmp, Gif, WebP };

inline const char* format_name(ImageFormat f) {
  switch (f) {
    case ImageFormat::Png: return "PNG";
    case ImageFormat::Jpeg: return "JPEG";
    case ImageFormat::Bmp: return "BMP";
    case ImageFormat::Gif: return "GIF";
    case ImageFormat::WebP: return "WebP";
  }
  return "?";
}

namespace detail {
inline bool starts_with(std::span<const std::byte> bytes, size_t at, std::string_view magic) {
  if (bytes.size() < at + magic.size()) return false;
  for (size_t i = 0; i < magic.size(); ++i)
    if (bytes[at + i] != std::byte(magic[i])) return false;
  return true;
}
}  // namespace detail

// The format by its signature; nullopt for anything else.
inline std::optional<ImageFormat> sniff_format(std::span<const std::byte> bytes) {
  using detail::starts_with;
  if (starts_with(bytes, 0, "\x89PNG\r\n\x1a\n"sv)) return ImageFormat::Png;
  if (starts_with(bytes, 0, "\xff\xd8\xff"sv)) return ImageFormat::Jpeg;
  if (starts_with(bytes, 0, "GIF87a"sv) || starts_with(bytes, 0, "GIF89a"sv)) return ImageFormat::Gif;
  if (starts_with(bytes, 0, "BM"sv)) return ImageFormat::Bmp;
  if (starts_with(bytes, 0, "RIFF"sv) && starts_with(bytes, 8, "WEBP"sv)) return ImageFormat::WebP;
  return std::nullopt;
}

namespace detail {
// What an unsupported file is, where its signature says: "a TIFF image".
inline std::string describe_unsupported(std::span<const std::byte> bytes) {
  if (starts_with(bytes, 0, "II*\0"sv) || starts_with(bytes, 0, "MM\0*"sv)) return "a TIFF image";
  if (starts_with(bytes, 4, "ftypavif"sv) || starts_with(bytes, 4, "ftypavis"sv)) return "an AVIF image";
  if (starts_with(bytes, 4, "ftyphei"sv) || starts_with(bytes, 4, "ftypmif1"sv) || starts_with(bytes, 4, "ftypheic"sv))
    return "a HEIF image";
  if (starts_with(bytes, 0, "8BPS"sv)) return "a Photoshop image";
  if (starts_with(bytes, 0, "\0\0\1\0"sv)) return "an ICO image";
  if (starts_with(bytes, 0, "<svg"sv) || starts_with(bytes, 0, "<?xml"sv)) return "text (SVG or XML)";
  std::string first;
  for (size_t i = 0; i < bytes.size() && i < 8; ++i) {
    char hex[4];
    std::snprintf(hex, sizeof hex, "%s%02x", i ? " " : "", unsigned(bytes[i]));
    first += hex;
  }
  return "no known signature (its first bytes are " + first + ")";
}
}  // namespace detail

// Decodes an image file's bytes. `name` (a path, "image 2 of the request")
// starts every error message.
inline RgbImage decode_image(std::span<const std::byte> bytes, const std::string& name = "image",
                             const DecodeLimits& limits = {}) {
  if (bytes.empty()) throw Error(name + ": image is empty (0 bytes)");
  const std::optional<ImageFormat> format = sniff_format(bytes);
  if (!format)
    throw Error(name + ": unsupported image format: " + detail::describe_unsupported(bytes) +
                "; PNG, JPEG, BMP, GIF and WebP are read");
  switch (*format) {
    case ImageFormat::Png:
    case ImageFormat::Bmp: return detail::decode_stb(bytes, name, format_name(*format), limits);
    case ImageFormat::Jpeg: return detail::decode_jpeg(bytes, name, limits);
    case ImageFormat::Gif: return detail::decode_gif(bytes, name, limits);
    case ImageFormat::WebP: return detail::decode_webp(bytes, name, limits);
  }
  throw Error(name + ": internal: unhandled image format");
}

// Decodes the image file at `path`; errors start with the path.
inline RgbImage decode_image_file(const std::filesystem::path& path, const DecodeLimits& limits = {}) {
  const io::MappedFile file = io::MappedFile::open(path);
  return decode_image(file.bytes(), path.string(), limits);
}

}  // namespace unicorn::image
