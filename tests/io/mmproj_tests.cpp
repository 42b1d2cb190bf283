// Gemma 3's image encoder in the files people hold: unicorn-convert --mmproj
// writes tests/vision/fixtures/tiny (a Hugging Face Gemma3ForConditionalGeneration
// with random fp32 weights) as llama.cpp's mmproj GGUF; the reader gives back
// its VisionDims and every tensor, compared here with the safetensors values
// (F32, F16 and Q8_0 files); the Hugging Face directory read directly gives the
// same description; a file that does not fit the text model or the compiled
// encoder is refused naming the mismatch.
//
// Environment (set by ctest): UNICORN_CONVERT (the binary), UNICORN_VISION_TINY_HF
// (tests/vision/fixtures/tiny).
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "io_test_util.hpp"
#include "unicorn/io/gguf.hpp"
#include "unicorn/io/gguf_writer.hpp"
#include "unicorn/io/safetensors.hpp"
#include "unicorn/layout/vision_budget.hpp"
#include "unicorn/model/vision_from_hf.hpp"
#include "unicorn/model/vision_from_mmproj.hpp"

namespace {

namespace fs = std::filesystem;
using unicorn::Error;
using unicorn::Format;
using unicorn::VisionWeights;
using unicorn::io::GgufFile;
using unicorn::io::GgufWriter;
using unicorn::io::SafetensorsModel;
using unicorn::io::test::expect_error;
using unicorn::io::test::TempDir;

std::string env(const char* name) {
  const char* v = std::getenv(name);
  if (!v) throw std::runtime_error(std::string(name) + " is not set (run through ctest)");
  return v;
}
fs::path tiny_hf() { return env("UNICORN_VISION_TINY_HF"); }

struct ConvertRun {
  int code;
  std::string out;
};
ConvertRun convert(const std::string& args) {
  const std::string cmd = env("UNICORN_CONVERT") + " " + args + " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) throw std::runtime_error("popen failed: " + cmd);
  std::string out;
  std::array<char, 4096> buf;
  for (size_t n; (n = std::fread(buf.data(), 1, buf.size(), p)) > 0;) out.append(buf.data(), n);
  const int status = ::pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}
std::string q(const fs::path& p) { return "'" + p.string() + "'"; }

// The tiny model's mmproj, written once per format for the whole program.
const fs::path& mmproj(const std::string& type) {
  static TempDir dir("mmproj-tests");
  static std::map<std::string, fs::path> made;
  if (!made.count(type)) {
    const fs::path out = dir / ("tiny-" + type + ".gguf");
    const ConvertRun r = convert("--hf " + q(tiny_hf()) + " --mmproj " + q(out) + " --mmproj-type " + type);
    EXPECT_EQ(r.code, 0) << r.out;
    made[type] = out;
  }
  return made[type];
}

// llama.cpp's name of every HF tensor of the tiny encoder, written out by hand
// (independent of io/vision_tensor_names.hpp).
std::map<std::string, std::string> tiny_names() {
  std::map<std::string, std::string> m = {
      {"v.patch_embd.weight", "vision_tower.embeddings.patch_embedding.weight"},
      {"v.patch_embd.bias", "vision_tower.embeddings.patch_embedding.bias"},
      {"v.position_embd.weight", "vision_tower.embeddings.position_embedding.weight"},
      {"v.post_ln.weight", "vision_tower.post_layernorm.weight"},
      {"v.post_ln.bias", "vision_tower.post_layernorm.bias"},
      {"mm.input_projection.weight", "multi_modal_projector.mm_input_projection_weight"},
      {"mm.soft_emb_norm.weight", "multi_modal_projector.mm_soft_emb_norm.weight"},
  };
  const std::pair<const char*, const char*> layer[] = {
      {"ln1", "layer_norm1"},           {"ln2", "layer_norm2"},           {"attn_q", "self_attn.q_proj"},
      {"attn_k", "self_attn.k_proj"},   {"attn_v", "self_attn.v_proj"},   {"attn_out", "self_attn.out_proj"},
      {"ffn_up", "mlp.fc1"},            {"ffn_down", "mlp.fc2"}};
  for (int l = 0; l < 2; ++l)
    for (const auto& [g, h] : layer)
      for (const char* end : {".weight", ".bias"})
        m["v.blk." + std::to_string(l) + "." + g + end] =
            "vision_tower.encoder.layers." + std::to_string(l) + "." + h + end;
  return m;
}

std::vector<float> f32_values(const unicorn::io::SafeTensor& t) {
  std::vector<float> x(t.data.size() / 4);
  std::memcpy(x.data(), t.data.data(), t.data.size());
  return x;
}

// A tensor's values from its bytes: F32, F16 or Q8_0 (blocks of an f16 scale and 32 int8).
std::vector<float> values(Format f, std::span<const std::byte> data, uint64_t n) {
  std::vector<float> x(n);
  const auto* p = reinterpret_cast<const uint8_t*>(data.data());
  const auto f16 = [&](uint64_t at) {
    _Float16 h;
    std::memcpy(&h, p + at, 2);
    return float(h);
  };
  for (uint64_t i = 0; i < n; ++i) {
    if (f == Format::F32) std::memcpy(&x[i], p + 4 * i, 4);
    else if (f == Format::F16) x[i] = f16(2 * i);
    else if (f == Format::Q8_0) x[i] = f16(34 * (i / 32)) * float(int8_t(p[34 * (i / 32) + 2 + i % 32]));
    else ADD_FAILURE() << "unexpected format " << unicorn::format_name(f);
  }
  return x;
}

// Every tensor of the file against the safetensors value it came from, within
// what its format keeps: exact in F32, half an f16 step in F16, half a Q8_0
// step (and its f16 scale's rounding).
void expect_matches_safetensors(const VisionWeights& w, Format matrices) {
  const auto st = SafetensorsModel::open(tiny_hf());
  const auto names = tiny_names();
  ASSERT_EQ(w.tensors.size(), names.size());
  for (const auto& t : w.tensors) {
    SCOPED_TRACE(t.name);
    ASSERT_TRUE(names.count(t.name));
    const auto* hf = st.find(names.at(t.name));
    ASSERT_NE(hf, nullptr);
    std::vector<uint64_t> reversed(hf->shape.rbegin(), hf->shape.rend());
    EXPECT_EQ(t.dims, reversed);
    const bool matrix = t.kind == unicorn::VisionTensorKind::Matrix;
    const Format want = !matrix ? Format::F32 : t.name == "mm.input_projection.weight" ? Format::F16 : matrices;
    EXPECT_EQ(t.format, want) << unicorn::format_name(t.format);
    std::vector<float> expected = f32_values(*hf);
    if (t.name == "mm.soft_emb_norm.weight")  // llama.cpp stores 1 + w
      for (float& v : expected) v += 1.0f;
    const std::vector<float> got = values(t.format, t.data, expected.size());
    double worst = 0;
    size_t at = 0;
    for (size_t i = 0; i < expected.size(); ++i) {
      double tol = 0;
      if (t.format == Format::F16) tol = std::ldexp(std::fabs(expected[i]), -11) + 1e-7;
      if (t.format == Format::Q8_0) {
        float amax = 0;
        for (size_t j = i / 32 * 32; j < i / 32 * 32 + 32; ++j) amax = std::max(amax, std::fabs(expected[j]));
        // Half a step of the block's scale d = amax / 127, plus the scale's own
        // f16 rounding times the quant (at most 127 d 2^-11 = amax 2^-11).
        tol = amax / 127 * 0.5 + std::ldexp(amax, -11) + 1e-7;
      }
      const double excess = std::fabs(double(got[i]) - expected[i]) - tol;
      if (excess > worst) worst = excess, at = i;
    }
    EXPECT_LE(worst, 0.0) << "value " << at << " is " << got[at] << " in " << unicorn::format_name(t.format)
                          << ", " << expected[at] << " in the safetensors: more than its format keeps";
  }
}

TEST(Mmproj, F32FileHoldsTheTinyEncoderAsTheSafetensorsDo) {
  const GgufFile g = GgufFile::open(mmproj("F32"));
  const VisionWeights w = unicorn::vision_from_mmproj(g);
  EXPECT_EQ(w.dims.name, unicorn::kGemma3SiglipTiny.name);
  unicorn::check_vision_fits(w, unicorn::kGemma3SiglipTiny);
  unicorn::check_vision_fits_text(w, unicorn::kGemma3Tiny);
  EXPECT_EQ(w.projection_dim, 96u);
  EXPECT_TRUE(w.soft_norm_stores_one_plus_w);
  expect_matches_safetensors(w, Format::F32);
}

TEST(Mmproj, F16AndQ8_0FilesHoldItWithinTheirFormatsSteps) {
  expect_matches_safetensors(unicorn::vision_from_mmproj(GgufFile::open(mmproj("F16"))), Format::F16);
  expect_matches_safetensors(unicorn::vision_from_mmproj(GgufFile::open(mmproj("Q8_0"))), Format::Q8_0);
}

// The keys llama.cpp's clip loader reads (tools/mtmd/clip.cpp, load_hparams),
// spelt out, with the values of the tiny encoder; the pooling factor written
// because it is not 4 (16 patches per side into 4 tokens per side is 4: absent).
TEST(Mmproj, CarriesTheKeysLlamaCppsClipLoaderReads) {
  const GgufFile g = GgufFile::open(mmproj("F16"));
  EXPECT_EQ(g.get_string("general.architecture"), "clip");
  EXPECT_EQ(g.get_string("general.type"), "mmproj");
  EXPECT_EQ(g.get_u32("general.file_type"), 1u);
  EXPECT_TRUE(g.get_bool("clip.has_vision_encoder"));
  EXPECT_EQ(g.get_string("clip.projector_type"), "gemma3");
  EXPECT_TRUE(g.get_bool("clip.use_gelu"));
  EXPECT_EQ(g.get_u32("clip.vision.projection_dim"), 96u);
  EXPECT_EQ(g.get_u32("clip.vision.image_size"), 64u);
  EXPECT_EQ(g.get_u32("clip.vision.patch_size"), 4u);
  EXPECT_EQ(g.get_u32("clip.vision.embedding_length"), 64u);
  EXPECT_EQ(g.get_u32("clip.vision.feed_forward_length"), 128u);
  EXPECT_EQ(g.get_u32("clip.vision.block_count"), 2u);
  EXPECT_EQ(g.get_u32("clip.vision.attention.head_count"), 4u);
  EXPECT_FLOAT_EQ(g.get_f32("clip.vision.attention.layer_norm_epsilon"), 1e-6f);
  EXPECT_EQ(g.get_f32_array("clip.vision.image_mean"), std::vector<float>(3, 0.5f));
  EXPECT_EQ(g.get_f32_array("clip.vision.image_std"), std::vector<float>(3, 0.5f));
  EXPECT_EQ(g.find("clip.vision.projector.scale_factor"), nullptr);
  EXPECT_EQ(g.tensors().size(), 39u);
  // clip.cpp reads each with gguf_get_val_u32 / _f32 / _bool / _str, which
  // assert the exact type: a uint64 or a float64 would abort llama.cpp.
  using unicorn::io::GgufType;
  const std::pair<const char*, GgufType> types[] = {
      {"general.architecture", GgufType::String},        {"clip.projector_type", GgufType::String},
      {"clip.has_vision_encoder", GgufType::Bool},       {"clip.use_gelu", GgufType::Bool},
      {"clip.vision.projection_dim", GgufType::UInt32},  {"clip.vision.image_size", GgufType::UInt32},
      {"clip.vision.patch_size", GgufType::UInt32},      {"clip.vision.embedding_length", GgufType::UInt32},
      {"clip.vision.feed_forward_length", GgufType::UInt32}, {"clip.vision.block_count", GgufType::UInt32},
      {"clip.vision.attention.head_count", GgufType::UInt32},
      {"clip.vision.attention.layer_norm_epsilon", GgufType::Float32},
      {"clip.vision.image_mean", GgufType::Array},       {"clip.vision.image_std", GgufType::Array},
      {"general.file_type", GgufType::UInt32}};
  for (const auto& [key, type] : types) {
    ASSERT_NE(g.find(key), nullptr) << key;
    EXPECT_EQ(g.find(key)->type(), type) << key << " is " << g.find(key)->type_description();
  }
}

TEST(Mmproj, HuggingFaceDirectoryReadsAsTheSameEncoder) {
  const auto st = SafetensorsModel::open(tiny_hf());
  const VisionWeights hf = unicorn::vision_from_hf(tiny_hf(), st);
  const VisionWeights gg = unicorn::vision_from_mmproj(GgufFile::open(mmproj("F32")));
  unicorn::check_vision_fits(hf, unicorn::kGemma3SiglipTiny, /*gguf=*/false);
  EXPECT_EQ(hf.projection_dim, gg.projection_dim);
  EXPECT_FALSE(hf.soft_norm_stores_one_plus_w);
  ASSERT_EQ(hf.tensors.size(), gg.tensors.size());
  for (size_t i = 0; i < hf.tensors.size(); ++i) {
    EXPECT_EQ(hf.tensors[i].name, gg.tensors[i].name);
    EXPECT_EQ(hf.tensors[i].dims, gg.tensors[i].dims) << hf.tensors[i].name;
    EXPECT_EQ(hf.tensors[i].format, Format::F32);
    EXPECT_EQ(hf.tensors[i].data.data(), st.find(hf.tensors[i].file_name)->data.data()) << "not read in place";
  }
}

// A copy of the F32 file with one change: `edit` gets every key and tensor.
struct Edit {
  std::function<bool(const std::string& key, unicorn::io::GgufValue& value)> key;  // false drops it
  std::function<bool(std::string& name, uint32_t& type, std::vector<uint64_t>& dims,
                     std::span<const std::byte>& data)> tensor;
};
fs::path edited(const TempDir& dir, const Edit& e) {
  const GgufFile g = GgufFile::open(mmproj("F32"));
  GgufWriter w;
  for (const auto& kv : g.metadata()) {
    auto v = kv.value;
    if (!e.key || e.key(kv.key, v)) w.set(kv.key, v);
  }
  for (const auto& t : g.tensors()) {
    std::string name = t.name;
    uint32_t type = t.ggml_type;
    auto dims = t.dims;
    auto data = t.data;
    if (!e.tensor || e.tensor(name, type, dims, data)) w.add_tensor(name, type, dims, data);
  }
  const fs::path out = dir / "edited.gguf";
  w.write(out);
  return out;
}
std::string refusal(const fs::path& file, std::string_view needle) {
  return expect_error([&] { unicorn::vision_from_mmproj(GgufFile::open(file)); }, needle);
}

TEST(Mmproj, AFileOfAnotherModelIsRefusedNamingTheMismatch) {
  const TempDir dir("mmproj-refusals");
  const VisionWeights w = unicorn::vision_from_mmproj(GgufFile::open(mmproj("F32")));
  // The projector maps into the tiny model's 96, not the 4B's 2560.
  expect_error([&] { unicorn::check_vision_fits_text(w, unicorn::kGemma3_4B); },
               "the projector maps to 96 (clip.vision.projection_dim), but the text model gemma3-4b's hidden size is 2560");
  // An engine compiled for the official encoder.
  expect_error([&] { unicorn::check_vision_fits(w, unicorn::kGemma3Siglip); },
               "clip.vision.image_size gives image_size = 64, but this engine was compiled for gemma3-siglip with 896");
  refusal(edited(dir, {.key = [](const std::string& k, auto& v) {
                         if (k == "clip.projector_type") v = std::string("idefics3");
                         return true;
                       }}),
          "the projector type (clip.projector_type) is 'idefics3', not Gemma 3's 'gemma3'");
  refusal(edited(dir, {.key = [](const std::string& k, auto& v) {
                         if (k == "general.architecture") v = std::string("gemma3");
                         return true;
                       }}),
          "general.architecture is 'gemma3', not 'clip': not an mmproj file (a Gemma 3 text model");
  refusal(edited(dir, {.key = [](const std::string& k, auto& v) {
                         if (k == "clip.vision.image_std") v = unicorn::io::GgufArray{std::vector<float>{0.26f, 0.26f, 0.27f}};
                         return true;
                       }}),
          "clip.vision.image_std holds 0.260000");
  refusal(edited(dir, {.key = [](const std::string& k, auto&) { return k != "clip.use_gelu"; }}),
          "clip.use_gelu is not true");
  refusal(edited(dir, {.key = [](const std::string& k, auto& v) {
                         if (k == "clip.vision.patch_size") v = uint32_t{5};
                         return true;
                       }}),
          "the image size 64 is not a whole number of 5-pixel patches");
}

TEST(Mmproj, AMissingMisshapedOrUnsupportedTensorIsRefusedByName) {
  const TempDir dir("mmproj-refusals");
  refusal(edited(dir, {.tensor = [](std::string& n, auto&, auto&, auto&) { return n != "v.blk.1.attn_k.bias"; }}),
          "tensor 'v.blk.1.attn_k.bias' is missing");
  refusal(edited(dir, {.tensor = [](std::string& n, auto&, std::vector<uint64_t>& d, auto&) {
                         if (n == "v.blk.0.attn_q.weight") d = {128, 32};
                         return true;
                       }}),
          "tensor 'v.blk.0.attn_q.weight' has shape [128, 32] (ggml order); an encoder of hidden 64");
  refusal(edited(dir, {.tensor = [](std::string& n, auto&, std::vector<uint64_t>& d, auto&) {
                         if (n == "v.patch_embd.weight") d = {16, 3, 1, 64};  // the same bytes, another shape
                         return true;
                       }}),
          "tensor 'v.patch_embd.weight' has shape [16, 3, 1, 64] (ggml order); an encoder of hidden 64, feed-forward "
          "128, 256 patches of 4 pixels and projection 96 needs [4, 4, 3, 64]");
  // Q4_0 bytes of the right size: 64 x 64 values in blocks of 18 bytes per 32.
  static const std::vector<std::byte> q4(64 * 64 / 32 * 18);
  refusal(edited(dir, {.tensor = [](std::string& n, uint32_t& type, auto&, std::span<const std::byte>& data) {
                         if (n == "v.blk.0.attn_v.weight") type = uint32_t(Format::Q4_0), data = q4;
                         return true;
                       }}),
          "tensor 'v.blk.0.attn_v.weight' is Q4_0; the image encoder reads F32, F16, BF16 or Q8_0 there");
  static const std::vector<std::byte> q8(64 / 32 * 34);
  refusal(edited(dir, {.tensor = [](std::string& n, uint32_t& type, auto&, std::span<const std::byte>& data) {
                         if (n == "v.post_ln.bias") type = uint32_t(Format::Q8_0), data = q8;
                         return true;
                       }}),
          "tensor 'v.post_ln.bias' is Q8_0; the image encoder reads F32, F16, BF16 there");
  refusal(edited(dir, {.tensor = [](std::string& n, auto&, auto&, auto&) {
                         if (n == "v.blk.1.ln1.weight") n = "v.blk.2.ln1.weight";
                         return true;
                       }}),
          "tensor 'v.blk.2.ln1.weight' is no part of a Gemma 3 image encoder of 2 layers");
}

// llama.cpp's older Gemma 3 script wrote fc1 as ffn_down and fc2 as ffn_up;
// its loader, and this reader, put them back by their shapes.
TEST(Mmproj, TheOlderSwappedFeedForwardNamesAreReadByShape) {
  const TempDir dir("mmproj-legacy");
  const fs::path legacy = edited(dir, {.tensor = [](std::string& n, auto&, auto&, auto&) {
    if (n.find(".ffn_up.") != std::string::npos) n.replace(n.find(".ffn_up."), 8, ".ffn_down.");
    else if (n.find(".ffn_down.") != std::string::npos) n.replace(n.find(".ffn_down."), 10, ".ffn_up.");
    return true;
  }});
  const GgufFile g = GgufFile::open(legacy);
  const VisionWeights w = unicorn::vision_from_mmproj(g);
  const auto& up = w.tensor("v.blk.1.ffn_up.weight");
  EXPECT_EQ(up.dims, (std::vector<uint64_t>{64, 128}));
  EXPECT_EQ(up.file_name, "v.blk.1.ffn_down.weight");
  EXPECT_EQ(w.tensor("v.blk.1.ffn_up.bias").dims, (std::vector<uint64_t>{128}));
  expect_matches_safetensors(w, Format::F32);
}

// Every naming the checkpoints in the wild use: the official releases'
// (vision_tower.vision_model.), newer transformers' (model. before it) and
// transformers 5's files (no vision_model.), as the fixture's.
TEST(Mmproj, HuggingFaceNamesOfEveryLayoutMapToLlamaCppsNames) {
  using unicorn::io::hf_vision_to_gguf_name;
  EXPECT_EQ(hf_vision_to_gguf_name("vision_tower.vision_model.encoder.layers.26.mlp.fc2.bias"), "v.blk.26.ffn_down.bias");
  EXPECT_EQ(hf_vision_to_gguf_name("model.vision_tower.vision_model.post_layernorm.weight"), "v.post_ln.weight");
  EXPECT_EQ(hf_vision_to_gguf_name("model.vision_tower.encoder.layers.3.self_attn.out_proj.weight"),
            "v.blk.3.attn_out.weight");
  EXPECT_EQ(hf_vision_to_gguf_name("vision_tower.vision_model.embeddings.patch_embedding.weight"), "v.patch_embd.weight");
  EXPECT_EQ(hf_vision_to_gguf_name("model.multi_modal_projector.mm_input_projection_weight"), "mm.input_projection.weight");
  EXPECT_EQ(hf_vision_to_gguf_name("multi_modal_projector.mm_soft_emb_norm.weight"), "mm.soft_emb_norm.weight");
  EXPECT_EQ(hf_vision_to_gguf_name("vision_tower.vision_model.head.probe"), std::nullopt);  // SigLIP's pooling head
  expect_error([] { hf_vision_to_gguf_name("vision_tower.vision_model.encoder.layers.0.mlp.fc3.weight"); },
               "not a Gemma 3 (SigLIP) vision tower tensor");
  expect_error([] { hf_vision_to_gguf_name("multi_modal_projector.linear_1.weight"); }, "not a Gemma 3 projector tensor");
}

TEST(Mmproj, HuggingFaceConfigWithoutAnEncoderIsRefused) {
  nlohmann::json c = unicorn::io::read_json_file(tiny_hf() / "config.json");
  c.erase("vision_config");
  expect_error([&] { unicorn::vision_dims_from_hf_config(c, "config.json"); },
               "config.json: no 'vision_config': a text-only checkpoint has no image encoder");
  c = unicorn::io::read_json_file(tiny_hf() / "config.json");
  c["vision_config"]["hidden_act"] = "gelu";
  expect_error([&] { unicorn::vision_dims_from_hf_config(c, "config.json"); },
               "'vision_config.hidden_act' is 'gelu'");
  c = unicorn::io::read_json_file(tiny_hf() / "config.json");
  c["mm_tokens_per_image"] = 15;
  expect_error([&] { unicorn::vision_dims_from_hf_config(c, "config.json"); },
               "15 soft tokens per image are not a square grid");
  // The official release's config.json leaves the SigLIP defaults out: the
  // 4B's vision_config, as Google's file has it, is the official encoder.
  c = nlohmann::json::parse(R"({"architectures": ["Gemma3ForConditionalGeneration"], "model_type": "gemma3",
    "mm_tokens_per_image": 256, "text_config": {"hidden_size": 2560, "intermediate_size": 10240,
    "model_type": "gemma3_text", "num_hidden_layers": 34, "rope_scaling": {"factor": 8.0, "rope_type": "linear"},
    "sliding_window": 1024}, "vision_config": {"hidden_size": 1152, "image_size": 896, "intermediate_size": 4304,
    "model_type": "siglip_vision_model", "num_attention_heads": 16, "num_hidden_layers": 27, "patch_size": 14,
    "vision_use_head": false}})");
  const VisionWeights w = unicorn::vision_dims_from_hf_config(c, "config.json");
  unicorn::check_vision_fits(w, unicorn::kGemma3Siglip, /*gguf=*/false);
  EXPECT_EQ(w.projection_dim, 2560u);
}

