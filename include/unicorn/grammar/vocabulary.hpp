// unicorn/grammar/vocabulary.hpp — a tokenizer's vocabulary as the grammar
// matcher needs it: the bytes of every token, arranged as a byte trie.
//
// Built once per tokenizer and shared by every matcher. The trie is stored in
// preorder, so a subtree is a contiguous run of nodes (skipping one is a jump
// to its end) and, with tokens numbered in the same order ("ranks": the
// tokens sorted by their bytes), the tokens under a node are a contiguous run
// of ranks too. A mask walk (matcher.hpp) visits only the nodes some parse
// state can reach.
//
// Text tokens are those with bytes that are not special: Gemma 3's byte tokens
// <0xXX> are one byte each (often part of a code point). Special tokens
// (<bos>, <start_of_turn>, image tokens, ...) are never text; the end tokens
// (<eos>, <end_of_turn>) are handled apart, allowed where the grammar may end.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "unicorn/base/error.hpp"
#include "unicorn/base/linkage.hpp"
#include "unicorn/text/tokenizer.hpp"

namespace unicorn::grammar {

class Vocabulary {
 public:
  static std::shared_ptr<const Vocabulary> from_tokenizer(const text::Tokenizer& tokenizer);
  // For tests and tools: token i has bytes[i]; `special` ones are never text.
  // end ids may be -1 (none).
  static std::shared_ptr<const Vocabulary> from_tokens(std::vector<std::string> bytes, std::vector<bool> special,
                                                        int32_t eos_id, int32_t end_of_turn_id);

  size_t size() const { return bytes_offset_.size() - 1; }  // number of ids
  int32_t eos_id() const { return eos_id_; }
  int32_t end_of_turn_id() const { return end_of_turn_id_; }
  bool is_end(int32_t id) const { return id >= 0 && (id == eos_id_ || id == end_of_turn_id_); }
  bool is_text(int32_t id) const { return id >= 0 && size_t(id) < size() && text_[size_t(id)]; }
  std::string_view token_bytes(int32_t id) const {
    return std::string_view(bytes_).substr(bytes_offset_[size_t(id)], bytes_offset_[size_t(id) + 1] - bytes_offset_[size_t(id)]);
  }
  // Distinguishes vocabularies for the grammar's mask caches (an address can be reused).
  uint64_t serial() const { return serial_; }

  // The trie. Node 0 is the root (the empty prefix); node n > 0 adds byte
  // `byte` to its parent's prefix, is `depth` bytes deep, and its subtree is
  // the nodes [n, end). Ranks [rank_begin, rank_own_end) are the tokens whose
  // bytes end at n, [rank_begin, rank_end) those of its whole subtree. One
  // struct per node: a walk reads them in order, a cache line at a time.
  // rank_id[r] is the token of rank r, rank_node[r] its node.
  struct Node {
    uint32_t end, rank_begin, rank_own_end, rank_end, parent;
    uint16_t depth;
    uint8_t byte;
  };
  struct Trie {
    std::vector<Node> nodes;
    std::vector<int32_t> rank_id;
    std::vector<uint32_t> rank_node;
  };
  const Trie& trie() const { return trie_; }

 private:
  void build();

  std::string bytes_;
  std::vector<size_t> bytes_offset_;
  std::vector<bool> text_;
  int32_t eos_id_ = -1, end_of_turn_id_ = -1;
  uint64_t serial_ = 0;
  Trie trie_;
};

}  // namespace unicorn::grammar

#if UNICORN_DEFINE_HERE
#include <algorithm>

namespace unicorn::grammar {

UNICORN_DECL std::shared_ptr<const Vocabulary> Vocabulary::from_tokenizer(const text::Tokenizer& tokenizer) {
  const size_t n = tokenizer.vocab_size();
  std::vector<std::string> bytes(n);
  std::vector<bool> special(n);
  for (size_t id = 0; id < n; ++id) {
    bytes[id] = std::string(tokenizer.token_bytes(int32_t(id)));
    special[id] = tokenizer.is_special(int32_t(id));
  }
  return from_tokens(std::move(bytes), std::move(special), tokenizer.eos_id(), tokenizer.end_of_turn_id());
}

UNICORN_DECL std::shared_ptr<const Vocabulary> Vocabulary::from_tokens(std::vector<std::string> bytes,
                                                                     std::vector<bool> special, int32_t eos_id,
                                                                     int32_t end_of_turn_id) {
  if (special.size() != bytes.size())
    throw Error("grammar: vocabulary has " + std::to_string(bytes.size()) + " tokens but " +
                std::to_string(special.size()) + " special flags");
  if (bytes.size() >= size_t(INT32_MAX)) throw Error("grammar: vocabulary is too large");
  auto v = std::make_shared<Vocabulary>();
  v->bytes_offset_.reserve(bytes.size() + 1);
  v->bytes_offset_.push_back(0);
  v->text_.resize(bytes.size());
  for (size_t id = 0; id < bytes.size(); ++id) {
    v->bytes_ += bytes[id];
    v->bytes_offset_.push_back(v->bytes_.size());
    v->text_[id] = !special[id] && !bytes[id].empty();
  }
  const auto valid = [&](int32_t id) { return id >= 0 && size_t(id) < bytes.size() ? id : -1; };
  v->eos_id_ = valid(eos_id);
  v->end_of_turn_id_ = valid(end_of_turn_id);
  // End tokens are never text, whatever their bytes.
  if (v->eos_id_ >= 0) v->text_[size_t(v->eos_id_)] = false;
  if (v->end_of_turn_id_ >= 0) v->text_[size_t(v->end_of_turn_id_)] = false;
  static std::atomic<uint64_t> serials{0};
  v->serial_ = ++serials;
  v->build();
  return v;
}

UNICORN_DECL void Vocabulary::build() {
  Trie& t = trie_;
  std::vector<int32_t> ids;
  for (size_t id = 0; id < size(); ++id)
    if (text_[id]) ids.push_back(int32_t(id));
  std::stable_sort(ids.begin(), ids.end(), [&](int32_t a, int32_t b) { return token_bytes(a) < token_bytes(b); });
  t.rank_id = ids;
  t.rank_node.resize(ids.size());
  t.nodes.push_back({0, 0, 0, 0, 0, 0, 0});  // the root
  std::vector<uint32_t> path{0};  // path[d]: the node at depth d of the current prefix
  std::string_view prev;
  const auto close = [&](uint32_t node, uint32_t rank) {
    t.nodes[node].end = uint32_t(t.nodes.size());
    t.nodes[node].rank_end = rank;
  };
  for (uint32_t r = 0; r < ids.size(); ++r) {
    const std::string_view b = token_bytes(ids[r]);
    if (b.size() > 0xFFFF) throw Error("grammar: a token of the vocabulary is longer than 65535 bytes");
    size_t common = 0;
    while (common < prev.size() && common < b.size() && prev[common] == b[common]) ++common;
    while (path.size() > common + 1) {
      close(path.back(), r);
      path.pop_back();
    }
    for (size_t d = common; d < b.size(); ++d) {
      const auto node = uint32_t(t.nodes.size());
      t.nodes.push_back({0, r, r, 0, path.back(), uint16_t(d + 1), uint8_t(b[d])});
      path.push_back(node);
    }
    t.nodes[path.back()].rank_own_end = r + 1;
    t.rank_node[r] = path.back();
    prev = b;
  }
  while (!path.empty()) {
    close(path.back(), uint32_t(ids.size()));
    path.pop_back();
  }
}

}  // namespace unicorn::grammar
#endif  // UNICORN_DEFINE_HERE
