// examples/bench/image.cpp — unicorn-bench --image: an image's costs beside
// the text's (decode and resize on the host, the encoder, the first token of
// a question about it).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>

#include "catalog.hpp"
#include "options.hpp"  // examples/generate: --products, as the generator takes it
#include "unicorn/engine.hpp"
#include "unicorn/engine/pick.hpp"
#include "unicorn/grammar/json_schema.hpp"
#include "unicorn/grammar/matcher.hpp"
#include "unicorn/io/file_output.hpp"
#include "unicorn/text/load_tokenizer.hpp"
#include "program_exit.hpp"
#include "unicorn/config/hparams.hpp"
#include "unicorn/gpu/timing.hpp"
#include "unicorn/layout/print.hpp"
#include "ollama_env.hpp"
#include "tuning_env.hpp"
#include "bench.hpp"

namespace unicorn::examples::bench {

// --image: the file decoded and resized on the host, the encoder alone on
// the device (median of the repetitions after a warm-up), and the first token
// of a short question about the image (the image's rows and the question in
// one prefill), each timed as a user meets it.
int run_image(AnyEngine& engine, const Options& o, nlohmann::json& j) {
  std::ifstream in(o.image, std::ios::binary);
  const std::string file{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  if (!in.good() && !in.eof()) throw Error(o.image + ": cannot be read");
  vision::VisionEncoder& encoder = engine.vision_encoder();
  const VisionDims& v = engine.config().vision;
  const uint32_t hidden = engine.config().model.hidden;
  std::vector<double> decode_ms, encode_ms, first_token_ms;
  std::vector<float> pixels;
  const std::vector<std::string> files{file};
  for (uint32_t r = 0; r <= o.repetitions; ++r) {
    auto a = Clock::now();
    pixels = image::pixel_values(image::decode_image(std::as_bytes(std::span(file)), o.image), v);
    const double d_ms = std::chrono::duration<double, std::milli>(Clock::now() - a).count();
    a = Clock::now();
    encoder.encode(pixels);  // returns when the device is done
    const double e_ms = std::chrono::duration<double, std::milli>(Clock::now() - a).count();
    // A question about the image, from the file: what a user waits for.
    a = Clock::now();
    text::GenerateOptions q{.max_tokens = 1, .images = files};
    (void)engine.generate("Describe this image.", q);
    const double t_ms = std::chrono::duration<double, std::milli>(Clock::now() - a).count();
    if (r == 0) continue;  // warm-up: pipelines, caches
    decode_ms.push_back(d_ms), encode_ms.push_back(e_ms), first_token_ms.push_back(t_ms);
  }
  const auto median = [](std::vector<double> x) { std::sort(x.begin(), x.end()); return x[x.size() / 2]; };
  const double flops = double(vision::VisionEncoder::flops(v, hidden));
  const double enc = median(encode_ms);
  j["image"] = {{"file", o.image},
                {"encoder", std::string(v.name)},
                {"encoder_tensor_units", encoder.tensor_units()},
                {"decode_resize_ms", median(decode_ms)},
                {"encode_ms", enc},
                {"encode_tflops", flops / (enc * 1e-3) / 1e12},
                {"encode_tflop_per_image", flops / 1e12},
                {"first_token_ms", median(first_token_ms)},
                {"first_token_what", "decode + encode + prefill of the image's rows and a 5-token question"}};
  if (o.json) {
    std::cout << j.dump(1) << "\n";
    return 0;
  }
  print_header(j);
  const auto& im = j["image"];
  std::printf("image %s: decode and resize %.2f ms (host), encoder %.2f ms on %s (%.2f TFLOP: %.1f TFLOP/s), "
              "first token of a question about it %.2f ms (median of %u)\n",
              o.image.c_str(), im["decode_resize_ms"].get<double>(), enc,
              encoder.tensor_units() ? "tensor units" : "fp32 tiles", flops / 1e12,
              im["encode_tflops"].get<double>(), im["first_token_ms"].get<double>(), o.repetitions);
  return 0;
}

}  // namespace unicorn::examples::bench
