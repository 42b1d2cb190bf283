// Image decoding and preprocessing (include/unicorn/image) against transformers:
// every image of fixtures/pixels (pixels.json lists them; make_golden.py made
// them with transformers' Gemma3ImageProcessor) decoded, resized to 896 and
// normalised, compared with <name>.processed.png (x = p / 127.5 - 1); then the
// files that must end in unicorn::Error: empty, truncated, corrupt, too large,
// of another format.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "unicorn/config/vision_dims.hpp"
#include "unicorn/image/decode.hpp"
#include "unicorn/image/preprocess.hpp"
#include "unicorn/image/resize.hpp"

namespace {

namespace fs = std::filesystem;
using unicorn::Error;
using unicorn::image::DecodeLimits;
using unicorn::image::RgbImage;

fs::path fixtures() {
  const char* dir = std::getenv("UNICORN_PIXEL_FIXTURES");
  return dir ? fs::path(dir) : fs::path(__FILE__).parent_path() / "fixtures" / "pixels";
}

std::vector<std::byte> read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in) << path;
  std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> bytes(chars.size());
  std::memcpy(bytes.data(), chars.data(), chars.size());
  return bytes;
}

RgbImage decode(const std::vector<std::byte>& bytes, const DecodeLimits& limits = {}) {
  return unicorn::image::decode_image(bytes, "test image", limits);
}

// The message of the unicorn::Error that f throws ("" and a failure if none).
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "no unicorn::Error";
  return "";
}

// ---- The processor's pixels --------------------------------------------------

