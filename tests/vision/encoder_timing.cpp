// encoder_timing — the image encoder on a GPU (not a ctest test; the lead runs
// it on the GPU machine): fixtures/tiny's goldens through the products as the
// device runs them (tensor units where present), then the real shape
// (kGemma3Siglip before a 4B's 2,560-wide text model, random F16 matrices)
// timed per encode, on the tensor units and on fp32 tiles.
//   encoder_timing FIXTURES_DIR [repeats]   (repeats 0: the goldens only)
// UNICORN_DEVICE / UNICORN_VALIDATION pick and check the device (tools/tuning_env.hpp).
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "tuning_env.hpp"
#include "unicorn/gpu/context.hpp"
#include "unicorn/io/safetensors.hpp"
#include "unicorn/vision/encoder.hpp"

namespace {

using namespace unicorn;
namespace fs = std::filesystem;

std::vector<float> read_floats(const fs::path& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot open " + path.string());
  f.seekg(0, std::ios::end);
  std::vector<float> v(size_t(f.tellg()) / 4);
  f.seekg(0);
  f.read(reinterpret_cast<char*>(v.data()), std::streamsize(v.size() * 4));
  return v;
}

float max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  float m = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    const float d = std::abs(a[i] - b[i]);
    m = std::isnan(d) ? INFINITY : std::max(m, d);
  }
  return a.size() == b.size() ? m : INFINITY;
}

void tiny_golden(const gpu::Context& ctx, const fs::path& fixtures) {
  const fs::path dir = fixtures / "tiny";
  const auto model = io::SafetensorsModel::open(dir / "model.safetensors");
  vision::HostTensors table;
  for (const io::SafeTensor& t : model.tensors()) {
    std::string name = t.name.starts_with("model.") ? t.name.substr(6) : t.name;
    if (name.starts_with("vision_tower.") || name.starts_with("multi_modal_projector."))
      table.emplace(name, vision::HostTensor{Format::F32, t.shape, t.data});
  }
  std::ifstream gf(dir / "golden.json");
  const auto g = nlohmann::json::parse(gf);
  const float vision_scale = g["vision_scale"], soft_scale = g["soft_scale"];
  for (int path = 0; path < 3; ++path) {  // fp32 tiles; tensor units with fp32 attention; all on tensor units
    vision::VisionEncoder e(ctx, kGemma3SiglipTiny, 96, table,
                            {.tensor_units = path > 0, .attention_tensor_units = path == 2});
    e.encode(read_floats(dir / "pixel_values.bin"));
    const float ve = max_abs_diff(e.vision_output(), read_floats(dir / "vision_out.bin"));
    const float se = max_abs_diff(e.soft_tokens(), read_floats(dir / "soft_tokens.bin"));
    std::printf("[ golden ] tiny F32 weights, products on %s, attention %s: vision tower %.3g of scale, soft tokens %.3g\n",
                e.tensor_units() ? "tensor units (fp16 operands)" : "fp32 tiles",
                e.attention_on_tensor_units() ? "on tensor units" : "fp32", ve / vision_scale, se / soft_scale);
  }
}

// Random weights of the real shape: F16 matrices, F32 vectors, values of a
// trained model's order (so that activations stay finite through 27 layers).
struct RandomWeights {
  std::vector<std::vector<std::byte>> store;
  vision::HostTensors table;
  RandomWeights(const VisionDims& v, uint32_t text_hidden) {
    std::mt19937 rng(20261207);
    for (const vision::ExpectedTensor& e : vision::expected_vision_tensors(v, text_hidden)) {
      uint64_t elems = 1;
      for (uint64_t d : e.shape) elems *= d;
      const bool matrix = e.shape.size() >= 2 && e.name != vision::names::kPosition;
      const bool norm_weight = e.name.find("norm") != std::string::npos && e.name.ends_with(".weight");
      std::vector<std::byte>& bytes = store.emplace_back(elems * (matrix ? 2 : 4));
      if (matrix) {
        // Halves of magnitude up to about 2 / sqrt(fan-in): exponent and mantissa bits drawn.
        const uint64_t fan_in = e.shape.size() == 4 ? e.shape[1] * e.shape[2] * e.shape[3] : e.shape.back();
        const float bound = 2.0f / std::sqrt(float(fan_in));
        std::uniform_real_distribution<float> u(-bound, bound);
        for (uint64_t i = 0; i < elems; i += 1) {
          const float f = u(rng);
          // fp32 -> fp16 by truncation: enough for timing.
          const uint32_t x = std::bit_cast<uint32_t>(f);
          const int32_t exp = int32_t((x >> 23) & 0xff) - 112;
          const uint16_t h = exp <= 0 ? uint16_t((x >> 16) & 0x8000)
                                      : uint16_t(((x >> 16) & 0x8000) | (uint32_t(exp) << 10) | ((x >> 13) & 0x3ff));
          std::memcpy(bytes.data() + 2 * i, &h, 2);
        }
      } else {
        std::uniform_real_distribution<float> u(-0.05f, 0.05f);
        for (uint64_t i = 0; i < elems; ++i) {
          const float f = norm_weight ? 1.0f + u(rng) : u(rng);
          std::memcpy(bytes.data() + 4 * i, &f, 4);
        }
      }
      table.emplace(e.name, vision::HostTensor{matrix ? Format::F16 : Format::F32, e.shape, bytes});
    }
  }
};

