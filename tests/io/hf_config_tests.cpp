// config.json for Gemma 3: the official layout, the newer transformers layout,
// multimodal text_config nesting with transformers' defaults, and bad input.
#include "unicorn/io/hf_config.hpp"
#include "unicorn/model/from_hf.hpp"
#include "unicorn/model/to_hf.hpp"
#include "unicorn/model/vision_from_hf.hpp"

#include <boost/hana/accessors.hpp>
#include <boost/hana/for_each.hpp>

#include "io_test_util.hpp"

namespace unicorn::io {
namespace {

using nlohmann::json;
using test::expect_error;
using test::TempDir;

// google/gemma-3-1b-it's config.json (layout a).
const char* const kGemma3_1B = R"({
  "architectures": ["Gemma3ForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
  "attn_logit_softcapping": null, "bos_token_id": 2, "cache_implementation": "hybrid",
  "eos_token_id": [1, 106], "final_logit_softcapping": null, "head_dim": 256,
  "hidden_activation": "gelu_pytorch_tanh", "hidden_size": 1152, "initializer_range": 0.02,
  "intermediate_size": 6912, "max_position_embeddings": 32768, "model_type": "gemma3_text",
  "num_attention_heads": 4, "num_hidden_layers": 26, "num_key_value_heads": 1, "pad_token_id": 0,
  "query_pre_attn_scalar": 256, "rms_norm_eps": 1e-06, "rope_local_base_freq": 10000,
  "rope_scaling": null, "rope_theta": 1000000, "sliding_window": 512, "sliding_window_pattern": 6,
  "torch_dtype": "bfloat16", "transformers_version": "4.50.0.dev0", "use_cache": true,
  "vocab_size": 262144})";

// google/gemma-3-4b-it's config.json, vision part shortened (layout a, nested).
const char* const kGemma3_4B = R"({
  "architectures": ["Gemma3ForConditionalGeneration"], "boi_token_index": 255999,
  "eoi_token_index": 256000, "eos_token_id": [1, 106], "image_token_index": 262144,
  "initializer_range": 0.02, "mm_tokens_per_image": 256, "model_type": "gemma3",
  "text_config": {
    "hidden_size": 2560, "intermediate_size": 10240, "model_type": "gemma3_text",
    "num_hidden_layers": 34, "rope_scaling": {"factor": 8.0, "rope_type": "linear"},
    "sliding_window": 1024
  },
  "torch_dtype": "bfloat16", "transformers_version": "4.50.0.dev0",
  "vision_config": {"hidden_size": 1152, "model_type": "siglip_vision_model"}})";

// A gemma-3-270m style config in the newer transformers layout (b).
json layout_b() {
  json c = {
      {"architectures", {"Gemma3ForCausalLM"}}, {"model_type", "gemma3_text"},
      {"hidden_size", 640}, {"intermediate_size", 2048}, {"num_hidden_layers", 18},
      {"num_attention_heads", 4}, {"num_key_value_heads", 1}, {"head_dim", 256},
      {"vocab_size", 262144}, {"max_position_embeddings", 32768}, {"rms_norm_eps", 1e-6},
      {"sliding_window", 512}, {"query_pre_attn_scalar", 256}, {"_sliding_window_pattern", 6},
      {"hidden_activation", "gelu_pytorch_tanh"}, {"tie_word_embeddings", true},
      {"rope_parameters",
       {{"full_attention", {{"rope_type", "linear"}, {"factor", 8.0}, {"rope_theta", 1000000.0}}},
        {"sliding_attention", {{"rope_type", "default"}, {"rope_theta", 10000.0}}}}}};
  json types = json::array();
  for (int i = 0; i < 18; ++i) types.push_back((i + 1) % 6 == 0 ? "full_attention" : "sliding_attention");
  types[2] = "full_attention";  // distinguishable from the pattern rule
  c["layer_types"] = types;
  return c;
}

std::vector<bool> pattern(uint32_t layers, uint32_t n) {
  std::vector<bool> v;
  for (uint32_t i = 0; i < layers; ++i) v.push_back((i + 1) % n != 0);
  return v;
}

