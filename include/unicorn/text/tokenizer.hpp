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
// StreamDecoder, which prints ids as they come, in stream_decoder.hpp. The
// code: building the tables from a file in tokenizer_load.hpp, encoding and
// decoding in tokenizer_encode.hpp.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "unicorn/base/error.hpp"
#include "unicorn/base/linkage.hpp"
#include "unicorn/text/bpe_tables.hpp"
#include "unicorn/text/utf8.hpp"

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

// Throws naming the first entry of a GGUF vocabulary (tokenizer.ggml.tokens,
// .token_type, .scores; either of the last two may be empty) that would be
// misread: a token that is not UTF-8, a type outside llama.cpp's 1 to 6, a
// score that is not finite (it would break the merge order's sort). `where`
// starts the message. Tokenizer::from_gguf_vocab checks them, and so does the
// loader (check_gguf_vocabulary) when a model file carries a vocabulary.
void check_gguf_entries(std::span<const std::string> tokens, std::span<const int32_t> types,
                        std::span<const float> scores, const std::string& where);

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
  int32_t find_token(std::string_view text) const { return ids_.find(text, tokens_); }

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
  detail::TextTable ids_;          // text -> id (over tokens_), looked up by string_view
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

}  // namespace unicorn::text

// The code of what is declared above, by job: here when header-only, else
// compiled once, in unicorn/separate_compilation.hpp's translation unit
// (base/linkage.hpp).
#if UNICORN_DEFINE_HERE
#include "unicorn/text/tokenizer_encode.hpp"
#include "unicorn/text/tokenizer_load.hpp"
#endif  // UNICORN_DEFINE_HERE
