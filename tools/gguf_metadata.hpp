// tools/gguf_metadata.hpp — what llama.cpp's converter writes into a Gemma 3
// GGUF besides tensors and hyperparameters: the general.* names, the
// vocabulary (tokenizer.ggml.*), the special token ids with add_bos/add_eos,
// and the chat template. unicorn-convert calls it; tests/io/convert_tests
// checks the result against the keys llama.cpp's loader reads.
//
// The vocabulary comes from the files convert_hf_to_gguf.py (Gemma3Model) and
// gguf-py's SpecialVocab read in a Hugging Face directory: tokenizer.json,
// tokenizer_config.json, chat_template.jinja or chat_template.json, and
// config.json for special ids the tokenizer files leave out. It is written as
// llama.cpp writes Gemma 3 (tokenizer.ggml.model "llama", a SentencePiece
// vocabulary), so llama.cpp and text::tokenizer_from_gguf read it.
//
// Scores. llama.cpp's converter copies them from tokenizer.model, which
// tokenizer.json does not carry; tokenizer.json has BPE merges instead. A
// SentencePiece BPE merges the adjacent pair whose concatenation scores
// highest, so a token here scores minus the rank of the first merge that
// makes it: the same merge order as tokenizer.json. Single code points and
// byte tokens, which no merge makes, score 0; longer tokens no merge makes
// score below every merge; added tokens no merge makes score -1000 and
// padding ids -1000, llama.cpp's values for those.
#pragma once

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "unicorn/base/error.hpp"
#include "unicorn/config/hparams.hpp"
#include "unicorn/io/gguf.hpp"
#include "unicorn/io/gguf_writer.hpp"
#include "unicorn/io/json_file.hpp"
#include "unicorn/text/tokenizer.hpp"

namespace unicorn::tools {

using TokenType = text::GgufTokenType;

// A vocabulary as tokenizer.ggml.* holds it, and the keys that go with it.
struct GgufVocab {
  std::vector<std::string> tokens;
  std::vector<float> scores;
  std::vector<int32_t> types;  // TokenType values
  // ("bos", 2), ("eos", 106), ... in gguf-py's order; written as
  // tokenizer.ggml.<kind>_token_id.
  std::vector<std::pair<std::string, uint32_t>> special_ids;
  std::optional<bool> add_bos, add_eos, add_sep;
  std::string chat_template;  // empty: none
  // Further templates of a tokenizer_config.json that lists several.
  std::vector<std::pair<std::string, std::string>> named_templates;
  std::string source;  // what it was read from, for the tool's report
};

// The steps of vocab_from_hf_json below, each as gguf-py takes it.
namespace hf_vocab {

// gguf-py's special token kinds, in its order, with llama.cpp's key names
// (src/llama-arch.cpp; "seperator" is spelled so there).
struct SpecialKind {
  std::string_view kind, key;
};
inline constexpr SpecialKind kSpecialKinds[] = {
    {"bos", "tokenizer.ggml.bos_token_id"},        {"eos", "tokenizer.ggml.eos_token_id"},
    {"unk", "tokenizer.ggml.unknown_token_id"},    {"sep", "tokenizer.ggml.seperator_token_id"},
    {"pad", "tokenizer.ggml.padding_token_id"},    {"cls", "tokenizer.ggml.cls_token_id"},
    {"mask", "tokenizer.ggml.mask_token_id"},
};

// Added tokens llama.cpp's converter types as control although a model marks
// them otherwise (does_token_look_special in convert_hf_to_gguf.py).
inline bool looks_special(std::string_view t) {
  return t == "<pad>" || t == "<mask>" || t == "<2mass>" || t == "[@BOS@]" ||
         (t.starts_with("<|") && t.ends_with("|>")) ||
         (t.starts_with("<\xEF\xBD\x9C") && t.ends_with("\xEF\xBD\x9C>")) ||  // <｜ … ｜>
         (t.starts_with("<unused") && t.ends_with(">"));
}

inline std::string read_text_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path.string() + ": cannot read");
  std::ostringstream s;
  s << in.rdbuf();
  if (in.bad()) throw Error(path.string() + ": read failed");
  return s.str();
}

