// unicorn/io/hf_config.hpp — the text model of a Hugging Face Gemma 3 config.json.
//
// Two layouts exist in the wild and both are read:
//  (a) the official Gemma 3 releases: rope_theta (global layers),
//      rope_local_base_freq (sliding layers), rope_scaling {"rope_type": "linear",
//      "factor": 8.0} or null, and sliding_window_pattern N: layer i is global
//      iff (i + 1) % N == 0;
//  (b) newer transformers: layer_types ["sliding_attention", "full_attention", ...]
//      and rope_parameters, either keyed by layer type
//      ({"full_attention": {...}, "sliding_attention": {...}}) or flat.
// Multimodal checkpoints (Gemma3ForConditionalGeneration: 4B, 12B, 27B) nest the
// text model under "text_config" and omit fields that equal the defaults of
// transformers' Gemma3TextConfig, so those defaults apply to every missing key
// (e.g. the 4B text_config has no num_attention_heads: the default 8 is right).
// A JSON null counts as missing. The keys of ModelDims fields and those
// defaults come from the table in config/hparams.hpp.
#pragma once

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "unicorn/base/error.hpp"
#include "unicorn/base/linkage.hpp"
#include "unicorn/config/hparams.hpp"
#include "unicorn/io/json_file.hpp"

namespace unicorn::io {

struct HfTextConfig {
  std::vector<std::string> architectures;  // top level, e.g. {"Gemma3ForCausalLM"}
  std::string model_type;                   // of the text model: "gemma3_text"
  bool multimodal = false;                  // the text model sat under "text_config"

  uint32_t hidden_size = 0;
  uint32_t num_hidden_layers = 0;
  uint32_t num_attention_heads = 0;
  uint32_t num_key_value_heads = 0;
  uint32_t head_dim = 0;
  uint32_t intermediate_size = 0;
  uint32_t vocab_size = 0;
  uint64_t max_position_embeddings = 0;
  float rms_norm_eps = 0;
  uint32_t sliding_window = 0;
  float query_pre_attn_scalar = 0;  // attention scores are scaled by its -1/2 power

  float rope_theta_global = 0;               // full-attention layers
  float rope_theta_local = 0;                // sliding-window layers
  float rope_scaling_factor_global = 1.0f;   // linear position scaling; 1 = none

  std::string hidden_activation;  // "gelu_pytorch_tanh" for every Gemma 3
  // Gemma 2 used these; Gemma 3 has none. Reported here, refused by
  // check_gemma3_supported().
  std::optional<float> final_logit_softcapping;
  std::optional<float> attn_logit_softcapping;

  std::vector<bool> layer_is_sliding;  // one per layer; false = global attention
  bool tie_word_embeddings = true;

  // Only when the file states them (text model first, then the top level).
  std::optional<int64_t> bos_token_id;
  std::vector<int64_t> eos_token_ids;  // a single id or a list in the file
  std::optional<int64_t> pad_token_id;
};

namespace detail {

inline constexpr uint32_t kHfMaxLayers = 1024;  // caps allocation on absurd configs

// Typed access to one JSON object; errors name the key with its path
// ("config.json: 'text_config.hidden_size' must be ...").
class HfFields {
 public:
  HfFields(const nlohmann::json& obj, std::string prefix, const std::string& source)
      : obj_(obj), prefix_(std::move(prefix)), source_(source) {}

  const nlohmann::json& json() const { return obj_; }
  std::string key_name(std::string_view key) const { return prefix_ + std::string(key); }

  // nullptr when absent or null.
  const nlohmann::json* get(std::string_view key) const {
    const auto it = obj_.find(key);
    return it == obj_.end() || it->is_null() ? nullptr : &*it;
  }

  [[noreturn]] void fail(std::string_view key, const std::string& what) const {
    throw Error(source_ + ": '" + key_name(key) + "' " + what);
  }

