// unicorn/grammar/matcher.hpp — one request's grammar state: which tokens may
// come next (a bitmask over the vocabulary), and advancing by a chosen token.
//
// The cost is the mask. Checking 262,145 tokens at every step is far too slow,
// so the mask is assembled from cached parts (the idea of XGrammar's adaptive
// token mask cache). Each parse state is a stack; what a token does from a
// state depends on the stack's top few nodes until the token's bytes walk out
// below them. So for the top K nodes of a stack (the "segment"; K = 1 when the
// top is a character star such as a string body, where one cut-off stack then
// serves every string of the grammar, else kSegmentDepth), the grammar keeps,
// once per vocabulary:
//   accepted  — tokens whose bytes all match within the segment (or end it
//               exactly): allowed whatever lies below;
//   uncertain — tokens that walk out of the segment with bytes left: these,
//               and only these, are checked against the real stack, walking
//               them in sorted order so that a shared prefix is stepped once
//               and a prefix that fails skips every token that starts with it.
// Everything else is rejected. The entry is computed by walking the
// vocabulary's byte trie from the segment, pruning every subtree that no
// state accepts (vocabulary.hpp). Where a segment is the whole stack nothing
// is uncertain.
//
// A Matcher is used by one thread at a time; matchers of one grammar share its
// cache, and may run on different threads.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "unicorn/grammar/grammar.hpp"
#include "unicorn/grammar/parse_states.hpp"
#include "unicorn/grammar/vocabulary.hpp"

namespace unicorn::grammar {

namespace detail {

inline constexpr size_t kSegmentDepth = 3;

// What one segment allows (see above). Accepted is a bitmask over token ids
// when many are (dense), else a list of ids.
struct MaskEntry {
  std::vector<uint32_t> bits;
  std::vector<int32_t> ids;
  std::vector<std::pair<uint32_t, uint32_t>> uncertain;  // [begin, end) ranges of ranks
};

class MaskCache {
 public:
  MaskCache(const Grammar& grammar, std::shared_ptr<const Vocabulary> vocabulary)
      : grammar_(grammar), vocabulary_(std::move(vocabulary)) {}
  const Vocabulary& vocabulary() const { return *vocabulary_; }
  // key: the segment's elements from the top down, then its Utf8 state and
  // whether it is the whole stack.
  std::shared_ptr<const MaskEntry> entry(const std::vector<uint32_t>& key);
  size_t size() const;

 private:
  struct KeyHash {
    size_t operator()(const std::vector<uint32_t>& k) const {
      uint64_t h = 0xcbf29ce484222325ull;
      for (const uint32_t v : k) h = (h ^ v) * 0x100000001b3ull;
      return size_t(h);
    }
  };
  std::shared_ptr<const MaskEntry> compute(const std::vector<uint32_t>& key) const;

  const Grammar& grammar_;
  std::shared_ptr<const Vocabulary> vocabulary_;
  mutable std::mutex mutex_;
  std::unordered_map<std::vector<uint32_t>, std::shared_ptr<const MaskEntry>, KeyHash> entries_;
};

}  // namespace detail

class Matcher {
 public:
  Matcher(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const Vocabulary> vocabulary);

  // Bit i of words[i / 32] (LSB first) set = token i may come next. Fills
  // exactly words.size() words; ids past the vocabulary are 0. The end tokens
  // (eos, end_of_turn) are allowed iff the root may end here; other special
  // tokens never.
  void allowed_tokens(std::span<uint32_t> words) const;
  // Whether one token may come next (what its bit in allowed_tokens() says,
  // computed for that token alone).
  bool allows(int32_t token) const;
  // Advances by a token; false, and nothing changes, if it was not allowed.
  // After an end token nothing more is.
  bool accept(int32_t token);
  // Advances by raw bytes (for tests and tools): false and unchanged if they
  // do not continue the grammar.
  bool accept_bytes(std::string_view bytes);
  // The root may end here (or an end token was accepted).
  bool complete() const;
  // Nothing but an end token can follow.
  bool exhausted() const;
  // An end token was accepted.
  bool ended() const { return ended_; }

  const Vocabulary& vocabulary() const { return *vocabulary_; }

 private:
  const detail::MaskEntry& entry_for(const detail::State& s) const;
  void check_uncertain(const detail::State& s, const detail::MaskEntry& e, std::span<uint32_t> words) const;

  std::shared_ptr<const Grammar> grammar_;
  std::shared_ptr<const Vocabulary> vocabulary_;
  std::shared_ptr<detail::MaskCache> cache_;
  mutable detail::ParseStates states_;
  int32_t set_ = 0;
  bool ended_ = false;
  // This matcher's view of the shared cache, by parse state (a lookup without
  // the lock, and without building the key).
  mutable detail::FlatMap entry_index_;
  mutable std::vector<std::shared_ptr<const detail::MaskEntry>> entries_;
  mutable std::vector<int32_t> depth_sets_;
};

}  // namespace unicorn::grammar

#if UNICORN_DEFINE_HERE
#include <algorithm>