// A JSON value that must be an object, with a message naming the file.
inline const nlohmann::json& object_at(const nlohmann::json& j, std::string_view key, const std::string& where) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_object())
    throw Error(where + ": \"" + std::string(key) + "\" is missing or not an object");
  return *it;
}

inline void set_special(GgufVocab& v, std::string_view kind, uint64_t id, size_t n_vocab) {
  if (id >= n_vocab) return;  // gguf-py skips ids past the vocabulary too
  for (const auto& [k, _] : v.special_ids)
    if (k == kind) return;  // the first source that names a kind wins
  v.special_ids.emplace_back(std::string(kind), static_cast<uint32_t>(id));
}

// add_bos/add_eos from tokenizer.json's TemplateProcessing post-processor, as
// gguf-py reads simple templates: a single-sequence template that starts with
// a special token adds bos when that token is the bos token (or none is
// named), and one that ends with a special token adds eos.
inline void add_flags_from_post_processor(GgufVocab& v, const nlohmann::json& tokenizer, const std::string& bos) {
  const auto pp = tokenizer.find("post_processor");
  if (pp == tokenizer.end() || !pp->is_object()) return;
  std::vector<const nlohmann::json*> processors{&*pp};
  if (const auto list = pp->find("processors"); list != pp->end() && list->is_array()) {
    processors.clear();
    for (const auto& p : *list) processors.push_back(&p);
  }
  const auto special_id = [](const nlohmann::json& item) -> std::string {
    if (!item.is_object()) return {};
    const auto s = item.find("SpecialToken");
    if (s == item.end() || !s->is_object()) return {};
    const auto id = s->find("id");
    return id != s->end() && id->is_string() ? id->get<std::string>() : std::string();
  };
  for (const nlohmann::json* p : processors) {
    if (!p->is_object() || p->value("type", nlohmann::json()) != "TemplateProcessing") continue;
    const auto single = p->find("single");
    if (single == p->end() || !single->is_array() || single->size() < 2) continue;
    const std::string first = special_id(single->front()), last = special_id(single->back());
    if (!first.empty()) v.add_bos = bos.empty() || first == bos;
    if (!last.empty()) v.add_eos = true;
  }
}

// The content of tokenizer_config.json's "<kind>_token": a string or {"content": ...}.
inline std::string token_content(const nlohmann::json& config, std::string_view kind) {
  const auto it = config.find(std::string(kind) + "_token");
  if (it == config.end()) return {};
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object()) {
    const auto c = it->find("content");
    if (c != it->end() && c->is_string()) return c->get<std::string>();
  }
  return {};
}

// The chat template(s): tokenizer_config.json's "chat_template" (a string, or
// a list of {"name", "template"}), else `fallback` (chat_template.jinja's text
// or chat_template.json's "chat_template") — gguf-py's order.
inline void set_chat_template(GgufVocab& v, const nlohmann::json* config, const nlohmann::json& fallback,
                              const std::string& where) {
  const nlohmann::json& tmpl = config && config->contains("chat_template") ? (*config)["chat_template"] : fallback;
  if (tmpl.is_null()) return;
  if (tmpl.is_string()) {
    v.chat_template = tmpl.get<std::string>();
    return;
  }
  if (!tmpl.is_array())
    throw Error(where + ": chat_template is " + std::string(tmpl.type_name()) +
                ", expected a string or a list of {\"name\", \"template\"}");
  for (const auto& t : tmpl) {
    if (!t.is_object() || !t.contains("name") || !t["name"].is_string() || !t.contains("template") ||
        !t["template"].is_string())
      throw Error(where + ": a chat_template entry is not {\"name\": string, \"template\": string}");
    const std::string name = t["name"], text = t["template"];
    if (name == "default") v.chat_template = text;
    else v.named_templates.emplace_back(name, text);
  }
}

}  // namespace hf_vocab