  std::optional<uint64_t> try_uint(std::string_view key, uint64_t max) const {
    const auto* v = get(key);
    if (v == nullptr) return std::nullopt;
    if (const auto u = json_to_u64(*v)) {
      if (*u <= max) return *u;
    } else if (v->is_number_float()) {
      // 4096.0 is 4096; exporters occasionally write integers as floats.
      const double d = v->get<double>();
      if (d >= 0 && d <= static_cast<double>(max) && std::floor(d) == d)
        return static_cast<uint64_t>(d);
    }
    fail(key, "must be an integer in [0, " + std::to_string(max) + "], got " + describe(*v));
  }
  uint32_t u32(std::string_view key, uint32_t fallback) const {
    return static_cast<uint32_t>(try_uint(key, UINT32_MAX).value_or(fallback));
  }
  // A ModelDims field by its row of kHparams: its key, or transformers' default.
  uint32_t u32(const Hparam& h) const { return u32(h.hf, static_cast<uint32_t>(h.hf_default)); }

  std::optional<int64_t> try_int(std::string_view key) const {
    const auto* v = get(key);
    if (v == nullptr) return std::nullopt;
    if (v->is_number_integer() &&
        (!v->is_number_unsigned() || v->get<uint64_t>() <= uint64_t{INT64_MAX}))
      return v->get<int64_t>();
    fail(key, "must be an integer, got " + describe(*v));
  }

  std::optional<double> try_number(std::string_view key) const {
    const auto* v = get(key);
    if (v == nullptr) return std::nullopt;
    if (!v->is_number()) fail(key, "must be a number, got " + describe(*v));
    return v->get<double>();
  }
  float f32(std::string_view key, double fallback) const {
    return static_cast<float>(try_number(key).value_or(fallback));
  }
  float f32(const Hparam& h) const { return f32(h.hf, h.hf_default); }

  std::optional<std::string> try_string(std::string_view key) const {
    const auto* v = get(key);
    if (v == nullptr) return std::nullopt;
    if (!v->is_string()) fail(key, "must be a string, got " + describe(*v));
    return v->get<std::string>();
  }

  std::optional<bool> try_bool(std::string_view key) const {
    const auto* v = get(key);
    if (v == nullptr) return std::nullopt;
    if (!v->is_boolean()) fail(key, "must be true or false, got " + describe(*v));
    return v->get<bool>();
  }

  // A nested object, or nullopt when absent/null.
  std::optional<HfFields> try_object(std::string_view key) const {
    const auto* v = get(key);
    if (v == nullptr) return std::nullopt;
    if (!v->is_object()) fail(key, "must be an object, got " + describe(*v));
    return HfFields(*v, key_name(key) + ".", source_);
  }

  // Short description of a value for messages; never dumps nested values.
  static std::string describe(const nlohmann::json& v) {
    if (v.is_string()) {
      const auto& s = v.get_ref<const std::string&>();
      return "\"" + (s.size() > 40 ? s.substr(0, 40) + "..." : s) + "\"";
    }
    if (v.is_primitive()) return v.dump();
    return std::string("an ") + v.type_name();
  }

 private:
  const nlohmann::json& obj_;
  std::string prefix_;
  const std::string& source_;
};

struct RopeParams {
  double theta;
  double factor;  // 1 for "default"
};

// One rope parameter set: {"rope_type" | "type": "default" | "linear", "factor", "rope_theta"}.
// Only linear scaling exists in Gemma 3; anything else is refused by name.
RopeParams read_rope(const HfFields& f, double default_theta, bool allow_scaling);

void read_rope_config(const HfFields& text, HfTextConfig& c);

void read_layer_kinds(const HfFields& text, HfTextConfig& c);

std::vector<int64_t> read_eos(const HfFields& f);

}  // namespace detail

// Parses a config.json already loaded; `source` names it in error messages.
// (A separate name: nlohmann::json and std::filesystem::path both convert from
// a string literal, so one overloaded name would make parse_hf_config("x") ambiguous.)
HfTextConfig parse_hf_config_json(const nlohmann::json& root,
                                  const std::string& source = "config.json");

HfTextConfig parse_hf_config(const std::filesystem::path& config_json);

// Throws unicorn::Error when the config uses what Gemma 3 does not: logit
// soft-capping (a Gemma 2 feature) or an activation other than tanh-approximated GELU.
void check_gemma3_supported(const HfTextConfig& c, const std::string& source = "config.json");

}  // namespace unicorn::io

