// unicorn/image/decode_webp.hpp — WebP (lossy, lossless, animated: the first
// frame) through libwebp's animation decoder, which is how Pillow reads every
// WebP: RGBA on the canvas, not premultiplied; the alpha is then dropped as
// Pillow's convert("RGB") drops it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include <webp/decode.h>
#include <webp/demux.h>

#include "unicorn/base/error.hpp"
#include "unicorn/image/rgb_image.hpp"

namespace unicorn::image::detail {

struct WebPDecoderFree {
  void operator()(WebPAnimDecoder* d) const { ::WebPAnimDecoderDelete(d); }
};

inline RgbImage decode_webp(std::span<const std::byte> bytes, const std::string& name, const DecodeLimits& limits) {
  const auto* data = reinterpret_cast<const uint8_t*>(bytes.data());
  // The canvas size from the header (VP8X for an extended file), before the
  // decoder allocates the canvas.
  WebPBitstreamFeatures features{};
  if (const VP8StatusCode status = WebPGetFeatures(data, bytes.size(), &features); status != VP8_STATUS_OK)
    throw Error(name + ": WebP header is corrupt or truncated (libwebp status " + std::to_string(int(status)) + ")");
  check_dimensions(name, "WebP", uint64_t(features.width), uint64_t(features.height), limits);
  WebPAnimDecoderOptions options;
  if (!WebPAnimDecoderOptionsInit(&options)) throw Error(name + ": libwebp's decoder options did not initialise");
  options.color_mode = MODE_RGBA;
  options.use_threads = 0;
  const WebPData whole{.bytes = data, .size = bytes.size()};
  std::unique_ptr<WebPAnimDecoder, WebPDecoderFree> decoder(WebPAnimDecoderNew(&whole, &options));
  if (!decoder) throw Error(name + ": WebP data is corrupt or truncated (libwebp could not read its chunks)");
  WebPAnimInfo info{};
  if (!WebPAnimDecoderGetInfo(decoder.get(), &info)) throw Error(name + ": WebP data is corrupt (no canvas)");
  check_dimensions(name, "WebP", info.canvas_width, info.canvas_height, limits);
  uint8_t* rgba = nullptr;
  int timestamp = 0;
  if (!WebPAnimDecoderHasMoreFrames(decoder.get()) || !WebPAnimDecoderGetNext(decoder.get(), &rgba, &timestamp) ||
      rgba == nullptr)
    throw Error(name + ": WebP data is corrupt or truncated (its first frame does not decode)");
  RgbImage out{.width = info.canvas_width, .height = info.canvas_height,
               .pixels = std::vector<uint8_t>(size_t(info.canvas_width) * info.canvas_height * 3)};
  const size_t n = size_t(out.width) * out.height;
  for (size_t i = 0; i < n; ++i) {
    out.pixels[3 * i] = rgba[4 * i];
    out.pixels[3 * i + 1] = rgba[4 * i + 1];
    out.pixels[3 * i + 2] = rgba[4 * i + 2];
  }
  return out;
}

}  // namespace unicorn::image::detail
