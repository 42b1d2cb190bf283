// Gemma 3's image encoder and projector on the device (include/unicorn/vision/)
// against transformers' goldens for fixtures/tiny (make_golden.py): the pixels
// of pixel_values.bin through the vision tower (vision_out.bin [256, 64]) and
// the projector (soft_tokens.bin [16, 96]), with the weights of
// model.safetensors in F32 and in F16; the encoder's refusals of bad weights
// and pixels. Environment: UNICORN_VISION_FIXTURES (tests/vision/fixtures).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tuning_env.hpp"
#include "unicorn/gpu/context.hpp"
#include "unicorn/io/safetensors.hpp"
#include "unicorn/vision/encoder.hpp"

namespace unicorn {
namespace {

namespace fs = std::filesystem;

// The tiny encoder of the fixtures: kGemma3SiglipTiny for kGemma3Tiny's 96-wide text model.
struct TinyVision {
  static constexpr VisionDims kVision = kGemma3SiglipTiny;
  static constexpr uint32_t kTextHidden = 96;
};
static_assert(vision::VisionShape<TinyVision>);
// The same encoder before a text model of another width.
struct TinyVisionWider {
  static constexpr VisionDims kVision = kGemma3SiglipTiny;
  static constexpr uint32_t kTextHidden = 128;
};

fs::path tiny_dir() {
  const char* d = std::getenv("UNICORN_VISION_FIXTURES");
  if (!d) throw std::runtime_error("UNICORN_VISION_FIXTURES is not set (ctest sets it: tests/vision)");
  return fs::path(d) / "tiny";
}

std::vector<float> read_floats(const fs::path& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot open " + path.string());
  f.seekg(0, std::ios::end);
  std::vector<float> v(size_t(f.tellg()) / 4);
  f.seekg(0);
  f.read(reinterpret_cast<char*>(v.data()), std::streamsize(v.size() * 4));
  return v;
}

nlohmann::json golden() {
  std::ifstream f(tiny_dir() / "golden.json");
  return nlohmann::json::parse(f);
}

gpu::Context& device() {
  static gpu::Context ctx{tools::device_from_env()};
  return ctx;
}

// The checkpoint's vision tensors as the encoder's host table (names without
// a leading "model."). `half`: matrices (2 dimensions or more) converted to
// F16, as llama.cpp's F16 mmproj stores them; vectors stay F32.
struct Weights {
  io::SafetensorsModel model = io::SafetensorsModel::open(tiny_dir() / "model.safetensors");
  std::vector<std::vector<std::byte>> converted;
  vision::HostTensors table;

  explicit Weights(bool half = false) {
    for (const io::SafeTensor& t : model.tensors()) {
      std::string name = t.name;
      if (name.starts_with("model.")) name = name.substr(6);
      if (!name.starts_with("vision_tower.") && !name.starts_with("multi_modal_projector.")) continue;
      if (t.dtype != "F32") throw std::runtime_error("fixture tensor " + t.name + " is not F32");
      vision::HostTensor h{Format::F32, t.shape, t.data};
      if (half && t.shape.size() >= 2) {
        std::vector<std::byte>& out = converted.emplace_back(t.data.size() / 2);
        for (size_t i = 0; i < t.data.size() / 4; ++i) {
          float f;
          std::memcpy(&f, t.data.data() + 4 * i, 4);
          const uint16_t bits = half_bits(f);
          std::memcpy(out.data() + 2 * i, &bits, 2);
        }
        h = {Format::F16, t.shape, out};
      }
      table.emplace(name, h);
    }
  }
  // Round to nearest even; the fixture's values are normal and small.
  static uint16_t half_bits(float f) {
    const uint32_t x = std::bit_cast<uint32_t>(f);
    const uint32_t sign = (x >> 16) & 0x8000;
    const int32_t exp = int32_t((x >> 23) & 0xff) - 127 + 15;
    uint32_t mant = x & 0x7fffff;
    if (exp <= 0) {  // subnormal half (or zero)
      if (exp < -10) return uint16_t(sign);
      mant |= 0x800000;
      const uint32_t shift = uint32_t(14 - exp);
      uint32_t h = mant >> shift;
      const uint32_t rest = mant & ((1u << shift) - 1), half_way = 1u << (shift - 1);
      if (rest > half_way || (rest == half_way && (h & 1))) ++h;
      return uint16_t(sign | h);
    }
    uint32_t h = (uint32_t(exp) << 10) | (mant >> 13);
    const uint32_t rest = mant & 0x1fff;
    if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) ++h;
    return uint16_t(sign | h);
  }
};

float max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  float m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(a[i] - b[i]));
  return m;
}

