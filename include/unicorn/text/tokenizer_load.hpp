// unicorn/text/tokenizer_load.hpp — Tokenizer's construction: from a
// tokenizer.json (read by tokenizer_json.hpp) or a GGUF vocabulary, the id and
// merge tables, and everything derived from them once (finish). Included by
// tokenizer.hpp where its code is compiled (unicorn/base/linkage.hpp).
#pragma once

#include <cmath>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "unicorn/text/tokenizer.hpp"
#include "unicorn/text/tokenizer_json.hpp"

namespace unicorn::text {

UNICORN_DECL Tokenizer Tokenizer::from_tokenizer_json(const std::filesystem::path& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw Error("tokenizer: " + path.string() + " is a directory, not a tokenizer.json file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("tokenizer: cannot open " + path.string());
  // Gemma 3's file is 33 MB: read at its size in one go, not through a
  // stringstream's growing buffer and the copy str() makes (most of the
  // copying a start-up did). A pipe has no size: streamed.
  std::string text;
  if (std::filesystem::is_regular_file(path, ec)) {
    const uintmax_t size = std::filesystem::file_size(path, ec);
    if (ec) throw Error("tokenizer: cannot read " + path.string() + ": " + ec.message());
    text.resize(size_t(size));
    if (!in.read(text.data(), std::streamsize(size))) throw Error("tokenizer: cannot read " + path.string());
  } else {
    std::ostringstream buf;
    buf << in.rdbuf();
    if (in.bad()) throw Error("tokenizer: cannot read " + path.string());
    text = std::move(buf).str();
  }
  return from_tokenizer_json_text(text, path.string());
}

UNICORN_DECL Tokenizer Tokenizer::from_tokenizer_json_text(std::string_view text, const std::string& where) {
  detail::TokenizerJson file = detail::read_tokenizer_json(text, where);
  try {
    return from_json(std::move(file), where);
  } catch (const nlohmann::json::exception& e) {
    throw Error("tokenizer: " + where + " has an unexpected structure: " + e.what());
  }
}

UNICORN_DECL void check_gguf_entries(std::span<const std::string> tokens, std::span<const int32_t> types,
                                     std::span<const float> scores, const std::string& where) {
  for (size_t id = 0; id < tokens.size(); ++id)
    if (!is_valid_utf8(tokens[id])) throw Error(where + " token " + std::to_string(id) + " is not valid UTF-8");
  for (size_t id = 0; id < types.size(); ++id)
    if (types[id] < int32_t(GgufTokenType::kNormal) || types[id] > int32_t(GgufTokenType::kByte))
      throw Error(where + " token " + std::to_string(id) + " has type " + std::to_string(types[id]) +
                  "; llama.cpp's token types are 1 to 6");
  for (size_t id = 0; id < scores.size(); ++id)
    if (!std::isfinite(scores[id]))
      throw Error(where + " token " + std::to_string(id) + " has a score that is not a finite number");
}

UNICORN_DECL Tokenizer Tokenizer::from_gguf_vocab(std::vector<std::string> tokens, std::vector<float> scores,
                                                  std::vector<int32_t> token_types,
                                                  std::vector<std::string> merges) {
  if (tokens.empty()) throw Error("tokenizer: GGUF vocabulary is empty");
  if (!token_types.empty() && token_types.size() != tokens.size())
    throw Error("tokenizer: GGUF token_type has " + std::to_string(token_types.size()) +
                " entries for " + std::to_string(tokens.size()) + " tokens");
  if (!scores.empty() && scores.size() != tokens.size())
    throw Error("tokenizer: GGUF scores has " + std::to_string(scores.size()) +
                " entries for " + std::to_string(tokens.size()) + " tokens");
  if (merges.empty() && scores.empty())
    throw Error("tokenizer: GGUF vocabulary has neither merges nor scores");
  check_gguf_entries(tokens, token_types, scores, "tokenizer: GGUF");

  Tokenizer t;
  t.byte_fallback_ = true;
  t.normalize_from_ = " ";
  t.normalize_to_ = std::string(kSpaceMarker);
  const size_t n = tokens.size();
  t.tokens_.resize(n);
  t.flags_.assign(n, 0);
  for (size_t id = 0; id < n; ++id) {
    std::string text = replace_all(tokens[id], " ", kSpaceMarker);
    const auto type = token_types.empty() ? GgufTokenType::kNormal
                                          : static_cast<GgufTokenType>(token_types[id]);
    uint8_t f = 0;
    if (type == GgufTokenType::kControl || type == GgufTokenType::kUserDefined ||
        type == GgufTokenType::kUnknown)
      f |= kAdded;
    if (type == GgufTokenType::kControl || type == GgufTokenType::kUnknown) f |= kSpecial;
    if (type == GgufTokenType::kUnknown && t.unk_id_ < 0) t.unk_id_ = static_cast<int32_t>(id);
    t.flags_[id] = f;
    t.tokens_[id] = std::move(text);
  }
  t.index_vocabulary();
  if (!merges.empty()) {
    t.merges_.reserve(merges.size());
    for (size_t r = 0; r < merges.size(); ++r) {
      const size_t sp = merges[r].find(' ');
      if (sp == std::string::npos)
        throw Error("tokenizer: GGUF merge " + std::to_string(r) + " has no space: " + merges[r]);
      t.add_merge(merges[r].substr(0, sp), merges[r].substr(sp + 1), static_cast<uint32_t>(r));
    }
  } else {
    t.build_merges_from_scores(scores);
  }
  t.finish();
  return t;
}

UNICORN_DECL Tokenizer Tokenizer::from_json(detail::TokenizerJson&& file, const std::string& where) {
  const nlohmann::json& j = file.rest;
  Tokenizer t;
  const auto& model = j.at("model");
  const std::string type = model.value("type", std::string("BPE"));
  if (type != "BPE")
    throw Error("tokenizer: " + where + ": unsupported model type '" + type + "' (only BPE)");
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    if (model.contains(key) && !model[key].is_null() && model[key] != "")
      throw Error("tokenizer: " + where + ": unsupported BPE option " + key);
  }
  if (model.contains("dropout") && !model["dropout"].is_null() && model["dropout"] != 0.0)
    throw Error("tokenizer: " + where + ": BPE dropout is not supported");
  t.byte_fallback_ = model.value("byte_fallback", false);
  t.fuse_unk_ = model.value("fuse_unk", false);
  t.ignore_merges_ = model.value("ignore_merges", false);

  // Normalizer: nothing, or one string Replace (Gemma: " " -> "▁").
  const auto& norm = j.at("normalizer");
  if (!norm.is_null()) {
    const std::string nt = norm.at("type");
    if (nt != "Replace" || !norm.at("pattern").contains("String"))
      throw Error("tokenizer: " + where + ": unsupported normalizer '" + nt + "'");
    t.normalize_from_ = norm["pattern"]["String"];
    t.normalize_to_ = norm.at("content");
  }
  // Pre-tokenizer: nothing, or a Split on the very string the normalizer
  // replaced, which cannot occur any more, so it splits nothing.
  const auto& pre = j.at("pre_tokenizer");
  if (!pre.is_null()) {
    const std::string pt = pre.at("type");
    const bool noop_split = pt == "Split" && pre.at("pattern").contains("String") &&
                            !pre.value("invert", false) && !t.normalize_from_.empty() &&
                            pre["pattern"]["String"] == t.normalize_from_ &&
                            t.normalize_to_.find(t.normalize_from_) == std::string::npos;
    if (!noop_split)
      throw Error("tokenizer: " + where + ": unsupported pre_tokenizer '" + pt + "'");
  }
  // Decoder: Replace (the normalizer undone), ByteFallback, Fuse, which is
  // what pieces_ and decode() implement.
  const auto& dec = j.at("decoder");
  if (!dec.is_null()) {
    const auto steps = dec.at("type") == "Sequence" ? dec.at("decoders") : nlohmann::json::array({dec});
    for (const auto& d : steps) {
      const std::string dt = d.at("type");
      const bool ok = dt == "ByteFallback" || dt == "Fuse" ||
                      (dt == "Replace" && d.at("pattern").contains("String") &&
                       d["pattern"]["String"] == t.normalize_to_ && d.at("content") == t.normalize_from_);
      if (!ok) throw Error("tokenizer: " + where + ": unsupported decoder '" + dt + "'");
    }
  }

  // Vocabulary: model.vocab plus added_tokens (which may extend it).
  if (!file.has_vocab) throw Error("tokenizer: " + where + " has an unexpected structure: model.vocab is not an object");
  if (!file.has_merges) throw Error("tokenizer: " + where + " has an unexpected structure: model.merges is not an array");
  const auto& added = j.at("added_tokens");
  // Every id from 0 up must be present, so none can reach the number of
  // entries: checked before anything is sized by an id (found by fuzzing:
  // an id of 1e121 was undefined behaviour, one of 1e12 a terabyte vector).
  const size_t entries = file.vocab.size() + added.size();
  const auto out_of_range = [&](const std::string& written) {
    return Error("tokenizer: " + where + ": token id " + written + " is not an integer in [0, " +
                 std::to_string(entries) + ") (the file lists " + std::to_string(entries) + " tokens)");
  };
  const auto id_of = [&](const nlohmann::json& v) -> size_t {
    if (!(v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0)) || v.get<uint64_t>() >= entries)
      throw out_of_range(v.dump());
    return size_t(v.get<uint64_t>());
  };
  size_t n = 0;
  for (const auto& e : file.vocab) {
    if (!e.id || *e.id >= entries) throw out_of_range(e.id ? std::to_string(*e.id) : e.written);
    n = std::max(n, size_t(*e.id) + 1);
  }
  for (const auto& a : added) n = std::max(n, id_of(a.at("id")) + 1);
  t.tokens_.assign(n, {});
  t.flags_.assign(n, 0);
  std::vector<bool> present(n, false);
  for (auto& e : file.vocab) {
    const size_t id = size_t(*e.id);
    // (A DOM of the file kept one of two texts with the same id silently.)
    if (present[id])
      throw Error("tokenizer: " + where + ": model.vocab gives the id " + std::to_string(id) + " to both '" +
                  t.tokens_[id] + "' and '" + e.text + "'");
    t.tokens_[id] = std::move(e.text);
    present[id] = true;
  }
  for (const auto& a : added) {
    const auto id = id_of(a.at("id"));
    if (a.value("normalized", false) || a.value("lstrip", false) || a.value("rstrip", false) ||
        a.value("single_word", false))
      throw Error("tokenizer: " + where + ": added token " + a.at("content").get<std::string>() +
                  " uses normalized/lstrip/rstrip/single_word, which is not supported");
    t.tokens_[id] = a.at("content");
    present[id] = true;
    t.flags_[id] |= kAdded;
    if (a.value("special", false)) t.flags_[id] |= kSpecial;
  }
  for (size_t id = 0; id < n; ++id) {
    if (!present[id]) throw Error("tokenizer: " + where + ": no token has id " + std::to_string(id));
  }
  t.index_vocabulary();
  if (model.contains("unk_token") && model["unk_token"].is_string())
    t.unk_id_ = t.find_token(model["unk_token"].get<std::string>());