TEST(ImagePixels, EveryFixtureImageMatchesTransformersGemma3ImageProcessorExactly) {
  const auto start = std::chrono::steady_clock::now();
  std::ifstream list(fixtures() / "pixels.json");
  ASSERT_TRUE(list) << fixtures() / "pixels.json";
  const nlohmann::json cases = nlohmann::json::parse(list);
  ASSERT_GE(cases.size(), 9u);
  constexpr uint32_t kSize = unicorn::kGemma3Siglip.image_size;
  for (const auto& [name, entry] : cases.items()) {
    SCOPED_TRACE(name);
    const RgbImage image = unicorn::image::decode_image_file(fixtures() / entry["file"].get<std::string>());
    EXPECT_EQ(image.width, entry["size"][0].get<uint32_t>());
    EXPECT_EQ(image.height, entry["size"][1].get<uint32_t>());
    const std::vector<float> x = unicorn::image::pixel_values(image, unicorn::kGemma3Siglip);
    const RgbImage want = unicorn::image::decode_image_file(fixtures() / (name + ".processed.png"));
    ASSERT_EQ(want.width, kSize);
    ASSERT_EQ(want.height, kSize);
    ASSERT_EQ(x.size(), 3u * kSize * kSize);
    // [0, 1] units: |x - want| / 2, as x spans [-1, 1].
    double max_error = 0;
    size_t off = 0;
    const size_t plane = size_t(kSize) * kSize;
    for (size_t i = 0; i < plane; ++i)
      for (size_t c = 0; c < 3; ++c) {
        const double ref = want.pixels[3 * i + c] / 127.5 - 1.0;
        const double e = std::fabs(double(x[c * plane + i]) - ref) / 2;
        max_error = std::max(max_error, e);
        off += e > 1e-6;
      }
    std::printf("  %-18s %4u x %-4u  max error %.3g (x 255: %.3f), values off the reference: %zu of %zu\n",
                name.c_str(), image.width, image.height, max_error, max_error * 255, off, 3 * plane);
    EXPECT_LE(max_error, 1.0 / 255) << "the issue's tolerance";
    EXPECT_EQ(off, 0u) << "Pillow's bilinear resize is reproduced to the bit; a difference is a regression";
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("  %zu images in %.2f s\n", cases.size(), seconds);
}

TEST(ImagePixels, PixelValuesArePlanarRgbNormalisedToMinusOneOne) {
  RgbImage dot{.width = 1, .height = 1, .pixels = {255, 0, 51}};
  const std::vector<float> x = unicorn::image::pixel_values(dot, unicorn::kGemma3SiglipTiny);
  const size_t plane = 64 * 64;
  ASSERT_EQ(x.size(), 3 * plane);
  for (size_t i = 0; i < plane; ++i) {
    ASSERT_EQ(x[i], 1.0f);
    ASSERT_EQ(x[plane + i], -1.0f);
    ASSERT_FLOAT_EQ(x[2 * plane + i], 51 / 127.5f - 1);
  }
}

TEST(ImageResize, KeepsAnImageOfTheSameSizeAndResizesOneSideAlone) {
  RgbImage img{.width = 3, .height = 2, .pixels = {}};
  for (int i = 0; i < 18; ++i) img.pixels.push_back(uint8_t(i * 14));
  EXPECT_EQ(unicorn::image::resize_bilinear(img, 3, 2).pixels, img.pixels);
  // Only the height changes: each column is resampled by itself, so a row
  // doubled to 4 rows keeps its columns' values.
  const RgbImage tall = unicorn::image::resize_bilinear(img, 3, 4);
  ASSERT_EQ(tall.pixels.size(), 36u);
  EXPECT_EQ(std::vector<uint8_t>(tall.pixels.begin(), tall.pixels.begin() + 9),
            std::vector<uint8_t>(img.pixels.begin(), img.pixels.begin() + 9));
  EXPECT_EQ(std::vector<uint8_t>(tall.pixels.end() - 9, tall.pixels.end()),
            std::vector<uint8_t>(img.pixels.end() - 9, img.pixels.end()));
}

TEST(ImageResize, ShrinkingAveragesEverySourcePixel) {
  // Antialiasing: 4 x 1 to 1 x 1 weighs all four pixels (a plain bilinear
  // sample would read only the middle two).
  RgbImage row{.width = 4, .height = 1, .pixels = {0, 0, 0, 0, 0, 0, 0, 0, 0, 200, 200, 200}};
  const RgbImage one = unicorn::image::resize_bilinear(row, 1, 1);
  // The triangle widened 4 times, centred at 2: weights 5/24, 7/24, 7/24, 5/24,
  // so 200 * 5/24 = 41.7.
  EXPECT_EQ(one.pixels[0], 42);
}

// ---- Decoding ------------------------------------------------------------------

// A PNG written here byte by byte (stored deflate blocks), for what the
// fixtures lack: 16-bit samples, gray with alpha, palettes with transparency.
uint32_t crc32(const uint8_t* p, size_t n, uint32_t crc = 0) {
  crc = ~crc;
  for (size_t i = 0; i < n; ++i) {
    crc ^= p[i];
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1)));
  }
  return ~crc;
}
void put32(std::vector<uint8_t>& out, uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) out.push_back(uint8_t(v >> s));
}
void chunk(std::vector<uint8_t>& png, const char* type, const std::vector<uint8_t>& data) {
  put32(png, uint32_t(data.size()));
  std::vector<uint8_t> body(type, type + 4);
  body.insert(body.end(), data.begin(), data.end());
  png.insert(png.end(), body.begin(), body.end());
  put32(png, crc32(body.data(), body.size()));
}
// rows: each row's bytes without the filter byte. color_type: 0 gray, 2 RGB,
// 3 palette, 4 gray + alpha, 6 RGBA.
std::vector<std::byte> make_png(uint32_t width, uint32_t height, int depth, int color_type,
                                const std::vector<std::vector<uint8_t>>& rows,
                                const std::vector<std::pair<std::string, std::vector<uint8_t>>>& extra = {}) {
  std::vector<uint8_t> png = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  std::vector<uint8_t> ihdr;
  put32(ihdr, width);
  put32(ihdr, height);
  ihdr.insert(ihdr.end(), {uint8_t(depth), uint8_t(color_type), 0, 0, 0});
  chunk(png, "IHDR", ihdr);
  for (const auto& [type, data] : extra) chunk(png, type.c_str(), data);
  std::vector<uint8_t> raw;
  for (const auto& r : rows) {
    raw.push_back(0);  // filter: none
    raw.insert(raw.end(), r.begin(), r.end());
  }
  std::vector<uint8_t> z = {0x78, 0x01, 0x01, uint8_t(raw.size()), uint8_t(raw.size() >> 8),
                            uint8_t(~raw.size()), uint8_t(~raw.size() >> 8)};  // one stored block
  z.insert(z.end(), raw.begin(), raw.end());
  uint32_t a = 1, b = 0;
  for (uint8_t v : raw) a = (a + v) % 65521, b = (b + a) % 65521;
  put32(z, (b << 16) | a);
  chunk(png, "IDAT", z);
  chunk(png, "IEND", {});
  std::vector<std::byte> out(png.size());
  std::memcpy(out.data(), png.data(), png.size());
  return out;
}

