// unicorn/text/tokenizer.hpp — Gemma 3's tokenizer: BPE with byte fallback.
//
// Built from a Hugging Face tokenizer.json or from the vocabulary arrays of a
// GGUF file, and checked token for token against the real Gemma 3 tokenizer
// (tests/tokenizer). What Gemma 3's tokenizer.json asks for, and so what
// encode does:
//   1. added tokens (6415 of them: <bos>, <start_of_turn>, runs of "\n", "\t"
//      and "▁", HTML tags, <unusedN>, ...) are cut out of the raw text first,
//      leftmost-longest, and become one id each;
//   2. each piece between them is normalized (" " -> "▁"); the pre-tokenizer
//      splits on " ", which no longer occurs, so the whole piece is one BPE
//      word;
//   3. BPE starts from code points, repeatedly merges the adjacent pair of
//      lowest merge rank (leftmost on ties), and a code point that is not in
//      the vocabulary becomes its UTF-8 bytes as <0xXX> tokens.
// Decoding maps "▁" back to " " and byte tokens back to bytes, so
// decode(encode(s)) == s for all valid UTF-8 without a literal U+2581 (which
// comes back as " ", as from the reference).
//
// Speed: a piece can be a whole paragraph, and BPE is not separable in
// general. It is separable wherever no vocabulary token can span a position,
// so we cut words before each "▁" whose preceding code point never precedes
// "▁" inside a token (in Gemma 3 only ">" does, in ">▁</"). The cut points
// are derived from the vocabulary at load time, so the result is exact.
//
// Invalid UTF-8 input is first repaired as TextDecoder would (utf8.hpp): the
// reference only ever tokenizes strings, so this is the only definition that
// can be checked against it.
//
// The tables BPE looks pairs and added tokens up in are in bpe_tables.hpp;
// StreamDecoder, which prints ids as they come, in stream_decoder.hpp.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <queue>
#include <set>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "unicorn/error.hpp"
#include "unicorn/linkage.hpp"
#include "unicorn/text/bpe_tables.hpp"
#include "unicorn/text/utf8.hpp"
#if UNICORN_DEFINE_HERE
#include "unicorn/text/tokenizer_json.hpp"  // from_tokenizer_json_text's reader
#endif

namespace unicorn::text {

namespace detail {
struct TokenizerJson;  // tokenizer_json.hpp
}

// SentencePiece's space marker, U+2581.
inline constexpr std::string_view kSpaceMarker = "\xE2\x96\x81";

// GGUF tokenizer.ggml.token_type values (llama.cpp's llama_token_type).
enum class GgufTokenType : int32_t {
  kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6,
};

class Tokenizer {
 public:
  // From a Hugging Face tokenizer.json (Gemma 3's, or one built the same way).
  static Tokenizer from_tokenizer_json(const std::filesystem::path& path);
  // The same from the file's text; `where` names it in errors (the fuzz target
  // and tests call this with bytes they hold).
  static Tokenizer from_tokenizer_json_text(std::string_view text, const std::string& where);

  // From a GGUF file's tokenizer.ggml.tokens / .scores / .token_type (and
  // .merges when present). With merges, BPE uses their ranks, as from
  // tokenizer.json. Without (llama.cpp's Gemma 3 GGUFs, model "llama"), it is
  // SentencePiece BPE: merge the adjacent pair whose concatenation has the
  // highest score, leftmost on ties. Control and user-defined tokens are the
  // added tokens (with <unk>, as in llama.cpp); llama.cpp's converter writes the "▁" in user-defined tokens
  // as " ", so spaces in token texts are mapped back to "▁".
  static Tokenizer from_gguf_vocab(std::vector<std::string> tokens, std::vector<float> scores,
                                   std::vector<int32_t> token_types,
                                   std::vector<std::string> merges);

  // Token ids of `text`. Added tokens written in the text (<start_of_turn>,
  // <bos>, ...) become their ids, as in Hugging Face's encode. add_bos puts
  // <bos> first, as Gemma's post-processor does.
  std::vector<int32_t> encode(std::string_view text, bool add_bos = false) const;

