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
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ggml_quantize.hpp"
#include "tuning_env.hpp"
#include "unicorn/config/deployment.hpp"
#include "unicorn/gpu/context.hpp"
#include "unicorn/io/safetensors.hpp"
#include "unicorn/model/vision_from_hf.hpp"
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
// Encoder<D> of a deployment that names the encoder beside its text model
// takes the same shape from D::kConfig.
struct TinyDeployment {
  static constexpr DeploymentConfig kConfig =
      make_deployment(kGemma3Tiny, schemes::all(Format::F32, Format::F32), 256, 32).with_vision(kGemma3SiglipTiny);
};
static_assert(vision::VisionDeployment<TinyDeployment>);
static_assert(vision::Encoder<TinyDeployment>::kTextHidden == TinyVision::kTextHidden &&
              vision::Encoder<TinyDeployment>::kDims.patches() == 256);
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
// a leading "model."). `matrices`: the format of the tensors of 2 dimensions
// or more, as the files people hold store them (llama.cpp's mmproj keeps
// vectors in F32); with Q8_0 only the layers' products are blocks (the patch
// embedding's rows of 48 and the projector stay F16).
struct Weights {
  io::SafetensorsModel model = io::SafetensorsModel::open(tiny_dir() / "model.safetensors");
  std::vector<std::vector<std::byte>> converted;
  vision::HostTensors table;

  explicit Weights(Format matrices = Format::F32) {
    for (const io::SafeTensor& t : model.tensors()) {
      std::string name = t.name;
      if (name.starts_with("model.")) name = name.substr(6);
      if (!name.starts_with("vision_tower.") && !name.starts_with("multi_modal_projector.")) continue;
      if (t.dtype != "F32") throw std::runtime_error("fixture tensor " + t.name + " is not F32");
      Format f = t.shape.size() >= 2 ? matrices : Format::F32;
      const bool product = name.starts_with("vision_tower.encoder.layers.");
      if (f == Format::Q8_0 && !product) f = Format::F16;
      table.emplace(name, vision::HostTensor{f, t.shape, convert(t.data, f)});
    }
  }
  std::span<const std::byte> convert(std::span<const std::byte> f32, Format f) {
    if (f == Format::F32) return f32;
    std::vector<float> x(f32.size() / 4);
    std::memcpy(x.data(), f32.data(), f32.size());
    std::vector<std::byte>& out = converted.emplace_back();
    if (f == Format::Q8_0) {
      tools::quantize(f, x, out);
      return out;
    }
    for (float v : x) {
      const uint16_t bits = f == Format::F16 ? tools::to_f16_bits(v) : tools::to_bf16_bits(v);
      out.push_back(std::byte(bits & 0xff));
      out.push_back(std::byte(bits >> 8));
    }
    return out;
  }
};

// Largest |a - b|; a NaN anywhere makes it infinite (std::max would skip it).
float max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  float m = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const float d = std::abs(a[i] - b[i]);
    m = std::isnan(d) ? INFINITY : std::max(m, d);
  }
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

// The formats of the mmproj files people hold, against the same goldens:
// each held to about five times the error it showed on lavapipe (max |error|
// over the golden's scale; vision tower, soft tokens):
//   F16 matrices   4.9e-4, 6.1e-4  -> 3e-3
//   BF16 matrices  3.8e-3, 4.4e-3  -> 2.5e-2
//   Q8_0 products  9.1e-3, 1.2e-2  -> 6e-2 (F16 patch embedding and projector)
struct LowerPrecision {
  Format matrices;
  float bar;  // of each golden's scale
};
class EncoderFormats : public testing::TestWithParam<LowerPrecision> {};