void real_shape(const gpu::Context& ctx, int repeats) {
  const uint32_t text_hidden = 2560;
  const RandomWeights w(kGemma3Siglip, text_hidden);
  std::vector<float> pixels(3ull * kGemma3Siglip.image_size * kGemma3Siglip.image_size);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (float& p : pixels) p = u(rng);
  const double tflop = double(vision::VisionEncoder::flops(kGemma3Siglip, text_hidden)) / 1e12;
  for (int path = 2; path >= 0; --path) {  // all on tensor units; products only; fp32 tiles
    const bool tensor_units = path > 0;
    const auto t0 = std::chrono::steady_clock::now();
    vision::VisionEncoder e(ctx, kGemma3Siglip, text_hidden, w.table,
                            {.tensor_units = tensor_units, .attention_tensor_units = path == 2});
    const auto t1 = std::chrono::steady_clock::now();
    e.encode(pixels);  // warm-up
    const int n = tensor_units ? repeats : std::max(1, repeats / 4);  // fp32 tiles are slow
    std::vector<double> ms;
    for (int i = 0; i < n; ++i) {
      const auto a = std::chrono::steady_clock::now();
      e.encode(pixels);
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - a).count());
    }
    std::sort(ms.begin(), ms.end());
    {  // where the time goes, from a profiled encoder of the same shape
      vision::VisionEncoder p(ctx, kGemma3Siglip, text_hidden, w.table,
                              {.tensor_units = tensor_units, .attention_tensor_units = path == 2, .profile = true});
      p.encode(pixels);
      p.encode(pixels);
      for (const vision::StageTime& t : p.stage_times())
        std::printf("[ stage  ] path %d %-24s %3u dispatches %8.2f ms\n", path,
                    t.kernel.c_str(), t.dispatches, t.ms);
    }
    const auto soft = e.soft_tokens();
    bool finite = true;
    float largest = 0;
    for (float f : soft) finite = finite && std::isfinite(f), largest = std::max(largest, std::abs(f));
    std::printf("[ timing ] %s, 896 image, F16 weights, products on %s, attention %s: created in %.0f ms; encode median %.2f ms, "
                "best %.2f ms over %d; %.3f TFLOP -> %.1f TFLOP/s; soft tokens %s, max |value| %.3g\n",
                ctx.info().name.c_str(), e.tensor_units() ? "tensor units" : "fp32 tiles",
                e.attention_on_tensor_units() ? "on tensor units" : "fp32", std::chrono::duration<double, std::milli>(t1 - t0).count(), ms[ms.size() / 2], ms[0], n, tflop,
                tflop / (ms[ms.size() / 2] / 1e3), finite ? "finite" : "NOT FINITE", largest);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: encoder_timing FIXTURES_DIR [repeats]\n");
    return 2;
  }
  try {
    gpu::Context ctx{tools::device_from_env()};
    std::printf("device: %s, tensor units: %s\n", ctx.info().name.c_str(),
                ctx.info().coopmat ? "yes" : ctx.info().coopmat_note.c_str());
    tiny_golden(ctx, argv[1]);
    const int repeats = argc > 2 ? std::atoi(argv[2]) : 10;
    if (repeats > 0) real_shape(ctx, repeats);  // 0: the tiny goldens only (a CPU device)
    if (ctx.validation_enabled() && ctx.validation_errors())
      return std::printf("validation errors: %u\n", ctx.validation_errors()), 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "encoder_timing: %s\n", e.what());
    return 1;
  }
}