namespace unicorn::grammar {

UNICORN_DECL std::shared_ptr<detail::MaskCache> Grammar::mask_cache(
    const std::shared_ptr<const Vocabulary>& vocabulary) const {
  std::lock_guard<std::mutex> lock(cache_mutex_);
  for (const auto& c : caches_)
    if (c->vocabulary().serial() == vocabulary->serial()) return c;
  caches_.push_back(std::make_shared<detail::MaskCache>(*this, vocabulary));
  return caches_.back();
}

namespace detail {

UNICORN_DECL std::shared_ptr<const MaskEntry> MaskCache::entry(const std::vector<uint32_t>& key) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto it = entries_.find(key);
    if (it != entries_.end()) return it->second;
  }
  auto made = compute(key);
  std::lock_guard<std::mutex> lock(mutex_);
  return entries_.emplace(key, std::move(made)).first->second;
}

UNICORN_DECL size_t MaskCache::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return entries_.size();
}

UNICORN_DECL std::shared_ptr<const MaskEntry> MaskCache::compute(const std::vector<uint32_t>& key) const {
  const Vocabulary& v = *vocabulary_;
  const Vocabulary::Trie& t = v.trie();
  ParseStates ps(grammar_, /*dense_steps=*/true);
  const size_t frames = key.size() - 2;
  int32_t n = key.back() ? kComplete : kEscaped;
  for (size_t i = frames; i-- > 0;) n = ps.node(key[i], n);
  std::vector<State> first{{n, key[frames]}};
  const int32_t start = ps.intern(first);

  std::vector<std::pair<uint32_t, uint32_t>> accepted, uncertain;
  const auto add = [](std::vector<std::pair<uint32_t, uint32_t>>& to, uint32_t b, uint32_t e) {
    if (b >= e) return;
    if (!to.empty() && to.back().second == b) to.back().second = e;
    else to.emplace_back(b, e);
  };
  // Preorder walk: sets[d] is the set after the first d bytes of the current
  // node's prefix, escaped[d] whether some state walked out of the segment at
  // or above depth d (then a token that fails below is uncertain, not rejected).
  std::vector<int32_t> sets{start};
  std::vector<uint8_t> escaped{0};
  const auto count = uint32_t(t.nodes.size());
  for (uint32_t i = 1; i < count;) {
    const Vocabulary::Node& node = t.nodes[i];
    const size_t d = node.depth;
    if (sets.size() <= d) sets.resize(d + 1), escaped.resize(d + 1);
    const int32_t s = ps.step(sets[d - 1], node.byte);
    if (s == 0) {
      if (escaped[d - 1]) add(uncertain, node.rank_begin, node.rank_end);
      i = node.end;
      continue;
    }
    const uint8_t fl = ps.flags(s);
    add(accepted, node.rank_begin, node.rank_own_end);
    const bool esc = escaped[d - 1] || (fl & ParseStates::kHasEscaped);
    if (!(fl & ParseStates::kLive)) {
      if (esc) add(uncertain, node.rank_own_end, node.rank_end);
      i = node.end;
      continue;
    }
    sets[d] = s;
    escaped[d] = esc;
    ++i;
  }

  auto e = std::make_shared<MaskEntry>();
  size_t total = 0;
  for (const auto& [b, en] : accepted) total += en - b;
  if (total * 32 > v.size()) {
    e->bits.assign((v.size() + 31) / 32, 0);
    for (const auto& [b, en] : accepted)
      for (uint32_t r = b; r < en; ++r) {
        const auto id = uint32_t(t.rank_id[r]);
        e->bits[id >> 5] |= 1u << (id & 31);
      }
  } else {
    for (const auto& [b, en] : accepted)
      for (uint32_t r = b; r < en; ++r) e->ids.push_back(t.rank_id[r]);
  }
  e->uncertain = std::move(uncertain);
  return e;
}

}  // namespace detail

UNICORN_DECL Matcher::Matcher(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const Vocabulary> vocabulary)
    : grammar_(std::move(grammar)), vocabulary_(std::move(vocabulary)), states_(*grammar_) {
  if (!grammar_ || !vocabulary_) throw Error("grammar: a matcher needs a grammar and a vocabulary");
  cache_ = grammar_->mask_cache(vocabulary_);
  std::vector<detail::State> start;
  for (const uint32_t alt : grammar_->alternatives(grammar_->root())) states_.closure(alt, detail::kComplete, start);
  set_ = states_.intern(start);
}

UNICORN_DECL bool Matcher::complete() const {
  return ended_ || (states_.flags(set_) & detail::ParseStates::kHasComplete);
}

UNICORN_DECL bool Matcher::exhausted() const { return ended_ || !(states_.flags(set_) & detail::ParseStates::kLive); }

UNICORN_DECL bool Matcher::accept_bytes(std::string_view bytes) {
  if (ended_) return false;
  int32_t cur = set_;
  for (const char c : bytes) {
    cur = states_.step(cur, static_cast<uint8_t>(c));
    if (cur == 0) return false;
  }
  set_ = cur;
  return true;
}