TEST_P(EncoderFormats, StayWithinTheirRoundingOfTransformers) {
  const LowerPrecision p = GetParam();
  const Weights w(p.matrices);
  const Outputs out = encode(w.table);
  const auto g = golden();
  const float vision_scale = g["vision_scale"], soft_scale = g["soft_scale"];
  const float vision_err = max_abs_diff(out.vision, read_floats(tiny_dir() / "vision_out.bin"));
  const float soft_err = max_abs_diff(out.soft, read_floats(tiny_dir() / "soft_tokens.bin"));
  const std::string fmt(format_name(p.matrices));
  EXPECT_LE(vision_err, p.bar * vision_scale) << "vision tower, " << fmt << " weights: max error " << vision_err;
  EXPECT_LE(soft_err, p.bar * soft_scale) << "soft tokens, " << fmt << " weights: max error " << soft_err;
  std::printf("%s: vision tower error %.3g (%.3g of its scale), soft tokens %.3g (%.3g)\n", fmt.c_str(), vision_err,
              vision_err / vision_scale, soft_err, soft_err / soft_scale);
}
INSTANTIATE_TEST_SUITE_P(Encoder, EncoderFormats,
                         testing::Values(LowerPrecision{Format::F16, 3e-3f}, LowerPrecision{Format::BF16, 2.5e-2f},
                                         LowerPrecision{Format::Q8_0, 6e-2f}),
                         [](const auto& info) { return std::string(format_name(info.param.matrices)); });

// Through the readers' VisionWeights (model/vision_weights.hpp): the Hugging
// Face directory as model/vision_from_hf.hpp reads it, then as an mmproj
// holds it, the soft-embedding norm stored as 1 + w and the projector in
// Q8_0 (ggml's blocks, made fp32 at upload).
TEST(Encoder, TakesTheReadersVisionWeightsHfAndMmprojConventions) {
  const auto st = io::SafetensorsModel::open(tiny_dir());
  VisionWeights w = vision_from_hf(tiny_dir(), st);
  const auto g = golden();
  const float soft_scale = g["soft_scale"];
  const auto soft_ref = read_floats(tiny_dir() / "soft_tokens.bin");
  {
    vision::Encoder<TinyVision> encoder(device(), w, {.tensor_units = false}, /*gguf=*/false);
    encoder.encode(read_floats(tiny_dir() / "pixel_values.bin"));
    EXPECT_LE(max_abs_diff(encoder.soft_tokens(), soft_ref), 1e-4f * soft_scale) << "from vision_from_hf";
  }
  // As an mmproj: 1 + w, and a Q8_0 projector.
  std::vector<float> one_plus_w;
  std::vector<std::byte> projection_q8;
  for (VisionTensor& t : w.tensors) {
    if (t.name == "mm.soft_emb_norm.weight") {
      one_plus_w.resize(t.dims[0]);
      std::memcpy(one_plus_w.data(), t.data.data(), one_plus_w.size() * 4);
      for (float& v : one_plus_w) v += 1.0f;
      t.data = std::as_bytes(std::span(one_plus_w));
    } else if (t.name == "mm.input_projection.weight") {
      std::vector<float> x(t.data.size() / 4);
      std::memcpy(x.data(), t.data.data(), t.data.size());
      tools::quantize(Format::Q8_0, x, projection_q8);
      t.format = Format::Q8_0;
      t.data = projection_q8;
    }
  }
  w.soft_norm_stores_one_plus_w = true;
  vision::Encoder<TinyVision> encoder(device(), w, {.tensor_units = false});
  encoder.encode(read_floats(tiny_dir() / "pixel_values.bin"));
  const float err = max_abs_diff(encoder.soft_tokens(), soft_ref);
  // The Q8_0 projector's rounding: 6.3e-3 of the scale measured here.
  EXPECT_LE(err, 3e-2f * soft_scale) << "as an mmproj: 1 + w norm, Q8_0 projector";
  std::printf("mmproj conventions (Q8_0 projector): soft tokens %.3g of their scale\n", err / soft_scale);
}