TEST(ImageDecode, SixteenBitPngsKeepEachSamplesHighByte) {
  const RgbImage rgb = decode(make_png(2, 1, 16, 2, {{0x12, 0x34, 0xab, 0xcd, 0xff, 0xff, 0x00, 0x01, 0x80, 0x00, 0x7f, 0xff}}));
  EXPECT_EQ(rgb.pixels, (std::vector<uint8_t>{0x12, 0xab, 0xff, 0x00, 0x80, 0x7f}));
  const RgbImage gray = decode(make_png(2, 1, 16, 0, {{0xc0, 0x01, 0x05, 0xff}}));
  EXPECT_EQ(gray.pixels, (std::vector<uint8_t>{0xc0, 0xc0, 0xc0, 0x05, 0x05, 0x05}));
  const RgbImage rgba = decode(make_png(1, 1, 16, 6, {{0x10, 0, 0x20, 0, 0x30, 0, 0x00, 0x00}}));
  EXPECT_EQ(rgba.pixels, (std::vector<uint8_t>{0x10, 0x20, 0x30}));
}

TEST(ImageDecode, AlphaIsDroppedNotCompositedAsPillowConvertRgbDoes) {
  // Gray + alpha: a fully transparent pixel keeps its gray level.
  EXPECT_EQ(decode(make_png(1, 1, 8, 4, {{90, 0}})).pixels, (std::vector<uint8_t>{90, 90, 90}));
  // A palette with a transparent entry shows that entry's colour.
  const RgbImage pal = decode(make_png(2, 1, 8, 3, {{0, 1}}, {{"PLTE", {10, 20, 30, 200, 100, 50}}, {"tRNS", {0}}}));
  EXPECT_EQ(pal.pixels, (std::vector<uint8_t>{10, 20, 30, 200, 100, 50}));
  // The fixture alpha_200x150 (RGBA with varying alpha) passes the pixel test the same way.
}

// A GIF written here: a 4-colour global table, one frame of `indices` at
// (left, top), LZW with a clear code after every second index so that every
// code is a 3-bit literal.
std::vector<std::byte> make_gif(uint16_t screen_w, uint16_t screen_h, uint16_t left, uint16_t top, uint16_t w,
                                uint16_t h, const std::vector<uint8_t>& indices, int transparent, bool interlace) {
  const uint8_t palette[12] = {255, 0, 0, 0, 255, 0, 0, 0, 255, 250, 250, 250};
  std::vector<uint8_t> codes;
  for (size_t i = 0; i < indices.size(); i += 2) {
    codes.push_back(4);
    for (size_t j = i; j < std::min(i + 2, indices.size()); ++j) codes.push_back(indices[j]);
  }
  codes.push_back(5);
  std::vector<uint8_t> lzw;
  uint32_t bits = 0, nbits = 0;
  for (const uint8_t c : codes) {
    bits |= uint32_t(c) << nbits;
    for (nbits += 3; nbits >= 8; nbits -= 8, bits >>= 8) lzw.push_back(uint8_t(bits));
  }
  if (nbits) lzw.push_back(uint8_t(bits));
  const auto le16 = [](std::vector<uint8_t>& v, uint16_t x) { v.insert(v.end(), {uint8_t(x), uint8_t(x >> 8)}); };
  std::vector<uint8_t> g = {'G', 'I', 'F', '8', '9', 'a'};
  le16(g, screen_w), le16(g, screen_h);
  g.insert(g.end(), {0x81, 0, 0});
  g.insert(g.end(), palette, palette + 12);
  if (transparent >= 0) g.insert(g.end(), {0x21, 0xf9, 4, 1, 0, 0, uint8_t(transparent), 0});
  g.push_back(0x2c);
  le16(g, left), le16(g, top), le16(g, w), le16(g, h);
  g.push_back(interlace ? 0x40 : 0);
  g.insert(g.end(), {2, uint8_t(lzw.size())});
  g.insert(g.end(), lzw.begin(), lzw.end());
  g.insert(g.end(), {0, 0x3b});
  std::vector<std::byte> out(g.size());
  std::memcpy(out.data(), g.data(), g.size());
  return out;
}

TEST(ImageDecode, GifFirstFrameIsPlacedAndColouredAsPillowDoes) {
  // The transparent index shows its table colour (Pillow's convert("RGB")).
  const RgbImage plain = decode(make_gif(2, 1, 0, 0, 2, 1, {3, 1}, 3, false));
  EXPECT_EQ(plain.pixels, (std::vector<uint8_t>{250, 250, 250, 0, 255, 0}));
  // A frame smaller than the screen: the rest is the transparent index, or
  // index 0 without one.
  EXPECT_EQ(decode(make_gif(2, 1, 1, 0, 1, 1, {2}, 3, false)).pixels,
            (std::vector<uint8_t>{250, 250, 250, 0, 0, 255}));
  EXPECT_EQ(decode(make_gif(2, 1, 1, 0, 1, 1, {2}, -1, false)).pixels, (std::vector<uint8_t>{255, 0, 0, 0, 0, 255}));
  // A frame past the screen grows the canvas, as Pillow grows the image.
  const RgbImage grown = decode(make_gif(1, 1, 1, 1, 1, 1, {1}, -1, false));
  EXPECT_EQ(grown.width, 2u);
  EXPECT_EQ(grown.height, 2u);
  // Interlaced rows arrive as rows 0, 2, 1, 3 for four rows (passes from 0, 4, 2, 1).
  const RgbImage rows = decode(make_gif(1, 4, 0, 0, 1, 4, {0, 2, 1, 3}, -1, true));
  EXPECT_EQ(rows.pixels, (std::vector<uint8_t>{255, 0, 0, 0, 255, 0, 0, 0, 255, 250, 250, 250}));
}