TEST(Mmproj, ConvertWritesRandomEncodersAndRefusesWhatHasNone) {
  const TempDir dir("mmproj-random");
  const ConvertRun r = convert("--random gemma3-tiny --mmproj " + q(dir / "r.gguf") + " --mmproj-type Q8_0");
  ASSERT_EQ(r.code, 0) << r.out;
  const GgufFile g = GgufFile::open(dir / "r.gguf");
  const VisionWeights w = unicorn::vision_from_mmproj(g);
  unicorn::check_vision_fits(w, unicorn::kGemma3SiglipTiny);
  unicorn::check_vision_fits_text(w, unicorn::kGemma3Tiny);
  EXPECT_EQ(w.tensor("v.blk.0.attn_q.weight").format, Format::Q8_0);
  EXPECT_EQ(w.tensor("mm.input_projection.weight").format, Format::F16);
  for (float x : values(Format::F32, w.tensor("v.blk.0.ln1.weight").data, 64)) EXPECT_NEAR(x, 1.0f, 0.3f);

  ConvertRun bad = convert("--random gemma3-1b --mmproj " + q(dir / "x.gguf"));
  EXPECT_EQ(bad.code, 1);
  EXPECT_NE(bad.out.find("gemma3-1b has no image encoder"), std::string::npos) << bad.out;
  bad = convert("--random gemma3-tiny --mmproj " + q(dir / "x.gguf") + " --mmproj-type Q4_0");
  EXPECT_EQ(bad.code, 1);
  EXPECT_NE(bad.out.find("an mmproj's matrices are F32, F16, BF16 or Q8_0"), std::string::npos) << bad.out;
  bad = convert("--hf " + q(fs::path(env("UNICORN_VISION_TINY_HF")) / "nothing") + " --mmproj " + q(dir / "x.gguf"));
  EXPECT_EQ(bad.code, 1) << bad.out;
  EXPECT_FALSE(fs::exists(dir / "x.gguf"));
}