UNICORN_DECL bool Matcher::allows(int32_t token) const {
  if (ended_ || token < 0 || size_t(token) >= vocabulary_->size()) return false;
  if (vocabulary_->is_end(token)) return complete();
  if (!vocabulary_->is_text(token)) return false;
  int32_t cur = set_;
  for (const char c : vocabulary_->token_bytes(token)) {
    cur = states_.step(cur, static_cast<uint8_t>(c));
    if (cur == 0) return false;
  }
  return true;
}

UNICORN_DECL bool Matcher::accept(int32_t token) {
  if (ended_ || token < 0 || size_t(token) >= vocabulary_->size()) return false;
  if (vocabulary_->is_end(token)) {
    if (!complete()) return false;
    ended_ = true;
    return true;
  }
  if (!vocabulary_->is_text(token)) return false;
  return accept_bytes(vocabulary_->token_bytes(token));
}

UNICORN_DECL const detail::MaskEntry& Matcher::entry_for(const detail::State& s) const {
  const uint64_t local = (uint64_t(uint32_t(s.node)) << 32 | s.utf8) + 1;
  if (const int32_t* hit = entry_index_.find(local)) return *entries_[size_t(*hit)];
  std::vector<uint32_t> key;
  const bool star = grammar_->elements()[states_.node_elem(s.node)].kind == Element::kCharStar;
  const size_t depth = star ? 1 : detail::kSegmentDepth;
  int32_t n = s.node;
  while (n >= 0 && key.size() < depth) {
    key.push_back(states_.node_elem(n));
    n = states_.node_parent(n);
  }
  key.push_back(s.utf8);
  key.push_back(n == detail::kComplete ? 1 : 0);
  entries_.push_back(cache_->entry(key));
  entry_index_.insert(local, int32_t(entries_.size() - 1));
  return *entries_.back();
}

UNICORN_DECL void Matcher::check_uncertain(const detail::State& s, const detail::MaskEntry& e,
                                           std::span<uint32_t> words) const {
  const Vocabulary::Trie& t = vocabulary_->trie();
  std::vector<detail::State> one{s};
  depth_sets_.assign(1, states_.intern(one));
  std::string_view prev;
  size_t valid = 0;  // depth_sets_[0..valid] hold the sets of prev's first bytes
  const size_t limit = words.size() * 32;
  for (const auto& [begin, end] : e.uncertain) {
    for (uint32_t r = begin; r < end;) {
      const int32_t id = t.rank_id[r];
      if (size_t(id) >= limit || (words[size_t(id) >> 5] >> (id & 31)) & 1) {
        ++r;
        continue;
      }
      const std::string_view bytes = vocabulary_->token_bytes(id);
      size_t d = 0;
      while (d < valid && d < bytes.size() && prev[d] == bytes[d]) ++d;
      int32_t cur = depth_sets_[d];
      if (depth_sets_.size() <= bytes.size()) depth_sets_.resize(bytes.size() + 1);
      while (d < bytes.size() && cur != 0) {
        cur = states_.step(cur, static_cast<uint8_t>(bytes[d]));
        depth_sets_[++d] = cur;
      }
      prev = bytes;
      valid = d;
      if (cur != 0) {
        words[size_t(id) >> 5] |= 1u << (id & 31);
        ++r;
        continue;
      }
      // The first d bytes fail: skip every token that starts with them.
      uint32_t node = t.rank_node[r];
      while (t.nodes[node].depth > d) node = t.nodes[node].parent;
      r = std::max(r + 1, t.nodes[node].rank_end);
      valid = d - 1;  // depth_sets_[d] is the empty set; keep only what led to it
    }
  }
}

UNICORN_DECL void Matcher::allowed_tokens(std::span<uint32_t> words) const {
  std::fill(words.begin(), words.end(), 0u);
  if (ended_) return;
  const size_t limit = words.size();
  bool can_end = false;
  const auto span = states_.states(set_);
  const std::vector<detail::State> states(span.begin(), span.end());  // the walks below add sets
  std::vector<std::pair<detail::State, const detail::MaskEntry*>> uncertain;
  for (const detail::State& s : states) {
    if (s.node == detail::kComplete) can_end = true;
    if (s.node < 0) continue;
    const detail::MaskEntry& e = entry_for(s);
    if (!e.bits.empty()) {
      const size_t n = std::min(limit, e.bits.size());
      for (size_t w = 0; w < n; ++w) words[w] |= e.bits[w];
    } else {
      for (const int32_t id : e.ids)
        if (size_t(id) < limit * 32) words[size_t(id) >> 5] |= 1u << (id & 31);
    }
    if (!e.uncertain.empty()) uncertain.emplace_back(s, &e);
  }
  for (const auto& [s, e] : uncertain) check_uncertain(s, *e, words);
  if (can_end) {
    for (const int32_t id : {vocabulary_->eos_id(), vocabulary_->end_of_turn_id()})
      if (id >= 0 && size_t(id) < limit * 32) words[size_t(id) >> 5] |= 1u << (id & 31);
  }
}

}  // namespace unicorn::grammar
#endif  // UNICORN_DEFINE_HERE