// The code of what is declared above: here when header-only, else compiled
// once, in unicorn/separate_compilation.hpp's translation unit (base/linkage.hpp).
#if UNICORN_DEFINE_HERE

namespace unicorn::io::detail {

UNICORN_DECL RopeParams read_rope(const HfFields& f, double default_theta, bool allow_scaling) {
  RopeParams p{default_theta, 1.0};
  if (auto t = f.try_number("rope_theta")) p.theta = *t;
  std::string type = "default";
  std::string_view type_key = "rope_type";
  if (auto t = f.try_string("rope_type")) {
    type = *t;
  } else if (auto t2 = f.try_string("type")) {
    type = *t2;
    type_key = "type";
  }
  if (type == "linear") {
    const auto factor = f.try_number("factor");
    if (!factor) f.fail("factor", "is missing (linear rope scaling needs a factor)");
    if (!(*factor > 0)) f.fail("factor", "must be positive");
    p.factor = *factor;
    if (!allow_scaling && p.factor != 1.0)
      f.fail(type_key, "is linear with factor " + std::to_string(p.factor) +
                           "; Gemma 3 scales only the global (full-attention) layers");
  } else if (type != "default") {
    f.fail(type_key, "is '" + type + "'; this engine supports only 'linear' rope scaling (or none)");
  }
  return p;
}

UNICORN_DECL void read_rope_config(const HfFields& text, HfTextConfig& c) {
  constexpr const Hparam& kGlobalTheta = hparam("rope_theta_global");
  constexpr const Hparam& kLocalTheta = hparam("rope_theta_local");
  const double flat_global_theta = text.try_number(kGlobalTheta.hf).value_or(kGlobalTheta.hf_default);
  const double flat_local_theta = text.try_number(kLocalTheta.hf).value_or(kLocalTheta.hf_default);
  RopeParams global{flat_global_theta, 1.0};
  RopeParams local{flat_local_theta, 1.0};

  if (const auto rp = text.try_object("rope_parameters")) {
    const auto full = rp->try_object("full_attention");
    const auto sliding = rp->try_object("sliding_attention");
    if (full || sliding) {  // layout (b), keyed by layer type
      if (full) global = read_rope(*full, flat_global_theta, true);
      if (sliding) local = read_rope(*sliding, flat_local_theta, false);
    } else {  // flat rope_parameters: the global layers' rope
      global = read_rope(*rp, flat_global_theta, true);
    }
  } else if (const auto rs = text.try_object("rope_scaling")) {  // layout (a)
    global = read_rope(*rs, flat_global_theta, true);
    global.theta = flat_global_theta;  // rope_scaling carries no theta in layout (a)
  }
  c.rope_theta_global = static_cast<float>(global.theta);
  c.rope_theta_local = static_cast<float>(local.theta);
  c.rope_scaling_factor_global = static_cast<float>(global.factor);
  if (!(global.theta > 0)) text.fail(kGlobalTheta.hf, "must be positive");
  if (!(local.theta > 0)) text.fail(kLocalTheta.hf, "must be positive");
}

UNICORN_DECL void read_layer_kinds(const HfFields& text, HfTextConfig& c) {
  const uint32_t n = c.num_hidden_layers;
  if (const auto* lt = text.get("layer_types")) {
    if (!lt->is_array() || lt->size() != n)
      text.fail("layer_types", "must be an array of " + std::to_string(n) +
                                   " entries (num_hidden_layers), got " +
                                   (lt->is_array() ? std::to_string(lt->size()) + " entries"
                                                   : HfFields::describe(*lt)));
    c.layer_is_sliding.reserve(n);
    for (uint32_t i = 0; i < n; ++i) {
      const auto& e = (*lt)[i];
      if (e == "sliding_attention")
        c.layer_is_sliding.push_back(true);
      else if (e == "full_attention")
        c.layer_is_sliding.push_back(false);
      else
        text.fail("layer_types", "entry " + std::to_string(i) + " is " + HfFields::describe(e) +
                                     ", expected \"sliding_attention\" or \"full_attention\"");
    }
    return;
  }
  // Newer transformers keep the pattern as "_sliding_window_pattern".
  std::string_view key = "sliding_window_pattern";
  auto pattern = text.try_uint(key, UINT32_MAX);
  if (!pattern) {
    key = "_sliding_window_pattern";
    pattern = text.try_uint(key, UINT32_MAX);
  }
  const uint64_t p = pattern.value_or(static_cast<uint64_t>(hparam("global_every").hf_default));
  if (p == 0) text.fail(key, "must be at least 1");
  c.layer_is_sliding.resize(n);
  for (uint32_t i = 0; i < n; ++i) c.layer_is_sliding[i] = (i + 1) % p != 0;
}

UNICORN_DECL std::vector<int64_t> read_eos(const HfFields& f) {
  const auto* v = f.get("eos_token_id");
  if (v == nullptr) return {};
  if (!v->is_array()) return {*f.try_int("eos_token_id")};
  std::vector<int64_t> ids;
  for (const auto& e : *v) {
    if (!e.is_number_integer()) f.fail("eos_token_id", "must be an integer or a list of integers");
    ids.push_back(e.get<int64_t>());
  }
  return ids;
}

}  // namespace unicorn::io::detail