// The vocabulary of a Hugging Face tokenizer, for a model whose embedding has
// n_vocab rows, from the parsed files: tokenizer.json, and tokenizer_config.json,
// the model's config.json and the text of chat_template.jinja/.json (a JSON
// string, list or null) where there are such files. Every malformed input is a
// unicorn::Error naming `where` (tokenizer.json) or `config_where`
// (tokenizer_config.json); tests/fuzz/fuzz_tokenizer_json.cpp holds it to that.
// Ids past n_vocab are dropped when they are added tokens (Gemma 3's
// <image_soft_token>, 262144), as llama.cpp's converter drops them; a
// vocabulary token past n_vocab means the tokenizer is not the model's, an
// error. Ids below n_vocab that no token has become [PAD<id>].
// Special ids the tokenizer files leave out come from the model's config.json.
// add_bos/add_eos they leave out are Gemma 3's: bos added, eos not.
inline GgufVocab vocab_from_hf_json(const nlohmann::json& j, const nlohmann::json* config,
                                    const nlohmann::json* model_config, const nlohmann::json& fallback_template,
                                    uint32_t n_vocab, const std::string& where, const std::string& config_where) {
  if (!j.is_object()) throw Error(where + ": not a tokenizer.json (the top level is not an object)");
  const nlohmann::json& model = hf_vocab::object_at(j, "model", where);
  const nlohmann::json& vocab = hf_vocab::object_at(model, "vocab", where + ": model");
  if (model.contains("type") && model["type"] != "BPE")
    throw Error(where + ": model type " + model["type"].dump() +
                " is not BPE; Gemma 3's tokenizer.json is BPE with byte fallback");
  const auto merges_it = model.find("merges");
  if (merges_it == model.end() || !merges_it->is_array())
    throw Error(where + ": model.merges is missing or not a list");
  const auto added_it = j.find("added_tokens");
  if (added_it != j.end() && !added_it->is_array()) throw Error(where + ": added_tokens is not a list");
  const nlohmann::json no_added = nlohmann::json::array();
  const nlohmann::json& added = added_it == j.end() ? no_added : *added_it;

  const auto id_of = [&](const nlohmann::json& id, const std::string& text) -> uint64_t {
    const auto v = io::json_to_u64(id);
    if (!v) throw Error(where + ": token '" + text + "' has id " + id.dump() + ", not a non-negative integer");
    return *v;
  };

  GgufVocab v;
  v.source = where;
  const size_t n = n_vocab;
  std::vector<std::string> text(n);
  std::vector<bool> present(n, false), is_added(n, false), special(n, false);
  for (const auto& [t, id_json] : vocab.items()) {
    const uint64_t id = id_of(id_json, t);
    if (id >= n)
      throw Error(where + ": token '" + t + "' has id " + std::to_string(id) + " but the model's vocabulary has " +
                  std::to_string(n) + " tokens (its embedding rows): this tokenizer is not the model's");
    text[id] = t;
    present[id] = true;
  }
  for (const auto& a : added) {
    if (!a.is_object() || !a.contains("content") || !a["content"].is_string() || !a.contains("id"))
      throw Error(where + ": an added_tokens entry is not {\"id\": integer, \"content\": string, ...}");
    const std::string t = a["content"];
    const uint64_t id = id_of(a["id"], t);
    if (id >= n) continue;  // past the embedding: an image token, dropped as llama.cpp does
    text[id] = t;
    present[id] = true;
    is_added[id] = true;
    special[id] = a.contains("special") && a["special"].is_boolean() && a["special"].get<bool>();
  }

  // Scores from the merges: the first (lowest) rank that makes each token.
  std::unordered_map<std::string_view, uint32_t> first_rank;
  first_rank.reserve(merges_it->size());
  std::vector<std::string> merged;  // concatenations, kept alive for the views
  merged.reserve(merges_it->size());
  for (size_t r = 0; r < merges_it->size(); ++r) {
    const auto& m = (*merges_it)[r];
    std::string left, right;
    if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      left = m[0];
      right = m[1];
    } else if (m.is_string()) {
      const std::string s = m;
      const size_t sp = s.find(' ');
      if (sp == std::string::npos) throw Error(where + ": merge " + std::to_string(r) + " '" + s + "' has no space");
      left = s.substr(0, sp);
      right = s.substr(sp + 1);
    } else {
      throw Error(where + ": merge " + std::to_string(r) + " is neither [\"a\", \"b\"] nor \"a b\"");
    }
    merged.push_back(left + right);
  }
  for (size_t r = 0; r < merged.size(); ++r) first_rank.emplace(merged[r], static_cast<uint32_t>(r));
  const float below_every_merge = -static_cast<float>(merged.size()) - 1.0f;

  std::string unk;
  if (const auto u = model.find("unk_token"); u != model.end() && u->is_string()) unk = *u;
  v.tokens.resize(n);
  v.scores.resize(n);
  v.types.resize(n);
  for (size_t id = 0; id < n; ++id) {
    std::string& t = text[id];
    TokenType type = TokenType::kNormal;
    float score = 0.0f;
    if (!present[id]) {
      t = "[PAD" + std::to_string(id) + "]";
      type = TokenType::kUnused;
      score = -1000.0f;
    } else {
      const auto rank = first_rank.find(t);
      if (rank != first_rank.end()) score = -static_cast<float>(rank->second);
      if (is_added[id]) {
        if (special[id] || hf_vocab::looks_special(t)) {
          type = TokenType::kControl;
        } else {
          type = TokenType::kUserDefined;
          // llama.cpp's converter pre-normalizes spaces in user-defined tokens.
          t = text::replace_all(t, text::kSpaceMarker, " ");
        }
        if (rank == first_rank.end()) score = -1000.0f;
      } else if (!unk.empty() && t == unk) {
        type = TokenType::kUnknown;
      } else if (text::byte_token_value(t) >= 0) {
        type = TokenType::kByte;
      } else if (rank == first_rank.end() && text::utf8_length(static_cast<unsigned char>(t.empty() ? 0 : t[0])) <
                                                   static_cast<int>(t.size())) {
        score = below_every_merge;
      }
    }
    v.tokens[id] = std::move(t);
    v.scores[id] = score;
    v.types[id] = static_cast<int32_t>(type);
  }

  // Special ids and add_* flags: tokenizer.json's post-processor, then
  // tokenizer_config.json, then config.json for kinds still unknown.
  if (config && !config->is_object()) throw Error(config_where + ": the top level is not an object");
  hf_vocab::add_flags_from_post_processor(v, j, config ? hf_vocab::token_content(*config, "bos") : "");
  if (config) {
    for (const auto& [kind, key] : hf_vocab::kSpecialKinds) {
      const auto flag = config->find("add_" + std::string(kind) + "_token");
      if (flag != config->end() && flag->is_boolean()) {
        if (kind == "bos") v.add_bos = flag->get<bool>();
        if (kind == "eos") v.add_eos = flag->get<bool>();
        if (kind == "sep") v.add_sep = flag->get<bool>();
      }
      const std::string content = hf_vocab::token_content(*config, kind);
      if (content.empty()) continue;
      for (const auto& a : added)
        if (a["content"] == content) {
          hf_vocab::set_special(v, kind, id_of(a["id"], content), n);
          break;
        }
    }
  }
  hf_vocab::set_chat_template(v, config, fallback_template, config_where);
  if (!v.add_bos) v.add_bos = true;
  if (!v.add_eos) v.add_eos = false;
  if (model_config) {
    const nlohmann::json& c = *model_config;
    for (const auto& [kind, key] : hf_vocab::kSpecialKinds) {
      const std::string name = std::string(kind) + "_token_id";
      const nlohmann::json* id = c.is_object() && c.contains(name) ? &c[name] : nullptr;
      if (!id && c.is_object() && c.contains("text_config") && c["text_config"].is_object() &&
          c["text_config"].contains(name))
        id = &c["text_config"][name];
      if (id)
        if (const auto value = io::json_to_u64(*id)) hf_vocab::set_special(v, kind, *value, n);
    }
  }

  // tokenizer.json's model names the unknown token itself (llama.cpp's
  // SentencePiece default, 0, is Gemma's <pad>).
  if (!unk.empty())
    for (size_t id = 0; id < n; ++id)
      if (v.tokens[id] == unk) {
        hf_vocab::set_special(v, "unk", id, n);
        break;
      }

  // llama.cpp indexes tokens by text and aborts on a repeated one.
  std::unordered_map<std::string_view, size_t> seen;
  seen.reserve(n);
  for (size_t id = 0; id < n; ++id) {
    const auto [it, fresh] = seen.emplace(v.tokens[id], id);
    if (!fresh)
      throw Error(where + ": tokens " + std::to_string(it->second) + " and " + std::to_string(id) +
                  " are both '" + v.tokens[id] + "'; llama.cpp needs every token text once");
  }
  return v;
}

