// unicorn/grammar/parse_states.hpp — the grammar's pushdown automaton over
// bytes: parse stacks, sets of them, and the memoized step by one byte.
//
// A stack is a chain of nodes (element index, parent node), hash-consed so that
// equal stacks have equal ids. Its top names the character element to match
// next; the nodes below name where to resume when a rule's alternative ends.
// A parse state is a stack and, while inside a multi-byte code point, what of
// it has been read (Utf8). The parser is nondeterministic: its state is a set
// of parse states, interned so that a set is an id, and step(set, byte) is
// remembered, so walking a byte sequence a second time is a table lookup per
// byte.
//
// Two stack bottoms: kComplete, the empty stack (the root has ended), and
// kEscaped, used by the mask cache (matcher.hpp): a stack cut off below its
// top nodes, whose bottom means "the rest of the real stack, unknown here".
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "unicorn/grammar/grammar.hpp"

namespace unicorn::grammar::detail {

inline constexpr int32_t kComplete = -1;
inline constexpr int32_t kEscaped = -2;

// The partial code point a state is inside of, packed: value so far (21 bits),
// continuation bytes still to come (2), continuation bytes in all (2), and
// "any": every completion is in the class (the value no longer matters, and is
// dropped so that the states of all such prefixes are one).
struct Utf8 {
  static uint32_t value(uint32_t u) { return u & 0x1FFFFF; }
  static uint32_t remaining(uint32_t u) { return (u >> 21) & 3; }
  static uint32_t total(uint32_t u) { return (u >> 23) & 3; }
  static bool any(uint32_t u) { return (u >> 25) & 1; }
  static uint32_t pack(uint32_t value, uint32_t remaining, uint32_t total, bool any) {
    return value | remaining << 21 | total << 23 | uint32_t(any) << 25;
  }
};

struct State {
  int32_t node;   // stack top, or kComplete / kEscaped
  uint32_t utf8;  // Utf8, 0 between code points
  bool operator==(const State& o) const { return node == o.node && utf8 == o.utf8; }
  bool operator<(const State& o) const { return node != o.node ? node < o.node : utf8 < o.utf8; }
};

// Open-addressing hash map from a nonzero 64-bit key to an int32 (the tables
// the automaton looks up on every byte).
class FlatMap {
 public:
  FlatMap() { keys_.assign(64, 0), values_.assign(64, 0); }
  const int32_t* find(uint64_t key) const {
    for (size_t i = slot(key);; i = (i + 1) & (keys_.size() - 1)) {
      if (keys_[i] == key) return &values_[i];
      if (keys_[i] == 0) return nullptr;
    }
  }
  void insert(uint64_t key, int32_t value) {
    if ((size_ + 1) * 2 > keys_.size()) grow();
    size_t i = slot(key);
    while (keys_[i] != 0 && keys_[i] != key) i = (i + 1) & (keys_.size() - 1);
    if (keys_[i] == 0) ++size_;
    keys_[i] = key;
    values_[i] = value;
  }
  size_t size() const { return size_; }

 private:
  size_t slot(uint64_t key) const {
    key ^= key >> 31;
    key *= 0x9E3779B97F4A7C15ull;
    return size_t(key >> 20) & (keys_.size() - 1);
  }
  void grow() {
    std::vector<uint64_t> keys = std::move(keys_);
    std::vector<int32_t> values = std::move(values_);
    keys_.assign(keys.size() * 2, 0);
    values_.assign(keys.size() * 2, 0);
    size_ = 0;
    for (size_t i = 0; i < keys.size(); ++i)
      if (keys[i] != 0) insert(keys[i], values[i]);
  }
  std::vector<uint64_t> keys_;
  std::vector<int32_t> values_;
  size_t size_ = 0;
};

class ParseStates {
 public:
  // Set flags: some state can still read a byte; some stack is empty; some
  // walked out of its cut-off stack.
  enum : uint8_t { kLive = 1, kHasComplete = 2, kHasEscaped = 4 };

  // dense_steps: remember steps in a table of 256 entries per set (fast, 1 KiB
  // a set: for a short-lived automaton such as a mask cache walk's) rather
  // than in a hash map.
  explicit ParseStates(const Grammar& grammar, bool dense_steps = false);

  // The states of starting at element `pos` with `parent` below (its
  // closure: references expanded, ended alternatives popped).
  void closure(uint32_t pos, int32_t parent, std::vector<State>& out);
  int32_t node(uint32_t elem, int32_t parent);
  uint32_t node_elem(int32_t n) const { return nodes_[size_t(n)].elem; }
  int32_t node_parent(int32_t n) const { return nodes_[size_t(n)].parent; }