TEST(ImageDecode, OddSizesAndOnePixelDecode) {
  const RgbImage dot = unicorn::image::decode_image_file(fixtures() / "dot_1x1.png");
  EXPECT_EQ(dot.width, 1u);
  EXPECT_EQ(dot.pixels, (std::vector<uint8_t>{200, 30, 90}));
  const RgbImage odd = decode(make_png(3, 1, 8, 2, {{1, 2, 3, 4, 5, 6, 7, 8, 9}}));
  EXPECT_EQ(odd.pixels, (std::vector<uint8_t>{1, 2, 3, 4, 5, 6, 7, 8, 9}));
}

TEST(ImageDecode, SniffsEachFormatBySignature) {
  using unicorn::image::ImageFormat;
  const std::pair<const char*, ImageFormat> files[] = {
      {"rgb_640x480.png", ImageFormat::Png}, {"photo_500x375.jpg", ImageFormat::Jpeg},
      {"bmp_400x300.bmp", ImageFormat::Bmp}, {"palette_120x90.gif", ImageFormat::Gif},
      {"lossless_333x222.webp", ImageFormat::WebP}};
  for (const auto& [file, format] : files) EXPECT_EQ(unicorn::image::sniff_format(read_bytes(fixtures() / file)), format) << file;
}

// ---- Bad input: a unicorn::Error naming the problem, never a crash --------------

TEST(ImageErrors, EmptyInputIsRefused) {
  EXPECT_NE(error_of([] { decode({}); }).find("empty (0 bytes)"), std::string::npos);
}

TEST(ImageErrors, UnsupportedFormatsAreNamed) {
  const auto bytes = [](std::string_view s) {
    std::vector<std::byte> b(s.size());
    std::memcpy(b.data(), s.data(), s.size());
    return b;
  };
  const std::string tiff = error_of([&] { decode(bytes(std::string_view("II*\0\x08\0\0\0", 8))); });
  EXPECT_NE(tiff.find("test image: unsupported image format: a TIFF image"), std::string::npos) << tiff;
  const std::string text = error_of([&] { decode(bytes("hello, world")); });
  EXPECT_NE(text.find("unsupported image format: no known signature (its first bytes are 68 65 6c 6c 6f 2c 20 77)"), std::string::npos) << text;
  EXPECT_NE(text.find("PNG, JPEG, BMP, GIF and WebP"), std::string::npos) << text;
}

TEST(ImageErrors, EveryTruncatedFixtureIsRefused) {
  for (const char* file : {"rgb_640x480.png", "photo_500x375.jpg", "bmp_400x300.bmp", "palette_120x90.gif",
                           "lossless_333x222.webp", "alpha_200x150.png"}) {
    SCOPED_TRACE(file);
    const std::vector<std::byte> whole = read_bytes(fixtures() / file);
    for (const size_t keep : {whole.size() / 2, whole.size() - 40, size_t(12), size_t(30)}) {
      const std::vector<std::byte> cut(whole.begin(), whole.begin() + std::min(keep, whole.size()));
      const std::string message = error_of([&] { decode(cut); });
      EXPECT_NE(message.find("test image: "), std::string::npos) << message;
      EXPECT_TRUE(message.find("corrupt") != std::string::npos || message.find("truncated") != std::string::npos)
          << "cut to " << keep << " bytes: " << message;
    }
  }
}

TEST(ImageErrors, CorruptCompressedDataIsRefused) {
  // The PNG's IDAT (after its header) overwritten: the deflate stream breaks.
  std::vector<std::byte> png = read_bytes(fixtures() / "rgb_640x480.png");
  for (size_t i = 60; i < 400; ++i) png[i] = std::byte(0xff);
  EXPECT_NE(error_of([&] { decode(png); }).find("PNG data is corrupt"), std::string::npos);
  // The JPEG's tables after its JFIF header overwritten.
  std::vector<std::byte> jpg = read_bytes(fixtures() / "photo_500x375.jpg");
  for (size_t i = 20; i < 200; ++i) jpg[i] = std::byte(0x00);
  EXPECT_NE(error_of([&] { decode(jpg); }).find("JPEG data is corrupt"), std::string::npos);
}

