// unicorn/image/decode_jpeg.hpp — JPEG through libjpeg(-turbo), the library
// Pillow decodes with, at its defaults (the integer IDCT, fancy upsampling),
// so the pixels are Pillow's and so transformers' to the bit.
//
// libjpeg reports errors by calling error_exit, which must not return: it
// longjmps back into read_jpeg, whose frame holds no object with a
// destructor (the pixels live in the caller's frame). A warning that the data
// ended early is an error here, as it is in Pillow ("image file is truncated");
// other warnings (stray bytes before a marker) are decoded through, as Pillow does.
#pragma once

#include <csetjmp>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <vector>

#include <jpeglib.h>
#include <jerror.h>  // JWRN_JPEG_EOF

#include "unicorn/base/error.hpp"
#include "unicorn/image/rgb_image.hpp"

namespace unicorn::image::detail {

// A progressive JPEG can hold thousands of tiny scans, each a pass over the
// whole image; libjpeg-turbo's own tools refuse more than this many.
inline constexpr int kMaxJpegScans = 500;

struct JpegErrors {
  jpeg_error_mgr mgr;  // first: libjpeg sees a jpeg_error_mgr*
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

[[noreturn]] inline void jpeg_fail(j_common_ptr cinfo) {
  auto* errors = reinterpret_cast<JpegErrors*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, errors->message);
  std::longjmp(errors->jump, 1);
}

inline void jpeg_warn(j_common_ptr cinfo, int level) {
  if (level == -1 && cinfo->err->msg_code == JWRN_JPEG_EOF) jpeg_fail(cinfo);
}

struct JpegProgress {
  jpeg_progress_mgr mgr;  // first: libjpeg sees a jpeg_progress_mgr*
  j_decompress_ptr cinfo;
};

inline void jpeg_count_scans(j_common_ptr cinfo) {
  auto* d = reinterpret_cast<j_decompress_ptr>(cinfo);
  if (d->is_decompressor && d->input_scan_number > kMaxJpegScans) {
    auto* errors = reinterpret_cast<JpegErrors*>(cinfo->err);
    std::snprintf(errors->message, sizeof errors->message, "more than %d scans", kMaxJpegScans);
    std::longjmp(errors->jump, 1);
  }
}

// What read_jpeg found; `problem` is empty on success.
struct JpegResult {
  uint32_t width = 0, height = 0;  // the header's
  int components = 0;       // of the output: 1 gray, 3 RGB, 4 CMYK; 0 when the limits refused it
  bool adobe_cmyk = false;  // CMYK stored inverted, as Adobe writes it
  std::string problem;      // libjpeg's message
};

// Decodes into `pixels` (resized here, rows of width x components bytes) when
// the header's dimensions are within the limits. Every object of this frame is
// trivially destructible or outlives the longjmp (the result, the pixels).
inline void read_jpeg(std::span<const std::byte> bytes, std::vector<uint8_t>& pixels, const DecodeLimits& limits,
                      JpegResult& result) {
  jpeg_decompress_struct cinfo{};
  JpegErrors errors{};
  JpegProgress progress{};
  cinfo.err = jpeg_std_error(&errors.mgr);
  errors.mgr.error_exit = jpeg_fail;
  errors.mgr.emit_message = jpeg_warn;
  if (setjmp(errors.jump)) {
    jpeg_destroy_decompress(&cinfo);
    result.problem = errors.message;
    return;
  }
  jpeg_create_decompress(&cinfo);
  progress.mgr.progress_monitor = jpeg_count_scans;
  cinfo.progress = &progress.mgr;
  jpeg_mem_src(&cinfo, reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<unsigned long>(bytes.size()));
  jpeg_read_header(&cinfo, TRUE);
  result.width = cinfo.image_width;
  result.height = cinfo.image_height;
  if (!within_limits(cinfo.image_width, cinfo.image_height, limits)) {
    jpeg_destroy_decompress(&cinfo);
    return;  // components 0: the caller throws check_dimensions' sentence
  }
  switch (cinfo.jpeg_color_space) {
    case JCS_GRAYSCALE: cinfo.out_color_space = JCS_GRAYSCALE; break;
    case JCS_CMYK:
    case JCS_YCCK:
      cinfo.out_color_space = JCS_CMYK;
      result.adobe_cmyk = cinfo.saw_Adobe_marker;
      break;
    default: cinfo.out_color_space = JCS_RGB; break;
  }
  jpeg_start_decompress(&cinfo);
  const size_t stride = size_t(cinfo.output_width) * cinfo.output_components;
  pixels.resize(stride * cinfo.output_height);
  while (cinfo.output_scanline < cinfo.output_height) {
    JSAMPROW row = pixels.data() + stride * cinfo.output_scanline;
    jpeg_read_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_decompress(&cinfo);
  result.width = cinfo.output_width;
  result.height = cinfo.output_height;
  result.components = cinfo.output_components;
  jpeg_destroy_decompress(&cinfo);
}

// Pillow's CMYK -> RGB (Convert.c): each channel times the inverse of black.
inline uint8_t cmyk_channel(int c, int k) {
  const int nk = 255 - k;
  const int t = c * nk + 128;
  const int v = nk - (((t >> 8) + t) >> 8);
  return uint8_t(v < 0 ? 0 : v > 255 ? 255 : v);
}

inline RgbImage decode_jpeg(std::span<const std::byte> bytes, const std::string& name, const DecodeLimits& limits) {
  std::vector<uint8_t> raw;
  JpegResult r;
  read_jpeg(bytes, raw, limits, r);
  if (!r.problem.empty()) throw Error(name + ": JPEG data is corrupt or truncated (libjpeg: " + r.problem + ")");
  if (r.components == 0) check_dimensions(name, "JPEG", r.width, r.height, limits);  // throws the sentence
  RgbImage out{.width = r.width, .height = r.height, .pixels = std::vector<uint8_t>(size_t(r.width) * r.height * 3)};
  const size_t n = size_t(r.width) * r.height;
  const uint8_t* in = raw.data();
  uint8_t* o = out.pixels.data();
  for (size_t i = 0; i < n; ++i, o += 3, in += r.components) {
    if (r.components == 1) {
      o[0] = o[1] = o[2] = in[0];
    } else if (r.components == 3) {
      o[0] = in[0], o[1] = in[1], o[2] = in[2];
    } else {
      const auto v = [&](int c) { return r.adobe_cmyk ? 255 - in[c] : int(in[c]); };
      for (int c = 0; c < 3; ++c) o[c] = cmyk_channel(v(c), v(3));
    }
  }
  return out;
}

}  // namespace unicorn::image::detail