// The same from files: `source` is a tokenizer.json or a directory holding
// one; tokenizer_config.json and chat_template.jinja/.json beside it, and
// config.json in model_dir (default: beside it too), are read when present.
inline GgufVocab vocab_from_hf_tokenizer(const std::filesystem::path& source, uint32_t n_vocab,
                                         const std::filesystem::path& model_dir = {}) {
  namespace fs = std::filesystem;
  const fs::path file = fs::is_directory(source) ? source / "tokenizer.json" : source;
  const fs::path dir = file.parent_path().empty() ? fs::path(".") : file.parent_path();
  const auto optional_json = [](const fs::path& p) {
    return fs::is_regular_file(p) ? std::optional<nlohmann::json>(io::read_json_file(p)) : std::nullopt;
  };
  const auto config = optional_json(dir / "tokenizer_config.json");
  const auto model_config = optional_json((model_dir.empty() ? dir : model_dir) / "config.json");
  nlohmann::json fallback_template;
  if (fs::is_regular_file(dir / "chat_template.jinja")) {
    fallback_template = hf_vocab::read_text_file(dir / "chat_template.jinja");
  } else if (const auto t = optional_json(dir / "chat_template.json")) {
    if (!t->is_object() || !t->contains("chat_template"))
      throw Error((dir / "chat_template.json").string() + ": expected an object with \"chat_template\"");
    fallback_template = (*t)["chat_template"];
  }
  return vocab_from_hf_json(io::read_json_file(file), config ? &*config : nullptr,
                            model_config ? &*model_config : nullptr, fallback_template, n_vocab, file.string(),
                            (dir / "tokenizer_config.json").string());
}