  // Interns a set (sorted and deduplicated here); set 0 is the empty set.
  int32_t intern(std::vector<State>& states);
  // The set after one more byte (memoized).
  int32_t step(int32_t set, uint8_t byte) {
    if (dense_) {
      const size_t at = size_t(set) << 8 | byte;
      if (dense_steps_.size() <= at) dense_steps_.resize((size_t(set) + 1) << 8, -1);
      if (dense_steps_[at] < 0) dense_steps_[at] = compute_step(set, byte);
      return dense_steps_[at];
    }
    const uint64_t key = (uint64_t(uint32_t(set)) << 8 | byte) + 1;
    if (const int32_t* hit = steps_.find(key)) return *hit;
    const int32_t next = compute_step(set, byte);
    steps_.insert(key, next);
    return next;
  }
  std::span<const State> states(int32_t set) const {
    return {set_states_.data() + set_begin_[size_t(set)], set_begin_[size_t(set) + 1] - set_begin_[size_t(set)]};
  }
  uint8_t flags(int32_t set) const { return set_flags_[size_t(set)]; }

 private:
  struct Node {
    uint32_t elem;
    int32_t parent;
  };
  int32_t compute_step(int32_t set, uint8_t byte);
  // Advances state s over one byte; appends what follows.
  void advance(const State& s, uint8_t byte, std::vector<State>& out);
  void closure_inner(uint32_t pos, int32_t parent, std::vector<State>& out);

  const Grammar* g_;
  std::vector<Node> nodes_;
  FlatMap node_ids_;
  std::vector<State> set_states_;
  std::vector<uint32_t> set_begin_{0};
  std::vector<uint8_t> set_flags_;
  FlatMap set_ids_;                           // hash -> first set with it
  std::vector<int32_t> set_next_same_hash_;   // chain of sets with equal hashes
  FlatMap steps_;
  bool dense_ = false;
  std::vector<int32_t> dense_steps_;
  FlatMap visited_;                           // one closure's (pos, parent) pairs
  uint32_t visit_epoch_ = 0;
  size_t closure_work_ = 0;
  size_t closure_depth_ = 0;
  std::vector<State> scratch_;
};

}  // namespace unicorn::grammar::detail

#if UNICORN_DEFINE_HERE
#include <algorithm>