  t.merges_.reserve(file.merges.size());
  for (size_t r = 0; r < file.merges.size(); ++r)
    t.add_merge(file.merges[r].first, file.merges[r].second, static_cast<uint32_t>(r));
  t.finish();
  return t;
}

UNICORN_DECL void Tokenizer::index_vocabulary() {
  ids_.build(tokens_);  // the first id of a text wins
  byte_ids_.fill(-1);
  for (size_t id = 0; id < tokens_.size(); ++id) {
    const std::string& text = tokens_[id];
    const int b = byte_token_value(text);
    if (b >= 0 && !(flags_[id] & kAdded) && byte_ids_[static_cast<size_t>(b)] < 0)
      byte_ids_[static_cast<size_t>(b)] = static_cast<int32_t>(id);
  }
}

UNICORN_DECL void Tokenizer::add_merge(std::string_view left, std::string_view right, uint32_t rank) {
  std::string joined;
  joined.reserve(left.size() + right.size());
  joined.append(left).append(right);
  const int32_t a = find_token(left), b = find_token(right), m = find_token(joined);
  // The reference merges strings and looks the result up afterwards; a
  // merge whose parts or result are outside the vocabulary can never fire
  // on in-vocabulary symbols or would produce an unknown token, so skip it.
  if (a < 0 || b < 0 || m < 0) return;
  merges_.insert(a, b, {rank, m});
}