namespace unicorn::io {

UNICORN_DECL HfTextConfig parse_hf_config_json(const nlohmann::json& root,
                                               const std::string& source) {
  if (!root.is_object()) throw Error(source + ": not a JSON object");
  const detail::HfFields top(root, "", source);
  HfTextConfig c;

  const auto text_obj = top.try_object("text_config");
  const detail::HfFields& text = text_obj ? *text_obj : top;
  c.multimodal = text_obj.has_value();

  if (const auto* a = top.get("architectures")) {
    if (!a->is_array()) top.fail("architectures", "must be a list of strings");
    for (const auto& e : *a) {
      if (!e.is_string()) top.fail("architectures", "must be a list of strings");
      c.architectures.push_back(e.get<std::string>());
    }
  }

  // The text model's type; a multimodal top level says "gemma3".
  const auto text_type = text.try_string("model_type");
  const auto top_type = top.try_string("model_type");
  c.model_type = text_type.value_or(c.multimodal ? "gemma3_text" : top_type.value_or("gemma3_text"));
  for (const auto& [t, f] : {std::pair{text_type, &text}, std::pair{top_type, &top}})
    if (t && *t != "gemma3_text" && *t != "gemma3")
      f->fail("model_type", "is '" + *t + "', not Gemma 3 (expected 'gemma3_text' or 'gemma3')");

  c.hidden_size = text.u32(hparam("hidden"));
  c.num_hidden_layers = text.u32(hparam("layers"));
  c.num_attention_heads = text.u32(hparam("heads"));
  c.num_key_value_heads = text.u32(hparam("kv_heads"));
  c.head_dim = text.u32(hparam("head_dim"));
  c.intermediate_size = text.u32(hparam("ffn"));
  c.vocab_size = text.u32(hparam("vocab"));
  constexpr const Hparam& kMaxContext = hparam("max_context");
  c.max_position_embeddings =
      text.try_uint(kMaxContext.hf, UINT64_MAX).value_or(static_cast<uint64_t>(kMaxContext.hf_default));
  c.rms_norm_eps = text.f32(hparam("rms_eps"));
  c.sliding_window = text.u32(hparam("sliding_window"));
  c.query_pre_attn_scalar = text.f32(hparam("query_pre_attn_scalar"));

  for (const auto& [key, value] :
       {std::pair<std::string_view, uint64_t>{hf_key("hidden"), c.hidden_size},
        {hf_key("layers"), c.num_hidden_layers},
        {hf_key("heads"), c.num_attention_heads},
        {hf_key("kv_heads"), c.num_key_value_heads},
        {hf_key("head_dim"), c.head_dim},
        {hf_key("ffn"), c.intermediate_size},
        {hf_key("vocab"), c.vocab_size},
        {hf_key("sliding_window"), c.sliding_window}})
    if (value == 0) text.fail(key, "must be positive");
  if (c.num_hidden_layers > detail::kHfMaxLayers)
    text.fail(hf_key("layers"), "= " + std::to_string(c.num_hidden_layers) + " is absurd");
  if (c.num_attention_heads % c.num_key_value_heads != 0)
    text.fail(hf_key("kv_heads"), "= " + std::to_string(c.num_key_value_heads) + " does not divide " +
                                      std::string(hf_key("heads")) + " = " +
                                      std::to_string(c.num_attention_heads));
  if (!(c.rms_norm_eps > 0)) text.fail(hf_key("rms_eps"), "must be positive");
  if (!(c.query_pre_attn_scalar > 0)) text.fail(hf_key("query_pre_attn_scalar"), "must be positive");

  c.hidden_activation = text.try_string("hidden_activation")
                            .value_or(text.try_string("hidden_act")
                                          .value_or(std::string(kHfHiddenActivation)));
  if (auto v = text.try_number("final_logit_softcapping")) c.final_logit_softcapping = static_cast<float>(*v);
  if (auto v = text.try_number("attn_logit_softcapping")) c.attn_logit_softcapping = static_cast<float>(*v);

  detail::read_layer_kinds(text, c);
  detail::read_rope_config(text, c);

  // Ids and tying may sit in the text model or at the multimodal top level.
  c.tie_word_embeddings = text.try_bool("tie_word_embeddings")
                              .value_or(top.try_bool("tie_word_embeddings").value_or(true));
  const auto id = [&](std::string_view key) {
    auto v = text.try_int(key);
    return v ? v : top.try_int(key);
  };
  c.bos_token_id = id("bos_token_id");
  c.pad_token_id = id("pad_token_id");
  c.eos_token_ids = detail::read_eos(text);
  if (c.eos_token_ids.empty() && c.multimodal) c.eos_token_ids = detail::read_eos(top);
  return c;
}

UNICORN_DECL HfTextConfig parse_hf_config(const std::filesystem::path& config_json) {
  return parse_hf_config_json(read_json_file(config_json), config_json.string());
}

UNICORN_DECL void check_gemma3_supported(const HfTextConfig& c, const std::string& source) {
  if (c.final_logit_softcapping)
    throw Error(source + ": final_logit_softcapping = " + std::to_string(*c.final_logit_softcapping) +
                " is set; Gemma 3 has no logit soft-capping (a Gemma 2 config?)");
  if (c.attn_logit_softcapping)
    throw Error(source + ": attn_logit_softcapping = " + std::to_string(*c.attn_logit_softcapping) +
                " is set; Gemma 3 has no attention soft-capping (a Gemma 2 config?)");
  if (c.hidden_activation != kHfHiddenActivation)
    throw Error(source + ": hidden_activation '" + c.hidden_activation + "' is not supported (Gemma 3 uses " +
                std::string(kHfHiddenActivation) + ")");
}

}  // namespace unicorn::io

#endif  // UNICORN_DEFINE_HERE