// A vocabulary of n_vocab tokens for files whose model has no tokenizer of its
// size (random weights of a small config): Gemma's special and turn tokens
// (<pad> 0, <eos> 1, <bos> 2, <unk> 3, <start_of_turn>, <end_of_turn>), the 256
// byte tokens, "▁" and printable ASCII, then [PAD<id>]. Any text tokenizes
// (bytes fall back), and chat markers are single ids.
inline GgufVocab dummy_vocab(uint32_t n_vocab) {
  GgufVocab v;
  v.source = "a dummy vocabulary of " + std::to_string(n_vocab) + " tokens";
  const auto add = [&](std::string t, TokenType type, float score) {
    if (v.tokens.size() >= n_vocab) return;
    v.tokens.push_back(std::move(t));
    v.types.push_back(static_cast<int32_t>(type));
    v.scores.push_back(score);
  };
  add("<pad>", TokenType::kControl, 0);
  add("<eos>", TokenType::kControl, 0);
  add("<bos>", TokenType::kControl, 0);
  add("<unk>", TokenType::kUnknown, 0);
  add("<start_of_turn>", TokenType::kControl, 0);
  add("<end_of_turn>", TokenType::kControl, 0);
  for (int b = 0; b < 256; ++b) {
    char hex[8];
    std::snprintf(hex, sizeof hex, "<0x%02X>", b);
    add(hex, TokenType::kByte, 0);
  }
  add(std::string(text::kSpaceMarker), TokenType::kNormal, 0);
  for (char c = '!'; c <= '~'; ++c) add(std::string(1, c), TokenType::kNormal, 0);
  while (v.tokens.size() < n_vocab) add("[PAD" + std::to_string(v.tokens.size()) + "]", TokenType::kUnused, -1000.0f);
  hf_vocab::set_special(v, "bos", 2, n_vocab);
  hf_vocab::set_special(v, "eos", 1, n_vocab);
  hf_vocab::set_special(v, "unk", 3, n_vocab);
  hf_vocab::set_special(v, "pad", 0, n_vocab);
  v.add_bos = true;
  v.add_eos = false;
  return v;
}