struct Outputs {
  std::vector<float> vision, soft;
};
Outputs encode(const vision::HostTensors& table) {
  // fp32 products: the goldens hold the encoder to fp32 (a GPU's tensor units
  // would round the operands to fp16).
  vision::Encoder<TinyVision> encoder(device(), table, {.tensor_units = false});
  encoder.encode(read_floats(tiny_dir() / "pixel_values.bin"));
  return {encoder.vision_output(), encoder.soft_tokens()};
}

// F32 weights: within 1e-4 of each golden's largest |value| (issue 50's bar).
TEST(Encoder, F32WeightsMatchTransformersVisionTowerAndSoftTokens) {
  const Weights w;
  const Outputs out = encode(w.table);
  const auto vision_ref = read_floats(tiny_dir() / "vision_out.bin");
  const auto soft_ref = read_floats(tiny_dir() / "soft_tokens.bin");
  ASSERT_EQ(out.vision.size(), vision_ref.size());
  ASSERT_EQ(out.soft.size(), soft_ref.size());
  const auto g = golden();
  const float vision_scale = g["vision_scale"], soft_scale = g["soft_scale"];
  const float vision_err = max_abs_diff(out.vision, vision_ref), soft_err = max_abs_diff(out.soft, soft_ref);
  EXPECT_LE(vision_err, 1e-4f * vision_scale) << "vision tower [256, 64]: max |ours - transformers| " << vision_err
                                              << ", scale " << vision_scale;
  EXPECT_LE(soft_err, 1e-4f * soft_scale) << "soft tokens [16, 96]: max |ours - transformers| " << soft_err
                                          << ", scale " << soft_scale;
  EXPECT_EQ(device().validation_errors(), 0u) << "the validation layer reported errors";
  std::printf("F32: vision tower error %.3g (%.3g of its scale), soft tokens %.3g (%.3g)\n", vision_err,
              vision_err / vision_scale, soft_err, soft_err / soft_scale);
}

// F16 matrices (the mmproj files people hold): each weight rounded to 11
// significant bits moved the outputs by 4.9e-4 (vision tower) and 6.1e-4 (soft
// tokens) of their scales on lavapipe; held to 3e-3 of the scale, five times that.
TEST(Encoder, F16WeightsStayWithinTheirRoundingOfTransformers) {
  const Weights w(/*half=*/true);
  const Outputs out = encode(w.table);
  const auto g = golden();
  const float vision_scale = g["vision_scale"], soft_scale = g["soft_scale"];
  const float vision_err = max_abs_diff(out.vision, read_floats(tiny_dir() / "vision_out.bin"));
  const float soft_err = max_abs_diff(out.soft, read_floats(tiny_dir() / "soft_tokens.bin"));
  EXPECT_LE(vision_err, 3e-3f * vision_scale) << "vision tower, F16 weights: max error " << vision_err;
  EXPECT_LE(soft_err, 3e-3f * soft_scale) << "soft tokens, F16 weights: max error " << soft_err;
  std::printf("F16: vision tower error %.3g (%.3g of its scale), soft tokens %.3g (%.3g)\n", vision_err,
              vision_err / vision_scale, soft_err, soft_err / soft_scale);
}

TEST(Encoder, RefusesAMissingTensorNamingIt) {
  Weights w;
  w.table.erase(vision::names::layer(1, "mlp.fc2.bias"));
  try {
    vision::Encoder<TinyVision> encoder(device(), w.table);
    FAIL() << "an encoder without layer 1's fc2 bias was made";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("vision_tower.encoder.layers.1.mlp.fc2.bias"), std::string::npos) << e.what();
  }
}

TEST(Encoder, RefusesAProjectorForAnotherTextModelNamingTheShapes) {
  const Weights w;
  try {
    vision::Encoder<TinyVisionWider> encoder(device(), w.table);
    FAIL() << "a projector to 96 was taken for a 128-wide text model";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("mm_input_projection_weight has shape [64, 96]"), std::string::npos) << m;
    EXPECT_NE(m.find("[64, 128]"), std::string::npos) << m;
  }
}

TEST(Encoder, RefusesPixelsOfAnotherSize) {
  const Weights w;
  vision::Encoder<TinyVision> encoder(device(), w.table);
  const std::vector<float> pixels(3 * 32 * 32, 0.0f);
  EXPECT_THROW(encoder.encode(pixels), Error);
}

TEST(Encoder, CountsAbout5Point4TeraflopsForAn896Image) {
  const double tflop = double(vision::VisionEncoder::flops(kGemma3Siglip, 2560)) / 1e12;
  EXPECT_NEAR(tflop, 5.46, 0.02);
}

}  // namespace
}  // namespace unicorn
