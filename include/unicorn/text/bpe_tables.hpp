// unicorn/text/bpe_tables.hpp — the lookup structures the tokenizer's BPE runs
// on (tokenizer.hpp): token texts to ids (TextTable), merge pairs by id
// (PairTable), the added tokens as a byte trie (AddedTokenMatcher), and two
// helpers for token texts.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace unicorn::text {

namespace detail {

// Token text -> id, over the tokenizer's own texts (id -> text, passed to
// each call, so the table holds no pointer into its owner). Open addressing
// with linear probing; a slot holds the id and the high half of the text's
// hash, compared before the text. Loading tokenizer.json looks up three texts
// for each of its half a million merges: on std::unordered_map's nodes those
// lookups were a quarter of the load (notes/build_time.md).
class TextTable {
 public:
  // Indexes texts[0, n); a text listed twice keeps its first id.
  void build(const std::vector<std::string>& texts) {
    size_t cap = 16;
    while (cap < texts.size() * 2) cap <<= 1;
    slots_.assign(cap, Slot{0, -1});
    mask_ = cap - 1;
    for (size_t id = 0; id < texts.size(); ++id) {
      const uint64_t h = hash(texts[id]);
      for (size_t i = h & mask_;; i = (i + 1) & mask_) {
        Slot& s = slots_[i];
        if (s.id < 0) {
          s = Slot{tag(h), static_cast<int32_t>(id)};
          break;
        }
        if (s.tag == tag(h) && texts[static_cast<size_t>(s.id)] == texts[id]) break;
      }
    }
  }

  // The id of `text` in `texts` (the ones built from), or -1.
  int32_t find(std::string_view text, const std::vector<std::string>& texts) const {
    if (slots_.empty()) return -1;
    const uint64_t h = hash(text);
    for (size_t i = h & mask_;; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.id < 0) return -1;
      if (s.tag == tag(h) && texts[static_cast<size_t>(s.id)] == text) return s.id;
    }
  }

 private:
  struct Slot {
    uint32_t tag;  // the hash's high half
    int32_t id;    // -1: empty
  };
  static uint64_t hash(std::string_view text) { return std::hash<std::string_view>{}(text); }
  static uint32_t tag(uint64_t h) { return static_cast<uint32_t>(h >> 32); }

  std::vector<Slot> slots_;
  size_t mask_ = 0;
};

// (left id, right id) -> (priority, merged id). Open addressing with linear
// probing: this lookup is the inner loop of BPE, and std::unordered_map's
// node chasing costs about twice as much.
class PairTable {
 public:
  struct Value {
    uint32_t rank;   // lower merges first
    int32_t merged;  // id of the concatenation
  };

  void reserve(size_t n) {
    size_t cap = 16;
    while (cap < n * 2) cap <<= 1;
    slots_.assign(cap, Slot{kEmpty, {}});
    mask_ = cap - 1;
    size_ = 0;
  }

  // A pair listed twice keeps its last rank, as the reference's Map does.
  void insert(int32_t a, int32_t b, Value v) {
    if ((size_ + 1) * 2 > slots_.size()) grow();
    place(key(a, b), v);
  }

  const Value* find(int32_t a, int32_t b) const {
    if (slots_.empty()) return nullptr;
    const uint64_t k = key(a, b);
    for (size_t i = hash(k);; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.key == k) return &s.value;
      if (s.key == kEmpty) return nullptr;
    }
  }

  size_t size() const { return size_; }

 private:
  struct Slot {
    uint64_t key;
    Value value;
  };
  static constexpr uint64_t kEmpty = ~uint64_t{0};

  static uint64_t key(int32_t a, int32_t b) {
    return (uint64_t{static_cast<uint32_t>(a)} << 32) | static_cast<uint32_t>(b);
  }
  size_t hash(uint64_t k) const {
    return static_cast<size_t>((k * 0x9E3779B97F4A7C15ull) >> 20) & mask_;
  }
  void place(uint64_t k, Value v) {
    for (size_t i = hash(k);; i = (i + 1) & mask_) {
      Slot& s = slots_[i];
      if (s.key == k) {
        s.value = v;
        return;
      }
      if (s.key == kEmpty) {
        s = Slot{k, v};
        ++size_;
        return;
      }
    }
  }
  void grow() {
    std::vector<Slot> old = std::move(slots_);
    reserve(std::max<size_t>(old.size(), 16));
    for (const Slot& s : old) {
      if (s.key != kEmpty) place(s.key, s.value);
    }
  }

  std::vector<Slot> slots_;
  size_t mask_ = 0;
  size_t size_ = 0;
};

// Byte trie of the added tokens: the longest one starting at a position.
class AddedTokenMatcher {
 public:
  void add(std::string_view text, int32_t id) {
    if (text.empty()) return;
    if (nodes_.empty()) nodes_.push_back(-1);
    int32_t node = 0;
    for (const char c : text) {
      const uint64_t k = edge(node, c);
      auto it = edges_.find(k);
      if (it == edges_.end()) {
        it = edges_.emplace(k, static_cast<int32_t>(nodes_.size())).first;
        nodes_.push_back(-1);
      }
      node = it->second;
    }
    nodes_[node] = id;
    first_byte_[static_cast<unsigned char>(text[0])] = true;
  }

  bool may_start(char c) const { return first_byte_[static_cast<unsigned char>(c)]; }

  // {id, length} of the longest added token at text[pos], or {-1, 0}.
  std::pair<int32_t, size_t> match(std::string_view text, size_t pos) const {
    std::pair<int32_t, size_t> best{-1, 0};
    int32_t node = 0;
    for (size_t i = pos; i < text.size(); ++i) {
      const auto it = edges_.find(edge(node, text[i]));
      if (it == edges_.end()) break;
      node = it->second;
      if (nodes_[node] >= 0) best = {nodes_[node], i + 1 - pos};
    }
    return best;
  }

 private:
  static uint64_t edge(int32_t node, char c) {
    return (uint64_t{static_cast<uint32_t>(node)} << 8) | static_cast<unsigned char>(c);
  }

  std::vector<int32_t> nodes_;  // token id ending at each node, or -1
  std::unordered_map<uint64_t, int32_t> edges_;
  std::array<bool, 256> first_byte_{};
};

}  // namespace detail

// Two helpers for token texts, public: unicorn-convert writes vocabularies
// with them as the tokenizer reads them (tools/gguf_metadata.hpp).

// `s` with every `from` replaced by `to`.
inline std::string replace_all(std::string_view s, std::string_view from, std::string_view to) {
  std::string out;
  out.reserve(s.size() + s.size() / 4);
  size_t i = 0;
  while (true) {
    const size_t j = s.find(from, i);
    if (j == std::string_view::npos) break;
    out.append(s.substr(i, j - i));
    out.append(to);
    i = j + from.size();
  }
  out.append(s.substr(i));
  return out;
}

// 0xXX for a "<0xXX>" byte token, else -1.
inline int byte_token_value(std::string_view t) {
  if (t.size() != 6 || t.substr(0, 3) != "<0x" || t[5] != '>') return -1;
  int v = 0;
  for (const char c : t.substr(3, 2)) {
    v <<= 4;
    if (c >= '0' && c <= '9') v |= c - '0';
    else if (c >= 'A' && c <= 'F') v |= c - 'A' + 10;
    else if (c >= 'a' && c <= 'f') v |= c - 'a' + 10;
    else return -1;
  }
  return v;
}

}  // namespace unicorn::text
