// unicorn/text/tokenizer_json.hpp — reads a Hugging Face tokenizer.json in one
// streaming pass (nlohmann's SAX interface) for Tokenizer::from_tokenizer_json.
//
// model.vocab and model.merges are nearly all of the file (Gemma 3's: 262144
// entries and 514906 merges in 33 MB), and they go straight into flat lists;
// everything else becomes an ordinary JSON value, a few kilobytes. A DOM of the
// whole file was most of a process's start-up: a 262144-node std::map and half
// a million two-string arrays, built only to be copied out again (notes/build_time.md).
//
// What this reader checks is the shape of the two big members (ids are checked
// by the tokenizer, which knows how many entries there are); the rest of the
// file's structure is checked where it is used.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "unicorn/base/error.hpp"

namespace unicorn::text::detail {

struct TokenizerJson {
  struct VocabEntry {
    std::string text;
    std::optional<uint64_t> id;  // empty: not a non-negative integer
    std::string written;         // the value as the file writes it, for errors
  };
  nlohmann::json rest;  // the file without model.vocab and model.merges
  std::vector<VocabEntry> vocab;
  std::vector<std::pair<std::string, std::string>> merges;  // in rank order
  bool has_vocab = false, has_merges = false;  // an object, an array
};

class TokenizerJsonReader {
 public:
  using json = nlohmann::json;

  TokenizerJsonReader(TokenizerJson& out, const std::string& where) : out_(out), where_(where) {}

  bool null() { return scalar(nullptr, "null"); }
  bool boolean(bool b) { return scalar(b, b ? "true" : "false"); }
  bool number_integer(json::number_integer_t v) { return scalar(v, std::to_string(v)); }
  bool number_float(json::number_float_t v, const json::string_t& written) { return scalar(v, written); }
  bool binary(json::binary_t&) { return fail("binary value"); }  // not in JSON text

  bool number_unsigned(json::number_unsigned_t v) {
    if (!frames_.empty() && frames_.back().mode == Mode::Vocab) {
      out_.vocab.push_back({std::move(frames_.back().key), v, {}});
      return true;
    }
    return scalar(v, std::to_string(v));
  }

  bool string(json::string_t& s) {
    if (frames_.empty() || frames_.back().mode == Mode::Dom) {
      put(std::move(s));
      return true;
    }
    Frame& f = frames_.back();
    switch (f.mode) {
      case Mode::Vocab:
        out_.vocab.push_back({std::move(f.key), std::nullopt, json(s).dump()});
        return true;
      case Mode::Merges: {  // the older form, "left right"; neither side contains " "
        const size_t sp = s.find(' ');
        if (sp == std::string::npos) return fail("bad merge '" + s + "'");
        const size_t sp2 = s.find(' ', sp + 1);
        out_.merges.emplace_back(s.substr(0, sp), s.substr(sp + 1, sp2 == std::string::npos ? sp2 : sp2 - sp - 1));
        return true;
      }
      case Mode::MergePair:  // [left, right]
        if (f.strings == 0) f.left = std::move(s);
        else if (f.strings == 1) f.right = std::move(s);
        ++f.strings;
        return true;
      case Mode::Dom: break;
    }
    return true;
  }

  bool start_object(std::size_t) {
    if (!frames_.empty() && frames_.back().mode != Mode::Dom) return nested("an object");
    if (at_model_member("vocab")) {
      if (out_.has_vocab) return fail("model.vocab appears twice");
      out_.has_vocab = true;
      frames_.push_back({Mode::Vocab});
      return true;
    }
    // model: the object one level down under the key "model".
    const bool model = frames_.size() == 1 && frames_.back().node->is_object() && frames_.back().key == "model";
    json* node = put(json::object());
    frames_.push_back({Mode::Dom, node});
    frames_.back().model = model;
    return true;
  }

  bool start_array(std::size_t) {
    if (!frames_.empty()) {
      if (frames_.back().mode == Mode::Merges) {
        frames_.push_back({Mode::MergePair});
        return true;
      }
      if (frames_.back().mode != Mode::Dom) return nested("an array");
    }
    if (at_model_member("merges")) {
      if (out_.has_merges) return fail("model.merges appears twice");
      out_.has_merges = true;
      frames_.push_back({Mode::Merges});
      return true;
    }
    json* node = put(json::array());
    frames_.push_back({Mode::Dom, node});
    return true;
  }

  bool key(json::string_t& k) {
    frames_.back().key = std::move(k);
    return true;
  }

  bool end_object() {
    frames_.pop_back();
    return true;
  }

  bool end_array() {
    Frame& f = frames_.back();
    if (f.mode == Mode::MergePair) {
      if (f.strings < 2) return fail("a merge [left, right] has " + std::to_string(f.strings) + " strings");
      out_.merges.emplace_back(std::move(f.left), std::move(f.right));
    }
    frames_.pop_back();
    return true;
  }

  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) {
    throw Error("tokenizer: " + where_ + " is not valid JSON: " + e.what());
  }

 private:
  enum class Mode { Dom, Vocab, Merges, MergePair };
  struct Frame {
    Mode mode;
    json* node = nullptr;  // Dom: the object or array being filled
    std::string key;       // an object's current key (Vocab: the token text)
    bool model = false;    // Dom: the top-level "model" object
    int strings = 0;       // MergePair: strings seen
    std::string left, right;
  };

  // A scalar: a DOM value, or in the big members an id that is not an
  // unsigned integer (kept with how it was written) or a bad merge.
  template <class T>
  bool scalar(T&& v, const std::string& written) {
    if (frames_.empty() || frames_.back().mode == Mode::Dom) {
      put(json(std::forward<T>(v)));
      return true;
    }
    Frame& f = frames_.back();
    if (f.mode == Mode::Vocab) {
      out_.vocab.push_back({std::move(f.key), std::nullopt, written});
      return true;
    }
    if (f.mode == Mode::MergePair && f.strings >= 2) return true;  // past [left, right]: ignored
    return fail("bad merge " + written);
  }

  bool nested(const std::string& what) {
    const Frame& f = frames_.back();
    if (f.mode == Mode::Vocab) return fail("the id of '" + f.key + "' in model.vocab is " + what);
    return fail("a merge contains " + what);
  }

  bool at_model_member(std::string_view name) const {
    return !frames_.empty() && frames_.back().mode == Mode::Dom && frames_.back().model &&
           frames_.back().key == name;
  }

  // Adds v where the DOM is being built: the root, an array's next element or
  // the current key of an object (the last of a repeated key wins, as in
  // nlohmann's DOM). The returned pointer stays valid while v is being
  // filled: nothing else is added to its parent until v is closed.
  json* put(json v) {
    if (frames_.empty()) {
      out_.rest = std::move(v);
      return &out_.rest;
    }
    Frame& f = frames_.back();
    if (f.node->is_array()) {
      f.node->push_back(std::move(v));
      return &f.node->back();
    }
    json& slot = (*f.node)[f.key];
    slot = std::move(v);
    return &slot;
  }

  [[noreturn]] bool fail(const std::string& what) const {
    throw Error("tokenizer: " + where_ + ": " + what);
  }

  TokenizerJson& out_;
  const std::string& where_;
  std::vector<Frame> frames_;
};

// The file's text as TokenizerJson; unicorn::Error if it is not JSON or its
// vocabulary or merges are not shaped as tokenizer.json writes them.
inline TokenizerJson read_tokenizer_json(std::string_view text, const std::string& where) {
  TokenizerJson out;
  TokenizerJsonReader reader(out, where);
  nlohmann::json::sax_parse(text, &reader);
  return out;
}

}  // namespace unicorn::text::detail