TEST(HfConfig, OfficialTextOnlyLayout) {
  TempDir dir;
  test::write_file(dir / "config.json", kGemma3_1B);
  const HfTextConfig c = parse_hf_config(dir / "config.json");
  EXPECT_EQ(c.architectures, std::vector<std::string>{"Gemma3ForCausalLM"});
  EXPECT_EQ(c.model_type, "gemma3_text");
  EXPECT_FALSE(c.multimodal);
  EXPECT_EQ(c.hidden_size, 1152u);
  EXPECT_EQ(c.num_hidden_layers, 26u);
  EXPECT_EQ(c.num_attention_heads, 4u);
  EXPECT_EQ(c.num_key_value_heads, 1u);
  EXPECT_EQ(c.head_dim, 256u);
  EXPECT_EQ(c.intermediate_size, 6912u);
  EXPECT_EQ(c.vocab_size, 262144u);
  EXPECT_EQ(c.max_position_embeddings, 32768u);
  EXPECT_FLOAT_EQ(c.rms_norm_eps, 1e-6f);
  EXPECT_EQ(c.sliding_window, 512u);
  EXPECT_FLOAT_EQ(c.query_pre_attn_scalar, 256.0f);
  EXPECT_FLOAT_EQ(c.rope_theta_global, 1e6f);
  EXPECT_FLOAT_EQ(c.rope_theta_local, 1e4f);
  EXPECT_FLOAT_EQ(c.rope_scaling_factor_global, 1.0f);
  EXPECT_EQ(c.hidden_activation, "gelu_pytorch_tanh");
  EXPECT_EQ(c.final_logit_softcapping, std::nullopt);
  EXPECT_EQ(c.attn_logit_softcapping, std::nullopt);
  EXPECT_EQ(c.layer_is_sliding, pattern(26, 6));
  EXPECT_FALSE(c.layer_is_sliding[5]);
  EXPECT_TRUE(c.layer_is_sliding[6]);
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_EQ(c.bos_token_id, 2);
  EXPECT_EQ(c.pad_token_id, 0);
  EXPECT_EQ(c.eos_token_ids, (std::vector<int64_t>{1, 106}));
  EXPECT_NO_THROW(check_gemma3_supported(c));
}

TEST(HfConfig, MultimodalTextConfigTakesTransformersDefaults) {
  const HfTextConfig c = parse_hf_config_json(json::parse(kGemma3_4B));
  EXPECT_TRUE(c.multimodal);
  EXPECT_EQ(c.architectures, std::vector<std::string>{"Gemma3ForConditionalGeneration"});
  EXPECT_EQ(c.model_type, "gemma3_text");
  EXPECT_EQ(c.hidden_size, 2560u);
  EXPECT_EQ(c.num_hidden_layers, 34u);
  EXPECT_EQ(c.intermediate_size, 10240u);
  EXPECT_EQ(c.sliding_window, 1024u);
  // Omitted: Gemma3TextConfig's defaults.
  EXPECT_EQ(c.num_attention_heads, 8u);
  EXPECT_EQ(c.num_key_value_heads, 4u);
  EXPECT_EQ(c.head_dim, 256u);
  EXPECT_EQ(c.vocab_size, 262208u);
  EXPECT_EQ(c.max_position_embeddings, 131072u);
  EXPECT_FLOAT_EQ(c.query_pre_attn_scalar, 256.0f);
  EXPECT_FLOAT_EQ(c.rms_norm_eps, 1e-6f);
  EXPECT_FLOAT_EQ(c.rope_theta_global, 1e6f);
  EXPECT_FLOAT_EQ(c.rope_theta_local, 1e4f);
  EXPECT_FLOAT_EQ(c.rope_scaling_factor_global, 8.0f);
  EXPECT_EQ(c.hidden_activation, "gelu_pytorch_tanh");
  EXPECT_EQ(c.layer_is_sliding, pattern(34, 6));
  EXPECT_TRUE(c.tie_word_embeddings);
  // Ids only from the file: eos at the top level, bos/pad absent.
  EXPECT_EQ(c.eos_token_ids, (std::vector<int64_t>{1, 106}));
  EXPECT_EQ(c.bos_token_id, std::nullopt);
  EXPECT_EQ(c.pad_token_id, std::nullopt);
}