// Writes the vocabulary as llama.cpp's converter writes Gemma 3's
// (_set_vocab_sentencepiece, then add_space_prefix false).
inline void set_vocab(io::GgufWriter& w, const GgufVocab& v) {
  w.set("tokenizer.ggml.model", "llama");
  w.set("tokenizer.ggml.pre", "default");
  w.set("tokenizer.ggml.tokens", v.tokens);
  w.set("tokenizer.ggml.scores", v.scores);
  w.set("tokenizer.ggml.token_type", v.types);
  for (const auto& [kind, key] : hf_vocab::kSpecialKinds)
    for (const auto& [k, id] : v.special_ids)
      if (k == kind) w.set(std::string(key), id);
  if (v.add_bos) w.set("tokenizer.ggml.add_bos_token", *v.add_bos);
  if (v.add_eos) w.set("tokenizer.ggml.add_eos_token", *v.add_eos);
  if (v.add_sep) w.set("tokenizer.ggml.add_sep_token", *v.add_sep);
  if (!v.chat_template.empty()) w.set("tokenizer.chat_template", v.chat_template);
  if (!v.named_templates.empty()) {
    std::vector<std::string> names;
    for (const auto& [name, text] : v.named_templates) {
      std::string key = name;  // gguf-py keeps letters, digits and '_' of a template's name
      std::replace_if(key.begin(), key.end(), [](unsigned char c) { return !std::isalnum(c) && c != '_'; }, '_');
      w.set("tokenizer.chat_template." + key, text);
      names.push_back(key);
    }
    w.set("tokenizer.chat_templates", names);
  }
  w.set("tokenizer.ggml.add_space_prefix", false);
}

// gguf-py's size label: the parameter count with two significant digits at
// least and K/M/B/T ("270M", "4.3B", "27B").
inline std::string size_label(uint64_t params) {
  double scaled = static_cast<double>(params) * 1e-3;
  const char* suffix = "K";
  if (params > 1'000'000'000'000ull) scaled = params * 1e-12, suffix = "T";
  else if (params > 1'000'000'000ull) scaled = params * 1e-9, suffix = "B";
  else if (params > 1'000'000ull) scaled = params * 1e-6, suffix = "M";
  const std::string whole = std::to_string(static_cast<uint64_t>(std::llround(scaled)));
  const size_t digits = whole == "0" ? 0 : whole.size();
  const int decimals = digits >= 2 ? 0 : static_cast<int>(2 - digits);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f%s", decimals, scaled, suffix);
  return buf;
}

// general.* as llama.cpp's converter writes them for a model file
// (set_type, set_gguf_meta_model, add_quantization_version, add_file_type).
// Model-card fields (license, author, base models, tags) are not read.
inline void set_general(io::GgufWriter& w, const std::string& name, uint64_t params, uint32_t file_type) {
  w.set(kGgufArchitectureKey, kGgufArchitecture);
  w.set("general.type", "model");
  w.set("general.name", name);
  w.set("general.size_label", size_label(params));
  w.set("general.quantization_version", uint32_t{2});
  w.set("general.file_type", file_type);
}

}  // namespace unicorn::tools