  // Text of `ids`: "▁" becomes " ", byte tokens become bytes, and a run of
  // byte tokens that is not valid UTF-8 becomes U+FFFD per maximal subpart
  // (as the reference's TextDecoder). skip_special drops special tokens
  // (<bos>, <eos>, <pad>, <unk>, <start_of_turn>, <end_of_turn>, image tokens).
  std::string decode(std::span<const int32_t> ids, bool skip_special = false) const;

  int32_t bos_id() const { return bos_id_; }
  // <eos> (1 in Gemma 3). Gemma 3's chat turns end with end_of_turn_id(): a
  // generator should stop on either.
  int32_t eos_id() const { return eos_id_; }
  int32_t end_of_turn_id() const { return end_of_turn_id_; }
  int32_t pad_id() const { return pad_id_; }
  int32_t unk_id() const { return unk_id_; }

  // Number of ids, i.e. the largest id + 1 (262145 for Gemma 3's
  // tokenizer.json, whose <image_soft_token> is 262144).
  size_t vocab_size() const { return tokens_.size(); }

  // Vocabulary text of a token, with "▁" for spaces and "<0xXX>" for bytes.
  std::string_view token_text(int32_t id) const {
    check_id(id);
    return tokens_[static_cast<size_t>(id)];
  }

  // Bytes a token decodes to on its own ("▁" as " ", <0xXX> as that byte).
  std::string_view token_bytes(int32_t id) const {
    check_id(id);
    return pieces_[static_cast<size_t>(id)];
  }

  // Id of a vocabulary or added token text, or -1.
  int32_t find_token(std::string_view text) const {
    const auto it = ids_.find(text);
    return it == ids_.end() ? -1 : it->second;
  }

  bool is_special(int32_t id) const { return flags_[static_cast<size_t>(id)] & kSpecial; }
  bool is_added(int32_t id) const { return flags_[static_cast<size_t>(id)] & kAdded; }

 private:
  enum Flag : uint8_t { kSpecial = 1, kAdded = 2 };

  // A symbol of one BPE word: a token id (or -1 for a code point outside the
  // vocabulary) and the bytes of the word it covers.
  struct Symbol {
    int32_t id;
    uint32_t begin, len;
  };
  struct Scratch {
    std::string normalized;
    std::vector<Symbol> symbols;
    std::vector<uint32_t> ranks;
    std::vector<int32_t> merged, prev, next;
  };
  static constexpr uint32_t kNoMerge = std::numeric_limits<uint32_t>::max();
  static constexpr size_t kSmallWord = 48;  // linear scan below, heap above

  Tokenizer() = default;

  static Tokenizer from_json(detail::TokenizerJson&& file, const std::string& where);

  // Fills ids_, char_ids_ and byte_ids_ from tokens_.
  void index_vocabulary();

  void add_merge(std::string_view left, std::string_view right, uint32_t rank);

  // SentencePiece BPE: every split of a token into two tokens is a merge; its
  // priority is the token's score (equal scores share a rank, so ties go to
  // the leftmost pair, as in SentencePiece and llama.cpp).
  void build_merges_from_scores(const std::vector<float>& scores);

  // Everything derived once the vocabulary and merges are known.
  void finish();

  void check_id(int32_t id) const {
    if (id < 0 || static_cast<size_t>(id) >= tokens_.size())
      throw Error("tokenizer: token id " + std::to_string(id) + " is outside the vocabulary (size " +
                  std::to_string(tokens_.size()) + ")");
  }

  int32_t char_id(uint32_t cp) const {
    if (cp < 0x10000) return char_ids_[cp];
    const auto it = astral_ids_.find(cp);
    return it == astral_ids_.end() ? -1 : it->second;
  }

  // One stretch of text between added tokens: normalize, cut into words at
  // positions no token can span, BPE each word.
  void encode_section(std::string_view raw, std::vector<int32_t>& ids, Scratch& s) const;

  void bpe_word(std::string_view w, std::vector<int32_t>& ids, Scratch& s) const;

  // A code point outside the vocabulary: its UTF-8 bytes as byte tokens when
  // all exist, else <unk>; a vocabulary with neither cannot encode it (found
  // by fuzzing: the id -1 went out as a token).
  void emit_unknown(std::string_view bytes, std::vector<int32_t>& ids) const;