UNICORN_DECL void Tokenizer::build_merges_from_scores(const std::vector<float>& scores) {
  std::vector<float> distinct;
  distinct.reserve(scores.size());
  for (size_t id = 0; id < tokens_.size(); ++id) {
    if (byte_token_value(tokens_[id]) < 0) distinct.push_back(scores[id]);
  }
  std::sort(distinct.begin(), distinct.end(), std::greater<>());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  merges_.reserve(tokens_.size() * 4);
  for (size_t id = 0; id < tokens_.size(); ++id) {
    const std::string& text = tokens_[id];
    if (byte_token_value(text) >= 0 || (unk_id_ >= 0 && id == static_cast<size_t>(unk_id_)))
      continue;
    const auto rank = static_cast<uint32_t>(
        std::lower_bound(distinct.begin(), distinct.end(), scores[id], std::greater<>()) -
        distinct.begin());
    for (size_t cut = utf8_length(static_cast<unsigned char>(text[0])); cut < text.size();
         cut += utf8_length(static_cast<unsigned char>(text[cut]))) {
      const int32_t a = find_token(std::string_view(text).substr(0, cut));
      const int32_t b = find_token(std::string_view(text).substr(cut));
      if (a < 0 || b < 0) continue;
      const auto* old = merges_.find(a, b);
      if (old == nullptr || old->rank > rank) merges_.insert(a, b, {rank, static_cast<int32_t>(id)});
    }
  }
}