TEST(HfConfig, Gemma27BShape) {
  json j = json::parse(kGemma3_4B);
  j["text_config"] = {{"head_dim", 128}, {"hidden_size", 5376}, {"intermediate_size", 21504},
                      {"model_type", "gemma3_text"}, {"num_attention_heads", 32},
                      {"num_hidden_layers", 62}, {"num_key_value_heads", 16},
                      {"query_pre_attn_scalar", 168}, {"rope_scaling", {{"factor", 8.0}, {"rope_type", "linear"}}},
                      {"sliding_window", 1024}};
  const HfTextConfig c = parse_hf_config_json(j);
  EXPECT_EQ(c.num_hidden_layers, 62u);
  EXPECT_EQ(c.head_dim, 128u);
  EXPECT_FLOAT_EQ(c.query_pre_attn_scalar, 168.0f);
  ASSERT_EQ(c.layer_is_sliding.size(), 62u);
  EXPECT_EQ(std::count(c.layer_is_sliding.begin(), c.layer_is_sliding.end(), false), 10);  // 5, 11, ..., 59
  EXPECT_TRUE(c.layer_is_sliding[60] && c.layer_is_sliding[61]);  // 62 layers: not a multiple of 6
}

TEST(HfConfig, NewerLayoutWithLayerTypesAndRopeParameters) {
  const HfTextConfig c = parse_hf_config_json(layout_b());
  EXPECT_EQ(c.num_hidden_layers, 18u);
  ASSERT_EQ(c.layer_is_sliding.size(), 18u);
  EXPECT_FALSE(c.layer_is_sliding[2]);  // from layer_types, not the pattern
  EXPECT_FALSE(c.layer_is_sliding[5]);
  EXPECT_TRUE(c.layer_is_sliding[4]);
  EXPECT_FLOAT_EQ(c.rope_theta_global, 1e6f);
  EXPECT_FLOAT_EQ(c.rope_theta_local, 1e4f);
  EXPECT_FLOAT_EQ(c.rope_scaling_factor_global, 8.0f);
  EXPECT_EQ(c.eos_token_ids, std::vector<int64_t>{});

  // Without layer_types the private pattern key is used.
  json j = layout_b();
  j.erase("layer_types");
  j["_sliding_window_pattern"] = 3;
  EXPECT_EQ(parse_hf_config_json(j).layer_is_sliding, pattern(18, 3));

  // Flat rope_parameters describe the global layers; the local base comes from the flat key.
  j = layout_b();
  j["rope_parameters"] = {{"rope_type", "linear"}, {"factor", 4.0}, {"rope_theta", 500000.0}};
  j["rope_local_base_freq"] = 20000;
  HfTextConfig f = parse_hf_config_json(j);
  EXPECT_FLOAT_EQ(f.rope_theta_global, 5e5f);
  EXPECT_FLOAT_EQ(f.rope_scaling_factor_global, 4.0f);
  EXPECT_FLOAT_EQ(f.rope_theta_local, 2e4f);

  // Per-type entries without rope_theta fall back to the flat keys.
  j = layout_b();
  j["rope_parameters"] = {{"full_attention", {{"rope_type", "default"}}}};
  j["rope_theta"] = 2e6;
  f = parse_hf_config_json(j);
  EXPECT_FLOAT_EQ(f.rope_theta_global, 2e6f);
  EXPECT_FLOAT_EQ(f.rope_theta_local, 1e4f);
  EXPECT_FLOAT_EQ(f.rope_scaling_factor_global, 1.0f);
}

TEST(HfConfig, OldStyleRopeScalingTypeKey) {
  json j = json::parse(kGemma3_1B);
  j["rope_scaling"] = {{"type", "linear"}, {"factor", 2.0}};
  EXPECT_FLOAT_EQ(parse_hf_config_json(j).rope_scaling_factor_global, 2.0f);
}