  uint32_t pair_rank(int32_t a, int32_t b, int32_t& merged) const {
    if (a < 0 || b < 0) return kNoMerge;
    const auto* v = merges_.find(a, b);
    if (v == nullptr) return kNoMerge;
    merged = v->merged;
    return v->rank;
  }

  // Short words: rescan the pair ranks for the lowest after every merge.
  void merge_small(Scratch& s) const;

  // Long words: a heap of candidate merges over a linked list of symbols;
  // stale entries are recognised by the ids they were made for.
  void merge_large(Scratch& s) const;

  std::vector<std::string> tokens_;  // id -> vocabulary text
  std::vector<std::string> pieces_;  // id -> decoded bytes
  std::vector<uint8_t> flags_;       // id -> Flag bits
  // Text -> id, looked up by string_view (no string is built per lookup: the
  // merges' three lookups each were a fifth of loading tokenizer.json).
  struct TextHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, int32_t, TextHash, std::equal_to<>> ids_;
  std::vector<int32_t> char_ids_;  // BMP code point -> id or -1
  std::unordered_map<uint32_t, int32_t> astral_ids_;
  std::array<int32_t, 256> byte_ids_{};
  detail::PairTable merges_;
  detail::AddedTokenMatcher added_;
  std::set<std::string, std::less<>> glue_;  // code points that precede the marker in some token
  std::string normalize_from_, normalize_to_;
  bool byte_fallback_ = false, fuse_unk_ = false, ignore_merges_ = false;
  int32_t bos_id_ = -1, eos_id_ = -1, end_of_turn_id_ = -1, pad_id_ = -1, unk_id_ = -1;
};

// The code of what is declared above: here when header-only, else compiled
// once, in unicorn/separate_compilation.hpp's translation unit (linkage.hpp).
#if UNICORN_DEFINE_HERE

UNICORN_DECL Tokenizer Tokenizer::from_tokenizer_json(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("tokenizer: cannot open " + path.string());
  std::stringstream buf;
  buf << in.rdbuf();
  return from_tokenizer_json_text(buf.str(), path.string());
}

UNICORN_DECL Tokenizer Tokenizer::from_tokenizer_json_text(std::string_view text, const std::string& where) {
  detail::TokenizerJson file = detail::read_tokenizer_json(text, where);
  try {
    return from_json(std::move(file), where);
  } catch (const nlohmann::json::exception& e) {
    throw Error("tokenizer: " + where + " has an unexpected structure: " + e.what());
  }
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

  Tokenizer t;
  t.byte_fallback_ = true;
  t.normalize_from_ = " ";
  t.normalize_to_ = std::string(kSpaceMarker);
  const size_t n = tokens.size();
  t.tokens_.resize(n);
  t.flags_.assign(n, 0);
  for (size_t id = 0; id < n; ++id) {
    std::string text = detail::replace_all(tokens[id], " ", kSpaceMarker);
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

UNICORN_DECL std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_bos) const {
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 4);
  if (add_bos) {
    if (bos_id_ < 0) throw Error("tokenizer: add_bos requested but the vocabulary has no <bos>");
    ids.push_back(bos_id_);
  }
  std::string repaired;
  if (!is_valid_utf8(text)) {
    repaired = repair_utf8(text);
    text = repaired;
  }
  Scratch scratch;
  size_t section = 0;
  for (size_t i = 0; i < text.size();) {
    if (added_.may_start(text[i])) {
      const auto [id, len] = added_.match(text, i);
      if (id >= 0) {
        encode_section(text.substr(section, i - section), ids, scratch);
        ids.push_back(id);
        i += len;
        section = i;
        continue;
      }
    }
    ++i;
  }
  encode_section(text.substr(section), ids, scratch);
  return ids;
}

UNICORN_DECL std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_special) const {
  std::string raw;
  for (const int32_t id : ids) {
    check_id(id);
    if (skip_special && is_special(id)) continue;
    raw += pieces_[static_cast<size_t>(id)];
  }
  // Byte tokens are the only source of invalid UTF-8, and the bytes of an
  // invalid run cannot combine with a following token's text (which starts
  // with a lead byte), so repairing the whole string equals repairing each
  // run on its own.
  return repair_utf8(raw);
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
  ids_.reserve(tokens_.size() * 2);
  byte_ids_.fill(-1);
  for (size_t id = 0; id < tokens_.size(); ++id) {
    const std::string& text = tokens_[id];
    ids_.emplace(text, static_cast<int32_t>(id));  // first id wins for duplicates
    const int b = detail::byte_token_value(text);
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
    if (detail::byte_token_value(tokens_[id]) < 0) distinct.push_back(scores[id]);
  }
  std::sort(distinct.begin(), distinct.end(), std::greater<>());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  merges_.reserve(tokens_.size() * 4);
  for (size_t id = 0; id < tokens_.size(); ++id) {
    const std::string& text = tokens_[id];
    if (detail::byte_token_value(text) >= 0 || (unk_id_ >= 0 && id == static_cast<size_t>(unk_id_)))
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
    const int b = detail::byte_token_value(text);
    pieces_[id] = (b >= 0 && byte_fallback_ && !(flags_[id] & kAdded))
                      ? std::string(1, static_cast<char>(b))
                      : (normalize_from_.empty() ? text
                                                 : detail::replace_all(text, normalize_to_, normalize_from_));
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

UNICORN_DECL void Tokenizer::encode_section(std::string_view raw, std::vector<int32_t>& ids, Scratch& s) const {
  if (raw.empty()) return;
  std::string_view text = raw;
  if (!normalize_from_.empty() && raw.find(normalize_from_) != std::string_view::npos) {
    s.normalized = detail::replace_all(raw, normalize_from_, normalize_to_);
    text = s.normalized;
  }
  if (ignore_merges_) {
    const auto it = ids_.find(text);
    if (it != ids_.end()) {
      ids.push_back(it->second);
      return;
    }
  }
  const size_t first_new = ids.size();
  const std::string_view marker = normalize_to_;
  size_t word = 0, prev_cp = 0;
  for (size_t i = 0; i < text.size();) {
    const int len = utf8_length(static_cast<unsigned char>(text[i]));
    if (i > word && !marker.empty() && text.compare(i, marker.size(), marker) == 0) {
      const std::string_view before = text.substr(prev_cp, i - prev_cp);
      if (before != marker && !glue_.contains(before)) {
        bpe_word(text.substr(word, i - word), ids, s);
        word = i;
      }
    }
    prev_cp = i;
    i += static_cast<size_t>(len);
  }
  bpe_word(text.substr(word), ids, s);
  if (fuse_unk_ && unk_id_ >= 0) {
    auto out = ids.begin() + static_cast<std::ptrdiff_t>(first_new);
    for (auto in = out; in != ids.end(); ++in) {
      if (*in == unk_id_ && out != ids.begin() + static_cast<std::ptrdiff_t>(first_new) &&
          *(out - 1) == unk_id_)
        continue;
      *out++ = *in;
    }
    ids.erase(out, ids.end());
  }
}

UNICORN_DECL void Tokenizer::bpe_word(std::string_view w, std::vector<int32_t>& ids, Scratch& s) const {
  if (w.empty()) return;
  auto& sym = s.symbols;
  sym.clear();
  for (size_t i = 0; i < w.size();) {
    const int len = utf8_length(static_cast<unsigned char>(w[i]));
    sym.push_back({char_id(utf8_decode(w.data() + i, len)), static_cast<uint32_t>(i),
                   static_cast<uint32_t>(len)});
    i += static_cast<size_t>(len);
  }
  if (sym.size() <= kSmallWord) merge_small(s);
  else merge_large(s);
  for (const Symbol& x : sym) {
    if (x.len == 0) continue;  // merged away (large path)
    if (x.id >= 0) {
      ids.push_back(x.id);
    } else {
      emit_unknown(w.substr(x.begin, x.len), ids);
    }
  }
}

UNICORN_DECL void Tokenizer::emit_unknown(std::string_view bytes, std::vector<int32_t>& ids) const {
  bool all = byte_fallback_;
  for (const char c : bytes) all = all && byte_ids_[static_cast<unsigned char>(c)] >= 0;
  if (all) {
    for (const char c : bytes) ids.push_back(byte_ids_[static_cast<unsigned char>(c)]);
  } else if (unk_id_ >= 0) {
    ids.push_back(unk_id_);
  } else {
    std::string hex;
    for (const char c : bytes) {
      static constexpr char kHex[] = "0123456789ABCDEF";
      hex += std::string(hex.empty() ? "" : " ") + kHex[static_cast<unsigned char>(c) >> 4] +
             kHex[static_cast<unsigned char>(c) & 15];
    }
    throw Error("tokenizer: the text holds a character (UTF-8 " + hex + ") that is not in the vocabulary, "
                "which has no byte tokens for it and no <unk>");
  }
}

UNICORN_DECL void Tokenizer::merge_small(Scratch& s) const {
  auto& sym = s.symbols;
  auto& rank = s.ranks;
  auto& merged = s.merged;
  size_t n = sym.size();
  rank.resize(n);
  merged.resize(n);
  for (size_t i = 0; i + 1 < n; ++i) rank[i] = pair_rank(sym[i].id, sym[i + 1].id, merged[i]);
  while (n > 1) {
    size_t best = 0;
    for (size_t i = 1; i + 1 < n; ++i) {
      if (rank[i] < rank[best]) best = i;  // strict: leftmost wins ties
    }
    if (rank[best] == kNoMerge) break;
    sym[best].id = merged[best];
    sym[best].len += sym[best + 1].len;
    for (size_t i = best + 1; i + 1 < n; ++i) {
      sym[i] = sym[i + 1];
      rank[i] = rank[i + 1];
      merged[i] = merged[i + 1];
    }
    --n;
    if (best > 0) rank[best - 1] = pair_rank(sym[best - 1].id, sym[best].id, merged[best - 1]);
    if (best + 1 < n) rank[best] = pair_rank(sym[best].id, sym[best + 1].id, merged[best]);
  }
  sym.resize(n);
}

UNICORN_DECL void Tokenizer::merge_large(Scratch& s) const {
  auto& sym = s.symbols;
  const auto n = static_cast<int32_t>(sym.size());
  auto& prev = s.prev;
  auto& next = s.next;
  prev.resize(static_cast<size_t>(n));
  next.resize(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) {
    prev[static_cast<size_t>(i)] = i - 1;
    next[static_cast<size_t>(i)] = i + 1 < n ? i + 1 : -1;
  }
  struct Candidate {
    uint32_t rank;
    int32_t left, left_id, right_id, merged;
    bool operator>(const Candidate& o) const {
      return rank != o.rank ? rank > o.rank : left > o.left;
    }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> heap;
  auto consider = [&](int32_t left) {
    const int32_t right = next[static_cast<size_t>(left)];
    if (right < 0) return;
    int32_t m = -1;
    const int32_t a = sym[static_cast<size_t>(left)].id, b = sym[static_cast<size_t>(right)].id;
    const uint32_t r = pair_rank(a, b, m);
    if (r != kNoMerge) heap.push({r, left, a, b, m});
  };
  for (int32_t i = 0; i + 1 < n; ++i) consider(i);
  while (!heap.empty()) {
    const Candidate c = heap.top();
    heap.pop();
    Symbol& l = sym[static_cast<size_t>(c.left)];
    const int32_t right = next[static_cast<size_t>(c.left)];
    if (l.len == 0 || right < 0 || l.id != c.left_id || sym[static_cast<size_t>(right)].id != c.right_id)
      continue;
    Symbol& r = sym[static_cast<size_t>(right)];
    l.id = c.merged;
    l.len += r.len;
    r.len = 0;
    const int32_t after = next[static_cast<size_t>(right)];
    next[static_cast<size_t>(c.left)] = after;
    if (after >= 0) prev[static_cast<size_t>(after)] = c.left;
    if (prev[static_cast<size_t>(c.left)] >= 0) consider(prev[static_cast<size_t>(c.left)]);
    consider(c.left);
  }
}

#endif  // UNICORN_DEFINE_HERE

}  // namespace unicorn::text
