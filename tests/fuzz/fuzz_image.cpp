// Fuzz target: image files (include/unicorn/image: PNG and BMP through
// stb_image, JPEG through libjpeg-turbo, GIF through giflib, WebP through
// libwebp), as the server and the generator receive them. Every input must end
// in an RGB image within the limits or in unicorn::Error; a decoded image is
// then preprocessed (the resize reads every pixel). The limits are small so
// that a fuzzer's cheap huge image (a GIF of a million identical pixels) is
// refused rather than timed out on.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "fuzz.hpp"
#include "unicorn/image/decode.hpp"
#include "unicorn/image/preprocess.hpp"

// stb_image's code compiled into this target, from the header Debian's libstb
// is built from (so not linked from libstb): the fuzzer's coverage then guides
// it into stb's PNG and BMP decoders, and ASan checks their every read. The
// other libraries are linked as they are, uninstrumented. (decode.hpp included
// the declarations; this second include adds the definitions alone.)
#define STB_IMAGE_IMPLEMENTATION
#include <stb_image.h>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<std::byte> bytes = unicorn::fuzz::exact_copy(data, size);
  const unicorn::image::DecodeLimits limits{.max_pixels = 1 << 18, .max_side = 4096};
  unicorn::fuzz::only_unicorn_errors([&] {
    const unicorn::image::RgbImage image = unicorn::image::decode_image(bytes, "fuzz", limits);
    FUZZ_CHECK(image.width > 0 && image.height > 0, "a decoded image has zero size");
    FUZZ_CHECK(image.width <= limits.max_side && image.height <= limits.max_side, "a side over the limit");
    FUZZ_CHECK(uint64_t(image.width) * image.height <= limits.max_pixels, "more pixels than the limit");
    FUZZ_CHECK(image.pixels.size() == size_t(image.width) * image.height * 3, "the pixels are not width x height x 3");
    const std::vector<float> x = unicorn::image::pixel_values(image, 16);
    for (const float v : x) FUZZ_CHECK(v >= -1.0f && v <= 1.0f, "a pixel value outside [-1, 1]");
  });
  return 0;
}