namespace unicorn::grammar::detail {

UNICORN_DECL ParseStates::ParseStates(const Grammar& grammar, bool dense_steps) : g_(&grammar), dense_(dense_steps) {
  std::vector<State> none;
  intern(none);
}

UNICORN_DECL int32_t ParseStates::node(uint32_t elem, int32_t parent) {
  const uint64_t key = (uint64_t(elem) << 32 | uint32_t(parent + 2)) + 1;
  if (const int32_t* hit = node_ids_.find(key)) return *hit;
  const auto id = int32_t(nodes_.size());
  nodes_.push_back({elem, parent});
  node_ids_.insert(key, id);
  return id;
}

UNICORN_DECL void ParseStates::closure(uint32_t pos, int32_t parent, std::vector<State>& out) {
  // A fresh visited set per closure: the same (pos, parent) reached twice
  // gives the same states (an alternative that repeats, an empty loop body).
  ++visit_epoch_;
  closure_work_ = 0;
  closure_depth_ = 0;
  closure_inner(pos, parent, out);
}

UNICORN_DECL void ParseStates::closure_inner(uint32_t pos, int32_t parent, std::vector<State>& out) {
  // The left-recursion check (gbnf_compile.hpp) bounds the depth; this bounds
  // the breadth of a grammar that is ambiguous on purpose.
  if (++closure_work_ > 1'000'000) throw Error("grammar: too many parse states at one position (the grammar is too ambiguous)");
  // Deep only through long chains of rules that start with rules, or many
  // rule ends at once: bounded so that no grammar can exhaust the C++ stack.
  struct Depth {
    size_t& d;
    explicit Depth(size_t& depth) : d(depth) {
      if (++d > 4000) throw Error("grammar: rules nest too deeply at one position");
    }
    ~Depth() { --d; }
  } depth(closure_depth_);
  const uint64_t key = (uint64_t(pos) << 32 | uint32_t(parent + 2)) + 1;
  if (const int32_t* seen = visited_.find(key); seen && uint32_t(*seen) == visit_epoch_) return;
  visited_.insert(key, int32_t(visit_epoch_));
  const Element& e = g_->elements()[pos];
  switch (e.kind) {
    case Element::kChar:
      out.push_back({node(pos, parent), 0});
      return;
    case Element::kCharStar:
      out.push_back({node(pos, parent), 0});
      closure_inner(pos + 1, parent, out);
      return;
    case Element::kRef: {
      // A reference in tail position resumes nowhere in this alternative.
      const int32_t below = g_->elements()[pos + 1].kind == Element::kEnd ? parent : node(pos + 1, parent);
      for (const uint32_t alt : g_->alternatives(e.arg)) closure_inner(alt, below, out);
      return;
    }
    case Element::kEnd:
      if (parent < 0) out.push_back({parent, 0});
      else closure_inner(nodes_[size_t(parent)].elem, nodes_[size_t(parent)].parent, out);
      return;
  }
}

UNICORN_DECL int32_t ParseStates::intern(std::vector<State>& states) {
  std::sort(states.begin(), states.end());
  states.erase(std::unique(states.begin(), states.end()), states.end());
  uint64_t h = 0xcbf29ce484222325ull;
  for (const State& s : states) {
    h = (h ^ uint32_t(s.node)) * 0x100000001b3ull;
    h = (h ^ s.utf8) * 0x100000001b3ull;
  }
  h |= 1;  // nonzero key
  const int32_t* first = set_ids_.find(h);
  for (int32_t id = first ? *first : -1; id >= 0; id = set_next_same_hash_[size_t(id)]) {
    const auto have = this->states(id);
    if (have.size() == states.size() && std::equal(have.begin(), have.end(), states.begin())) return id;
  }
  const auto id = int32_t(set_flags_.size());
  uint8_t flags = 0;
  for (const State& s : states) {
    set_states_.push_back(s);
    flags |= s.node >= 0 ? kLive : s.node == kComplete ? kHasComplete : kHasEscaped;
  }
  set_begin_.push_back(uint32_t(set_states_.size()));
  set_flags_.push_back(flags);
  set_next_same_hash_.push_back(first ? *first : -1);
  set_ids_.insert(h, id);
  return id;
}

UNICORN_DECL int32_t ParseStates::compute_step(int32_t set, uint8_t byte) {
  std::vector<State> out;
  out.swap(scratch_);
  out.clear();
  // Copy: advance may add sets (never this one's states, but the vector can move).
  const auto span = states(set);
  const std::vector<State> in(span.begin(), span.end());
  for (const State& s : in)
    if (s.node >= 0) advance(s, byte, out);
  const int32_t id = intern(out);
  out.swap(scratch_);
  return id;
}

// The bounds of the code points a UTF-8 sequence can still become, given the
// value so far and the continuation bytes still to come.
namespace {
inline void completion_range(uint32_t value, uint32_t remaining, uint32_t total, uint32_t& lo, uint32_t& hi) {
  lo = value << (6 * remaining);
  hi = lo | ((1u << (6 * remaining)) - 1);
  static constexpr uint32_t kMin[] = {0, 0x80, 0x800, 0x10000};
  lo = std::max(lo, kMin[total]);
  hi = std::min(hi, kMaxCodePoint);
}
}  // namespace

UNICORN_DECL void ParseStates::advance(const State& s, uint8_t b, std::vector<State>& out) {
  const Node n = nodes_[size_t(s.node)];
  const Element& e = g_->elements()[n.elem];
  const CharClass& cls = g_->char_class(e.arg);
  uint32_t u = s.utf8;
  bool done = false;
  if (Utf8::remaining(u) == 0) {
    if (b < 0x80) {
      if (!cls.contains(b)) return;
      done = true;
    } else {
      uint32_t total, value;
      if (b >= 0xC2 && b <= 0xDF) total = 1, value = b & 0x1F;
      else if (b >= 0xE0 && b <= 0xEF) total = 2, value = b & 0x0F;
      else if (b >= 0xF0 && b <= 0xF4) total = 3, value = b & 0x07;
      else return;
      uint32_t lo, hi;
      completion_range(value, total, total, lo, hi);
      if (value == 0xD && total == 2) hi = 0xD7FF;  // ED: no surrogates
      const auto ov = cls.overlap(lo, hi);
      if (ov == CharClass::Overlap::kNone) return;
      u = Utf8::pack(value, total, total, ov == CharClass::Overlap::kAll);
    }
  } else {
    if ((b & 0xC0) != 0x80) return;
    uint32_t value = Utf8::value(u), remaining = Utf8::remaining(u);
    const uint32_t total = Utf8::total(u);
    const bool any = Utf8::any(u);
    if (remaining == total) {  // the first continuation byte: bounds that depend on the lead
      if (total == 2 && value == 0x0 && b < 0xA0) return;   // overlong
      if (total == 2 && value == 0xD && b > 0x9F) return;   // surrogate
      if (total == 3 && value == 0x0 && b < 0x90) return;   // overlong
      if (total == 3 && value == 0x4 && b > 0x8F) return;   // above U+10FFFF
    }
    value = value << 6 | (b & 0x3F);
    --remaining;
    if (remaining == 0) {
      if (!any && !cls.contains(value)) return;
      done = true;
    } else if (any) {
      u = Utf8::pack(0, remaining, total, true);
    } else {
      uint32_t lo, hi;
      completion_range(value, remaining, total, lo, hi);
      const auto ov = cls.overlap(lo, hi);
      if (ov == CharClass::Overlap::kNone) return;
      const bool all = ov == CharClass::Overlap::kAll;
      u = Utf8::pack(all ? 0 : value, remaining, total, all);
    }
  }
  if (!done) {
    out.push_back({s.node, u});
    return;
  }
  // A whole code point matched: a character moves on, a star may go on or stop.
  ++visit_epoch_;
  closure_work_ = 0;
  closure_depth_ = 0;
  closure_inner(e.kind == Element::kCharStar ? n.elem : n.elem + 1, n.parent, out);
}

}  // namespace unicorn::grammar::detail
#endif  // UNICORN_DEFINE_HERE