// Finds the JPEG SOF0/SOF2 marker and writes its height and width.
void set_jpeg_size(std::vector<std::byte>& jpg, uint16_t width, uint16_t height) {
  for (size_t i = 2; i + 9 < jpg.size(); ++i)
    if (jpg[i] == std::byte(0xff) && (jpg[i + 1] == std::byte(0xc0) || jpg[i + 1] == std::byte(0xc2))) {
      jpg[i + 5] = std::byte(height >> 8), jpg[i + 6] = std::byte(height & 0xff);
      jpg[i + 7] = std::byte(width >> 8), jpg[i + 8] = std::byte(width & 0xff);
      return;
    }
  FAIL() << "no SOF marker";
}

TEST(ImageErrors, DecompressionBombsAreRefusedFromTheirHeaderAlone) {
  // A 60000 x 60000 PNG header over a small file: refused before a byte of it
  // is inflated (3.6 gigapixels, 10.8 GB of RGB).
  std::vector<std::byte> png = read_bytes(fixtures() / "rgb_640x480.png");
  for (int i = 0; i < 2; ++i) {  // IHDR's width and height, big-endian, at bytes 16 and 20
    png[16 + 4 * i] = std::byte(0), png[17 + 4 * i] = std::byte(0);
    png[18 + 4 * i] = std::byte(0xea), png[19 + 4 * i] = std::byte(0x60);
  }
  const auto start = std::chrono::steady_clock::now();
  const std::string message = error_of([&] { decode(png); });
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 0.5);
  EXPECT_NE(message.find("test image: PNG image of 60000 x 60000 pixels (3600000000) is over the limit of 89478485 "
                         "pixels (DecodeLimits::max_pixels): a decompression bomb"),
            std::string::npos)
      << message;
  std::vector<std::byte> jpg = read_bytes(fixtures() / "photo_500x375.jpg");
  set_jpeg_size(jpg, 65000, 65000);
  EXPECT_NE(error_of([&] { decode(jpg); }).find("JPEG image of 65000 x 65000 pixels"), std::string::npos);
  // A strip under the pixel limit but over the side limit.
  std::vector<std::byte> strip = read_bytes(fixtures() / "rgb_640x480.png");
  const uint32_t side = 70000;
  strip[16] = std::byte(side >> 24), strip[17] = std::byte(side >> 16), strip[18] = std::byte(side >> 8),
  strip[19] = std::byte(side);
  strip[20] = strip[21] = strip[22] = std::byte(0), strip[23] = std::byte(1);
  EXPECT_NE(error_of([&] { decode(strip); }).find("has a side over the limit of 65535 (DecodeLimits::max_side)"),
            std::string::npos);
}

TEST(ImageErrors, TheCallersLimitsApplyToEveryFormat) {
  const DecodeLimits small{.max_pixels = 10'000};
  for (const char* file : {"rgb_640x480.png", "photo_500x375.jpg", "bmp_400x300.bmp", "palette_120x90.gif",
                           "lossless_333x222.webp"}) {
    SCOPED_TRACE(file);
    const std::vector<std::byte> bytes = read_bytes(fixtures() / file);
    const std::string message = error_of([&] { decode(bytes, small); });
    EXPECT_NE(message.find("is over the limit of 10000 pixels"), std::string::npos) << message;
    EXPECT_NO_THROW(decode(bytes, DecodeLimits{.max_pixels = 640 * 480}));
  }
}

TEST(ImageErrors, ZeroSizedImagesAreRefused) {
  std::vector<std::byte> jpg = read_bytes(fixtures() / "photo_500x375.jpg");
  set_jpeg_size(jpg, 0, 375);
  EXPECT_NE(error_of([&] { decode(jpg); }).find("test image: JPEG"), std::string::npos);
  const std::string png = error_of([] { decode(make_png(0, 1, 8, 2, {{}})); });
  EXPECT_NE(png.find("test image: PNG"), std::string::npos) << png;
  RgbImage none;
  EXPECT_THROW(unicorn::image::pixel_values(none, 896), Error);
}

TEST(ImageErrors, AMissingFileIsNamed) {
  const std::string message = error_of([] { unicorn::image::decode_image_file("/nonexistent/cat.png"); });
  EXPECT_NE(message.find("/nonexistent/cat.png: no such file"), std::string::npos) << message;
}

}  // namespace