UNICORN_DECL void Tokenizer::finish() {
  bos_id_ = find_token("<bos>");
  eos_id_ = find_token("<eos>");
  end_of_turn_id_ = find_token("<end_of_turn>");
  pad_id_ = find_token("<pad>");
  if (unk_id_ < 0) unk_id_ = find_token("<unk>");

  pieces_.resize(tokens_.size());
  char_ids_.assign(0x10000, -1);
  for (size_t id = 0; id < tokens_.size(); ++id) {
    const std::string& text = tokens_[id];
    const int b = byte_token_value(text);
    pieces_[id] = (b >= 0 && byte_fallback_ && !(flags_[id] & kAdded))
                      ? std::string(1, static_cast<char>(b))
                      : (normalize_from_.empty() ? text
                                                 : replace_all(text, normalize_to_, normalize_from_));
    if (flags_[id] & kAdded) added_.add(text, static_cast<int32_t>(id));
    // Single code points start BPE; the first id of a text wins, as in ids_.
    if (!text.empty() && is_valid_utf8(text)) {
      const int len = utf8_length(static_cast<unsigned char>(text[0]));
      if (static_cast<size_t>(len) == text.size() && find_token(text) == static_cast<int32_t>(id)) {
        const uint32_t cp = utf8_decode(text.data(), len);
        if (cp < 0x10000) char_ids_[cp] = static_cast<int32_t>(id);
        else astral_ids_.emplace(cp, static_cast<int32_t>(id));
      }
    }
    // Word cuts: which code points ever precede the marker inside a token.
    if (!normalize_to_.empty()) {
      for (size_t pos = text.find(normalize_to_, 1); pos != std::string::npos;
           pos = text.find(normalize_to_, pos + 1)) {
        size_t start = pos - 1;
        while (start > 0 && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
        const std::string_view before = std::string_view(text).substr(start, pos - start);
        if (before != normalize_to_) glue_.emplace(before);
      }
    }
  }
}

}  // namespace unicorn::text