TEST(HfConfig, UnsupportedRopeIsAnErrorNamingTheKey) {
  json j = json::parse(kGemma3_4B);
  j["text_config"]["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 8.0}};
  expect_error([&] { parse_hf_config_json(j); },
               "config.json: 'text_config.rope_scaling.rope_type' is 'yarn'; this engine supports only 'linear'");
  j["text_config"]["rope_scaling"] = {{"rope_type", "linear"}};
  expect_error([&] { parse_hf_config_json(j); }, "'text_config.rope_scaling.factor' is missing");
  j["text_config"]["rope_scaling"] = {{"rope_type", "linear"}, {"factor", -1}};
  expect_error([&] { parse_hf_config_json(j); }, "'text_config.rope_scaling.factor' must be positive");

  json b = layout_b();
  b["rope_parameters"]["full_attention"]["rope_type"] = "llama3";
  expect_error([&] { parse_hf_config_json(b, "m/config.json"); },
               "m/config.json: 'rope_parameters.full_attention.rope_type' is 'llama3'");
  b = layout_b();
  b["rope_parameters"]["sliding_attention"] = {{"rope_type", "linear"}, {"factor", 8.0}};
  expect_error([&] { parse_hf_config_json(b); }, "scales only the global (full-attention) layers");
}

TEST(HfConfig, BadValuesNameTheKey) {
  const auto with = [](const char* key, json value) {
    json j = json::parse(kGemma3_1B);
    j[key] = std::move(value);
    return j;
  };
  expect_error([&] { parse_hf_config_json(with("hidden_size", "big")); },
               "config.json: 'hidden_size' must be an integer in [0, 4294967295], got \"big\"");
  expect_error([&] { parse_hf_config_json(with("hidden_size", -5)); }, "'hidden_size' must be an integer");
  expect_error([&] { parse_hf_config_json(with("hidden_size", 1.5)); }, "'hidden_size' must be an integer");
  expect_error([&] { parse_hf_config_json(with("hidden_size", 0)); }, "'hidden_size' must be positive");
  EXPECT_EQ(parse_hf_config_json(with("hidden_size", 1152.0)).hidden_size, 1152u);
  expect_error([&] { parse_hf_config_json(with("num_hidden_layers", 100000)); }, "'num_hidden_layers' = 100000 is absurd");
  expect_error([&] { parse_hf_config_json(with("num_key_value_heads", 3)); },
               "'num_key_value_heads' = 3 does not divide num_attention_heads = 4");
  expect_error([&] { parse_hf_config_json(with("rms_norm_eps", "x")); }, "'rms_norm_eps' must be a number");
  expect_error([&] { parse_hf_config_json(with("rope_theta", -1)); }, "'rope_theta' must be positive");
  expect_error([&] { parse_hf_config_json(with("sliding_window_pattern", 0)); }, "'sliding_window_pattern' must be at least 1");
  expect_error([&] { parse_hf_config_json(with("layer_types", json::array({"full_attention"}))); },
               "'layer_types' must be an array of 26 entries (num_hidden_layers), got 1 entries");
  json types = json::array();
  for (int i = 0; i < 26; ++i) types.push_back("sliding_attention");
  types[7] = "chunked_attention";
  expect_error([&] { parse_hf_config_json(with("layer_types", types)); },
               "'layer_types' entry 7 is \"chunked_attention\"");
  expect_error([&] { parse_hf_config_json(with("model_type", "gemma2")); },
               "'model_type' is 'gemma2', not Gemma 3");
  expect_error([&] { parse_hf_config_json(with("rope_scaling", 8)); }, "'rope_scaling' must be an object, got 8");
  expect_error([&] { parse_hf_config_json(with("text_config", json::array())); }, "'text_config' must be an object");
  expect_error([&] { parse_hf_config_json(with("eos_token_id", json::array({1, "x"}))); }, "'eos_token_id' must be an integer");
  expect_error([&] { parse_hf_config_json(with("tie_word_embeddings", 1)); }, "'tie_word_embeddings' must be true or false");
  expect_error([&] { parse_hf_config_json(json::array()); }, "config.json: not a JSON object");

  json nested = json::parse(kGemma3_4B);
  nested["text_config"]["hidden_size"] = "wide";
  expect_error([&] { parse_hf_config_json(nested); }, "'text_config.hidden_size' must be an integer");
}

// Values no Gemma 3 has are refused by name when they become dimensions
// (config/hparams.hpp's ranges), before any engine is compared with them.
TEST(HfConfig, ValuesOutsideEveryGemma3AreRefused) {
  const auto dims_with = [](const char* key, json value) {
    json j = json::parse(kGemma3_1B);
    j[key] = std::move(value);
    return dims_from_hf(parse_hf_config_json(j), ModelDims{}, "config.json");
  };
  expect_error([&] { dims_with("rms_norm_eps", 0.5); },
               "config.json: rms_norm_eps is 0.5; a Gemma 3 model's is a finite number from 1e-12 to 0.01");
  expect_error([&] { dims_with("rope_theta", 1e300); }, "config.json: rope_theta is inf; a Gemma 3 model's is a finite number");
  expect_error([&] { dims_with("max_position_embeddings", 1e9); }, "config.json: max_position_embeddings is 1000000000");
  EXPECT_EQ(dims_from_hf(parse_hf_config_json(json::parse(kGemma3_1B)), ModelDims{}, "config.json").rms_eps, 1e-6f);
}

TEST(HfConfig, SoftcappingIsReportedAndRefused) {
  json j = json::parse(kGemma3_1B);
  j["final_logit_softcapping"] = 30.0;
  j["attn_logit_softcapping"] = 50.0;
  const HfTextConfig c = parse_hf_config_json(j);
  EXPECT_EQ(c.final_logit_softcapping, 30.0f);
  EXPECT_EQ(c.attn_logit_softcapping, 50.0f);
  expect_error([&] { check_gemma3_supported(c); }, "final_logit_softcapping = 30");
  j["final_logit_softcapping"] = nullptr;
  expect_error([&] { check_gemma3_supported(parse_hf_config_json(j)); }, "attn_logit_softcapping = 50");
  j["attn_logit_softcapping"] = nullptr;
  j["hidden_activation"] = "relu";
  expect_error([&] { check_gemma3_supported(parse_hf_config_json(j)); }, "hidden_activation 'relu' is not supported");
}

TEST(HfConfig, FileErrors) {
  TempDir dir;
  expect_error([&] { parse_hf_config(dir / "config.json"); }, "config.json: no such file");
  test::write_file(dir / "config.json", "{\"hidden_size\": ");
  expect_error([&] { parse_hf_config(dir / "config.json"); }, "config.json: not valid JSON");
  test::write_file(dir / "config.json", "");
  expect_error([&] { parse_hf_config(dir / "config.json"); }, "not valid JSON");
}

// The scripts that build a model in transformers take its dimensions from
// `unicorn-convert --hf-config` (model/to_hf.hpp): each built-in ModelDims, read
// back in either of transformers' spellings, is itself, field by field.
TEST(HfConfig, EveryBuiltInModelReadsBackFromTheConfigItWrites) {
  for (const ModelDims* d : {&unicorn::kGemma3_270M, &unicorn::kGemma3_1B, &unicorn::kGemma3_4B, &kGemma3_12B,
                             &kGemma3_27B, &kGemma3Tiny, &kGemma3TinyK, &kGemma3TinyKFallback, &kGemma3Demo,
                             &kGemma3DemoDraft}) {
    const json written = hf_text_config(*d);
    json official = written;  // the released checkpoints' spelling only
    official.erase("layer_types");
    official.erase("rope_parameters");
    for (const json& j : {written, official}) {
      const ModelDims back = dims_from_hf(parse_hf_config_json(j), ModelDims{.name = d->name}, "config.json");
      boost::hana::for_each(boost::hana::accessors<ModelDims>(), [&](auto field) {
        EXPECT_EQ(boost::hana::second(field)(back), boost::hana::second(field)(*d))
            << d->name << ": " << boost::hana::to<const char*>(boost::hana::first(field));
      });
    }
  }
  // Spelt as Google's files spell them.
  const json one = hf_text_config(unicorn::kGemma3_1B);
  const json google = json::parse(kGemma3_1B);  // google/gemma-3-1b-it's, above
  for (const char* key :
       {"hidden_size", "num_hidden_layers", "rms_norm_eps", "rope_theta", "rope_local_base_freq", "rope_scaling",
        "sliding_window_pattern", "query_pre_attn_scalar", "max_position_embeddings", "vocab_size", "model_type",
        "architectures", "hidden_activation"})
    EXPECT_EQ(one[key], google[key]) << key;
  EXPECT_EQ(one.dump().find("e-07"), std::string::npos) << "floats as their shortest decimals";
  // An image encoder beside them reads back as itself (model/vision_from_hf.hpp).
  for (const auto& [text, vision] :
       {std::pair{&kGemma3Tiny, &kGemma3SiglipTiny}, std::pair{&unicorn::kGemma3_4B, &kGemma3Siglip}}) {
    json config = hf_text_config(*text);
    add_hf_vision_config(config, *vision);
    const VisionWeights back = vision_dims_from_hf_config(config, "config.json");
    boost::hana::for_each(boost::hana::accessors<VisionDims>(), [&](auto field) {
      if (std::string_view(boost::hana::to<const char*>(boost::hana::first(field))) == "name") return;
      EXPECT_EQ(boost::hana::second(field)(back.dims), boost::hana::second(field)(*vision))
          << vision->name << ": " << boost::hana::to<const char*>(boost::hana::first(field));
    });
    EXPECT_EQ(back.projection_dim, text->hidden);
    EXPECT_EQ(dims_from_hf(parse_hf_config_json(config), ModelDims{.name = text->name}, "config.json").hidden,
              text->hidden)
        << "the text model's keys still read as they did";
  }
}

}  // namespace
}  // namespace unicorn::io