// Soft tokens that hold a NaN or an Inf never reach the model: a NaN planted
// in the soft-embedding norm's weight comes out of the encoder, and
// check_soft_tokens (which AnyEngine::encode_images runs on every image)
// refuses them, naming the image, the first bad token and the device; finite
// ones pass.
TEST(Encoder, NonFiniteSoftTokensAreRefused) {
  Weights w;
  vision::HostTensor& norm = w.table.at(std::string(vision::names::kSoftNorm));
  std::vector<std::byte>& planted = w.converted.emplace_back(norm.bytes.begin(), norm.bytes.end());
  const float nan = std::nanf("");
  std::memcpy(planted.data() + 4 * 5, &nan, 4);  // element 5 of every pooled token's norm
  norm.bytes = planted;
  const Outputs out = encode(w.table);
  const uint32_t hidden = TinyVision::kTextHidden;
  try {
    vision::check_soft_tokens(out.soft, hidden, "image 1 of 1", "the test device");
    FAIL() << "NaN soft tokens were passed";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("image 1 of 1: the image encoder's output holds NaN (soft token 0) on the "
                                         "test device; the image is not passed to the model"),
              std::string::npos)
        << e.what();
  }
  std::vector<float> inf(size_t(3) * hidden, 0.5f);
  inf[size_t(2) * hidden + 1] = INFINITY;
  EXPECT_THROW(vision::check_soft_tokens(inf, hidden, "x", "y"), Error);
  inf[size_t(2) * hidden + 1] = 0.f;
  EXPECT_NO_THROW(vision::check_soft_tokens(inf, hidden, "x", "y"));
  EXPECT_NO_THROW(vision::check_soft_tokens(encode(Weights().table).soft, hidden, "x", "y"));
}

TEST(Encoder, RefusesAnEncoderOfAnotherShapeFromAFile) {
  const auto st = io::SafetensorsModel::open(tiny_dir());
  VisionWeights w = vision_from_hf(tiny_dir(), st);
  w.dims.layers = 3;
  EXPECT_THROW(vision::Encoder<TinyVision>(device(), w, {}, false), Error);
}

TEST(Encoder, RefusesQ8_0WhereRowsAreNoWholeBlocks) {
  Weights w;
  // The patch embedding's rows are 3 * 4 * 4 = 48 values.
  auto& patch = w.table.at(std::string(vision::names::kPatchWeight));
  patch.format = Format::Q8_0;
  try {
    vision::Encoder<TinyVision> encoder(device(), w.table);
    FAIL() << "a Q8_0 patch embedding was taken";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("patch_embedding.weight is Q8_0; the image encoder takes it in F32, F16 or BF16"),
              std::string::npos)
        << e.what();
  }
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

TEST(Encoder, ProfileTimesEachKernelOfThePass) {
  const Weights w;
  vision::Encoder<TinyVision> encoder(device(), w.table, {.tensor_units = false, .profile = true});
  encoder.encode(read_floats(tiny_dir() / "pixel_values.bin"));
  std::map<std::string, uint32_t> dispatches;
  for (const vision::StageTime& t : encoder.stage_times()) {
    dispatches[t.kernel] = t.dispatches;
    EXPECT_GE(t.ms, 0.0) << t.kernel;
  }
  // Per layer q/k/v, out, fc1, fc2; the patch embedding and the projector.
  EXPECT_EQ(dispatches["matmul_f32"], 4 * kGemma3SiglipTiny.layers + 2);
  EXPECT_EQ(dispatches["vision_attention"], kGemma3SiglipTiny.layers);
  EXPECT_EQ(dispatches["vision_layernorm"], 2 * kGemma3SiglipTiny.layers + 1);
  EXPECT_EQ(dispatches["vision_pool"], 1u);
  vision::Encoder<TinyVision> plain(device(), w.table, {.tensor_units = false});
  EXPECT_THROW((void)plain.stage_times(), Error);
}

TEST(Encoder, CountsAbout5Point4TeraflopsForAn896Image) {
  const double tflop = double(vision::VisionEncoder::flops(kGemma3Siglip, 2560)) / 1e12;
  EXPECT_NEAR(tflop, 5.46, 0.02);
}

}  // namespace
}  // namespace unicorn
