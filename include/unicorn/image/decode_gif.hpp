// unicorn/image/decode_gif.hpp — a GIF's first frame through giflib, placed on
// its canvas as Pillow places it, then through its colour table as Pillow's
// convert("RGB") does (transparency is ignored: the transparent index shows its
// colour-table entry, as in transformers' processor).
//
// Only the first image record is read: the frames after it are never decoded,
// so an animation costs what its first frame does.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include <gif_lib.h>

#include "unicorn/base/error.hpp"
#include "unicorn/image/rgb_image.hpp"

namespace unicorn::image::detail {

struct GifSource {
  std::span<const std::byte> bytes;
  size_t read = 0;
};

inline int gif_read(GifFileType* gif, GifByteType* out, int want) {
  auto* src = static_cast<GifSource*>(gif->UserData);
  const size_t n = std::min(size_t(want < 0 ? 0 : want), src->bytes.size() - src->read);
  std::memcpy(out, src->bytes.data() + src->read, n);
  src->read += n;
  return int(n);
}

class GifFile {
 public:
  explicit GifFile(GifSource& source, const std::string& name) : name_(name) {
    int error = 0;
    gif_ = DGifOpen(&source, gif_read, &error);
    if (gif_ == nullptr) fail(error);
  }
  ~GifFile() {
    int error = 0;
    DGifCloseFile(gif_, &error);
  }
  GifFile(const GifFile&) = delete;
  GifFile& operator=(const GifFile&) = delete;

  GifFileType* operator->() const { return gif_; }
  // A giflib call's status: GIF_ERROR ends in unicorn::Error with giflib's reason.
  void ok(int status) const {
    if (status == GIF_ERROR) fail(gif_->Error);
  }

 private:
  [[noreturn]] void fail(int error) const {
    const char* why = GifErrorString(error);
    throw Error(name_ + ": GIF data is corrupt or truncated (giflib: " + (why ? why : "unknown error") + ")");
  }
  std::string name_;
  GifFileType* gif_ = nullptr;
};

inline RgbImage decode_gif(std::span<const std::byte> bytes, const std::string& name, const DecodeLimits& limits) {
  GifSource source{.bytes = bytes};
  GifFile gif(source, name);
  int transparent = -1;  // the first frame's, from the graphic control extension before it
  for (;;) {
    GifRecordType record = UNDEFINED_RECORD_TYPE;
    gif.ok(DGifGetRecordType(gif.operator->(), &record));
    if (record == TERMINATE_RECORD_TYPE) throw Error(name + ": GIF holds no image");
    if (record == EXTENSION_RECORD_TYPE) {
      int code = 0;
      GifByteType* block = nullptr;
      gif.ok(DGifGetExtension(gif.operator->(), &code, &block));
      if (code == GRAPHICS_EXT_FUNC_CODE && block != nullptr && block[0] >= 4) {
        GraphicsControlBlock gcb{};
        if (DGifExtensionToGCB(block[0], block + 1, &gcb) == GIF_OK) transparent = gcb.TransparentColor;
      }
      while (block != nullptr) gif.ok(DGifGetExtensionNext(gif.operator->(), &block));
      continue;
    }
    if (record != IMAGE_DESC_RECORD_TYPE) continue;
    gif.ok(DGifGetImageDesc(gif.operator->()));
    const GifImageDesc& frame = gif->Image;
    if (frame.Left < 0 || frame.Top < 0 || frame.Width <= 0 || frame.Height <= 0)
      throw Error(name + ": GIF frame of " + std::to_string(frame.Width) + " x " + std::to_string(frame.Height) +
                  " pixels at (" + std::to_string(frame.Left) + ", " + std::to_string(frame.Top) + ") is not an image");
    // Pillow grows the canvas to hold a first frame that sticks out of it.
    const uint64_t width = std::max<uint64_t>(uint64_t(gif->SWidth), uint64_t(frame.Left) + uint64_t(frame.Width));
    const uint64_t height = std::max<uint64_t>(uint64_t(gif->SHeight), uint64_t(frame.Top) + uint64_t(frame.Height));
    check_dimensions(name, "GIF", width, height, limits);
    // Outside the frame: the transparent index where there is one, else index 0.
    std::vector<GifPixelType> indices(size_t(width) * height, GifPixelType(transparent >= 0 ? transparent : 0));
    // An interlaced frame's rows come in four passes: every 8th from 0, every
    // 8th from 4, every 4th from 2, every 2nd from 1.
    static constexpr int kStart[4] = {0, 4, 2, 1}, kStep[4] = {8, 8, 4, 2};
    const int passes = frame.Interlace ? 4 : 1;
    for (int p = 0; p < passes; ++p) {
      const int start = frame.Interlace ? kStart[p] : 0, step = frame.Interlace ? kStep[p] : 1;
      for (int y = start; y < frame.Height; y += step) {
        GifPixelType* row = indices.data() + (size_t(frame.Top) + y) * width + frame.Left;
        gif.ok(DGifGetLine(gif.operator->(), row, frame.Width));
      }
    }
    const ColorMapObject* map = frame.ColorMap != nullptr ? frame.ColorMap : gif->SColorMap;
    RgbImage out{.width = uint32_t(width), .height = uint32_t(height),
                 .pixels = std::vector<uint8_t>(size_t(width) * height * 3)};
    for (size_t i = 0; i < indices.size(); ++i) {
      const int c = indices[i];
      uint8_t* o = out.pixels.data() + 3 * i;
      if (map == nullptr) {  // no colour table: Pillow reads the indices as gray levels
        o[0] = o[1] = o[2] = uint8_t(c);
      } else if (c < map->ColorCount) {
        o[0] = map->Colors[c].Red, o[1] = map->Colors[c].Green, o[2] = map->Colors[c].Blue;
      } else {  // past the table (a malformed file): black
        o[0] = o[1] = o[2] = 0;
      }
    }
    return out;
  }
}

}  // namespace unicorn::image::detail