// The official shape, without writing its 850 MB: the tensors llama.cpp's
// converter writes for the 4B at F16 (1-D tensors and embeddings F32) are the
// size of Google's mmproj-model-f16 file, and the compile-time budget, which
// counts every tensor at F16, is within a few MB of them.
TEST(Mmproj, OfficialEncoderTensorsAreTheSizeOfLlamaCppsF16File) {
  uint64_t bytes = 0;
  for (const auto& s : unicorn::vision_tensor_specs(unicorn::kGemma3Siglip, unicorn::kGemma3_4B.hidden)) {
    uint64_t n = 1;
    for (uint64_t d : s.dims) n *= d;
    const bool f32 = s.kind != unicorn::VisionTensorKind::Matrix;
    bytes += n * (f32 ? 4 : 2);
  }
  EXPECT_EQ(unicorn::vision_tensor_specs(unicorn::kGemma3Siglip, 2560).size(), 3u + 27 * 16 + 4);
  EXPECT_NEAR(double(bytes), 851.2e6, 0.2e6);
  const auto c = unicorn::make_deployment(unicorn::kGemma3_4B, unicorn::schemes::kQ4_0_QAT, 8192)
                     .with_vision(unicorn::kGemma3Siglip);
  EXPECT_NEAR(double(unicorn::vision_budget(c).weights), double(bytes), 15e6);
}

}  // namespace
